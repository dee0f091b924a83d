/**
 * Produce (0, v0-v8; message sets of magic 0/1 are refused)  and Fetch (1, v4-v11): the data path. Record sets stay views into the
 * request frame (produce) or buffers built by records.ts (fetch); nothing here copies records.
 * Field order per Kafka's ProduceRequest/ProduceResponse/FetchRequest/FetchResponse schemas.
 * Pure module.
 */
import type { Reader, Writer } from "../wire.ts";

// ---- Produce ----

export interface ProduceRequest {
  transactionalId: string | null;
  /** 0, 1 or -1 (all). */
  acks: number;
  timeoutMs: number;
  topics: { name: string; partitions: { index: number; records: Uint8Array | null }[] }[];
}

export function decodeProduceRequest(r: Reader, version: number, flex: boolean): ProduceRequest {
  const transactionalId = version >= 3 ? r.nullableString(flex) : null;
  const acks = r.int16();
  const timeoutMs = r.int32();
  const topics = r.array(flex, (r) => {
    const name = r.string(flex);
    const partitions = r.array(flex, (r) => {
      const index = r.int32();
      const records = r.nullableBytes(flex);
      if (flex) r.taggedFields();
      return { index, records };
    });
    if (flex) r.taggedFields();
    return { name, partitions };
  });
  if (flex) r.taggedFields();
  return { transactionalId, acks, timeoutMs, topics };
}

export interface ProducePartitionResponse {
  index: number;
  errorCode: number;
  baseOffset: number;
  /** -1 under CreateTime. */
  logAppendTimeMs: number;
  logStartOffset: number;
  errorMessage: string | null;
}

export interface ProduceResponse {
  topics: { name: string; partitions: ProducePartitionResponse[] }[];
  throttleTimeMs: number;
}

export function encodeProduceResponse(w: Writer, version: number, flex: boolean, res: ProduceResponse): void {
  w.array(res.topics, flex, (w, t) => {
    w.string(t.name, flex);
    w.array(t.partitions, flex, (w, p) => {
      w.int32(p.index).int16(p.errorCode).int64(p.baseOffset);
      if (version >= 2) w.int64(p.logAppendTimeMs);
      if (version >= 5) w.int64(p.logStartOffset);
      if (version >= 8) {
        w.array([] as number[], flex, () => {}); // record_errors
        w.nullableString(p.errorMessage, flex);
      }
      if (flex) w.taggedFields();
    });
    if (flex) w.taggedFields();
  });
  if (version >= 1) w.int32(res.throttleTimeMs);
  if (flex) w.taggedFields();
}

// ---- Fetch ----

export interface FetchPartitionRequest {
  partition: number;
  fetchOffset: number;
  logStartOffset: number;
  partitionMaxBytes: number;
}

export interface FetchRequest {
  maxWaitMs: number;
  minBytes: number;
  maxBytes: number;
  isolationLevel: number;
  sessionId: number;
  sessionEpoch: number;
  topics: { topic: string; partitions: FetchPartitionRequest[] }[];
}

/** Kafka's default response max_bytes for versions that have none (v0-v2). */
const DEFAULT_FETCH_MAX_BYTES = 0x7fffffff;

export function decodeFetchRequest(r: Reader, version: number, flex: boolean): FetchRequest {
  r.int32(); // replica_id
  const maxWaitMs = r.int32();
  const minBytes = r.int32();
  const maxBytes = version >= 3 ? r.int32() : DEFAULT_FETCH_MAX_BYTES;
  const isolationLevel = version >= 4 ? r.int8() : 0;
  const sessionId = version >= 7 ? r.int32() : 0;
  const sessionEpoch = version >= 7 ? r.int32() : -1;
  const topics = r.array(flex, (r) => {
    const topic = r.string(flex);
    const partitions = r.array(flex, (r) => {
      const partition = r.int32();
      if (version >= 9) r.int32(); // current_leader_epoch
      const fetchOffset = r.int64();
      if (version >= 12) r.int32(); // last_fetched_epoch
      const logStartOffset = version >= 5 ? r.int64() : -1;
      const partitionMaxBytes = r.int32();
      if (flex) r.taggedFields();
      return { partition, fetchOffset, logStartOffset, partitionMaxBytes };
    });
    if (flex) r.taggedFields();
    return { topic, partitions };
  });
  if (version >= 7) {
    r.array(flex, (r) => {
      r.string(flex);
      r.array(flex, (r) => r.int32());
      if (flex) r.taggedFields();
    }); // forgotten_topics_data: no sessions, nothing to forget
  }
  if (version >= 11) r.string(flex); // rack_id
  if (flex) r.taggedFields();
  return { maxWaitMs, minBytes, maxBytes, isolationLevel, sessionId, sessionEpoch, topics };
}

const EMPTY_RECORDS = new Uint8Array(0);

export interface FetchPartitionResponse {
  partitionIndex: number;
  errorCode: number;
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  /** The partition's Kafka record batches; null (an error) is written as empty records. */
  records: Uint8Array | null;
}

export interface FetchResponse {
  throttleTimeMs: number;
  errorCode: number;
  sessionId: number;
  topics: { topic: string; partitions: FetchPartitionResponse[] }[];
}

export function encodeFetchResponse(w: Writer, version: number, flex: boolean, res: FetchResponse): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  if (version >= 7) w.int16(res.errorCode).int32(res.sessionId);
  w.array(res.topics, flex, (w, t) => {
    w.string(t.topic, flex);
    w.array(t.partitions, flex, (w, p) => {
      w.int32(p.partitionIndex).int16(p.errorCode).int64(p.highWatermark);
      if (version >= 4) w.int64(p.lastStableOffset);
      if (version >= 5) w.int64(p.logStartOffset);
      if (version >= 4) w.array([] as number[], flex, () => {}); // aborted_transactions: none (no transactions)
      if (version >= 11) w.int32(-1); // preferred_read_replica
      // Null records are sent as empty, as Kafka brokers answer an errored partition:
      // librdkafka refuses a record set size of -1 as a parse error and retries forever.
      w.nullableBytes(p.records ?? EMPTY_RECORDS, flex);
      if (flex) w.taggedFields();
    });
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}
