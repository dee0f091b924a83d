/**
 * Pulsar's WebSocket API, translated (docs/PROTOCOL.md "Pulsar WebSocket API"; Pulsar's docs
 * "client-libraries-websocket"). Pure: the gateway's sessions (src/gateway/pulsar-ws.ts) use it
 * to turn Pulsar's query options and JSON frames into the native protocol of src/subscriptions/
 * wire.ts and back.
 *
 * - **Message ids** given to Pulsar clients are the standard base64 of the native id
 *   (`<partition 4>:<offset 16>`, 21 ASCII bytes, so always 28 characters without padding
 *   trouble). Opaque as Pulsar's (which are base64 of a protobuf `MessageIdData`); an ack finds
 *   its partition from the id.
 * - **Options** keep Pulsar's names (`subscriptionType`, `ackTimeoutMillis`,
 *   `negativeAckRedeliveryDelay`, ...) and map onto the native ones; they are validated here, so
 *   a refusal names Pulsar's parameter.
 * - **Errors** sent on an open socket carry Pulsar's numeric WebSocket error (3 = failed to
 *   deserialize from JSON, 7 = invalid payload encoding, 8 = unknown) in `result`, plus the
 *   stable code of the one error table in `errorCode`.
 */
import { decodeBase64Strict, encodeBase64, utf8, utf8LongerThan } from "../protocol/encoding.ts";
import { type ErrorCode, type ErrorResult, errorResult } from "../protocol/errors.ts";
import { formatMessageId, type MessagePosition, parseMessageId } from "./message-id.ts";
import { MAX_CREDIT_PERMITS } from "./permits.ts";
import { DELIVER_AT_HEADER, parseSubscribeQuery, type SubscribeOptions, type WireMessage } from "./wire.ts";

/** Pulsar's WebSocket error numbers (docs "client-libraries-websocket", "Error codes"). */
export const PULSAR_WS_ERROR = {
  failedToCreateProducer: 1,
  failedToSubscribe: 2,
  failedToDeserializeFromJson: 3,
  failedToSerializeToJson: 4,
  authenticationError: 5,
  notAuthorized: 6,
  payloadEncodingError: 7,
  unknownError: 8,
} as const;

/** The Pulsar error number an error-table code is reported with on an open socket. */
export function pulsarErrorNumber(code: ErrorCode | string): number {
  if (code === "INVALID_JSON" || code === "INVALID_REQUEST") return PULSAR_WS_ERROR.failedToDeserializeFromJson;
  if (code === "INVALID_ENCODING" || code === "INVALID_MESSAGE_ID") return PULSAR_WS_ERROR.payloadEncodingError;
  return PULSAR_WS_ERROR.unknownError;
}

// ---- message ids ----

/** The Pulsar-facing id of a native message id: standard base64 of its ASCII text. */
export function toPulsarMessageId(nativeId: string): string {
  return encodeBase64(utf8(nativeId));
}

/** The Pulsar-facing id of (partition, offset). */
export function pulsarMessageIdOf(partition: number, offset: number): string {
  return toPulsarMessageId(formatMessageId(partition, offset));
}

/**
 * Parses a Pulsar-facing message id.
 * @returns the position, or null when it is not base64 of a native id.
 */
export function parsePulsarMessageId(id: unknown): MessagePosition | null {
  if (typeof id !== "string" || id.length === 0 || id.length > 64) return null;
  const bytes = decodeBase64Strict(id);
  if (bytes === null) return null;
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return parseMessageId(text);
}

// ---- consumer options ----

/** Pulsar's consumer query parameter -> the native one (same value syntax). */
const CONSUMER_PARAM_MAP: readonly (readonly [string, string])[] = [
  ["subscriptionType", "type"],
  ["ackTimeoutMillis", "ackTimeoutMs"],
  ["negativeAckRedeliveryDelay", "negativeAckRedeliveryDelayMs"],
  ["receiverQueueSize", "receiverQueueSize"],
  ["maxRedeliverCount", "maxRedeliverCount"],
  ["deadLetterTopic", "deadLetterTopic"],
  ["pullMode", "pullMode"],
  ["consumerName", "consumerName"],
  ["priorityLevel", "priorityLevel"],
];

