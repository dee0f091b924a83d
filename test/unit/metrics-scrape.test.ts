import { describe, expect, it } from "vitest";
import { TopicCache } from "../../src/gateway/topics.ts";
import { ExpositionWriter } from "../../src/metrics/exposition.ts";
import { mapBounded, writeCoverage, writeGroupMetrics, writePartitionMetrics } from "../../src/metrics/scrape.ts";
import type { PartitionMetrics } from "../../src/partition/rpc.ts";
import type { GroupDescription } from "../../src/protocol/groups.ts";

describe("mapBounded", () => {
  it("keeps at most `limit` calls in flight and answers in item order", async () => {
    let inFlight = 0;
    let most = 0;
    const out = await mapBounded([5, 1, 4, 2, 3, 0, 6], 3, async (n) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, n));
      inFlight--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0, 60]);
    expect(most).toBe(3);
    expect(await mapBounded([], 3, async () => 1)).toEqual([]);
    await expect(mapBounded([1], 0, async () => 1)).rejects.toThrow(/at least 1/);
  });
});

const partition: PartitionMetrics = {
  topic: "t/n/a",
  partition: 1,
  logStartOffset: 2,
  highWatermark: 9,
  logEndOffset: 9,
  storedBytes: 700,
  recordsIn: 7,
  bytesIn: 650,
  recordsOut: 3,
  bytesOut: 300,
  produceRequests: 4,
  produceDuplicates: 1,
  produceErrors: { RECORD_TOO_LARGE: 2 },
  fetchRequests: 5,
  fetchErrors: {},
  waiters: 1,
  countersSinceMs: 1_700_000_000_500,
  segments: 3,
  subscriptions: [{ subscription: "s1", type: "shared", backlog: 4, backlogBytes: 120, unacked: 2, consumers: 1, deliveredTotal: 6, redeliveredTotal: 1, deadLetteredTotal: 0 }],
};

describe("scrape families", () => {
  it("writes one sample per partition, errors by code, the start time in seconds, one sample per subscription", () => {
    const w = new ExpositionWriter();
    writePartitionMetrics(w, [partition]);
    const lines = w
      .text()
      .split("\n")
      .filter((l) => !l.startsWith("#") && l !== "");
    expect(lines).toEqual([
      'edgelog_partition_log_start_offset{topic="t/n/a",partition="1"} 2',
      'edgelog_partition_log_end_offset{topic="t/n/a",partition="1"} 9',
      'edgelog_partition_high_watermark{topic="t/n/a",partition="1"} 9',
      'edgelog_partition_size_bytes{topic="t/n/a",partition="1"} 700',
      'edgelog_partition_records{topic="t/n/a",partition="1"} 7',
      'edgelog_partition_segments{topic="t/n/a",partition="1"} 3',
      'edgelog_partition_records_in_total{topic="t/n/a",partition="1"} 7',
      'edgelog_partition_bytes_in_total{topic="t/n/a",partition="1"} 650',
      'edgelog_partition_records_out_total{topic="t/n/a",partition="1"} 3',
      'edgelog_partition_bytes_out_total{topic="t/n/a",partition="1"} 300',
      'edgelog_partition_produce_requests_total{topic="t/n/a",partition="1"} 4',
      'edgelog_partition_produce_duplicates_total{topic="t/n/a",partition="1"} 1',
      'edgelog_partition_produce_errors_total{topic="t/n/a",partition="1",code="RECORD_TOO_LARGE"} 2',
      'edgelog_partition_fetch_requests_total{topic="t/n/a",partition="1"} 5',
      'edgelog_partition_long_poll_waiters{topic="t/n/a",partition="1"} 1',
      'edgelog_partition_start_time_seconds{topic="t/n/a",partition="1"} 1700000000.5',
      'edgelog_subscription_backlog{topic="t/n/a",partition="1",subscription="s1",type="shared"} 4',
      'edgelog_subscription_backlog_bytes{topic="t/n/a",partition="1",subscription="s1",type="shared"} 120',
      'edgelog_subscription_unacked_messages{topic="t/n/a",partition="1",subscription="s1",type="shared"} 2',
      'edgelog_subscription_consumers{topic="t/n/a",partition="1",subscription="s1",type="shared"} 1',
      'edgelog_subscription_delivered_total{topic="t/n/a",partition="1",subscription="s1",type="shared"} 6',
      'edgelog_subscription_redelivered_total{topic="t/n/a",partition="1",subscription="s1",type="shared"} 1',
      'edgelog_subscription_dead_lettered_total{topic="t/n/a",partition="1",subscription="s1",type="shared"} 0',
    ]);
  });

  it("writes a group's state as a state set, its members, epoch, committed offsets, lags and lag sum", () => {
    const g = {
      groupId: "g1",
      state: "Stable",
      groupEpoch: 4,
      members: [{}, {}],
      offsets: [
        { topic: "t/n/a", partition: 0, committedOffset: 5, lag: 2 },
        { topic: "t/n/a", partition: 1, committedOffset: null, lag: null },
      ],
      totalLag: 2,
    } as unknown as GroupDescription;
    const w = new ExpositionWriter();
    writeGroupMetrics(w, [g]);
    writeCoverage(w, { ok: 3, error: 1, omitted: 0 }, { ok: 1, error: 0, omitted: 2 });
    const lines = w
      .text()
      .split("\n")
      .filter((l) => !l.startsWith("#") && l !== "");
    expect(lines).toEqual([
      'edgelog_consumergroup_state{group="g1",state="Empty"} 0',
      'edgelog_consumergroup_state{group="g1",state="Assigning"} 0',
      'edgelog_consumergroup_state{group="g1",state="Reconciling"} 0',
      'edgelog_consumergroup_state{group="g1",state="Stable"} 1',
      'edgelog_consumergroup_state{group="g1",state="Dead"} 0',
      'edgelog_consumergroup_members{group="g1"} 2',
      'edgelog_consumergroup_epoch{group="g1"} 4',
      'edgelog_consumergroup_committed_offset{group="g1",topic="t/n/a",partition="0"} 5',
      'edgelog_consumergroup_lag{group="g1",topic="t/n/a",partition="0"} 2',
      'edgelog_consumergroup_lag_sum{group="g1"} 2',
      'edgelog_scrape_partitions{result="ok"} 3',
      'edgelog_scrape_partitions{result="error"} 1',
      'edgelog_scrape_partitions{result="omitted"} 0',
      'edgelog_scrape_groups{result="ok"} 1',
      'edgelog_scrape_groups{result="error"} 0',
      'edgelog_scrape_groups{result="omitted"} 2',
    ]);
  });
});

describe("topic cache counts", () => {
  it("counts a miss for an absent or expired entry and a hit for a fresh one", () => {
    const cache = new TopicCache(1000);
    const topic = { name: "t/n/a" } as Parameters<TopicCache["put"]>[0];
    expect(cache.peek("t/n/a", 0)).toBeUndefined();
    cache.put(topic, 0);
    expect(cache.peek("t/n/a", 999)).toBe(topic);
    expect(cache.peek("t/n/a", 1000)).toBeUndefined();
    expect({ hits: cache.hits, misses: cache.misses, size: cache.size }).toEqual({ hits: 1, misses: 2, size: 0 });
  });
});
