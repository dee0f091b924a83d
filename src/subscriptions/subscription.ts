/**
 * One subscription on one partition: the durable cursor plus the in-memory delivery state
 * (consumers, permits, messages in flight, the replay queue) and the dispatch policy of its type.
 * This is the pure core the partition's subscriptions room wraps: the room loads the stored state,
 * feeds events in (consumer joins and leaves, permits, acks, nacks, appends, timer wake-ups, each
 * with `nowMs`), sends the returned deliveries on the sockets, commits {@link takeCommand}'s
 * command once per flush interval, and arms a timer at {@link nextDueMs}.
 *
 * Terms (Pulsar's): *in flight* = delivered and not yet acknowledged (pending acks); *replay
 * queue* = messages to (re)deliver before new ones, each with the time it becomes due; *read
 * position* = the next offset to read from the log for new messages. Invariant
 * ({@link checkInvariants}): every unacknowledged offset below the read position is in flight,
 * in the replay queue or awaiting its dead-letter copy, and never in two of them.
 *
 * How a message leaves flight, and what follows (each gives the consumer's permit back):
 * - ack (individual or cumulative, from any connection of the subscription): done;
 * - nack: redelivery count + 1, redelivered after the nack delay (or backoff);
 * - ack timeout: redelivery count + 1, redelivered at once;
 * - consumer disconnect, or a failover consumer losing the active role: redelivered at once with
 *   the count unchanged (as Pulsar does: the consumer did not report a failure);
 * - a nack or ack timeout that would exceed `maxRedeliverCount`: a dead-letter decision instead.
 * An ack timeout and a nack of the same delivery count once: the first removes the message from
 * flight, and the second then finds no delivery to act on.
 *
 * Pure: no I/O; time is passed in as `nowMs` (ms since the epoch).
 */
import { type ErrorResult, errorResult } from "../protocol/errors.ts";
import { AckRangeSet, DEFAULT_MAX_ACK_RANGES_TO_PERSIST } from "./ack-ranges.ts";
import { type DurableSubscription, decodeDurable, encodeDurable, pruneAcked, type StoredSubscription, type SubscriptionCommand } from "./command.ts";
import { checkDeliveryPolicy, DEFAULT_DELIVERY_POLICY, type DeliveryPolicy, nackDelayMs, redeliveryDecision } from "./delivery.ts";
import { admitConsumer, AutoSplitHashRanges, type ConsumerRef, failoverActive, InFlightHashes, keyHash, RoundRobin, type SubscriptionType } from "./dispatch.ts";
import { type FlowMode, MAX_CREDIT_PERMITS, Permits } from "./permits.ts";

/** What dispatch needs to know of one message of the log. */
export interface MessageMeta {
  readonly offset: number;
  /** Message key (Key_Shared hashes it); null or absent = no key. */
  readonly key?: string | null;
  /** Delayed delivery time, ms since epoch (Pulsar's `deliverAt`); null or absent = none. */
  readonly deliverAtMs?: number | null;
}

/** The partition log as dispatch sees it (synchronous: Durable Object SQLite reads are). */
export interface MessageSource {
  readonly logStartOffset: number;
  readonly logEndOffset: number;
  /** Up to `max` messages with offset >= `from`, ascending (offsets may have gaps). */
  read(from: number, max: number): readonly MessageMeta[];
}

export interface SubscriptionOptions extends Partial<DeliveryPolicy> {
  /** Subscription name. */
  readonly name: string;
  readonly type: SubscriptionType;
  /** This partition's index. @default 0 */
  readonly partitionIndex?: number;
  /** Whether the topic is partitioned (changes the failover rule). @default false */
  readonly partitioned?: boolean;
  /** Most messages examined by one {@link Subscription.dispatch} call (a bounded slice). @default 1000 */
  readonly maxExaminePerDispatch?: number;
  /**
   * Most messages held in the replay queue by Key_Shared because their key's consumer cannot take
   * them yet; past it, reading new messages pauses (Pulsar bounds this too). @default 1000
   */
  readonly maxHeldMessages?: number;
}

export interface ConsumerOptions {
  /** Unique per connection. */
  readonly id: string;
  /** Pulsar's `consumerName`. @default the id */
  readonly name?: string;
  /** Pulsar's `priorityLevel`, 0 highest. @default 0 */
  readonly priorityLevel?: number;
  /** Push mode with a receiver queue, or pull mode with explicit permits. @default { kind: "window", receiverQueueSize: 1000 } */
  readonly flow?: FlowMode;
  /** The type the consumer asks for. @default the subscription's */
  readonly type?: SubscriptionType;
}

