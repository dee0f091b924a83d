/**
 * Kafka protocol primitive types (https://kafka.apache.org/protocol#protocol_types): fixed-width
 * big-endian integers, (unsigned) varints, UUIDs (16 bytes), classic strings / bytes / arrays
 * with i16 / i32 length prefixes, and the compact forms (unsigned varint length + 1) and tagged fields that
 * flexible versions use (KIP-482).
 *
 * Every read is bounds-checked: a short or malformed frame throws {@link KafkaDecodeError},
 * never reads past the frame. Pure module (Uint8Array, DataView, TextEncoder/TextDecoder).
 */

/** A request that does not decode (truncated, negative length, bad varint, invalid UTF-8). */
export class KafkaDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KafkaDecodeError";
  }
}

const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/** Kafka's zero UUID (Uuid.ZERO_UUID): "no topic id". */
export const ZERO_UUID = "00000000-0000-0000-0000-000000000000";
const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Most elements a decoded array may announce before we try to allocate for it (a guard, not a protocol limit). */
const MAX_ARRAY_LENGTH = 1_000_000;

/** Reads Kafka primitives from one frame. */
export class Reader {
  readonly buf: Uint8Array;
  readonly #view: DataView;
  pos: number;

  constructor(buf: Uint8Array, pos = 0) {
    this.buf = buf;
    this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.pos = pos;
  }

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  #need(n: number, what: string): void {
    if (n < 0 || this.pos + n > this.buf.length) throw new KafkaDecodeError(`truncated ${what}: need ${n} bytes at ${this.pos}, frame has ${this.buf.length}`);
  }

  int8(): number {
    this.#need(1, "int8");
    return this.#view.getInt8(this.pos++);
  }

  bool(): boolean {
    return this.int8() !== 0;
  }

  int16(): number {
    this.#need(2, "int16");
    const v = this.#view.getInt16(this.pos);
    this.pos += 2;
    return v;
  }

  int32(): number {
    this.#need(4, "int32");
    const v = this.#view.getInt32(this.pos);
    this.pos += 4;
    return v;
  }

  uint32(): number {
    this.#need(4, "uint32");
    const v = this.#view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  /** An int64 as a JS number; values beyond ±2^53 are refused (offsets, timestamps and ids are below it). */
  int64(): number {
    this.#need(8, "int64");
    const v = this.#view.getBigInt64(this.pos);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new KafkaDecodeError(`int64 beyond the safe-integer range: ${v}`);
    return Number(v);
  }

  /** Unsigned varint (protobuf style), at most 5 bytes / 32 bits. */
  uvarint(): number {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      this.#need(1, "varint");
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) {
        if (result > 0xffffffff) throw new KafkaDecodeError("varint beyond 32 bits");
        return result;
      }
    }
    throw new KafkaDecodeError("varint longer than 5 bytes");
  }

  /** Zig-zag signed varint (32 bits). */
  varint(): number {
    const u = this.uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  /** UUID: 16 bytes, answered in the canonical lower-case 8-4-4-4-12 hex form. */
  uuid(): string {
    this.#need(16, "uuid");
    let hex = "";
    for (let i = 0; i < 16; i++) hex += this.buf[this.pos + i]!.toString(16).padStart(2, "0");
    this.pos += 16;
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  #utf8(n: number): string {
    this.#need(n, "string");
    try {
      const s = utf8Decoder.decode(this.buf.subarray(this.pos, this.pos + n));
      this.pos += n;
      return s;
    } catch {
      throw new KafkaDecodeError("string is not valid UTF-8");
    }
  }

  /** STRING (i16 length) or, when `compact`, COMPACT_STRING. Null is refused. */
  string(compact: boolean): string {
    const s = this.nullableString(compact);
    if (s === null) throw new KafkaDecodeError("null where a string is required");
    return s;
  }

  nullableString(compact: boolean): string | null {
    const n = compact ? this.uvarint() - 1 : this.int16();
    if (n < 0) return null;
    return this.#utf8(n);
  }

  /** BYTES / COMPACT_BYTES, as a view into the frame (not a copy). */
  bytes(compact: boolean): Uint8Array {
    const b = this.nullableBytes(compact);
    if (b === null) throw new KafkaDecodeError("null where bytes are required");
    return b;
  }

  nullableBytes(compact: boolean): Uint8Array | null {
    const n = compact ? this.uvarint() - 1 : this.int32();
    if (n < 0) return null;
    this.#need(n, "bytes");
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }

  /** Element count of an ARRAY / COMPACT_ARRAY; -1 for null. */
  arrayLength(compact: boolean): number {
    const n = compact ? this.uvarint() - 1 : this.int32();
    if (n < -1) throw new KafkaDecodeError(`invalid array length ${n}`);
    // Each element takes at least one byte: a larger count is a malformed (or hostile) frame.
    if (n > this.remaining || n > MAX_ARRAY_LENGTH) throw new KafkaDecodeError(`array of ${n} elements in ${this.remaining} bytes`);
    return n;
  }

  array<T>(compact: boolean, item: (r: Reader) => T): T[] {
    const n = this.arrayLength(compact);
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(item(this));
    return out;
  }

  nullableArray<T>(compact: boolean, item: (r: Reader) => T): T[] | null {
    const n = this.arrayLength(compact);
    if (n < 0) return null;
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(item(this));
    return out;
  }

  /** Skips a tagged-field section (KIP-482): we know no tags, and unknown tags must be ignored. */
  taggedFields(): void {
    const n = this.uvarint();
    for (let i = 0; i < n; i++) {
      this.uvarint(); // tag
      const size = this.uvarint();
      this.#need(size, "tagged field");
      this.pos += size;
    }
  }
}

