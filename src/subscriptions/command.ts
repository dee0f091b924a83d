/**
 * A subscription's durable state, the command that changes it, and its stored form.
 *
 * The room batches acknowledgements: the live {@link Subscription} applies acks, nacks and
 * redeliveries in memory at once (so it never redelivers what was just acked) and collects the
 * durable part of the changes; once per flush interval it hands over ONE
 * {@link SubscriptionCommand}, which the partition shell commits in one transaction (and, later,
 * Raft replicates). Clients get their ack receipts only after that commit ("an ack follows the
 * durable commit"). Pulsar also persists the mark-delete position lazily
 * (`managedLedgerDefaultMarkDeleteRateLimit`, one per second by default).
 *
 * What a crash between two flushes can redeliver: the messages acked since the last committed
 * command (their receipts were not sent, so the client did not see them confirmed); redelivery
 * counts and nack delays set since then fall back to the last committed values (a message may be
 * delivered once more before the dead-letter topic); dead-letter decisions since then were not
 * acted on (the copy is produced only after the command that records it commits), so a crash
 * never makes a second copy. Messages acked before the last commit are never redelivered, except
 * acks past the persisted range cap (see {@link encodeAckRanges}).
 *
 * Pure: no I/O, no clock. `applyCommand` is deterministic.
 */
import { DEFAULT_MAX_ACK_RANGES_TO_PERSIST, decodeAckRanges, encodeAckRanges, type OffsetRange } from "./ack-ranges.ts";
import { Cursor } from "./cursor.ts";

/**
 * Default flush interval for batched acks, ms: Pulsar's client groups acks for 100 ms
 * (`acknowledgmentGroupTime`). The ack receipt waits for the flush, so this is also the added
 * ack latency; the room may flush earlier (e.g. when a command grows past a size).
 */
export const DEFAULT_ACK_FLUSH_INTERVAL_MS = 100;

/** The durable part of a subscription. */
export interface DurableSubscription {
  /** The cursor: mark-delete position and acknowledged ranges above it. */
  cursor: Cursor;
  /** offset -> redelivery count (> 0), for unacknowledged messages only. Survives restarts (A3). */
  redeliveryCounts: Map<number, number>;
  /** offset -> earliest redelivery time (ms since epoch) after a nack delay, unacknowledged only. */
  notBefore: Map<number, number>;
  /**
   * offset -> dead-letter sequence number, for messages decided for the dead-letter topic whose
   * copy is not yet confirmed (they are not delivered again). The sequence number is the idempotent
   * producer sequence the room uses for the copy, so a retried copy after a crash is deduplicated
   * by the dead-letter partition (KIP-98): exactly one copy.
   */
  deadLetters: Map<number, number>;
  /** Next dead-letter sequence number. */
  nextDeadLetterSeq: number;
  /** Messages copied to the dead-letter topic so far (stats). */
  deadLetteredTotal: number;
}

export function emptyDurable(markDelete = -1): DurableSubscription {
  return { cursor: new Cursor(markDelete), redeliveryCounts: new Map(), notBefore: new Map(), deadLetters: new Map(), nextDeadLetterSeq: 0, deadLetteredTotal: 0 };
}

/**
 * One batched change of a subscription's durable state. Serialisable (plain JSON) and
 * deterministic: arrays are sorted by offset.
 */
export interface SubscriptionCommand {
  readonly v: 1;
  /** Subscription name. */
  readonly sub: string;
  /** Present when the cursor was reset (seek, clear): applied first, it clears every other field's state. */
  readonly reset?: { readonly nextOffset: number };
  /** The mark-delete position after this command (never lower than before unless `reset`). */
  readonly markDelete: number;
  /** Offsets acknowledged individually since the last command, as ranges (may include offsets now at or below `markDelete`). */
  readonly ackRanges: readonly OffsetRange[];
  /** offset -> new redelivery count. */
  readonly redeliveryCounts: readonly (readonly [number, number])[];
  /** offset -> earliest redelivery time, ms since epoch. */
  readonly notBefore: readonly (readonly [number, number])[];
  /** offset -> dead-letter sequence number: copies to produce after this command commits. */
  readonly deadLetters: readonly (readonly [number, number])[];
  /** Dead-letter copies confirmed (the originals are acked by `ackRanges` of the same command). */
  readonly deadLettered: number;
  /** The next dead-letter sequence number after this command. */
  readonly nextDeadLetterSeq: number;
}

/**
 * Applies a command to a durable state and returns the new state (the input is not modified).
 * @throws Error when the command would move the mark-delete position backwards without `reset`
 *   (a bug: the shell must not commit it).
 */
export function applyCommand(state: DurableSubscription, cmd: SubscriptionCommand): DurableSubscription {
  let s: DurableSubscription;
  if (cmd.reset !== undefined) {
    s = emptyDurable(cmd.reset.nextOffset - 1);
    s.nextDeadLetterSeq = state.nextDeadLetterSeq;
    s.deadLetteredTotal = state.deadLetteredTotal;
  } else {
    if (cmd.markDelete < state.cursor.markDelete) throw new Error(`command moves mark-delete back from ${state.cursor.markDelete} to ${cmd.markDelete}`);
    s = {
      cursor: state.cursor.clone(),
      redeliveryCounts: new Map(state.redeliveryCounts),
      notBefore: new Map(state.notBefore),
      deadLetters: new Map(state.deadLetters),
      nextDeadLetterSeq: state.nextDeadLetterSeq,
      deadLetteredTotal: state.deadLetteredTotal,
    };
  }
  s.cursor.ackCumulative(cmd.markDelete);
  for (const [lo, hi] of cmd.ackRanges) s.cursor.ackRange(lo, hi);
  for (const [o, c] of cmd.redeliveryCounts) s.redeliveryCounts.set(o, c);
  for (const [o, t] of cmd.notBefore) s.notBefore.set(o, t);
  for (const [o, q] of cmd.deadLetters) s.deadLetters.set(o, q);
  s.nextDeadLetterSeq = Math.max(s.nextDeadLetterSeq, cmd.nextDeadLetterSeq);
  s.deadLetteredTotal += cmd.deadLettered;
  pruneAcked(s);
  return s;
}

