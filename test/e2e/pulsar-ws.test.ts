/**
 * Pulsar's WebSocket API on the real dev server (issue 17): the producer, consumer and reader
 * examples of Pulsar's documentation ("client-libraries-websocket"), run with a plain WebSocket
 * client (the standard `WebSocket`, as the Node.js examples' `ws`) sending exactly the
 * documented frames to the documented paths, on a 4-partition topic so that the consumer and
 * reader fan in every partition on the server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomTopic, startDevServer, type DevServer } from "./dev-server.ts";

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer();
});
afterAll(() => server?.dispose());

interface Socket {
  ws: WebSocket;
  frames: Record<string, unknown>[];
  until(pred: () => boolean, what: string): Promise<void>;
}

function open(path: string): Promise<Socket> {
  const ws = new WebSocket(`${server.baseUrl.replace("http", "ws")}${path}`);
  const frames: Record<string, unknown>[] = [];
  const checks = new Set<() => void>();
  ws.addEventListener("message", (e) => {
    frames.push(JSON.parse(String(e.data)) as Record<string, unknown>);
    for (const c of [...checks]) c();
  });
  const until = (pred: () => boolean, what: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        checks.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames).slice(0, 2000)}`)), 15_000);
      checks.add(check);
      check();
    });
  return new Promise((resolve, reject) => {
    ws.addEventListener("open", () => resolve({ ws, frames, until }));
    ws.addEventListener("error", () => reject(new Error(`could not open ${path}`)));
  });
}

describe("Pulsar WebSocket API examples on the dev server", () => {
  it("the documented producer, consumer and reader exchange, over a 4-partition topic", async () => {
    const topic = randomTopic("my-topic");
    const created = await fetch(`${server.baseUrl}/v1/topics`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: `public/default/${topic}`, partitions: 4 }),
    });
    expect(created.status).toBe(201);

    // The consumer and reader examples: no query options (Exclusive, latest).
    const consumer = await open(`/ws/v2/consumer/persistent/public/default/${topic}/my-sub`);
    // The consumer example: ack every message as it arrives.
    consumer.ws.addEventListener("message", (e) => {
      const m = JSON.parse(String(e.data)) as { messageId?: string };
      if (m.messageId !== undefined) consumer.ws.send(JSON.stringify({ messageId: m.messageId }));
    });
    const reader = await open(`/ws/v2/reader/persistent/public/default/${topic}`);
    const producer = await open(`/ws/v2/producer/persistent/public/default/${topic}`);

    // The Node.js producer example's message, then the Python example's (its context is the number 5).
    producer.ws.send(JSON.stringify({ payload: Buffer.from("Hello World").toString("base64"), properties: { key1: "value1", key2: "value2" }, context: "1" }));
    producer.ws.send(JSON.stringify({ payload: Buffer.from("Hello World", "utf8").toString("base64"), properties: { key1: "value1", key2: "value2" }, context: 5 }));
    await producer.until(() => producer.frames.length === 2, "2 receipts");
    expect(producer.frames).toEqual([
      { result: "ok", messageId: expect.any(String), context: "1" },
      { result: "ok", messageId: expect.any(String), context: "5" },
    ]);
    const ids = producer.frames.map((f) => f.messageId);

    await consumer.until(() => consumer.frames.length === 2, "2 messages at the consumer");
    expect(new Set(consumer.frames.map((f) => f.messageId))).toEqual(new Set(ids));
    for (const m of consumer.frames) {
      expect(m).toEqual({ messageId: expect.any(String), payload: "SGVsbG8gV29ybGQ=", properties: { key1: "value1", key2: "value2" }, publishTime: expect.any(String), redeliveryCount: 0 });
      expect(Buffer.from(m.payload as string, "base64").toString()).toBe("Hello World");
    }

    // The reader example reads the same two messages and acks them.
    await reader.until(() => reader.frames.length === 2, "2 messages at the reader");
    expect(new Set(reader.frames.map((f) => f.messageId))).toEqual(new Set(ids));
    for (const m of reader.frames) reader.ws.send(JSON.stringify({ messageId: m.messageId }));

    // The consumer's acks are durable: the subscription's backlog drains to 0.
    let backlog = -1;
    for (let i = 0; i < 100 && backlog !== 0; i++) {
      backlog = ((await (await fetch(`${server.baseUrl}/v1/topics/public/default/${topic}/subscriptions/my-sub`)).json()) as { backlog: number }).backlog;
      if (backlog !== 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(backlog).toBe(0);
    for (const s of [consumer, reader, producer]) s.ws.close(1000);
  });
});

describe("a Pulsar reader's acks and frame sizes on the dev server", () => {
  it("a reader's ack of an id it never received, or of one acked already, is error:7 and frees no place; a frame over 1 MiB of UTF-8 stores nothing", async () => {
    const topic = randomTopic("acks");
    const created = await fetch(`${server.baseUrl}/v1/topics`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: `public/default/${topic}`, partitions: 1 }),
    });
    expect(created.status).toBe(201);
    const producer = await open(`/ws/v2/producer/persistent/public/default/${topic}`);
    // 400,000 3-byte characters: under 1 Mi UTF-16 code units, 1.2 MB on the wire.
    const big = JSON.stringify({ payload: "eA==", properties: { p: "€".repeat(400_000) }, context: "big" });
    expect(big.length).toBeLessThan(1024 * 1024);
    producer.ws.send(big);
    for (let i = 0; i < 5; i++) producer.ws.send(JSON.stringify({ payload: Buffer.from(`m${i}`).toString("base64"), context: `m${i}` }));
    await producer.until(() => producer.frames.length === 6, "6 receipts");
    expect(producer.frames[0]).toEqual({ result: "send-error:3", errorCode: "INVALID_REQUEST", errorMsg: "A frame is at most 1048576 bytes of UTF-8 text." });
    expect(producer.frames.slice(1).map((f) => [f.result, f.context])).toEqual(Array.from({ length: 5 }, (_, i) => ["ok", `m${i}`]));
    const ids = producer.frames.slice(1).map((f) => f.messageId as string);

    const reader = await open(`/ws/v2/reader/persistent/public/default/${topic}?messageId=earliest&receiverQueueSize=2`);
    const messages = () => reader.frames.filter((f) => "payload" in f);
    const errors = () => reader.frames.filter((f) => "errorCode" in f);
    await reader.until(() => messages().length === 2, "2 messages");
    reader.ws.send(JSON.stringify({ messageId: ids[4] })); // never received
    await reader.until(() => errors().length === 1, "an error frame");
    reader.ws.send(JSON.stringify({ messageId: ids[0] }));
    await reader.until(() => messages().length === 3, "a 3rd message");
    reader.ws.send(JSON.stringify({ messageId: ids[0] })); // acked already
    await reader.until(() => errors().length === 2, "a 2nd error frame");
    // Give a wrongly freed place time to be filled before counting (a wait, not a threshold).
    await new Promise((r) => setTimeout(r, 500));
    expect(errors().map((f) => [f.result, f.errorCode])).toEqual([
      ["error:7", "INVALID_MESSAGE_ID"],
      ["error:7", "INVALID_MESSAGE_ID"],
    ]);
    expect(messages().map((m) => Buffer.from(m.payload as string, "base64").toString())).toEqual(["m0", "m1", "m2"]);
    for (const s of [producer, reader]) s.ws.close(1000, "done");
  });
});
