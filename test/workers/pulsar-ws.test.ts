/**
 * Pulsar's WebSocket API through the real gateway (issue 17; docs/PROTOCOL.md "Pulsar WebSocket
 * API"): plain WebSocket clients sending exactly the frames of Pulsar's documentation
 * ("client-libraries-websocket": the producer, consumer and reader examples), a 4-partition
 * topic fanned in on one socket, nack redelivery, pull mode (field case A7), the push window
 * across partitions, readers (field case A4) and bad input. Counts and orders are asserted;
 * "nothing more arrives" waits a short while and checks the count (no timing thresholds).
 */
import { describe, expect, it } from "vitest";
import { call, createTopic, expectError, fetchJson, randomTopic } from "./helpers.ts";
import { sleep, subStats, watchSocket } from "./subs-helpers.ts";

interface PulsarClient {
  ws: WebSocket;
  frames: Record<string, unknown>[];
  /** Frames that carry a message (`payload`). */
  messages(): Record<string, unknown>[];
  until(pred: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  send(frame: unknown): void;
  sendText(text: string): void;
  closed: Promise<CloseEvent>;
  close(): Promise<CloseEvent>;
}

async function open(path: string): Promise<PulsarClient> {
  const res = await call(path, { headers: { upgrade: "websocket" } });
  if (res.status !== 101) throw new Error(`upgrade refused ${res.status}: ${await res.text()}`);
  const ws = res.webSocket as WebSocket;
  const { frames, closed, until } = watchSocket<Record<string, unknown>>(ws);
  return {
    ws,
    frames,
    messages: () => frames.filter((f) => "payload" in f),
    until,
    send: (f) => ws.send(JSON.stringify(f)),
    sendText: (t) => ws.send(t),
    closed,
    async close() {
      ws.close(1000, "done");
      return closed;
    },
  };
}

const producerPath = (t: string) => `/ws/v2/producer/persistent/${t}`;
const consumerPath = (t: string, sub: string, q = "") => `/ws/v2/consumer/persistent/${t}/${sub}${q}`;
const readerPath = (t: string, q = "") => `/ws/v2/reader/persistent/${t}${q}`;
const b64 = (s: string) => btoa(s);
const unb64 = (s: unknown) => atob(s as string);

/** A fresh topic `public/default/<name>` with `partitions` partitions; returns its `tenant/namespace/topic` path. */
async function pulsarTopic(partitions = 1): Promise<string> {
  const name = randomTopic("my-topic");
  await createTopic(`public/default/${name}`, partitions);
  return `public/default/${name}`;
}

/** Sends messages on a Pulsar producer socket and waits for every receipt; returns them in order. */
async function produce(p: PulsarClient, msgs: Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
  const before = p.frames.length;
  for (const m of msgs) p.send(m);
  await p.until(() => p.frames.length >= before + msgs.length, `${msgs.length} receipts`);
  return p.frames.slice(before, before + msgs.length);
}

/** The native `pppp:oooooooooooooooo` id behind a Pulsar id. */
const nativeId = (id: unknown) => atob(id as string);
const partitionOf = (id: unknown) => Number(nativeId(id).slice(0, 4));
const offsetOf = (id: unknown) => Number(nativeId(id).slice(5));

describe("Pulsar's documented example exchange", () => {
  it("producer example -> consumer example receives and acks -> reader example reads", async () => {
    const t = await pulsarTopic();
    // The consumer and reader examples connect without options: Exclusive, latest.
    const consumer = await open(consumerPath(t, "my-sub"));
    const reader = await open(readerPath(t));
    const producer = await open(producerPath(t));

    // Exactly the documented "Publish a message" frame (and the Node.js example's message).
    producer.sendText(JSON.stringify({ payload: "SGVsbG8gV29ybGQ=", properties: { key1: "value1", key2: "value2" }, context: "1" }));
    await producer.until(() => producer.frames.length === 1, "the receipt");
    const receipt = producer.frames[0]!;
    expect(receipt).toEqual({ result: "ok", messageId: expect.any(String), context: "1" });
    // The Python example sends its context as a number; the receipt echoes it as text (Pulsar's context is a string).
    producer.sendText(JSON.stringify({ payload: b64("Hello World"), properties: { key1: "value1", key2: "value2" }, context: 5 }));
    await producer.until(() => producer.frames.length === 2, "the second receipt");
    expect(producer.frames[1]).toEqual({ result: "ok", messageId: expect.any(String), context: "5" });

    await consumer.until(() => consumer.messages().length === 2, "2 messages at the consumer");
    const [m0, m1] = consumer.messages();
    expect(m0).toEqual({
      messageId: receipt.messageId,
      payload: "SGVsbG8gV29ybGQ=",
      properties: { key1: "value1", key2: "value2" },
      publishTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      redeliveryCount: 0,
    });
    expect(unb64(m0!.payload)).toBe("Hello World");
    expect(m1!.messageId).toBe(producer.frames[1]!.messageId);
    // The consumer example's ack, for each message.
    for (const m of [m0!, m1!]) consumer.sendText(JSON.stringify({ messageId: m.messageId }));

    await reader.until(() => reader.messages().length === 2, "2 messages at the reader");
    expect(reader.messages().map((m) => [m.messageId, m.payload, m.redeliveryCount])).toEqual([
      [receipt.messageId, "SGVsbG8gV29ybGQ=", 0],
      [producer.frames[1]!.messageId, "SGVsbG8gV29ybGQ=", 0],
    ]);
    for (const m of reader.messages()) reader.sendText(JSON.stringify({ messageId: m.messageId }));

    // The acks are durable: the subscription's backlog drains to 0 (acks commit in batches of 100 ms).
    for (let i = 0; i < 50 && (await subStats(t, "my-sub")).backlog !== 0; i++) await sleep(100);
    const st = await subStats(t, "my-sub");
    expect([st.backlog, st.partitions[0]!.markDeletePosition]).toEqual([0, 1]);
    // isEndOfTopic: Edgelog topics are never terminated.
    consumer.send({ type: "isEndOfTopic" });
    await consumer.until(() => consumer.frames.some((f) => "endOfTopic" in f), "endOfTopic");
    expect(consumer.frames.find((f) => "endOfTopic" in f)).toEqual({ endOfTopic: false });
    // Nothing else was sent to the consumer (no acks receipts, no native frames).
    expect(consumer.frames.length).toBe(3);
    await Promise.all([consumer.close(), reader.close(), producer.close()]);
  });
});

describe("a 4-partition topic on one socket", () => {
  it("delivers every partition, in per-partition order; acked messages are not redelivered after a reconnect", async () => {
    const t = await pulsarTopic(4);
    const consumer = await open(consumerPath(t, "fan", "?subscriptionType=Exclusive"));
    const producer = await open(producerPath(t));
    const msgs = Array.from({ length: 40 }, (_, i) => ({ payload: b64(`m${i}`), key: `k${i % 8}`, context: `c${i}` }));
    const receipts = await produce(producer, msgs);
    expect(receipts.map((r) => [r.result, r.context])).toEqual(msgs.map((m) => ["ok", m.context]));
    // Keys spread over the partitions (Kafka's murmur2 partitioner).
    expect(new Set(receipts.map((r) => partitionOf(r.messageId))).size).toBeGreaterThan(1);

    await consumer.until(() => consumer.messages().length === 40, "40 messages");
    const got = consumer.messages();
    expect(new Set(got.map((m) => m.messageId))).toEqual(new Set(receipts.map((r) => r.messageId)));
    for (let p = 0; p < 4; p++) {
      const offsets = got.filter((m) => partitionOf(m.messageId) === p).map((m) => offsetOf(m.messageId));
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    }
    // Per key, the order of production.
    for (let k = 0; k < 8; k++) {
      const order = got.filter((m) => m.key === `k${k}`).map((m) => unb64(m.payload));
      expect(order).toEqual(msgs.filter((_, i) => i % 8 === k).map((_, j) => `m${k + 8 * j}`));
    }
    for (const m of got) consumer.send({ messageId: m.messageId });
    for (let i = 0; i < 50 && (await subStats(t, "fan")).backlog !== 0; i++) await sleep(100);
    expect((await subStats(t, "fan")).backlog).toBe(0);
    await consumer.close();

    const again = await open(consumerPath(t, "fan", "?subscriptionType=Exclusive"));
    const [late] = await produce(producer, [{ payload: b64("late"), key: "k1" }]);
    await again.until(() => again.messages().length >= 1, "the new message");
    await sleep(300);
    expect(again.messages().map((m) => [m.messageId, unb64(m.payload)])).toEqual([[late!.messageId, "late"]]);
    await Promise.all([again.close(), producer.close()]);
  });

  it("push mode: at most receiverQueueSize unacked messages across all partitions", async () => {
    const t = await pulsarTopic(2);
    const consumer = await open(consumerPath(t, "win", "?subscriptionType=Shared&receiverQueueSize=3"));
    const producer = await open(producerPath(t));
    await produce(
      producer,
      Array.from({ length: 6 }, (_, i) => ({ payload: b64(`m${i}`), key: `key-${i}` })),
    );
    await consumer.until(() => consumer.messages().length === 3, "3 messages");
    await sleep(500);
    expect(consumer.messages().length).toBe(3);
    consumer.send({ messageId: consumer.messages()[0]!.messageId });
    await consumer.until(() => consumer.messages().length === 4, "a 4th message");
    await sleep(500);
    expect(consumer.messages().length).toBe(4);
    await Promise.all([consumer.close(), producer.close()]);
  });
});

describe("subscription types over the fan-in", () => {
  it("Failover on 2 partitions: partition i goes to the i-th consumer by name; when one leaves, the other takes its partition from the first unacked", async () => {
    const t = await pulsarTopic(2);
    const a = await open(consumerPath(t, "fo", "?subscriptionType=Failover&consumerName=a"));
    const b = await open(consumerPath(t, "fo", "?subscriptionType=Failover&consumerName=b"));
    const producer = await open(producerPath(t));
    const receipts = await produce(
      producer,
      Array.from({ length: 12 }, (_, i) => ({ payload: b64(`m${i}`), key: `key-${i}` })),
    );
    const onP = (p: number) => receipts.filter((r) => partitionOf(r.messageId) === p).map((r) => r.messageId);
    expect(onP(0).length).toBeGreaterThan(0);
    expect(onP(1).length).toBeGreaterThan(0);
    await a.until(() => a.messages().length === onP(0).length, "partition 0 at a");
    await b.until(() => b.messages().length === onP(1).length, "partition 1 at b");
    expect(a.messages().map((m) => m.messageId)).toEqual(onP(0));
    expect(b.messages().map((m) => m.messageId)).toEqual(onP(1));
    // a acks its first message only, then leaves: b takes partition 0 from the first unacked.
    a.send({ messageId: onP(0)[0] });
    for (let i = 0; i < 50 && (await subStats(t, "fo")).partitions[0]!.markDeletePosition !== offsetOf(onP(0)[0]); i++) await sleep(100);
    await a.close();
    await b.until(() => b.messages().length === onP(1).length + onP(0).length - 1, "partition 0's unacked at b");
    expect(
      b
        .messages()
        .slice(onP(1).length)
        .map((m) => m.messageId),
    ).toEqual(onP(0).slice(1));
    await Promise.all([b.close(), producer.close()]);
  });

  it("ack timeout: an unacked message comes back with redeliveryCount 1 and keeps one place in the push window", async () => {
    const t = await pulsarTopic();
    const c = await open(consumerPath(t, "s", "?subscriptionType=Shared&ackTimeoutMillis=1000&receiverQueueSize=1"));
    const producer = await open(producerPath(t));
    const [r0, r1] = await produce(producer, [{ payload: b64("m0") }, { payload: b64("m1") }]);
    await c.until(() => c.messages().length === 2, "m0 twice", 10_000);
    expect(c.messages().map((m) => [m.messageId, m.redeliveryCount])).toEqual([
      [r0!.messageId, 0],
      [r0!.messageId, 1],
    ]);
    c.send({ messageId: r0!.messageId });
    await c.until(() => c.messages().length === 3, "m1");
    expect(c.messages()[2]).toMatchObject({ messageId: r1!.messageId, redeliveryCount: 0 });
    c.send({ messageId: r1!.messageId });
    await Promise.all([c.close(), producer.close()]);
  });
});

describe("negative acknowledgement", () => {
  it("redelivers after negativeAckRedeliveryDelay with redeliveryCount 1 (field case A6: no dead-letter topic needed)", async () => {
    const t = await pulsarTopic();
    const consumer = await open(consumerPath(t, "s", "?subscriptionType=Shared&negativeAckRedeliveryDelay=200"));
    const producer = await open(producerPath(t));
    const [r] = await produce(producer, [{ payload: b64("m0"), context: "x" }]);
    await consumer.until(() => consumer.messages().length === 1, "m0");
    expect(consumer.messages()[0]).toMatchObject({ messageId: r!.messageId, redeliveryCount: 0 });
    consumer.send({ type: "negativeAcknowledge", messageId: r!.messageId });
    await consumer.until(() => consumer.messages().length === 2, "m0 again");
    expect(consumer.messages()[1]).toMatchObject({ messageId: r!.messageId, payload: b64("m0"), redeliveryCount: 1 });
    await Promise.all([consumer.close(), producer.close()]);
  });
});

describe("dead-letter topic and server-side closes", () => {
  it("maxRedeliverCount 1 with a persistent:// dead-letter topic: counts 0, 1, then exactly one copy", async () => {
    const t = await pulsarTopic();
    const dlq = await pulsarTopic();
    const q = `?subscriptionType=Shared&negativeAckRedeliveryDelay=100&maxRedeliverCount=1&deadLetterTopic=${encodeURIComponent(`persistent://${dlq}`)}`;
    const consumer = await open(consumerPath(t, "s", q));
    const producer = await open(producerPath(t));
    const [r] = await produce(producer, [{ payload: b64("poison"), properties: { p: "1" } }]);
    for (let n = 1; n <= 2; n++) {
      await consumer.until(() => consumer.messages().length === n, `delivery ${n}`);
      expect(consumer.messages()[n - 1]).toMatchObject({ messageId: r!.messageId, redeliveryCount: n - 1 });
      consumer.send({ type: "negativeAcknowledge", messageId: r!.messageId });
    }
    const dead = await open(readerPath(dlq, "?messageId=earliest"));
    await dead.until(() => dead.messages().length === 1, "the dead-letter copy");
    expect(dead.messages()[0]).toMatchObject({ payload: b64("poison"), properties: { p: "1", REAL_TOPIC: t, REAL_SUBSCRIPTION: "s" } });
    await sleep(500);
    expect([consumer.messages().length, dead.messages().length]).toEqual([2, 1]);
    await Promise.all([consumer.close(), producer.close(), dead.close()]);
  });

  it("a seek closes the client's socket with the partition's code 4002; deleting the topic with 4003", async () => {
    const t = await pulsarTopic(2);
    const consumer = await open(consumerPath(t, "s", "?subscriptionType=Failover"));
    const seek = await call(`/v1/topics/${t}/subscriptions/s/seek`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ position: "earliest" }) });
    expect(seek.status).toBe(200);
    expect((await consumer.closed).code).toBe(4002);
    const again = await open(consumerPath(t, "s", "?subscriptionType=Failover"));
    const del = await call(`/v1/topics/${t}`, { method: "DELETE" });
    expect(del.status).toBe(204);
    expect((await again.closed).code).toBe(4003);
  });
});

