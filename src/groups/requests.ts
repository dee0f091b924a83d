/**
 * Validation of consumer-group request bodies (pure). Each parser takes the decoded JSON and
 * returns the core's input type with topic names normalised to `tenant/namespace/topic`, or
 * throws an {@link EdgelogError} with the field at fault in `details.field`.
 */
import { EdgelogError } from "../protocol/errors.ts";
import {
  ASSIGNOR_NAMES,
  AUTO_OFFSET_RESETS,
  type AssignorName,
  type AutoOffsetReset,
  type GroupConfigs,
  type ResetOffsetsSpec,
  MAX_CLIENT_ID_CHARS,
  MAX_HEARTBEAT_INTERVAL_MS,
  MAX_INSTANCE_ID_CHARS,
  MAX_OFFSET_METADATA_BYTES,
  MAX_OFFSETS_PER_COMMIT,
  MAX_REBALANCE_TIMEOUT_MS,
  MAX_SESSION_TIMEOUT_MS,
  MAX_SUBSCRIBED_TOPICS,
  MAX_SUBSCRIPTION_REGEX_CHARS,
  MIN_HEARTBEAT_INTERVAL_MS,
  MIN_REBALANCE_TIMEOUT_MS,
  MIN_SESSION_TIMEOUT_MS,
  isValidGroupId,
} from "../protocol/groups.ts";
import { MAX_PARTITIONS } from "../protocol/limits.ts";
import { parseTopicName } from "../protocol/names.ts";
import { type Assignment, assignmentOf } from "./assignment.ts";
import type { CommitInput, HeartbeatInput, LeaveInput } from "./coordinator-core.ts";
import { compileSubscriptionRegex } from "./subscription-regex.ts";

/** Member ids: server-made UUIDs, or a client-made id (KIP-1082 style) of the same alphabet. */
const MEMBER_ID = /^[a-zA-Z0-9._-]{1,128}$/;

/** Most partitions one offset fetch or reset may name (each costs a partition RPC). */
export const MAX_PARTITIONS_PER_OFFSET_REQUEST = 2048;

function invalid(field: string, message: string): EdgelogError {
  return new EdgelogError("INVALID_REQUEST", message, { field });
}

function obj(v: unknown, field: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalid(field, `${field} must be a JSON object.`);
  return v as Record<string, unknown>;
}

function absent(v: unknown): v is null | undefined {
  return v === undefined || v === null;
}

function int(v: unknown, field: string, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    throw invalid(field, `${field} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}.`);
  }
  return v;
}

function str(v: unknown, field: string, maxChars: number, minChars = 1): string {
  if (typeof v !== "string" || v.length < minChars || v.length > maxChars) {
    throw invalid(field, `${field} must be a string of ${minChars}-${maxChars} characters.`);
  }
  return v;
}

/** @throws EdgelogError INVALID_GROUP_ID */
export function parseGroupId(raw: unknown): string {
  if (!isValidGroupId(raw)) {
    throw new EdgelogError("INVALID_GROUP_ID", `Invalid group id ${JSON.stringify(raw)}: 1-249 characters of [a-zA-Z0-9._-], not "." or "..".`);
  }
  return raw;
}

function memberId(v: unknown, field = "memberId"): string {
  if (typeof v !== "string" || !MEMBER_ID.test(v)) throw invalid(field, `${field} must be 1-128 characters of [a-zA-Z0-9._-].`);
  return v;
}

function topicName(v: unknown, field: string): string {
  if (typeof v !== "string") throw new EdgelogError("INVALID_TOPIC_NAME", `${field} must be a topic name.`, { field });
  return parseTopicName(v).full;
}

function partitionNumber(v: unknown, field: string): number {
  return int(v, field, 0, MAX_PARTITIONS - 1);
}

function timeout(v: unknown, field: string, min: number, max: number): number | null {
  if (absent(v)) return null;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new EdgelogError("INVALID_SESSION_TIMEOUT", `${field} must be an integer of ms in [${min}, ${max}], got ${JSON.stringify(v)}.`, { field });
  }
  return v;
}

