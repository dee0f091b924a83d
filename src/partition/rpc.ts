/**
 * RPC interface of a partition Durable Object (durable-objects/partition.ts), as the gateway
 * and the metadata store call it. Expected outcomes are typed results (`{ok: true, ...}` or an
 * ErrorResult, see {@link RpcResult}); a thrown error is a bug or a platform failure.
 *
 * Addressing: one object per topic-partition, named `${topicId}/${partition}` (the topic id,
 * not the name, so deleting and re-creating a topic gives fresh objects starting at offset 0).
 */
import type { CatchUpChunk, CatchUpManifest, CatchUpRead } from "./catch-up.ts";
import type { RpcResult } from "../protocol/errors.ts";
import { replicaLocation, type LocationHint } from "../protocol/config.ts";
import type { PartitionDescription, TopicConfigs } from "../protocol/types.ts";
import type { ListOffsetsSpec } from "./core.ts";
import type { SubscriptionMetrics } from "../subscriptions/rpc.ts";
import type { RaftFaults } from "../raft/group.ts";
import type { Message } from "../raft/types.ts";

/** The name a partition's Durable Object is addressed by. */
export function partitionObjectName(topicId: string, partition: number): string {
  return `${topicId}/${partition}`;
}

export interface PartitionInit {
  /** Full topic name `tenant/namespace/topic`, for logs and answers. */
  topic: string;
  topicId: string;
  partition: number;
  configs: TopicConfigs;
  /**
   * Which replica of a replicated partition this object is (`r1`-`r3`, docs/RAFT.md); absent:
   * r1, the object named by {@link partitionObjectName}, which initialises the others.
   */
  replica?: string;
  /**
   * A replica joining an existing group (replica reassignment): it bootstraps with this
   * configuration (itself among the learners) and an empty log, and is caught up by the leader.
   */
  join?: { voters: string[]; learners: string[]; location?: LocationHint };
  /**
   * The caller initialises every replica itself (the metadata quorum's lifecycle task, from the
   * partition's placement: docs/RAFT.md "Partition placement"): r1 does not pass the init on to
   * r2 and r3. @default false
   */
  placed?: boolean;
}

/**
 * What a `destroy` removes: `"group"` (the default) is a topic deletion through r1, which
 * destroys the other members of its configuration first; `"replica"` is this object's data only
 * (a replica removed by a reassignment, or each replica of a placement destroyed one by one).
 */
export type DestroyScope = "group" | "replica";

export interface AppendRequest {
  /**
   * Encoded record batches (src/codec/batch.ts, baseOffset 0), appended in one transaction
   * as one produce request: if several, they must carry the same producer id/epoch and
   * contiguous sequences. The partition rewrites each header (offsets, leader epoch,
   * LogAppendTime) in place and stores the bytes; a batch over MAX_STORED_BATCH_BYTES is
   * split first.
   */
  batches: Uint8Array[];
  /**
   * The caller already checked every batch's CRC-32C (the gateway does for a client's binary
   * batch; a batch the caller encoded itself is correct by construction), so the partition
   * skips recomputing it. It still checks the framing and every record. The bytes cross a
   * Durable Object RPC, which does not alter them. @default false
   */
  crcVerified?: boolean;
  /**
   * Kafka's acks of the request. A replicated partition refuses an acks=all request with
   * NOT_ENOUGH_REPLICAS below the topic's min.insync.replicas (acks=1 is not checked).
   * @default "all"
   */
  acks?: "all" | "1";
}

export interface AppendOk {
  /** Offset of the first record of the request. Records got baseOffset..lastOffset in order. */
  baseOffset: number;
  lastOffset: number;
  /** Per record, in request order: the stored timestamp (CreateTime or LogAppendTime). */
  timestamps: number[];
  /** The broker time stamped on every record when the topic uses LogAppendTime (ms); null under CreateTime. */
  logAppendTime: number | null;
  /** True when this was a retry of a remembered idempotent request: nothing was appended and the offsets are the original ones. */
  duplicate: boolean;
  logStartOffset: number;
  highWatermark: number;
}

