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
  // ---- storage lifecycle (docs/LIFECYCLE.md): Kafka's defaults; Long.MAX_VALUE is Number.MAX_SAFE_INTEGER here ----
  "segment.ms": 7 * 24 * 60 * 60 * 1000,
  "delete.retention.ms": 24 * 60 * 60 * 1000,
  "min.compaction.lag.ms": 0,
  "max.compaction.lag.ms": Number.MAX_SAFE_INTEGER,
  "min.cleanable.dirty.ratio": 0.5,
  // KIP-937; after.max.ms is 1 hour as in Kafka 4.0 (KIP-1030), so one far-future timestamp cannot pin a segment.
  "message.timestamp.before.max.ms": Number.MAX_SAFE_INTEGER,
  "message.timestamp.after.max.ms": 60 * 60 * 1000,
  // KIP-405: -2 = use retention.ms / retention.bytes.
  "local.retention.ms": -2,
  "local.retention.bytes": -2,
  "remote.storage.enable": false,
  // ---- replication (docs/RAFT.md "Replicated partitions"): Kafka's names; 1 = the single-object fast path ----
  "replication.factor": 1,
  "min.insync.replicas": 1,
};

/**
 * Location hints a Durable Object may be created with (developers.cloudflare.com/durable-objects/
 * reference/data-location/): a hint is honoured only when the object is first created.
 */
export const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"] as const;
export type LocationHint = (typeof LOCATION_HINTS)[number];

/** The replication factors a topic may have: one object, or a Raft group of three (docs/RAFT.md). */
export const REPLICATION_FACTORS: readonly number[] = [1, 3];

/** Largest producer.id.expiration.ms: Kafka's config is an int (ms). */
const PRODUCER_ID_EXPIRATION_MS_MAX = 0x7fffffff;

/**
 * A partition's producer idle time (ms): its configs' `producer.id.expiration.ms`, or the
 * default for configs stored before the key existed.
 */
export function producerIdExpirationMs(configs: Partial<TopicConfigs>): number {
  return configs["producer.id.expiration.ms"] ?? DEFAULT_TOPIC_CONFIGS["producer.id.expiration.ms"];
}

/**
 * Lifecycle configs a topic stored before they existed lacks: read stored configs through this,
 * so a missing key takes its default. Pure; returns a new object.
 */
