/**
 * Metrics of replicated partitions (`replication.factor` 3; docs/RAFT.md "Replicated
 * partitions", docs/OBSERVABILITY.md "Replica metrics"). Pure: the scrape route gathers each
 * replica's `replicaStatus`, these functions choose and write.
 *
 * The partition-level offsets (log start, log end, high watermark) are the leader's, chosen as
 * describe chooses (src/partition/replica-admin.ts `describePartition`): the replica that says
 * it leads in the highest term; while none does (an election), the highest high watermark
 * among the replicas that answer. So a scrape never reports a lagging follower's high
 * watermark, as Kafka's partition metrics come from the leader broker. Counters and
 * subscription figures stay r1's (`metrics()` of the partition object): see the doc.
 */
import type { PartitionMetrics, ReplicaStatus } from "../partition/rpc.ts";
import { chooseLeaderView } from "../partition/replica-admin.ts";
import type { Role } from "../raft/types.ts";
import type { ExpositionWriter, Sample } from "./exposition.ts";

/** Replica status calls one scrape makes at most (1,024 partitions at factor 3); past it, a replicated partition's offsets are r1's. */
export const MAX_SCRAPE_REPLICA_CALLS = 3072;

/** One replica's view, labelled with its partition, for the replica families. */
export interface ReplicaSample {
  /** Full topic name `tenant/namespace/topic`. */
  topic: string;
  partition: number;
  status: ReplicaStatus;
}

/**
 * The view the partition-level offsets come from: the leader in the highest term, else (no
 * replica leads) the highest high watermark; null when no replica answered.
 */
export function leaderView(statuses: readonly (ReplicaStatus | null)[]): ReplicaStatus | null {
  const best = chooseLeaderView(statuses.map((s) => (s === null ? null : { leader: s.role === "leader", leaderEpoch: s.leaderEpoch, highWatermark: s.highWatermark })));
  return best < 0 ? null : statuses[best]!;
}

/** r1's metrics with the partition-level offsets of `view` (unchanged when view is null). */
export function withLeaderOffsets(m: PartitionMetrics, view: ReplicaStatus | null): PartitionMetrics {
  if (view === null) return m;
  return { ...m, logStartOffset: view.logStartOffset, logEndOffset: view.logEndOffset, highWatermark: view.highWatermark };
}

/** The Raft roles (src/raft/types.ts `Role`); a learner is a `follower` outside the voters. */
const ROLES: readonly Role[] = ["leader", "follower", "candidate", "preCandidate"];

function labels(r: ReplicaSample): Record<string, string> {
  return { topic: r.topic, partition: String(r.partition), replica: r.status.replica };
}

/** The replica families: one sample per replica that answered (labels topic, partition, replica). */
export function writeReplicaMetrics(w: ExpositionWriter, rs: readonly ReplicaSample[]): void {
  const roles: Sample[] = [];
  for (const r of rs) for (const role of ROLES) roles.push({ labels: { ...labels(r), role }, value: r.status.role === role ? 1 : 0 });
  w.gauge("edgelog_replica_role", "1 for the Raft role the replica is in, 0 for the others (a state set; label role).", roles);
  w.gauge(
    "edgelog_replica_leader_epoch",
    "The replica's Raft term: the leader epoch it stamps on batches when it leads (Kafka LeaderEpoch).",
    rs.map((r) => ({ labels: labels(r), value: r.status.leaderEpoch })),
  );
  w.gauge(
    "edgelog_replica_high_watermark",
    "The replica's own high watermark: the end of what it has applied (a follower's lags the leader's).",
    rs.map((r) => ({ labels: labels(r), value: r.status.highWatermark })),
  );
}
