/**
 * Stream lifetime: `Stream-TTL` (sliding, reset by reads and writes but not HEAD) and
 * `Stream-Expires-At` (absolute), PROTOCOL.md 4 and 5.1, and the fork inheritance table of
 * PROTOCOL.md 4.2.
 *
 * Pure module: no Workers imports. Times are ms since the Unix epoch.
 */

import type { ExpiryConfig } from "./headers.ts";

/**
 * When the stream expires if nothing touches it again, or null for never.
 * @param lastAccessMs last read or write (creation counts as one)
 */
export function expiryDeadlineMs(cfg: ExpiryConfig, lastAccessMs: number): number | null {
  let deadline: number | null = cfg.expiresAtMs;
  if (cfg.ttlSeconds !== null) {
    const ttlDeadline = lastAccessMs + cfg.ttlSeconds * 1000;
    deadline = deadline === null ? ttlDeadline : Math.min(deadline, ttlDeadline);
  }
  return deadline;
}

/** True once `nowMs` reached the deadline (a TTL of 0 expires at once). */
export function isExpired(cfg: ExpiryConfig, lastAccessMs: number, nowMs: number): boolean {
  const d = expiryDeadlineMs(cfg, lastAccessMs);
  return d !== null && nowMs >= d;
}

/** ms left before expiry if left idle, null for never (for Cache-Control max-age). */
export function remainingLifetimeMs(cfg: ExpiryConfig, lastAccessMs: number, nowMs: number): number | null {
  const d = expiryDeadlineMs(cfg, lastAccessMs);
  return d === null ? null : Math.max(0, d - nowMs);
}

/**
 * How often a sliding TTL's last-access time is written to storage, ms. The in-memory value
 * is exact; only after the Durable Object is evicted can the stored one be this much older,
 * which can make a TTL stream expire this much early. A tenth of the window, at most 1 s,
 * keeps reads from writing on every request.
 */
export function touchPersistIntervalMs(ttlSeconds: number): number {
  return Math.min(1000, Math.floor((ttlSeconds * 1000) / 10));
}

/**
 * Expiry of a new fork (PROTOCOL.md 4.2 table): its own TTL or Expires-At when requested,
 * otherwise the source's TTL value (a fresh window) or the source's Expires-At. A fork's
 * expiry is never capped by its source's.
 */
export function forkExpiry(requested: ExpiryConfig, source: ExpiryConfig): ExpiryConfig {
  if (requested.ttlSeconds !== null || requested.expiresAtMs !== null) return { ...requested };
  if (source.ttlSeconds !== null) return { ttlSeconds: source.ttlSeconds, expiresAtMs: null };
  if (source.expiresAtMs !== null) return { ttlSeconds: null, expiresAtMs: source.expiresAtMs };
  return { ttlSeconds: null, expiresAtMs: null };
}

/** Same expiry configuration (for idempotent PUT). Expires-At compares as an instant. */
export function expiryEquals(a: ExpiryConfig, b: ExpiryConfig): boolean {
  return a.ttlSeconds === b.ttlSeconds && a.expiresAtMs === b.expiresAtMs;
}
