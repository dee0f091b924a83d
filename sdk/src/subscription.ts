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
import { DELIVER_AT_HEADER, parseSubscribeQuery } from "../../src/subscriptions/wire.ts";
import type { EdgelogClient } from "./client.ts";
import { EdgelogClientError } from "./errors.ts";
import { Producer } from "./producer.ts";

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
  /**
   * After `maxRedeliverCount` redeliveries, one copy goes to `deadLetterTopic` (default
   * `{topic}-{subscription}-DLQ`). With `retryEnable`, `reconsumeLater` copies go to
   * `retryLetterTopic` (default `{topic}-{subscription}-RETRY`), and to the dead-letter topic
   * once a message was reconsumed `maxRedeliverCount` times.
   */
  deadLetterPolicy?: { maxRedeliverCount: number; deadLetterTopic?: string; retryLetterTopic?: string };
  /**
   * Pulsar's `enableRetry`: also subscribe to the retry-letter topic (same subscription name and
   * type, created with one partition when missing; a new subscription there starts at earliest)
   * and allow {@link SubscriptionConsumer.reconsumeLater}. Without a `deadLetterPolicy`,
   * `maxRedeliverCount` is {@link DEFAULT_MAX_RECONSUME_TIMES}. @default false
   */
  retryEnable?: boolean;
  /** Permits per partition: messages held unacked at once. @default 1000 */
  receiverQueueSize?: number;
  consumerName?: string;
  priorityLevel?: number;
}

