/**
 * Record batch conversion between Kafka's magic-2 record batch (KIP-98, `DefaultRecordBatch`)
 * and Edgelog's batch format v1 (src/codec/batch.ts). Both carry the same records section
 * (Kafka's v2 records) after a 61-byte header with the same fields in another order; they
 * differ in what the CRC-32C covers: Kafka's covers attributes..end of the batch, Edgelog's the
 * records section only. So records are copied byte for byte, never re-encoded: producer id,
 * epoch, sequence, timestamps, keys, values and headers stay exact.
 *
 * Kafka layout (big-endian):
 *
 *   offset size field
 *        0    8 baseOffset            i64
 *        8    4 batchLength           i32  bytes after this field
 *       12    4 partitionLeaderEpoch  i32
 *       16    1 magic                 i8   = 2
 *       17    4 crc                   u32  CRC-32C of bytes 21..end
 *       21    2 attributes            i16  bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control
 *       23    4 lastOffsetDelta       i32
 *       27    8 baseTimestamp         i64
 *       35    8 maxTimestamp          i64
 *       43    8 producerId            i64
 *       51    2 producerEpoch         i16
 *       53    4 baseSequence          i32
 *       57    4 recordCount           i32
 *       61      records (compressed as one block when bits 0-2 are set)
 *
 * Pure module: decompression is the caller's (compression.ts), since it needs node:zlib.
 */
import { BATCH_HEADER_BYTES, BATCH_MAGIC, CodecError, crc32c, decodeBatchHeader } from "../../../src/codec/index.ts";
import { crc32cCombine } from "./crc-combine.ts";

/** Bytes of Kafka's v2 batch header (equal to Edgelog's, by design of both formats). */
export const KAFKA_BATCH_HEADER_BYTES = 61;
/** Kafka's record batch magic. */
export const KAFKA_MAGIC = 2;
/** Bytes before and including `batchLength`: batchLength counts what follows them. */
const LOG_OVERHEAD = 12;

/** Kafka compression codecs (attributes bits 0-2). */
export const Compression = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;
export type CompressionName = keyof typeof Compression;

export const ATTR_COMPRESSION_MASK = 0x07;
const ATTR_TIMESTAMP_TYPE = 0x08;
const ATTR_TRANSACTIONAL = 0x10;
const ATTR_CONTROL = 0x20;

/** A produced batch that cannot be taken: `kafkaError` names the Kafka error to answer. */
export class RecordBatchError extends Error {
  readonly kafkaError: "CORRUPT_MESSAGE" | "INVALID_RECORD" | "UNSUPPORTED_COMPRESSION_TYPE" | "UNSUPPORTED_FOR_MESSAGE_FORMAT" | "MESSAGE_TOO_LARGE";
  constructor(kafkaError: RecordBatchError["kafkaError"], message: string) {
    super(message);
    this.name = "RecordBatchError";
    this.kafkaError = kafkaError;
  }
}

/** The header of one Kafka batch and its (possibly compressed) records section. */
export interface KafkaBatch {
  baseOffset: number;
  partitionLeaderEpoch: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
  /** Compression codec id (attributes & 7). */
  compression: number;
  /** The records section as sent: a view into the request, compressed when `compression` > 0. */
  payload: Uint8Array;
  /** CRC-32C of `payload` (read once, while checking the batch CRC). */
  payloadCrc: number;
}

function i64(view: DataView, at: number, name: string): number {
  const v = view.getBigInt64(at);
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new RecordBatchError("CORRUPT_MESSAGE", `${name} beyond the safe-integer range`);
  return Number(v);
}

/**
 * Parses the `records` field of a produce request for one partition. Kafka (since magic 2)
 * takes exactly one batch per partition per request; so does the bridge.
 *
 * @throws RecordBatchError CORRUPT_MESSAGE (truncated, length mismatch, CRC mismatch),
 *   UNSUPPORTED_FOR_MESSAGE_FORMAT (magic 0 or 1 message sets), INVALID_RECORD (more than one
 *   batch, a control or transactional batch, no records).
 */
