/**
 * Administration (Kafka's Admin client, the subset Edgelog has): topics (create, list, describe,
 * alter, delete), Pulsar's tenants and namespaces with namespace policies (docs/TENANTS.md),
 * Pulsar's subscription admin (create at a position, stats, reset cursor, skip, clear backlog,
 * delete; docs/PROTOCOL.md "Subscription admin"), and security (ACLs, Pulsar namespace
 * permissions, SCRAM users, client quotas; docs/SECURITY.md).
 */
import type { ConsumerInfo, SubscriptionInfo } from "../../src/subscriptions/rpc.ts";
import type { AclBinding, AclFilter, PulsarAction } from "../../src/protocol/acl.ts";
import type {
  EffectivePolicies,
  NamespaceDescription,
  PartitionLeaderResponse,
  ReplicaReassignmentResponse,
  PolicyName,
  TenantInfo,
  TopicConfigs,
  TopicDescription,
  TopicPolicies,
  TopicSummary,
} from "../../src/protocol/index.ts";
import { type CallOptions, type EdgelogClient, topicPath } from "./client.ts";
import type { SubscriptionType } from "./subscription.ts";

/**
 * Topic configs to set: Kafka names; values as numbers or decimal strings (as Kafka tools pass
 * them). Defaults and bounds: src/protocol/config.ts.
 */
export type TopicConfigInput = { [K in Exclude<keyof TopicConfigs, "policies">]?: TopicConfigs[K] | string };

/** Argument of {@link Admin.createTopic}. */
export interface NewTopic {
  /** `name` (in `public/default`) or `tenant/namespace/name`; 1-249 characters of `[a-zA-Z0-9._-]`. */
  name: string;
  /** Partition count in [1, 1024]. @default 1 */
  partitions?: number;
  configs?: TopicConfigInput;
  /** Topic-level policy overrides (every policy but retention: use the configs retention.ms / retention.bytes). */
  policies?: Partial<Omit<TopicPolicies, "retention">>;
}

/** Argument of {@link Admin.alterTopic}. */
export interface TopicChanges {
  /** New partition count: only increases (Kafka never moves keys by shrinking). */
  partitions?: number;
  /** Configs to change; others keep their values. `null` removes the topic's own value (it follows its namespace or default). */
  configs?: { [K in keyof TopicConfigInput]: TopicConfigInput[K] | null };
  /** Policy overrides to set; `null` removes one (the namespace's or the default applies). */
  policies?: { [K in Exclude<PolicyName, "retention">]?: TopicPolicies[K] | null };
}

/** Argument of {@link Admin.createTenant}. */
export interface NewTenant {
  /** Pulsar's admin roles: principals that get `all` on the tenant. */
  adminRoles?: string[];
  /** Only `["edgelog"]` is accepted (one deployment is one cluster). @default ["edgelog"] */
  allowedClusters?: string[];
}

/** An ACL binding to add: `patternType` defaults to literal, `permission` to allow; `User:` prefixes are accepted. */
export type NewAcl = Omit<AclBinding, "patternType" | "permission"> & Partial<Pick<AclBinding, "patternType" | "permission">>;

/** A client quota entity: a user and/or a client id, each a name or `<default>`. */
export interface QuotaEntityInput {
  user?: string;
  clientId?: string;
}

/** Quota values per second; `null` removes one. */
export interface QuotaValuesInput {
  producer_byte_rate?: number | null;
  consumer_byte_rate?: number | null;
  request_rate?: number | null;
}

export interface QuotaDescription {
  user: string | null;
  clientId: string | null;
  values: { producer_byte_rate?: number; consumer_byte_rate?: number; request_rate?: number };
}

export interface ScramUserDescription {
  name: string;
  mechanisms: { mechanism: "SCRAM-SHA-256" | "SCRAM-SHA-512"; iterations: number }[];
}

