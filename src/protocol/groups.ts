/**
 * Wire types of consumer groups (docs/PROTOCOL.md, "Consumer groups").
 * Shared by the gateway, the group coordinator Durable Object and the SDK. Pure module.
 *
 * The membership protocol follows Kafka's KIP-848 ("next generation" consumer rebalance
 * protocol): a member sends heartbeats carrying its subscription and the partitions it owns;
 * the coordinator computes a target assignment with a server-side assignor and answers each
 * heartbeat with the member's current assignment and member epoch. There is no JoinGroup /
 * SyncGroup barrier, which suits stateless HTTP clients.
 *
 * Topic names in assignments and offsets are full names `tenant/namespace/topic`.
 */

/**
 * The server-side assignors (Kafka's `partition.assignment.strategy` names).
 * - `range`, `roundrobin`, `sticky`: eager rebalances (a member revokes all its partitions
 *   before it gets its new assignment), as Kafka's classic eager protocol.
 * - `cooperative-sticky`: incremental rebalances (KIP-429): only moved partitions are revoked.
 */
export type AssignorName = "range" | "roundrobin" | "sticky" | "cooperative-sticky";
export const ASSIGNOR_NAMES: readonly AssignorName[] = ["range", "roundrobin", "sticky", "cooperative-sticky"];
/** The assignor a group uses when its first member does not name one. */
export const DEFAULT_ASSIGNOR: AssignorName = "cooperative-sticky";

/** How a rebalance moves partitions: all revoked first (eager), or only the moved ones (cooperative). */
export type RebalanceProtocol = "eager" | "cooperative";

/** Group states (Kafka's ConsumerGroup states under KIP-848). */
export type GroupStateName = "Empty" | "Assigning" | "Reconciling" | "Stable" | "Dead";

/**
 * Reconciliation state of one member (Kafka's MemberState):
 * - `stable`: the member owns its whole target assignment at the target epoch;
 * - `unrevoked_partitions`: it must first revoke partitions it owns (epoch not bumped yet);
 * - `unreleased_partitions`: it is at the target epoch but waits for partitions that other
 *   members have not released yet.
 */
export type MemberReconcileState = "stable" | "unrevoked_partitions" | "unreleased_partitions";

/** Partitions of one topic. `partitions` are sorted ascending, without duplicates. */
export interface TopicPartitions {
  topic: string;
  partitions: number[];
}

/** Member epoch a member sends to join (or rejoin after being fenced). */
export const JOIN_MEMBER_EPOCH = 0;
/** Member epoch of a member that left for good (answer of a leave). */
export const LEAVE_MEMBER_EPOCH = -1;
/** Member epoch of a static member that left temporarily (it keeps its partitions until its session expires). */
export const LEAVE_STATIC_MEMBER_EPOCH = -2;

/**
 * Body of `POST /v1/groups/{group}/heartbeat` (Kafka ConsumerGroupHeartbeat).
 * Optional fields that are absent (or null) keep their previous value, except on join.
 */
export interface ConsumerGroupHeartbeatRequest {
  /** Absent on first contact: the coordinator assigns one and answers it. */
  memberId?: string | null;
  /** 0 to join (or rejoin after FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID); otherwise the epoch last answered. */
  memberEpoch: number;
  /** Static membership (Kafka group.instance.id). */
  instanceId?: string | null;
  /** Subscribed topic names (short or full); at least one of names or regex is required on join. */
  subscribedTopicNames?: string[] | null;
  /**
   * A regular expression (JavaScript syntax) that must match a whole topic name (as Java's
   * `Matcher.matches()`): the full name `tenant/namespace/topic`, or, for topics in
   * `public/default`, the short name.
   */
  subscribedTopicRegex?: string | null;
  /** Partitions the member owns now (after any revocation it has done). Absent = unchanged. */
  ownedPartitions?: TopicPartitions[] | null;
  /** How long the coordinator waits for a heartbeat before removing the member. @default 45000 */
  sessionTimeoutMs?: number | null;
  /** How long the member may take to revoke partitions before it is removed. @default 300000 */
  rebalanceTimeoutMs?: number | null;
  /** Assignor wanted (only honoured while the group has no other member). @default group's, else "cooperative-sticky" */
  assignor?: AssignorName | null;
  /** Free-form client id shown by describe. */
  clientId?: string | null;
}

