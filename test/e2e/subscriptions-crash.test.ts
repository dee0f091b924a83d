/**
 * Issue 17: "a kill -9 of the dev server mid-stream loses no acked position". Producers write a
 * 4-partition topic over HTTP while SDK consumers of an exclusive and a shared (two consumers)
 * subscription receive and ack every message. Mid-stream the dev server (wrangler and workerd)
 * is killed with SIGKILL and started again on the same persist directory; the consumers
 * reconnect by themselves and production goes on. Then, per subscription:
 * - no message whose ack receipt (the server's `acked` frame, sent after the durable commit)
 *   arrived is ever delivered again, before or after the kill;
 * - nothing is lost: every record in the log (which holds every acknowledged produce) is
 *   delivered, and once every delivery is acked the backlog is 0.
 * Messages delivered and not acked (or acked without a receipt) before the kill may come again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, type EdgelogClient, subscribe, type SubscriptionConsumer } from "../../sdk/src/index.ts";
import { formatMessageId } from "../../src/subscriptions/message-id.ts";
import { randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

const PARTITIONS = 4;
/** Records per produce request. */
const RECORDS_PER_REQUEST = 10;
/** Produce requests acknowledged before the kill, and in all. */
const REQUESTS_BEFORE_KILL = 30;
const REQUESTS_TOTAL = 60;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One subscription's view: deliveries, ack receipts, and what broke the rule. */
interface SubLog {
  name: string;
  consumers: SubscriptionConsumer[];
  delivered: Set<string>;
  deliveries: number;
  /** Message ids whose ack receipt arrived. */
  receipted: Set<string>;
  /** Deliveries of a message whose ack receipt had arrived. */
  violations: string[];
  acks: Promise<void>[];
}

describe("kill -9 of the dev server mid-stream (subscriptions)", () => {
  it("no message whose ack receipt arrived is delivered again; nothing is lost", { timeout: 300_000 }, async () => {
    const topic = randomTopic("subcrash");
    await new Admin(client).createTopic({ name: topic, partitions: PARTITIONS });
    const open = (sub: string, type: "exclusive" | "shared") => subscribe(client, { topic, subscription: sub, type, initialPosition: "earliest", receiverQueueSize: 100 });
    const subs: SubLog[] = [
      { name: "ex", consumers: [await open("ex", "exclusive")] },
      { name: "sh", consumers: [await open("sh", "shared"), await open("sh", "shared")] },
    ].map((s) => ({ ...s, delivered: new Set(), deliveries: 0, receipted: new Set(), violations: [], acks: [] }));

    let stopped = false;
    const loops = subs.flatMap((s) =>
      s.consumers.map(async (consumer) => {
        while (!stopped) {
          const m = await consumer.receive().catch(() => null);
          if (m === null) return;
          s.deliveries++;
          if (s.receipted.has(m.messageId)) s.violations.push(`${m.messageId} (redelivery count ${m.redeliveryCount})`);
          s.delivered.add(m.messageId);
          // Not awaited: acks go out while messages keep arriving; a receipt is recorded when it arrives.
          s.acks.push(
            consumer.acknowledge(m).then(
              () => void s.receipted.add(m.messageId),
              () => undefined, // the socket closed before the receipt: the ack may or may not be durable
            ),
          );
        }
      }),
    );

    // Produce over HTTP, one request at a time round-robin over the partitions; a request that
    // fails (the server is down) is dropped and the next one carries new values.
    const acked = new Set<string>();
    let requests = 0;
    let attempts = 0;
    const producing = (async () => {
      while (requests < REQUESTS_TOTAL) {
        const n = attempts++;
        const values = Array.from({ length: RECORDS_PER_REQUEST }, (_, i) => `r${n}-${i}`);
        try {
          const res = await fetch(`${server.baseUrl}/v1/topics/${topic}/partitions/${n % PARTITIONS}/records`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ records: values.map((value) => ({ key: value, value })) }),
          });
          if (res.status !== 200) throw new Error(`produce answered ${res.status}: ${await res.text()}`);
          await res.arrayBuffer();
          for (const v of values) acked.add(v);
          requests++;
        } catch (e) {
          if (e instanceof Error && e.message.startsWith("produce answered")) throw e;
          await sleep(200);
        }
        await sleep(10);
      }
    })();

    // Kill once enough is produced and acked, while production and acks are in full flow.
    while (requests < REQUESTS_BEFORE_KILL || subs.some((s) => s.receipted.size < 50)) await sleep(20);
    const receiptedBeforeKill = subs.map((s) => s.receipted.size);
    const requestsBeforeKill = requests;
    await server.kill();
    await server.restart();
    await producing;
    expect(requests - requestsBeforeKill).toBeGreaterThan(0);

    // Nothing lost: every record of the log reaches every subscription; then, once every ack
    // is settled and every redelivery acked, the backlog is 0.
    const log = await readAll(client, topic, PARTITIONS);
    const stored = new Set(log.map((r) => new TextDecoder().decode(r.key ?? new Uint8Array())));
    expect([...acked].filter((v) => !stored.has(v))).toEqual([]);
    const ids = log.map((r) => formatMessageId(r.partition, r.offset));
    const stats = async (sub: string) => (await (await fetch(`${server.baseUrl}/v1/topics/${topic}/subscriptions/${sub}`)).json()) as { backlog: number; unacked: number };
    const waitUntil = async (what: string, done: () => boolean | Promise<boolean>): Promise<void> => {
      const deadline = Date.now() + 120_000;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`still waiting for ${what}`);
        await sleep(100);
      }
    };
    for (const s of subs) {
      await waitUntil(`${s.name} to receive every record`, () => ids.every((id) => s.delivered.has(id)));
      await waitUntil(`${s.name}'s backlog to empty`, async () => {
        await Promise.all(s.acks);
        const st = await stats(s.name);
        return st.backlog === 0 && st.unacked === 0;
      });
    }
    stopped = true;
    for (const s of subs) for (const c of s.consumers) c.close();
    await Promise.all(loops);

    for (const [i, s] of subs.entries()) {
      expect(receiptedBeforeKill[i]).toBeGreaterThanOrEqual(50);
      expect(s.violations, `${s.name}: delivered again after its ack receipt`).toEqual([]);
      expect(s.delivered.size).toBe(log.length);
    }
  });
});
