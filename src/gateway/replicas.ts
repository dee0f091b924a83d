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
 * - **Members** (replica reassignment, docs/RAFT.md "Replica reassignment"): the replica ids of a
 *   partition are r1..r3 at creation and change with reassignments (r2 replaced by r4). Replica
 *   `rN`'s object is named by its id alone (src/partition/rpc.ts), so this isolate only needs the
 *   current ids: it learns them from every NOT_LEADER_OR_FOLLOWER answer (`details.replicas`, the
 *   answering replica's Raft configuration) and from a reassignment's answer. A removed replica's
 *   object has no data and answers UNKNOWN_TOPIC_OR_PARTITION: the ids are then read again from
 *   another member's configuration and the call goes on at another replica.
 * - **Placement** (the metadata quorum on; docs/RAFT.md "Partition placement"): the topic's
 *   metadata names each partition's replica ids and the leader last reported with its epoch.
 *   Every topic load through this isolate hands them here ({@link notePlacements}): the ids
 *   replace what this isolate knew, and the recorded leader is tried first unless this isolate
 *   has heard of a leader in a later epoch. With MetadataDO, r1..r3 and r1 first, as before.
 */
import type { Env } from "../env.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../protocol/errors.ts";
import { replicationFactorOf } from "../protocol/config.ts";
import type { PartitionPlacement, TopicConfigs } from "../protocol/types.ts";
import { replicaIndexOf, replicaStubAt, type AppendOk, type AppendRequest, type PartitionRpc } from "../partition/rpc.ts";

/** How long a produce waits for a leader to be found or elected (ms): above 2 election timeouts (2 x 1-2 s). */
export const LEADER_WAIT_MS = 5_000;
/** Pause before asking the next replica while no leader is known (ms): one Raft tick. */
export const ELECTION_BACKOFF_MS = 100;

/** Per isolate: the replica last known to lead each replicated partition. */
const leaders = new Map<string, string>();
/** Per isolate: the leader epoch of that knowledge, when known (a NOT_LEADER_OR_FOLLOWER answer's, or the placement's). */
const leaderEpochs = new Map<string, number>();
/** Per isolate: the replica ids of each replicated partition, when they differ from r1..rf or were learned. */
const members = new Map<string, string[]>();
/** Per isolate: replicas whose call failed, until when (ms) they are skipped while a leader is searched for. */
const down = new Map<string, number>();
/** How long a replica whose call failed is skipped (ms): about one election. */
const DOWN_MS = 2_000;

/** The replica ids of a partition as this isolate knows them (r1..rf at first). */
function membersOf(key: string, rf: number): string[] {
  return members.get(key) ?? Array.from({ length: rf }, (_, i) => `r${i + 1}`);
}

/** The replica to try first: the known leader, else the first known member (r1 at first). */
function firstTry(key: string, rf: number): string {
  return leaders.get(key) ?? membersOf(key, rf)[0]!;
}

/**
 * The placements of a topic as its metadata records them (the metadata quorum; absent with
 * MetadataDO): each partition's replica ids become this isolate's, and its recorded leader the
 * first one tried unless a leader of a later epoch is known here already.
 */
export function notePlacements(topicId: string, placements: readonly PartitionPlacement[] | undefined): void {
  for (const p of placements ?? []) {
    const key = `${topicId}/${p.partition}`;
    noteMembers(
      topicId,
      p.partition,
      p.replicas.map((r) => r.id),
    );
    const ids = members.get(key);
    if (ids === undefined) continue;
    const known = leaderEpochs.get(key) ?? -1;
    if (p.leader !== null && ids.includes(p.leader) && p.leaderEpoch > known) {
      leaders.set(key, p.leader);
      leaderEpochs.set(key, p.leaderEpoch);
    } else if (leaders.has(key) && !ids.includes(leaders.get(key)!)) {
      leaders.delete(key);
    }
  }
}

/** The replica after `at` that is not marked down (or simply the next one when all are). */
function nextReplica(key: string, at: string, rf: number): string {
  const ids = membersOf(key, rf);
  const from = ids.indexOf(at);
  const now = Date.now();
  for (let k = 1; k <= ids.length; k++) {
    const id = ids[(from + k + ids.length) % ids.length]!;
    if ((down.get(`${key}/${id}`) ?? 0) <= now) return id;
  }
  return ids[(from + 1) % ids.length]!;
}

/** The object of replica `id` ("r1" is the partition object itself), with its `replica.locations` hint. */
export function replicaStub(env: Env, topicId: string, partition: number, id: string, configs: Partial<TopicConfigs>): PartitionRpc {
  return replicaStubAt(env.PARTITION, topicId, partition, replicaIndexOf(id) ?? 0, configs);
}

/** Records that replica `replicaId` leads the partition now (after a leadership transfer or a reassignment). */
export function noteLeader(topicId: string, partition: number, replicaId: string, _configs: Partial<TopicConfigs>): void {
  if (replicaIndexOf(replicaId) !== null) leaders.set(`${topicId}/${partition}`, replicaId);
}

/** Records the replica ids of a partition (a reassignment's answer, a replica's configuration). */
export function noteMembers(topicId: string, partition: number, ids: unknown): void {
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => replicaIndexOf(id) !== null)) return;
  members.set(
    `${topicId}/${partition}`,
    [...(ids as string[])].sort((a, b) => replicaIndexOf(a)! - replicaIndexOf(b)!),
  );
}

