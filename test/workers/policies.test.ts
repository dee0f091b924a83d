/**
 * Namespace and topic policies enforced end to end (issue 17, docs/TENANTS.md "What each policy
 * promises") through the real gateway, MetadataDO and the partition objects: the backlog quota
 * and its three actions, message TTL, publish and dispatch rates, and the three count limits.
 * Every refusal is checked to change nothing (log end, subscriptions, consumers, producer state).
 * No timing thresholds: waits are upper bounds on behaviour, never measurements.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TopicConfigs } from "../../src/protocol/types.ts";
import type { SubscriptionInfo } from "../../src/subscriptions/rpc.ts";
import { call, describe as describeTopic, expectError, highWatermarks, json, partitionObject } from "./helpers.ts";
import { connect, sleep, values } from "./subs-helpers.ts";

const uid = (): string => crypto.randomUUID().slice(0, 8);

async function ok<T>(res: Response, status = 200): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return (text === "" ? null : JSON.parse(text)) as T;
}

/** A fresh tenant and namespace (with initial policies), and a one-partition topic in it. */
async function topicIn(policies?: Record<string, unknown>, topicPolicies?: Record<string, unknown>): Promise<{ ns: string; topic: string }> {
  const tenant = `pt-${uid()}`;
  await ok(await json("PUT", `/v1/tenants/${tenant}`, {}), 201);
  await ok(await json("PUT", `/v1/namespaces/${tenant}/ns`, policies === undefined ? {} : { policies }), 201);
  const topic = `${tenant}/ns/t-${uid()}`;
  await ok(await json("POST", "/v1/topics", { name: topic, partitions: 1, ...(topicPolicies === undefined ? {} : { policies: topicPolicies }) }), 201);
  return { ns: `${tenant}/ns`, topic };
}

/** POST one request of records with `valueBytes`-byte values to partition 0. */
function produceRaw(topic: string, count = 1, valueBytes = 400, extra: Record<string, unknown> = {}): Promise<Response> {
  return json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: Array.from({ length: count }, (_, i) => ({ value: `${i}`.padEnd(valueBytes, "x") })), ...extra });
}

async function stats(topic: string, sub: string): Promise<{ backlog: number; backlogBytes: number; consumers: number; partitions: SubscriptionInfo[] }> {
  return ok(await call(`/v1/topics/${topic}/subscriptions/${sub}`));
}

