/**
 * Wire types of the Edgelog HTTP API (docs/PROTOCOL.md is the normative text).
 * Shared by the gateway and the SDK. Pure module: no Workers imports.
 *
 * Units: offsets are non-negative integers (JS numbers, exact below 2^53); timestamps are
 * milliseconds since the Unix epoch; sizes are bytes.
 */

import type { EffectivePolicies, PolicyName, PolicySource, TopicPolicies } from "./policies.ts";

/** Media type of the binary record-batch encoding (src/codec/batch.ts) used by the SDK. */
export const BATCH_MEDIA_TYPE = "application/vnd.edgelog.batch";

/**
 * How keys, values and header values are written in JSON bodies.
 * - `string`: UTF-8 text (default). On fetch, bytes that are not valid UTF-8 are replaced (U+FFFD): use base64 for binary data.
 * - `base64`: standard base64 (RFC 4648 §4) of the raw bytes.
 * - `json`: any JSON value; the stored bytes are its UTF-8 `JSON.stringify` form. On fetch, bytes that do not parse as JSON are an error.
 * `null` always means a null key/value/header value, which is distinct from empty.
 */
export type Encoding = "string" | "base64" | "json";
export const ENCODINGS: readonly Encoding[] = ["string", "base64", "json"];

/** A header as it travels in JSON: `value` encoded per the request's encoding, or null. */
export interface JsonHeader {
  key: string;
  value: unknown;
}

/** One record in a JSON produce request. */
export interface JsonProduceRecord {
  /** Encoded key; absent or null = null key. */
  key?: unknown;
  /** Encoded value; absent or null = null value (a tombstone under compaction). */
  value?: unknown;
  /** Ordered; duplicate keys are allowed and kept in order. */
  headers?: JsonHeader[];
  /** Explicit partition; overrides key-based partitioning. */
  partition?: number;
  /** CreateTime in ms; defaults to the broker's clock. Ignored (replaced) under LogAppendTime. */
  timestamp?: number;
}

/**
 * Body of `POST /v1/topics/{topic}/records` (JSON).
 * Idempotent produce (producerId/producerEpoch/baseSequence) is only accepted on the
 * partition route `POST /v1/topics/{topic}/partitions/{p}/records`, because sequence
 * numbers are per (producer id, partition) as in Kafka (KIP-98).
 */
export interface JsonProduceRequest {
  records: JsonProduceRecord[];
  /** Encoding of keys. @default "string" */
  keyEncoding?: Encoding;
  /** Encoding of values and header values. @default "string" */
  valueEncoding?: Encoding;
  producerId?: number;
  producerEpoch?: number;
  baseSequence?: number;
}

/** Per-record result of a produce, in request order. */
export interface ProduceRecordResult {
  partition: number;
  offset: number;
  /** The timestamp stored: CreateTime as given (or broker time if absent), or LogAppendTime. */
  timestamp: number;
}

export interface ProduceResponse {
  topic: string;
  records: ProduceRecordResult[];
  /** True when this was a retry of an already-appended idempotent batch (nothing appended). */
  duplicate?: boolean;
}

/**
 * Media type of the compact produce answer ({@link ProduceSummaryResponse}), which a client
 * asks for with `Accept` on the partition produce route.
 */
export const PRODUCE_SUMMARY_MEDIA_TYPE = "application/vnd.edgelog.produce-summary+json";

/**
 * Compact answer `200` of a produce to one partition, when asked for with
 * `Accept: application/vnd.edgelog.produce-summary+json`: the records got the dense offsets
 * baseOffset..lastOffset in request order, as in Kafka's ProduceResponse (base_offset,
 * log_append_time_ms, log_start_offset per partition), instead of one entry per record.
 */
export interface ProduceSummaryResponse {
  topic: string;
  partition: number;
  /** Offset of the request's first record. */
  baseOffset: number;
  /** Offset of its last record: lastOffset - baseOffset + 1 records. */
  lastOffset: number;
  /**
   * The broker time stamped on every record (ms) when the topic's message.timestamp.type is
   * LogAppendTime; null under CreateTime, where each record keeps the timestamp it was sent with.
   */
  logAppendTime: number | null;
  logStartOffset: number;
  /** True when this was a retry of an already-appended idempotent batch (nothing appended). */
  duplicate?: boolean;
}

/**
 * Answer `202` of a produce with `acks=0`: the request was valid and handed to the partition,
 * which may still fail or lose it; no offsets (docs/PROTOCOL.md, Produce).
 */
