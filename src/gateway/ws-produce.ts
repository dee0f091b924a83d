/**
 * Produce over a WebSocket with one receipt per frame, in the order of the frames: the engine
 * behind the native `GET /v1/topics/{topic}/produce/ws` (docs/PROTOCOL.md "Produce over
 * WebSocket") and Pulsar's producer endpoint (src/gateway/pulsar-ws.ts). A flavor parses its
 * frames and writes its receipts; the engine appends through the gateway's produce path
 * (src/gateway/produce.ts `produceToTopic`: explicit partition, else Kafka's key partitioning,
 * else round robin; coalesced appends; acks=all, so a receipt follows the durable commit).
 *
 * Frames are taken in arrival order. While one append is in flight, the frames that arrive
 * meanwhile queue and go together as the next produce request (bounded in records and payload
 * characters), so a busy socket gets one durable commit per batch and partition, and records of
 * one key keep their order. A frame refused by validation fails only itself; a failure of the
 * append fails every frame of that batch.
 */
import type { QuotaAnswer } from "../auth/quota-rpc.ts";
import type { ResolvedQuota } from "../auth/quotas.ts";
import type { Env } from "../env.ts";
import { log } from "../log/logger.ts";
import { utf8 } from "../protocol/encoding.ts";
import { EdgelogError, type ErrorCode } from "../protocol/errors.ts";
import { MAX_RECORDS_PER_REQUEST } from "../protocol/limits.ts";
import type { ProduceRecordResult } from "../protocol/types.ts";
import { SUB_CLOSE } from "../subscriptions/wire.ts";
import { toEdgelogErrorResponse } from "./errors.ts";
import { asObject, parseJsonBytes } from "./http.ts";
import { produceToTopic } from "./produce.ts";
import { checkRecordSizes, type ParsedProduceRequest, parseProduceRequest } from "./produce-request.ts";
import { checkPartition, withTopic } from "./topics.ts";

/** Most records one produce request of a socket carries (several frames' records together). */
export const MAX_SOCKET_BATCH_RECORDS = Math.min(1000, MAX_RECORDS_PER_REQUEST);
/** A batch is cut once its frames pass this many bytes of JSON text, UTF-8 (a produce request is at most 8 MiB). */
export const MAX_SOCKET_BATCH_BYTES = 4 * 1024 * 1024;
/** Most frames waiting for their receipts; beyond it, frames are refused at once with UNAVAILABLE (Pulsar's maxPendingMessages default is 1,000; this is a server bound). */
export const MAX_SOCKET_PENDING_FRAMES = 10_000;

/** A frame's error, answered in its receipt. */
export interface FrameError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: Record<string, unknown>;
}

/** A parsed frame: records to append, an error to answer, or an answer to send at its turn (a ping). */
export type ParsedFrame<Tag> = { tag: Tag; parsed: ParsedProduceRequest; bytes: number } | { tag: Tag; error: FrameError } | { tag: Tag; reply: unknown };

/** What a flavor of the protocol provides. */
export interface ProducerFlavor<Tag> {
  /** Parses one frame; `nowMs` is its arrival (deliverAfterMs counts from it). Never throws. */
  parse(data: string | ArrayBuffer, nowMs: number): ParsedFrame<Tag>;
  /** The receipt of a frame whose records are stored (results in the frame's record order). */
  ok(tag: Tag, results: ProduceRecordResult[]): unknown;
  /** The receipt of a refused or failed frame. */
  fail(tag: Tag, error: FrameError): unknown;
}

function errorOf(err: unknown): FrameError {
  const e = toEdgelogErrorResponse(err);
  return e.details === undefined ? { code: e.code, message: e.message } : { code: e.code, message: e.message, details: e.details };
}

/**
 * A frame's records as a produce request, or its error (the JSON produce request's own
 * validation). `bytes`: the frame's size in UTF-8 bytes (what batches are cut by and the quota
 * is charged).
 */
export function parseRecords(body: unknown, nowMs: number, bytes: number): { parsed: ParsedProduceRequest; bytes: number } | { error: FrameError } {
  try {
    return { parsed: parseProduceRequest(body, { nowMs, allowProducer: false }), bytes };
  } catch (err) {
    return { error: errorOf(err) };
  }
}

function closeQuietly(ws: WebSocket, code: number): void {
  try {
    ws.close(code === 1005 || code === 1006 || code === 1015 ? 1000 : code, "");
  } catch {
    // already closed
  }
}

