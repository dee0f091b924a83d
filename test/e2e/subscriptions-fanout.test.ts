/**
 * Issue 17's fan-out case on the real dev server: 100 WebSocket subscribers, each with its own
 * exclusive subscription, on one 4-partition topic, all receive a 10,000-message stream
 * complete and in per-partition order. Each subscriber is the SDK's `subscribe()` (the user
 * path: one socket per partition, fanned in by the client), so the server holds 400 sockets,
 * 100 per partition object. The messages are produced while the subscribers receive; each
 * subscriber acks cumulatively every ACK_EVERY messages of a partition, so the stream passes
 * through the default permit window (receiverQueueSize 1,000 per partition) several times.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, type EdgelogClient, Producer, subscribe, type SubscriptionConsumer } from "../../sdk/src/index.ts";
import { randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

const SUBSCRIBERS = 100;
const PARTITIONS = 4;
const MESSAGES = 10_000;
/** Messages produced per send() call: the stream arrives in 20 steps while subscribers receive. */
const SEND_CHUNK = 500;
/** A subscriber acks cumulatively after every this many messages of one partition (< the 1,000 permits). */
const ACK_EVERY = 250;

/** What one subscriber received of one partition: offsets and values in arrival order. */
interface Received {
  offsets: number[];
  values: string[];
  redelivered: number;
  /** The last message id received (for the final cumulative ack). */
  lastId: string;
}

describe("100 WebSocket subscribers on one 4-partition topic (dev server)", () => {
  it("every subscriber receives the 10,000-message stream complete and in per-partition order; its acks empty its backlog", { timeout: 600_000 }, async () => {
    const topic = randomTopic("fanout");
    await new Admin(client).createTopic({ name: topic, partitions: PARTITIONS });

    // Subscribe everyone before the first message (10 at a time, so the upgrades do not all land at once).
    const consumers: SubscriptionConsumer[] = [];
    for (let i = 0; i < SUBSCRIBERS; i += 10) {
      consumers.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(10, SUBSCRIBERS - i) }, (_, k) => subscribe(client, { topic, subscription: `s${i + k}`, type: "exclusive", initialPosition: "earliest" })),
        )),
      );
    }

    const received: Received[][] = consumers.map(() => Array.from({ length: PARTITIONS }, () => ({ offsets: [], values: [], redelivered: 0, lastId: "" })));
    const acks: Promise<void>[] = [];
    const receiving = consumers.map(async (consumer, c) => {
      const mine = received[c]!;
      for (let n = 0; n < MESSAGES; n++) {
        const m = await consumer.receive();
        const r = mine[m.partition]!;
        r.offsets.push(m.offset);
        r.values.push(new TextDecoder().decode(m.value ?? new Uint8Array()));
        r.lastId = m.messageId;
        if (m.redeliveryCount !== 0) r.redelivered++;
        if (r.offsets.length % ACK_EVERY === 0) acks.push(consumer.acknowledgeCumulative(m));
      }
    });

    const producer = new Producer(client, { lingerMs: 5 });
    for (let sent = 0; sent < MESSAGES; sent += SEND_CHUNK) {
      await producer.send({ topic, messages: Array.from({ length: SEND_CHUNK }, (_, j) => ({ key: `k${sent + j}`, value: `m${sent + j}` })) });
    }
    await producer.close();
    await Promise.all(receiving);

    // The log as stored, per partition, in offset order: what every subscriber must have received.
    const log = await readAll(client, topic, PARTITIONS);
    expect(log.length).toBe(MESSAGES);
    const expected = Array.from({ length: PARTITIONS }, (_, p) => log.filter((r) => r.partition === p));
    for (const part of expected) expect(part.length).toBeGreaterThan(0);

    // Compare without one expect() per message (a million of them); the first difference is reported.
    const differences: string[] = [];
    for (let c = 0; c < SUBSCRIBERS; c++) {
      for (let p = 0; p < PARTITIONS; p++) {
        const got = received[c]![p]!;
        const want = expected[p]!;
        if (got.offsets.length !== want.length) differences.push(`s${c} partition ${p}: ${got.offsets.length} messages, expected ${want.length}`);
        if (got.redelivered !== 0) differences.push(`s${c} partition ${p}: ${got.redelivered} redelivered messages`);
        for (let i = 0; i < Math.min(got.offsets.length, want.length); i++) {
          const w = want[i]!;
          const wantValue = new TextDecoder().decode(w.value ?? new Uint8Array());
          if (got.offsets[i] !== w.offset || got.values[i] !== wantValue) {
            differences.push(`s${c} partition ${p} message #${i}: got offset ${got.offsets[i]} (${got.values[i]}), expected offset ${w.offset} (${wantValue})`);
            break;
          }
        }
      }
    }
    expect(differences.slice(0, 10)).toEqual([]);

    // The last ack of every partition covers its last message: every subscription's backlog is then 0.
    await Promise.all(acks);
    await Promise.all(
      consumers.map(async (consumer, c) => {
        for (let p = 0; p < PARTITIONS; p++) {
          const r = received[c]![p]!;
          if (r.offsets.length % ACK_EVERY !== 0) await consumer.acknowledgeCumulative(r.lastId);
        }
      }),
    );
    const listed = (await (await fetch(`${server.baseUrl}/v1/topics/${topic}/subscriptions`)).json()) as { subscriptions: { subscription: string; backlog: number; consumers: number }[] };
    expect(listed.subscriptions.length).toBe(SUBSCRIBERS);
    expect(listed.subscriptions.filter((s) => s.backlog !== 0 || s.consumers !== PARTITIONS).map((s) => s.subscription)).toEqual([]);
    for (const consumer of consumers) consumer.close();
  });
});
