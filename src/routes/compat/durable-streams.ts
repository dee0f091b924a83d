/**
 * Durable Streams protocol at `/v1/stream/{path}` (docs/DURABLE-STREAMS.md):
 * `PUT` create/fork, `POST` append/close, `GET` read (catch-up, long-poll, SSE), `HEAD`,
 * `DELETE`, `OPTIONS`. Each stream is the one-partition topic `streams/default/{part}`.
 *
 * Routes parse and validate, call the stream's partition object (one RPC through onStream;
 * PUT calls the create saga of src/gateway/streams.ts, which also creates the topic and, for a
 * fork, references the source), and map the typed result to the protocol's status codes and
 * headers. A failure is thrown (streamError) with its protocol headers to the one onError of
 * src/app.ts. The decisions live in src/streams/ and in the
 * partition (durable-objects/partition/streams/).
 */
import type { Hono, MiddlewareHandler } from "hono";
import type { AppContext, AppEnv } from "../../gateway/context.ts";
import { atStreamLeader, createStream as createStreamSaga, MAX_RECORDS_PER_CALL, onStream, streamError, TOPIC_HEADER, tooManyMessages } from "../../gateway/streams.ts";
import { topicCache } from "../../gateway/topics.ts";
import { errorResult, type ErrorCode } from "../../protocol/errors.ts";
import { H, isError, isJsonContentType, isSseText, parseAppendHeaders, parseCreateHeaders, parseReplicationFactorHeader } from "../../streams/headers.ts";
import { cacheControl, ifNoneMatchHits, responseCursor } from "../../streams/http-cache.ts";
import { parseStreamPath, STREAMS_PATH_PREFIX, topicNameForPath } from "../../streams/names.ts";
import { encodeOffset, parseOffsetParam, type OffsetSpec } from "../../streams/offsets.ts";
import { longPollNoContentHeaders, readHeaders, type ReadOutcome } from "../../streams/read.ts";
import { jsonMessages } from "../../streams/records.ts";
import type { ReadStreamOk } from "../../streams/rpc.ts";
import { sseControlEvent, sseDataEvent, type SseControl } from "../../streams/sse.ts";
import { log } from "../../log/logger.ts";

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
  H.replicationFactor,
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

/**
 * The stream the request addresses.
 * @throws the error answer: NOT_FOUND for a reserved path, INVALID_REQUEST for a malformed one.
 */
async function target(c: AppContext): Promise<Target> {
  const pathname = new URL(c.req.url).pathname;
  const p = parseStreamPath(pathname);
  if (!p.ok) throw streamError(errorResult(p.reason === "reserved" ? "NOT_FOUND" : "INVALID_REQUEST", p.message), null);
  return { path: p.path, topic: await topicNameForPath(p.path) };
}

/** INVALID_REQUEST with `message`, to throw. */
function badRequest(message: string, topic: string | null = null): Error {
  return streamError(errorResult("INVALID_REQUEST", message), topic);
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
  const h = parseCreateHeaders((n) => c.req.header(n) ?? null);
  if (isError(h)) throw badRequest(h.error, t.topic);
  const replicationFactor = parseReplicationFactorHeader((n) => c.req.header(n) ?? null);
  if (isError(replicationFactor)) throw badRequest(replicationFactor.error, t.topic);
  const url = new URL(c.req.url);
  const result = await createStreamSaga(c.env, { path: t.path, topic: t.topic, headers: h, body: c.get("body"), origin: url.origin, replicationFactor });
  if (!result.ok) throw streamError(result, t.topic);

  const headers: Record<string, string> = {
    "content-type": result.contentType,
    [H.nextOffset]: encodeOffset(result.tail),
    [TOPIC_HEADER]: t.topic,
    "cache-control": cacheControl("none"),
  };
  if (result.closed) headers[H.closed] = "true";
  if (result.status === "created") headers.location = `${url.origin}${url.pathname}`;
  return new Response(null, { status: result.status === "created" ? 201 : 200, headers });
}

// ---------------------------------------------------------------------------------------------
// POST: append, close
// ---------------------------------------------------------------------------------------------