/** One message to send: to `consumerId`, with the redelivery count it carries. */
export interface Delivery {
  readonly consumerId: string;
  readonly offset: number;
  readonly redeliveryCount: number;
}

/** A dead-letter copy to produce (after the command that decided it commits). */
export interface DeadLetterCopy {
  readonly offset: number;
  /** Idempotent producer sequence for the copy (see {@link DurableSubscription.deadLetters}). */
  readonly seq: number;
}

interface ConsumerState {
  readonly ref: ConsumerRef;
  readonly permits: Permits;
  readonly inFlight: Set<number>;
}

interface InFlight {
  readonly consumerId: string;
  readonly deliveredAtMs: number;
  readonly redeliveryCount: number;
  /** Key hash (Key_Shared only). */
  readonly hash: number | null;
}

interface Delta {
  reset: number | null;
  acks: AckRangeSet;
  counts: Map<number, number>;
  notBefore: Map<number, number>;
  deadLetters: Map<number, number>;
  deadLettered: number;
  dirty: boolean;
}

function freshDelta(): Delta {
  return { reset: null, acks: new AckRangeSet(), counts: new Map(), notBefore: new Map(), deadLetters: new Map(), deadLettered: 0, dirty: false };
}

const DEFAULT_FLOW: FlowMode = { kind: "window", receiverQueueSize: 1000 };

export class Subscription {
  readonly name: string;
  private subType: SubscriptionType;
  readonly policy: DeliveryPolicy;
  private readonly partitionIndex: number;
  private readonly partitioned: boolean;
  private readonly maxExamine: number;
  private readonly maxHeld: number;

  private readonly durable: DurableSubscription;
  private delta: Delta = freshDelta();

  private readonly consumers = new Map<string, ConsumerState>();
  /** The consumers' refs in join order, for the shared picker (rebuilt after a join or leave, not per message). */
  private refs: ConsumerRef[] | null = null;
  private joinSeq = 0;
  private readonly pending = new Map<number, InFlight>();
  /** offset -> due time (0 = at once) and key hash (Key_Shared; lets a blocked key be skipped without a read). */
  private readonly replay = new Map<number, { due: number; hash: number | null }>();
  private readPosition: number;
  private logStart: number;
  private logEnd: number;

  private readonly rr = new RoundRobin();
  private hashRanges = new AutoSplitHashRanges();
  private readonly hashes = new InFlightHashes();
  private activeId: string | null = null;

  /**
   * @param durable the durable state: {@link emptyDurable}`(initialOffset(...) - 1)` for a new
   *   subscription, or a restored one (see {@link Subscription.restore}).
   * @throws RangeError for an invalid delivery policy (the room validates client input first).
   */
  constructor(options: SubscriptionOptions, durable: DurableSubscription, log: { logStartOffset: number; logEndOffset: number }) {
    const policy: DeliveryPolicy = {
      ackTimeoutMs: options.ackTimeoutMs ?? DEFAULT_DELIVERY_POLICY.ackTimeoutMs,
      negativeAckRedeliveryDelayMs: options.negativeAckRedeliveryDelayMs ?? DEFAULT_DELIVERY_POLICY.negativeAckRedeliveryDelayMs,
      negativeAckBackoff: options.negativeAckBackoff,
      maxRedeliverCount: options.maxRedeliverCount ?? DEFAULT_DELIVERY_POLICY.maxRedeliverCount,
    };
    const bad = checkDeliveryPolicy(policy);
    if (bad !== null) throw new RangeError(bad);
    this.name = options.name;
    this.subType = options.type;
    this.policy = policy;
    this.partitionIndex = options.partitionIndex ?? 0;
    this.partitioned = options.partitioned ?? false;
    this.maxExamine = options.maxExaminePerDispatch ?? 1000;
    this.maxHeld = options.maxHeldMessages ?? 1000;
    this.durable = durable;
    this.logStart = log.logStartOffset;
    this.logEnd = log.logEndOffset;
    this.readPosition = durable.cursor.nextUnacked(this.logStart);
  }

  /**
   * Rebuilds a subscription from its stored form ({@link Subscription.snapshot}). Nothing is in
   * flight after a restore: every unacknowledged message is delivered again, with its stored
   * redelivery count and no earlier than its stored nack delay.
   * @throws RangeError on a corrupt stored value.
   */
  static restore(options: SubscriptionOptions, stored: unknown, log: { logStartOffset: number; logEndOffset: number }): Subscription {
    return new Subscription(options, decodeDurable(stored), log);
  }