/** One connected consumer of a subscription, as stats show it (docs/PROTOCOL.md "Subscription admin"). */
export type SubscriptionConsumerStats = ConsumerInfo;

/** A subscription on one partition: its durable cursor and live consumers (docs/PROTOCOL.md "Subscription admin"). */
export type SubscriptionPartitionStats = SubscriptionInfo;

/** A subscription over every partition of its topic: the totals, then one entry per partition. */
export interface SubscriptionStats {
  /** Full topic name `tenant/namespace/name`. */
  topic: string;
  subscription: string;
  /** null only for a topic without partitions (never in practice). */
  type: SubscriptionType | null;
  backlog: number;
  backlogBytes: number;
  unacked: number;
  deadLetteredTotal: number;
  msgRateIn: number;
  msgRateOut: number;
  msgRateRedeliver: number;
  /** Connected consumers over all partitions (a consumer of a partitioned topic counts once per partition). */
  consumers: number;
  partitions: SubscriptionPartitionStats[];
}

/**
 * Where a subscription starts or its cursor is reset to: the log start (`earliest`), the log end
 * (`latest`), the first message with timestamp >= T on every partition (`{ timestamp }`, ms), or
 * one message (`{ messageId }`: its partition only; that message is delivered next).
 */
export type SubscriptionPosition = "earliest" | "latest" | { timestamp: number } | { messageId: string };

/** The request body fields of a position (docs/PROTOCOL.md "Subscription admin"). */
function positionBody(p: SubscriptionPosition): Record<string, unknown> {
  return typeof p === "string" ? { position: p } : p;
}

/** Administration over an {@link EdgelogClient}. */
export class Admin {
  readonly #client: EdgelogClient;

  constructor(client: EdgelogClient) {
    this.#client = client;
  }

  /**
   * Creates a topic; every partition starts at offset 0.
   * Errors: INVALID_TOPIC_NAME, INVALID_PARTITIONS, INVALID_CONFIG, TOPIC_ALREADY_EXISTS.
   */
  async createTopic(topic: NewTopic, options?: CallOptions): Promise<TopicDescription> {
    return this.#client.createTopic(topic, options);
  }

