/**
 * Public API of the record-batch codec (pure, shared by the gateway, the Durable Objects and
 * the SDK). This file is the contract: import from here, not from the files behind it.
 * The byte-level helpers in varint.ts are internal and deliberately not re-exported.
 */

// ---- record model and batch header ----
export {
  ATTR_COMPRESSION_MASK,
  ATTR_CONTROL,
  ATTR_LOG_APPEND_TIME,
  ATTR_TRANSACTIONAL,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
} from "./types.ts";
export type { BatchHeader, LogRecord, ProducerRecord, RecordHeader } from "./types.ts";

// ---- errors ----
export { CodecError } from "./errors.ts";

// ---- record batch format v1 ----
export {
  BATCH_HEADER_BYTES,
  BATCH_MAGIC,
  BatchBuilder,
  NO_TIMESTAMP,
  decodeBatch,
  decodeBatchHeader,
  decodeBatches,
  encodeBatch,
  recordPayloadBytes,
  recordSizeBytes,
  recordSizeBytesFromPayload,
  rewriteBatchHeader,
  scanBatch,
  splitRecords,
  verifyBatchCrc,
} from "./batch.ts";
export type { BatchHeaderPatch, BatchScan, DecodeOptions, DecodedBatch, DecodedBatchHeader } from "./batch.ts";

// ---- checksum ----
export { crc32c } from "./crc32c.ts";

// ---- key partitioning ----
export { murmur2, partitionForKey, toPositive } from "./partitioner.ts";
