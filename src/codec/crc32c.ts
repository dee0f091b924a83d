/**
 * CRC-32C (Castagnoli): the checksum Kafka's v2 record batch uses (KIP-98 switched from
 * CRC-32 to CRC-32C) and iSCSI/ext4/SCTP use (RFC 3720 appendix B.4).
 *
 * Parameters: reflected polynomial 0x82F63B78 (0x1EDC6F41 bit-reversed), initial value
 * 0xFFFFFFFF, input and output reflected, final XOR 0xFFFFFFFF. Check value
 * ("123456789") = 0xE3069283.
 *
 * Implementation: table-driven "slicing-by-16" (16 tables of 256 entries, 16 KiB): one table
 * step per input byte but sixteen independent lookups per 16 bytes, read as four 32-bit
 * little-endian words through an Int32Array view (on a little-endian host; every platform
 * Workers and Node run on is). About 2x the throughput of the byte-loaded slicing-by-8 it
 * replaces (256 KiB: ~0.33 ms -> ~0.17 ms in V8). It runs on every produce (the SDK encodes,
 * the partition or gateway verifies), so it is on the batched produce path twice.
 *
 * Pure module: no Workers/Node imports.
 */

const POLY_REFLECTED = 0x82f63b78;
const SLICES = 16;

/** TABLES[k * 256 + b]: CRC contribution of byte b followed by k zero bytes. */
const TABLES = buildTables();

/** Whether a Uint32/Int32Array reads bytes b0..b3 as b0 | b1<<8 | b2<<16 | b3<<24. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Below this many bytes the word loop is not worth creating its Int32Array view. */
const WORD_LOOP_MIN_BYTES = 256;

function buildTables(): Int32Array {
  const t = new Int32Array(SLICES * 256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY_REFLECTED : c >>> 1;
    t[b] = c;
  }
  for (let k = 1; k < SLICES; k++) {
    for (let b = 0; b < 256; b++) {
      const prev = t[(k - 1) * 256 + b]!;
      t[k * 256 + b] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  }
  return t;
}

/**
 * CRC-32C of `bytes[start, end)`.
 *
 * @param bytes input
 * @param start first byte included @default 0
 * @param end   first byte excluded @default bytes.length
 * @returns the checksum as an unsigned 32-bit integer (0 .. 0xFFFFFFFF); 0 for an empty range.
 * @throws RangeError unless 0 <= start <= end <= bytes.length (integers).
 */
export function crc32c(bytes: Uint8Array, start = 0, end: number = bytes.length): number {
  if (!(Number.isInteger(start) && Number.isInteger(end) && 0 <= start && start <= end && end <= bytes.length)) {
    throw new RangeError(`crc32c range [${start}, ${end}) outside buffer of ${bytes.length} bytes`);
  }
  const t = TABLES;
  let c = -1; // 0xFFFFFFFF as int32
  let p = start;
  if (LITTLE_ENDIAN && end - start >= WORD_LOOP_MIN_BYTES) {
    // Bytes up to a 4-byte aligned address, then 16 bytes (4 aligned words) per step.
    while (((bytes.byteOffset + p) & 3) !== 0) c = t[(c ^ bytes[p++]!) & 0xff]! ^ (c >>> 8);
    const words = ((end - p) >>> 4) << 2; // a multiple of 4 words
    const w = new Int32Array(bytes.buffer, bytes.byteOffset + p, words);
    // Bounds are proven by the loop condition; `!` only satisfies noUncheckedIndexedAccess.
    for (let i = 0; i < words; i += 4) {
      const a = c ^ w[i]!;
      const b = w[i + 1]!;
      const d = w[i + 2]!;
      const e = w[i + 3]!;
      c =
        t[15 * 256 + (a & 0xff)]! ^
        t[14 * 256 + ((a >>> 8) & 0xff)]! ^
        t[13 * 256 + ((a >>> 16) & 0xff)]! ^
        t[12 * 256 + (a >>> 24)]! ^
        t[11 * 256 + (b & 0xff)]! ^
        t[10 * 256 + ((b >>> 8) & 0xff)]! ^
        t[9 * 256 + ((b >>> 16) & 0xff)]! ^
        t[8 * 256 + (b >>> 24)]! ^
        t[7 * 256 + (d & 0xff)]! ^
        t[6 * 256 + ((d >>> 8) & 0xff)]! ^
        t[5 * 256 + ((d >>> 16) & 0xff)]! ^
        t[4 * 256 + (d >>> 24)]! ^
        t[3 * 256 + (e & 0xff)]! ^
        t[2 * 256 + ((e >>> 8) & 0xff)]! ^
        t[256 + ((e >>> 16) & 0xff)]! ^
        t[e >>> 24]!;
    }
    p += words * 4;
  }
  // Short inputs and the tail: slicing-by-8 with byte loads (tables 0-7 are slicing-by-8's).
  const end8 = p + ((end - p) & ~7);
  while (p < end8) {
    const lo = c ^ (bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24));
    c =
      t[7 * 256 + (lo & 0xff)]! ^
      t[6 * 256 + ((lo >>> 8) & 0xff)]! ^
      t[5 * 256 + ((lo >>> 16) & 0xff)]! ^
      t[4 * 256 + (lo >>> 24)]! ^
      t[3 * 256 + bytes[p + 4]!]! ^
      t[2 * 256 + bytes[p + 5]!]! ^
      t[256 + bytes[p + 6]!]! ^
      t[bytes[p + 7]!]!;
    p += 8;
  }
  while (p < end) c = t[(c ^ bytes[p++]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}