export interface FetchRequest {
  /** First offset wanted; must be in [logStartOffset, logEndOffset]. */
  offset: number;
  /** Stop adding stored batches once this many records at or after `offset` are covered. */
  maxRecords: number;
  /** Stored batch bytes; the first batch is returned even if larger (KIP-74). */
  maxBytes: number;
  /** Long-poll up to this long (ms, capped at FETCH_MAX_WAIT_MS_LIMIT) while fewer than minBytes are available. */
  maxWaitMs: number;
  minBytes: number;
}

export interface FetchOk {
  /** Whole stored batches in offset order; the first may start below `offset`. */
  batches: Uint8Array[];
  /**
   * Where the next fetch starts: the last batch's last offset + 1 when the answer stopped at a
   * limit; the high watermark when nothing else is stored below it (a compacted or truncated gap:
   * src/lifecycle/reads.ts); the requested offset at or past the high watermark.
   */
  nextOffset: number;
  logStartOffset: number;
  highWatermark: number;
  logEndOffset: number;
}

export interface ListOffsetsOk {
  offset: number | null;
  /** Timestamp of the record at `offset` for the timestamp specs; null otherwise or when none. */
  timestamp: number | null;
}

/**
 * What a partition counts and measures, as `metrics()` answers it (docs/OBSERVABILITY.md).
 * Bounds and sizes are exact at the time of the call. Counters are exact since the object
 * started (`countersSinceMs`): they live in memory and restart at 0 when the object is evicted
 * or restarted, as a Prometheus counter may (rate() and increase() treat a drop as a reset).
 */
export interface PartitionMetrics {
  /** Full topic name `tenant/namespace/topic`. */
  topic: string;
  partition: number;
  logStartOffset: number;
  highWatermark: number;
  logEndOffset: number;
  /** Bytes of the stored record batches (as stored, headers rewritten). */
  storedBytes: number;
  /** Records appended (native produce and Durable Streams appends; idempotent duplicates not counted). */
  recordsIn: number;
  /** Stored bytes appended by those records. */
  bytesIn: number;
  /** Offsets delivered by fetches: per fetch, from the requested offset to the answer's next offset, at most its maxRecords. */
  recordsOut: number;
  /** Bytes of the stored batches fetches returned (a batch returned twice counts twice). */
  bytesOut: number;
  /** Native produce requests (each request of a coalesced group counts once), any outcome. */
  produceRequests: number;
  /** Idempotent retries answered from the producer state without appending (KIP-98 duplicates). */
  produceDuplicates: number;
  /** Produce requests answered with an error, by error code (src/protocol/errors.ts). */
  produceErrors: Record<string, number>;
  /** Fetch requests (fetchRecords calls), any outcome. */
  fetchRequests: number;
  fetchErrors: Record<string, number>;
  /** Long-poll fetches and stream reads waiting for an append now. */
  waiters: number;
  /** When the counters started (ms since the epoch): the object's start. */
  countersSinceMs: number;
  /** Rows of the segment index (`seg_segments`, docs/LIFECYCLE.md), local and tiered. */
  segments: number;
  /** Every subscription of the partition, in name order. */
  subscriptions: SubscriptionMetrics[];
}

