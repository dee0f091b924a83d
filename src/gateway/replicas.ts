/**
 * Routing to the replicas of a replicated partition (`replication.factor` 3; docs/RAFT.md
 * "Replicated partitions"). Replica r1 is the partition object `${topicId}/${partition}`; r2 and
 * r3 are `${topicId}/${partition}/r2` and `/r3`. At factor 1 every call goes to the one object,
 * as before.
 *
 * - **Produce** goes to the leader this isolate last heard of (r1 at first). A replica that is not
 *   the leader answers NOT_LEADER_OR_FOLLOWER naming the leader (nothing appended): those
 *   requests are resent there, or, during an election, to the next replica after
 *   {@link ELECTION_BACKOFF_MS}, until {@link LEADER_WAIT_MS} has passed; then the client gets
 *   the retriable NOT_LEADER_OR_FOLLOWER. A call that fails (the replica is down) is NOT resent:
 *   its requests may have been proposed and may still commit, so the client gets the retriable
 *   UNAVAILABLE and decides (an idempotent producer's retry is recognised as a duplicate); the
 *   next request tries the next replica.
 * - **Reads** (fetch, ListOffsets) go to any live replica, the known leader first: each replica's
 *   log holds only committed records, so every answer is below the high watermark.
 */
import type { Env } from "../env.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../protocol/errors.ts";
import { replicationFactorOf } from "../protocol/config.ts";
import type { TopicConfigs } from "../protocol/types.ts";
import { replicaStubAt, type AppendOk, type AppendRequest, type PartitionRpc } from "../partition/rpc.ts";

/** How long a produce waits for a leader to be found or elected (ms): above 2 election timeouts (2 x 1-2 s). */
export const LEADER_WAIT_MS = 5_000;
/** Pause before asking the next replica while no leader is known (ms): one Raft tick. */
export const ELECTION_BACKOFF_MS = 100;

/** Per isolate: the replica (0-based) last known to lead each replicated partition. */
const leaders = new Map<string, number>();
/** Per isolate: replicas whose call failed, until when (ms) they are skipped while a leader is searched for. */
const down = new Map<string, number>();
/** How long a replica whose call failed is skipped (ms): about one election. */
const DOWN_MS = 2_000;

/** The replica after `at` that is not marked down (or simply the next one when all are). */
function nextReplica(key: string, at: number, rf: number): number {
  const now = Date.now();
  for (let k = 1; k <= rf; k++) {
    const i = (at + k) % rf;
    if ((down.get(`${key}/${i}`) ?? 0) <= now) return i;
  }
  return (at + 1) % rf;
}

/** The object of replica `index` (0-based: r1 is the partition object itself), with its `replica.locations` hint. */
export function replicaStub(env: Env, topicId: string, partition: number, index: number, configs: Partial<TopicConfigs>): PartitionRpc {
  return replicaStubAt(env.PARTITION, topicId, partition, index, configs);
}

/** Records that replica `replicaId` ("r1".."r3") leads the partition now (after a leadership transfer). */
export function noteLeader(topicId: string, partition: number, replicaId: string, configs: Partial<TopicConfigs>): void {
  const i = replicaIndex(replicaId, replicationFactorOf(configs));
  if (i !== null) leaders.set(`${topicId}/${partition}`, i);
}

/** `r2` -> 1; anything else -> null. */
function replicaIndex(id: unknown, rf: number): number | null {
  if (typeof id !== "string" || !/^r[1-9]$/.test(id)) return null;
  const i = Number(id.slice(1)) - 1;
  return i < rf ? i : null;
}

/**
 * Appends produce requests at the partition's leader (see the file comment), one outcome per
 * request in order.
 */
export async function appendAtLeader(env: Env, topicId: string, partition: number, configs: Partial<TopicConfigs>, reqs: AppendRequest[]): Promise<RpcResult<AppendOk>[]> {
  const rf = replicationFactorOf(configs);
  if (rf === 1) return replicaStub(env, topicId, partition, 0, configs).appendMany(reqs);
  const key = `${topicId}/${partition}`;
  const deadline = Date.now() + LEADER_WAIT_MS;
  const out: RpcResult<AppendOk>[] = new Array(reqs.length);
  let pending = reqs.map((_, i) => i);
  let at = leaders.get(key) ?? 0;
  for (;;) {
    let answers: RpcResult<AppendOk>[];
    try {
      answers = await replicaStub(env, topicId, partition, at, configs).appendMany(pending.map((i) => reqs[i]!));
    } catch (err) {
      // Down or unreachable: the outcome is unknown (see the file comment). The next request
      // starts at the next replica.
      const failed = unavailable(key, at, rf, err, "an idempotent producer's retry is safe.");
      for (const i of pending) out[i] = failed;
      return out;
    }
    const again: number[] = [];
    let refusal: ErrorResult | null = null;
    for (let k = 0; k < pending.length; k++) {
      const r = answers[k]!;
      if (!r.ok && r.code === "NOT_LEADER_OR_FOLLOWER") {
        again.push(pending[k]!);
        refusal = r;
      } else out[pending[k]!] = r;
    }
    if (refusal === null) {
      leaders.set(key, at);
      return out;
    }
    pending = again;
    if (Date.now() >= deadline) {
      for (const i of pending) out[i] = refusal;
      return out;
    }
    at = await afterNotLeader(key, at, rf, refusal);
  }
}

