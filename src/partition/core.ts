/**
 * Pure core of a partition (no I/O, no Workers imports): the decisions the PartitionDO shell
 * makes around its SQLite log. The shell loads state, calls these, persists, replies
 * (shared/STYLE.md "pure cores, thin shells").
 *
 * - append validation: batch shape, record sizes against max.message.bytes, timestamps;
 * - append planning: offsets, rewritten headers and the stored rows of an append
 *   ({@link scanAppend} then {@link planAppend});
 * - invariants of the log's bounds ({@link checkLogInvariants});
 * - idempotent producers (KIP-98): duplicate / fenced / out-of-order decisions and the
 *   "last 5 requests" window;
 * - fetch: offset range check and which stored batches a fetch returns (KIP-74);
 * - ListOffsets by timestamp over the running-max-timestamp index.
 */
import {
  ATTR_LOG_APPEND_TIME,
  CodecError,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  decodeBatch,
  encodeBatch,
  rewriteBatchHeader,
  scanBatch,
  splitRecords,
  type BatchHeader,
  type BatchScan,
  type LogRecord,
  type ProducerRecord,
} from "../codec/index.ts";
import { errorResult, type ErrorResult } from "../protocol/errors.ts";
import { MAX_RECORDS_PER_REQUEST, MAX_STORED_BATCH_BYTES } from "../protocol/limits.ts";

// ---------------------------------------------------------------------------------------------
// Bounds
// ---------------------------------------------------------------------------------------------

/** Offsets of a partition's log; stored records are [logStartOffset, logEndOffset). */
export interface LogBounds {
  logStartOffset: number;
  logEndOffset: number;
  /** Equals logEndOffset while a partition has a single replica (acks are local commits). */
  highWatermark: number;
}

/**
 * The invariants of a log's bounds (TIGER_STYLE: asserted after reading and before writing):
 * integers, logStartOffset <= highWatermark <= logEndOffset, storedBytes >= 0, and the
 * running max timestamp never goes down (`previousRunningMaxTimestamp`, -1 for none).
 * Scalars only, no object: it runs before every commit.
 * @returns a description of the first violated invariant, or undefined. A violation is a bug.
 */
export function checkLogInvariants(
  logStartOffset: number,
  highWatermark: number,
  logEndOffset: number,
  storedBytes: number,
  runningMaxTimestamp: number,
  previousRunningMaxTimestamp: number,
): string | undefined {
  if (!Number.isSafeInteger(logStartOffset) || !Number.isSafeInteger(highWatermark) || !Number.isSafeInteger(logEndOffset) || !Number.isSafeInteger(storedBytes)) {
    return `log bounds must be integers: logStartOffset ${logStartOffset}, highWatermark ${highWatermark}, logEndOffset ${logEndOffset}, storedBytes ${storedBytes}`;
  }
  if (!(logStartOffset >= 0 && logStartOffset <= highWatermark && highWatermark <= logEndOffset)) {
    return `expected 0 <= logStartOffset ${logStartOffset} <= highWatermark ${highWatermark} <= logEndOffset ${logEndOffset}`;
  }
  if (storedBytes < 0) return `storedBytes ${storedBytes} < 0`;
  if (runningMaxTimestamp < previousRunningMaxTimestamp) return `running max timestamp went down from ${previousRunningMaxTimestamp} to ${runningMaxTimestamp}`;
  return undefined;
}

/**
 * A fetch may start anywhere in [logStartOffset, logEndOffset] (logEndOffset = "wait for the
 * next record").
 * @returns OFFSET_OUT_OF_RANGE with the bounds in details, or null when the offset is valid.
 */
export function checkFetchOffset(offset: number, b: LogBounds): ErrorResult | null {
  if (offset >= b.logStartOffset && offset <= b.logEndOffset) return null;
  return errorResult("OFFSET_OUT_OF_RANGE", `Offset ${offset} is outside [${b.logStartOffset}, ${b.logEndOffset}].`, {
    offset,
    logStartOffset: b.logStartOffset,
    logEndOffset: b.logEndOffset,
    highWatermark: b.highWatermark,
  });
}

// ---------------------------------------------------------------------------------------------
// Append validation
// ---------------------------------------------------------------------------------------------

