/**
 * Field cases A3, A4, A6, A7 and A8 (shared/field-cases.md: real bugs of Pulsar and its clients)
 * as tests of Edgelog's subscriptions, with their exact expectations, over the native WebSocket
 * API and the admin HTTP API. The Pulsar-WebSocket-compatible parts of A4 belong to the /ws/v2
 * endpoints, which are not built yet.
 */
import { env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { call, createTopic, fetchJson, json, randomTopic } from "./helpers.ts";
import { connect, connectReader, produceValues, sleep, subStats, values } from "./subs-helpers.ts";

async function restart(topic: string): Promise<void> {
  const d = (await (await call(`/v1/topics/${topic}`)).json()) as { topicId: string };
  await evictDurableObject(env.PARTITION.getByName(partitionObjectName(d.topicId, 0)));
}

const offsets = (ms: readonly { offset: number }[]) => ms.map((m) => m.offset);

async function seek(topic: string, sub: string, body: unknown): Promise<{ backlog: number }> {
  const res = await json("POST", `/v1/topics/${topic}/subscriptions/${sub}/seek`, body);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as { backlog: number };
}

describe("A3: a restart keeps ack holes, the backlog and redelivery counts", () => {
  it("part 1: exclusive, ack 0, 1, 3, 4, 7 of 0..9; after a restart exactly 2, 5, 6, 8, 9", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(
      topic,
      Array.from({ length: 10 }, (_, i) => `m${i}`),
    );
    const c = await connect(topic, "s", { type: "exclusive", initialPosition: "earliest" });
    const got = await c.waitMessages(10);
    await c.ack([0, 1, 3, 4, 7].map((i) => got[i]!.messageId));
    let st = await subStats(topic, "s");
    expect([st.partitions[0]!.markDeletePosition, st.partitions[0]!.ackedRanges, st.backlog]).toEqual([
      1,
      [
        [3, 4],
        [7, 7],
      ],
      5,
    ]);
    await c.close();
    await restart(topic);
    const d = await connect(topic, "s", { type: "exclusive" });
    await d.waitMessages(5);
    await sleep(200);
    expect(offsets(d.messages)).toEqual([2, 5, 6, 8, 9]);
    await d.ack([d.messages[0]!.messageId]);
    st = await subStats(topic, "s");
    expect([st.partitions[0]!.markDeletePosition, st.partitions[0]!.ackedRanges, st.backlog]).toEqual([4, [[7, 7]], 4]);
    await d.ack([d.messages[1]!.messageId, d.messages[2]!.messageId]);
    st = await subStats(topic, "s");
    expect([st.partitions[0]!.markDeletePosition, st.partitions[0]!.ackedRanges, st.backlog]).toEqual([7, [], 2]);
    await d.close();
  });

  it("part 2: shared, maxRedeliverCount 2, nack delay 500 ms: the count survives a restart (0, 1, [restart], 2, then one DLQ copy)", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const q = { type: "shared", maxRedeliverCount: 2, negativeAckRedeliveryDelayMs: 500 };
    const c = await connect(topic, "s", q);
    await c.until(() => c.frames.length > 0, "connected");
    await produceValues(topic, ["m0"]);
    const [first] = await c.waitMessages(1);
    await c.nack([first!.messageId]);
    const [, second] = await c.waitMessages(2);
    await c.nack([second!.messageId]);
    await c.close();
    await restart(topic);
    const d = await connect(topic, "s", q);
    const [third] = await d.waitMessages(1);
    expect([...c.messages, ...d.messages].map((m) => [m.value, m.redeliveryCount])).toEqual([
      ["m0", 0],
      ["m0", 1],
      ["m0", 2],
    ]);
    await d.nack([third!.messageId]);
    for (let i = 0; i < 100 && (await subStats(topic, "s")).deadLetteredTotal < 1; i++) await sleep(50);
    expect((await fetchJson(`${topic}-s-DLQ`, 0, "offset=0")).records.map((r) => r.value)).toEqual(["m0"]);
    await sleep(600);
    expect(d.messages).toHaveLength(1);
    await d.close();
  });
});

describe("A4: reader start positions", () => {
  it("latest, latest inclusive, by id (exclusive and inclusive), earliest; latest inclusive on an empty topic", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const empty = await connectReader(topic, { start: "latest", inclusive: true });
    await empty.until(() => empty.frames.length > 0, "reader frame");
    expect(empty.frames[0]).toEqual({ type: "reader", partition: 0, startOffset: 0 });
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4"]);
    expect(offsets(await empty.waitMessages(5))).toEqual([0, 1, 2, 3, 4]);
    const id2 = "0000:0000000000000002";
    const readers = {
      latest: await connectReader(topic, {}),
      latestInclusive: await connectReader(topic, { start: "latest", inclusive: true }),
      byId: await connectReader(topic, { start: id2 }),
      byIdInclusive: await connectReader(topic, { start: id2, inclusive: true }),
      earliest: await connectReader(topic, { start: "earliest" }),
      earliestInclusive: await connectReader(topic, { start: "earliest", inclusive: true }),
    };
    await readers.earliest.waitMessages(5);
    await sleep(200);
    expect(readers.latest.messages).toEqual([]);
    await produceValues(topic, ["m5"]);
    await readers.latest.waitMessages(1);
    await readers.latestInclusive.waitMessages(2);
    const firsts = Object.fromEntries(Object.entries(readers).map(([k, r]) => [k, r.messages[0]?.value]));
    expect(firsts).toEqual({ latest: "m5", latestInclusive: "m4", byId: "m3", byIdInclusive: "m2", earliest: "m0", earliestInclusive: "m0" });
    expect(values(readers.latestInclusive.messages)).toEqual(["m4", "m5"]);
    for (const r of [empty, ...Object.values(readers)]) await r.close();
  });
});

