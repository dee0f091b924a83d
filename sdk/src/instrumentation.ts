/**
 * Instrumentation events of the SDK, as kafkajs's instrumentation events
 * (`producer.on(producer.events.REQUEST, ...)`): what a metrics library or a log needs to see
 * of the client's work, without wrapping `fetch`. Listeners are registered on the
 * {@link EdgelogClient} (`client.on("request", e => ...)`), or on a Producer or Consumer, which
 * pass them to their client.
 *
 * The emitter is a tiny typed one, with no Node or DOM dependency, so it runs wherever the
 * SDK runs (Node, browsers, Workers, Deno, Bun). A listener runs synchronously when the event
 * happens; what it throws is caught and dropped, since instrumentation must never change what
 * the client does. Nothing is allocated for an event without listeners.
 */

/** One HTTP exchange of the client, answered or failed. */
export interface RequestEvent {
  /** Kafka-style API name of the route: `Produce`, `Fetch`, `ListOffsets`, `CreateTopics`, ... ({@link apiOf}). */
  api: string;
  method: string;
  /** URL path, without the query. */
  path: string;
  /** HTTP status; 0 when no answer came (network failure, timeout). */
  status: number;
  /** The error code of a failed exchange (the server's, or UNAVAILABLE / REQUEST_TIMED_OUT); null on success. */
  code: string | null;
  /** From just before `fetch` to the answer's body read in full, ms. */
  durationMs: number;
  /** Request body bytes (0 without a body). */
  requestBytes: number;
  /** Answer body bytes (0 when none came). */
  responseBytes: number;
}

/** A retriable failure about to be retried after `delayMs`. */
export interface RequestRetryEvent {
  api: string;
  topic?: string;
  partition?: number;
  /** 1 for the first retry. */
  attempt: number;
  /** Backoff before the retry, ms (KIP-580 exponential backoff with jitter). */
  delayMs: number;
  code: string;
}

/** The server asked the client to slow down (KIP-219 throttle time, or a THROTTLED answer). */
export interface ThrottleEvent {
  throttleTimeMs: number;
}

/** A producer record batch acknowledged (or accepted, with acks=0). */
export interface BatchEvent {
  topic: string;
  partition: number;
  records: number;
  /** Encoded record batch bytes, as sent (v2 batch format). */
  bytes: number;
  /** Requests it took: 1 without retries. */
  attempts: number;
  /** From the first send of the batch to its acknowledgement, ms. */
  durationMs: number;
}

/** A fetch answered (Consumer, GroupConsumer and direct `fetchRecords` calls). */
export interface FetchEvent {
  topic: string;
  partition: number;
  /** Offset asked for. */
  offset: number;
  /** Records returned (control records and records below `offset` excluded). */
  records: number;
  /** Answer body bytes (whole stored batches). */
  bytes: number;
  nextOffset: number;
  highWatermark: number;
  /** Records left to read after this answer: high watermark minus next offset. */
  lag: number;
  durationMs: number;
}

/** Every event the SDK emits, by name. */
export interface InstrumentationEvents {
  request: (event: RequestEvent) => void;
  request_retry: (event: RequestRetryEvent) => void;
  throttle: (event: ThrottleEvent) => void;
  batch: (event: BatchEvent) => void;
  fetch: (event: FetchEvent) => void;
}

/** A minimal typed event emitter: `on` returns the function that removes the listener. */
export class Emitter<E extends { [K in keyof E]: (event: never) => void }> {
  readonly #listeners = new Map<keyof E, Set<E[keyof E]>>();

  on<K extends keyof E>(event: K, listener: E[K]): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener);
    return () => this.off(event, listener);
  }

  off<K extends keyof E>(event: K, listener: E[K]): void {
    this.#listeners.get(event)?.delete(listener);
  }

  /** True when `event` has a listener: callers skip building the payload otherwise. */
  has(event: keyof E): boolean {
    return (this.#listeners.get(event)?.size ?? 0) > 0;
  }

  /** Calls each listener of `event` in registration order; what a listener throws is dropped. */
  emit<K extends keyof E>(event: K, payload: Parameters<E[K]>[0]): void {
    // (A listener of E[K] takes exactly this payload; the cast only erases the key.)
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        (listener as unknown as (event: unknown) => void)(payload);
      } catch {
        // Instrumentation must not change what the client does.
      }
    }
  }
}

/** The emitter of {@link InstrumentationEvents}. */
export type Instrumentation = Emitter<InstrumentationEvents>;

const TOPIC = "(?:[^/]+|[^/]+/[^/]+/[^/]+)";
const API_TABLE: ReadonlyArray<[string, RegExp, string]> = [
  ["POST", new RegExp(`^/v1/topics/${TOPIC}(?:/partitions/\\d+)?/records$`), "Produce"],
  ["GET", new RegExp(`^/v1/topics/${TOPIC}/partitions/\\d+/records$`), "Fetch"],
  ["GET", new RegExp(`^/v1/topics/${TOPIC}/partitions/\\d+/offsets$`), "ListOffsets"],
  ["POST", /^\/v1\/topics$/, "CreateTopics"],
  ["GET", /^\/v1\/topics$/, "ListTopics"],
  ["PATCH", new RegExp(`^/v1/topics/${TOPIC}$`), "AlterTopic"],
  ["DELETE", new RegExp(`^/v1/topics/${TOPIC}$`), "DeleteTopics"],
  ["GET", new RegExp(`^/v1/topics/${TOPIC}$`), "DescribeTopic"],
  ["POST", /^\/v1\/producers$/, "InitProducerId"],
  ["POST", /^\/v1\/groups\/[^/]+\/heartbeat$/, "ConsumerGroupHeartbeat"],
  ["POST", /^\/v1\/groups\/[^/]+\/leave$/, "LeaveGroup"],
  ["POST", /^\/v1\/groups\/[^/]+\/offsets$/, "OffsetCommit"],
  ["POST", /^\/v1\/groups\/[^/]+\/offsets\/fetch$/, "OffsetFetch"],
  ["GET", /^\/v1\/groups\/[^/]+\/offsets$/, "OffsetFetch"],
  ["POST", /^\/v1\/groups\/[^/]+\/reset-offsets$/, "ResetOffsets"],
  ["GET", /^\/v1\/groups$/, "ListGroups"],
  ["GET", /^\/v1\/groups\/[^/]+$/, "DescribeGroups"],
  ["PATCH", /^\/v1\/groups\/[^/]+$/, "AlterGroup"],
  ["DELETE", /^\/v1\/groups\/[^/]+$/, "DeleteGroups"],
  ["POST", /^\/v1\/auth\/token$/, "Authenticate"],
  ["GET", /^\/v1\/metrics$/, "Metrics"],
];

/**
 * The Kafka-style API name of a request (`Produce`, `Fetch`, ...), from its method and path
 * (the path after the client's base URL); `METHOD /first/two` segments for any other route.
 */
export function apiOf(method: string, path: string): string {
  for (const [m, re, name] of API_TABLE) if (m === method && re.test(path)) return name;
  return `${method} ${path.split("/").slice(0, 3).join("/")}`;
}
