/**
 * Tenants, namespaces and namespace policies (Pulsar's model; docs/TENANTS.md): names, the
 * policy table with its defaults and validation, and the resolution of a topic's effective
 * policies (topic override > namespace policy > default) and of its effective configs (the
 * namespace's retention policy feeds `retention.ms` / `retention.bytes`).
 *
 * Units are in the names: milliseconds, seconds (message TTL, as Pulsar's), bytes, per second.
 * Pure module: no Workers imports (shared with the SDK).
 */
import { DEFAULT_TOPIC_CONFIGS } from "./config.ts";
import { EdgelogError } from "./errors.ts";
import { DEFAULT_NAMESPACE, DEFAULT_TENANT } from "./names.ts";
import type { TopicConfigs } from "./types.ts";

/**
 * The one cluster a tenant may be allowed on. Pulsar tenants list the clusters of a
 * geo-replicated instance; an Edgelog deployment is one cluster, so `allowedClusters` is always
 * `["edgelog"]` (the only value accepted).
 */
export const CLUSTER_NAME = "edgelog";

/** Namespaces that exist from the start and cannot be deleted (nor their tenants): short topic names live in the first, Durable Streams in the second. */
export const BUILT_IN_NAMESPACES = [`${DEFAULT_TENANT}/${DEFAULT_NAMESPACE}`, "streams/default"] as const;
export const BUILT_IN_TENANTS = [DEFAULT_TENANT, "streams"] as const;

/** Tenant and namespace names: 1-64 characters of [a-zA-Z0-9._-], not "." or ".." (as the prefixes of topic names). */
const SEGMENT = /^[a-zA-Z0-9._-]{1,64}$/;

/**
 * A tenant name. @throws EdgelogError INVALID_REQUEST (`details.field` = `field`).
 */
export function parseTenantName(v: unknown, field = "tenant"): string {
  if (typeof v !== "string" || !SEGMENT.test(v) || v === "." || v === "..") {
    throw new EdgelogError("INVALID_REQUEST", `${field} must be 1-64 characters of [a-zA-Z0-9._-], not "." or "..", got ${JSON.stringify(v)}.`, { field });
  }
  return v;
}

/** `tenant/namespace` from its two parts. @throws EdgelogError INVALID_REQUEST */
export function parseNamespaceName(tenant: unknown, namespace: unknown): { tenant: string; namespace: string; full: string } {
  const t = parseTenantName(tenant);
  const n = parseTenantName(namespace, "namespace");
  return { tenant: t, namespace: n, full: `${t}/${n}` };
}

// ---- policies ----

/** Retention of acknowledged messages (Pulsar's retention policy); -1 = unlimited. Mapped onto `retention.ms` / `retention.bytes`. */
export interface RetentionPolicy {
  timeMs: number;
  sizeBytes: number;
}

/** What happens when a topic's backlog passes its quota (Pulsar's `BacklogQuota.RetentionPolicy`). */
export const BACKLOG_QUOTA_ACTIONS = ["producer_request_hold", "producer_exception", "consumer_backlog_eviction"] as const;
export type BacklogQuotaAction = (typeof BACKLOG_QUOTA_ACTIONS)[number];

/** A backlog size limit (bytes; -1 = none) and its action. */
export interface BacklogQuota {
  limitBytes: number;
  action: BacklogQuotaAction;
}

/** A rate limit; each -1 = unlimited. */
export interface RateLimit {
  messagesPerSecond: number;
  bytesPerSecond: number;
}

/** Every policy, resolved to a value. */
export interface TopicPolicies {
  /** Messages older than this are acknowledged for subscriptions that have not consumed them (seconds; 0 = no TTL, Pulsar's convention). */
  messageTtlSeconds: number;
  retention: RetentionPolicy;
  backlogQuota: BacklogQuota;
  /** Produce rate per topic. */
  publishRate: RateLimit;
  /** Dispatch rate per topic (to all its subscriptions). */
  dispatchRate: RateLimit;
  /** 0 = unlimited (Pulsar's convention for these three). */
  maxProducersPerTopic: number;
  maxConsumersPerSubscription: number;
  maxSubscriptionsPerTopic: number;
}

export type PolicyName = keyof TopicPolicies;
export const POLICY_NAMES = [
  "messageTtlSeconds",
  "retention",
  "backlogQuota",
  "publishRate",
  "dispatchRate",
  "maxProducersPerTopic",
  "maxConsumersPerSubscription",
  "maxSubscriptionsPerTopic",
] as const satisfies readonly PolicyName[];

