/**
 * Low-level HTTP client: one method per route of docs/PROTOCOL.md, typed with the shared wire
 * types. No batching, retries or state: the producer, consumer and admin build on it.
 *
 * Portable: uses only `fetch`, `AbortController`, `TextEncoder/TextDecoder` and timers, so it
 * runs on Node >= 22, browsers, Cloudflare Workers, Deno and Bun.
 */
import {
  BATCH_MEDIA_TYPE,
  type AlterTopicRequest,
  type CreateTopicRequest,
  type InitProducerResponse,
  type JsonProduceRequest,
  type ListOffsetsResponse,
  type DeleteRecordsResponse,
  type PartitionLeaderResponse,
  type ReplicaReassignmentResponse,
  type PartitionBounds,
  type ProduceAcceptedResponse,
  type ProduceResponse,
  type ProduceSummaryResponse,
  PRODUCE_SUMMARY_MEDIA_TYPE,
  type TopicDescription,
  type TopicSummary,
  type AlterGroupRequest,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type GroupConfigs,
  type GroupDescription,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type ListGroupsResponse,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  type ResetOffsetsRequest,
  type ResetOffsetsResponse,
} from "../../src/protocol/index.ts";
import { ATTR_CONTROL, CodecError, decodeBatches, type LogRecord } from "../../src/codec/index.ts";
import { EdgelogClientError, errorFromBody, errorFromNetwork, protocolViolation } from "./errors.ts";
import { apiOf, Emitter, type InstrumentationEvents } from "./instrumentation.ts";

/** Options of {@link EdgelogClient}. */
export interface EdgelogClientOptions {
  /** Base URL of the gateway, e.g. `http://127.0.0.1:8787` (a path prefix is kept; routes start with `/v1`). */
  baseUrl: string;
  /**
   * The fetch implementation (tests, custom agents, a Worker service binding's `fetch`). It
   * must take a byte body's contents when called, as the Fetch standard's does (a BufferSource
   * body is copied when the request is made): the {@link Producer} reuses a batch's buffer once
   * the batch's request is answered. @default globalThis.fetch
   */
  fetch?: typeof fetch;
  /** Extra headers sent with every request (e.g. `authorization`). */
  headers?: Record<string, string>;
  /**
   * How long to wait for an answer, in ms, before failing with REQUEST_TIMED_OUT. A long-poll
   * fetch waits `maxWaitMs` longer. @default 30000
   */
  requestTimeoutMs?: number;
  /**
   * A JWT bearer token (docs/SECURITY.md), or a provider of one. A provider is called again
   * {@link TOKEN_REFRESH_MARGIN_MS} before the `exp` of the token it gave (or on every request
   * when the token has no `exp`).
   */
  token?: string | (() => string | Promise<string>);
  /**
   * A SCRAM user's name and password: exchanged at `POST /v1/auth/token` (HTTP Basic) for a
   * short-lived token, renewed before it expires. Use TLS: the password crosses the wire.
   */
  username?: string;
  password?: string;
  /** Sent as `Edgelog-Client-Id` (Kafka's client.id): quotas may be keyed by it. */
  clientId?: string;
}

/** A provided or exchanged token is renewed this long before its `exp`. */
export const TOKEN_REFRESH_MARGIN_MS = 30_000;
/** Answer header of an admitted request that used up its quota (ms to wait before the next request). */
export const THROTTLE_TIME_HEADER = "Edgelog-Throttle-Time-Ms";

/** Per-call options. */
export interface CallOptions {
  /** Aborts the request; the call then rejects with `signal.reason` (not an EdgelogClientError). */
  signal?: AbortSignal;
}

/** Query of {@link EdgelogClient.fetchRecords}; defaults and bounds are the server's (PROTOCOL.md, Fetch). */
export interface FetchRequest extends CallOptions {
  /** First offset wanted. Records below it in the first returned batch are skipped. */
  offset: number;
  /** @default 500 (server), max 10000 */
  maxRecords?: number;
  /** Stored batch bytes. The first batch is returned even if larger (KIP-74). @default 1 MiB (server), max 16 MiB */
  maxBytes?: number;
  /** Long-poll: how long the server may wait for `minBytes`, in ms. @default 0 (server), max 60000 */
  maxWaitMs?: number;
  /** @default 1 (server) */
  minBytes?: number;
}

