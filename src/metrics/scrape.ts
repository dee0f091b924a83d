/**
 * What `GET /v1/metrics` writes, from what it gathered (docs/OBSERVABILITY.md lists every
 * family). Pure: the route (src/routes/metrics.ts) does the I/O, these functions the text.
 *
 * Naming: one convention, `edgelog_<subsystem>_<name>_<unit>` (Prometheus' naming guide:
 * base units in the name, `_total` on counters), with the subject named as Kafka names it
 * (log start offset, log end offset, high watermark, records in, bytes in/out) and the consumer
 * group families shaped as kafka_exporter's `kafka_consumergroup_*`, so a Kafka dashboard
 * maps onto them by renaming the prefix. docs/OBSERVABILITY.md gives each one's Kafka MBean.
 */
import type { PartitionMetrics } from "../partition/rpc.ts";
import type { GroupDescription, GroupStateName } from "../protocol/groups.ts";
import type { SubscriptionMetrics } from "../subscriptions/rpc.ts";
import type { ExpositionWriter, Sample } from "./exposition.ts";

/** Partition metrics() calls in flight at once during a scrape. */
export const SCRAPE_CONCURRENCY = 32;
/**
 * Most partitions one scrape asks (the first ones in topic-name, partition order); the rest
 * are counted as omitted. With {@link MAX_SCRAPE_GROUPS} and the two listings, a scrape stays
 * under the 10,000 subrequests a Workers Paid request may make.
 */
export const MAX_SCRAPE_PARTITIONS = 4096;
/** Most consumer groups one scrape describes (in group id order); the rest are omitted. */
export const MAX_SCRAPE_GROUPS = 256;

const GROUP_STATES: readonly GroupStateName[] = ["Empty", "Assigning", "Reconciling", "Stable", "Dead"];

/**
 * Calls `fn` on every item with at most `limit` calls in flight, and answers the results in
 * item order. A rejected call rejects the whole (callers catch inside `fn`).
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  if (!(limit >= 1)) throw new Error("mapBounded needs a limit of at least 1");
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** How many of one kind a scrape asked and answered. */
export interface ScrapeCoverage {
  ok: number;
  /** Asked but failed (the error is logged by the route). */
  error: number;
  /** Not asked: over the scrape's bound. */
  omitted: number;
}

function partitionLabels(m: PartitionMetrics): Record<string, string> {
  return { topic: m.topic, partition: String(m.partition) };
}

function each(ps: readonly PartitionMetrics[], value: (m: PartitionMetrics) => number): Sample[] {
  return ps.map((m) => ({ labels: partitionLabels(m), value: value(m) }));
}

function byCode(ps: readonly PartitionMetrics[], errors: (m: PartitionMetrics) => Record<string, number>): Sample[] {
  const out: Sample[] = [];
  for (const m of ps) for (const [code, n] of Object.entries(errors(m))) out.push({ labels: { ...partitionLabels(m), code }, value: n });
  return out;
}