describe("A6: nack delay without a dead-letter topic", () => {
  it("negativeAckRedeliveryDelayMs=200 applies without maxRedeliverCount: m0 comes back with the same id and count 1", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "shared", negativeAckRedeliveryDelayMs: 200 });
    await c.until(() => c.frames.length > 0, "connected");
    await produceValues(topic, ["m0"]);
    const [m0] = await c.waitMessages(1);
    expect(m0!.redeliveryCount).toBe(0);
    c.send({ type: "nack", messageId: m0!.messageId });
    const [, again] = await c.waitMessages(2, 5000); // well before Pulsar's 60 s default
    expect([again!.messageId, again!.redeliveryCount]).toEqual([m0!.messageId, 1]);
    await c.close();
  });
});

describe("A7: pull mode and the push-mode limit", () => {
  it("pull mode: permits bound delivery; acks on another connection count; a close redelivers nothing never delivered", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "shared", pullMode: true });
    await c.until(() => c.frames.length > 0, "connected");
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4"]);
    await sleep(300);
    expect(c.messages).toEqual([]);
    c.send({ type: "permit", permits: 1 });
    await c.waitMessages(1);
    await sleep(200);
    expect(values(c.messages)).toEqual(["m0"]);
    c.send({ type: "permit", permits: 2 });
    await c.waitMessages(3);
    await sleep(300);
    expect(values(c.messages)).toEqual(["m0", "m1", "m2"]);
    const other = await connect(topic, "s", { type: "shared", pullMode: true });
    await other.until(() => other.frames.length > 0, "connected");
    expect(await other.ack(c.messages.map((m) => m.messageId))).toBe(3);
    expect((await subStats(topic, "s")).backlog).toBe(2);
    await c.close();
    await sleep(200);
    expect(other.messages).toEqual([]);
    expect((await subStats(topic, "s")).backlog).toBe(2);
    await other.close();
  });

  it("push mode: receiverQueueSize=3 delivers exactly m0..m2; acking m0 lets exactly m3 through", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const c = await connect(topic, "s", { type: "shared", receiverQueueSize: 3 });
    await c.until(() => c.frames.length > 0, "connected");
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4"]);
    await c.waitMessages(3);
    await sleep(300);
    expect(values(c.messages)).toEqual(["m0", "m1", "m2"]);
    await c.ack([c.messages[0]!.messageId]);
    await c.waitMessages(4);
    await sleep(200);
    expect(values(c.messages)).toEqual(["m0", "m1", "m2", "m3"]);
    await c.close();
  });
});

describe("A8: seek (reset cursor) by timestamp", () => {
  const ts = (list: number[]) => list.map((timestamp) => ({ timestamp }));

  it("scenario 1: seek(250) -> m2, m3, m4 with backlog 3; seek(300) -> m2 first; seek(600) -> backlog 0, then m5", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4"], ts([100, 200, 300, 400, 500]));
    const c = await connect(topic, "s", { type: "exclusive", initialPosition: "earliest" });
    const all = await c.waitMessages(5);
    await c.ack(all.map((m) => m.messageId));
    // A seek closes the connected consumers (4002); they resume from the new position.
    expect((await seek(topic, "s", { timestamp: 250 })).backlog).toBe(3);
    expect((await c.closed).code).toBe(4002);
    let d = await connect(topic, "s", { type: "exclusive" });
    expect(values(await d.waitMessages(3))).toEqual(["m2", "m3", "m4"]);
    await d.close();
    await seek(topic, "s", { timestamp: 300 });
    d = await connect(topic, "s", { type: "exclusive" });
    expect((await d.waitMessages(1))[0]!.value).toBe("m2");
    await d.close();
    expect((await seek(topic, "s", { timestamp: 600 })).backlog).toBe(0);
    d = await connect(topic, "s", { type: "exclusive" });
    await d.until(() => d.frames.length > 0, "connected");
    await sleep(200);
    expect(d.messages).toEqual([]);
    await produceValues(topic, ["m5"]);
    expect(values(await d.waitMessages(1))).toEqual(["m5"]);
    await d.close();
  });

  it("scenario 2: non-monotonic timestamps 2, 1, 3, 5, 4, 6: seek(4) delivers offsets 3, 4, 5 (not 0)", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["a", "b", "c", "d", "e", "f"], ts([2, 1, 3, 5, 4, 6]));
    await json("PUT", `/v1/topics/${topic}/subscriptions/s`, { type: "exclusive", initialPosition: "latest" });
    await seek(topic, "s", { timestamp: 4 });
    const d = await connect(topic, "s", { type: "exclusive" });
    await d.waitMessages(3);
    await sleep(200);
    expect(offsets(d.messages)).toEqual([3, 4, 5]);
    await d.close();
  });

  it("scenario 3: with ack holes (only 0 and 2 acked), seek(350) delivers 3 and 4 only, backlog 2", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4"], ts([100, 200, 300, 400, 500]));
    const c = await connect(topic, "s", { type: "exclusive", initialPosition: "earliest" });
    const all = await c.waitMessages(5);
    await c.ack([all[0]!.messageId, all[2]!.messageId]);
    await c.close();
    expect((await seek(topic, "s", { timestamp: 350 })).backlog).toBe(2);
    const d = await connect(topic, "s", { type: "exclusive" });
    await d.waitMessages(2);
    await sleep(200);
    expect(offsets(d.messages)).toEqual([3, 4]);
    await d.close();
  });
});
