/**
 * The metadata store's calls to a partition (configs, destroy, describe) when the partition may
 * be replicated (`replication.factor` 3; docs/RAFT.md "Replicated partitions"). At factor 1 each
 * is the one call to the partition object, as before.
 *
 * - **Configs** go to r1, or, when r1 does not answer (down), to r2 then r3: any replica takes a
 *   config change and forwards it to the leader, which proposes it as a Raft command; a majority
 *   is enough.
 * - **Destroy** goes to r1, which destroys r2 and r3 and itself, leaving a replica that does not
 *   answer to its own owner check. When r1 itself does not answer and the configs are known, r2
 *   and r3 are destroyed directly and r1 is left to its owner check; without the configs the
 *   call fails (the metadata quorum's pending destroy task runs again).
 * - **Describe** answers the leader's view (its high watermark, log start and log end): the
 *   replica that says it leads in the highest term; while none does (an election), the view with
 *   the highest high watermark among the replicas that answer.
 *
 * With the metadata quorum on, a replicated partition's replica ids come from its placement in
 * the topic's metadata (docs/RAFT.md "Partition placement"; `ids` below): configs, describe and
 * metrics ask those, and a topic deletion destroys each of them by itself ({@link destroyReplicas}).
 * Without ids (MetadataDO, or a topic recorded before placements), r1..rf as above.
 */
import { errorResult, type RpcResult } from "../protocol/errors.ts";
import { replicationFactorOf } from "../protocol/config.ts";
import type { PartitionDescription, PartitionPlacement, TopicConfigs } from "../protocol/types.ts";
import { replicaIndexOf, replicaStubAt, type PartitionRpc, type ReplicaStatus } from "./rpc.ts";

type Ns = Parameters<typeof replicaStubAt>[0];

/** One replica's answer as the leader-choice rule sees it. */
export interface LeaderChoice {
  /** The replica says it leads. */
  leader: boolean;
  /** Its Raft term (the leader epoch); compared among leaders only. */
  leaderEpoch: number;
  /** Its high watermark; compared while no replica leads. */
  highWatermark: number;
}

/**
 * The leader-choice rule of describe and of the metrics scrape (src/metrics/replicas.ts): the
 * replica that says it leads in the highest term; while none does (an election), the highest
 * high watermark among those that answered. A lagging follower's high watermark is never the
 * partition's, as Kafka's partition offsets come from the leader broker.
 * @returns the index of the chosen view in `views` (nulls are replicas that did not answer), -1 when none.
 */
export function chooseLeaderView(views: readonly (LeaderChoice | null)[]): number {
  let best = -1;
  for (let i = 0; i < views.length; i++) {
    const v = views[i];
    if (v === null || v === undefined) continue;
    const b = best < 0 ? null : views[best]!;
    if (b === null || (v.leader && (!b.leader || v.leaderEpoch > b.leaderEpoch)) || (!v.leader && !b.leader && v.highWatermark > b.highWatermark)) best = i;
  }
  return best;
}

const at = (ns: Ns, topicId: string, partition: number, index: number, configs: Partial<TopicConfigs>): PartitionRpc => replicaStubAt(ns, topicId, partition, index, configs);

/**
 * The replica ids of partition `p`: its placement's (the metadata quorum's record, leader
 * first when one is recorded), else r1..rf.
 */
export function replicaIdsOf(placements: readonly PartitionPlacement[] | undefined, p: number, configs: Partial<TopicConfigs>): string[] {
  const placed = placements?.find((x) => x.partition === p);
  const ids = placed?.replicas.map((r) => r.id).filter((id) => replicaIndexOf(id) !== null) ?? [];
  if (ids.length === 0) return Array.from({ length: replicationFactorOf(configs) }, (_, i) => `r${i + 1}`);
  const leader = placed?.leader;
  return leader !== null && leader !== undefined && ids.includes(leader) ? [leader, ...ids.filter((id) => id !== leader)] : ids;
}

/** The ids r1..rf, or `ids` when given. */
const idsOr = (ids: readonly string[] | undefined, configs: Partial<TopicConfigs>): readonly string[] =>
  ids !== undefined && ids.length > 0 ? ids : Array.from({ length: replicationFactorOf(configs) }, (_, i) => `r${i + 1}`);

const stubOf = (ns: Ns, topicId: string, partition: number, id: string, configs: Partial<TopicConfigs>): PartitionRpc => at(ns, topicId, partition, replicaIndexOf(id) ?? 0, configs);

/**
 * Sets a partition's configs (absolute values): r1 first, the next replica when a call throws.
 * `configsOffset`: the metadata offset of the topic state the configs reflect (the quorum's
 * record index; absent from MetadataDO); an older push than the partition holds is answered
 * ok with `stale: true` and changes nothing.
 * @throws the last replica's error when none answers.
 */
