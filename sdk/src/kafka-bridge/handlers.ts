/**
 * Kafka request -> Edgelog HTTP calls, for the data path and topic administration: Metadata,
 * Produce, Fetch, ListOffsets, FindCoordinator, InitProducerId, CreateTopics, DeleteTopics,
 * CreatePartitions, DescribeConfigs, IncrementalAlterConfigs. Group APIs are in groups.ts.
 *
 * Each handler takes a decoded request and answers the decoded response; per-partition and
 * per-topic failures become Kafka error codes through errors.ts, so one bad partition never
 * fails the others (as a Kafka broker answers).
 */
import {
  FETCH_MAX_MAX_BYTES,
  FETCH_MAX_MAX_RECORDS,
  FETCH_MAX_WAIT_MS_LIMIT,
  MAX_REQUEST_BYTES,
  REPLICATION_FACTORS,
  type TopicConfigs,
  type TopicSummary,
} from "../../../src/protocol/index.ts";
import type { EdgelogClient } from "../client.ts";
import { EdgelogClientError } from "../errors.ts";
import { decompress } from "./compression.ts";
import { fetchRaw, type RawFetchResult } from "./edgelog.ts";
import { KafkaError, errorMessageOf, kafkaErrorOf } from "./errors.ts";
import { ZERO_UUID } from "./wire.ts";
import type {
  FindCoordinatorRequest,
  FindCoordinatorResponse,
  InitProducerIdRequest,
  InitProducerIdResponse,
  ListOffsetsPartitionResponse,
  ListOffsetsRequest,
  ListOffsetsResponse,
  MetadataRequest,
  MetadataResponse,
  MetadataTopic,
} from "./messages/core.ts";
import { ListOffsetsTimestamp } from "./messages/core.ts";
import type { FetchPartitionResponse, FetchRequest, FetchResponse, ProducePartitionResponse, ProduceRequest, ProduceResponse } from "./messages/data.ts";
import {
  ConfigOperation,
  ConfigSource,
  ResourceType,
  type CreatePartitionsRequest,
  type CreateTopicsRequest,
  type DescribeConfigsRequest,
  type DescribeConfigsResult,
  type IncrementalAlterConfigsRequest,
  type TopicResult,
} from "./messages/topics.ts";
import { isValidKafkaTopic, type TopicNames } from "./names.ts";
import type { PartitionAppender } from "./appender.ts";
import { RecordBatchError, parseProducedBatch, toKafkaBatchesInPlace, type PreparedBatch } from "./records.ts";

/** The bridge's only broker id: it answers for every partition (node 0). */
export const BRIDGE_NODE_ID = 0;

/** What the handlers need from the bridge. */
export interface BridgeContext {
  client: EdgelogClient;
  /** Extra HTTP headers for raw calls (the client's own are private). */
  headers: Record<string, string>;
  /** fetch for the raw binary fetch (the client's own is private). */
  fetch: typeof fetch;
  names: TopicNames;
  /** Host and port answered in Metadata / FindCoordinator. */
  advertisedHost: string;
  advertisedPort: number;
  clusterId: string;
  autoCreateTopics: boolean;
  defaultPartitions: number;
  /** Bounds the decompressed produced batches held at once (none: unbounded, for handler tests). */
  decompression?: DecompressionBudget;
}

// ---------------------------------------------------------------------------------------------
// Metadata
// ---------------------------------------------------------------------------------------------

function metadataTopic(name: string | null, errorCode: number, partitions: number, topicId = ZERO_UUID): MetadataTopic {
  return {
    errorCode,
    name,
    topicId,
    isInternal: false,
    partitions: Array.from({ length: partitions }, (_, i) => ({
      errorCode: 0,
      partitionIndex: i,
      leaderId: BRIDGE_NODE_ID,
      leaderEpoch: 0,
      replicaNodes: [BRIDGE_NODE_ID],
      isrNodes: [BRIDGE_NODE_ID],
    })),
  };
}

/** The bridge's topics: Kafka name -> partition count. */
async function kafkaTopics(ctx: BridgeContext): Promise<Map<string, TopicSummary>> {
  const { topics } = await ctx.client.listTopics();
  const out = new Map<string, TopicSummary>();
  for (const t of topics) {
    const name = ctx.names.toKafka(t.name);
    if (name !== null) out.set(name, t);
  }
  return out;
}