/** A replica's Raft view (`replicaStatus`). */
export interface ReplicaStatus {
  replica: string;
  role: string;
  /** The Raft term: the leader epoch stamped on the batches appended in it. */
  leaderEpoch: number;
  leaderReplica: string | null;
  commitIndex: number;
  appliedIndex: number;
  lastIndex: number;
  /** This replica's high watermark: the end of what it has applied (committed). */
  highWatermark: number;
  /** This replica's log start and log end offset (its log holds only committed records: log end = high watermark). */
  logStartOffset: number;
  logEndOffset: number;
  /** At the leader: itself and the voters heard from within an election timeout. */
  inSyncReplicas: number | null;
  /** The Raft index of the journal's latest snapshot (entries up to it are compacted away). */
  snapshotIndex: number;
  /** The group's voters and learners as this replica knows them (its Raft configuration). */
  voters: string[];
  learners: string[];
  /** Snapshot catch-ups this replica installed since its object started (docs/RAFT.md "Snapshot catch-up"). */
  catchUpInstalls: number;
  /** True while this replica pulls a snapshot catch-up from a peer. */
  catchUpRunning: boolean;
  /** Quiesced (docs/RAFT.md "Quiescence"): an idle partition's replica ticks at the quiesced period. */
  quiesced?: boolean;
  /** Milliseconds until this replica's next Raft tick (negative: due), or null when none is set. */
  nextTickInMs?: number | null;
  /** Raft ticks this replica's node has taken since it (re)started. */
  ticks?: number;
}

/**
 * Test-only knobs of a replica (dev and test builds with EDGELOG_RAFT_FAULTS=1, as fault
 * injection): a small journal retention makes snapshot catch-up happen after a few entries.
 */
export interface ReplicaTestKnobs {
  /** Entries a follower keeps behind its applied index (default REPLICA_KEEP_ENTRIES). */
  keepEntries?: number;
  /** Most entries a leader keeps behind its applied index (default REPLICA_LEADER_KEEP_ENTRIES). */
  leaderKeepEntries?: number;
  /** Bytes per catch-up chunk this replica asks for. */
  chunkBytes?: number;
  /** A pull waits after staging this many chunks until the knob is cleared. */
  holdAfterChunks?: number;
  /** How long a reassignment at this leader waits for its new replica to catch up (ms; default 30 s). */
  reassignWaitMs?: number;
  /** The tick period of this replica while quiesced (ms; default REPLICA_QUIESCED_TICK_MS, 5 s). */
  quiescedTickMs?: number;
}

