/**
 * Pulsar-style readers over Edgelog's native WebSocket API (docs/PROTOCOL.md "Readers over
 * WebSocket"): a reader is a non-durable cursor; it stores nothing on the server, its position
 * lives in the client. `createReader()` opens one reader socket per partition and fans them in,
 * as Pulsar's multi-topics reader does for a partitioned topic (apache/pulsar PR #7518).
 *
 * Start positions follow Pulsar's Java and Go clients (field case A4): `latest` (the default)
 * starts after the last message, `latest` with `startMessageIdInclusive` at the last message;
 * a message id starts after it, or at it when inclusive; a timestamp at the first message whose
 * timestamp is >= T, in offset order.
 *
 * A dropped socket is reopened with backoff and resumes right after the last message this
 * reader received on that partition (exclusive), so nothing is lost and nothing repeated.
 *
 * Uses the standard `WebSocket` (Node 22+, browsers, Workers); no dependency.
 */
import { EdgelogError } from "../../src/protocol/errors.ts";
import { formatMessageId, parseMessageId } from "../../src/subscriptions/message-id.ts";
import { MAX_RECEIVER_QUEUE_SIZE } from "../../src/subscriptions/permits.ts";
import type { EdgelogClient } from "./client.ts";
import { EdgelogClientError } from "./errors.ts";
import { fromBase64, PartitionSocket, type SubscriptionMessage, type WireMessage } from "./subscription.ts";

/**
 * Where a reader starts: `"earliest"`, `"latest"`, `{ timestamp }` (ms since the epoch) or a
 * message id (as `SubscriptionMessage.messageId`). A message id names one partition: the reader
 * then reads that partition only, as Pulsar's reader of a partitioned topic does with a message
 * id of one partition (apache/pulsar PR #7518).
 */
export type ReaderStart = "earliest" | "latest" | { timestamp: number } | string;

export interface ReaderOptions {
  topic: string;
  /** Pulsar's name for {@link ReaderOptions.start} (a message id, `"earliest"` or `"latest"`); give one of the two. */
  startMessageId?: string;
  /** @default "latest" */
  start?: ReaderStart;
  /** With a message id: start at that message instead of the next; with `latest`: at the last message. @default false */
  startMessageIdInclusive?: boolean;
  /** Messages the server may push per partition before the reader hands them out (1..10000). @default 1000 */
  receiverQueueSize?: number;
}

/** A message read; `redeliveryCount` is always 0 (a reader has no acks and no redeliveries). */
export type ReaderMessage = SubscriptionMessage;

/** A reader's acks only give permits back: at most this many ids per `ack` frame (the server's limit). */
const MAX_IDS_PER_ACK = 1000;

/** Per partition: the socket and where the reader is. */
interface PartitionState {
  socket: PartitionSocket;
  /** Next offset to ask for on a reconnect (last received + 1); null before the first `reader` frame. */
  resumeAt: number | null;
  /** Next offset the application has not read yet (last handed out + 1, or the start offset). */
  readAt: number | null;
  /** Socket generation: messages of an older one give no permits back on the new one. */
  generation: number;
  /** Ids handed out on the current generation, not yet acked to the server. */
  toAck: string[];
}

interface Waiter {
  resolve(m: ReaderMessage): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface Queued {
  message: ReaderMessage;
  generation: number;
  epoch: number;
}

/**
 * A reader over every partition of a topic (or one partition, when started at a message id).
 * Create with {@link createReader}. `readNext()` or `for await (const m of reader)`.
 */
export class Reader implements AsyncIterable<ReaderMessage> {
  readonly #queue: Queued[] = [];
  readonly #waiting: Waiter[] = [];
  #partitions = new Map<number, PartitionState>();
  #error: Error | null = null;
  #closed = false;
  /** Bumped by seek: messages of the sockets before it are dropped. */
  #epoch = 0;
  #topicName = "";
  #partitionCount = 0;

  private readonly client: EdgelogClient;
  readonly options: ReaderOptions;

  private constructor(client: EdgelogClient, options: ReaderOptions) {
    this.client = client;
    this.options = options;
  }

  /** @internal Opens the sockets. */
  static async open(client: EdgelogClient, options: ReaderOptions): Promise<Reader> {
    const r = new Reader(client, options);
    const topic = await client.describeTopic(options.topic);
    r.#topicName = topic.name;
    r.#partitionCount = topic.partitions;
    try {
      await r.#openAll(startOf(options));
    } catch (e) {
      r.close();
      throw e;
    }
    return r;
  }

  /** The topic's full name (`tenant/namespace/topic`). */
  get topic(): string {
    return this.#topicName;
  }