export async function handleMetadata(ctx: BridgeContext, req: MetadataRequest): Promise<MetadataResponse> {
  const topics: MetadataTopic[] = [];
  let known: Map<string, TopicSummary>;
  try {
    known = await kafkaTopics(ctx);
  } catch (e) {
    // Edgelog unreachable: named topics get the (retriable) error; a request for every topic
    // has nowhere to put one, so it fails and the connection closes (the client reconnects).
    if (req.topics === null) throw e;
    known = new Map();
    for (const name of req.topics) topics.push(metadataTopic(name, kafkaErrorOf(e, "admin"), 0));
    for (const id of req.topicIds) topics.push(metadataTopic(null, kafkaErrorOf(e, "admin"), 0, id));
    req = { ...req, topics: [], topicIds: [] };
  }
  if (req.topics === null) {
    for (const [name, t] of [...known].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) topics.push(metadataTopic(name, 0, t.partitions, t.topicId));
  } else {
    for (const name of req.topics) {
      const t = known.get(name);
      if (t !== undefined) topics.push(metadataTopic(name, 0, t.partitions, t.topicId));
      else if (!isValidKafkaTopic(name)) topics.push(metadataTopic(name, KafkaError.INVALID_TOPIC_EXCEPTION, 0));
      else if (ctx.autoCreateTopics && req.allowAutoTopicCreation) {
        try {
          const created = await ctx.client.createTopic({ name: ctx.names.toEdgelog(name), partitions: ctx.defaultPartitions });
          topics.push(metadataTopic(name, 0, created.partitions, created.topicId));
        } catch (e) {
          // Created meanwhile by another client: answer it as it is now.
          if (e instanceof EdgelogClientError && e.code === "TOPIC_ALREADY_EXISTS") {
            const again = (await kafkaTopics(ctx)).get(name);
            topics.push(metadataTopic(name, again === undefined ? KafkaError.UNKNOWN_TOPIC_OR_PARTITION : 0, again?.partitions ?? 0, again?.topicId));
          } else topics.push(metadataTopic(name, kafkaErrorOf(e, "admin"), 0));
        }
      } else topics.push(metadataTopic(name, KafkaError.UNKNOWN_TOPIC_OR_PARTITION, 0));
    }
    // v12: topics by id (Edgelog's topic ids are UUIDs); an unknown id is UNKNOWN_TOPIC_ID.
    if (req.topicIds.length > 0) {
      const byId = new Map([...known].map(([name, t]) => [t.topicId.toLowerCase(), [name, t] as const]));
      for (const id of req.topicIds) {
        const hit = byId.get(id);
        topics.push(hit === undefined ? metadataTopic(null, KafkaError.UNKNOWN_TOPIC_ID, 0, id) : metadataTopic(hit[0], 0, hit[1].partitions, id));
      }
    }
  }
  return {
    throttleTimeMs: 0,
    brokers: [{ nodeId: BRIDGE_NODE_ID, host: ctx.advertisedHost, port: ctx.advertisedPort, rack: null }],
    clusterId: ctx.clusterId,
    controllerId: BRIDGE_NODE_ID,
    topics,
  };
}

// ---------------------------------------------------------------------------------------------
// Produce
// ---------------------------------------------------------------------------------------------

/**
 * Appends each partition's batch through Edgelog's binary produce route, partitions in
 * parallel. The answer is built only from Edgelog's answers: a partition is acknowledged with
 * an offset only after Edgelog acknowledged its append (durable commit, PROTOCOL.md).
 * acks=0 requests are still appended (with Edgelog's acks=0) but get no answer (server.ts).
 *
 * `appender` (one per connection) orders the appends of each partition across pipelined
 * produce requests and sends batches that queued up together (appender.ts).
 */
export async function handleProduce(ctx: BridgeContext, req: ProduceRequest, appender: PartitionAppender): Promise<ProduceResponse> {
  const acksError =
    req.acks !== 0 && req.acks !== 1 && req.acks !== -1 ? KafkaError.INVALID_REQUIRED_ACKS : req.transactionalId !== null ? KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED : 0;
  const topics = await Promise.all(
    req.topics.map(async (t) => ({
      name: t.name,
      partitions: await Promise.all(
        t.partitions.map(async (p): Promise<ProducePartitionResponse> => {
          const answer: ProducePartitionResponse = { index: p.index, errorCode: 0, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1, errorMessage: null };
          if (acksError !== 0)
            return {
              ...answer,
              errorCode: acksError,
              errorMessage: acksError === KafkaError.INVALID_REQUIRED_ACKS ? `acks must be -1, 0 or 1, got ${req.acks}` : "transactions are not supported",
            };
          if (!isValidKafkaTopic(t.name)) return { ...answer, errorCode: KafkaError.INVALID_TOPIC_EXCEPTION, errorMessage: `invalid topic name ${JSON.stringify(t.name)}` };
          const records = p.records;
          const budget = ctx.decompression;
          /** Bytes of `budget` this batch holds: until its append is answered. */
          let held = 0;
          const prepared = (async (): Promise<PreparedBatch> => {
            if (records === null) throw new RecordBatchError("INVALID_RECORD", "records is null");
            const batch = parseProducedBatch(records);
            if (batch.compression === 0 || budget === undefined) return { batch, records: await decompress(batch.compression, batch.payload, MAX_REQUEST_BYTES) };
            // Called synchronously in request order (as appender.append below): acquiring in
            // that order cannot deadlock (DecompressionBudget).
            await budget.acquire(MAX_REQUEST_BYTES);
            held = MAX_REQUEST_BYTES;
            const out = await decompress(batch.compression, batch.payload, MAX_REQUEST_BYTES);
            budget.release(held - out.length);
            held = out.length;
            return { batch, records: out };
          })();
          // Queued synchronously, in request order (see PartitionAppender.append).
          return appender
            .append(ctx.names.toEdgelog(t.name), p.index, req.acks === 0 ? 0 : req.acks === 1 ? 1 : "all", prepared)
            .then(
              (r): ProducePartitionResponse => (r === null ? answer : { ...answer, baseOffset: r.baseOffset, logAppendTimeMs: r.logAppendTime ?? -1, logStartOffset: r.logStartOffset }),
              (e: unknown): ProducePartitionResponse => {
                if (e instanceof RecordBatchError) return { ...answer, errorCode: KafkaError[e.kafkaError], errorMessage: e.message };
                return { ...answer, errorCode: kafkaErrorOf(e), errorMessage: errorMessageOf(e) };
              },
            )
            .finally(() => {
              budget?.release(held);
              held = 0;
            });
        }),
      ),
    })),
  );
  return { topics, throttleTimeMs: 0 };
}

