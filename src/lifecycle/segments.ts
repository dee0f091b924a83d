/**
 * Segments: the lifecycle's index over the log (pure; no I/O, no clock: `nowMs` is passed in).
 *
 * A segment is a contiguous offset range of stored batches, the unit that retention drops, the
 * cleaner compacts and tiered storage offloads (Kafka's LogSegment). Edgelog does not move
 * batches into segment files: the batches stay rows of `batches` and a segment is one row of the
 * lifecycle room's `seg_segments` table ({@link SegmentRow}) naming an offset range, so no column
 * is added to `batches` and existing partitions migrate without rewriting a batch
 * ({@link migrateSlice}).
 *
 * Ranges: segment i covers [baseOffset_i, baseOffset_{i+1}) (the last one up to the log end
 * offset). Compaction may leave gaps inside that range; it never moves a segment boundary.
 */

/** What the lifecycle needs of one stored batch (a `batches` row without its data). */
export interface BatchMeta {
  baseOffset: number;
  lastOffset: number;
  /** Stored bytes of the batch (`batches.size_bytes`). */
  bytes: number;
  /** Records in the batch. */
  records: number;
  /** Largest record timestamp of the batch, ms (CreateTime, or the append time under LogAppendTime). */
  maxTimestamp: number;
  /** Wall-clock time the partition appended the batch, ms. */
  appendMs: number;
}

/** Where a segment's batches live: rows of `batches` (local), an R2 object (remote), or both. */
export type SegmentLocation = "local" | "both" | "remote";

/**
 * A side effect on R2 that the segment owes, recorded in the same commit that decided it so that a
 * crash cannot forget it: `copying` = upload `r2Key` then record `both`; `deleting` = delete
 * `r2Key` then drop the row (src/lifecycle/tiered.ts).
 */
export type RemoteState = "none" | "copying" | "deleting";

/** One row of `seg_segments`. Offsets inclusive; bytes and records are what is stored now. */
export interface SegmentRow {
  /**
   * The base offset the segment was opened at (Kafka names segment files the same way). Offsets
   * are never reused, so neither are ids, even after retention emptied the index.
   */
  id: number;
  baseOffset: number;
  /** Last offset appended to the segment (compaction keeps it even when that record goes). */
  lastOffset: number;
  bytes: number;
  records: number;
  /** Largest record timestamp, ms: what retention.ms and min.compaction.lag.ms compare (as Kafka). */
  maxTimestamp: number;
  /** Append time of the segment's first batch, ms: what segment.ms and max.compaction.lag.ms compare. */
  firstAppendMs: number;
  /** Append time of the segment's last batch, ms: tombstones stay delete.retention.ms past it. */
  lastAppendMs: number;
  /** False for the active segment (the last one, still taking appends); true once rolled. */
  closed: boolean;
  location: SegmentLocation;
  /** The segment's R2 object key once an upload was decided, else null. */
  r2Key: string | null;
  remote: RemoteState;
}

/** Roll settings: `segment.bytes` and `segment.ms` of the topic. */
export interface RollConfig {
  segmentBytes: number;
  segmentMs: number;
}

/** A change of the segment index, applied by the lifecycle room inside the log's commit. */
export type SegmentCommand =
  /** Insert a new active segment holding one batch; close `closeId` first when not null. */
  | { kind: "segRoll"; closeId: number | null; row: SegmentRow }
  /** Add one batch to the active segment `id`. */
  | { kind: "segExtend"; id: number; lastOffset: number; bytes: number; records: number; maxTimestamp: number; lastAppendMs: number }
  /** Close the active segment `id` without a new one (idle roll; the next append opens one). */
  | { kind: "segClose"; id: number }
  /** Change fields of segment `id` (tiering state, stats after compaction). */
  | { kind: "segUpdate"; id: number; patch: Partial<Omit<SegmentRow, "id" | "baseOffset">> }
  /** Delete the row of segment `id` (its batches are gone or go by `truncateBefore`). */
  | { kind: "segDelete"; id: number };

