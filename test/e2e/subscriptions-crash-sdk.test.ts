/**
 * SIGKILL of the real dev server while producers write and a shared subscription's consumer
 * acks (docs/SUBSCRIPTIONS.md "Commands and durability"): after the restart on the same state,
 * nothing whose ack receipt arrived is delivered again, every acknowledged produce is delivered
 * (before or after the kill), every delivered message is one that was sent, and once everything
 * is acked the backlog is 0. Two partitions, the SDK's `subscribe()` (it reconnects by itself).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, type EdgelogClient, subscribe, type SubscriptionMessage, toText } from "../../sdk/src/index.ts";
import { randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("subscriptions: SIGKILL mid-write", () => {
  it("nothing acked comes back, nothing acknowledged is lost", async () => {
    const topic = randomTopic("subcrash");
    const partitions = 2;
    await new Admin(client).createTopic({ name: topic, partitions });
    const consumer = await subscribe(client, { topic, subscription: "s", type: "shared", initialPosition: "earliest", receiverQueueSize: 50 });

    const sent = new Set<string>(); // every value sent (acknowledged or not)
    const producedAcked = new Set<string>(); // values whose produce answered 200
    const ackConfirmed = new Set<string>(); // message ids whose ack receipt arrived
    const deliveredBeforeKill = new Set<string>();
    const deliveredAfterKill: SubscriptionMessage[] = [];
    let killed = false;
    let stopProducing = false;

    const producer = (async () => {
      for (let batch = 0; !stopProducing; batch++) {
        const values = Array.from({ length: 5 }, (_, i) => `b${batch}-${i}`);
        for (const v of values) sent.add(v);
        try {
          const res = await fetch(`${server.baseUrl}/v1/topics/${topic}/records`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ records: values.map((value, i) => ({ key: `k${i}`, value })) }),
          });
          if (res.status === 200) for (const v of values) producedAcked.add(v);
          else await res.text();
        } catch {
          await sleep(100); // the server is down: try the next batch later
        }
      }
    })();

    const idOf = (m: SubscriptionMessage) => `${m.partition}:${m.offset}`;
    const delivered = new Set<string>();
    let stopConsuming = false;
    const consuming = (async () => {
      // One receive() at a time: a receive() abandoned to a timeout would take a message with it.
      let next: Promise<SubscriptionMessage> | null = null;
      while (!stopConsuming) {
        next ??= consumer.receive();
        const m = await Promise.race([next, sleep(500).then(() => null)]);
        if (m === null) continue;
        next = null;
        delivered.add(toText(m.value) ?? "");
        if (killed) deliveredAfterKill.push(m);
        else deliveredBeforeKill.add(idOf(m));
        consumer.acknowledge(m).then(
          () => {
            if (!killed) ackConfirmed.add(idOf(m));
          },
          () => {}, // the socket dropped before the receipt: may come back
        );
      }
    })();

    // Traffic, then the kill in the middle of it.
    while (ackConfirmed.size < 60) await sleep(50);
    killed = true;
    await server.kill();
    await server.restart();
    await sleep(1000);
    stopProducing = true;
    await producer;

    // Consume until every record of the log was delivered at least once.
    const log = await readAll(client, topic, partitions);
    const logValues = new Set(log.map((r) => toText(r.value) ?? ""));
    const deadline = Date.now() + 60_000;
    while ([...logValues].some((v) => !delivered.has(v)) && Date.now() < deadline) await sleep(100);
    stopConsuming = true;
    await consuming;

    // Nothing whose ack receipt arrived before the kill is delivered again.
    expect(deliveredAfterKill.filter((m) => ackConfirmed.has(idOf(m))).map(idOf)).toEqual([]);
    // Every acknowledged produce is in the log and was delivered; every delivery was sent.
    expect([...producedAcked].filter((v) => !logValues.has(v))).toEqual([]);
    expect([...logValues].filter((v) => !delivered.has(v))).toEqual([]);
    expect([...delivered].filter((v) => !sent.has(v))).toEqual([]);
    expect(deliveredBeforeKill.size).toBeGreaterThan(0);

    // Acks after the restart are durable too: the backlog empties.
    for (const m of deliveredAfterKill) await consumer.acknowledge(m);
    const stats = (await (await fetch(`${server.baseUrl}/v1/topics/${topic}/subscriptions/s`)).json()) as { backlog: number };
    expect(stats.backlog).toBe(0);
    consumer.close();
  });
});