/** The partition families, one sample per partition (label `topic` is the full name). */
export function writePartitionMetrics(w: ExpositionWriter, ps: readonly PartitionMetrics[]): void {
  w.gauge(
    "edgelog_partition_log_start_offset",
    "First offset still in the log (Kafka LogStartOffset).",
    each(ps, (m) => m.logStartOffset),
  );
  w.gauge(
    "edgelog_partition_log_end_offset",
    "Offset the next appended record gets (Kafka LogEndOffset).",
    each(ps, (m) => m.logEndOffset),
  );
  w.gauge(
    "edgelog_partition_high_watermark",
    "Offsets below it are committed and readable (Kafka HighWatermark).",
    each(ps, (m) => m.highWatermark),
  );
  w.gauge(
    "edgelog_partition_size_bytes",
    "Bytes of the stored record batches (Kafka Log Size).",
    each(ps, (m) => m.storedBytes),
  );
  w.gauge(
    "edgelog_partition_records",
    "Offsets retained: log end offset minus log start offset (the record count unless compacted).",
    each(ps, (m) => m.logEndOffset - m.logStartOffset),
  );
  w.gauge(
    "edgelog_partition_segments",
    "Segments in the partition's segment index, local and tiered (docs/LIFECYCLE.md; Kafka NumLogSegments).",
    each(ps, (m) => m.segments),
  );
  w.counter(
    "edgelog_partition_records_in_total",
    "Records appended since the partition object started (Kafka MessagesInPerSec).",
    each(ps, (m) => m.recordsIn),
  );
  w.counter(
    "edgelog_partition_bytes_in_total",
    "Stored bytes appended since the partition object started (Kafka BytesInPerSec).",
    each(ps, (m) => m.bytesIn),
  );
  w.counter(
    "edgelog_partition_records_out_total",
    "Offsets delivered by fetches since the partition object started.",
    each(ps, (m) => m.recordsOut),
  );
  w.counter(
    "edgelog_partition_bytes_out_total",
    "Batch bytes returned by fetches since the partition object started (Kafka BytesOutPerSec).",
    each(ps, (m) => m.bytesOut),
  );
  w.counter(
    "edgelog_partition_produce_requests_total",
    "Produce requests since the partition object started, any outcome (Kafka TotalProduceRequestsPerSec).",
    each(ps, (m) => m.produceRequests),
  );
  w.counter(
    "edgelog_partition_produce_duplicates_total",
    "Idempotent produce retries answered without appending (KIP-98 duplicates).",
    each(ps, (m) => m.produceDuplicates),
  );
  w.counter(
    "edgelog_partition_produce_errors_total",
    "Produce requests answered with an error, by error code (Kafka FailedProduceRequestsPerSec).",
    byCode(ps, (m) => m.produceErrors),
  );
  w.counter(
    "edgelog_partition_fetch_requests_total",
    "Fetch requests since the partition object started, any outcome (Kafka TotalFetchRequestsPerSec).",
    each(ps, (m) => m.fetchRequests),
  );
  w.counter(
    "edgelog_partition_fetch_errors_total",
    "Fetch requests answered with an error, by error code (Kafka FailedFetchRequestsPerSec).",
    byCode(ps, (m) => m.fetchErrors),
  );
  w.gauge(
    "edgelog_partition_long_poll_waiters",
    "Long-poll fetches and stream reads waiting for an append now (Kafka's fetch purgatory size).",
    each(ps, (m) => m.waiters),
  );
  w.gauge(
    "edgelog_partition_start_time_seconds",
    "When the partition object started, Unix seconds: its counters count from then.",
    each(ps, (m) => m.countersSinceMs / 1000),
  );
  writeSubscriptionMetrics(w, ps);
}

/** One sample per subscription of each partition: labels topic, partition, subscription, type. */
function perSubscription(ps: readonly PartitionMetrics[], value: (s: SubscriptionMetrics) => number): Sample[] {
  const out: Sample[] = [];
  for (const m of ps) for (const s of m.subscriptions) out.push({ labels: { ...partitionLabels(m), subscription: s.subscription, type: s.type }, value: value(s) });
  return out;
}

/**
 * The subscription families (docs/SUBSCRIPTIONS.md), shaped as Pulsar's `pulsar_subscription_*`
 * (docs/OBSERVABILITY.md gives each one's Pulsar name). Counters count since the partition
 * object started, as the partition's own.
 */
