/**
 * The gateway's produce policy, behind the produce routes (src/routes/produce.ts), which only
 * parse the request and map the {@link ProduceOutcome} to an answer:
 * - the whole request is validated (record sizes against the topic's max.message.bytes,
 *   partition numbers, and under acks=0 everything the partition would check without its
 *   state) before any partition is called;
 * - records are placed (explicit partition, then the key's murmur2 partition, then a sticky
 *   round-robin partition per request for null keys), grouped per partition, and appended one
 *   append per partition, in parallel, through the isolate's append coalescer (concurrent
 *   requests for one partition may share an RPC, each still its own transaction and answer);
 * - the partitions' failures are folded into one answer, results combined in request order;
 * - acks=0 answers 202 at once and appends after the answer.
 * Topic metadata comes from the gateway cache, refreshed once when stale (withTopic).
 */
import { CodecError, scanBatch, verifyBatchCrc } from "../codec/index.ts";
import type { Env } from "../env.ts";
import { checkCompactedKeys, checkTimestampBounds, lifecycleConfig } from "../lifecycle/index.ts";
import { validateAppend } from "../partition/core.ts";
import { partitionStub, type AppendOk, type AppendRequest } from "../partition/rpc.ts";
import { EdgelogError, toEdgelogError, type ErrorResult, type RpcResult } from "../protocol/errors.ts";
import type { ProduceAcceptedResponse, ProduceRecordResult, ProduceResponse, ProduceSummaryResponse, TopicSummary } from "../protocol/types.ts";
import { AppendCoalescer } from "./append-coalescer.ts";
import { checkRecordSizes, choosePartitions, encodeForPartition, groupByPartition, type ParsedProduceRequest, type PartitionGroup, type ProducerFields } from "./produce-request.ts";
import { checkPartition, partitionError, partitionFailure, withTopic } from "./topics.ts";
import { gatewayMetrics } from "../metrics/gateway.ts";
import { log } from "../log/logger.ts";
import { replicationFactorOf } from "../protocol/config.ts";
import { appendAtLeader } from "./replicas.ts";

/**
 * Kafka's producer `acks`. At replication.factor 1, "all" and "1" promise the same: a partition
 * has one replica (the platform replicates its storage), so the leader's durable commit is every
 * replica's. At 3, both answer after the Raft commit, and only "all" needs min.insync.replicas
 * (docs/RAFT.md). See docs/ARCHITECTURE.md, "What an ack promises".
 */
export type ProduceAcks = "all" | "1" | "0";

/** What the policy needs of the request it serves. */
export interface ProduceContext {
  env: Env;
  /** The request's waitUntil: keeps an RPC this request leads (or an acks=0 append) running after the answer. */
  waitUntil: (p: Promise<unknown>) => void;
  acks: ProduceAcks;
  /** The client asked for the compact answer of the partition route (`Accept: application/vnd.edgelog.produce-summary+json`). */
  summary: boolean;
}

/** What a produce answers, for the route to write: 200 with offsets, 200 with the compact summary, or 202 (acks=0). */
export type ProduceOutcome = { kind: "records"; body: ProduceResponse } | { kind: "summary"; body: ProduceSummaryResponse } | { kind: "accepted"; body: ProduceAcceptedResponse };

/**
 * Concurrent produce requests for one partition in this isolate share one append RPC
 * (src/gateway/append-coalescer.ts): one RPC and one durable commit for many requests.
 */
const coalescer = new AppendCoalescer();

/**
 * Appends one produce request to a partition through the coalescer. `waitUntil` keeps an
 * RPC this request leads running for the requests it carries, even if this client leaves.
 */
function appendToPartition(ctx: ProduceContext, topic: TopicSummary, partition: number, req: AppendRequest): Promise<RpcResult<AppendOk>> {
  const { env, waitUntil } = ctx;
  const topicId = topic.topicId;
  if (replicationFactorOf(topic.configs) > 1) {
    // A replicated partition (docs/RAFT.md): at its leader; min.insync.replicas binds acks=all only.
    const r = ctx.acks === "all" ? req : { ...req, acks: "1" as const };
    const atLeader = (reqs: AppendRequest[]) => timedAppend(reqs.length, appendAtLeader(env, topicId, partition, topic.configs, reqs));
    if (env.EDGELOG_APPEND_COALESCING === "off") return atLeader([r]).then((out) => out[0]!);
    return coalescer.append(`${topicId}/${partition}`, r, atLeader, waitUntil);
  }
  if (env.EDGELOG_APPEND_COALESCING === "off") return timedAppend(1, partitionStub(env.PARTITION, topicId, partition).append(req));
  return coalescer.append(`${topicId}/${partition}`, req, (reqs) => timedAppend(reqs.length, partitionStub(env.PARTITION, topicId, partition).appendMany(reqs)), waitUntil);
}