async function eventually(pred: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const hw = async (topic: string): Promise<number> => (await highWatermarks(topic))[0]!;

/** Partition 0's produce refusals by code, from its metrics (counted since the object started). */
async function produceErrors(topic: string): Promise<Record<string, number>> {
  const r = await partitionObject((await describeTopic(topic)).topicId).metrics();
  if (!r.ok) throw new Error(r.code);
  return r.metrics.produceErrors;
}

describe("backlog quota", () => {
  it("producer_exception refuses produce once the backlog exceeds the limit, and accepts again after acks", async () => {
    const { ns, topic } = await topicIn();
    // Without subscriptions there is no backlog (Pulsar: no cursor, no backlog): nothing is refused.
    await ok(await json("PUT", `/v1/namespaces/${ns}/policies/backlogQuota`, { limitBytes: 1000, action: "producer_exception" }));
    for (let i = 0; i < 5; i++) await ok(await produceRaw(topic));
    // A subscription at the log end: the backlog starts at 0 and grows with each produce.
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/s`, { position: "latest" }), 201);
    const start = await hw(topic);
    // An idempotent producer: its sequence shows that a refusal leaves no producer state.
    const { producerId } = await ok<{ producerId: number }>(await call("/v1/producers", { method: "POST" }));
    const send = (baseSequence: number) => produceRaw(topic, 1, 400, { producerId, producerEpoch: 0, baseSequence });
    let accepted = 0;
    let refused: Response | null = null;
    for (let i = 0; i < 10 && refused === null; i++) {
      const res = await send(accepted);
      if (res.status === 200) accepted++;
      else refused = res;
    }
    expect(refused, "a produce was refused").not.toBeNull();
    // 400-byte values make ~470-byte batches: three fit under 1000 bytes, the third takes the backlog over.
    expect(accepted).toBe(3);
    const e = await expectError(refused!, "BACKLOG_QUOTA_EXCEEDED", 409);
    expect(e.retriable).toBe(false);
    expect(e.details).toMatchObject({ limitBytes: 1000 });
    expect(e.details!.backlogBytes as number).toBeGreaterThan(1000);
    // The refusal wrote nothing, and it is steady while nobody acknowledges.
    expect(await hw(topic)).toBe(start + 3);
    await expectError(await send(3), "BACKLOG_QUOTA_EXCEEDED", 409);
    await expectError(await produceRaw(topic), "BACKLOG_QUOTA_EXCEEDED", 409);
    expect(await hw(topic)).toBe(start + 3);
    expect((await produceErrors(topic)).BACKLOG_QUOTA_EXCEEDED).toBe(3);
    // A consumer acks everything: the mark-delete position reaches the log end, produce is accepted again.
    const c = await connect(topic, "s");
    const got = await c.waitMessages(3);
    expect(got.map((m) => m.offset)).toEqual([start, start + 1, start + 2]);
    expect(await c.ack(got.map((m) => m.messageId))).toBe(3);
    // The producer goes on with sequence 3 (its refused requests advanced nothing), at the next offset.
    const after = await ok<{ records: { offset: number }[] }>(await send(3));
    expect(after.records[0]!.offset).toBe(start + 3);
    await c.close();
  });

  it("producer_request_hold: a produce waits while the backlog is over the limit and succeeds after acks; it times out with a retriable code otherwise", async () => {
    const { topic } = await topicIn({ backlogQuota: { limitBytes: 500, action: "producer_request_hold" } });
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/s`, { position: "latest" }), 201);
    await ok(await produceRaw(topic, 2)); // ~900 bytes: over the limit
    // Held: no answer until the backlog falls, then written.
    let settled = false;
    const held = produceRaw(topic).then((r) => {
      settled = true;
      return r;
    });
    await sleep(500);
    expect(settled, "the produce is held").toBe(false);
    expect(await hw(topic)).toBe(2);
    const c = await connect(topic, "s");
    const got = await c.waitMessages(2);
    await c.ack(got.map((m) => m.messageId));
    const res = await ok<{ records: { offset: number }[] }>(await held);
    expect(res.records[0]!.offset).toBe(2);
    await c.close();
    // Nobody acks now (backlog ~470 + ~900 after one more): a held produce times out (3 s in this tier), writing nothing.
    await ok(await produceRaw(topic, 2));
    const before = await hw(topic);
    const e = await expectError(await produceRaw(topic), "BACKLOG_QUOTA_HOLD_TIMEOUT", 503);
    expect(e.retriable).toBe(true);
    expect(e.details).toMatchObject({ limitBytes: 500, holdTimeoutMs: 3000 });
    expect(await hw(topic)).toBe(before);
    expect((await produceErrors(topic)).BACKLOG_QUOTA_HOLD_TIMEOUT).toBe(1);
  });

  it("consumer_backlog_eviction: the slowest subscription's oldest messages are dropped until the backlog fits; produce is never refused", async () => {
    const { topic } = await topicIn({ backlogQuota: { limitBytes: 1000, action: "consumer_backlog_eviction" } });
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/slow`, { position: "earliest" }), 201);
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/fast`, { position: "earliest" }), 201);
    const fast = await connect(topic, "fast");
    for (let i = 0; i < 6; i++) await ok(await produceRaw(topic));
    // The fast subscription acks everything as it comes: only `slow` holds a backlog.
    const got = await fast.waitMessages(6);
    await fast.ack(got.map((m) => m.messageId));
    await eventually(async () => (await stats(topic, "slow")).backlogBytes <= 1000, "the eviction");
    const slow = (await stats(topic, "slow")).partitions[0]!;
    // Whole batches of ~470 bytes: two are kept (~940 <= 1000), the four oldest were dropped.
    expect(slow.markDeletePosition).toBe(3);
    expect(slow.backlog).toBe(2);
    const fastInfo = (await stats(topic, "fast")).partitions[0]!;
    expect(fastInfo.markDeletePosition).toBe(5);
    // The kept messages are delivered to the slow subscription, from offset 4.
    const c = await connect(topic, "slow");
    expect((await c.waitMessages(2)).map((m) => m.offset)).toEqual([4, 5]);
    await c.close();
    await fast.close();
  });
});