  /** Opens one socket per partition (or the message id's partition) at `start`. */
  async #openAll(start: ReaderStart): Promise<void> {
    const epoch = this.#epoch;
    const inclusive = this.options.startMessageIdInclusive === true;
    const id = typeof start === "string" && start !== "earliest" && start !== "latest" ? parseMessageId(start) : null;
    const partitions = id === null ? Array.from({ length: this.#partitionCount }, (_, p) => p) : [id.partition];
    if (id !== null && id.partition >= this.#partitionCount)
      throw new EdgelogClientError("INVALID_MESSAGE_ID", `${start as string} names partition ${id.partition}; ${this.#topicName} has ${this.#partitionCount}.`, { httpStatus: 0 });
    const startParam = typeof start === "object" ? `timestamp:${start.timestamp}` : start;
    const base: Record<string, string> = { encoding: "base64" };
    if (this.options.receiverQueueSize !== undefined) base.receiverQueueSize = String(this.options.receiverQueueSize);
    const fresh = new Map<number, PartitionState>();
    for (const p of partitions) {
      const state: PartitionState = { socket: undefined as unknown as PartitionSocket, resumeAt: null, readAt: null, generation: 0, toAck: [] };
      state.socket = new PartitionSocket(
        p,
        () => {
          // First connection: the asked start. A reconnect: right after the last message received.
          const query = state.resumeAt === null ? { ...base, start: startParam, inclusive: String(inclusive) } : { ...base, start: formatMessageId(p, state.resumeAt), inclusive: "true" };
          return this.client.webSocketUrl(`/v1/topics/${encodeURIComponent(this.#topicName)}/partitions/${p}/readers/ws`, query);
        },
        (ms) => this.#push(p, state, epoch, ms),
        (e) => this.#fail(e),
        {
          type: "reader",
          onReady: (startOffset) => {
            state.generation++;
            state.toAck = [];
            state.resumeAt ??= startOffset;
            state.readAt ??= startOffset;
          },
        },
      );
      fresh.set(p, state);
    }
    this.#partitions = fresh;
    await Promise.all([...fresh.values()].map((s) => s.socket.open()));
  }

  #push(partition: number, state: PartitionState, epoch: number, ms: WireMessage[]): void {
    if (epoch !== this.#epoch || this.#closed) return;
    for (const m of ms) {
      state.resumeAt = m.offset + 1;
      const message: ReaderMessage = {
        topic: this.#topicName,
        messageId: m.messageId,
        partition,
        offset: m.offset,
        timestamp: m.timestamp,
        key: fromBase64(m.key),
        value: fromBase64(m.value),
        headers: m.headers.map((h) => ({ key: h.key, value: fromBase64(h.value) })),
        redeliveryCount: 0,
      };
      const q: Queued = { message, generation: state.generation, epoch };
      const w = this.#waiting.shift();
      if (w === undefined) this.#queue.push(q);
      else {
        if (w.timer !== undefined) clearTimeout(w.timer);
        w.resolve(this.#handOut(q));
      }
    }
  }

  /**
   * Marks a message as read: the reader's position moves past it, and its permit goes back to
   * the server once half the window is read (as Pulsar's client sends `flow` at half its queue).
   */
  #handOut(q: Queued): ReaderMessage {
    const state = this.#partitions.get(q.message.partition);
    if (state === undefined || q.epoch !== this.#epoch) return q.message;
    state.readAt = q.message.offset + 1;
    if (q.generation !== state.generation) return q.message;
    state.toAck.push(q.message.messageId);
    const window = this.options.receiverQueueSize ?? 1000;
    if (state.toAck.length >= Math.min(MAX_IDS_PER_ACK, Math.ceil(window / 2))) {
      state.socket.send({ type: "ack", messageIds: state.toAck });
      state.toAck = [];
    }
    return q.message;
  }

  #fail(e: Error): void {
    this.#error = e;
    for (const w of this.#waiting.splice(0)) {
      if (w.timer !== undefined) clearTimeout(w.timer);
      w.reject(e);
    }
  }

  /**
   * The next message, waiting for one. With `timeoutMs`, rejects with `REQUEST_TIMED_OUT` after
   * that long (the reader stays usable). @throws EdgelogClientError `UNAVAILABLE` after close()
   * or a final server close (e.g. the topic was deleted).
   */
  readNext(timeoutMs?: number): Promise<ReaderMessage> {
    const q = this.#queue.shift();
    if (q !== undefined) return Promise.resolve(this.#handOut(q));
    if (this.#error !== null) return Promise.reject(this.#error);
    if (this.#closed) return Promise.reject(new EdgelogClientError("UNAVAILABLE", "The reader is closed.", { httpStatus: 0 }));
    return new Promise((resolve, reject) => {
      const w: Waiter = { resolve, reject, timer: undefined };
      if (timeoutMs !== undefined) {
        w.timer = setTimeout(() => {
          const i = this.#waiting.indexOf(w);
          if (i >= 0) this.#waiting.splice(i, 1);
          reject(new EdgelogClientError("REQUEST_TIMED_OUT", `No message within ${timeoutMs} ms.`, { httpStatus: 0 }));
        }, timeoutMs);
      }
      this.#waiting.push(w);
    });
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ReaderMessage> {
    for (;;) {
      try {
        yield await this.readNext();
      } catch (e) {
        if (this.#closed) return;
        throw e;
      }
    }
  }

  /**
   * Whether a message is there to read (Pulsar's `hasMessageAvailable`): true when one is
   * already received, else when some partition's log end offset (ListOffsets `latest`, one
   * request per partition) is past the reader's position there. On a compacted topic a gap at
   * the end of the log may answer true with nothing left to read.
   */
  async hasMessageAvailable(): Promise<boolean> {
    if (this.#queue.length > 0) return true;
    const states = [...this.#partitions.entries()];
    const ends = await Promise.all(states.map(([p]) => this.client.listOffsets(this.#topicName, p, "latest")));
    if (this.#queue.length > 0) return true;
    return states.some(([, s], i) => s.readAt !== null && (ends[i]!.offset ?? 0) > s.readAt);
  }

  /**
   * Moves the reader (Pulsar's `reader.seek`): every partition to `"earliest"`, `"latest"` or
   * the first message with timestamp >= T; or, with a message id, that partition only (after
   * the message, or at it with `startMessageIdInclusive`), as at creation. Messages received
   * and not yet read are dropped. Resolves when the new sockets are open.
   */
  async seek(target: ReaderStart): Promise<void> {
    if (this.#closed) throw new EdgelogClientError("UNAVAILABLE", "The reader is closed.", { httpStatus: 0 });
    checkStart(target);
    this.#epoch++;
    this.#queue.length = 0;
    for (const s of this.#partitions.values()) s.socket.close();
    await this.#openAll(target);
  }

  /** Closes every socket; a pending `readNext()` rejects with `UNAVAILABLE`. */
  close(): void {
    this.#closed = true;
    for (const s of this.#partitions.values()) s.socket.close();
    for (const w of this.#waiting.splice(0)) {
      if (w.timer !== undefined) clearTimeout(w.timer);
      w.reject(new EdgelogClientError("UNAVAILABLE", "The reader is closed.", { httpStatus: 0 }));
    }
  }
}

/** @throws EdgelogError INVALID_MESSAGE_ID / INVALID_REQUEST for a start that is none of the forms. */
function checkStart(start: ReaderStart): void {
  if (start === "earliest" || start === "latest") return;
  if (typeof start === "object" && start !== null && Number.isSafeInteger(start.timestamp) && start.timestamp >= 0) return;
  if (typeof start === "string" && parseMessageId(start) !== null) return;
  if (typeof start === "string") throw new EdgelogError("INVALID_MESSAGE_ID", `start must be "earliest", "latest", { timestamp } or a message id, got ${JSON.stringify(start)}.`);
  throw new EdgelogError("INVALID_REQUEST", "start.timestamp must be a non-negative integer of ms.");
}

function startOf(options: ReaderOptions): ReaderStart {
  if (options.start !== undefined && options.startMessageId !== undefined) throw new EdgelogError("INVALID_REQUEST", "Give start or startMessageId, not both.");
  const start = options.start ?? options.startMessageId ?? "latest";
  checkStart(start);
  // The server's bound: a refused upgrade reaches a WebSocket client as a bare close (UNAVAILABLE).
  const q = options.receiverQueueSize;
  if (q !== undefined && !(Number.isSafeInteger(q) && q >= 1 && q <= MAX_RECEIVER_QUEUE_SIZE))
    throw new EdgelogError("INVALID_REQUEST", `receiverQueueSize must be an integer 1..${MAX_RECEIVER_QUEUE_SIZE}, got ${q}.`, { field: "receiverQueueSize" });
  return start;
}

/**
 * Creates a reader (see {@link ReaderOptions}); resolves once every partition's socket is open.
 * @throws EdgelogError INVALID_REQUEST or INVALID_MESSAGE_ID for a bad start or receiverQueueSize (before any request);
 *   EdgelogClientError UNKNOWN_TOPIC_OR_PARTITION, UNAVAILABLE.
 */
export async function createReader(client: EdgelogClient, options: ReaderOptions): Promise<Reader> {
  startOf(options);
  return Reader.open(client, options);
}