  get type(): SubscriptionType {
    return this.subType;
  }

  get markDelete(): number {
    return this.durable.cursor.markDelete;
  }

  /** Acknowledged ranges above the mark-delete position. */
  get ackedRanges(): (readonly [number, number])[] {
    return this.durable.cursor.ackedRanges;
  }

  isAcked(offset: number): boolean {
    return this.durable.cursor.isAcked(offset);
  }

  /** The stored redelivery count of an unacknowledged message (0 when none). */
  redeliveryCount(offset: number): number {
    return this.durable.redeliveryCounts.get(offset) ?? 0;
  }

  // ---- log events ----

  /** The log moved: new appends (log end) or retention (log start). */
  observeLog(log: { logStartOffset: number; logEndOffset: number }): void {
    this.logStart = log.logStartOffset;
    this.logEnd = log.logEndOffset;
    if (this.readPosition < this.logStart) this.readPosition = this.durable.cursor.nextUnacked(this.logStart);
  }

  // ---- consumers ----

  /**
   * Adds a consumer. Refused with CONSUMER_BUSY on an exclusive subscription that has one, or
   * when the requested type differs from the type of a subscription with consumers; with
   * INVALID_REQUEST for a bad receiver queue size. A refusal changes nothing.
   */
  addConsumer(opts: ConsumerOptions): ErrorResult | null {
    const requested = opts.type ?? this.subType;
    const refusal = admitConsumer(this.subType, this.consumers.size, requested);
    if (refusal !== null) return refusal;
    if (this.consumers.has(opts.id)) return errorResult("INVALID_REQUEST", `Consumer ${opts.id} is already connected.`);
    let permits: Permits;
    try {
      permits = new Permits(opts.flow ?? DEFAULT_FLOW);
    } catch (e) {
      return errorResult("INVALID_REQUEST", (e as Error).message);
    }
    const priorityLevel = opts.priorityLevel ?? 0;
    if (!Number.isInteger(priorityLevel) || priorityLevel < 0) return errorResult("INVALID_REQUEST", "priorityLevel must be a non-negative integer.");
    if (this.consumers.size === 0 && requested !== this.subType) {
      this.subType = requested;
      this.hashRanges = new AutoSplitHashRanges();
    }
    const ref: ConsumerRef = { id: opts.id, name: opts.name ?? opts.id, priorityLevel, joinSeq: this.joinSeq++ };
    this.consumers.set(opts.id, { ref, permits, inFlight: new Set() });
    this.refs = null;
    if (this.subType === "key_shared") this.hashRanges.add(opts.id);
    this.updateActive();
    return null;
  }

  /** Removes a consumer (disconnect): its messages in flight go back to the replay queue, due at once. */
  removeConsumer(id: string): void {
    const c = this.consumers.get(id);
    if (c === undefined) return;
    this.returnAll(c);
    this.consumers.delete(id);
    this.refs = null;
    if (this.subType === "key_shared") this.hashRanges.remove(id);
    this.updateActive();
  }

  /** Adds pull-mode permits. Refused with INVALID_REQUEST for push mode or a bad count. */
  grantPermits(consumerId: string, n: number): ErrorResult | null {
    const c = this.consumers.get(consumerId);
    if (c === undefined) return errorResult("INVALID_REQUEST", `Unknown consumer ${consumerId}.`);
    if (!c.permits.grant(n))
      return errorResult(
        "INVALID_REQUEST",
        c.permits.mode.kind === "window"
          ? "Permits are managed by the server in push mode."
          : `permits must be a positive integer, and the consumer's unused permits at most ${MAX_CREDIT_PERMITS}.`,
        c.permits.mode.kind === "window" ? undefined : { field: "permits" },
      );
    return null;
  }

  /** Drops a pull-mode consumer's unused permits (see {@link Permits.revoke}). @returns how many. */
  revokePermits(consumerId: string): number {
    return this.consumers.get(consumerId)?.permits.revoke() ?? 0;
  }

  /**
   * Times out every message `consumerId` holds, as an ack timeout does: each leaves flight and
   * is redelivered at once with its count + 1 (or dead-lettered). An expired HTTP pull lease.
   * @returns the offsets, ascending.
   */
  timeoutConsumer(consumerId: string, nowMs: number): number[] {
    const offsets = this.inFlightOf(consumerId);
    for (const o of offsets) this.redeliverFromFlight(o, nowMs, 0);
    return offsets;
  }