/** Default of {@link DecompressionBudget}'s limit for a bridge, bytes. @default 64 MiB */
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024;

/**
 * The bytes that decompressed produced batches may hold at once over all of a bridge's
 * connections. A compressed batch reserves Edgelog's request limit (MAX_REQUEST_BYTES, the
 * most it may inflate to) before it is decompressed, keeps its decompressed size until its
 * append is answered, and waits while that does not fit: a gzip batch of 8 KiB inflates to
 * 8 MiB, so without a bound one small request of many such batches (one 330 KB request held
 * 1 GB) or several pipelined ones exhaust the bridge's memory. A Kafka broker decompresses
 * record by record; the bridge hands Edgelog whole decompressed batches.
 *
 * Waiters are served strictly first come, first served. Batches acquire in request order,
 * the order their partitions' appends are queued in, so every batch holding bytes has all the
 * batches queued before it on its partition holding bytes, uncompressed, or done: the
 * earliest holder can always be appended and release, and the waiters never deadlock.
 */
export class DecompressionBudget {
  readonly limitBytes: number;
  #held = 0;
  readonly #waiters: { bytes: number; resolve: () => void }[] = [];

  /** @param limitBytes at least MAX_REQUEST_BYTES (one batch must always fit) @throws TypeError */
  constructor(limitBytes: number) {
    if (!(Number.isInteger(limitBytes) && limitBytes >= MAX_REQUEST_BYTES)) throw new TypeError(`the decompression limit must be an integer >= ${MAX_REQUEST_BYTES}, got ${limitBytes}`);
    this.limitBytes = limitBytes;
  }

  /** Bytes held now. */
  get heldBytes(): number {
    return this.#held;
  }

