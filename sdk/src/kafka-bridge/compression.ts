/**
 * Decompression of produced Kafka batches (the records section is one compressed block).
 *
 * - gzip (1): node:zlib.
 * - zstd (4): node:zlib's zstd (Node >= 22.15 / 23.8); refused on a Node without it.
 * - snappy (2), lz4 (3): not supported yet: refused with UNSUPPORTED_COMPRESSION_TYPE and a
 *   message naming the codec (docs/KAFKA-BRIDGE.md). Producers configured with them must
 *   switch to gzip, zstd or none.
 *
 * Fetches are always answered uncompressed (a broker may pick any codec per batch).
 *
 * The output is bounded (`maxBytes`): a block that inflates beyond it is refused with
 * MESSAGE_TOO_LARGE instead of exhausting memory.
 */
import { promisify } from "node:util";
import * as zlib from "node:zlib";
import { Compression, RecordBatchError } from "./records.ts";

const gunzip = promisify(zlib.gunzip);
type ZstdDecompress = (buf: Uint8Array, options: { maxOutputLength: number }, cb: (err: Error | null, out: Buffer) => void) => void;
const zstdDecompressCb = (zlib as unknown as { zstdDecompress?: ZstdDecompress }).zstdDecompress;
const zstdDecompress = zstdDecompressCb === undefined ? undefined : promisify(zstdDecompressCb);

/** Names of the codecs this process can decompress. */
export function supportedCompressions(): string[] {
  return zstdDecompress === undefined ? ["none", "gzip"] : ["none", "gzip", "zstd"];
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
      case Compression.zstd:
        if (zstdDecompress === undefined) break;
        return await zstdDecompress(payload, { maxOutputLength: maxBytes });
      default:
        break;
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ERR_BUFFER_TOO_LARGE" || (e instanceof RangeError)) throw new RecordBatchError("MESSAGE_TOO_LARGE", `the batch decompresses to more than ${maxBytes} bytes`);
    throw new RecordBatchError("CORRUPT_MESSAGE", `the batch does not decompress: ${(e as Error).message}`);
  }
  const name = Object.entries(Compression).find(([, id]) => id === compression)?.[0] ?? `id ${compression}`;
  throw new RecordBatchError("UNSUPPORTED_COMPRESSION_TYPE", `compression ${name} is not supported by the Edgelog Kafka bridge (supported: ${supportedCompressions().join(", ")})`);
}