export function parseProducedBatch(records: Uint8Array): KafkaBatch {
  if (records.length < KAFKA_BATCH_HEADER_BYTES)
    throw new RecordBatchError("CORRUPT_MESSAGE", `record batch of ${records.length} bytes is shorter than its ${KAFKA_BATCH_HEADER_BYTES}-byte header`);
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  const magic = view.getInt8(16);
  if (magic !== KAFKA_MAGIC)
    throw new RecordBatchError("UNSUPPORTED_FOR_MESSAGE_FORMAT", `message format magic ${magic} is not supported: only record batches (magic 2, Kafka >= 0.11 clients)`);
  const batchLength = view.getInt32(8);
  const total = LOG_OVERHEAD + batchLength;
  if (batchLength < KAFKA_BATCH_HEADER_BYTES - LOG_OVERHEAD || total > records.length)
    throw new RecordBatchError("CORRUPT_MESSAGE", `batchLength ${batchLength} does not fit the ${records.length} bytes sent`);
  if (total !== records.length) throw new RecordBatchError("INVALID_RECORD", "a produce request must carry exactly one record batch per partition");
  // One pass over the records: Kafka's CRC (attributes..end) is combined from the 40 header
  // bytes' CRC and the records' CRC, which the Edgelog batch reuses (crc-combine.ts).
  const crc = view.getUint32(17);
  const payloadCrc = crc32c(records, KAFKA_BATCH_HEADER_BYTES, total);
  const actual = crc32cCombine(crc32c(records, 21, KAFKA_BATCH_HEADER_BYTES), payloadCrc, total - KAFKA_BATCH_HEADER_BYTES);
  if (crc !== actual) throw new RecordBatchError("CORRUPT_MESSAGE", `record batch CRC mismatch: stored ${crc}, computed ${actual}`);
  const attributes = view.getInt16(21);
  if ((attributes & ATTR_CONTROL) !== 0) throw new RecordBatchError("INVALID_RECORD", "control batches cannot be produced");
  if ((attributes & ATTR_TRANSACTIONAL) !== 0) throw new RecordBatchError("INVALID_RECORD", "transactional batches are not supported by Edgelog (no transactions yet)");
  const recordCount = view.getInt32(57);
  if (recordCount <= 0) throw new RecordBatchError("INVALID_RECORD", `a record batch must carry at least one record, got ${recordCount}`);
  return {
    baseOffset: i64(view, 0, "baseOffset"),
    partitionLeaderEpoch: view.getInt32(12),
    attributes,
    lastOffsetDelta: view.getInt32(23),
    baseTimestamp: i64(view, 27, "baseTimestamp"),
    maxTimestamp: i64(view, 35, "maxTimestamp"),
    producerId: i64(view, 43, "producerId"),
    producerEpoch: view.getInt16(51),
    baseSequence: view.getInt32(53),
    recordCount,
    compression: attributes & ATTR_COMPRESSION_MASK,
    payload: records.subarray(KAFKA_BATCH_HEADER_BYTES, total),
    payloadCrc,
  };
}

/**
 * Builds the Edgelog batch for a produced Kafka batch from its uncompressed records section.
 * Attributes become 0 (Edgelog takes produced batches uncompressed with CreateTime; a topic
 * with LogAppendTime stamps them on append, as Kafka does); every other header field is kept.
 */
export function toEdgelogBatch(batch: KafkaBatch, records: Uint8Array): Uint8Array {
  const out = new Uint8Array(BATCH_HEADER_BYTES + records.length);
  out.set(records, BATCH_HEADER_BYTES);
  // An uncompressed batch's records are its payload, whose CRC parseProducedBatch computed.
  writeEdgelogHeader(out, batch, records.length, records === batch.payload ? batch.payloadCrc : crc32c(out, BATCH_HEADER_BYTES, out.length));
  return out;
}

/** Writes the Edgelog header for `batch` into out[0, 61), records of `recordsLength` bytes with CRC `recordsCrc` following. */
function writeEdgelogHeader(out: Uint8Array, batch: Omit<KafkaBatch, "payload" | "payloadCrc">, recordsLength: number, recordsCrc: number): void {
  const v = new DataView(out.buffer, out.byteOffset, BATCH_HEADER_BYTES);
  v.setUint8(0, BATCH_MAGIC);
  v.setUint16(1, batch.attributes & ~(ATTR_COMPRESSION_MASK | ATTR_TIMESTAMP_TYPE) & 0xffff);
  v.setBigInt64(3, 0n);
  v.setInt32(11, batch.lastOffsetDelta);
  v.setBigInt64(15, BigInt(batch.baseTimestamp));
  v.setBigInt64(23, BigInt(batch.maxTimestamp));
  v.setBigInt64(31, BigInt(batch.producerId));
  v.setInt16(39, batch.producerEpoch);
  v.setInt32(41, batch.baseSequence);
  v.setInt32(45, batch.partitionLeaderEpoch);
  v.setInt32(49, batch.recordCount);
  v.setUint32(53, recordsCrc);
  v.setUint32(57, recordsLength);
}

