/**
 * The Edgelog record-batch binary format, v1: both the storage format of a SQLite row in a
 * partition and the SDK's wire format (a fetch response body is stored batches concatenated).
 *
 * Layout (multi-byte fixed fields big-endian, as Kafka):
 *
 *   offset size field
 *        0    1 magic                 u8   = 1
 *        1    2 attributes            u16  ATTR_* bits (types.ts)
 *        3    8 baseOffset            i64
 *       11    4 lastOffsetDelta       i32
 *       15    8 baseTimestamp         i64  ms
 *       23    8 maxTimestamp          i64  ms
 *       31    8 producerId            i64
 *       39    2 producerEpoch         i16
 *       41    4 baseSequence          i32
 *       45    4 partitionLeaderEpoch  i32
 *       49    4 recordCount           i32
 *       53    4 crc                   u32  CRC-32C of the records section only
 *       57    4 recordsLength         u32  bytes of the records section
 *       61      records section: recordCount records
 *
 * Each record is Kafka's v2 record (KIP-98, `DefaultRecord`):
 *   length varint (bytes after this field) | attributes i8 (0) | timestampDelta varlong |
 *   offsetDelta varint | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) |
 *   value | headerCount varint | per header: keyLength varint, UTF-8 key,
 *   valueLength varint (-1 = null), value.
 *
 * Unlike Kafka's (which covers attributes..end), the CRC covers the records section only: the
 * partition rewrites baseOffset, partitionLeaderEpoch and (LogAppendTime) the timestamps in
 * the header on append without rehashing the records. The header is therefore not
 * checksummed; it is validated structurally instead (magic, ranges, lengths).
 *
 * i64 fields are JS numbers: values beyond ±Number.MAX_SAFE_INTEGER are refused with
 * {@link CodecError} on both encode and decode, never rounded.
 *
 * Pure module: only Uint8Array, DataView, TextEncoder/TextDecoder.
 */

import { crc32c } from "./crc32c.ts";
import { CodecError } from "./errors.ts";
import {
  ATTR_COMPRESSION_MASK,
  ATTR_LOG_APPEND_TIME,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  type BatchHeader,
  type LogRecord,
  type ProducerRecord,
  type RecordHeader,
} from "./types.ts";
import { ByteReader, ByteWriter, INT32_MAX, INT32_MIN, utf8Length, varintSize, varlongSize } from "./varint.ts";

export { CodecError };

/** Magic byte of format v1. */
export const BATCH_MAGIC = 1;

/** Bytes of the fixed batch header; the records section starts here. */
export const BATCH_HEADER_BYTES = 61;

/** Kafka's RecordBatch.NO_TIMESTAMP: the timestamps of a batch with no records. */
export const NO_TIMESTAMP = -1;

// Field offsets inside the header (see the layout above).
const OFF_MAGIC = 0;
const OFF_ATTRIBUTES = 1;
const OFF_BASE_OFFSET = 3;
const OFF_LAST_OFFSET_DELTA = 11;
const OFF_BASE_TIMESTAMP = 15;
const OFF_MAX_TIMESTAMP = 23;
const OFF_PRODUCER_ID = 31;
const OFF_PRODUCER_EPOCH = 39;
const OFF_BASE_SEQUENCE = 41;
const OFF_PARTITION_LEADER_EPOCH = 45;
const OFF_RECORD_COUNT = 49;
const OFF_CRC = 53;
const OFF_RECORDS_LENGTH = 57;

const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE_BIG = -MAX_SAFE_BIG;
/** recordsLength is a u32; a Uint8Array could not hold more anyway in practice. */
const MAX_RECORDS_BYTES = 0xffffffff;

/** A header as decoded: the {@link BatchHeader} plus the framing fields. */
export interface DecodedBatchHeader extends BatchHeader {
  /** CRC-32C of the records section as stored (unsigned). */
  crc: number;
  /** Bytes of the records section. */
  recordsLength: number;
  /** BATCH_HEADER_BYTES + recordsLength: bytes of the whole batch. */
  totalBytes: number;
}

/** Options of {@link decodeBatch} / {@link decodeBatches}. */
export interface DecodeOptions {
  /**
   * Check the records section against the header's CRC-32C. Skip only for bytes this process
   * verified itself moments ago (e.g. re-reading a just-verified produce body).
   * @default true
   */
  verifyCrc?: boolean;
}

/** A decoded batch: its header and its records with absolute offsets and timestamps. */
export interface DecodedBatch {
  header: BatchHeader;
  records: LogRecord[];
}

// ---------------------------------------------------------------------------------------------
// Validation helpers
// ---------------------------------------------------------------------------------------------

function checkInt(name: string, v: number, min: number, max: number): void {
  if (!(Number.isInteger(v) && v >= min && v <= max)) {
    throw new CodecError(`${name} must be an integer in [${min}, ${max}], got ${v}`);
  }
}

function checkSafe(name: string, v: number): void {
  if (!Number.isSafeInteger(v)) throw new CodecError(`${name} must be a safe integer, got ${v}`);
}

function readI64(view: DataView, at: number, name: string): number {
  const v = view.getBigInt64(at);
  if (v > MAX_SAFE_BIG || v < MIN_SAFE_BIG) throw new CodecError(`${name} beyond safe-integer range: ${v}`);
  return Number(v);
}

