/**
 * Stream paths and the Edgelog topics behind them (docs/DURABLE-STREAMS.md, "Names").
 *
 * A stream lives at `/v1/stream/{path}`; `{path}` is one or more `/`-separated segments of
 * any Unicode text. Each stream is the one-partition topic
 * `streams/default/{topicPart(path)}` where `topicPart` is reversible and readable:
 * `[A-Za-z0-9.-]` stay as they are, every other UTF-8 byte becomes `_` + two lowercase hex
 * digits (so `_` itself is `_5f` and `/` is `_2f`):
 *
 *     /v1/stream/chat/room-1     ->  streams/default/chat_2froom-1
 *     /v1/stream/my_log          ->  streams/default/my_5flog
 *
 * Kafka caps a topic name at 249 characters (kafka/common/internals/Topic.java). A path whose
 * escaped form is longer maps to `_h` + the hex SHA-256 of its UTF-8 bytes (66 characters);
 * `_h` can never start an escaped name because `h` is not a hex digit. Hashed names are not
 * reversible, so the stream's metadata row keeps the original path and the partition
 * checks it on every request (a hash collision then reads as "no such stream", never as
 * another stream's data).
 *
 * Pure module: no Workers imports (uses the Web Crypto global for SHA-256).
 */

/** URL prefix of the Durable Streams API (the protocol's own example and the conformance suite's). */
export const STREAMS_PATH_PREFIX = "/v1/stream/";

/** Tenant and namespace of every stream's topic. */
export const STREAMS_TENANT = "streams";
export const STREAMS_NAMESPACE = "default";
/** `streams/default/`: prefix of the full topic name of every stream. */
export const STREAMS_TOPIC_PREFIX = `${STREAMS_TENANT}/${STREAMS_NAMESPACE}/`;

/** Longest stream path accepted, in UTF-8 bytes (PROTOCOL.md 12.2: keep URL components bounded). */
export const MAX_STREAM_PATH_BYTES = 1024;

/** First path segment reserved for the protocol's control APIs (PROTOCOL.md section 6). */
export const RESERVED_SEGMENT = "__ds";

/** Longest topic part (Kafka's limit). */
const MAX_TOPIC_PART_CHARS = 249;
const HASHED_PREFIX = "_h";
const KEEP = /^[A-Za-z0-9.-]$/;
// C0 controls and DEL: never valid in a stream path (they cannot appear in HTTP logs safely).
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f]/;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Outcome of {@link parseStreamPath}. */
export type StreamPathResult = { ok: true; path: string } | { ok: false; reason: "invalid" | "reserved"; message: string };

/**
 * Extracts and validates the stream path from a request's URL pathname.
 *
 * @param pathname the URL pathname as received (percent-encoded), starting with
 *   {@link STREAMS_PATH_PREFIX}
 * @returns the decoded path (segments joined by `/`), or why it is rejected: `invalid`
 *   (empty, an empty, `.` or `..` segment, a segment that decodes to contain `/`, bad
 *   percent-encoding, control characters, longer than {@link MAX_STREAM_PATH_BYTES}) or
 *   `reserved` (first segment `__ds`).
 */
export function parseStreamPath(pathname: string): StreamPathResult {
  if (!pathname.startsWith(STREAMS_PATH_PREFIX)) {
    return { ok: false, reason: "invalid", message: `Stream URLs start with ${STREAMS_PATH_PREFIX}.` };
  }
  const raw = pathname.slice(STREAMS_PATH_PREFIX.length);
  if (raw === "") return { ok: false, reason: "invalid", message: "The stream path is empty." };
  const segments: string[] = [];
  for (const rawSegment of raw.split("/")) {
    let segment: string;
    try {
      segment = decodeURIComponent(rawSegment);
    } catch {
      return { ok: false, reason: "invalid", message: "The stream path has malformed percent-encoding." };
    }
    if (segment === "" || segment === "." || segment === "..") {
      return { ok: false, reason: "invalid", message: "Stream path segments must not be empty, '.' or '..'." };
    }
    if (segment.includes("/")) {
      return { ok: false, reason: "invalid", message: "A stream path segment must not contain an encoded '/'." };
    }
    if (CONTROL.test(segment)) {
      return { ok: false, reason: "invalid", message: "The stream path must not contain control characters." };
    }
    segments.push(segment);
  }
  const path = segments.join("/");
  if (encoder.encode(path).length > MAX_STREAM_PATH_BYTES) {
    return { ok: false, reason: "invalid", message: `The stream path is longer than ${MAX_STREAM_PATH_BYTES} bytes.` };
  }
  if (segments[0] === RESERVED_SEGMENT) {
    return { ok: false, reason: "reserved", message: `Paths under ${RESERVED_SEGMENT}/ are reserved for protocol control APIs.` };
  }
  return { ok: true, path };
}

/**
 * Resolves a `Stream-Forked-From` header value to a stream path.
 * Accepts the source's URL path (`/v1/stream/...`) or an absolute URL on the same origin.
 * @returns the path, or why the value does not name a stream on this server
 */
export function parseForkSource(value: string, requestOrigin: string): StreamPathResult {
  let pathname = value.trim();
  if (/^https?:\/\//i.test(pathname)) {
    let url: URL;
    try {
      url = new URL(pathname);
    } catch {
      return { ok: false, reason: "invalid", message: "Stream-Forked-From is not a valid URL." };
    }
    if (url.origin !== requestOrigin) {
      return { ok: false, reason: "invalid", message: "Stream-Forked-From must name a stream on this server." };
    }
    pathname = url.pathname;
  }
  return parseStreamPath(pathname);
}

/** The escaped (reversible) topic part of a path, before the length check. */
function escapePath(path: string): string {
  let out = "";
  for (const ch of path) {
    if (KEEP.test(ch)) {
      out += ch;
    } else {
      for (const b of encoder.encode(ch)) out += `_${b.toString(16).padStart(2, "0")}`;
    }
  }
  // "." and ".." are not valid topic names (Kafka's rule); escape their dots.
  if (out === "." || out === "..") out = out.replaceAll(".", "_2e");
  return out;
}

/**
 * The topic part (last segment of the full topic name) of the stream at `path`.
 * Escaped form when it fits in 249 characters, else `_h` + hex SHA-256 of the path.
 */
export async function topicPartForPath(path: string): Promise<string> {
  const escaped = escapePath(path);
  if (escaped.length <= MAX_TOPIC_PART_CHARS) return escaped;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(path)));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return `${HASHED_PREFIX}${hex}`;
}

/** Full topic name (`streams/default/...`) of the stream at `path`. */
export async function topicNameForPath(path: string): Promise<string> {
  return `${STREAMS_TOPIC_PREFIX}${await topicPartForPath(path)}`;
}

/**
 * The stream path of a topic part, or null when it is a hashed name (look the path up in
 * the stream's metadata) or not a valid escaped name.
 */
export function pathForTopicPart(topicPart: string): string | null {
  if (topicPart.startsWith(HASHED_PREFIX)) return null;
  const bytes: number[] = [];
  for (let i = 0; i < topicPart.length; i++) {
    const ch = topicPart[i] as string;
    if (ch === "_") {
      const hex = topicPart.slice(i + 1, i + 3);
      if (!/^[0-9a-f]{2}$/.test(hex)) return null;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (KEEP.test(ch)) {
      bytes.push(ch.charCodeAt(0));
    } else {
      return null;
    }
  }
  try {
    return decoder.decode(new Uint8Array(bytes));
  } catch {
    return null;
  }
}
