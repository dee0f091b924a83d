/**
 * Pulsar-style subscriptions over Edgelog's native WebSocket API (docs/PROTOCOL.md
 * "Subscriptions"): `subscribe()` opens one socket per partition of the topic and fans them in,
 * so a partitioned topic is one consumer, as in Pulsar's clients. Messages are acked one by one
 * (or cumulatively on exclusive and failover subscriptions); an ack resolves after the server's
 * durable commit. A dropped socket is reopened with backoff and delivery resumes from the
 * subscription's cursor: nothing acked comes back, unacked messages may come again.
 *
 * Uses the standard `WebSocket` (Node 22+, browsers, Workers); no dependency.
 */
import { EdgelogError, type ErrorCode } from "../../src/protocol/errors.ts";
import type { EdgelogClient } from "./client.ts";
import { EdgelogClientError } from "./errors.ts";

/** Pulsar's subscription types, in Edgelog's spelling. */
export type SubscriptionType = "exclusive" | "failover" | "shared" | "key_shared";

export interface SubscribeOptions {
  topic: string;
  subscription: string;
  /** @default "exclusive" */
  type?: SubscriptionType;
  /** Where a new subscription starts. @default "latest" */
  initialPosition?: "earliest" | "latest" | { timestamp: number };
  /** Redeliver a message unacked this long after delivery (0 = off, else >= 1000). @default 0 */
  ackTimeoutMs?: number;
  /** Delay before a nacked message comes back. @default 60000 */
  negativeAckRedeliveryDelayMs?: number;
  /** After `maxRedeliverCount` redeliveries, one copy goes to `deadLetterTopic` (default `{topic}-{subscription}-DLQ`). */
  deadLetterPolicy?: { maxRedeliverCount: number; deadLetterTopic?: string };
  /** Permits per partition: messages held unacked at once. @default 1000 */
  receiverQueueSize?: number;
  consumerName?: string;
  priorityLevel?: number;
}

/** A received message. Key, value and header values are bytes (null stays null). */
export interface SubscriptionMessage {
  /** Opaque, ordered within a partition, stable across restarts. */
  messageId: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: { key: string; value: Uint8Array | null }[];
  /** How often this message was delivered before. */
  redeliveryCount: number;
}

/** Close codes after which the consumer does not reconnect (docs/PROTOCOL.md). */
const FINAL_CLOSE_CODES = new Set([4001, 4003, 4004, 4005]);
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

interface WireMessage {
  messageId: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: { key: string; value: string | null }[];
  redeliveryCount: number;
}

type Frame =
  | { type: "connected" | "active" | "pong" | "reader" }
  | { type: "messages"; messages: WireMessage[] }
  | { type: "acked" | "nacked"; requestId: string }
  | { type: "error"; code: string; message: string; requestId: string | null };