  /** All topics, sorted by full name `tenant/namespace/name`. */
  async listTopics(options?: CallOptions): Promise<TopicSummary[]> {
    return (await this.#client.listTopics(options)).topics;
  }

  /**
   * Configs and, per partition, log start offset, high watermark, log end offset, record count
   * and stored bytes. Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_NAME.
   */
  async describeTopic(name: string, options?: CallOptions): Promise<TopicDescription> {
    return this.#client.describeTopic(name, options);
  }

  /**
   * Increases the partition count and/or changes configs. Existing keys keep their partition
   * only while the count is unchanged (murmur2(key) % partitions).
   * Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS, PARTITION_DECREASE_NOT_ALLOWED, INVALID_CONFIG.
   */
  async alterTopic(name: string, changes: TopicChanges, options?: CallOptions): Promise<TopicDescription> {
    return this.#client.alterTopic(name, changes, options);
  }

  /** Deletes a topic and its data. Errors: UNKNOWN_TOPIC_OR_PARTITION. */
  async deleteTopic(name: string, options?: CallOptions): Promise<void> {
    await this.#client.deleteTopic(name, options);
  }

  /**
   * deleteRecords (KIP-107): for each partition given, deletes the records before its offset
   * (-1 = the high watermark) and answers the new log start offset (Kafka's low watermark) per
   * partition. Partitions are called one after the other; the first error is thrown (the
   * partitions before it are done). Errors: OFFSET_OUT_OF_RANGE (above the high watermark),
   * INVALID_OFFSET, UNKNOWN_TOPIC_OR_PARTITION.
   */
  async deleteRecords(topic: string, offsets: Readonly<Record<number, number>>, options?: CallOptions): Promise<Record<number, number>> {
    const out: Record<number, number> = {};
    for (const [partition, offset] of Object.entries(offsets)) {
      out[Number(partition)] = (await this.#client.deleteRecords(topic, Number(partition), offset, options)).logStartOffset;
    }
    return out;
  }

  /**
   * Leadership transfer of a replicated partition (Kafka's `electLeaders` with a named replica,
   * KIP-460; Raft's TimeoutNow): answers the new leader replica and leader epoch once it leads.
   * Errors: PREFERRED_LEADER_NOT_AVAILABLE (retriable), INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION.
   */
  async transferLeadership(topic: string, partition: number, replica: string, options?: CallOptions): Promise<PartitionLeaderResponse> {
    return this.#client.transferLeadership(topic, partition, replica, options);
  }

  /**
   * Replica reassignment (Kafka's `alterPartitionReassignments`, KIP-455, one replica at a
   * time; docs/RAFT.md "Replica reassignment"): replica `replace` is replaced by a new one,
   * created at `location` when given. Errors: INVALID_REQUEST, REASSIGNMENT_IN_PROGRESS,
   * REQUEST_TIMED_OUT (retriable, resumes), UNKNOWN_TOPIC_OR_PARTITION.
   */
  async reassignReplica(topic: string, partition: number, replace: string, location?: string, options?: CallOptions): Promise<ReplicaReassignmentResponse> {
    return this.#client.reassignReplica(topic, partition, replace, location, options);
  }

  // ---- tenants and namespaces (docs/TENANTS.md; Pulsar's admin model) ----

  /** Creates a tenant (cluster ALTER). Errors: TENANT_ALREADY_EXISTS, INVALID_REQUEST. */
  async createTenant(name: string, info: NewTenant = {}, options?: CallOptions): Promise<TenantInfo> {
    return this.#client.securityRequest("PUT", `/v1/tenants/${segment(name)}`, { json: info, ...options });
  }

  /** Tenant names the principal may describe, sorted. */
  async listTenants(options?: CallOptions): Promise<string[]> {
    return (await this.#client.securityRequest<{ tenants: string[] }>("GET", "/v1/tenants", options)).tenants;
  }

  /** Admin roles, allowed clusters and namespaces. Errors: TENANT_NOT_FOUND. */
  async describeTenant(name: string, options?: CallOptions): Promise<TenantInfo> {
    return this.#client.securityRequest("GET", `/v1/tenants/${segment(name)}`, options);
  }

  /** Deletes an empty tenant (and its admin-role ACLs). Errors: TENANT_NOT_FOUND, TENANT_NOT_EMPTY. */
  async deleteTenant(name: string, options?: CallOptions): Promise<void> {
    await this.#client.securityRequest("DELETE", `/v1/tenants/${segment(name)}`, options);
  }

  /** Creates `tenant/namespace`, optionally with policies. Errors: TENANT_NOT_FOUND, NAMESPACE_ALREADY_EXISTS, INVALID_POLICY. */
  async createNamespace(namespace: string, o: { policies?: Partial<TopicPolicies> } & CallOptions = {}): Promise<NamespaceDescription> {
    const { policies, ...options } = o;
    return this.#client.securityRequest("PUT", namespacePath(namespace), { json: policies === undefined ? {} : { policies }, ...options });
  }

  /** The tenant's namespaces (`tenant/namespace`), sorted. Errors: TENANT_NOT_FOUND. */
  async listNamespaces(tenant: string, options?: CallOptions): Promise<string[]> {
    return (await this.#client.securityRequest<{ namespaces: string[] }>("GET", `/v1/namespaces/${segment(tenant)}`, options)).namespaces;
  }

  /** The policies set, the effective ones with their sources, and the topic count. Errors: NAMESPACE_NOT_FOUND. */
  async describeNamespace(namespace: string, options?: CallOptions): Promise<NamespaceDescription> {
    return this.#client.securityRequest("GET", namespacePath(namespace), options);
  }

  /** Deletes an empty namespace (and the literal ACLs on it). Errors: NAMESPACE_NOT_FOUND, NAMESPACE_NOT_EMPTY. */
  async deleteNamespace(namespace: string, options?: CallOptions): Promise<void> {
    await this.#client.securityRequest("DELETE", namespacePath(namespace), options);
  }

  /** Every policy of the namespace with its source (`namespace` or `default`). */
  async getNamespacePolicies(namespace: string, options?: CallOptions): Promise<EffectivePolicies> {
    return (await this.#client.securityRequest<{ policies: EffectivePolicies }>("GET", `${namespacePath(namespace)}/policies`, options)).policies;
  }

  /** Sets one policy; topics without their own value follow. Errors: NAMESPACE_NOT_FOUND, INVALID_POLICY, INVALID_CONFIG. */
  async setNamespacePolicy<K extends PolicyName>(namespace: string, policy: K, value: TopicPolicies[K], options?: CallOptions): Promise<EffectivePolicies> {
    return (await this.#client.securityRequest<{ policies: EffectivePolicies }>("PUT", `${namespacePath(namespace)}/policies/${segment(policy)}`, { json: value, ...options })).policies;
  }

  /** Removes one policy: the default applies again. */
  async removeNamespacePolicy(namespace: string, policy: PolicyName, options?: CallOptions): Promise<EffectivePolicies> {
    return (await this.#client.securityRequest<{ policies: EffectivePolicies }>("DELETE", `${namespacePath(namespace)}/policies/${segment(policy)}`, options)).policies;
  }

  // ---- subscriptions (docs/PROTOCOL.md "Subscription admin"; pulsar-admin topics …) ----

  /** Every subscription of the topic, sorted by name. Errors: UNKNOWN_TOPIC_OR_PARTITION. */
  async listSubscriptions(topic: string, options?: CallOptions): Promise<SubscriptionStats[]> {
    return (await this.#client.securityRequest<{ subscriptions: SubscriptionStats[] }>("GET", `${topicPath(topic)}/subscriptions`, options)).subscriptions;
  }

  /**
   * Creates a durable subscription on every partition (Pulsar's create-subscription), at
   * `initialPosition` (@default "latest"); an existing one is left unchanged (its cursor and
   * type stay). Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST, INVALID_TIMESTAMP, INVALID_MESSAGE_ID.
   */
  async createSubscription(topic: string, subscription: string, o: { type?: SubscriptionType; initialPosition?: SubscriptionPosition } & CallOptions = {}): Promise<SubscriptionStats> {
    const { type, initialPosition, ...options } = o;
    const json = { ...(type === undefined ? {} : { type }), ...(initialPosition === undefined ? {} : positionBody(initialPosition)) };
    return this.#client.securityRequest("PUT", subscriptionPath(topic, subscription), { json, ...options });
  }

  /** Backlog, unacked, rates and consumers, in total and per partition. Errors: SUBSCRIPTION_NOT_FOUND. */
  async getSubscriptionStats(topic: string, subscription: string, options?: CallOptions): Promise<SubscriptionStats> {
    return this.#client.securityRequest("GET", subscriptionPath(topic, subscription), options);
  }

  /**
   * Resets the cursor (Pulsar's reset-cursor): everything before the target counts as acked,
   * everything after as unacked, redelivery counts are cleared; connected consumers are closed
   * with 4002 and resume there. Errors: SUBSCRIPTION_NOT_FOUND, INVALID_TIMESTAMP, INVALID_MESSAGE_ID.
   */
  async resetCursor(topic: string, subscription: string, target: SubscriptionPosition, options?: CallOptions): Promise<SubscriptionStats> {
    return this.#client.securityRequest("POST", `${subscriptionPath(topic, subscription)}/seek`, { json: positionBody(target), ...options });
  }

  /**
   * Acks the next `count` unacked messages of one partition (@default partition 0, as Pulsar's
   * skip on a partition). Errors: SUBSCRIPTION_NOT_FOUND, INVALID_REQUEST.
   */
  async skipMessages(topic: string, subscription: string, count: number, o: { partition?: number } & CallOptions = {}): Promise<SubscriptionStats & { skipped: number }> {
    const { partition, ...options } = o;
    return this.#client.securityRequest("POST", `${subscriptionPath(topic, subscription)}/skip`, { json: { count, ...(partition === undefined ? {} : { partition }) }, ...options });
  }

  /** Acks everything up to the log end on every partition. Errors: SUBSCRIPTION_NOT_FOUND. */
  async clearBacklog(topic: string, subscription: string, options?: CallOptions): Promise<SubscriptionStats & { cleared: number }> {
    return this.#client.securityRequest("POST", `${subscriptionPath(topic, subscription)}/clear-backlog`, { json: {}, ...options });
  }

  /**
   * Deletes the subscription (its cursor). Refused with SUBSCRIPTION_HAS_CONSUMERS while
   * consumers are connected, unless `force` (they are then closed with 4001).
   * Errors: SUBSCRIPTION_NOT_FOUND, SUBSCRIPTION_HAS_CONSUMERS.
   */
  async deleteSubscription(topic: string, subscription: string, o: { force?: boolean } & CallOptions = {}): Promise<void> {
    const { force, ...options } = o;
    await this.#client.securityRequest("DELETE", subscriptionPath(topic, subscription), { query: { force: force === true ? "true" : undefined }, ...options });
  }

  // ---- security (docs/SECURITY.md; each needs the cluster permission named) ----

  /** Adds ACL bindings (cluster ALTER). Returns how many were new and the bindings as stored (names normalised). Errors: INVALID_REQUEST, NOT_AUTHORIZED. */
  async createAcls(acls: NewAcl[], options?: CallOptions): Promise<{ created: number; acls: AclBinding[] }> {
    return this.#client.securityRequest("POST", "/v1/acls", { json: { acls }, ...options });
  }

  /** Bindings matching every given field (cluster DESCRIBE). */
  async listAcls(filter: AclFilter = {}, options?: CallOptions): Promise<AclBinding[]> {
    return (await this.#client.securityRequest<{ acls: AclBinding[] }>("GET", "/v1/acls", { query: filterQuery(filter), ...options })).acls;
  }

  /** Removes the bindings matching the filter (at least one field; cluster ALTER); returns them. */
  async deleteAcls(filter: AclFilter, options?: CallOptions): Promise<AclBinding[]> {
    return (await this.#client.securityRequest<{ deleted: AclBinding[] }>("DELETE", "/v1/acls", { query: filterQuery(filter), ...options })).deleted;
  }

  /** Pulsar's `namespaces grant-permission`: stored as ACLs on the namespace (namespace ALTER). */
  async grantPermission(namespace: string, role: string, actions: PulsarAction[], options?: CallOptions): Promise<void> {
    await this.#client.securityRequest("POST", `${namespacePath(namespace)}/permissions/${encodeURIComponent(role)}`, { json: { actions }, ...options });
  }

  /** Pulsar's `namespaces revoke-permission`: removes the role's produce/consume/functions grants. */
  async revokePermission(namespace: string, role: string, options?: CallOptions): Promise<void> {
    await this.#client.securityRequest("DELETE", `${namespacePath(namespace)}/permissions/${encodeURIComponent(role)}`, options);
  }

  /** Pulsar's `namespaces permissions`: role -> actions. */
  async listPermissions(namespace: string, options?: CallOptions): Promise<Record<string, PulsarAction[]>> {
    return (await this.#client.securityRequest<{ permissions: Record<string, PulsarAction[]> }>("GET", `${namespacePath(namespace)}/permissions`, options)).permissions;
  }

  /** Pulsar's tenant admin roles (stored as ALL on the tenant; managing them needs cluster ALTER). */
  async setTenantAdmin(tenant: string, role: string, admin: boolean, options?: CallOptions): Promise<void> {
    await this.#client.securityRequest(admin ? "PUT" : "DELETE", `/v1/tenants/${encodeURIComponent(tenant)}/admins/${encodeURIComponent(role)}`, options);
  }

  async listTenantAdmins(tenant: string, options?: CallOptions): Promise<string[]> {
    return (await this.#client.securityRequest<{ adminRoles: string[] }>("GET", `/v1/tenants/${encodeURIComponent(tenant)}/admins`, options)).adminRoles;
  }

  /** Creates a SCRAM user or sets its password for one mechanism (cluster ALTER). @default SCRAM-SHA-256, 4096 iterations */
  async upsertUser(name: string, password: string, o: { mechanism?: "SCRAM-SHA-256" | "SCRAM-SHA-512"; iterations?: number } & CallOptions = {}): Promise<ScramUserDescription> {
    const { signal, ...rest } = o;
    return (
      await this.#client.securityRequest<{ user: ScramUserDescription }>("PUT", `/v1/users/${encodeURIComponent(name)}`, { json: { password, ...rest }, ...(signal ? { signal } : {}) })
    ).user;
  }

  /** Deletes a user (or one mechanism's credential). Errors: USER_NOT_FOUND. Its tokens stop working. */
  async deleteUser(name: string, o: { mechanism?: "SCRAM-SHA-256" | "SCRAM-SHA-512" } & CallOptions = {}): Promise<void> {
    await this.#client.securityRequest("DELETE", `/v1/users/${encodeURIComponent(name)}`, { query: { mechanism: o.mechanism }, ...(o.signal ? { signal: o.signal } : {}) });
  }

  /** SCRAM users: names, mechanisms and iterations (never keys). */
  async listUsers(options?: CallOptions): Promise<ScramUserDescription[]> {
    return (await this.#client.securityRequest<{ users: ScramUserDescription[] }>("GET", "/v1/users", options)).users;
  }

  /** Sets or removes (null) quota values of one entity (cluster ALTER_CONFIGS). */
  async alterQuotas(entity: QuotaEntityInput, values: QuotaValuesInput, options?: CallOptions): Promise<QuotaDescription | null> {
    return (await this.#client.securityRequest<{ quota: QuotaDescription | null }>("PUT", "/v1/quotas", { json: { ...entity, ...values }, ...options })).quota;
  }

  /** Every quota entity with its values (cluster DESCRIBE_CONFIGS). */
  async describeQuotas(options?: CallOptions): Promise<QuotaDescription[]> {
    return (await this.#client.securityRequest<{ quotas: QuotaDescription[] }>("GET", "/v1/quotas", options)).quotas;
  }
}

function filterQuery(f: AclFilter): Record<string, string | undefined> {
  return { principal: f.principal, resourceType: f.resourceType, resourceName: f.resourceName, patternType: f.patternType, operation: f.operation, permission: f.permission };
}

/** One path segment; "." and ".." would be resolved away by URL parsing, so they are refused here. */
function segment(name: string): string {
  if (name === "" || name === "." || name === "..") throw new TypeError(`invalid name ${JSON.stringify(name)}`);
  return encodeURIComponent(name);
}

/** `/v1/topics/{topic}/subscriptions/{subscription}`. */
function subscriptionPath(topic: string, subscription: string): string {
  return `${topicPath(topic)}/subscriptions/${segment(subscription)}`;
}

/** `/v1/namespaces/{tenant}/{namespace}` of `tenant/namespace`. */
function namespacePath(namespace: string): string {
  const parts = namespace.split("/");
  if (parts.length !== 2 || parts.some((p) => p === "" || p === "." || p === "..")) throw new TypeError(`namespace must be tenant/namespace, got ${JSON.stringify(namespace)}`);
  return `/v1/namespaces/${parts.map(encodeURIComponent).join("/")}`;
}
