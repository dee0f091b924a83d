import { EdgelogError } from "./errors.ts";
import { MAX_MESSAGE_BYTES_LIMIT } from "./limits.ts";
import type { CleanupPolicy, TimestampType, TopicConfigs } from "./types.ts";

/**
 * Topic config defaults, mirroring Kafka's broker defaults where they fit the platform
 * (kafka.apache.org/documentation/#topicconfigs). Sizes in bytes, times in ms; -1 = unlimited.
 * retention.*, cleanup.policy and segment.bytes are stored and described now and enforced
 * by the storage lifecycle work.
 */
export const DEFAULT_TOPIC_CONFIGS: TopicConfigs = {
  "max.message.bytes": 1024 * 1024 - 1024,
  "message.timestamp.type": "CreateTime",
  "retention.ms": 7 * 24 * 60 * 60 * 1000,
  "retention.bytes": -1,
  "cleanup.policy": "delete",
  "segment.bytes": 64 * 1024 * 1024,
  "producer.id.expiration.ms": 24 * 60 * 60 * 1000,
};

/** Largest producer.id.expiration.ms: Kafka's config is an int (ms). */
const PRODUCER_ID_EXPIRATION_MS_MAX = 0x7fffffff;

/**
 * A partition's producer idle time (ms): its configs' `producer.id.expiration.ms`, or the
 * default for configs stored before the key existed.
 */
export function producerIdExpirationMs(configs: Partial<TopicConfigs>): number {
  return configs["producer.id.expiration.ms"] ?? DEFAULT_TOPIC_CONFIGS["producer.id.expiration.ms"];
}

const TIMESTAMP_TYPES: readonly TimestampType[] = ["CreateTime", "LogAppendTime"];
const CLEANUP_POLICIES: readonly CleanupPolicy[] = ["delete", "compact", "compact,delete"];

function intIn(key: string, v: unknown, min: number, max: number): number {
  // Accept numbers and decimal strings (Kafka tools pass configs as strings).
  const n = typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v.trim()) : v;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new EdgelogError("INVALID_CONFIG", `Config ${key} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}.`, { config: key });
  }
  return n;
}

function oneOf<T extends string>(key: string, v: unknown, allowed: readonly T[]): T {
  const s = typeof v === "string" ? v.replace(/\s+/g, "") : v;
  if (typeof s !== "string" || !(allowed as readonly string[]).includes(s)) {
    throw new EdgelogError("INVALID_CONFIG", `Config ${key} must be one of ${allowed.join(" | ")}, got ${JSON.stringify(v)}.`, { config: key });
  }
  return s as T;
}

/**
 * Validates a partial config map against a base (defaults or the current configs).
 * @throws EdgelogError INVALID_CONFIG for an unknown key or a bad value.
 */
export function mergeTopicConfigs(base: TopicConfigs, patch: unknown): TopicConfigs {
  if (patch === undefined || patch === null) return { ...base };
  if (typeof patch !== "object" || Array.isArray(patch)) {
    throw new EdgelogError("INVALID_CONFIG", "configs must be an object of config name to value.");
  }
  const out: TopicConfigs = { ...base };
  for (const [key, v] of Object.entries(patch as Record<string, unknown>)) {
    switch (key) {
      case "max.message.bytes":
        out[key] = intIn(key, v, 1, MAX_MESSAGE_BYTES_LIMIT);
        break;
      case "message.timestamp.type":
        out[key] = oneOf(key, v, TIMESTAMP_TYPES);
        break;
      case "retention.ms":
        out[key] = intIn(key, v, -1, Number.MAX_SAFE_INTEGER);
        break;
      case "retention.bytes":
        out[key] = intIn(key, v, -1, Number.MAX_SAFE_INTEGER);
        break;
      case "cleanup.policy":
        out[key] = oneOf(key, v, CLEANUP_POLICIES);
        break;
      case "segment.bytes":
        out[key] = intIn(key, v, 14, 1024 * 1024 * 1024);
        break;
      case "producer.id.expiration.ms":
        out[key] = intIn(key, v, 1, PRODUCER_ID_EXPIRATION_MS_MAX);
        break;
      default:
        throw new EdgelogError("INVALID_CONFIG", `Unknown topic config ${JSON.stringify(key)}.`, { config: key });
    }
  }
  return out;
}
