/**
 * The log room of a partition: the `meta` and `batches` tables, the append's plan / apply /
 * publish, the reads (fetch, ListOffsets, duplicate answers, raw batch data for the stream
 * rooms) and the bounds (log start offset, high watermark, log end offset).
 *
 * Storage (room "log", migration 1 in schema/log.ts):
 * - meta(key, value): topic, topic_id, partition, configs (JSON), configs_offset (the metadata
 *   offset of the configs, absent when unknown: a key/value row, so no migration),
 *   log_start_offset, log_end_offset, leader_epoch, stored_bytes, state ("active").
 * - batches: one row per stored record batch; `data` is the encoded batch with its header
 *   rewritten on append (baseOffset, leader epoch, LogAppendTime), so a fetch serves the
 *   bytes as stored. `running_max_timestamp` is the max timestamp over this batch and every
 *   earlier one: monotone in offset, so "first offset with timestamp >= T" is an index seek
 *   plus one batch scan (docs/ARCHITECTURE.md).
 *
 * The log is the lowest room: it imports no other room and never calls up. It writes SQL only
 * in {@link LogRoom.apply} (inside the switchboard's commit transaction); news of an append
 * goes up through the listeners registered with {@link LogRoom.onAppended}.
 */
import { ATTR_LOG_APPEND_TIME, decodeBatch } from "../../src/codec/index.ts";
import {
  checkFetchOffset,
  checkLogInvariants,
  firstAtOrAfterTimestamp,
  planAppend,
  planFetch,
  scanAppend,
  type AppendPlan,
  type ListOffsetsSpec,
  type ProducerBatchEntry,
  type ScannedAppend,
  type StoredBatchRef,
} from "../../src/partition/core.ts";
import type { AppendOk, FetchOk, FetchRequest, ListOffsetsOk, PartitionInit } from "../../src/partition/rpc.ts";
import { errorResult, type ErrorResult, type Ok, type RpcResult } from "../../src/protocol/errors.ts";
import type { PartitionDescription, TopicConfigs } from "../../src/protocol/types.ts";
import { nextFetchOffset } from "../../src/lifecycle/reads.ts";
import type { StoredBatch } from "../../src/partition/catch-up.ts";
import { blob, type Sql } from "../base.ts";

/** In-memory copy of the meta table of an initialised partition (loaded once at start-up). */
export interface PartitionState {
  topic: string;
  topicId: string;
  partition: number;
  configs: TopicConfigs;
  /**
   * The metadata offset (metadata quorum record index) of the topic state `configs` reflect;
   * null when unknown (init, MetadataDO pushes). Meta row `configs_offset`; a push older than
   * it is ignored (src/partition/configs-order.ts).
   */
  configsOffset: number | null;
  logStartOffset: number;
  /**
   * Offsets below it are committed (readable by consumers, acknowledged to acks=all). Equals
   * logEndOffset: a single replica stores on commit, and a replicated partition applies an
   * append only once its Raft entry is committed (docs/RAFT.md). Set in {@link LogRoom.publish}.
   */
  highWatermark: number;
  logEndOffset: number;
  leaderEpoch: number;
  storedBytes: number;
  /** Running max timestamp of the last batch; -1 for an empty log. */
  runningMaxTimestamp: number;
}