describe("unsubscribe", () => {
  it("is refused while another consumer is connected; then deletes the subscription on every partition and closes with 4001", async () => {
    const t = await pulsarTopic(2);
    const a = await open(consumerPath(t, "gone", "?subscriptionType=Shared"));
    const b = await open(consumerPath(t, "gone", "?subscriptionType=Shared"));
    a.send({ type: "unsubscribe" });
    await a.until(() => a.frames.length === 1, "the refusal");
    expect(a.frames[0]).toMatchObject({ result: "error:8", errorCode: "SUBSCRIPTION_HAS_CONSUMERS" });
    expect((await subStats(t, "gone")).partitions.length).toBe(2);
    await b.close();
    for (let i = 0; i < 50 && (await subStats(t, "gone")).partitions.reduce((n, p) => n + p.consumers.length, 0) !== 2; i++) await sleep(100);
    a.send({ type: "unsubscribe" });
    expect((await a.closed).code).toBe(4001);
    await expectError(await call(`/v1/topics/${t}/subscriptions/gone`), "SUBSCRIPTION_NOT_FOUND", 404);
  });
});

describe("pull mode (field case A7)", () => {
  it("permits 1 then 2; acks on another connection; closing redelivers nothing that was never pushed", async () => {
    const t = await pulsarTopic();
    const c1 = await open(consumerPath(t, "s", "?subscriptionType=Shared&pullMode=true"));
    const producer = await open(producerPath(t));
    await produce(
      producer,
      Array.from({ length: 5 }, (_, i) => ({ payload: b64(`m${i}`) })),
    );
    await sleep(500);
    expect(c1.messages().length).toBe(0);
    c1.send({ type: "permit", permitMessages: 1 });
    await c1.until(() => c1.messages().length === 1, "m0");
    c1.send({ type: "permit", permitMessages: 2 });
    await c1.until(() => c1.messages().length === 3, "m1, m2");
    await sleep(500);
    expect(c1.messages().map((m) => unb64(m.payload))).toEqual(["m0", "m1", "m2"]);

    const c2 = await open(consumerPath(t, "s", "?subscriptionType=Shared&pullMode=true"));
    for (const m of c1.messages()) c2.send({ messageId: m.messageId });
    for (let i = 0; i < 50 && (await subStats(t, "s")).backlog !== 2; i++) await sleep(100);
    expect((await subStats(t, "s")).backlog).toBe(2);
    await c1.close();
    await sleep(300);
    expect(c2.messages().length).toBe(0);
    expect((await subStats(t, "s")).backlog).toBe(2);
    await Promise.all([c2.close(), producer.close()]);
  });

  it("on a partitioned topic the client gets exactly what it permits, from every partition", async () => {
    const t = await pulsarTopic(3);
    const c = await open(consumerPath(t, "s", "?subscriptionType=Exclusive&pullMode=true"));
    const producer = await open(producerPath(t));
    await produce(
      producer,
      Array.from({ length: 9 }, (_, i) => ({ payload: b64(`m${i}`), key: `key-${i}` })),
    );
    c.send({ type: "permit", permitMessages: 4 });
    await c.until(() => c.messages().length === 4, "4 messages");
    await sleep(500);
    expect(c.messages().length).toBe(4);
    c.send({ type: "permit", permitMessages: 100 });
    await c.until(() => c.messages().length === 9, "all 9");
    expect(new Set(c.messages().map((m) => unb64(m.payload)))).toEqual(new Set(Array.from({ length: 9 }, (_, i) => `m${i}`)));
    await Promise.all([c.close(), producer.close()]);
  });
});

