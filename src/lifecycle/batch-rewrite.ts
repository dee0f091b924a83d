/**
 * The bytes of a compaction `rewriteBatch` command (pure): a stored batch with only some of its
 * records kept. Each kept record's bytes are copied unchanged. A record stores its offset and
 * timestamp as deltas from the batch's baseOffset and baseTimestamp, and those stay, so the
 * records keep their offsets and the batch keeps its [baseOffset, lastOffset] range (the log gets
 * gaps, as in Kafka's cleaned batches). The header keeps every field (producer id/epoch/sequence,
 * leader epoch, attributes, maxTimestamp) except recordCount, recordsLength and the records CRC,
 * which are recomputed. maxTimestamp stays that of the batch as appended: with LogAppendTime it is
 * every record's timestamp, and the log's running-max timestamp index was built from it.
 *
 * The field positions are those of the record-batch format v1 (src/codec/batch.ts), and the tests
 * decode every result with the codec.
 */
import { BATCH_HEADER_BYTES, crc32c, decodeBatchHeader, CodecError } from "../codec/index.ts";

// Format v1 header positions (src/codec/batch.ts layout).
const OFF_RECORD_COUNT = 49;
const OFF_CRC = 53;
const OFF_RECORDS_LENGTH = 57;

/** Reads an unsigned LEB128 group sequence at `p` (at most `maxBytes` bytes): [value, next position]. */
function readUnsigned(buf: Uint8Array, p: number, end: number, maxBytes: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < maxBytes; i++) {
    if (p >= end) throw new CodecError("truncated varint in a stored batch");
    const b = buf[p++]!;
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) return [value, p];
    scale *= 128;
  }
  throw new CodecError("varint too long in a stored batch");
}

/** Kafka's zigzag varint (32-bit, 1-5 bytes) at `p`: [value, next position]. */
function readVarint(buf: Uint8Array, p: number, end: number): [number, number] {
  const [u, next] = readUnsigned(buf, p, end, 5);
  return [u % 2 === 0 ? u / 2 : -(u + 1) / 2, next];
}

/**
 * Keeps the records of the stored batch `data` whose offsets are in `keep`.
 * @returns the new batch bytes, `data` itself when every record is kept, or null when none is
 *   (the batch row is dropped).
 * @throws CodecError for a malformed batch (framing as decodeBatchHeader, a record overrunning the
 *   records section).
 */
export function rewriteStoredBatch(data: Uint8Array, keep: ReadonlySet<number>): Uint8Array | null {
  const h = decodeBatchHeader(data);
  const end = BATCH_HEADER_BYTES + h.recordsLength;
  const spans: [number, number][] = [];
  let p = BATCH_HEADER_BYTES;
  let kept = 0;
  for (let i = 0; i < h.recordCount; i++) {
    const [length, body] = readVarint(data, p, end);
    const recordEnd = body + length;
    if (length < 2 || recordEnd > end) throw new CodecError(`record ${i} length ${length} outside the records section`);
    // body: attributes i8, timestampDelta varlong (skipped), offsetDelta varint.
    const [, afterTimestamp] = readUnsigned(data, body + 1, recordEnd, 10);
    const [offsetDelta] = readVarint(data, afterTimestamp, recordEnd);
    if (keep.has(h.baseOffset + offsetDelta)) {
      spans.push([p, recordEnd]);
      kept += recordEnd - p;
    }
    p = recordEnd;
  }
  if (p !== end) throw new CodecError(`${end - p} bytes of trailing garbage after ${h.recordCount} records`);
  if (spans.length === h.recordCount) return data;
  if (spans.length === 0) return null;
  const out = new Uint8Array(BATCH_HEADER_BYTES + kept);
  out.set(data.subarray(0, BATCH_HEADER_BYTES));
  let q = BATCH_HEADER_BYTES;
  for (const [from, to] of spans) {
    out.set(data.subarray(from, to), q);
    q += to - from;
  }
  const view = new DataView(out.buffer);
  view.setInt32(OFF_RECORD_COUNT, spans.length);
  view.setUint32(OFF_RECORDS_LENGTH, kept);
  view.setUint32(OFF_CRC, crc32c(out, BATCH_HEADER_BYTES, out.length));
  return out;
}

/** What the cleaner needs of one stored record: its offset, its key (as {@link keyIdOf} maps it, null for none) and whether its value is null. */
export interface ScannedKey {
  offset: number;
  key: string | null;
  tombstone: boolean;
}

/** Key bytes as one char per byte (the cleaner's key identity, as src/lifecycle/compaction.ts keyId). */
function keyIdOf(data: Uint8Array, from: number, to: number): string {
  // Short keys (the common case) without the spread's iterator: about half the cost per record.
  if (to - from <= 64) return String.fromCharCode.apply(null, data.subarray(from, to) as unknown as number[]);
  let s = "";
  for (let i = from; i < to; i += 8192) s += String.fromCharCode(...data.subarray(i, Math.min(to, i + 8192)));
  return s;
}

/**
 * The offsets, keys and tombstone flags of a stored batch's records, read from the record framing
 * only (no value, header or record objects are built): what a compaction step needs, at a fraction
 * of decodeBatch's cost. The batch was verified when it was stored; framing errors still throw.
 * @throws CodecError for a malformed batch.
 */
export function scanRecordKeys(data: Uint8Array): ScannedKey[] {
  const h = decodeBatchHeader(data);
  const end = BATCH_HEADER_BYTES + h.recordsLength;
  const out: ScannedKey[] = [];
  let p = BATCH_HEADER_BYTES;
  for (let i = 0; i < h.recordCount; i++) {
    const [length, body] = readVarint(data, p, end);
    const recordEnd = body + length;
    if (length < 2 || recordEnd > end) throw new CodecError(`record ${i} length ${length} outside the records section`);
    const [, afterTimestamp] = readUnsigned(data, body + 1, recordEnd, 10);
    const [offsetDelta, afterOffset] = readVarint(data, afterTimestamp, recordEnd);
    const [keyLength, afterKeyLength] = readVarint(data, afterOffset, recordEnd);
    const keyEnd = afterKeyLength + Math.max(0, keyLength);
    if (keyEnd > recordEnd) throw new CodecError(`record ${i} key overruns the record`);
    const [valueLength] = readVarint(data, keyEnd, recordEnd);
    out.push({ offset: h.baseOffset + offsetDelta, key: keyLength < 0 ? null : keyIdOf(data, afterKeyLength, keyEnd), tombstone: valueLength < 0 });
    p = recordEnd;
  }
  if (p !== end) throw new CodecError(`${end - p} bytes of trailing garbage after ${h.recordCount} records`);
  return out;
}
