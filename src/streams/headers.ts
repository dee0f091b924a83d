/**
 * Request-header parsing and validation for the Durable Streams routes
 * (PROTOCOL.md sections 4.2, 5.1, 5.2, 5.2.1). Every parser returns a value or
 * `{error}` with a human message; the route answers 400 INVALID_REQUEST with it.
 *
 * Pure module: no Workers imports.
 */

import { decodeOffset } from "./offsets.ts";

/** Content type of a stream created without one (PROTOCOL.md 5.1 allows this default). */
export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/** The media type that switches a stream to JSON mode (PROTOCOL.md 9.1). */
export const JSON_MEDIA_TYPE = "application/json";

/** Longest Producer-Id accepted, in UTF-8 bytes. */
export const MAX_PRODUCER_ID_BYTES = 1024;
/** Longest Stream-Seq accepted, in UTF-8 bytes. */
export const MAX_STREAM_SEQ_BYTES = 1024;

/** Header names (HTTP header names are case-insensitive; these are the spec's spellings). */
export const H = {
  nextOffset: "Stream-Next-Offset",
  upToDate: "Stream-Up-To-Date",
  cursor: "Stream-Cursor",
  closed: "Stream-Closed",
  ttl: "Stream-TTL",
  expiresAt: "Stream-Expires-At",
  seq: "Stream-Seq",
  forkedFrom: "Stream-Forked-From",
  forkOffset: "Stream-Fork-Offset",
  forkSubOffset: "Stream-Fork-Sub-Offset",
  sseDataEncoding: "Stream-SSE-Data-Encoding",
  producerId: "Producer-Id",
  producerEpoch: "Producer-Epoch",
  producerSeq: "Producer-Seq",
  producerExpectedSeq: "Producer-Expected-Seq",
  producerReceivedSeq: "Producer-Received-Seq",
  /** Edgelog's extension: the replication factor of a new stream's topic (docs/DURABLE-STREAMS.md "Replicated streams"). */
  replicationFactor: "Edgelog-Replication-Factor",
} as const;

/** Reads one request header (case-insensitive), null when absent. */
export type HeaderGetter = (name: string) => string | null;

export type Parsed<T> = T | { error: string };

export function isError<T>(v: Parsed<T>): v is { error: string } {
  return typeof v === "object" && v !== null && "error" in v;
}

// RFC 6838 restricted-name characters for type and subtype.
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/;

/**
 * The essence of a Content-Type (`type/subtype`, lowercased, parameters dropped), or null
 * when it is not a media type. Streams match content types on this essence, so
 * `application/json; charset=utf-8` and `APPLICATION/JSON` match `application/json`.
 */
export function mediaTypeEssence(contentType: string): string | null {
  const essence = (contentType.split(";", 1)[0] ?? "").trim().toLowerCase();
  return MEDIA_TYPE.test(essence) ? essence : null;
}

/** True for JSON-mode streams (PROTOCOL.md 9.1). */
export function isJsonContentType(contentType: string): boolean {
  return mediaTypeEssence(contentType) === JSON_MEDIA_TYPE;
}

/**
 * True when SSE data events carry the bytes as UTF-8 text; false when they must be
 * base64 (PROTOCOL.md 5.8: `text/*` and `application/json` are text, all else is binary).
 */
export function isSseText(contentType: string): boolean {
  const e = mediaTypeEssence(contentType) ?? "";
  return e.startsWith("text/") || e === JSON_MEDIA_TYPE;
}

/** True when both content types have the same essence. */
export function contentTypesMatch(a: string, b: string): boolean {
  const ea = mediaTypeEssence(a);
  return ea !== null && ea === mediaTypeEssence(b);
}

/**
 * `Stream-Closed` is present only when its value is `true`, case-insensitively; every other
 * value counts as absent (PROTOCOL.md 4.1) and is never an error.
 */
export function parseClosedHeader(value: string | null): boolean {
  return value !== null && value.trim().toLowerCase() === "true";
}

const DECIMAL = /^(0|[1-9]\d*)$/;

/**
 * `Stream-TTL`: seconds, decimal, no sign, no leading zeros, no fraction or exponent
 * (PROTOCOL.md 5.1). Bounded so that `ttl * 1000` stays a safe integer of milliseconds.
 */