/** Answer of a heartbeat. */
export interface ConsumerGroupHeartbeatResponse {
  memberId: string;
  memberEpoch: number;
  /** Send the next heartbeat within this many ms (sooner after a revocation). */
  heartbeatIntervalMs: number;
  /** Partitions the member may own now. Owned partitions not in it must be revoked. */
  assignment: TopicPartitions[];
  /** The assignor the group uses. */
  assignor: AssignorName;
  /** Member reconciliation state, for observability. */
  state: MemberReconcileState;
}

/** Body of `POST /v1/groups/{group}/leave`. */
export interface LeaveGroupRequest {
  memberId: string;
  memberEpoch: number;
  /**
   * Static members only: leave temporarily (Kafka epoch -2). The member keeps its partitions
   * reserved until its session timeout, so a quick restart gets them back without a rebalance.
   * @default false
   */
  temporary?: boolean;
}

export interface LeaveGroupResponse {
  memberId: string;
  /** -1 (left) or -2 (static member left temporarily). */
  memberEpoch: number;
}

/** One offset to commit. `offset` is the next offset to read (Kafka semantics). */
export interface OffsetCommitPartition {
  topic: string;
  partition: number;
  offset: number;
  /** Optional application metadata, at most {@link MAX_OFFSET_METADATA_BYTES}. @default "" */
  metadata?: string | null;
}

/**
 * Body of `POST /v1/groups/{group}/offsets` (Kafka OffsetCommit).
 * Members send their member id and epoch; a commit without them is accepted only while the
 * group has no members (admin tools and assign-based consumers).
 */
export interface OffsetCommitRequest {
  memberId?: string | null;
  memberEpoch?: number | null;
  offsets: OffsetCommitPartition[];
}

export interface OffsetCommitResponse {
  offsets: { topic: string; partition: number; offset: number }[];
}

/** `auto.offset.reset`: where to start when there is no committed offset or it is out of range. */
export type AutoOffsetReset = "earliest" | "latest" | "none";
export const AUTO_OFFSET_RESETS: readonly AutoOffsetReset[] = ["earliest", "latest", "none"];

/** Body of `POST /v1/groups/{group}/offsets/fetch` (Kafka OffsetFetch + the consumer's reset policy). */
export interface OffsetFetchRequest {
  /** Topics (and optionally partitions) to resolve; absent = every partition with a committed offset. */
  topics?: { topic: string; partitions?: number[] | null }[] | null;
  /** Resolve missing / out-of-range committed offsets. @default "latest" (Kafka's default) */
  autoOffsetReset?: AutoOffsetReset | null;
}

/** The resolved position of one partition. */
export interface OffsetFetchPartition {
  topic: string;
  partition: number;
  /** Where to start reading; null when `error` is set. */
  offset: number | null;
  /** The committed offset (null when none). */
  committedOffset: number | null;
  metadata: string | null;
  /** Set when the committed offset was missing or out of range and the reset policy applied. */
  reset?: "earliest" | "latest";
  logStartOffset: number;
  logEndOffset: number;
  /** Per-partition error: OFFSET_OUT_OF_RANGE under `autoOffsetReset: "none"`, UNKNOWN_TOPIC_OR_PARTITION. */
  error?: { code: string; message: string };
}

export interface OffsetFetchResponse {
  groupId: string;
  partitions: OffsetFetchPartition[];
}

/** A member as described by admin describe. */
export interface GroupMemberDescription {
  memberId: string;
  instanceId: string | null;
  clientId: string;
  memberEpoch: number;
  state: MemberReconcileState;
  /** True for a static member that left temporarily and still holds its partitions. */
  leftTemporarily: boolean;
  subscribedTopicNames: string[];
  subscribedTopicRegex: string | null;
  assignment: TopicPartitions[];
  pendingRevocation: TopicPartitions[];
  targetAssignment: TopicPartitions[];
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  lastHeartbeatMs: number;
}

/** Committed offset and lag of one partition (describe). */
export interface GroupPartitionOffset {
  topic: string;
  partition: number;
  committedOffset: number | null;
  metadata: string | null;
  /** Member that owns the partition now (null when none). */
  memberId: string | null;
  logStartOffset: number | null;
  logEndOffset: number | null;
  /** logEndOffset - committedOffset (null when either is unknown). */
  lag: number | null;
}

/** Answer of `GET /v1/groups/{group}`. */
export interface GroupDescription {
  groupId: string;
  state: GroupStateName;
  assignor: AssignorName;
  rebalanceProtocol: RebalanceProtocol;
  groupEpoch: number;
  targetAssignmentEpoch: number;
  configs: GroupConfigs;
  members: GroupMemberDescription[];
  offsets: GroupPartitionOffset[];
  /** Sum of the known lags. */
  totalLag: number;
}

