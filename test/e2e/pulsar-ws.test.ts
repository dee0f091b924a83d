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
