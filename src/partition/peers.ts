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
import { partitionStub, type PartitionRpc } from "./rpc.ts";

export interface Peers {
  /** The cluster's metadata store. */
  readonly metadata: TopicMetadataStore;
  /** Another partition object, by topic id and partition. */
  partition(topicId: string, partition: number): PartitionRpc & StreamRpc;
  /**
   * The placement records of the metadata quorum (docs/RAFT.md "Partition placement"): null with
   * the quorum off (MetadataDO records no placement).
   */
  readonly placement: PlacementReports | null;
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
  };
}
