/**
 * `reconsumeLater` and the retry-letter topic (sdk/src/subscription.ts; Pulsar's PIP-58) against
 * the fake server and fake consumer sockets: the retry topic is created and subscribed with the
 * same name; the copy's headers are Pulsar's properties, exactly; the copy is produced BEFORE the
 * original's ack is sent, and a failed produce sends no ack; past maxRedeliverCount the copy goes
 * to the dead-letter topic, undelayed; a retry-topic message is acked on the retry topic's socket.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { Producer } from "../../sdk/src/producer.ts";
import { subscribe, type SubscriptionConsumer, type SubscriptionMessage } from "../../sdk/src/subscription.ts";
import { FakeServer, text, utf8 } from "./sdk-fake-server.ts";
import { FakeSockets } from "./sdk-fake-sockets.ts";

let server: FakeServer;
let sockets: FakeSockets;
let client: EdgelogClient;
beforeEach(() => {
  server = new FakeServer();
  sockets = new FakeSockets(server);
  vi.stubGlobal("WebSocket", sockets.WebSocket);
  client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
});
afterEach(() => {
  vi.unstubAllGlobals();
});

const headersOf = (topic: string) => server.log(topic, 0).records.map((r) => r.headers.map((h) => [h.key, text(h.value)]));

async function retryConsumer(policy?: { maxRedeliverCount: number }): Promise<SubscriptionConsumer> {
  server.addTopic("orders", 1);
  server.append("orders", 0, [{ key: utf8("k1"), value: utf8("pay"), headers: [{ key: "app", value: utf8("billing") }], timestamp: 1000 }]);
  return subscribe(client, {
    topic: "orders",
    subscription: "billing",
    type: "shared",
    initialPosition: "earliest",
    retryEnable: true,
    ...(policy === undefined ? {} : { deadLetterPolicy: policy }),
  });
}

describe("reconsumeLater", () => {
  it("creates and subscribes the retry topic {topic}-{subscription}-RETRY, with the dead-letter policy on both sockets", async () => {
    const consumer = await retryConsumer();
    expect(consumer.retryLetterTopic).toBe("public/default/orders-billing-RETRY");
    expect(server.topics.get("orders-billing-RETRY")?.partitions.length).toBe(1);
    expect(
      sockets.opened.map((u) => [decodeURIComponent(u.pathname), u.searchParams.get("initialPosition"), u.searchParams.get("maxRedeliverCount"), u.searchParams.get("deadLetterTopic")]),
    ).toEqual([
      ["/v1/topics/public/default/orders/partitions/0/subscriptions/billing/ws", "earliest", "16", "public/default/orders-billing-DLQ"],
      ["/v1/topics/public/default/orders-billing-RETRY/partitions/0/subscriptions/billing/ws", "earliest", "16", "public/default/orders-billing-DLQ"],
    ]);
    consumer.close();
  });

  it("produces the copy with Pulsar's properties and a deliver-at, THEN acks the original; the retry copy's reconsume increments RECONSUMETIMES", async () => {
    const consumer = await retryConsumer();
    const m = await consumer.receive();
    const before = Date.now();
    await consumer.reconsumeLater(m, 5000);
    const after = Date.now();
    const copy = server.log("orders-billing-RETRY", 0).records[0]!;
    expect([text(copy.key), text(copy.value)]).toEqual(["k1", "pay"]);
    const h = copy.headers.map((x) => [x.key, text(x.value)] as [string, string]);
    const deliverAt = Number(h.find(([k]) => k === "edgelog-deliver-at")![1]);
    expect(deliverAt).toBeGreaterThanOrEqual(before + 5000);
    expect(deliverAt).toBeLessThanOrEqual(after + 5000);
    expect(h).toEqual([
      ["app", "billing"],
      ["REAL_TOPIC", "public/default/orders"],
      ["ORIGIN_MESSAGE_ID", m.messageId],
      ["REAL_SUBSCRIPTION", "billing"],
      ["RECONSUMETIMES", "1"],
      ["DELAY_TIME", "5000"],
      ["edgelog-deliver-at", String(deliverAt)],
    ]);
    // The ack went to the original's socket, after the produce request.
    const acks = sockets.frames.filter((f) => f.frame.type === "ack");
    expect(acks.map((f) => [f.path, f.frame.messageIds])).toEqual([["/v1/topics/public/default/orders/partitions/0/subscriptions/billing/ws", [m.messageId]]]);
    const produceAt = server.requests.findIndex((r) => r.method === "POST" && r.path.includes("orders-billing-RETRY/partitions/0/records"));
    expect(produceAt).toBeGreaterThanOrEqual(0);
    expect(produceAt).toBeLessThan(acks[0]!.requestsBefore);

    // The copy arrives from the retry topic (the fake ignores the delay); reconsuming it again.
    const r1 = await consumer.receive();
    expect(r1.topic).toBe("public/default/orders-billing-RETRY");
    await consumer.reconsumeLater(r1, 0);
    expect(headersOf("orders-billing-RETRY")[1]).toEqual([
      ["app", "billing"],
      ["REAL_TOPIC", "public/default/orders"],
      ["ORIGIN_MESSAGE_ID", m.messageId],
      ["REAL_SUBSCRIPTION", "billing"],
      ["RECONSUMETIMES", "2"],
      ["DELAY_TIME", "0"],
    ]);
    expect(sockets.frames.filter((f) => f.frame.type === "ack").map((f) => [f.path, f.frame.messageIds])).toEqual([
      ["/v1/topics/public/default/orders/partitions/0/subscriptions/billing/ws", [m.messageId]],
      ["/v1/topics/public/default/orders-billing-RETRY/partitions/0/subscriptions/billing/ws", [r1.messageId]],
    ]);
    consumer.close();
  });

  it("past maxRedeliverCount: one copy to {topic}-{subscription}-DLQ (created), without a delay; nothing more to the retry topic", async () => {
    const consumer = await retryConsumer({ maxRedeliverCount: 1 });
    const m = await consumer.receive();
    await consumer.reconsumeLater(m, 10);
    const r1 = await consumer.receive();
    await consumer.reconsumeLater(r1, 10);
    expect(server.log("orders-billing-RETRY", 0).records.length).toBe(1);
    expect(headersOf("orders-billing-DLQ")).toEqual([
      [
        ["app", "billing"],
        ["REAL_TOPIC", "public/default/orders"],
        ["ORIGIN_MESSAGE_ID", m.messageId],
        ["REAL_SUBSCRIPTION", "billing"],
        ["RECONSUMETIMES", "2"],
        ["DELAY_TIME", "10"],
      ],
    ]);
    expect(sockets.frames.filter((f) => f.frame.type === "ack").length).toBe(2);
    consumer.close();
  });

  it("a produce that fails sends no ack (the message stays unacked) and rejects with the server's code", async () => {
    const consumer = await retryConsumer();
    const m = await consumer.receive();
    server.produceScript = [{ code: "INVALID_RECORD" }];
    await expect(consumer.reconsumeLater(m, 100)).rejects.toMatchObject({ code: "INVALID_RECORD" });
    expect(sockets.frames.filter((f) => f.frame.type === "ack")).toEqual([]);
    consumer.close();
  });

  it("refuses without retryEnable, or with a bad delay, before any request", async () => {
    server.addTopic("t", 1);
    server.append("t", 0, [{ key: null, value: utf8("x"), headers: [], timestamp: 1 }]);
    const plain = await subscribe(client, { topic: "t", subscription: "s", initialPosition: "earliest" });
    const m: SubscriptionMessage = await plain.receive();
    const requests = server.requests.length;
    await expect(plain.reconsumeLater(m, 10)).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    plain.close();
    const consumer = await retryConsumer();
    const n = await consumer.receive();
    const before = server.requests.length;
    await expect(consumer.reconsumeLater(n, -1)).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    await expect(consumer.reconsumeLater(n, 1.5)).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    expect([server.requests.length - before, requests]).toEqual([0, requests]);
    consumer.close();
  });
});

describe("Producer deliverAt / deliverAfterMs", () => {
  it("sends the edgelog-deliver-at header; refuses both at once and negative values", async () => {
    server.addTopic("t", 1);
    const producer = new Producer(client);
    const before = Date.now();
    await producer.send({ topic: "t", messages: [{ value: "a", deliverAt: 1_900_000_000_000 }, { value: "b", deliverAfterMs: 250 }, { value: "c" }] });
    const recs = server.log("t", 0).records;
    expect(recs[0]!.headers.map((h) => [h.key, text(h.value)])).toEqual([["edgelog-deliver-at", "1900000000000"]]);
    const b = Number(text(recs[1]!.headers[0]!.value));
    expect(b).toBeGreaterThanOrEqual(before + 250);
    expect(b).toBeLessThanOrEqual(Date.now() + 250);
    expect(recs[2]!.headers).toEqual([]);
    await expect(producer.send({ topic: "t", messages: [{ value: "x", deliverAt: 1, deliverAfterMs: 1 }] })).rejects.toThrow("give deliverAt or deliverAfterMs, not both");
    await expect(producer.send({ topic: "t", messages: [{ value: "x", deliverAfterMs: -5 }] })).rejects.toThrow("deliverAfterMs must be a non-negative integer of ms, got -5");
    await producer.close();
  });
});
