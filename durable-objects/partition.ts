/**
 * PartitionDO: one topic-partition's log, a thin shell around src/partition/core.ts.
 *
 * Storage (SQLite, migration 1):
 * - meta(key, value): topic, topic_id, partition, configs (JSON), log_start_offset,
 *   log_end_offset, leader_epoch, stored_bytes, state ("active").
 * - batches: one row per stored record batch; `data` is the encoded batch with its header
 *   rewritten on append (baseOffset, leader epoch, LogAppendTime), so a fetch serves the
 *   bytes as stored. `running_max_timestamp` is the max timestamp over this batch and every
 *   earlier one: monotone in offset, so "first offset with timestamp >= T" is an index seek
 *   plus one batch scan (docs/ARCHITECTURE.md).
 * - producers / producer_batches: idempotent-producer state, the last 5 requests per producer.
 *
 * Concurrency: `append` never awaits, so appends run one at a time without locks, and each is
 * one `transactionSync`. The output gate holds the answer until that write is durable.
 *
 * Append cost (the produce hot path): one scan of each batch (framing + records, no record
 * objects; the CRC only when the caller has not verified it), then 2 SQL statements for a
 * non-idempotent request (INSERT the batch row, one UPDATE of the meta rows) and 4-5 for an
 * idempotent one: producer state is served from memory after its first read.
 */
import {
  ATTR_LOG_APPEND_TIME,
  CodecError,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  decodeBatch,
  encodeBatch,
  rewriteBatchHeader,
  scanBatch,
  splitRecords,
  type BatchHeader,
  type BatchScan,
} from "../src/codec/index.ts";
import type { Env } from "../src/env.ts";
import {
  applyProducerAppend,
  checkFetchOffset,
  checkSequence,
  firstAtOrAfterTimestamp,
  nextRunningMaxTimestamp,
  planFetch,
  validateAppend,
  type ListOffsetsSpec,
  type ProducerBatchEntry,
  type ProducerState,
  type StoredBatchRef,
} from "../src/partition/core.ts";
import type { AppendOk, AppendRequest, FetchOk, FetchRequest, ListOffsetsOk, PartitionInit, PartitionRpc } from "../src/partition/rpc.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../src/protocol/errors.ts";
import { FETCH_MAX_WAIT_MS_LIMIT, MAX_APPEND_GROUP_REQUESTS, MAX_STORED_BATCH_BYTES } from "../src/protocol/limits.ts";
import type { PartitionDescription, TopicConfigs } from "../src/protocol/types.ts";
import { SqliteDurableObject, blob, type Migration, type RoomSchema } from "./base.ts";
import { PartitionStreams, STREAM_MIGRATION } from "./partition-streams.ts";
import type {
  AppendStreamOk,
  AppendStreamRequest,
  BoundaryValuesRequest,
  CreateStreamOk,
  CreateStreamRequest,
  DeleteStreamOk,
  ForkSourceOk,
  ForkSourceRequest,
  HeadStreamOk,
  ReadRangeOk,
  ReadRangeRequest,
  ReadStreamOk,
  ReadStreamRequest,
  StreamRpc,
} from "../src/streams/rpc.ts";

