/**
 * The native WebSocket protocol of subscriptions (docs/PROTOCOL.md "Subscriptions over
 * WebSocket"): the subscribe options carried by the upgrade's query string, the client's JSON
 * frames, the server's JSON frames and the close codes. Pure: parsing and shapes only; the
 * partition's subscriptions room applies them.
 *
 * Pulsar's WebSocket API is the model (docs "client-libraries-websocket"): options in the
 * query string, one JSON object per frame, acks by message id, `permit` frames in pull mode.
 * Edgelog's spelling: camelCase options with units, batched `messages` frames, ack receipts
 * sent after the durable commit.
 */
import { EdgelogError, type ErrorResult, errorResult } from "../protocol/errors.ts";
import { utf8LongerThan } from "../protocol/encoding.ts";
import { parseTopicName } from "../protocol/names.ts";
import type { InitialPosition, ReaderStart } from "./cursor.ts";
import { checkDeliveryPolicy, type DeliveryPolicy } from "./delivery.ts";
import { SUBSCRIPTION_TYPES, type SubscriptionType } from "./dispatch.ts";
import { parseMessageId } from "./message-id.ts";
import { MAX_CREDIT_PERMITS, MAX_RECEIVER_QUEUE_SIZE } from "./permits.ts";

/** Subscription names: 1-128 characters of `[A-Za-z0-9._-]` (they appear in paths, timer keys and attachments). */
export const SUBSCRIPTION_NAME = /^[A-Za-z0-9._-]{1,128}$/;
/** Consumer names (Pulsar's `consumerName`): 1-64 characters of `[A-Za-z0-9._-]`. */
export const CONSUMER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Record header carrying a delayed delivery time (ms since epoch, decimal ASCII; Pulsar's
 * `deliverAt`, PIP-26). The gateway writes it from a JSON record's `deliverAt` /
 * `deliverAfterMs`; a binary producer may set it itself. Stored with the record, so it survives
 * restarts; subscriptions never deliver the record before it (fetch by offset ignores it).
 */
export const DELIVER_AT_HEADER = "edgelog-deliver-at";

/** Default receiver queue (push-mode permits), as Pulsar's `receiverQueueSize`. */
export const DEFAULT_RECEIVER_QUEUE_SIZE = 1000;
/** Most message ids one ack or nack frame may carry. */
export const MAX_IDS_PER_FRAME = 1000;
/** Largest client frame, bytes of UTF-8 (not UTF-16 code units; ids are 21 bytes: 1,000 of them plus JSON fit well below). */
export const MAX_CLIENT_FRAME_BYTES = 64 * 1024;
/** A server `messages` frame is cut once its JSON passes this many bytes of UTF-8 (the platform takes up to 1 MiB). */
export const MAX_SERVER_FRAME_BYTES = 512 * 1024;

/**
 * Close codes the server sends (RFC 6455 private range 4000-4999, plus 1000/1008/1011), each
 * saying why, with a short reason text.
 */
export const SUB_CLOSE = {
  /** The client closed, or the server closes a reader at the end of its use: normal. */
  normal: 1000,
  /** The socket's attachment is missing or invalid (the base closes with it). */
  policyViolation: 1008,
  /** A server bug; reconnecting is safe. */
  internalError: 1011,
  /** The subscription was deleted (force) while the consumer was connected. */
  subscriptionDeleted: 4001,
  /** The cursor was reset (seek, skip past in-flight messages, clear backlog): reconnect to resume from the new position, as Pulsar disconnects consumers on a reset. */
  cursorReset: 4002,
  /** The partition (its topic) was deleted. */
  topicDeleted: 4003,
  /** The consumer sent frames that are not the protocol's too often (more than 100 errors). */
  tooManyErrors: 4004,
  /** Another consumer joined first in the same instant (the upgrade's admission check passed): CONSUMER_BUSY. */
  consumerBusy: 4005,
  /**
   * Service restart (RFC 6455): the replica serving this socket stopped leading its replicated
   * partition (leadership transfer, failover, restart); reconnect through the gateway, which
   * finds the new leader. Unacknowledged messages are redelivered there (Pulsar's semantics when
   * a topic moves to another broker).
   */
  leaderChanged: 1012,
} as const;

