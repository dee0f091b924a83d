/**
 * The one door of a partition's rooms to other Durable Objects (design/partition-rooms.md
 * rule 6): the metadata store and other partitions (a fork's source stream), later Raft peers.
 * A room calls a peer only after its own commit (persist before send), never inside one.
 */
import type { Env } from "../env.ts";
import { metadataStore, type TopicMetadataStore } from "../metadata/store.ts";
import type { StreamRpc } from "../streams/rpc.ts";
import { partitionStub, replicaObjectNameAt, type PartitionRpc } from "./rpc.ts";

export interface Peers {
  /** The cluster's metadata store. */
  readonly metadata: TopicMetadataStore;
  /** Another partition object, by topic id and partition. */
  partition(topicId: string, partition: number): PartitionRpc & StreamRpc;
  /**
   * Replica `index` (0-based; 0 = the partition object itself) of another replicated partition
   * (docs/RAFT.md "Replicated partitions"): an existing replica, so no location hint is needed.
   */
  replica(topicId: string, partition: number, index: number): PartitionRpc & StreamRpc;
}

/** The peers reachable through the Worker's bindings. */
export function peersOf(env: Env): Peers {
  return {
    get metadata() {
      return metadataStore(env);
    },
    partition: (topicId, partition) => partitionStub(env.PARTITION, topicId, partition) as PartitionRpc & StreamRpc,
    replica: (topicId, partition, index) => env.PARTITION.getByName(replicaObjectNameAt(topicId, partition, index)) as unknown as PartitionRpc & StreamRpc,
  };
}
