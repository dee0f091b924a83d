/**
 * Subscriptions end to end (issue 17): consumers over the native WebSocket API through the real
 * gateway to the real partition objects, with the exact expectations. Orders and counts
 * are asserted, never timing thresholds ("nothing more arrives" waits a short while and checks
 * the count).
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { keyHash } from "../../src/subscriptions/dispatch.ts";
import { call, createTopic, expectError, fetchJson, json, randomTopic } from "./helpers.ts";
import { connect, produceValues, sleep, subStats, values } from "./subs-helpers.ts";

async function partitionStub(topic: string, p = 0) {
  const d = (await (await call(`/v1/topics/${topic}`)).json()) as { topicId: string };
  return env.PARTITION.getByName(partitionObjectName(d.topicId, p));
}

/** Restarts a partition object: its sockets must be closed first (a restart drops them). */
async function restart(topic: string): Promise<void> {
  await evictDurableObject(await partitionStub(topic));
}

describe("native WebSocket consumer", () => {
  it("delivers in order, acks after the durable commit, and stats follow", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1", "m2"]);
    const c = await connect(topic, "s", { type: "exclusive", initialPosition: "earliest" });
    const got = await c.waitMessages(3);
    expect(values(got)).toEqual(["m0", "m1", "m2"]);
    expect(got.map((m) => [m.messageId, m.redeliveryCount])).toEqual([
      ["0000:0000000000000000", 0],
      ["0000:0000000000000001", 0],
      ["0000:0000000000000002", 0],
    ]);
    expect(c.frames[0]).toMatchObject({ type: "connected", subscription: "s", subscriptionType: "exclusive", partition: 0, active: true });
    expect(await c.ack([got[0]!.messageId, got[2]!.messageId])).toBe(2);
    const st = (await subStats(topic, "s")) as Awaited<ReturnType<typeof subStats>> & { msgRateIn: number; msgRateOut: number; msgRateRedeliver: number };
    expect([st.msgRateIn, st.msgRateOut, st.msgRateRedeliver]).toEqual([0.3, 0.3, 0]); // 3 in, 3 out over the 10 s window
    expect({ backlog: st.backlog, md: st.partitions[0]!.markDeletePosition, ranges: st.partitions[0]!.ackedRanges }).toEqual({ backlog: 1, md: 0, ranges: [[2, 2]] });
    await c.close();
  });

  it("exclusive refuses a second consumer (409 CONSUMER_BUSY); cumulative ack on shared is refused (NOT_ALLOWED)", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const a = await connect(topic, "ex", { type: "exclusive" });
    await a.until(() => a.frames.length > 0, "connected");
    const refused = await call(`/v1/topics/${topic}/partitions/0/subscriptions/ex/ws?type=exclusive`, { headers: { upgrade: "websocket" } });
    const e = await expectError(refused, "CONSUMER_BUSY", 409);
    expect(e.details).toEqual({ subscriptionType: "exclusive" });
    // Another type on a subscription with consumers: CONSUMER_BUSY too.
    await expectError(await call(`/v1/topics/${topic}/partitions/0/subscriptions/ex/ws?type=shared`, { headers: { upgrade: "websocket" } }), "CONSUMER_BUSY", 409);

    const s = await connect(topic, "sh", { type: "shared", initialPosition: "earliest" });
    await produceValues(topic, ["m0"]);
    const [m0] = await s.waitMessages(1);
    s.send({ type: "ackCumulative", messageId: m0!.messageId, requestId: "c1" });
    await s.until(() => s.frames.some((f) => f.type === "error"), "error frame");
    expect(s.frames.find((f) => f.type === "error")).toMatchObject({ type: "error", code: "NOT_ALLOWED", requestId: "c1", details: { subscriptionType: "shared" } });
    expect((await subStats(topic, "sh")).backlog).toBe(1); // the refusal changed nothing
    await a.close();
    await s.close();
  });

  it("shared, ack timeout 1 s: m0 and m1 come back in delivery order; an acked message never does", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "shared", ackTimeoutMs: 1000 });
    await c.until(() => c.frames.length > 0, "connected");
    await produceValues(topic, ["m0"]);
    await c.waitMessages(1);
    await sleep(600);
    await produceValues(topic, ["m1", "acked"]);
    const first = await c.waitMessages(3);
    await c.ack([first[2]!.messageId]);
    const all = await c.waitMessages(5);
    expect(all.map((m) => [m.value, m.redeliveryCount])).toEqual([
      ["m0", 0],
      ["m1", 0],
      ["acked", 0],
      ["m0", 1],
      ["m1", 1],
    ]);
    await c.ack([all[3]!.messageId, all[4]!.messageId]);
    await sleep(1200);
    expect(c.messages).toHaveLength(5);
    expect((await subStats(topic, "s")).backlog).toBe(0);
    await c.close();
  });

  it("nacked on every delivery with maxRedeliverCount 2: counts 0, 1, 2, then exactly one dead-letter copy, never again on the subscription", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "shared", maxRedeliverCount: 2, negativeAckRedeliveryDelayMs: 50 });
    await c.until(() => c.frames.length > 0, "connected");
    const [offset] = await produceValues(topic, ["poison"]);
    for (let i = 1; i <= 3; i++) {
      const got = await c.waitMessages(i);
      c.send({ type: "nack", messageId: got[i - 1]!.messageId });
    }
    expect(c.messages.map((m) => m.redeliveryCount)).toEqual([0, 1, 2]);
    // The copy is produced after the decision commits; wait for the original's ack.
    for (let i = 0; i < 100 && (await subStats(topic, "s")).deadLetteredTotal < 1; i++) await sleep(50);
    const st = await subStats(topic, "s");
    expect({ backlog: st.backlog, dead: st.deadLetteredTotal }).toEqual({ backlog: 0, dead: 1 });
    const dlq = await fetchJson(`${topic}-s-DLQ`, 0, "offset=0");
    expect(dlq.records).toHaveLength(1);
    const h = Object.fromEntries(dlq.records[0]!.headers.map((x) => [x.key, x.value]));
    expect({ value: dlq.records[0]!.value, h }).toEqual({
      value: "poison",
      h: { REAL_TOPIC: `public/default/${topic}`, ORIGIN_MESSAGE_ID: `0000:${String(offset).padStart(16, "0")}`, REAL_SUBSCRIPTION: "s" },
    });
    await sleep(300);
    expect(c.messages).toHaveLength(3);
    await c.close();
  });

  it("permits = 2: nothing else flows while m0 and m1 are unacked; both come back after the ack timeout; acking them lets m2 flow", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1", "m2"]);
    const c = await connect(topic, "s", { type: "shared", receiverQueueSize: 2, ackTimeoutMs: 1000, initialPosition: "earliest" });
    await c.waitMessages(2);
    await sleep(300);
    expect(values(c.messages)).toEqual(["m0", "m1"]);
    const re = await c.waitMessages(4);
    expect(re.map((m) => [m.value, m.redeliveryCount])).toEqual([
      ["m0", 0],
      ["m1", 0],
      ["m0", 1],
      ["m1", 1],
    ]);
    const st = await subStats(topic, "s");
    expect(st.partitions[0]!.consumers).toEqual([expect.objectContaining({ permits: 0, unacked: 2 })]);
    await c.ack([re[2]!.messageId, re[3]!.messageId]);
    const all = await c.waitMessages(5);
    expect(all[4]!.value).toBe("m2");
    await c.close();
  });

  it("key_shared: a joining consumer gets nothing for a moved key until the previous owner acks, then the key's messages in order", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    // A key whose hash lies in the upper half of the hash space moves to the second consumer.
    const key = Array.from({ length: 100 }, (_, i) => `K${i}`).find((k) => keyHash(k) >= 32_768)!;
    const a = await connect(topic, "ks", { type: "key_shared", consumerName: "a" });
    await a.until(() => a.frames.length > 0, "connected");
    await produceValues(topic, ["k1", "k2"], [{ key }, { key }]);
    const held = await a.waitMessages(2);
    const b = await connect(topic, "ks", { type: "key_shared", consumerName: "b" });
    await b.until(() => b.frames.length > 0, "connected");
    await produceValues(topic, ["k3", "k4"], [{ key }, { key }]);
    await sleep(300);
    expect({ a: values(a.messages), b: values(b.messages) }).toEqual({ a: ["k1", "k2"], b: [] });
    await a.ack(held.map((m) => m.messageId));
    await b.waitMessages(2);
    await produceValues(topic, ["k5"], [{ key }]);
    await b.waitMessages(3);
    expect({ a: values(a.messages), b: values(b.messages) }).toEqual({ a: ["k1", "k2"], b: ["k3", "k4", "k5"] });
    await a.close();
    await b.close();
  });

  it("failover: the active consumer leaves mid-stream; the standby continues from the first unacked message, nothing lost", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const a = await connect(topic, "fo", { type: "failover", consumerName: "zeta" });
    await a.until(() => a.frames.length > 0, "connected");
    // Joined second with a lower-sorting name: on a non-partitioned topic the first joined stays active (apache/pulsar PR #4604).
    const b = await connect(topic, "fo", { type: "failover", consumerName: "alpha" });
    await b.until(() => b.frames.length > 0, "connected");
    expect([a.frames[0], b.frames[0]]).toMatchObject([{ active: true }, { active: false }]);
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4"]);
    const got = await a.waitMessages(5);
    await a.ack([got[0]!.messageId, got[1]!.messageId]);
    expect(b.messages).toHaveLength(0);
    await a.close();
    const rest = await b.waitMessages(3);
    expect(rest.map((m) => [m.value, m.redeliveryCount])).toEqual([
      ["m2", 0],
      ["m3", 0],
      ["m4", 0],
    ]);
    expect(b.frames.some((f) => f.type === "active" && f.active)).toBe(true);
    await b.ack(rest.map((m) => m.messageId));
    expect((await subStats(topic, "fo")).backlog).toBe(0);
    await b.close();
  });

  it("failover on a partitioned topic: per partition, the i mod n-th consumer by name is active (not the first joined)", async () => {
    const topic = randomTopic();
    await createTopic(topic, 2);
    const q = { type: "failover" };
    const b0 = await connect(topic, "fo", { ...q, consumerName: "b" }, 0);
    const b1 = await connect(topic, "fo", { ...q, consumerName: "b" }, 1);
    await b0.until(() => b0.frames.length > 0, "connected");
    await b1.until(() => b1.frames.length > 0, "connected");
    const a0 = await connect(topic, "fo", { ...q, consumerName: "a" }, 0);
    const a1 = await connect(topic, "fo", { ...q, consumerName: "a" }, 1);
    await a0.until(() => a0.frames.length > 0, "connected");
    await a1.until(() => a1.frames.length > 0, "connected");
    // Sorted by name [a, b]: partition 0 -> a, partition 1 -> b (PR #2954).
    await b0.until(() => b0.frames.some((f) => f.type === "active" && !f.active), "b loses partition 0");
    const st = await subStats(topic, "fo");
    const active = st.partitions.map((p) => p.consumers.filter((c) => c.active).length);
    expect(active).toEqual([1, 1]);
    expect([a0.frames[0], a1.frames[0]]).toMatchObject([{ active: true }, { active: false }]);
    for (const c of [a0, a1, b0, b1]) await c.close();
  });

  it("individual acks with holes (0, 2, 3, 5 of 0..5) survive a restart: only 1 and 4, then what follows 5", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4", "m5"]);
    const c = await connect(topic, "s", { type: "exclusive", initialPosition: "earliest" });
    const got = await c.waitMessages(6);
    await c.ack([0, 2, 3, 5].map((i) => got[i]!.messageId));
    await c.close();
    await restart(topic);
    const d = await connect(topic, "s", { type: "exclusive" });
    await d.waitMessages(2);
    await produceValues(topic, ["m6"]);
    await d.waitMessages(3);
    expect(values(d.messages)).toEqual(["m1", "m4", "m6"]);
    await d.close();
  });

  it("delayed delivery is never early, also across a restart; a past deliverAt is immediate", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "shared" });
    await c.until(() => c.frames.length > 0, "connected");
    await produceValues(topic, ["later", "past"], [{ deliverAfterMs: 1500 }, { deliverAt: 1 }]);
    const [first] = await c.waitMessages(1);
    expect(first!.value).toBe("past");
    await c.ack([first!.messageId]);
    await c.close();
    await restart(topic);
    const d = await connect(topic, "s", { type: "shared" });
    const [later] = await d.waitMessages(1);
    const arrived = Date.now();
    const deliverAt = Number(later!.headers.find((h) => h.key === "edgelog-deliver-at")!.value);
    expect(later!.value).toBe("later");
    expect(arrived).toBeGreaterThanOrEqual(deliverAt);
    await d.close();
  });

  it("a hibernated subscription wakes and delivers on the next produce (a new instance answers)", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "exclusive" });
    await c.until(() => c.frames.length > 0, "connected");
    const stub = await partitionStub(topic);
    const before = await runInDurableObject(stub, (o) => o);
    await evictDurableObject(stub); // hibernatable sockets survive, the instance does not
    await produceValues(topic, ["wake"]);
    const [m] = await c.waitMessages(1);
    expect(m!.value).toBe("wake");
    const after = await runInDurableObject(stub, (o) => o);
    expect(after).not.toBe(before);
    await c.ack([m!.messageId]);
    expect((await subStats(topic, "s")).backlog).toBe(0);
    await c.close();
  });
});

