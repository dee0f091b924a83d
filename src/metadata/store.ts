/**
 * The narrow interface the gateway uses for cluster metadata (topics, producer ids).
 *
 * Two implementations, chosen by EDGELOG_METADATA_QUORUM ({@link metadataStore}): one
 * Durable Object (durable-objects/metadata.ts, instance "cluster"; the default), or the
 * KRaft-style metadata quorum, a Raft group of RaftMemberDO objects (src/metadata/raft-store.ts,
 * docs/RAFT.md). Routes depend on this interface only. Expected failures are typed results.
 * The quorum's answers carry `metadataOffset`: the Raft index of the metadata log they reflect
 * (absent from MetadataDO's).
 */
import type { Env } from "../env.ts";
import type { RpcResult } from "../protocol/errors.ts";
import type { NamespaceDescription, TenantInfo } from "../protocol/policies.ts";
import type { InitProducerResponse, TopicDescription, TopicSummary } from "../protocol/types.ts";
import { RaftMetadataStore, metadataQuorumMembers } from "./raft-store.ts";

/** Body of a create, already shape-checked by the route; the store validates values. */
export interface CreateTopicInput {
  name: string;
  /** @default 1 */
  partitions?: number;
  configs?: unknown;
  /** Topic-level policy overrides (src/protocol/policies.ts; every policy but retention). */
  policies?: unknown;
}

export interface AlterTopicInput {
  partitions?: number;
  /** A null value removes the topic's own value (it follows its namespace or default again). */
  configs?: unknown;
  /** Policy overrides to set; null removes one. */
  policies?: unknown;
}

export interface TopicMetadataStore {
  /** Errors: INVALID_TOPIC_NAME, INVALID_PARTITIONS, INVALID_CONFIG, INVALID_POLICY, TOPIC_ALREADY_EXISTS, NAMESPACE_NOT_FOUND. */
  createTopic(req: CreateTopicInput): Promise<RpcResult<{ topic: TopicDescription; metadataOffset?: number }>>;
  /** Sorted by full name. */
  listTopics(): Promise<RpcResult<{ topics: TopicSummary[]; metadataOffset?: number }>>;
  /** Metadata only (no partition RPCs): what the gateway caches. Errors: INVALID_TOPIC_NAME, UNKNOWN_TOPIC_OR_PARTITION. */
  getTopic(name: string): Promise<RpcResult<{ topic: TopicSummary; metadataOffset?: number }>>;
  /** Metadata plus each partition's bounds (fans out to the partitions). */
  describeTopic(name: string): Promise<RpcResult<{ topic: TopicDescription; metadataOffset?: number }>>;
  /** Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS, PARTITION_DECREASE_NOT_ALLOWED, INVALID_CONFIG, INVALID_POLICY. */
  alterTopic(name: string, req: AlterTopicInput): Promise<RpcResult<{ topic: TopicDescription; metadataOffset?: number }>>;
  /**
   * Removes the topic and its partitions' data. With `topicId`, only the topic of that id: a
   * newer topic of the same name stays (UNKNOWN_TOPIC_OR_PARTITION). Errors: UNKNOWN_TOPIC_OR_PARTITION.
   */
  deleteTopic(name: string, topicId?: string): Promise<RpcResult<{ metadataOffset?: number }>>;
  /** A new producer id, epoch 0 (Kafka InitProducerId without transactional ids). */
  initProducerId(): Promise<RpcResult<InitProducerResponse>>;
}

/**
 * Tenants and namespaces (Pulsar's model; docs/TENANTS.md), in the same store as the topics
 * (a topic create checks its namespace in the same thread, or at apply in the quorum's log). Names are validated by the route;
 * values (policies) by the store.
 */
export interface TenantStore {
  /** Errors: TENANT_ALREADY_EXISTS. `adminRoles` are stored as `all` ACLs on the tenant. */
  createTenant(name: string, adminRoles: string[]): Promise<RpcResult<{ tenant: TenantInfo }>>;
  /** Sorted names. */
  listTenants(): Promise<RpcResult<{ tenants: string[] }>>;
  /** Errors: TENANT_NOT_FOUND. */
  describeTenant(name: string): Promise<RpcResult<{ tenant: TenantInfo }>>;
  /** Errors: TENANT_NOT_FOUND, TENANT_NOT_EMPTY, INVALID_REQUEST (built in). Removes the literal ACLs on the tenant. */
  deleteTenant(name: string): Promise<RpcResult<object>>;
  /** Errors: TENANT_NOT_FOUND, NAMESPACE_ALREADY_EXISTS, INVALID_POLICY. */
  createNamespace(tenant: string, namespace: string, policies: unknown): Promise<RpcResult<{ namespace: NamespaceDescription }>>;
  /** Full names, sorted. Errors: TENANT_NOT_FOUND. */
  listNamespaces(tenant: string): Promise<RpcResult<{ namespaces: string[] }>>;
  /** Errors: NAMESPACE_NOT_FOUND. */
  describeNamespace(full: string): Promise<RpcResult<{ namespace: NamespaceDescription }>>;
  /** Errors: NAMESPACE_NOT_FOUND, NAMESPACE_NOT_EMPTY, INVALID_REQUEST (built in). Removes the literal ACLs on the namespace. */
  deleteNamespace(full: string): Promise<RpcResult<object>>;
  /** `{name: value | null}` (null removes). Errors: NAMESPACE_NOT_FOUND, INVALID_POLICY, INVALID_CONFIG. */
  setNamespacePolicies(full: string, changes: unknown): Promise<RpcResult<{ namespace: NamespaceDescription }>>;
}

/** Name of the one metadata Durable Object. */
export const METADATA_OBJECT_NAME = "cluster";

/** The bindings {@link metadataStore} chooses from. */
export type MetadataStoreEnv = Pick<Env, "METADATA" | "RAFT_MEMBER" | "PARTITION" | "EDGELOG_METADATA_QUORUM">;

/**
 * The store, typed by its interface: MetadataDO "cluster" unless EDGELOG_METADATA_QUORUM names
 * the members of the metadata quorum (src/metadata/raft-store.ts, `metadataQuorumMembers`).
 * @throws Error when EDGELOG_METADATA_QUORUM is malformed (a deployment mistake).
 */
export function metadataStore(env: MetadataStoreEnv): TopicMetadataStore {
  const members = metadataQuorumMembers(env.EDGELOG_METADATA_QUORUM);
  if (members !== null) return new RaftMetadataStore(env, members);
  // The namespace's own stub type wraps results in Rpc.Result<>; the class implements this
  // interface (checked in durable-objects/metadata.ts).
  return env.METADATA.getByName(METADATA_OBJECT_NAME) as unknown as TopicMetadataStore;
}

/**
 * The tenant store, typed by its interface: the same store as {@link metadataStore} (tenants,
 * namespaces and topics are one state, so a topic create checks its namespace in log order
 * or in MetadataDO's thread).
 * @throws Error when EDGELOG_METADATA_QUORUM is malformed.
 */
export function tenantStore(env: MetadataStoreEnv): TenantStore {
  const members = metadataQuorumMembers(env.EDGELOG_METADATA_QUORUM);
  if (members !== null) return new RaftMetadataStore(env, members);
  return env.METADATA.getByName(METADATA_OBJECT_NAME) as unknown as TenantStore;
}