const LOG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "log",
    up(sql) {
      sql.run(`
        CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
        CREATE TABLE batches (
          base_offset INTEGER PRIMARY KEY,
          last_offset INTEGER NOT NULL,
          record_count INTEGER NOT NULL,
          producer_id INTEGER NOT NULL,
          producer_epoch INTEGER NOT NULL,
          base_sequence INTEGER NOT NULL,
          partition_leader_epoch INTEGER NOT NULL,
          attributes INTEGER NOT NULL,
          base_timestamp INTEGER NOT NULL,
          max_timestamp INTEGER NOT NULL,
          running_max_timestamp INTEGER NOT NULL,
          size_bytes INTEGER NOT NULL,
          data BLOB NOT NULL
        );
        CREATE INDEX batches_by_running_max_timestamp ON batches (running_max_timestamp, base_offset);
        CREATE TABLE producers (
          producer_id INTEGER PRIMARY KEY,
          producer_epoch INTEGER NOT NULL,
          last_sequence INTEGER NOT NULL
        );
        CREATE TABLE producer_batches (
          producer_id INTEGER NOT NULL,
          producer_epoch INTEGER NOT NULL,
          base_sequence INTEGER NOT NULL,
          last_sequence INTEGER NOT NULL,
          first_offset INTEGER NOT NULL,
          last_offset INTEGER NOT NULL,
          PRIMARY KEY (producer_id, first_offset)
        ) WITHOUT ROWID;
      `);
    },
  },
];
// Rooms (issue 9 refines them): the log, and the Durable Streams state of a stream's
// partition (docs/DURABLE-STREAMS.md). Legacy `_schema` v1 had the log, v2 added the streams.
const ROOMS: readonly RoomSchema[] = [
  { room: "log", migrations: LOG_MIGRATIONS },
  { room: "streams", migrations: [{ ...STREAM_MIGRATION, version: 1 }] },
];
const adoptLegacy = (v: number): Record<string, number> => (v >= 2 ? { log: 1, streams: 1 } : { log: 1 });

/** In-memory copy of the meta table of an initialised partition (loaded once at start-up). */
interface PartitionState {
  topic: string;
  topicId: string;
  partition: number;
  configs: TopicConfigs;
  logStartOffset: number;
  logEndOffset: number;
  leaderEpoch: number;
  storedBytes: number;
  /** Running max timestamp of the last batch; -1 for an empty log. */
  runningMaxTimestamp: number;
}

type BatchRow = {
  base_offset: number;
  last_offset: number;
  size_bytes: number;
  data: ArrayBuffer;
};

/**
 * Most producer states kept in memory (KIP-98 state; SQLite stays the source of truth, an
 * evicted entry is read again on its next use). A state is a few numbers plus its last
 * PRODUCER_BATCHES_KEPT requests.
 */
const PRODUCER_CACHE_MAX_ENTRIES = 10_000;

/** A batch ready to be inserted. */
interface PendingRow {
  header: BatchHeader;
  maxTimestamp: number;
  runningMaxTimestamp: number;
  bytes: Uint8Array;
}

