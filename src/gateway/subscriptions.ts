/**
 * Routing of subscription calls and consumer/reader sockets to a partition (docs/RAFT.md
 * "Subscriptions are replicated"). At `replication.factor` 1 every call goes to the partition
 * object, as before. Replicated, subscriptions are served by the partition's leader only: a
 * replica that is not the leader answers NOT_LEADER_OR_FOLLOWER naming it, and the call (or the
 * WebSocket upgrade) is sent again to the named leader, or during an election to the next
 * replica, for up to LEADER_WAIT_MS, as leader-only calls are (`callAtLeader`,
 * src/gateway/replicas.ts). A call to a replica that is down is resent to the next one.
 */
import type { Env } from "../env.ts";
import type { PartitionRpc } from "../partition/rpc.ts";
import { EdgelogError, isErrorCode, type ErrorBody, type RpcResult } from "../protocol/errors.ts";
import type { TopicSummary } from "../protocol/types.ts";
import type { SubscriptionRpc } from "../subscriptions/rpc.ts";
import { callAtLeader } from "./replicas.ts";

/** Runs a subscription RPC at the leader of partition `partition` of `topic` (see the file comment). */
export function subscriptionAtLeader<T extends object>(env: Env, topic: TopicSummary, partition: number, call: (s: SubscriptionRpc) => Promise<RpcResult<T>>): Promise<RpcResult<T>> {
  return callAtLeader(env, topic.topicId, partition, topic.configs, (p) => call(p as unknown as SubscriptionRpc));
}

/**
 * Forwards a consumer's or reader's WebSocket upgrade (`request()` builds it afresh for each
 * try: a GET without a body) to the partition's leader. @returns the leader's answer: 101 with
 * the socket, or its JSON error; after the wait, the last NOT_LEADER_OR_FOLLOWER as a JSON error
 * response (retriable).
 */
export async function upgradeAtLeader(env: Env, topic: TopicSummary, partition: number, request: () => Request): Promise<Response> {
  const r = await callAtLeader(env, topic.topicId, partition, topic.configs, async (p: PartitionRpc) => {
    const res = await (p as unknown as { fetch(r: Request): Promise<Response> }).fetch(request());
    if (res.status !== 503 || res.webSocket !== null) return { ok: true as const, res };
    const body = (await res
      .clone()
      .json()
      .catch(() => null)) as ErrorBody | null;
    const code = body?.error?.code;
    if (code !== "NOT_LEADER_OR_FOLLOWER" || !isErrorCode(code)) return { ok: true as const, res };
    return { ok: false as const, code, message: body!.error.message, ...(body!.error.details !== undefined ? { details: body!.error.details } : {}) };
  });
  if (r.ok) return r.res;
  const e = new EdgelogError(r.code, r.message, r.details);
  return Response.json(e.toBody(), { status: e.httpStatus });
}
