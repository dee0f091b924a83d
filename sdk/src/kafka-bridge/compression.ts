/// <reference path="./codecs.d.ts" />
/**
 * Decompression of produced Kafka batches (the records section is one compressed block).
 *
 * - gzip (1): node:zlib.
 * - snappy (2): snappyjs (pure JS), raw blocks (librdkafka) or the xerial framing the Java
 *   client writes (magic `\x82SNAPPY\0`, two int32 versions, then int32-length-prefixed blocks).
 * - lz4 (3): lz4js (pure JS), the LZ4 frame format (Kafka >= 0.10, magic 1+).
 * - zstd (4): node:zlib's zstd (Node >= 22.15 / 23.8); refused with
 *   UNSUPPORTED_COMPRESSION_TYPE on a Node without it.
 *
 * Fetches are always answered uncompressed (a broker may pick any codec per batch).
 *
 * The output is bounded (`maxBytes`): a block that inflates beyond it is refused with
 * MESSAGE_TOO_LARGE instead of exhausting memory.
 */
import { promisify } from "node:util";
import * as zlib from "node:zlib";
import * as lz4 from "lz4js";
import * as snappy from "snappyjs";
import { Compression, RecordBatchError } from "./records.ts";

const gunzip = promisify(zlib.gunzip);
type ZstdDecompress = (buf: Uint8Array, options: { maxOutputLength: number }, cb: (err: Error | null, out: Buffer) => void) => void;
const zstdDecompressCb = (zlib as unknown as { zstdDecompress?: ZstdDecompress }).zstdDecompress;
const zstdDecompress = zstdDecompressCb === undefined ? undefined : promisify(zstdDecompressCb);

/** Names of the codecs this process can decompress. */
export function supportedCompressions(): string[] {
  return zstdDecompress === undefined ? ["none", "gzip", "snappy", "lz4"] : ["none", "gzip", "snappy", "lz4", "zstd"];
}

const XERIAL_MAGIC = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00];
const XERIAL_HEADER_BYTES = 16;

function isXerial(b: Uint8Array): boolean {
  return b.length >= XERIAL_HEADER_BYTES && XERIAL_MAGIC.every((x, i) => b[i] === x);
}

/**
 * Walks one raw snappy block (format_description.txt: the decoded length as a varint, then
 * literal and copy elements) without writing, checking that every element lies inside the
 * block, every copy reaches only bytes already decoded, and the elements decode to exactly
 * the declared length, at most `maxBytes`. snappyjs checks none of this while it decodes
 * (copies run on past its buffer; a block decoding to more than it declares is cut short and
 * accepted), so it only sees blocks this walk accepted, and decodes them in time linear in
 * their input and declared length.
 * @throws Error on a malformed block; RangeError when it declares more than `maxBytes`.
 */
function checkSnappyBlock(p: Uint8Array, maxBytes: number): void {
  let s = 0;
  let declared = 0;
  for (let shift = 0; ; shift += 7) {
    if (s >= p.length || shift > 28) throw new Error("invalid snappy length preamble");
    const b = p[s++]!;
    declared += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) break;
  }
  if (declared > maxBytes) throw new RangeError(`snappy block declares ${declared} bytes, more than ${maxBytes}`);
  let out = 0;
  while (s < p.length) {
    const tag = p[s++]!;
    let length: number;
    let offset = 0;
    switch (tag & 0x03) {
      case 0: {
        length = (tag >> 2) + 1;
        if (length > 60) {
          const n = length - 60; // 1-4 little-endian bytes hold length - 1
          if (s + n > p.length) throw new Error("snappy literal length overruns the block");
          length = 1;
          for (let i = 0; i < n; i++) length += p[s + i]! * 2 ** (8 * i);
          s += n;
        }
        if (length > p.length - s) throw new Error("snappy literal overruns the block");
        s += length;
        break;
      }
      case 1:
        if (s + 1 > p.length) throw new Error("snappy copy overruns the block");
        length = 4 + ((tag >> 2) & 0x07);
        offset = ((tag >> 5) << 8) | p[s++]!;
        break;
      case 2:
        if (s + 2 > p.length) throw new Error("snappy copy overruns the block");
        length = (tag >> 2) + 1;
        offset = p[s]! | (p[s + 1]! << 8);
        s += 2;
        break;
      default:
        if (s + 4 > p.length) throw new Error("snappy copy overruns the block");
        length = (tag >> 2) + 1;
        offset = (p[s]! | (p[s + 1]! << 8) | (p[s + 2]! << 16)) + p[s + 3]! * 2 ** 24;
        s += 4;
    }
    if ((tag & 0x03) !== 0 && (offset === 0 || offset > out)) throw new Error(`snappy copy offset ${offset} reaches before the block's start`);
    out += length;
    if (out > declared) throw new Error(`snappy block decodes to more than its declared ${declared} bytes`);
  }
  if (out !== declared) throw new Error(`snappy block decodes to ${out} bytes, declares ${declared}`);
}