  /** The failover active consumer, or for other types null. */
  get activeConsumer(): string | null {
    return this.activeId;
  }

  /** The Key_Shared hash ranges (empty for other types). */
  hashRangesView(): { start: number; end: number; consumerId: string }[] {
    return this.hashRanges.ranges();
  }

  private updateActive(): void {
    if (this.subType !== "failover") {
      this.activeId = null;
      return;
    }
    const next = failoverActive(
      [...this.consumers.values()].map((c) => c.ref),
      this.partitionIndex,
      this.partitioned,
    );
    const prev = this.activeId;
    this.activeId = next;
    // A consumer that lost the active role hands its unacked messages to the new one (Pulsar
    // redelivers them too), so the new active consumer resumes from the first unacked message.
    if (prev !== null && prev !== next) {
      const old = this.consumers.get(prev);
      if (old !== undefined) this.returnAll(old);
    }
  }

  private returnAll(c: ConsumerState): void {
    for (const o of [...c.inFlight].sort((a, b) => a - b)) {
      const e = this.leaveFlight(o);
      this.replay.set(o, { due: 0, hash: e?.hash ?? null });
    }
  }

  // ---- dispatch ----

  /**
   * Delivers what may be delivered now: first the due messages of the replay queue (ascending
   * offset), then new messages from the read position, each to the consumer its type picks, while
   * permits last. Messages with a `deliverAt` or a stored nack delay in the future go to the replay
   * queue with that due time (never early). Examines at most `maxExaminePerDispatch` messages
   * and delivers at most `maxDeliveries` (the dispatch rate's allowance; messages beyond it wait,
   * nothing is lost); `more` says whether to call again.
   */
  dispatch(nowMs: number, source: MessageSource, maxDeliveries = Number.POSITIVE_INFINITY): { deliveries: Delivery[]; more: boolean } {
    this.observeLog(source);
    if (maxDeliveries <= 0) return { deliveries: [], more: true };
    const out: Delivery[] = [];
    const blocked = new Set<number>();
    let examined = 0;
    // Most dispatches find the replay queue empty: no copy of it then.
    const ready = this.replay.size === 0 ? [] : [...this.replay.entries()].filter(([, r]) => r.due <= nowMs).sort((a, b) => a[0] - b[0]);
    for (const [o, r] of ready) {
      if (this.isAcked(o) || this.durable.deadLetters.has(o) || o < this.logStart || o >= this.logEnd) {
        this.replay.delete(o);
        continue;
      }
      if (!this.anyPermit()) return { deliveries: out, more: false };
      if (out.length >= maxDeliveries) return { deliveries: out, more: true };
      // A key that cannot move now is skipped without a read and without using the slice, so a
      // slice always ends with progress (every examined replay entry leaves the queue).
      if (this.subType === "key_shared" && r.hash !== null && !this.keyReady(r.hash, blocked)) continue;
      if (examined >= this.maxExamine) return { deliveries: out, more: true };
      examined++;
      const meta = source.read(o, 1)[0];
      if (meta === undefined || meta.offset !== o) {
        this.replay.delete(o);
        continue;
      }
      const id = this.pick(meta, blocked);
      if (id === null) {
        if (this.subType === "key_shared") continue;
        return { deliveries: out, more: false };
      }
      this.replay.delete(o);
      out.push(this.deliver(id, meta, nowMs));
    }
    while (this.readPosition < this.logEnd) {
      if (!this.anyPermit()) break;
      if (out.length >= maxDeliveries) return { deliveries: out, more: true };
      if (examined >= this.maxExamine) return { deliveries: out, more: true };
      const batch = source.read(this.readPosition, Math.min(100, this.maxExamine - examined));
      // Nothing readable below the log end (the source lags): try again on the next call rather
      // than skip past messages.
      if (batch.length === 0) break;
      for (const meta of batch) {
        if (examined >= this.maxExamine) return { deliveries: out, more: true };
        const o = meta.offset;
        if (o < this.readPosition) continue;
        examined++;
        if (this.isAcked(o) || this.durable.deadLetters.has(o) || this.pending.has(o) || this.replay.has(o)) {
          this.readPosition = o + 1;
          continue;
        }
        const due = Math.max(meta.deliverAtMs ?? 0, this.durable.notBefore.get(o) ?? 0);
        if (due > nowMs) {
          this.replay.set(o, { due, hash: this.subType === "key_shared" ? keyHash(meta.key) : null });
          this.readPosition = o + 1;
          continue;
        }
        const id = this.pick(meta, blocked);
        if (id === null) {
          if (this.subType === "key_shared" && this.replay.size < this.maxHeld) {
            blocked.add(keyHash(meta.key));
            this.replay.set(o, { due: 0, hash: keyHash(meta.key) });
            this.readPosition = o + 1;
            continue;
          }
          return { deliveries: out, more: false };
        }
        this.readPosition = o + 1;
        out.push(this.deliver(id, meta, nowMs));
        if (!this.anyPermit()) return { deliveries: out, more: false };
        if (out.length >= maxDeliveries) return { deliveries: out, more: true };
      }
    }
    return { deliveries: out, more: false };
  }

