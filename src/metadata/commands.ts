/**
 * The metadata quorum's records (docs/RAFT.md, "The metadata quorum"): the commands the
 * gateway proposes to the `metadata` Raft group and the reads it asks, as KRaft's metadata log
 * records (TopicRecord, PartitionChangeRecord, RemoveTopicRecord, ProducerIdsRecord; KIP-500,
 * KIP-730). Pure: shared by the store client (src/metadata/raft-store.ts) and the state
 * machine (durable-objects/raft/metadata-machine.ts).
 *
 * Everything a command needs is in it (the topic id, the creation time, the validated
 * configs), so applying it is deterministic on every member. The conditions that depend on
 * the state (exists, id matches, partitions only grow) are checked at apply, in log order, and
 * answered as {@link MetadataAnswer} errors; value checks (names, configs, counts) are done by
 * the proposer before it proposes.
 */
import type { ErrorCode } from "../protocol/errors.ts";
import type { TopicConfigs, TopicSummary } from "../protocol/types.ts";

export type MetadataCommand =
  /** A new topic. Applied again with the same topicId (a retry), it answers the topic as it is. */
  | { type: "createTopic"; topic: TopicSummary }
  /** New partition count and configs of the topic of this id (absolute values: a retry is harmless). */
  | { type: "alterTopic"; name: string; topicId: string; partitions: number; configs: TopicConfigs }
  /** Removes the topic (of this id, when given). */
  | { type: "deleteTopic"; name: string; topicId: string | null }
  /** Hands out the next block of `count` producer ids (KIP-730's ProducerIdsRecord). */
  | { type: "allocateProducerIds"; count: number }
  /**
   * The partitions of topic `topicId` were brought to the state of record `throughIndex`
   * (the {@link LifecycleTask} of that record or an earlier one): removes the topic's task if
   * no later record replaced it.
   */
  | { type: "lifecycleDone"; topicId: string; throughIndex: number };

export type MetadataQuery = { type: "getTopic"; name: string } | { type: "listTopics" } | { type: "pendingLifecycle" };

/**
 * The partition work a committed record leaves to do (docs/RAFT.md, "Partition lifecycle"):
 * the durable "pending" marker of the metadata log, one per topic id, replaced by each later
 * record of the topic and removed by {@link MetadataCommand} `lifecycleDone`. Every step is
 * idempotent (a partition's `init` of the same topic id is a no-op, `updateConfigs` sets
 * absolute values, `destroy` of a destroyed partition is a no-op), so whoever runs the task
 * (the proposer right after the commit, a reader that meets it, the leader's sweep) may run
 * it again after a crash half-way.
 */
export type LifecycleTask =
  | {
      /** Initialise partitions [initFrom, partitions) and, when pushConfigs, set `configs` on [0, initFrom). */
      action: "sync";
      topicId: string;
      name: string;
      initFrom: number;
      pushConfigs: boolean;
      partitions: number;
      configs: TopicConfigs;
      /** Index of the last record that set this task (the metadata offset). */
      recordIndex: number;
    }
  | {
      /** Destroy partitions [0, partitions) of the removed topic. */
      action: "destroy";
      topicId: string;
      name: string;
      partitions: number;
      recordIndex: number;
    };

/**
 * A command's answer: the topic (create, alter), the removed topic (delete), the block
 * (allocate), the task the record left (create, alter, delete; getTopic too while one is
 * pending), `topicExists` (lifecycleDone), or a typed error.
 */
export type MetadataAnswer =
  | { ok: true; topic?: TopicSummary; firstProducerId?: number; count?: number; task?: LifecycleTask; topicExists?: boolean }
  | { ok: false; code: ErrorCode; message: string; details?: { [key: string]: string | number } };

const enc = new TextEncoder();

export function encodeMetadataCommand(c: MetadataCommand): Uint8Array {
  return enc.encode(JSON.stringify(c));
}

/** Producer ids handed out per block (KIP-730 uses 1000 per broker). */
export const PRODUCER_ID_BLOCK = 1000;
