/**
 * A reader's flow control (docs/PROTOCOL.md "Readers over WebSocket"): Pulsar's WebSocket reader
 * holds at most `receiverQueueSize` messages it was sent and has not acked; an ack gives a
 * permit back. Pulsar's own reader handler gives one back for ANY text frame it receives
 * (pulsar-websocket `ReaderHandler.onWebSocketText` decrements its pending count without looking
 * at the id), so a client that acks ids it never received, or one id many times, is pushed
 * more than its receiver queue. Here the window knows exactly which offsets were delivered and
 * are not acked: only those return a permit, each once.
 *
 * - `deliver(offsets)`: the offsets just sent (ascending, at or after `next`); each takes a permit.
 * - `checkAck(offsets)`: the first offset of an ack frame that is not delivered-and-unacked
 *   (never delivered, acked already, or named twice in the frame), else null. The caller
 *   refuses such a frame whole (INVALID_MESSAGE_ID) and nothing changes.
 * - `ack(offsets)`: after a null check, each offset leaves the window and gives its permit back.
 *
 * **What survives a hibernation** is the socket attachment (at most 2,048 bytes), so the window
 * also keeps a coarse copy of its set, the *span*: the unacked offsets plus the offsets skipped
 * between consecutive deliveries (no record was there when the reader passed them, e.g. the gaps
 * compaction leaves; offsets never become records later). A reader that acks in order has a span of one range whatever the gaps; only
 * acks out of order split it. The attachment holds `next`, the span's lowest offset and the span
 * (`encodeAckRanges`' text) while it has at most {@link MAX_ATTACHED_READER_RANGES} ranges (the
 * span starts at the lowest unacked offset: what lies below holds nothing to ack). A
 * restore reads the records now in the span: those are exactly the unacked deliveries (a record
 * compaction removed since is no longer counted: its permit comes back). A span of more ranges
 * is not kept: a restore then restarts the reader at the span's lowest offset with an empty
 * window, and what was in flight is delivered again (as a consumer's in-flight messages after a
 * wake, docs/SUBSCRIPTIONS.md). Either way a restored window never counts an ack it cannot prove.
 *
 * Pure: no I/O, no clock.
 */
import { AckRangeSet, decodeAckRanges, encodeAckRanges } from "./ack-ranges.ts";
import { MAX_RECEIVER_QUEUE_SIZE } from "./permits.ts";

/** Most span ranges kept in a reader's attachment (each at most ~24 characters: ~1.2 KB of the 2,048 bytes). */
export const MAX_ATTACHED_READER_RANGES = 48;

/** A reader window as its socket attachment keeps it. */
export interface StoredReaderWindow {
  /** Next offset to send. */
  readonly o: number;
  /** Messages sent and not acked (informational: a restore counts the records in the span). */
  readonly f: number;
  /** receiverQueueSize. */
  readonly q: number;
  /** The span's lowest offset (`o` when empty). Absent in attachments written before acks were checked. */
  readonly l?: number;
  /** The span, `encodeAckRanges(span, l - 2)` text; null when it had too many ranges to keep. */
  readonly u?: string | null;
}

/**
 * The record offsets in `[lo, hi]` the partition holds now, ascending (a restore's read of the
 * log; at most `receiverQueueSize` of them fall in a span).
 */
export type RecordsIn = (lo: number, hi: number) => readonly number[];

export class ReaderWindow {
  readonly receiverQueueSize: number;
  #next: number;
  /** Delivered and not acked: exact. */
  readonly #unacked: AckRangeSet;
  /** `#unacked` plus the offsets passed over between deliveries (see the module comment). */
  readonly #span: AckRangeSet;
  #count: number;

  /**
   * @param next the next offset to send (a non-negative safe integer).
   * @param unacked offsets delivered and not acked, all below `next`.
   * @param span a superset of `unacked` below `next` (default: `unacked`).
   * @throws RangeError when receiverQueueSize is not in 1..MAX_RECEIVER_QUEUE_SIZE, or an offset is not below `next`.
   */
  constructor(receiverQueueSize: number, next: number, unacked: AckRangeSet = new AckRangeSet(), span: AckRangeSet = unacked.clone()) {
    if (!Number.isInteger(receiverQueueSize) || receiverQueueSize < 1 || receiverQueueSize > MAX_RECEIVER_QUEUE_SIZE)
      throw new RangeError(`receiverQueueSize must be 1..${MAX_RECEIVER_QUEUE_SIZE}, got ${receiverQueueSize}`);
    if (!Number.isSafeInteger(next) || next < 0) throw new RangeError(`next must be a non-negative safe integer, got ${next}`);
    this.receiverQueueSize = receiverQueueSize;
    this.#next = next;
    this.#unacked = unacked;
    this.#span = span;
    this.#count = unacked.size;
    const last = span.ranges().at(-1);
    if (last !== undefined && last[1] >= next) throw new RangeError(`span offset ${last[1]} is not below next ${next}`);
  }

