/**
 * Produce:
 * - `POST /v1/topics/{topic}/partitions/{p}/records`: JSON or binary (one record batch), one
 *   partition, idempotent producers allowed;
 * - `POST /v1/topics/{topic}/records`: JSON, partitioned by the server.
 *
 * The whole request is validated (shape, encodings, record sizes against the topic's
 * max.message.bytes, partition numbers) before any partition is called; then one append per
 * partition, in parallel, through the isolate's append coalescer (concurrent requests for one
 * partition may share an RPC, each still its own transaction and answer); results combined in
 * request order. `Accept: application/vnd.edgelog.produce-summary+json` on the partition
 * route asks for the compact answer (ProduceSummaryResponse).
 */
import type { Hono } from "hono";
import { CodecError, scanBatch, verifyBatchCrc } from "../codec/index.ts";
import { validateAppend } from "../partition/core.ts";
import type { Env } from "../env.ts";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { acceptsMediaType, jsonBody, mediaType, partitionParam, topicRoute } from "../gateway/http.ts";
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
import { partitionStub, type AppendOk, type AppendRequest } from "../partition/rpc.ts";
import { AppendCoalescer } from "../gateway/append-coalescer.ts";
import { EdgelogError, toEdgelogError, type ErrorResult, type RpcResult } from "../protocol/errors.ts";
import {
  BATCH_MEDIA_TYPE,
  PRODUCE_SUMMARY_MEDIA_TYPE,
  type ProduceAcceptedResponse,
  type ProduceRecordResult,
  type ProduceResponse,
  type ProduceSummaryResponse,
  type TopicSummary,
} from "../protocol/types.ts";

/**
 * Concurrent produce requests for one partition in this isolate share one append RPC
 * (src/gateway/append-coalescer.ts): one RPC and one durable commit for many requests.
 */
const coalescer = new AppendCoalescer();

/**
 * Appends one produce request to a partition through the coalescer. `waitUntil` keeps an
 * RPC this request leads running for the requests it carries, even if this client leaves.
 */
function appendToPartition(env: Env, waitUntil: (p: Promise<unknown>) => void, topicId: string, partition: number, req: AppendRequest): Promise<RpcResult<AppendOk>> {
  if (env.EDGELOG_APPEND_COALESCING === "off") return partitionStub(env.PARTITION, topicId, partition).append(req);
  return coalescer.append(`${topicId}/${partition}`, req, (reqs) => partitionStub(env.PARTITION, topicId, partition).appendMany(reqs), waitUntil);
}

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
  const acks = acksParam(c);
  const req = parseProduceRequest(jsonBody(c), { nowMs: Date.now(), allowProducer: false });
  return withTopic(c.env, name, async (topic) => {
    checkRecordSizes(req.records, topic.configs["max.message.bytes"]);
    for (const p of req.partitions) if (p !== undefined) checkPartition(topic, p);
    const partitions = choosePartitions(req.records, req.partitions, topic.partitions, () => nextRoundRobin(topic.name));
    const append = () => appendGroups(c, topic, groupByPartition(req.records, partitions), null, req.records.length);
    if (acks === "0") return fireAndForget(c, topic, req.records.length, append);
    return c.json(await append());
  });
}

async function producePartition(c: AppContext, name: string): Promise<Response> {
  const acks = acksParam(c);
  const partition = partitionParam(c);
  if (mediaType(c) === BATCH_MEDIA_TYPE) return produceBinary(c, name, partition, acks);
  const req = parseProduceRequest(jsonBody(c), { nowMs: Date.now(), allowProducer: true });
  req.partitions.forEach((p, i) => {
    if (p !== undefined && p !== partition) {
      throw new EdgelogError("INVALID_REQUEST", `records[${i}].partition is ${p} on the route of partition ${partition}.`, { field: `records[${i}].partition` });
    }
  });
  return withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    checkRecordSizes(req.records, topic.configs["max.message.bytes"]);
    if (acks !== "0" && wantsSummary(c)) {
      const r = await appendToPartition(c.env, waitUntil(c), topic.topicId, partition, { batches: encodeForPartition(req.records, req.producer), crcVerified: true });
      if (!r.ok) throw partitionError(r);
      return summaryResponse(c, topic, partition, r);
    }
    const group: PartitionGroup = { partition, indexes: req.records.map((_, i) => i), records: req.records };
    const append = () => appendGroups(c, topic, [group], req.producer, req.records.length);
    if (acks === "0") return fireAndForget(c, topic, req.records.length, append);
    return c.json(await append());
  });
}

/**
 * The `acks` query parameter (Kafka's producer `acks`). "all" and "1" promise the same here:
 * a partition has one replica (the platform replicates its storage), so the leader's durable
 * commit is every replica's. See docs/ARCHITECTURE.md, "What an ack promises".
 * @default "all"
 * @throws EdgelogError INVALID_REQUEST with details.field "acks".
 */