  private hasPermit = (id: string): boolean => (this.consumers.get(id)?.permits.available ?? 0) > 0;

  private anyPermit(): boolean {
    switch (this.subType) {
      case "exclusive":
      case "failover": {
        const id = this.singleConsumer();
        return id !== null && this.hasPermit(id);
      }
      default:
        for (const c of this.consumers.values()) if (c.permits.available > 0) return true;
        return false;
    }
  }

  private singleConsumer(): string | null {
    if (this.subType === "failover") return this.activeId;
    const first = this.consumers.keys().next();
    return first.done ? null : first.value;
  }

  private pick(meta: MessageMeta, blocked: Set<number>): string | null {
    switch (this.subType) {
      case "exclusive":
      case "failover": {
        const id = this.singleConsumer();
        return id !== null && this.hasPermit(id) ? id : null;
      }
      case "shared":
        this.refs ??= [...this.consumers.values()].map((c) => c.ref);
        return this.rr.pick(this.refs, this.hasPermit);
      case "key_shared": {
        const h = keyHash(meta.key);
        return this.keyReady(h, blocked) ? this.hashRanges.owner(h) : null;
      }
    }
  }

  /**
   * Whether a message of `hash` may go to its owner now: not blocked earlier in this round (which
   * keeps a key's order), the owner has a permit, and no other consumer holds the hash (PIP-379).
   * A refusal blocks the hash for the rest of the round.
   */
  private keyReady(hash: number, blocked: Set<number>): boolean {
    if (blocked.has(hash)) return false;
    const owner = this.hashRanges.owner(hash);
    if (owner === null || !this.hasPermit(owner) || !this.hashes.allows(hash, owner)) {
      blocked.add(hash);
      return false;
    }
    return true;
  }

  private deliver(consumerId: string, meta: MessageMeta, nowMs: number): Delivery {
    const c = this.consumers.get(consumerId)!;
    const redeliveryCount = this.redeliveryCount(meta.offset);
    const hash = this.subType === "key_shared" ? keyHash(meta.key) : null;
    c.permits.take();
    c.inFlight.add(meta.offset);
    if (hash !== null) this.hashes.add(hash, consumerId);
    this.pending.set(meta.offset, { consumerId, deliveredAtMs: nowMs, redeliveryCount, hash });
    return { consumerId, offset: meta.offset, redeliveryCount };
  }

  private leaveFlight(o: number): InFlight | undefined {
    const e = this.pending.get(o);
    if (e === undefined) return undefined;
    this.pending.delete(o);
    const c = this.consumers.get(e.consumerId);
    if (c !== undefined) {
      c.inFlight.delete(o);
      c.permits.release();
    }
    if (e.hash !== null) this.hashes.remove(e.hash);
    return e;
  }

  // ---- acks ----

  private checkOffsets(offsets: readonly number[]): ErrorResult | null {
    for (const o of offsets) {
      if (!Number.isSafeInteger(o) || o < 0 || o >= this.logEnd) return errorResult("INVALID_MESSAGE_ID", `No message at offset ${o}.`, { offset: o, logEndOffset: this.logEnd });
    }
    return null;
  }

  /**
   * Individual acks, from any connection of the subscription (Pulsar's WebSocket API allows acks on
   * another connection, field case A7). Acking an acknowledged offset is a no-op. Refused as a whole
   * with INVALID_MESSAGE_ID when an offset is not below the log end (nothing changes).
   * @returns how many offsets were newly acknowledged.
   */
  ack(offsets: readonly number[]): ErrorResult | { acked: number } {
    const bad = this.checkOffsets(offsets);
    if (bad !== null) return bad;
    let acked = 0;
    for (const o of offsets) {
      if (!this.durable.cursor.ackIndividual(o)) continue;
      acked++;
      this.delta.acks.add(o);
      this.delta.dirty = true;
      this.onAcked(o);
    }
    return { acked };
  }