/** Snappy, raw or xerial-framed. @throws Error on a corrupt stream; RangeError past `maxBytes`. */
export function snappyDecompress(payload: Uint8Array, maxBytes: number): Uint8Array {
  if (!isXerial(payload)) {
    checkSnappyBlock(payload, maxBytes);
    return snappy.uncompress(payload, maxBytes);
  }
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const blocks: Uint8Array[] = [];
  let total = 0;
  let pos = XERIAL_HEADER_BYTES;
  while (pos < payload.length) {
    if (pos + 4 > payload.length) throw new Error("truncated xerial block length");
    const n = view.getInt32(pos);
    pos += 4;
    if (n < 0 || pos + n > payload.length) throw new Error(`xerial block of ${n} bytes overruns the payload`);
    checkSnappyBlock(payload.subarray(pos, pos + n), maxBytes - total);
    const block = snappy.uncompress(payload.subarray(pos, pos + n), maxBytes - total);
    pos += n;
    total += block.length;
    blocks.push(block);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

const LZ4_MAGIC = 0x184d2204;
/** Block maximum sizes by the BD byte's bits 4-6 (LZ4 frame format, "Block Maximum Size"). */
const LZ4_BLOCK_MAX_BYTES: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };

/** One data block of an LZ4 frame: payload[start, end), stored uncompressed or LZ4-compressed. */
interface Lz4Block {
  start: number;
  end: number;
  uncompressed: boolean;
}

/**
 * Walks an LZ4 frame (lz4_Frame_format.md: magic, FLG, BD, optional content size, header
 * checksum, blocks each with a 4-byte little-endian size whose high bit marks an uncompressed
 * block, optional block checksums, an end mark, optional content checksum) and each
 * compressed block's sequences, without writing anything, and answers the decoded size.
 *
 * lz4js decodes without any bound check: a block size past the payload made it loop over
 * undefined bytes for minutes, and match lengths (up to 255 output bytes per input byte) run
 * on past its buffer. So every block must lie inside the payload and within the frame's block
 * maximum size (the format's rule), every sequence inside its block, every match offset
 * within what the frame decoded so far, and the total within `maxBytes`: lz4js then only
 * decodes frames this walk accepted, in time linear in their input and output. Checksums are
 * not verified (the Kafka batch CRC covers the compressed bytes).
 *
 * @throws Error on a malformed frame (dictionary ids are refused: Kafka clients never set one);
 *   RangeError when it decodes to more than `maxBytes`.
 */
function scanLz4Frame(p: Uint8Array, maxBytes: number): { blocks: Lz4Block[]; decodedBytes: number } {
  const view = new DataView(p.buffer, p.byteOffset, p.byteLength);
  if (p.length < 7 || view.getUint32(0, true) !== LZ4_MAGIC) throw new Error("not an LZ4 frame");
  const flg = p[4]!;
  const bd = p[5]!;
  if (flg >> 6 !== 1 || (flg & 0x02) !== 0) throw new Error(`unsupported LZ4 frame descriptor ${flg}`);
  if ((flg & 0x01) !== 0) throw new Error("LZ4 frames with a dictionary id are not supported");
  const blockMax = LZ4_BLOCK_MAX_BYTES[(bd >> 4) & 0x07];
  if (blockMax === undefined || (bd & 0x8f) !== 0) throw new Error(`invalid LZ4 block descriptor ${bd}`);
  const blockChecksums = (flg & 0x10) !== 0;
  let pos = 6 + ((flg & 0x08) !== 0 ? 8 : 0) + 1; // content size, header checksum
  const blocks: Lz4Block[] = [];
  let decoded = 0;
  for (;;) {
    if (pos + 4 > p.length) throw new Error("truncated LZ4 frame: no end mark");
    const word = view.getUint32(pos, true);
    pos += 4;
    if (word === 0) break;
    const size = word & 0x7fffffff;
    const uncompressed = word !== size;
    if (size > blockMax) throw new Error(`LZ4 block of ${size} bytes is larger than the frame's block maximum ${blockMax}`);
    if (pos + size + (blockChecksums ? 4 : 0) > p.length) throw new Error(`LZ4 block of ${size} bytes overruns the payload`);
    const block = { start: pos, end: pos + size, uncompressed };
    const blockBytes = uncompressed ? size : lz4BlockDecodedBytes(p, block.start, block.end, decoded, blockMax);
    decoded += blockBytes;
    if (decoded > maxBytes) throw new RangeError(`lz4 frame inflates past ${maxBytes} bytes`);
    blocks.push(block);
    pos = block.end + (blockChecksums ? 4 : 0);
  }
  if ((flg & 0x04) !== 0) pos += 4; // content checksum
  if (pos !== p.length) throw new Error(pos > p.length ? "truncated LZ4 content checksum" : `${p.length - pos} bytes after the LZ4 frame`);
  return { blocks, decodedBytes: decoded };
}

/**
 * Decoded size of the LZ4 block p[start, end) (LZ4 block format: sequences of a token, literal
 * length, literals, 2-byte match offset, match length; the last sequence has literals only),
 * checking every bound. `before` is what the frame decoded before this block (a match may
 * reach back into it when blocks are linked).
 * @throws Error when a sequence overruns the block, a match offset is 0 or reaches before the
 *   frame's start, or the block decodes to more than `blockMax` bytes.
 */
function lz4BlockDecodedBytes(p: Uint8Array, start: number, end: number, before: number, blockMax: number): number {
  let s = start;
  let out = 0;
  const length = (n: number): number => {
    if (n !== 15) return n;
    for (;;) {
      if (s >= end) throw new Error("LZ4 length overruns its block");
      const b = p[s++]!;
      n += b;
      if (b !== 255) return n;
      if (n > blockMax) throw new Error(`LZ4 block decodes to more than its maximum ${blockMax} bytes`);
    }
  };
  while (s < end) {
    const token = p[s++]!;
    const literals = length(token >> 4);
    if (literals > end - s) throw new Error("LZ4 literals overrun their block");
    s += literals;
    out += literals;
    if (s === end) break; // the last sequence: literals only
    if (s + 2 > end) throw new Error("LZ4 match offset overruns its block");
    const offset = p[s]! | (p[s + 1]! << 8);
    s += 2;
    if (offset === 0 || offset > before + out) throw new Error(`LZ4 match offset ${offset} reaches before the frame's start`);
    out += length(token & 0x0f) + 4;
    if (out > blockMax) throw new Error(`LZ4 block decodes to more than its maximum ${blockMax} bytes`);
  }
  if (out > blockMax) throw new Error(`LZ4 block decodes to more than its maximum ${blockMax} bytes`);
  return out;
}

/**
 * An LZ4 frame, checked by {@link scanLz4Frame} first, then decoded block by block by lz4js.
 * @throws Error on a corrupt frame; RangeError when it inflates past `maxBytes`.
 */
export function lz4Decompress(payload: Uint8Array, maxBytes: number): Uint8Array {
  const { blocks, decodedBytes } = scanLz4Frame(payload, maxBytes);
  const out = new Uint8Array(decodedBytes);
  let at = 0;
  for (const b of blocks) {
    if (b.uncompressed) {
      out.set(payload.subarray(b.start, b.end), at);
      at += b.end - b.start;
    } else at = lz4.decompressBlock(payload, out, b.start, b.end - b.start, at);
  }
  if (at !== decodedBytes) throw new Error(`LZ4 frame decoded to ${at} bytes, its sequences announce ${decodedBytes}`);
  return out;
}

/**
 * The uncompressed records section of a batch whose codec is `compression`.
 * @param maxBytes largest output accepted, bytes
 * @throws RecordBatchError UNSUPPORTED_COMPRESSION_TYPE (snappy, lz4, unknown ids, zstd on an
 *   old Node), CORRUPT_MESSAGE (a block that does not decompress), MESSAGE_TOO_LARGE.
 */
export async function decompress(compression: number, payload: Uint8Array, maxBytes: number): Promise<Uint8Array> {
  try {
    switch (compression) {
      case Compression.none:
        return payload;
      case Compression.gzip:
        return await gunzip(payload, { maxOutputLength: maxBytes });
      case Compression.snappy:
        return snappyDecompress(payload, maxBytes);
      case Compression.lz4:
        return lz4Decompress(payload, maxBytes);
      case Compression.zstd:
        if (zstdDecompress === undefined) break;
        return await zstdDecompress(payload, { maxOutputLength: maxBytes });
      default:
        break;
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE" || e instanceof RangeError || /too big/.test((e as Error).message))
      throw new RecordBatchError("MESSAGE_TOO_LARGE", `the batch decompresses to more than ${maxBytes} bytes`);
    throw new RecordBatchError("CORRUPT_MESSAGE", `the batch does not decompress: ${(e as Error).message}`);
  }
  const name = Object.entries(Compression).find(([, id]) => id === compression)?.[0] ?? `id ${compression}`;
  throw new RecordBatchError("UNSUPPORTED_COMPRESSION_TYPE", `compression ${name} is not supported by the Edgelog Kafka bridge (supported: ${supportedCompressions().join(", ")})`);
}
