/**
 * Turns the stored batches a partition returned into a JSON fetch answer. Pure.
 */
import { CodecError, decodeBatch } from "../codec/index.ts";
import { decodeField } from "../protocol/encoding.ts";
import { EdgelogError } from "../protocol/errors.ts";
import type { Encoding, JsonFetchedRecord } from "../protocol/types.ts";

export interface JsonRecords {
  records: JsonFetchedRecord[];
  /**
   * Last returned offset + 1 when `maxRecords` cut the answer, else the partition's nextOffset
   * (which skips compacted gaps, so an empty answer below the high watermark still moves).
   */
  nextOffset: number;
}

/**
 * Decodes `batches` (offset order), skips records below `offset` (the first stored batch may
 * start before it), returns at most `maxRecords`, fields in `encoding`. `partitionNextOffset` is
 * the partition's FetchOk.nextOffset @default offset
 * @throws EdgelogError INVALID_ENCODING when encoding=json meets bytes that are not JSON;
 *   INTERNAL if stored bytes do not decode (corruption).
 */
export function decodeFetched(batches: readonly Uint8Array[], partition: number, offset: number, maxRecords: number, encoding: Encoding, partitionNextOffset = offset): JsonRecords {
  const records: JsonFetchedRecord[] = [];
  let nextOffset = offset;
  for (const bytes of batches) {
    let decoded;
    try {
      decoded = decodeBatch(bytes, 0, { verifyCrc: true });
    } catch (err) {
      if (err instanceof CodecError) throw new EdgelogError("INTERNAL", "A stored record batch failed to decode.");
      throw err;
    }
    for (const r of decoded.records) {
      if (r.offset < offset) continue;
      if (records.length >= maxRecords) return { records, nextOffset };
      const at = `offset ${r.offset}`;
      records.push({
        partition,
        offset: r.offset,
        timestamp: r.timestamp,
        key: decodeField(r.key, encoding, `${at} key`),
        value: decodeField(r.value, encoding, `${at} value`),
        headers: r.headers.map((h) => ({ key: h.key, value: decodeField(h.value, encoding, `${at} header ${h.key}`) })),
      });
      nextOffset = r.offset + 1;
    }
  }
  return { records, nextOffset: Math.max(nextOffset, partitionNextOffset) };
}