describe("message TTL", () => {
  it("messages older than the TTL are acknowledged for the subscriptions that have not consumed them; younger ones wait for their TTL", async () => {
    const { topic } = await topicIn({ messageTtlSeconds: 5 });
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/s`, { position: "earliest" }), 201);
    const old = Date.now() - 60_000;
    await ok(await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [0, 1, 2].map((i) => ({ value: `old-${i}`, timestamp: old })) }));
    await eventually(async () => (await stats(topic, "s")).partitions[0]!.markDeletePosition === 2, "the old messages to expire");
    expect((await stats(topic, "s")).backlog).toBe(0);
    // A fresh message is not expired at once (5 s TTL), then it is.
    await ok(await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "fresh" }] }));
    expect((await stats(topic, "s")).backlog).toBe(1);
    await eventually(async () => (await stats(topic, "s")).backlog === 0, "the fresh message to expire", 20_000);
    expect((await stats(topic, "s")).partitions[0]!.markDeletePosition).toBe(3);
    // Nothing left to deliver: a consumer gets no message.
    const c = await connect(topic, "s");
    await sleep(300);
    expect(c.messages).toEqual([]);
    await c.close();
  });
});

describe("message TTL on a new subscription", () => {
  it("a subscription created at the earliest position over old messages has them expired without a further produce", async () => {
    const { topic } = await topicIn({ messageTtlSeconds: 2 });
    const old = Date.now() - 60_000;
    await ok(await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [0, 1].map((i) => ({ value: `old-${i}`, timestamp: old })) }));
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/late`, { position: "earliest" }), 201);
    await eventually(async () => (await stats(topic, "late")).partitions[0]!.markDeletePosition === 1, "the old messages to expire");
    expect((await stats(topic, "late")).backlog).toBe(0);
  });
});

describe("rates", () => {
  it("publish rate: over the limit a produce is THROTTLED with throttleTimeMs and Retry-After, writing nothing; after the wait it is accepted", async () => {
    // A topic-level override of the namespace's (unlimited) rate.
    const { topic } = await topicIn(undefined, { publishRate: { messagesPerSecond: 2 } });
    let refused: Response | null = null;
    for (let i = 0; i < 20 && refused === null; i++) {
      const res = await produceRaw(topic, 1, 10);
      if (res.status !== 200) refused = res;
    }
    expect(refused, "a produce was throttled").not.toBeNull();
    const retryAfter = refused!.headers.get("retry-after");
    const e = await expectError(refused!, "THROTTLED", 429);
    expect(e.retriable).toBe(true);
    expect(e.details!.policy).toBe("publishRate");
    const waitMs = e.details!.throttleTimeMs as number;
    expect(waitMs).toBeGreaterThan(0);
    expect(retryAfter).toBe(String(Math.max(1, Math.ceil(waitMs / 1000))));
    const before = await hw(topic);
    await sleep(waitMs + 50);
    expect(await hw(topic)).toBe(before);
    await ok(await produceRaw(topic, 1, 10));
    expect(await hw(topic)).toBe(before + 1);
  });

  it("dispatch rate: the subscription's push follows the rate (at most a second's worth per frame), and every message arrives, in order", async () => {
    const { topic } = await topicIn({ dispatchRate: { messagesPerSecond: 5 } });
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/s`, { position: "earliest" }), 201);
    const sent = Array.from({ length: 15 }, (_, i) => `m${i}`);
    await ok(await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: sent.map((value) => ({ value })) }));
    const c = await connect(topic, "s");
    const got = await c.waitMessages(15, 20_000);
    expect(values(got)).toEqual(sent);
    const sizes = c.frames.filter((f) => f.type === "messages").map((f) => (f as { messages: unknown[] }).messages.length);
    // The bucket holds one second's worth (5): the first frame carries 5, none carries more, so
    // the 15 messages took at least three frames.
    expect(sizes[0]).toBe(5);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(5);
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    await c.close();
  });
});

describe("dispatch rate in bytes", () => {
  it("a bytes/s limit spreads the push over time; every message arrives, in order", async () => {
    const { topic } = await topicIn({ dispatchRate: { bytesPerSecond: 500 } });
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/s`, { position: "earliest" }), 201);
    const sent = Array.from({ length: 20 }, (_, i) => `${i}`.padEnd(100, "."));
    await ok(await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: sent.map((value) => ({ value })) }));
    const c = await connect(topic, "s");
    const got = await c.waitMessages(20, 20_000);
    expect(values(got)).toEqual(sent);
    const sizes = c.frames.filter((f) => f.type === "messages").map((f) => (f as { messages: unknown[] }).messages.length);
    // 2,000 bytes at 500 B/s: the first frame carries one message (no size known yet), no frame
    // more than a second's worth plus one message.
    expect(sizes[0]).toBe(1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(6);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(20);
    await c.close();
  });
});

