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
 * - a **producer** is the socket-produce engine of src/gateway/ws-produce.ts (the gateway's
 *   produce path; receipts in frame order after the durable commit) with Pulsar's frames.
 */
import { utf8ByteLength } from "../protocol/encoding.ts";
import type { ErrorCode } from "../protocol/errors.ts";
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
import { parseRecords, type ProducerFlavor } from "./ws-produce.ts";

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
 * One client socket over the native sockets of every partition (index = partition). The
 * client's side is accepted by the caller's route; the partition sockets are NOT: `start()`
 * accepts each after adding its listeners (frames that arrive at an accepted socket with no
 * listener are dropped, and a partition delivers as soon as its socket is open).
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

  /** Deletes the subscription for an `unsubscribe` frame (null for readers); resolves to the refusal, or null when done. */
  readonly #unsubscribe: (() => Promise<PulsarFrameError | null>) | null;

  constructor(client: WebSocket, parts: WebSocket[], mode: FanInMode, unsubscribe: (() => Promise<PulsarFrameError | null>) | null = null) {
    this.#client = client;
    this.#parts = parts;
    this.#mode = mode;
    this.#outstanding = parts.map(() => 0);
    this.#unsubscribe = unsubscribe;
  }

  start(): void {
    this.#client.addEventListener("message", (e) => this.#onClientFrame(e.data as string | ArrayBuffer));
    this.#client.addEventListener("close", (e) => this.#closeAll(e.code === 1005 ? 1000 : e.code, "client closed", null));
    this.#client.addEventListener("error", () => this.#closeAll(SUB_CLOSE.internalError, "client socket error", null));
    this.#parts.forEach((ws, p) => {
      ws.addEventListener("message", (e) => this.#onPartitionFrame(p, e.data as string | ArrayBuffer));
      ws.addEventListener("close", (e) => this.#closeAll(e.code === 1005 ? 1000 : e.code, e.reason || `partition ${p} closed`, p));
      ws.addEventListener("error", () => this.#closeAll(SUB_CLOSE.internalError, `partition ${p} socket error`, p));
      ws.accept();
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
    if (isPulsarFrameError(f)) {
      this.#refuse(f);
      return;
    }
    switch (f.type) {
      case "ack":
      case "negativeAcknowledge": {
        const { partition, offset } = f.position;
        const ws = this.#parts[partition];
        if (ws === undefined) {
          this.#refuse({ code: "INVALID_MESSAGE_ID", message: `The message id names partition ${partition}; the topic has ${this.#parts.length}.` });
          return;
        }
        if (f.type === "negativeAcknowledge" && this.#mode.kind === "push" && this.#mode.reader) {
          this.#refuse({ code: "NOT_ALLOWED", message: "A reader does not negatively acknowledge." });
          return;
        }
        const id = formatMessageId(partition, offset);
        if (this.#mode.kind === "push" && this.#mode.reader && !this.#pending.has(id)) {
          // A reader's ack only gives back the permit of a message this session pushed to the
          // client and that is not acked yet (Pulsar's reader handler counts any frame as an ack;
          // docs/PROTOCOL.md "Reader"). Refused here, it changes nothing at the partition either.
          this.#refuse({
            code: "INVALID_MESSAGE_ID",
            message: `Message ${pulsarMessageIdOf(partition, offset)} was not delivered to this reader, or is acked already: it gives no permit back.`,
          });
          return;
        }
        sendQuietly(ws, { type: f.type === "ack" ? "ack" : "nack", messageIds: [id] });
        // A message acked or nacked while it waits here is not pushed any more (a nacked one comes back from its partition).
        this.#buffer.delete(id);
        // The message left the client's hands: its place in the push window is free.
        if (this.#pending.delete(id)) this.#drain();
        return;
      }
      case "permit":
        if (this.#mode.kind !== "pull") {
          this.#refuse({ code: "INVALID_REQUEST", message: "permit frames are for consumers with pullMode=true." });
          return;
        }
        this.#credit = Math.min(this.#credit + f.permits, Number.MAX_SAFE_INTEGER);
        this.#drain();
        this.#grant();
        return;
      case "unsubscribe": {
        const unsubscribe = this.#unsubscribe;
        if (unsubscribe === null) {
          this.#refuse({ code: "NOT_ALLOWED", message: "A reader has no subscription to unsubscribe." });
          return;
        }
        // Done: the partitions close this session's sockets with 4001 (subscription deleted), and the client's with it.
        void unsubscribe().then(
          (refused) => {
            if (refused !== null) this.#refuse(refused);
          },
          () => this.#refuse({ code: "UNAVAILABLE", message: "The subscription could not be deleted: retry." }),
        );
        return;
      }
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

/**
 * Pulsar's producer on the socket-produce engine (src/gateway/ws-produce.ts): a frame is one
 * message (src/subscriptions/pulsar-ws.ts parses it into a record with a base64 value); the
 * receipt is `{result: "ok", messageId, context}` or `{result: "send-error:<n>", errorMsg,
 * errorCode, context}`. The tag is the frame's context.
 */
export const PULSAR_PRODUCER: ProducerFlavor<string | null> = {
  parse(data, nowMs) {
    const f = parsePulsarProducerFrame(data);
    if (isPulsarFrameError(f)) return { tag: f.context, error: { code: f.code, message: f.message } };
    // Batches are cut by, and the quota charged, the frame's bytes (UTF-8: properties and key may be any text).
    const r = parseRecords({ keyEncoding: "string", valueEncoding: "base64", records: [f.record] }, nowMs, typeof data === "string" ? utf8ByteLength(data) : 0);
    return "error" in r ? { tag: f.context, error: r.error } : { tag: f.context, ...r };
  },
  ok(context, records) {
    const r = records[0];
    if (records.length !== 1 || r === undefined) throw new Error(`a Pulsar message is one record, got ${records.length}`);
    return pulsarSendOk(pulsarMessageIdOf(r.partition, r.offset), context);
  },
  fail: (context, e) => pulsarSendError(e, context),
};
