/**
 * Caching and collapsing (PROTOCOL.md section 10): live-mode cursors, ETags and the
 * Cache-Control policy.
 *
 * Pure module: no Workers imports. Time and randomness are parameters.
 */

/** Cursor epoch: 2024-10-09T00:00:00Z (PROTOCOL.md 10.1's default). */
export const CURSOR_EPOCH_MS = Date.UTC(2024, 9, 9);
/** Cursor interval (PROTOCOL.md 10.1's default). */
export const CURSOR_INTERVAL_MS = 20_000;
/** Jitter bounds, seconds, added when a client's cursor is not behind the clock (PROTOCOL.md 10.1). */
export const CURSOR_JITTER_MIN_S = 1;
export const CURSOR_JITTER_MAX_S = 3600;

/**
 * The `Stream-Cursor` / `streamCursor` of a live response: the current 20 s interval
 * number since the epoch, or, when the client's `cursor` is already at or past it, the
 * client's cursor plus 1-3600 s of random jitter (at least one interval), so cursors never go
 * backwards and a CDN never serves the same cached empty answer forever.
 *
 * @param clientCursor the request's `cursor` query parameter, if any (non-numeric = absent)
 * @param nowMs current time, ms since the epoch
 * @param random a uniform [0, 1) source (Math.random in production)
 */
export function responseCursor(clientCursor: string | null, nowMs: number, random: () => number): string {
  const current = Math.floor((nowMs - CURSOR_EPOCH_MS) / CURSOR_INTERVAL_MS);
  if (clientCursor === null || !/^\d{1,15}$/.test(clientCursor)) return String(current);
  const client = Number(clientCursor);
  if (client < current) return String(current);
  const jitterS = CURSOR_JITTER_MIN_S + Math.floor(random() * (CURSOR_JITTER_MAX_S - CURSOR_JITTER_MIN_S + 1));
  const intervals = Math.max(1, Math.ceil((jitterS * 1000) / CURSOR_INTERVAL_MS));
  return String(client + intervals);
}

/**
 * ETag of a catch-up or long-poll 200: `"{streamId}:{start}:{end}"`, plus `:c` when the
 * response carries the closure signal, so closing a stream changes the ETag of the tail
 * read even though no data was added (PROTOCOL.md 10.1).
 *
 * @param streamId identifies this incarnation of the stream (the topic id), so a stream
 *   deleted and re-created at the same path never revalidates an old response
 * @param startToken offset token the read started at; endToken the Stream-Next-Offset sent
 */
export function streamEtag(streamId: string, startToken: string, endToken: string, closed: boolean): string {
  return `"${streamId}:${startToken}:${endToken}${closed ? ":c" : ""}"`;
}

/**
 * RFC 9110 13.1.2 If-None-Match: weak comparison against a list of entity tags, or `*`.
 * @returns true when the response should be 304 Not Modified
 */
export function ifNoneMatchHits(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  const v = ifNoneMatch.trim();
  if (v === "*") return true;
  const opaque = etag.replace(/^W\//, "");
  for (const part of v.split(",")) {
    if (part.trim().replace(/^W\//, "") === opaque) return true;
  }
  return false;
}

/** Longest max-age of a cacheable read, seconds (PROTOCOL.md 10.1's example). */
export const READ_MAX_AGE_S = 60;
/** stale-while-revalidate of a cacheable read, seconds (PROTOCOL.md 10.1's example). */
export const READ_SWR_S = 300;

/** What a response is, for {@link cacheControl}. */
export type CacheKind =
  /** HEAD: tail offset and closure status change at any time. */
  | "head"
  /** A catch-up or long-poll 200 that carries data: immutable by position, cacheable. */
  | "data"
  /** A read that carries no data (at the tail, offset=now, long-poll 204): must not be cached. */
  | "tail"
  /** An SSE stream (no-cache keeps proxies from buffering it). */
  | "sse"
  /** Errors and writes. */
  | "none";

/**
 * The Cache-Control header (PROTOCOL.md 5.5, 10.1, 12.7).
 *
 * A data chunk is cacheable because bytes at a position never change and a cached shorter
 * chunk is still correct (the client continues from its Stream-Next-Offset). Its max-age is
 * 60 s, lowered to the stream's remaining lifetime when it expires sooner ("derived from
 * TTL/expiry", PROTOCOL.md 5.6). Reads that carry no data answer "where is the tail", which
 * changes with every append: no-store. `public` because Edgelog has no per-user stream
 * access yet; when authentication lands this must become `private`.
 *
 * @param remainingLifetimeMs ms until the stream expires if left idle, null = never
 */
export function cacheControl(kind: CacheKind, remainingLifetimeMs: number | null = null): string {
  switch (kind) {
    case "data": {
      const cap = remainingLifetimeMs === null ? READ_MAX_AGE_S : Math.max(0, Math.round(remainingLifetimeMs / 1000));
      const maxAge = Math.min(READ_MAX_AGE_S, cap);
      return maxAge === 0 ? "no-store" : `public, max-age=${maxAge}, stale-while-revalidate=${READ_SWR_S}`;
    }
    case "sse":
      return "no-cache";
    default:
      return "no-store";
  }
}