export function parseTtlSeconds(value: string): Parsed<number> {
  const v = value.trim();
  if (!DECIMAL.test(v)) return { error: `Stream-TTL must be a non-negative decimal integer of seconds without sign or leading zeros, got ${JSON.stringify(v)}.` };
  const n = Number(v);
  if (!Number.isSafeInteger(n * 1000)) return { error: "Stream-TTL is too large." };
  return n;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * `Stream-Expires-At`: an RFC 3339 date-time (`2026-01-01T00:00:00Z`,
 * `2026-01-01T00:00:00.5+02:00`). @returns ms since the Unix epoch.
 */
export function parseExpiresAt(value: string): Parsed<number> {
  const v = value.trim();
  const m = RFC3339.exec(v);
  if (m === null) return { error: `Stream-Expires-At must be an RFC 3339 date-time, got ${JSON.stringify(v.slice(0, 64))}.` };
  const [, , mo, d, h, mi, s] = m;
  // Date.parse rolls over out-of-range fields (Feb 30 -> Mar 2); check them first.
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > 31 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) {
    return { error: "Stream-Expires-At has an out-of-range field." };
  }
  const ms = Date.parse(v.replace(/[ t]/, "T").replace(/z$/, "Z"));
  if (!Number.isFinite(ms)) return { error: "Stream-Expires-At is not a valid date-time." };
  return ms;
}

/** Expiry configuration of a stream: at most one of the two (PROTOCOL.md 5.1). */
export interface ExpiryConfig {
  /** Sliding window in seconds (reset by reads and writes, not by HEAD). */
  ttlSeconds: number | null;
  /** Absolute expiry, ms since the epoch. */
  expiresAtMs: number | null;
}

/** A fork request (PROTOCOL.md 4.2). */
export interface ForkRequest {
  /** `Stream-Forked-From` as sent (resolved to a path by the route). */
  source: string;
  /** Edgelog offset of `Stream-Fork-Offset`; null = the source's tail. */
  offset: number | null;
  /** `Stream-Fork-Offset` as sent, null when absent (kept for idempotent re-creation checks). */
  offsetToken: string | null;
  /** `Stream-Fork-Sub-Offset`; 0 when absent (0 and absent are equivalent). */
  subOffset: number;
}

/** Everything a PUT's headers say. */
export interface CreateHeaders extends ExpiryConfig {
  /** The Content-Type as sent (trimmed), or null when absent or empty. */
  contentType: string | null;
  /** `Stream-Closed: true`: create the stream closed. */
  closed: boolean;
  fork: ForkRequest | null;
}

/**
 * Parses the headers of `PUT {stream}`.
 * Errors: a Content-Type that is not a media type; a bad TTL or Expires-At; both TTL and
 * Expires-At (PROTOCOL.md 5.1: SHOULD reject, which we do); a fork offset or sub-offset that
 * is malformed or sent without `Stream-Forked-From`.
 */
export function parseCreateHeaders(get: HeaderGetter): Parsed<CreateHeaders> {
  const ctRaw = get("content-type")?.trim() ?? "";
  const contentType = ctRaw === "" ? null : ctRaw;
  if (contentType !== null && mediaTypeEssence(contentType) === null) {
    return { error: `Content-Type ${JSON.stringify(contentType.slice(0, 64))} is not a media type.` };
  }
  const ttlRaw = get(H.ttl);
  const expRaw = get(H.expiresAt);
  if (ttlRaw !== null && expRaw !== null) return { error: "Send Stream-TTL or Stream-Expires-At, not both." };
  let ttlSeconds: number | null = null;
  let expiresAtMs: number | null = null;
  if (ttlRaw !== null) {
    const t = parseTtlSeconds(ttlRaw);
    if (isError(t)) return t;
    ttlSeconds = t;
  }
  if (expRaw !== null) {
    const e = parseExpiresAt(expRaw);
    if (isError(e)) return e;
    expiresAtMs = e;
  }
  const source = get(H.forkedFrom);
  const offsetRaw = get(H.forkOffset);
  const subRaw = get(H.forkSubOffset);
  let fork: ForkRequest | null = null;
  if (source === null) {
    if (offsetRaw !== null) return { error: "Stream-Fork-Offset requires Stream-Forked-From." };
    if (subRaw !== null) return { error: "Stream-Fork-Sub-Offset requires Stream-Forked-From." };
  } else {
    if (source.trim() === "") return { error: "Stream-Forked-From must not be empty." };
    let offset: number | null = null;
    let offsetToken: string | null = null;
    if (offsetRaw !== null) {
      offsetToken = offsetRaw.trim();
      offset = decodeOffset(offsetToken);
      if (offset === null) return { error: "Stream-Fork-Offset is not a valid offset." };
    }
    let subOffset = 0;
    if (subRaw !== null) {
      const v = subRaw.trim();
      if (!DECIMAL.test(v) || !Number.isSafeInteger(Number(v))) {
        return { error: "Stream-Fork-Sub-Offset must be a non-negative decimal integer without sign or leading zeros." };
      }
      subOffset = Number(v);
    }
    fork = { source, offset, offsetToken, subOffset };
  }
  return { contentType, closed: parseClosedHeader(get(H.closed)), ttlSeconds, expiresAtMs, fork };
}

