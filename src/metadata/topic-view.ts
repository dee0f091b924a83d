/**
 * A topic's effective configs and policies from what is stored about it (docs/TENANTS.md):
 * topic override > namespace policy > default, the namespace's retention policy feeding
 * `retention.ms` / `retention.bytes`. Pure: shared by MetadataDO (durable-objects/metadata.ts)
 * and the metadata quorum's state machine (durable-objects/raft/metadata-machine.ts), so both
 * answer the same views and refuse the same changes.
 */
import { DEFAULT_TOPIC_CONFIGS, mergeTopicConfigs } from "../protocol/config.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { checkPolicyRules, effectiveConfigs, parsePolicyMap, policyValues, resolvePolicies, TOPIC_POLICY_NAMES, type EffectivePolicies, type PolicyOverrides } from "../protocol/policies.ts";
import type { TopicConfigs } from "../protocol/types.ts";

/** The stored columns a view is computed from: configs JSON and the configs the topic set itself (JSON array; null = legacy). */
export type StoredTopicConfigs = { configs: string; config_keys: string | null };

/** The stored configs, defaults first: configs stored before a key existed (producer.id.expiration.ms) show its default. */
export function storedConfigs(row: StoredTopicConfigs): TopicConfigs {
  return { ...DEFAULT_TOPIC_CONFIGS, ...(JSON.parse(row.configs) as Partial<TopicConfigs>) };
}

/** The configs the topic set itself; for a topic from before migration 3, those that differ from their defaults. */
export function explicitKeys(row: StoredTopicConfigs): string[] {
  if (row.config_keys !== null) return JSON.parse(row.config_keys) as string[];
  const stored = JSON.parse(row.configs) as Record<string, unknown>;
  return Object.keys(stored).filter((k) => Object.hasOwn(DEFAULT_TOPIC_CONFIGS, k) && stored[k] !== DEFAULT_TOPIC_CONFIGS[k as keyof TopicConfigs]);
}

/** Names of the configs a request sets (its non-null keys). */
export function configKeysOf(configs: unknown): Set<string> {
  if (typeof configs !== "object" || configs === null || Array.isArray(configs)) return new Set();
  return new Set(Object.entries(configs).flatMap(([k, v]) => (v === null ? [] : [k])));
}

/** A config patch split into values to set and keys whose null removes the topic's own value. */
export function splitRemovals(configs: unknown): { set: unknown; removed: string[] } {
  if (typeof configs !== "object" || configs === null || Array.isArray(configs)) return { set: configs, removed: [] };
  const set: Record<string, unknown> = {};
  const removed: string[] = [];
  for (const [k, v] of Object.entries(configs)) {
    if (v === null) removed.push(k);
    else set[k] = v;
  }
  return { set, removed };
}

/**
 * A topic's effective view: policies with sources, the configs shown (retention from the
 * effective retention policy) and the configs partitions receive (the same, plus the policy
 * values). Writes pass `validate`: the effective configs are validated as a whole (a namespace
 * retention may break a topic's local.retention rule), and so are the policy rules. Reads do
 * not, so a stored state can always be read back.
 * @throws EdgelogError INVALID_CONFIG or INVALID_POLICY (naming the topic when `o.topic` is given).
 */
export function topicView(
  configs: TopicConfigs,
  explicit: ReadonlySet<string>,
  namespace: PolicyOverrides,
  own: PolicyOverrides,
  o: { validate: boolean; topic?: string } = { validate: false },
): { policies: EffectivePolicies; summaryConfigs: TopicConfigs; partitionConfigs: TopicConfigs } {
  const policies = resolvePolicies(namespace, own, { values: configs, explicit });
  const { policies: _stale, ...plain } = configs;
  const summaryConfigs = effectiveConfigs(plain, policies);
  if (o.validate) {
    try {
      mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, summaryConfigs);
      checkPolicyRules(policyValues(policies));
    } catch (e) {
      if (o.topic !== undefined && e instanceof EdgelogError) throw new EdgelogError(e.code, `Topic ${o.topic}: ${e.message}`, { ...e.details, topic: o.topic });
      throw e;
    }
  }
  return { policies, summaryConfigs, partitionConfigs: { ...summaryConfigs, policies: policyValues(policies) } };
}

/** What is stored about a topic's settings: its configs (defaults merged in), the configs it set itself, its own policy overrides. */
export interface TopicSettings {
  configs: TopicConfigs;
  explicit: Set<string>;
  own: PolicyOverrides;
}

/** A stored row's settings. */
export function settingsOf(row: StoredTopicConfigs & { policies: string }): TopicSettings {
  return { configs: storedConfigs(row), explicit: new Set(explicitKeys(row)), own: JSON.parse(row.policies) as PolicyOverrides };
}

/**
 * A topic PATCH applied to stored settings (MetadataDO's alter): a config set to null takes
 * its default again and stops being the topic's own; a policy set to null is removed.
 * @throws EdgelogError INVALID_CONFIG (a value, or remote.storage.enable back to false), INVALID_POLICY (a name or value)
 */
export function patchTopicSettings(cur: TopicSettings, patch: { configs?: unknown; policies?: unknown }): TopicSettings {
  const { set, removed } = splitRemovals(patch.configs);
  const defaults = DEFAULT_TOPIC_CONFIGS as unknown as Record<string, unknown>;
  const merged = set === undefined ? undefined : { ...(set as object), ...Object.fromEntries(removed.map((k) => [k, defaults[k] ?? null])) };
  const configs = mergeTopicConfigs(cur.configs, merged);
  const explicit = new Set(cur.explicit);
  for (const k of removed) explicit.delete(k);
  for (const k of configKeysOf(set)) explicit.add(k);
  const own = { ...cur.own } as Record<string, unknown>;
  if (patch.policies !== undefined) {
    for (const [k, v] of Object.entries(parsePolicyMap(patch.policies, TOPIC_POLICY_NAMES, true))) {
      if (v === null) delete own[k];
      else own[k] = v;
    }
  }
  return { configs, explicit, own: own as PolicyOverrides };
}

/**
 * A namespace policy change (`{name: value | null}`, null removes) checked against the
 * namespace and every topic in it: the namespace's new policies and the topics whose
 * effective view changed, with the configs their partitions must receive.
 * @throws EdgelogError INVALID_POLICY, INVALID_CONFIG (naming the topic): nothing may be written
 */
export function planNamespacePolicies<T extends { name: string; settings: TopicSettings }>(
  current: PolicyOverrides,
  changes: { [name: string]: unknown },
  topics: readonly T[],
): { policies: PolicyOverrides; changed: { topic: T; partitionConfigs: TopicConfigs }[] } {
  const next = { ...current } as Record<string, unknown>;
  for (const [k, v] of Object.entries(parsePolicyMap(changes, undefined, true))) {
    if (v === null) delete next[k];
    else next[k] = v;
  }
  const policies = next as PolicyOverrides;
  checkPolicyRules(policyValues(resolvePolicies(policies, {})));
  const changed: { topic: T; partitionConfigs: TopicConfigs }[] = [];
  for (const t of topics) {
    const before = topicView(t.settings.configs, t.settings.explicit, current, t.settings.own);
    const after = topicView(t.settings.configs, t.settings.explicit, policies, t.settings.own, { validate: true, topic: t.name });
    if (JSON.stringify(before.partitionConfigs) !== JSON.stringify(after.partitionConfigs)) changed.push({ topic: t, partitionConfigs: after.partitionConfigs });
  }
  return { policies, changed };
}