describe("readers (field case A4, Pulsar WebSocket part)", () => {
  it("latest by default, earliest, and after a message id", async () => {
    const t = await pulsarTopic();
    const producer = await open(producerPath(t));
    const receipts = await produce(
      producer,
      Array.from({ length: 5 }, (_, i) => ({ payload: b64(`m${i}`) })),
    );
    const latest = await open(readerPath(t));
    const earliest = await open(readerPath(t, "?messageId=earliest"));
    const afterM2 = await open(readerPath(t, `?messageId=${encodeURIComponent(receipts[2]!.messageId as string)}`));
    await earliest.until(() => earliest.messages().length === 5, "m0..m4");
    await afterM2.until(() => afterM2.messages().length === 2, "m3, m4");
    expect(earliest.messages().map((m) => unb64(m.payload))).toEqual(["m0", "m1", "m2", "m3", "m4"]);
    expect(afterM2.messages().map((m) => unb64(m.payload))).toEqual(["m3", "m4"]);
    expect(latest.messages().length).toBe(0);
    await produce(producer, [{ payload: b64("m5") }]);
    await latest.until(() => latest.messages().length === 1, "m5");
    expect(unb64(latest.messages()[0]!.payload)).toBe("m5");
    await Promise.all([latest.close(), earliest.close(), afterM2.close(), producer.close()]);
  });
});

