/**
 * Response headers of catch-up and long-poll reads (PROTOCOL.md 5.6, 5.7, 8, 10.1).
 *
 * Pure module: no Workers imports.
 */

import { H } from "./headers.ts";
import { cacheControl, streamEtag } from "./http-cache.ts";
import { encodeOffset } from "./offsets.ts";

/** The facts a read's answer is built from (offsets are Edgelog offsets). */
export interface ReadOutcome {
  /** The stream's content type. */
  contentType: string;
  /** Incarnation id of the stream (for the ETag). */
  streamId: string;
  /** Offset the read started at. */
  startOffset: number;
  /** Offset after the last record returned (= startOffset when none). */
  nextOffset: number;
  /** Records (messages) returned. */
  count: number;
  /** True when nextOffset reached the tail as of the read. */
  upToDate: boolean;
  /** True when the stream was closed as of the read. */
  closed: boolean;
  /** ms before the stream expires if left idle, null = never. */
  remainingLifetimeMs: number | null;
}

/** How the read was asked for. */
export interface ReadMode {
  /** `?offset=now` without `live`: no ETag, never cached. */
  now: boolean;
  /** `Stream-Cursor` for live (long-poll) responses; null for catch-up. */
  cursor: string | null;
}

/**
 * True when the answer carries the EOF signal: the stream is closed and this answer
 * reaches its final offset (PROTOCOL.md 5.6 "Stream-Closed").
 */
export function isEof(o: ReadOutcome): boolean {
  return o.closed && o.upToDate;
}

/**
 * Headers of a 200 read answer (catch-up or long-poll), including the ETag when one
 * applies (returned separately as `etag` so the route can compare If-None-Match).
 */
export function readHeaders(o: ReadOutcome, mode: ReadMode): { headers: Record<string, string>; etag: string | null } {
  const eof = isEof(o);
  const headers: Record<string, string> = {
    "content-type": o.contentType,
    [H.nextOffset]: encodeOffset(o.nextOffset),
    "cache-control": mode.now || o.count === 0 ? cacheControl("tail") : cacheControl("data", o.remainingLifetimeMs),
  };
  if (o.upToDate) headers[H.upToDate] = "true";
  if (eof) headers[H.closed] = "true";
  // Cursor: required on live answers while the stream is open, optional once closed (5.7).
  if (mode.cursor !== null && !eof) headers[H.cursor] = mode.cursor;
  let etag: string | null = null;
  if (!mode.now) {
    etag = streamEtag(o.streamId, encodeOffset(o.startOffset), encodeOffset(o.nextOffset), eof);
    headers.etag = etag;
  }
  return { headers, etag };
}

/**
 * Headers of a long-poll 204 (timed out, or the stream is closed at the tail): the tail
 * offset, up-to-date, the cursor while the stream is open, and Stream-Closed once closed.
 */
export function longPollNoContentHeaders(tailOffset: number, closed: boolean, cursor: string): Record<string, string> {
  const headers: Record<string, string> = {
    [H.nextOffset]: encodeOffset(tailOffset),
    [H.upToDate]: "true",
    "cache-control": cacheControl("tail"),
  };
  if (closed) headers[H.closed] = "true";
  else headers[H.cursor] = cursor;
  return headers;
}
