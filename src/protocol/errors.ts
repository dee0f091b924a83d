/**
 * The one error-code table shared by the gateway, the Durable Objects and the SDK.
 *
 * Every error response body is JSON of shape {@link ErrorBody}. Clients switch on `code`
 * (stable, never renamed); `message` is for humans and may change. The server never
 * matches on message text and the SDK never guesses a code from an HTTP status.
 *
 * Names follow Kafka's error codes where one exists (kafka/common/protocol/Errors.java),
 * so users of Kafka recognise them: OFFSET_OUT_OF_RANGE, RECORD_TOO_LARGE,
 * OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, ...
 *
 * Pure module: no Workers imports (shared with the SDK).
 */

/** One row of the error table. */
export interface ErrorSpec {
  /** HTTP status the gateway answers with. */
  readonly httpStatus: number;
  /** True when the same request may succeed if retried unchanged (after a backoff). */
  readonly retriable: boolean;
  /** Default human-readable message. */
  readonly message: string;
}

export const ERRORS = {
  // ---- request shape ----
  INVALID_REQUEST: { httpStatus: 400, retriable: false, message: "The request is malformed or has fields of the wrong type." },
  INVALID_JSON: { httpStatus: 400, retriable: false, message: "The request body is not valid JSON." },
  INVALID_ENCODING: { httpStatus: 400, retriable: false, message: "A key, value or header is not valid for its declared encoding (e.g. malformed base64)." },
  INVALID_BATCH: { httpStatus: 400, retriable: false, message: "The binary record batch is malformed or its checksum does not match." },
  EMPTY_BATCH: { httpStatus: 400, retriable: false, message: "A produce request must carry at least one record." },
  UNSUPPORTED_MEDIA_TYPE: { httpStatus: 415, retriable: false, message: "Unsupported Content-Type." },
  NOT_ACCEPTABLE: { httpStatus: 406, retriable: false, message: "None of the Accept media types can be produced." },
  REQUEST_TOO_LARGE: { httpStatus: 413, retriable: false, message: "The request body exceeds the maximum request size." },
  RECORD_TOO_LARGE: { httpStatus: 413, retriable: false, message: "A record exceeds the topic's max.message.bytes." },
  NOT_FOUND: { httpStatus: 404, retriable: false, message: "No such route." },
  METHOD_NOT_ALLOWED: { httpStatus: 405, retriable: false, message: "Method not allowed on this route." },
  UPGRADE_REQUIRED: { httpStatus: 426, retriable: false, message: "This endpoint serves WebSocket upgrades only: send a GET with Upgrade: websocket." },

  // ---- topics ----
  INVALID_TOPIC_NAME: { httpStatus: 400, retriable: false, message: "Topic names are 1-249 characters of [a-zA-Z0-9._-], optionally prefixed by tenant/namespace/." },
  INVALID_PARTITIONS: { httpStatus: 400, retriable: false, message: "The partition count is invalid." },
  INVALID_CONFIG: { httpStatus: 400, retriable: false, message: "A topic config is unknown or has an invalid value." },
  TOPIC_ALREADY_EXISTS: { httpStatus: 409, retriable: false, message: "A topic with this name already exists." },
  UNKNOWN_TOPIC_OR_PARTITION: { httpStatus: 404, retriable: false, message: "The topic or partition does not exist." },
  PARTITION_DECREASE_NOT_ALLOWED: { httpStatus: 400, retriable: false, message: "The partition count of a topic can only be increased." },

  // ---- produce / idempotence ----
  OUT_OF_ORDER_SEQUENCE_NUMBER: { httpStatus: 409, retriable: false, message: "The producer sequence number is not the next expected one for this partition." },
  INVALID_PRODUCER_EPOCH: { httpStatus: 409, retriable: false, message: "The producer epoch is older than the current one: this producer has been fenced." },
  INVALID_PRODUCER_ID: { httpStatus: 400, retriable: false, message: "The producer id, epoch or sequence is malformed." },
  INVALID_TIMESTAMP: { httpStatus: 400, retriable: false, message: "A record timestamp is not a valid non-negative integer of milliseconds." },
  INVALID_RECORD: { httpStatus: 400, retriable: false, message: "A record is not valid for this topic (e.g. no key on a compacted topic)." },

  // ---- fetch / offsets ----
  OFFSET_OUT_OF_RANGE: { httpStatus: 416, retriable: false, message: "The offset is outside [logStartOffset, logEndOffset]." },
  INVALID_OFFSET: { httpStatus: 400, retriable: false, message: "The offset or offset spec is not valid." },

  // ---- consumer groups (Kafka's names; KIP-848 for the member epoch codes) ----
  INVALID_GROUP_ID: { httpStatus: 400, retriable: false, message: "Group ids are 1-249 characters of [a-zA-Z0-9._-]." },
  GROUP_ID_NOT_FOUND: { httpStatus: 404, retriable: false, message: "The group does not exist." },
  NON_EMPTY_GROUP: { httpStatus: 409, retriable: false, message: "The operation needs the group to have no members." },
  UNKNOWN_MEMBER_ID: { httpStatus: 409, retriable: false, message: "The member id is not a member of the group: rejoin with member epoch 0." },
  FENCED_MEMBER_EPOCH: { httpStatus: 409, retriable: false, message: "The member epoch is not the member's current epoch: release all partitions and rejoin with member epoch 0." },
  STALE_MEMBER_EPOCH: { httpStatus: 409, retriable: false, message: "The commit carries an older member epoch than the member's current one." },
  UNASSIGNED_PARTITION: { httpStatus: 409, retriable: false, message: "The member does not own this partition in the group's current assignment." },
  UNSUPPORTED_ASSIGNOR: { httpStatus: 400, retriable: false, message: "Unknown assignor: use range, roundrobin, sticky or cooperative-sticky." },
  INCONSISTENT_GROUP_PROTOCOL: { httpStatus: 409, retriable: false, message: "The group already uses another assignor." },
  INVALID_REGULAR_EXPRESSION: { httpStatus: 400, retriable: false, message: "The subscription regular expression is invalid." },
  INVALID_SESSION_TIMEOUT: { httpStatus: 400, retriable: false, message: "The session or rebalance timeout is out of range." },
  GROUP_MAX_SIZE_REACHED: { httpStatus: 409, retriable: false, message: "The group has reached its maximum number of members." },
  OFFSET_METADATA_TOO_LARGE: { httpStatus: 400, retriable: false, message: "The offset metadata string is too large." },

  // ---- subscriptions (Pulsar's ServerError names: ConsumerBusy, NotAllowed; docs/SUBSCRIPTIONS.md) ----
  CONSUMER_BUSY: { httpStatus: 409, retriable: false, message: "The subscription cannot take this consumer: it is exclusive and has one, or it is of another type." },
  NOT_ALLOWED: { httpStatus: 409, retriable: false, message: "The operation is not allowed on this subscription type (e.g. cumulative ack on shared or key_shared)." },
  INVALID_MESSAGE_ID: { httpStatus: 400, retriable: false, message: "The message id is malformed or names no message of the partition." },
  SUBSCRIPTION_NOT_FOUND: { httpStatus: 404, retriable: false, message: "The subscription does not exist on this topic." },
  LEASE_NOT_FOUND: { httpStatus: 404, retriable: false, message: "The lease does not exist, is settled, or has expired (its messages were redelivered)." },
  SUBSCRIPTION_HAS_CONSUMERS: { httpStatus: 409, retriable: false, message: "The subscription has connected consumers: close them first, or delete with force=true." },

  // ---- tenants and namespaces (Pulsar's model; docs/TENANTS.md) ----
  TENANT_NOT_FOUND: { httpStatus: 404, retriable: false, message: "The tenant does not exist." },
  TENANT_ALREADY_EXISTS: { httpStatus: 409, retriable: false, message: "A tenant with this name already exists." },
  TENANT_NOT_EMPTY: { httpStatus: 409, retriable: false, message: "The tenant still has namespaces: delete them first." },
  NAMESPACE_NOT_FOUND: { httpStatus: 404, retriable: false, message: "The namespace does not exist: create it first (only public/default exists from the start)." },
  NAMESPACE_ALREADY_EXISTS: { httpStatus: 409, retriable: false, message: "A namespace with this name already exists." },
  NAMESPACE_NOT_EMPTY: { httpStatus: 409, retriable: false, message: "The namespace still has topics: delete them first." },
  INVALID_POLICY: { httpStatus: 400, retriable: false, message: "A namespace or topic policy is unknown or has an invalid value." },

  // ---- policy enforcement (docs/TENANTS.md "What each policy promises"; Pulsar's ProducerBlockedQuotaExceeded*, ProducerBusy, ConsumerBusy) ----
  BACKLOG_QUOTA_EXCEEDED: {
    httpStatus: 409,
    retriable: false,
    message: "The topic's backlog is above its backlog quota (action producer_exception): produce is refused until subscriptions acknowledge.",
  },
  BACKLOG_QUOTA_HOLD_TIMEOUT: {
    httpStatus: 503,
    retriable: true,
    message: "The topic's backlog stayed above its backlog quota (action producer_request_hold) for the whole hold time: nothing was written, retry later.",
  },
  MAX_PRODUCERS_REACHED: { httpStatus: 409, retriable: false, message: "The topic partition has as many producers as its maxProducersPerTopic policy allows." },
  MAX_CONSUMERS_REACHED: { httpStatus: 409, retriable: false, message: "The subscription has as many consumers as its maxConsumersPerSubscription policy allows." },
  MAX_SUBSCRIPTIONS_REACHED: { httpStatus: 409, retriable: false, message: "The topic partition has as many subscriptions as its maxSubscriptionsPerTopic policy allows." },

  // ---- Durable Streams compatibility (/v1/stream/*, docs/DURABLE-STREAMS.md; statuses fixed by its PROTOCOL.md) ----
  STREAM_NOT_FOUND: { httpStatus: 404, retriable: false, message: "No stream exists at this path." },
  STREAM_GONE: { httpStatus: 410, retriable: false, message: "The stream was deleted but is retained for the forks that reference it." },
  STREAM_CONFLICT: {
    httpStatus: 409,
    retriable: false,
    message: "A stream exists at this path with a different configuration, or the path is held by a deleted stream that forks still reference.",
  },
  STREAM_CLOSED: { httpStatus: 409, retriable: false, message: "The stream is closed: no further appends are accepted." },
  CONTENT_TYPE_MISMATCH: { httpStatus: 409, retriable: false, message: "The Content-Type does not match the stream's content type." },
  STREAM_SEQ_CONFLICT: { httpStatus: 409, retriable: false, message: "Stream-Seq must be strictly greater (byte-wise) than the last one appended." },
  STALE_PRODUCER_EPOCH: { httpStatus: 403, retriable: false, message: "The producer epoch is older than the current one: this producer has been fenced." },
  INVALID_PRODUCER_SEQUENCE: { httpStatus: 400, retriable: false, message: "A new producer epoch must start at Producer-Seq 0." },
  OFFSET_GONE: { httpStatus: 410, retriable: false, message: "The offset is before the earliest retained position of the stream." },

  // ---- replication (Raft groups: metadata quorum, replicated partitions; docs/RAFT.md) ----
  NOT_LEADER: {
    httpStatus: 503,
    retriable: true,
    message: "This member is not the Raft leader of its group: retry at the leader named in details.leaderId (absent while an election runs).",
  },
  FENCED_LEADER_EPOCH: {
    httpStatus: 409,
    retriable: true,
    message: "The leader epoch in the request is older than the group's current one (Kafka's FENCED_LEADER_EPOCH, KIP-320): refresh metadata and retry.",
  },
  NOT_LEADER_OR_FOLLOWER: {
    httpStatus: 503,
    retriable: true,
    message: "This replica of a replicated partition is not its leader: retry at the replica named in details.leaderReplica (null while an election runs).",
  },
  NOT_ENOUGH_REPLICAS: {
    httpStatus: 503,
    retriable: true,
    message: "Fewer in-sync replicas than the topic's min.insync.replicas: an acks=all produce is refused (nothing appended).",
  },
  REASSIGNMENT_IN_PROGRESS: {
    httpStatus: 409,
    retriable: true,
    message: "A replica reassignment or membership change of this partition is running (or the leader has not committed in its term yet): retry when it has finished.",
  },
  PREFERRED_LEADER_NOT_AVAILABLE: {
    httpStatus: 503,
    retriable: true,
    message: "The leadership transfer to the replica asked for did not complete (it is down, lagging, or another replica won the election): retry.",
  },

  // ---- security (docs/SECURITY.md; Kafka's SASL_AUTHENTICATION_FAILED, *_AUTHORIZATION_FAILED, THROTTLING_QUOTA_EXCEEDED) ----
  UNAUTHENTICATED: { httpStatus: 401, retriable: false, message: "No valid credentials: send Authorization: Bearer <token> (or Basic to /v1/auth/token)." },
  NOT_AUTHORIZED: { httpStatus: 403, retriable: false, message: "The principal is not allowed this operation on this resource." },
  AUTH_NOT_CONFIGURED: {
    httpStatus: 503,
    retriable: false,
    message: "Authentication is not configured: set EDGELOG_AUTH (required with EDGELOG_JWT_SECRET or EDGELOG_JWKS, or none); only /v1/health is served.",
  },
  THROTTLED: { httpStatus: 429, retriable: true, message: "A client quota is exceeded: retry after throttleTimeMs." },
  USER_NOT_FOUND: { httpStatus: 404, retriable: false, message: "No SCRAM user with this name." },

  // ---- server ----
  REQUEST_TIMED_OUT: { httpStatus: 504, retriable: true, message: "The request timed out before it completed." },
  UNAVAILABLE: { httpStatus: 503, retriable: true, message: "The partition is temporarily unavailable (Durable Object reset or overloaded)." },
  INTERNAL: { httpStatus: 500, retriable: true, message: "Unexpected server error." },
} as const satisfies Record<string, ErrorSpec>;

