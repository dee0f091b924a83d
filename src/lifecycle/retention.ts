/**
 * Retention and deleteRecords (pure): which closed segments `cleanup.policy=delete` drops, the
 * new log start offset, and the bounded `truncateBefore` slices that delete the rows.
 *
 * Two steps, as Kafka's UnifiedLog: first the log start offset moves (one small commit: from then
 * on a fetch below it is OFFSET_OUT_OF_RANGE), then the batch rows below it are deleted in slices
 * of at most `maxRows` rows / `maxBytes` bytes per alarm slice ({@link planTruncateSlice}), which is
 * stateless: the rows still stored are the progress, so a crash resumes where it stopped.
 */
import { errorResult, type ErrorResult } from "../protocol/errors.ts";
import type { LogBounds } from "../partition/core.ts";
import { segmentEnd, type SegmentCommand, type SegmentRow } from "./segments.ts";

/** Retention settings of a topic (Kafka's names; -1 = unlimited). */
export interface RetentionConfig {
  /** `cleanup.policy` includes `delete`. Without it only segments below the log start go. */
  delete: boolean;
  /** `retention.ms`: a closed segment goes when nowMs - its maxTimestamp > retentionMs. */
  retentionMs: number;
  /** `retention.bytes`: head segments go while the log stays above this size without them. */
  retentionBytes: number;
}

/** Why a segment is dropped (Kafka's three deleteOldSegments passes). */
export type RetentionReason = "retention.ms" | "retention.bytes" | "log-start";

export interface RetentionInput {
  /** The whole index, offset order. */
  segments: readonly SegmentRow[];
  bounds: LogBounds;
  /**
   * Lowest offset another room still needs: min over the rooms' `retainFrom()` (subscriptions'
   * slowest mark-delete position, stream forks, Raft followers, the LSO), or null for none.
   */
  floor: number | null;
  nowMs: number;
}

export interface RetentionPlan {
  /** The new log start offset (>= the old one): exactly the first retained offset. */
  logStartOffset: number;
  /** Dropped segments, head first, with the first reason that applied. */
  dropped: { id: number; reason: RetentionReason }[];
  /**
   * Commands to commit together with the new log start: the active segment closes first when it
   * goes too (only below the log start), local-only rows are deleted, and a
   * segment with an R2 copy is marked `deleting` (its object is deleted after the commit,
   * src/lifecycle/tiered.ts). The batch rows go by {@link planTruncateSlice}.
   */
  commands: SegmentCommand[];
}

/**
 * Which head segments retention drops (Kafka's UnifiedLog.deleteOldSegments and deletableSegments):
 * walking from the head, a segment goes while one of these holds, and the walk stops at the first
 * that stays (only a prefix is ever dropped):
 * - log start: the segment lies wholly below the log start offset (deleteRecords moved it);
 * - `retention.ms` (policy delete, >= 0): nowMs - segment maxTimestamp > retention.ms;
 * - `retention.bytes` (policy delete, >= 0): the log's size minus this segment stays >= retention.bytes.
 * A segment is eligible only when its whole range ends at or below `min(highWatermark, floor)`:
 * the log start never passes the high watermark (KAFKA-5634, field case B5) nor what a room needs.
 * The active segment goes only when it lies wholly below the log start (deleteRecords to the high
 * watermark; it is closed in the same commit): retention.ms / retention.bytes wait for it to roll
 * (segment.bytes, or segment.ms on the idle-roll timer, `planIdleRoll`). An empty log keeps its
 * log start. Sizes count local and remote bytes (KIP-405: retention covers the whole log).
 */
export function planRetention(input: RetentionInput, cfg: RetentionConfig): RetentionPlan {
  const { segments, bounds, nowMs } = input;
  const limit = Math.min(bounds.highWatermark, input.floor ?? Number.POSITIVE_INFINITY);
  let excessBytes = cfg.retentionBytes >= 0 ? segments.reduce((sum, s) => sum + s.bytes, 0) - cfg.retentionBytes : Number.NEGATIVE_INFINITY;
  let logStartOffset = bounds.logStartOffset;
  const dropped: RetentionPlan["dropped"] = [];
  const commands: SegmentCommand[] = [];
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.remote === "deleting") {
      // Already dropped by an earlier run whose R2 delete is pending: not counted, not re-planned.
      excessBytes -= seg.bytes;
      continue;
    }
    const end = segmentEnd(segments, i, bounds.logEndOffset);
    if (end > limit) break;
    let reason: RetentionReason | null = null;
    if (end <= bounds.logStartOffset) reason = "log-start";
    // The active segment is never dropped by retention (issue 10): it goes once it rolled
    // (segment.bytes, or segment.ms on the idle-roll timer), or when deleteRecords passed it.
    else if (!seg.closed) break;
    else if (cfg.delete && cfg.retentionMs >= 0 && nowMs - seg.maxTimestamp > cfg.retentionMs) reason = "retention.ms";
    else if (cfg.delete && excessBytes - seg.bytes >= 0) reason = "retention.bytes";
    if (reason === null) break;
    excessBytes -= seg.bytes;
    dropped.push({ id: seg.id, reason });
    if (!seg.closed) commands.push({ kind: "segClose", id: seg.id });
    commands.push(seg.r2Key === null ? { kind: "segDelete", id: seg.id } : { kind: "segUpdate", id: seg.id, patch: { remote: "deleting" } });
    logStartOffset = Math.max(logStartOffset, end);
  }
  return { logStartOffset, dropped, commands };
}