/**
 * Converts a fetch body (Edgelog batches concatenated, as stored) into Kafka record batches
 * in place, header by header; the records sections are not touched. Each Kafka CRC is
 * combined from the stored records CRC (crc-combine.ts) instead of computed over the records,
 * so no record byte is read, and a stored batch that was damaged after its producer computed
 * that CRC reaches the client with a CRC that does not match, as a Kafka broker (which sends
 * stored bytes unchecked) hands it on for the consumer's own check (`check.crcs`).
 *
 * @returns `body`, rewritten.
 * @throws CodecError on a batch header that does not decode (framing, magic, compression).
 */
export function toKafkaBatchesInPlace(body: Uint8Array): Uint8Array {
  const v = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let pos = 0;
  while (pos < body.length) {
    const h = decodeBatchHeader(body, pos);
    if ((h.attributes & ATTR_COMPRESSION_MASK) !== 0) throw new CodecError(`stored batch at ${pos} has compression ${h.attributes & ATTR_COMPRESSION_MASK}`);
    v.setBigInt64(pos + 0, BigInt(h.baseOffset));
    v.setInt32(pos + 8, h.totalBytes - LOG_OVERHEAD);
    v.setInt32(pos + 12, h.partitionLeaderEpoch);
    v.setInt8(pos + 16, KAFKA_MAGIC);
    v.setInt16(pos + 21, h.attributes);
    v.setInt32(pos + 23, h.lastOffsetDelta);
    v.setBigInt64(pos + 27, BigInt(h.baseTimestamp));
    v.setBigInt64(pos + 35, BigInt(h.maxTimestamp));
    v.setBigInt64(pos + 43, BigInt(h.producerId));
    v.setInt16(pos + 51, h.producerEpoch);
    v.setInt32(pos + 53, h.baseSequence);
    v.setInt32(pos + 57, h.recordCount);
    v.setUint32(pos + 17, crc32cCombine(crc32c(body, pos + 21, pos + KAFKA_BATCH_HEADER_BYTES), h.crc, h.recordsLength));
    pos += h.totalBytes;
  }
  return body;
}

/** {@link toKafkaBatchesInPlace} on a copy: `body` is left as it is. */
export function toKafkaBatches(body: Uint8Array): Uint8Array {
  return toKafkaBatchesInPlace(body.slice());
}

// ---------------------------------------------------------------------------------------------
// Merging consecutive produced batches (appender.ts)
// ---------------------------------------------------------------------------------------------

/** A produced batch with its records section uncompressed. */
export interface PreparedBatch {
  batch: KafkaBatch;
  records: Uint8Array;
}

function readVarlong(buf: Uint8Array, pos: number): [value: number, next: number] {
  let u = 0;
  let mul = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw new RecordBatchError("CORRUPT_MESSAGE", "truncated varint in a record");
    const b = buf[pos++]!;
    u += (b & 0x7f) * mul;
    if ((b & 0x80) === 0) {
      if (u > Number.MAX_SAFE_INTEGER) throw new RecordBatchError("CORRUPT_MESSAGE", "record varint beyond the safe-integer range");
      return [u % 2 === 0 ? u / 2 : -(u + 1) / 2, pos];
    }
    mul *= 128;
  }
  throw new RecordBatchError("CORRUPT_MESSAGE", "record varint longer than 10 bytes");
}

/** Writes `v` as a zigzag varlong at out[pos]; returns the position after it. */
function writeVarlong(out: Uint8Array, pos: number, v: number): number {
  let u = v >= 0 ? v * 2 : -v * 2 - 1;
  while (u >= 0x80) {
    out[pos++] = (u % 128) | 0x80;
    u = Math.floor(u / 128);
  }
  out[pos++] = u;
  return pos;
}

