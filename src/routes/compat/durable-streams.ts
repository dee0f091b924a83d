/**
 * Durable Streams protocol at `/v1/stream/{path}` (docs/DURABLE-STREAMS.md):
 * `PUT` create/fork, `POST` append/close, `GET` read (catch-up, long-poll, SSE), `HEAD`,
 * `DELETE`, `OPTIONS`. Each stream is the one-partition topic `streams/default/{part}`.
 *
 * Routes parse and validate, call the stream's partition object (one RPC, except PUT, which
 * also creates the topic and, for a fork, references the source), and map the typed result
 * to the protocol's status codes and headers. The decisions live in src/streams/ and in the
 * partition (durable-objects/partition/streams/).
 */
import type { Hono, MiddlewareHandler } from "hono";
import type { AppContext, AppEnv } from "../../gateway/context.ts";
import { StaleTopicError, topicCache, withTopic } from "../../gateway/topics.ts";
import { metadataStore } from "../../metadata/store.ts";
import { partitionStub, type RpcResult } from "../../partition/rpc.ts";
import { EdgelogError, ERRORS, errorResult, type ErrorCode, type ErrorResult } from "../../protocol/errors.ts";
import { MAX_RECORDS_PER_REQUEST } from "../../protocol/limits.ts";
import type { TopicSummary } from "../../protocol/types.ts";
import {
  DEFAULT_CONTENT_TYPE,
  H,
  isError,
  isJsonContentType,
  isSseText,
  parseAppendHeaders,
  parseCreateHeaders,
} from "../../streams/headers.ts";
import { cacheControl, ifNoneMatchHits, responseCursor } from "../../streams/http-cache.ts";
import { parseForkSource, parseStreamPath, STREAMS_PATH_PREFIX, topicNameForPath } from "../../streams/names.ts";
import { encodeOffset, parseOffsetParam, type OffsetSpec } from "../../streams/offsets.ts";
import { longPollNoContentHeaders, readHeaders, type ReadOutcome } from "../../streams/read.ts";
import { jsonMessages } from "../../streams/records.ts";
import type { CreateStreamOk, ForkCreate, ReadStreamOk, StreamRpc } from "../../streams/rpc.ts";
import { sseControlEvent, sseDataEvent, type SseControl } from "../../streams/sse.ts";

/** Longest long-poll (and SSE wait between events), ms, unless STREAMS_LONG_POLL_TIMEOUT_MS says otherwise. */
export const DEFAULT_LONG_POLL_TIMEOUT_MS = 20_000;
/** Bounds of STREAMS_LONG_POLL_TIMEOUT_MS. */
const LONG_POLL_TIMEOUT_MIN_MS = 100;
const LONG_POLL_TIMEOUT_MAX_MS = 60_000;
/**
 * Value bytes per catch-up answer (the first record always goes in). Large, because a
 * catch-up reader wants the backlog in as few round trips as possible (the protocol sets no
 * limit; the reference server answers with everything). Large answers come from the
 * partition as a stream of chunks, so they are not held to the 32 MiB of one Durable Object
 * RPC answer; the partition reads at most 16 MiB of an answer from storage (the rest comes
 * from its in-memory tail cache, durable-objects/partition/streams/read.ts).
 */
export const READ_MAX_BYTES = 32 * 1024 * 1024;
/** Value bytes per live answer (long-poll, one SSE data event): live readers want it soon, not big. */
export const LIVE_READ_MAX_BYTES = 1024 * 1024;
/** Records (JSON messages) per answer, and per append: bounds the per-record memory of tiny messages. */
export const MAX_RECORDS_PER_CALL = MAX_RECORDS_PER_REQUEST;
/** An SSE connection is closed after this long so clients reconnect through CDNs (protocol 10.2). */
export const SSE_CONNECTION_MAX_MS = 60_000;