export function withConfigDefaults(stored: Partial<TopicConfigs>): TopicConfigs {
  return { ...DEFAULT_TOPIC_CONFIGS, ...stored };
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

/** A JSON-style decimal number with optional fraction and exponent. */
const DECIMAL_NUMBER = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** A decimal in [min, max]: a finite number, or a string of one (Kafka's type DOUBLE, e.g. min.cleanable.dirty.ratio). */
function decimalIn(key: string, v: unknown, min: number, max: number): number {
  // One way to match each string (`\d+(\.\d*)?`, not `\d+\.?\d*`): linear time. The ambiguous
  // form backtracks quadratically on a long run of digits that fails at its end (20,000
  // digits: 0.75 s; an 8 MiB body of them: half an hour), issue 15.
  const n = typeof v === "string" && DECIMAL_NUMBER.test(v.trim()) ? Number(v.trim()) : v;
  if (typeof n !== "number" || !Number.isFinite(n) || n < min || n > max) {
    throw new EdgelogError("INVALID_CONFIG", `Config ${key} must be a number in [${min}, ${max}], got ${JSON.stringify(v)}.`, { config: key });
  }
  return n;
}

/** A boolean: true/false, or the strings "true"/"false" (any case), as Kafka's type BOOLEAN. */
function booleanOf(key: string, v: unknown): boolean {
  const s = typeof v === "string" ? v.trim().toLowerCase() : v;
  if (s === true || s === "true") return true;
  if (s === false || s === "false") return false;
  throw new EdgelogError("INVALID_CONFIG", `Config ${key} must be true or false, got ${JSON.stringify(v)}.`, { config: key });
}

/** One of `allowed`; a list value (cleanup.policy) may have spaces around its commas, as Kafka's list configs do. */
function oneOf<T extends string>(key: string, v: unknown, allowed: readonly T[]): T {
  const s =
    typeof v === "string"
      ? v
          .split(",")
          .map((part) => part.trim())
          .join(",")
      : v;
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
  // A topic stored before the lifecycle configs existed lacks them: they take their defaults.
  const out: TopicConfigs = withConfigDefaults(base);
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
      // ---- storage lifecycle: ranges as Kafka's LogConfig ----
      case "segment.ms":
        out[key] = intIn(key, v, 1, Number.MAX_SAFE_INTEGER);
        break;
      case "delete.retention.ms":
      case "min.compaction.lag.ms":
      case "message.timestamp.before.max.ms":
      case "message.timestamp.after.max.ms":
        out[key] = intIn(key, v, 0, Number.MAX_SAFE_INTEGER);
        break;
      case "max.compaction.lag.ms":
        out[key] = intIn(key, v, 1, Number.MAX_SAFE_INTEGER);
        break;
      case "min.cleanable.dirty.ratio":
        out[key] = decimalIn(key, v, 0, 1);
        break;
      case "local.retention.ms":
      case "local.retention.bytes":
        out[key] = intIn(key, v, -2, Number.MAX_SAFE_INTEGER);
        break;
      case "remote.storage.enable":
        out[key] = booleanOf(key, v);
        break;
      // ---- replication: checked against each other and the base in checkReplicationConfigs ----
      case "replication.factor":
        out[key] = intIn(key, v, 1, 3);
        break;
      case "min.insync.replicas":
        out[key] = intIn(key, v, 1, 3);
        break;
      case "replica.locations":
        out[key] = locationList(key, v);
        break;
      default:
        throw new EdgelogError("INVALID_CONFIG", `Unknown topic config ${JSON.stringify(key)}.`, { config: key });
    }
  }
  checkLifecycleConfigs(base, out);
  checkReplicationConfigs(base, out, patch as Record<string, unknown>);
  return out;
}

/**
 * Replication rules: `replication.factor` is 1 or 3 and is fixed at creation (Kafka changes it
 * by reassigning replicas, which Edgelog does not do yet): a patch may repeat the base's value
 * but not change it, except when the base is the defaults (creation); `min.insync.replicas` is
 * at most `replication.factor` (Kafka allows more and then refuses every acks=all produce; a
 * typo here would make the topic unwritable, so it is refused up front). `remote.storage.enable`
 * is allowed at either factor: each replica of a replicated partition tiers its own copy under
 * its own R2 prefix (docs/RAFT.md "Tiered storage of a replicated partition").
 * @throws EdgelogError INVALID_CONFIG naming the config.
 */
function checkReplicationConfigs(base: TopicConfigs, out: TopicConfigs, patch: Record<string, unknown>): void {
  const rf = out["replication.factor"];
  if (!REPLICATION_FACTORS.includes(rf)) {
    throw new EdgelogError("INVALID_CONFIG", `Config replication.factor must be one of ${REPLICATION_FACTORS.join(" | ")}, got ${rf}.`, { config: "replication.factor" });
  }
  const baseRf = base["replication.factor"] ?? 1;
  if (base !== DEFAULT_TOPIC_CONFIGS && "replication.factor" in patch && rf !== baseRf) {
    throw new EdgelogError("INVALID_CONFIG", `Config replication.factor is fixed when the topic is created (${baseRf}); it cannot change to ${rf}.`, { config: "replication.factor" });
  }
  if (out["min.insync.replicas"] > rf) {
    throw new EdgelogError("INVALID_CONFIG", `Config min.insync.replicas ${out["min.insync.replicas"]} exceeds replication.factor ${rf}.`, { config: "min.insync.replicas" });
  }
  const locations = out["replica.locations"];
  if (locations !== undefined && locations.split(",").length !== rf) {
    throw new EdgelogError("INVALID_CONFIG", `Config replica.locations must name one location hint per replica (replication.factor ${rf}), got ${JSON.stringify(locations)}.`, {
      config: "replica.locations",
    });
  }
  if (base !== DEFAULT_TOPIC_CONFIGS && "replica.locations" in patch && locations !== base["replica.locations"]) {
    throw new EdgelogError("INVALID_CONFIG", "Config replica.locations is fixed when the topic is created: a location hint only places a Durable Object when it is first created.", {
      config: "replica.locations",
    });
  }
}

