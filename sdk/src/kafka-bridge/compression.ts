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

/** Snappy, raw or xerial-framed. @throws Error on a corrupt stream; RangeError past `maxBytes`. */
export function snappyDecompress(payload: Uint8Array, maxBytes: number): Uint8Array {
  if (!isXerial(payload)) return snappy.uncompress(payload, maxBytes);
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const blocks: Uint8Array[] = [];
  let total = 0;
  let pos = XERIAL_HEADER_BYTES;
  while (pos < payload.length) {
    if (pos + 4 > payload.length) throw new Error("truncated xerial block length");
    const n = view.getInt32(pos);
    pos += 4;
    if (n < 0 || pos + n > payload.length) throw new Error(`xerial block of ${n} bytes overruns the payload`);
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

/** An LZ4 frame. @throws Error on a corrupt frame; RangeError when it inflates past `maxBytes`. */
export function lz4Decompress(payload: Uint8Array, maxBytes: number): Uint8Array {
  // lz4js writes into the buffer it is given and counts on past its end without writing, so a
  // frame that inflates beyond the buffer shows as a written size above its length.
  const out = new Uint8Array(Math.min(lz4.decompressBound(payload), maxBytes));
  const n = lz4.decompressFrame(payload, out);
  if (n > out.length) throw new RangeError(`lz4 frame inflates past ${maxBytes} bytes`);
  return out.subarray(0, n);
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
