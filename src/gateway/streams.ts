/**
 * The gateway's side of the Durable Streams protocol (docs/DURABLE-STREAMS.md), behind the
 * routes of src/routes/compat/durable-streams.ts:
 * - {@link onStream}: one call to the partition object that backs a stream, with the topic
 *   metadata refreshed once when stale, and "no such topic" turned into STREAM_NOT_FOUND;
 * - {@link createStream}: the create (and fork) saga, the one stream operation that takes
 *   several steps across objects (a reference on the fork's source, the topic in the metadata
 *   store, the stream on its partition), releasing the reference on every failure;
 * - {@link streamError}: a failure as a thrown error carrying the protocol's headers, which the
 *   one onError of src/app.ts writes.
 * The decisions about a stream's state live in src/streams/ and in the partition object.
 */
import type { Env } from "../env.ts";
import { metadataStore } from "../metadata/store.ts";
import { partitionStub, type PartitionRpc } from "../partition/rpc.ts";
import { EdgelogError, errorResult, type ErrorResult, type RpcResult } from "../protocol/errors.ts";
import { MAX_RECORDS_PER_REQUEST } from "../protocol/limits.ts";
import { replicationFactorOf } from "../protocol/config.ts";
import type { TopicSummary } from "../protocol/types.ts";
import { DEFAULT_CONTENT_TYPE, H, isJsonContentType, type CreateHeaders } from "../streams/headers.ts";
import { cacheControl } from "../streams/http-cache.ts";
import { parseForkSource, topicNameForPath } from "../streams/names.ts";
import { encodeOffset } from "../streams/offsets.ts";
import { jsonMessages } from "../streams/records.ts";
import type { CreateStreamOk, ForkCreate, StreamRpc } from "../streams/rpc.ts";
import { ErrorWithHeaders } from "./errors.ts";
import { callAtLeader } from "./replicas.ts";
import { StaleTopicError, topicCache, withTopic } from "./topics.ts";

/** Records (JSON messages) per answer, and per append: bounds the per-record memory of tiny messages. */
export const MAX_RECORDS_PER_CALL = MAX_RECORDS_PER_REQUEST;

/** The header naming a stream's topic (docs/DURABLE-STREAMS.md "Names"). */
export const TOPIC_HEADER = "Edgelog-Topic";

/**
 * A stream failure as the error to throw: the status and JSON body of its code, and the
 * protocol's headers for the cases that need them (closed stream, fenced producer, sequence
 * gap), plus the stream's topic when known. `no-store`-style caching: an error is never cached.
 */
export function streamError(r: ErrorResult, topic: string | null): ErrorWithHeaders {
  const headers: Record<string, string> = { "cache-control": cacheControl("none") };
  if (topic !== null) headers[TOPIC_HEADER] = topic;
  const d = r.details ?? {};
  if (r.code === "STREAM_CLOSED") {
    headers[H.closed] = "true";
    if (typeof d.tail === "number") headers[H.nextOffset] = encodeOffset(d.tail);
  }
  if (r.code === "STALE_PRODUCER_EPOCH" && typeof d.currentEpoch === "number") headers[H.producerEpoch] = String(d.currentEpoch);
  if (r.code === "OUT_OF_ORDER_SEQUENCE_NUMBER" && typeof d.expectedSeq === "number") {
    headers[H.producerExpectedSeq] = String(d.expectedSeq);
    headers[H.producerReceivedSeq] = String(d.receivedSeq);
  }
  return new ErrorWithHeaders(r.code, r.message, r.details, headers);
}

/** REQUEST_TOO_LARGE for a body of more than {@link MAX_RECORDS_PER_CALL} JSON messages. */
export function tooManyMessages(count: number): ErrorResult {
  return errorResult("REQUEST_TOO_LARGE", `At most ${MAX_RECORDS_PER_CALL} JSON messages per request, got ${count}.`);
}

/** The stream RPC surface of the partition object of a stream's topic (its one partition). */
export function streamStub(env: Env, topicId: string): StreamRpc {
  return partitionStub(env.PARTITION, topicId, 0) as unknown as StreamRpc;
}

/**
 * Runs `op` at the partition of a stream's topic: the one object at `replication.factor` 1; at
 * 3, the leader replica (src/gateway/replicas.ts `callAtLeader`: NOT_LEADER_OR_FOLLOWER is
 * followed to the leader, or retried through an election for up to 5 s). A call that fails (a
 * replica down) is resent to another replica only when `idempotent` (reads, HEAD, DELETE, PUT);
 * an append's outcome is then unknown: UNAVAILABLE (retriable).
 */