const SUBSCRIPTION_TYPE_NAMES: Readonly<Record<string, string>> = { Exclusive: "exclusive", Failover: "failover", Shared: "shared", Key_Shared: "key_shared" };

/** A Pulsar consumer's options, validated, and the native query each partition socket gets. */
export interface PulsarConsumerOptions {
  readonly options: SubscribeOptions;
  /** The native upgrade query (without `token`): Edgelog names, `encoding=base64`. */
  readonly nativeQuery: URLSearchParams;
}

/**
 * Translates and validates a Pulsar consumer's query. `subscriptionType` takes Pulsar's
 * spellings (`Exclusive`, `Failover`, `Shared`, `Key_Shared`; any case).
 * `subscriptionInitialPosition` (`Earliest` | `Latest`, Pulsar's consumer-builder name) is an
 * Edgelog extension; Pulsar's WebSocket consumer always starts a new subscription at latest.
 * Unknown parameters are ignored, as Pulsar ignores them. `consumerName` defaults to
 * `defaultConsumerName`, so that every partition socket of one client has the same name
 * (failover orders consumers by name on partitioned topics).
 * @returns the options, or INVALID_REQUEST whose details.field is Pulsar's parameter name.
 */
export function parsePulsarConsumerQuery(subscription: string, q: URLSearchParams, defaultConsumerName: string): PulsarConsumerOptions | ErrorResult {
  const native = new URLSearchParams();
  for (const [pulsar, edgelog] of CONSUMER_PARAM_MAP) {
    const v = q.get(pulsar);
    if (v !== null) native.set(edgelog, pulsar === "subscriptionType" ? (SUBSCRIPTION_TYPE_NAMES[v] ?? v) : v);
  }
  // Pulsar users write the dead-letter topic's full name, `persistent://tenant/ns/topic`.
  const dlq = native.get("deadLetterTopic");
  if (dlq?.includes("://")) {
    if (!dlq.startsWith("persistent://")) return errorResult("INVALID_REQUEST", `deadLetterTopic must be a persistent topic, got ${JSON.stringify(dlq)}.`, { field: "deadLetterTopic" });
    native.set("deadLetterTopic", dlq.slice("persistent://".length));
  }
  const pos = q.get("subscriptionInitialPosition");
  if (pos !== null) {
    const p = pos.toLowerCase();
    if (p !== "earliest" && p !== "latest")
      return errorResult("INVALID_REQUEST", `subscriptionInitialPosition must be Earliest or Latest, got ${JSON.stringify(pos)}.`, { field: "subscriptionInitialPosition" });
    native.set("initialPosition", p);
  }
  if (!native.has("consumerName")) native.set("consumerName", defaultConsumerName);
  native.set("encoding", "base64");
  const o = parseSubscribeQuery(subscription, native);
  if ("ok" in o) {
    const field = o.details?.field;
    const pulsarName = CONSUMER_PARAM_MAP.find(([, e]) => e === field)?.[0];
    if (pulsarName === undefined || typeof field !== "string") return o;
    return errorResult(o.code, (o.message ?? "").replaceAll(field, pulsarName), { ...o.details, field: pulsarName });
  }
  return { options: o, nativeQuery: native };
}

/** A Pulsar reader's start: `messageId` = `earliest`, `latest` (default) or a Pulsar message id. */
export type PulsarReaderStart = { kind: "earliest" } | { kind: "latest" } | { kind: "id"; position: MessagePosition };

export interface PulsarReaderOptions {
  readonly start: PulsarReaderStart;
  readonly receiverQueueSize: number;
}