/**
 * A `replica.locations` value: Cloudflare location hints (`LOCATION_HINTS`, the documented list
 * of `get(id, { locationHint })`), comma-separated, spaces around commas allowed; answered
 * normalised (`"wnam,enam,weur"`). The count is checked against the replication factor in
 * {@link checkReplicationConfigs}.
 */
function locationList(key: string, v: unknown): string {
  const parts = typeof v === "string" ? v.split(",").map((p) => p.trim()) : [];
  if (parts.length === 0 || parts.some((p) => !(LOCATION_HINTS as readonly string[]).includes(p))) {
    throw new EdgelogError("INVALID_CONFIG", `Config ${key} must be comma-separated location hints, each one of ${LOCATION_HINTS.join(" | ")}, got ${JSON.stringify(v)}.`, { config: key });
  }
  return parts.join(",");
}

/** The location hint of replica `index` (0-based: r1 first), or undefined (none configured). */
export function replicaLocation(configs: Partial<TopicConfigs>, index: number): LocationHint | undefined {
  return configs["replica.locations"]?.split(",")[index] as LocationHint | undefined;
}

/** The topic's replication factor (1 for configs stored before the key existed). */
export function replicationFactorOf(configs: Partial<TopicConfigs>): number {
  return configs["replication.factor"] ?? 1;
}

/**
 * Cross-config rules of the storage lifecycle, checked on the merged result so that a change is
 * refused whole (Kafka's LogConfig.validate):
 * - min.compaction.lag.ms <= max.compaction.lag.ms;
 * - local.retention.ms <= retention.ms and local.retention.bytes <= retention.bytes, when both
 *   are set (-2 = follow retention.*, -1 = unlimited; KIP-405);
 * - remote.storage.enable only with cleanup.policy delete (KIP-405: compacted topics are not
 *   tiered), and once enabled it cannot be turned off (Kafka before KIP-950).
 * @throws EdgelogError INVALID_CONFIG naming the config.
 */
function checkLifecycleConfigs(base: TopicConfigs, out: TopicConfigs): void {
  const bad = (config: keyof TopicConfigs, message: string): never => {
    throw new EdgelogError("INVALID_CONFIG", message, { config });
  };
  if (out["min.compaction.lag.ms"] > out["max.compaction.lag.ms"]) {
    bad("min.compaction.lag.ms", `min.compaction.lag.ms ${out["min.compaction.lag.ms"]} is greater than max.compaction.lag.ms ${out["max.compaction.lag.ms"]}.`);
  }
  for (const [local, total] of [
    ["local.retention.ms", "retention.ms"],
    ["local.retention.bytes", "retention.bytes"],
  ] as const) {
    const l = out[local];
    const t = out[total];
    // -1 (unlimited) is above any limit; -2 follows the total.
    if (l !== -2 && t !== -1 && (l === -1 || l > t)) bad(local, `${local} ${l} must not exceed ${total} ${t} (-2 follows ${total}).`);
  }
  if (out["remote.storage.enable"] && out["cleanup.policy"] !== "delete") {
    bad("remote.storage.enable", "remote.storage.enable needs cleanup.policy delete: compacted topics are not tiered (KIP-405).");
  }
  if (base["remote.storage.enable"] === true && !out["remote.storage.enable"]) {
    bad("remote.storage.enable", "remote.storage.enable cannot be turned off once enabled: the remote segments would be orphaned.");
  }
}