  /** Holds `bytes` (at most the limit) once they fit and every earlier waiter was served. */
  acquire(bytes: number): Promise<void> {
    if (this.#waiters.length === 0 && this.#held + bytes <= this.limitBytes) {
      this.#held += bytes;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push({ bytes, resolve }));
  }

  release(bytes: number): void {
    this.#held = Math.max(0, this.#held - bytes);
    for (;;) {
      const next = this.#waiters[0];
      if (next === undefined || this.#held + next.bytes > this.limitBytes) return;
      this.#waiters.shift();
      this.#held += next.bytes;
      next.resolve();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Fetch
// ---------------------------------------------------------------------------------------------

interface PartitionFetch {
  topic: string;
  partition: number;
  fetchOffset: number;
  maxBytes: number;
  result?: RawFetchResult;
  error?: unknown;
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

async function fetchOne(ctx: BridgeContext, f: PartitionFetch, maxWaitMs: number, signal?: AbortSignal): Promise<void> {
  try {
    f.result = await fetchRaw(ctx.client, ctx.fetch, ctx.headers, ctx.names.toEdgelog(f.topic), f.partition, {
      offset: f.fetchOffset,
      maxBytes: f.maxBytes,
      maxRecords: FETCH_MAX_MAX_RECORDS,
      maxWaitMs,
      minBytes: 1,
      signal,
    });
    f.error = undefined;
  } catch (e) {
    if (signal?.aborted) return; // keep the first round's answer
    f.error = e;
  }
}

/** How long a prefetched range stays usable, ms (after that a fetch asks Edgelog afresh). */
export const PREFETCH_TTL_MS = 5_000;

/** Default memory for read-ahead across all of a bridge's connections, bytes. @default 64 MiB */
export const DEFAULT_READ_AHEAD_BYTES = 64 * 1024 * 1024;

/**
 * The bytes a bridge's read-aheads may hold at once, over all its connections: each read-ahead
 * reserves its `partition_max_bytes` (its largest possible answer) from start until it is
 * used, expires or its connection closes; a read-ahead that would pass the limit is not made
 * (that fetch then goes to Edgelog as without read-ahead). Bounds what idle or slow consumers
 * can make the bridge hold.
 */
export class ReadAheadBudget {
  readonly limitBytes: number;
  #held = 0;

  /** @param limitBytes the limit, bytes (0: no read-ahead). */
  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  /** Bytes reserved now. */
  get heldBytes(): number {
    return this.#held;
  }

  /** Reserves `bytes` when they fit under the limit. @returns whether they were reserved. */
  reserve(bytes: number): boolean {
    if (this.#held + bytes > this.limitBytes) return false;
    this.#held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.#held = Math.max(0, this.#held - bytes);
  }
}

interface Prefetched {
  fetchOffset: number;
  maxBytes: number;
  startedMs: number;
  /** Bytes reserved from the budget for this entry, released when it leaves the map. */
  reserved: number;
  done: Promise<{ result?: RawFetchResult; error?: unknown }>;
}

/**
 * Read-ahead of one connection's fetches. When a Fetch answered records of a partition, the
 * range after them (the client's next fetch offset, same `partition_max_bytes`) is fetched from
 * Edgelog at once, without waiting, while the client processes what it got: a catching-up
 * consumer then overlaps its own work with Edgelog's round trip instead of adding them up. A
 * fetch for exactly that offset and size within {@link PREFETCH_TTL_MS} uses the read-ahead
 * when it found records; an empty or failed read-ahead is ignored and the partition fetched as
 * usual (a caught-up consumer long-polls as before). At most one range per partition is held,
 * each at most its `partition_max_bytes`, all of a bridge's together within its
 * {@link ReadAheadBudget}; expired ranges are dropped at the connection's next fetch, all of them
 * when it closes. Fetches change nothing in Edgelog, so a read-ahead nobody uses costs only its
 * bytes.
 */
export class FetchPrefetch {
  readonly #entries = new Map<string, Prefetched>();
  readonly #budget: ReadAheadBudget;

  constructor(budget: ReadAheadBudget) {
    this.#budget = budget;
  }

  static #key(topic: string, partition: number): string {
    return `${topic}\u0000${partition}`;
  }

  /** Ranges held now (tests). */
  get size(): number {
    return this.#entries.size;
  }

  #remove(k: string, e: Prefetched): void {
    this.#entries.delete(k);
    this.#budget.release(e.reserved);
  }

  /** Drops every range older than {@link PREFETCH_TTL_MS}. */
  #expire(nowMs: number): void {
    for (const [k, e] of this.#entries) if (nowMs - e.startedMs > PREFETCH_TTL_MS) this.#remove(k, e);
  }

  /** The read-ahead for this fetch, if one was made for exactly it (consumed either way). */
  take(topic: string, partition: number, fetchOffset: number, maxBytes: number): Prefetched["done"] | undefined {
    const k = FetchPrefetch.#key(topic, partition);
    const e = this.#entries.get(k);
    if (e === undefined) return undefined;
    this.#remove(k, e);
    if (e.fetchOffset !== fetchOffset || e.maxBytes !== maxBytes || Date.now() - e.startedMs > PREFETCH_TTL_MS) return undefined;
    return e.done;
  }

  #set(topic: string, partition: number, entry: Omit<Prefetched, "reserved">, bytes: number): void {
    const k = FetchPrefetch.#key(topic, partition);
    const old = this.#entries.get(k);
    if (old !== undefined) this.#remove(k, old);
    this.#expire(entry.startedMs);
    if (!this.#budget.reserve(bytes)) return;
    this.#entries.set(k, { ...entry, reserved: bytes });
  }

  /** Keeps an answer already in hand (a partition left out of a response by its max_bytes), budget permitting. */
  keep(topic: string, partition: number, fetchOffset: number, maxBytes: number, result: RawFetchResult): void {
    this.#set(topic, partition, { fetchOffset, maxBytes, startedMs: Date.now(), done: Promise.resolve({ result }) }, result.body.length);
  }

  /** Starts reading `[fetchOffset, …)` ahead, budget permitting (else nothing is read). */
  start(ctx: BridgeContext, topic: string, partition: number, fetchOffset: number, maxBytes: number): void {
    const k = FetchPrefetch.#key(topic, partition);
    const old = this.#entries.get(k);
    if (old !== undefined) this.#remove(k, old);
    this.#expire(Date.now());
    if (!this.#budget.reserve(maxBytes)) return;
    const f: PartitionFetch = { topic, partition, fetchOffset, maxBytes };
    const done = fetchOne(ctx, f, 0).then(() => ({ result: f.result, error: f.error }));
    this.#entries.set(k, { fetchOffset, maxBytes, startedMs: Date.now(), reserved: maxBytes, done });
  }

  /** Drops every range (the connection closed): their bytes go back to the budget. */
  clear(): void {
    for (const [k, e] of this.#entries) this.#remove(k, e);
  }
}

/** Fetches a partition without waiting, from its read-ahead when that found records. */
async function fetchFirstRound(ctx: BridgeContext, f: PartitionFetch, prefetch: FetchPrefetch | undefined): Promise<void> {
  const ahead = prefetch?.take(f.topic, f.partition, f.fetchOffset, f.maxBytes);
  if (ahead !== undefined) {
    const got = await ahead;
    if (got.error === undefined && got.result !== undefined && got.result.body.length > 0) {
      f.result = got.result;
      return;
    }
  }
  await fetchOne(ctx, f, 0);
}

/**
 * Kafka's fetch waits up to `max_wait_ms` until `min_bytes` are available across all its
 * partitions. Mapped onto Edgelog's per-partition long-poll: one round without waiting; if it
 * found fewer than `min_bytes` and no error, a second round long-polls every partition for the
 * remaining time and answers as soon as one of them has data (the others are aborted: a
 * fetch changes nothing, so aborting it loses nothing).
 */
export async function handleFetch(ctx: BridgeContext, req: FetchRequest, prefetch?: FetchPrefetch): Promise<FetchResponse> {
  const started = Date.now();
  const parts: PartitionFetch[] = [];
  for (const t of req.topics) {
    for (const p of t.partitions) {
      parts.push({ topic: t.topic, partition: p.partition, fetchOffset: p.fetchOffset, maxBytes: clamp(p.partitionMaxBytes, 1, FETCH_MAX_MAX_BYTES) });
    }
  }
  const valid = parts.filter((f) => {
    if (isValidKafkaTopic(f.topic) && f.fetchOffset >= 0) return true;
    f.error = isValidKafkaTopic(f.topic)
      ? new EdgelogClientError("OFFSET_OUT_OF_RANGE", "negative fetch offset", { httpStatus: 0 })
      : new EdgelogClientError("INVALID_TOPIC_NAME", "invalid topic name", { httpStatus: 0 });
    return false;
  });
  await Promise.all(valid.map((f) => fetchFirstRound(ctx, f, prefetch)));
  const bytesOf = (): number => valid.reduce((n, f) => n + (f.result?.body.length ?? 0), 0);
  const waitMs = Math.min(req.maxWaitMs, FETCH_MAX_WAIT_MS_LIMIT) - (Date.now() - started);
  if (bytesOf() < Math.max(1, req.minBytes) && waitMs > 0 && valid.length > 0 && valid.every((f) => f.error === undefined)) {
    const controller = new AbortController();
    await Promise.race([
      Promise.all(
        valid.map(async (f) => {
          await fetchOne(ctx, f, Math.ceil(waitMs), controller.signal);
          if ((f.result?.body.length ?? 0) > 0 || f.error !== undefined) controller.abort();
        }),
      ),
      new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve(), { once: true })),
    ]);
    controller.abort();
  }

  // The response's max_bytes: stop adding record sets once it is reached (the first is always
  // returned whole, KIP-74); partitions left out answer no records and are fetched next time.
  let budget = req.maxBytes > 0 ? req.maxBytes : Number.MAX_SAFE_INTEGER;
  let first = true;
  const byTopic = new Map<string, FetchPartitionResponse[]>();
  for (const f of parts) {
    const list = byTopic.get(f.topic) ?? [];
    byTopic.set(f.topic, list);
    if (f.error !== undefined || f.result === undefined) {
      const details = (f.error as { details?: Record<string, unknown> } | undefined)?.details;
      const hw = typeof details?.["highWatermark"] === "number" ? details["highWatermark"] : -1;
      const lso = typeof details?.["logStartOffset"] === "number" ? details["logStartOffset"] : -1;
      list.push({
        partitionIndex: f.partition,
        errorCode: f.error === undefined ? KafkaError.UNKNOWN_SERVER_ERROR : kafkaErrorOf(f.error),
        highWatermark: hw,
        lastStableOffset: hw,
        logStartOffset: lso,
        records: null,
      });
      continue;
    }
    const r = f.result;
    let records: Uint8Array = new Uint8Array(0);
    if (r.body.length > 0 && (first || r.body.length <= budget)) {
      try {
        records = toKafkaBatchesInPlace(r.body);
      } catch {
        // A stored batch header that does not decode (the records are not read: their CRC
        // travels on to the client, records.ts).
        list.push({
          partitionIndex: f.partition,
          errorCode: KafkaError.CORRUPT_MESSAGE,
          highWatermark: r.highWatermark,
          lastStableOffset: r.highWatermark,
          logStartOffset: r.logStartOffset,
          records: null,
        });
        continue;
      }
      budget -= records.length;
      first = false;
      // Read the next range ahead while the client works through this one.
      prefetch?.start(ctx, f.topic, f.partition, r.nextOffset, f.maxBytes);
    } else if (r.body.length > 0) prefetch?.keep(f.topic, f.partition, f.fetchOffset, f.maxBytes, r);
    list.push({ partitionIndex: f.partition, errorCode: 0, highWatermark: r.highWatermark, lastStableOffset: r.highWatermark, logStartOffset: r.logStartOffset, records });
  }
  return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })) };
}

// ---------------------------------------------------------------------------------------------
// ListOffsets
// ---------------------------------------------------------------------------------------------

export async function handleListOffsets(ctx: BridgeContext, req: ListOffsetsRequest): Promise<ListOffsetsResponse> {
  const topics = await Promise.all(
    req.topics.map(async (t) => ({
      name: t.name,
      partitions: await Promise.all(
        t.partitions.map(async (p): Promise<ListOffsetsPartitionResponse> => {
          const answer: ListOffsetsPartitionResponse = { partitionIndex: p.partitionIndex, errorCode: 0, timestamp: -1, offset: -1, leaderEpoch: 0 };
          if (!isValidKafkaTopic(t.name)) return { ...answer, errorCode: KafkaError.UNKNOWN_TOPIC_OR_PARTITION };
          const spec =
            p.timestamp === ListOffsetsTimestamp.EARLIEST
              ? "earliest"
              : p.timestamp === ListOffsetsTimestamp.LATEST
                ? "latest"
                : p.timestamp === ListOffsetsTimestamp.MAX_TIMESTAMP
                  ? "max_timestamp"
                  : p.timestamp >= 0
                    ? { timestamp: p.timestamp }
                    : undefined;
          if (spec === undefined) return { ...answer, errorCode: KafkaError.INVALID_REQUEST };
          try {
            const r = await ctx.client.listOffsets(ctx.names.toEdgelog(t.name), p.partitionIndex, spec);
            return { ...answer, offset: r.offset ?? -1, timestamp: r.timestamp ?? -1 };
          } catch (e) {
            return { ...answer, errorCode: kafkaErrorOf(e) };
          }
        }),
      ),
    })),
  );
  return { throttleTimeMs: 0, topics };
}

// ---------------------------------------------------------------------------------------------
// FindCoordinator, InitProducerId
// ---------------------------------------------------------------------------------------------

/** Key types of FindCoordinator (v1+): a consumer group, a transactional id. */
const COORDINATOR_KEY_TYPE_GROUP = 0;
const COORDINATOR_KEY_TYPE_TRANSACTION = 1;

export function handleFindCoordinator(ctx: BridgeContext, req: FindCoordinatorRequest): FindCoordinatorResponse {
  if (req.keyType === COORDINATOR_KEY_TYPE_TRANSACTION) {
    return { throttleTimeMs: 0, errorCode: KafkaError.COORDINATOR_NOT_AVAILABLE, errorMessage: "transactions are not supported by Edgelog yet", nodeId: -1, host: "", port: -1 };
  }
  // Kafka answers a key type it does not serve (2, share groups, KIP-932; or unknown) with
  // INVALID_REQUEST ("Unknown coordinator type"), never with a coordinator.
  if (req.keyType !== COORDINATOR_KEY_TYPE_GROUP)
    return { throttleTimeMs: 0, errorCode: KafkaError.INVALID_REQUEST, errorMessage: `coordinator key type ${req.keyType} is not supported`, nodeId: -1, host: "", port: -1 };
  return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, nodeId: BRIDGE_NODE_ID, host: ctx.advertisedHost, port: ctx.advertisedPort };
}

