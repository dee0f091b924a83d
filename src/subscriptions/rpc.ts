/**
 * RPC interface of a partition's subscriptions room (durable-objects/partition/subscriptions.ts),
 * as the gateway's subscription admin routes call it (docs/PROTOCOL.md "Subscriptions").
 * Expected outcomes are typed results; a thrown error is a bug or a platform failure.
 * Consumers and readers reach the room over WebSocket (the partition object's sealed fetch).
 */
import type { RpcResult } from "../protocol/errors.ts";
import type { InitialPosition } from "./cursor.ts";
import type { SubscriptionType } from "./dispatch.ts";
import type { WireMessage } from "./wire.ts";

/** One connected consumer, as stats show it. */
export interface ConsumerInfo {
  consumerId: string;
  consumerName: string;
  /** Permits left: push mode, receiverQueueSize minus unacked; pull mode, the credits granted and not used. */
  permits: number;
  /** Messages delivered to this consumer and not yet acked, nacked or timed out. */
  unacked: number;
  /** Failover: whether this consumer is the active one; other types: true. */
  active: boolean;
}

/** A subscription on one partition: its durable cursor and live consumers. */
export interface SubscriptionInfo {
  subscription: string;
  partition: number;
  type: SubscriptionType;
  /** Mark-delete position: the last offset such that it and everything before it are acked; -1 when nothing is. */
  markDeletePosition: number;
  /** Individually acked ranges above the mark-delete position, `[first, last]` inclusive offsets. */
  ackedRanges: [number, number][];
  /** Unacknowledged messages between the log start and the log end (Pulsar's msgBacklog). */
  backlog: number;
  /** Stored bytes of those messages (pro rata over their record batches). */
  backlogBytes: number;
  /** Messages in flight at the connected consumers. */
  unacked: number;
  /** Messages copied to the dead-letter topic so far. */
  deadLetteredTotal: number;
  /** Records appended to the partition per second (last 10 s, since the object started; Pulsar's msgRateIn). */
  msgRateIn: number;
  /** Messages delivered per second, first deliveries and redeliveries (msgRateOut). */
  msgRateOut: number;
  /** Redelivered messages (redelivery count > 0) per second (msgRateRedeliver). */
  msgRateRedeliver: number;
  consumers: ConsumerInfo[];
}

/**
 * One subscription's numbers for `GET /v1/metrics` (docs/OBSERVABILITY.md), from the partition's
 * `metrics()`: gauges now, and counters exact since the partition object started (memory only,
 * reset to 0 on a restart, as the partition's own counters).
 */
export interface SubscriptionMetrics {
  subscription: string;
  type: SubscriptionType;
  /** Unacknowledged messages between the log start and the log end (Pulsar's msgBacklog). */
  backlog: number;
  /** Stored bytes of those messages (pro rata over their record batches). */
  backlogBytes: number;
  /** Messages in flight at the connected consumers and pull leases. */
  unacked: number;
  /** Connected consumers (sockets and open pull leases). */
  consumers: number;
  /** Messages dispatched, first deliveries and redeliveries, since the object started. */
  deliveredTotal: number;
  /** Of those, messages dispatched with a redelivery count > 0. */
  redeliveredTotal: number;
  /** Messages copied to the dead-letter topic so far (durable). */
  deadLetteredTotal: number;
}

/** Where a subscription is created, or a cursor reset. */
export type CursorTarget = InitialPosition;

export interface SubscriptionRpc {
  /** Creates the subscription at `position` unless it exists. Errors: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST. */
  subCreate(req: { subscription: string; type: SubscriptionType; position: CursorTarget; partitioned?: boolean }): Promise<RpcResult<{ created: boolean; info: SubscriptionInfo }>>;
  /** Every subscription of the partition. */
  subList(): Promise<RpcResult<{ subscriptions: SubscriptionInfo[] }>>;
  /** Errors: SUBSCRIPTION_NOT_FOUND. */
  subStats(subscription: string): Promise<RpcResult<{ info: SubscriptionInfo }>>;
  /**
   * Resets the cursor (Pulsar's reset-cursor / seek): the next message delivered is `target`'s
   * (a timestamp: the first message with timestamp >= T). Connected consumers are closed with
   * 4002 and resume from there on reconnect. Errors: SUBSCRIPTION_NOT_FOUND.
   */
  subSeek(subscription: string, target: CursorTarget): Promise<RpcResult<{ info: SubscriptionInfo }>>;
  /** Acks the next `count` unacked messages. Errors: SUBSCRIPTION_NOT_FOUND. */
  subSkip(subscription: string, count: number): Promise<RpcResult<{ skipped: number; info: SubscriptionInfo }>>;
  /** Acks every message up to the log end. Errors: SUBSCRIPTION_NOT_FOUND. */
  subClearBacklog(subscription: string): Promise<RpcResult<{ cleared: number; info: SubscriptionInfo }>>;
  /**
   * Deletes the subscription (its cursor and timers). Refused with SUBSCRIPTION_HAS_CONSUMERS
   * while consumers are connected, unless `force` (then they are closed with 4001).
   * Errors: SUBSCRIPTION_NOT_FOUND, SUBSCRIPTION_HAS_CONSUMERS.
   */
  subDelete(subscription: string, force: boolean): Promise<RpcResult<object>>;
  /**
   * HTTP pull (shared subscriptions): receives up to `max` messages under a lease of
   * `visibilityTimeoutMs`; the subscription is created (shared, at `position`) when missing.
   * Errors: CONSUMER_BUSY, UNKNOWN_TOPIC_OR_PARTITION.
   */
  subReceive(req: {
    subscription: string;
    max: number;
    visibilityTimeoutMs: number;
    position: CursorTarget;
    partitioned: boolean;
    base64: boolean;
  }): Promise<RpcResult<{ leaseId: string | null; expiresAtMs: number | null; messages: WireMessage[] }>>;
  /** Acks or nacks messages of a lease (all it holds when `offsets` is null). Errors: LEASE_NOT_FOUND, INVALID_MESSAGE_ID, SUBSCRIPTION_NOT_FOUND. */
  subSettleLease(subscription: string, leaseId: string, how: "ack" | "nack", offsets: number[] | null): Promise<RpcResult<{ settled: number; remaining: number }>>;
}
