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
 * State that survives a hibernation (the socket attachment, at most 2,048 bytes): `next`, the
 * lowest unacked offset and the unacked set as ranges (`encodeAckRanges`' text) while it has at
 * most {@link MAX_ATTACHED_READER_RANGES} ranges. Acks out of order can split the set into up to
 * `receiverQueueSize` ranges, more than an attachment holds: then only `next` and the lowest
 * unacked offset are kept, and a restore restarts the reader at that offset with an empty
 * window (what was in flight is delivered again, as a consumer's in-flight messages are after a
 * wake; docs/SUBSCRIPTIONS.md). Either way a restored window never counts an ack it cannot prove.
 *
 * Pure: no I/O, no clock.
 */
import { AckRangeSet, decodeAckRanges, encodeAckRanges } from "./ack-ranges.ts";
import { MAX_RECEIVER_QUEUE_SIZE } from "./permits.ts";

/** Most unacked ranges kept in a reader's attachment (each at most ~24 characters: ~1.2 KB of the 2,048 bytes). */
export const MAX_ATTACHED_READER_RANGES = 48;

/** A reader window as its socket attachment keeps it. */
export interface StoredReaderWindow {
  /** Next offset to send. */
  readonly o: number;
  /** Messages sent and not acked (informational; the set is the truth). */
  readonly f: number;
  /** receiverQueueSize. */
  readonly q: number;
  /** Lowest unacked offset (`o` when none). Absent in attachments written before it existed. */
  readonly l?: number;
  /** The unacked set, `encodeAckRanges(set, l - 2)` text; null when it had too many ranges to keep. */
  readonly u?: string | null;
}

export class ReaderWindow {
  readonly receiverQueueSize: number;
  #next: number;
  readonly #unacked: AckRangeSet;
  #count: number;

  /**
   * @param next the next offset to send (a non-negative safe integer).
   * @throws RangeError when receiverQueueSize is not in 1..MAX_RECEIVER_QUEUE_SIZE.
   */
  constructor(receiverQueueSize: number, next: number, unacked: AckRangeSet = new AckRangeSet()) {
    if (!Number.isInteger(receiverQueueSize) || receiverQueueSize < 1 || receiverQueueSize > MAX_RECEIVER_QUEUE_SIZE)
      throw new RangeError(`receiverQueueSize must be 1..${MAX_RECEIVER_QUEUE_SIZE}, got ${receiverQueueSize}`);
    if (!Number.isSafeInteger(next) || next < 0) throw new RangeError(`next must be a non-negative safe integer, got ${next}`);
    this.receiverQueueSize = receiverQueueSize;
    this.#next = next;
    this.#unacked = unacked;
    this.#count = unacked.size;
    const last = unacked.ranges().at(-1);
    if (last !== undefined && last[1] >= next) throw new RangeError(`unacked offset ${last[1]} is not below next ${next}`);
  }

  /**
   * The window of a stored attachment: exact when the set was kept, else restarted at the
   * lowest unacked offset with nothing in flight (see the module comment). An attachment of an
   * older version (no `l`) resumes at its `o` with nothing in flight.
   * @throws RangeError on a malformed stored set (the caller closes the socket).
   */
  static restore(s: StoredReaderWindow): ReaderWindow {
    if (s.l === undefined) return new ReaderWindow(s.q, s.o);
    if (s.u === null || s.u === undefined) return new ReaderWindow(s.q, s.l);
    return new ReaderWindow(s.q, s.o, decodeAckRanges(s.u, s.l - 2));
  }

  /** The window as its attachment keeps it. */
  store(): StoredReaderWindow {
    const first = this.#unacked.first();
    const l = first === undefined ? this.#next : first[0];
    const u = this.#unacked.rangeCount <= MAX_ATTACHED_READER_RANGES ? encodeAckRanges(this.#unacked, l - 2).text : null;
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
   * last. @throws Error when they are out of order or more than the permits left (a bug).
   */
  deliver(offsets: readonly number[]): void {
    if (offsets.length > this.available) throw new Error(`reader: ${offsets.length} deliveries with ${this.available} permits`);
    let prev = this.#next - 1;
    for (const o of offsets) {
      if (!Number.isSafeInteger(o) || o <= prev) throw new Error(`reader: delivery at ${o} after ${prev}`);
      prev = o;
    }
    for (const o of offsets) this.#unacked.add(o);
    this.#count += offsets.length;
    if (offsets.length > 0) this.#next = prev + 1;
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
    for (const o of offsets) this.#unacked.delete(o);
    this.#count -= offsets.length;
    return offsets.length;
  }
}