/** Answer of {@link EdgelogClient.fetchRecords}: decoded records with offsets in `[offset, nextOffset)`. */
export interface FetchResult extends PartitionBounds {
  topic: string;
  partition: number;
  records: LogRecord[];
  /** Offset to fetch next (the requested offset when nothing was returned). */
  nextOffset: number;
}

/**
 * ListOffsets spec (PROTOCOL.md, ListOffsets): `earliest` = log start offset; `latest` = log end
 * offset; `max_timestamp` = the first record with the largest timestamp (KIP-734);
 * `{timestamp}` = the first offset whose timestamp is >= it (Kafka's offsetsForTimes).
 */
export type OffsetSpec = "earliest" | "latest" | "max_timestamp" | { timestamp: number };

/** @default 30000 ms */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Wire name of the binary fetch bounds headers (PROTOCOL.md, Fetch). */
export const NEXT_OFFSET_HEADER = "Edgelog-Next-Offset";
export const HIGH_WATERMARK_HEADER = "Edgelog-High-Watermark";
export const LOG_START_OFFSET_HEADER = "Edgelog-Log-Start-Offset";

const JSON_MEDIA_TYPE = "application/json";

interface HttpRequest extends CallOptions {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Headers of this request only (they win over the client's). */
  headers?: Record<string, string>;
  /** Send no bearer token (the token exchange itself). */
  anonymous?: boolean;
  path: string;
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  bytes?: Uint8Array;
  accept?: string;
  extraTimeoutMs?: number;
}

interface HttpAnswer {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

/**
 * Path of a topic: `name` or `tenant/namespace/name`, each segment percent-encoded.
 * Names are otherwise not validated here (the server answers INVALID_TOPIC_NAME), except for
 * segments that a URL would resolve away: `.` and `..` (also when percent-encoded, per the
 * WHATWG URL standard) would turn `deleteTopic("../groups/g")` into `DELETE /v1/groups/g`,
 * and an empty segment would address another route.
 * @throws EdgelogClientError INVALID_TOPIC_NAME (httpStatus 0: nothing was sent).
 */
export function topicPath(topic: string): string {
  const segments = topic.split("/");
  if (segments.some(isUnsafeSegment)) {
    throw new EdgelogClientError("INVALID_TOPIC_NAME", `Invalid topic name ${JSON.stringify(topic)}: use "topic" or "tenant/namespace/topic", no empty, "." or ".." part.`, {
      httpStatus: 0,
    });
  }
  return `/v1/topics/${segments.map(encodeURIComponent).join("/")}`;
}

/**
 * Path of a consumer group.
 * @throws EdgelogClientError INVALID_GROUP_ID for "", "." and ".." (see {@link topicPath}).
 */
export function groupPath(groupId: string): string {
  if (isUnsafeSegment(groupId)) {
    throw new EdgelogClientError("INVALID_GROUP_ID", `Invalid group id ${JSON.stringify(groupId)}.`, { httpStatus: 0 });
  }
  return `/v1/groups/${encodeURIComponent(groupId)}`;
}

function isUnsafeSegment(segment: string): boolean {
  return segment === "" || segment === "." || segment === "..";
}

/**
 * The low-level Edgelog HTTP client. Every method rejects with an {@link EdgelogClientError}
 * whose code comes from the server's JSON error body (UNAVAILABLE / REQUEST_TIMED_OUT for
 * network failures), or with `signal.reason` when the caller aborted.
 */
export class EdgelogClient {
  readonly baseUrl: string;
  readonly requestTimeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  readonly #tokenSource: (() => Promise<string>) | null;
  #token: { value: string; refreshAtMs: number } | null = null;
  #tokenInflight: Promise<string> | null = null;
  /** No request leaves before this time: the server's throttle time (KIP-219: the client backs off). */
  #throttledUntilMs = 0;
  /**
   * Instrumentation events (src/instrumentation.ts): `request` per HTTP exchange, `throttle`,
   * `fetch` per fetch answer; Producers and Consumers built on this client emit `batch` and
   * `request_retry` here too.
   */
  readonly instrumentation = new Emitter<InstrumentationEvents>();