/**
 * The replica to ask after `at` answered NOT_LEADER_OR_FOLLOWER: the leader it names, or (during
 * an election, or when the named one failed a call moments ago: most likely the one that is
 * gone, the followers have not noticed yet) the next replica after {@link ELECTION_BACKOFF_MS}.
 */
async function afterNotLeader(key: string, at: number, rf: number, refusal: ErrorResult): Promise<number> {
  const leader = replicaIndex(refusal.details?.leaderReplica, rf);
  if (leader !== null && leader !== at && (down.get(`${key}/${leader}`) ?? 0) <= Date.now()) return leader;
  await new Promise((r) => setTimeout(r, ELECTION_BACKOFF_MS));
  return nextReplica(key, at, rf);
}

/** The retriable answer for a call to replica `at` that failed (down or unreachable): its outcome is unknown. */
function unavailable(key: string, at: number, rf: number, err: unknown, advice: string): ErrorResult {
  down.set(`${key}/${at}`, Date.now() + DOWN_MS);
  leaders.set(key, nextReplica(key, at, rf));
  return errorResult("UNAVAILABLE", `Replica r${at + 1} of this partition did not answer (${err instanceof Error ? err.message : String(err)}): retry; ${advice}`, {
    replica: `r${at + 1}`,
  });
}

/**
 * Runs one idempotent leader-only call (deleteRecords, leadership transfer) at the partition's
 * leader, as {@link appendAtLeader} does for produce: NOT_LEADER_OR_FOLLOWER answers are resent
 * to the named leader (or the next replica during an election) for up to {@link LEADER_WAIT_MS}.
 * Unlike a produce, a call that fails (the replica is down) is resent to the next replica after
 * {@link ELECTION_BACKOFF_MS}: doing it twice is harmless (the same log start; the same leader).
 * After the wait: the last refusal, or UNAVAILABLE (retriable) when the last call failed.
 */
export async function callAtLeader<T extends object>(
  env: Env,
  topicId: string,
  partition: number,
  configs: Partial<TopicConfigs>,
  call: (p: PartitionRpc) => Promise<RpcResult<T>>,
): Promise<RpcResult<T>> {
  const rf = replicationFactorOf(configs);
  if (rf === 1) return call(replicaStub(env, topicId, partition, 0, configs));
  const key = `${topicId}/${partition}`;
  const deadline = Date.now() + LEADER_WAIT_MS;
  let at = leaders.get(key) ?? 0;
  for (;;) {
    let r: RpcResult<T>;
    try {
      r = await call(replicaStub(env, topicId, partition, at, configs));
    } catch (err) {
      const failed = unavailable(key, at, rf, err, "the request is idempotent.");
      if (Date.now() >= deadline) return failed;
      await new Promise((resolve) => setTimeout(resolve, ELECTION_BACKOFF_MS));
      at = nextReplica(key, at, rf);
      continue;
    }
    if (r.ok || r.code !== "NOT_LEADER_OR_FOLLOWER") {
      leaders.set(key, at);
      return r;
    }
    if (Date.now() >= deadline) return r;
    at = await afterNotLeader(key, at, rf, r);
  }
}

/**
 * Runs a read at a live replica: the known leader first, then the others when a call fails.
 * @throws the last replica's error when none answers.
 */
export async function atAnyReplica<T>(env: Env, topicId: string, partition: number, configs: Partial<TopicConfigs>, call: (p: PartitionRpc) => Promise<T>): Promise<T> {
  const rf = replicationFactorOf(configs);
  if (rf === 1) return call(replicaStub(env, topicId, partition, 0, configs));
  const start = leaders.get(`${topicId}/${partition}`) ?? 0;
  let last: unknown;
  for (let k = 0; k < rf; k++) {
    try {
      return await call(replicaStub(env, topicId, partition, (start + k) % rf, configs));
    } catch (err) {
      last = err;
    }
  }
  throw last;
}
