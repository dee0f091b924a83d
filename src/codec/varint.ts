/**
 * Byte-level building blocks of the record-batch codec: a growable big-endian writer, a
 * bounds-checked reader, and Kafka's zigzag varint (32-bit) / varlong (64-bit) encodings.
 *
 * Varints follow Kafka's `ByteUtils.writeVarint/writeVarlong` wire format (the same as
 * Protocol Buffers' sint32/sint64): zigzag-map the signed value to unsigned
 * (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...), then write it 7 bits at a time, least significant
 * group first, high bit set on every byte but the last. A varint is at most 5 bytes, a
 * varlong at most 10.
 *
 * JS numbers are doubles, so a varlong here carries any safe integer
 * (|n| <= Number.MAX_SAFE_INTEGER); anything wider is refused with {@link CodecError} rather
 * than silently rounded. Values below 2^30 in magnitude (all lengths, offset deltas and
 * ordinary timestamp deltas) take a 32-bit fast path; only wider ones touch floating-point
 * division or BigInt.
 *
 * Pure module: only Uint8Array, DataView, TextEncoder/TextDecoder.
 */

import { CodecError } from "./errors.ts";

export const INT32_MIN = -0x80000000;
export const INT32_MAX = 0x7fffffff;
/** Below this magnitude zigzag(n) = 2|n| (+1) is < 2^53, so plain float arithmetic is exact. */
const EXACT_ZIGZAG_LIMIT = 2 ** 52;
const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE_BIG = -MAX_SAFE_BIG;

const utf8Encoder = new TextEncoder();
// fatal: malformed UTF-8 is a codec error, not U+FFFD. ignoreBOM: keep a leading U+FEFF in a
// header key instead of silently stripping it (the default would break round trips).
const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

// ---------------------------------------------------------------------------------------------
// Sizes (no allocation): used to size a batch exactly before writing it.
// ---------------------------------------------------------------------------------------------

/** Bytes of an unsigned LEB128 value 0 <= u < 2^53 (exact integer). */
function unsignedSize(u: number): number {
  if (u < 0x80) return 1;
  if (u < 0x4000) return 2;
  if (u < 0x200000) return 3;
  if (u < 0x10000000) return 4;
  let n = 5;
  let v = Math.floor(u / 0x800000000); // 2^35: what is left after 5 groups of 7 bits
  while (v > 0) {
    n++;
    v = Math.floor(v / 0x80);
  }
  return n;
}

/**
 * Encoded size in bytes (1-5) of `n` as a Kafka zigzag varint.
 * @throws CodecError if `n` is not an integer in the int32 range.
 */
export function varintSize(n: number): number {
  if ((n | 0) !== n) throw new CodecError(`varint out of int32 range: ${n}`);
  return unsignedSize(((n << 1) ^ (n >> 31)) >>> 0);
}

/**
 * Encoded size in bytes (1-10) of `n` as a Kafka zigzag varlong.
 * @throws CodecError if `n` is not a safe integer.
 */
export function varlongSize(n: number): number {
  if ((n | 0) === n) return unsignedSize(((n << 1) ^ (n >> 31)) >>> 0);
  if (!Number.isSafeInteger(n)) throw new CodecError(`varlong out of safe-integer range: ${n}`);
  if (n < EXACT_ZIGZAG_LIMIT && n > -EXACT_ZIGZAG_LIMIT) return unsignedSize(n >= 0 ? n * 2 : -n * 2 - 1);
  // 2^52 <= |n| < 2^53: zigzag is in [2^53, 2^54), i.e. 54 bits -> 8 groups of 7 bits.
  return 8;
}

/**
 * Number of bytes `TextEncoder` produces for `s` (UTF-8), without encoding it.
 * A lone UTF-16 surrogate counts 3 bytes: TextEncoder replaces it with U+FFFD (EF BF BD).
 */
export function utf8Length(s: string): number {
  const n = s.length;
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if ((c & 0xfc00) === 0xd800 && i + 1 < n && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4; // a surrogate pair is one code point >= U+10000
      i++;
    } else bytes += 3;
  }
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

/**
 * A growable big-endian byte writer. Starts with `initialBytes` of capacity and doubles when
 * full, so a caller that knows the exact size up front (as `encodeBatch` does) never copies.
 * Encoding a value the format cannot carry throws {@link CodecError}.
 */
export class ByteWriter {
  buf: Uint8Array;
  view: DataView;
  /** Next write position = bytes written so far. */
  pos: number;

  /** @param initialBytes starting capacity in bytes. @default 256 */
  constructor(initialBytes = 256) {
    this.buf = new Uint8Array(Math.max(1, initialBytes));
    this.view = new DataView(this.buf.buffer);
    this.pos = 0;
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    const next = new Uint8Array(Math.max(need, this.buf.length * 2));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  i8(v: number): void {
    this.ensure(1);
    this.view.setInt8(this.pos, v);
    this.pos += 1;
  }

  u16(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.pos, v);
    this.pos += 2;
  }