/**
 * Attribute bits a producer may set: none. The partition owns the timestamp type;
 * transactions and control batches are not supported yet (compression is refused by the
 * codec); and bits without a meaning today are refused too, so that a later format use of
 * them never meets old stored batches that set them by accident (the header is not
 * checksummed: see src/codec/batch.ts).
 */
const PRODUCER_FORBIDDEN_ATTRIBUTES = 0xffff;

/**
 * What {@link validateAppend} needs of one produced batch: its header and, per record, the
 * timestamp and recordSizeBytes. `scanBatch` (src/codec) yields exactly this without
 * materialising the records.
 */
export interface DecodedProduceBatch {
  header: BatchHeader;
  /** Per record, in order: timestamp in ms. */
  timestamps: readonly number[];
  /** Per record, in order: recordSizeBytes (compared with max.message.bytes). */
  recordBytes: readonly number[];
}

/** Producer fields of a whole produce request (one or more batches with contiguous sequences). */
export interface ProducerAppend {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

export interface ValidatedAppend {
  /** Producer fields, or null for a non-idempotent request (producer id -1). */
  producer: ProducerAppend | null;
  recordCount: number;
  /** Largest record timestamp of the request (CreateTime). */
  maxTimestamp: number;
}

const INT32_MAX = 0x7fffffff;
const INT16_MAX = 0x7fff;

/**
 * Validates a produce request (its batches in order) before anything is written.
 * Checks, in order: non-empty, batch shape (dense offsets, no forbidden attribute bits),
 * producer fields (all batches the same producer id/epoch, sequences contiguous),
 * timestamps (non-negative integers), record sizes (recordSizeBytes <= maxMessageBytes),
 * at most MAX_RECORDS_PER_REQUEST records.
 * @returns the request summary, or the first error (EMPTY_BATCH, INVALID_BATCH, INVALID_REQUEST
 *   with details {field: "recordCount", recordCount, maxRecords},
 *   INVALID_PRODUCER_ID, INVALID_TIMESTAMP, RECORD_TOO_LARGE with details
 *   {index, sizeBytes, maxMessageBytes}; index counts records across the whole request).
 */
export function validateAppend(batches: readonly DecodedProduceBatch[], maxMessageBytes: number): ValidatedAppend | ErrorResult {
  let recordCount = 0;
  let maxTimestamp = -1;
  const first = batches[0]?.header;
  if (first === undefined) return errorResult("EMPTY_BATCH");
  for (const { header: h, timestamps, recordBytes } of batches) {
    if (h.recordCount === 0 || timestamps.length === 0) return errorResult("EMPTY_BATCH");
    if (h.lastOffsetDelta !== h.recordCount - 1) {
      return errorResult("INVALID_BATCH", `A produced batch must have dense offsets: lastOffsetDelta ${h.lastOffsetDelta} with ${h.recordCount} records.`);
    }
    if ((h.attributes & PRODUCER_FORBIDDEN_ATTRIBUTES) !== 0) {
      return errorResult(
        "INVALID_BATCH",
        `Batch attributes ${h.attributes} set bits a producer may not set (timestamp type, transactional, control, or unassigned bits): produced batches carry attributes 0.`,
      );
    }
    if (h.producerId !== first.producerId || h.producerEpoch !== first.producerEpoch) {
      return errorResult("INVALID_PRODUCER_ID", "All batches of one request must carry the same producer id and epoch.");
    }
    if (h.producerId !== NO_PRODUCER_ID && h.baseSequence !== first.baseSequence + recordCount) {
      return errorResult("INVALID_PRODUCER_ID", "The batches of one request must have contiguous sequence numbers.");
    }
    for (let i = 0; i < timestamps.length; i++) {
      const index = recordCount++;
      const timestamp = timestamps[i]!;
      if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
        return errorResult("INVALID_TIMESTAMP", `Record ${index} has timestamp ${timestamp}: a non-negative integer of ms is required.`, { index, timestamp });
      }
      if (timestamp > maxTimestamp) maxTimestamp = timestamp;
      const sizeBytes = recordBytes[i]!;
      if (sizeBytes > maxMessageBytes) {
        return errorResult("RECORD_TOO_LARGE", `Record ${index} is ${sizeBytes} bytes, over max.message.bytes ${maxMessageBytes}.`, { index, sizeBytes, maxMessageBytes });
      }
    }
  }
  // Checked once the records were scanned, so a header whose recordCount disagrees with its
  // records stays INVALID_BATCH. The JSON path checks the same bound before encoding.
  if (recordCount > MAX_RECORDS_PER_REQUEST) {
    return errorResult("INVALID_REQUEST", `At most ${MAX_RECORDS_PER_REQUEST} records per request, got ${recordCount}.`, {
      field: "recordCount",
      recordCount,
      maxRecords: MAX_RECORDS_PER_REQUEST,
    });
  }
  let producer: ProducerAppend | null = null;
  if (first.producerId !== NO_PRODUCER_ID) {
    const bad = checkProducerFields(first.producerId, first.producerEpoch, first.baseSequence, recordCount);
    if (bad !== null) return bad;
    producer = { producerId: first.producerId, producerEpoch: first.producerEpoch, baseSequence: first.baseSequence, recordCount };
  }
  return { producer, recordCount, maxTimestamp };
}