/** The RPC methods of PartitionDO (named so none collides with the DO's HTTP `fetch`). */
export interface PartitionRpc {
  init(req: PartitionInit): Promise<RpcResult<object>>;
  /**
   * Sets the partition's configs (absolute values). Replicated (factor 3): a Raft command
   * proposed by the leader, answered after the commit; a follower forwards it to the leader
   * (`forwarded` true: the call is such a forward, answered NOT_LEADER_OR_FOLLOWER rather than
   * forwarded again). docs/RAFT.md "Replicated partitions".
   * `configsOffset`: the metadata offset (quorum record index) of the topic state the configs
   * reflect; a partition holding configs of a higher offset ignores the push and answers ok with
   * `stale: true` (src/partition/configs-order.ts). Absent (MetadataDO): always applied.
   */
  updateConfigs(configs: TopicConfigs, forwarded?: boolean, configsOffset?: number): Promise<RpcResult<{ stale?: boolean }>>;
  /**
   * Deletes the partition's storage; later calls answer UNKNOWN_TOPIC_OR_PARTITION. Replicated:
   * r1 destroys r2 and r3 first; a replica that does not answer is left to its own owner check
   * and answered in `unreachable` (docs/RAFT.md "Topic deletion with a replica down").
   */
  destroy(scope?: DestroyScope): Promise<RpcResult<{ unreachable?: string[] }>>;
  append(req: AppendRequest): Promise<RpcResult<AppendOk>>;
  /**
   * Several produce requests (coalesced by a gateway, src/gateway/append-coalescer.ts), each
   * appended as {@link append} would, in order, each in its own transaction (one failing
   * changes nothing of the others); all in one event, so they share one durable commit.
   * Answers one outcome per request, in order. At most MAX_APPEND_GROUP_REQUESTS requests.
   */
  appendMany(reqs: AppendRequest[]): Promise<RpcResult<AppendOk>[]>;
  fetchRecords(req: FetchRequest): Promise<RpcResult<FetchOk>>;
  listOffsets(spec: ListOffsetsSpec): Promise<RpcResult<ListOffsetsOk>>;
  describe(): Promise<RpcResult<{ partition: PartitionDescription }>>;
  /** This partition's metrics (see {@link PartitionMetrics}). Errors: UNKNOWN_TOPIC_OR_PARTITION. */
  metrics(): Promise<RpcResult<{ metrics: PartitionMetrics }>>;
  /** Raft messages from a peer replica of a replicated partition (docs/RAFT.md); one-way. */
  replicaDeliver(messages: Message[]): Promise<void>;
  /** This replica's Raft view; `replica` null at replication.factor 1. */
  replicaStatus(): Promise<RpcResult<{ replica: ReplicaStatus | null }>>;
  /** Fault injection of a replica (dev and test builds with EDGELOG_RAFT_FAULTS=1 only; else INVALID_REQUEST). */
  setFaults(faults: RaftFaults): Promise<RpcResult<{ faults: RaftFaults }>>;
  /**
   * A peer replica's snapshot catch-up reads this replica's state (docs/RAFT.md "Snapshot
   * catch-up"): `begin` the manifest at its applied index (NOT_LEADER_OR_FOLLOWER while it has
   * not applied `minIndex`; REQUEST_TOO_LARGE when the producer state exceeds one answer),
   * `batches` stored rows of a range (OFFSET_OUT_OF_RANGE below its log start). Writes nothing.
   */
  replicaSnapshotRead(req: CatchUpRead): Promise<RpcResult<{ manifest: CatchUpManifest } | { chunk: CatchUpChunk }>>;
  /** Test-only knobs of a replica (same gates as {@link setFaults}; else INVALID_REQUEST). */
  setReplicaTestKnobs(knobs: ReplicaTestKnobs): Promise<RpcResult<{ knobs: ReplicaTestKnobs }>>;
  /**
   * deleteRecords (KIP-107): the log start offset moves to `offset` (-1 = the high watermark) and
   * the rows below it are deleted on the lifecycle's timer. Answers the new log start offset (Kafka's
   * low watermark). Errors: OFFSET_OUT_OF_RANGE (above the high watermark, or negative other than
   * -1; details {offset, logStartOffset, logEndOffset, highWatermark}), INVALID_OFFSET (not an
   * integer), UNKNOWN_TOPIC_OR_PARTITION. At or below the log start: a no-op (field case B1).
   */
  deleteRecords(offset: number): Promise<RpcResult<{ logStartOffset: number }>>;
  /**
   * Leadership transfer (Kafka's preferred leader election, KIP-460; Raft's TimeoutNow): at the
   * leader, hands leadership to replica `replica` ("r1".."r3") and answers once it leads (the new
   * leader epoch) or, within 5 s, PREFERRED_LEADER_NOT_AVAILABLE (retriable). `transferred`
   * false: it already led. Errors: NOT_LEADER_OR_FOLLOWER (this replica is not the leader),
   * INVALID_REQUEST (not a replica of this partition), UNKNOWN_TOPIC_OR_PARTITION.
   */
  transferLeadership(replica: string): Promise<RpcResult<LeaderTransferOk>>;
  /**
   * Replica reassignment at the leader (docs/RAFT.md "Replica reassignment"): adds a new replica
   * object as a learner, waits for it to catch up, promotes it, removes `replace` (after handing
   * leadership away when `replace` leads: then NOT_LEADER_OR_FOLLOWER, resent by the gateway to
   * the new leader) and destroys the removed object's data. Resumable: a retry continues from
   * the configuration it finds. Errors: NOT_LEADER_OR_FOLLOWER, INVALID_REQUEST (not a voter,
   * r1 with the metadata quorum off, bad location), REASSIGNMENT_IN_PROGRESS (another reassignment's learner is there),
   * REQUEST_TIMED_OUT (the new replica did not catch up within 30 s: retry to resume).
   */
  reassignReplica(req: ReassignRequest): Promise<RpcResult<ReassignOk>>;
}