export async function handleInitProducerId(ctx: BridgeContext, req: InitProducerIdRequest): Promise<InitProducerIdResponse> {
  if (req.transactionalId !== null) return { throttleTimeMs: 0, errorCode: KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producerId: -1, producerEpoch: -1 };
  try {
    const r = await ctx.client.initProducerId();
    return { throttleTimeMs: 0, errorCode: 0, producerId: r.producerId, producerEpoch: r.producerEpoch };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: kafkaErrorOf(e, "admin"), producerId: -1, producerEpoch: -1 };
  }
}

// ---------------------------------------------------------------------------------------------
// Topic administration
// ---------------------------------------------------------------------------------------------

function topicError(name: string, e: unknown): TopicResult {
  return { name, errorCode: kafkaErrorOf(e, "admin"), errorMessage: errorMessageOf(e) };
}

/**
 * CreateTopics' replication factor as Edgelog's `replication.factor` topic config: -1 is the
 * default (KIP-464: the broker's default, here 1, or the config if given); 1 or 3 (the factors
 * Edgelog has, docs/RAFT.md) is set as the config; any other value, or one that contradicts a
 * `replication.factor` config in the same request, is Kafka's INVALID_REPLICATION_FACTOR.
 * @returns the configs to create the topic with, or the refusal's message.
 */
