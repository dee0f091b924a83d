/**
 * Enforcement of the namespace/topic policies (docs/TENANTS.md "What each policy promises"):
 * the pure decisions the partition's rooms take on produce, on dispatch and on their timers.
 * No I/O and no clock: time comes in as `nowMs` (milliseconds since the epoch), sizes in bytes.
 *
 * - Backlog quota (Pulsar's `BacklogQuota`): the backlog is the stored bytes from the slowest
 *   subscription's mark-delete position to the log end (Pulsar's definition: the size of the
 *   managed ledger from the slowest cursor's mark-delete position on, acknowledged holes above it
 *   included), counted in whole record batches. Exceeded when it is strictly above `limitBytes`.
 * - Publish and dispatch rates (Pulsar's `publish-rate`, `dispatch-rate`): messages/s and
 *   bytes/s, each a token bucket of one second's worth (Pulsar's rate period is 1 s), built on
 *   the client-quota bucket of src/auth/quota-bucket.ts (KIP-599's model: admitted while its
 *   credits are >= 0, so one request may take it below zero).
 * - Count limits (max producers per topic, consumers per subscription, subscriptions per topic).
 * - Message TTL: the timestamp before which messages are expired, and how often the room checks.
 */
import { TokenBucket } from "../auth/quota-bucket.ts";
import { errorResult, type ErrorResult } from "../protocol/errors.ts";
import type { BacklogQuota, BacklogQuotaAction, RateLimit } from "../protocol/policies.ts";

// ---- backlog quota ----

/** What a produce meets under the backlog quota: go ahead, or the quota's action. */
export type BacklogVerdict = "ok" | BacklogQuotaAction;

/**
 * The backlog quota's verdict for a backlog of `backlogBytes` (bytes, >= 0): "ok" while it is at
 * or below `limitBytes` (or without a limit), else the quota's action. Checked before each
 * produce, so the request that takes the backlog over the limit is admitted and the next one
 * meets the action (Pulsar checks the backlog, not the request).
 */
export function backlogVerdict(quota: BacklogQuota, backlogBytes: number): BacklogVerdict {
  return quota.limitBytes !== -1 && backlogBytes > quota.limitBytes ? quota.action : "ok";
}

/** A stored record batch as the eviction sees it: its offsets and its stored size (bytes). */
export interface BatchSize {
  baseOffset: number;
  lastOffset: number;
  bytes: number;
}

/**
 * `consumer_backlog_eviction`: the first offset to keep so that the backlog fits the limit.
 * `batches` are the stored batches from the one holding the slowest mark-delete position + 1,
 * in offset order; `backlogBytes` is their total. The oldest whole batches are dropped until
 * the rest is at or below `limitBytes` (every subscription whose mark-delete position is below
 * the answer is moved up to it, as Pulsar's eviction skips the slowest cursor's oldest entries).
 * @returns the first offset kept, or null when the backlog fits already.
 */
export function evictionTarget(batches: Iterable<BatchSize>, backlogBytes: number, limitBytes: number): number | null {
  if (limitBytes === -1 || backlogBytes <= limitBytes) return null;
  let left = backlogBytes;
  let keepFrom: number | null = null;
  for (const b of batches) {
    if (left <= limitBytes) break;
    left -= b.bytes;
    keepFrom = b.lastOffset + 1;
  }
  return keepFrom;
}

// ---- rates ----

/** What a rate limiter answers a publish: admitted or not, and how long to wait (integer ms, >= 0). */
export interface RateAnswer {
  admitted: boolean;
  throttleTimeMs: number;
}

/**
 * A messages/s and bytes/s limit (each -1 = unlimited), one token bucket per dimension holding
 * one second's worth. Used by the partition for the publish rate (admit or refuse a request)
 * and by the subscriptions room for the dispatch rate (how many messages may go now).
 */
/** Tolerance of the whole-message count over floating-point credits. */
const FLOOR_EPSILON = 1e-9;

export class RateLimiter {
  readonly limit: RateLimit;
  readonly #messages: TokenBucket | null;
  readonly #bytes: TokenBucket | null;
  /** Messages and bytes charged so far: their mean size turns the bytes credits into a message count. */
  readonly #charged = { messages: 0, bytes: 0 };

  constructor(limit: RateLimit, nowMs: number) {
    this.limit = { ...limit };
    this.#messages = limit.messagesPerSecond === -1 ? null : new TokenBucket({ ratePerSec: limit.messagesPerSecond, windows: 1 }, nowMs);
    this.#bytes = limit.bytesPerSecond === -1 ? null : new TokenBucket({ ratePerSec: limit.bytesPerSecond, windows: 1 }, nowMs);
  }

  /** Whether nothing is limited (both -1). */
  get unlimited(): boolean {
    return this.#messages === null && this.#bytes === null;
  }

  /** Whether `limit` is the one this limiter enforces (a policy change replaces the limiter). */
  enforces(limit: RateLimit): boolean {
    return this.limit.messagesPerSecond === limit.messagesPerSecond && this.limit.bytesPerSecond === limit.bytesPerSecond;
  }

  /**
   * Publish: admits a request of `messages` records and `bytes` bytes (both buckets charged) while
   * neither bucket is below zero, else refuses it and charges nothing. `throttleTimeMs` is how
   * long until both buckets are back at zero.
   */
  tryAcquire(nowMs: number, messages: number, bytes: number): RateAnswer {
    const m = this.#messages?.credits(nowMs) ?? 0;
    const b = this.#bytes?.credits(nowMs) ?? 0;
    if (m < 0 || b < 0) return { admitted: false, throttleTimeMs: this.waitMs(nowMs, 0) };
    this.#messages?.charge(nowMs, messages);
    this.#bytes?.charge(nowMs, bytes);
    return { admitted: true, throttleTimeMs: this.waitMs(nowMs, 0) };
  }

