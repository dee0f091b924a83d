/**
 * An in-memory partition driven by the pure lifecycle core, as the lifecycle room will drive it:
 * batches (rows of `batches`), the segment index (`seg_segments`), the cleaner's checkpoint and
 * key-map rows, and a fetch built from src/partition/core.ts's planFetch and the read helpers.
 * Every command goes through the same apply functions a room would run inside its commit. Used by
 * the lifecycle-*.test.ts files (not a test file itself).
 */
import {
  applySegmentCommand,
  compactionReadRange,
  compactionStep,
  INITIAL_COMPACTION_STATE,
  nextFetchOffset,
  planCompactionPass,
  planDeleteRecords,
  planIdleRoll,
  planRetention,
  planSegmentAppend,
  planTruncateSlice,
  restoreCompaction,
  startCompaction,
  checkpointOf,
  truncationTarget,
  visibleRecords,
  type CompactionCheckpoint,
  type CompactionCommand,
  type CompactionConfig,
  type CompactionState,
  type KeyRow,
  type RetentionConfig,
  type RollConfig,
  type SegmentCommand,
  type SegmentRow,
} from "../../src/lifecycle/index.ts";
import { planFetch, type LogBounds } from "../../src/partition/core.ts";

export interface SimRecord {
  offset: number;
  key: string | null;
  /** null = tombstone. */
  value: string | null;
  timestamp: number;
}

export interface SimBatch {
  baseOffset: number;
  lastOffset: number;
  records: SimRecord[];
  appendMs: number;
}

/** Stored size of a batch: a fixed header plus the records' keys and values (any monotone measure will do). */
export function batchBytes(records: readonly SimRecord[]): number {
  return 61 + records.reduce((n, r) => n + 8 + (r.key?.length ?? 0) + (r.value?.length ?? 0), 0);
}

export interface SimConfig {
  roll: RollConfig;
  retention: RetentionConfig;
  compaction: CompactionConfig;
}

export const SIM_DEFAULTS: SimConfig = {
  roll: { segmentBytes: 1 << 30, segmentMs: 7 * 86_400_000 },
  retention: { delete: true, retentionMs: -1, retentionBytes: -1 },
  compaction: { compact: false, deleteRetentionMs: 86_400_000, minCompactionLagMs: 0, maxCompactionLagMs: Number.MAX_SAFE_INTEGER, minCleanableDirtyRatio: 0.5 },
};

/** A thrown "crash" injected between steps. */
export class Crash extends Error {}

export class SimPartition {
  batches: SimBatch[] = [];
  segments: SegmentRow[] = [];
  logStartOffset = 0;
  logEndOffset = 0;
  /** Equals the log end unless a test holds it back (replication, B5). */
  highWatermark = 0;
  holdHighWatermark: number | null = null;
  floor: number | null = null;
  /** The persisted cleaner state: checkpoint row and key-map rows. */
  checkpoint: CompactionCheckpoint = checkpointOf(INITIAL_COMPACTION_STATE);
  /** The key-map rows (`seg_clean_map`) by sequence number. */
  keyRows = new Map<number, KeyRow>();
  /** The cleaner's in-memory state (lost on a crash). */
  cleaner: CompactionState = INITIAL_COMPACTION_STATE;
  /** Commands applied, for assertions. */
  segmentCommands: SegmentCommand[] = [];

  cfg: SimConfig;

  constructor(cfg: SimConfig = SIM_DEFAULTS) {
    this.cfg = cfg;
  }

  get bounds(): LogBounds {
    return { logStartOffset: this.logStartOffset, logEndOffset: this.logEndOffset, highWatermark: this.highWatermark };
  }

  /** Appends one batch of records (key, value) at nowMs; record timestamps default to nowMs. */
  produce(records: readonly { key: string | null; value: string | null; timestamp?: number }[], nowMs: number): SimBatch {
    const base = this.logEndOffset;
    const batch: SimBatch = {
      baseOffset: base,
      lastOffset: base + records.length - 1,
      records: records.map((r, i) => ({ offset: base + i, key: r.key, value: r.value, timestamp: r.timestamp ?? nowMs })),
      appendMs: nowMs,
    };
    const cmd = planSegmentAppend(
      this.segments[this.segments.length - 1] ?? null,
      {
        baseOffset: batch.baseOffset,
        lastOffset: batch.lastOffset,
        bytes: batchBytes(batch.records),
        records: batch.records.length,
        maxTimestamp: Math.max(...batch.records.map((r) => r.timestamp)),
        appendMs: nowMs,
      },
      this.cfg.roll,
    );
    this.batches.push(batch);
    this.applySegment(cmd);
    this.logEndOffset = batch.lastOffset + 1;
    this.highWatermark = this.holdHighWatermark ?? this.logEndOffset;
    return batch;
  }

  applySegment(cmd: SegmentCommand): void {
    this.segments = applySegmentCommand(this.segments, cmd);
    this.segmentCommands.push(cmd);
  }

