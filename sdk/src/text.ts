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
  if (typeof v === "string") return encoder.encode(v);
  if (v instanceof Uint8Array) return v;
  throw new TypeError(`Expected string | Uint8Array | null, got ${typeof v}`);
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
