/**
 * Sessions of the Pulsar-WebSocket-compatible endpoints (docs/PROTOCOL.md "Pulsar WebSocket
 * API", docs/ARCHITECTURE.md "Subscriptions"). The gateway Worker holds the client's socket
 * and translates Pulsar's JSON frames (src/subscriptions/pulsar-ws.ts):
 *
 * - a **consumer or reader** session fans in one native socket per partition (opened by the
 *   route with the same upgrade the native route forwards to the partition object); messages
 *   of every partition go to the one client socket, each ack or nack goes to the socket of the
 *   partition its id names. The session enforces Pulsar's limits on the client side of the
 *   fan-in: in push mode at most `receiverQueueSize` messages pushed and not yet acked or
 *   nacked by the client; in pull mode exactly the messages the client's `permit` frames allow.
 *   What the partitions deliver beyond that waits in the session's buffer (in flight at the
 *   partition, as Pulsar's WebSocket service prefetches into its internal consumer's queue).
 * - a **producer** session appends through the gateway's produce path (src/gateway/produce.ts:
 *   key partitioning, coalesced appends, answers after the durable commit). Frames are taken in
 *   arrival order; while one append is in flight the next frames queue and go together as one
 *   produce request, so receipts come back in the order of the frames and a key's messages keep
 *   their order.
 */
import type { Env } from "../env.ts";
import { log } from "../log/logger.ts";
import { EdgelogError, type ErrorCode } from "../protocol/errors.ts";
import { toEdgelogErrorResponse as toEdgelogError } from "./errors.ts";
import { MAX_RECORDS_PER_REQUEST } from "../protocol/limits.ts";
import { formatMessageId } from "../subscriptions/message-id.ts";
import { MAX_CREDIT_PERMITS } from "../subscriptions/permits.ts";
import {
  isPulsarFrameError,
  parsePulsarConsumerFrame,
  parsePulsarProducerFrame,
  type PulsarFrameError,
  pulsarErrorFrame,
  pulsarMessageIdOf,
  pulsarSendError,
  pulsarSendOk,
  toPulsarMessage,
} from "../subscriptions/pulsar-ws.ts";
import type { ServerFrame, WireMessage } from "../subscriptions/wire.ts";
import { SUB_CLOSE } from "../subscriptions/wire.ts";
import { produceToTopic } from "./produce.ts";
import { checkRecordSizes, type ParsedProduceRequest, parseProduceRequest } from "./produce-request.ts";
import { withTopic } from "./topics.ts";

/** Refused frames after which a session closes the client socket with 4004 (as the native endpoint). */
export const MAX_FRAME_ERRORS = 100;

/** A close code the runtime lets a server send (1005, 1006 and 1015 are reserved for the stack). */
function sendableCloseCode(code: number): number {
  if (code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)) return code;
  return SUB_CLOSE.internalError;
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(sendableCloseCode(code), reason.slice(0, 120));
  } catch {
    // already closed
  }
}

function sendQuietly(ws: WebSocket, frame: unknown): void {
  try {
    ws.send(JSON.stringify(frame));
  } catch {
    // the socket is closing; its close handler ends the session
  }
}

/** How a fan-in session limits what it pushes to the client. */
export type FanInMode =
  /** Push mode: at most `window` messages pushed and not yet acked or nacked by the client (Pulsar's receiverQueueSize). */
  | { kind: "push"; window: number; reader: boolean }
  /** Pull mode: only what the client's `permit` frames allow (Pulsar's pullMode=true). */
  | { kind: "pull" };

/**
 * One client socket over the native sockets of every partition (index = partition). Both
 * sides are accepted by the caller's route before `start()`.
 */
export class PulsarFanIn {
  readonly #client: WebSocket;
  readonly #parts: WebSocket[];
  readonly #mode: FanInMode;
  /** Messages received from partitions and not yet pushed to the client, by native id, in arrival order. */
  readonly #buffer = new Map<string, WireMessage>();
  /** Push mode: native ids pushed to the client and not yet acked or nacked by it. */
  readonly #pending = new Set<string>();
  /** Pull mode: messages the client still permits. */
  #credit = 0;
  /** Pull mode: permits given to each partition and not yet used by a delivery. */
  readonly #outstanding: number[];
  #errors = 0;
  #closed = false;

  constructor(client: WebSocket, parts: WebSocket[], mode: FanInMode) {
    this.#client = client;
    this.#parts = parts;
    this.#mode = mode;
    this.#outstanding = parts.map(() => 0);
  }