  /** @throws TypeError if `baseUrl` is not an absolute URL, or when both `token` and `username` are given. */
  constructor(options: EdgelogClientOptions) {
    this.baseUrl = new URL(options.baseUrl).href.replace(/\/+$/, "");
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    // Unbound global fetch throws "Illegal invocation" on Workers: always call it as a global.
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#headers = { ...options.headers };
    if (options.clientId !== undefined) this.#headers["edgelog-client-id"] = options.clientId;
    if (options.token !== undefined && options.username !== undefined) throw new TypeError("give token or username/password, not both");
    const token = options.token;
    if (typeof token === "string") this.#tokenSource = async () => token;
    else if (token !== undefined) this.#tokenSource = async () => token();
    else if (options.username !== undefined) {
      const { username, password = "" } = options;
      this.#tokenSource = async () => (await this.issueToken(username, password)).token;
    } else this.#tokenSource = null;
  }

  // ---- security (docs/SECURITY.md) ----

  /** `POST /v1/auth/token`: a SCRAM user's password for a short-lived token. Errors: UNAUTHENTICATED, THROTTLED, AUTH_NOT_CONFIGURED. */
  async issueToken(username: string, password: string, options?: CallOptions & { ttlSeconds?: number }): Promise<TokenResponse> {
    const basic = btoa(String.fromCharCode(...new TextEncoder().encode(`${username}:${password}`)));
    return this.#json<TokenResponse>({
      method: "POST",
      path: "/v1/auth/token",
      query: { ttlSeconds: options?.ttlSeconds },
      headers: { authorization: `Basic ${basic}` },
      anonymous: true,
      ...(options?.signal ? { signal: options.signal } : {}),
    });
  }

  /** `GET /v1/auth/whoami`: the principal the gateway sees. */
  async whoami(options?: CallOptions): Promise<{ principal: string; superuser: boolean }> {
    return this.#json({ method: "GET", path: "/v1/auth/whoami", ...options });
  }

  /** Any security admin route (Admin wraps them with types). */
  async securityRequest<T>(method: "GET" | "POST" | "PUT" | "DELETE", path: string, o: { query?: Record<string, string | undefined>; json?: unknown } & CallOptions = {}): Promise<T> {
    const answer = await this.#send({ method, path, accept: JSON_MEDIA_TYPE, ...o });
    if (answer.body.length === 0) return undefined as T;
    return JSON.parse(new TextDecoder().decode(answer.body)) as T;
  }

  /** Holds every later request of this client for `ms` (capped at 5 minutes, the server's cap). */
  /**
   * Listens to an instrumentation event, as kafkajs's `client.on(client.events.REQUEST, ...)`:
   * `request`, `request_retry`, `throttle`, `batch`, `fetch` ({@link InstrumentationEvents}).
   * @returns the function that removes the listener
   */
  on<K extends keyof InstrumentationEvents>(event: K, listener: InstrumentationEvents[K]): () => void {
    return this.instrumentation.on(event, listener);
  }