/** Where the partition is: for the calls below. */
interface Where {
  env: Env;
  topicId: string;
  partition: number;
  configs: Partial<TopicConfigs>;
  key: string;
  rf: number;
}

function where(env: Env, topicId: string, partition: number, configs: Partial<TopicConfigs>): Where {
  return { env, topicId, partition, configs, key: `${topicId}/${partition}`, rf: replicationFactorOf(configs) };
}

/**
 * True for the answer of a replica object that holds no partition (removed by a reassignment).
 * For r1 (which only a placement in the metadata quorum lets a reassignment replace): when this
 * isolate's ids no longer name it, or another member's Raft configuration does not (one call,
 * only on this rare answer); otherwise r1's UNKNOWN_TOPIC_OR_PARTITION means the topic itself is
 * gone, and the caller refreshes its metadata.
 */
async function isGone(w: Where, at: string, r: unknown): Promise<boolean> {
  if (w.rf <= 1 || typeof r !== "object" || r === null || (r as ErrorResult).ok !== false || (r as ErrorResult).code !== "UNKNOWN_TOPIC_OR_PARTITION") return false;
  if (at !== "r1" || !membersOf(w.key, w.rf).includes("r1")) return true;
  for (const id of membersOf(w.key, w.rf)) {
    if (id === "r1") continue;
    try {
      const st = await replicaStub(w.env, w.topicId, w.partition, id, w.configs).replicaStatus();
      if (st.ok && st.replica !== null) {
        if (st.replica.voters.includes("r1")) return false;
        noteMembers(w.topicId, w.partition, st.replica.voters);
        return true;
      }
    } catch {
      // Down: ask the next one.
    }
  }
  return false;
}

/**
 * Replica `gone` holds no partition (removed): it is dropped from this isolate's ids, which are
 * read again from the Raft configuration of another member. @returns the replica to ask next.
 */
async function forgetReplica(w: Where, gone: string): Promise<string> {
  const ids = membersOf(w.key, w.rf).filter((id) => id !== gone);
  if (ids.length > 0) members.set(w.key, ids);
  if (leaders.get(w.key) === gone) leaders.delete(w.key);
  for (const id of ids) {
    try {
      const st = await replicaStub(w.env, w.topicId, w.partition, id, w.configs).replicaStatus();
      if (st.ok && st.replica !== null) {
        noteMembers(w.topicId, w.partition, st.replica.voters);
        if (st.replica.leaderReplica !== null) return st.replica.leaderReplica;
        break;
      }
    } catch {
      // Down: ask the next one.
    }
  }
  return membersOf(w.key, w.rf)[0]!;
}

/**
 * Appends produce requests at the partition's leader (see the file comment), one outcome per
 * request in order.
 */
