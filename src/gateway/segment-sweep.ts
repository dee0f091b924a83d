/**
 * The scheduled R2 sweep (docs/LIFECYCLE.md "Orphans"): segment objects under a topic id that no
 * topic record holds any more. A partition deletes its own objects before its rows when its topic
 * is deleted, and deletes the keys no row of its own holds on its `owner` timer; this sweep covers
 * what neither can see: objects whose partition object no longer exists (an upload that landed
 * after its partition was destroyed, or a destroy that crashed between its R2 deletes and its
 * rows, then ran again with no rows to go by). Run by the Worker's cron trigger (wrangler.toml).
 *
 * Bounds per run: {@link SWEEP_MAX_LIST_PAGES} R2 list calls of up to 1,000 keys and one bulk
 * delete per page, so a run stays far under the 10,000 subrequests of one Workers Paid
 * invocation (the metadata listing is one more); what is left waits for the next run.
 */
import type { Env } from "../env.ts";
import { SEGMENT_OBJECTS_ROOT, sweepableObjects, topicIdOfPrefix } from "../lifecycle/index.ts";
import { log } from "../log/logger.ts";
import { metadataStore } from "../metadata/store.ts";

/** Most R2 list pages (of up to 1,000 keys) one sweep reads. */
export const SWEEP_MAX_LIST_PAGES = 64;

/** What one sweep did (for its log line and for tests). */
export interface SweepReport {
  /** Topic ids found under `segments/` that no topic record holds. */
  unknownTopicIds: number;
  /** Objects deleted. */
  deleted: number;
  /** True when the page bound stopped the sweep before it had seen everything. */
  truncated: boolean;
}

/**
 * One sweep at `nowMs` (the scheduled time): lists the topic ids under `segments/`, compares them
 * with the metadata store's topics, and deletes the objects of unknown ids that are older than
 * the grace (src/lifecycle/owner.ts). Does nothing without the SEGMENTS binding, and nothing when
 * the topic listing fails (an unknown set of live topics deletes nothing).
 */
export async function sweepOrphanSegments(env: Env, nowMs: number): Promise<SweepReport> {
  const report: SweepReport = { unknownTopicIds: 0, deleted: 0, truncated: false };
  const bucket = env.SEGMENTS;
  if (bucket === undefined) return report;
  const topics = await metadataStore(env).listTopics();
  if (!topics.ok) {
    log.warn("edgelog.lifecycle.sweep_skipped", { code: topics.code });
    return report;
  }
  const live = new Set(topics.topics.map((t) => t.topicId));
  let pages = 0;
  const unknown: string[] = [];
  let cursor: string | undefined;
  do {
    if (pages++ >= SWEEP_MAX_LIST_PAGES) return { ...report, truncated: true };
    const page = await bucket.list({ prefix: SEGMENT_OBJECTS_ROOT, delimiter: "/", limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
    for (const prefix of page.delimitedPrefixes) {
      const id = topicIdOfPrefix(prefix);
      if (id !== null && !live.has(id)) unknown.push(prefix);
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  report.unknownTopicIds = unknown.length;
  for (const prefix of unknown) {
    cursor = undefined;
    do {
      if (pages++ >= SWEEP_MAX_LIST_PAGES) {
        report.truncated = true;
        break;
      }
      const page = await bucket.list({ prefix, limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
      const keys = sweepableObjects(
        page.objects.map((o) => ({ key: o.key, uploadedMs: o.uploaded.getTime() })),
        nowMs,
      );
      if (keys.length > 0) await bucket.delete(keys);
      report.deleted += keys.length;
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor !== undefined);
    if (report.truncated) break;
  }
  if (report.deleted > 0 || report.truncated) log.warn("edgelog.lifecycle.orphan_objects_swept", { ...report });
  return report;
}
