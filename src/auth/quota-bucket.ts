/**
 * Client quota token bucket (KIP-599's model, the one Kafka brokers use since 2.8 for
 * controller mutations and the model field case E7 states):
 *
 * - quota T units/s (bytes/s or requests/s), `windows` samples of `windowMs` each: the bucket
 *   holds at most burst = windows × windowMs/1000 × T credits and starts full;
 * - credits refill at T per second, up to the burst;
 * - a request arriving while credits >= 0 is ADMITTED and its amount subtracted (credits may go
 *   negative by one request, as in Kafka); its answer carries throttleTimeMs = ceil(max(0,
 *   -credits) / T × 1000);
 * - a request arriving while credits < 0 is REFUSED (429 THROTTLED, nothing subtracted) with the
 *   same throttleTimeMs: the time until the credits are back to 0.
 *
 * So over any interval of D seconds a client is admitted at most burst + T×D + one request's
 * amount (docs/SECURITY.md "Quotas").
 *
 * Throttle times are finite non-negative integers: the elapsed time is clamped at >= 0 (a clock
 * that steps back refills nothing), T must be a positive finite number, and nothing divides by a
 * window length (KAFKA-2443/2567 and KAFKA-13911 produced NaN at a window start; AutoMQ PR #2180
 * capped unbounded values: the cap here is {@link MAX_THROTTLE_MS}).
 *
 * Pure: the caller passes the clock.
 */

/** Samples in the burst (Kafka's `quota.window.num`; Kafka's default 11 allows longer bursts). */
export const QUOTA_WINDOWS = 2;
/** Length of one sample (Kafka's `quota.window.size.seconds` = 1). */
export const QUOTA_WINDOW_MS = 1000;
/** Longest throttle time answered (Kafka caps at the quota window span times the windows; AutoMQ caps too). */
export const MAX_THROTTLE_MS = 300_000;

export interface BucketOptions {
  /** Units per second; positive and finite. */
  ratePerSec: number;
  /** @default QUOTA_WINDOWS */
  windows?: number;
  /** @default QUOTA_WINDOW_MS */
  windowMs?: number;
}

export interface BucketAnswer {
  admitted: boolean;
  /** Integer ms, >= 0: how long the client should wait before its next request. */
  throttleTimeMs: number;
}

export class TokenBucket {
  readonly ratePerSec: number;
  readonly burst: number;
  #credits: number;
  #lastMs: number;

  constructor(o: BucketOptions, nowMs: number) {
    if (!(o.ratePerSec > 0) || !Number.isFinite(o.ratePerSec)) throw new RangeError(`quota rate must be a positive finite number, got ${o.ratePerSec}`);
    this.ratePerSec = o.ratePerSec;
    this.burst = (o.windows ?? QUOTA_WINDOWS) * ((o.windowMs ?? QUOTA_WINDOW_MS) / 1000) * o.ratePerSec;
    this.#credits = this.burst;
    this.#lastMs = nowMs;
  }

  /** Credits now (may be negative). */
  credits(nowMs: number): number {
    this.#refill(nowMs);
    return this.#credits;
  }

  /**
   * Admits (and charges `amount`) or refuses a request at `nowMs`.
   * `amount` 0 only checks (a fetch, whose bytes are charged by {@link charge} afterwards).
   */
  record(nowMs: number, amount: number): BucketAnswer {
    this.#refill(nowMs);
    if (this.#credits < 0) return { admitted: false, throttleTimeMs: this.#throttle() };
    this.#credits -= Math.max(0, amount);
    return { admitted: true, throttleTimeMs: this.#throttle() };
  }

  /** Charges `amount` already served (a fetch answer's bytes), whatever the credits. */
  charge(nowMs: number, amount: number): number {
    this.#refill(nowMs);
    this.#credits -= Math.max(0, amount);
    return this.#throttle();
  }

  /** Replaces the rate (an admin changed the quota): credits keep their value, capped at the new burst. */
  setRate(ratePerSec: number, nowMs: number): void {
    this.#refill(nowMs);
    const ratio = this.burst / this.ratePerSec;
    (this as { ratePerSec: number }).ratePerSec = ratePerSec;
    (this as { burst: number }).burst = ratio * ratePerSec;
    this.#credits = Math.min(this.#credits, this.burst);
  }

  #refill(nowMs: number): void {
    const elapsedMs = Math.max(0, nowMs - this.#lastMs);
    this.#lastMs = Math.max(this.#lastMs, nowMs);
    this.#credits = Math.min(this.burst, this.#credits + (elapsedMs / 1000) * this.ratePerSec);
  }

  #throttle(): number {
    if (this.#credits >= 0) return 0;
    return Math.min(MAX_THROTTLE_MS, Math.ceil((-this.#credits / this.ratePerSec) * 1000));
  }
}
