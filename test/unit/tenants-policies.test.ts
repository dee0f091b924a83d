/**
 * The pure policy model (src/protocol/policies.ts): validation of every policy, resolution of
 * effective values and their sources (topic > namespace > default; retention per field from the
 * topic's explicit configs), and the retention mapping onto the configs.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_POLICIES,
  DEFAULT_TOPIC_CONFIGS,
  EdgelogError,
  POLICY_NAMES,
  effectiveConfigs,
  parsePolicyMap,
  parsePolicyValue,
  policiesOf,
  policyValues,
  resolvePolicies,
  type PolicyName,
  type PolicyOverrides,
} from "../../src/protocol/index.ts";

function invalid(f: () => unknown): Record<string, unknown> | undefined {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(EdgelogError);
    expect((e as EdgelogError).code).toBe("INVALID_POLICY");
    return (e as EdgelogError).details;
  }
  throw new Error("expected INVALID_POLICY");
}

/** Arbitrary valid values of each policy. */
const limit = fc.oneof(fc.constant(-1), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
const sized = fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));
const count = fc.integer({ min: 0, max: 0x7fffffff });
const VALUES: { [K in PolicyName]: fc.Arbitrary<unknown> } = {
  messageTtlSeconds: count,
  retention: fc.record({ timeMs: sized, sizeBytes: sized }),
  backlogQuota: fc.record({ limitBytes: limit, action: fc.constantFrom("producer_request_hold", "producer_exception", "consumer_backlog_eviction") }),
  publishRate: fc.record({ messagesPerSecond: limit, bytesPerSecond: limit }),
  dispatchRate: fc.record({ messagesPerSecond: limit, bytesPerSecond: limit }),
  maxProducersPerTopic: count,
  maxConsumersPerSubscription: count,
  maxSubscriptionsPerTopic: count,
};

describe("policy validation", () => {
  it("accepts every valid value unchanged (property)", () => {
    for (const name of POLICY_NAMES) {
      fc.assert(
        fc.property(VALUES[name], (v) => {
          expect(parsePolicyValue(name, v)).toEqual(v);
        }),
      );
    }
  });

  it("refuses wrong types, ranges and fields, naming the policy and field", () => {
    expect(invalid(() => parsePolicyValue("messageTtlSeconds", "60"))).toEqual({ policy: "messageTtlSeconds" });
    expect(invalid(() => parsePolicyValue("messageTtlSeconds", 0x80000000))).toEqual({ policy: "messageTtlSeconds" });
    expect(invalid(() => parsePolicyValue("retention", { timeMs: 1 }))).toEqual({ policy: "retention", field: "sizeBytes" });
    expect(invalid(() => parsePolicyValue("retention", { timeMs: 1, sizeBytes: 1, extra: 1 }))).toEqual({ policy: "retention", field: "extra" });
    expect(invalid(() => parsePolicyValue("backlogQuota", { limitBytes: 1, action: "drop" }))).toEqual({ policy: "backlogQuota", field: "action" });
    expect(invalid(() => parsePolicyValue("backlogQuota", { limitBytes: 0 }))).toEqual({ policy: "backlogQuota", field: "limitBytes" });
    expect(invalid(() => parsePolicyValue("publishRate", {}))).toEqual({ policy: "publishRate" });
    expect(invalid(() => parsePolicyValue("dispatchRate", { bytesPerSecond: 0 }))).toEqual({ policy: "dispatchRate", field: "bytesPerSecond" });
    expect(invalid(() => parsePolicyValue("maxProducersPerTopic", -1))).toEqual({ policy: "maxProducersPerTopic" });
    expect(invalid(() => parsePolicyMap({ ttl: 1 }))).toEqual({ policy: "ttl" });
    expect(invalid(() => parsePolicyMap({ messageTtlSeconds: null }))).toEqual({ policy: "messageTtlSeconds" });
    expect(parsePolicyMap({ messageTtlSeconds: null }, POLICY_NAMES, true)).toEqual({ messageTtlSeconds: null });
    // Defaults: a backlog quota's action, a rate's missing field.
    expect(parsePolicyValue("backlogQuota", { limitBytes: 10 })).toEqual({ limitBytes: 10, action: "producer_request_hold" });
    expect(parsePolicyValue("publishRate", { messagesPerSecond: 5 })).toEqual({ messagesPerSecond: 5, bytesPerSecond: -1 });
  });
});

describe("resolution", () => {
  it("each policy comes from the topic, else the namespace, else the default (property)", () => {
    const overrides = fc.record(VALUES, { requiredKeys: [] }) as fc.Arbitrary<PolicyOverrides>;
    fc.assert(
      fc.property(overrides, overrides, (ns, topic) => {
        const r = resolvePolicies(ns, topic);
        for (const name of POLICY_NAMES) {
          const expected =
            topic[name] !== undefined
              ? { value: topic[name], source: "topic" }
              : ns[name] !== undefined
                ? { value: ns[name], source: "namespace" }
                : { value: DEFAULT_POLICIES[name], source: "default" };
          expect(r[name]).toEqual(expected);
        }
        expect(policiesOf({ policies: policyValues(r) })).toEqual(policyValues(r));
      }),
    );
  });

  it("retention per field: the topic's explicit configs over the namespace's policy; the configs follow", () => {
    const ns: PolicyOverrides = { retention: { timeMs: 5000, sizeBytes: 4096 } };
    const values = { ...DEFAULT_TOPIC_CONFIGS, "retention.ms": 1000 };
    const r = resolvePolicies(ns, {}, { values, explicit: new Set(["retention.ms"]) });
    expect(r.retention).toEqual({ value: { timeMs: 1000, sizeBytes: 4096 }, source: "topic" });
    const c = effectiveConfigs(values, r);
    expect([c["retention.ms"], c["retention.bytes"]]).toEqual([1000, 4096]);
    const inherited = resolvePolicies(ns, {}, { values, explicit: new Set() });
    expect(inherited.retention).toEqual({ value: { timeMs: 5000, sizeBytes: 4096 }, source: "namespace" });
    expect(policiesOf({})).toEqual(DEFAULT_POLICIES);
  });
});
