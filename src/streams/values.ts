/**
 * Values-only reader of stored record batches, for stream reads (catch-up reads are
 * dominated by per-record work: a stream of 1 KiB appends has 1024 records per MiB).
 *
 * `decodeBatch` (src/codec/batch.ts) builds a record object per record and copies its key,
 * value and header values; a stream read needs only each record's offset and value bytes.
 * This walks the same v1 layout and yields views into the batch, which the reader copies once
 * into its answer. It trusts what it reads: rows were validated by the partition's append
 * path before they were stored, so it checks bounds, not content (no CRC, no UTF-8).
 *
 * The layout is the codec's (see the table in src/codec/batch.ts); test/unit/streams-values
 * checks this reader against decodeBatch on random batches, so a format change that forgets
 * this file fails there.
 *
 * Pure module: no Workers imports.
 */

const MAGIC = 1;
const COMPRESSION_MASK = 0x07;
const HEADER_BYTES = 61;

/**
 * Calls `visit(offset, value)` for each record of the batch at `batch[0]`, in offset order,
 * with `value` a view into `batch` (null for a null value). Stops when `visit` returns false.
 * @throws Error on a batch that is not a v1 uncompressed batch or is truncated (storage corruption)
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a visitor that never stops may return nothing.
export function forEachValue(batch: Uint8Array, visit: (offset: number, value: Uint8Array | null) => boolean | void): void {
  if (batch.length < HEADER_BYTES || batch[0] !== MAGIC) throw new Error("not a v1 record batch");
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  if ((view.getUint16(1) & COMPRESSION_MASK) !== 0) throw new Error("compressed record batches are not supported");
  const baseOffset = view.getInt32(3) * 4294967296 + view.getUint32(7);
  const recordCount = view.getInt32(49);
  const end = HEADER_BYTES + view.getUint32(57);
  if (end > batch.length) throw new Error("truncated record batch");
  let p = HEADER_BYTES;
  // Zigzag varint (Kafka's), at most 5 bytes for 32-bit values; `p` advances past it.
  const varint = (): number => {
    let raw = 0;
    let shift = 0;
    let b: number;
    do {
      if (p >= end) throw new Error("truncated record");
      b = batch[p++] as number;
      raw |= (b & 0x7f) << shift;
      shift += 7;
    } while ((b & 0x80) !== 0 && shift < 35);
    return (raw >>> 1) ^ -(raw & 1);
  };
  for (let i = 0; i < recordCount; i++) {
    const length = varint();
    const recordEnd = p + length;
    if (length < 0 || recordEnd > end) throw new Error("record outside its batch");
    p += 1; // attributes
    while (((batch[p++] as number) & 0x80) !== 0); // timestampDelta (varlong, skipped)
    const offsetDelta = varint();
    const keyLength = varint();
    if (keyLength > 0) p += keyLength;
    const valueLength = varint();
    const value = valueLength < 0 ? null : batch.subarray(p, p + valueLength);
    if (p + Math.max(0, valueLength) > recordEnd) throw new Error("value outside its record");
    if (visit(baseOffset + offsetDelta, value) === false) return;
    p = recordEnd;
  }
}