/** Where a consumer's subscription starts when it is created by this consumer. */
export type WireInitialPosition = InitialPosition;

/** What a consumer asks for when it subscribes (the upgrade's query string, validated). */
export interface SubscribeOptions {
  readonly subscription: string;
  readonly type: SubscriptionType;
  readonly initialPosition: InitialPosition;
  readonly policy: DeliveryPolicy;
  /** null: the default `<topic>-<subscription>-DLQ` when `maxRedeliverCount` > 0. */
  readonly deadLetterTopic: string | null;
  /** Push mode: permits = receiverQueueSize; pull mode (`pullMode=true`): explicit `permit` frames. */
  readonly pullMode: boolean;
  readonly receiverQueueSize: number;
  readonly consumerName: string | null;
  readonly priorityLevel: number;
  /** How keys, values and header values are written in `messages` frames. @default "string" */
  readonly encoding: "string" | "base64";
}

/** What a reader asks for (non-durable cursor, stores nothing). */
export interface ReaderOptions {
  readonly start: ReaderStart;
  readonly inclusive: boolean;
  readonly receiverQueueSize: number;
  readonly encoding: "string" | "base64";
}

function intParam(q: URLSearchParams, name: string, dflt: number, min: number, max: number): number | ErrorResult {
  const raw = q.get(name);
  if (raw === null || raw === "") return dflt;
  if (!/^(0|[1-9][0-9]*)$/.test(raw)) return errorResult("INVALID_REQUEST", `Query parameter ${name} must be a non-negative integer, got ${JSON.stringify(raw)}.`, { field: name });
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) return errorResult("INVALID_REQUEST", `Query parameter ${name} must be ${min}..${max}, got ${raw}.`, { field: name });
  return n;
}

function encodingParam(q: URLSearchParams): "string" | "base64" | ErrorResult {
  const e = q.get("encoding") ?? "string";
  if (e !== "string" && e !== "base64") return errorResult("INVALID_REQUEST", `encoding must be "string" or "base64", got ${JSON.stringify(e)}.`, { field: "encoding" });
  return e;
}

/** `earliest`, `latest` or a timestamp in ms (`timestamp:<ms>` or a bare integer). */
function positionParam(raw: string | null): InitialPosition | ErrorResult {
  if (raw === null || raw === "" || raw === "latest") return { kind: "latest" };
  if (raw === "earliest") return { kind: "earliest" };
  const m = /^(?:timestamp:)?(0|[1-9][0-9]*)$/.exec(raw);
  if (m !== null && Number.isSafeInteger(Number(m[1]))) return { kind: "timestamp", timestampMs: Number(m[1]) };
  return errorResult("INVALID_REQUEST", `initialPosition must be earliest, latest or timestamp:<ms>, got ${JSON.stringify(raw)}.`, { field: "initialPosition" });
}

/** The query parameter behind each backoff field named by {@link checkDeliveryPolicy}. */
const BACKOFF_FIELDS: Record<string, string> = { maxDelayMs: "negativeAckBackoffMaxMs", multiplier: "negativeAckBackoffMultiplier", minDelayMs: "negativeAckRedeliveryDelayMs" };

const isErr = (v: unknown): v is ErrorResult => typeof v === "object" && v !== null && (v as { ok?: unknown }).ok === false;

/**
 * Parses the subscribe options of a consumer's upgrade URL. Unknown parameters are ignored
 * (a `token` for auth travels there too). Defaults as Pulsar's: type exclusive, initial
 * position latest, no ack timeout, nack delay 60 s, no dead-letter topic, receiver queue 1000.
 * @returns the options, or INVALID_REQUEST naming the field.
 */