  /**
   * Cumulative ack of every offset `<= offset`. Exclusive and failover only: refused with
   * NOT_ALLOWED on shared and key_shared (Pulsar refuses it there too), with INVALID_MESSAGE_ID for
   * an offset not below the log end. A refusal changes nothing.
   */
  ackCumulative(offset: number): ErrorResult | { acked: number } {
    if (this.subType === "shared" || this.subType === "key_shared")
      return errorResult("NOT_ALLOWED", `Cumulative ack is not allowed on a ${this.subType} subscription.`, { subscriptionType: this.subType });
    const bad = this.checkOffsets([offset]);
    if (bad !== null) return bad;
    return { acked: this.ackThrough(offset) };
  }

  private ackThrough(offset: number): number {
    const before = this.durable.cursor.backlog(this.logStart, this.logEnd);
    if (!this.durable.cursor.ackCumulative(offset)) return 0;
    this.delta.dirty = true;
    for (const o of [...this.pending.keys()]) if (o <= offset) this.leaveFlight(o);
    for (const o of [...this.replay.keys()]) if (o <= offset) this.replay.delete(o);
    pruneAcked(this.durable);
    if (this.readPosition <= offset) this.readPosition = this.durable.cursor.nextUnacked(offset + 1);
    return before - this.durable.cursor.backlog(this.logStart, this.logEnd);
  }

  private onAcked(o: number): void {
    this.leaveFlight(o);
    this.replay.delete(o);
    this.durable.redeliveryCounts.delete(o);
    this.durable.notBefore.delete(o);
    this.durable.deadLetters.delete(o);
    pruneAcked(this.durable);
  }

  /**
   * Negative ack by `consumerId` of a message it holds: it leaves flight and is redelivered after
   * the nack delay with its redelivery count + 1, or goes to the dead-letter topic. A nack of a
   * message the consumer does not hold (already acked, timed out, or redelivered elsewhere) does
   * nothing; `seenRedeliveryCount`, when given, must match the delivery being nacked.
   * @returns whether the nack applied; INVALID_MESSAGE_ID for an offset not below the log end.
   */
  nack(consumerId: string, offset: number, nowMs: number, seenRedeliveryCount?: number): ErrorResult | { applied: boolean } {
    const bad = this.checkOffsets([offset]);
    if (bad !== null) return bad;
    const e = this.pending.get(offset);
    if (e === undefined || e.consumerId !== consumerId || (seenRedeliveryCount !== undefined && seenRedeliveryCount !== e.redeliveryCount)) return { applied: false };
    this.redeliverFromFlight(offset, nowMs, nackDelayMs(this.policy, e.redeliveryCount));
    return { applied: true };
  }

  private redeliverFromFlight(o: number, nowMs: number, delayMs: number): void {
    const e = this.leaveFlight(o);
    if (e === undefined) return;
    const d = redeliveryDecision(this.policy, e.redeliveryCount);
    this.delta.dirty = true;
    if (d.kind === "dead_letter") {
      const seq = this.durable.nextDeadLetterSeq++;
      this.durable.deadLetters.set(o, seq);
      this.delta.deadLetters.set(o, seq);
      return;
    }
    this.durable.redeliveryCounts.set(o, d.redeliveryCount);
    this.delta.counts.set(o, d.redeliveryCount);
    if (delayMs > 0) {
      this.durable.notBefore.set(o, nowMs + delayMs);
      this.delta.notBefore.set(o, nowMs + delayMs);
    }
    this.replay.set(o, { due: delayMs > 0 ? nowMs + delayMs : 0, hash: e.hash });
  }

  // ---- timers ----

  /**
   * Runs the ack-timeout scan: every message in flight for `ackTimeoutMs` or longer leaves flight
   * and is redelivered at once with its count + 1 (or dead-lettered).
   * @returns the offsets that timed out, ascending.
   */
  tick(nowMs: number): number[] {
    if (this.policy.ackTimeoutMs <= 0) return [];
    const due: number[] = [];
    for (const [o, e] of this.pending) if (e.deliveredAtMs + this.policy.ackTimeoutMs <= nowMs) due.push(o);
    due.sort((a, b) => a - b);
    for (const o of due) this.redeliverFromFlight(o, nowMs, 0);
    return due;
  }

