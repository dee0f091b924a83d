/**
 * A replica reassignment through the gateway (docs/RAFT.md "Replica reassignment" and "Partition
 * placement"): the partition's leader runs it (durable-objects/partition/reassign.ts); with the
 * metadata quorum on, the new placement (the voters with their location hints, the leader and
 * its epoch) is then recorded in the topic's metadata as a `partitionChange` record.
 *
 * The two commits are not one transaction: a gateway that dies between the partition's answer
 * and the record leaves the metadata naming the old replicas. The same request again completes
 * it: the leader answers that `replace` is no voter any more (INVALID_REQUEST with its voters),
 * and when the metadata still names `replace` and the voters hold exactly one replica the
 * metadata does not (the one added), this is the reassignment that already happened: its
 * placement is recorded now and the request answered as done. Recording is idempotent (an
 * absolute replica set; a leader not older than the recorded one).
 */
import type { Env } from "../env.ts";
import { metadataQuorumMembers, RaftMetadataStore } from "../metadata/raft-store.ts";
import { replicaIndexOf, type ReassignOk, type ReassignRequest } from "../partition/rpc.ts";
import { replicaLocation, replicationFactorOf } from "../protocol/config.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../protocol/errors.ts";
import type { PartitionPlacement, TopicSummary } from "../protocol/types.ts";
import { atAnyReplica, callAtLeader, noteLeader, noteMembers } from "./replicas.ts";

/** How long the gateway resends a reassignment to the current leader (ms): a catch-up wait (30 s) and a leadership transfer. */
export const REASSIGN_WAIT_MS = 60_000;

/**
 * Runs the reassignment at the leader and, with the metadata quorum on, records the new
 * placement. Errors: the partition's (NOT_LEADER_OR_FOLLOWER after the wait, INVALID_REQUEST,
 * REASSIGNMENT_IN_PROGRESS, REQUEST_TIMED_OUT), UNAVAILABLE when the placement could not be
 * recorded (the reassignment is done: the same request again records it).
 */
export async function reassignReplica(env: Env, topic: TopicSummary, partition: number, req: ReassignRequest): Promise<RpcResult<ReassignOk & { metadataOffset?: number }>> {
  const r = await callAtLeader(env, topic.topicId, partition, topic.configs, (p) => p.reassignReplica(req), REASSIGN_WAIT_MS);
  if (r.ok) {
    noteMembers(topic.topicId, partition, r.replicas);
    noteLeader(topic.topicId, partition, r.leaderReplica, topic.configs);
  }
  const members = metadataQuorumMembers(env.EDGELOG_METADATA_QUORUM);
  if (members === null) return r;
  const store = new RaftMetadataStore(env, members);
  // The placement as the metadata has it now (a linearizable read), not the cached topic's.
  const now = await store.getTopic(topic.name);
  if (!now.ok) return r.ok ? placementNotRecorded(now) : r;
  if (now.topic.topicId !== topic.topicId) return r;
  // A topic recorded before placements has none yet: its creation placement (the record adds it).
  const placed: PartitionPlacement = now.topic.placements?.find((p) => p.partition === partition) ?? {
    partition,
    replicas: Array.from({ length: replicationFactorOf(topic.configs) }, (_, i) => ({ id: `r${i + 1}`, location: replicaLocation(topic.configs, i) ?? null })),
    leader: null,
    leaderEpoch: -1,
  };
  let done: ReassignOk;
  if (r.ok) done = r;
  else {
    const earlier = await doneEarlier(env, topic, partition, req, r, placed);
    if (earlier === null) return r;
    done = earlier;
  }
  const replicas = done.replicas.map((id) => ({ id, location: locationOf(id, done.added, req, placed, topic) }));
  const leader = done.leaderEpoch >= 0 && done.replicas.includes(done.leaderReplica) ? { leader: done.leaderReplica, leaderEpoch: done.leaderEpoch } : {};
  const recorded = await store.recordPlacement({ topicId: topic.topicId, partition, replicas, ...leader });
  if (!recorded.ok) return placementNotRecorded(recorded);
  return { ...done, ok: true, metadataOffset: recorded.metadataOffset };
}

/** The location hint of replica `id` in the new placement: the request's for the added one, else what was recorded (or configured at creation). */
function locationOf(id: string, added: string, req: ReassignRequest, placed: PartitionPlacement, topic: TopicSummary): string | null {
  if (id === added) return req.location ?? null;
  const was = placed.replicas.find((x) => x.id === id);
  if (was !== undefined) return was.location;
  return replicaLocation(topic.configs, replicaIndexOf(id) ?? 0) ?? null;
}

/**
 * The reassignment of `req` already done at the partition but not recorded (see the file
 * comment): the leader's refusal names its voters; `replace` is not among them, the metadata
 * still names it, and exactly one voter is new to the metadata. @returns its outcome, or null.
 */
async function doneEarlier(env: Env, topic: TopicSummary, partition: number, req: ReassignRequest, refusal: ErrorResult, placed: PartitionPlacement): Promise<ReassignOk | null> {
  const voters = refusal.details?.replicas;
  if (refusal.code !== "INVALID_REQUEST" || !Array.isArray(voters) || !voters.every((v) => replicaIndexOf(v) !== null)) return null;
  const recorded = placed.replicas.map((x) => x.id);
  const added = (voters as string[]).filter((v) => !recorded.includes(v));
  if ((voters as string[]).includes(req.replace) || !recorded.includes(req.replace) || added.length !== 1) return null;
  // The leader now: from any live voter's view.
  const st = await atAnyReplica(env, topic.topicId, partition, topic.configs, (p) => p.replicaStatus()).catch(() => null);
  const view = st?.ok ? st.replica : null;
  return {
    added: added[0]!,
    removed: req.replace,
    replicas: [...(voters as string[])].sort((a, b) => replicaIndexOf(a)! - replicaIndexOf(b)!),
    // No leader known (an election): -1, and the record leaves the leader to the new leader's report.
    leaderReplica: view?.leaderReplica ?? added[0]!,
    leaderEpoch: view?.leaderReplica === null || view === null ? -1 : view.leaderEpoch,
  };
}

function placementNotRecorded(e: ErrorResult): ErrorResult {
  return errorResult("UNAVAILABLE", `The replica reassignment is done; recording its placement in the topic's metadata failed (${e.code}): send the same request again to complete it.`, {
    cause: e.code,
  });
}