  /**
   * Dispatch: how many messages may be dispatched now: the whole messages in the messages bucket,
   * and, with a bytes limit, the bytes bucket's credits over the mean size of the messages charged
   * so far (at least 1 while it is not below zero, and 1 before any was charged, as a message's
   * size is known only once it is read); Infinity without any limit; 0 while a bucket is
   * exhausted. Charge what was sent with {@link charge}: the bytes bucket may then go below zero
   * by about one message, and the next dispatch waits.
   */
  allowance(nowMs: number): number {
    let n = Number.POSITIVE_INFINITY;
    if (this.#bytes !== null) {
      const credits = this.#bytes.credits(nowMs);
      if (credits < 0) return 0;
      n = this.#charged.messages === 0 ? 1 : Math.max(1, Math.floor(credits / (this.#charged.bytes / this.#charged.messages)));
    }
    // FLOOR_EPSILON: the refill is floating point; at the time waitMs named, the credits may read
    // 0.9999999999 for a whole message (found by the property test, seed -66880052).
    if (this.#messages !== null) n = Math.min(n, Math.max(0, Math.floor(this.#messages.credits(nowMs) + FLOOR_EPSILON)));
    return n;
  }

  /** Charges messages and bytes already sent (the bytes bucket may go below zero: the next dispatch waits). */
  charge(nowMs: number, messages: number, bytes: number): void {
    this.#messages?.charge(nowMs, messages);
    this.#bytes?.charge(nowMs, bytes);
    this.#charged.messages += Math.max(0, messages);
    this.#charged.bytes += Math.max(0, bytes);
  }

  /**
   * Milliseconds (integer, >= 0) until the buckets hold at least `minMessages` messages (0: not
   * below zero) and the bytes bucket is not below zero.
   */
  waitMs(nowMs: number, minMessages = 1): number {
    let ms = 0;
    if (this.#messages !== null) {
      const missing = minMessages - this.#messages.credits(nowMs);
      if (missing > 0) ms = Math.max(ms, Math.ceil((missing / this.#messages.ratePerSec) * 1000));
    }
    if (this.#bytes !== null) {
      const missing = -this.#bytes.credits(nowMs);
      if (missing > 0) ms = Math.max(ms, Math.ceil((missing / this.#bytes.ratePerSec) * 1000));
    }
    return ms;
  }
}

/**
 * Keeps a {@link RateLimiter} in step with a policy that may change: the same limiter (and its
 * credits) while the limit is unchanged, a new one when it changes, none while unlimited.
 */
export function limiterFor(current: RateLimiter | null, limit: RateLimit, nowMs: number): RateLimiter | null {
  if (limit.messagesPerSecond === -1 && limit.bytesPerSecond === -1) return null;
  if (current?.enforces(limit)) return current;
  return new RateLimiter(limit, nowMs);
}

// ---- count limits ----

/**
 * A count limit (0 = unlimited, Pulsar's convention): refused when `current` (the count before
 * the newcomer) is already at `max`. The refusal names the limit in `details`.
 */
export function checkCountLimit(what: "producers" | "consumers" | "subscriptions", max: number, current: number): ErrorResult | null {
  if (max === 0 || current < max) return null;
  switch (what) {
    case "producers":
      return errorResult("MAX_PRODUCERS_REACHED", `The topic partition has ${current} producer(s), its maxProducersPerTopic: refused.`, { maxProducersPerTopic: max, producers: current });
    case "consumers":
      return errorResult("MAX_CONSUMERS_REACHED", `The subscription has ${current} consumer(s), its maxConsumersPerSubscription: refused.`, {
        maxConsumersPerSubscription: max,
        consumers: current,
      });
    case "subscriptions":
      return errorResult("MAX_SUBSCRIPTIONS_REACHED", `The topic partition has ${current} subscription(s), its maxSubscriptionsPerTopic: refused.`, {
        maxSubscriptionsPerTopic: max,
        subscriptions: current,
      });
  }
}

// ---- message TTL ----

/** Most often a TTL check runs (ms): a TTL of one second is checked every second. */
export const MIN_TTL_CHECK_INTERVAL_MS = 1000;
/** Least often a TTL check runs (ms; Pulsar's `messageExpiryCheckIntervalInMinutes` is 5 min). */
export const MAX_TTL_CHECK_INTERVAL_MS = 60_000;

/**
 * How often the TTL check runs for a TTL of `ttlSeconds` (> 0): half the TTL, within
 * [{@link MIN_TTL_CHECK_INTERVAL_MS}, {@link MAX_TTL_CHECK_INTERVAL_MS}]. A message is
 * therefore expired at most this long after it passed the TTL.
 */
export function ttlCheckIntervalMs(ttlSeconds: number): number {
  return Math.min(MAX_TTL_CHECK_INTERVAL_MS, Math.max(MIN_TTL_CHECK_INTERVAL_MS, Math.floor((ttlSeconds * 1000) / 2)));
}

/**
 * The timestamp (ms) before which messages are expired at `nowMs`: `nowMs - ttl`, or null
 * without a TTL (0). A message is older than the TTL when its timestamp is below this.
 */
export function ttlCutoffMs(nowMs: number, ttlSeconds: number): number | null {
  return ttlSeconds > 0 ? nowMs - ttlSeconds * 1000 : null;
}