export function parseSubscribeQuery(subscription: string, q: URLSearchParams): SubscribeOptions | ErrorResult {
  if (!SUBSCRIPTION_NAME.test(subscription)) return errorResult("INVALID_REQUEST", "The subscription name must be 1-128 characters of [A-Za-z0-9._-].", { field: "subscription" });
  const typeRaw = q.get("type") ?? q.get("subscriptionType") ?? "exclusive";
  const type = typeRaw.toLowerCase().replace("-", "_") as SubscriptionType;
  if (!SUBSCRIPTION_TYPES.includes(type)) return errorResult("INVALID_REQUEST", `type must be one of ${SUBSCRIPTION_TYPES.join(", ")}, got ${JSON.stringify(typeRaw)}.`, { field: "type" });
  const initialPosition = positionParam(q.get("initialPosition"));
  if (isErr(initialPosition)) return initialPosition;
  const ackTimeoutMs = intParam(q, "ackTimeoutMs", 0, 0, 86_400_000);
  if (isErr(ackTimeoutMs)) return ackTimeoutMs;
  const nack = intParam(q, "negativeAckRedeliveryDelayMs", 60_000, 0, 86_400_000);
  if (isErr(nack)) return nack;
  const maxRedeliverCount = intParam(q, "maxRedeliverCount", 0, 0, 1000);
  if (isErr(maxRedeliverCount)) return maxRedeliverCount;
  const policy: DeliveryPolicy = { ackTimeoutMs, negativeAckRedeliveryDelayMs: nack, maxRedeliverCount };
  const backoffMax = q.get("negativeAckBackoffMaxMs");
  let withBackoff = policy;
  if (backoffMax !== null) {
    const maxDelayMs = intParam(q, "negativeAckBackoffMaxMs", 0, 0, 86_400_000);
    if (isErr(maxDelayMs)) return maxDelayMs;
    const multiplier = Number(q.get("negativeAckBackoffMultiplier") ?? "2");
    withBackoff = { ...policy, negativeAckBackoff: { minDelayMs: nack, maxDelayMs, multiplier } };
  }
  const bad = checkDeliveryPolicy(withBackoff);
  if (bad !== null) return errorResult("INVALID_REQUEST", `${bad}.`, { field: BACKOFF_FIELDS[bad.split(" ")[1] ?? ""] ?? bad.split(" ")[0] ?? "policy" });
  const dlq = q.get("deadLetterTopic");
  // Checked here: a name the metadata object would refuse made every dead-letter copy fail
  // forever (retried by the room), holding the message back from the subscription.
  if (dlq !== null && dlq !== "") {
    try {
      parseTopicName(dlq);
    } catch (e) {
      if (!(e instanceof EdgelogError)) throw e;
      return errorResult("INVALID_REQUEST", `deadLetterTopic: ${e.message}`, { field: "deadLetterTopic" });
    }
  }
  const receiverQueueSize = intParam(q, "receiverQueueSize", DEFAULT_RECEIVER_QUEUE_SIZE, 1, MAX_RECEIVER_QUEUE_SIZE);
  if (isErr(receiverQueueSize)) return receiverQueueSize;
  const priorityLevel = intParam(q, "priorityLevel", 0, 0, 1000);
  if (isErr(priorityLevel)) return priorityLevel;
  const consumerName = q.get("consumerName");
  if (consumerName !== null && !CONSUMER_NAME.test(consumerName)) return errorResult("INVALID_REQUEST", "consumerName must be 1-64 characters of [A-Za-z0-9._-].", { field: "consumerName" });
  const pull = q.get("pullMode");
  if (pull !== null && pull !== "true" && pull !== "false") return errorResult("INVALID_REQUEST", "pullMode must be true or false.", { field: "pullMode" });
  const encoding = encodingParam(q);
  if (isErr(encoding)) return encoding;
  return {
    subscription,
    type,
    initialPosition,
    policy: withBackoff,
    deadLetterTopic: dlq === null || dlq === "" ? null : dlq,
    pullMode: pull === "true",
    receiverQueueSize,
    consumerName,
    priorityLevel,
    encoding,
  };
}

/**
 * Parses a reader's options: `start` = earliest | latest (default) | a message id |
 * `timestamp:<ms>`, `inclusive` = true | false (field case A4), `receiverQueueSize`, `encoding`.
 * A message id must be of the reader's `partition` (INVALID_MESSAGE_ID otherwise).
 */
