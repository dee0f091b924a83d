/**
 * A subscription's durable cursor: the mark-delete position plus the individually acknowledged
 * ranges above it (Pulsar's ManagedCursor: `markDeletePosition` and `individualDeletedMessages`).
 *
 * - `markDelete` is the offset of the last message such that it and every message before it are
 *   acknowledged; `-1` means nothing is acknowledged yet (a cursor from the earliest offset of a
 *   fresh log). A cursor created at start offset `s` has `markDelete = s - 1`.
 * - `acked` holds the acknowledged offsets above `markDelete`; it never contains
 *   `markDelete + 1` (that offset would have been folded into the mark-delete position).
 *
 * Acknowledgements only move the mark-delete position forward; only an explicit reset
 * ({@link Cursor.reset}, Pulsar's reset-cursor / seek) may move it backwards.
 *
 * Pure: no I/O, no clock.
 */
import { AckRangeSet, type OffsetRange } from "./ack-ranges.ts";

export class Cursor {
  private md: number;
  private readonly set: AckRangeSet;

  /**
   * @param markDelete initial mark-delete position (>= -1).
   * @param acked acknowledged ranges above it (entries at or below `markDelete` are dropped).
   */
  constructor(markDelete = -1, acked: AckRangeSet = new AckRangeSet()) {
    if (!Number.isSafeInteger(markDelete) || markDelete < -1) throw new RangeError(`markDelete must be an integer >= -1, got ${markDelete}`);
    this.md = markDelete;
    this.set = acked.clone();
    this.normalise();
  }

  /** The mark-delete position (see the module docs). */
  get markDelete(): number {
    return this.md;
  }

  /** The acknowledged ranges above the mark-delete position (a copy). */
  get ackedRanges(): OffsetRange[] {
    return this.set.ranges();
  }

  /** The range set itself (read-only use; for encoding). */
  get ackSet(): AckRangeSet {
    return this.set;
  }

  clone(): Cursor {
    return new Cursor(this.md, this.set);
  }

  isAcked(offset: number): boolean {
    return offset <= this.md || this.set.has(offset);
  }

  /**
   * Acknowledges one offset. @returns true when it was not acknowledged before.
   * @throws RangeError for a negative or non-integer offset (callers validate client input first).
   */
  ackIndividual(offset: number): boolean {
    if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`offset must be a non-negative safe integer, got ${offset}`);
    if (this.isAcked(offset)) return false;
    this.set.add(offset);
    this.normalise();
    return true;
  }

  /**
   * Acknowledges every offset of `[lo, hi]` individually. @returns the number newly acknowledged.
   * @throws RangeError for a malformed range.
   */
  ackRange(lo: number, hi: number): number {
    if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo < 0 || hi < lo) throw new RangeError(`malformed range [${lo}, ${hi}]`);
    if (hi <= this.md) return 0;
    const a = Math.max(lo, this.md + 1);
    const before = hi - a + 1 - this.set.countIn(a, hi);
    this.set.addRange(a, hi);
    this.normalise();
    return before;
  }

  /**
   * Acknowledges every offset `<= offset` (Pulsar's cumulative ack). A position at or below the
   * mark-delete position is a no-op. @returns true when the mark-delete position moved.
   */
  ackCumulative(offset: number): boolean {
    if (!Number.isSafeInteger(offset) || offset < -1) throw new RangeError(`offset must be a safe integer >= -1, got ${offset}`);
    if (offset <= this.md) return false;
    this.md = offset;
    this.normalise();
    return true;
  }

  /**
   * Resets the cursor so that `nextOffset` is the first unacknowledged message and nothing above
   * it is acknowledged (Pulsar's reset-cursor: individually acknowledged ranges are cleared; a
   * seek by timestamp with ack holes therefore counts everything before the seek point as
   * acknowledged, field case A8 scenario 3). May move the mark-delete position backwards.
   */
  reset(nextOffset: number): void {
    if (!Number.isSafeInteger(nextOffset) || nextOffset < 0) throw new RangeError(`nextOffset must be a non-negative safe integer, got ${nextOffset}`);
    this.md = nextOffset - 1;
    this.set.clear();
  }

  /** The first unacknowledged offset `>= from` (may be at or past the log end). */
  nextUnacked(from: number): number {
    return this.set.nextAbsent(Math.max(from, this.md + 1));
  }

  /**
   * Unacknowledged offsets in `[max(markDelete + 1, logStartOffset), logEndOffset)`, as closed
   * ranges (the backlog's holes, for a size lookup).
   */
  unackedRanges(logStartOffset: number, logEndOffset: number): OffsetRange[] {
    return this.set.gaps(Math.max(this.md + 1, logStartOffset), logEndOffset);
  }

  /**
   * Backlog in messages: unacknowledged offsets below `logEndOffset` that still exist
   * (`>= logStartOffset`). Pulsar's `msgBacklog`.
   */
  backlog(logStartOffset: number, logEndOffset: number): number {
    let n = 0;
    for (const [lo, hi] of this.unackedRanges(logStartOffset, logEndOffset)) n += hi - lo + 1;
    return n;
  }

  /**
   * Backlog in bytes, given `bytesIn(lo, hi)`: the stored size in bytes of offsets `lo..hi`
   * (inclusive), e.g. one SQL SUM per range. Pulsar's `backlogSize`.
   */
  backlogBytes(logStartOffset: number, logEndOffset: number, bytesIn: (lo: number, hi: number) => number): number {
    let n = 0;
    for (const [lo, hi] of this.unackedRanges(logStartOffset, logEndOffset)) n += bytesIn(lo, hi);
    return n;
  }

  /** Folds ranges that start at markDelete + 1 into the mark-delete position; drops ranges below it. */
  private normalise(): void {
    this.set.removeThrough(this.md);
    const f = this.set.first();
    if (f !== undefined && f[0] === this.md + 1) {
      this.md = f[1];
      this.set.removeThrough(this.md);
    }
  }
}

