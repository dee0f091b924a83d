/**
 * `GET /v1/metrics`: the Prometheus text exposition (docs/OBSERVABILITY.md), gathered on each
 * scrape from where the truth is:
 * - every partition of every topic the metadata store lists: its `metrics()` RPC, at most
 *   SCRAPE_CONCURRENCY in flight and at most MAX_SCRAPE_PARTITIONS per scrape; for a
 *   replicated partition also each replica's `replicaStatus` (at most MAX_SCRAPE_REPLICA_CALLS
 *   per scrape), so its offsets are the leader's and its replicas get role/term gauges
 *   (src/metrics/replicas.ts);
 * - every consumer group the group directory lists: its coordinator's describe (state,
 *   members, committed offsets and lag), at most MAX_SCRAPE_GROUPS;
 * - this gateway isolate's own counters (src/metrics/gateway.ts).
 * A partition or group that fails to answer is left out of its families, logged, and counted
 * in `edgelog_scrape_partitions{result="error"}`: one slow object does not fail the scrape.
 * Access: cluster DESCRIBE (src/auth/route-access.ts).
 */
import type { Hono } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { groupCoordinatorStub, groupDirectoryStub } from "../groups/rpc.ts";
import { topicCache } from "../gateway/topics.ts";
import { metadataStore } from "../metadata/store.ts";
import { EXPOSITION_CONTENT_TYPE, ExpositionWriter } from "../metrics/exposition.ts";
import { gatewayMetrics } from "../metrics/gateway.ts";
import { MAX_SCRAPE_GROUPS, MAX_SCRAPE_PARTITIONS, SCRAPE_CONCURRENCY, type ScrapeCoverage, mapBounded, writeCoverage, writeGroupMetrics, writePartitionMetrics } from "../metrics/scrape.ts";
import { replicaIndexOf, replicaStubAt, type PartitionMetrics } from "../partition/rpc.ts";
import { toEdgelogError } from "../protocol/errors.ts";
import type { GroupDescription } from "../protocol/groups.ts";
import { log } from "../log/logger.ts";
import { leaderView, MAX_SCRAPE_REPLICA_CALLS, type ReplicaSample, withLeaderOffsets, writeReplicaMetrics } from "../metrics/replicas.ts";
import { replicaIdsOf, replicaStatuses } from "../partition/replica-admin.ts";
import { replicationFactorOf } from "../protocol/config.ts";
import type { TopicSummary } from "../protocol/types.ts";

export function metricsRoutes(app: Hono<AppEnv>): void {
  app.get("/v1/metrics", async (c) => {
    const env = c.env;
    const [topics, groupList] = await Promise.all([metadataStore(env).listTopics(), groupDirectoryStub(env).list()]);
    if (!topics.ok) throw toEdgelogError(topics);
    if (!groupList.ok) throw toEdgelogError(groupList);

    const targets: { name: string; topicId: string; partition: number; configs: TopicSummary["configs"]; replicas: boolean; ids: string[] }[] = [];
    let replicaCalls = 0;
    const sorted = [...topics.topics].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    let partitionsTotal = 0;
    for (const t of sorted) {
      for (let p = 0; p < t.partitions; p++) {
        partitionsTotal++;
        if (targets.length >= MAX_SCRAPE_PARTITIONS) continue;
        // Replicated: every replica's status too, within MAX_SCRAPE_REPLICA_CALLS (src/metrics/replicas.ts).
        const rf = replicationFactorOf(t.configs);
        const replicas = rf > 1 && replicaCalls + rf <= MAX_SCRAPE_REPLICA_CALLS;
        if (replicas) replicaCalls += rf;
        // The placement's replicas with the metadata quorum (recorded leader first), else r1..rf.
        targets.push({ name: t.name, topicId: t.topicId, partition: p, configs: t.configs, replicas, ids: replicaIdsOf(t.placements, p, t.configs) });
      }
    }
    const groupIds = groupList.groups
      .map((g) => g.groupId)
      .sort()
      .slice(0, MAX_SCRAPE_GROUPS);

    // Each answer: the metrics, null when the object is gone (deleted since the listing), or
    // undefined when it failed (logged, counted as an error).
    const replicaSamples: ReplicaSample[] = [];
    const [partitionAnswers, groupAnswers] = await Promise.all([
      mapBounded(targets, SCRAPE_CONCURRENCY, async (t): Promise<PartitionMetrics | null | undefined> => {
        try {
          const [r, statuses] = await Promise.all([
            replicaStubAt(env.PARTITION, t.topicId, t.partition, replicaIndexOf(t.ids[0]) ?? 0, t.configs).metrics(),
            t.replicas ? replicaStatuses(env.PARTITION, t.topicId, t.partition, t.configs, t.ids) : [],
          ]);
          for (const status of statuses) if (status !== null) replicaSamples.push({ topic: t.name, partition: t.partition, status });
          // Replicated: the partition-level offsets are the leader's (src/metrics/replicas.ts).
          if (r.ok) return t.replicas ? withLeaderOffsets(r.metrics, leaderView(statuses)) : r.metrics;
          // A topic deleted between the listing and this call: gone, not an error.
          if (r.code === "UNKNOWN_TOPIC_OR_PARTITION") return null;
          log.error("edgelog.metrics.scrape_error", { topicId: t.topicId, partition: t.partition, code: r.code });
        } catch (err) {
          log.error("edgelog.metrics.scrape_error", { topicId: t.topicId, partition: t.partition, error: err });
        }
        return undefined;
      }),
      mapBounded(groupIds, SCRAPE_CONCURRENCY, async (groupId): Promise<GroupDescription | null | undefined> => {
        try {
          const r = await groupCoordinatorStub(env, groupId).describe(groupId);
          if (r.ok) {
            const { ok: _ok, ...description } = r;
            return description;
          }
          if (r.code === "GROUP_ID_NOT_FOUND") return null;
          log.error("edgelog.metrics.scrape_error", { group: groupId, code: r.code });
        } catch (err) {
          log.error("edgelog.metrics.scrape_error", { group: groupId, error: err });
        }
        return undefined;
      }),
    ]);

    const partitions = partitionAnswers.filter((m): m is PartitionMetrics => m !== null && m !== undefined);
    const groups = groupAnswers.filter((g): g is GroupDescription => g !== null && g !== undefined);
    const partitionCoverage: ScrapeCoverage = {
      ok: partitions.length,
      error: partitionAnswers.filter((m) => m === undefined).length,
      omitted: partitionsTotal - targets.length,
    };
    const groupCoverage: ScrapeCoverage = {
      ok: groups.length,
      error: groupAnswers.filter((g) => g === undefined).length,
      omitted: groupList.groups.length - groupIds.length,
    };

    const w = new ExpositionWriter();
    writePartitionMetrics(w, partitions);
    replicaSamples.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition || (a.status.replica < b.status.replica ? -1 : 1)));
    writeReplicaMetrics(w, replicaSamples);
    writeGroupMetrics(w, groups);
    writeCoverage(w, partitionCoverage, groupCoverage);
    gatewayMetrics.write(w, topicCache);
    return c.body(w.text(), 200, { "Content-Type": EXPOSITION_CONTENT_TYPE });
  });
}