/** Why the active segment rolls before a batch, or null when the batch joins it. */
export type RollReason = "none" | "segment.bytes" | "segment.ms";

/**
 * Whether `batch` starts a new segment instead of joining `active`. Checked on append (Kafka's
 * LogSegment.shouldRoll):
 * - `segment.bytes`: the active segment is not empty and would grow past segment.bytes (a batch
 *   larger than segment.bytes gets a segment of its own);
 * - `segment.ms`: segment.ms has passed since the active segment's first append.
 *
 * Edgelog measures segment.ms on append time, where Kafka compares the incoming batch's max
 * timestamp with the first batch's (KAFKA-4099): record timestamps are the producer's to choose,
 * and old CreateTime timestamps must not roll a segment per append (field case B6).
 */
export function rollReason(active: SegmentRow | null, batch: BatchMeta, cfg: RollConfig): RollReason {
  if (active === null || active.closed) return "none";
  if (active.bytes > 0 && active.bytes + batch.bytes > cfg.segmentBytes) return "segment.bytes";
  if (batch.appendMs - active.firstAppendMs >= cfg.segmentMs) return "segment.ms";
  return "none";
}

/**
 * The index change for appending `batch` after `last` (the last segment row, or null for an empty
 * index): extend the active segment, or roll to a new one with id `last.id + 1`.
 * @throws Error when `batch` does not come after `last` (a bug in the caller).
 */
export function planSegmentAppend(last: SegmentRow | null, batch: BatchMeta, cfg: RollConfig): SegmentCommand {
  if (last !== null && batch.baseOffset <= last.lastOffset) {
    throw new Error(`batch ${batch.baseOffset} does not come after segment ${last.id} ending at ${last.lastOffset}`);
  }
  if (last !== null && !last.closed && rollReason(last, batch, cfg) === "none") {
    return {
      kind: "segExtend",
      id: last.id,
      lastOffset: batch.lastOffset,
      bytes: last.bytes + batch.bytes,
      records: last.records + batch.records,
      maxTimestamp: Math.max(last.maxTimestamp, batch.maxTimestamp),
      lastAppendMs: Math.max(last.lastAppendMs, batch.appendMs),
    };
  }
  return {
    kind: "segRoll",
    closeId: last !== null && !last.closed ? last.id : null,
    row: {
      id: batch.baseOffset,
      baseOffset: batch.baseOffset,
      lastOffset: batch.lastOffset,
      bytes: batch.bytes,
      records: batch.records,
      maxTimestamp: batch.maxTimestamp,
      firstAppendMs: batch.appendMs,
      lastAppendMs: batch.appendMs,
      closed: false,
      location: "local",
      r2Key: null,
      remote: "none",
    },
  };
}

/**
 * Whether the active segment should close on a timer although nothing is appended: segment.ms has
 * passed since its first append, or (compacted topics) max.compaction.lag.ms has, so that its
 * records become cleanable (KIP-354). Kafka rolls only on append; Edgelog rolls on the lifecycle
 * timer too, so that an idle topic's last records are retained, compacted and tiered on time.
 * @returns the `segClose` command, or null.
 */
export function planIdleRoll(active: SegmentRow | null, cfg: RollConfig & { compact: boolean; maxCompactionLagMs: number }, nowMs: number): SegmentCommand | null {
  if (active === null || active.closed) return null;
  const age = nowMs - active.firstAppendMs;
  if (age >= cfg.segmentMs || (cfg.compact && age >= cfg.maxCompactionLagMs)) return { kind: "segClose", id: active.id };
  return null;
}

/**
 * Applies `cmd` to an in-memory index (offset order). The room does the same in SQL; tests and
 * models use this. Returns a new array; rows are not mutated.
 * @throws Error for a command that names no row.
 */