describe("count limits", () => {
  it("maxSubscriptionsPerTopic: a subscription past the limit is refused (admin create, consumer socket, HTTP pull) and none is created", async () => {
    const { topic } = await topicIn({ maxSubscriptionsPerTopic: 1 });
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/a`, {}), 201);
    const e = await expectError(await json("PUT", `/v1/topics/${topic}/subscriptions/b`, {}), "MAX_SUBSCRIPTIONS_REACHED", 409);
    expect(e.details).toMatchObject({ maxSubscriptionsPerTopic: 1, subscriptions: 1 });
    const up = await call(`/v1/topics/${topic}/partitions/0/subscriptions/c/ws`, { headers: { upgrade: "websocket" } });
    await expectError(up, "MAX_SUBSCRIPTIONS_REACHED", 409);
    await expectError(await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/d/receive`, { max: 1 }), "MAX_SUBSCRIPTIONS_REACHED", 409);
    const list = await ok<{ subscriptions: { subscription: string }[] }>(await call(`/v1/topics/${topic}/subscriptions`));
    expect(list.subscriptions.map((s) => s.subscription)).toEqual(["a"]);
    // An existing subscription is still usable.
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/a`, {}), 200);
  });

  it("maxConsumersPerSubscription: a consumer past the limit is refused and the subscription keeps its consumers", async () => {
    const { topic } = await topicIn({ maxConsumersPerSubscription: 1 });
    const first = await connect(topic, "s", { subscriptionType: "shared" });
    await first.until(() => first.frames.some((f) => f.type === "connected"), "connected");
    const up = await call(`/v1/topics/${topic}/partitions/0/subscriptions/s/ws?subscriptionType=shared`, { headers: { upgrade: "websocket" } });
    const e = await expectError(up, "MAX_CONSUMERS_REACHED", 409);
    expect(e.details).toMatchObject({ maxConsumersPerSubscription: 1, consumers: 1 });
    await expectError(await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/s/receive`, { max: 1 }), "MAX_CONSUMERS_REACHED", 409);
    expect((await stats(topic, "s")).consumers).toBe(1);
    // The one consumer still receives.
    await ok(await produceRaw(topic, 1, 5));
    expect((await first.waitMessages(1))[0]!.offset).toBe(0);
    await first.close();
  });

  it("maxProducersPerTopic: a new idempotent producer id past the limit is refused; known producers and plain produce go on", async () => {
    const { topic } = await topicIn({ maxProducersPerTopic: 1 });
    const pid = async (): Promise<number> => (await ok<{ producerId: number }>(await call("/v1/producers", { method: "POST" }))).producerId;
    const a = await pid();
    const b = await pid();
    const send = (producerId: number, baseSequence: number) =>
      json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "v" }], producerId, producerEpoch: 0, baseSequence });
    await ok(await send(a, 0));
    const e = await expectError(await send(b, 0), "MAX_PRODUCERS_REACHED", 409);
    expect(e.details).toMatchObject({ maxProducersPerTopic: 1, producers: 1 });
    expect(await hw(topic)).toBe(1);
    // Producer a continues with its next sequence, and produce without a producer id is not counted.
    await ok(await send(a, 1));
    await ok(await produceRaw(topic, 1, 5));
    expect(await hw(topic)).toBe(3);
    // b's refusal left no producer state: once the limit allows it, b starts at sequence 0.
    await ok(await json("PATCH", `/v1/topics/${topic}`, { policies: { maxProducersPerTopic: 2 } }));
    await ok(await send(b, 0));
    expect(await hw(topic)).toBe(4);
  });
});