  #throttle(ms: number): void {
    if (!Number.isFinite(ms) || ms <= 0) return;
    this.instrumentation.emit("throttle", { throttleTimeMs: ms });
    this.#throttledUntilMs = Math.max(this.#throttledUntilMs, Date.now() + Math.min(ms, 300_000));
  }

  /** The bearer token to send, renewed before its `exp`. */
  async #bearer(): Promise<string | null> {
    if (this.#tokenSource === null) return null;
    if (this.#token !== null && Date.now() < this.#token.refreshAtMs) return this.#token.value;
    this.#tokenInflight ??= this.#tokenSource().then(
      (value) => {
        const exp = jwtExpMs(value);
        this.#token = { value, refreshAtMs: exp === null ? 0 : exp - TOKEN_REFRESH_MARGIN_MS };
        this.#tokenInflight = null;
        return value;
      },
      (e: unknown) => {
        this.#tokenInflight = null;
        throw e;
      },
    );
    return this.#tokenInflight;
  }

  // ---- topics (admin) ----

  /** `POST /v1/topics`. Errors: INVALID_TOPIC_NAME, INVALID_PARTITIONS, INVALID_CONFIG, TOPIC_ALREADY_EXISTS. */
  async createTopic(request: CreateTopicRequest, options?: CallOptions): Promise<TopicDescription> {
    return this.#json<TopicDescription>({ method: "POST", path: "/v1/topics", json: request, ...options });
  }

  /** `GET /v1/topics`: every topic, sorted by full name. */
  async listTopics(options?: CallOptions): Promise<{ topics: TopicSummary[] }> {
    return this.#json<{ topics: TopicSummary[] }>({ method: "GET", path: "/v1/topics", ...options });
  }

  /** `GET /v1/topics/{topic}`: configs and per-partition bounds. Errors: UNKNOWN_TOPIC_OR_PARTITION. */
  async describeTopic(topic: string, options?: CallOptions): Promise<TopicDescription> {
    return this.#json<TopicDescription>({ method: "GET", path: topicPath(topic), ...options });
  }

  /** `PATCH /v1/topics/{topic}`. Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS, PARTITION_DECREASE_NOT_ALLOWED, INVALID_CONFIG. */
  async alterTopic(topic: string, request: AlterTopicRequest, options?: CallOptions): Promise<TopicDescription> {
    return this.#json<TopicDescription>({ method: "PATCH", path: topicPath(topic), json: request, ...options });
  }

  /** `DELETE /v1/topics/{topic}`: removes the topic and its data. Errors: UNKNOWN_TOPIC_OR_PARTITION. */
  async deleteTopic(topic: string, options?: CallOptions): Promise<void> {
    await this.#send({ method: "DELETE", path: topicPath(topic), ...options });
  }

  /**
   * `POST /v1/topics/{topic}/partitions/{partition}/delete-records` (KIP-107): moves the
   * partition's log start offset to `offset` (-1 = the high watermark); answers the new log start.
   * At or below the log start it is a no-op. Errors: OFFSET_OUT_OF_RANGE (above the high watermark,
   * or negative other than -1), INVALID_OFFSET, UNKNOWN_TOPIC_OR_PARTITION.
   */
  async deleteRecords(topic: string, partition: number, offset: number, options?: CallOptions): Promise<DeleteRecordsResponse> {
    return this.#json<DeleteRecordsResponse>({ method: "POST", path: `${topicPath(topic)}/partitions/${partition}/delete-records`, json: { offset }, ...options });
  }

  /**
   * `POST /v1/topics/{topic}/partitions/{partition}/leader` (Kafka's preferred leader election,
   * KIP-460; Raft's TimeoutNow): makes replica `replica` ("r1".."r3") the partition's leader and
   * answers once it leads (`transferred` false: it already did). Needs ALTER on the cluster.
   * Errors: PREFERRED_LEADER_NOT_AVAILABLE (retriable: the replica did not take over within 5 s),
   * INVALID_REQUEST (not a replica of the partition), UNKNOWN_TOPIC_OR_PARTITION.
   */
  async transferLeadership(topic: string, partition: number, replica: string, options?: CallOptions): Promise<PartitionLeaderResponse> {
    return this.#json<PartitionLeaderResponse>({ method: "POST", path: `${topicPath(topic)}/partitions/${partition}/leader`, json: { replica }, ...options });
  }

  /**
   * Replica reassignment of a replicated partition (Kafka's AlterPartitionReassignments,
   * KIP-455, as Raft membership changes): a new replica (optionally at a location hint) replaces
   * `replace`; answers once it is a voter and `replace` is removed and destroyed.
   * Errors: INVALID_REQUEST, REASSIGNMENT_IN_PROGRESS (retriable), REQUEST_TIMED_OUT (retriable:
   * the new replica has not caught up yet; a retry resumes), UNKNOWN_TOPIC_OR_PARTITION.
   */
  async reassignReplica(topic: string, partition: number, replace: string, location?: string, options?: CallOptions): Promise<ReplicaReassignmentResponse> {
    return this.#json<ReplicaReassignmentResponse>({
      method: "POST",
      path: `${topicPath(topic)}/partitions/${partition}/replicas`,
      json: location === undefined ? { replace } : { replace, location },
      ...options,
    });
  }

  // ---- produce ----

  /**
   * JSON produce: `POST /v1/topics/{topic}/records` (server partitions) or, with `partition`,
   * `POST /v1/topics/{topic}/partitions/{partition}/records`.
   * `acks` (PROTOCOL.md, Produce): "all" (the default) and 1 answer offsets once the append is
   * durable; 0 answers `{topic, accepted}` once the request is validated, before the append,
   * which may still fail unreported.
   * Errors: EMPTY_BATCH, RECORD_TOO_LARGE, REQUEST_TOO_LARGE, INVALID_ENCODING, UNKNOWN_TOPIC_OR_PARTITION,
   * OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNAVAILABLE.
   */
  async produce(topic: string, request: JsonProduceRequest, options: CallOptions & { partition?: number; acks: 0 }): Promise<ProduceAcceptedResponse>;
  async produce(topic: string, request: JsonProduceRequest, options?: CallOptions & { partition?: number; acks?: "all" | 1 }): Promise<ProduceResponse>;
  async produce(topic: string, request: JsonProduceRequest, options?: CallOptions & { partition?: number; acks?: ProduceAcks }): Promise<ProduceResponse | ProduceAcceptedResponse> {
    const path = options?.partition === undefined ? `${topicPath(topic)}/records` : `${topicPath(topic)}/partitions/${options.partition}/records`;
    return this.#json<ProduceResponse>({ method: "POST", path, query: acksQuery(options?.acks), json: request, signal: options?.signal });
  }

  /**
   * Binary produce of one encoded record batch (src/codec, baseOffset 0; producer id, epoch and
   * base sequence in its header) to one partition. `acks` as {@link produce}.
   * Errors: as {@link produce}, plus INVALID_BATCH.
   */
  async produceBatch(topic: string, partition: number, batch: Uint8Array, options: CallOptions & { acks: 0 }): Promise<ProduceAcceptedResponse>;
  async produceBatch(topic: string, partition: number, batch: Uint8Array, options?: CallOptions & { acks?: "all" | 1 }): Promise<ProduceResponse>;
  async produceBatch(topic: string, partition: number, batch: Uint8Array, options?: CallOptions & { acks?: ProduceAcks }): Promise<ProduceResponse | ProduceAcceptedResponse> {
    return this.#json<ProduceResponse>({
      method: "POST",
      path: `${topicPath(topic)}/partitions/${partition}/records`,
      query: acksQuery(options?.acks),
      bytes: batch,
      signal: options?.signal,
    });
  }

  /**
   * Binary produce of one record batch, answered compactly ({@link ProduceSummaryResponse}:
   * the offset range and LogAppendTime, as Kafka's ProduceResponse), which spares client and
   * server one JSON entry per record. Record i of the batch got offset `baseOffset + i`.
   * Errors: as {@link produceBatch}; a protocol error if the answer is not a summary.
   */
  async produceBatchSummary(topic: string, partition: number, batch: Uint8Array, options?: CallOptions & { acks?: "all" | 1 }): Promise<ProduceSummaryResponse> {
    const r = await this.#json<ProduceSummaryResponse>({
      method: "POST",
      path: `${topicPath(topic)}/partitions/${partition}/records`,
      query: acksQuery(options?.acks),
      bytes: batch,
      accept: PRODUCE_SUMMARY_MEDIA_TYPE,
      signal: options?.signal,
    });
    if (typeof r.baseOffset !== "number" || typeof r.lastOffset !== "number") throw protocolViolation(200, "the produce answer is not a summary (baseOffset, lastOffset)");
    return r;
  }

  /** `POST /v1/producers` (Kafka InitProducerId, KIP-98): a new producer id with epoch 0. */
  async initProducerId(options?: CallOptions): Promise<InitProducerResponse> {
    return this.#json<InitProducerResponse>({ method: "POST", path: "/v1/producers", json: {}, ...options });
  }

  // ---- fetch / offsets ----

  /**
   * Binary fetch (`Accept: application/vnd.edgelog.batch`): decodes the returned record
   * batches and keeps the records in `[offset, nextOffset)`: the first batch may start below
   * `offset` (PROTOCOL.md), and control batches are skipped. Bounds come from the
   * Edgelog-Next-Offset / -High-Watermark / -Log-Start-Offset headers.
   *
   * The request timeout is extended by `maxWaitMs`.
   * Errors: OFFSET_OUT_OF_RANGE (details `{logStartOffset, logEndOffset, highWatermark}`),
   * UNKNOWN_TOPIC_OR_PARTITION, INVALID_OFFSET, UNAVAILABLE; INTERNAL when the answer breaks the protocol.
   */
  async fetchRecords(topic: string, partition: number, request: FetchRequest): Promise<FetchResult> {
    const startMs = Date.now();
    const answer = await this.#send({
      method: "GET",
      path: `${topicPath(topic)}/partitions/${partition}/records`,
      query: {
        offset: request.offset,
        maxRecords: request.maxRecords,
        maxBytes: request.maxBytes,
        maxWaitMs: request.maxWaitMs,
        minBytes: request.minBytes,
      },
      accept: BATCH_MEDIA_TYPE,
      extraTimeoutMs: request.maxWaitMs ?? 0,
      signal: request.signal,
    });
    const nextOffset = offsetHeader(answer, NEXT_OFFSET_HEADER);
    const highWatermark = offsetHeader(answer, HIGH_WATERMARK_HEADER);
    const logStartOffset = offsetHeader(answer, LOG_START_OFFSET_HEADER);
    let batches;
    try {
      batches = decodeBatches(answer.body);
    } catch (e) {
      if (!(e instanceof CodecError)) throw e;
      throw protocolViolation(answer.status, `undecodable fetch body: ${e.message}`, { contentType: answer.headers.get("content-type") });
    }
    const records: LogRecord[] = [];
    for (const batch of batches) {
      if ((batch.header.attributes & ATTR_CONTROL) !== 0) continue;
      for (const record of batch.records) {
        if (record.offset >= request.offset && record.offset < nextOffset) records.push(record);
      }
    }
    if (this.instrumentation.has("fetch")) {
      this.instrumentation.emit("fetch", {
        topic,
        partition,
        offset: request.offset,
        records: records.length,
        bytes: answer.body.length,
        nextOffset,
        highWatermark,
        lag: Math.max(0, highWatermark - nextOffset),
        durationMs: Date.now() - startMs,
      });
    }
    return { topic, partition, records, nextOffset, highWatermark, logStartOffset };
  }

  /**
   * `GET /v1/topics/{topic}/partitions/{partition}/offsets?spec=`. `offset` is null when no
   * record qualifies (timestamp, max_timestamp). Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_OFFSET.
   */
  async listOffsets(topic: string, partition: number, spec: OffsetSpec, options?: CallOptions): Promise<ListOffsetsResponse> {
    const query = typeof spec === "string" ? { spec } : { spec: "timestamp", timestamp: spec.timestamp };
    return this.#json<ListOffsetsResponse>({
      method: "GET",
      path: `${topicPath(topic)}/partitions/${partition}/offsets`,
      query,
      ...options,
    });
  }

  // ---- subscriptions (PROTOCOL.md, Subscriptions) ----

  /**
   * The `ws:`/`wss:` URL of a WebSocket route (`path` under this client's base URL) with
   * `query`, carrying the bearer token as the `token` parameter when the client has one
   * (a browser cannot set headers on a WebSocket).
   */
  async webSocketUrl(path: string, query: Record<string, string> = {}): Promise<string> {
    const url = new URL(this.baseUrl + path);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const token = await this.#bearer();
    if (token !== null) url.searchParams.set("token", token);
    return url.href;
  }

  /**
   * `POST /v1/topics/{topic}/subscriptions/{subscription}/seek`: resets the cursor to the first
   * message with timestamp >= T (every partition) or to a message id (its partition); connected
   * consumers are closed with 4002 and resume there. Errors: SUBSCRIPTION_NOT_FOUND, INVALID_MESSAGE_ID.
   */
  async seekSubscription(
    topic: string,
    subscription: string,
    target: { timestamp: number } | { messageId: string } | { position: "earliest" | "latest" },
    options?: CallOptions,
  ): Promise<void> {
    await this.#json<unknown>({ method: "POST", path: `${topicPath(topic)}/subscriptions/${encodeURIComponent(subscription)}/seek`, json: target, ...options });
  }

  // ---- consumer groups (PROTOCOL.md, Consumer groups) ----

  /**
   * `POST /v1/groups/{group}/heartbeat` (KIP-848 ConsumerGroupHeartbeat). Errors: UNKNOWN_MEMBER_ID,
   * FENCED_MEMBER_EPOCH, INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED, INVALID_GROUP_ID,
   * INVALID_REGULAR_EXPRESSION, INVALID_SESSION_TIMEOUT, UNSUPPORTED_ASSIGNOR.
   */
  async heartbeat(groupId: string, request: ConsumerGroupHeartbeatRequest, options?: CallOptions): Promise<ConsumerGroupHeartbeatResponse> {
    return this.#json<ConsumerGroupHeartbeatResponse>({ method: "POST", path: `${groupPath(groupId)}/heartbeat`, json: request, ...options });
  }

  /** `POST /v1/groups/{group}/leave`. Errors: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH. */
  async leaveGroup(groupId: string, request: LeaveGroupRequest, options?: CallOptions): Promise<LeaveGroupResponse> {
    return this.#json<LeaveGroupResponse>({ method: "POST", path: `${groupPath(groupId)}/leave`, json: request, ...options });
  }

  /**
   * `POST /v1/groups/{group}/offsets`: commits (all or none) the next offsets to read.
   * Errors: STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, UNASSIGNED_PARTITION,
   * UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE.
   */
  async commitOffsets(groupId: string, request: OffsetCommitRequest, options?: CallOptions): Promise<OffsetCommitResponse> {
    return this.#json<OffsetCommitResponse>({ method: "POST", path: `${groupPath(groupId)}/offsets`, json: request, ...options });
  }

  /**
   * `POST /v1/groups/{group}/offsets/fetch`: where to start each partition (committed offset,
   * else `autoOffsetReset`); per-partition `error` OFFSET_OUT_OF_RANGE under "none".
   */
  async fetchOffsets(groupId: string, request: OffsetFetchRequest, options?: CallOptions): Promise<OffsetFetchResponse> {
    return this.#json<OffsetFetchResponse>({ method: "POST", path: `${groupPath(groupId)}/offsets/fetch`, json: request, ...options });
  }

  /** `GET /v1/groups` (eventually consistent; describe is authoritative). */
  async listGroups(options?: CallOptions): Promise<ListGroupsResponse> {
    return this.#json<ListGroupsResponse>({ method: "GET", path: "/v1/groups", ...options });
  }

  /** `GET /v1/groups/{group}`: state, members, committed offsets and lag. Errors: GROUP_ID_NOT_FOUND. */
  async describeGroup(groupId: string, options?: CallOptions): Promise<GroupDescription> {
    return this.#json<GroupDescription>({ method: "GET", path: groupPath(groupId), ...options });
  }

  /** `PATCH /v1/groups/{group}`: group configs. Errors: INVALID_CONFIG. */
  async alterGroup(groupId: string, request: AlterGroupRequest, options?: CallOptions): Promise<{ configs: GroupConfigs }> {
    return this.#json<{ configs: GroupConfigs }>({ method: "PATCH", path: groupPath(groupId), json: request, ...options });
  }

  /** `POST /v1/groups/{group}/reset-offsets` (only while the group has no members). Errors: NON_EMPTY_GROUP, UNKNOWN_TOPIC_OR_PARTITION. */
  async resetOffsets(groupId: string, request: ResetOffsetsRequest, options?: CallOptions): Promise<ResetOffsetsResponse> {
    return this.#json<ResetOffsetsResponse>({ method: "POST", path: `${groupPath(groupId)}/reset-offsets`, json: request, ...options });
  }

  /** `DELETE /v1/groups/{group}` (only while the group has no members). Errors: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP. */
  async deleteGroup(groupId: string, options?: CallOptions): Promise<void> {
    await this.#send({ method: "DELETE", path: groupPath(groupId), ...options });
  }

  // ---- transport ----

  /**
   * `GET /v1/metrics`: the Prometheus text exposition (version 0.0.4) of the whole deployment
   * (docs/OBSERVABILITY.md). Needs DESCRIBE on the cluster when auth is on.
   */
  async metrics(options?: CallOptions): Promise<string> {
    const answer = await this.#send({ method: "GET", path: "/v1/metrics", accept: "text/plain", ...options });
    return new TextDecoder().decode(answer.body);
  }

  async #json<T>(request: HttpRequest): Promise<T> {
    const answer = await this.#send({ accept: JSON_MEDIA_TYPE, ...request });
    try {
      return JSON.parse(new TextDecoder().decode(answer.body)) as T;
    } catch {
      throw protocolViolation(answer.status, "the answer is not JSON", { contentType: answer.headers.get("content-type") });
    }
  }

  /** One HTTP exchange, body read in full under the timeout. Non-2xx answers become errors from their body. */
  async #send(request: HttpRequest): Promise<HttpAnswer> {
    const url = new URL(this.baseUrl + request.path);
    for (const [k, v] of Object.entries(request.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { ...this.#headers, ...request.headers };
    if (request.accept !== undefined) headers["accept"] = request.accept;
    if (request.anonymous !== true && this.#tokenSource !== null) {
      const token = await this.#bearer();
      if (token !== null) headers["authorization"] = `Bearer ${token}`;
    }
    const waitMs = this.#throttledUntilMs - Date.now();
    if (waitMs > 0) await sleepUnlessAborted(waitMs, request.signal);
    let body: BodyInit | undefined;
    if (request.bytes !== undefined) {
      headers["content-type"] = BATCH_MEDIA_TYPE;
      body = request.bytes as Uint8Array<ArrayBuffer>;
    } else if (request.json !== undefined) {
      headers["content-type"] = JSON_MEDIA_TYPE;
      body = JSON.stringify(request.json);
    }

    const callerSignal = request.signal;
    callerSignal?.throwIfAborted();
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        controller.abort();
      },
      this.requestTimeoutMs + (request.extraTimeoutMs ?? 0),
    );
    const onAbort = (): void => controller.abort(callerSignal?.reason);
    callerSignal?.addEventListener("abort", onAbort, { once: true });
    const startMs = Date.now();
    const observed = this.instrumentation.has("request");
    const emit = (status: number, code: string | null, responseBytes: number): void => {
      if (!observed) return;
      const requestBytes = body === undefined ? 0 : typeof body === "string" ? new TextEncoder().encode(body).length : (body as Uint8Array).length;
      this.instrumentation.emit("request", {
        api: apiOf(request.method, request.path),
        method: request.method,
        path: request.path,
        status,
        code,
        durationMs: Date.now() - startMs,
        requestBytes,
        responseBytes,
      });
    };
    try {
      let res: Response;
      let bytes: Uint8Array;
      try {
        res = await this.#fetch(url.href, { method: request.method, headers, body, signal: controller.signal });
        bytes = new Uint8Array(await res.arrayBuffer());
      } catch (e) {
        if (callerSignal?.aborted) throw callerSignal.reason;
        const err = errorFromNetwork(e, timedOut);
        emit(0, err.code, 0);
        throw err;
      }
      const throttle = Number(res.headers.get(THROTTLE_TIME_HEADER) ?? 0);
      if (res.status < 200 || res.status > 299) {
        const err = errorFromBody(res.status, bytes);
        emit(res.status, err.code, bytes.length);
        if (err.code === "THROTTLED") this.#throttle(Number(err.details?.throttleTimeMs ?? Number(res.headers.get("retry-after") ?? 1) * 1000));
        if (err.code === "UNAUTHENTICATED" && request.anonymous !== true) this.#token = null;
        throw err;
      }
      emit(res.status, null, bytes.length);
      if (throttle > 0) this.#throttle(throttle);
      return { status: res.status, headers: res.headers, body: bytes };
    } finally {
      clearTimeout(timer);
      callerSignal?.removeEventListener("abort", onAbort);
    }
  }
}

