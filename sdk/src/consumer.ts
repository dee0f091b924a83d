/**
 * The assign-based consumer (Kafka's `KafkaConsumer.assign` model; no consumer group): the
 * application chooses partitions and positions, poll() long-polls every assigned partition
 * in parallel and returns as soon as any has records.
 *
 * Fetches run ahead of poll(): a partition's fetch still in flight when poll() returns (another
 * partition answered first) delivers its records to a later poll(), as Kafka's fetcher does.
 * Order is per partition; records of different partitions interleave.
 */
import {
  AUTO_OFFSET_RESETS,
  FETCH_DEFAULT_MAX_BYTES,
  FETCH_DEFAULT_MAX_RECORDS,
  FETCH_MAX_MAX_BYTES,
  FETCH_MAX_MAX_RECORDS,
  FETCH_MAX_WAIT_MS_LIMIT,
  type AutoOffsetReset,
} from "../../src/protocol/index.ts";
import type { LogRecord, RecordHeader } from "../../src/codec/index.ts";
import type { EdgelogClient, FetchResult, OffsetSpec } from "./client.ts";
import { EdgelogClientError, protocolViolation } from "./errors.ts";
import { backoffMs, withRetries } from "./retry.ts";
import type { InstrumentationEvents } from "./instrumentation.ts";

export interface TopicPartition {
  /** `name` or `tenant/namespace/name`, as given to assign(). */
  topic: string;
  partition: number;
}

export interface TopicPartitionOffset extends TopicPartition {
  offset: number;
}

/** A consumed record. Bytes are `Uint8Array | null` (null distinct from empty); see toText / toJson. */
export interface ConsumerRecord {
  topic: string;
  partition: number;
  offset: number;
  /** ms since the epoch (CreateTime or LogAppendTime, per the topic's message.timestamp.type). */
  timestamp: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  /** In produce order, duplicates kept. */
  headers: RecordHeader[];
}

/**
 * Where to start when a partition has no position, or its position is out of range
 * (auto.offset.reset, the shared AutoOffsetReset): `earliest` = log start offset,
 * `latest` = log end offset, `none` = poll() rejects (OFFSET_OUT_OF_RANGE from the server, or
 * an Error when no position was ever set).
 */
export type OffsetResetPolicy = AutoOffsetReset;

/** Consumer settings (Kafka consumer config names in parentheses). */
export interface ConsumerOptions {
  /** (auto.offset.reset) @default "latest" */
  autoOffsetReset?: OffsetResetPolicy;
  /** Default long-poll of poll(), in ms (fetch.max.wait.ms). @default 500 */
  maxWaitMs?: number;
  /** Default most records one poll() returns (max.poll.records). @default 500 */
  maxRecords?: number;
  /** Default stored bytes per partition fetch (max.partition.fetch.bytes); the first batch always comes (KIP-74). @default 1048576 */
  maxBytes?: number;
  /** Consecutive retriable failures of one partition's fetch before poll() rejects with the error. @default 5 */
  retries?: number;
  /** First backoff after a retriable fetch failure, in ms; doubles, ±20% jitter. @default 100 */
  retryBackoffMs?: number;
  /** @default 1000 */
  maxRetryBackoffMs?: number;
}

/** Options of one {@link Consumer.poll}. */
export interface PollOptions {
  /** How long to wait for records, in ms (at most 60000). @default ConsumerOptions.maxWaitMs */
  maxWaitMs?: number;
  /** Most records returned (at most 10000). @default ConsumerOptions.maxRecords */
  maxRecords?: number;
  /** Stored bytes per partition fetch (at most 16 MiB). @default ConsumerOptions.maxBytes */
  maxBytes?: number;
}

export const CONSUMER_DEFAULTS = {
  autoOffsetReset: "latest",
  maxWaitMs: 500,
  maxRecords: FETCH_DEFAULT_MAX_RECORDS,
  maxBytes: FETCH_DEFAULT_MAX_BYTES,
  retries: 5,
  retryBackoffMs: 100,
  maxRetryBackoffMs: 1000,
} as const satisfies Required<ConsumerOptions>;