export function withReplicationFactor(replicationFactor: number, configs: Record<string, string>): { ok: true; configs: Record<string, string> } | { ok: false; message: string } {
  if (replicationFactor === -1) return { ok: true, configs };
  if (!REPLICATION_FACTORS.includes(replicationFactor))
    return { ok: false, message: `replication factor ${replicationFactor}: Edgelog has ${REPLICATION_FACTORS.join(" or ")} (-1 = the default, 1)` };
  const given = configs["replication.factor"];
  if (given !== undefined && Number(given) !== replicationFactor) return { ok: false, message: `replication factor ${replicationFactor} contradicts the config replication.factor=${given}` };
  return { ok: true, configs: { ...configs, "replication.factor": String(replicationFactor) } };
}

/**
 * Kafka's checks of an explicit replica assignment (CreateTopics `assignments`), against the
 * bridge's one broker: an assignment excludes `numPartitions` and `replicationFactor` (both must
 * be -1: INVALID_REQUEST, as Kafka's controller answers); partition indexes must be 0..n-1, each
 * listed once, and each replica list non-empty, without duplicates, naming only node
 * {@link BRIDGE_NODE_ID} (INVALID_REPLICA_ASSIGNMENT, 39). So the one valid assignment per
 * partition is `[0]`; Edgelog's own replicas are not brokers and follow `replication.factor`.
 * @returns null when the topic's assignment (or its absence) is acceptable, else the error.
 */
export function checkReplicaAssignment(t: CreateTopicsRequest["topics"][number]): { errorCode: number; errorMessage: string } | null {
  if (t.assignments.length === 0) return null;
  if (t.numPartitions !== -1 || t.replicationFactor !== -1) {
    return { errorCode: KafkaError.INVALID_REQUEST, errorMessage: "numPartitions and replicationFactor must be -1 when assignments are given" };
  }
  const indexes = t.assignments.map((a) => a.partitionIndex).sort((a, b) => a - b);
  if (indexes.some((p, i) => p !== i)) {
    return { errorCode: KafkaError.INVALID_REPLICA_ASSIGNMENT, errorMessage: `partition indexes must be 0..${t.assignments.length - 1}, each once, got ${JSON.stringify(indexes)}` };
  }
  for (const a of t.assignments) {
    if (a.brokerIds.length === 0 || new Set(a.brokerIds).size !== a.brokerIds.length || a.brokerIds.some((id) => id !== BRIDGE_NODE_ID)) {
      return {
        errorCode: KafkaError.INVALID_REPLICA_ASSIGNMENT,
        errorMessage: `partition ${a.partitionIndex}: replicas ${JSON.stringify(a.brokerIds)}; the bridge is the only broker (node ${BRIDGE_NODE_ID}), so each partition's replicas must be [${BRIDGE_NODE_ID}]`,
      };
    }
  }
  return null;
}