/** `[{topic, partitions: [..]}]` -> an assignment. */
export function parseTopicPartitions(v: unknown, field: string): Assignment {
  if (!Array.isArray(v)) throw invalid(field, `${field} must be an array of {topic, partitions}.`);
  const pairs: { topic: string; partition: number }[] = [];
  v.forEach((e, i) => {
    const o = obj(e, `${field}[${i}]`);
    const topic = topicName(o.topic, `${field}[${i}].topic`);
    if (!Array.isArray(o.partitions)) throw invalid(`${field}[${i}].partitions`, `${field}[${i}].partitions must be an array of partition numbers.`);
    for (const p of o.partitions) pairs.push({ topic, partition: partitionNumber(p, `${field}[${i}].partitions`) });
  });
  return assignmentOf(pairs);
}

export function parseAssignor(v: unknown): AssignorName | null {
  if (absent(v)) return null;
  if (typeof v !== "string" || !(ASSIGNOR_NAMES as readonly string[]).includes(v)) {
    throw new EdgelogError("UNSUPPORTED_ASSIGNOR", `Unknown assignor ${JSON.stringify(v)}: use ${ASSIGNOR_NAMES.join(", ")}.`, { field: "assignor" });
  }
  return v as AssignorName;
}

/** Body of a heartbeat. @throws EdgelogError INVALID_REQUEST, INVALID_TOPIC_NAME, INVALID_REGULAR_EXPRESSION, INVALID_SESSION_TIMEOUT, UNSUPPORTED_ASSIGNOR */
export function parseHeartbeat(body: unknown): HeartbeatInput {
  const b = obj(body, "body");
  const epoch = b.memberEpoch;
  if (typeof epoch !== "number" || !Number.isSafeInteger(epoch) || epoch < 0) {
    throw invalid("memberEpoch", "memberEpoch must be 0 (join) or the member's current epoch; to leave use POST /v1/groups/{group}/leave.");
  }
  let names: string[] | null = null;
  if (!absent(b.subscribedTopicNames)) {
    if (!Array.isArray(b.subscribedTopicNames) || b.subscribedTopicNames.length > MAX_SUBSCRIBED_TOPICS) {
      throw invalid("subscribedTopicNames", `subscribedTopicNames must be an array of at most ${MAX_SUBSCRIBED_TOPICS} topic names.`);
    }
    names = b.subscribedTopicNames.map((t, i) => topicName(t, `subscribedTopicNames[${i}]`));
  }
  let regex: string | null = null;
  if (!absent(b.subscribedTopicRegex)) {
    regex = str(b.subscribedTopicRegex, "subscribedTopicRegex", MAX_SUBSCRIPTION_REGEX_CHARS, 0);
    if (regex !== "") {
      try {
        compileSubscriptionRegex(regex);
      } catch (err) {
        throw new EdgelogError("INVALID_REGULAR_EXPRESSION", `subscribedTopicRegex does not compile: ${err instanceof Error ? err.message : String(err)}.`, {
          field: "subscribedTopicRegex",
        });
      }
    }
  }
  return {
    memberId: absent(b.memberId) ? null : memberId(b.memberId),
    memberEpoch: epoch,
    instanceId: absent(b.instanceId) ? null : str(b.instanceId, "instanceId", MAX_INSTANCE_ID_CHARS),
    subscribedTopicNames: names,
    subscribedTopicRegex: regex,
    ownedPartitions: absent(b.ownedPartitions) ? null : parseTopicPartitions(b.ownedPartitions, "ownedPartitions"),
    sessionTimeoutMs: timeout(b.sessionTimeoutMs, "sessionTimeoutMs", MIN_SESSION_TIMEOUT_MS, MAX_SESSION_TIMEOUT_MS),
    rebalanceTimeoutMs: timeout(b.rebalanceTimeoutMs, "rebalanceTimeoutMs", MIN_REBALANCE_TIMEOUT_MS, MAX_REBALANCE_TIMEOUT_MS),
    assignor: parseAssignor(b.assignor),
    clientId: absent(b.clientId) ? null : str(b.clientId, "clientId", MAX_CLIENT_ID_CHARS, 0),
  };
}