const ALLOW_METHODS = "GET, HEAD, PUT, POST, DELETE, OPTIONS";
const ALLOW_HEADERS = [
  "Content-Type",
  "Authorization",
  "If-None-Match",
  H.seq,
  H.ttl,
  H.expiresAt,
  H.closed,
  H.producerId,
  H.producerEpoch,
  H.producerSeq,
  H.forkedFrom,
  H.forkOffset,
  H.forkSubOffset,
].join(", ");
const EXPOSE_HEADERS = [
  H.nextOffset,
  H.cursor,
  H.upToDate,
  H.closed,
  H.ttl,
  H.expiresAt,
  H.sseDataEncoding,
  H.producerEpoch,
  H.producerSeq,
  H.producerExpectedSeq,
  H.producerReceivedSeq,
  "ETag",
  "Content-Type",
  "Location",
  "Edgelog-Topic",
].join(", ");

/** The header naming a stream's topic (docs/DURABLE-STREAMS.md "Names"). */
const TOPIC_HEADER = "Edgelog-Topic";

export function durableStreamsRoutes(app: Hono<AppEnv>): void {
  const pattern = `${STREAMS_PATH_PREFIX}*`;
  app.use(pattern, streamHeaders());
  app.put(pattern, createStream);
  app.post(pattern, appendStream);
  // hono dispatches HEAD to GET routes; readStream tells them apart.
  app.get(pattern, readStream);
  app.delete(pattern, deleteStream);
}

/**
 * Browser-security and CORS headers on every answer (protocol 12.7), and CORS preflights:
 * `*` origins, the protocol's request headers allowed (with If-None-Match for conditional
 * GETs), its response headers exposed.
 */
function streamHeaders(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method === "OPTIONS") {
      return new Response(null, {
        status: 204,
        headers: {
          "Access-Control-Allow-Origin": "*",
          "Access-Control-Allow-Methods": ALLOW_METHODS,
          "Access-Control-Allow-Headers": ALLOW_HEADERS,
          "Access-Control-Max-Age": "86400",
          "X-Content-Type-Options": "nosniff",
          "Cross-Origin-Resource-Policy": "cross-origin",
        },
      });
    }
    await next();
    const h = c.res.headers;
    h.set("X-Content-Type-Options", "nosniff");
    h.set("Cross-Origin-Resource-Policy", "cross-origin");
    h.set("Access-Control-Allow-Origin", "*");
    h.set("Access-Control-Expose-Headers", EXPOSE_HEADERS);
  };
}

// ---------------------------------------------------------------------------------------------
// Shared
// ---------------------------------------------------------------------------------------------

interface Target {
  path: string;
  topic: string;
}

/** The stream the request addresses, or a 400/404 answer. */
async function target(c: AppContext): Promise<Target | Response> {
  const pathname = new URL(c.req.url).pathname;
  const p = parseStreamPath(pathname);
  if (!p.ok) return errorResponse(c, errorResult(p.reason === "reserved" ? "NOT_FOUND" : "INVALID_REQUEST", p.message), null);
  return { path: p.path, topic: await topicNameForPath(p.path) };
}

function stubOf(c: AppContext, topicId: string): StreamRpc {
  return partitionStub(c.env.PARTITION, topicId, 0) as unknown as StreamRpc;
}

/**
 * Runs `op` against the stream's partition. A topic that does not exist (or has more than one
 * partition, so it is not a stream) is STREAM_NOT_FOUND; a partition that answers
 * UNKNOWN_TOPIC_OR_PARTITION makes the gateway refresh its cached topic id once.
 */