/** Policies a topic may override through `policies` (retention is overridden through the configs `retention.ms` / `retention.bytes`, Kafka's way). */
export const TOPIC_POLICY_NAMES = POLICY_NAMES.filter((n) => n !== "retention");

/** Where an effective policy comes from. */
export type PolicySource = "default" | "namespace" | "topic";

/** A topic's (or namespace's) effective policies, each with its source. */
export type EffectivePolicies = { [K in PolicyName]: { value: TopicPolicies[K]; source: PolicySource } };

/** Policies set on a namespace or topic: only the ones set. */
export type PolicyOverrides = Partial<TopicPolicies>;

/** Defaults: no TTL, Edgelog's topic retention defaults, no backlog quota, no rate limits, no count limits. */
export const DEFAULT_POLICIES: TopicPolicies = {
  messageTtlSeconds: 0,
  retention: { timeMs: DEFAULT_TOPIC_CONFIGS["retention.ms"], sizeBytes: DEFAULT_TOPIC_CONFIGS["retention.bytes"] },
  backlogQuota: { limitBytes: -1, action: "producer_request_hold" },
  publishRate: { messagesPerSecond: -1, bytesPerSecond: -1 },
  dispatchRate: { messagesPerSecond: -1, bytesPerSecond: -1 },
  maxProducersPerTopic: 0,
  maxConsumersPerSubscription: 0,
  maxSubscriptionsPerTopic: 0,
};

/** Largest count or TTL (Pulsar's are Java ints). */
const INT_MAX = 0x7fffffff;

function bad(policy: string, message: string, field?: string): never {
  throw new EdgelogError("INVALID_POLICY", message, field === undefined ? { policy } : { policy, field });
}

function intField(policy: string, field: string, v: unknown, min: number, max: number, note = ""): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    bad(policy, `${policy}${field === "" ? "" : `.${field}`} must be an integer in [${min}, ${max}]${note}, got ${JSON.stringify(v)}.`, field === "" ? undefined : field);
  }
  return v;
}

/** -1 (unlimited) or a positive integer. */
function limitField(policy: string, field: string, v: unknown): number {
  if (v === -1) return -1;
  return intField(policy, field, v, 1, Number.MAX_SAFE_INTEGER, " or -1 (unlimited)");
}

function objectOf(policy: string, v: unknown, fields: readonly string[]): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) bad(policy, `${policy} must be an object with ${fields.join(", ")}.`);
  for (const k of Object.keys(v)) if (!fields.includes(k)) bad(policy, `Unknown field ${policy}.${k}: use ${fields.join(", ")}.`, k);
  return v as Record<string, unknown>;
}

/** The name of a policy. @throws EdgelogError INVALID_POLICY for an unknown one. */
export function parsePolicyName(v: unknown): PolicyName {
  if (typeof v !== "string" || !(POLICY_NAMES as readonly string[]).includes(v)) {
    throw new EdgelogError("INVALID_POLICY", `Unknown policy ${JSON.stringify(v)}: use ${POLICY_NAMES.join(", ")}.`, { policy: String(v) });
  }
  return v as PolicyName;
}

/**
 * Validates one policy value (exact shapes: numbers as JSON numbers, no unknown fields).
 * - messageTtlSeconds: integer [0, 2^31-1];
 * - retention: {timeMs, sizeBytes}, each -1 or an integer >= 0 (both required);
 * - backlogQuota: {limitBytes: -1 or >= 1, action?: producer_request_hold (default) | producer_exception | consumer_backlog_eviction};
 * - publishRate, dispatchRate: {messagesPerSecond?, bytesPerSecond?}, each -1 (default) or >= 1, at least one given;
 * - maxProducersPerTopic, maxConsumersPerSubscription, maxSubscriptionsPerTopic: integer [0, 2^31-1], 0 = unlimited.
 * @throws EdgelogError INVALID_POLICY with `details.policy` (and `details.field`).
 */
export function parsePolicyValue<K extends PolicyName>(name: K, v: unknown): TopicPolicies[K] {
  return parseAny(name, v) as TopicPolicies[K];
}