/** One producer socket: frames in, one receipt per frame, in order. */
export class SocketProducer<Tag> {
  readonly #client: WebSocket;
  readonly #env: Env;
  readonly #topic: string;
  readonly #flavor: ProducerFlavor<Tag>;
  readonly #waitUntil: (p: Promise<unknown>) => void;
  /** Charges a batch's bytes to the client quota of the upgrade (null: no quota applies). */
  readonly #charge: ((bytes: number) => Promise<QuotaAnswer>) | null;
  readonly #queue: ParsedFrame<Tag>[] = [];
  #busy = false;
  #closed = false;

  constructor(client: WebSocket, env: Env, topic: string, flavor: ProducerFlavor<Tag>, waitUntil: (p: Promise<unknown>) => void, quota: ResolvedQuota | null = null) {
    this.#client = client;
    this.#env = env;
    this.#topic = topic;
    this.#flavor = flavor;
    this.#waitUntil = waitUntil;
    this.#charge = quota === null ? null : (bytes) => env.QUOTA.getByName(quota.bucketKey).admit(quota.rates, bytes, false);
  }

  start(): void {
    this.#client.addEventListener("message", (e) => this.#onFrame(e.data as string | ArrayBuffer));
    this.#client.addEventListener("close", (e) => {
      this.#closed = true;
      closeQuietly(this.#client, e.code);
    });
    this.#client.addEventListener("error", () => {
      this.#closed = true;
    });
  }

  #onFrame(data: string | ArrayBuffer): void {
    if (this.#closed) return;
    const f = this.#flavor.parse(data, Date.now());
    if ("parsed" in f && this.#queue.length >= MAX_SOCKET_PENDING_FRAMES) {
      this.#queue.push({
        tag: f.tag,
        error: { code: "UNAVAILABLE", message: `More than ${MAX_SOCKET_PENDING_FRAMES} frames are waiting for their receipts: wait for receipts before sending more.` },
      });
    } else {
      this.#queue.push(f);
    }
    if (!this.#busy) {
      this.#busy = true;
      this.#waitUntil(this.#pump());
    }
  }

  async #pump(): Promise<void> {
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        let bytes = 0;
        let records = 0;
        let n = 0;
        while (n < this.#queue.length) {
          const e = this.#queue[n]!;
          if ("parsed" in e) {
            const r = e.parsed.records.length;
            if (n > 0 && (bytes + e.bytes > MAX_SOCKET_BATCH_BYTES || records + r > MAX_SOCKET_BATCH_RECORDS)) break;
            bytes += e.bytes;
            records += r;
          }
          n++;
        }
        await this.#send(this.#queue.splice(0, n));
      }
    } catch (err) {
      log.error("edgelog.ws_produce.failed", { topic: this.#topic, error: err });
      closeQuietly(this.#client, SUB_CLOSE.internalError);
    } finally {
      this.#busy = false;
    }
  }

  /** Appends the batch's valid frames as one produce request and answers every frame, in order. */
  async #send(batch: ParsedFrame<Tag>[]): Promise<void> {
    const receipts = new Array<unknown>(batch.length);
    const taken: number[] = [];
    const req: ParsedProduceRequest = { records: [], partitions: [], producer: null };
    try {
      await withTopic(this.#env, this.#topic, async (topic) => {
        batch.forEach((e, i) => {
          if (!("parsed" in e)) return;
          try {
            // Checked per frame, so that one frame's refusal fails only that frame.
            checkRecordSizes(e.parsed.records, topic.configs["max.message.bytes"]);
            for (const p of e.parsed.partitions) if (p !== undefined) checkPartition(topic, p);
          } catch (err) {
            receipts[i] = this.#flavor.fail(e.tag, errorOf(err));
            return;
          }
          taken.push(i);
          req.records.push(...e.parsed.records);
          req.partitions.push(...e.parsed.partitions);
        });
      });
      if (req.records.length > 0 && this.#charge !== null) {
        // The producer byte quota, as for an HTTP produce: each batch is one request of its frames' bytes.
        const answer = await this.#charge(taken.reduce((a, i) => a + (batch[i] as { bytes: number }).bytes, 0));
        if (!answer.admitted) {
          const ms = Math.max(1, Math.ceil(answer.throttleTimeMs));
          throw new EdgelogError("THROTTLED", `Quota exceeded: retry in ${ms} ms.`, { throttleTimeMs: ms });
        }
      }
      if (req.records.length > 0) {
        const out = await produceToTopic({ env: this.#env, waitUntil: this.#waitUntil, acks: "all", summary: false }, this.#topic, req);
        if (out.kind !== "records") throw new EdgelogError("INTERNAL", "The produce path answered without offsets.");
        let k = 0;
        for (const i of taken) {
          const e = batch[i] as { tag: Tag; parsed: ParsedProduceRequest };
          const n = e.parsed.records.length;
          receipts[i] = this.#flavor.ok(e.tag, out.body.records.slice(k, k + n));
          k += n;
        }
      }
    } catch (err) {
      const error = errorOf(err);
      for (const i of taken) receipts[i] = this.#flavor.fail(batch[i]!.tag, error);
    }
    batch.forEach((e, i) => {
      if ("error" in e) receipts[i] = this.#flavor.fail(e.tag, e.error);
      else if ("reply" in e) receipts[i] = e.reply;
      try {
        this.#client.send(JSON.stringify(receipts[i]));
      } catch {
        // closing: the close handler ends the session
      }
    });
  }
}

// ---- the native flavor ----

/**
 * Largest native produce frame, bytes of JSON text in UTF-8 (a frame is one produce request's
 * body; 1 MiB is also the platform's limit on a WebSocket message a Worker receives).
 */
export const MAX_NATIVE_PRODUCE_FRAME_BYTES = 1024 * 1024;

/**
 * The native protocol: a frame is a JSON produce request body (`records`, `keyEncoding`,
 * `valueEncoding`, as `POST /v1/topics/{topic}/records`) plus an optional `requestId`
 * (a string of 1-64 characters) echoed in its receipt:
 * `{"type":"receipt","requestId","records":[{partition, offset, timestamp}]}` or
 * `{"type":"error","requestId","code","message","details"?}`. `{"type":"ping"}` is answered
 * `{"type":"pong"}` in its turn.
 */
export const NATIVE_PRODUCER: ProducerFlavor<string | null> = {
  parse(data, nowMs) {
    if (typeof data !== "string") return { tag: null, error: { code: "INVALID_REQUEST", message: "Frames are JSON text; binary frames are not part of the protocol." } };
    // Bytes of UTF-8, not UTF-16 code units (a frame of multi-byte text is up to 3 times its
    // length): a long frame is refused before it is encoded, the rest counted by its encoding.
    const tooLarge = {
      tag: null,
      error: { code: "REQUEST_TOO_LARGE", message: `A frame is at most ${MAX_NATIVE_PRODUCE_FRAME_BYTES} bytes of UTF-8 text.`, details: { maxBytes: MAX_NATIVE_PRODUCE_FRAME_BYTES } },
    } as const;
    if (data.length > MAX_NATIVE_PRODUCE_FRAME_BYTES) return tooLarge;
    const bytes = utf8(data);
    if (bytes.length > MAX_NATIVE_PRODUCE_FRAME_BYTES) return tooLarge;
    let body: Record<string, unknown>;
    try {
      body = asObject(parseJsonBytes(bytes), "frame");
    } catch (err) {
      return { tag: null, error: errorOf(err) };
    }
    const { requestId, type, ...rest } = body;
    if (requestId !== undefined && (typeof requestId !== "string" || requestId.length === 0 || requestId.length > 64)) {
      return { tag: null, error: { code: "INVALID_REQUEST", message: "requestId must be a string of 1-64 characters.", details: { field: "requestId" } } };
    }
    const tag = (requestId as string | undefined) ?? null;
    if (type === "ping") return { tag, reply: { type: "pong" } };
    if (type !== undefined && type !== "produce")
      return { tag, error: { code: "INVALID_REQUEST", message: `Unknown frame type ${JSON.stringify(type)}: produce or ping.`, details: { field: "type" } } };
    const r = parseRecords(rest, nowMs, bytes.length);
    return "error" in r ? { tag, error: r.error } : { tag, ...r };
  },
  ok: (requestId, records) => ({ type: "receipt", requestId, records }),
  fail: (requestId, e) => ({ type: "error", requestId, code: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) }),
};

/**
 * Accepts a producer socket in this Worker (a `WebSocketPair`) and starts its session; the
 * caller checked the upgrade header, the topic and the permissions. `quota` is the client quota
 * of the upgrade (`c.get("quota")`): each batch is charged to it like an HTTP produce, and a
 * batch over it fails with THROTTLED (retriable) and appends nothing. The session's appends are
 * kept running by the request's `waitUntil` (and by the open socket itself).
 */
export function acceptProducerSocket<Tag>(env: Env, topic: string, flavor: ProducerFlavor<Tag>, ctx: { waitUntil(p: Promise<unknown>): void }, quota: ResolvedQuota | null): Response {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.accept();
  const waitUntil = (p: Promise<unknown>) => {
    try {
      ctx.waitUntil(p);
    } catch {
      // No execution context to extend: the socket's own events keep the session running.
    }
  };
  new SocketProducer(server, env, topic, flavor, waitUntil, quota).start();
  return new Response(null, { status: 101, webSocket: client });
}
