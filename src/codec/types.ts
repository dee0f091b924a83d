/**
 * Record model and record-batch header (pure, shared with the SDK).
 *
 * The record model follows Kafka's (KIP-82 headers, KIP-32 timestamps):
 * - key and value are nullable bytes; null and empty (length 0) are different and stay different;
 * - headers are an ordered list of (string key, nullable bytes value); duplicate keys allowed;
 * - timestamp in ms since the Unix epoch.
 */

export interface RecordHeader {
  key: string;
  value: Uint8Array | null;
}

/** A record as a producer hands it in (no offset yet). */
export interface ProducerRecord {
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: RecordHeader[];
  /** ms since epoch */
  timestamp: number;
}

/** A record as stored and fetched. */
export interface LogRecord extends ProducerRecord {
  offset: number;
}

/** Attribute bits of a record batch (Kafka's v2 layout: bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control). */
export const ATTR_COMPRESSION_MASK = 0x07;
export const ATTR_LOG_APPEND_TIME = 0x08;
export const ATTR_TRANSACTIONAL = 0x10;
export const ATTR_CONTROL = 0x20;

/** "No producer" markers, as in Kafka (producer id -1, epoch -1, sequence -1). */
export const NO_PRODUCER_ID = -1;
export const NO_PRODUCER_EPOCH = -1;
export const NO_SEQUENCE = -1;

/**
 * Header of one record batch. Every field later work needs is here from format v1 on,
 * so idempotence, transactions, replication and compression need no format migration.
 */
export interface BatchHeader {
  /** Offset of the first record. Assigned by the partition on append (0 in a produce request). */
  baseOffset: number;
  /** lastOffset - baseOffset. */
  lastOffsetDelta: number;
  /** Timestamp (ms) of the first record; record timestamps are stored as deltas from it. */
  baseTimestamp: number;
  /** Largest record timestamp in the batch (ms). */
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  /** Sequence of the first record; record i has baseSequence + i. */
  baseSequence: number;
  /** Leader epoch of the partition when the batch was appended. */
  partitionLeaderEpoch: number;
  /** See ATTR_* bits. */
  attributes: number;
  recordCount: number;
}
