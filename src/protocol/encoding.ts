/**
 * Field encodings of JSON bodies (`string` | `base64` | `json`, see {@link Encoding}) and a
 * strict base64 codec. Shared by the gateway and the SDK. Pure module: no Workers imports.
 *
 * Why a hand-written base64: `atob` is lenient (it strips ASCII whitespace and accepts some
 * malformed padding), so two different strings would map to the same bytes and garbage would
 * be stored silently. The contract (docs/PROTOCOL.md) is RFC 4648 §4, standard alphabet,
 * padding optional, nothing else.
 */
import { EdgelogError } from "./errors.ts";
import type { Encoding } from "./types.ts";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/** char code -> 6-bit value, or -1 when not in the standard alphabet. */
const DECODE_TABLE: Int16Array = (() => {
  const t = new Int16Array(128).fill(-1);
  for (let i = 0; i < ALPHABET.length; i++) t[ALPHABET.charCodeAt(i)] = i;
  return t;
})();

const utf8Encoder = new TextEncoder();
/**
 * Non-fatal: invalid UTF-8 becomes U+FFFD (documented for the `string` encoding).
 * ignoreBOM: a leading U+FEFF is data, not a byte-order mark to strip (round trips stay exact).
 */
const utf8Decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

export function utf8(s: string): Uint8Array {
  return utf8Encoder.encode(s);
}

/**
 * The length of `s` in UTF-8 bytes (what `utf8(s).length` gives), counted without encoding:
 * 1 byte per code unit below U+0080, 2 below U+0800, 4 per surrogate pair (2 code units), 3
 * for the rest, including a lone surrogate (encoded as U+FFFD, 3 bytes). A WebSocket text
 * frame's size is its UTF-8 bytes (RFC 6455 section 5.6), and so are the platform's limits
 * on it; `s.length` counts UTF-16 code units and is up to 3 times smaller.
 */
export function utf8ByteLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: 2 code units, 4 bytes.
      n += 2;
      i++;
    } else n += 2;
  }
  return n;
}

/**
 * Whether `s` is longer than `maxBytes` UTF-8 bytes. Exact, and cheap at both ends: a string of
 * more than `maxBytes` code units is over (each takes at least one byte), one of at most a third
 * of it is within (each takes at most three); only the strings between are counted.
 */
export function utf8LongerThan(s: string, maxBytes: number): boolean {
  if (s.length > maxBytes) return true;
  if (s.length * 3 <= maxBytes) return false;
  return utf8ByteLength(s) > maxBytes;
}

export function fromUtf8(bytes: Uint8Array): string {
  return utf8Decoder.decode(bytes);
}

/**
 * Decodes standard base64 (RFC 4648 §4). Padding is optional but, when present, must be
 * exactly right; whitespace, the URL-safe alphabet and non-zero trailing bits are rejected.
 * @returns the bytes, or null when `s` is not valid base64.
 */
export function decodeBase64Strict(s: string): Uint8Array | null {
  let len = s.length;
  if (len % 4 === 0 && len > 0) {
    // Padded form: strip at most two '='.
    if (s.charCodeAt(len - 1) === 61) len--;
    if (s.charCodeAt(len - 1) === 61) len--;
  }
  const rem = len % 4;
  if (rem === 1) return null;
  const out = new Uint8Array(Math.floor((len * 3) / 4));
  let o = 0;
  let i = 0;
  for (; i + 4 <= len; i += 4) {
    const a = sextet(s, i);
    const b = sextet(s, i + 1);
    const c = sextet(s, i + 2);
    const d = sextet(s, i + 3);
    if ((a | b | c | d) < 0) return null;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >>> 16;
    out[o++] = (n >>> 8) & 0xff;
    out[o++] = n & 0xff;
  }
  if (rem === 2) {
    const a = sextet(s, i);
    const b = sextet(s, i + 1);
    if ((a | b) < 0 || (b & 0x0f) !== 0) return null;
    out[o++] = (a << 2) | (b >>> 4);
  } else if (rem === 3) {
    const a = sextet(s, i);
    const b = sextet(s, i + 1);
    const c = sextet(s, i + 2);
    if ((a | b | c) < 0 || (c & 0x03) !== 0) return null;
    out[o++] = (a << 2) | (b >>> 4);
    out[o++] = ((b & 0x0f) << 4) | (c >>> 2);
  }
  return o === out.length ? out : out.subarray(0, o);
}

function sextet(s: string, i: number): number {
  const code = s.charCodeAt(i);
  return code < 128 ? (DECODE_TABLE[code] ?? -1) : -1;
}

/** Encodes bytes as padded standard base64. */
export function encodeBase64(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 3 <= bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >>> 18]! + ALPHABET[(n >>> 12) & 63]! + ALPHABET[(n >>> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += `${ALPHABET[n >>> 18]!}${ALPHABET[(n >>> 12) & 63]!}==`;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += `${ALPHABET[n >>> 18]!}${ALPHABET[(n >>> 12) & 63]!}${ALPHABET[(n >>> 6) & 63]!}=`;
  }
  return out;
}

/**
 * Turns a JSON field (key, value or header value) into bytes per its encoding.
 * `null`/`undefined` -> null (a null key/value); `""` -> empty bytes (distinct from null).
 * @param field name used in error messages, e.g. `records[3].value`
 * @throws EdgelogError INVALID_REQUEST for a wrong JSON type, INVALID_ENCODING for malformed base64.
 */
export function encodeField(v: unknown, encoding: Encoding, field: string): Uint8Array | null {
  if (v === null || v === undefined) return null;
  switch (encoding) {
    case "string":
      if (typeof v !== "string") throw new EdgelogError("INVALID_REQUEST", `${field} must be a string or null (encoding "string").`, { field });
      return utf8(v);
    case "base64": {
      if (typeof v !== "string") throw new EdgelogError("INVALID_REQUEST", `${field} must be a base64 string or null (encoding "base64").`, { field });
      const bytes = decodeBase64Strict(v);
      if (bytes === null) throw new EdgelogError("INVALID_ENCODING", `${field} is not valid standard base64 (RFC 4648 §4, padding optional, no whitespace).`, { field });
      return bytes;
    }
    case "json":
      return utf8(JSON.stringify(v));
  }
}

/**
 * Turns stored bytes back into a JSON field per the requested encoding (null stays null).
 * @throws EdgelogError INVALID_ENCODING when `json` is asked for bytes that are not JSON.
 */
export function decodeField(bytes: Uint8Array | null, encoding: Encoding, field: string): unknown {
  if (bytes === null) return null;
  switch (encoding) {
    case "string":
      return fromUtf8(bytes);
    case "base64":
      return encodeBase64(bytes);
    case "json":
      try {
        return JSON.parse(fromUtf8(bytes));
      } catch {
        throw new EdgelogError("INVALID_ENCODING", `${field} is not JSON: fetch it with encoding=base64 or encoding=string.`, { field });
      }
  }
}

export function isEncoding(v: unknown): v is Encoding {
  return v === "string" || v === "base64" || v === "json";
}