export function atStreamLeader<T extends object>(env: Env, topic: TopicSummary, op: (stub: StreamRpc) => Promise<RpcResult<T>>, idempotent = true): Promise<RpcResult<T>> {
  return callAtLeader(env, topic.topicId, 0, topic.configs, (p: PartitionRpc) => op(p as unknown as StreamRpc), undefined, idempotent);
}

/**
 * Runs `op` against the stream's partition (its leader: {@link atStreamLeader}). A topic that
 * does not exist (or has more than one partition, so it is not a stream) is STREAM_NOT_FOUND; a
 * partition that answers UNKNOWN_TOPIC_OR_PARTITION makes the gateway refresh its cached topic
 * id once.
 * @throws EdgelogError INVALID_TOPIC_NAME (from the metadata lookup), or what `op` throws.
 */
export async function onStream<T extends object>(
  env: Env,
  topicName: string,
  op: (stub: StreamRpc, topic: TopicSummary) => Promise<RpcResult<T>>,
  idempotent = true,
): Promise<RpcResult<T & { topic: TopicSummary }>> {
  try {
    return await withTopic(env, topicName, async (topic) => {
      if (topic.partitions !== 1) return errorResult("STREAM_NOT_FOUND", `Topic ${topic.name} has ${topic.partitions} partitions: it is not a stream.`);
      const r = await atStreamLeader(env, topic, (stub) => op(stub, topic), idempotent);
      if (!r.ok) {
        if (r.code === "UNKNOWN_TOPIC_OR_PARTITION") throw new StaleTopicError(r.message ?? "The stream's partition is gone.");
        return r;
      }
      return { ...r, topic };
    });
  } catch (err) {
    if (err instanceof EdgelogError && err.code === "UNKNOWN_TOPIC_OR_PARTITION") return errorResult("STREAM_NOT_FOUND", "No stream exists at this path.");
    throw err;
  }
}

/** A `PUT` as the route parsed it. */
export interface CreateStreamInput {
  /** The stream path (parseStreamPath) and its topic (topicNameForPath). */
  path: string;
  topic: string;
  headers: CreateHeaders;
  /** The request body (the initial content; may be empty). */
  body: Uint8Array;
  /** The request URL's origin, against which `Stream-Forked-From` resolves. */
  origin: string;
  /** `Edgelog-Replication-Factor` (1 or 3), or null when not sent: the topic's `replication.factor` when it is created. */
  replicationFactor: number | null;
}

/**
 * Creates the stream (or confirms an existing one with the same configuration), forking it
 * when asked:
 * 1. a fork validates its fork point on the source and takes a reference there first, so the
 *    source cannot disappear under the new fork; every failure below releases it;
 * 2. the initial body is judged by the stream's content type (JSON: an array of messages);
 * 3. the topic (one partition) is created or found, then the stream on its partition. A
 *    partition that answers UNKNOWN_TOPIC_OR_PARTITION was deleted (or just expired): the
 *    topic is made again, at most 3 times, then UNAVAILABLE. A new topic takes
 *    `replicationFactor` (Edgelog-Replication-Factor) as its `replication.factor`; an existing
 *    one with another factor is STREAM_CONFLICT (409). At factor 3 the stream is created at the
 *    partition's leader (a fork too: its source's reference, then the replicated fork).
 * Errors (as results): INVALID_REQUEST (fork source), STREAM_CONFLICT, INVALID_JSON,
 * EMPTY_BATCH, REQUEST_TOO_LARGE, the metadata store's and the partition's.
 */