  /**
   * The next time something becomes due after `nowMs` (an ack timeout, a nack delay, a delayed
   * delivery), for the room's timer; null when nothing is scheduled. An ack timeout already past
   * is returned as is (the room runs it at once).
   */
  nextDueMs(nowMs: number): number | null {
    let next = Number.POSITIVE_INFINITY;
    if (this.policy.ackTimeoutMs > 0) for (const e of this.pending.values()) next = Math.min(next, e.deliveredAtMs + this.policy.ackTimeoutMs);
    for (const r of this.replay.values()) if (r.due > nowMs) next = Math.min(next, r.due);
    return next === Number.POSITIVE_INFINITY ? null : next;
  }

  // ---- dead letters, TTL, admin ----

  /** Dead-letter copies decided and not yet confirmed (to produce after a restore, too). */
  pendingDeadLetters(): DeadLetterCopy[] {
    return [...this.durable.deadLetters.entries()].sort((a, b) => a[0] - b[0]).map(([offset, seq]) => ({ offset, seq }));
  }

  /**
   * The dead-letter copy of `offset` is durable in the dead-letter topic: the original is acked.
   * @returns false when `offset` had no pending copy (e.g. a retry after the confirmation).
   */
  confirmDeadLetter(offset: number): boolean {
    if (!this.durable.deadLetters.has(offset)) return false;
    this.durable.deadLetteredTotal += 1;
    this.delta.deadLettered += 1;
    this.durable.cursor.ackIndividual(offset);
    this.delta.acks.add(offset);
    this.delta.dirty = true;
    this.onAcked(offset);
    return true;
  }

  /**
   * Message TTL: acknowledges, on behalf of the subscription, every message below `firstKeptOffset`
   * (the first offset younger than the TTL, from the log's timestamp index), as Pulsar's expiry
   * monitor moves the mark-delete position. Also "clear backlog" with `firstKeptOffset = logEnd`.
   * @returns the number of messages expired.
   */
  expireBefore(firstKeptOffset: number): number {
    const through = Math.min(firstKeptOffset, this.logEnd) - 1;
    if (through < 0) return 0;
    return this.ackThrough(through);
  }

  /**
   * Skips the next `n` unacknowledged messages (Pulsar's skip): they are acknowledged.
   * @returns how many were skipped.
   */
  skip(n: number): number {
    let left = Math.max(0, Math.floor(n));
    const offsets: number[] = [];
    for (const [lo, hi] of this.durable.cursor.unackedRanges(this.logStart, this.logEnd)) {
      for (let o = lo; o <= hi && left > 0; o++, left--) offsets.push(o);
      if (left === 0) break;
    }
    const r = this.ack(offsets);
    return "acked" in r ? r.acked : 0;
  }

  /**
   * Resets the cursor so `nextOffset` (clamped into the log) is the first message delivered and
   * nothing after it counts as acknowledged (Pulsar's reset-cursor / seek; by timestamp, the room
   * resolves the offset first). Messages in flight leave flight, the replay queue and stored
   * redelivery counts are cleared. Pulsar disconnects the consumers on a reset; the room should
   * close their sockets too, since an ack of a pre-seek delivery would still apply.
   */
  seek(nextOffset: number): void {
    const target = Math.min(Math.max(nextOffset, this.logStart), this.logEnd);
    for (const o of [...this.pending.keys()]) this.leaveFlight(o);
    this.replay.clear();
    this.durable.cursor.reset(target);
    this.durable.redeliveryCounts.clear();
    this.durable.notBefore.clear();
    this.durable.deadLetters.clear();
    this.readPosition = target;
    this.delta = freshDelta();
    this.delta.reset = target;
    this.delta.dirty = true;
  }

  // ---- commands and storage ----

  /** Whether a command is waiting ({@link takeCommand} would return one): arm the flush timer. */
  get hasPendingCommand(): boolean {
    return this.delta.dirty;
  }