  i16(v: number): void {
    this.ensure(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
  }

  i32(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
  }

  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
  }

  /**
   * Big-endian i64 from a JS number.
   * @throws CodecError if `v` is not a safe integer.
   */
  i64(v: number): void {
    if (!Number.isSafeInteger(v)) throw new CodecError(`i64 field not a safe integer: ${v}`);
    this.ensure(8);
    this.view.setBigInt64(this.pos, BigInt(v));
    this.pos += 8;
  }

  /** Unsigned LEB128 of an exact integer 0 <= u < 2^53. */
  private unsigned(u: number): void {
    this.ensure(8);
    const buf = this.buf;
    let p = this.pos;
    if (u <= 0xffffffff) {
      while (u >= 0x80) {
        buf[p++] = (u & 0x7f) | 0x80;
        u >>>= 7;
      }
    } else {
      while (u >= 0x80) {
        buf[p++] = (u % 0x80) | 0x80;
        u = Math.floor(u / 0x80);
      }
    }
    buf[p++] = u;
    this.pos = p;
  }

  /**
   * Kafka zigzag varint (1-5 bytes).
   * @throws CodecError if `n` is not an integer in the int32 range.
   */
  varint(n: number): void {
    if ((n | 0) !== n) throw new CodecError(`varint out of int32 range: ${n}`);
    this.unsigned(((n << 1) ^ (n >> 31)) >>> 0);
  }

  /**
   * Kafka zigzag varlong (1-10 bytes; at most 8 for a safe integer).
   * @throws CodecError if `n` is not a safe integer.
   */
  varlong(n: number): void {
    if ((n | 0) === n) {
      this.unsigned(((n << 1) ^ (n >> 31)) >>> 0);
      return;
    }
    if (!Number.isSafeInteger(n)) throw new CodecError(`varlong out of safe-integer range: ${n}`);
    if (n < EXACT_ZIGZAG_LIMIT && n > -EXACT_ZIGZAG_LIMIT) {
      this.unsigned(n >= 0 ? n * 2 : -n * 2 - 1);
      return;
    }
    // zigzag(n) >= 2^53 is not exact in a double: take the BigInt path (rare: |n| >= 2^52).
    let z = n >= 0 ? BigInt(n) << 1n : (-BigInt(n) << 1n) - 1n;
    this.ensure(10);
    while (z >= 0x80n) {
      this.buf[this.pos++] = Number(z & 0x7fn) | 0x80;
      z >>= 7n;
    }
    this.buf[this.pos++] = Number(z);
  }

  /** Raw bytes, no length prefix. */
  bytes(src: Uint8Array): void {
    this.ensure(src.length);
    this.buf.set(src, this.pos);
    this.pos += src.length;
  }

  /**
   * Raw UTF-8 of `s`, no length prefix (lone surrogates become U+FFFD, as TextEncoder does).
   * @returns bytes written (= utf8Length(s)).
   */
  utf8(s: string): number {
    const n = s.length;
    this.ensure(n * 3); // UTF-16 unit -> at most 3 UTF-8 bytes (a pair: 2 units -> 4 bytes)
    const buf = this.buf;
    const start = this.pos;
    let p = start;
    let i = 0;
    // ASCII fast path (header keys are nearly always ASCII); the rest goes to TextEncoder.
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[p++] = c;
    }
    if (i < n) p += utf8Encoder.encodeInto(s.slice(i), buf.subarray(p)).written;
    this.pos = p;
    return p - start;
  }

  /** Overwrites a u32 at absolute position `at` (< pos), e.g. a checksum placeholder. */
  setU32At(at: number, v: number): void {
    this.view.setUint32(at, v);
  }

  /**
   * The bytes written. Returns the backing buffer itself when it is exactly full (no copy),
   * otherwise an exact-size copy, so the result never drags spare capacity along.
   */
  finish(): Uint8Array {
    return this.pos === this.buf.length ? this.buf : this.buf.slice(0, this.pos);
  }
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/**
 * A bounds-checked big-endian reader over `buf[pos, end)`. Every read that would pass `end`
 * throws {@link CodecError} ("truncated"), so a short input is never decoded silently.
 * `end` may be narrowed temporarily (e.g. to one record's extent) and restored.
 */
export class ByteReader {
  readonly buf: Uint8Array;
  readonly view: DataView;
  pos: number;
  end: number;

  /**
   * @param pos start offset in `buf` @default 0
   * @param end exclusive end offset in `buf` @default buf.length
   */
  constructor(buf: Uint8Array, pos = 0, end = buf.length) {
    if (!(Number.isInteger(pos) && Number.isInteger(end) && 0 <= pos && pos <= end && end <= buf.length)) {
      throw new RangeError(`ByteReader bounds [${pos}, ${end}) outside buffer of ${buf.length} bytes`);
    }
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.pos = pos;
    this.end = end;
  }