export async function handleCreateTopics(ctx: BridgeContext, req: CreateTopicsRequest): Promise<{ throttleTimeMs: number; topics: TopicResult[] }> {
  const known = req.validateOnly ? await kafkaTopics(ctx) : undefined;
  const topics = await Promise.all(
    req.topics.map(async (t): Promise<TopicResult> => {
      if (!isValidKafkaTopic(t.name)) return { name: t.name, errorCode: KafkaError.INVALID_TOPIC_EXCEPTION, errorMessage: `invalid topic name ${JSON.stringify(t.name)}` };
      const refused = checkReplicaAssignment(t);
      if (refused !== null) return { name: t.name, ...refused };
      const partitions = t.assignments.length > 0 ? t.assignments.length : t.numPartitions === -1 ? ctx.defaultPartitions : t.numPartitions;
      const given: Record<string, string> = {};
      for (const c of t.configs) {
        // Kafka's controller: "Null value not supported for topic configs" (INVALID_CONFIG).
        if (c.value === null) return { name: t.name, errorCode: KafkaError.INVALID_CONFIG, errorMessage: `null value not supported for topic config ${c.name}` };
        given[c.name] = c.value;
      }
      const rf = withReplicationFactor(t.replicationFactor, given);
      if (!rf.ok) return { name: t.name, errorCode: KafkaError.INVALID_REPLICATION_FACTOR, errorMessage: rf.message };
      const configs = rf.configs;
      if (known !== undefined) {
        // Edgelog has no dry run: check what can be checked without creating.
        if (known.has(t.name)) return { name: t.name, errorCode: KafkaError.TOPIC_ALREADY_EXISTS, errorMessage: `topic ${t.name} already exists` };
        if (!(Number.isInteger(partitions) && partitions >= 1)) return { name: t.name, errorCode: KafkaError.INVALID_PARTITIONS, errorMessage: `invalid partition count ${partitions}` };
        return { name: t.name, errorCode: 0, errorMessage: null };
      }
      try {
        await ctx.client.createTopic({ name: ctx.names.toEdgelog(t.name), partitions, configs });
        return { name: t.name, errorCode: 0, errorMessage: null };
      } catch (e) {
        return topicError(t.name, e);
      }
    }),
  );
  return { throttleTimeMs: 0, topics };
}

export async function handleDeleteTopics(ctx: BridgeContext, req: { topicNames: string[] }): Promise<{ throttleTimeMs: number; topics: { name: string; errorCode: number }[] }> {
  const topics = await Promise.all(
    req.topicNames.map(async (name) => {
      if (!isValidKafkaTopic(name)) return { name, errorCode: KafkaError.UNKNOWN_TOPIC_OR_PARTITION };
      try {
        await ctx.client.deleteTopic(ctx.names.toEdgelog(name));
        return { name, errorCode: 0 };
      } catch (e) {
        return { name, errorCode: kafkaErrorOf(e, "admin") };
      }
    }),
  );
  return { throttleTimeMs: 0, topics };
}

export async function handleCreatePartitions(ctx: BridgeContext, req: CreatePartitionsRequest): Promise<{ throttleTimeMs: number; results: TopicResult[] }> {
  const results = await Promise.all(
    req.topics.map(async (t): Promise<TopicResult> => {
      if (!isValidKafkaTopic(t.name)) return { name: t.name, errorCode: KafkaError.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null };
      try {
        const current = await ctx.client.describeTopic(ctx.names.toEdgelog(t.name));
        if (t.count === current.partitions) return { name: t.name, errorCode: KafkaError.INVALID_PARTITIONS, errorMessage: `topic already has ${t.count} partitions` };
        if (req.validateOnly) {
          if (t.count < current.partitions)
            return { name: t.name, errorCode: KafkaError.INVALID_PARTITIONS, errorMessage: `the partition count can only be increased (now ${current.partitions})` };
          return { name: t.name, errorCode: 0, errorMessage: null };
        }
        await ctx.client.alterTopic(ctx.names.toEdgelog(t.name), { partitions: t.count });
        return { name: t.name, errorCode: 0, errorMessage: null };
      } catch (e) {
        return topicError(t.name, e);
      }
    }),
  );
  return { throttleTimeMs: 0, results };
}

