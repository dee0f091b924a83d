/**
 * A fork's calls to its source stream's partition from inside a Durable Object (reads of the
 * range below the fork offset, the boundary values of a sub-offset fork, the release of its
 * reference; docs/DURABLE-STREAMS.md "Forks" and "Replicated streams"). At `replication.factor`
 * 1 the source is one object (r1) and this is one call, as before; a source at factor 3 answers
 * NOT_LEADER_OR_FOLLOWER at a replica that does not lead, and the call follows the named leader,
 * or the next replica during an election, as the gateway's `callAtLeader` does.
 *
 * Pure module: the replicas' stubs are given (no Workers imports).
 */
import { replicaIndexOf } from "../partition/rpc.ts";
import type { RpcResult } from "../protocol/errors.ts";
import type { StreamRpc } from "./rpc.ts";

/** How long a call waits for the source's leader to be found or elected (ms): as the gateway's LEADER_WAIT_MS. */
export const SOURCE_LEADER_WAIT_MS = 5_000;
/** Pause before asking the next replica while no leader is known (ms): one Raft tick. */
const SOURCE_BACKOFF_MS = 100;

/**
 * Runs `call` at the leader of the source's partition. `replica(index)` is the stub of replica
 * `index` (0 = r1, the partition object). A call that throws is retried at another replica only
 * once the source is known to be replicated (it answered NOT_LEADER_OR_FOLLOWER, or
 * `isReplicated`, asked when r1 fails first, says so from the source topic's configs): a
 * factor-1 source has no other replica to ask (asking would create empty objects), and its
 * failure is thrown as before.
 * @returns the first answer other than NOT_LEADER_OR_FOLLOWER, or the last refusal after
 *   {@link SOURCE_LEADER_WAIT_MS}.
 * @throws the last failure of a call, when the source is not known to be replicated or time is up.
 */
export async function atSourceLeader<T>(
  replica: (index: number) => StreamRpc,
  call: (s: StreamRpc) => Promise<RpcResult<T>>,
  isReplicated: () => Promise<boolean>,
  waitMs = SOURCE_LEADER_WAIT_MS,
): Promise<RpcResult<T>> {
  const deadline = Date.now() + waitMs;
  let ids = ["r1", "r2", "r3"];
  let at = "r1";
  let replicated = false;
  const next = (): string => ids[(ids.indexOf(at) + 1) % ids.length] ?? "r1";
  for (;;) {
    let r: RpcResult<T>;
    try {
      r = await call(replica(replicaIndexOf(at) ?? 0));
    } catch (err) {
      if (!replicated) replicated = await isReplicated().catch(() => false);
      if (!replicated || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, SOURCE_BACKOFF_MS));
      at = next();
      continue;
    }
    if (r.ok || r.code !== "NOT_LEADER_OR_FOLLOWER") return r;
    replicated = true;
    if (Date.now() >= deadline) return r;
    const known = r.details?.replicas;
    if (Array.isArray(known) && known.length > 0 && known.every((id) => replicaIndexOf(id) !== null)) ids = known as string[];
    const leader = r.details?.leaderReplica;
    if (typeof leader === "string" && replicaIndexOf(leader) !== null && leader !== at) {
      at = leader;
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, SOURCE_BACKOFF_MS));
    at = next();
  }
}