/** One row of `GET /v1/groups`. */
export interface GroupListing {
  groupId: string;
  state: GroupStateName;
  assignor: AssignorName;
  members: number;
}

export interface ListGroupsResponse {
  groups: GroupListing[];
}

/** Group configs (Kafka group config names where they exist). */
export interface GroupConfigs {
  /** Heartbeat interval answered to members (capped at a third of each member's session timeout). @default 5000 */
  "heartbeat.interval.ms": number;
  /** Committed offsets of an empty group are deleted this long after it became empty. @default 7 days */
  "offsets.retention.ms": number;
}

export const DEFAULT_GROUP_CONFIGS: GroupConfigs = {
  "heartbeat.interval.ms": 5000,
  "offsets.retention.ms": 7 * 24 * 60 * 60 * 1000,
};

/** Body of `PATCH /v1/groups/{group}`. */
export interface AlterGroupRequest {
  configs: Partial<GroupConfigs>;
}

/** Where reset-offsets moves a partition. */
export type ResetOffsetsSpec =
  | { to: "earliest" }
  | { to: "latest" }
  /** First offset whose timestamp is >= `timestamp` (log end when none). */
  | { to: "timestamp"; timestamp: number }
  /** Explicit offset, clamped to [logStartOffset, logEndOffset]. */
  | { to: "offset"; offset: number };

/** Body of `POST /v1/groups/{group}/reset-offsets` (kafka-consumer-groups --reset-offsets). */
export interface ResetOffsetsRequest {
  topics: { topic: string; partitions?: number[] | null }[];
  spec: ResetOffsetsSpec;
  /** Answer the new offsets without writing them (Kafka's --dry-run). @default false */
  dryRun?: boolean;
}

export interface ResetOffsetsResponse {
  groupId: string;
  dryRun: boolean;
  offsets: { topic: string; partition: number; previousOffset: number | null; offset: number }[];
}

// ---- limits (units in the names) ----

export const MIN_SESSION_TIMEOUT_MS = 100;
export const MAX_SESSION_TIMEOUT_MS = 30 * 60 * 1000;
/** Kafka's classic session.timeout.ms default. */
export const DEFAULT_SESSION_TIMEOUT_MS = 45_000;
export const MIN_REBALANCE_TIMEOUT_MS = 100;
export const MAX_REBALANCE_TIMEOUT_MS = 30 * 60 * 1000;
/** Kafka's max.poll.interval.ms default, which KIP-848 uses as the rebalance timeout. */
export const DEFAULT_REBALANCE_TIMEOUT_MS = 300_000;
export const MIN_HEARTBEAT_INTERVAL_MS = 50;
export const MAX_HEARTBEAT_INTERVAL_MS = 60_000;
/** Kafka's offset.metadata.max.bytes default. */
export const MAX_OFFSET_METADATA_BYTES = 4096;
/** Most members one group may have (Kafka's group.consumer.max.size). */
export const MAX_GROUP_MEMBERS = 1000;
/** Most subscribed topic names per member. */
export const MAX_SUBSCRIBED_TOPICS = 1000;
/** Longest subscription regex (RE2 syntax, matched in linear time: src/groups/subscription-regex.ts). */
export const MAX_SUBSCRIPTION_REGEX_CHARS = 256;
/**
 * Largest compiled subscription regex, in RE2 program instructions (RE2's own "program size"
 * cost measure). Matching is linear in name length x program size; this keeps a match of a
 * 249-character topic name well under a millisecond. `[a-z]{1000}` is about 1000.
 */
export const MAX_SUBSCRIPTION_REGEX_PROGRAM_SIZE = 2000;
/** Longest instance id / client id. */
export const MAX_INSTANCE_ID_CHARS = 249;
export const MAX_CLIENT_ID_CHARS = 249;
/** Most offsets in one commit request. */
export const MAX_OFFSETS_PER_COMMIT = 10_000;

/** Group ids: 1-249 characters of [a-zA-Z0-9._-] (they are a URL path segment), not "." or "..". */
const GROUP_ID = /^[a-zA-Z0-9._-]{1,249}$/;
export function isValidGroupId(id: unknown): id is string {
  return typeof id === "string" && GROUP_ID.test(id) && id !== "." && id !== "..";
}

/** Turns an assignor name into its rebalance protocol. */
export function rebalanceProtocolOf(assignor: AssignorName): RebalanceProtocol {
  return assignor === "cooperative-sticky" ? "cooperative" : "eager";
}
