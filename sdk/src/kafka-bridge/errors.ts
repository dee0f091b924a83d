/**
 * Kafka error codes (kafka/common/protocol/Errors.java, https://kafka.apache.org/protocol#protocol_error_codes)
 * and the one table that maps every Edgelog error code (src/protocol/errors.ts) to the Kafka
 * code a client expects. The table is typed as a total record over Edgelog's codes, so a new
 * Edgelog code does not compile until it is mapped; a unit test checks the same at run time.
 *
 * Pure module.
 */
import type { ErrorCode } from "../../../src/protocol/index.ts";

/** The Kafka error codes the bridge answers (a subset of Kafka's). */
export const KafkaError = {
  UNKNOWN_SERVER_ERROR: -1,
  NONE: 0,
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  NOT_LEADER_OR_FOLLOWER: 6,
  REQUEST_TIMED_OUT: 7,
  MESSAGE_TOO_LARGE: 10,
  OFFSET_METADATA_TOO_LARGE: 12,
  COORDINATOR_NOT_AVAILABLE: 15,
  INVALID_TOPIC_EXCEPTION: 17,
  NOT_ENOUGH_REPLICAS: 19,
  INVALID_REQUIRED_ACKS: 21,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  INVALID_GROUP_ID: 24,
  UNKNOWN_MEMBER_ID: 25,
  INVALID_SESSION_TIMEOUT: 26,
  REBALANCE_IN_PROGRESS: 27,
  INVALID_TIMESTAMP: 32,
  UNSUPPORTED_VERSION: 35,
  TOPIC_ALREADY_EXISTS: 36,
  INVALID_PARTITIONS: 37,
  INVALID_REPLICATION_FACTOR: 38,
  INVALID_REPLICA_ASSIGNMENT: 39,
  INVALID_CONFIG: 40,
  INVALID_REQUEST: 42,
  POLICY_VIOLATION: 44,
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 43,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
  INVALID_PRODUCER_EPOCH: 47,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  UNKNOWN_PRODUCER_ID: 59,
  REASSIGNMENT_IN_PROGRESS: 60,
  NON_EMPTY_GROUP: 68,
  GROUP_ID_NOT_FOUND: 69,
  UNSUPPORTED_COMPRESSION_TYPE: 76,
  PREFERRED_LEADER_NOT_AVAILABLE: 80,
  GROUP_MAX_SIZE_REACHED: 81,
  INVALID_RECORD: 87,
  UNKNOWN_TOPIC_ID: 100,
  FENCED_MEMBER_EPOCH: 110,
  UNSUPPORTED_ASSIGNOR: 112,
  STALE_MEMBER_EPOCH: 113,
  INVALID_REGULAR_EXPRESSION: 128,
  TOPIC_AUTHORIZATION_FAILED: 29,
  SASL_AUTHENTICATION_FAILED: 58,
  FENCED_LEADER_EPOCH: 74,
  THROTTLING_QUOTA_EXCEEDED: 89,
} as const;
export type KafkaErrorName = keyof typeof KafkaError;

/**
 * Edgelog error code -> Kafka error name, for every Edgelog code. Choices where Kafka has no
 * exact twin are commented; the Durable Streams codes cannot arise through the bridge (it
 * never calls /v1/stream) and map to their nearest Kafka meaning.
 */