/** Bytes of `v` as a zigzag varlong. */
function varlongSize(v: number): number {
  let u = v >= 0 ? v * 2 : -v * 2 - 1;
  let n = 1;
  while (u >= 0x80) {
    u = Math.floor(u / 128);
    n++;
  }
  return n;
}

/** Most bytes a record can grow by when rebased: its length, timestampDelta and offsetDelta varlongs at 10 bytes each. */
const MAX_REBASE_GROWTH = 30;

/**
 * Writes the records of `records` (a v2 records section of `count` records) into out[at..]
 * with every offsetDelta increased by `offsetShift` and every timestampDelta by
 * `timestampShift`, as they must read inside a batch that starts `offsetShift` records and
 * `timestampShift` ms earlier. Only the length, timestampDelta and offsetDelta varints are
 * rewritten; keys, values and headers are copied unchanged. `out` must have room for
 * `records.length + count * MAX_REBASE_GROWTH` bytes.
 * @returns the position after the last record written.
 * @throws RecordBatchError CORRUPT_MESSAGE when the section does not hold `count` records.
 */
function rebaseRecordsInto(out: Uint8Array, at: number, records: Uint8Array, count: number, offsetShift: number, timestampShift: number): number {
  let pos = 0;
  for (let i = 0; i < count; i++) {
    const [length, bodyAt] = readVarlong(records, pos);
    const end = bodyAt + length;
    if (length < 3 || end > records.length) throw new RecordBatchError("CORRUPT_MESSAGE", `record ${i} overruns its records section`);
    const attributes = records[bodyAt]!;
    const [tsDelta, afterTs] = readVarlong(records, bodyAt + 1);
    const [offsetDelta, afterOffset] = readVarlong(records, afterTs);
    if (afterOffset > end) throw new RecordBatchError("CORRUPT_MESSAGE", `record ${i} overruns its length`);
    const ts = tsDelta + timestampShift;
    const od = offsetDelta + offsetShift;
    const restLength = end - afterOffset;
    at = writeVarlong(out, at, 1 + varlongSize(ts) + varlongSize(od) + restLength);
    out[at++] = attributes;
    at = writeVarlong(out, at, ts);
    at = writeVarlong(out, at, od);
    out.set(records.subarray(afterOffset, end), at);
    at += restLength;
    pos = end;
  }
  if (pos !== records.length) throw new RecordBatchError("CORRUPT_MESSAGE", `${records.length - pos} bytes after ${count} records`);
  return at;
}

/**
 * One Edgelog batch holding the records of several consecutive produced batches of one
 * partition, in order (they get consecutive offsets). Only for batches without a producer id:
 * an idempotent producer's retry is recognised by its own (epoch, sequence, count), which a
 * merged request would not carry. Written into one buffer (the first batch's records copied,
 * the others' rebased), then one CRC pass over the merged records.
 * @throws RecordBatchError CORRUPT_MESSAGE for a records section that does not parse.
 */
export function mergeToEdgelogBatch(parts: PreparedBatch[]): Uint8Array {
  const first = parts[0]!.batch;
  let room = BATCH_HEADER_BYTES;
  for (const p of parts) room += p.records.length + (p === parts[0] ? 0 : p.batch.recordCount * MAX_REBASE_GROWTH);
  const out = new Uint8Array(room);
  out.set(parts[0]!.records, BATCH_HEADER_BYTES);
  let at = BATCH_HEADER_BYTES + parts[0]!.records.length;
  let count = first.recordCount;
  let maxTimestamp = first.maxTimestamp;
  for (let i = 1; i < parts.length; i++) {
    const { batch, records } = parts[i]!;
    at = rebaseRecordsInto(out, at, records, batch.recordCount, count, batch.baseTimestamp - first.baseTimestamp);
    count += batch.recordCount;
    maxTimestamp = Math.max(maxTimestamp, batch.maxTimestamp);
  }
  const merged = out.subarray(0, at);
  writeEdgelogHeader(merged, { ...first, lastOffsetDelta: count - 1, recordCount: count, maxTimestamp }, at - BATCH_HEADER_BYTES, crc32c(merged, BATCH_HEADER_BYTES, at));
  return merged;
}