describe("delayed delivery from the producer", () => {
  it("deliverAfterMs is never early; the property is not shown to the consumer", async () => {
    const t = await pulsarTopic();
    const consumer = await open(consumerPath(t, "s", "?subscriptionType=Shared"));
    const producer = await open(producerPath(t));
    const sentAt = Date.now();
    const [r] = await produce(producer, [{ payload: b64("later"), deliverAfterMs: 1200, properties: { a: "b" } }]);
    await consumer.until(() => consumer.messages().length === 1, "the delayed message", 10_000);
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1200);
    expect(consumer.messages()[0]).toMatchObject({ messageId: r!.messageId, properties: { a: "b" } });
    const fetched = await fetchJson(t, 0, "offset=0");
    expect(fetched.records[0]!.headers.map((h) => h.key)).toEqual(["a", "edgelog-deliver-at"]);
    await Promise.all([consumer.close(), producer.close()]);
  });
});

describe("bad input", () => {
  it("producer: malformed JSON, bad base64, unknown fields and bad deliverAt get send-error receipts in order and append nothing", async () => {
    const t = await pulsarTopic();
    const producer = await open(producerPath(t));
    producer.sendText("{not json");
    producer.send({ payload: "not base64!", context: "bad-b64" });
    producer.send({ payload: b64("x"), context: "typo", propertes: {} });
    producer.send({ payload: b64("x"), context: "both", deliverAt: 1, deliverAfterMs: 1 });
    producer.send({ context: "no-payload" });
    producer.sendText(new Array(10).join("["));
    await producer.until(() => producer.frames.length === 6, "6 receipts");
    expect(producer.frames.map((f) => [f.result, f.errorCode, f.context])).toEqual([
      ["send-error:3", "INVALID_JSON", undefined],
      ["send-error:7", "INVALID_ENCODING", "bad-b64"],
      ["send-error:3", "INVALID_REQUEST", "typo"],
      ["send-error:3", "INVALID_REQUEST", "both"],
      ["send-error:3", "INVALID_REQUEST", "no-payload"],
      ["send-error:3", "INVALID_JSON", undefined],
    ]);
    for (const f of producer.frames) expect(typeof f.errorMsg).toBe("string");
    // Nothing was appended; the socket still works.
    const [ok] = await produce(producer, [{ payload: b64("good"), context: "g" }]);
    expect(ok).toEqual({ result: "ok", messageId: btoa("0000:0000000000000000"), context: "g" });
    await producer.close();
  });

  it("consumer: refused frames are answered and change nothing", async () => {
    const t = await pulsarTopic();
    const consumer = await open(consumerPath(t, "s", "?subscriptionType=Shared"));
    consumer.sendText("nope");
    consumer.send({ messageId: "CAAQAw==" }); // Pulsar's documented id: not an id of this service
    consumer.send({ messageId: btoa("0007:0000000000000000") }); // a partition the topic does not have
    consumer.send({ type: "permit", permitMessages: 1 }); // push mode
    consumer.send({ type: "unknown" });
    await consumer.until(() => consumer.frames.length === 5, "5 error frames");
    expect(consumer.frames.map((f) => [f.result, f.errorCode])).toEqual([
      ["error:3", "INVALID_JSON"],
      ["error:7", "INVALID_MESSAGE_ID"],
      ["error:7", "INVALID_MESSAGE_ID"],
      ["error:3", "INVALID_REQUEST"],
      ["error:3", "INVALID_REQUEST"],
    ]);
    await consumer.close();
  });

  it("refusals before the upgrade: JSON errors from the table, nothing created", async () => {
    const t = await pulsarTopic();
    const up = { headers: { upgrade: "websocket" } };
    await expectError(await call(producerPath("public/default/no-such-topic-x9"), up), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await call(consumerPath("public/default/no-such-topic-x9", "s"), up), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await call(readerPath("public/default/no-such-topic-x9"), up), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    const e1 = await expectError(await call(consumerPath(t, "s", "?ackTimeoutMillis=soon"), up), "INVALID_REQUEST", 400);
    expect(e1.details).toMatchObject({ field: "ackTimeoutMillis" });
    const e2 = await expectError(await call(consumerPath(t, "s", "?subscriptionType=Bogus"), up), "INVALID_REQUEST", 400);
    expect(e2.details).toMatchObject({ field: "subscriptionType" });
    const e3 = await expectError(await call(consumerPath(t, "s", "?negativeAckRedeliveryDelay=-1"), up), "INVALID_REQUEST", 400);
    expect(e3.details).toMatchObject({ field: "negativeAckRedeliveryDelay" });
    await expectError(await call(consumerPath(t, "s", "?pullMode=maybe"), up), "INVALID_REQUEST", 400);
    await expectError(await call(readerPath(t, "?messageId=CAAQAw=="), up), "INVALID_MESSAGE_ID", 400);
    await expectError(await call(consumerPath(t, "s")), "UPGRADE_REQUIRED", 426);
    // Edgelog has persistent topics only.
    await expectError(await call(`/ws/v2/producer/non-persistent/${t}`, up), "NOT_FOUND", 404);
    // No subscription was created by the refused consumers.
    await expectError(await call(`/v1/topics/${t}/subscriptions/s`), "SUBSCRIPTION_NOT_FOUND", 404);
    // An exclusive subscription refuses a second consumer before the upgrade.
    const first = await open(consumerPath(t, "ex"));
    await expectError(await call(consumerPath(t, "ex"), up), "CONSUMER_BUSY", 409);
    await first.close();
    // A reader of a partitioned topic starts at earliest or latest only (as Pulsar's clients).
    const t4 = await pulsarTopic(4);
    const e4 = await expectError(await call(readerPath(t4, `?messageId=${encodeURIComponent(btoa("0001:0000000000000000"))}`), up), "INVALID_REQUEST", 400);
    expect(e4.details).toMatchObject({ field: "messageId" });
  });
});