export function parseReaderQuery(q: URLSearchParams, partition: number): ReaderOptions | ErrorResult {
  const raw = q.get("start") ?? "latest";
  let start: ReaderStart;
  if (raw === "latest") start = { kind: "latest" };
  else if (raw === "earliest") start = { kind: "earliest" };
  else if (/^timestamp:(0|[1-9][0-9]*)$/.test(raw)) start = { kind: "timestamp", timestampMs: Number(raw.slice(10)) };
  else {
    const id = parseMessageId(raw);
    if (id === null) return errorResult("INVALID_MESSAGE_ID", `start must be earliest, latest, timestamp:<ms> or a message id, got ${JSON.stringify(raw)}.`, { field: "start" });
    if (id.partition !== partition)
      return errorResult("INVALID_MESSAGE_ID", `start ${raw} is a message id of partition ${id.partition}, this reader is on partition ${partition}.`, { field: "start" });
    start = { kind: "offset", offset: id.offset };
  }
  const inc = q.get("inclusive");
  if (inc !== null && inc !== "true" && inc !== "false") return errorResult("INVALID_REQUEST", "inclusive must be true or false.", { field: "inclusive" });
  const receiverQueueSize = intParam(q, "receiverQueueSize", DEFAULT_RECEIVER_QUEUE_SIZE, 1, MAX_RECEIVER_QUEUE_SIZE);
  if (isErr(receiverQueueSize)) return receiverQueueSize;
  const encoding = encodingParam(q);
  if (isErr(encoding)) return encoding;
  return { start, inclusive: inc === "true", receiverQueueSize, encoding };
}

/** A client frame, validated. Message ids are already parsed into offsets of this partition. */
export type ClientFrame =
  | { type: "ack"; offsets: number[]; requestId: string | null }
  | { type: "ackCumulative"; offset: number; requestId: string | null }
  | { type: "nack"; offsets: number[]; redeliveryCount: number | null; requestId: string | null }
  | { type: "permit"; permits: number }
  | { type: "ping" };

/** The ping frame, answered by the platform without waking the object (setWebSocketAutoResponse). */
export const PING_FRAME = '{"type":"ping"}';
export const PONG_FRAME = '{"type":"pong"}';

function ids(v: unknown, one: unknown, partition: number): number[] | ErrorResult {
  const list = v === undefined ? (one === undefined ? undefined : [one]) : v;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_IDS_PER_FRAME) {
    return errorResult("INVALID_REQUEST", `messageIds must be an array of 1..${MAX_IDS_PER_FRAME} message ids (or messageId one id).`, { field: "messageIds" });
  }
  const out: number[] = [];
  for (const id of list) {
    const p = parseMessageId(id);
    if (p === null) return errorResult("INVALID_MESSAGE_ID", `${JSON.stringify(id)} is not a message id.`, { messageId: typeof id === "string" ? id : null });
    if (p.partition !== partition)
      return errorResult("INVALID_MESSAGE_ID", `Message id ${String(id)} is of partition ${p.partition}, this socket is on partition ${partition}.`, { messageId: id as string });
    out.push(p.offset);
  }
  return out;
}

function requestIdOf(o: Record<string, unknown>): string | null | ErrorResult {
  const r = o.requestId;
  if (r === undefined || r === null) return null;
  if (typeof r !== "string" || r.length === 0 || r.length > 64) return errorResult("INVALID_REQUEST", "requestId must be a string of 1-64 characters.", { field: "requestId" });
  return r;
}

/** A refused client frame: the error, with the frame's `requestId` when it had a valid one (so the client can match the refusal to its request). */
export type FrameError = ErrorResult & { readonly requestId: string | null };

/**
 * Parses one client frame of a consumer on `partition`.
 * @returns the frame, or the error to answer in an `error` frame (nothing changes).
 */