/** A change of the log's meta rows (not an append). */
export type LogChange =
  | { op: "init"; init: PartitionInit }
  /** New configs; `configsOffset` (when set) is stored with them: the metadata offset they reflect. */
  | { op: "configs"; configs: TopicConfigs; configsOffset?: number }
  /** A fork's log starts at its fork offset: an empty log's start and end move there. */
  | { op: "startAt"; offset: number }
  /**
   * The log start offset moves forward to `offset` (retention or deleteRecords, KIP-107; never
   * past the high watermark). Rows below it stay until `truncate` slices delete them.
   */
  | { op: "logStart"; offset: number }
  /**
   * One bounded slice of physical deletion (docs/LIFECYCLE.md): the batch rows wholly below
   * `before` go; `freedBytes` is the sum of their `size_bytes`, as read when the slice was planned
   * in the same event.
   */
  | { op: "truncate"; before: number; freedBytes: number }
  /**
   * Compaction's batch rewrites: each batch keeps its row and range with new `data` (fewer
   * records), or loses its row (`data` null). `sizeBefore` is its stored size when planned.
   */
  | { op: "rewrite"; batches: readonly BatchRewrite[] }
  /**
   * A replicated partition's leader epoch moves to the Raft term of the entry being applied
   * (docs/RAFT.md): written with the first append of a new term, before its batches are planned.
   */
  | { op: "leaderEpoch"; epoch: number }
  /**
   * Snapshot catch-up of a replica (docs/RAFT.md "Snapshot catch-up"): pulled batches go to
   * `batches_staged`, invisible to every read (`stage`); `unstage` drops them (a new pull starts).
   */
  | { op: "stage"; rows: readonly StoredBatch[] }
  | { op: "unstage" }
  /**
   * The catch-up's install, in the one transaction that also writes the Raft snapshot and the
   * applied index: the staged batches move into `batches` (after every stored one is deleted when
   * `replace`), and the meta rows take the pulled state's bounds and leader epoch.
   */
  | {
      op: "install";
      replace: boolean;
      logStartOffset: number;
      logEndOffset: number;
      leaderEpoch: number;
      storedBytes: number;
      runningMaxTimestamp: number;
      /** The peer's configs at the snapshot (replicated config changes); absent from older peers: kept as they are. */
      configs?: TopicConfigs;
      /** The metadata offset of the peer's configs; absent: the held one is kept. */
      configsOffset?: number;
    };

const BATCH_COLUMNS = `base_offset, last_offset, record_count, producer_id, producer_epoch, base_sequence,
     partition_leader_epoch, attributes, base_timestamp, max_timestamp, running_max_timestamp, size_bytes, data`;

/** One batch rewritten by compaction (src/lifecycle/batch-rewrite.ts made `data`). */
export interface BatchRewrite {
  baseOffset: number;
  /** The new bytes, or null: the row is deleted. */
  data: Uint8Array | null;
  recordCount: number;
  sizeBefore: number;
}

/** A stored batch without its data: what the lifecycle room's planners read. */
export interface BatchSpan {
  baseOffset: number;
  lastOffset: number;
  bytes: number;
  records: number;
  maxTimestamp: number;
}

/** The log's part of a command (see durable-objects/partition.ts `commit`). */
export interface LogCommand {
  log: LogChange | null;
  append: AppendPlan | null;
}

type BatchRow = {
  base_offset: number;
  last_offset: number;
  size_bytes: number;
  data: ArrayBuffer;
};

/**
 * The stored batches from the one holding `?` on, in offset order, one column: what
 * {@link LogRoom.rawDataFrom} reads with a raw cursor (rows as objects with four columns cost
 * ~7 us each, most of a stream read from storage).
 */
const BATCH_DATA_FROM = `SELECT data FROM batches
  WHERE base_offset >= COALESCE((SELECT base_offset FROM batches WHERE base_offset <= ? ORDER BY base_offset DESC LIMIT 1), 0)
  ORDER BY base_offset`;