  start(): void {
    this.#client.addEventListener("message", (e) => this.#onClientFrame(e.data as string | ArrayBuffer));
    this.#client.addEventListener("close", (e) => this.#closeAll(e.code === 1005 ? 1000 : e.code, "client closed", null));
    this.#client.addEventListener("error", () => this.#closeAll(SUB_CLOSE.internalError, "client socket error", null));
    this.#parts.forEach((ws, p) => {
      ws.addEventListener("message", (e) => this.#onPartitionFrame(p, e.data as string | ArrayBuffer));
      ws.addEventListener("close", (e) => this.#closeAll(e.code === 1005 ? 1000 : e.code, e.reason || `partition ${p} closed`, p));
      ws.addEventListener("error", () => this.#closeAll(SUB_CLOSE.internalError, `partition ${p} socket error`, p));
    });
  }

  /** Ends the session: every socket is closed, the client's with the code that ended it (a partition's close code says why, e.g. 4002 cursor reset). */
  #closeAll(code: number, reason: string, from: number | null): void {
    if (this.#closed) return;
    this.#closed = true;
    // Also the socket that closed first: closing it answers its close frame.
    for (const ws of this.#parts) closeQuietly(ws, 1000, "session closed");
    if (from !== null) closeQuietly(this.#client, code, reason);
    else closeQuietly(this.#client, 1000, "");
    this.#buffer.clear();
  }

  #refuse(e: PulsarFrameError): void {
    sendQuietly(this.#client, pulsarErrorFrame(e));
    if (++this.#errors > MAX_FRAME_ERRORS) this.#closeAll(SUB_CLOSE.tooManyErrors, "too many refused frames", -1);
  }

  #onClientFrame(data: string | ArrayBuffer): void {
    if (this.#closed) return;
    const f = parsePulsarConsumerFrame(data);
    if (isPulsarFrameError(f)) return this.#refuse(f);
    switch (f.type) {
      case "ack":
      case "negativeAcknowledge": {
        const { partition, offset } = f.position;
        const ws = this.#parts[partition];
        if (ws === undefined) return this.#refuse({ code: "INVALID_MESSAGE_ID", message: `The message id names partition ${partition}; the topic has ${this.#parts.length}.` });
        if (f.type === "negativeAcknowledge" && this.#mode.kind === "push" && this.#mode.reader)
          return this.#refuse({ code: "NOT_ALLOWED", message: "A reader does not negatively acknowledge." });
        const id = formatMessageId(partition, offset);
        sendQuietly(ws, { type: f.type === "ack" ? "ack" : "nack", messageIds: [id] });
        // The message left the client's hands: its place in the push window is free.
        if (this.#pending.delete(id)) this.#drain();
        return;
      }
      case "permit":
        if (this.#mode.kind !== "pull") return this.#refuse({ code: "INVALID_REQUEST", message: "permit frames are for consumers with pullMode=true." });
        this.#credit = Math.min(this.#credit + f.permits, Number.MAX_SAFE_INTEGER);
        this.#drain();
        this.#grant();
        return;
      case "isEndOfTopic":
        // Edgelog topics are never terminated (Pulsar's `terminate`): more messages may always come.
        sendQuietly(this.#client, { endOfTopic: false });
        return;
    }
  }

  /** Pull mode: tops up each partition's permits to the client's remaining credit. */
  #grant(): void {
    const want = this.#credit - this.#buffer.size;
    if (want <= 0) return;
    this.#parts.forEach((ws, p) => {
      const grant = Math.min(want - this.#outstanding[p]!, MAX_CREDIT_PERMITS);
      if (grant <= 0) return;
      this.#outstanding[p]! += grant;
      sendQuietly(ws, { type: "permit", permits: grant });
    });
  }

  #onPartitionFrame(p: number, data: string | ArrayBuffer): void {
    if (this.#closed || typeof data !== "string") return;
    let f: ServerFrame;
    try {
      f = JSON.parse(data) as ServerFrame;
    } catch {
      return;
    }
    if (f.type === "messages") {
      for (const m of f.messages) {
        const id = m.messageId;
        if (this.#mode.kind === "pull") this.#outstanding[p] = Math.max(0, this.#outstanding[p]! - 1);
        if (this.#mode.kind === "push" && this.#pending.has(id)) {
          // Redelivered while the client holds it (ack timeout): the old delivery left flight, the new one takes its place.
          sendQuietly(this.#client, toPulsarMessage(m));
          continue;
        }
        // A redelivery of a message still waiting here replaces it in its place.
        this.#buffer.set(id, m);
      }
      this.#drain();
    } else if (f.type === "error") {
      sendQuietly(this.#client, pulsarErrorFrame({ code: f.code as ErrorCode, message: f.message }));
    }
    // connected, reader, active, acked, nacked, pong: the Pulsar API has no such frames.
  }

  /** Pushes buffered messages while the client's window or credit allows. */
  #drain(): void {
    for (const [id, m] of this.#buffer) {
      if (this.#mode.kind === "pull") {
        if (this.#credit <= 0) return;
        this.#credit--;
      } else {
        if (this.#pending.size >= this.#mode.window) return;
        this.#pending.add(id);
      }
      this.#buffer.delete(id);
      sendQuietly(this.#client, toPulsarMessage(m));
    }
  }
}

// ---- producer ----

/** Most messages one produce request of a producer session carries. */
export const MAX_PRODUCER_BATCH_MESSAGES = Math.min(1000, MAX_RECORDS_PER_REQUEST);
/** A producer session's batch is cut once its payloads pass this many base64 characters (the request limit is 8 MiB). */
export const MAX_PRODUCER_BATCH_CHARS = 4 * 1024 * 1024;
/** Most frames a producer session queues; beyond it, frames are refused at once (Pulsar's maxPendingMessages default). */
export const MAX_PRODUCER_PENDING = 10_000;

type Pending = { context: string | null; parsed: ParsedProduceRequest; chars: number } | { context: string | null; error: PulsarFrameError };

/** A Pulsar producer: frames in, one receipt per frame, in order. */
export class PulsarProducer {
  readonly #client: WebSocket;
  readonly #env: Env;
  readonly #topic: string;
  readonly #waitUntil: (p: Promise<unknown>) => void;
  readonly #queue: Pending[] = [];
  #busy = false;
  #closed = false;

  constructor(client: WebSocket, env: Env, topic: string, waitUntil: (p: Promise<unknown>) => void) {
    this.#client = client;
    this.#env = env;
    this.#topic = topic;
    this.#waitUntil = waitUntil;
  }

  start(): void {
    this.#client.addEventListener("message", (e) => this.#onFrame(e.data as string | ArrayBuffer));
    this.#client.addEventListener("close", (e) => {
      this.#closed = true;
      closeQuietly(this.#client, e.code === 1005 ? 1000 : e.code, "");
    });
    this.#client.addEventListener("error", () => {
      this.#closed = true;
    });
  }

  #onFrame(data: string | ArrayBuffer): void {
    if (this.#closed) return;
    const f = parsePulsarProducerFrame(data);
    if (isPulsarFrameError(f)) {
      this.#queue.push({ context: f.context, error: f });
    } else if (this.#queue.length >= MAX_PRODUCER_PENDING) {
      this.#queue.push({ context: f.context, error: { code: "UNAVAILABLE", message: `More than ${MAX_PRODUCER_PENDING} messages are waiting for their receipts: slow down.` } });
    } else {
      try {
        // Parsed now, so that deliverAfterMs counts from the frame's arrival.
        const parsed = parseProduceRequest({ keyEncoding: "string", valueEncoding: "base64", records: [f.record] }, { nowMs: Date.now(), allowProducer: false });
        this.#queue.push({ context: f.context, parsed, chars: f.record.value.length });
      } catch (err) {
        const e = toEdgelogError(err);
        this.#queue.push({ context: f.context, error: { code: e.code, message: e.message } });
      }
    }
    if (!this.#busy) {
      this.#busy = true;
      this.#waitUntil(this.#pump());
    }
  }

  async #pump(): Promise<void> {
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        let chars = 0;
        let n = 0;
        while (n < this.#queue.length && n < MAX_PRODUCER_BATCH_MESSAGES) {
          const e = this.#queue[n]!;
          if ("parsed" in e) {
            if (n > 0 && chars + e.chars > MAX_PRODUCER_BATCH_CHARS) break;
            chars += e.chars;
          }
          n++;
        }
        await this.#send(this.#queue.splice(0, n));
      }
    } catch (err) {
      log.error("edgelog.pulsar_ws.producer_failed", { topic: this.#topic, error: err });
      closeQuietly(this.#client, SUB_CLOSE.internalError, "server error");
    } finally {
      this.#busy = false;
    }
  }

  /** Appends the batch's valid messages as one produce request and answers every frame, in order. */
  async #send(batch: Pending[]): Promise<void> {
    const receipts = new Array<Record<string, unknown>>(batch.length);
    const index: number[] = [];
    const req: ParsedProduceRequest = { records: [], partitions: [], producer: null };
    try {
      await withTopic(this.#env, this.#topic, async (topic) => {
        batch.forEach((e, i) => {
          if ("error" in e) return;
          try {
            checkRecordSizes(e.parsed.records, topic.configs["max.message.bytes"]);
          } catch (err) {
            const x = toEdgelogError(err);
            receipts[i] = pulsarSendError({ code: x.code, message: x.message }, e.context);
            return;
          }
          index.push(i);
          req.records.push(...e.parsed.records);
          req.partitions.push(...e.parsed.partitions);
        });
      });
      if (req.records.length > 0) {
        const out = await produceToTopic({ env: this.#env, waitUntil: this.#waitUntil, acks: "all", summary: false }, this.#topic, req);
        if (out.kind !== "records") throw new EdgelogError("INTERNAL", "The produce path answered without offsets.");
        out.body.records.forEach((r, k) => {
          const i = index[k]!;
          receipts[i] = pulsarSendOk(pulsarMessageIdOf(r.partition, r.offset), batch[i]!.context);
        });
      }
    } catch (err) {
      const x = toEdgelogError(err);
      for (const i of index) receipts[i] = pulsarSendError({ code: x.code, message: x.message }, batch[i]!.context);
    }
    batch.forEach((e, i) => {
      if ("error" in e) receipts[i] = pulsarSendError(e.error, e.context);
      sendQuietly(this.#client, receipts[i]);
    });
  }
}
