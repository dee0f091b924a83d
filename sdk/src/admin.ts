/**
 * Topic administration (Kafka's Admin client, the subset Edgelog has): create, list, describe,
 * alter (increase partitions, change configs) and delete topics.
 */
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

/** Topic administration over an {@link EdgelogClient}. */
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
}