/** A received message. Key, value and header values are bytes (null stays null). */
export interface SubscriptionMessage {
  /** The full name (`tenant/namespace/topic`) of the topic it came from: the subscribed topic, or its retry-letter topic. */
  topic: string;
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

/** @internal A message as the server sends it (keys, values and header values in base64). */
export interface WireMessage {
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
  | { type: "connected" | "active" | "pong" }
  | { type: "reader"; partition: number; startOffset: number }
  | { type: "messages"; messages: WireMessage[] }
  | { type: "acked" | "nacked"; requestId: string }
  | { type: "error"; code: string; message: string; requestId: string | null };

/** @internal */
export function fromBase64(s: string | null): Uint8Array | null {
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

/**
 * @internal One partition's socket, reopened after a drop: a consumer's (ready on the
 * `connected` frame) or a reader's (ready on the `reader` frame, handed to `onReady`). `url` is
 * called for every (re)connection, so a reader can resume from where it got to.
 */
export class PartitionSocket {
  #ws: WebSocket | null = null;
  #closed = false;
  #attempt = 0;
  readonly #pending = new Map<string, { resolve(): void; reject(e: Error): void }>();

  readonly partition: number;
  private readonly url: () => Promise<string>;
  private readonly onMessages: (ms: WireMessage[]) => void;
  private readonly onFatal: (e: Error) => void;
  private readonly ready: { type: "connected" | "reader"; onReady?: (startOffset: number) => void };

  constructor(
    partition: number,
    url: () => Promise<string>,
    onMessages: (ms: WireMessage[]) => void,
    onFatal: (e: Error) => void,
    ready: { type: "connected" | "reader"; onReady?: (startOffset: number) => void } = { type: "connected" },
  ) {
    this.partition = partition;
    this.url = url;
    this.onMessages = onMessages;
    this.onFatal = onFatal;
    this.ready = ready;
  }

  /** Opens the socket; resolves on the server's `connected` frame, rejects on a refused upgrade. */
  async open(): Promise<void> {
    const ws = new WebSocket(await this.url());
    this.#ws = ws;
    await new Promise<void>((resolve, reject) => {
      let connected = false;
      ws.addEventListener("message", (e) => {
        const f = JSON.parse(String(e.data)) as Frame;
        if (f.type === this.ready.type) {
          connected = true;
          this.#attempt = 0;
          this.ready.onReady?.(f.type === "reader" ? f.startOffset : 0);
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
              `${this.ready.type === "reader" ? "Reading" : "Subscribing to"} partition ${this.partition} failed (close ${e.code} ${e.reason}); a refused upgrade answers a JSON error such as CONSUMER_BUSY, which a WebSocket client cannot read.`,
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

  /** Sends a frame that has no answer (a reader's acks); false when the socket is not open (a reconnect starts afresh). */
  send(frame: Record<string, unknown>): boolean {
    const ws = this.#ws;
    if (ws === null || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(frame));
    return true;
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

/** Pulsar's `RetryMessageUtil.MAX_RECONSUMETIMES`: `maxRedeliverCount` of a retry-enabled consumer without a dead-letter policy. */
export const DEFAULT_MAX_RECONSUME_TIMES = 16;

/**
 * The properties (record headers) of a retry-letter copy, as Pulsar's client sets them
 * (`RetryMessageUtil`): `RECONSUMETIMES` (1, then + 1 per reconsume), `DELAY_TIME` (ms),
 * `REAL_TOPIC` and `ORIGIN_MESSAGE_ID` (of the first delivery, kept through every retry), plus
 * `REAL_SUBSCRIPTION` as on Edgelog's server-side dead-letter copies.
 */
export const RETRY_PROPERTIES = {
  reconsumeTimes: "RECONSUMETIMES",
  delayTime: "DELAY_TIME",
  realTopic: "REAL_TOPIC",
  originMessageId: "ORIGIN_MESSAGE_ID",
  realSubscription: "REAL_SUBSCRIPTION",
} as const;

interface RetrySetup {
  retryTopic: string;
  deadLetterTopic: string;
  maxReconsumeTimes: number;
}

function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

function headerText(m: SubscriptionMessage, key: string): string | undefined {
  const h = m.headers.find((x) => x.key === key);
  return h?.value == null ? undefined : new TextDecoder().decode(h.value);
}

/**
 * A consumer of one subscription over every partition of a topic (and of its retry-letter topic
 * with `retryEnable`). Create with {@link subscribe}. Iterate it (`for await (const m of
 * consumer)`) or call `receive()`.
 */
export class SubscriptionConsumer implements AsyncIterable<SubscriptionMessage> {
  readonly #queue: SubscriptionMessage[] = [];
  readonly #waiting: { resolve(m: SubscriptionMessage): void; reject(e: Error): void }[] = [];
  /** Sockets by topic full name, then partition. */
  readonly #sockets = new Map<string, Map<number, PartitionSocket>>();
  #topicName = "";
  #retry: RetrySetup | null = null;
  #producer: Producer | null = null;
  #error: Error | null = null;
  #closed = false;

  private readonly client: EdgelogClient;
  readonly options: SubscribeOptions;

  private constructor(client: EdgelogClient, options: SubscribeOptions) {
    this.client = client;
    this.options = options;
  }

  /** @internal Opens one socket per partition (of the topic, then of its retry-letter topic). */
  static async open(client: EdgelogClient, options: SubscribeOptions): Promise<SubscriptionConsumer> {
    const c = new SubscriptionConsumer(client, options);
    const topic = await client.describeTopic(options.topic);
    c.#topicName = topic.name;
    const query: Record<string, string> = { type: options.type ?? "exclusive", encoding: "base64" };
    const ip = options.initialPosition ?? "latest";
    query.initialPosition = typeof ip === "string" ? ip : `timestamp:${ip.timestamp}`;
    if (options.ackTimeoutMs !== undefined) query.ackTimeoutMs = String(options.ackTimeoutMs);
    if (options.negativeAckRedeliveryDelayMs !== undefined) query.negativeAckRedeliveryDelayMs = String(options.negativeAckRedeliveryDelayMs);
    const policy = options.deadLetterPolicy;
    if (options.retryEnable === true) {
      // Pulsar's ConsumerImpl: `{topic}-{subscription}-RETRY` and `-DLQ`, 16 reconsumes without a policy.
      c.#retry = {
        retryTopic: policy?.retryLetterTopic ?? `${topic.name}-${options.subscription}-RETRY`,
        deadLetterTopic: policy?.deadLetterTopic ?? `${topic.name}-${options.subscription}-DLQ`,
        maxReconsumeTimes: policy?.maxRedeliverCount ?? DEFAULT_MAX_RECONSUME_TIMES,
      };
      // The retry topic's nacks dead-letter to the same topic as the main topic's.
      query.maxRedeliverCount = String(c.#retry.maxReconsumeTimes);
      query.deadLetterTopic = c.#retry.deadLetterTopic;
    } else if (policy !== undefined) {
      query.maxRedeliverCount = String(policy.maxRedeliverCount);
      if (policy.deadLetterTopic !== undefined) query.deadLetterTopic = policy.deadLetterTopic;
    }
    if (options.receiverQueueSize !== undefined) query.receiverQueueSize = String(options.receiverQueueSize);
    if (options.consumerName !== undefined) query.consumerName = options.consumerName;
    if (options.priorityLevel !== undefined) query.priorityLevel = String(options.priorityLevel);
    // The server's own check, here: a refused upgrade reaches a WebSocket client only as a
    // close without the JSON error, so a bad option would surface as UNAVAILABLE.
    const bad = parseSubscribeQuery(options.subscription, new URLSearchParams(query));
    if ("ok" in bad) throw new EdgelogClientError(bad.code, bad.message, { httpStatus: 0, ...(bad.details === undefined ? {} : { details: bad.details }) });
    try {
      await c.#openTopic(topic.name, topic.partitions, query);
      if (c.#retry !== null) {
        const retry = await ensureTopic(client, c.#retry.retryTopic);
        c.#retry.retryTopic = retry.name;
        // A retry topic holds only this subscription's retries: a new subscription there reads all of it.
        await c.#openTopic(retry.name, retry.partitions, { ...query, initialPosition: "earliest" });
      }
    } catch (e) {
      c.close();
      throw e;
    }
    return c;
  }

  async #openTopic(name: string, partitions: number, query: Record<string, string>): Promise<void> {
    const sockets = new Map<number, PartitionSocket>();
    this.#sockets.set(name, sockets);
    for (let p = 0; p < partitions; p++) {
      const s = new PartitionSocket(
        p,
        () => this.client.webSocketUrl(`/v1/topics/${encodeURIComponent(name)}/partitions/${p}/subscriptions/${encodeURIComponent(this.options.subscription)}/ws`, query),
        (ms) => this.#push(name, ms),
        (e) => this.#fail(e),
      );
      sockets.set(p, s);
      await s.open();
    }
  }

  /** The subscribed topic's full name (`tenant/namespace/topic`). */
  get topic(): string {
    return this.#topicName;
  }

  /** The retry-letter topic's full name with `retryEnable`, else null. */
  get retryLetterTopic(): string | null {
    return this.#retry?.retryTopic ?? null;
  }

  #push(topic: string, ms: WireMessage[]): void {
    for (const m of ms) {
      const msg: SubscriptionMessage = {
        topic,
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

  /**
   * The next message, waiting at most `timeoutMs` when given (Pulsar's `receive(timeout)`): a
   * timed-out receive takes no message with it, unlike racing `receive()` against a timer,
   * whose abandoned call still takes the next message.
   * @throws EdgelogClientError REQUEST_TIMED_OUT after `timeoutMs`; UNAVAILABLE after close or a final server close.
   */
  receive(timeoutMs?: number): Promise<SubscriptionMessage> {
    const m = this.#queue.shift();
    if (m !== undefined) return Promise.resolve(m);
    if (this.#error !== null) return Promise.reject(this.#error);
    if (this.#closed) return Promise.reject(new EdgelogClientError("UNAVAILABLE", "The consumer is closed.", { httpStatus: 0 }));
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const w = {
        resolve: (msg: SubscriptionMessage) => {
          clearTimeout(timer);
          resolve(msg);
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      if (timeoutMs !== undefined)
        timer = setTimeout(() => {
          const i = this.#waiting.indexOf(w);
          if (i >= 0) this.#waiting.splice(i, 1);
          reject(new EdgelogClientError("REQUEST_TIMED_OUT", `No message within ${timeoutMs} ms.`, { httpStatus: 0 }));
        }, timeoutMs);
      this.#waiting.push(w);
    });
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

  /** The socket of a message: a message object names its topic; a bare id is of the subscribed topic. */
  #socketOf(m: SubscriptionMessage | string): { socket: PartitionSocket; id: string } {
    const id = typeof m === "string" ? m : m.messageId;
    const topic = typeof m === "string" ? this.#topicName : m.topic;
    const s = this.#sockets.get(topic)?.get(partitionOf(id));
    if (s === undefined) throw new EdgelogClientError("INVALID_MESSAGE_ID", `${id} is of no partition of this consumer.`, { httpStatus: 0 });
    return { socket: s, id };
  }

  /**
   * Acks one message; resolves after the server's durable commit. Pass the message (not its id)
   * for a message of the retry-letter topic: a bare id is taken as the subscribed topic's.
   */
  acknowledge(m: SubscriptionMessage | string): Promise<void> {
    const { socket, id } = this.#socketOf(m);
    return socket.request({ type: "ack", messageIds: [id] });
  }

  /** Acks every message of its partition up to this one (exclusive and failover only: else NOT_ALLOWED). */
  acknowledgeCumulative(m: SubscriptionMessage | string): Promise<void> {
    const { socket, id } = this.#socketOf(m);
    return socket.request({ type: "ackCumulative", messageId: id });
  }

  /** Asks for a redelivery after the subscription's nack delay (redelivery count + 1). */
  negativeAcknowledge(m: SubscriptionMessage | string): Promise<void> {
    const { socket, id } = this.#socketOf(m);
    return socket.request({ type: "nack", messageIds: [id] });
  }

  /**
   * Pulsar's `reconsumeLater` (PIP-58), client-side as Pulsar's client does it: produces a copy
   * of `m` (key, value, headers) to the retry-letter topic, delivered `delayMs` later (header
   * `edgelog-deliver-at`), with `RECONSUMETIMES` + 1 and the other {@link RETRY_PROPERTIES};
   * once `RECONSUMETIMES` would exceed `maxRedeliverCount`, the copy goes to the dead-letter
   * topic instead (at once). THEN acks `m`. The copy is sent by an idempotent producer (its
   * retries are deduplicated); a crash or a lost ack after the copy and before the ack's commit
   * delivers `m` again, so it may be reconsumed twice (docs/SUBSCRIPTIONS.md).
   * Resolves after the ack's durable commit.
   * @throws EdgelogError INVALID_REQUEST without `retryEnable` or for a bad delay; EdgelogClientError from the produce or the ack.
   */
  async reconsumeLater(m: SubscriptionMessage, delayMs: number): Promise<void> {
    const retry = this.#retry;
    if (retry === null) throw new EdgelogError("INVALID_REQUEST", "reconsumeLater needs a consumer subscribed with retryEnable: true.");
    if (!(Number.isSafeInteger(delayMs) && delayMs >= 0)) throw new EdgelogError("INVALID_REQUEST", `delayMs must be a non-negative integer of ms, got ${delayMs}.`);
    this.#socketOf(m);
    const previous = Number(headerText(m, RETRY_PROPERTIES.reconsumeTimes) ?? "0");
    const times = (Number.isSafeInteger(previous) && previous > 0 ? previous : 0) + 1;
    const replaced = new Set<string>([RETRY_PROPERTIES.reconsumeTimes, RETRY_PROPERTIES.delayTime, DELIVER_AT_HEADER]);
    const headers: { key: string; value: Uint8Array | null }[] = m.headers.filter((h) => !replaced.has(h.key));
    const putIfAbsent = (key: string, value: string) => {
      if (!headers.some((h) => h.key === key)) headers.push({ key, value: utf8(value) });
    };
    putIfAbsent(RETRY_PROPERTIES.realTopic, this.#topicName);
    putIfAbsent(RETRY_PROPERTIES.originMessageId, m.messageId);
    putIfAbsent(RETRY_PROPERTIES.realSubscription, this.options.subscription);
    headers.push({ key: RETRY_PROPERTIES.reconsumeTimes, value: utf8(String(times)) }, { key: RETRY_PROPERTIES.delayTime, value: utf8(String(delayMs)) });
    const toDeadLetter = times > retry.maxReconsumeTimes;
    const target = toDeadLetter ? retry.deadLetterTopic : retry.retryTopic;
    if (toDeadLetter) await ensureTopic(this.client, target);
    this.#producer ??= new Producer(this.client, { lingerMs: 0 });
    await this.#producer.send({
      topic: target,
      messages: [{ key: m.key, value: m.value, headers, ...(toDeadLetter || delayMs === 0 ? {} : { deliverAfterMs: delayMs }) }],
    });
    await this.acknowledge(m);
  }

  /**
   * Resets the subscription's cursor (every partition for a timestamp, one partition for a
   * message id). The server closes the sockets with 4002; they reopen at the new position.
   * With `retryEnable`, a timestamp also resets the retry-letter topic's cursor.
   */
  async seek(target: { timestamp: number } | { messageId: string }): Promise<void> {
    this.#queue.length = 0;
    await this.client.seekSubscription(this.#topicName, this.options.subscription, target);
    if (this.#retry !== null && "timestamp" in target) await this.client.seekSubscription(this.#retry.retryTopic, this.options.subscription, target);
  }

  /** Closes every socket; unacked messages go to the subscription's other consumers. */
  close(): void {
    this.#closed = true;
    for (const sockets of this.#sockets.values()) for (const s of sockets.values()) s.close();
    for (const w of this.#waiting.splice(0)) w.reject(new EdgelogClientError("UNAVAILABLE", "The consumer is closed.", { httpStatus: 0 }));
    // Every reconsumeLater awaited its copy before acking: nothing is left to flush.
    void this.#producer?.close().catch(() => {});
  }
}

/** Describes `name`, creating it with one partition when missing (as the server does for dead-letter topics). */
async function ensureTopic(client: EdgelogClient, name: string): Promise<{ name: string; partitions: number }> {
  try {
    return await client.describeTopic(name);
  } catch (e) {
    if (!(e instanceof EdgelogError && e.code === "UNKNOWN_TOPIC_OR_PARTITION")) throw e;
  }
  try {
    return await client.createTopic({ name, partitions: 1 });
  } catch (e) {
    if (!(e instanceof EdgelogError && e.code === "TOPIC_ALREADY_EXISTS")) throw e;
    return await client.describeTopic(name);
  }
}

/** Subscribes (see {@link SubscribeOptions}): resolves once every partition's socket is open. @throws EdgelogClientError e.g. CONSUMER_BUSY. */
export function subscribe(client: EdgelogClient, options: SubscribeOptions): Promise<SubscriptionConsumer> {
  if (typeof options.subscription !== "string" || options.subscription === "") throw new EdgelogError("INVALID_REQUEST", "subscription is required.");
  return SubscriptionConsumer.open(client, options);
}
