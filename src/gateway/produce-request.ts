/**
 * JSON produce requests: validation, field encodings, partition choice and batch encoding.
 * Pure (no I/O): the produce routes call these, then one partition RPC per partition.
 */
import { encodeBatch, partitionForKey, recordSizeBytes, splitRecords, type ProducerRecord, type RecordHeader } from "../codec/index.ts";
import { checkProducerFields } from "../partition/core.ts";
import { encodeField, isEncoding, utf8 } from "../protocol/encoding.ts";
import { EdgelogError, toEdgelogError } from "../protocol/errors.ts";
import { MAX_HEADER_KEY_BYTES, MAX_RECORDS_PER_REQUEST, MAX_STORED_BATCH_BYTES } from "../protocol/limits.ts";
import type { Encoding } from "../protocol/types.ts";
import { DELIVER_AT_HEADER } from "../subscriptions/wire.ts";
import { asObject } from "./http.ts";

export interface ProducerFields {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
}

export interface ParsedProduceRequest {
  /** In request order. */
  records: ProducerRecord[];
  /** Explicit `partition` per record (undefined = let the server choose). */
  partitions: (number | undefined)[];
  /** Idempotent-producer fields (partition route only), or null. */
  producer: ProducerFields | null;
}

export interface ParseOptions {
  /** Broker time for records without a timestamp (ms). */
  nowMs: number;
  /** Whether producerId/producerEpoch/baseSequence are accepted (partition route only). */
  allowProducer: boolean;
}

/** The fields a JSON produce request, record and header may carry (JsonProduceRequest, JsonProduceRecord, JsonHeader). */
const REQUEST_FIELDS: ReadonlySet<string> = new Set(["records", "keyEncoding", "valueEncoding", "producerId", "producerEpoch", "baseSequence"]);
const RECORD_FIELDS: ReadonlySet<string> = new Set(["key", "value", "headers", "partition", "timestamp", "deliverAt", "deliverAfterMs"]);
const HEADER_FIELDS: ReadonlySet<string> = new Set(["key", "value"]);

/**
 * Rejects a field the protocol does not define: a misspelt `vlaue` would otherwise store a
 * null value and answer 200, silently losing the caller's data.
 * @throws EdgelogError INVALID_REQUEST, details.field = `${at}.${name}` (or `name` at the top level).
 */
function checkKnownFields(o: Record<string, unknown>, known: ReadonlySet<string>, at: string | null): void {
  for (const name of Object.keys(o)) {
    if (!known.has(name)) {
      const field = at === null ? name : `${at}.${name}`;
      throw new EdgelogError("INVALID_REQUEST", `Unknown field ${field}.`, { field });
    }
  }
}

function encodingField(body: Record<string, unknown>, name: string): Encoding {
  const v = body[name];
  if (v === undefined || v === null) return "string";
  if (!isEncoding(v)) throw new EdgelogError("INVALID_REQUEST", `${name} must be "string", "base64" or "json", got ${JSON.stringify(v)}.`, { field: name });
  return v;
}

/**
 * Validates a JSON produce body and turns it into records.
 * @throws EdgelogError INVALID_REQUEST (wrong type or unknown field; the message and
 *   details.field name the field), INVALID_ENCODING (malformed base64), INVALID_TIMESTAMP, EMPTY_BATCH,
 *   INVALID_PRODUCER_ID.
 */