function fromBase64(s: string | null): Uint8Array | null {
  if (s === null) return null;
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function partitionOf(messageId: string): number {
  const p = Number(messageId.split(":")[0]);
  if (!Number.isInteger(p)) throw new EdgelogClientError("INVALID_MESSAGE_ID", `${messageId} is not a message id.`, { httpStatus: 0 });
  return p;
}

/** One partition's socket, reopened after a drop. */
class PartitionSocket {
  #ws: WebSocket | null = null;
  #closed = false;
  #attempt = 0;
  readonly #pending = new Map<string, { resolve(): void; reject(e: Error): void }>();

  readonly partition: number;
  private readonly url: () => Promise<string>;
  private readonly onMessages: (ms: WireMessage[]) => void;
  private readonly onFatal: (e: Error) => void;

  constructor(partition: number, url: () => Promise<string>, onMessages: (ms: WireMessage[]) => void, onFatal: (e: Error) => void) {
    this.partition = partition;
    this.url = url;
    this.onMessages = onMessages;
    this.onFatal = onFatal;
  }

  /** Opens the socket; resolves on the server's `connected` frame, rejects on a refused upgrade. */
  async open(): Promise<void> {
    const ws = new WebSocket(await this.url());
    this.#ws = ws;
    await new Promise<void>((resolve, reject) => {
      let connected = false;
      ws.addEventListener("message", (e) => {
        const f = JSON.parse(String(e.data)) as Frame;
        if (f.type === "connected") {
          connected = true;
          this.#attempt = 0;
          resolve();
        } else if (f.type === "messages") this.onMessages(f.messages);
        else if ((f.type === "acked" || f.type === "nacked" || f.type === "error") && f.requestId !== null) {
          const p = this.#pending.get(f.requestId);
          this.#pending.delete(f.requestId);
          if (f.type === "error") p?.reject(new EdgelogClientError(f.code as ErrorCode, f.message, { httpStatus: 0 }));
          else p?.resolve();
        }
      });
      ws.addEventListener("close", (e) => {
        for (const p of this.#pending.values()) p.reject(new EdgelogClientError("UNAVAILABLE", `The socket closed (${e.code}) before the server confirmed.`, { httpStatus: 0 }));
        this.#pending.clear();
        if (!connected) {
          reject(
            new EdgelogClientError(
              e.code === 4005 ? "CONSUMER_BUSY" : "UNAVAILABLE",
              `Subscribing to partition ${this.partition} failed (close ${e.code} ${e.reason}); a refused upgrade answers a JSON error such as CONSUMER_BUSY, which a WebSocket client cannot read.`,
              { httpStatus: 0 },
            ),
          );
          return;
        }
        if (this.#closed) return;
        if (FINAL_CLOSE_CODES.has(e.code))
          return this.onFatal(new EdgelogClientError("UNAVAILABLE", `The server closed partition ${this.partition}'s socket: ${e.code} ${e.reason}.`, { httpStatus: 0 }));
        void this.#reconnect();
      });
    });
  }

  async #reconnect(): Promise<void> {
    while (!this.#closed) {
      const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.#attempt++);
      await new Promise((r) => setTimeout(r, delay));
      if (this.#closed) return;
      try {
        await this.open();
        return;
      } catch {
        // Try again with a longer delay.
      }
    }
  }

  /** Sends a frame that the server confirms after its durable commit. */
  request(frame: Record<string, unknown>): Promise<void> {
    const ws = this.#ws;
    if (ws === null || ws.readyState !== WebSocket.OPEN) return Promise.reject(new EdgelogClientError("UNAVAILABLE", `Partition ${this.partition}'s socket is not open.`, { httpStatus: 0 }));
    const requestId = crypto.randomUUID();
    return new Promise((resolve, reject) => {
      this.#pending.set(requestId, { resolve, reject });
      ws.send(JSON.stringify({ ...frame, requestId }));
    });
  }

  close(): void {
    this.#closed = true;
    try {
      this.#ws?.close(1000, "closed by the client");
    } catch {
      // Already closed.
    }
  }
}

/**
 * A consumer of one subscription over every partition of a topic. Create with
 * {@link subscribe}. Iterate it (`for await (const m of consumer)`) or call `receive()`.
 */
export class SubscriptionConsumer implements AsyncIterable<SubscriptionMessage> {
  readonly #queue: SubscriptionMessage[] = [];
  readonly #waiting: { resolve(m: SubscriptionMessage): void; reject(e: Error): void }[] = [];
  readonly #sockets = new Map<number, PartitionSocket>();
  #error: Error | null = null;
  #closed = false;

  private readonly client: EdgelogClient;
  readonly options: SubscribeOptions;

  private constructor(client: EdgelogClient, options: SubscribeOptions) {
    this.client = client;
    this.options = options;
  }

  /** @internal Opens one socket per partition. */
  static async open(client: EdgelogClient, options: SubscribeOptions): Promise<SubscriptionConsumer> {
    const c = new SubscriptionConsumer(client, options);
    const topic = await client.describeTopic(options.topic);
    const query: Record<string, string> = { type: options.type ?? "exclusive", encoding: "base64" };
    const ip = options.initialPosition ?? "latest";
    query.initialPosition = typeof ip === "string" ? ip : `timestamp:${ip.timestamp}`;
    if (options.ackTimeoutMs !== undefined) query.ackTimeoutMs = String(options.ackTimeoutMs);
    if (options.negativeAckRedeliveryDelayMs !== undefined) query.negativeAckRedeliveryDelayMs = String(options.negativeAckRedeliveryDelayMs);
    if (options.deadLetterPolicy !== undefined) {
      query.maxRedeliverCount = String(options.deadLetterPolicy.maxRedeliverCount);
      if (options.deadLetterPolicy.deadLetterTopic !== undefined) query.deadLetterTopic = options.deadLetterPolicy.deadLetterTopic;
    }
    if (options.receiverQueueSize !== undefined) query.receiverQueueSize = String(options.receiverQueueSize);
    if (options.consumerName !== undefined) query.consumerName = options.consumerName;
    if (options.priorityLevel !== undefined) query.priorityLevel = String(options.priorityLevel);
    try {
      for (let p = 0; p < topic.partitions; p++) {
        const s = new PartitionSocket(
          p,
          () => client.webSocketUrl(`/v1/topics/${encodeURIComponent(topic.name)}/partitions/${p}/subscriptions/${encodeURIComponent(options.subscription)}/ws`, query),
          (ms) => c.#push(ms),
          (e) => c.#fail(e),
        );
        c.#sockets.set(p, s);
        await s.open();
      }
    } catch (e) {
      c.close();
      throw e;
    }
    return c;
  }

  #push(ms: WireMessage[]): void {
    for (const m of ms) {
      const msg: SubscriptionMessage = {
        messageId: m.messageId,
        partition: m.partition,
        offset: m.offset,
        timestamp: m.timestamp,
        key: fromBase64(m.key),
        value: fromBase64(m.value),
        headers: m.headers.map((h) => ({ key: h.key, value: fromBase64(h.value) })),
        redeliveryCount: m.redeliveryCount,
      };
      const w = this.#waiting.shift();
      if (w !== undefined) w.resolve(msg);
      else this.#queue.push(msg);
    }
  }

  #fail(e: Error): void {
    this.#error = e;
    for (const w of this.#waiting.splice(0)) w.reject(e);
  }

  /** The next message (waits). @throws EdgelogClientError after close or a final server close. */
  receive(): Promise<SubscriptionMessage> {
    const m = this.#queue.shift();
    if (m !== undefined) return Promise.resolve(m);
    if (this.#error !== null) return Promise.reject(this.#error);
    if (this.#closed) return Promise.reject(new EdgelogClientError("UNAVAILABLE", "The consumer is closed.", { httpStatus: 0 }));
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SubscriptionMessage> {
    for (;;) {
      try {
        yield await this.receive();
      } catch (e) {
        if (this.#closed) return;
        throw e;
      }
    }
  }

  #socketOf(id: string): PartitionSocket {
    const s = this.#sockets.get(partitionOf(id));
    if (s === undefined) throw new EdgelogClientError("INVALID_MESSAGE_ID", `${id} is of no partition of this consumer.`, { httpStatus: 0 });
    return s;
  }

  /** Acks one message; resolves after the server's durable commit. */
  acknowledge(m: SubscriptionMessage | string): Promise<void> {
    const id = typeof m === "string" ? m : m.messageId;
    return this.#socketOf(id).request({ type: "ack", messageIds: [id] });
  }

  /** Acks every message of its partition up to this one (exclusive and failover only: else NOT_ALLOWED). */
  acknowledgeCumulative(m: SubscriptionMessage | string): Promise<void> {
    const id = typeof m === "string" ? m : m.messageId;
    return this.#socketOf(id).request({ type: "ackCumulative", messageId: id });
  }

  /** Asks for a redelivery after the subscription's nack delay (redelivery count + 1). */
  negativeAcknowledge(m: SubscriptionMessage | string): Promise<void> {
    const id = typeof m === "string" ? m : m.messageId;
    return this.#socketOf(id).request({ type: "nack", messageIds: [id] });
  }

  /**
   * Resets the subscription's cursor (every partition for a timestamp, one partition for a
   * message id). The server closes the sockets with 4002; they reopen at the new position.
   */
  async seek(target: { timestamp: number } | { messageId: string }): Promise<void> {
    this.#queue.length = 0;
    await this.client.seekSubscription(this.options.topic, this.options.subscription, target);
  }

  /** Closes every socket; unacked messages go to the subscription's other consumers. */
  close(): void {
    this.#closed = true;
    for (const s of this.#sockets.values()) s.close();
    for (const w of this.#waiting.splice(0)) w.reject(new EdgelogClientError("UNAVAILABLE", "The consumer is closed.", { httpStatus: 0 }));
  }
}

/** Subscribes (see {@link SubscribeOptions}): resolves once every partition's socket is open. @throws EdgelogClientError e.g. CONSUMER_BUSY. */
export function subscribe(client: EdgelogClient, options: SubscribeOptions): Promise<SubscriptionConsumer> {
  if (typeof options.subscription !== "string" || options.subscription === "") throw new EdgelogError("INVALID_REQUEST", "subscription is required.");
  return SubscriptionConsumer.open(client, options);
}
