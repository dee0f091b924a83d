/**
 * `replica.locations` (docs/RAFT.md "Location hints"): the topic config's validation and the
 * hint each replica's stub is created with (`idFromName` + `get(id, { locationHint })`).
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_TOPIC_CONFIGS, LOCATION_HINTS, mergeTopicConfigs, replicaLocation } from "../../src/protocol/config.ts";
import { EdgelogError } from "../../src/protocol/errors.ts";
import { replicaStubAt } from "../../src/partition/rpc.ts";
import type { TopicConfigs } from "../../src/protocol/types.ts";

function refusal(base: TopicConfigs, patch: Record<string, unknown>): { code: string; details: unknown } {
  try {
    mergeTopicConfigs(base, patch);
  } catch (e) {
    if (e instanceof EdgelogError) return { code: e.code, details: e.details };
    throw e;
  }
  throw new Error("not refused");
}

describe("replica.locations (topic config)", () => {
  it("takes one documented hint per replica, normalised; absent by default", () => {
    expect(DEFAULT_TOPIC_CONFIGS["replica.locations"]).toBeUndefined();
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3, "replica.locations": "wnam, enam ,weur" })["replica.locations"]).toBe("wnam,enam,weur");
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "replica.locations": "apac" })["replica.locations"]).toBe("apac");
    expect(LOCATION_HINTS).toEqual(["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"]);
  });

  it("refuses an unknown hint, a count other than replication.factor, a non-string, and any change after creation", () => {
    const bad = { code: "INVALID_CONFIG", details: { config: "replica.locations" } };
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3, "replica.locations": "wnam,enam,mars" })).toEqual(bad);
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3, "replica.locations": "wnam,enam" })).toEqual(bad);
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replica.locations": "wnam,enam,weur" })).toEqual(bad);
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3, "replica.locations": "wnam,,weur" })).toEqual(bad);
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3, "replica.locations": ["wnam", "enam", "weur"] })).toEqual(bad);
    expect(refusal(DEFAULT_TOPIC_CONFIGS, { "replica.locations": "WNAM" })).toEqual(bad);
    const created = mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3, "replica.locations": "wnam,enam,weur" });
    expect(refusal(created, { "replica.locations": "weur,enam,wnam" })).toEqual(bad);
    // Repeating the value is not a change; other configs still change.
    expect(mergeTopicConfigs(created, { "replica.locations": "wnam,enam,weur", "retention.ms": 5 })).toMatchObject({ "replica.locations": "wnam,enam,weur", "retention.ms": 5 });
    // A topic created without hints cannot get them later.
    const plain = mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "replication.factor": 3 });
    expect(refusal(plain, { "replica.locations": "wnam,enam,weur" })).toEqual(bad);
  });
});

describe("replicaStubAt", () => {
  function fakeNamespace() {
    const calls: string[] = [];
    const ns = {
      getByName: (name: string) => {
        calls.push(`getByName ${name}`);
        return {};
      },
      idFromName: (name: string) => ({ name }) as unknown as DurableObjectId,
      get: (id: DurableObjectId, opts?: DurableObjectNamespaceGetDurableObjectOptions) => {
        calls.push(`get ${(id as unknown as { name: string }).name} ${opts?.locationHint}`);
        return {};
      },
    };
    return { ns: ns as unknown as Pick<DurableObjectNamespace, "getByName" | "idFromName" | "get">, calls };
  }

  it("creates each replica's stub with its own hint (r1 is the partition object), or by name without hints", () => {
    const { ns, calls } = fakeNamespace();
    const configs = { "replication.factor": 3, "replica.locations": "wnam,enam,weur" };
    for (let i = 0; i < 3; i++) replicaStubAt(ns, "T", 2, i, configs);
    replicaStubAt(ns, "T", 2, 1, { "replication.factor": 3 });
    expect(calls).toEqual(["get T/2 wnam", "get T/2/r2 enam", "get T/2/r3 weur", "getByName T/2/r2"]);
    expect(replicaLocation(configs, 2)).toBe("weur");
    expect(replicaLocation({}, 0)).toBeUndefined();
  });
});
