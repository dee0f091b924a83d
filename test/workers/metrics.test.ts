/**
 * `GET /v1/metrics` through the real gateway and the real Durable Objects: after a known
 * workload, the scrape has exactly those counters, bounds and lag, and it parses with a
 * Prometheus text-format parser (parse-prometheus-text-format).
 */
import { env, evictDurableObject } from "cloudflare:test";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { describe as suite, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import type { ConsumerGroupHeartbeatResponse } from "../../src/protocol/index.ts";
import { authEnv, expectCode, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";
import { call, createTopic, fetchJson, json, produce, randomTopic, metricValue as value, type MetricFamilies } from "./helpers.ts";
import { sleep } from "./subs-helpers.ts";

type Families = MetricFamilies;

async function scrape(): Promise<{ text: string; families: Families }> {
  const res = await call("/v1/metrics");
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return { text, families: parsePrometheusTextFormat(text) };
}

suite("GET /v1/metrics", () => {
  it("after N records in, M out, one fetch error and a group with a known lag, scrapes exactly those values", async () => {
    const topic = randomTopic();
    const full = `public/default/${topic}`;
    await createTopic(topic, 2);
    // N = 5 records to partition 0 in two requests, none to partition 1.
    await produce(`/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "a" }, { value: "b" }, { value: "c" }] });
    await produce(`/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "d" }, { value: "e" }] });
    // M = 2 + 3 records out in two fetches; one fetch past the end fails.
    expect((await fetchJson(topic, 0, "offset=0&maxRecords=2")).records.map((r) => r.value)).toEqual(["a", "b"]);
    expect((await fetchJson(topic, 0, "offset=2")).records.map((r) => r.value)).toEqual(["c", "d", "e"]);
    expect((await call(`/v1/topics/${topic}/partitions/0/records?offset=99`)).status).toBe(416);

    // A group that committed offset 2 on partition 0, then left: lag 5 - 2 = 3.
    const group = `g-${crypto.randomUUID()}`;
    const hb = (await (await json("POST", `/v1/groups/${group}/heartbeat`, { memberEpoch: 0, subscribedTopicNames: [topic] })).json()) as ConsumerGroupHeartbeatResponse;
    const commit = await json("POST", `/v1/groups/${group}/offsets`, { memberId: hb.memberId, memberEpoch: hb.memberEpoch, offsets: [{ topic, partition: 0, offset: 2 }] });
    expect(commit.status, await commit.text()).toBe(200);
    expect((await json("POST", `/v1/groups/${group}/leave`, { memberId: hb.memberId, memberEpoch: hb.memberEpoch })).status).toBe(200);

    const { text, families } = await scrape();
    const p0 = { topic: full, partition: "0" };
    const p1 = { topic: full, partition: "1" };
    expect({
      logStart: value(families, "edgelog_partition_log_start_offset", p0),
      logEnd: value(families, "edgelog_partition_log_end_offset", p0),
      hw: value(families, "edgelog_partition_high_watermark", p0),
      records: value(families, "edgelog_partition_records", p0),
      recordsIn: value(families, "edgelog_partition_records_in_total", p0),
      recordsOut: value(families, "edgelog_partition_records_out_total", p0),
      produceRequests: value(families, "edgelog_partition_produce_requests_total", p0),
      fetchRequests: value(families, "edgelog_partition_fetch_requests_total", p0),
      fetchOutOfRange: value(families, "edgelog_partition_fetch_errors_total", { ...p0, code: "OFFSET_OUT_OF_RANGE" }),
      produceErrors: value(families, "edgelog_partition_produce_errors_total", p0),
      waiters: value(families, "edgelog_partition_long_poll_waiters", p0),
      p1LogEnd: value(families, "edgelog_partition_log_end_offset", p1),
      p1RecordsIn: value(families, "edgelog_partition_records_in_total", p1),
      lag: value(families, "edgelog_consumergroup_lag", { group, topic: full, partition: "0" }),
      committed: value(families, "edgelog_consumergroup_committed_offset", { group, topic: full, partition: "0" }),
      lagSum: value(families, "edgelog_consumergroup_lag_sum", { group }),
      members: value(families, "edgelog_consumergroup_members", { group }),
      empty: value(families, "edgelog_consumergroup_state", { group, state: "Empty" }),
      stable: value(families, "edgelog_consumergroup_state", { group, state: "Stable" }),
    }).toEqual({
      logStart: 0,
      logEnd: 5,
      hw: 5,
      records: 5,
      recordsIn: 5,
      recordsOut: 5,
      produceRequests: 2,
      fetchRequests: 3,
      fetchOutOfRange: 1,
      produceErrors: undefined,
      waiters: 0,
      p1LogEnd: 0,
      p1RecordsIn: 0,
      lag: 3,
      committed: 2,
      lagSum: 3,
      members: 0,
      empty: 1,
      stable: 0,
    });
    // Bytes: in = the stored size of the log (nothing deleted), out = the batches returned (the
    // 3-record batch twice: fetch 1 stopped inside it, fetch 2 started inside it; the 2-record one once).
    const size = value(families, "edgelog_partition_size_bytes", p0)!;
    expect(value(families, "edgelog_partition_bytes_in_total", p0)).toBe(size);
    expect(value(families, "edgelog_partition_bytes_out_total", p0)).toBeGreaterThan(size);
    // The gateway's own families, by the route that answered (the ambiguous
    // /v1/topics/:tenant/:namespace/:topic/records pattern matches these paths too).
    const route = { method: "GET", route: "/v1/topics/:topic/partitions/:partition/records" };
    expect(value(families, "edgelog_gateway_requests_total", { ...route, status: "416" })).toBeGreaterThanOrEqual(1);
    expect(value(families, "edgelog_gateway_requests_total", { method: "POST", route: "/v1/topics/:topic/partitions/:partition/records", status: "200" })).toBeGreaterThanOrEqual(2);
    expect(value(families, "edgelog_gateway_requests_total", { method: "POST", route: "/v1/topics/:tenant/:namespace/:topic/records", status: "200" })).toBeUndefined();
    expect(text).toMatch(/^edgelog_gateway_request_duration_ms_bucket\{method="POST",route="\/v1\/topics\/:topic\/partitions\/:partition\/records",le="\+Inf"\} \d+$/m);
    expect(value(families, "edgelog_scrape_partitions", { result: "error" })).toBe(0);
    // Every topic route looked its topic up (the first time a miss): hits + misses >= 5.
    const lookups =
      (value(families, "edgelog_gateway_topic_cache_lookups_total", { result: "hit" }) ?? 0) + (value(families, "edgelog_gateway_topic_cache_lookups_total", { result: "miss" }) ?? 0);
    expect(lookups).toBeGreaterThanOrEqual(5);
  });

  it("after N produced, M acked and the rest redelivered once: the subscription's backlog N - M, unacked, delivered, redelivered, and the segment count", async () => {
    const topic = randomTopic();
    const full = `public/default/${topic}`;
    await createTopic(topic, 1);
    type Received = { leaseId: string | null; messages: { messageId: string; value: string }[] };
    const receive = async (body: unknown): Promise<Received> => {
      const res = await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/q/receive`, body);
      const text = await res.text();
      expect(res.status, text).toBe(200);
      return JSON.parse(text) as Received;
    };
    // The first receive creates the shared subscription at the earliest offset (nothing to deliver yet).
    expect(await receive({ initialPosition: "earliest" })).toMatchObject({ leaseId: null, messages: [] });
    // N = 5 produced, all 5 taken under one lease, M = 3 of them acked; the lease expires, so the
    // other 2 are redelivered (count 1) to a second lease that keeps them in flight.
    await produce(`/v1/topics/${topic}/partitions/0/records`, { records: ["a", "b", "c", "d", "e"].map((value) => ({ value })) });
    const lease = await receive({ maxMessages: 10, visibilityTimeoutMs: 3000 });
    expect(lease.messages.map((m) => m.value)).toEqual(["a", "b", "c", "d", "e"]);
    const ack = await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/q/leases/${lease.leaseId}/ack`, {
      messageIds: lease.messages.slice(0, 3).map((m) => m.messageId),
    });
    expect(await ack.json()).toEqual({ leaseId: lease.leaseId, settled: 3, remaining: 2 });
    let again: Received = { leaseId: null, messages: [] };
    for (let i = 0; i < 200 && again.messages.length === 0; i++) {
      await sleep(100);
      again = await receive({ maxMessages: 10, visibilityTimeoutMs: 60_000 });
    }
    expect(again.messages.map((m) => m.value)).toEqual(["d", "e"]);

    const { families } = await scrape();
    const labels = { topic: full, partition: "0", subscription: "q", type: "shared" };
    expect({
      backlog: value(families, "edgelog_subscription_backlog", labels),
      unacked: value(families, "edgelog_subscription_unacked_messages", labels),
      consumers: value(families, "edgelog_subscription_consumers", labels),
      delivered: value(families, "edgelog_subscription_delivered_total", labels),
      redelivered: value(families, "edgelog_subscription_redelivered_total", labels),
      deadLettered: value(families, "edgelog_subscription_dead_lettered_total", labels),
    }).toEqual({ backlog: 2, unacked: 2, consumers: 1, delivered: 7, redelivered: 2, deadLettered: 0 });
    // The backlog's bytes: the 5-record batch pro rata, 2 of 5 records of it.
    const size = value(families, "edgelog_partition_size_bytes", { topic: full, partition: "0" })!;
    expect(value(families, "edgelog_subscription_backlog_bytes", labels)).toBe(Math.round((size * 2) / 5));
    expect(value(families, "edgelog_partition_segments", { topic: full, partition: "0" })).toBeGreaterThanOrEqual(1);
  });

  it("counters restart at 0 when the partition object restarts; bounds do not (they are stored)", async () => {
    const topic = randomTopic();
    const full = `public/default/${topic}`;
    const created = await createTopic(topic, 1);
    await produce(`/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "a" }, { value: "b" }] });
    const p0 = { topic: full, partition: "0" };
    const before = (await scrape()).families;
    expect([value(before, "edgelog_partition_records_in_total", p0), value(before, "edgelog_partition_log_end_offset", p0)]).toEqual([2, 2]);
    await evictDurableObject(env.PARTITION.getByName(partitionObjectName(created.topicId, 0)));
    const after = (await scrape()).families;
    expect([value(after, "edgelog_partition_records_in_total", p0), value(after, "edgelog_partition_log_end_offset", p0)]).toEqual([0, 2]);
  });

  it("needs cluster DESCRIBE once auth is on: a plain principal is refused, a superuser served", async () => {
    const e = authEnv(await makeKeys());
    await expectCode(await request(e, "GET", "/v1/metrics", { token: await hsToken("mallory") }), 403, "NOT_AUTHORIZED");
    const res = await request(e, "GET", "/v1/metrics", { token: await hsToken(SUPERUSER) });
    expect(res.status).toBe(200);
    expect(parsePrometheusTextFormat(await res.text()).some((f) => f.name === "edgelog_scrape_partitions")).toBe(true);
  });
});