export function parseProduceRequest(json: unknown, o: ParseOptions): ParsedProduceRequest {
  const body = asObject(json, "body");
  checkKnownFields(body, REQUEST_FIELDS, null);
  const keyEncoding = encodingField(body, "keyEncoding");
  const valueEncoding = encodingField(body, "valueEncoding");
  const list = body.records;
  if (!Array.isArray(list)) throw new EdgelogError("INVALID_REQUEST", "records must be an array.", { field: "records" });
  if (list.length === 0) throw new EdgelogError("EMPTY_BATCH");
  if (list.length > MAX_RECORDS_PER_REQUEST) {
    throw new EdgelogError("INVALID_REQUEST", `At most ${MAX_RECORDS_PER_REQUEST} records per request, got ${list.length}.`, { field: "records" });
  }

  const records: ProducerRecord[] = [];
  const partitions: (number | undefined)[] = [];
  for (let i = 0; i < list.length; i++) {
    const at = `records[${i}]`;
    const r = asObject(list[i], at);
    checkKnownFields(r, RECORD_FIELDS, at);
    const key = encodeField(r.key, keyEncoding, `${at}.key`);
    const value = encodeField(r.value, valueEncoding, `${at}.value`);
    const headers: RecordHeader[] = [];
    if (r.headers !== undefined && r.headers !== null) {
      if (!Array.isArray(r.headers)) throw new EdgelogError("INVALID_REQUEST", `${at}.headers must be an array.`, { field: `${at}.headers` });
      for (let j = 0; j < r.headers.length; j++) {
        const hAt = `${at}.headers[${j}]`;
        const h = asObject(r.headers[j], hAt);
        checkKnownFields(h, HEADER_FIELDS, hAt);
        if (typeof h.key !== "string") throw new EdgelogError("INVALID_REQUEST", `${hAt}.key must be a string.`, { field: `${hAt}.key` });
        if (utf8(h.key).length > MAX_HEADER_KEY_BYTES) {
          throw new EdgelogError("INVALID_REQUEST", `${hAt}.key is longer than ${MAX_HEADER_KEY_BYTES} bytes.`, { field: `${hAt}.key` });
        }
        headers.push({ key: h.key, value: encodeField(h.value, valueEncoding, `${hAt}.value`) });
      }
    }
    let timestamp = o.nowMs;
    if (r.timestamp !== undefined && r.timestamp !== null) {
      if (typeof r.timestamp !== "number") throw new EdgelogError("INVALID_REQUEST", `${at}.timestamp must be a number.`, { field: `${at}.timestamp` });
      if (!Number.isSafeInteger(r.timestamp) || r.timestamp < 0) {
        throw new EdgelogError("INVALID_TIMESTAMP", `${at}.timestamp must be a non-negative integer of ms, got ${r.timestamp}.`, { index: i, timestamp: r.timestamp });
      }
      timestamp = r.timestamp;
    }
    // Delayed delivery (Pulsar's deliverAt / deliverAfter, PIP-26): stored with the record as a
    // header, so it survives restarts; subscriptions never deliver it earlier.
    const deliverAt = deliverAtOf(r, at, o.nowMs);
    if (deliverAt !== null) headers.push({ key: DELIVER_AT_HEADER, value: utf8(String(deliverAt)) });
    let partition: number | undefined;
    if (r.partition !== undefined && r.partition !== null) {
      if (typeof r.partition !== "number" || !Number.isSafeInteger(r.partition) || r.partition < 0) {
        throw new EdgelogError("INVALID_REQUEST", `${at}.partition must be a non-negative integer.`, { field: `${at}.partition` });
      }
      partition = r.partition;
    }
    records.push({ key, value, headers, timestamp });
    partitions.push(partition);
  }

  let producer: ProducerFields | null = null;
  const hasProducer = body.producerId !== undefined || body.producerEpoch !== undefined || body.baseSequence !== undefined;
  if (hasProducer) {
    if (!o.allowProducer) {
      throw new EdgelogError("INVALID_REQUEST", "producerId/producerEpoch/baseSequence are accepted only on the partition route (sequences are per partition).", {
        field: "producerId",
      });
    }
    const bad = checkProducerFields(body.producerId, body.producerEpoch, body.baseSequence, records.length);
    if (bad !== null) throw toEdgelogError(bad);
    producer = { producerId: body.producerId as number, producerEpoch: body.producerEpoch as number, baseSequence: body.baseSequence as number };
  }
  return { records, partitions, producer };
}