export interface ProduceAcceptedResponse {
  topic: string;
  /** Records in the request. */
  accepted: number;
}

/** A record in a JSON fetch response. */
export interface JsonFetchedRecord {
  partition: number;
  offset: number;
  timestamp: number;
  key: unknown;
  value: unknown;
  headers: JsonHeader[];
}

/** Bounds carried by every fetch response (and by OFFSET_OUT_OF_RANGE details). */
export interface PartitionBounds {
  /** First offset still stored. */
  logStartOffset: number;
  /** Offset the next appended record gets (log end offset); equals the high watermark for now. */
  highWatermark: number;
}

export interface JsonFetchResponse extends PartitionBounds {
  topic: string;
  partition: number;
  records: JsonFetchedRecord[];
  /** Offset to fetch next: last returned offset + 1, or the requested offset when nothing was returned. */
  nextOffset: number;
}

/**
 * `POST .../partitions/{p}/delete-records` answer (KIP-107): the partition's log start offset
 * after the call (Kafka's low watermark).
 */
export interface DeleteRecordsResponse {
  topic: string;
  partition: number;
  logStartOffset: number;
}

/**
 * `POST .../partitions/{p}/leader` answer (leadership transfer; Kafka's preferred leader
 * election, KIP-460): the partition's leader replica and leader epoch (the Raft term) after the
 * call; `transferred` false when the replica asked for already led.
 */
export interface PartitionLeaderResponse {
  topic: string;
  partition: number;
  leaderReplica: string;
  leaderEpoch: number;
  transferred: boolean;
}

/**
 * `POST .../partitions/{p}/replicas` answer (replica reassignment; Kafka's
 * AlterPartitionReassignments, KIP-455, as Raft membership changes; docs/RAFT.md): the replica
 * added in place of `removed`, the voters afterwards (sorted), the leader and its epoch.
 */
export interface ReplicaReassignmentResponse {
  topic: string;
  partition: number;
  added: string;
  removed: string;
  replicas: string[];
  leaderReplica: string;
  leaderEpoch: number;
  /** With the metadata quorum on: the metadata offset of the record of the new placement (docs/RAFT.md "Partition placement"). */
  metadataOffset?: number;
}

/** `GET .../offsets?spec=` answers. `offset` is null when no record qualifies (by timestamp). */
export interface ListOffsetsResponse {
  topic: string;
  partition: number;
  spec: string;
  offset: number | null;
  /** Timestamp of the record at `offset`, for `timestamp`/`max_timestamp` specs. */
  timestamp?: number | null;
}

export type TimestampType = "CreateTime" | "LogAppendTime";
export type CleanupPolicy = "delete" | "compact" | "compact,delete";

/** Topic configs (Kafka names). See src/protocol/config.ts for defaults and bounds. */
export interface TopicConfigs {
  "max.message.bytes": number;
  "message.timestamp.type": TimestampType;
  "retention.ms": number;
  "retention.bytes": number;
  "cleanup.policy": CleanupPolicy;
  "segment.bytes": number;
  /**
   * Idle time (ms) after which a partition forgets an idempotent producer's state (KIP-854:
   * Kafka's `producer.id.expiration.ms`, a broker config there, a topic config here since
   * each partition keeps its own producers). A producer that comes back after it starts over:
   * the partition has not seen it, so its next request must start at sequence 0.
   * Durable Streams producers (Producer-Id) of a stream's topic expire the same way.
   */
  "producer.id.expiration.ms": number;
  // ---- storage lifecycle (docs/LIFECYCLE.md); Kafka's names, defaults and ranges ----
  "segment.ms": number;
  "delete.retention.ms": number;
  "min.compaction.lag.ms": number;
  "max.compaction.lag.ms": number;
  /** A ratio in [0, 1] (the only decimal config). */
  "min.cleanable.dirty.ratio": number;
  "message.timestamp.before.max.ms": number;
  "message.timestamp.after.max.ms": number;
  /** -2 = same as retention.ms (KIP-405). */
  "local.retention.ms": number;
  /** -2 = same as retention.bytes (KIP-405). */
  "local.retention.bytes": number;
  "remote.storage.enable": boolean;
  /**
   * Replicas of each partition (docs/RAFT.md "Replicated partitions"): 1 (one Durable Object,
   * the default) or 3 (a Raft group of three). Fixed at creation.
   */
  "replication.factor": number;
  /** Kafka's min.insync.replicas: in-sync replicas an acks=all produce needs, in [1, replication.factor]. @default 1 */
  "min.insync.replicas": number;
  /**
   * Cloudflare location hints of the partition's replicas, in replica order (r1, r2, r3),
   * comma-separated: `"wnam,enam,weur"` (docs/RAFT.md "Location hints"). One hint per replica,
   * from the documented list (`LOCATION_HINTS`); fixed at creation, since a hint only places a
   * Durable Object when it is first created. Absent: no hints (each object is created near its
   * first caller).
   */
  "replica.locations"?: string;
  /**
   * The topic's effective policies (src/protocol/policies.ts), pushed by the metadata store to
   * the partitions with the configs, so the rooms that enforce them read them where they read
   * the configs. Never set through `configs` (an unknown config there); absent on partitions
   * initialised before tenants and namespaces existed and in the configs of a topic summary
   * (which carries `policies` with their sources instead).
   */
  policies?: TopicPolicies;
}