export function parseClientFrame(data: string | ArrayBuffer, partition: number): ClientFrame | FrameError {
  const r = parseFrame(data, partition);
  if (!("ok" in r)) return r;
  let requestId: string | null = null;
  if (typeof data === "string" && !utf8LongerThan(data, MAX_CLIENT_FRAME_BYTES)) {
    try {
      const o = JSON.parse(data) as { requestId?: unknown };
      if (typeof o?.requestId === "string" && o.requestId.length > 0 && o.requestId.length <= 64) requestId = o.requestId;
    } catch {
      // not JSON: no request id
    }
  }
  return { ...r, requestId };
}

function parseFrame(data: string | ArrayBuffer, partition: number): ClientFrame | ErrorResult {
  if (typeof data !== "string") return errorResult("INVALID_REQUEST", "Frames are JSON text; binary frames are not part of the protocol.");
  // Bytes of UTF-8, not UTF-16 code units: a frame of multi-byte text is up to 3 times its length.
  if (utf8LongerThan(data, MAX_CLIENT_FRAME_BYTES))
    return errorResult("INVALID_REQUEST", `A frame is at most ${MAX_CLIENT_FRAME_BYTES} bytes of UTF-8 text.`, { maxBytes: MAX_CLIENT_FRAME_BYTES });
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    return errorResult("INVALID_JSON", "The frame is not valid JSON.");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return errorResult("INVALID_REQUEST", "A frame is a JSON object with a type.");
  const o = v as Record<string, unknown>;
  const requestId = requestIdOf(o);
  if (isErr(requestId)) return requestId;
  switch (o.type) {
    case "ack": {
      const offsets = ids(o.messageIds, o.messageId, partition);
      return isErr(offsets) ? offsets : { type: "ack", offsets, requestId };
    }
    case "ackCumulative": {
      const offsets = ids(undefined, o.messageId, partition);
      return isErr(offsets) ? offsets : { type: "ackCumulative", offset: offsets[0]!, requestId };
    }
    case "nack": {
      const offsets = ids(o.messageIds, o.messageId, partition);
      if (isErr(offsets)) return offsets;
      const rc = o.redeliveryCount;
      if (rc !== undefined && (!Number.isSafeInteger(rc) || (rc as number) < 0))
        return errorResult("INVALID_REQUEST", "redeliveryCount must be a non-negative integer.", { field: "redeliveryCount" });
      return { type: "nack", offsets, redeliveryCount: rc === undefined ? null : (rc as number), requestId };
    }
    case "permit": {
      const n = o.permits;
      if (!Number.isSafeInteger(n) || (n as number) < 1 || (n as number) > MAX_CREDIT_PERMITS)
        return errorResult("INVALID_REQUEST", `permits must be an integer 1..${MAX_CREDIT_PERMITS}.`, { field: "permits" });
      return { type: "permit", permits: n as number };
    }
    case "ping":
      return { type: "ping" };
    default:
      return errorResult("INVALID_REQUEST", `Unknown frame type ${JSON.stringify(o.type)}: ack, ackCumulative, nack, permit or ping.`, { field: "type" });
  }
}

/** One delivered message, as a `messages` frame carries it. */
export interface WireMessage {
  readonly messageId: string;
  readonly partition: number;
  readonly offset: number;
  /** Record timestamp, ms (Pulsar's publishTime). */
  readonly timestamp: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: readonly { key: string; value: string | null }[];
  /** How often this message was redelivered before (0 on its first delivery). */
  readonly redeliveryCount: number;
}

/** Frames the server sends. */
export type ServerFrame =
  | {
      type: "connected";
      consumerId: string;
      subscription: string;
      subscriptionType: SubscriptionType;
      partition: number;
      /** Failover: whether this consumer is the active one. Other types: true. */
      active: boolean;
    }
  | { type: "reader"; partition: number; startOffset: number }
  | { type: "messages"; messages: WireMessage[] }
  | { type: "acked"; requestId: string; acked: number }
  | { type: "nacked"; requestId: string; nacked: number }
  | { type: "active"; active: boolean }
  | { type: "error"; code: string; message: string; requestId: string | null; details?: unknown }
  | { type: "pong" };