/** Kafka ConfigType ids (DescribeConfigs v3+). */
const CONFIG_TYPE = { BOOLEAN: 1, STRING: 2, INT: 3, LONG: 5, DOUBLE: 6, LIST: 7 } as const;
const CONFIG_TYPES: Record<Exclude<keyof TopicConfigs, "policies">, number> = {
  "max.message.bytes": CONFIG_TYPE.INT,
  "message.timestamp.type": CONFIG_TYPE.STRING,
  "retention.ms": CONFIG_TYPE.LONG,
  "retention.bytes": CONFIG_TYPE.LONG,
  "cleanup.policy": CONFIG_TYPE.LIST,
  "segment.bytes": CONFIG_TYPE.INT,
  "producer.id.expiration.ms": CONFIG_TYPE.INT,
  "segment.ms": CONFIG_TYPE.LONG,
  "delete.retention.ms": CONFIG_TYPE.LONG,
  "min.compaction.lag.ms": CONFIG_TYPE.LONG,
  "max.compaction.lag.ms": CONFIG_TYPE.LONG,
  "min.cleanable.dirty.ratio": CONFIG_TYPE.DOUBLE,
  "message.timestamp.before.max.ms": CONFIG_TYPE.LONG,
  "message.timestamp.after.max.ms": CONFIG_TYPE.LONG,
  "local.retention.ms": CONFIG_TYPE.LONG,
  "local.retention.bytes": CONFIG_TYPE.LONG,
  "remote.storage.enable": CONFIG_TYPE.BOOLEAN,
  "replication.factor": CONFIG_TYPE.INT,
  "min.insync.replicas": CONFIG_TYPE.INT,
  "replica.locations": CONFIG_TYPE.LIST,
};

export async function handleDescribeConfigs(ctx: BridgeContext, req: DescribeConfigsRequest): Promise<{ throttleTimeMs: number; results: DescribeConfigsResult[] }> {
  const results = await Promise.all(
    req.resources.map(async (res): Promise<DescribeConfigsResult> => {
      const base = { errorCode: 0, errorMessage: null, resourceType: res.resourceType, resourceName: res.resourceName, configs: [] };
      if (res.resourceType === ResourceType.BROKER) return base; // no broker configs to show
      if (res.resourceType !== ResourceType.TOPIC)
        return { ...base, errorCode: KafkaError.INVALID_REQUEST, errorMessage: `resource type ${res.resourceType} is not supported (topics only)` };
      if (!isValidKafkaTopic(res.resourceName)) return { ...base, errorCode: KafkaError.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null };
      try {
        const t = await ctx.client.describeTopic(ctx.names.toEdgelog(res.resourceName));
        const wanted = res.configurationKeys === null ? undefined : new Set(res.configurationKeys);
        const configs = (Object.keys(t.configs) as (keyof TopicConfigs)[])
          .filter((name): name is Exclude<keyof TopicConfigs, "policies"> => name !== "policies" && (wanted === undefined || wanted.has(name)))
          .map((name) => ({
            name,
            value: String(t.configs[name]),
            readOnly: false,
            isDefault: false,
            configSource: ConfigSource.DYNAMIC_TOPIC_CONFIG,
            isSensitive: false,
            configType: CONFIG_TYPES[name] ?? 0,
          }));
        return { ...base, configs };
      } catch (e) {
        return { ...base, errorCode: kafkaErrorOf(e, "admin"), errorMessage: errorMessageOf(e) };
      }
    }),
  );
  return { throttleTimeMs: 0, results };
}

/**
 * SET changes a topic config; DELETE resets it to Edgelog's default; APPEND / SUBTRACT (list
 * configs) are refused. Every change of one resource is one Edgelog PATCH: all or none.
 */
export async function handleIncrementalAlterConfigs(
  ctx: BridgeContext,
  req: IncrementalAlterConfigsRequest,
  defaults: TopicConfigs,
): Promise<{ throttleTimeMs: number; responses: { errorCode: number; errorMessage: string | null; resourceType: number; resourceName: string }[] }> {
  const responses = await Promise.all(
    req.resources.map(async (res) => {
      const base = { errorCode: 0, errorMessage: null as string | null, resourceType: res.resourceType, resourceName: res.resourceName };
      if (res.resourceType !== ResourceType.TOPIC)
        return { ...base, errorCode: KafkaError.INVALID_REQUEST, errorMessage: `resource type ${res.resourceType} is not supported (topics only)` };
      if (!isValidKafkaTopic(res.resourceName)) return { ...base, errorCode: KafkaError.UNKNOWN_TOPIC_OR_PARTITION };
      const configs: Record<string, string | number> = {};
      for (const c of res.configs) {
        if (c.operation === ConfigOperation.SET && c.value !== null) configs[c.name] = c.value;
        else if (c.operation === ConfigOperation.DELETE) {
          const d = (defaults as unknown as Record<string, string | number>)[c.name];
          if (d === undefined) return { ...base, errorCode: KafkaError.INVALID_CONFIG, errorMessage: `unknown config ${c.name}` };
          configs[c.name] = d;
        } else return { ...base, errorCode: KafkaError.INVALID_CONFIG, errorMessage: `config operation ${c.operation} on ${c.name} is not supported (SET and DELETE only)` };
      }
      try {
        if (req.validateOnly) await ctx.client.describeTopic(ctx.names.toEdgelog(res.resourceName));
        else await ctx.client.alterTopic(ctx.names.toEdgelog(res.resourceName), { configs });
        return base;
      } catch (e) {
        return { ...base, errorCode: kafkaErrorOf(e, "admin"), errorMessage: errorMessageOf(e) };
      }
    }),
  );
  return { throttleTimeMs: 0, responses };
}