/** The answer of a valid deleteRecords. */
export interface DeleteRecordsPlan {
  /** Kafka's low watermark: the log start offset after the call. */
  logStartOffset: number;
  /** False for a no-op (an offset at or below the current log start). */
  changed: boolean;
}

/**
 * deleteRecords (KIP-107, Kafka's DeleteRecords API): truncate the head before `offset`.
 * - `-1` means the high watermark (KAFKA-19699);
 * - any other negative offset, or one above the high watermark, is OFFSET_OUT_OF_RANGE (Kafka's
 *   code 1) with the bounds, and nothing changes;
 * - an offset at or below the log start is a no-op that answers the current log start (Kafka;
 *   redpanda#22905 used to refuse it);
 * - a non-integer is INVALID_OFFSET.
 * Field case B1. Unlike retention, deleteRecords is not held back by the rooms' floor: the log start
 * moves as asked, and only the physical deletion waits for the floor ({@link truncationTarget}).
 */
export function planDeleteRecords(offset: number, bounds: LogBounds): DeleteRecordsPlan | ErrorResult {
  if (!Number.isSafeInteger(offset)) return errorResult("INVALID_OFFSET", `deleteRecords offset must be an integer, got ${offset}.`, { offset });
  const target = offset === -1 ? bounds.highWatermark : offset;
  if (target < 0 || target > bounds.highWatermark) {
    return errorResult("OFFSET_OUT_OF_RANGE", `deleteRecords offset ${offset} is outside [0, ${bounds.highWatermark}] (-1 = the high watermark).`, {
      offset,
      logStartOffset: bounds.logStartOffset,
      logEndOffset: bounds.logEndOffset,
      highWatermark: bounds.highWatermark,
    });
  }
  if (target <= bounds.logStartOffset) return { logStartOffset: bounds.logStartOffset, changed: false };
  return { logStartOffset: target, changed: true };
}

/**
 * Offset below which batch rows may be physically deleted: the log start, held back by the rooms'
 * floor (a Durable Streams fork reads its parent's rows below the parent's log start).
 */
export function truncationTarget(logStartOffset: number, floor: number | null): number {
  return floor === null ? logStartOffset : Math.min(logStartOffset, floor);
}

/** A stored batch as the truncation slicer sees it. */
export interface StoredBatchSpan {
  baseOffset: number;
  lastOffset: number;
  bytes: number;
}

/** Bounds of one alarm slice of row deletion. */
export interface SliceLimits {
  /** At most this many batch rows per slice (SQLite work is per row). */
  maxRows: number;
  /** At most this many stored bytes per slice (the first row always goes). */
  maxBytes: number;
}

/** One slice of physical deletion: the log deletes batch rows with last_offset < `offset`. */
export interface TruncateCommand {
  kind: "truncateBefore";
  offset: number;
}

export interface TruncateSlice {
  command: TruncateCommand | null;
  /** True when no stored batch lies wholly below `before` after this slice. */
  done: boolean;
}

/**
 * One bounded slice of deleting the rows wholly below `before` (the log start, or the local start
 * of a tiered log). `head` is the first stored batches in offset order (the shell reads at most
 * `maxRows + 1`). Whole batches only: a batch that holds `before` stays, and the fetch skips its
 * records below the log start (field case B2). Stateless and idempotent: re-running a slice after
 * a crash plans the same command, or a later one.
 */
export function planTruncateSlice(before: number, head: readonly StoredBatchSpan[], limits: SliceLimits): TruncateSlice {
  let rows = 0;
  let bytes = 0;
  let offset: number | null = null;
  for (const b of head) {
    if (b.lastOffset >= before) return { command: offset === null ? null : { kind: "truncateBefore", offset }, done: true };
    if (rows > 0 && (rows >= limits.maxRows || bytes + b.bytes > limits.maxBytes)) return { command: { kind: "truncateBefore", offset: offset! }, done: false };
    rows++;
    bytes += b.bytes;
    offset = b.lastOffset + 1;
  }
  // Ran out of `head`: done only if the shell gave everything it had (fewer rows than a slice).
  return { command: offset === null ? null : { kind: "truncateBefore", offset }, done: head.length <= limits.maxRows };
}