/** Drops per-message entries of acknowledged offsets. */
export function pruneAcked(s: DurableSubscription): void {
  for (const m of [s.redeliveryCounts, s.notBefore, s.deadLetters] as Map<number, number>[]) {
    for (const o of m.keys()) if (s.cursor.isAcked(o)) m.delete(o);
  }
}

/** The stored form of {@link DurableSubscription} (one SQLite row's JSON value). */
export interface StoredSubscription {
  readonly v: 1;
  readonly markDelete: number;
  /** {@link encodeAckRanges} text. */
  readonly ackRanges: string;
  readonly redeliveryCounts: readonly (readonly [number, number])[];
  readonly notBefore: readonly (readonly [number, number])[];
  readonly deadLetters: readonly (readonly [number, number])[];
  readonly nextDeadLetterSeq: number;
  readonly deadLetteredTotal: number;
}

/**
 * Encodes the durable state. Bounded: at most `maxAckRanges` ack ranges (Pulsar's
 * `managedLedgerMaxUnackedRangesToPersist`, default 10,000; past it the highest ranges are
 * dropped and their messages are redelivered after a restore), and per-message maps only for
 * messages that are not acknowledged; the redelivery counts and nack delays kept are the
 * `maxAckRanges` lowest offsets (past that a count restarts at 0 after a restore, as every count
 * does in Pulsar).
 * @returns the stored form and how many ranges and counts were dropped.
 */
export function encodeDurable(s: DurableSubscription, maxAckRanges = DEFAULT_MAX_ACK_RANGES_TO_PERSIST): { stored: StoredSubscription; droppedRanges: number; droppedCounts: number } {
  const enc = encodeAckRanges(s.cursor.ackSet, s.cursor.markDelete, maxAckRanges);
  const sorted = (m: Map<number, number>) => [...m.entries()].sort((a, b) => a[0] - b[0]);
  const counts = sorted(s.redeliveryCounts);
  const notBefore = sorted(s.notBefore);
  return {
    stored: {
      v: 1,
      markDelete: s.cursor.markDelete,
      ackRanges: enc.text,
      redeliveryCounts: counts.slice(0, maxAckRanges),
      notBefore: notBefore.slice(0, maxAckRanges),
      deadLetters: sorted(s.deadLetters),
      nextDeadLetterSeq: s.nextDeadLetterSeq,
      deadLetteredTotal: s.deadLetteredTotal,
    },
    droppedRanges: enc.droppedRanges,
    droppedCounts: Math.max(0, counts.length - maxAckRanges) + Math.max(0, notBefore.length - maxAckRanges),
  };
}

function pairs(v: unknown, what: string): [number, number][] {
  if (!Array.isArray(v)) throw new RangeError(`${what} must be an array`);
  return v.map((p) => {
    if (!Array.isArray(p) || p.length !== 2 || !Number.isSafeInteger(p[0]) || !Number.isSafeInteger(p[1]) || p[0] < 0) throw new RangeError(`${what} has a malformed entry`);
    return [p[0] as number, p[1] as number];
  });
}

/**
 * Decodes and checks a stored state (assert after reading).
 * @throws RangeError on a malformed or inconsistent value (the room fails its start-up loudly).
 */
export function decodeDurable(raw: unknown): DurableSubscription {
  if (typeof raw !== "object" || raw === null) throw new RangeError("stored subscription must be an object");
  const r = raw as Record<string, unknown>;
  if (r.v !== 1) throw new RangeError(`unknown stored subscription version ${String(r.v)}`);
  const md = r.markDelete;
  if (!Number.isSafeInteger(md) || (md as number) < -1) throw new RangeError("markDelete must be an integer >= -1");
  if (typeof r.ackRanges !== "string") throw new RangeError("ackRanges must be a string");
  const cursor = new Cursor(md as number, decodeAckRanges(r.ackRanges, md as number));
  const nums = (k: string) => {
    const v = r[k];
    if (!Number.isSafeInteger(v) || (v as number) < 0) throw new RangeError(`${k} must be a non-negative integer`);
    return v as number;
  };
  const s: DurableSubscription = {
    cursor,
    redeliveryCounts: new Map(pairs(r.redeliveryCounts, "redeliveryCounts")),
    notBefore: new Map(pairs(r.notBefore, "notBefore")),
    deadLetters: new Map(pairs(r.deadLetters, "deadLetters")),
    nextDeadLetterSeq: nums("nextDeadLetterSeq"),
    deadLetteredTotal: nums("deadLetteredTotal"),
  };
  for (const q of s.deadLetters.values()) if (q >= s.nextDeadLetterSeq) throw new RangeError("a dead-letter sequence is not below nextDeadLetterSeq");
  pruneAcked(s);
  return s;
}
