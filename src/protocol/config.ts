import { EdgelogError } from "./errors.ts";
import { MAX_MESSAGE_BYTES_LIMIT, MAX_SEGMENT_BYTES, MIN_MAX_MESSAGE_BYTES, MIN_SEGMENT_BYTES } from "./limits.ts";
import type { CleanupPolicy, TimestampType, TopicConfigs } from "./types.ts";

/**
 * Topic config defaults, mirroring Kafka's broker defaults where they fit the platform
 * (kafka.apache.org/documentation/#topicconfigs). Sizes in bytes, times in ms; -1 = unlimited.
 * Ranges (docs/PROTOCOL.md, "Topic configs"): max.message.bytes [64, 1047552];
 * retention.ms and retention.bytes -1 or [0, 2^53-1]; segment.bytes [1 MiB, 1 GiB];
 * producer.id.expiration.ms [1, 2^31-1].
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

/**
 * An exact decimal integer: optional minus, no leading zeros, no spaces or `+`, no exponent.
 * Kafka tools pass configs as strings; `"1 "`, `"01"` or `"1e3"` are typos, not numbers.
 */
const EXACT_INTEGER = /^(0|-?[1-9][0-9]*)$/;

function intIn(key: string, v: unknown, min: number, max: number): number {
  const n = typeof v === "string" && EXACT_INTEGER.test(v) ? Number(v) : v;
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new EdgelogError("INVALID_CONFIG", `Config ${key} must be an integer in [${min}, ${max}] (a number or an exact decimal string), got ${JSON.stringify(v)}.`, {
      config: key,
    });
  }
  return n;
}

/** One of `allowed`; a list value (cleanup.policy) may have spaces around its commas, as Kafka's list configs do. */
function oneOf<T extends string>(key: string, v: unknown, allowed: readonly T[]): T {
  const s = typeof v === "string" ? v.split(",").map((part) => part.trim()).join(",") : v;
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
        out[key] = intIn(key, v, MIN_MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES_LIMIT);
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
        out[key] = intIn(key, v, MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES);
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