export const EDGELOG_TO_KAFKA = {
  INVALID_REQUEST: "INVALID_REQUEST",
  INVALID_JSON: "INVALID_REQUEST",
  // A key/value not valid for a declared encoding: only the JSON API has encodings.
  INVALID_ENCODING: "INVALID_RECORD",
  // Kafka's name for a batch that fails its CRC or framing.
  INVALID_BATCH: "CORRUPT_MESSAGE",
  EMPTY_BATCH: "INVALID_RECORD",
  UNSUPPORTED_MEDIA_TYPE: "INVALID_REQUEST",
  NOT_ACCEPTABLE: "INVALID_REQUEST",
  // The Java producer splits a batch on MESSAGE_TOO_LARGE and retries the halves.
  REQUEST_TOO_LARGE: "MESSAGE_TOO_LARGE",
  RECORD_TOO_LARGE: "MESSAGE_TOO_LARGE",
  // The bridge only calls routes that exist: a NOT_FOUND means the --url points elsewhere.
  NOT_FOUND: "UNKNOWN_SERVER_ERROR",
  METHOD_NOT_ALLOWED: "UNKNOWN_SERVER_ERROR",
  INVALID_TOPIC_NAME: "INVALID_TOPIC_EXCEPTION",
  INVALID_PARTITIONS: "INVALID_PARTITIONS",
  INVALID_CONFIG: "INVALID_CONFIG",
  TOPIC_ALREADY_EXISTS: "TOPIC_ALREADY_EXISTS",
  UNKNOWN_TOPIC_OR_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
  // Kafka's CreatePartitions answers INVALID_PARTITIONS for a decrease.
  PARTITION_DECREASE_NOT_ALLOWED: "INVALID_PARTITIONS",
  OUT_OF_ORDER_SEQUENCE_NUMBER: "OUT_OF_ORDER_SEQUENCE_NUMBER",
  INVALID_PRODUCER_EPOCH: "INVALID_PRODUCER_EPOCH",
  // Malformed id/epoch/sequence, or a sequence that would pass 2^31 - 1 (Edgelog's do not
  // wrap): idempotent clients answer UNKNOWN_PRODUCER_ID by getting a new producer id.
  INVALID_PRODUCER_ID: "UNKNOWN_PRODUCER_ID",
  INVALID_TIMESTAMP: "INVALID_TIMESTAMP",
  OFFSET_OUT_OF_RANGE: "OFFSET_OUT_OF_RANGE",
  INVALID_OFFSET: "INVALID_REQUEST",
  INVALID_GROUP_ID: "INVALID_GROUP_ID",
  GROUP_ID_NOT_FOUND: "GROUP_ID_NOT_FOUND",
  NON_EMPTY_GROUP: "NON_EMPTY_GROUP",
  UNKNOWN_MEMBER_ID: "UNKNOWN_MEMBER_ID",
  FENCED_MEMBER_EPOCH: "FENCED_MEMBER_EPOCH",
  STALE_MEMBER_EPOCH: "STALE_MEMBER_EPOCH",
  // A commit for a partition the member no longer owns: the assignment moved on, so a classic
  // member must rejoin (REBALANCE_IN_PROGRESS makes every client do that).
  UNASSIGNED_PARTITION: "REBALANCE_IN_PROGRESS",
  UNSUPPORTED_ASSIGNOR: "UNSUPPORTED_ASSIGNOR",
  INCONSISTENT_GROUP_PROTOCOL: "INCONSISTENT_GROUP_PROTOCOL",
  INVALID_REGULAR_EXPRESSION: "INVALID_REGULAR_EXPRESSION",
  INVALID_SESSION_TIMEOUT: "INVALID_SESSION_TIMEOUT",
  GROUP_MAX_SIZE_REACHED: "GROUP_MAX_SIZE_REACHED",
  OFFSET_METADATA_TOO_LARGE: "OFFSET_METADATA_TOO_LARGE",
  STREAM_NOT_FOUND: "UNKNOWN_TOPIC_OR_PARTITION",
  STREAM_GONE: "UNKNOWN_TOPIC_OR_PARTITION",
  STREAM_CONFLICT: "TOPIC_ALREADY_EXISTS",
  STREAM_CLOSED: "INVALID_REQUEST",
  CONTENT_TYPE_MISMATCH: "INVALID_REQUEST",
  STREAM_SEQ_CONFLICT: "OUT_OF_ORDER_SEQUENCE_NUMBER",
  STALE_PRODUCER_EPOCH: "INVALID_PRODUCER_EPOCH",
  INVALID_PRODUCER_SEQUENCE: "OUT_OF_ORDER_SEQUENCE_NUMBER",
  OFFSET_GONE: "OFFSET_OUT_OF_RANGE",
  REQUEST_TIMED_OUT: "REQUEST_TIMED_OUT",
  // Retriable everywhere: a client refreshes metadata and retries on the same (only) broker.
  // Group APIs use COORDINATOR_NOT_AVAILABLE instead (see kafkaErrorCode).
  UNAVAILABLE: "NOT_LEADER_OR_FOLLOWER",
  INTERNAL: "UNKNOWN_SERVER_ERROR",
  // A record the topic refuses (e.g. a null key on a compacted topic): Kafka's INVALID_RECORD.
  INVALID_RECORD: "INVALID_RECORD",
  // Only WebSocket routes answer it; the bridge calls none.
  UPGRADE_REQUIRED: "UNKNOWN_SERVER_ERROR",
  // Raft groups (docs/RAFT.md): a client refreshes metadata and retries, as with a moved leader.
  NOT_LEADER: "NOT_LEADER_OR_FOLLOWER",
  FENCED_LEADER_EPOCH: "FENCED_LEADER_EPOCH",
  NOT_LEADER_OR_FOLLOWER: "NOT_LEADER_OR_FOLLOWER",
  NOT_ENOUGH_REPLICAS: "NOT_ENOUGH_REPLICAS",
  // Kafka's answer to an ElectLeaders (KIP-460) whose preferred replica could not take over.
  PREFERRED_LEADER_NOT_AVAILABLE: "PREFERRED_LEADER_NOT_AVAILABLE",
  // Kafka's AlterPartitionReassignments answer while another reassignment runs (KIP-455).
  REASSIGNMENT_IN_PROGRESS: "REASSIGNMENT_IN_PROGRESS",
  // Subscriptions (Pulsar's model) have no Kafka API; the bridge never reaches them.
  CONSUMER_BUSY: "UNKNOWN_SERVER_ERROR",
  NOT_ALLOWED: "INVALID_REQUEST",
  INVALID_MESSAGE_ID: "INVALID_REQUEST",
  SUBSCRIPTION_NOT_FOUND: "UNKNOWN_SERVER_ERROR",
  SUBSCRIPTION_HAS_CONSUMERS: "UNKNOWN_SERVER_ERROR",
  LEASE_NOT_FOUND: "UNKNOWN_SERVER_ERROR",
  // Tenants and namespaces (Pulsar's model): a topic created through the bridge in a namespace
  // that does not exist is refused as Kafka refuses a topic it cannot create; the admin codes
  // cannot arise (the bridge has no tenant or namespace APIs).
  NAMESPACE_NOT_FOUND: "INVALID_REQUEST",
  TENANT_NOT_FOUND: "INVALID_REQUEST",
  TENANT_ALREADY_EXISTS: "INVALID_REQUEST",
  TENANT_NOT_EMPTY: "INVALID_REQUEST",
  NAMESPACE_ALREADY_EXISTS: "INVALID_REQUEST",
  NAMESPACE_NOT_EMPTY: "INVALID_REQUEST",
  INVALID_POLICY: "INVALID_CONFIG",
  // Policy enforcement (docs/TENANTS.md): a backlog quota or a count limit refuses the request
  // (Kafka's POLICY_VIOLATION: not retried by clients); a produce held past the backlog quota's
  // hold time is Kafka's retriable REQUEST_TIMED_OUT. The consumer and subscription limits cannot
  // arise on the bridge (it has no subscriptions) and map the same way for completeness.
  BACKLOG_QUOTA_EXCEEDED: "POLICY_VIOLATION",
  BACKLOG_QUOTA_HOLD_TIMEOUT: "REQUEST_TIMED_OUT",
  MAX_PRODUCERS_REACHED: "POLICY_VIOLATION",
  MAX_CONSUMERS_REACHED: "POLICY_VIOLATION",
  MAX_SUBSCRIPTIONS_REACHED: "POLICY_VIOLATION",
  // Security (docs/SECURITY.md): the bridge's --token/--user credentials were refused, or the
  // principal lacks an ACL (Kafka's *_AUTHORIZATION_FAILED family; the topic one is what
  // clients report best), or a quota throttles (Kafka's THROTTLING_QUOTA_EXCEEDED).
  UNAUTHENTICATED: "SASL_AUTHENTICATION_FAILED",
  AUTH_NOT_CONFIGURED: "SASL_AUTHENTICATION_FAILED",
  NOT_AUTHORIZED: "TOPIC_AUTHORIZATION_FAILED",
  THROTTLED: "THROTTLING_QUOTA_EXCEEDED",
  USER_NOT_FOUND: "INVALID_REQUEST",
} as const satisfies Record<ErrorCode, KafkaErrorName>;

