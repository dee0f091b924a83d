/**
 * Retry timing shared by the producer and the consumer: exponential backoff with ±20% jitter,
 * as the Kafka clients since KIP-580 (retry.backoff.ms doubling up to retry.backoff.max.ms).
 */

/** Jitter of KIP-580: the delay is multiplied by a factor in [0.8, 1.2). */
const JITTER = 0.2;

/**
 * Delay before retry number `attempt + 1`, in ms: `min(baseMs * 2^attempt, maxMs)` times a
 * random factor in [0.8, 1.2), never above `maxMs`.
 * @param attempt 0 for the first retry
 * @param random source of [0, 1) numbers @default Math.random
 */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(baseMs * 2 ** Math.min(attempt, 30), maxMs);
  return Math.min(Math.round(exp * (1 - JITTER + 2 * JITTER * random())), maxMs);
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Retry settings of {@link withRetries}. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  retryBackoffMs: number;
  maxRetryBackoffMs: number;
}

/**
 * Calls `call` until it resolves, retrying after a backoff while it rejects with an error whose
 * `retriable` is true (an EdgelogClientError of a retriable code), at most `retries` times.
 * Any other error rejects at once. `onRetry` is told each retry (1-based attempt, backoff ms, the error).
 */
export async function withRetries<T>(call: () => Promise<T>, policy: RetryPolicy, onRetry?: (attempt: number, delayMs: number, error: unknown) => void): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (e) {
      if (!(isRetriable(e) && attempt < policy.retries)) throw e;
      const delayMs = backoffMs(attempt, policy.retryBackoffMs, policy.maxRetryBackoffMs);
      onRetry?.(attempt + 1, delayMs, e);
      await sleep(delayMs);
    }
  }
}

function isRetriable(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { retriable?: unknown }).retriable === true;
}