export function applySegmentCommand(index: readonly SegmentRow[], cmd: SegmentCommand): SegmentRow[] {
  const find = (id: number): number => {
    const i = index.findIndex((r) => r.id === id);
    if (i < 0) throw new Error(`no segment ${id}`);
    return i;
  };
  const out = [...index];
  switch (cmd.kind) {
    case "segRoll":
      if (cmd.closeId !== null) out[find(cmd.closeId)] = { ...out[find(cmd.closeId)]!, closed: true };
      out.push(cmd.row);
      return out;
    case "segExtend": {
      const i = find(cmd.id);
      const { kind: _k, id: _i, ...fields } = cmd;
      out[i] = { ...out[i]!, ...fields };
      return out;
    }
    case "segClose":
      out[find(cmd.id)] = { ...out[find(cmd.id)]!, closed: true };
      return out;
    case "segUpdate":
      out[find(cmd.id)] = { ...out[find(cmd.id)]!, ...cmd.patch };
      return out;
    case "segDelete":
      out.splice(find(cmd.id), 1);
      return out;
  }
}

/**
 * Builds the segment index of a partition that has batches but no `seg_segments` rows yet (the
 * lifecycle room's first migration), in bounded slices: pass the last row built so far (null at
 * first) and the next batches in offset order (`base_offset > last.lastOffset`, at most what one
 * alarm slice may read); returns the commands, to commit with the slice. No batch is read twice or
 * rewritten; a crash resumes from the last committed row.
 *
 * `batches` have no stored append time: the shell passes `appendMs = nowMs` of the migration for
 * each, so migrated segments roll on segment.bytes only and the last one stays active (its
 * segment.ms counts from the migration). Time retention reads maxTimestamp, which the rows have.
 */
export function migrateSlice(last: SegmentRow | null, batches: readonly BatchMeta[], cfg: RollConfig): SegmentCommand[] {
  const out: SegmentCommand[] = [];
  let tail = last;
  let index: SegmentRow[] = tail === null ? [] : [tail];
  for (const b of batches) {
    const cmd = planSegmentAppend(tail, b, cfg);
    out.push(cmd);
    index = applySegmentCommand(index, cmd).slice(-1);
    tail = index[0] ?? null;
  }
  return out;
}

/** Segment holding `offset` (the last one with baseOffset <= offset), or null when before the first. */
export function segmentAt(index: readonly SegmentRow[], offset: number): SegmentRow | null {
  let lo = 0;
  let hi = index.length - 1;
  let found: SegmentRow | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const row = index[mid]!;
    if (row.baseOffset <= offset) {
      found = row;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** First offset after segment `i` of `index`: the next segment's base, or `logEndOffset` for the last. */
export function segmentEnd(index: readonly SegmentRow[], i: number, logEndOffset: number): number {
  return index[i + 1]?.baseOffset ?? Math.max(logEndOffset, index[i]!.lastOffset + 1);
}

/**
 * Index invariants: ids and base offsets strictly increasing, each row's lastOffset >= baseOffset
 * and below the next base, at most one open segment and only the last. Returns the first violation
 * or undefined (the room's checkInvariants).
 */
export function checkSegmentIndex(index: readonly SegmentRow[]): string | undefined {
  for (let i = 0; i < index.length; i++) {
    const r = index[i]!;
    if (r.lastOffset < r.baseOffset) return `segment ${r.id}: lastOffset ${r.lastOffset} < baseOffset ${r.baseOffset}`;
    if (!r.closed && i !== index.length - 1) return `segment ${r.id} is open but not the last`;
    const next = index[i + 1];
    if (next !== undefined) {
      if (next.id <= r.id) return `segment ids not increasing at ${next.id}`;
      if (next.baseOffset <= r.lastOffset) return `segment ${next.id} starts at ${next.baseOffset}, inside segment ${r.id} ending at ${r.lastOffset}`;
    }
    if (r.location !== "local" && r.r2Key === null) return `segment ${r.id} is ${r.location} without an r2 key`;
  }
  return undefined;
}