/** Answer of {@link EdgelogClient.issueToken}. */
export interface TokenResponse {
  token: string;
  tokenType: "Bearer";
  /** Seconds. */
  expiresIn: number;
  /** ms since the epoch. */
  expiresAt: number;
}

/** `exp` of a JWT in ms, or null (not a JWT, or no exp). The signature is the server's business. */
function jwtExpMs(token: string): number | null {
  const payload = token.split(".")[1];
  if (payload === undefined) return null;
  try {
    const json = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0)))) as { exp?: unknown };
    return typeof json.exp === "number" ? json.exp * 1000 : null;
  } catch {
    return null;
  }
}

function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Kafka's producer `acks`: 0 (no answer awaited), 1 or "all" (same promise here: one replica per partition). */
export type ProduceAcks = "all" | 1 | 0;

/** The `acks` query parameter; absent for the default ("all"). */
function acksQuery(acks: ProduceAcks | undefined): Record<string, string> | undefined {
  return acks === undefined || acks === "all" ? undefined : { acks: String(acks) };
}

function offsetHeader(answer: HttpAnswer, name: string): number {
  const raw = answer.headers.get(name);
  const n = raw === null || !/^\d+$/.test(raw.trim()) ? Number.NaN : Number(raw.trim());
  if (!Number.isSafeInteger(n)) throw protocolViolation(answer.status, `missing or invalid ${name} header`, { header: name, value: raw });
  return n;
}