function parseAny(name: PolicyName, v: unknown): TopicPolicies[PolicyName] {
  switch (name) {
    case "messageTtlSeconds":
    case "maxProducersPerTopic":
    case "maxConsumersPerSubscription":
    case "maxSubscriptionsPerTopic":
      return intField(name, "", v, 0, INT_MAX);
    case "retention": {
      const o = objectOf(name, v, ["timeMs", "sizeBytes"]);
      const field = (f: string): number => (o[f] === -1 ? -1 : intField(name, f, o[f], 0, Number.MAX_SAFE_INTEGER, " or -1 (unlimited)"));
      return { timeMs: field("timeMs"), sizeBytes: field("sizeBytes") };
    }
    case "backlogQuota": {
      const o = objectOf(name, v, ["limitBytes", "action"]);
      const action = o.action ?? "producer_request_hold";
      if (typeof action !== "string" || !(BACKLOG_QUOTA_ACTIONS as readonly string[]).includes(action)) {
        bad(name, `backlogQuota.action must be one of ${BACKLOG_QUOTA_ACTIONS.join(" | ")}, got ${JSON.stringify(o.action)}.`, "action");
      }
      return { limitBytes: limitField(name, "limitBytes", o.limitBytes), action: action as BacklogQuotaAction };
    }
    case "publishRate":
    case "dispatchRate": {
      const o = objectOf(name, v, ["messagesPerSecond", "bytesPerSecond"]);
      if (o.messagesPerSecond === undefined && o.bytesPerSecond === undefined) bad(name, `${name} needs messagesPerSecond and/or bytesPerSecond.`);
      return {
        messagesPerSecond: o.messagesPerSecond === undefined ? -1 : limitField(name, "messagesPerSecond", o.messagesPerSecond),
        bytesPerSecond: o.bytesPerSecond === undefined ? -1 : limitField(name, "bytesPerSecond", o.bytesPerSecond),
      };
    }
  }
}

/**
 * Validates a map of policies (`{name: value}`; with `allowNull`, `null` means "remove").
 * `allowed` limits the names (a topic cannot set `retention` here).
 * @throws EdgelogError INVALID_POLICY
 */
export function parsePolicyMap(v: unknown, allowed: readonly PolicyName[] = POLICY_NAMES, allowNull = false): { [K in PolicyName]?: TopicPolicies[K] | null } {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new EdgelogError("INVALID_POLICY", "policies must be an object of policy name to value.", { policy: "policies" });
  const out: { [K in PolicyName]?: TopicPolicies[K] | null } = {};
  for (const [k, value] of Object.entries(v)) {
    const name = parsePolicyName(k);
    if (!allowed.includes(name)) {
      throw new EdgelogError("INVALID_POLICY", `Policy ${name} cannot be set here${name === "retention" ? ": a topic overrides it with the configs retention.ms / retention.bytes" : ""}.`, {
        policy: name,
      });
    }
    if (value === null && allowNull) (out as Record<string, unknown>)[name] = null;
    else (out as Record<string, unknown>)[name] = parsePolicyValue(name, value);
  }
  return out;
}

/**
 * Rules between policies, on the effective result (Pulsar refuses a backlog quota larger than
 * the retention size: the backlog could never reach it before retention deletes).
 * @throws EdgelogError INVALID_POLICY
 */
export function checkPolicyRules(p: Pick<TopicPolicies, "retention" | "backlogQuota">): void {
  const size = p.retention.sizeBytes;
  const limit = p.backlogQuota.limitBytes;
  if (size !== -1 && limit !== -1 && limit > size) {
    throw new EdgelogError("INVALID_POLICY", `backlogQuota.limitBytes ${limit} exceeds retention.sizeBytes ${size}: raise the retention size first (Pulsar's rule).`, {
      policy: "backlogQuota",
      field: "limitBytes",
    });
  }
}

/** The configs a topic stored that are explicit overrides of the retention policy. */
const RETENTION_CONFIGS = { timeMs: "retention.ms", sizeBytes: "retention.bytes" } as const;

/**
 * A topic's effective policies: each its topic override, else its namespace's policy, else the
 * default. Retention is per field: an explicit topic `retention.ms` / `retention.bytes`
 * (listed in `explicitConfigs`) wins over the namespace's `timeMs` / `sizeBytes`; its source is
 * `topic` when either config is explicit.
 */