function viewOf(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

function checkPos(buf: Uint8Array, pos: number): void {
  if (!(Number.isInteger(pos) && pos >= 0 && pos <= buf.length)) {
    throw new RangeError(`position ${pos} outside buffer of ${buf.length} bytes`);
  }
}

// ---------------------------------------------------------------------------------------------
// Sizes
// ---------------------------------------------------------------------------------------------

function nullableBytesSize(b: Uint8Array | null): number {
  return b === null ? 1 : varintSize(b.length) + b.length;
}

/**
 * Bytes of a record's key, value and headers (everything whose size does not depend on its
 * position in a batch). Pushes each header key's UTF-8 length to `keyLens` when given, so the
 * writer does not measure the strings twice.
 */
function positionFreeBytes(r: ProducerRecord, keyLens?: number[]): number {
  let n = nullableBytesSize(r.key) + nullableBytesSize(r.value);
  const headers = r.headers;
  n += varintSize(headers.length);
  for (let i = 0; i < headers.length; i++) {
    const h = headers[i]!;
    const kl = utf8Length(h.key);
    keyLens?.push(kl);
    n += varintSize(kl) + kl + nullableBytesSize(h.value);
  }
  return n;
}

/** Bytes after the length prefix: attributes (1) + timestampDelta + offsetDelta + the rest. */
function bodyBytes(positionFree: number, timestampDelta: number, offsetDelta: number): number {
  return 1 + varlongSize(timestampDelta) + varintSize(offsetDelta) + positionFree;
}

/**
 * Encoded size in bytes of one record, length prefix included, as the only record of a batch
 * (offsetDelta 0, timestampDelta 0): key, value and headers plus their framing. This is what
 * a topic's max.message.bytes is compared against.
 *
 * Choice: per record, not per batch. Kafka compares the whole (compressed) batch with
 * max.message.bytes; Edgelog stores batches it builds itself (splitting large produce
 * requests, see {@link splitRecords}), so the limit is a property of a record alone and does
 * not depend on how the client happened to group records. A one-record batch takes
 * BATCH_HEADER_BYTES + recordSizeBytes(r) bytes. Inside a larger batch a record may take up
 * to 8 more bytes (wider deltas).
 *
 * @throws CodecError if a field cannot be encoded (see {@link encodeBatch}).
 */
export function recordSizeBytes(r: ProducerRecord): number {
  return recordSizeBytesFromPayload(positionFreeBytes(r));
}

/** {@link recordSizeBytes} from the record's {@link recordPayloadBytes}. */
export function recordSizeBytesFromPayload(payloadBytes: number): number {
  const body = bodyBytes(payloadBytes, 0, 0);
  return varintSize(body) + body;
}

// ---------------------------------------------------------------------------------------------
// Encode
// ---------------------------------------------------------------------------------------------

/**
 * Encodes `records` as one record batch.
 *
 * Computed (any value in `header` is ignored): recordCount = records.length,
 * lastOffsetDelta = records.length - 1, baseTimestamp = records[0].timestamp,
 * maxTimestamp = max of the record timestamps (records need not be in timestamp order, so a
 * timestampDelta may be negative), crc. An empty batch gets timestamps NO_TIMESTAMP (-1).
 * Record i gets offsetDelta i, i.e. offset baseOffset + i.
 *
 * Defaults: baseOffset 0, attributes 0, producerId/producerEpoch/baseSequence -1 (no
 * producer), partitionLeaderEpoch 0.
 *
 * @param header fields to set; see defaults above.
 * @param records records in offset order; record timestamps are ms since the epoch.
 * @returns a new exact-size buffer (BATCH_HEADER_BYTES + records section).
 * @throws CodecError if a field is out of its range (baseOffset not a safe integer >= 0,
 *   attributes not u16 or with compression bits set (no codec is implemented), producerId
 *   not a safe integer >= -1, producerEpoch not i16, baseSequence / partitionLeaderEpoch not
 *   i32, a timestamp or timestamp delta not a safe integer, more than 2^31 records, or a
 *   records section over 4 GiB).
 */
export function encodeBatch(header: Partial<BatchHeader>, records: ProducerRecord[]): Uint8Array {
  const n = records.length;
  const fields = checkedHeader(header, n);

  let baseTimestamp = NO_TIMESTAMP;
  let maxTimestamp = NO_TIMESTAMP;
  if (n > 0) {
    baseTimestamp = records[0]!.timestamp;
    maxTimestamp = baseTimestamp;
    for (let i = 0; i < n; i++) {
      const ts = records[i]!.timestamp;
      checkSafe(`record ${i} timestamp`, ts);
      if (ts > maxTimestamp) maxTimestamp = ts;
    }
  }

  // Pass 1: exact size, so the writer allocates once and never grows.
  const bodies = new Array<number>(n);
  const keyLens: number[] = [];
  let recordsLength = 0;
  for (let i = 0; i < n; i++) {
    const r = records[i]!;
    const delta = r.timestamp - baseTimestamp;
    checkSafe(`record ${i} timestamp delta`, delta);
    const body = bodyBytes(positionFreeBytes(r, keyLens), delta, i);
    bodies[i] = body;
    recordsLength += varintSize(body) + body;
  }
  if (recordsLength > MAX_RECORDS_BYTES) throw new CodecError(`records section of ${recordsLength} bytes exceeds 4 GiB`);
  const total = BATCH_HEADER_BYTES + recordsLength;

  // Pass 2: write into the exact-size buffer. Every value was range-checked by pass 1 (sizes
  // throw on what cannot be encoded), so the writes below need no checks and no growth.
  const buf = new Uint8Array(total);
  writeHeader(buf, fields, n, baseTimestamp, maxTimestamp, recordsLength);
  let p = BATCH_HEADER_BYTES;
  let k = 0; // index into keyLens
  for (let i = 0; i < n; i++) {
    const r = records[i]!;
    p = writeRecord(buf, p, r, bodies[i]!, r.timestamp - baseTimestamp, i, keyLens, k);
    k += r.headers.length;
  }
  // Invariant: pass 1 and pass 2 agree byte for byte (a mismatch is a codec bug, not bad input).
  if (p !== total) throw new Error(`encodeBatch size mismatch: computed ${total}, wrote ${p}`);
  new DataView(buf.buffer, buf.byteOffset, total).setUint32(OFF_CRC, crc32c(buf, BATCH_HEADER_BYTES, total));
  return buf;
}

/**
 * Bytes of a record's key, value and headers with their length fields: the part of its
 * encoded size that does not depend on its position in a batch. Pass it to
 * {@link BatchBuilder.appendedBytes} and {@link BatchBuilder.append}, so a record is measured once.
 * @throws CodecError if a field cannot be encoded.
 */
export function recordPayloadBytes(r: ProducerRecord): number {
  return positionFreeBytes(r);
}

/**
 * Builds one record batch record by record into a buffer the caller supplies and may grow,
 * as Kafka's MemoryRecordsBuilder appends into a producer's batch buffer: no record objects
 * are kept, each record is written once, and the buffer can be reused for later batches.
 *
 * The header is written by {@link build}, which may be called again with other header fields
 * (e.g. a new producer sequence) without touching the records; the records' CRC (the CRC
 * covers the records section only, see the format above) is computed once.
 *
 * Offsets, timestamps and counts follow {@link encodeBatch}: record i gets offsetDelta i and
 * timestampDelta timestamp - (first record's timestamp); the bytes equal encodeBatch's for
 * the same header and records.
 */
export class BatchBuilder {
  #buf: Uint8Array;
  #pos = BATCH_HEADER_BYTES;
  #count = 0;
  #baseTimestamp = NO_TIMESTAMP;
  #maxTimestamp = NO_TIMESTAMP;
  /** CRC-32C of the records written so far, once computed (see {@link checksum}). */
  #crc: number | undefined;
  readonly #keyLens: number[] = [];

  /**
   * @param buffer where the batch is written, from offset 0; its contents do not matter.
   * @throws RangeError if it is shorter than BATCH_HEADER_BYTES.
   */
  constructor(buffer: Uint8Array) {
    if (buffer.length < BATCH_HEADER_BYTES) throw new RangeError(`a batch buffer needs at least ${BATCH_HEADER_BYTES} bytes, got ${buffer.length}`);
    this.#buf = buffer;
  }

  /** Records appended. */
  get recordCount(): number {
    return this.#count;
  }

  /** Bytes of the batch so far, header included. */
  get sizeBytes(): number {
    return this.#pos;
  }

  /** The buffer written to (its first {@link sizeBytes} bytes are the batch). */
  get buffer(): Uint8Array {
    return this.#buf;
  }

  /**
   * Bytes a record adds when appended next (its length prefix included).
   * @param payloadBytes {@link recordPayloadBytes} of the record
   * @param timestamp its timestamp, ms
   */
  appendedBytes(payloadBytes: number, timestamp: number): number {
    const body = bodyBytes(payloadBytes, this.#count === 0 ? 0 : timestamp - this.#baseTimestamp, this.#count);
    return varintSize(body) + body;
  }

  /**
   * Appends `r` as the next record. The buffer must hold sizeBytes + appendedBytes(...)
   * bytes: grow it first with {@link moveTo}.
   * @param payloadBytes {@link recordPayloadBytes}(r)
   * @throws CodecError for a timestamp (or delta) that is not a safe integer, over 2^31
   *   records or a records section over 4 GiB; RangeError when the buffer is too small.
   */
  append(r: ProducerRecord, payloadBytes: number): void {
    const ts = r.timestamp;
    checkSafe("record timestamp", ts);
    const first = this.#count === 0;
    const delta = first ? 0 : ts - this.#baseTimestamp;
    checkSafe("record timestamp delta", delta);
    if (this.#count >= INT32_MAX) throw new CodecError("more than 2^31 - 1 records in one batch");
    const body = bodyBytes(payloadBytes, delta, this.#count);
    const end = this.#pos + varintSize(body) + body;
    if (end - BATCH_HEADER_BYTES > MAX_RECORDS_BYTES) throw new CodecError("records section exceeds 4 GiB");
    if (end > this.#buf.length) throw new RangeError(`batch buffer of ${this.#buf.length} bytes cannot take a record ending at ${end}`);
    const keyLens = this.#keyLens;
    keyLens.length = 0;
    for (let j = 0; j < r.headers.length; j++) keyLens.push(utf8Length(r.headers[j]!.key));
    const p = writeRecord(this.#buf, this.#pos, r, body, delta, this.#count, keyLens, 0);
    if (p !== end) throw new Error(`BatchBuilder size mismatch: computed ${end}, wrote ${p}`);
    if (first) {
      this.#baseTimestamp = ts;
      this.#maxTimestamp = ts;
    } else if (ts > this.#maxTimestamp) this.#maxTimestamp = ts;
    this.#pos = end;
    this.#count++;
    this.#crc = undefined;
  }

  /**
   * Copies the batch so far into `buffer` and continues there (to grow, or to move into a
   * pooled buffer).
   * @throws RangeError if `buffer` is smaller than sizeBytes.
   */
  moveTo(buffer: Uint8Array): void {
    if (buffer.length < this.#pos) throw new RangeError(`cannot move a batch of ${this.#pos} bytes into ${buffer.length}`);
    buffer.set(this.#buf.subarray(0, this.#pos));
    this.#buf = buffer;
  }

  /** Computes the records' CRC now (so that a later {@link build} only writes the header). */
  checksum(): void {
    this.#crc ??= crc32c(this.#buf, BATCH_HEADER_BYTES, this.#pos);
  }

  /**
   * Writes the header and returns the batch: a view of the buffer's first sizeBytes bytes,
   * valid until the builder or its buffer is reused. Header defaults as {@link encodeBatch}.
   * @throws CodecError for a header field out of range (see encodeBatch).
   */
  build(header: Partial<BatchHeader>): Uint8Array {
    const fields = checkedHeader(header, this.#count);
    this.checksum();
    const buf = this.#buf.subarray(0, this.#pos);
    writeHeader(buf, fields, this.#count, this.#baseTimestamp, this.#maxTimestamp, this.#pos - BATCH_HEADER_BYTES);
    new DataView(buf.buffer, buf.byteOffset, buf.length).setUint32(OFF_CRC, this.#crc!);
    return buf;
  }
}

interface HeaderFields {
  baseOffset: number;
  attributes: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  partitionLeaderEpoch: number;
}

/** Header fields with their defaults, range-checked for a batch of `n` records. */
function checkedHeader(header: Partial<BatchHeader>, n: number): HeaderFields {
  const f: HeaderFields = {
    baseOffset: header.baseOffset ?? 0,
    attributes: header.attributes ?? 0,
    producerId: header.producerId ?? NO_PRODUCER_ID,
    producerEpoch: header.producerEpoch ?? NO_PRODUCER_EPOCH,
    baseSequence: header.baseSequence ?? NO_SEQUENCE,
    partitionLeaderEpoch: header.partitionLeaderEpoch ?? 0,
  };
  checkInt("baseOffset", f.baseOffset, 0, Number.MAX_SAFE_INTEGER);
  checkInt("attributes", f.attributes, 0, 0xffff);
  if ((f.attributes & ATTR_COMPRESSION_MASK) !== 0) throw new CodecError("compressed batches are not supported");
  checkInt("producerId", f.producerId, -1, Number.MAX_SAFE_INTEGER);
  checkInt("producerEpoch", f.producerEpoch, -0x8000, 0x7fff);
  checkInt("baseSequence", f.baseSequence, INT32_MIN, INT32_MAX);
  checkInt("partitionLeaderEpoch", f.partitionLeaderEpoch, INT32_MIN, INT32_MAX);
  checkInt("record count", n, 0, INT32_MAX);
  checkSafe("baseOffset + lastOffsetDelta", f.baseOffset + Math.max(0, n - 1));
  return f;
}

/** Writes every header byte except the CRC (buffers may be reused: nothing is left unwritten). */
function writeHeader(buf: Uint8Array, f: HeaderFields, n: number, baseTimestamp: number, maxTimestamp: number, recordsLength: number): void {
  const view = new DataView(buf.buffer, buf.byteOffset, BATCH_HEADER_BYTES);
  buf[OFF_MAGIC] = BATCH_MAGIC;
  view.setUint16(OFF_ATTRIBUTES, f.attributes);
  view.setBigInt64(OFF_BASE_OFFSET, BigInt(f.baseOffset));
  view.setInt32(OFF_LAST_OFFSET_DELTA, n - 1);
  view.setBigInt64(OFF_BASE_TIMESTAMP, BigInt(baseTimestamp));
  view.setBigInt64(OFF_MAX_TIMESTAMP, BigInt(maxTimestamp));
  view.setBigInt64(OFF_PRODUCER_ID, BigInt(f.producerId));
  view.setInt16(OFF_PRODUCER_EPOCH, f.producerEpoch);
  view.setInt32(OFF_BASE_SEQUENCE, f.baseSequence);
  view.setInt32(OFF_PARTITION_LEADER_EPOCH, f.partitionLeaderEpoch);
  view.setInt32(OFF_RECORD_COUNT, n);
  view.setUint32(OFF_RECORDS_LENGTH, recordsLength);
}

/**
 * Writes one record (length prefix `body` first) at `buf[p]`; returns the next position.
 * `keyLens[k...]` are the UTF-8 lengths of its header keys. Unchecked: the caller measured it.
 */
function writeRecord(buf: Uint8Array, p: number, r: ProducerRecord, body: number, timestampDelta: number, offsetDelta: number, keyLens: readonly number[], k: number): number {
  p = putVarint(buf, p, body);
  buf[p++] = 0; // record attributes: unused in v2, always 0
  p = putVarlong(buf, p, timestampDelta);
  p = putVarint(buf, p, offsetDelta);
  p = putNullableBytes(buf, p, r.key);
  p = putNullableBytes(buf, p, r.value);
  const headers = r.headers;
  p = putVarint(buf, p, headers.length);
  for (let j = 0; j < headers.length; j++) {
    const h = headers[j]!;
    const keyLength = keyLens[k++]!;
    p = putVarint(buf, p, keyLength);
    p = putUtf8(buf, p, h.key, keyLength);
    p = putNullableBytes(buf, p, h.value);
  }
  return p;
}

/** Writes the zigzag varint of an int32 `n` at `buf[p]`; returns the next position. Unchecked: see encodeBatch. */
function putVarint(buf: Uint8Array, p: number, n: number): number {
  let u = ((n << 1) ^ (n >> 31)) >>> 0;
  while (u >= 0x80) {
    buf[p++] = (u & 0x7f) | 0x80;
    u >>>= 7;
  }
  buf[p++] = u;
  return p;
}

/** Writes the zigzag varlong of a safe integer `n` at `buf[p]`; returns the next position. */
function putVarlong(buf: Uint8Array, p: number, n: number): number {
  if ((n | 0) === n) return putVarint(buf, p, n);
  // Wider than int32 (rare: timestamp deltas over ~24 days): the general writer.
  const w = new ByteWriter(10);
  w.varlong(n);
  const bytes = w.finish();
  buf.set(bytes, p);
  return p + bytes.length;
}

function putNullableBytes(buf: Uint8Array, p: number, b: Uint8Array | null): number {
  if (b === null) {
    buf[p] = 1; // zigzag(-1)
    return p + 1;
  }
  p = putVarint(buf, p, b.length);
  buf.set(b, p);
  return p + b.length;
}

const utf8Encoder = new TextEncoder();

/** Writes `s` as UTF-8 (`length` bytes, measured by utf8Length) at `buf[p]`; returns the next position. */
function putUtf8(buf: Uint8Array, p: number, s: string, length: number): number {
  // As many bytes as UTF-16 units only when every unit is ASCII (anything else takes 2-3 bytes
  // per unit): the usual header key. Otherwise TextEncoder, which, like utf8Length, turns a
  // lone surrogate into U+FFFD (3 bytes).
  if (length === s.length) {
    for (let i = 0; i < length; i++) buf[p + i] = s.charCodeAt(i);
    return p + length;
  }
  return p + utf8Encoder.encodeInto(s, buf.subarray(p, p + length)).written;
}

// ---------------------------------------------------------------------------------------------
// Decode
// ---------------------------------------------------------------------------------------------

function readHeader(buf: Uint8Array, view: DataView, pos: number): DecodedBatchHeader {
  if (buf.length - pos < BATCH_HEADER_BYTES) {
    throw new CodecError(`truncated batch header at offset ${pos}: ${buf.length - pos} of ${BATCH_HEADER_BYTES} bytes`);
  }
  const magic = buf[pos + OFF_MAGIC]!;
  if (magic !== BATCH_MAGIC) throw new CodecError(`unsupported batch magic ${magic} at offset ${pos}`);
  const baseOffset = readI64(view, pos + OFF_BASE_OFFSET, "baseOffset");
  const lastOffsetDelta = view.getInt32(pos + OFF_LAST_OFFSET_DELTA);
  const recordCount = view.getInt32(pos + OFF_RECORD_COUNT);
  const recordsLength = view.getUint32(pos + OFF_RECORDS_LENGTH);
  if (baseOffset < 0) throw new CodecError(`negative baseOffset ${baseOffset}`);
  if (recordCount < 0) throw new CodecError(`negative recordCount ${recordCount}`);
  if (lastOffsetDelta < recordCount - 1) {
    throw new CodecError(`lastOffsetDelta ${lastOffsetDelta} too small for ${recordCount} records`);
  }
  if (!Number.isSafeInteger(baseOffset + lastOffsetDelta)) throw new CodecError("last offset beyond safe-integer range");
  const totalBytes = BATCH_HEADER_BYTES + recordsLength;
  if (buf.length - pos < totalBytes) {
    throw new CodecError(`truncated batch at offset ${pos}: ${buf.length - pos} of ${totalBytes} bytes`);
  }
  return {
    baseOffset,
    lastOffsetDelta,
    baseTimestamp: readI64(view, pos + OFF_BASE_TIMESTAMP, "baseTimestamp"),
    maxTimestamp: readI64(view, pos + OFF_MAX_TIMESTAMP, "maxTimestamp"),
    producerId: readI64(view, pos + OFF_PRODUCER_ID, "producerId"),
    producerEpoch: view.getInt16(pos + OFF_PRODUCER_EPOCH),
    baseSequence: view.getInt32(pos + OFF_BASE_SEQUENCE),
    partitionLeaderEpoch: view.getInt32(pos + OFF_PARTITION_LEADER_EPOCH),
    attributes: view.getUint16(pos + OFF_ATTRIBUTES),
    recordCount,
    crc: view.getUint32(pos + OFF_CRC),
    recordsLength,
    totalBytes,
  };
}

/**
 * Decodes the fixed header of the batch starting at `buf[pos]`, without touching the records.
 *
 * @param pos byte offset of the batch in `buf` @default 0
 * @returns the header plus `crc` (stored, unverified), `recordsLength` and `totalBytes`
 *   (header + records section).
 * @throws CodecError if the header or the records section it announces runs past the end of
 *   `buf` (truncation), the magic is not 1, an i64 field is beyond the safe-integer range,
 *   baseOffset or recordCount is negative, or lastOffsetDelta < recordCount - 1.
 * @throws RangeError if `pos` is not an offset inside `buf`.
 */
export function decodeBatchHeader(buf: Uint8Array, pos = 0): DecodedBatchHeader {
  checkPos(buf, pos);
  return readHeader(buf, viewOf(buf), pos);
}

/** Nullable bytes: length -1 = null. Returns a copy, never a view into the input. */
function readNullableBytes(r: ByteReader, what: string): Uint8Array | null {
  const len = r.varint();
  if (len === -1) return null;
  if (len < -1) throw new CodecError(`invalid ${what} length ${len}`);
  return r.bytesCopy(len);
}

function decodeAt(buf: Uint8Array, view: DataView, pos: number, verifyCrc: boolean): DecodedBatch & { totalBytes: number } {
  const h = readHeader(buf, view, pos);
  if ((h.attributes & ATTR_COMPRESSION_MASK) !== 0) {
    throw new CodecError(`unsupported compression ${h.attributes & ATTR_COMPRESSION_MASK}`);
  }
  const start = pos + BATCH_HEADER_BYTES;
  const end = start + h.recordsLength;
  if (verifyCrc) {
    const actual = crc32c(buf, start, end);
    if (actual !== h.crc) throw new CodecError(`batch CRC mismatch at offset ${pos}: stored ${h.crc}, computed ${actual}`);
  }

  // Kafka: with LogAppendTime every record's timestamp is the batch's maxTimestamp (the broker
  // sets it on append and leaves the per-record deltas untouched).
  const logAppendTime = (h.attributes & ATTR_LOG_APPEND_TIME) !== 0;
  const { baseOffset, baseTimestamp, maxTimestamp, lastOffsetDelta, recordCount } = h;
  const reader = new ByteReader(buf, start, end);
  const records: LogRecord[] = [];
  let prevOffsetDelta = -1;
  for (let i = 0; i < recordCount; i++) {
    const length = reader.varint();
    if (length < 0 || length > end - reader.pos) {
      throw new CodecError(`record ${i} length ${length} outside the records section (${end - reader.pos} bytes left)`);
    }
    const recordEnd = reader.pos + length;
    reader.end = recordEnd; // no field may read into the next record
    const attributes = reader.i8();
    if (attributes !== 0) throw new CodecError(`record ${i} has attributes ${attributes}, expected 0`);
    const timestampDelta = reader.varlong();
    const offsetDelta = reader.varint();
    if (offsetDelta <= prevOffsetDelta || offsetDelta > lastOffsetDelta) {
      throw new CodecError(`record ${i} offsetDelta ${offsetDelta} not in (${prevOffsetDelta}, ${lastOffsetDelta}]`);
    }
    prevOffsetDelta = offsetDelta;
    const key = readNullableBytes(reader, "key");
    const value = readNullableBytes(reader, "value");
    const headerCount = reader.varint();
    if (headerCount < 0) throw new CodecError(`record ${i} header count ${headerCount}`);
    const headers: RecordHeader[] = [];
    for (let j = 0; j < headerCount; j++) {
      const keyLength = reader.varint();
      if (keyLength < 0) throw new CodecError(`record ${i} header ${j} key length ${keyLength}`);
      const hkey = reader.utf8(keyLength);
      headers.push({ key: hkey, value: readNullableBytes(reader, "header value") });
    }
    if (reader.pos !== recordEnd) {
      throw new CodecError(`record ${i} has ${recordEnd - reader.pos} bytes of trailing garbage`);
    }
    reader.end = end;
    const timestamp = logAppendTime ? maxTimestamp : baseTimestamp + timestampDelta;
    if (!Number.isSafeInteger(timestamp)) throw new CodecError(`record ${i} timestamp beyond safe-integer range`);
    records.push({ key, value, headers, timestamp, offset: baseOffset + offsetDelta });
  }
  if (reader.pos !== end) throw new CodecError(`${end - reader.pos} bytes of trailing garbage after ${recordCount} records`);

  const header: BatchHeader = {
    baseOffset,
    lastOffsetDelta,
    baseTimestamp,
    maxTimestamp,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    partitionLeaderEpoch: h.partitionLeaderEpoch,
    attributes: h.attributes,
    recordCount,
  };
  return { header, records, totalBytes: h.totalBytes };
}

/**
 * Decodes the batch starting at `buf[pos]` (bytes after it are ignored; see totalBytes).
 *
 * Record offsets are baseOffset + offsetDelta; timestamps are baseTimestamp + timestampDelta,
 * or header.maxTimestamp for every record when ATTR_LOG_APPEND_TIME is set (as Kafka).
 * Keys, values and header values are fresh copies (`slice`), never views into `buf`: callers
 * may keep them while the storage buffer is reused, and cannot corrupt it by writing to them.
 *
 * @param pos byte offset of the batch in `buf` @default 0
 * @param opts.verifyCrc check the records CRC-32C @default true
 * @returns the header (without framing fields), the records, and totalBytes consumed.
 * @throws CodecError on any {@link decodeBatchHeader} error, compression bits set, a CRC
 *   mismatch, a record that is truncated, overruns its length or leaves bytes unread, record
 *   attributes not 0, offset deltas not strictly increasing within [0, lastOffsetDelta],
 *   invalid UTF-8 in a header key, fewer/more records than recordCount, or trailing bytes in
 *   the records section.
 */
export function decodeBatch(buf: Uint8Array, pos = 0, opts?: DecodeOptions): { header: BatchHeader; records: LogRecord[]; totalBytes: number } {
  checkPos(buf, pos);
  return decodeAt(buf, viewOf(buf), pos, opts?.verifyCrc ?? true);
}

/** A batch checked as {@link decodeBatch} checks it, with only the per-record facts a partition needs. */
export interface BatchScan {
  header: BatchHeader;
  /** Bytes of the whole batch (header + records section). */
  totalBytes: number;
  /** Per record, in order: its timestamp, as decodeBatch reports it (LogAppendTime: maxTimestamp). */
  timestamps: number[];
  /** Per record, in order: {@link recordSizeBytes} of the record decodeBatch would return. */
  recordBytes: number[];
}

/**
 * Checks the batch at `buf[pos]` exactly as {@link decodeBatch} does (same framing, CRC,
 * record and UTF-8 checks, same CodecError cases) but materialises no records: no key, value
 * or header copies, no record objects. This is what a partition needs to validate and store a
 * produced batch whose bytes it keeps as they are (it never reads keys or values).
 *
 * recordBytes are computed from the lengths as stored, canonically (minimal varints), so they
 * equal recordSizeBytes(decodeBatch(...).records[i]) even for a batch written with
 * non-minimal varints.
 *
 * @param pos byte offset of the batch in `buf` @default 0
 * @param opts.verifyCrc check the records CRC-32C @default true
 * @throws CodecError / RangeError exactly when decodeBatch would.
 */
export function scanBatch(buf: Uint8Array, pos = 0, opts?: DecodeOptions): BatchScan {
  checkPos(buf, pos);
  const h = readHeader(buf, viewOf(buf), pos);
  if ((h.attributes & ATTR_COMPRESSION_MASK) !== 0) {
    throw new CodecError(`unsupported compression ${h.attributes & ATTR_COMPRESSION_MASK}`);
  }
  const start = pos + BATCH_HEADER_BYTES;
  const end = start + h.recordsLength;
  if (opts?.verifyCrc ?? true) {
    const actual = crc32c(buf, start, end);
    if (actual !== h.crc) throw new CodecError(`batch CRC mismatch at offset ${pos}: stored ${h.crc}, computed ${actual}`);
  }

  const logAppendTime = (h.attributes & ATTR_LOG_APPEND_TIME) !== 0;
  const { baseTimestamp, maxTimestamp, lastOffsetDelta, recordCount } = h;
  const reader = new ByteReader(buf, start, end);
  const timestamps = new Array<number>(recordCount);
  const recordBytes = new Array<number>(recordCount);
  let prevOffsetDelta = -1;
  for (let i = 0; i < recordCount; i++) {
    const length = reader.varint();
    if (length < 0 || length > end - reader.pos) {
      throw new CodecError(`record ${i} length ${length} outside the records section (${end - reader.pos} bytes left)`);
    }
    const recordEnd = reader.pos + length;
    reader.end = recordEnd; // no field may read into the next record
    const attributes = reader.i8();
    if (attributes !== 0) throw new CodecError(`record ${i} has attributes ${attributes}, expected 0`);
    const timestampDelta = reader.varlong();
    const offsetDelta = reader.varint();
    if (offsetDelta <= prevOffsetDelta || offsetDelta > lastOffsetDelta) {
      throw new CodecError(`record ${i} offsetDelta ${offsetDelta} not in (${prevOffsetDelta}, ${lastOffsetDelta}]`);
    }
    prevOffsetDelta = offsetDelta;
    // positionFreeBytes of the decoded record: key, value, header count, headers.
    let positionFree = skipNullableBytes(reader, "key") + skipNullableBytes(reader, "value");
    const headerCount = reader.varint();
    if (headerCount < 0) throw new CodecError(`record ${i} header count ${headerCount}`);
    positionFree += varintSize(headerCount);
    for (let j = 0; j < headerCount; j++) {
      const keyLength = reader.varint();
      if (keyLength < 0) throw new CodecError(`record ${i} header ${j} key length ${keyLength}`);
      reader.utf8(keyLength); // validates the key as decodeBatch does; valid UTF-8 re-encodes to keyLength bytes
      positionFree += varintSize(keyLength) + keyLength + skipNullableBytes(reader, "header value");
    }
    if (reader.pos !== recordEnd) {
      throw new CodecError(`record ${i} has ${recordEnd - reader.pos} bytes of trailing garbage`);
    }
    reader.end = end;
    const timestamp = logAppendTime ? maxTimestamp : baseTimestamp + timestampDelta;
    if (!Number.isSafeInteger(timestamp)) throw new CodecError(`record ${i} timestamp beyond safe-integer range`);
    timestamps[i] = timestamp;
    const body = bodyBytes(positionFree, 0, 0);
    recordBytes[i] = varintSize(body) + body;
  }
  if (reader.pos !== end) throw new CodecError(`${end - reader.pos} bytes of trailing garbage after ${recordCount} records`);

  const header: BatchHeader = {
    baseOffset: h.baseOffset,
    lastOffsetDelta,
    baseTimestamp,
    maxTimestamp,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
    partitionLeaderEpoch: h.partitionLeaderEpoch,
    attributes: h.attributes,
    recordCount,
  };
  return { header, totalBytes: h.totalBytes, timestamps, recordBytes };
}

/** Skips nullable bytes (length -1 = null); returns their size as a canonical encoding would write them. */
function skipNullableBytes(r: ByteReader, what: string): number {
  const len = r.varint();
  if (len === -1) return 1;
  if (len < -1) throw new CodecError(`invalid ${what} length ${len}`);
  r.skip(len);
  return varintSize(len) + len;
}

/**
 * Checks the framing of the batch at `buf[pos]` (as {@link decodeBatchHeader}) and its
 * records CRC-32C, without parsing the records: the cheap integrity check a gateway runs on
 * a client's batch before handing the bytes to a partition that then skips the CRC
 * (`scanBatch(..., {verifyCrc: false})`).
 *
 * @returns the decoded header (with totalBytes).
 * @throws CodecError on a framing error, compression bits, or a CRC mismatch (the messages
 *   and the order of decodeBatch).
 */
export function verifyBatchCrc(buf: Uint8Array, pos = 0): DecodedBatchHeader {
  const h = decodeBatchHeader(buf, pos);
  // Same order of checks as decodeBatch: framing, compression, CRC.
  if ((h.attributes & ATTR_COMPRESSION_MASK) !== 0) {
    throw new CodecError(`unsupported compression ${h.attributes & ATTR_COMPRESSION_MASK}`);
  }
  const start = pos + BATCH_HEADER_BYTES;
  const actual = crc32c(buf, start, start + h.recordsLength);
  if (actual !== h.crc) throw new CodecError(`batch CRC mismatch at offset ${pos}: stored ${h.crc}, computed ${actual}`);
  return h;
}

/**
 * Decodes a concatenation of whole batches (a fetch response body, or several stored rows).
 *
 * @param opts.verifyCrc check each batch's CRC-32C @default true
 * @returns the batches in order; [] for an empty buffer.
 * @throws CodecError as {@link decodeBatch}, including for a partial batch at the end.
 */
export function decodeBatches(buf: Uint8Array, opts?: DecodeOptions): DecodedBatch[] {
  const verifyCrc = opts?.verifyCrc ?? true;
  const view = viewOf(buf);
  const out: DecodedBatch[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const d = decodeAt(buf, view, pos, verifyCrc);
    out.push({ header: d.header, records: d.records });
    pos += d.totalBytes;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// In-place header rewrite
// ---------------------------------------------------------------------------------------------

/** Header fields the partition may rewrite on append (all outside the records CRC). */
export interface BatchHeaderPatch {
  baseOffset?: number;
  partitionLeaderEpoch?: number;
  baseTimestamp?: number;
  maxTimestamp?: number;
  attributes?: number;
}

/**
 * Rewrites header fields of the batch at `buf[pos]` in place; the CRC stays valid because it
 * covers the records section only. Used on append: assign baseOffset and the leader epoch,
 * and for a LogAppendTime topic set baseTimestamp = maxTimestamp = now and add
 * ATTR_LOG_APPEND_TIME to attributes (decodeBatch then reports every record at maxTimestamp).
 *
 * @param patch fields to set; absent fields are left as they are.
 * @param pos byte offset of the batch in `buf` @default 0
 * @throws CodecError if the header is truncated or its magic is not 1, or a patched value is
 *   out of range (baseOffset a safe integer >= 0 with baseOffset + lastOffsetDelta safe;
 *   partitionLeaderEpoch i32; timestamps safe integers; attributes u16 without compression
 *   bits). Nothing is written if any check fails.
 * @throws RangeError if `pos` is not an offset inside `buf`.
 */
export function rewriteBatchHeader(buf: Uint8Array, patch: BatchHeaderPatch, pos = 0): void {
  checkPos(buf, pos);
  if (buf.length - pos < BATCH_HEADER_BYTES) throw new CodecError(`truncated batch header at offset ${pos}`);
  const magic = buf[pos + OFF_MAGIC]!;
  if (magic !== BATCH_MAGIC) throw new CodecError(`unsupported batch magic ${magic} at offset ${pos}`);
  const view = viewOf(buf);
  const { baseOffset, partitionLeaderEpoch, baseTimestamp, maxTimestamp, attributes } = patch;
  // Validate everything first so a bad patch leaves the batch untouched.
  if (baseOffset !== undefined) {
    checkInt("baseOffset", baseOffset, 0, Number.MAX_SAFE_INTEGER);
    checkSafe("baseOffset + lastOffsetDelta", baseOffset + view.getInt32(pos + OFF_LAST_OFFSET_DELTA));
  }
  if (partitionLeaderEpoch !== undefined) checkInt("partitionLeaderEpoch", partitionLeaderEpoch, INT32_MIN, INT32_MAX);
  if (baseTimestamp !== undefined) checkSafe("baseTimestamp", baseTimestamp);
  if (maxTimestamp !== undefined) checkSafe("maxTimestamp", maxTimestamp);
  if (attributes !== undefined) {
    checkInt("attributes", attributes, 0, 0xffff);
    if ((attributes & ATTR_COMPRESSION_MASK) !== 0) throw new CodecError("compressed batches are not supported");
  }

  if (baseOffset !== undefined) view.setBigInt64(pos + OFF_BASE_OFFSET, BigInt(baseOffset));
  if (partitionLeaderEpoch !== undefined) view.setInt32(pos + OFF_PARTITION_LEADER_EPOCH, partitionLeaderEpoch);
  if (baseTimestamp !== undefined) view.setBigInt64(pos + OFF_BASE_TIMESTAMP, BigInt(baseTimestamp));
  if (maxTimestamp !== undefined) view.setBigInt64(pos + OFF_MAX_TIMESTAMP, BigInt(maxTimestamp));
  if (attributes !== undefined) view.setUint16(pos + OFF_ATTRIBUTES, attributes);
}

// ---------------------------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------------------------

/**
 * Splits `records` greedily, in order, into consecutive groups whose encoded batch
 * (`encodeBatch({}, group).length`, header included) is <= maxBatchBytes. Sizes are exact:
 * each record is measured with the offsetDelta and timestampDelta it will get in its group.
 * A single record that alone exceeds maxBatchBytes becomes a group of its own (the caller
 * decides whether that is RECORD_TOO_LARGE).
 *
 * @param maxBatchBytes upper bound on one encoded batch, in bytes (e.g. MAX_STORED_BATCH_BYTES)
 * @returns the groups (the records themselves, not copies); [] for no records.
 * @throws RangeError if maxBatchBytes is not a positive integer.
 * @throws CodecError if a record cannot be encoded (see {@link encodeBatch}).
 */
export function splitRecords(records: ProducerRecord[], maxBatchBytes: number): ProducerRecord[][] {
  if (!(Number.isInteger(maxBatchBytes) && maxBatchBytes > 0)) {
    throw new RangeError(`maxBatchBytes must be a positive integer, got ${maxBatchBytes}`);
  }
  const groups: ProducerRecord[][] = [];
  let group: ProducerRecord[] = [];
  let groupBytes = 0;
  let groupBaseTimestamp = 0;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    checkSafe(`record ${i} timestamp`, r.timestamp);
    const positionFree = positionFreeBytes(r);
    if (group.length > 0) {
      const body = bodyBytes(positionFree, r.timestamp - groupBaseTimestamp, group.length);
      const size = varintSize(body) + body;
      if (groupBytes + size <= maxBatchBytes) {
        group.push(r);
        groupBytes += size;
        continue;
      }
      groups.push(group);
    }
    const body = bodyBytes(positionFree, 0, 0);
    group = [r];
    groupBytes = BATCH_HEADER_BYTES + varintSize(body) + body;
    groupBaseTimestamp = r.timestamp;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