/**
 * Range checks of idempotent-producer fields (shared with the gateway's JSON validation).
 * Sequences do not wrap (Kafka wraps at 2^31-1): a producer that gets there re-initialises.
 * @returns INVALID_PRODUCER_ID naming the field, or null.
 */
export function checkProducerFields(producerId: unknown, producerEpoch: unknown, baseSequence: unknown, recordCount: number): ErrorResult | null {
  if (typeof producerId !== "number" || !Number.isSafeInteger(producerId) || producerId < 0) {
    return errorResult("INVALID_PRODUCER_ID", "producerId must be a non-negative integer.", { field: "producerId" });
  }
  if (typeof producerEpoch !== "number" || !Number.isInteger(producerEpoch) || producerEpoch < 0 || producerEpoch > INT16_MAX) {
    return errorResult("INVALID_PRODUCER_ID", `producerEpoch must be an integer in [0, ${INT16_MAX}].`, { field: "producerEpoch" });
  }
  if (typeof baseSequence !== "number" || !Number.isInteger(baseSequence) || baseSequence < 0 || baseSequence + recordCount - 1 > INT32_MAX) {
    return errorResult("INVALID_PRODUCER_ID", `baseSequence must be an integer >= 0 with baseSequence + records - 1 <= ${INT32_MAX}.`, { field: "baseSequence" });
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Idempotent producers (KIP-98)
// ---------------------------------------------------------------------------------------------

/** How many recent requests per producer a partition remembers for duplicate detection (Kafka: 5 in-flight). */
export const PRODUCER_BATCHES_KEPT = 5;

/** One remembered request of a producer. */
export interface ProducerBatchEntry {
  producerEpoch: number;
  baseSequence: number;
  lastSequence: number;
  firstOffset: number;
  lastOffset: number;
}

/** What a partition keeps per producer id. */
export interface ProducerState {
  producerEpoch: number;
  lastSequence: number;
  /** Oldest first, at most {@link PRODUCER_BATCHES_KEPT}. */
  batches: ProducerBatchEntry[];
}

export type SequenceDecision = { kind: "append" } | { kind: "duplicate"; entry: ProducerBatchEntry } | { kind: "error"; error: ErrorResult };

/**
 * Decides what to do with an idempotent request (docs/PROTOCOL.md "Idempotent producers"):
 * - no state yet: the request must start at sequence 0;
 * - lower epoch: INVALID_PRODUCER_EPOCH (fenced);
 * - higher epoch: must start at sequence 0;
 * - same epoch: a kept request with the same (epoch, base sequence, record count) is a
 *   duplicate; otherwise base sequence must be last sequence + 1.
 * Errors: OUT_OF_ORDER_SEQUENCE_NUMBER with details {expectedSequence}.
 */
export function checkSequence(state: ProducerState | undefined, req: ProducerAppend): SequenceDecision {
  const lastSequence = req.baseSequence + req.recordCount - 1;
  const outOfOrder = (expectedSequence: number): SequenceDecision => ({
    kind: "error",
    error: errorResult("OUT_OF_ORDER_SEQUENCE_NUMBER", `Expected sequence ${expectedSequence} for producer ${req.producerId}, got ${req.baseSequence}.`, {
      expectedSequence,
      baseSequence: req.baseSequence,
    }),
  });
  if (state === undefined || req.producerEpoch > state.producerEpoch) {
    return req.baseSequence === 0 ? { kind: "append" } : outOfOrder(0);
  }
  if (req.producerEpoch < state.producerEpoch) {
    return {
      kind: "error",
      error: errorResult("INVALID_PRODUCER_EPOCH", `Producer ${req.producerId} epoch ${req.producerEpoch} is fenced by epoch ${state.producerEpoch}.`, {
        producerEpoch: req.producerEpoch,
        currentEpoch: state.producerEpoch,
      }),
    };
  }
  for (const entry of state.batches) {
    if (entry.producerEpoch === req.producerEpoch && entry.baseSequence === req.baseSequence && entry.lastSequence === lastSequence) {
      return { kind: "duplicate", entry };
    }
  }
  return req.baseSequence === state.lastSequence + 1 ? { kind: "append" } : outOfOrder(state.lastSequence + 1);
}

/** The producer state after appending `req` at [firstOffset, lastOffset]. A new epoch forgets the old epoch's requests. */
export function applyProducerAppend(state: ProducerState | undefined, req: ProducerAppend, firstOffset: number, lastOffset: number): ProducerState {
  const lastSequence = req.baseSequence + req.recordCount - 1;
  const kept = state !== undefined && state.producerEpoch === req.producerEpoch ? state.batches : [];
  const entry: ProducerBatchEntry = { producerEpoch: req.producerEpoch, baseSequence: req.baseSequence, lastSequence, firstOffset, lastOffset };
  return {
    producerEpoch: req.producerEpoch,
    lastSequence,
    batches: [...kept, entry].slice(-PRODUCER_BATCHES_KEPT),
  };
}

// ---------------------------------------------------------------------------------------------
// Append planning
// ---------------------------------------------------------------------------------------------

/**
 * Per-record timestamps a produce answer reports: under LogAppendTime the broker time for
 * all, else each record's own (CreateTime).
 */
export function appendTimestamps(records: readonly ProducerRecord[], logAppendTime: number | null): number[] {
  return records.map((r) => logAppendTime ?? r.timestamp);
}

/** Running maximum timestamp after a batch: monotone over offsets, so it can be indexed. */
export function nextRunningMaxTimestamp(previous: number, batchMaxTimestamp: number): number {
  return Math.max(previous, batchMaxTimestamp);
}

/** One produced batch as scanned (framing, records, timestamps, sizes) with its bytes. */
export type ScannedBatch = BatchScan & { bytes: Uint8Array };

/** A produce request scanned and validated: nothing written, nothing rewritten yet. */
export interface ScannedAppend {
  scans: ScannedBatch[];
  validated: ValidatedAppend;
}

/**
 * Step 1 of an append: scans every batch once (framing, record structure, timestamps and
 * sizes; the CRC-32C only when `verifyCrc`; no record objects: the bytes are stored as they
 * are) and validates the request ({@link validateAppend}) before anything is written.
 * @returns the scans and the request summary, or INVALID_BATCH (a CodecError, or bytes after a
 *   batch) or any error of validateAppend.
 */
export function scanAppend(batches: readonly Uint8Array[], verifyCrc: boolean, maxMessageBytes: number): ScannedAppend | ErrorResult {
  const scans: ScannedBatch[] = [];
  for (const bytes of batches) {
    try {
      const d = scanBatch(bytes, 0, { verifyCrc });
      if (d.totalBytes !== bytes.length) return errorResult("INVALID_BATCH", `${bytes.length - d.totalBytes} bytes after the record batch.`);
      scans.push({ ...d, bytes });
    } catch (err) {
      if (err instanceof CodecError) return errorResult("INVALID_BATCH", err.message);
      throw err;
    }
  }
  const validated = validateAppend(scans, maxMessageBytes);
  if ("code" in validated) return validated;
  return { scans, validated };
}

/** What {@link planAppend} needs of the log: its end and its last running max timestamp. */
export interface LogTail {
  logEndOffset: number;
  /** Running max timestamp of the last stored batch; -1 for an empty log. */
  runningMaxTimestamp: number;
  leaderEpoch: number;
}

/** A stored batch row to insert: the header as rewritten, and the bytes (rewritten in place). */
export interface PlannedRow {
  header: BatchHeader;
  maxTimestamp: number;
  runningMaxTimestamp: number;
  bytes: Uint8Array;
}

/** The rows and the log's new tail after an append (step 3); the log room writes exactly this. */
export interface AppendPlan {
  rows: PlannedRow[];
  /** Offset of the first record; equals the log end offset before the append. */
  baseOffset: number;
  lastOffset: number;
  /** The log end offset after the append (lastOffset + 1). */
  nextOffset: number;
  /** Running max timestamp of the last row. */
  runningMaxTimestamp: number;
  /** Sum of the stored rows' bytes. */
  addedBytes: number;
  /** Per record, in request order: the stored timestamp. */
  timestamps: readonly number[];
  /** The broker time stamped under LogAppendTime (ms), else null. */
  logAppendTime: number | null;
}

/**
 * Step 3 of an append: assigns offsets from the log's end, rewrites each header in place
 * (baseOffset, leader epoch, attributes, maxTimestamp; under LogAppendTime the broker time as
 * baseTimestamp too) and computes the running max timestamp of each row. A batch over
 * MAX_STORED_BATCH_BYTES (a SQLite row is limited to 2 MB) is split into re-encoded pieces.
 * No I/O and no clock: `logAppendTime` is read by the caller (null under CreateTime).
 * Mutates the scanned bytes (header fields only).
 */
export function planAppend(scanned: ScannedAppend, tail: LogTail, logAppendTime: number | null): AppendPlan {
  const { scans, validated } = scanned;
  const rows: PlannedRow[] = [];
  const baseOffset = tail.logEndOffset;
  let nextOffset = baseOffset;
  let runningMax = tail.runningMaxTimestamp;
  let addedBytes = 0;
  const leaderEpoch = tail.leaderEpoch;
  for (const d of scans) {
    for (const piece of storedPieces(d)) {
      const maxTimestamp = logAppendTime ?? piece.maxTimestamp;
      const attributes = piece.header.attributes | (logAppendTime !== null ? ATTR_LOG_APPEND_TIME : 0);
      rewriteBatchHeader(piece.bytes, {
        baseOffset: nextOffset,
        partitionLeaderEpoch: leaderEpoch,
        attributes,
        maxTimestamp,
        ...(logAppendTime !== null ? { baseTimestamp: logAppendTime } : {}),
      });
      runningMax = nextRunningMaxTimestamp(runningMax, maxTimestamp);
      rows.push({
        header: { ...piece.header, baseOffset: nextOffset, attributes, partitionLeaderEpoch: leaderEpoch, maxTimestamp },
        maxTimestamp,
        runningMaxTimestamp: runningMax,
        bytes: piece.bytes,
      });
      nextOffset += piece.header.recordCount;
      addedBytes += piece.bytes.length;
    }
  }
  const timestamps = logAppendTime !== null ? new Array<number>(validated.recordCount).fill(logAppendTime) : scans.length === 1 ? scans[0]!.timestamps : scans.flatMap((d) => d.timestamps);
  return { rows, baseOffset, lastOffset: nextOffset - 1, nextOffset, runningMaxTimestamp: runningMax, addedBytes, timestamps, logAppendTime };
}

/**
 * The batches to store for one produced batch: itself when it fits a row (fast path: the
 * bytes are stored as received, header rewritten in place), else its records re-encoded in
 * groups of at most MAX_STORED_BATCH_BYTES (SQLite rows are limited to 2 MB).
 */
function* storedPieces(d: ScannedBatch): Generator<{ header: BatchHeader; bytes: Uint8Array; maxTimestamp: number }> {
  if (d.bytes.length <= MAX_STORED_BATCH_BYTES) {
    yield { header: d.header, bytes: d.bytes, maxTimestamp: maxOf(d.timestamps) };
    return;
  }
  // Rare (a client batch over 1 MiB): decode the records to re-encode them. Already verified.
  const { records } = decodeBatch(d.bytes, 0, { verifyCrc: false });
  let sequence = d.header.baseSequence;
  for (const group of splitRecords(records, MAX_STORED_BATCH_BYTES)) {
    const header: Partial<BatchHeader> = {
      producerId: d.header.producerId,
      producerEpoch: d.header.producerEpoch,
      baseSequence: d.header.producerId === NO_PRODUCER_ID ? NO_SEQUENCE : sequence,
      attributes: d.header.attributes,
    };
    const bytes = encodeBatch(header, group);
    sequence += group.length;
    yield {
      header: { ...d.header, ...header, recordCount: group.length, lastOffsetDelta: group.length - 1, baseTimestamp: group[0]?.timestamp ?? -1 } as BatchHeader,
      bytes,
      maxTimestamp: maxOf(group.map((r) => r.timestamp)),
    };
  }
}

function maxOf(timestamps: readonly number[]): number {
  let max = -1;
  for (const t of timestamps) if (t > max) max = t;
  return max;
}

// ---------------------------------------------------------------------------------------------
// Fetch
// ---------------------------------------------------------------------------------------------

/** What the fetch planner needs of a stored batch row. */
export interface StoredBatchRef {
  baseOffset: number;
  lastOffset: number;
  sizeBytes: number;
}

export interface FetchLimits {
  offset: number;
  /** Stop adding batches once this many records at or after `offset` are covered. */
  maxRecords: number;
  /** Stop before a batch that would take the total over this (the first batch always goes: KIP-74). */
  maxBytes: number;
}

export interface FetchPlan<T> {
  batches: T[];
  /** Sum of sizeBytes of `batches`. */
  bytes: number;
  /** Records at or after `offset` in `batches`. */
  records: number;
  /** Last offset of the last batch + 1, or `offset` when no batch qualifies. */
  nextOffset: number;
  /**
   * True when the plan stopped at a limit (more stored batches may follow), false when it read
   * every row it was given: what src/lifecycle/reads.ts `nextFetchOffset` needs to skip a gap.
   */
  more: boolean;
}

/**
 * Chooses which stored batches (in offset order, starting with the one that holds `offset`)
 * a fetch returns. Reads `rows` lazily and stops as soon as a limit is reached, so the
 * caller can pass a database cursor.
 */
export function planFetch<T extends StoredBatchRef>(rows: Iterable<T>, limits: FetchLimits): FetchPlan<T> {
  const batches: T[] = [];
  let bytes = 0;
  let records = 0;
  let nextOffset = limits.offset;
  let more = false;
  for (const row of rows) {
    if (row.lastOffset < limits.offset) continue;
    if (batches.length > 0 && (bytes + row.sizeBytes > limits.maxBytes || records >= limits.maxRecords)) {
      more = true;
      break;
    }
    batches.push(row);
    bytes += row.sizeBytes;
    records += row.lastOffset - Math.max(row.baseOffset, limits.offset) + 1;
    nextOffset = row.lastOffset + 1;
    if (records >= limits.maxRecords || bytes >= limits.maxBytes) {
      more = true;
      break;
    }
  }
  return { batches, bytes, records, nextOffset, more };
}

// ---------------------------------------------------------------------------------------------
// ListOffsets by timestamp
// ---------------------------------------------------------------------------------------------

export interface OffsetAndTimestamp {
  offset: number;
  timestamp: number;
}

/**
 * The first record of `records` (one batch, offset order) with offset >= minOffset and
 * timestamp >= `timestamp`, or null. With the running-max index the batch searched is the
 * first one whose running max reaches `timestamp`, so the first match here is the first in
 * the whole log even when timestamps are not monotonic.
 */
export function firstAtOrAfterTimestamp(records: readonly LogRecord[], timestamp: number, minOffset: number): OffsetAndTimestamp | null {
  for (const r of records) {
    if (r.offset >= minOffset && r.timestamp >= timestamp) return { offset: r.offset, timestamp: r.timestamp };
  }
  return null;
}

export type ListOffsetsSpec = { spec: "earliest" } | { spec: "latest" } | { spec: "max_timestamp" } | { spec: "timestamp"; timestamp: number };