  /**
   * The window of a stored attachment. With its span: the records `recordsIn` finds in the span
   * are the unacked deliveries. Without (too many ranges were kept): restarted at the span's
   * lowest offset with nothing in flight. An attachment of an older version (no `l`) resumes at
   * its `o` with nothing in flight.
   * @throws RangeError on a malformed stored span (the caller closes the socket).
   */
  static restore(s: StoredReaderWindow, recordsIn: RecordsIn): ReaderWindow {
    if (s.l === undefined) return new ReaderWindow(s.q, s.o);
    if (s.u === null || s.u === undefined) return new ReaderWindow(s.q, s.l);
    const span = decodeAckRanges(s.u, s.l - 2);
    const unacked = new AckRangeSet();
    for (const [lo, hi] of span.ranges()) for (const o of recordsIn(lo, hi)) if (o >= lo && o <= hi) unacked.add(o);
    // More records than permits cannot have been delivered: a corrupt attachment, not a window.
    if (unacked.size > s.q) throw new RangeError(`reader span holds ${unacked.size} records, more than receiverQueueSize ${s.q}`);
    return new ReaderWindow(s.q, s.o, unacked, span);
  }

  /** The window as its attachment keeps it. */
  store(): StoredReaderWindow {
    const first = this.#span.first();
    const l = first === undefined ? this.#next : first[0];
    const u = this.#span.rangeCount <= MAX_ATTACHED_READER_RANGES ? encodeAckRanges(this.#span, l - 2).text : null;
    return { o: this.#next, f: this.#count, q: this.receiverQueueSize, l, u };
  }

  /** Next offset to send. */
  get next(): number {
    return this.#next;
  }

  /** Messages sent and not acked. */
  get unacked(): number {
    return this.#count;
  }

  /** Permits left: how many more messages may be sent now (>= 0). */
  get available(): number {
    return this.receiverQueueSize - this.#count;
  }

  /** Whether `offset` was sent and is not acked. */
  holds(offset: number): boolean {
    return this.#unacked.has(offset);
  }

  /**
   * Records the offsets just sent (ascending, each at or after `next`); `next` moves past the
   * last. The offsets passed over before each (no record there) join the span.
   * @throws Error when they are out of order or more than the permits left (a bug).
   */
  deliver(offsets: readonly number[]): void {
    if (offsets.length > this.available) throw new Error(`reader: ${offsets.length} deliveries with ${this.available} permits`);
    let prev = this.#next - 1;
    for (const o of offsets) {
      if (!Number.isSafeInteger(o) || o <= prev) throw new Error(`reader: delivery at ${o} after ${prev}`);
      prev = o;
    }
    let from = this.#next;
    for (const o of offsets) {
      this.#unacked.add(o);
      this.#span.addRange(from, o);
      from = o + 1;
    }
    this.#count += offsets.length;
    this.#next = from;
    this.#trim();
  }

  /** Drops the span below the lowest unacked offset (nothing but passed-over offsets is there), so in-order acks keep one range. */
  #trim(): void {
    const first = this.#unacked.first();
    if (first === undefined) this.#span.clear();
    else this.#span.removeThrough(first[0] - 1);
  }

  /**
   * Moves the reader to `next` without delivering (the log start passed it: retention). The
   * unacked messages stay in the window until acked.
   */
  skipTo(next: number): void {
    if (next > this.#next) this.#next = next;
  }

  /**
   * The first offset of an ack frame that would not give a permit back: not sent to this reader,
   * acked already, or named twice in the frame. Null when every offset may be acked.
   */
  checkAck(offsets: readonly number[]): number | null {
    const seen = offsets.length > 1 ? new Set<number>() : null;
    for (const o of offsets) {
      if (!this.#unacked.has(o)) return o;
      if (seen !== null) {
        if (seen.has(o)) return o;
        seen.add(o);
      }
    }
    return null;
  }

  /**
   * Acks offsets that {@link checkAck} accepted: each gives its permit back.
   * @returns the permits given back. @throws Error for an offset that is not unacked (a bug: check first).
   */
  ack(offsets: readonly number[]): number {
    const bad = this.checkAck(offsets);
    if (bad !== null) throw new Error(`reader: ack of ${bad}, which is not in flight`);
    for (const o of offsets) {
      this.#unacked.delete(o);
      this.#span.delete(o);
    }
    this.#count -= offsets.length;
    this.#trim();
    return offsets.length;
  }
}
