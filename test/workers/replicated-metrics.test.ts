/**
 * `GET /v1/metrics` for a replicated partition (docs/OBSERVABILITY.md "Replicated
 * partitions"): with r1 a paused follower that lags (fault injection, EDGELOG_RAFT_FAULTS), the
 * scraped high watermark and log end offset are the leader's, not r1's, and the replica
 * families name each replica's role, term and own high watermark. Through the real gateway.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterEach, describe, expect, it } from "vitest";
import { call, metricValue as value, type MetricFamilies } from "./helpers.ts";
import { crashStarted, createReplicated, leaderOf, replica, status, until, produceValuesRetrying } from "./replica-helpers.ts";

afterEach(crashStarted);

type Families = MetricFamilies;

async function scrape(): Promise<Families> {
  const res = await call("/v1/metrics");
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return parsePrometheusTextFormat(text);
}

describe("metrics of a replicated partition", () => {
  it("the scraped high watermark is the leader's while r1 is a paused follower; replica gauges name roles and terms", async () => {
    const { name, topicId } = await createReplicated();
    const topic = name.includes("/") ? name : `public/default/${name}`;
    const first = await leaderOf(topicId);
    if (first.replica !== "r2") expect(await replica(topicId, first.replica).transferLeadership("r2")).toMatchObject({ ok: true, leaderReplica: "r2" });
    await until("r2 leads", async () => ((await status(topicId, "r2"))?.role === "leader" ? true : undefined));
    // r1 paused: it drops the leader's messages (lags) but answers calls.
    await replica(topicId, "r1").setFaults({ paused: true });
    expect(await produceValuesRetrying(name, ["a", "b", "c", "d", "e"])).toEqual([0, 1, 2, 3, 4]);
    const leader = (await status(topicId, "r2"))!;
    expect(leader).toMatchObject({ role: "leader", highWatermark: 5 });
    expect((await status(topicId, "r1"))!.highWatermark).toBe(0);

    const f = await scrape();
    const p = { topic, partition: "0" };
    expect(value(f, "edgelog_partition_high_watermark", p)).toBe(leader.highWatermark);
    expect(value(f, "edgelog_partition_log_end_offset", p)).toBe(5);
    expect(value(f, "edgelog_partition_log_start_offset", p)).toBe(0);
    expect(value(f, "edgelog_partition_records", p)).toBe(5);
    // Per replica: r2 leads in the leader's term; r1's own high watermark is its lagging one.
    expect(value(f, "edgelog_replica_role", { ...p, replica: "r2", role: "leader" })).toBe(1);
    expect(value(f, "edgelog_replica_role", { ...p, replica: "r2", role: "follower" })).toBe(0);
    expect(value(f, "edgelog_replica_role", { ...p, replica: "r1", role: "leader" })).toBe(0);
    expect(value(f, "edgelog_replica_leader_epoch", { ...p, replica: "r2" })).toBe(leader.leaderEpoch);
    expect(value(f, "edgelog_replica_high_watermark", { ...p, replica: "r2" })).toBe(5);
    expect(value(f, "edgelog_replica_high_watermark", { ...p, replica: "r1" })).toBe(0);
    await replica(topicId, "r1").setFaults({});
  });
});