export function parseLeave(body: unknown): LeaveInput {
  const b = obj(body, "body");
  const temporary = b.temporary ?? false;
  if (typeof temporary !== "boolean") throw invalid("temporary", "temporary must be a boolean.");
  return {
    memberId: memberId(b.memberId),
    memberEpoch: int(b.memberEpoch, "memberEpoch", 0, Number.MAX_SAFE_INTEGER),
    temporary,
  };
}

const utf8 = new TextEncoder();

/** @throws EdgelogError INVALID_REQUEST, INVALID_OFFSET, OFFSET_METADATA_TOO_LARGE, INVALID_TOPIC_NAME */
export function parseCommit(body: unknown): CommitInput {
  const b = obj(body, "body");
  const hasMember = !absent(b.memberId);
  if (hasMember !== !absent(b.memberEpoch)) throw invalid("memberEpoch", "memberId and memberEpoch go together: send both (a member) or neither.");
  if (!Array.isArray(b.offsets) || b.offsets.length === 0 || b.offsets.length > MAX_OFFSETS_PER_COMMIT) {
    throw invalid("offsets", `offsets must be an array of 1-${MAX_OFFSETS_PER_COMMIT} {topic, partition, offset, metadata?}.`);
  }
  const seen = new Set<string>();
  const offsets = b.offsets.map((e, i) => {
    const o = obj(e, `offsets[${i}]`);
    const topic = topicName(o.topic, `offsets[${i}].topic`);
    const partition = partitionNumber(o.partition, `offsets[${i}].partition`);
    const key = `${topic}\u0000${partition}`;
    if (seen.has(key)) throw invalid(`offsets[${i}]`, `Partition ${partition} of ${topic} appears twice.`);
    seen.add(key);
    if (typeof o.offset !== "number" || !Number.isSafeInteger(o.offset) || o.offset < 0) {
      throw new EdgelogError("INVALID_OFFSET", `offsets[${i}].offset must be a non-negative integer (the next offset to read).`, { field: `offsets[${i}].offset` });
    }
    let metadata = "";
    if (!absent(o.metadata)) {
      if (typeof o.metadata !== "string") throw invalid(`offsets[${i}].metadata`, "metadata must be a string.");
      if (utf8.encode(o.metadata).length > MAX_OFFSET_METADATA_BYTES) {
        throw new EdgelogError("OFFSET_METADATA_TOO_LARGE", `offsets[${i}].metadata exceeds ${MAX_OFFSET_METADATA_BYTES} bytes.`, { field: `offsets[${i}].metadata` });
      }
      metadata = o.metadata;
    }
    return { topic, partition, offset: o.offset, metadata };
  });
  return {
    memberId: hasMember ? memberId(b.memberId) : null,
    memberEpoch: hasMember ? int(b.memberEpoch, "memberEpoch", 0, Number.MAX_SAFE_INTEGER) : null,
    offsets,
  };
}

/** Topics (and optional partitions) an offset fetch or reset names. */
export type TopicSelection = { topic: string; partitions: number[] | null }[];

export function parseTopicSelection(v: unknown, field: string): TopicSelection {
  if (!Array.isArray(v)) throw invalid(field, `${field} must be an array of {topic, partitions?}.`);
  let n = 0;
  return v.map((e, i) => {
    const o = obj(e, `${field}[${i}]`);
    const topic = topicName(o.topic, `${field}[${i}].topic`);
    let partitions: number[] | null = null;
    if (!absent(o.partitions)) {
      if (!Array.isArray(o.partitions)) throw invalid(`${field}[${i}].partitions`, "partitions must be an array of partition numbers.");
      partitions = [...new Set(o.partitions.map((p) => partitionNumber(p, `${field}[${i}].partitions`)))].sort((a, b) => a - b);
      n += partitions.length;
      if (n > MAX_PARTITIONS_PER_OFFSET_REQUEST) throw invalid(field, `At most ${MAX_PARTITIONS_PER_OFFSET_REQUEST} partitions per request.`);
    }
    return { topic, partitions };
  });
}

