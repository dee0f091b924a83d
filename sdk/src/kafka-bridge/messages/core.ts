/**
 * Request decoders and response encoders of ApiVersions (18), Metadata (3), FindCoordinator
 * (10), InitProducerId (22) and ListOffsets (2), per version, field by field as in Kafka's
 * message schemas (clients/src/main/resources/common/message/*.json). `flex` = the version is
 * flexible (compact types + tagged fields). Pure module.
 */
import type { ApiRange } from "../apis.ts";
import { KafkaDecodeError, ZERO_UUID, type Reader, type Writer } from "../wire.ts";

// ---- ApiVersions (v0-v3; v3 is flexible, KIP-511) ----

export interface ApiVersionsRequest {
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
}

export function decodeApiVersionsRequest(r: Reader, version: number): ApiVersionsRequest {
  if (version < 3) return { clientSoftwareName: null, clientSoftwareVersion: null };
  const clientSoftwareName = r.string(true);
  const clientSoftwareVersion = r.string(true);
  r.taggedFields();
  return { clientSoftwareName, clientSoftwareVersion };
}

export interface ApiVersionsResponse {
  errorCode: number;
  apiKeys: readonly ApiRange[];
  throttleTimeMs: number;
}

export function encodeApiVersionsResponse(w: Writer, version: number, res: ApiVersionsResponse): void {
  const flex = version >= 3;
  w.int16(res.errorCode);
  w.array(res.apiKeys, flex, (w, k) => {
    w.int16(k.key).int16(k.minVersion).int16(k.maxVersion);
    if (flex) w.taggedFields();
  });
  if (version >= 1) w.int32(res.throttleTimeMs);
  if (flex) w.taggedFields();
}

// ---- Metadata (v0-v12; v9+ flexible, v10+ topic ids, v12 topics requested by id) ----

export interface MetadataRequest {
  /** Topics requested by name; null = every topic (v0: an empty list means every topic). */
  topics: string[] | null;
  /** v12: topics requested by topic id (entries with a null name). */
  topicIds: string[];
  allowAutoTopicCreation: boolean;
}

export function decodeMetadataRequest(r: Reader, version: number, flex: boolean): MetadataRequest {
  const topicIds: string[] = [];
  const entries = r.nullableArray(flex, (r) => {
    const id = version >= 10 ? r.uuid() : ZERO_UUID;
    const name = version >= 10 ? r.nullableString(flex) : r.string(flex);
    if (flex) r.taggedFields();
    return { id, name };
  });
  let topics: string[] | null = null;
  if (entries !== null) {
    topics = [];
    for (const e of entries) {
      if (e.name !== null) topics.push(e.name);
      else if (e.id !== ZERO_UUID) topicIds.push(e.id);
      else throw new KafkaDecodeError("a Metadata topic with neither a name nor a topic id");
    }
  }
  if (version === 0 && topics !== null && topics.length === 0) topics = null;
  let allowAutoTopicCreation = true;
  if (version >= 4) allowAutoTopicCreation = r.bool();
  if (version >= 8 && version <= 10) r.bool(); // include_cluster_authorized_operations
  if (version >= 8) r.bool(); // include_topic_authorized_operations
  if (flex) r.taggedFields();
  return { topics, topicIds, allowAutoTopicCreation };
}

export interface MetadataBroker {
  nodeId: number;
  host: string;
  port: number;
  rack: string | null;
}

export interface MetadataPartition {
  errorCode: number;
  partitionIndex: number;
  leaderId: number;
  leaderEpoch: number;
  replicaNodes: number[];
  isrNodes: number[];
}

export interface MetadataTopic {
  errorCode: number;
  /** null only for a topic requested by an unknown id (v12). */
  name: string | null;
  /** v10+: the topic id, ZERO_UUID when unknown. */
  topicId: string;
  isInternal: boolean;
  partitions: MetadataPartition[];
}

export interface MetadataResponse {
  throttleTimeMs: number;
  brokers: MetadataBroker[];
  clusterId: string | null;
  controllerId: number;
  topics: MetadataTopic[];
}

/** Kafka's "authorized operations not requested" marker (INT32_MIN). */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

