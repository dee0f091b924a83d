/**
 * Delivery policy: redelivery delays, ack timeouts and the dead-letter decision, as pure
 * functions of the configuration, the redelivery count and a time passed in (`nowMs`,
 * milliseconds since the epoch). The {@link Subscription} keeps the state; this module decides.
 */

/** Pulsar's default `negativeAckRedeliveryDelay`: 1 minute. */
export const DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS = 60_000;

/** Shortest ack timeout, as Pulsar's clients require ("ackTimeout should be at least 1 second"). */
export const MIN_ACK_TIMEOUT_MS = 1_000;

/**
 * Exponential backoff for negative acks (Pulsar's `MultiplierRedeliveryBackoff`, PIP-106):
 * `delay = min(maxDelayMs, minDelayMs * multiplier ^ redeliveryCount)`.
 */
export interface RedeliveryBackoff {
  /** Delay for a message nacked at redelivery count 0, ms. */
  readonly minDelayMs: number;
  /** Upper bound of the delay, ms. */
  readonly maxDelayMs: number;
  /** Growth per redelivery, >= 1. */
  readonly multiplier: number;
}

/** The delivery part of a subscription's configuration. */
export interface DeliveryPolicy {
  /** Unacked messages are redelivered this long after their delivery; 0 = no ack timeout. @default 0 */
  readonly ackTimeoutMs: number;
  /** Fixed nack delay when no backoff is set, ms. @default 60000 (Pulsar's) */
  readonly negativeAckRedeliveryDelayMs: number;
  /** Optional exponential backoff for nacks; replaces the fixed delay. */
  readonly negativeAckBackoff?: RedeliveryBackoff | undefined;
  /**
   * A message is delivered with redelivery counts 0..maxRedeliverCount; the next redelivery goes
   * to the dead-letter topic instead. 0 = no dead-letter topic. @default 0
   */
  readonly maxRedeliverCount: number;
}

export const DEFAULT_DELIVERY_POLICY: DeliveryPolicy = {
  ackTimeoutMs: 0,
  negativeAckRedeliveryDelayMs: DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS,
  maxRedeliverCount: 0,
};

/**
 * Checks a delivery policy. @returns a reason string for the caller's INVALID_REQUEST, or null.
 * The WebSocket parameter `negativeAckRedeliveryDelay` applies with or without a dead-letter
 * topic (field case A6: Pulsar once ignored it without one, apache/pulsar PR #11495).
 */
export function checkDeliveryPolicy(p: DeliveryPolicy): string | null {
  if (!Number.isInteger(p.ackTimeoutMs) || p.ackTimeoutMs < 0) return "ackTimeoutMs must be a non-negative integer";
  if (p.ackTimeoutMs !== 0 && p.ackTimeoutMs < MIN_ACK_TIMEOUT_MS) return `ackTimeoutMs must be 0 or >= ${MIN_ACK_TIMEOUT_MS}`;
  if (!Number.isInteger(p.negativeAckRedeliveryDelayMs) || p.negativeAckRedeliveryDelayMs < 0) return "negativeAckRedeliveryDelayMs must be a non-negative integer";
  if (!Number.isInteger(p.maxRedeliverCount) || p.maxRedeliverCount < 0) return "maxRedeliverCount must be a non-negative integer";
  const b = p.negativeAckBackoff;
  if (b !== undefined) {
    if (!Number.isInteger(b.minDelayMs) || b.minDelayMs < 0) return "backoff minDelayMs must be a non-negative integer";
    if (!Number.isInteger(b.maxDelayMs) || b.maxDelayMs < b.minDelayMs) return "backoff maxDelayMs must be an integer >= minDelayMs";
    if (!Number.isFinite(b.multiplier) || b.multiplier < 1) return "backoff multiplier must be >= 1";
  }
  return null;
}

/**
 * Delay before a message nacked at `redeliveryCount` (the count it was delivered with) is
 * redelivered, ms: the fixed delay, or the backoff when one is set.
 */
export function nackDelayMs(p: DeliveryPolicy, redeliveryCount: number): number {
  const b = p.negativeAckBackoff;
  if (b === undefined) return p.negativeAckRedeliveryDelayMs;
  return Math.min(b.maxDelayMs, Math.round(b.minDelayMs * b.multiplier ** redeliveryCount));
}

/** When a message delivered at `deliveredAtMs` times out, or null without an ack timeout. */
export function ackTimeoutDueMs(p: DeliveryPolicy, deliveredAtMs: number): number | null {
  return p.ackTimeoutMs > 0 ? deliveredAtMs + p.ackTimeoutMs : null;
}

/**
 * What happens to a message that leaves flight by nack or ack timeout after being delivered with
 * `redeliveryCount`: it comes back with `redeliveryCount + 1`, or, when that exceeds
 * `maxRedeliverCount` (and a dead-letter topic is configured), it goes to the dead-letter topic.
 */
export function redeliveryDecision(p: DeliveryPolicy, redeliveryCount: number): { kind: "redeliver"; redeliveryCount: number } | { kind: "dead_letter" } {
  const next = redeliveryCount + 1;
  if (p.maxRedeliverCount > 0 && next > p.maxRedeliverCount) return { kind: "dead_letter" };
  return { kind: "redeliver", redeliveryCount: next };
}

/**
 * When a message may first be delivered: its `deliverAt` (Pulsar's delayed delivery, PIP-26) or
 * at once. Never early; a `deliverAt` in the past means at once.
 */
export function deliverableAtMs(deliverAtMs: number | null | undefined, nowMs: number): number {
  return deliverAtMs != null && deliverAtMs > nowMs ? deliverAtMs : nowMs;
}