/** Counts one append RPC in this isolate's metrics (src/metrics/gateway.ts): its round trip and how many requests it carried. */
async function timedAppend<T>(requests: number, rpc: Promise<T>): Promise<T> {
  const startMs = Date.now();
  try {
    return await rpc;
  } finally {
    gatewayMetrics.appendDuration.observe(Date.now() - startMs);
    gatewayMetrics.appendGroupSize.observe(requests);
  }
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

/**
 * `POST /v1/topics/{topic}/records`: JSON records partitioned by the server (no producer fields).
 * @throws EdgelogError RECORD_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_NAME, or a partition's failure.
 */
export async function produceToTopic(ctx: ProduceContext, name: string, req: ParsedProduceRequest): Promise<ProduceOutcome> {
  return withTopic(ctx.env, name, async (topic) => {
    checkRecordSizes(req.records, topic.configs["max.message.bytes"]);
    for (const p of req.partitions) if (p !== undefined) checkPartition(topic, p);
    checkAcrossPartitions(topic, req);
    const partitions = choosePartitions(req.records, req.partitions, topic.partitions, () => nextRoundRobin(topic.name));
    const append = () => appendGroups(ctx, topic, groupByPartition(req.records, partitions), null, req.records.length);
    if (ctx.acks === "0") return fireAndForget(ctx, topic, req.records.length, append);
    return { kind: "records", body: await append() };
  });
}

/**
 * The partitions' own produce checks (docs/LIFECYCLE.md "Produce-time checks": a key on every
 * record of a compacted topic, KIP-937 timestamp bounds), run on the whole request before any
 * partition is called: a request spread over several partitions is refused whole, rather than
 * written on the partitions that accepted their part (a rejected request changes nothing). The
 * partitions check again (the topic cache may be up to its TTL behind a config change).
 * @throws EdgelogError INVALID_RECORD (details.index = the record's index in the request) or INVALID_TIMESTAMP.
 */
function checkAcrossPartitions(topic: TopicSummary, req: ParsedProduceRequest): void {
  const cfg = lifecycleConfig(topic.configs);
  const bad =
    checkTimestampBounds(
      req.records.map((r) => r.timestamp),
      Date.now(),
      cfg.timestamps,
    ) ??
    checkCompactedKeys(
      req.records.map((r) => r.key),
      cfg.compaction.compact,
    );
  if (bad !== null) throw partitionError(bad);
}

/**
 * `POST /v1/topics/{topic}/partitions/{p}/records` with JSON records (idempotent producer fields allowed).
 * @throws EdgelogError INVALID_REQUEST (a record names another partition), RECORD_TOO_LARGE,
 * UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_NAME, or the partition's failure.
 */
export async function produceToPartition(ctx: ProduceContext, name: string, partition: number, req: ParsedProduceRequest): Promise<ProduceOutcome> {
  req.partitions.forEach((p, i) => {
    if (p !== undefined && p !== partition) {
      throw new EdgelogError("INVALID_REQUEST", `records[${i}].partition is ${p} on the route of partition ${partition}.`, { field: `records[${i}].partition` });
    }
  });
  return withTopic(ctx.env, name, async (topic) => {
    checkPartition(topic, partition);
    checkRecordSizes(req.records, topic.configs["max.message.bytes"]);
    if (ctx.acks !== "0" && ctx.summary) {
      const r = await appendToPartition(ctx, topic, partition, { batches: encodeForPartition(req.records, req.producer), crcVerified: true });
      if (!r.ok) throw partitionError(r);
      return summaryOutcome(topic, partition, r);
    }
    const group: PartitionGroup = { partition, indexes: req.records.map((_, i) => i), records: req.records };
    const append = () => appendGroups(ctx, topic, [group], req.producer, req.records.length);
    if (ctx.acks === "0") return fireAndForget(ctx, topic, req.records.length, append);
    return { kind: "records", body: await append() };
  });
}

/**
 * Binary produce: `bytes` is one record batch. The gateway checks its framing and CRC-32C
 * (per-byte work that scales out with gateways instead of queueing on the partition's single
 * thread); the partition checks everything else and stores it.
 * @throws EdgelogError INVALID_BATCH, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_NAME, or the partition's failure.
 */
export async function produceBatch(ctx: ProduceContext, name: string, partition: number, bytes: Uint8Array): Promise<ProduceOutcome> {
  return withTopic(ctx.env, name, async (topic) => {
    checkPartition(topic, partition);
    // The partition checks the rest, including at most MAX_RECORDS_PER_REQUEST records
    // (validateAppend), which under acks=0 the gateway checks itself.
    let recordCount: number;
    try {
      if (ctx.acks === "0") {
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
      const r = await appendToPartition(ctx, topic, partition, { batches: [bytes], crcVerified: true });
      if (!r.ok) throw partitionError(r);
      return r;
    };
    if (ctx.acks === "0") return fireAndForget(ctx, topic, recordCount, append);
    const r = await append();
    if (ctx.summary) return summaryOutcome(topic, partition, r);
    const records: ProduceRecordResult[] = r.timestamps.map((timestamp, k) => ({ partition, offset: r.baseOffset + k, timestamp }));
    return { kind: "records", body: produceResponse(topic, records, r.duplicate) };
  });
}

/**
 * acks=0: the request was validated in full by the caller; the append runs after the answer
 * (waitUntil keeps the isolate alive for it). Its failure is logged and never reported: the
 * client asked not to wait (Kafka's acks=0 promise).
 */
function fireAndForget(ctx: ProduceContext, topic: TopicSummary, accepted: number, append: () => Promise<unknown>): ProduceOutcome {
  ctx.waitUntil(
    append().then(
      () => undefined,
      (err: unknown) => log.warn("edgelog.produce.acks0_failed", { topic: topic.name, ...(err instanceof EdgelogError ? { code: err.code } : { error: err }) }),
    ),
  );
  return { kind: "accepted", body: { topic: topic.name, accepted } };
}

/**
 * One append per group (through the coalescer), in parallel. Answers in request order.
 * If every partition answered UNKNOWN_TOPIC_OR_PARTITION nothing was written, so the error
 * stays retriable with fresh metadata (withTopic); otherwise the first failure is the answer.
 */
async function appendGroups(ctx: ProduceContext, topic: TopicSummary, groups: PartitionGroup[], producer: ProducerFields | null, total: number): Promise<ProduceResponse> {
  const results = await Promise.all(
    // Batches encoded here a moment ago: the partition need not recompute their CRC.
    groups.map((g) => appendToPartition(ctx, topic, g.partition, { batches: encodeForPartition(g.records, producer), crcVerified: true })),
  );
  const failures: { group: PartitionGroup; error: ErrorResult }[] = [];
  results.forEach((r, i) => {
    if (!r.ok) failures.push({ group: groups[i]!, error: r });
  });
  const firstFailure = failures[0];
  if (firstFailure !== undefined) {
    if (failures.length === results.length && failures.every((f) => f.error.code === "UNKNOWN_TOPIC_OR_PARTITION")) throw partitionError(firstFailure.error);
    throw partitionFailure(inRequestTerms(firstFailure.group, firstFailure.error));
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
 * The compact answer of one partition's append (Kafka ProduceResponse-style): the offset range,
 * and the broker's LogAppendTime when the topic stamps one (every record then carries it).
 */
function summaryOutcome(topic: TopicSummary, partition: number, r: AppendOk): ProduceOutcome {
  const body: ProduceSummaryResponse = {
    topic: topic.name,
    partition,
    baseOffset: r.baseOffset,
    lastOffset: r.lastOffset,
    logAppendTime: r.logAppendTime,
    logStartOffset: r.logStartOffset,
    ...(r.duplicate ? { duplicate: true } : {}),
  };
  return { kind: "summary", body };
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