/** Where a new subscription (or a reset) starts. Pulsar's `SubscriptionInitialPosition` plus a timestamp. */
export type InitialPosition = { kind: "earliest" } | { kind: "latest" } | { kind: "timestamp"; timestampMs: number } | { kind: "offset"; offset: number };

/** What the log tells the core about itself (all offsets are the partition's). */
export interface LogBounds {
  /** First offset that still exists. */
  readonly logStartOffset: number;
  /** Offset the next appended record will get. */
  readonly logEndOffset: number;
  /**
   * First offset whose record timestamp is `>= timestampMs` in offset order, or `logEndOffset`
   * when there is none (Kafka's ListOffsets by timestamp; see {@link offsetForTimestamp}).
   * Only needed for `{ kind: "timestamp" }`.
   */
  offsetForTimestamp?(timestampMs: number): number;
}

/**
 * The first offset a subscription created at `position` must deliver; its cursor then has
 * `markDelete = result - 1`.
 * - earliest: the log start offset;
 * - latest: the log end offset (only messages produced after the subscription);
 * - timestamp: the first message with a timestamp `>= T` (apache/pulsar PR #6393: not the last
 *   message `<= T`), the log end when none;
 * - offset: that offset, clamped into `[logStart, logEnd]`.
 * @throws RangeError when a timestamp position is given without a resolver.
 */
export function initialOffset(position: InitialPosition, log: LogBounds): number {
  switch (position.kind) {
    case "earliest":
      return log.logStartOffset;
    case "latest":
      return log.logEndOffset;
    case "timestamp": {
      if (log.offsetForTimestamp === undefined) throw new RangeError("a timestamp position needs offsetForTimestamp");
      return Math.min(Math.max(log.offsetForTimestamp(position.timestampMs), log.logStartOffset), log.logEndOffset);
    }
    case "offset":
      return Math.min(Math.max(position.offset, log.logStartOffset), log.logEndOffset);
  }
}

/**
 * First offset with `timestampMs >= t`, scanning records in offset order; `endOffset` when none.
 * Non-monotonic timestamps do not send the answer to the earliest offset (apache/pulsar #23910,
 * PR #23919): timestamps 2, 1, 3, 5, 4, 6 and t = 4 give offset 3. Reference implementation for
 * the log room's index and for tests.
 */
export function offsetForTimestamp(records: Iterable<{ offset: number; timestampMs: number }>, t: number, endOffset: number): number {
  for (const r of records) if (r.timestampMs >= t) return r.offset;
  return endOffset;
}

/** Where a Reader (a non-durable cursor, stores nothing) starts. */
export type ReaderStart = { kind: "earliest" } | { kind: "latest" } | { kind: "offset"; offset: number } | { kind: "timestamp"; timestampMs: number };

/**
 * The first offset a Reader reads, following the Java and Go clients (field case A4,
 * apache/pulsar-client-go PR #329):
 * - earliest: log start, inclusive or not;
 * - latest: the log end; with `inclusive`, the last message (`logEnd - 1`) when the log has one;
 * - a message id: the next message, or that message with `inclusive`;
 * - timestamp: the first message with timestamp `>= T`.
 * The result is clamped into `[logStart, logEnd]`.
 */
export function readerStartOffset(start: ReaderStart, inclusive: boolean, log: LogBounds): number {
  const clamp = (o: number) => Math.min(Math.max(o, log.logStartOffset), log.logEndOffset);
  switch (start.kind) {
    case "earliest":
      return log.logStartOffset;
    case "latest":
      return inclusive && log.logEndOffset > log.logStartOffset ? log.logEndOffset - 1 : log.logEndOffset;
    case "offset":
      return clamp(inclusive ? start.offset : start.offset + 1);
    case "timestamp":
      return initialOffset(start, log);
  }
}

/**
 * The lowest offset the subscriptions of a partition still need: the slowest mark-delete
 * position + 1. The room reports it so retention never deletes unconsumed messages unless a
 * policy (TTL, backlog eviction) moves the cursor first. Null with no subscriptions.
 */
export function retentionFloor(markDeletes: Iterable<number>): number | null {
  let min: number | null = null;
  for (const md of markDeletes) if (min === null || md + 1 < min) min = md + 1;
  return min;
}