  /**
   * The batched durable changes since the last call, as one command (null when nothing changed).
   * The room commits it, then sends the ack receipts and produces `deadLetters` copies.
   */
  takeCommand(): SubscriptionCommand | null {
    if (!this.delta.dirty) return null;
    const d = this.delta;
    this.delta = freshDelta();
    const md = this.durable.cursor.markDelete;
    d.acks.removeThrough(md);
    const keep = (m: Map<number, number>) =>
      [...m.entries()]
        .filter(([o]) => !this.isAcked(o))
        .sort((a, b) => a[0] - b[0])
        .map(([o, v]) => [o, v] as const);
    const cmd: SubscriptionCommand = {
      v: 1,
      sub: this.name,
      ...(d.reset !== null ? { reset: { nextOffset: d.reset } } : {}),
      markDelete: md,
      ackRanges: d.acks.ranges(),
      redeliveryCounts: keep(d.counts),
      notBefore: keep(d.notBefore),
      deadLetters: keep(d.deadLetters),
      deadLettered: d.deadLettered,
      nextDeadLetterSeq: this.durable.nextDeadLetterSeq,
    };
    return cmd;
  }

  /** The stored form of the durable state (bounded; see {@link encodeDurable}). */
  snapshot(maxAckRanges = DEFAULT_MAX_ACK_RANGES_TO_PERSIST): { stored: StoredSubscription; droppedRanges: number; droppedCounts: number } {
    return encodeDurable(this.durable, maxAckRanges);
  }

  // ---- stats ----

  /** Pulsar-style stats. `backlogBytes` needs the stored size of an offset range. */
  stats(bytesIn?: (lo: number, hi: number) => number): {
    backlog: number;
    backlogBytes: number | null;
    unacked: number;
    markDelete: number;
    ackRangeCount: number;
    deadLetteredTotal: number;
    consumers: { id: string; name: string; permits: number; unacked: number }[];
  } {
    const cursor = this.durable.cursor;
    return {
      backlog: cursor.backlog(this.logStart, this.logEnd),
      backlogBytes: bytesIn === undefined ? null : cursor.backlogBytes(this.logStart, this.logEnd, bytesIn),
      unacked: this.pending.size,
      markDelete: cursor.markDelete,
      ackRangeCount: cursor.ackSet.rangeCount,
      deadLetteredTotal: this.durable.deadLetteredTotal,
      consumers: [...this.consumers.values()].map((c) => ({ id: c.ref.id, name: c.ref.name, permits: c.permits.available, unacked: c.permits.unacked })),
    };
  }

  /** The offsets `consumerId` holds in flight, ascending. */
  inFlightOf(consumerId: string): number[] {
    return [...(this.consumers.get(consumerId)?.inFlight ?? [])].sort((a, b) => a - b);
  }

  /** Asserts the internal invariants (tests and debug builds). @throws Error on a violation. */
  checkInvariants(): void {
    const cursor = this.durable.cursor;
    cursor.ackSet.assertValid();
    let inFlight = 0;
    for (const c of this.consumers.values()) {
      if (c.permits.available < 0) throw new Error(`negative permits for ${c.ref.id}`);
      if (c.permits.unacked !== c.inFlight.size) throw new Error(`permit count differs from in-flight set for ${c.ref.id}`);
      if (c.permits.mode.kind === "window" && c.permits.available + c.permits.unacked !== c.permits.mode.receiverQueueSize) throw new Error(`window permits not conserved for ${c.ref.id}`);
      const t = c.permits.totals;
      if (c.permits.mode.kind === "credit" && t.granted - t.delivered !== c.permits.available) throw new Error(`credit permits not conserved for ${c.ref.id}`);
      for (const o of c.inFlight) if (this.pending.get(o)?.consumerId !== c.ref.id) throw new Error(`offset ${o} in flight at ${c.ref.id} but pending says otherwise`);
      inFlight += c.inFlight.size;
    }
    if (inFlight !== this.pending.size) throw new Error("pending holds a message of no connected consumer");
    for (const o of this.pending.keys()) {
      if (cursor.isAcked(o)) throw new Error(`acked offset ${o} still in flight`);
      if (this.replay.has(o)) throw new Error(`offset ${o} both in flight and in the replay queue`);
      if (this.durable.deadLetters.has(o)) throw new Error(`offset ${o} both in flight and dead-lettered`);
    }
    for (const o of this.replay.keys()) if (this.durable.deadLetters.has(o)) throw new Error(`offset ${o} both in replay and dead-lettered`);
    for (const [lo, hi] of cursor.unackedRanges(this.logStart, Math.min(this.readPosition, this.logEnd))) {
      for (let o = lo; o <= hi; o++) {
        if (!this.pending.has(o) && !this.replay.has(o) && !this.durable.deadLetters.has(o)) throw new Error(`unacked offset ${o} below the read position is nowhere`);
      }
    }
  }
}