export function resolvePolicies(namespace: PolicyOverrides, topic: PolicyOverrides, configs?: { values: TopicConfigs; explicit: ReadonlySet<string> }): EffectivePolicies {
  const out = {} as Record<PolicyName, { value: unknown; source: PolicySource }>;
  for (const name of POLICY_NAMES) {
    if (topic[name] !== undefined) out[name] = { value: topic[name], source: "topic" };
    else if (namespace[name] !== undefined) out[name] = { value: namespace[name], source: "namespace" };
    else out[name] = { value: DEFAULT_POLICIES[name], source: "default" };
  }
  if (configs !== undefined) {
    const base = (out.retention.value as RetentionPolicy) ?? DEFAULT_POLICIES.retention;
    const value: RetentionPolicy = { ...base };
    let explicit = false;
    for (const [field, key] of Object.entries(RETENTION_CONFIGS) as [keyof RetentionPolicy, keyof TopicConfigs][]) {
      if (configs.explicit.has(key)) {
        value[field] = configs.values[key] as number;
        explicit = true;
      }
    }
    if (explicit) out.retention = { value, source: "topic" };
  }
  return out as EffectivePolicies;
}

/**
 * Where each of a topic's effective configs comes from, as Kafka's DescribeConfigs reports a
 * config's source (KIP-226: DYNAMIC_TOPIC_CONFIG or DEFAULT_CONFIG): `topic` when the topic set
 * it, `namespace` for `retention.ms` / `retention.bytes` the topic did not set while its
 * namespace has a retention policy, else `default`.
 * @param explicit names of the configs the topic set itself.
 */
export function configSources(explicit: ReadonlySet<string>, namespace: PolicyOverrides): Record<keyof TopicConfigs, PolicySource> {
  const retentionKeys = new Set<string>(Object.values(RETENTION_CONFIGS));
  const out = {} as Record<keyof TopicConfigs, PolicySource>;
  for (const key of Object.keys(DEFAULT_TOPIC_CONFIGS) as (keyof TopicConfigs)[]) {
    out[key] = explicit.has(key) ? "topic" : retentionKeys.has(key) && namespace.retention !== undefined ? "namespace" : "default";
  }
  return out;
}

/** The values of effective policies, without their sources (what partitions receive). */
export function policyValues(p: EffectivePolicies): TopicPolicies {
  const out = {} as Record<PolicyName, unknown>;
  for (const name of POLICY_NAMES) out[name] = p[name].value;
  return out as unknown as TopicPolicies;
}

/**
 * A topic's effective configs: its stored configs with `retention.ms` / `retention.bytes` taken
 * from the effective retention policy (so the storage lifecycle reads the namespace's retention
 * through the configs it already reads).
 */
export function effectiveConfigs(stored: TopicConfigs, policies: EffectivePolicies): TopicConfigs {
  const r = policies.retention.value;
  return { ...stored, "retention.ms": r.timeMs, "retention.bytes": r.sizeBytes };
}

// ---- wire types of the tenant and namespace admin API ----

/** A tenant (Pulsar's TenantInfo, plus its namespaces). */
export interface TenantInfo {
  name: string;
  /** Pulsar's admin roles: principals holding an `all` ACL on the tenant (docs/SECURITY.md). */
  adminRoles: string[];
  /** Always `[CLUSTER_NAME]`: one deployment is one cluster. */
  allowedClusters: string[];
  /** Full names `tenant/namespace`, sorted. */
  namespaces: string[];
  /** Creation time (ms); 0 for tenants the migration adopted from existing topics. */
  createdAt: number;
}

/** A namespace: the policies set on it, and the effective ones (set or default). */
export interface NamespaceDescription {
  /** `tenant/namespace` */
  name: string;
  tenant: string;
  namespace: string;
  /** Only the policies set on the namespace. */
  policies: PolicyOverrides;
  /** Every policy with its source (`namespace` or `default`). */
  effectivePolicies: EffectivePolicies;
  /** Topics in the namespace. */
  topics: number;
  /** Creation time (ms); 0 for namespaces the migration adopted from existing topics. */
  createdAt: number;
}

/**
 * The policy values a partition holds (`configs.policies`, pushed by the metadata store), with
 * the defaults for a partition initialised before policies existed (or a policy added later).
 */
export function policiesOf(configs: Pick<TopicConfigs, "policies">): TopicPolicies {
  return { ...DEFAULT_POLICIES, ...configs.policies };
}
