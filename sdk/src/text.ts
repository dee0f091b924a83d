/**
 * Bytes <-> text helpers. Keys, values and header values are bytes (`Uint8Array | null`);
 * `null` (absent) and an empty array (`""`) are different things and stay different.
 */

/** Anything the producer accepts as key, value or header value. Strings are UTF-8 encoded. */
export type Bytes = string | Uint8Array | null;

const encoder = new TextEncoder();
/** ignoreBOM: a leading U+FEFF is data, kept as the server's JSON answers keep it (src/protocol/encoding.ts). */
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** UTF-8 bytes of a string; a Uint8Array as is; `null`/`undefined` as `null` (not empty). */
export function toBytes(v: Bytes | undefined): Uint8Array | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") return v.length <= SHORT_ASCII_MAX_CHARS ? (shortAscii(v) ?? encoder.encode(v)) : encoder.encode(v);
  if (v instanceof Uint8Array) return v;
  throw new TypeError(`Expected string | Uint8Array | null, got ${typeof v}`);
}

/** Strings up to this length get the ASCII fast path of {@link toBytes}. */
const SHORT_ASCII_MAX_CHARS = 64;

/**
 * The UTF-8 bytes of a short all-ASCII string (where UTF-8 is one byte per char), or null when
 * it has any other char. Keys are usually short ASCII, and a TextEncoder call per key costs
 * several times this loop (measured: ~10% of the producer's CPU for 1 KiB records).
 */
function shortAscii(s: string): Uint8Array | null {
  const n = s.length;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return null;
    out[i] = c;
  }
  return out;
}

/** UTF-8 text of bytes (invalid sequences become U+FFFD); `null` stays `null`. */
export function toText(bytes: Uint8Array | null): string | null {
  return bytes === null ? null : decoder.decode(bytes);
}

/**
 * Parses bytes as UTF-8 JSON; `null` stays `null`.
 * @throws SyntaxError when the bytes are not JSON.
 */
export function toJson<T = unknown>(bytes: Uint8Array | null): T | null {
  return bytes === null ? null : (JSON.parse(decoder.decode(bytes)) as T);
}
