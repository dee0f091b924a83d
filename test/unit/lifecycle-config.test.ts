/**
 * The storage lifecycle's topic configs (src/protocol/config.ts): Kafka's defaults and ranges,
 * the cross-config rules, and the core's view of them (src/lifecycle/config.ts).
 */
import { describe, expect, it } from "vitest";
import { lifecycleConfig } from "../../src/lifecycle/index.ts";
import { DEFAULT_TOPIC_CONFIGS, EdgelogError, mergeTopicConfigs, withConfigDefaults, type TopicConfigs } from "../../src/protocol/index.ts";

function refusal(base: TopicConfigs, patch: Record<string, unknown>): unknown {
  try {
    mergeTopicConfigs(base, patch);
  } catch (e) {
    if (e instanceof EdgelogError) return { code: e.code, config: e.details?.config };
    throw e;
  }
  return "accepted";
}

describe("lifecycle topic configs", () => {
  it("defaults are Kafka's (Long.MAX_VALUE as the largest safe integer; after.max.ms 1 hour as Kafka 4.0)", () => {
    expect({
      "segment.ms": DEFAULT_TOPIC_CONFIGS["segment.ms"],
      "delete.retention.ms": DEFAULT_TOPIC_CONFIGS["delete.retention.ms"],
      "min.compaction.lag.ms": DEFAULT_TOPIC_CONFIGS["min.compaction.lag.ms"],
      "max.compaction.lag.ms": DEFAULT_TOPIC_CONFIGS["max.compaction.lag.ms"],
      "min.cleanable.dirty.ratio": DEFAULT_TOPIC_CONFIGS["min.cleanable.dirty.ratio"],
      "message.timestamp.before.max.ms": DEFAULT_TOPIC_CONFIGS["message.timestamp.before.max.ms"],
      "message.timestamp.after.max.ms": DEFAULT_TOPIC_CONFIGS["message.timestamp.after.max.ms"],
      "local.retention.ms": DEFAULT_TOPIC_CONFIGS["local.retention.ms"],
      "local.retention.bytes": DEFAULT_TOPIC_CONFIGS["local.retention.bytes"],
      "remote.storage.enable": DEFAULT_TOPIC_CONFIGS["remote.storage.enable"],
    }).toEqual({
      "segment.ms": 604_800_000,
      "delete.retention.ms": 86_400_000,
      "min.compaction.lag.ms": 0,
      "max.compaction.lag.ms": Number.MAX_SAFE_INTEGER,
      "min.cleanable.dirty.ratio": 0.5,
      "message.timestamp.before.max.ms": Number.MAX_SAFE_INTEGER,
      "message.timestamp.after.max.ms": 3_600_000,
      "local.retention.ms": -2,
      "local.retention.bytes": -2,
      "remote.storage.enable": false,
    });
  });

  it("accepts values at the range ends, as numbers or strings", () => {
    const c = mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, {
      "segment.ms": "1",
      "delete.retention.ms": 0,
      "min.compaction.lag.ms": "0",
      "max.compaction.lag.ms": 1,
      "min.cleanable.dirty.ratio": "0.75",
      "message.timestamp.before.max.ms": 0,
      "message.timestamp.after.max.ms": "0",
      "local.retention.ms": -2,
      "local.retention.bytes": "-2",
      "remote.storage.enable": "TRUE",
    });
    expect([c["segment.ms"], c["min.cleanable.dirty.ratio"], c["max.compaction.lag.ms"], c["remote.storage.enable"], c["local.retention.bytes"]]).toEqual([1, 0.75, 1, true, -2]);
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "min.cleanable.dirty.ratio": 1 })["min.cleanable.dirty.ratio"]).toBe(1);
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "min.cleanable.dirty.ratio": ".5e0" })["min.cleanable.dirty.ratio"]).toBe(0.5);
  });

  it.each([
    ["segment.ms", 0],
    ["delete.retention.ms", -1],
    ["min.compaction.lag.ms", -1],
    ["max.compaction.lag.ms", 0],
    ["min.cleanable.dirty.ratio", 1.01],
    ["min.cleanable.dirty.ratio", -0.1],
    ["min.cleanable.dirty.ratio", "half"],
    ["min.cleanable.dirty.ratio", Number.NaN],
    ["message.timestamp.before.max.ms", -1],
    ["message.timestamp.after.max.ms", 1.5],
    ["local.retention.ms", -3],
    ["local.retention.bytes", "x"],
    ["remote.storage.enable", "yes"],
    ["remote.storage.enable", 1],
  ])("refuses %s = %j with INVALID_CONFIG naming it", (key, value) => {
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { [key]: value })).toEqual({ code: "INVALID_CONFIG", config: key });
  });

  it("cross-config rules are checked on the merged result, and a refused change changes nothing", () => {
    const base = { ...DEFAULT_TOPIC_CONFIGS };
    const before = JSON.stringify(base);
    expect(refusal(base, { "min.compaction.lag.ms": 10, "max.compaction.lag.ms": 5 })).toEqual({ code: "INVALID_CONFIG", config: "min.compaction.lag.ms" });
    expect(refusal(base, { "retention.ms": 1000, "local.retention.ms": 1001 })).toEqual({ code: "INVALID_CONFIG", config: "local.retention.ms" });
    expect(refusal(base, { "retention.bytes": 1000, "local.retention.bytes": -1 })).toEqual({ code: "INVALID_CONFIG", config: "local.retention.bytes" });
    expect(refusal(base, { "remote.storage.enable": true, "cleanup.policy": "compact" })).toEqual({ code: "INVALID_CONFIG", config: "remote.storage.enable" });
    const tiered = mergeTopicConfigs(base, { "remote.storage.enable": true, "retention.ms": 1000, "local.retention.ms": 1000 });
    expect(refusal(tiered, { "remote.storage.enable": false })).toEqual({ code: "INVALID_CONFIG", config: "remote.storage.enable" });
    // Tiered storage of a replicated partition (each replica its own copy under its own prefix):
    // accepted at creation and as a later change; the factor-1 rules hold for it too.
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3, "remote.storage.enable": true })).toBe("accepted");
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3 })).toBe("accepted");
    const rf3 = mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3 });
    expect(refusal(rf3, { "remote.storage.enable": true })).toBe("accepted");
    expect(refusal(rf3, { "remote.storage.enable": true, "cleanup.policy": "compact" })).toEqual({ code: "INVALID_CONFIG", config: "remote.storage.enable" });
    const rf3Tiered = mergeTopicConfigs(rf3, { "remote.storage.enable": true });
    expect(refusal(rf3Tiered, { "remote.storage.enable": false })).toEqual({ code: "INVALID_CONFIG", config: "remote.storage.enable" });
    // Unlimited retention allows any local retention; -2 follows.
    expect(refusal(base, { "retention.ms": -1, "local.retention.ms": 5 })).toBe("accepted");
    expect(refusal(base, { "retention.bytes": 10, "local.retention.bytes": -2 })).toBe("accepted");
    expect(JSON.stringify(base)).toBe(before);
  });

  it("a topic stored before these configs existed reads them as defaults, and can be altered", () => {
    const stored = {
      "max.message.bytes": 2048,
      "message.timestamp.type": "CreateTime",
      "retention.ms": 10,
      "retention.bytes": -1,
      "cleanup.policy": "delete",
      "segment.bytes": 1024,
    } as TopicConfigs;
    expect(withConfigDefaults(stored)).toEqual({ ...DEFAULT_TOPIC_CONFIGS, ...stored });
    expect(mergeTopicConfigs(stored, { "segment.ms": 5 })).toEqual({ ...DEFAULT_TOPIC_CONFIGS, ...stored, "segment.ms": 5 });
  });
});

