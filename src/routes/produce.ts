/**
 * Produce:
 * - `POST /v1/topics/{topic}/partitions/{p}/records`: JSON or binary (one record batch), one
 *   partition, idempotent producers allowed;
 * - `POST /v1/topics/{topic}/records`: JSON, partitioned by the server.
 *
 * The whole request is validated (shape, encodings, record sizes against the topic's
 * max.message.bytes, partition numbers) before any partition is called; then one append RPC
 * per partition, in parallel; results combined in request order.
 */
import type { Hono } from "hono";
import { CodecError, verifyBatchCrc } from "../codec/index.ts";
import type { Env } from "../env.ts";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { jsonBody, mediaType, partitionParam, topicRoute } from "../gateway/http.ts";
import {
  checkRecordSizes,
  choosePartitions,
  encodeForPartition,
  groupByPartition,
  parseProduceRequest,
  type PartitionGroup,
  type ProducerFields,
} from "../gateway/produce-request.ts";
import { checkPartition, partitionError, withTopic } from "../gateway/topics.ts";
import { partitionStub, type AppendOk } from "../partition/rpc.ts";
import { EdgelogError, toEdgelogError, type ErrorResult } from "../protocol/errors.ts";
import { BATCH_MEDIA_TYPE, type ProduceRecordResult, type ProduceResponse, type TopicSummary } from "../protocol/types.ts";

/**
 * Round-robin position per topic for null-key records, local to this isolate (so the spread
 * is even per isolate, not globally: good enough for load spreading, and free).
 */
const roundRobin = new Map<string, number>();

function nextRoundRobin(topic: string): number {
  const n = roundRobin.get(topic) ?? 0;
  roundRobin.set(topic, (n + 1) % 0x40000000);
  return n;
}

export function produceRoutes(app: Hono<AppEnv>): void {
  // The partition route first: see topicRoute on the ambiguous `a/partitions/0/records`.
  topicRoute(app, "POST", "/partitions/:partition/records", producePartition);
  topicRoute(app, "POST", "/records", produceTopic);
}

async function produceTopic(c: AppContext, name: string): Promise<Response> {
  const req = parseProduceRequest(jsonBody(c), { nowMs: Date.now(), allowProducer: false });
  const answer = await withTopic(c.env, name, async (topic) => {
    checkRecordSizes(req.records, topic.configs["max.message.bytes"]);
    for (const p of req.partitions) if (p !== undefined) checkPartition(topic, p);
    const partitions = choosePartitions(req.records, req.partitions, topic.partitions, () => nextRoundRobin(topic.name));
    return appendGroups(c.env, topic, groupByPartition(req.records, partitions), null, req.records.length);
  });
  return c.json(answer);
}

async function producePartition(c: AppContext, name: string): Promise<Response> {
  const partition = partitionParam(c);
  if (mediaType(c) === BATCH_MEDIA_TYPE) return produceBinary(c, name, partition);
  const req = parseProduceRequest(jsonBody(c), { nowMs: Date.now(), allowProducer: true });
  req.partitions.forEach((p, i) => {
    if (p !== undefined && p !== partition) {
      throw new EdgelogError("INVALID_REQUEST", `records[${i}].partition is ${p} on the route of partition ${partition}.`, { field: `records[${i}].partition` });
    }
  });
  const answer = await withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    checkRecordSizes(req.records, topic.configs["max.message.bytes"]);
    const group: PartitionGroup = { partition, indexes: req.records.map((_, i) => i), records: req.records };
    return appendGroups(c.env, topic, [group], req.producer, req.records.length);
  });
  return c.json(answer);
}

/**
 * Binary produce: the body is one record batch. The gateway checks its framing and CRC-32C
 * (per-byte work that scales out with gateways instead of queueing on the partition's single
 * thread); the partition checks everything else and stores it.
 */
async function produceBinary(c: AppContext, name: string, partition: number): Promise<Response> {
  const bytes = c.get("body");
  const answer = await withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    try {
      verifyBatchCrc(bytes);
    } catch (err) {
      if (err instanceof CodecError) throw new EdgelogError("INVALID_BATCH", err.message);
      throw err;
    }
    const r = await partitionStub(c.env.PARTITION, topic.topicId, partition).append({ batches: [bytes], crcVerified: true });
    if (!r.ok) throw partitionError(r);
    const records: ProduceRecordResult[] = r.timestamps.map((timestamp, k) => ({ partition, offset: r.baseOffset + k, timestamp }));
    return produceResponse(topic, records, r.duplicate);
  });
  return c.json(answer);
}

/**
 * One append RPC per group, in parallel. Answers in request order.
 * If every partition answered UNKNOWN_TOPIC_OR_PARTITION nothing was written, so the error
 * stays retriable with fresh metadata (withTopic); otherwise the first failure is the answer.
 */
async function appendGroups(env: Env, topic: TopicSummary, groups: PartitionGroup[], producer: ProducerFields | null, total: number): Promise<ProduceResponse> {
  const results = await Promise.all(
    // Batches encoded here a moment ago: the partition need not recompute their CRC.
    groups.map((g) => partitionStub(env.PARTITION, topic.topicId, g.partition).append({ batches: encodeForPartition(g.records, producer), crcVerified: true })),
  );
  const failures: { group: PartitionGroup; error: ErrorResult }[] = [];
  results.forEach((r, i) => {
    if (!r.ok) failures.push({ group: groups[i]!, error: r });
  });
  const firstFailure = failures[0];
  if (firstFailure !== undefined) {
    if (failures.length === results.length && failures.every((f) => f.error.code === "UNKNOWN_TOPIC_OR_PARTITION")) throw partitionError(firstFailure.error);
    throw toEdgelogError(inRequestTerms(firstFailure.group, firstFailure.error));
  }
  const records = new Array<ProduceRecordResult>(total);
  let duplicate = false;
  results.forEach((r, i) => {
    const ok = r as AppendOk;
    const g = groups[i]!;
    duplicate ||= ok.duplicate;
    g.indexes.forEach((index, k) => {
      records[index] = { partition: g.partition, offset: ok.baseOffset + k, timestamp: ok.timestamps[k]! };
    });
  });
  return produceResponse(topic, records, duplicate);
}

/**
 * A partition numbers records within its own group (e.g. RECORD_TOO_LARGE when the topic's
 * max.message.bytes shrank after this gateway validated): report the request's index in
 * details.index instead (the message keeps the partition's wording).
 */
function inRequestTerms(group: PartitionGroup, error: ErrorResult): ErrorResult {
  const index = error.details?.index;
  if (typeof index !== "number") return error;
  return { ...error, details: { ...error.details, index: group.indexes[index] ?? index } };
}

function produceResponse(topic: TopicSummary, records: ProduceRecordResult[], duplicate: boolean): ProduceResponse {
  return duplicate ? { topic: topic.name, records, duplicate: true } : { topic: topic.name, records };
}
