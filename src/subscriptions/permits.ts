/**
 * Flow control for one consumer: how many more messages the subscription may push to it.
 *
 * Two modes, as Pulsar's WebSocket API has them (docs "client-libraries-websocket", field case A7):
 * - `window` (push mode, the default): the consumer's receiver queue of `receiverQueueSize`
 *   messages. A delivery takes a permit; a permit is given back on EVERY way a message leaves
 *   flight: ack, nack, ack timeout, consumer disconnect, expiry, dead-lettering. So at all times
 *   `available + inFlight === receiverQueueSize` (conservation) and `available >= 0`.
 * - `credit` (pull mode, `pullMode=true`): permits come only from the client's
 *   `{type: "permit", permitMessages}` frames; a delivery consumes one and nothing gives it back.
 *   An ack (possibly sent on another connection) does not add permits. So at all times
 *   `granted - delivered === available >= 0`.
 *
 * Pure: no I/O, no clock.
 */

/** Largest receiver queue a consumer may ask for (Pulsar's default is 1,000). */
export const MAX_RECEIVER_QUEUE_SIZE = 10_000;

/** Most permits one pull-mode consumer may hold at once. */
export const MAX_CREDIT_PERMITS = 1_000_000;

export type FlowMode = { kind: "window"; receiverQueueSize: number } | { kind: "credit" };

export class Permits {
  readonly mode: FlowMode;
  private inFlight = 0;
  private credits = 0;
  /** Totals for stats and invariants. */
  private granted = 0;
  private delivered = 0;

  /** @throws RangeError when receiverQueueSize is not in 1..MAX_RECEIVER_QUEUE_SIZE. */
  constructor(mode: FlowMode) {
    if (mode.kind === "window") {
      const q = mode.receiverQueueSize;
      if (!Number.isInteger(q) || q < 1 || q > MAX_RECEIVER_QUEUE_SIZE) throw new RangeError(`receiverQueueSize must be 1..${MAX_RECEIVER_QUEUE_SIZE}, got ${q}`);
    }
    this.mode = mode;
  }

  /** Permits available now (>= 0). */
  get available(): number {
    return this.mode.kind === "window" ? this.mode.receiverQueueSize - this.inFlight : this.credits;
  }

  /** Messages delivered to this consumer and not yet out of flight. */
  get unacked(): number {
    return this.inFlight;
  }

  /** Totals: permits granted (credit mode) and messages delivered, since the consumer joined. */
  get totals(): { granted: number; delivered: number } {
    return { granted: this.granted, delivered: this.delivered };
  }

  /**
   * Adds `n` permits (credit mode only).
   * @returns false (and changes nothing) in window mode, for a non-positive or non-integer `n`, or
   *   past MAX_CREDIT_PERMITS: the caller answers INVALID_REQUEST.
   */
  grant(n: number): boolean {
    if (this.mode.kind !== "credit" || !Number.isInteger(n) || n < 1 || this.credits + n > MAX_CREDIT_PERMITS) return false;
    this.credits += n;
    this.granted += n;
    return true;
  }

  /**
   * Drops the credits not used yet (credit mode; HTTP pull ends a receive with it, so nothing
   * more is pushed to a lease). @returns how many were dropped (0 in window mode).
   */
  revoke(): number {
    if (this.mode.kind !== "credit") return 0;
    const n = this.credits;
    this.credits = 0;
    this.granted -= n;
    return n;
  }

  /** One message is delivered. @throws Error when no permit is available (a dispatcher bug). */
  take(): void {
    if (this.available < 1) throw new Error("delivery without a permit");
    this.inFlight += 1;
    this.delivered += 1;
    if (this.mode.kind === "credit") this.credits -= 1;
  }

  /** One message left flight (ack, nack, ack timeout, disconnect, expiry, dead-letter). */
  release(): void {
    if (this.inFlight < 1) throw new Error("release without a message in flight");
    this.inFlight -= 1;
  }
}