async function onStream<T>(c: AppContext, topicName: string, op: (stub: StreamRpc, topic: TopicSummary) => Promise<RpcResult<T>>): Promise<RpcResult<T & { topic: TopicSummary }>> {
  try {
    return await withTopic(c.env, topicName, async (topic) => {
      if (topic.partitions !== 1) return errorResult("STREAM_NOT_FOUND", `Topic ${topic.name} has ${topic.partitions} partitions: it is not a stream.`);
      const r = await op(stubOf(c, topic.topicId), topic);
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

/**
 * The error answer: the status of the code, Edgelog's JSON error body, and the protocol's
 * headers for the cases that need them (closed stream, fenced producer, sequence gap).
 */
function errorResponse(c: AppContext, r: ErrorResult, topic: string | null): Response {
  const status = ERRORS[r.code].httpStatus;
  const headers: Record<string, string> = { "content-type": "application/json", "cache-control": cacheControl("none") };
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
  const body = c.req.method === "HEAD" ? null : JSON.stringify(new EdgelogError(r.code, r.message, r.details).toBody());
  return new Response(body, { status, headers });
}

function tooManyMessages(c: AppContext, count: number, topic: string): Response {
  return errorResponse(c, errorResult("REQUEST_TOO_LARGE", `At most ${MAX_RECORDS_PER_CALL} JSON messages per request, got ${count}.`), topic);
}

function badRequest(c: AppContext, message: string, topic: string | null = null): Response {
  return errorResponse(c, errorResult("INVALID_REQUEST", message), topic);
}

function longPollTimeoutMs(c: AppContext): number {
  const raw = Number(c.env.STREAMS_LONG_POLL_TIMEOUT_MS ?? DEFAULT_LONG_POLL_TIMEOUT_MS);
  if (!Number.isFinite(raw)) return DEFAULT_LONG_POLL_TIMEOUT_MS;
  return Math.min(LONG_POLL_TIMEOUT_MAX_MS, Math.max(LONG_POLL_TIMEOUT_MIN_MS, Math.floor(raw)));
}

// ---------------------------------------------------------------------------------------------
// PUT: create, or fork
// ---------------------------------------------------------------------------------------------

async function createStream(c: AppContext): Promise<Response> {
  const t = await target(c);
  if (t instanceof Response) return t;
  const h = parseCreateHeaders((n) => c.req.header(n) ?? null);
  if (isError(h)) return badRequest(c, h.error, t.topic);
  const body = c.get("body");

  // 1. A fork validates its fork point on the source and takes a reference there first, so
  //    the source cannot disappear under the new fork. Everything below releases it on failure.
  let fork: ForkCreate | null = null;
  if (h.fork !== null) {
    const src = parseForkSource(h.fork.source, new URL(c.req.url).origin);
    if (!src.ok) return badRequest(c, `Stream-Forked-From: ${src.message}`, t.topic);
    const sourceTopic = await topicNameForPath(src.path);
    const anchor = h.fork.offset;
    const subOffset = h.fork.subOffset;
    const r = await onStream(c, sourceTopic, (stub) => stub.dsForkSource({ path: src.path, anchor, subOffset, contentType: h.contentType }));
    if (!r.ok) return errorResponse(c, r.code === "STREAM_GONE" ? errorResult("STREAM_CONFLICT", r.message) : r, t.topic);
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
    if (fork === null) return;
    const f = fork;
    await stubOf(c, f.sourceTopicId).dsRelease(f.sourcePath);
  };

  // 2. The initial body, judged by the stream's content type.
  const contentType = h.contentType ?? fork?.source.contentType ?? DEFAULT_CONTENT_TYPE;
  let messages: Uint8Array[] | null = null;
  if (isJsonContentType(contentType) && body.length > 0) {
    const m = jsonMessages(body, true);
    if (!m.ok) {
      await release();
      return errorResponse(c, errorResult(m.reason === "invalid-json" ? "INVALID_JSON" : "EMPTY_BATCH", m.message), t.topic);
    }
    if (m.messages.length > MAX_RECORDS_PER_CALL) {
      await release();
      return tooManyMessages(c, m.messages.length, t.topic);
    }
    messages = m.messages;
  }

  // 3. The topic, then the stream on its partition. A partition that answers
  //    UNKNOWN_TOPIC_OR_PARTITION was deleted (or just expired): make the topic again.
  let result: RpcResult<CreateStreamOk> | null = null;
  for (let attempt = 0; attempt < 3 && result === null; attempt++) {
    const topic = await ensureTopic(c, t.topic);
    if (!topic.ok) {
      if (topic.code === "UNKNOWN_TOPIC_OR_PARTITION") continue; // deleted between create and get
      await release();
      return errorResponse(c, topic, t.topic);
    }
    const r = await stubOf(c, topic.topic.topicId).dsCreate({
      path: t.path,
      contentType: h.contentType,
      ttlSeconds: h.ttlSeconds,
      expiresAtMs: h.expiresAtMs,
      closed: h.closed,
      body: messages === null ? body : null,
      messages,
      fork,
    });
    if (!r.ok && r.code === "UNKNOWN_TOPIC_OR_PARTITION") {
      topicCache.invalidate(t.topic);
      continue;
    }
    result = r;
  }
  if (result === null) result = errorResult("UNAVAILABLE", "The stream's topic kept disappearing while it was being created.");
  if (!result.ok || result.status === "exists") await release();
  if (!result.ok) return errorResponse(c, result, t.topic);

  const headers: Record<string, string> = {
    "content-type": result.contentType,
    [H.nextOffset]: encodeOffset(result.tail),
    [TOPIC_HEADER]: t.topic,
    "cache-control": cacheControl("none"),
  };
  if (result.closed) headers[H.closed] = "true";
  if (result.status === "created") {
    const url = new URL(c.req.url);
    headers.location = `${url.origin}${url.pathname}`;
  }
  return new Response(null, { status: result.status === "created" ? 201 : 200, headers });
}

/** The stream's topic: created with one partition, or the existing one (fresh from the store). */
async function ensureTopic(c: AppContext, name: string): Promise<RpcResult<{ topic: TopicSummary }>> {
  const store = metadataStore(c.env.METADATA);
  const created = await store.createTopic({ name, partitions: 1 });
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
  topicCache.put(existing.topic, Date.now());
  return existing;
}

// ---------------------------------------------------------------------------------------------
// POST: append, close
// ---------------------------------------------------------------------------------------------

async function appendStream(c: AppContext): Promise<Response> {
  const t = await target(c);
  if (t instanceof Response) return t;
  const h = parseAppendHeaders((n) => c.req.header(n) ?? null);
  if (isError(h)) return badRequest(c, h.error, t.topic);
  const body = c.get("body");
  let messages: Uint8Array[] | null = null;
  let bodyError: { code: ErrorCode; message: string } | null = null;
  if (body.length > 0 && h.contentType !== null && isJsonContentType(h.contentType)) {
    const m = jsonMessages(body, false);
    if (!m.ok) bodyError = { code: m.reason === "invalid-json" ? "INVALID_JSON" : "EMPTY_BATCH", message: m.message };
    else if (m.messages.length > MAX_RECORDS_PER_CALL) return tooManyMessages(c, m.messages.length, t.topic);
    else messages = m.messages;
  }
  const r = await onStream(c, t.topic, (stub) =>
    stub.dsAppend({ path: t.path, contentType: h.contentType, body, messages, bodyError, close: h.close, streamSeq: h.streamSeq, producer: h.producer }),
  );
  if (!r.ok) return errorResponse(c, r, t.topic);
  const headers: Record<string, string> = { [H.nextOffset]: encodeOffset(r.tail), [TOPIC_HEADER]: t.topic, "cache-control": cacheControl("none") };
  if (r.closed) headers[H.closed] = "true";
  if (r.producerEpoch !== null) headers[H.producerEpoch] = String(r.producerEpoch);
  if (r.producerSeq !== null) headers[H.producerSeq] = String(r.producerSeq);
  return new Response(null, { status: r.status, headers });
}

// ---------------------------------------------------------------------------------------------
// DELETE
// ---------------------------------------------------------------------------------------------

async function deleteStream(c: AppContext): Promise<Response> {
  const t = await target(c);
  if (t instanceof Response) return t;
  const r = await onStream(c, t.topic, (stub) => stub.dsDelete(t.path));
  topicCache.invalidate(t.topic);
  if (!r.ok) return errorResponse(c, r, t.topic);
  return new Response(null, { status: 204, headers: { [TOPIC_HEADER]: t.topic } });
}

// ---------------------------------------------------------------------------------------------
// GET / HEAD
// ---------------------------------------------------------------------------------------------

async function readStream(c: AppContext): Promise<Response> {
  const t = await target(c);
  if (t instanceof Response) return t;
  if (c.req.method === "HEAD") return headStream(c, t);

  const query = new URL(c.req.url).searchParams;
  const spec = parseOffsetParam(query.getAll("offset"));
  if ("error" in spec) return errorResponse(c, errorResult("INVALID_OFFSET", spec.error), t.topic);
  const live = query.get("live");
  if (live !== null && live !== "long-poll" && live !== "sse") return badRequest(c, `live must be long-poll or sse, got ${JSON.stringify(live)}.`, t.topic);
  if (live !== null && !query.has("offset")) return badRequest(c, `live=${live} requires an offset (use -1 for the beginning, now for the tail).`, t.topic);
  const clientCursor = query.get("cursor");

  if (live === "sse") return sseStream(c, t, spec, clientCursor);

  const waitMs = live === "long-poll" ? longPollTimeoutMs(c) : 0;
  // Catch-up answers may come as a stream (large ones); live answers are one buffer (SSE frames them).
  const catchUp = live === null;
  const r = await onStream(c, t.topic, (stub) =>
    stub.dsRead({ path: t.path, from: spec, maxBytes: catchUp ? READ_MAX_BYTES : LIVE_READ_MAX_BYTES, maxRecords: MAX_RECORDS_PER_CALL, waitMs, stream: catchUp }),
  );
  if (!r.ok) return errorResponse(c, r, t.topic);

  if (live === "long-poll") {
    const cursor = responseCursor(clientCursor, Date.now(), Math.random);
    if (r.count === 0) {
      return new Response(null, { status: 204, headers: { ...longPollNoContentHeaders(r.nextOffset, r.closed && r.upToDate, cursor), [TOPIC_HEADER]: t.topic } });
    }
    const { headers } = readHeaders(outcome(r), { now: false, cursor });
    return new Response(r.body, { status: 200, headers: { ...headers, [TOPIC_HEADER]: t.topic } });
  }

  const { headers, etag } = readHeaders(outcome(r), { now: spec.kind === "now", cursor: null });
  headers[TOPIC_HEADER] = t.topic;
  if (etag !== null && ifNoneMatchHits(c.req.header("if-none-match") ?? null, etag)) {
    if (r.body instanceof ReadableStream) await r.body.cancel();
    return new Response(null, { status: 304, headers });
  }
  // A streamed body keeps its exact length (Content-Length), as a one-buffer body has: a
  // chunked answer costs HTTP clients more (the chunk framing splits their reads).
  const body = r.body instanceof ReadableStream ? r.body.pipeThrough(new FixedLengthStream(r.bodyBytes)) : r.body;
  return new Response(body, { status: 200, headers });
}

/** The body of a live read (long-poll, SSE), which never asks for a streamed body. */
function bufferBody(r: ReadStreamOk): Uint8Array {
  if (r.body instanceof ReadableStream) throw new Error("a live read answered with a streamed body");
  return r.body;
}

function outcome(r: ReadStreamOk): ReadOutcome {
  return {
    contentType: r.contentType,
    streamId: r.topicId,
    startOffset: r.startOffset,
    nextOffset: r.nextOffset,
    count: r.count,
    upToDate: r.upToDate,
    closed: r.closed,
    remainingLifetimeMs: r.remainingLifetimeMs,
  };
}

async function headStream(c: AppContext, t: Target): Promise<Response> {
  const r = await onStream(c, t.topic, (stub) => stub.dsHead(t.path));
  if (!r.ok) return errorResponse(c, r, t.topic);
  const headers: Record<string, string> = {
    "content-type": r.contentType,
    [H.nextOffset]: encodeOffset(r.tail),
    "cache-control": cacheControl("head"),
    [TOPIC_HEADER]: t.topic,
  };
  if (r.closed) headers[H.closed] = "true";
  if (r.ttlSeconds !== null) headers[H.ttl] = String(r.ttlSeconds);
  if (r.expiresAtMs !== null) headers[H.expiresAt] = new Date(r.expiresAtMs).toISOString();
  return new Response(null, { status: 200, headers });
}

/**
 * `?live=sse`: answers 200 `text/event-stream` once the first read succeeds (errors before
 * that are ordinary answers), then writes data/control pairs from a loop of reads that wait
 * on the partition, until the stream is closed and delivered, the client goes away, the
 * stream disappears, or {@link SSE_CONNECTION_MAX_MS} passes.
 */
async function sseStream(c: AppContext, t: Target, spec: OffsetSpec, clientCursor: string | null): Promise<Response> {
  const started = Date.now();
  const first = await onStream(c, t.topic, (stub) => stub.dsRead({ path: t.path, from: spec, maxBytes: LIVE_READ_MAX_BYTES, maxRecords: MAX_RECORDS_PER_CALL, waitMs: 0 }));
  if (!first.ok) return errorResponse(c, first, t.topic);
  const encoding = isSseText(first.contentType) ? "text" : "base64";
  const stub = stubOf(c, first.topic.topicId);
  const timeoutMs = longPollTimeoutMs(c);
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const utf8 = new TextEncoder();

  /** Writes a frame; false once the client is gone (the write fails), which ends the loop. */
  const send = async (frame: string): Promise<boolean> => {
    try {
      await writer.write(utf8.encode(frame));
      return true;
    } catch {
      return false;
    }
  };
  const loop = async (): Promise<void> => {
    let r: ReadStreamOk = first;
    for (;;) {
      let frame = "";
      if (r.count > 0) frame += sseDataEvent(bufferBody(r), encoding);
      const eof = r.closed && r.upToDate;
      const control: SseControl = { streamNextOffset: encodeOffset(r.nextOffset) };
      if (eof) {
        control.streamClosed = true;
      } else {
        control.streamCursor = responseCursor(clientCursor, Date.now(), Math.random);
        if (r.upToDate) control.upToDate = true;
      }
      frame += sseControlEvent(control);
      if (!(await send(frame)) || eof) return;
      const leftMs = SSE_CONNECTION_MAX_MS - (Date.now() - started);
      if (leftMs <= 0) return;
      const next = await stub.dsRead({
        path: t.path,
        from: { kind: "offset", offset: r.nextOffset },
        maxBytes: LIVE_READ_MAX_BYTES,
        maxRecords: MAX_RECORDS_PER_CALL,
        waitMs: r.upToDate ? Math.min(timeoutMs, leftMs) : 0,
      });
      // The stream was deleted (or expired) meanwhile: end the connection; a reconnect gets the 404/410.
      if (!next.ok) return;
      r = next;
    }
  };
  const done = loop()
    .catch((err: unknown) => console.warn("SSE stream ended with an error", err))
    .finally(() => writer.close().catch(() => undefined));
  c.executionCtx.waitUntil(done);

  const headers: Record<string, string> = {
    "content-type": "text/event-stream",
    "cache-control": cacheControl("sse"),
    [TOPIC_HEADER]: t.topic,
  };
  if (encoding === "base64") headers[H.sseDataEncoding] = "base64";
  return new Response(readable, { status: 200, headers });
}
