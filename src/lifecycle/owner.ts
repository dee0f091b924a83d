/**
 * What nothing owns (issue 10, docs/LIFECYCLE.md "Orphans"): the decisions of the partition's
 * `owner` check and of the R2 sweeps. Pure: the partition room and the Worker's scheduled sweep
 * do the I/O.
 *
 * A partition object is owned when the metadata store holds a topic of its name with its topic
 * id and more partitions than its index. Topic create initialises partitions BEFORE it writes
 * the topic record (a crash half-way leaves unreachable objects, never a topic with missing
 * partitions), and topic delete removes the record BEFORE it destroys the partitions; a crash in
 * either window leaves partition objects that no record names. They find that out themselves on
 * the `owner` timer, after {@link OWNER_CHECK_GRACE_MS} (so a create still in progress is never
 * taken for a crash), and destroy their storage and their R2 objects.
 */
import type { RpcResult } from "../protocol/errors.ts";
import type { TopicSummary } from "../protocol/types.ts";
import type { SegmentRow } from "./segments.ts";

/**
 * The first owner check runs this long after a partition is initialised. It must exceed the
 * longest topic create or partition-count change (initialise, then write the record): a
 * 1,024-partition create takes seconds; an hour leaves room for a slow metadata store.
 */
export const OWNER_CHECK_GRACE_MS = 60 * 60 * 1000;
/** Later checks: once a day (Kafka's log dirs have no owner to ask; this is the platform's price of one object per partition). */
export const OWNER_CHECK_INTERVAL_MS = 24 * 60 * 60 * 1000;
/** After an inconclusive answer (the metadata store unreachable): look again this much later. */
export const OWNER_RETRY_MS = 5 * 60 * 1000;
/**
 * An R2 object under a topic id the metadata store does not know is deleted only once it is at
 * least this old, for the same reason as {@link OWNER_CHECK_GRACE_MS}.
 */
export const ORPHAN_OBJECT_GRACE_MS = OWNER_CHECK_GRACE_MS;

/** What the owner check concludes. */
export type OwnerVerdict =
  | { kind: "owned" }
  /** No topic record names this object: destroy it (rows, timers, R2 objects). */
  | { kind: "orphan"; reason: "topic-unknown" | "topic-id-differs" | "partition-beyond-count" }
  /** The answer says nothing for sure (an error other than "unknown topic"): retry later. */
  | { kind: "unknown"; code: string };

/**
 * The verdict for the partition object `self` from the metadata store's `getTopic(self.topic)`
 * answer. Only a definite answer makes an orphan: UNKNOWN_TOPIC_OR_PARTITION, a topic of the same
 * name with another id (deleted and created again), or fewer partitions than `self.partition + 1`
 * (a partition-count change that failed before its record). Any other error is `unknown`.
 */
export function ownerVerdict(self: { topicId: string; partition: number }, answer: RpcResult<{ topic: TopicSummary }>): OwnerVerdict {
  if (!answer.ok) return answer.code === "UNKNOWN_TOPIC_OR_PARTITION" ? { kind: "orphan", reason: "topic-unknown" } : { kind: "unknown", code: answer.code };
  if (answer.topic.topicId !== self.topicId) return { kind: "orphan", reason: "topic-id-differs" };
  if (self.partition >= answer.topic.partitions) return { kind: "orphan", reason: "partition-beyond-count" };
  return { kind: "owned" };
}

/**
 * The R2 key prefix of one partition's segment objects (every {@link segmentObjectKey} of it
 * starts so): `segments/<topicId>/<partition>/` at replication.factor 1, and
 * `segments/<topicId>/<partition>/<replica>/` for one replica of a replicated partition, which
 * tiers its own copy (docs/RAFT.md "Tiered storage of a replicated partition"). The replica's
 * prefix holds only its own objects, so its orphan sweep and its destroy never touch another
 * replica's. A topic's replication.factor is fixed at creation, so one partition never has keys
 * of both forms.
 * @throws Error for a replica id that is not a plain name (it would change the key hierarchy).
 */
export function partitionObjectPrefix(topicId: string, partition: number, replica: string | null = null): string {
  if (replica === null) return `segments/${topicId}/${partition}/`;
  if (!/^r[0-9]+$/.test(replica)) throw new Error(`replica id ${JSON.stringify(replica)} is not a Raft member id such as "r2"`);
  return `segments/${topicId}/${partition}/${replica}/`;
}

/** The R2 key prefix of all segment objects. */
export const SEGMENT_OBJECTS_ROOT = "segments/";

/**
 * Keys under a live partition's prefix that no segment row holds: left by an upload whose
 * object landed after the partition had dropped or never recorded the key (e.g. an upload in
 * flight while retention or a destroy ran). A row holds its key from the commit that fixed it
 * (before any put) until the commit after its delete, so a key that no row holds has no
 * upload owed: deleting it loses nothing.
 */
export function unownedObjectKeys(listed: readonly string[], segments: readonly Pick<SegmentRow, "r2Key">[]): string[] {
  const held = new Set<string>();
  for (const s of segments) if (s.r2Key !== null) held.add(s.r2Key);
  return listed.filter((k) => !held.has(k));
}

/**
 * The topic id of a delimited prefix `segments/<topicId>/` (an R2 list with delimiter "/"), or
 * null for anything else.
 */
export function topicIdOfPrefix(prefix: string): string | null {
  if (!prefix.startsWith(SEGMENT_OBJECTS_ROOT) || !prefix.endsWith("/")) return null;
  const id = prefix.slice(SEGMENT_OBJECTS_ROOT.length, -1);
  return id.length > 0 && !id.includes("/") ? id : null;
}

/**
 * Objects of the global sweep to delete: under a topic id that no topic record holds, and
 * uploaded at least {@link ORPHAN_OBJECT_GRACE_MS} before `nowMs`.
 */
export function sweepableObjects(objects: readonly { key: string; uploadedMs: number }[], nowMs: number): string[] {
  return objects.filter((o) => nowMs - o.uploadedMs >= ORPHAN_OBJECT_GRACE_MS).map((o) => o.key);
}