/**
 * Parses `Edgelog-Replication-Factor` of a `PUT` (Edgelog's extension, not in the protocol): the
 * `replication.factor` of the stream's topic, `1` or `3` (docs/RAFT.md), canonical decimal as
 * protocol 5.1 writes integers; null when absent (the topic's default, 1, or an existing topic's).
 */
export function parseReplicationFactorHeader(get: HeaderGetter): Parsed<number | null> {
  const raw = get(H.replicationFactor);
  if (raw === null) return null;
  const v = raw.trim();
  if (v !== "1" && v !== "3") return { error: `${H.replicationFactor} must be 1 or 3, got ${JSON.stringify(v.slice(0, 16))}.` };
  return Number(v);
}

/** Idempotent-producer headers (PROTOCOL.md 5.2.1). */
export interface ProducerHeaders {
  id: string;
  epoch: number;
  seq: number;
}

const utf8 = new TextEncoder();

/**
 * Parses `Producer-Id`/`Producer-Epoch`/`Producer-Seq`: all three or none (null).
 * Errors: only some present; an empty or over-long id; an epoch or sequence that is not a
 * decimal integer in [0, 2^53-1]. PROTOCOL.md 5.2.1 says only "a non-negative integer <= 2^53-1";
 * its one decimal grammar (Stream-TTL, 5.1: no sign, no leading zeros, no fraction or
 * exponent) is applied here too, so `00` or `+1` is refused rather than read as 0 or 1
 * (the reference server accepts them).
 */
export function parseProducerHeaders(get: HeaderGetter): Parsed<ProducerHeaders | null> {
  const id = get(H.producerId);
  const epoch = get(H.producerEpoch);
  const seq = get(H.producerSeq);
  if (id === null && epoch === null && seq === null) return null;
  if (id === null || epoch === null || seq === null) {
    return { error: "Producer-Id, Producer-Epoch and Producer-Seq must be sent together." };
  }
  if (id === "") return { error: "Producer-Id must not be empty." };
  if (utf8.encode(id).length > MAX_PRODUCER_ID_BYTES) return { error: `Producer-Id is longer than ${MAX_PRODUCER_ID_BYTES} bytes.` };
  const e = epoch.trim();
  const s = seq.trim();
  if (!DECIMAL.test(e) || !Number.isSafeInteger(Number(e))) {
    return { error: `Producer-Epoch must be a decimal integer in [0, 2^53-1] without sign or leading zeros, got ${JSON.stringify(e)}.` };
  }
  if (!DECIMAL.test(s) || !Number.isSafeInteger(Number(s))) {
    return { error: `Producer-Seq must be a decimal integer in [0, 2^53-1] without sign or leading zeros, got ${JSON.stringify(s)}.` };
  }
  return { id, epoch: Number(e), seq: Number(s) };
}

/** Everything a POST's headers say. */
export interface AppendHeaders {
  /** The Content-Type as sent, null when absent (allowed only for close-only requests). */
  contentType: string | null;
  /** `Stream-Seq`, null when absent. */
  streamSeq: string | null;
  /** `Stream-Closed: true`. */
  close: boolean;
  producer: ProducerHeaders | null;
}

/**
 * Parses the headers of `POST {stream}`. A missing Content-Type is not an error here: it is
 * one only when the body is non-empty (PROTOCOL.md 5.2), which the route checks.
 */
export function parseAppendHeaders(get: HeaderGetter): Parsed<AppendHeaders> {
  const producer = parseProducerHeaders(get);
  if (isError(producer)) return producer;
  const ctRaw = get("content-type")?.trim() ?? "";
  const streamSeq = get(H.seq);
  if (streamSeq !== null) {
    if (streamSeq === "") return { error: "Stream-Seq must not be empty." };
    if (utf8.encode(streamSeq).length > MAX_STREAM_SEQ_BYTES) return { error: `Stream-Seq is longer than ${MAX_STREAM_SEQ_BYTES} bytes.` };
  }
  return { contentType: ctRaw === "" ? null : ctRaw, streamSeq, close: parseClosedHeader(get(H.closed)), producer };
}

/**
 * Byte-wise comparison of two `Stream-Seq` values' UTF-8 encodings (PROTOCOL.md 5.2:
 * "simple byte-wise lexicographic ordering"). JavaScript's `<` compares UTF-16 code units,
 * which orders U+E000..U+FFFF after astral characters; UTF-8 bytes do not.
 * @returns negative, 0 or positive
 */
export function compareStreamSeq(a: string, b: string): number {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = (x[i] as number) - (y[i] as number);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
