/**
 * Administration (Kafka's Admin client, the subset Edgelog has): topics (create, list, describe,
 * alter, delete) and security (ACLs, Pulsar namespace permissions, SCRAM users, client quotas;
 * docs/SECURITY.md).
 */
import type { AclBinding, AclFilter, PulsarAction } from "../../src/protocol/acl.ts";
import type { TopicConfigs, TopicDescription, TopicSummary } from "../../src/protocol/index.ts";
import type { CallOptions, EdgelogClient } from "./client.ts";

/**
 * Topic configs to set: Kafka names; values as numbers or decimal strings (as Kafka tools pass
 * them). Defaults and bounds: src/protocol/config.ts.
 */
export type TopicConfigInput = { [K in keyof TopicConfigs]?: TopicConfigs[K] | string };

/** Argument of {@link Admin.createTopic}. */
export interface NewTopic {
  /** `name` (in `public/default`) or `tenant/namespace/name`; 1-249 characters of `[a-zA-Z0-9._-]`. */
  name: string;
  /** Partition count in [1, 1024]. @default 1 */
  partitions?: number;
  configs?: TopicConfigInput;
}

/** Argument of {@link Admin.alterTopic}. */
export interface TopicChanges {
  /** New partition count: only increases (Kafka never moves keys by shrinking). */
  partitions?: number;
  /** Configs to change; others keep their values. */
  configs?: TopicConfigInput;
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

/** `/v1/namespaces/{tenant}/{namespace}` of `tenant/namespace`. */
function namespacePath(namespace: string): string {
  const parts = namespace.split("/");
  if (parts.length !== 2 || parts.some((p) => p === "" || p === "." || p === "..")) throw new TypeError(`namespace must be tenant/namespace, got ${JSON.stringify(namespace)}`);
  return `/v1/namespaces/${parts.map(encodeURIComponent).join("/")}`;
}