/**
 * Parses a Pulsar reader's query: `messageId` (earliest | latest | a message id; the reader
 * starts AFTER that message, as Pulsar's non-inclusive reader), `receiverQueueSize` (1..10000,
 * default 1000). `readerName` is accepted and ignored (a reader stores nothing).
 * @returns the options, or INVALID_REQUEST / INVALID_MESSAGE_ID naming the parameter.
 */
export function parsePulsarReaderQuery(q: URLSearchParams, maxReceiverQueueSize: number): PulsarReaderOptions | ErrorResult {
  const raw = q.get("messageId") ?? "latest";
  let start: PulsarReaderStart;
  if (raw === "latest") start = { kind: "latest" };
  else if (raw === "earliest") start = { kind: "earliest" };
  else {
    const position = parsePulsarMessageId(raw);
    if (position === null) return errorResult("INVALID_MESSAGE_ID", `messageId must be earliest, latest or a message id, got ${JSON.stringify(raw)}.`, { field: "messageId" });
    start = { kind: "id", position };
  }
  const rq = q.get("receiverQueueSize");
  let receiverQueueSize = 1000;
  if (rq !== null) {
    const n = /^(0|[1-9][0-9]{0,8})$/.test(rq) ? Number(rq) : Number.NaN;
    if (!(n >= 1 && n <= maxReceiverQueueSize))
      return errorResult("INVALID_REQUEST", `receiverQueueSize must be 1..${maxReceiverQueueSize}, got ${JSON.stringify(rq)}.`, { field: "receiverQueueSize" });
    receiverQueueSize = n;
  }
  return { start, receiverQueueSize };
}

// ---- frames ----

/** The largest client frame accepted, bytes of JSON text (a producer frame carries a base64 payload). */
export const MAX_PULSAR_FRAME_BYTES = 1024 * 1024;

/** A consumer's or reader's frame, validated. */
export type PulsarConsumerFrame =
  | { type: "ack"; position: MessagePosition }
  | { type: "negativeAcknowledge"; position: MessagePosition }
  | { type: "permit"; permits: number }
  | { type: "isEndOfTopic" }
  | { type: "unsubscribe" };

/** An error to answer on an open socket: `{result: "error:<n>" | "send-error:<n>", errorCode, errorMsg, ...}`. */
export interface PulsarFrameError {
  readonly code: ErrorCode;
  readonly message: string;
}

const frameError = (code: ErrorCode, message: string): PulsarFrameError => ({ code, message });

function parseJsonObject(data: string | ArrayBuffer): Record<string, unknown> | PulsarFrameError {
  if (typeof data !== "string") return frameError("INVALID_REQUEST", "Frames are JSON text; binary frames are not part of the protocol.");
  // Bytes of UTF-8, not UTF-16 code units: a frame of multi-byte text is up to 3 times its length.
  if (utf8LongerThan(data, MAX_PULSAR_FRAME_BYTES)) return frameError("INVALID_REQUEST", `A frame is at most ${MAX_PULSAR_FRAME_BYTES} bytes of UTF-8 text.`);
  let v: unknown;
  try {
    v = JSON.parse(data);
  } catch {
    return frameError("INVALID_JSON", "Failed to deserialize from JSON: the frame is not valid JSON.");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return frameError("INVALID_REQUEST", "Failed to deserialize from JSON: a frame is a JSON object.");
  return v as Record<string, unknown>;
}

const isFrameError = (v: unknown): v is PulsarFrameError => typeof v === "object" && v !== null && "code" in v && "message" in v && !("type" in v);

/**
 * Parses a consumer's (or reader's) frame: `{messageId}` (an ack; also with `type: "ack"`),
 * `{type: "negativeAcknowledge", messageId}`, `{type: "permit", permitMessages}`,
 * `{type: "isEndOfTopic"}`, `{type: "unsubscribe"}`.
 */
export function parsePulsarConsumerFrame(data: string | ArrayBuffer): PulsarConsumerFrame | PulsarFrameError {
  const o = parseJsonObject(data);
  if (isFrameError(o)) return o;
  const type = o.type ?? "ack";
  switch (type) {
    case "ack":
    case "negativeAcknowledge": {
      const position = parsePulsarMessageId(o.messageId);
      if (position === null) return frameError("INVALID_MESSAGE_ID", `${JSON.stringify(o.messageId ?? null)} is not a message id of this service.`);
      return { type: type === "ack" ? "ack" : "negativeAcknowledge", position };
    }
    case "permit": {
      const n = o.permitMessages;
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1 || n > MAX_CREDIT_PERMITS)
        return frameError("INVALID_REQUEST", `permitMessages must be an integer 1..${MAX_CREDIT_PERMITS}.`);
      return { type: "permit", permits: n };
    }
    case "isEndOfTopic":
      return { type: "isEndOfTopic" };
    case "unsubscribe":
      return { type: "unsubscribe" };
    default:
      return frameError("INVALID_REQUEST", `Unknown frame type ${JSON.stringify(type)}: an ack ({messageId}), negativeAcknowledge, permit, isEndOfTopic or unsubscribe.`);
  }
}