const INSERT_BATCH = `INSERT INTO batches (base_offset, last_offset, record_count, producer_id, producer_epoch, base_sequence,
     partition_leader_epoch, attributes, base_timestamp, max_timestamp, running_max_timestamp, size_bytes, data)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export class LogRoom {
  readonly name = "log";
  readonly #sql: Sql;
  /** null: never initialised (or destroyed): every call answers UNKNOWN_TOPIC_OR_PARTITION. */
  #state: PartitionState | null = null;
  readonly #appended: (() => void)[] = [];
  readonly #rewritten: (() => void)[] = [];

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** The partition's state, or null when it is not initialised or was destroyed. Read-only for other rooms. */
  get state(): Readonly<PartitionState> | null {
    return this.#state;
  }

  /** Registers a listener called after each committed append. Wired in the switchboard's constructor. */
  onAppended(listener: () => void): void {
    this.#appended.push(listener);
  }

  /**
   * Registers a listener called after each committed compaction rewrite (batches given new
   * contents or deleted): whoever keeps decoded batches in memory drops them. Wired in the
   * switchboard's constructor.
   */
  onRewritten(listener: () => void): void {
    this.#rewritten.push(listener);
  }

  load(): void {
    const meta = new Map<string, SqlStorageValue>();
    for (const row of this.#sql.all<{ key: string; value: SqlStorageValue }>("SELECT key, value FROM meta")) meta.set(row.key, row.value);
    if (meta.get("state") !== "active") return;
    const last = this.#sql.first<{ running_max_timestamp: number }>("SELECT running_max_timestamp FROM batches ORDER BY base_offset DESC LIMIT 1");
    const logEndOffset = Number(meta.get("log_end_offset"));
    const s: PartitionState = {
      topic: String(meta.get("topic")),
      topicId: String(meta.get("topic_id")),
      partition: Number(meta.get("partition")),
      configs: JSON.parse(String(meta.get("configs"))) as TopicConfigs,
      configsOffset: meta.has("configs_offset") ? Number(meta.get("configs_offset")) : null,
      logStartOffset: Number(meta.get("log_start_offset")),
      highWatermark: logEndOffset,
      logEndOffset,
      leaderEpoch: Number(meta.get("leader_epoch")),
      storedBytes: Number(meta.get("stored_bytes")),
      runningMaxTimestamp: last?.running_max_timestamp ?? -1,
    };
    const bad = checkLogInvariants(s.logStartOffset, s.highWatermark, s.logEndOffset, s.storedBytes, s.runningMaxTimestamp, -1);
    if (bad !== undefined) throw new Error(`partition log loaded with a broken invariant: ${bad}`);
    this.#state = s;
  }

  /** Forgets the in-memory state (the object's storage was deleted). */
  reset(): void {
    this.#state = null;
  }

  // ---- deciding (no writes) ----

  /** The command that initialises the meta rows; null when already initialised for the same topic id. */
  initChange(req: PartitionInit): LogChange | null {
    const s = this.#state;
    if (s === null) return { op: "init", init: req };
    if (s.topicId !== req.topicId || s.partition !== req.partition) {
      throw new Error(`partition object ${s.topicId}/${s.partition} asked to init as ${req.topicId}/${req.partition}`);
    }
    return null;
  }

  /**
   * Steps 1 (scan, validate) of an append. The caller checks the producer between this and
   * {@link plan} (a duplicate or fenced request must not rewrite or store anything).
   */
  scan(batches: readonly Uint8Array[], crcVerified: boolean): ScannedAppend | ErrorResult {
    const s = this.#state;
    if (s === null) return unknownPartition();
    return scanAppend(batches, !crcVerified, s.configs["max.message.bytes"]);
  }

  /**
   * Step 1 at apply time on a replicated partition: the leader checked the CRC and the
   * config-dependent limits before proposing, so a replica checks only what does not depend on
   * its configs (which may lag the leader's for a moment): every replica decides alike.
   */
  scanCommitted(batches: readonly Uint8Array[]): ScannedAppend | ErrorResult {
    return scanAppend(batches, false, Number.MAX_SAFE_INTEGER);
  }

  /**
   * Step 3: offsets and rewritten headers from the log's end. Reads the clock here, the
   * deciding step, under LogAppendTime: the command carries the time, apply never reads it.
   */
  plan(scanned: ScannedAppend): AppendPlan {
    const s = this.#state;
    if (s === null) throw new Error("append planned on an uninitialised partition");
    const logAppendTime = s.configs["message.timestamp.type"] === "LogAppendTime" ? Date.now() : null;
    return planAppend(scanned, s, logAppendTime);
  }

  /**
   * Step 3 at apply time on a replicated partition: offsets from the log's end, the batches
   * stamped with `leaderEpoch` (the entry's Raft term) and the leader's `logAppendTime`.
   */
  planAt(scanned: ScannedAppend, leaderEpoch: number, logAppendTime: number | null): AppendPlan {
    const s = this.#state;
    if (s === null) throw new Error("append planned on an uninitialised partition");
    return planAppend(scanned, { logEndOffset: s.logEndOffset, runningMaxTimestamp: s.runningMaxTimestamp, leaderEpoch }, logAppendTime);
  }

  /** The answer to a committed append. */
  appended(p: AppendPlan): Ok<AppendOk> {
    const s = this.#state!;
    return {
      ok: true,
      baseOffset: p.baseOffset,
      lastOffset: p.lastOffset,
      timestamps: p.timestamps as number[],
      logAppendTime: p.logAppendTime,
      duplicate: false,
      logStartOffset: s.logStartOffset,
      highWatermark: s.highWatermark,
    };
  }

  /**
   * Asserts the invariants of the state a command would leave (before commit): the bounds of
   * {@link checkLogInvariants}, an append planned against the current end of the log, a log
   * start moved only on an empty log.
   * @returns the violated invariant, or undefined.
   */
  checkCommand(cmd: LogCommand): string | undefined {
    const p = cmd.append;
    const s = this.#state;
    const c = cmd.log;
    if (c !== null && c.op === "startAt") {
      if (s === null || s.logEndOffset !== s.logStartOffset) return "the log start moves only on an empty log";
      return checkLogInvariants(c.offset, c.offset, c.offset, s.storedBytes, s.runningMaxTimestamp, s.runningMaxTimestamp);
    }
    if (c !== null && c.op === "logStart") {
      if (s === null) return "log start moved on an uninitialised partition";
      if (c.offset < s.logStartOffset) return `the log start never moves back: ${s.logStartOffset} -> ${c.offset}`;
      return checkLogInvariants(c.offset, s.highWatermark, s.logEndOffset, s.storedBytes, s.runningMaxTimestamp, s.runningMaxTimestamp);
    }
    if (c !== null && c.op === "leaderEpoch") {
      if (s === null) return "leader epoch set on an uninitialised partition";
      if (c.epoch < s.leaderEpoch) return `the leader epoch never goes back: ${s.leaderEpoch} -> ${c.epoch}`;
    }
    if (c !== null && c.op === "install") {
      if (s === null) return "install on an uninitialised partition";
      if (c.logStartOffset > c.logEndOffset || c.storedBytes < 0) return `install of a log [${c.logStartOffset}, ${c.logEndOffset}) of ${c.storedBytes} bytes`;
      if (!c.replace && c.logEndOffset < s.logEndOffset) return `install moves the log end back: ${s.logEndOffset} -> ${c.logEndOffset}`;
    }
    if (c !== null && c.op === "truncate") {
      if (s === null) return "truncate on an uninitialised partition";
      if (c.freedBytes < 0 || c.freedBytes > s.storedBytes) return `truncate frees ${c.freedBytes} of ${s.storedBytes} stored bytes`;
    }
    if (p === null || s === null) return undefined;
    if (p.baseOffset !== s.logEndOffset) return `append planned at ${p.baseOffset}, log end offset is ${s.logEndOffset}`;
    // highWatermark after the append: equal to the log end offset (see PartitionState.highWatermark).
    return checkLogInvariants(s.logStartOffset, p.nextOffset, p.nextOffset, s.storedBytes + p.addedBytes, p.runningMaxTimestamp, s.runningMaxTimestamp);
  }

  // ---- applying (SQL, inside the commit's transaction; deterministic) ----

  apply(cmd: LogCommand): void {
    const c = cmd.log;
    if (c !== null) this.#applyChange(c);
    const p = cmd.append;
    if (p === null) return;
    const s = this.#state!;
    const sql = this.#sql;
    for (const r of p.rows) {
      const h = r.header;
      sql.run(
        INSERT_BATCH,
        h.baseOffset,
        h.baseOffset + h.recordCount - 1,
        h.recordCount,
        h.producerId,
        h.producerEpoch,
        h.baseSequence,
        h.partitionLeaderEpoch,
        h.attributes,
        p.logAppendTime ?? h.baseTimestamp,
        r.maxTimestamp,
        r.runningMaxTimestamp,
        r.bytes.length,
        blob(r.bytes),
      );
    }
    // The log end offset and stored bytes in one statement.
    sql.run("UPDATE meta SET value = CASE key WHEN 'log_end_offset' THEN ? ELSE ? END WHERE key IN ('log_end_offset', 'stored_bytes')", p.nextOffset, s.storedBytes + p.addedBytes);
  }

  #applyChange(c: LogChange): void {
    switch (c.op) {
      case "init": {
        const r = c.init;
        this.#putMeta("topic", r.topic);
        this.#putMeta("topic_id", r.topicId);
        this.#putMeta("partition", r.partition);
        this.#putMeta("configs", JSON.stringify(r.configs));
        this.#putMeta("log_start_offset", 0);
        this.#putMeta("log_end_offset", 0);
        this.#putMeta("leader_epoch", 0);
        this.#putMeta("stored_bytes", 0);
        this.#putMeta("state", "active");
        return;
      }
      case "configs":
        this.#putMeta("configs", JSON.stringify(c.configs));
        if (c.configsOffset !== undefined) this.#putMeta("configs_offset", c.configsOffset);
        return;
      case "startAt":
        this.#putMeta("log_start_offset", c.offset);
        this.#putMeta("log_end_offset", c.offset);
        return;
      case "logStart":
        this.#putMeta("log_start_offset", c.offset);
        return;
      case "leaderEpoch":
        this.#putMeta("leader_epoch", c.epoch);
        return;
      case "truncate":
        this.#sql.run("DELETE FROM batches WHERE last_offset < ?", c.before);
        this.#putMeta("stored_bytes", this.#state!.storedBytes - c.freedBytes);
        return;
      case "stage":
        for (const r of c.rows) {
          this.#sql.run(
            `INSERT INTO batches_staged (${BATCH_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            r.baseOffset,
            r.lastOffset,
            r.recordCount,
            r.producerId,
            r.producerEpoch,
            r.baseSequence,
            r.partitionLeaderEpoch,
            r.attributes,
            r.baseTimestamp,
            r.maxTimestamp,
            r.runningMaxTimestamp,
            r.sizeBytes,
            blob(r.data),
          );
        }
        return;
      case "unstage":
        this.#sql.run("DELETE FROM batches_staged");
        return;
      case "install":
        if (c.replace) this.#sql.run("DELETE FROM batches");
        this.#sql.run(`INSERT INTO batches (${BATCH_COLUMNS}) SELECT ${BATCH_COLUMNS} FROM batches_staged ORDER BY base_offset`);
        this.#sql.run("DELETE FROM batches_staged");
        this.#putMeta("log_start_offset", c.logStartOffset);
        this.#putMeta("log_end_offset", c.logEndOffset);
        this.#putMeta("leader_epoch", c.leaderEpoch);
        this.#putMeta("stored_bytes", c.storedBytes);
        if (c.configs !== undefined) this.#putMeta("configs", JSON.stringify(c.configs));
        if (c.configsOffset !== undefined) this.#putMeta("configs_offset", c.configsOffset);
        return;
      case "rewrite": {
        let delta = 0;
        for (const b of c.batches) {
          if (b.data === null) {
            this.#sql.run("DELETE FROM batches WHERE base_offset = ?", b.baseOffset);
            delta -= b.sizeBefore;
          } else {
            this.#sql.run("UPDATE batches SET data = ?, record_count = ?, size_bytes = ? WHERE base_offset = ?", blob(b.data), b.recordCount, b.data.length, b.baseOffset);
            delta += b.data.length - b.sizeBefore;
          }
        }
        this.#putMeta("stored_bytes", this.#state!.storedBytes + delta);
        return;
      }
    }
  }

  /** After the commit: the in-memory state follows, then the listeners hear of an append. */
  publish(cmd: LogCommand): void {
    const c = cmd.log;
    if (c !== null) this.#publishChange(c);
    if (c?.op === "rewrite" || c?.op === "install") for (const listener of this.#rewritten) listener();
    if (c?.op === "install") this.#notify();
    const p = cmd.append;
    if (p === null) return;
    const s = this.#state!;
    s.logEndOffset = p.nextOffset;
    // Committed = stored: a single replica stores on commit, and a replicated partition's rooms
    // apply an append only once its Raft entry is committed (docs/RAFT.md), so the log room
    // holds the committed prefix and the Raft journal alone holds what is not yet committed.
    s.highWatermark = s.logEndOffset;
    s.storedBytes += p.addedBytes;
    s.runningMaxTimestamp = p.runningMaxTimestamp;
    this.#notify();
  }

  #publishChange(c: LogChange): void {
    if (c.op === "init") {
      const r = c.init;
      this.#state = {
        topic: r.topic,
        topicId: r.topicId,
        partition: r.partition,
        configs: r.configs,
        configsOffset: null,
        logStartOffset: 0,
        highWatermark: 0,
        logEndOffset: 0,
        leaderEpoch: 0,
        storedBytes: 0,
        runningMaxTimestamp: -1,
      };
      return;
    }
    const s = this.#state;
    if (s === null) throw new Error(`log change ${c.op} on an uninitialised partition`);
    switch (c.op) {
      case "configs":
        s.configs = c.configs;
        if (c.configsOffset !== undefined) s.configsOffset = c.configsOffset;
        return;
      case "startAt":
        s.logStartOffset = c.offset;
        s.highWatermark = c.offset;
        s.logEndOffset = c.offset;
        return;
      case "logStart":
        s.logStartOffset = c.offset;
        return;
      case "leaderEpoch":
        s.leaderEpoch = c.epoch;
        return;
      case "truncate":
        s.storedBytes -= c.freedBytes;
        return;
      case "stage":
      case "unstage":
        return;
      case "install":
        s.logStartOffset = c.logStartOffset;
        s.logEndOffset = c.logEndOffset;
        s.highWatermark = c.logEndOffset;
        s.leaderEpoch = c.leaderEpoch;
        s.storedBytes = c.storedBytes;
        s.runningMaxTimestamp = c.runningMaxTimestamp;
        if (c.configs !== undefined) s.configs = c.configs;
        if (c.configsOffset !== undefined) s.configsOffset = c.configsOffset;
        return;
      case "rewrite":
        for (const b of c.batches) s.storedBytes += (b.data === null ? 0 : b.data.length) - b.sizeBefore;
        return;
    }
  }

  #notify(): void {
    const listeners = this.#appended;
    for (let i = 0; i < listeners.length; i++) listeners[i]!();
  }

  #putMeta(key: string, value: SqlStorageValue): void {
    this.#sql.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  // ---- reads ----

  /**
   * A fetch's answer when at least minBytes are available (or `final`), else null (the caller
   * waits for the next append and asks again).
   */
  fetch(req: FetchRequest, final: boolean): RpcResult<FetchOk> | null {
    const s = this.#state;
    if (s === null) return unknownPartition();
    const bad = checkFetchOffset(req.offset, s);
    if (bad !== null) return bad;
    const plan = planFetch(this.batchesFrom(req.offset), req);
    // Reads over gaps (compaction, deleteRecords): an answer below the high watermark always
    // moves nextOffset past what it looked at (src/lifecycle/reads.ts).
    const last = plan.batches[plan.batches.length - 1];
    const nextOffset = nextFetchOffset({ offset: req.offset, highWatermark: s.highWatermark, lastBatchOffset: last === undefined ? null : last.lastOffset, more: plan.more });
    // A read that found nothing below the high watermark (a compacted gap) answers at once: it moves the reader.
    if (plan.bytes < req.minBytes && !final && (plan.batches.length > 0 || nextOffset === req.offset)) return null;
    return {
      ok: true,
      batches: plan.batches.map((b) => b.data),
      nextOffset,
      logStartOffset: s.logStartOffset,
      highWatermark: s.highWatermark,
      logEndOffset: s.logEndOffset,
    };
  }

  listOffsets(spec: ListOffsetsSpec): RpcResult<ListOffsetsOk> {
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

  describe(): RpcResult<{ partition: PartitionDescription }> {
    const s = this.#state;
    if (s === null) return unknownPartition();
    return {
      ok: true,
      partition: {
        partition: s.partition,
        logStartOffset: s.logStartOffset,
        highWatermark: s.highWatermark,
        logEndOffset: s.logEndOffset,
        recordCount: s.logEndOffset - s.logStartOffset,
        bytes: s.storedBytes,
      },
    };
  }

  /** Stored batches from the one holding `offset` on, read lazily in offset order. */
  *batchesFrom(offset: number): Generator<StoredBatchRef & { data: Uint8Array }> {
    const rows = this.#sql.iterate<BatchRow>(
      `SELECT base_offset, last_offset, size_bytes, data FROM batches
       WHERE base_offset >= COALESCE((SELECT base_offset FROM batches WHERE base_offset <= ? ORDER BY base_offset DESC LIMIT 1), 0)
       ORDER BY base_offset`,
      offset,
    );
    for (const r of rows) {
      yield { baseOffset: r.base_offset, lastOffset: r.last_offset, sizeBytes: r.size_bytes, data: new Uint8Array(r.data) };
    }
  }

  /**
   * The data of the stored batches from the one holding `offset` on, in offset order, as raw
   * one-column rows `[data]` (no object per row): the read the stream rooms use.
   */
  rawDataFrom(offset: number): IterableIterator<[ArrayBuffer]> {
    return this.#sql.iterateRaw<[ArrayBuffer]>(BATCH_DATA_FROM, offset);
  }

  // ---- reads for the lifecycle room (docs/LIFECYCLE.md) ----

  /** The first `limit` stored batches in offset order, without data: what a truncate slice plans over. */
  headBatches(limit: number): BatchSpan[] {
    return this.#spans("SELECT base_offset, last_offset, size_bytes, record_count, max_timestamp FROM batches ORDER BY base_offset LIMIT ?", limit);
  }

  /** At most `limit` stored batches with `base_offset > after`, offset order, without data (the segment index catch-up). */
  batchSpansAfter(after: number, limit: number): BatchSpan[] {
    return this.#spans("SELECT base_offset, last_offset, size_bytes, record_count, max_timestamp FROM batches WHERE base_offset > ? ORDER BY base_offset LIMIT ?", after, limit);
  }

  /**
   * Stored bytes of the batches holding an offset >= `offset` (whole batches): the backlog size
   * from a mark-delete position (docs/TENANTS.md, backlog quota). One SUM over the rows from the
   * batch holding `offset` on (a primary-key range).
   */
  bytesFrom(offset: number): number {
    return (
      this.#sql.first<{ n: number }>(
        `SELECT COALESCE(SUM(size_bytes), 0) AS n FROM batches
         WHERE base_offset >= COALESCE((SELECT base_offset FROM batches WHERE base_offset <= ? ORDER BY base_offset DESC LIMIT 1), 0) AND last_offset >= ?`,
        offset,
        offset,
      )?.n ?? 0
    );
  }

  /** At most `limit` stored batches holding an offset >= `offset`, offset order, without data (a backlog eviction plans over them). */
  batchSpansFrom(offset: number, limit: number): BatchSpan[] {
    return this.#spans(
      `SELECT base_offset, last_offset, size_bytes, record_count, max_timestamp FROM batches
       WHERE base_offset >= COALESCE((SELECT base_offset FROM batches WHERE base_offset <= ? ORDER BY base_offset DESC LIMIT 1), 0) AND last_offset >= ?
       ORDER BY base_offset LIMIT ?`,
      offset,
      offset,
      limit,
    );
  }

  /** True when some stored batch lies wholly below `offset` (rows a truncate slice would delete). */
  hasBatchesBelow(offset: number): boolean {
    return this.#sql.first("SELECT 1 AS x FROM batches WHERE last_offset < ? LIMIT 1", offset) !== undefined;
  }

  /**
   * Stored batches with `last_offset >= from` and `base_offset < end`, offset order, with data:
   * at most `maxRows` rows and, after the first, `maxBytes` bytes (a compaction slice).
   * @returns the rows and whether the range held no more.
   */
  batchesInRange(from: number, end: number, maxRows: number, maxBytes: number): { rows: (BatchSpan & { data: Uint8Array })[]; exhausted: boolean } {
    const rows: (BatchSpan & { data: Uint8Array })[] = [];
    let bytes = 0;
    const it = this.#sql.iterate<BatchRow & { record_count: number; max_timestamp: number }>(
      "SELECT base_offset, last_offset, size_bytes, record_count, max_timestamp, data FROM batches WHERE last_offset >= ? AND base_offset < ? ORDER BY base_offset",
      from,
      end,
    );
    for (const r of it) {
      if (rows.length > 0 && (rows.length >= maxRows || bytes + r.size_bytes > maxBytes)) return { rows, exhausted: false };
      rows.push({ baseOffset: r.base_offset, lastOffset: r.last_offset, bytes: r.size_bytes, records: r.record_count, maxTimestamp: r.max_timestamp, data: new Uint8Array(r.data) });
      bytes += r.size_bytes;
    }
    return { rows, exhausted: true };
  }

  // ---- reads for a replica's snapshot catch-up (docs/RAFT.md "Snapshot catch-up") ----

  /**
   * Stored batches with `last_offset >= from` and `base_offset < end`, offset order, every
   * column: the first row always, then rows while the chunk stays within `maxBytes` (a Durable
   * Object RPC argument must stay well below 32 MiB; a row is at most ~2 MB).
   */
  batchRowsInRange(from: number, end: number, maxBytes: number): StoredBatch[] {
    const out: StoredBatch[] = [];
    let bytes = 0;
    for (const r of this.#sql.iterateRaw<[number, number, number, number, number, number, number, number, number, number, number, number, ArrayBuffer]>(
      // A primary-key range from the batch holding `from` (no scan of the rows below it).
      `SELECT ${BATCH_COLUMNS} FROM batches
       WHERE base_offset >= COALESCE((SELECT base_offset FROM batches WHERE base_offset <= ? ORDER BY base_offset DESC LIMIT 1), 0)
         AND base_offset < ? AND last_offset >= ?
       ORDER BY base_offset`,
      from,
      end,
      from,
    )) {
      if (out.length > 0 && bytes + r[11] > maxBytes) break;
      bytes += r[11];
      out.push({
        baseOffset: r[0],
        lastOffset: r[1],
        recordCount: r[2],
        producerId: r[3],
        producerEpoch: r[4],
        baseSequence: r[5],
        partitionLeaderEpoch: r[6],
        attributes: r[7],
        baseTimestamp: r[8],
        maxTimestamp: r[9],
        runningMaxTimestamp: r[10],
        sizeBytes: r[11],
        data: new Uint8Array(r[12]),
      });
    }
    return out;
  }

  /** The staged batches' count, bytes, and the running max timestamp of the last one (-1: none). */
  stagedSummary(): { rows: number; bytes: number; runningMaxTimestamp: number } {
    const a = this.#sql.first<{ n: number; b: number | null }>("SELECT COUNT(*) AS n, SUM(size_bytes) AS b FROM batches_staged")!;
    const last = this.#sql.first<{ m: number }>("SELECT running_max_timestamp AS m FROM batches_staged ORDER BY base_offset DESC LIMIT 1");
    return { rows: a.n, bytes: a.b ?? 0, runningMaxTimestamp: last?.m ?? -1 };
  }

  #spans(query: string, ...params: SqlStorageValue[]): BatchSpan[] {
    const out: BatchSpan[] = [];
    for (const [base, last, bytes, records, maxTimestamp] of this.#sql.iterateRaw<[number, number, number, number, number]>(query, ...params)) {
      out.push({ baseOffset: base, lastOffset: last, bytes, records, maxTimestamp });
    }
    return out;
  }

  /** Answer for a recognised retry: the original offsets and the timestamps as stored. */
  duplicateAnswer(entry: ProducerBatchEntry): RpcResult<AppendOk> {
    const s = this.#state;
    if (s === null) return unknownPartition();
    const timestamps: number[] = [];
    let logAppendTime: number | null = null;
    for (const b of this.batchesFrom(entry.firstOffset)) {
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
      highWatermark: s.highWatermark,
    };
  }

  /** First record with timestamp >= T: the first batch whose running max reaches T holds it. */
  #firstAtOrAfter(s: PartitionState, timestamp: number): ListOffsetsOk {
    const row = this.#sql.first<{ data: ArrayBuffer }>("SELECT data FROM batches WHERE running_max_timestamp >= ? ORDER BY running_max_timestamp, base_offset LIMIT 1", timestamp);
    if (row === undefined) return { offset: null, timestamp: null };
    const { records } = decodeBatch(new Uint8Array(row.data), 0, { verifyCrc: false });
    const hit = firstAtOrAfterTimestamp(records, timestamp, s.logStartOffset);
    // Invariant of the index: the batch where the running max first reaches T holds a record >= T.
    if (hit === null) throw new Error(`running max index points at a batch without a record at or after ${timestamp}`);
    return hit;
  }
}

export function unknownPartition(): ErrorResult {
  return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist (never created, or its topic was deleted).");
}