async function appendStream(c: AppContext): Promise<Response> {
  const t = await target(c);
  const h = parseAppendHeaders((n) => c.req.header(n) ?? null);
  if (isError(h)) throw badRequest(h.error, t.topic);
  const body = c.get("body");
  let messages: Uint8Array[] | null = null;
  let bodyError: { code: ErrorCode; message: string } | null = null;
  if (body.length > 0 && h.contentType !== null && isJsonContentType(h.contentType)) {
    const m = jsonMessages(body, false);
    if (!m.ok) bodyError = { code: m.reason === "invalid-json" ? "INVALID_JSON" : "EMPTY_BATCH", message: m.message };
    else if (m.messages.length > MAX_RECORDS_PER_CALL) throw streamError(tooManyMessages(m.messages.length), t.topic);
    else messages = m.messages;
  }
  // Not resent when a replica fails mid-call (factor 3): its outcome is unknown (UNAVAILABLE).
  const r = await onStream(
    c.env,
    t.topic,
    (stub) => stub.dsAppend({ path: t.path, contentType: h.contentType, body, messages, bodyError, close: h.close, streamSeq: h.streamSeq, producer: h.producer }),
    false,
  );
  if (!r.ok) throw streamError(r, t.topic);
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
  const r = await onStream(c.env, t.topic, (stub) => stub.dsDelete(t.path));
  topicCache.invalidate(t.topic);
  if (!r.ok) throw streamError(r, t.topic);
  return new Response(null, { status: 204, headers: { [TOPIC_HEADER]: t.topic } });
}

// ---------------------------------------------------------------------------------------------
// GET / HEAD
// ---------------------------------------------------------------------------------------------

async function readStream(c: AppContext): Promise<Response> {
  const t = await target(c);
  if (c.req.method === "HEAD") return headStream(c, t);

  const query = new URL(c.req.url).searchParams;
  const spec = parseOffsetParam(query.getAll("offset"));
  if ("error" in spec) throw streamError(errorResult("INVALID_OFFSET", spec.error), t.topic);
  const live = query.get("live");
  if (live !== null && live !== "long-poll" && live !== "sse") throw badRequest(`live must be long-poll or sse, got ${JSON.stringify(live)}.`, t.topic);
  if (live !== null && !query.has("offset")) throw badRequest(`live=${live} requires an offset (use -1 for the beginning, now for the tail).`, t.topic);
  const clientCursor = query.get("cursor");

  if (live === "sse") return sseStream(c, t, spec, clientCursor);

  const waitMs = live === "long-poll" ? longPollTimeoutMs(c) : 0;
  // Catch-up answers may come as a stream (large ones); live answers are one buffer (SSE frames them).
  const catchUp = live === null;
  const r = await onStream(c.env, t.topic, (stub) =>
    stub.dsRead({ path: t.path, from: spec, maxBytes: catchUp ? READ_MAX_BYTES : LIVE_READ_MAX_BYTES, maxRecords: MAX_RECORDS_PER_CALL, waitMs, stream: catchUp }),
  );
  if (!r.ok) throw streamError(r, t.topic);

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
  const r = await onStream(c.env, t.topic, (stub) => stub.dsHead(t.path));
  if (!r.ok) throw streamError(r, t.topic);
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
  const first = await onStream(c.env, t.topic, (stub) => stub.dsRead({ path: t.path, from: spec, maxBytes: LIVE_READ_MAX_BYTES, maxRecords: MAX_RECORDS_PER_CALL, waitMs: 0 }));
  if (!first.ok) throw streamError(first, t.topic);
  const encoding = isSseText(first.contentType) ? "text" : "base64";
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
      // At the leader (factor 3: followed through a leader change).
      const next = await atStreamLeader(c.env, first.topic, (stub) =>
        stub.dsRead({
          path: t.path,
          from: { kind: "offset", offset: r.nextOffset },
          maxBytes: LIVE_READ_MAX_BYTES,
          maxRecords: MAX_RECORDS_PER_CALL,
          waitMs: r.upToDate ? Math.min(timeoutMs, leftMs) : 0,
        }),
      );
      // The stream was deleted (or expired) meanwhile: end the connection; a reconnect gets the 404/410.
      if (!next.ok) return;
      r = next;
    }
  };
  const done = loop()
    .catch((err: unknown) => log.warn("edgelog.stream.sse_failed", { error: err }))
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