describe("hibernation keeps per-socket state", () => {
  it("pull-mode credits granted before a hibernation are used after the wake", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "shared", pullMode: true });
    await c.until(() => c.frames.length > 0, "connected");
    c.send({ type: "permit", permits: 2 });
    await produceValues(topic, ["m0"]);
    const [m0] = await c.waitMessages(1);
    await c.ack([m0!.messageId]); // (an unacked one would be delivered again after the wake)
    await evictDurableObject(await partitionStub(topic));
    await produceValues(topic, ["m1", "m2"]);
    await c.waitMessages(2);
    await sleep(200);
    expect(values(c.messages)).toEqual(["m0", "m1"]); // one credit was left, so exactly one more
    await c.close();
  });
});

describe("subscription admin over HTTP", () => {
  it("create at a position, list, skip, clear backlog, delete (refused while connected unless forced)", async () => {
    const topic = randomTopic();
    await createTopic(topic, 2);
    await produceValues(topic, ["a", "b", "c"], [], 0);
    const created = await json("PUT", `/v1/topics/${topic}/subscriptions/adm`, { type: "shared", initialPosition: "earliest" });
    expect(created.status).toBe(201);
    expect(((await created.json()) as { backlog: number }).backlog).toBe(3);
    expect((await json("PUT", `/v1/topics/${topic}/subscriptions/adm`, {})).status).toBe(200);
    const list = (await (await call(`/v1/topics/${topic}/subscriptions`)).json()) as { subscriptions: { subscription: string; backlog: number; partitions: unknown[] }[] };
    expect(list.subscriptions.map((s) => [s.subscription, s.backlog, s.partitions.length])).toEqual([["adm", 3, 2]]);
    const skipped = (await (await json("POST", `/v1/topics/${topic}/subscriptions/adm/skip`, { count: 2 })).json()) as { skipped: number; backlog: number };
    expect([skipped.skipped, skipped.backlog]).toEqual([2, 1]);
    const cleared = (await (await json("POST", `/v1/topics/${topic}/subscriptions/adm/clear-backlog`, {})).json()) as { cleared: number; backlog: number };
    expect([cleared.cleared, cleared.backlog]).toEqual([1, 0]);
    const c = await connect(topic, "adm", { type: "shared" });
    await c.until(() => c.frames.length > 0, "connected");
    await expectError(await call(`/v1/topics/${topic}/subscriptions/adm`, { method: "DELETE" }), "SUBSCRIPTION_HAS_CONSUMERS", 409);
    expect((await subStats(topic, "adm")).partitions).toHaveLength(2); // the refusal changed nothing
    expect((await call(`/v1/topics/${topic}/subscriptions/adm?force=true`, { method: "DELETE" })).status).toBe(200);
    expect((await c.closed).code).toBe(4001);
    await expectError(await call(`/v1/topics/${topic}/subscriptions/adm`), "SUBSCRIPTION_NOT_FOUND", 404);
    await expectError(await json("POST", `/v1/topics/${topic}/subscriptions/adm/seek`, { messageId: "nope" }), "INVALID_MESSAGE_ID", 400);
  });
});

