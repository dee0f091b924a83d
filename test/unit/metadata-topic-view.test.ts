/**
 * The pure decisions of the metadata quorum's tenant records (src/metadata/topic-view.ts),
 * which its state machine applies in log order: a topic PATCH applied to stored settings, and
 * a namespace policy change planned against the topics in the namespace (which change, what
 * their partitions receive, what is refused).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { patchTopicSettings, planNamespacePolicies, settingsOf, topicView, type TopicSettings } from "../../src/metadata/topic-view.ts";
import { DEFAULT_TOPIC_CONFIGS } from "../../src/protocol/config.ts";
import { EdgelogError } from "../../src/protocol/errors.ts";
import type { PolicyOverrides } from "../../src/protocol/policies.ts";

const fresh = (): TopicSettings => settingsOf({ configs: JSON.stringify(DEFAULT_TOPIC_CONFIGS), config_keys: "[]", policies: "{}" });

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof EdgelogError) return e.code;
    throw e;
  }
  return "none";
}

describe("patchTopicSettings (a topic PATCH at apply)", () => {
  it("sets configs and policies as the topic's own; null gives the default back", () => {
    const a = patchTopicSettings(fresh(), { configs: { "retention.ms": 60_000 }, policies: { maxProducersPerTopic: 2 } });
    expect([a.configs["retention.ms"], [...a.explicit], a.own]).toEqual([60_000, ["retention.ms"], { maxProducersPerTopic: 2 }]);
    const b = patchTopicSettings(a, { configs: { "retention.ms": null }, policies: { maxProducersPerTopic: null, messageTtlSeconds: 5 } });
    expect([b.configs["retention.ms"], [...b.explicit], b.own]).toEqual([DEFAULT_TOPIC_CONFIGS["retention.ms"], [], { messageTtlSeconds: 5 }]);
    // The input is not changed (apply reads the row again for the "before" view).
    expect(a.own).toEqual({ maxProducersPerTopic: 2 });
  });

  it("refuses bad values with the stable codes", () => {
    expect(codeOf(() => patchTopicSettings(fresh(), { configs: { "retention.ms": "soon" } }))).toBe("INVALID_CONFIG");
    expect(codeOf(() => patchTopicSettings(fresh(), { configs: { "no.such.config": 1 } }))).toBe("INVALID_CONFIG");
    expect(codeOf(() => patchTopicSettings(fresh(), { policies: { maxProducersPerTopic: -1 } }))).toBe("INVALID_POLICY");
    // retention is a namespace policy; a topic overrides it through retention.ms / retention.bytes.
    expect(codeOf(() => patchTopicSettings(fresh(), { policies: { retention: { timeMs: 1, sizeBytes: -1 } } }))).toBe("INVALID_POLICY");
  });
});

describe("planNamespacePolicies (a namespace policy change at apply)", () => {
  const own = { name: "t/ns/own", settings: patchTopicSettings(fresh(), { policies: { maxProducersPerTopic: 9 } }) };
  const plain = { name: "t/ns/plain", settings: fresh() };

  it("changes the topics whose effective view changed, with the configs their partitions receive", () => {
    const plan = planNamespacePolicies({}, { maxProducersPerTopic: 4 }, [own, plain]);
    expect(plan.policies).toEqual({ maxProducersPerTopic: 4 });
    // `own` overrides the policy: its view does not change, no push.
    expect(plan.changed.map((c) => c.topic.name)).toEqual(["t/ns/plain"]);
    expect(plan.changed[0]!.partitionConfigs.policies?.maxProducersPerTopic).toBe(4);
    // The namespace's retention feeds retention.ms of a topic that did not set it.
    const r = planNamespacePolicies({}, { retention: { timeMs: 7_200_000, sizeBytes: -1 } }, [plain]);
    expect(r.changed[0]!.partitionConfigs["retention.ms"]).toBe(7_200_000);
    // Removing a policy that is not set changes nothing.
    expect(planNamespacePolicies({}, { messageTtlSeconds: null }, [own, plain]).changed).toEqual([]);
  });

  it("refuses a change that breaks a rule, for the namespace or for one of its topics", () => {
    expect(codeOf(() => planNamespacePolicies({}, { messageTtlSeconds: "x" }, [plain]))).toBe("INVALID_POLICY");
    expect(codeOf(() => planNamespacePolicies({}, { retention: { timeMs: -1, sizeBytes: 1_000 }, backlogQuota: { limitBytes: 5_000, action: "producer_request_hold" } }, [plain]))).toBe(
      "INVALID_POLICY",
    );
  });

  it("is idempotent: the same change applied again changes no topic (property)", () => {
    const value = fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 1_000 }));
    fc.assert(
      fc.property(fc.record({ maxProducersPerTopic: value, messageTtlSeconds: value, maxSubscriptionsPerTopic: value }, { requiredKeys: [] }), (changes) => {
        const first = planNamespacePolicies({}, changes, [own, plain]);
        const second = planNamespacePolicies(first.policies, changes, [own, plain]);
        expect(second.policies).toEqual(first.policies);
        expect(second.changed).toEqual([]);
        // Every topic's partitions end with the view the namespace and the topic resolve to.
        for (const c of first.changed) {
          expect(c.partitionConfigs).toEqual(topicView(c.topic.settings.configs, c.topic.settings.explicit, first.policies as PolicyOverrides, c.topic.settings.own).partitionConfigs);
        }
      }),
    );
  });
});