/**
 * Checks every record against max.message.bytes before anything is sent anywhere.
 * @throws EdgelogError RECORD_TOO_LARGE with details {index, sizeBytes, maxMessageBytes}.
 */
export function checkRecordSizes(records: readonly ProducerRecord[], maxMessageBytes: number): void {
  for (let index = 0; index < records.length; index++) {
    const sizeBytes = recordSizeBytes(records[index]!);
    if (sizeBytes > maxMessageBytes) {
      throw new EdgelogError("RECORD_TOO_LARGE", `Record ${index} is ${sizeBytes} bytes, over max.message.bytes ${maxMessageBytes}.`, {
        index,
        sizeBytes,
        maxMessageBytes,
      });
    }
  }
}

/**
 * Partition of each record: explicit `partition` > murmur2 of a non-null key (Kafka's
 * default partitioner) > round-robin. All null-key records of one request go to the same
 * partition, `roundRobin()` (called at most once), "sticky per request" in the spirit of KIP-480.
 */
export function choosePartitions(records: readonly ProducerRecord[], explicit: readonly (number | undefined)[], numPartitions: number, roundRobin: () => number): number[] {
  let sticky: number | undefined;
  return records.map((r, i) => {
    const p = explicit[i];
    if (p !== undefined) return p;
    if (r.key !== null) return partitionForKey(r.key, numPartitions);
    sticky ??= roundRobin() % numPartitions;
    return sticky;
  });
}

/** Records of one partition, with their positions in the request. */
export interface PartitionGroup {
  partition: number;
  indexes: number[];
  records: ProducerRecord[];
}

/** Groups records by partition, keeping request order inside each group; groups ordered by first appearance. */
export function groupByPartition(records: readonly ProducerRecord[], partitions: readonly number[]): PartitionGroup[] {
  const groups = new Map<number, PartitionGroup>();
  records.forEach((r, i) => {
    const p = partitions[i]!;
    let g = groups.get(p);
    if (g === undefined) {
      g = { partition: p, indexes: [], records: [] };
      groups.set(p, g);
    }
    g.indexes.push(i);
    g.records.push(r);
  });
  return [...groups.values()];
}

/**
 * Encodes one partition's records as record batches of at most MAX_STORED_BATCH_BYTES
 * (each becomes one stored row), sequences continuing across batches.
 */
export function encodeForPartition(records: ProducerRecord[], producer: ProducerFields | null): Uint8Array[] {
  const out: Uint8Array[] = [];
  let sequence = producer?.baseSequence ?? 0;
  for (const group of splitRecords(records, MAX_STORED_BATCH_BYTES)) {
    out.push(encodeBatch(producer === null ? {} : { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: sequence }, group));
    sequence += group.length;
  }
  return out;
}

/**
 * A record's delayed delivery time (ms since epoch) from `deliverAt` (absolute) or
 * `deliverAfterMs` (relative to the gateway's clock at the request), or null.
 * @throws EdgelogError INVALID_REQUEST for both at once or a value that is not a non-negative integer.
 */
function deliverAtOf(r: Record<string, unknown>, at: string, nowMs: number): number | null {
  const abs = r.deliverAt;
  const rel = r.deliverAfterMs;
  if ((abs === undefined || abs === null) && (rel === undefined || rel === null)) return null;
  if (abs !== undefined && abs !== null && rel !== undefined && rel !== null) {
    throw new EdgelogError("INVALID_REQUEST", `${at}: give deliverAt or deliverAfterMs, not both.`, { field: `${at}.deliverAfterMs` });
  }
  const field = abs !== undefined && abs !== null ? "deliverAt" : "deliverAfterMs";
  const v = field === "deliverAt" ? abs : rel;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
    throw new EdgelogError("INVALID_REQUEST", `${at}.${field} must be a non-negative integer of ms.`, { field: `${at}.${field}` });
  return field === "deliverAt" ? v : nowMs + v;
}