/** A producer's frame, validated, as a record of the gateway's JSON produce request (value in base64). */
export interface PulsarProducerMessage {
  /** The frame's `context`, echoed in the receipt (a number is echoed as its decimal text). */
  readonly context: string | null;
  /** A record of a JsonProduceRequest with `valueEncoding: "base64"`, `keyEncoding: "string"`. */
  readonly record: { key: string | null; value: string; headers: { key: string; value: string }[]; deliverAt?: number; deliverAfterMs?: number };
}

/** Fields of Pulsar's producer message; the last four are accepted and ignored (see docs/PROTOCOL.md). */
const PRODUCER_FIELDS: ReadonlySet<string> = new Set([
  "payload",
  "properties",
  "context",
  "key",
  "deliverAt",
  "deliverAfterMs",
  "replicationClusters",
  "disableReplication",
  "eventTime",
  "sequenceId",
]);

/**
 * Parses a producer's frame `{payload (base64), properties?, context?, key?, deliverAt?,
 * deliverAfterMs?}`. Timestamps and their bounds are checked by the produce path.
 * @returns the message, or the error with the frame's context (when it could be read).
 */
export function parsePulsarProducerFrame(data: string | ArrayBuffer): PulsarProducerMessage | (PulsarFrameError & { context: string | null }) {
  const o = parseJsonObject(data);
  if (isFrameError(o)) return { ...o, context: null };
  const context = typeof o.context === "string" ? o.context : typeof o.context === "number" && Number.isFinite(o.context) ? String(o.context) : null;
  const fail = (code: ErrorCode, message: string) => ({ code, message, context });
  if (o.context !== undefined && o.context !== null && context === null) return fail("INVALID_REQUEST", "context must be a string.");
  for (const k of Object.keys(o)) if (!PRODUCER_FIELDS.has(k)) return fail("INVALID_REQUEST", `Unknown field ${k}.`);
  if (typeof o.payload !== "string") return fail("INVALID_REQUEST", "payload (base64) is required and must be a string.");
  if (decodeBase64Strict(o.payload) === null) return fail("INVALID_ENCODING", "Invalid payload encoding: payload is not valid base64.");
  const headers: { key: string; value: string }[] = [];
  if (o.properties !== undefined && o.properties !== null) {
    if (typeof o.properties !== "object" || Array.isArray(o.properties)) return fail("INVALID_REQUEST", "properties must be an object of strings.");
    for (const [k, v] of Object.entries(o.properties as Record<string, unknown>)) {
      if (typeof v !== "string") return fail("INVALID_REQUEST", `properties.${k} must be a string.`);
      if (k === DELIVER_AT_HEADER) return fail("INVALID_REQUEST", `properties.${k} is reserved: use deliverAt or deliverAfterMs.`);
      // Values are base64 in the produce request (valueEncoding applies to header values too).
      headers.push({ key: k, value: encodeBase64(utf8(v)) });
    }
  }
  if (o.key !== undefined && o.key !== null && typeof o.key !== "string") return fail("INVALID_REQUEST", "key must be a string.");
  for (const f of ["deliverAt", "deliverAfterMs"] as const) {
    const v = o[f];
    if (v !== undefined && v !== null && (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)) return fail("INVALID_REQUEST", `${f} must be a non-negative integer of ms.`);
  }
  if (o.deliverAt != null && o.deliverAfterMs != null) return fail("INVALID_REQUEST", "Give deliverAt or deliverAfterMs, not both.");
  const record: PulsarProducerMessage["record"] = { key: (o.key as string | undefined) ?? null, value: o.payload, headers };
  // Pulsar's clients send 0 for "not set" on these longs (ProducerMessage defaults).
  if (typeof o.deliverAt === "number" && o.deliverAt > 0) record.deliverAt = o.deliverAt;
  if (typeof o.deliverAfterMs === "number" && o.deliverAfterMs > 0) record.deliverAfterMs = o.deliverAfterMs;
  return { context, record };
}