describe("HTTP pull with leases (shared subscriptions)", () => {
  type Received = { leaseId: string | null; messages: { messageId: string; value: string; redeliveryCount: number }[] };
  const receive = async (topic: string, body: unknown): Promise<Received> => {
    const res = await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/q/receive`, body);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    return JSON.parse(text) as Received;
  };

  it("receive under a lease, ack by lease, an expired lease redelivers with count + 1, an unknown lease is refused", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    expect(await receive(topic, { initialPosition: "earliest" })).toMatchObject({ leaseId: null, messages: [] });
    await produceValues(topic, ["m0", "m1", "m2"]);
    const a = await receive(topic, { maxMessages: 2, visibilityTimeoutMs: 1000 });
    const b = await receive(topic, { maxMessages: 5, visibilityTimeoutMs: 30_000 });
    expect([a.messages.map((m) => m.value), b.messages.map((m) => m.value)]).toEqual([["m0", "m1"], ["m2"]]);
    const ackA = await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/q/leases/${a.leaseId}/ack`, { messageIds: [a.messages[0]!.messageId] });
    expect(await ackA.json()).toEqual({ leaseId: a.leaseId, settled: 1, remaining: 1 });
    // m1's lease expires: it comes back to the next receive with redelivery count 1.
    let again: Received = { leaseId: null, messages: [] };
    for (let i = 0; i < 60 && again.messages.length === 0; i++) {
      await sleep(100);
      again = await receive(topic, { maxMessages: 5 });
    }
    expect(again.messages.map((m) => [m.value, m.redeliveryCount])).toEqual([["m1", 1]]);
    await expectError(await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/q/leases/${a.leaseId}/ack`, {}), "LEASE_NOT_FOUND", 404);
    for (const l of [b, again])
      expect((await (await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/q/leases/${l.leaseId}/ack`, {})).json()) as object).toMatchObject({ settled: 1, remaining: 0 });
    expect((await subStats(topic, "q")).backlog).toBe(0);
    // An exclusive subscription with a consumer refuses a pull consumer.
    const c = await connect(topic, "ex", { type: "exclusive" });
    await c.until(() => c.frames.length > 0, "connected");
    await expectError(await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/ex/receive`, {}), "CONSUMER_BUSY", 409);
    await c.close();
  });
});
