/**
 * The one door of a partition's rooms to other Durable Objects (design/partition-rooms.md
 * rule 6): the metadata store and other partitions (a fork's source stream), later Raft peers.
 * A room calls a peer only after its own commit (persist before send), never inside one.
 */
import type { Env } from "../env.ts";
import { metadataStore, type TopicMetadataStore } from "../metadata/store.ts";
import { metadataQuorumMembers, RaftMetadataStore } from "../metadata/raft-store.ts";
import type { RpcResult } from "../protocol/errors.ts";
import type { StreamRpc } from "../streams/rpc.ts";
import { partitionStub, replicaObjectNameAt, type AppendOk, type AppendRequest, type PartitionRpc } from "./rpc.ts";
import { callAtLeader } from "../gateway/replicas.ts";
import type { TopicConfigs } from "../protocol/types.ts";

export interface Peers {
  /** The cluster's metadata store. */
  readonly metadata: TopicMetadataStore;
  /** Another partition object, by topic id and partition. */
  partition(topicId: string, partition: number): PartitionRpc & StreamRpc;
  /**
   * An append at a partition's leader: at `replication.factor` 1 its one object; at 3 the Raft
   * leader, found as the gateway finds it (src/gateway/replicas.ts `callAtLeader`: the leader last
   * heard of, following NOT_LEADER_OR_FOLLOWER, waiting out an election up to its deadline). The
   * request must be idempotent (a producer id and sequence): a call that fails is sent again.
   * Errors: the partition's, UNAVAILABLE when no leader answers in time.
   */
  appendAtLeader(topicId: string, partition: number, configs: Partial<TopicConfigs>, req: AppendRequest): Promise<RpcResult<AppendOk>>;
  /**
   * The placement records of the metadata quorum (docs/RAFT.md "Partition placement"): null with
   * the quorum off (MetadataDO records no placement).
   */
  readonly placement: PlacementReports | null;
  /**
   * Replica `index` (0-based; 0 = the partition object itself) of another replicated partition
   * (docs/RAFT.md "Replicated partitions"): an existing replica, so no location hint is needed.
   */
  replica(topicId: string, partition: number, index: number): PartitionRpc & StreamRpc;
}

/** What a replicated partition tells the metadata quorum about itself. */
export interface PlacementReports {
  /** A leader reports itself and its term (a `partitionChange`). Errors: UNKNOWN_TOPIC_OR_PARTITION, UNAVAILABLE. */
  reportLeader(topicId: string, partition: number, leader: string, leaderEpoch: number): Promise<RpcResult<object>>;
}

/** How long a leader's report looks for the metadata leader before giving up (ms): it is retried. */
const LEADER_REPORT_DEADLINE_MS = 5_000;

/** The peers reachable through the Worker's bindings. */
export function peersOf(env: Env): Peers {
  return {
    get metadata() {
      return metadataStore(env);
    },
    partition: (topicId, partition) => partitionStub(env.PARTITION, topicId, partition) as PartitionRpc & StreamRpc,
    appendAtLeader: (topicId, partition, configs, req) => callAtLeader(env, topicId, partition, configs, (p) => p.append(req)),
    get placement(): PlacementReports | null {
      let members: ReturnType<typeof metadataQuorumMembers>;
      try {
        members = metadataQuorumMembers(env.EDGELOG_METADATA_QUORUM);
      } catch {
        return null;
      }
      if (members === null) return null;
      const store = new RaftMetadataStore(env, members, { deadlineMs: LEADER_REPORT_DEADLINE_MS });
      return { reportLeader: (topicId, partition, leader, leaderEpoch) => store.recordPlacement({ topicId, partition, leader, leaderEpoch }) };
    },
    replica: (topicId, partition, index) => env.PARTITION.getByName(replicaObjectNameAt(topicId, partition, index)) as unknown as PartitionRpc & StreamRpc,
  };
}
