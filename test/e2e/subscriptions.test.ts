/**
 * Subscriptions on the real dev server through the SDK's `subscribe()` (one socket per
 * partition, fanned in): a 4-partition topic arrives complete and in per-partition order; a
 * kill -9 of the server mid-stream loses no acked position, and the consumer reconnects by
 * itself and gets exactly the unacked messages again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, type EdgelogClient, Producer, subscribe, toText, type SubscriptionMessage } from "../../sdk/src/index.ts";
import { randomTopic, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

async function take(consumer: { receive(): Promise<SubscriptionMessage> }, n: number): Promise<SubscriptionMessage[]> {
  const out: SubscriptionMessage[] = [];
  while (out.length < n) out.push(await consumer.receive());
  return out;
}

describe("SDK subscribe() on the dev server", () => {
  it("fans in a 4-partition topic: every message once, in per-partition order; acks empty the backlog", async () => {
    const topic = randomTopic();
    await new Admin(client).createTopic({ name: topic, partitions: 4 });
    const consumer = await subscribe(client, { topic, subscription: "all", type: "exclusive", initialPosition: "earliest" });
    const producer = new Producer(client);
    await producer.send({ topic, messages: Array.from({ length: 40 }, (_, i) => ({ key: `k${i % 8}`, value: `m${i}` })) });
    await producer.close();
    const got = await take(consumer, 40);
    expect(new Set(got.map((m) => toText(m.value))).size).toBe(40);
    for (let p = 0; p < 4; p++) {
      const offsets = got.filter((m) => m.partition === p).map((m) => m.offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    }
    for (const m of got) await consumer.acknowledge(m);
    const stats = (await (await fetch(`${server.baseUrl}/v1/topics/${topic}/subscriptions/all`)).json()) as { backlog: number; partitions: unknown[] };
    expect([stats.backlog, stats.partitions.length]).toEqual([0, 4]);
    // A second consumer on the exclusive subscription is refused.
    await expect(subscribe(client, { topic, subscription: "all", type: "exclusive" })).rejects.toThrow(/refused upgrade|CONSUMER_BUSY|failed/);
    consumer.close();
  });

  it("kill -9 mid-stream: no acked position is lost; the consumer reconnects and gets exactly the unacked messages", async () => {
    const topic = randomTopic();
    await new Admin(client).createTopic({ name: topic, partitions: 1 });
    const consumer = await subscribe(client, { topic, subscription: "s", type: "exclusive", initialPosition: "earliest" });
    const producer = new Producer(client);
    await producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ value: `m${i}` })) });
    await producer.close();
    const first = await take(consumer, 20);
    for (const m of first.slice(0, 10)) await consumer.acknowledge(m);
    await server.kill();
    await server.restart();
    const again = await take(consumer, 10);
    expect(again.map((m) => m.offset)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    consumer.close();
  });
});