/** The answer of a leadership transfer: the leader and its epoch (the Raft term) afterwards. */
export interface LeaderTransferOk {
  leaderReplica: string;
  leaderEpoch: number;
  /** False when the replica asked for already led (nothing done: Kafka's ELECTION_NOT_NEEDED). */
  transferred: boolean;
}

/**
 * The 0-based index of replica id `rN` (N >= 1): its object name and `replica.locations` slot.
 * Replica ids are never reused within a group's life except after the object was destroyed
 * (docs/RAFT.md "Replica reassignment"). @returns null for anything else.
 */
export function replicaIndexOf(id: unknown): number | null {
  if (typeof id !== "string" || !/^r[1-9][0-9]{0,3}$/.test(id)) return null;
  return Number(id.slice(1)) - 1;
}

/** The first replica id after every id in `ids` ("r4" after r1..r3): a reassignment's new replica. */
export function nextReplicaId(ids: readonly string[]): string {
  let max = 0;
  for (const id of ids) max = Math.max(max, (replicaIndexOf(id) ?? -1) + 1);
  return `r${max + 1}`;
}

/**
 * Replica reassignment of a replicated partition (Kafka's AlterPartitionReassignments, KIP-455,
 * done as single-server Raft membership changes; docs/RAFT.md "Replica reassignment").
 */
export interface ReassignRequest {
  /** The voter to replace ("r2"). */
  replace: string;
  /** Location hint of the new replica's object (one of LOCATION_HINTS); absent: near its creator. */
  location?: string;
}

export interface ReassignOk {
  /** The replica that took `replace`'s place (a new id, e.g. "r4"). */
  added: string;
  removed: string;
  /** The voters afterwards, sorted. */
  replicas: string[];
  leaderReplica: string;
  leaderEpoch: number;
}

/**
 * The object name of replica `index` (0-based) of a partition: r1 is the partition object
 * itself, r2 and r3 are `${topicId}/${partition}/r2` and `/r3` (docs/RAFT.md).
 */
export function replicaObjectNameAt(topicId: string, partition: number, index: number): string {
  const base = partitionObjectName(topicId, partition);
  return index === 0 ? base : `${base}/r${index + 1}`;
}

/**
 * The stub of replica `index` (0-based) of a partition, with its `replica.locations` hint
 * (`idFromName` + `get(id, { locationHint })`): every caller that may be the first to reach a
 * replica passes the same hint, which the platform honours only when it creates the object
 * (docs/RAFT.md "Location hints"). Without a hint, `getByName` as before.
 */
export function replicaStubAt(
  ns: Pick<DurableObjectNamespace, "getByName" | "idFromName" | "get">,
  topicId: string,
  partition: number,
  index: number,
  configs: Partial<TopicConfigs>,
  hint?: LocationHint,
): PartitionRpc {
  const name = replicaObjectNameAt(topicId, partition, index);
  const locationHint = hint ?? replicaLocation(configs, index);
  if (locationHint === undefined) return ns.getByName(name) as unknown as PartitionRpc;
  return ns.get(ns.idFromName(name), { locationHint }) as unknown as PartitionRpc;
}

/** The stub of a partition, typed by {@link PartitionRpc}. */
export function partitionStub<T extends Rpc.DurableObjectBranded | undefined>(ns: DurableObjectNamespace<T>, topicId: string, partition: number): PartitionRpc {
  // The namespace's own stub type wraps results in Rpc.Result<>; the plain interface is what
  // callers need and what the class implements (checked in durable-objects/partition.ts).
  return ns.getByName(partitionObjectName(topicId, partition)) as unknown as PartitionRpc;
}