  /** The lifecycle timer's idle roll. */
  idleRoll(nowMs: number): boolean {
    const cmd = planIdleRoll(
      this.segments[this.segments.length - 1] ?? null,
      { ...this.cfg.roll, compact: this.cfg.compaction.compact, maxCompactionLagMs: this.cfg.compaction.maxCompactionLagMs },
      nowMs,
    );
    if (cmd !== null) this.applySegment(cmd);
    return cmd !== null;
  }

  /** Closes the active segment (as an idle roll would once segment.ms passes). */
  roll(): void {
    const last = this.segments[this.segments.length - 1];
    if (last !== undefined && !last.closed) this.applySegment({ kind: "segClose", id: last.id });
  }

  /** Physical truncation below `before`, in slices of `maxRows`; returns the slice count. */
  truncate(before: number, maxRows = 2): number {
    let slices = 0;
    for (;;) {
      const head = this.batches.slice(0, maxRows + 1).map((b) => ({ baseOffset: b.baseOffset, lastOffset: b.lastOffset, bytes: batchBytes(b.records) }));
      const slice = planTruncateSlice(before, head, { maxRows, maxBytes: Number.MAX_SAFE_INTEGER });
      if (slice.command !== null) {
        const off = slice.command.offset;
        this.batches = this.batches.filter((b) => b.lastOffset >= off);
        slices++;
      }
      if (slice.done) return slices;
    }
  }

  /** One retention run: plan, commit (log start + segment rows), then truncate in slices. */
  runRetention(nowMs: number): number {
    const plan = planRetention({ segments: this.segments, bounds: this.bounds, floor: this.floor, nowMs }, this.cfg.retention);
    for (const c of plan.commands) this.applySegment(c);
    this.logStartOffset = plan.logStartOffset;
    this.truncate(truncationTarget(this.logStartOffset, this.floor));
    return plan.logStartOffset;
  }

  deleteRecords(offset: number): ReturnType<typeof planDeleteRecords> {
    const r = planDeleteRecords(offset, this.bounds);
    if ("logStartOffset" in r && r.changed) {
      this.logStartOffset = r.logStartOffset;
      // Segments wholly below the new log start go with the next retention run (reason "log-start").
      this.truncate(truncationTarget(this.logStartOffset, this.floor));
    }
    return r;
  }

  /** Applies one step's commands, as the room's commit would (one transaction). */
  applyCompaction(commands: readonly CompactionCommand[]): void {
    for (const c of commands) {
      switch (c.kind) {
        case "rewriteBatch": {
          const b = this.batches.find((x) => x.baseOffset === c.baseOffset);
          if (b !== undefined) b.records = b.records.filter((r) => c.keep.includes(r.offset));
          break;
        }
        case "dropBatch":
          this.batches = this.batches.filter((x) => x.baseOffset !== c.baseOffset);
          break;
        case "keyRows":
          for (const r of c.put) this.keyRows.set(r.seq, { ...r, data: r.data.slice() });
          if (c.dropBelow !== null) for (const seq of [...this.keyRows.keys()]) if (seq < c.dropBelow) this.keyRows.delete(seq);
          break;
        case "keysClear":
          this.keyRows.clear();
          break;
        case "checkpoint":
          this.checkpoint = structuredClone(c.checkpoint);
          break;
      }
    }
    this.refreshSegmentStats();
  }

  /** After compaction the room recomputes the bytes and records of the segments it touched. */
  refreshSegmentStats(): void {
    this.segments = this.segments.map((s, i) => {
      const end = this.segments[i + 1]?.baseOffset ?? Number.POSITIVE_INFINITY;
      const inSeg = this.batches.filter((b) => b.baseOffset >= s.baseOffset && b.baseOffset < end);
      return { ...s, bytes: inSeg.reduce((n, b) => n + batchBytes(b.records), 0), records: inSeg.reduce((n, b) => n + b.records.length, 0) };
    });
  }

  /** The shell's read for a compaction step: batches with lastOffset >= from and baseOffset < end, at most `maxBatches`. */
  compactionSlice(maxBatches: number): { batches: SimBatch[]; exhausted: boolean } {
    const range = compactionReadRange(this.cleaner);
    if (range === null) return { batches: [], exhausted: true };
    const all = this.batches.filter((b) => b.lastOffset >= range.from && b.baseOffset < range.end);
    return { batches: all.slice(0, maxBatches), exhausted: all.length <= maxBatches };
  }

  /** Throws unless a restart now would rebuild exactly the in-memory cleaner state (checkpoint, key map, its size). */
  expectRestorable(): void {
    const back = restoreCompaction(this.checkpoint, this.keyRows.values());
    const show = (s: CompactionState) => JSON.stringify({ ...checkpointOf(s), latest: [...s.latest].sort(), mapBytes: s.mapBytes });
    if (show(back) !== show(this.cleaner)) throw new Error(`restore differs from memory:\n${show(back)}\n${show(this.cleaner)}`);
  }

  /** Restart: the in-memory cleaner state is rebuilt from the persisted rows. */
  restart(): void {
    this.cleaner = restoreCompaction(this.checkpoint, this.keyRows.values());
  }