export async function pushPartitionConfigs(
  ns: Ns,
  topicId: string,
  partition: number,
  configs: TopicConfigs,
  configsOffset?: number,
  ids?: readonly string[],
): Promise<RpcResult<{ stale?: boolean }>> {
  const replicas = idsOr(ids, configs);
  let last: unknown;
  let gone: RpcResult<{ stale?: boolean }> | null = null;
  for (const id of replicas) {
    try {
      const r = await stubOf(ns, topicId, partition, id, configs).updateConfigs(configs, false, configsOffset);
      // A replica removed by a reassignment holds nothing: the next one of the placement takes it.
      if (!r.ok && r.code === "UNKNOWN_TOPIC_OR_PARTITION" && replicas.length > 1) {
        gone = r;
        continue;
      }
      return r;
    } catch (err) {
      last = err;
    }
  }
  if (gone !== null) return gone;
  throw last;
}

/**
 * Destroys each replica of a placement by itself (`destroy("replica")`), all at once: replicas
 * added by reassignments go too, and a replica destroyed already answers as done.
 * @returns ok, or UNAVAILABLE (retriable) naming in `details.unreachable` the replicas that did
 *   not answer: the caller's task stays pending and is run again.
 */
export async function destroyReplicas(ns: Ns, topicId: string, partition: number, ids: readonly string[]): Promise<RpcResult<object>> {
  const outcomes = await Promise.all(
    ids.map(async (id) => {
      try {
        const r = await stubOf(ns, topicId, partition, id, {}).destroy("replica");
        return r.ok || r.code === "UNKNOWN_TOPIC_OR_PARTITION" ? null : `${id}: ${r.code}`;
      } catch (err) {
        return `${id}: ${err instanceof Error ? err.message : String(err)}`;
      }
    }),
  );
  const failed = outcomes.filter((o): o is string => o !== null);
  if (failed.length === 0) return { ok: true };
  return errorResult("UNAVAILABLE", `Replicas of partition ${partition} did not answer their destroy (${failed.join("; ")}): retried.`, { partition, unreachable: failed });
}

/**
 * Destroys a partition (every replica). `configs` (the topic's, when the caller has them) lets
 * a replicated partition's destroy go on without r1 (see the file comment).
 * @returns ok, with `unreachable` naming the replicas left to their owner check.
 * @throws r1's error when r1 does not answer and the partition is not known to be replicated.
 */
export async function destroyPartition(ns: Ns, topicId: string, partition: number, configs?: Partial<TopicConfigs>): Promise<RpcResult<{ unreachable?: string[] }>> {
  try {
    return await at(ns, topicId, partition, 0, configs ?? {}).destroy();
  } catch (err) {
    const rf = configs === undefined ? 1 : replicationFactorOf(configs);
    if (rf === 1) throw err;
    const unreachable = ["r1"];
    for (let i = 1; i < rf; i++) {
      try {
        const r = await at(ns, topicId, partition, i, configs!).destroy();
        if (r.ok || r.code === "UNKNOWN_TOPIC_OR_PARTITION") continue;
      } catch {
        // Down as well: its owner check destroys it when it is back.
      }
      unreachable.push(`r${i + 1}`);
    }
    return { ok: true, unreachable };
  }
}

/**
 * Every replica's Raft view (`replicaStatus`), in replica order (r1 first), for the metrics
 * scrape: null for a replica that does not answer (down, or acting crashed) or is not a
 * replica. One call per replica, all at once.
 */
export async function replicaStatuses(ns: Ns, topicId: string, partition: number, configs: Partial<TopicConfigs>, ids?: readonly string[]): Promise<(ReplicaStatus | null)[]> {
  return Promise.all(
    idsOr(ids, configs).map(async (id) => {
      try {
        const r = await stubOf(ns, topicId, partition, id, configs).replicaStatus();
        return r.ok ? r.replica : null;
      } catch {
        return null;
      }
    }),
  );
}

/**
 * A partition's description: at factor 1 the object's; replicated, the leader's view (see the
 * file comment), so the high watermark is never a lagging follower's.
 * @returns UNAVAILABLE (retriable) when no replica answers.
 */
export async function describePartition(
  ns: Ns,
  topicId: string,
  partition: number,
  configs: Partial<TopicConfigs>,
  ids?: readonly string[],
): Promise<RpcResult<{ partition: PartitionDescription }>> {
  const rf = replicationFactorOf(configs);
  if (rf === 1) return at(ns, topicId, partition, 0, configs).describe();
  const views = await Promise.all(
    idsOr(ids, configs).map(async (id) => {
      const stub = stubOf(ns, topicId, partition, id, configs);
      try {
        // replicaStatus throws for a replica that is down (or acts crashed): its view is not used.
        const [status, described] = await Promise.all([stub.replicaStatus(), stub.describe()]);
        return { status: status.ok ? status.replica : null, described };
      } catch {
        return null;
      }
    }),
  );
  let refusal: RpcResult<{ partition: PartitionDescription }> | null = null;
  const described: (PartitionDescription | null)[] = views.map((v) => {
    if (v === null) return null;
    if (!v.described.ok) {
      refusal = v.described;
      return null;
    }
    return v.described.partition;
  });
  const best = chooseLeaderView(
    views.map((v, i) => {
      const d = described[i];
      return d === null || d === undefined ? null : { leader: v!.status?.role === "leader", leaderEpoch: v!.status?.leaderEpoch ?? -1, highWatermark: d.highWatermark };
    }),
  );
  if (best >= 0) return { ok: true, partition: described[best]! };
  return refusal ?? errorResult("UNAVAILABLE", `No replica of partition ${partition} answered: retry.`, { partition });
}