describe("policy changes and bad values", () => {
  it("a namespace policy change reaches existing partitions at once; a bad value is refused with INVALID_POLICY and changes no enforcement", async () => {
    const { ns, topic } = await topicIn({ maxSubscriptionsPerTopic: 1 });
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/a`, {}), 201);
    await expectError(await json("PUT", `/v1/topics/${topic}/subscriptions/b`, {}), "MAX_SUBSCRIPTIONS_REACHED", 409);
    for (const [policy, value] of [
      ["maxSubscriptionsPerTopic", -1],
      ["maxSubscriptionsPerTopic", 1.5],
      ["backlogQuota", { limitBytes: 0, action: "producer_exception" }],
      ["backlogQuota", { limitBytes: 100, action: "drop_oldest" }],
      ["publishRate", { messagesPerSecond: 0 }],
      ["dispatchRate", { bytesPerSecond: "10" }],
      ["messageTtlSeconds", -5],
    ] as const) {
      const e = await expectError(await json("PUT", `/v1/namespaces/${ns}/policies/${policy}`, value), "INVALID_POLICY", 400);
      expect(e.details!.policy).toBe(policy);
    }
    // Still limited to one: nothing of the refused changes was stored or pushed.
    await expectError(await json("PUT", `/v1/topics/${topic}/subscriptions/b`, {}), "MAX_SUBSCRIPTIONS_REACHED", 409);
    // Raised: the partition enforces the new value at once (pushed with the namespace change).
    await ok(await json("PUT", `/v1/namespaces/${ns}/policies/maxSubscriptionsPerTopic`, 2));
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/b`, {}), 201);
    await expectError(await json("PUT", `/v1/topics/${topic}/subscriptions/c`, {}), "MAX_SUBSCRIPTIONS_REACHED", 409);
    // A topic override wins over the namespace.
    await ok(await json("PATCH", `/v1/topics/${topic}`, { policies: { maxSubscriptionsPerTopic: 0 } }));
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/c`, {}), 201);
  });

  it("bounded staleness: a partition that missed a push takes the metadata store's policies at its first activity after a restart", async () => {
    const { topic } = await topicIn({ maxSubscriptionsPerTopic: 1 });
    const { topicId } = await describeTopic(topic);
    const stub = partitionObject(topicId) as unknown as DurableObjectStub;
    const configsOf = () =>
      runInDurableObject(stub, (_i, state) => JSON.parse(state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'configs'").one().value) as TopicConfigs);
    // Simulate a push that never arrived: the partition holds an older policy (no limit).
    const fresh = await configsOf();
    expect(fresh.policies?.maxSubscriptionsPerTopic).toBe(1);
    expect((await partitionObject(topicId).updateConfigs({ ...fresh, policies: { ...fresh.policies!, maxSubscriptionsPerTopic: 0 } })).ok).toBe(true);
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/a`, {}), 201);
    await ok(await json("PUT", `/v1/topics/${topic}/subscriptions/b`, {}), 201);
    // The object restarts; its first produce compares its configs with the metadata store's.
    await evictDurableObject(stub);
    await ok(await produceRaw(topic, 1, 5));
    await eventually(async () => (await configsOf()).policies?.maxSubscriptionsPerTopic === 1, "the refreshed policies");
    await expectError(await json("PUT", `/v1/topics/${topic}/subscriptions/c`, {}), "MAX_SUBSCRIPTIONS_REACHED", 409);
  });
});