  /**
   * One compaction run: decide, then step to idle. `crashAt(step)` true throws {@link Crash} before
   * that step's commit (the transaction never happened); `crashAfterCommands(step)` applies the
   * step's writes but not its checkpoint (a non-atomic shell, the harsher case). Returns the
   * number of steps, or -1 when no pass started.
   */
  runCompaction(
    nowMs: number,
    opts: { maxBatches?: number; maxMapKeys?: number; maxMapBytes?: number; crashAt?: (step: number) => boolean; crashAfterCommands?: (step: number) => boolean } = {},
  ): number {
    const maxBatches = opts.maxBatches ?? 2;
    const maxMapKeys = opts.maxMapKeys ?? 1_000_000;
    const limits = opts.maxMapBytes === undefined ? { maxMapKeys } : { maxMapKeys, maxMapBytes: opts.maxMapBytes };
    let step = 0;
    if (this.cleaner.phase === "idle") {
      const d = planCompactionPass(this.cleaner, { segments: this.segments, bounds: this.bounds, lastStableOffset: null, nowMs }, this.cfg.compaction);
      if (!d.run) return -1;
      const r = startCompaction(this.cleaner, d.pass);
      if (opts.crashAt?.(step)) throw new Crash(`crash before start`);
      if (opts.crashAfterCommands?.(step)) {
        this.applyCompaction(r.commands.filter((c) => c.kind !== "checkpoint"));
        throw new Crash(`crash after the writes of the start`);
      }
      this.applyCompaction(r.commands);
      this.cleaner = r.state;
      step++;
    }
    while (this.cleaner.phase !== "idle") {
      const slice = this.compactionSlice(maxBatches);
      const r = compactionStep(
        this.cleaner,
        {
          batches: slice.batches.map((b) => ({
            baseOffset: b.baseOffset,
            lastOffset: b.lastOffset,
            records: b.records.map((x) => ({ offset: x.offset, key: x.key, tombstone: x.value === null })),
          })),
          exhausted: slice.exhausted,
        },
        this.cfg.compaction,
        limits,
      );
      if (opts.crashAt?.(step)) throw new Crash(`crash at step ${step}`);
      if (opts.crashAfterCommands?.(step)) {
        this.applyCompaction(r.commands.filter((c) => c.kind !== "checkpoint"));
        throw new Crash(`crash after the writes of step ${step}`);
      }
      this.applyCompaction(r.commands);
      this.cleaner = r.state;
      this.expectRestorable();
      step++;
    }
    return step;
  }

  /**
   * A JSON-style fetch: planFetch over the stored batches (below the high watermark), the records
   * at or after `offset` and the log start, and nextOffset past any gap.
   */
  fetch(offset: number, maxRecords = 1000): { records: SimRecord[]; nextOffset: number } | { error: "OFFSET_OUT_OF_RANGE"; logStartOffset: number } {
    if (offset < this.logStartOffset || offset > this.logEndOffset) return { error: "OFFSET_OUT_OF_RANGE", logStartOffset: this.logStartOffset };
    const rows = this.batches.filter((b) => b.baseOffset < this.highWatermark).map((b) => ({ ...b, sizeBytes: batchBytes(b.records) }));
    const plan = planFetch(rows, { offset, maxRecords, maxBytes: 1 << 20 });
    const records: SimRecord[] = [];
    let lastBatchOffset: number | null = null;
    for (const b of plan.batches) {
      for (const r of visibleRecords(b.records, offset, this.logStartOffset, this.highWatermark)) {
        if (records.length < maxRecords) records.push(r);
      }
      lastBatchOffset = b.lastOffset;
      if (records.length >= maxRecords) {
        // Cut inside a batch: continue after the last record handed out (B2, maxRecords).
        return { records, nextOffset: records[records.length - 1]!.offset + 1 };
      }
    }
    const more = lastBatchOffset !== null && rows.some((b) => b.baseOffset > lastBatchOffset!);
    return { records, nextOffset: nextFetchOffset({ offset, highWatermark: this.highWatermark, lastBatchOffset, more }) };
  }

  /** Reads from `offset` to the high watermark; throws if a fetch does not advance. */
  readAll(offset: number, maxRecords = 3): SimRecord[] {
    const out: SimRecord[] = [];
    let at = offset;
    for (let i = 0; at < this.highWatermark; i++) {
      const r = this.fetch(at, maxRecords);
      if ("error" in r) throw new Error(`fetch at ${at}: ${r.error}`);
      if (r.nextOffset <= at) throw new Error(`fetch at ${at} below HW ${this.highWatermark} did not advance`);
      out.push(...r.records);
      at = r.nextOffset;
      if (i > 100_000) throw new Error("read loop");
    }
    return out;
  }
}

/** `key=value@offset` (value `null` for a tombstone), for exact assertions. */
export function show(records: readonly SimRecord[]): string[] {
  return records.map((r) => `${r.key}=${r.value === null ? "null" : JSON.stringify(r.value)}@${r.offset}`);
}