interface PartitionState {
  readonly tp: TopicPartition;
  /** Next offset to return; undefined until reset by the policy. */
  position: number | undefined;
  /** Bumped by every seek: answers of older fetches are dropped. */
  epoch: number;
  /** Fetched records not yet returned (offsets >= position). */
  buffer: LogRecord[];
  /** nextOffset of the fetch that filled `buffer`. */
  bufferNextOffset: number;
  /** The fetch in flight: the poll it belongs to, and when the server's long-poll of it ends (ms). */
  inFlight: { abort: AbortController; pollId: number; waitEndsAtMs: number } | undefined;
  highWatermark: number | undefined;
  logStartOffset: number | undefined;
  failures: number;
  retryAtMs: number;
  error: unknown;
  /** Id of the last poll() that started a fetch of this partition at its current position. */
  fetchedInPoll: number;
}

/** Key of a topic-partition in maps. */
function tpKey(tp: TopicPartition): string {
  return `${tp.partition}/${tp.topic}`;
}

/**
 * Reads assigned partitions. Not safe for concurrent poll() calls (like Kafka's consumer):
 * await one before starting the next.
 */
export class Consumer {
  readonly #client: EdgelogClient;
  readonly #opts: Required<ConsumerOptions>;
  #states = new Map<string, PartitionState>();
  #wake: (() => void) | undefined;
  #pollCount = 0;
  /** Round-robin start of poll()'s drain, so one busy partition cannot starve the others. */
  #drainStart = 0;

  /** @throws RangeError for an out-of-range option. */
  constructor(client: EdgelogClient, options: ConsumerOptions = {}) {
    this.#client = client;
    const opts: Required<ConsumerOptions> = { ...CONSUMER_DEFAULTS };
    for (const [k, v] of Object.entries(options)) if (v !== undefined) (opts as Record<string, unknown>)[k] = v;
    checkPoll(opts);
    if (!AUTO_OFFSET_RESETS.includes(opts.autoOffsetReset)) throw new RangeError(`autoOffsetReset must be earliest | latest | none`);
    this.#opts = opts;
  }

