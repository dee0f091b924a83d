/**
 * @edgelog/sdk public API. This file is the contract: everything a user may import is listed
 * here, by section; anything else in sdk/src is internal.
 */

// ---- client (low-level HTTP, one method per route of docs/PROTOCOL.md) ----
export { EdgelogClient, DEFAULT_REQUEST_TIMEOUT_MS } from "./client.ts";
export type { CallOptions, EdgelogClientOptions, FetchRequest, FetchResult, OffsetSpec, TokenResponse } from "./client.ts";

// ---- admin ----
export { Admin } from "./admin.ts";
export type { NewTopic, TopicChanges, TopicConfigInput, NewAcl, QuotaEntityInput, QuotaValuesInput, QuotaDescription, ScramUserDescription } from "./admin.ts";
export type { AclBinding, AclFilter, AclOperation, PulsarAction, ResourceType, PatternType, AclPermission } from "../../src/protocol/acl.ts";
export type { NewTenant } from "./admin.ts";
export type { SubscriptionConsumerStats, SubscriptionPartitionStats, SubscriptionPosition, SubscriptionStats } from "./admin.ts";
export type {
  BacklogQuota,
  BacklogQuotaAction,
  EffectivePolicies,
  NamespaceDescription,
  PolicyName,
  PolicySource,
  RateLimit,
  RetentionPolicy,
  TenantInfo,
  TopicPolicies,
} from "../../src/protocol/policies.ts";
export { BACKLOG_QUOTA_ACTIONS, CLUSTER_NAME, DEFAULT_POLICIES, POLICY_NAMES } from "../../src/protocol/policies.ts";

// ---- producer ----
export { Producer, PRODUCER_DEFAULTS } from "./producer.ts";
export type { Message, ProduceAcks, ProducerOptions, RecordMetadata, SendRequest } from "./producer.ts";

// ---- consumer ----
export { Consumer, CONSUMER_DEFAULTS } from "./consumer.ts";
export type { ConsumerOptions, ConsumerRecord, OffsetResetPolicy, PollOptions, TopicPartition, TopicPartitionOffset } from "./consumer.ts";

// ---- consumer groups (kafkajs-shaped group consumer; admin calls are on EdgelogClient) ----
export { GroupConsumer, GROUP_CONSUMER_DEFAULTS, RECONCILING_HEARTBEAT_MS, displayTopic } from "./group-consumer.ts";
export type {
  Batch,
  EachBatchPayload,
  EachMessagePayload,
  GroupConsumerEvents,
  GroupConsumerOptions,
  GroupsApi,
  RunOptions,
  SubscribeOptions,
  TopicPartitionsSelection,
} from "./group-consumer.ts";
export { ASSIGNOR_NAMES, DEFAULT_ASSIGNOR, DEFAULT_GROUP_CONFIGS } from "../../src/protocol/index.ts";
export type {
  AssignorName,
  AutoOffsetReset,
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  GroupConfigs,
  GroupDescription,
  GroupListing,
  GroupMemberDescription,
  GroupPartitionOffset,
  GroupStateName,
  LeaveGroupRequest,
  LeaveGroupResponse,
  ListGroupsResponse,
  MemberReconcileState,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchPartition,
  OffsetFetchRequest,
  OffsetFetchResponse,
  ResetOffsetsRequest,
  ResetOffsetsResponse,
  ResetOffsetsSpec,
  TopicPartitions,
} from "../../src/protocol/index.ts";

// ---- subscriptions (Pulsar-style, over the native WebSocket API) ----
export { DEFAULT_MAX_RECONSUME_TIMES, RETRY_PROPERTIES, SubscriptionConsumer, subscribe } from "./subscription.ts";
export type { SubscribeOptions as SubscriptionOptions, SubscriptionMessage, SubscriptionType } from "./subscription.ts";
export { Reader, createReader } from "./reader.ts";
export type { ReaderMessage, ReaderOptions, ReaderStart } from "./reader.ts";
// ---- instrumentation (kafkajs-style events: client.on("request", ...)) ----
export { Emitter, apiOf } from "./instrumentation.ts";
export type { BatchEvent, FetchEvent, Instrumentation, InstrumentationEvents, RequestEvent, RequestRetryEvent, ThrottleEvent } from "./instrumentation.ts";

// ---- errors (the shared error-code table) ----
export { EdgelogClientError } from "./errors.ts";
export type { EdgelogClientErrorOptions } from "./errors.ts";
export { ERRORS, EdgelogError, isErrorCode } from "../../src/protocol/index.ts";
export type { ErrorBody, ErrorCode, ErrorSpec } from "../../src/protocol/index.ts";

// ---- bytes and text ----
export { toBytes, toJson, toText } from "./text.ts";
export type { Bytes } from "./text.ts";

// ---- partitioning (the server's and the Java client's default partitioner) ----
export { murmur2, partitionForKey } from "../../src/codec/index.ts";

// ---- wire types and limits (src/protocol, shared with the gateway) ----
export {
  BATCH_MEDIA_TYPE,
  DEFAULT_TOPIC_CONFIGS,
  FETCH_MAX_MAX_BYTES,
  FETCH_MAX_MAX_RECORDS,
  FETCH_MAX_WAIT_MS_LIMIT,
  MAX_MESSAGE_BYTES_LIMIT,
  MAX_PARTITIONS,
  MAX_RECORDS_PER_REQUEST,
  MAX_REQUEST_BYTES,
  PRODUCE_SUMMARY_MEDIA_TYPE,
} from "../../src/protocol/index.ts";
export type {
  AlterTopicRequest,
  CleanupPolicy,
  CreateTopicRequest,
  Encoding,
  InitProducerResponse,
  JsonFetchResponse,
  JsonFetchedRecord,
  JsonHeader,
  JsonProduceRecord,
  JsonProduceRequest,
  ListOffsetsResponse,
  DeleteRecordsResponse,
  PartitionLeaderResponse,
  ReplicaReassignmentResponse,
  PartitionBounds,
  PartitionDescription,
  ProduceRecordResult,
  ProduceAcceptedResponse,
  ProduceResponse,
  ProduceSummaryResponse,
  TimestampType,
  TopicConfigs,
  TopicDescription,
  TopicSummary,
} from "../../src/protocol/index.ts";

// ---- record model (src/codec) ----
export type { LogRecord, RecordHeader } from "../../src/codec/index.ts";