  /** Bytes left before `end`. */
  remaining(): number {
    return this.end - this.pos;
  }

  /** @throws CodecError unless `n` more bytes are available. */
  need(n: number): void {
    if (this.end - this.pos < n) {
      throw new CodecError(`truncated: need ${n} bytes at offset ${this.pos}, ${this.end - this.pos} left`);
    }
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }

  i8(): number {
    this.need(1);
    return this.view.getInt8(this.pos++);
  }

  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.pos);
    this.pos += 2;
    return v;
  }

  i16(): number {
    this.need(2);
    const v = this.view.getInt16(this.pos);
    this.pos += 2;
    return v;
  }

  i32(): number {
    this.need(4);
    const v = this.view.getInt32(this.pos);
    this.pos += 4;
    return v;
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  /**
   * Big-endian i64 as a JS number.
   * @throws CodecError if truncated or the value is beyond ±Number.MAX_SAFE_INTEGER.
   */
  i64(): number {
    this.need(8);
    const v = this.view.getBigInt64(this.pos);
    if (v > MAX_SAFE_BIG || v < MIN_SAFE_BIG) throw new CodecError(`i64 at offset ${this.pos} beyond safe-integer range: ${v}`);
    this.pos += 8;
    return Number(v);
  }

  /**
   * Kafka zigzag varint -> int32.
   * @throws CodecError if truncated, longer than 5 bytes, or wider than 32 bits.
   */
  varint(): number {
    const buf = this.buf;
    const end = this.end;
    let p = this.pos;
    let raw = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (p >= end) throw new CodecError(`truncated varint at offset ${this.pos}`);
      const b = buf[p++]!;
      if (shift === 28 && b > 0x0f) throw new CodecError(`varint at offset ${this.pos} wider than 32 bits`);
      raw |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.pos = p;
        return (raw >>> 1) ^ -(raw & 1);
      }
    }
    // Unreachable: the 5th byte either returned or threw above.
    throw new CodecError(`varint at offset ${this.pos} wider than 32 bits`);
  }

  /**
   * Kafka zigzag varlong -> safe integer.
   * @throws CodecError if truncated, longer than 10 bytes, wider than 64 bits, or beyond
   *   ±Number.MAX_SAFE_INTEGER.
   */
  varlong(): number {
    const buf = this.buf;
    const end = this.end;
    const start = this.pos;
    let p = start;
    // Fast path: up to 7 bytes (49 bits) accumulate exactly in a double.
    let raw = 0;
    let mult = 1;
    for (let i = 0; i < 7; i++) {
      if (p >= end) throw new CodecError(`truncated varlong at offset ${start}`);
      const b = buf[p++]!;
      raw += (b & 0x7f) * mult;
      if (b < 0x80) {
        this.pos = p;
        return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
      }
      mult *= 0x80;
    }
    // Wide value: redo with BigInt (8-10 bytes).
    p = start;
    let z = 0n;
    for (let i = 0; i < 10; i++) {
      if (p >= end) throw new CodecError(`truncated varlong at offset ${start}`);
      const b = buf[p++]!;
      if (i === 9 && b > 0x01) throw new CodecError(`varlong at offset ${start} wider than 64 bits`);
      z |= BigInt(b & 0x7f) << BigInt(7 * i);
      if (b < 0x80) {
        const v = (z >> 1n) ^ -(z & 1n);
        if (v > MAX_SAFE_BIG || v < MIN_SAFE_BIG) throw new CodecError(`varlong at offset ${start} beyond safe-integer range: ${v}`);
        this.pos = p;
        return Number(v);
      }
    }
    throw new CodecError(`varlong at offset ${start} longer than 10 bytes`);
  }

  /** Advances past `n` bytes without reading them. @throws CodecError if truncated. */
  skip(n: number): void {
    this.need(n);
    this.pos += n;
  }

  /** `n` bytes as a fresh copy (never a view into `buf`). @throws CodecError if truncated. */
  bytesCopy(n: number): Uint8Array {
    this.need(n);
    const out = this.buf.slice(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** `n` bytes of UTF-8 as a string. @throws CodecError if truncated or not valid UTF-8. */
  utf8(n: number): string {
    this.need(n);
    const buf = this.buf;
    const start = this.pos;
    const stop = start + n;
    this.pos = stop;
    // Short ASCII fast path: TextDecoder has a fixed per-call cost that dominates tiny keys.
    if (n <= 32) {
      let s = "";
      for (let p = start; p < stop; p++) {
        const c = buf[p]!;
        if (c >= 0x80) return decodeUtf8(buf, start, stop);
        s += String.fromCharCode(c);
      }
      return s;
    }
    return decodeUtf8(buf, start, stop);
  }
}

function decodeUtf8(buf: Uint8Array, start: number, stop: number): string {
  try {
    return utf8Decoder.decode(buf.subarray(start, stop));
  } catch {
    throw new CodecError(`invalid UTF-8 at offset ${start}`);
  }
}
