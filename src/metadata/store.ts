/**
 * The narrow interface the gateway uses for cluster metadata (topics, producer ids).
 *
 * Today one Durable Object implements it (durable-objects/metadata.ts, instance "cluster").
 * Routes depend on this interface only, so a later issue can move metadata onto a Raft
 * group (or shard it) without touching them. Expected failures are typed results.
 */
import type { RpcResult } from "../protocol/errors.ts";
import type { InitProducerResponse, TopicDescription, TopicSummary } from "../protocol/types.ts";

/** Body of a create, already shape-checked by the route; the store validates values. */
export interface CreateTopicInput {
  name: string;
  /** @default 1 */
  partitions?: number;
  configs?: unknown;
}

export interface AlterTopicInput {
  partitions?: number;
  configs?: unknown;
}

export interface TopicMetadataStore {
  /** Errors: INVALID_TOPIC_NAME, INVALID_PARTITIONS, INVALID_CONFIG, TOPIC_ALREADY_EXISTS. */
  createTopic(req: CreateTopicInput): Promise<RpcResult<{ topic: TopicDescription }>>;
  /** Sorted by full name. */
  listTopics(): Promise<RpcResult<{ topics: TopicSummary[] }>>;
  /** Metadata only (no partition RPCs): what the gateway caches. Errors: INVALID_TOPIC_NAME, UNKNOWN_TOPIC_OR_PARTITION. */
  getTopic(name: string): Promise<RpcResult<{ topic: TopicSummary }>>;
  /** Metadata plus each partition's bounds (fans out to the partitions). */
  describeTopic(name: string): Promise<RpcResult<{ topic: TopicDescription }>>;
  /** Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS, PARTITION_DECREASE_NOT_ALLOWED, INVALID_CONFIG. */
  alterTopic(name: string, req: AlterTopicInput): Promise<RpcResult<{ topic: TopicDescription }>>;
  /**
   * Removes the topic and its partitions' data. With `topicId`, only the topic of that id: a
   * newer topic of the same name stays (UNKNOWN_TOPIC_OR_PARTITION). Errors: UNKNOWN_TOPIC_OR_PARTITION.
   */
  deleteTopic(name: string, topicId?: string): Promise<RpcResult<object>>;
  /** A new producer id, epoch 0 (Kafka InitProducerId without transactional ids). */
  initProducerId(): Promise<RpcResult<InitProducerResponse>>;
}

/** Name of the one metadata Durable Object. */
export const METADATA_OBJECT_NAME = "cluster";

/** The store, typed by its interface. */
export function metadataStore<T extends Rpc.DurableObjectBranded | undefined>(ns: DurableObjectNamespace<T>): TopicMetadataStore {
  // The namespace's own stub type wraps results in Rpc.Result<>; the class implements this
  // interface (checked in durable-objects/metadata.ts).
  return ns.getByName(METADATA_OBJECT_NAME) as unknown as TopicMetadataStore;
}