export function encodeMetadataResponse(w: Writer, version: number, flex: boolean, res: MetadataResponse): void {
  if (version >= 3) w.int32(res.throttleTimeMs);
  w.array(res.brokers, flex, (w, b) => {
    w.int32(b.nodeId).string(b.host, flex).int32(b.port);
    if (version >= 1) w.nullableString(b.rack, flex);
    if (flex) w.taggedFields();
  });
  if (version >= 2) w.nullableString(res.clusterId, flex);
  if (version >= 1) w.int32(res.controllerId);
  w.array(res.topics, flex, (w, t) => {
    w.int16(t.errorCode);
    if (version >= 12) w.nullableString(t.name, flex);
    else w.string(t.name ?? "", flex);
    if (version >= 10) w.uuid(t.topicId);
    if (version >= 1) w.bool(t.isInternal);
    w.array(t.partitions, flex, (w, p) => {
      w.int16(p.errorCode).int32(p.partitionIndex).int32(p.leaderId);
      if (version >= 7) w.int32(p.leaderEpoch);
      w.array(p.replicaNodes, flex, (w, n) => w.int32(n));
      w.array(p.isrNodes, flex, (w, n) => w.int32(n));
      if (version >= 5) w.array([] as number[], flex, (w, n) => w.int32(n)); // offline_replicas
      if (flex) w.taggedFields();
    });
    if (version >= 8) w.int32(AUTHORIZED_OPERATIONS_OMITTED);
    if (flex) w.taggedFields();
  });
  if (version >= 8 && version <= 10) w.int32(AUTHORIZED_OPERATIONS_OMITTED);
  if (flex) w.taggedFields();
}

// ---- FindCoordinator (v0-v2) ----

export interface FindCoordinatorRequest {
  key: string;
  /** 0 = group, 1 = transaction. */
  keyType: number;
}

export function decodeFindCoordinatorRequest(r: Reader, version: number, flex: boolean): FindCoordinatorRequest {
  const key = r.string(flex);
  const keyType = version >= 1 ? r.int8() : 0;
  if (flex) r.taggedFields();
  return { key, keyType };
}

export interface FindCoordinatorResponse {
  throttleTimeMs: number;
  errorCode: number;
  errorMessage: string | null;
  nodeId: number;
  host: string;
  port: number;
}

export function encodeFindCoordinatorResponse(w: Writer, version: number, flex: boolean, res: FindCoordinatorResponse): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  w.int16(res.errorCode);
  if (version >= 1) w.nullableString(res.errorMessage, flex);
  w.int32(res.nodeId).string(res.host, flex).int32(res.port);
  if (flex) w.taggedFields();
}

// ---- InitProducerId (v0-v1) ----

export interface InitProducerIdRequest {
  transactionalId: string | null;
  transactionTimeoutMs: number;
}

export function decodeInitProducerIdRequest(r: Reader, version: number, flex: boolean): InitProducerIdRequest {
  const transactionalId = r.nullableString(flex);
  const transactionTimeoutMs = r.int32();
  if (version >= 3) {
    r.int64(); // producer_id
    r.int16(); // producer_epoch
  }
  if (flex) r.taggedFields();
  return { transactionalId, transactionTimeoutMs };
}

export interface InitProducerIdResponse {
  throttleTimeMs: number;
  errorCode: number;
  producerId: number;
  producerEpoch: number;
}

export function encodeInitProducerIdResponse(w: Writer, _version: number, flex: boolean, res: InitProducerIdResponse): void {
  w.int32(res.throttleTimeMs).int16(res.errorCode).int64(res.producerId).int16(res.producerEpoch);
  if (flex) w.taggedFields();
}

// ---- ListOffsets (v1-v7; v6+ flexible; v7 adds MAX_TIMESTAMP, KIP-734) ----

/** Special timestamps of a ListOffsets request. */
export const ListOffsetsTimestamp = { LATEST: -1, EARLIEST: -2, MAX_TIMESTAMP: -3 } as const;

export interface ListOffsetsRequest {
  isolationLevel: number;
  topics: { name: string; partitions: { partitionIndex: number; timestamp: number }[] }[];
}

export function decodeListOffsetsRequest(r: Reader, version: number, flex: boolean): ListOffsetsRequest {
  r.int32(); // replica_id
  const isolationLevel = version >= 2 ? r.int8() : 0;
  const topics = r.array(flex, (r) => {
    const name = r.string(flex);
    const partitions = r.array(flex, (r) => {
      const partitionIndex = r.int32();
      if (version >= 4) r.int32(); // current_leader_epoch
      const timestamp = r.int64();
      if (flex) r.taggedFields();
      return { partitionIndex, timestamp };
    });
    if (flex) r.taggedFields();
    return { name, partitions };
  });
  if (flex) r.taggedFields();
  return { isolationLevel, topics };
}

export interface ListOffsetsPartitionResponse {
  partitionIndex: number;
  errorCode: number;
  timestamp: number;
  offset: number;
  leaderEpoch: number;
}

export interface ListOffsetsResponse {
  throttleTimeMs: number;
  topics: { name: string; partitions: ListOffsetsPartitionResponse[] }[];
}

export function encodeListOffsetsResponse(w: Writer, version: number, flex: boolean, res: ListOffsetsResponse): void {
  if (version >= 2) w.int32(res.throttleTimeMs);
  w.array(res.topics, flex, (w, t) => {
    w.string(t.name, flex);
    w.array(t.partitions, flex, (w, p) => {
      w.int32(p.partitionIndex).int16(p.errorCode).int64(p.timestamp).int64(p.offset);
      if (version >= 4) w.int32(p.leaderEpoch);
      if (flex) w.taggedFields();
    });
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}
