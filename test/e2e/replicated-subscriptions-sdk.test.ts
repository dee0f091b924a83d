/**
 * The SDK's `subscribe()` on a replicated partition (`replication.factor` 3; docs/RAFT.md
 * "Subscriptions are replicated"), on the real dev server: a leadership transfer closes the
 * consumer's socket at the old leader (1012), the SDK reconnects through the gateway by itself
 * and lands at the new leader, which redelivers exactly the unacknowledged messages; nothing
 * whose ack was confirmed comes back. No timing is asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, type EdgelogClient, subscribe, type SubscriptionMessage, toText } from "../../sdk/src/index.ts";
import { randomTopic, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Produces one record per request, retrying retriable refusals (the first election). */
async function produce(topic: string, value: string): Promise<void> {
  for (let i = 0; ; i++) {
    const res = await fetch(`${server.baseUrl}/v1/topics/${topic}/partitions/0/records`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ records: [{ value }] }),
    });
    const text = await res.text();
    if (res.status === 200) return;
    expect((JSON.parse(text) as { error: { retriable: boolean } }).error.retriable, text).toBe(true);
    expect(i, text).toBeLessThan(100);
    await sleep(100);
  }
}

/** Receives `n` messages, each within 15 s. */
async function receiveN(consumer: { receive(): Promise<SubscriptionMessage> }, n: number): Promise<SubscriptionMessage[]> {
  const out: SubscriptionMessage[] = [];
  for (let i = 0; i < n; i++) {
    const m = await Promise.race([consumer.receive(), sleep(15_000).then(() => null)]);
    if (m === null) throw new Error(`only ${out.length} of ${n} messages arrived: ${out.map((x) => toText(x.value)).join(",")}`);
    out.push(m);
  }
  return out;
}

describe("subscriptions on a replicated partition, through the SDK", () => {
  it("a leadership transfer: the SDK consumer reconnects to the new leader and gets every unacked message, none of the acked ones", async () => {
    const topic = randomTopic("rsubs");
    const admin = new Admin(client);
    await admin.createTopic({ name: topic, partitions: 1, configs: { "replication.factor": 3 } });
    const sent = Array.from({ length: 10 }, (_, i) => `m${i}`);
    for (const v of sent) await produce(topic, v);
    const consumer = await subscribe(client, { topic, subscription: "s", type: "shared", initialPosition: "earliest" });
    const got = await receiveN(consumer, 10);
    expect(got.map((m) => toText(m.value))).toEqual(sent);
    const acked = [0, 1, 2, 3, 4, 7];
    // Each acknowledge resolves on its receipt: after the Raft commit.
    await Promise.all(acked.map((i) => consumer.acknowledge(got[i]!)));

    // Move the leadership to another replica (r2, or r3 when r2 leads already).
    let moved = await admin.transferLeadership(topic, 0, "r2");
    if (!moved.transferred) moved = await admin.transferLeadership(topic, 0, "r3");
    expect(moved.transferred).toBe(true);

    const again = await receiveN(consumer, 4);
    expect(again.map((m) => toText(m.value)).sort()).toEqual(["m5", "m6", "m8", "m9"]);
    // Nothing else comes back (one receive() kept pending: an abandoned one would take the next message).
    const pending = consumer.receive();
    const extra = await Promise.race([pending, sleep(1_500).then(() => null)]);
    expect(extra === null ? null : toText(extra.value)).toBeNull();
    // The new leader takes acks and delivers new records.
    await Promise.all(again.map((m) => consumer.acknowledge(m)));
    await produce(topic, "m10");
    const last = await Promise.race([pending, sleep(15_000).then(() => null)]);
    expect(last === null ? null : toText(last.value)).toBe("m10");
    await consumer.acknowledge(last!);
    const stats = await fetch(`${server.baseUrl}/v1/topics/${topic}/subscriptions/s`);
    expect(stats.status).toBe(200);
    expect(((await stats.json()) as { backlog: number }).backlog).toBe(0);
    consumer.close();
  }, 120_000);
});
