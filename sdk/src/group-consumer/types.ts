/** Public types and defaults of the group consumer (re-exported by ../group-consumer.ts). */
import {
  type AssignorName,
  type AutoOffsetReset,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
} from "../../../src/protocol/index.ts";
import type { CallOptions } from "../client.ts";
import type { ConsumerRecord, TopicPartition, TopicPartitionOffset } from "../consumer.ts";

/** The consumer-group routes the group consumer needs (implemented by EdgelogClient). */
export interface GroupsApi {
  heartbeat(groupId: string, request: ConsumerGroupHeartbeatRequest, options?: CallOptions): Promise<ConsumerGroupHeartbeatResponse>;
  leaveGroup(groupId: string, request: LeaveGroupRequest, options?: CallOptions): Promise<LeaveGroupResponse>;
  commitOffsets(groupId: string, request: OffsetCommitRequest, options?: CallOptions): Promise<OffsetCommitResponse>;
  fetchOffsets(groupId: string, request: OffsetFetchRequest, options?: CallOptions): Promise<OffsetFetchResponse>;
}

/** Settings of {@link GroupConsumer} (Kafka consumer config names in parentheses). */
export interface GroupConsumerOptions {
  /** (group.id) */
  groupId: string;
  /** Static membership (group.instance.id): a restart within the session timeout keeps the partitions. */
  instanceId?: string;
  /** (session.timeout.ms) @default 45000 */
  sessionTimeoutMs?: number;
  /** How long a revocation may take before the coordinator removes the member (max.poll.interval.ms). @default 300000 */
  rebalanceTimeoutMs?: number;
  /** Server-side assignor, used if this member creates the group. @default the group's, else "cooperative-sticky" */
  assignor?: AssignorName;
  /** (auto.offset.reset) Where to start without a committed offset; `subscribe({fromBeginning: true})` sets "earliest". @default "latest" */
  autoOffsetReset?: AutoOffsetReset;
  /** Long-poll of each fetch, in ms (fetch.max.wait.ms). @default 500 */
  maxWaitMs?: number;
  /** Most records per fetch round (max.poll.records). @default 500 */
  maxRecords?: number;
  /** (client.id) shown by describe. @default "" */
  clientId?: string;
  /** Member id to propose (KIP-1082): makes join retries idempotent. @default a random UUID */
  memberId?: string;
  /** First backoff after a failed call or handler, in ms; doubles up to maxRetryBackoffMs, ±20% jitter. @default 100 */
  retryBackoffMs?: number;
  /** @default 5000 */
  maxRetryBackoffMs?: number;
}

export const GROUP_CONSUMER_DEFAULTS = {
  sessionTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS,
  rebalanceTimeoutMs: DEFAULT_REBALANCE_TIMEOUT_MS,
  autoOffsetReset: "latest",
  maxWaitMs: 500,
  maxRecords: 500,
  clientId: "",
  retryBackoffMs: 100,
  maxRetryBackoffMs: 5000,
} as const;

/** Argument of {@link GroupConsumer.subscribe} (kafkajs: `{topics, fromBeginning}`). */
export interface SubscribeOptions {
  /**
   * Topic names; a RegExp element is a pattern subscription (kafkajs style). The coordinator
   * matches its `source` with RE2 syntax (no backreferences or lookaround; flags are ignored:
   * write `(?i)` inside the pattern instead).
   */
  topics?: readonly (string | RegExp)[];
  topic?: string | RegExp;
  /**
   * Regular expression matched against whole topic names (short for `public/default`, or full),
   * in RE2 syntax (docs/PROTOCOL.md); a string is sent as is. A pattern the coordinator cannot
   * compile fails the first heartbeat with INVALID_REGULAR_EXPRESSION.
   */
  pattern?: string | RegExp;
  /** Start at the log start when the group has no committed offset (autoOffsetReset "earliest"). */
  fromBeginning?: boolean;
}

/** Argument of `eachMessage`. */
export interface EachMessagePayload {
  topic: string;
  partition: number;
  message: ConsumerRecord;
  /** Heartbeats run on their own loop; kept for kafkajs compatibility. */
  heartbeat(): Promise<void>;
  /** Pauses this partition (the rest of the current batch of it is not delivered). */
  pause(): () => void;
}

export interface Batch {
  topic: string;
  partition: number;
  /** In offset order. */
  messages: ConsumerRecord[];
  highWatermark: number | undefined;
  firstOffset(): number | null;
  lastOffset(): number;
  /** highWatermark - 1 - last offset of the batch (kafkajs offsetLag). */
  offsetLag(): number;
}

/** Argument of `eachBatch`. */
export interface EachBatchPayload {
  batch: Batch;
  /** Marks `offset` processed: it is committed (as `offset + 1`) by the next commit. */
  resolveOffset(offset: number): void;
  heartbeat(): Promise<void>;
  /** Commits processed offsets now if the auto-commit interval has elapsed. */
  commitOffsetsIfNecessary(): Promise<void>;
  /** Processed but not yet committed offsets (next offset to read) of owned partitions. */
  uncommittedOffsets(): TopicPartitionOffset[];
  isRunning(): boolean;
  /** True once the partition was revoked, lost, paused or seeked: stop processing this batch. */
  isStale(): boolean;
  pause(): () => void;
}

export interface RunOptions {
  eachMessage?: (payload: EachMessagePayload) => Promise<void>;
  eachBatch?: (payload: EachBatchPayload) => Promise<void>;
  /** @default true */
  autoCommit?: boolean;
  /** (auto.commit.interval.ms) @default 5000 */
  autoCommitIntervalMs?: number;
  /**
   * Resolve every message of a batch when eachBatch resolves, unless the batch went stale
   * meanwhile (then only what the handler resolved counts). A handler that stops early on
   * `!isRunning()` must resolve what it processed itself (kafkajs's contract). @default true
   */
  eachBatchAutoResolve?: boolean;
}

/**
 * Events. Listeners of `assigned`, `revoked` and `lost` (Kafka's ConsumerRebalanceListener) are
 * awaited: a `revoked` listener runs before the partitions are released (commit there), a
 * `lost` listener after they were taken away (do not commit: the commit would be refused).
 */
export interface GroupConsumerEvents {
  assigned: (partitions: TopicPartition[]) => void | Promise<void>;
  revoked: (partitions: TopicPartition[]) => void | Promise<void>;
  lost: (partitions: TopicPartition[]) => void | Promise<void>;
  commit: (offsets: TopicPartitionOffset[]) => void;
  error: (error: unknown) => void;
}

/** The options membership and the runner use: defaults applied. */
export type MembershipSettings = Required<Omit<GroupConsumerOptions, "instanceId" | "assignor" | "memberId">> & Pick<GroupConsumerOptions, "instanceId" | "assignor">;