export const isPulsarFrameError = isFrameError;

// ---- server frames ----

const latin1 = new TextDecoder("utf-8");

function textOfBase64(b64: string): string {
  return latin1.decode(decodeBase64Strict(b64) ?? new Uint8Array());
}

const pad = (n: number, w: number) => String(n).padStart(w, "0");

/**
 * `YYYY-MM-DDTHH:MM:SS.mmmZ` of a non-negative epoch time in ms (UTC; the civil-from-days
 * algorithm of H. Hinnant's "chrono-compatible low-level date algorithms"). Pure: this module
 * uses no clock, not even `Date` objects (test/unit/subscriptions-layering.test.ts).
 */
export function isoTime(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  const inDay = ms - days * 86_400_000;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const h = Math.floor(inDay / 3_600_000);
  const mi = Math.floor((inDay % 3_600_000) / 60_000);
  const sec = Math.floor((inDay % 60_000) / 1000);
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(sec, 2)}.${pad(inDay % 1000, 3)}Z`;
}

/**
 * A native message (received with `encoding=base64`) as Pulsar's consumer and reader push it:
 * `{messageId, payload, properties, publishTime, redeliveryCount, key?}`. Properties are the
 * record headers as text (the last of duplicate keys wins), without Edgelog's own
 * `edgelog-deliver-at`; `publishTime` is the record timestamp in ISO 8601.
 */
export function toPulsarMessage(m: WireMessage): Record<string, unknown> {
  const properties: Record<string, string> = {};
  for (const h of m.headers) if (h.key !== DELIVER_AT_HEADER) properties[h.key] = h.value === null ? "" : textOfBase64(h.value);
  const out: Record<string, unknown> = {
    messageId: pulsarMessageIdOf(m.partition, m.offset),
    payload: m.value ?? "",
    properties,
    publishTime: isoTime(m.timestamp),
    redeliveryCount: m.redeliveryCount,
  };
  if (m.key !== null) out.key = textOfBase64(m.key);
  return out;
}

/** The answer to a refused consumer or reader frame (it changed nothing). */
export function pulsarErrorFrame(e: PulsarFrameError): Record<string, unknown> {
  return { result: `error:${pulsarErrorNumber(e.code)}`, errorCode: e.code, errorMsg: e.message };
}

/** The producer's receipt for a refused or failed message. */
export function pulsarSendError(e: PulsarFrameError, context: string | null): Record<string, unknown> {
  const out: Record<string, unknown> = { result: `send-error:${pulsarErrorNumber(e.code)}`, errorMsg: e.message, errorCode: e.code };
  if (context !== null) out.context = context;
  return out;
}

/** The producer's receipt for a durably stored message. */
export function pulsarSendOk(messageId: string, context: string | null): Record<string, unknown> {
  return context === null ? { result: "ok", messageId } : { result: "ok", messageId, context };
}

/** A native error frame's error as a frame error. */
export function frameErrorOf(r: ErrorResult): PulsarFrameError {
  return { code: r.code, message: r.message ?? r.code };
}