/** Body of `POST /v1/topics`. */
export interface CreateTopicRequest {
  name: string;
  /** @default 1 */
  partitions?: number;
  configs?: Partial<Record<keyof TopicConfigs, unknown>>;
  /** Topic-level policy overrides (every policy but retention, which is the configs retention.ms / retention.bytes). */
  policies?: Partial<Record<PolicyName, unknown>>;
}

/** Body of `PATCH /v1/topics/{topic}`: increase partitions and/or change configs. */
export interface AlterTopicRequest {
  partitions?: number;
  /** A `null` value removes the topic's own value: the config follows its namespace policy (retention) or its default again. */
  configs?: Partial<Record<keyof TopicConfigs, unknown>>;
  /** Topic-level policy overrides to set; `null` removes one (the namespace's or the default applies again). */
  policies?: Partial<Record<PolicyName, unknown>>;
}

export interface TopicSummary {
  /** Full name `tenant/namespace/topic`. */
  name: string;
  tenant: string;
  namespace: string;
  /** Short (Kafka-style) name. */
  topic: string;
  topicId: string;
  partitions: number;
  /** Effective configs: `retention.ms` / `retention.bytes` follow the namespace's retention policy unless the topic set them. */
  configs: TopicConfigs;
  /** Effective policies, each with its source (default, namespace or topic): docs/TENANTS.md. */
  policies: EffectivePolicies;
  /**
   * Where each of `configs` comes from: `topic` (set by the topic), `namespace` (retention from
   * the namespace's policy) or `default` (src/protocol/policies.ts `configSources`). Absent with
   * the metadata quorum on (docs/RAFT.md: namespaces are not in it yet).
   */
  configSources?: Record<keyof TopicConfigs, PolicySource>;
  createdAt: number;
  /**
   * Where each partition of a replicated topic lives, as the metadata quorum records it
   * (docs/RAFT.md "Partition placement"; KRaft's PartitionRecord): one entry per partition, in
   * partition order. Absent with the quorum off (MetadataDO) and at `replication.factor` 1 (the
   * one object `r1`).
   */
  placements?: PartitionPlacement[];
}

/**
 * A replicated partition's placement in the topic's metadata (KRaft's PartitionRecord and
 * PartitionChangeRecord: replicas, leader, leaderEpoch).
 */
export interface PartitionPlacement {
  partition: number;
  /** The voters' replica ids (object names: src/partition/rpc.ts) with their location hints (null: none), in id order. */
  replicas: { id: string; location: string | null }[];
  /**
   * The leader as last reported by the partition's own Raft group (null: none reported yet) and
   * its leader epoch (the Raft term; -1 with none). It may lag the partition: a hint, the
   * partition's NOT_LEADER_OR_FOLLOWER answers are what routing follows.
   */
  leader: string | null;
  leaderEpoch: number;
}

export interface PartitionDescription extends PartitionBounds {
  partition: number;
  /** Log end offset (next offset to be written). */
  logEndOffset: number;
  /** Records currently stored (logEndOffset - logStartOffset for now). */
  recordCount: number;
  /** Stored bytes of record batches. */
  bytes: number;
}

export interface TopicDescription extends TopicSummary {
  partitionDetails: PartitionDescription[];
}

/** Answer of `POST /v1/producers` (Kafka InitProducerId). */
export interface InitProducerResponse {
  producerId: number;
  producerEpoch: number;
}