export async function createStream(env: Env, input: CreateStreamInput): Promise<RpcResult<CreateStreamOk>> {
  const h = input.headers;
  const body = input.body;

  // 1. The fork's reference on its source.
  let fork: ForkCreate | null = null;
  let sourceSummary: TopicSummary | null = null;
  if (h.fork !== null) {
    const src = parseForkSource(h.fork.source, input.origin);
    if (!src.ok) return errorResult("INVALID_REQUEST", `Stream-Forked-From: ${src.message}`);
    const sourceTopic = await topicNameForPath(src.path);
    const anchor = h.fork.offset;
    const subOffset = h.fork.subOffset;
    const r = await onStream(env, sourceTopic, (stub) => stub.dsForkSource({ path: src.path, anchor, subOffset, contentType: h.contentType }));
    if (!r.ok) return r.code === "STREAM_GONE" ? errorResult("STREAM_CONFLICT", r.message) : r;
    sourceSummary = r.topic;
    fork = {
      sourcePath: src.path,
      sourceTopic,
      sourceTopicId: r.topic.topicId,
      anchorRequested: anchor,
      anchor: r.anchor,
      subOffset,
      source: { contentType: r.contentType, expiry: r.expiry, anchor: r.anchor, forkOffset: r.forkOffset, prefix: r.prefix, visibleStart: r.visibleStart },
    };
  }
  const release = async (): Promise<void> => {
    if (fork === null || sourceSummary === null) return;
    const f = fork;
    // At the source's leader when it is replicated (its reference count is a Raft entry there).
    await atStreamLeader(env, sourceSummary, (stub) => stub.dsRelease(f.sourcePath));
  };

  // 2. The initial body, judged by the stream's content type.
  const contentType = h.contentType ?? fork?.source.contentType ?? DEFAULT_CONTENT_TYPE;
  let messages: Uint8Array[] | null = null;
  if (isJsonContentType(contentType) && body.length > 0) {
    const m = jsonMessages(body, true);
    if (!m.ok) {
      await release();
      return errorResult(m.reason === "invalid-json" ? "INVALID_JSON" : "EMPTY_BATCH", m.message);
    }
    if (m.messages.length > MAX_RECORDS_PER_CALL) {
      await release();
      return tooManyMessages(m.messages.length);
    }
    messages = m.messages;
  }

  // 3. The topic, then the stream on its partition.
  let result: RpcResult<CreateStreamOk> | null = null;
  for (let attempt = 0; attempt < 3 && result === null; attempt++) {
    const topic = await ensureTopic(env, input.topic, input.replicationFactor);
    if (!topic.ok) {
      if (topic.code === "UNKNOWN_TOPIC_OR_PARTITION") continue; // deleted between create and get
      await release();
      return topic;
    }
    const r = await atStreamLeader(env, topic.topic, (stub) =>
      stub.dsCreate({
        path: input.path,
        contentType: h.contentType,
        ttlSeconds: h.ttlSeconds,
        expiresAtMs: h.expiresAtMs,
        closed: h.closed,
        body: messages === null ? body : null,
        messages,
        fork,
      }),
    );
    if (!r.ok && r.code === "UNKNOWN_TOPIC_OR_PARTITION") {
      // The topic's partition is gone. Either the topic was deleted meanwhile, or a stream
      // delete or expiry stopped between the partition's own destroy and the topic's delete
      // (a crash, or the metadata store unreachable; the partition goes first, design rule 6),
      // leaving a row whose partition answers for nothing: delete that topic (by id, so a
      // newer topic of the name stays) and create afresh.
      await metadataStore(env).deleteTopic(input.topic, topic.topic.topicId);
      topicCache.invalidate(input.topic);
      continue;
    }
    result = r;
  }
  if (result === null) result = errorResult("UNAVAILABLE", "The stream's topic kept disappearing while it was being created.");
  if (!result.ok || result.status === "exists") await release();
  return result;
}

/**
 * The stream's topic: created with one partition (and `replication.factor` when asked), or the
 * existing one (fresh from the store), refused when its factor is not the one asked for.
 */
async function ensureTopic(env: Env, name: string, replicationFactor: number | null): Promise<RpcResult<{ topic: TopicSummary }>> {
  const store = metadataStore(env);
  const created = await store.createTopic({ name, partitions: 1, ...(replicationFactor !== null ? { configs: { "replication.factor": replicationFactor } } : {}) });
  if (created.ok) {
    topicCache.put(created.topic, Date.now());
    return { ok: true, topic: created.topic };
  }
  if (created.code !== "TOPIC_ALREADY_EXISTS") return created;
  const existing = await store.getTopic(name);
  if (!existing.ok) return existing;
  if (existing.topic.partitions !== 1) {
    return errorResult("STREAM_CONFLICT", `Topic ${name} exists with ${existing.topic.partitions} partitions: a stream needs exactly one.`);
  }
  const rf = replicationFactorOf(existing.topic.configs);
  if (replicationFactor !== null && rf !== replicationFactor) {
    return errorResult("STREAM_CONFLICT", `Topic ${name} exists with replication.factor ${rf}, not ${replicationFactor}.`, { replicationFactor: rf });
  }
  topicCache.put(existing.topic, Date.now());
  return existing;
}