export async function appendAtLeader(env: Env, topicId: string, partition: number, configs: Partial<TopicConfigs>, reqs: AppendRequest[]): Promise<RpcResult<AppendOk>[]> {
  const w = where(env, topicId, partition, configs);
  if (w.rf === 1) return replicaStub(env, topicId, partition, "r1", configs).appendMany(reqs);
  const key = w.key;
  const deadline = Date.now() + LEADER_WAIT_MS;
  const out: RpcResult<AppendOk>[] = new Array(reqs.length);
  let pending = reqs.map((_, i) => i);
  let at = firstTry(key, w.rf);
  for (;;) {
    let answers: RpcResult<AppendOk>[];
    try {
      answers = await replicaStub(env, topicId, partition, at, configs).appendMany(pending.map((i) => reqs[i]!));
    } catch (err) {
      // Down or unreachable: the outcome is unknown (see the file comment). The next request
      // starts at the next replica.
      const failed = unavailable(w, at, err, "an idempotent producer's retry is safe.");
      for (const i of pending) out[i] = failed;
      return out;
    }
    if (answers.length > 0 && (await isGone(w, at, answers[0]))) {
      // A removed replica: nothing was appended there.
      if (Date.now() >= deadline) {
        for (const i of pending) out[i] = answers[0]!;
        return out;
      }
      at = await forgetReplica(w, at);
      continue;
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
    at = await afterNotLeader(w, at, refusal);
  }
}

/**
 * The replica to ask after `at` answered NOT_LEADER_OR_FOLLOWER: the leader it names, or (during
 * an election, or when the named one failed a call moments ago: most likely the one that is
 * gone, the followers have not noticed yet) the next replica after {@link ELECTION_BACKOFF_MS}.
 */
async function afterNotLeader(w: Where, at: string, refusal: ErrorResult): Promise<string> {
  noteMembers(w.topicId, w.partition, refusal.details?.replicas);
  const named = refusal.details?.leaderReplica;
  const leader = replicaIndexOf(named) === null ? null : (named as string);
  const epoch = refusal.details?.leaderEpoch;
  if (leader !== null && typeof epoch === "number") leaderEpochs.set(w.key, Math.max(leaderEpochs.get(w.key) ?? -1, epoch));
  if (leader !== null && leader !== at && (down.get(`${w.key}/${leader}`) ?? 0) <= Date.now()) return leader;
  await new Promise((r) => setTimeout(r, ELECTION_BACKOFF_MS));
  return nextReplica(w.key, at, w.rf);
}

/** The retriable answer for a call to replica `at` that failed (down or unreachable): its outcome is unknown. */
function unavailable(w: Where, at: string, err: unknown, advice: string): ErrorResult {
  down.set(`${w.key}/${at}`, Date.now() + DOWN_MS);
  leaders.set(w.key, nextReplica(w.key, at, w.rf));
  return errorResult("UNAVAILABLE", `Replica ${at} of this partition did not answer (${err instanceof Error ? err.message : String(err)}): retry; ${advice}`, {
    replica: at,
  });
}

/**
 * Runs one idempotent leader-only call (deleteRecords, leadership transfer, reassignment) at the
 * partition's leader, as {@link appendAtLeader} does for produce: NOT_LEADER_OR_FOLLOWER answers
 * are resent to the named leader (or the next replica during an election) for up to `waitMs`.
 * Unlike a produce, a call that fails (the replica is down) is resent to the next replica after
 * {@link ELECTION_BACKOFF_MS}: doing it twice is harmless (the same log start; the same leader).
 * After the wait: the last refusal, or UNAVAILABLE (retriable) when the last call failed.
 * `idempotent` false (a Durable Streams append): a call that fails is not resent, as for produce
 * ({@link appendAtLeader}): the client gets UNAVAILABLE and decides.
 */
export async function callAtLeader<T extends object>(
  env: Env,
  topicId: string,
  partition: number,
  configs: Partial<TopicConfigs>,
  call: (p: PartitionRpc) => Promise<RpcResult<T>>,
  waitMs: number = LEADER_WAIT_MS,
  idempotent = true,
): Promise<RpcResult<T>> {
  const w = where(env, topicId, partition, configs);
  if (w.rf === 1) return call(replicaStub(env, topicId, partition, "r1", configs));
  const key = w.key;
  const deadline = Date.now() + waitMs;
  let at = firstTry(key, w.rf);
  for (;;) {
    let r: RpcResult<T>;
    try {
      r = await call(replicaStub(env, topicId, partition, at, configs));
    } catch (err) {
      if (!idempotent) return unavailable(w, at, err, "its outcome is unknown; an idempotent producer's retry is safe.");
      const failed = unavailable(w, at, err, "the request is idempotent.");
      if (Date.now() >= deadline) return failed;
      await new Promise((resolve) => setTimeout(resolve, ELECTION_BACKOFF_MS));
      at = nextReplica(key, at, w.rf);
      continue;
    }
    if (Date.now() < deadline && (await isGone(w, at, r))) {
      at = await forgetReplica(w, at);
      continue;
    }
    if (r.ok || r.code !== "NOT_LEADER_OR_FOLLOWER") {
      leaders.set(key, at);
      return r;
    }
    if (Date.now() >= deadline) return r;
    at = await afterNotLeader(w, at, r);
  }
}

/**
 * Runs a read at a live replica: the known leader first, then the others when a call fails or
 * the replica was removed (answers UNKNOWN_TOPIC_OR_PARTITION).
 * @throws the last replica's error when none answers.
 */
export async function atAnyReplica<T>(env: Env, topicId: string, partition: number, configs: Partial<TopicConfigs>, call: (p: PartitionRpc) => Promise<T>): Promise<T> {
  const w = where(env, topicId, partition, configs);
  if (w.rf === 1) return call(replicaStub(env, topicId, partition, "r1", configs));
  const ids = membersOf(w.key, w.rf);
  const start = Math.max(0, ids.indexOf(firstTry(w.key, w.rf)));
  let last: unknown;
  let gone: T | undefined;
  for (let k = 0; k < ids.length; k++) {
    const id = ids[(start + k) % ids.length]!;
    try {
      const r = await call(replicaStub(env, topicId, partition, id, configs));
      if (!(await isGone(w, id, r))) return r;
      gone = r;
      await forgetReplica(w, id);
    } catch (err) {
      last = err;
    }
  }
  if (gone !== undefined) return gone;
  throw last;
}