describe("lifecycleConfig: the core's settings from a topic's configs", () => {
  it("maps names, the policy and KIP-405's -2", () => {
    const c = lifecycleConfig({ "cleanup.policy": "compact,delete", "retention.ms": 5000, "retention.bytes": 99, "local.retention.bytes": 10, "segment.ms": 7 });
    expect(c.roll).toEqual({ segmentBytes: 64 * 1024 * 1024, segmentMs: 7 });
    expect(c.retention).toEqual({ delete: true, retentionMs: 5000, retentionBytes: 99 });
    expect(c.compaction).toEqual({ compact: true, deleteRetentionMs: 86_400_000, minCompactionLagMs: 0, maxCompactionLagMs: Number.MAX_SAFE_INTEGER, minCleanableDirtyRatio: 0.5 });
    expect(c.tiering).toEqual({ remoteStorageEnable: false, localRetentionMs: 5000, localRetentionBytes: 10 });
    expect(c.timestamps).toEqual({ timestampType: "CreateTime", beforeMaxMs: Number.MAX_SAFE_INTEGER, afterMaxMs: 3_600_000 });
    expect([lifecycleConfig({ "cleanup.policy": "compact" }).retention.delete, lifecycleConfig({}).compaction.compact]).toEqual([false, false]);
  });
});