function acksParam(c: AppContext): ProduceAcks {
  const v = c.req.query("acks");
  if (v === undefined || v === "all") return "all";
  if (v === "1" || v === "0") return v;
  throw new EdgelogError("INVALID_REQUEST", `acks must be "all", "1" or "0", got ${JSON.stringify(v)}.`, { field: "acks" });
}

type ProduceAcks = "all" | "1" | "0";

/**
 * acks=0: the request was validated in full by the caller; the append runs after the answer
 * (waitUntil keeps the isolate alive for it). Its failure is logged and never reported: the
 * client asked not to wait (Kafka's acks=0 promise).
 */
function fireAndForget(c: AppContext, topic: TopicSummary, accepted: number, append: () => Promise<unknown>): Response {
  c.executionCtx.waitUntil(
    append().then(
      () => undefined,
      (err: unknown) => console.warn("acks=0 append failed", topic.name, err instanceof EdgelogError ? err.code : err),
    ),
  );
  const body: ProduceAcceptedResponse = { topic: topic.name, accepted };
  return c.json(body, 202);
}

/**
 * Binary produce: the body is one record batch. The gateway checks its framing and CRC-32C
 * (per-byte work that scales out with gateways instead of queueing on the partition's single
 * thread); the partition checks everything else and stores it.
 */
async function produceBinary(c: AppContext, name: string, partition: number, acks: ProduceAcks): Promise<Response> {
  const bytes = c.get("body");
  return withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    // The partition checks the rest, including at most MAX_RECORDS_PER_REQUEST records
    // (validateAppend), which under acks=0 the gateway checks itself.
    let recordCount: number;
    try {
      if (acks === "0") {
        // No answer will come back from the partition: check here everything the partition
        // would check without its state (framing, CRC, records, attributes, timestamps,
        // sizes, record count), so only state-dependent failures (sequence, epoch) go unreported.
        const scan = scanBatch(bytes, 0);
        if (scan.totalBytes !== bytes.length) throw new EdgelogError("INVALID_BATCH", `${bytes.length - scan.totalBytes} bytes after the record batch.`);
        const v = validateAppend([scan], topic.configs["max.message.bytes"]);
        if ("code" in v) throw toEdgelogError(v);
        recordCount = v.recordCount;
      } else {
        recordCount = verifyBatchCrc(bytes).recordCount;
      }
    } catch (err) {
      if (err instanceof CodecError) throw new EdgelogError("INVALID_BATCH", err.message);
      throw err;
    }
    const append = async (): Promise<AppendOk> => {
      const r = await appendToPartition(c.env, waitUntil(c), topic.topicId, partition, { batches: [bytes], crcVerified: true });
      if (!r.ok) throw partitionError(r);
      return r;
    };
    if (acks === "0") return fireAndForget(c, topic, recordCount, append);
    const r = await append();
    if (wantsSummary(c)) return summaryResponse(c, topic, partition, r);
    const records: ProduceRecordResult[] = r.timestamps.map((timestamp, k) => ({ partition, offset: r.baseOffset + k, timestamp }));
    return c.json(produceResponse(topic, records, r.duplicate));
  });
}

/**
 * One append per group (through the coalescer), in parallel. Answers in request order.
 * If every partition answered UNKNOWN_TOPIC_OR_PARTITION nothing was written, so the error
 * stays retriable with fresh metadata (withTopic); otherwise the first failure is the answer.
 */
async function appendGroups(c: AppContext, topic: TopicSummary, groups: PartitionGroup[], producer: ProducerFields | null, total: number): Promise<ProduceResponse> {
  const keepAlive = waitUntil(c);
  const results = await Promise.all(
    // Batches encoded here a moment ago: the partition need not recompute their CRC.
    groups.map((g) => appendToPartition(c.env, keepAlive, topic.topicId, g.partition, { batches: encodeForPartition(g.records, producer), crcVerified: true })),
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

/** True when the client asked for the compact answer ({@link ProduceSummaryResponse}) with `Accept`. */
function wantsSummary(c: AppContext): boolean {
  return acceptsMediaType(c, PRODUCE_SUMMARY_MEDIA_TYPE);
}

/**
 * The compact answer of one partition's append (Kafka ProduceResponse-style): the offset range,
 * and the broker's LogAppendTime when the topic stamps one (every record then carries it).
 */
function summaryResponse(c: AppContext, topic: TopicSummary, partition: number, r: AppendOk): Response {
  const body: ProduceSummaryResponse = {
    topic: topic.name,
    partition,
    baseOffset: r.baseOffset,
    lastOffset: r.lastOffset,
    logAppendTime: r.logAppendTime,
    logStartOffset: r.logStartOffset,
    ...(r.duplicate ? { duplicate: true } : {}),
  };
  return c.body(JSON.stringify(body), 200, { "content-type": PRODUCE_SUMMARY_MEDIA_TYPE });
}

/** The request's waitUntil (keeps work running after the answer). */
function waitUntil(c: AppContext): (p: Promise<unknown>) => void {
  const ctx = c.executionCtx;
  return (p) => ctx.waitUntil(p);
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