  /**
   * Replaces the assignment. Positions of partitions that stay assigned are kept; new ones
   * start per `autoOffsetReset` unless seek() is called.
   * @throws RangeError for a negative or non-integer partition.
   */
  assign(partitions: readonly TopicPartition[]): void {
    const next = new Map<string, PartitionState>();
    for (const tp of partitions) {
      if (!(Number.isInteger(tp.partition) && tp.partition >= 0)) throw new RangeError(`partition must be a non-negative integer, got ${tp.partition}`);
      const key = tpKey(tp);
      next.set(key, this.#states.get(key) ?? newState({ topic: tp.topic, partition: tp.partition }));
    }
    for (const [key, st] of this.#states) if (!next.has(key)) st.inFlight?.abort.abort();
    this.#states = next;
  }

  /** The assigned partitions, in assign() order. */
  assignment(): TopicPartition[] {
    return [...this.#states.values()].map((s) => ({ ...s.tp }));
  }

  /**
   * Sets the next offset poll() returns for an assigned partition (may be below log start or
   * above log end: the next fetch then applies `autoOffsetReset`).
   * @throws Error if the partition is not assigned; RangeError for a negative offset.
   */
  seek(target: TopicPartitionOffset): void {
    if (!(Number.isSafeInteger(target.offset) && target.offset >= 0)) throw new RangeError(`offset must be a non-negative integer, got ${target.offset}`);
    this.#setPosition(this.#state(target), target.offset);
  }

  /** Seeks to the log start offset (ListOffsets `earliest`). @default partitions: all assigned */
  async seekToBeginning(partitions?: readonly TopicPartition[]): Promise<void> {
    await this.#seekAll(partitions, "earliest");
  }

  /** Seeks to the log end offset, i.e. only new records (ListOffsets `latest`). @default partitions: all assigned */
  async seekToEnd(partitions?: readonly TopicPartition[]): Promise<void> {
    await this.#seekAll(partitions, "latest");
  }

  /**
   * Seeks to the first record whose timestamp is >= `timestampMs` (Kafka offsetsForTimes),
   * or to the log end offset when there is none.
   * @returns the new position. Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_OFFSET.
   */
  async seekToTimestamp(topic: string, partition: number, timestampMs: number): Promise<number> {
    const st = this.#state({ topic, partition });
    const epoch = st.epoch;
    const found = await this.#listOffset(st, { timestamp: timestampMs });
    const offset = found ?? (await this.#listOffset(st, "latest"));
    if (offset === null) throw protocolViolation(200, "ListOffsets latest answered null");
    if (st.epoch === epoch) this.#setPosition(st, offset);
    return offset;
  }

  /**
   * The next offset poll() will return for the partition; resolves `autoOffsetReset` first when
   * no position is set.
   * @throws Error if not assigned, or when the policy is `none` and no position is set.
   */
  async position(tp: TopicPartition): Promise<number> {
    const st = this.#state(tp);
    if (st.position === undefined) await this.#reset(st);
    return st.position!;
  }

  /** High watermark seen by the last fetch of the partition (undefined before the first). `position >= highWatermark` means caught up. */
  highWatermark(tp: TopicPartition): number | undefined {
    return this.#state(tp).highWatermark;
  }

  /** Log start offset seen by the last fetch of the partition. */
  logStartOffset(tp: TopicPartition): number | undefined {
    return this.#state(tp).logStartOffset;
  }

  /**
   * Waits up to `maxWaitMs` for records of any assigned partition and returns at most
   * `maxRecords` of them (per partition in offset order), advancing positions. Returns [] when
   * nothing arrived in time. Every assigned partition's fetch answers within the call (one this
   * poll started, or one an earlier poll left in flight whose long-poll ends by this deadline),
   * so a loop of `poll({maxWaitMs: 0})` that answers [] has caught up. Partitions are fetched in
   * parallel, each with its own long-poll.
   *
   * Errors: OFFSET_OUT_OF_RANGE with `autoOffsetReset: "none"`, UNKNOWN_TOPIC_OR_PARTITION and
   * other non-retriable codes at once; retriable codes (UNAVAILABLE, REQUEST_TIMED_OUT,
   * INTERNAL) after `retries` consecutive failures of a partition.
   */
  async poll(options: PollOptions = {}): Promise<ConsumerRecord[]> {
    const opts = {
      maxWaitMs: options.maxWaitMs ?? this.#opts.maxWaitMs,
      maxRecords: options.maxRecords ?? this.#opts.maxRecords,
      maxBytes: options.maxBytes ?? this.#opts.maxBytes,
    };
    checkPoll(opts);
    const pollId = ++this.#pollCount;
    const deadlineMs = Date.now() + opts.maxWaitMs;
    const states = [...this.#states.values()];
    await Promise.all(states.filter((s) => s.position === undefined).map((s) => this.#reset(s)));
    // A fetch an earlier poll left in flight is this poll's fetch of that partition when its
    // long-poll ends by this poll's deadline: wait for its answer like for our own. Else poll(0)
    // right after a poll that returned early (another partition had records) would answer []
    // without having asked the server, and "[] from poll(0)" would not mean "caught up".
    for (const st of states) {
      if (st.inFlight !== undefined && st.inFlight.pollId !== pollId && st.inFlight.waitEndsAtMs <= deadlineMs) {
        st.inFlight.pollId = pollId;
        st.fetchedInPoll = pollId;
      }
    }

    for (;;) {
      const records = this.#drain(states, opts.maxRecords);
      if (records.length > 0) return records;
      for (const st of states) {
        if (st.error !== undefined) {
          const e = st.error;
          st.error = undefined;
          throw e;
        }
      }
      const nowMs = Date.now();
      for (const st of states) {
        // Each partition is fetched at least once per poll (so maxWaitMs 0 still asks the
        // server), and again only while time is left.
        const due = st.fetchedInPoll !== pollId || nowMs < deadlineMs;
        if (due && st.inFlight === undefined && st.position !== undefined && st.retryAtMs <= nowMs) {
          st.fetchedInPoll = pollId;
          this.#startFetch(st, pollId, { ...opts, maxWaitMs: Math.max(0, deadlineMs - nowMs) });
        }
      }
      // Done when the deadline passed and every fetch this poll started has answered.
      const ownInFlight = states.some((s) => s.inFlight?.pollId === pollId);
      if (nowMs >= deadlineMs && !ownInFlight) return [];
      let waitMs = ownInFlight ? Number.POSITIVE_INFINITY : deadlineMs - nowMs;
      for (const st of states) if (st.inFlight === undefined && st.retryAtMs > nowMs) waitMs = Math.min(waitMs, st.retryAtMs - nowMs);
      await this.#waitForChange(Math.max(0, Math.min(waitMs, deadlineMs - nowMs + this.#client.requestTimeoutMs)));
    }
  }

  /**
   * Listens to an instrumentation event of this client (src/instrumentation.ts), as kafkajs's
   * `producer.on(producer.events.REQUEST, ...)`: `request`, `request_retry`, `throttle`,
   * `batch`, `fetch`. The listener sees the events of everything built on the same client.
   * @returns the function that removes the listener
   */
  on<K extends keyof InstrumentationEvents>(event: K, listener: InstrumentationEvents[K]): () => void {
    return this.#client.on(event, listener);
  }

  /** Stops all fetches and drops the assignment. */
  close(): void {
    this.assign([]);
  }

  // ---- internals ----

  #state(tp: TopicPartition): PartitionState {
    const st = this.#states.get(tpKey(tp));
    if (st === undefined) throw new Error(`Partition ${tp.topic}[${tp.partition}] is not assigned.`);
    return st;
  }

  #setPosition(st: PartitionState, offset: number): void {
    st.position = offset;
    st.epoch++;
    st.buffer = [];
    st.error = undefined;
    st.failures = 0;
    st.retryAtMs = 0;
    st.fetchedInPoll = 0;
    if (st.inFlight !== undefined) {
      st.inFlight.abort.abort();
      st.inFlight = undefined;
    }
  }

  async #seekAll(partitions: readonly TopicPartition[] | undefined, spec: "earliest" | "latest"): Promise<void> {
    const states = partitions === undefined ? [...this.#states.values()] : partitions.map((tp) => this.#state(tp));
    await Promise.all(
      states.map(async (st) => {
        const epoch = st.epoch;
        const offset = await this.#listOffset(st, spec);
        if (offset === null) throw protocolViolation(200, `ListOffsets ${spec} answered null`);
        if (st.epoch === epoch) this.#setPosition(st, offset);
      }),
    );
  }

  /** Applies autoOffsetReset to a partition without a valid position. */
  async #reset(st: PartitionState, cause?: unknown): Promise<void> {
    const policy = this.#opts.autoOffsetReset;
    if (policy === "none") {
      // Kafka's NoOffsetForPartitionException: a usage error, not a server answer.
      throw cause ?? new Error(`No position for ${st.tp.topic}[${st.tp.partition}] and autoOffsetReset is "none": seek() first.`);
    }
    const epoch = st.epoch;
    const offset = await this.#listOffset(st, policy);
    if (offset === null) throw protocolViolation(200, `ListOffsets ${policy} answered null`);
    if (st.epoch === epoch) this.#setPosition(st, offset);
  }

  /** ListOffsets with retries on retriable errors. */
  async #listOffset(st: PartitionState, spec: OffsetSpec): Promise<number | null> {
    const res = await withRetries(
      () => this.#client.listOffsets(st.tp.topic, st.tp.partition, spec),
      this.#opts,
      (attempt, delayMs, e) =>
        this.#client.instrumentation.emit("request_retry", {
          api: "ListOffsets",
          topic: st.tp.topic,
          partition: st.tp.partition,
          attempt,
          delayMs,
          code: e instanceof EdgelogClientError ? e.code : "UNAVAILABLE",
        }),
    );
    return res.offset;
  }

  #startFetch(st: PartitionState, pollId: number, opts: Required<PollOptions>): void {
    const abort = new AbortController();
    const epoch = st.epoch;
    const offset = st.position!;
    st.inFlight = { abort, pollId, waitEndsAtMs: Date.now() + opts.maxWaitMs };
    const done = (apply: () => void | Promise<void>): Promise<void> | void => {
      if (st.epoch !== epoch || st.inFlight?.abort !== abort) return; // seeked or unassigned meanwhile
      st.inFlight = undefined;
      return apply();
    };
    this.#client
      .fetchRecords(st.tp.topic, st.tp.partition, { offset, maxWaitMs: opts.maxWaitMs, maxRecords: opts.maxRecords, maxBytes: opts.maxBytes, signal: abort.signal })
      .then(
        (res: FetchResult) =>
          done(() => {
            st.failures = 0;
            st.highWatermark = res.highWatermark;
            st.logStartOffset = res.logStartOffset;
            st.buffer = res.records;
            st.bufferNextOffset = res.nextOffset;
            if (res.records.length === 0) st.position = Math.max(offset, res.nextOffset);
          }),
        (e: unknown) =>
          done(async () => {
            if (abort.signal.aborted) return;
            if (e instanceof EdgelogClientError && e.code === "OFFSET_OUT_OF_RANGE" && this.#opts.autoOffsetReset !== "none") {
              const details = e.details ?? {};
              if (typeof details["highWatermark"] === "number") st.highWatermark = details["highWatermark"];
              if (typeof details["logStartOffset"] === "number") st.logStartOffset = details["logStartOffset"];
              st.position = undefined;
              try {
                await this.#reset(st, e);
              } catch (resetError) {
                st.error = resetError;
              }
            } else if (e instanceof EdgelogClientError && e.retriable && st.failures < this.#opts.retries) {
              const delayMs = backoffMs(st.failures, this.#opts.retryBackoffMs, this.#opts.maxRetryBackoffMs);
              st.retryAtMs = Date.now() + delayMs;
              st.failures++;
              this.#client.instrumentation.emit("request_retry", { api: "Fetch", topic: st.tp.topic, partition: st.tp.partition, attempt: st.failures, delayMs, code: e.code });
            } else {
              st.failures = 0;
              st.error = e;
            }
          }),
      )
      .finally(() => this.#notify());
  }

  /** Takes up to `maxRecords` buffered records, round-robin over partitions. */
  #drain(states: PartitionState[], maxRecords: number): ConsumerRecord[] {
    const out: ConsumerRecord[] = [];
    const n = states.length;
    for (let i = 0; i < n && out.length < maxRecords; i++) {
      const st = states[(this.#drainStart + i) % n]!;
      if (st.buffer.length === 0) continue;
      const take = st.buffer.splice(0, maxRecords - out.length);
      for (const r of take) {
        out.push({ topic: st.tp.topic, partition: st.tp.partition, offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value, headers: r.headers });
      }
      st.position = st.buffer.length > 0 ? take[take.length - 1]!.offset + 1 : Math.max(take[take.length - 1]!.offset + 1, st.bufferNextOffset);
    }
    if (out.length > 0) this.#drainStart = (this.#drainStart + 1) % Math.max(1, n);
    return out;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #waitForChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(() => this.#notify(), ms) : undefined;
      this.#wake = () => {
        if (timer !== undefined) clearTimeout(timer);
        resolve();
      };
    });
  }
}

function newState(tp: TopicPartition): PartitionState {
  return {
    tp,
    position: undefined,
    epoch: 0,
    buffer: [],
    bufferNextOffset: 0,
    inFlight: undefined,
    highWatermark: undefined,
    logStartOffset: undefined,
    failures: 0,
    retryAtMs: 0,
    error: undefined,
    fetchedInPoll: 0,
  };
}

function checkPoll(o: { maxWaitMs: number; maxRecords: number; maxBytes: number }): void {
  checkInt("maxWaitMs", o.maxWaitMs, 0, FETCH_MAX_WAIT_MS_LIMIT);
  checkInt("maxRecords", o.maxRecords, 1, FETCH_MAX_MAX_RECORDS);
  checkInt("maxBytes", o.maxBytes, 1, FETCH_MAX_MAX_BYTES);
}

function checkInt(name: string, v: number, min: number, max: number): void {
  if (!(Number.isInteger(v) && v >= min && v <= max)) throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${v}`);
}