function writeSubscriptionMetrics(w: ExpositionWriter, ps: readonly PartitionMetrics[]): void {
  w.gauge(
    "edgelog_subscription_backlog",
    "Unacknowledged messages between the log start and the log end (Pulsar msgBacklog, pulsar_subscription_back_log).",
    perSubscription(ps, (s) => s.backlog),
  );
  w.gauge(
    "edgelog_subscription_backlog_bytes",
    "Stored bytes of the backlog's messages, pro rata over their record batches (Pulsar backlogSize).",
    perSubscription(ps, (s) => s.backlogBytes),
  );
  w.gauge(
    "edgelog_subscription_unacked_messages",
    "Messages delivered to consumers and pull leases and not yet acked, nacked or timed out (Pulsar pulsar_subscription_unacked_messages).",
    perSubscription(ps, (s) => s.unacked),
  );
  w.gauge(
    "edgelog_subscription_consumers",
    "Consumers connected now, sockets and open pull leases (Pulsar pulsar_subscription_consumers_count).",
    perSubscription(ps, (s) => s.consumers),
  );
  w.counter(
    "edgelog_subscription_delivered_total",
    "Messages dispatched, first deliveries and redeliveries, since the partition object started (Pulsar msgOutCounter).",
    perSubscription(ps, (s) => s.deliveredTotal),
  );
  w.counter(
    "edgelog_subscription_redelivered_total",
    "Messages dispatched again (redelivery count > 0) since the partition object started (Pulsar msgRateRedeliver, as a counter).",
    perSubscription(ps, (s) => s.redeliveredTotal),
  );
  w.counter(
    "edgelog_subscription_dead_lettered_total",
    "Messages copied to the dead-letter topic since the subscription was created (stored: survives restarts).",
    perSubscription(ps, (s) => s.deadLetteredTotal),
  );
}

/** The consumer group families (shaped as kafka_exporter's kafka_consumergroup_*). */
export function writeGroupMetrics(w: ExpositionWriter, groups: readonly GroupDescription[]): void {
  const state: Sample[] = [];
  for (const g of groups) for (const s of GROUP_STATES) state.push({ labels: { group: g.groupId, state: s }, value: g.state === s ? 1 : 0 });
  w.gauge("edgelog_consumergroup_state", "1 for the group's current state, 0 for the others (KIP-848 states).", state);
  w.gauge(
    "edgelog_consumergroup_members",
    "Members of the group.",
    groups.map((g) => ({ labels: { group: g.groupId }, value: g.members.length })),
  );
  w.gauge(
    "edgelog_consumergroup_epoch",
    "Group epoch: rises by one at each change of membership or subscriptions (a rebalance, KIP-848).",
    groups.map((g) => ({ labels: { group: g.groupId }, value: g.groupEpoch })),
  );
  const committed: Sample[] = [];
  const lag: Sample[] = [];
  for (const g of groups) {
    for (const o of g.offsets) {
      const labels = { group: g.groupId, topic: o.topic, partition: String(o.partition) };
      if (o.committedOffset !== null) committed.push({ labels, value: o.committedOffset });
      if (o.lag !== null) lag.push({ labels, value: o.lag });
    }
  }
  w.gauge("edgelog_consumergroup_committed_offset", "Committed offset of the group on a partition (kafka_exporter kafka_consumergroup_current_offset).", committed);
  w.gauge("edgelog_consumergroup_lag", "Log end offset minus committed offset, records (kafka_exporter kafka_consumergroup_lag).", lag);
  w.gauge(
    "edgelog_consumergroup_lag_sum",
    "Sum of the group's known partition lags, records.",
    groups.map((g) => ({ labels: { group: g.groupId }, value: g.totalLag })),
  );
}

/** How complete this scrape is, so a dashboard can tell a missing partition from a quiet one. */
export function writeCoverage(w: ExpositionWriter, partitions: ScrapeCoverage, groups: ScrapeCoverage): void {
  const samples = (c: ScrapeCoverage): Sample[] => [
    { labels: { result: "ok" }, value: c.ok },
    { labels: { result: "error" }, value: c.error },
    { labels: { result: "omitted" }, value: c.omitted },
  ];
  w.gauge("edgelog_scrape_partitions", "Partitions this scrape read (ok), failed to read (error) or left out over its bound (omitted).", samples(partitions));
  w.gauge("edgelog_scrape_groups", "Consumer groups this scrape described (ok), failed to describe (error) or left out over its bound (omitted).", samples(groups));
}