export function parseAutoOffsetReset(v: unknown): AutoOffsetReset {
  if (absent(v)) return "latest";
  if (typeof v !== "string" || !(AUTO_OFFSET_RESETS as readonly string[]).includes(v)) {
    throw invalid("autoOffsetReset", `autoOffsetReset must be one of ${AUTO_OFFSET_RESETS.join(", ")}.`);
  }
  return v as AutoOffsetReset;
}

export interface OffsetFetchInput {
  topics: TopicSelection | null;
  autoOffsetReset: AutoOffsetReset;
}

export function parseOffsetFetch(body: unknown): OffsetFetchInput {
  const b = obj(body, "body");
  return {
    topics: absent(b.topics) ? null : parseTopicSelection(b.topics, "topics"),
    autoOffsetReset: parseAutoOffsetReset(b.autoOffsetReset),
  };
}

export interface ResetOffsetsInput {
  topics: TopicSelection;
  spec: ResetOffsetsSpec;
  dryRun: boolean;
}

export function parseResetOffsets(body: unknown): ResetOffsetsInput {
  const b = obj(body, "body");
  const topics = parseTopicSelection(b.topics, "topics");
  if (topics.length === 0) throw invalid("topics", "topics must name at least one topic.");
  const s = obj(b.spec, "spec");
  let spec: ResetOffsetsSpec;
  switch (s.to) {
    case "earliest":
    case "latest":
      spec = { to: s.to };
      break;
    case "timestamp":
      spec = { to: "timestamp", timestamp: int(s.timestamp, "spec.timestamp", 0, Number.MAX_SAFE_INTEGER) };
      break;
    case "offset":
      if (typeof s.offset !== "number" || !Number.isInteger(s.offset) || s.offset < 0) {
        throw new EdgelogError("INVALID_OFFSET", "spec.offset must be a non-negative integer.", { field: "spec.offset" });
      }
      // Clamped to [logStartOffset, logEndOffset] by the coordinator (docs/PROTOCOL.md); an
      // integer beyond 2^53 is clamped here first so it stays exact.
      spec = { to: "offset", offset: Math.min(s.offset, Number.MAX_SAFE_INTEGER) };
      break;
    default:
      throw invalid("spec.to", 'spec.to must be "earliest", "latest", "timestamp" or "offset".');
  }
  const dryRun = b.dryRun ?? false;
  if (typeof dryRun !== "boolean") throw invalid("dryRun", "dryRun must be a boolean.");
  return { topics, spec, dryRun };
}

/** Body of PATCH /v1/groups/{group}. */
export function parseGroupConfigs(body: unknown): Partial<GroupConfigs> {
  const b = obj(body, "body");
  const configs = obj(b.configs, "configs");
  const out: Partial<GroupConfigs> = {};
  for (const [k, v] of Object.entries(configs)) {
    // Exact decimal strings only, as for topic configs (src/protocol/config.ts).
    const n = typeof v === "string" && /^(0|[1-9][0-9]*)$/.test(v) ? Number(v) : v;
    switch (k) {
      case "heartbeat.interval.ms":
        out[k] = configInt(k, n, MIN_HEARTBEAT_INTERVAL_MS, MAX_HEARTBEAT_INTERVAL_MS);
        break;
      case "offsets.retention.ms":
        out[k] = configInt(k, n, 1000, Number.MAX_SAFE_INTEGER);
        break;
      default:
        throw new EdgelogError("INVALID_CONFIG", `Unknown group config ${JSON.stringify(k)}: use heartbeat.interval.ms or offsets.retention.ms.`, { config: k });
    }
  }
  return out;
}

function configInt(key: string, v: unknown, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new EdgelogError("INVALID_CONFIG", `Config ${key} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}.`, { config: key });
  }
  return v;
}