export class PartitionDO extends SqliteDurableObject<Env> implements PartitionRpc, StreamRpc {
  /** null: never initialised (or destroyed): every call answers UNKNOWN_TOPIC_OR_PARTITION. */
  #state: PartitionState | null = null;
  #destroyed = false;
  /** Long-poll fetches waiting for the next append (resolved by the append itself). */
  readonly #waiters = new Set<() => void>();
  /**
   * Producer states as committed (rows of `producers` + `producer_batches`), by producer id:
   * an idempotent append then reads no SQL. Updated only after the append's transaction
   * returned; cleared by destroy().
   */
  readonly #producers = new Map<number, ProducerState>();
  /** Durable Streams state when this partition backs a stream (durable-objects/partition-streams.ts). */
  readonly #streams: PartitionStreams = new PartitionStreams(
    {
      log: () => {
        const s = this.#state;
        return s === null
          ? null
          : { topic: s.topic, topicId: s.topicId, logStartOffset: s.logStartOffset, logEndOffset: s.logEndOffset, maxMessageBytes: s.configs["max.message.bytes"] };
      },
      // The stream layer encodes these batches itself, in this object: no CRC to re-verify.
      appendBatches: (batches, inTransaction) => this.#appendSync({ batches, crcVerified: true }, inTransaction),
      batchesFrom: (offset) => this.#batchesFrom(offset),
      nextAppend: (ms) => this.#nextAppend(ms),
      wake: () => this.#wakeWaiters(),
      startLogAt: (offset) => this.#startLogAt(offset),
      transaction: (fn) => this.ctx.storage.transactionSync(fn),
      setAlarm: (atMs) => this.timers("streams").set("expiry", atMs),
    },
    this.sql,
    this.env,
  );

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp(ROOMS, { adoptLegacy });
  }

  protected override onStart(): void {
    this.#streams.load();
    const meta = new Map<string, SqlStorageValue>();
    for (const row of this.sql.all<{ key: string; value: SqlStorageValue }>("SELECT key, value FROM meta")) meta.set(row.key, row.value);
    if (meta.get("state") !== "active") return;
    const last = this.sql.first<{ running_max_timestamp: number }>("SELECT running_max_timestamp FROM batches ORDER BY base_offset DESC LIMIT 1");
    this.#state = {
      topic: String(meta.get("topic")),
      topicId: String(meta.get("topic_id")),
      partition: Number(meta.get("partition")),
      configs: JSON.parse(String(meta.get("configs"))) as TopicConfigs,
      logStartOffset: Number(meta.get("log_start_offset")),
      logEndOffset: Number(meta.get("log_end_offset")),
      leaderEpoch: Number(meta.get("leader_epoch")),
      storedBytes: Number(meta.get("stored_bytes")),
      runningMaxTimestamp: last?.running_max_timestamp ?? -1,
    };
  }

  // ---- lifecycle (called by the metadata store) ----

  /** Initialises the partition. Idempotent for the same topic id. */
  async init(req: PartitionInit): Promise<RpcResult<object>> {
    if (this.#destroyed) return unknownPartition();
    if (this.#state !== null) {
      if (this.#state.topicId !== req.topicId || this.#state.partition !== req.partition) {
        throw new Error(`partition object ${this.#state.topicId}/${this.#state.partition} asked to init as ${req.topicId}/${req.partition}`);
      }
      return { ok: true };
    }
    const state: PartitionState = {
      topic: req.topic,
      topicId: req.topicId,
      partition: req.partition,
      configs: req.configs,
      logStartOffset: 0,
      logEndOffset: 0,
      leaderEpoch: 0,
      storedBytes: 0,
      runningMaxTimestamp: -1,
    };
    this.ctx.storage.transactionSync(() => {
      this.#putMeta("topic", state.topic);
      this.#putMeta("topic_id", state.topicId);
      this.#putMeta("partition", state.partition);
      this.#putMeta("configs", JSON.stringify(state.configs));
      this.#putMeta("log_start_offset", state.logStartOffset);
      this.#putMeta("log_end_offset", state.logEndOffset);
      this.#putMeta("leader_epoch", state.leaderEpoch);
      this.#putMeta("stored_bytes", state.storedBytes);
      this.#putMeta("state", "active");
    });
    this.#state = state;
    return { ok: true };
  }

  async updateConfigs(configs: TopicConfigs): Promise<RpcResult<object>> {
    const s = this.#state;
    if (s === null) return unknownPartition();
    this.#putMeta("configs", JSON.stringify(configs));
    s.configs = configs;
    return { ok: true };
  }

  /** Deletes every row of this partition; later calls answer UNKNOWN_TOPIC_OR_PARTITION. */
  async destroy(): Promise<RpcResult<object>> {
    this.#destroyed = true;
    this.#state = null;
    this.#producers.clear();
    this.#streams.reset();
    await this.deleteAllStorage();
    this.#wakeWaiters();
    return { ok: true };
  }

  // ---- data path ----

  /**
   * Appends one produce request (see {@link AppendRequest}) in one transaction, or nothing.
   * Never awaits: appends are serialised by the object's single thread.
   */
  async append(req: AppendRequest): Promise<RpcResult<AppendOk>> {
    if (this.#state === null) return unknownPartition();
    // A stream's closure binds native producers too (docs/DURABLE-STREAMS.md "Closing").
    const blocked = this.#streams.nativeAppendBlocked();
    if (blocked !== null) return blocked;
    return this.#appendSync(req);
  }

  /** See {@link PartitionRpc.appendMany}. Never awaits between requests: one event, one commit. */
  async appendMany(reqs: AppendRequest[]): Promise<RpcResult<AppendOk>[]> {
    if (!Array.isArray(reqs) || reqs.length > MAX_APPEND_GROUP_REQUESTS) throw new Error(`appendMany takes at most ${MAX_APPEND_GROUP_REQUESTS} requests`);
    const out: RpcResult<AppendOk>[] = [];
    for (const req of reqs) {
      if (this.#state === null) {
        out.push(unknownPartition());
        continue;
      }
      try {
        out.push(this.#streams.nativeAppendBlocked() ?? this.#appendSync(req));
      } catch (err) {
        // A bug or a storage failure in this request only: its transaction rolled back (a
        // throw inside transactionSync undoes it), the others keep their own outcomes, as
        // separate RPCs would. It is reported as INTERNAL rather than thrown, because
        // throwing would fail the requests already written in this call too.
        console.error("append failed inside appendMany", err);
        out.push(errorResult("INTERNAL", `The partition failed to append this request: ${err instanceof Error ? err.message : String(err)}`));
      }
    }
    return out;
  }

  /** The append itself; `inTransaction` (stream state of the same write) runs inside its transaction. */
  #appendSync(req: AppendRequest, inTransaction?: () => void): RpcResult<AppendOk> {
    const s = this.#state;
    if (s === null) return unknownPartition();

    // 1. Scan once: framing, record structure, timestamps and sizes; the CRC unless the caller
    //    verified it (the gateway does for a client's batch; bytes it encoded are correct by
    //    construction). No record objects: the bytes are stored as they are.
    const verifyCrc = req.crcVerified !== true;
    const scans: (BatchScan & { bytes: Uint8Array })[] = [];
    for (const bytes of req.batches) {
      try {
        const d = scanBatch(bytes, 0, { verifyCrc });
        if (d.totalBytes !== bytes.length) return errorResult("INVALID_BATCH", `${bytes.length - d.totalBytes} bytes after the record batch.`);
        scans.push({ ...d, bytes });
      } catch (err) {
        if (err instanceof CodecError) return errorResult("INVALID_BATCH", err.message);
        throw err;
      }
    }

    // 2. Validate everything before writing anything.
    const v = validateAppend(scans, s.configs["max.message.bytes"]);
    if ("code" in v) return v;
    let producerState: ProducerState | undefined;
    if (v.producer !== null) {
      producerState = this.#loadProducer(v.producer.producerId);
      const decision = checkSequence(producerState, v.producer);
      if (decision.kind === "error") return decision.error;
      if (decision.kind === "duplicate") return this.#duplicateAnswer(s, decision.entry);
    }

    // 3. Assign offsets and rewrite headers (in place, no re-encoding, unless a batch must be split).
    const logAppendTime = s.configs["message.timestamp.type"] === "LogAppendTime" ? Date.now() : null;
    const rows: PendingRow[] = [];
    let nextOffset = s.logEndOffset;
    let runningMax = s.runningMaxTimestamp;
    let addedBytes = 0;
    for (const d of scans) {
      for (const piece of storedPieces(d)) {
        const maxTimestamp = logAppendTime ?? piece.maxTimestamp;
        const attributes = piece.header.attributes | (logAppendTime !== null ? ATTR_LOG_APPEND_TIME : 0);
        rewriteBatchHeader(piece.bytes, {
          baseOffset: nextOffset,
          partitionLeaderEpoch: s.leaderEpoch,
          attributes,
          maxTimestamp,
          ...(logAppendTime !== null ? { baseTimestamp: logAppendTime } : {}),
        });
        runningMax = nextRunningMaxTimestamp(runningMax, maxTimestamp);
        rows.push({
          header: { ...piece.header, baseOffset: nextOffset, attributes, partitionLeaderEpoch: s.leaderEpoch, maxTimestamp },
          maxTimestamp,
          runningMaxTimestamp: runningMax,
          bytes: piece.bytes,
        });
        nextOffset += piece.header.recordCount;
        addedBytes += piece.bytes.length;
      }
    }
    const timestamps = logAppendTime !== null ? new Array<number>(v.recordCount).fill(logAppendTime) : scans.length === 1 ? scans[0]!.timestamps : scans.flatMap((d) => d.timestamps);
    const baseOffset = s.logEndOffset;
    const lastOffset = nextOffset - 1;
    const nextProducer = v.producer !== null ? applyProducerAppend(producerState, v.producer, baseOffset, lastOffset) : null;

    // 4. One transaction: batch rows, log end offset and stored bytes (one statement), producer state.
    this.ctx.storage.transactionSync(() => {
      for (const r of rows) {
        const h = r.header;
        this.sql.run(
          `INSERT INTO batches (base_offset, last_offset, record_count, producer_id, producer_epoch, base_sequence,
             partition_leader_epoch, attributes, base_timestamp, max_timestamp, running_max_timestamp, size_bytes, data)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          h.baseOffset,
          h.baseOffset + h.recordCount - 1,
          h.recordCount,
          h.producerId,
          h.producerEpoch,
          h.baseSequence,
          h.partitionLeaderEpoch,
          h.attributes,
          logAppendTime ?? h.baseTimestamp,
          r.maxTimestamp,
          r.runningMaxTimestamp,
          r.bytes.length,
          blob(r.bytes),
        );
      }
      this.sql.run(
        "UPDATE meta SET value = CASE key WHEN 'log_end_offset' THEN ? ELSE ? END WHERE key IN ('log_end_offset', 'stored_bytes')",
        nextOffset,
        s.storedBytes + addedBytes,
      );
      if (v.producer !== null && nextProducer !== null) this.#saveProducer(v.producer.producerId, producerState, nextProducer);
      inTransaction?.();
    });

    // 5. Committed: publish in memory, wake long-polls (their answers also wait for the output gate).
    s.logEndOffset = nextOffset;
    s.storedBytes += addedBytes;
    s.runningMaxTimestamp = runningMax;
    if (v.producer !== null && nextProducer !== null) this.#cacheProducer(v.producer.producerId, nextProducer);
    this.#wakeWaiters();
    return { ok: true, baseOffset, lastOffset, timestamps, logAppendTime, duplicate: false, logStartOffset: s.logStartOffset, highWatermark: s.logEndOffset };
  }

  /**
   * Returns stored batches from `offset` on. When fewer than minBytes are available, waits
   * (up to maxWaitMs) for an append to wake it, then reads again.
   */
  async fetchRecords(req: FetchRequest): Promise<RpcResult<FetchOk>> {
    const maxWaitMs = Math.min(Math.max(0, req.maxWaitMs), FETCH_MAX_WAIT_MS_LIMIT);
    const deadline = Date.now() + maxWaitMs;
    for (;;) {
      const s = this.#state;
      if (s === null) return unknownPartition();
      const bad = checkFetchOffset(req.offset, bounds(s));
      if (bad !== null) return bad;
      const plan = planFetch(this.#batchesFrom(req.offset), req);
      const remainingMs = deadline - Date.now();
      if (plan.bytes >= req.minBytes || remainingMs <= 0) {
        return {
          ok: true,
          batches: plan.batches.map((b) => b.data),
          nextOffset: plan.nextOffset,
          logStartOffset: s.logStartOffset,
          highWatermark: s.logEndOffset,
          logEndOffset: s.logEndOffset,
        };
      }
      await this.#nextAppend(remainingMs);
    }
  }

  async listOffsets(spec: ListOffsetsSpec): Promise<RpcResult<ListOffsetsOk>> {
    const s = this.#state;
    if (s === null) return unknownPartition();
    switch (spec.spec) {
      case "earliest":
        return { ok: true, offset: s.logStartOffset, timestamp: null };
      case "latest":
        return { ok: true, offset: s.logEndOffset, timestamp: null };
      case "max_timestamp":
        if (s.logEndOffset === s.logStartOffset) return { ok: true, offset: null, timestamp: null };
        return { ok: true, ...this.#firstAtOrAfter(s, s.runningMaxTimestamp) };
      case "timestamp":
        return { ok: true, ...this.#firstAtOrAfter(s, spec.timestamp) };
    }
  }

  async describe(): Promise<RpcResult<{ partition: PartitionDescription }>> {
    const s = this.#state;
    if (s === null) return unknownPartition();
    return {
      ok: true,
      partition: {
        partition: s.partition,
        logStartOffset: s.logStartOffset,
        highWatermark: s.logEndOffset,
        logEndOffset: s.logEndOffset,
        recordCount: s.logEndOffset - s.logStartOffset,
        bytes: s.storedBytes,
      },
    };
  }

  // ---- Durable Streams (docs/DURABLE-STREAMS.md; logic in partition-streams.ts) ----

  dsCreate(req: CreateStreamRequest): Promise<RpcResult<CreateStreamOk>> {
    return this.#streams.dsCreate(req);
  }
  dsHead(path: string): Promise<RpcResult<HeadStreamOk>> {
    return this.#streams.dsHead(path);
  }
  dsAppend(req: AppendStreamRequest): Promise<RpcResult<AppendStreamOk>> {
    return this.#streams.dsAppend(req);
  }
  dsRead(req: ReadStreamRequest): Promise<RpcResult<ReadStreamOk>> {
    return this.#streams.dsRead(req);
  }
  dsDelete(path: string): Promise<RpcResult<DeleteStreamOk>> {
    return this.#streams.dsDelete(path);
  }
  dsForkSource(req: ForkSourceRequest): Promise<RpcResult<ForkSourceOk>> {
    return this.#streams.dsForkSource(req);
  }
  dsRelease(path: string): Promise<RpcResult<object>> {
    return this.#streams.dsRelease(path);
  }
  dsReadRange(req: ReadRangeRequest): Promise<RpcResult<ReadRangeOk>> {
    return this.#streams.dsReadRange(req);
  }
  dsBoundaryValues(req: BoundaryValuesRequest): Promise<RpcResult<{ values: (Uint8Array | null)[] }>> {
    return this.#streams.dsBoundaryValues(req);
  }

  /** Timers: today only stream expiry (`streams`/`expiry`) uses them. */
  protected override async onTimer(): Promise<void> {
    await this.#streams.onAlarm();
  }

  // ---- helpers ----

  /** A fork's log starts at its fork offset: moves an empty log's start and end there. */
  #startLogAt(offset: number): void {
    const s = this.#state;
    if (s === null) throw new Error("startLogAt on an uninitialised partition");
    if (s.logEndOffset !== s.logStartOffset) throw new Error("startLogAt on a non-empty log");
    this.ctx.storage.transactionSync(() => {
      this.#putMeta("log_start_offset", offset);
      this.#putMeta("log_end_offset", offset);
    });
    s.logStartOffset = offset;
    s.logEndOffset = offset;
  }

  #putMeta(key: string, value: SqlStorageValue): void {
    this.sql.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  /** Stored batches from the one holding `offset` on, read lazily in offset order. */
  *#batchesFrom(offset: number): Generator<StoredBatchRef & { data: Uint8Array }> {
    const rows = this.sql.iterate<BatchRow>(
      `SELECT base_offset, last_offset, size_bytes, data FROM batches
       WHERE base_offset >= COALESCE((SELECT base_offset FROM batches WHERE base_offset <= ? ORDER BY base_offset DESC LIMIT 1), 0)
       ORDER BY base_offset`,
      offset,
    );
    for (const r of rows) {
      yield { baseOffset: r.base_offset, lastOffset: r.last_offset, sizeBytes: r.size_bytes, data: new Uint8Array(r.data) };
    }
  }

  /** First record with timestamp >= T: the first batch whose running max reaches T holds it. */
  #firstAtOrAfter(s: PartitionState, timestamp: number): ListOffsetsOk {
    const row = this.sql.first<{ data: ArrayBuffer }>(
      "SELECT data FROM batches WHERE running_max_timestamp >= ? ORDER BY running_max_timestamp, base_offset LIMIT 1",
      timestamp,
    );
    if (row === undefined) return { offset: null, timestamp: null };
    const { records } = decodeBatch(new Uint8Array(row.data), 0, { verifyCrc: false });
    const hit = firstAtOrAfterTimestamp(records, timestamp, s.logStartOffset);
    // Invariant of the index: the batch where the running max first reaches T holds a record >= T.
    if (hit === null) throw new Error(`running max index points at a batch without a record at or after ${timestamp}`);
    return hit;
  }

  /** A producer's committed state: from memory, else from SQLite (then kept in memory). */
  #loadProducer(producerId: number): ProducerState | undefined {
    const cached = this.#producers.get(producerId);
    if (cached !== undefined) return cached;
    const state = this.#readProducer(producerId);
    if (state !== undefined) this.#cacheProducer(producerId, state);
    return state;
  }

  /** Remembers a committed producer state, dropping the oldest-inserted entry beyond the limit. */
  #cacheProducer(producerId: number, state: ProducerState): void {
    this.#producers.delete(producerId);
    if (this.#producers.size >= PRODUCER_CACHE_MAX_ENTRIES) {
      const oldest = this.#producers.keys().next();
      if (oldest.done !== true) this.#producers.delete(oldest.value);
    }
    this.#producers.set(producerId, state);
  }

  #readProducer(producerId: number): ProducerState | undefined {
    const p = this.sql.first<{ producer_epoch: number; last_sequence: number }>(
      "SELECT producer_epoch, last_sequence FROM producers WHERE producer_id = ?",
      producerId,
    );
    if (p === undefined) return undefined;
    const batches = this.sql
      .all<{ producer_epoch: number; base_sequence: number; last_sequence: number; first_offset: number; last_offset: number }>(
        `SELECT producer_epoch, base_sequence, last_sequence, first_offset, last_offset
         FROM producer_batches WHERE producer_id = ? ORDER BY first_offset`,
        producerId,
      )
      .map((b) => ({
        producerEpoch: b.producer_epoch,
        baseSequence: b.base_sequence,
        lastSequence: b.last_sequence,
        firstOffset: b.first_offset,
        lastOffset: b.last_offset,
      }));
    return { producerEpoch: p.producer_epoch, lastSequence: p.last_sequence, batches };
  }

  /**
   * Writes a producer's state (inside the append transaction): upsert, add the new request,
   * drop requests no longer kept (only when `previous` had some that `state` does not keep).
   */
  #saveProducer(producerId: number, previous: ProducerState | undefined, state: ProducerState): void {
    this.sql.run(
      `INSERT INTO producers (producer_id, producer_epoch, last_sequence) VALUES (?, ?, ?)
       ON CONFLICT (producer_id) DO UPDATE SET producer_epoch = excluded.producer_epoch, last_sequence = excluded.last_sequence`,
      producerId,
      state.producerEpoch,
      state.lastSequence,
    );
    const newest = state.batches[state.batches.length - 1];
    const oldest = state.batches[0];
    if (newest === undefined || oldest === undefined) throw new Error("producer state without its new request");
    this.sql.run(
      `INSERT INTO producer_batches (producer_id, producer_epoch, base_sequence, last_sequence, first_offset, last_offset)
       VALUES (?, ?, ?, ?, ?, ?)`,
      producerId,
      newest.producerEpoch,
      newest.baseSequence,
      newest.lastSequence,
      newest.firstOffset,
      newest.lastOffset,
    );
    // applyProducerAppend keeps a suffix of previous.batches (same epoch) or none (new epoch).
    const dropsSome = previous !== undefined && previous.batches.length + 1 > state.batches.length;
    if (dropsSome) this.sql.run("DELETE FROM producer_batches WHERE producer_id = ? AND first_offset < ?", producerId, oldest.firstOffset);
  }

  /** Answer for a recognised retry: the original offsets and the timestamps as stored. */
  #duplicateAnswer(s: PartitionState, entry: ProducerBatchEntry): RpcResult<AppendOk> {
    const timestamps: number[] = [];
    let logAppendTime: number | null = null;
    for (const b of this.#batchesFrom(entry.firstOffset)) {
      if (b.baseOffset > entry.lastOffset) break;
      const { header, records } = decodeBatch(b.data, 0, { verifyCrc: false });
      for (const r of records) {
        if (r.offset < entry.firstOffset || r.offset > entry.lastOffset) continue;
        timestamps.push(r.timestamp);
        if ((header.attributes & ATTR_LOG_APPEND_TIME) !== 0) logAppendTime = r.timestamp;
      }
    }
    return {
      ok: true,
      baseOffset: entry.firstOffset,
      lastOffset: entry.lastOffset,
      timestamps,
      logAppendTime,
      duplicate: true,
      logStartOffset: s.logStartOffset,
      highWatermark: s.logEndOffset,
    };
  }

  /** Resolves at the next append (or destroy), or after `ms`. */
  #nextAppend(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  #wakeWaiters(): void {
    if (this.#waiters.size === 0) return;
    for (const wake of [...this.#waiters]) wake();
  }
}

function unknownPartition(): ErrorResult {
  return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist (never created, or its topic was deleted).");
}

function bounds(s: PartitionState): { logStartOffset: number; logEndOffset: number; highWatermark: number } {
  return { logStartOffset: s.logStartOffset, logEndOffset: s.logEndOffset, highWatermark: s.logEndOffset };
}

/**
 * The batches to store for one produced batch: itself when it fits a row (fast path: the
 * bytes are stored as received, header rewritten in place), else its records re-encoded in
 * groups of at most MAX_STORED_BATCH_BYTES (SQLite rows are limited to 2 MB).
 */
function* storedPieces(d: BatchScan & { bytes: Uint8Array }): Generator<{ header: BatchHeader; bytes: Uint8Array; maxTimestamp: number }> {
  if (d.bytes.length <= MAX_STORED_BATCH_BYTES) {
    yield { header: d.header, bytes: d.bytes, maxTimestamp: maxOf(d.timestamps) };
    return;
  }
  // Rare (a client batch over 1 MiB): decode the records to re-encode them. Already verified.
  const { records } = decodeBatch(d.bytes, 0, { verifyCrc: false });
  let sequence = d.header.baseSequence;
  for (const group of splitRecords(records, MAX_STORED_BATCH_BYTES)) {
    const header: Partial<BatchHeader> = {
      producerId: d.header.producerId,
      producerEpoch: d.header.producerEpoch,
      baseSequence: d.header.producerId === NO_PRODUCER_ID ? NO_SEQUENCE : sequence,
      attributes: d.header.attributes,
    };
    const bytes = encodeBatch(header, group);
    sequence += group.length;
    yield {
      header: { ...d.header, ...header, recordCount: group.length, lastOffsetDelta: group.length - 1, baseTimestamp: group[0]?.timestamp ?? -1 } as BatchHeader,
      bytes,
      maxTimestamp: maxOf(group.map((r) => r.timestamp)),
    };
  }
}

function maxOf(timestamps: readonly number[]): number {
  let max = -1;
  for (const t of timestamps) if (t > max) max = t;
  return max;
}