/** Writes Kafka primitives into a growing buffer. */
export class Writer {
  #buf: Uint8Array;
  #view: DataView;
  pos = 0;

  constructor(initialBytes = 256) {
    this.#buf = new Uint8Array(initialBytes);
    this.#view = new DataView(this.#buf.buffer);
  }

  #ensure(n: number): void {
    if (this.pos + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.pos));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }

  /** The bytes written so far (a view; valid until the next write). */
  finish(): Uint8Array {
    return this.#buf.subarray(0, this.pos);
  }

  int8(v: number): this {
    this.#ensure(1);
    this.#view.setInt8(this.pos, v);
    this.pos += 1;
    return this;
  }

  bool(v: boolean): this {
    return this.int8(v ? 1 : 0);
  }

  int16(v: number): this {
    this.#ensure(2);
    this.#view.setInt16(this.pos, v);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    this.#ensure(4);
    this.#view.setInt32(this.pos, v);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    this.#ensure(4);
    this.#view.setUint32(this.pos, v);
    this.pos += 4;
    return this;
  }

  int64(v: number): this {
    this.#ensure(8);
    this.#view.setBigInt64(this.pos, BigInt(v));
    this.pos += 8;
    return this;
  }

  uvarint(v: number): this {
    this.#ensure(5);
    let n = v;
    while (n >= 0x80) {
      this.#buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.#buf[this.pos++] = n;
    return this;
  }

  varint(v: number): this {
    return this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  raw(b: Uint8Array): this {
    this.#ensure(b.length);
    this.#buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  /**
   * UUID from its 8-4-4-4-12 hex form (either case), 16 bytes.
   * @throws TypeError when `id` is not a UUID (a bug of the caller: ids come from Edgelog or a decoded request).
   */
  uuid(id: string): this {
    const lower = id.toLowerCase();
    if (!UUID_TEXT.test(lower)) throw new TypeError(`not a UUID: ${JSON.stringify(id)}`);
    const hex = lower.replaceAll("-", "");
    this.#ensure(16);
    for (let i = 0; i < 16; i++) this.#buf[this.pos + i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
    this.pos += 16;
    return this;
  }

  string(s: string, compact: boolean): this {
    return this.nullableString(s, compact);
  }

  nullableString(s: string | null, compact: boolean): this {
    if (s === null) return compact ? this.uvarint(0) : this.int16(-1);
    const b = utf8Encoder.encode(s);
    if (compact) this.uvarint(b.length + 1);
    else this.int16(b.length);
    return this.raw(b);
  }

  bytes(b: Uint8Array, compact: boolean): this {
    return this.nullableBytes(b, compact);
  }

  nullableBytes(b: Uint8Array | null, compact: boolean): this {
    if (b === null) return compact ? this.uvarint(0) : this.int32(-1);
    if (compact) this.uvarint(b.length + 1);
    else this.int32(b.length);
    return this.raw(b);
  }

  arrayLength(n: number, compact: boolean): this {
    return compact ? this.uvarint(n + 1) : this.int32(n);
  }

  array<T>(items: readonly T[], compact: boolean, item: (w: Writer, v: T) => void): this {
    this.arrayLength(items.length, compact);
    for (const v of items) item(this, v);
    return this;
  }

  nullableArray<T>(items: readonly T[] | null, compact: boolean, item: (w: Writer, v: T) => void): this {
    if (items === null) return compact ? this.uvarint(0) : this.int32(-1);
    return this.array(items, compact, item);
  }

  /** An empty tagged-field section (flexible versions only). */
  taggedFields(): this {
    return this.uvarint(0);
  }
}