/** Which kind of API an error is answered on: group APIs expect coordinator errors for outages. */
export type ErrorContext = "partition" | "group" | "admin";

/**
 * The Kafka error code for an Edgelog error code. `UNAVAILABLE` becomes
 * COORDINATOR_NOT_AVAILABLE on group APIs (clients then look the coordinator up again and
 * retry) and REQUEST_TIMED_OUT on admin APIs; everything else follows {@link EDGELOG_TO_KAFKA}.
 */
export function kafkaErrorCode(code: ErrorCode, context: ErrorContext = "partition"): number {
  if (code === "UNAVAILABLE" && context === "group") return KafkaError.COORDINATOR_NOT_AVAILABLE;
  if (code === "UNAVAILABLE" && context === "admin") return KafkaError.REQUEST_TIMED_OUT;
  return KafkaError[EDGELOG_TO_KAFKA[code]];
}

/**
 * The Kafka error code for anything thrown while serving a request: an Edgelog error (by its
 * code), else UNKNOWN_SERVER_ERROR.
 */
export function kafkaErrorOf(e: unknown, context: ErrorContext = "partition"): number {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string" && Object.hasOwn(EDGELOG_TO_KAFKA, code)) return kafkaErrorCode(code as ErrorCode, context);
  return KafkaError.UNKNOWN_SERVER_ERROR;
}

/** A human-readable message for a thrown error (Kafka's error_message fields). */
export function errorMessageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