/** A stable error code from {@link ERRORS}. */
export type ErrorCode = keyof typeof ERRORS;

/**
 * JSON body of every error response.
 * `details` carries machine-readable context, e.g. for OFFSET_OUT_OF_RANGE
 * `{ logStartOffset, logEndOffset }`.
 */
export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    retriable: boolean;
    details?: Record<string, unknown>;
  };
}

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERRORS, code);
}

/**
 * An expected failure with a stable code. Thrown by routes/middleware and turned into
 * an {@link ErrorBody} response by the app's one `onError`.
 */
export class EdgelogError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly retriable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>) {
    const spec: ErrorSpec = ERRORS[code];
    super(message ?? spec.message);
    this.name = "EdgelogError";
    this.code = code;
    this.httpStatus = spec.httpStatus;
    this.retriable = spec.retriable;
    this.details = details;
  }

  toBody(): ErrorBody {
    const error: ErrorBody["error"] = { code: this.code, message: this.message, retriable: this.retriable };
    if (this.details !== undefined) error.details = this.details;
    return { error };
  }
}

/**
 * The typed "expected failure" result a Durable Object RPC method returns instead of
 * throwing (thrown errors lose their class across the RPC boundary).
 */
export interface ErrorResult {
  ok: false;
  code: ErrorCode;
  message?: string;
  details?: Record<string, unknown>;
}

/** A successful RPC result: `{ok: true}` and the fields of `T`. */
export type Ok<T> = { ok: true } & T;
/**
 * What a Durable Object RPC method answers: {@link Ok} or an expected failure ({@link ErrorResult}).
 * A thrown error is a bug or a platform failure.
 */
export type RpcResult<T> = Ok<T> | ErrorResult;

export function errorResult(code: ErrorCode, message?: string, details?: Record<string, unknown>): ErrorResult {
  const r: ErrorResult = { ok: false, code };
  if (message !== undefined) r.message = message;
  if (details !== undefined) r.details = details;
  return r;
}

/** Turns an RPC {@link ErrorResult} into a throwable {@link EdgelogError}. */
export function toEdgelogError(r: ErrorResult): EdgelogError {
  return new EdgelogError(r.code, r.message, r.details);
}
