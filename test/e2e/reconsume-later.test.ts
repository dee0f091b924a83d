/**
 * Retry-letter topic and `reconsumeLater` (Pulsar's PIP-58, client-side as Pulsar's client does
 * it) on the real dev server: the copy goes to `{topic}-{subscription}-RETRY` with delayed
 * delivery and Pulsar's properties, the consumer (retryEnable) receives it from there not before
 * the delay with RECONSUMETIMES incremented, and after `maxRedeliverCount` reconsumes exactly one
 * copy lands in `{topic}-{subscription}-DLQ`; every original is acked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, type EdgelogClient, Producer, RETRY_PROPERTIES, type SubscriptionConsumer, type SubscriptionMessage, createReader, subscribe, toText } from "../../sdk/src/index.ts";
import { randomTopic, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

function header(m: SubscriptionMessage, key: string): string | null {
  const h = m.headers.filter((x) => x.key === key);
  expect(h.length, `one ${key} header`).toBeLessThanOrEqual(1);
  return h[0] === undefined ? null : toText(h[0].value);
}

/** The next message, or null when none comes within 1.5 s. */
async function next(consumer: SubscriptionConsumer, withinMs = 1500): Promise<SubscriptionMessage | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const none = new Promise<null>((r) => (timer = setTimeout(() => r(null), withinMs)));
  const m = await Promise.race([consumer.receive(), none]);
  clearTimeout(timer);
  return m;
}

describe("reconsumeLater with retryEnable", () => {
  it("delivers the copy after its delay with RECONSUMETIMES 1, 2, then one copy in the DLQ after maxRedeliverCount 2", async () => {
    const topic = randomTopic("rl");
    const full = `public/default/${topic}`;
    await new Admin(client).createTopic({ name: topic, partitions: 2 });
    const consumer = await subscribe(client, {
      topic,
      subscription: "work",
      type: "shared",
      initialPosition: "earliest",
      retryEnable: true,
      deadLetterPolicy: { maxRedeliverCount: 2 },
    });
    expect(consumer.retryLetterTopic).toBe(`${full}-work-RETRY`);
    const producer = new Producer(client);
    await producer.send({ topic, messages: [{ key: "order-7", value: "pay", headers: { app: "billing" } }] });
    await producer.close();

    const original = (await next(consumer, 10_000))!;
    expect([original.topic, toText(original.value), header(original, RETRY_PROPERTIES.reconsumeTimes)]).toEqual([full, "pay", null]);

    // 1st reconsume: a copy in the retry topic, delivered not before 1,500 ms.
    const before1 = Date.now();
    await consumer.reconsumeLater(original, 1500);
    const r1 = (await next(consumer, 15_000))!;
    const received1 = Date.now();
    expect(r1.topic).toBe(`${full}-work-RETRY`);
    expect([toText(r1.key), toText(r1.value), header(r1, "app")]).toEqual(["order-7", "pay", "billing"]);
    expect({
      reconsumeTimes: header(r1, "RECONSUMETIMES"),
      delayTime: header(r1, "DELAY_TIME"),
      realTopic: header(r1, "REAL_TOPIC"),
      originMessageId: header(r1, "ORIGIN_MESSAGE_ID"),
      realSubscription: header(r1, "REAL_SUBSCRIPTION"),
    }).toEqual({ reconsumeTimes: "1", delayTime: "1500", realTopic: full, originMessageId: original.messageId, realSubscription: "work" });
    const deliverAt1 = Number(header(r1, "edgelog-deliver-at"));
    expect(deliverAt1).toBeGreaterThanOrEqual(before1 + 1500);
    expect(received1).toBeGreaterThanOrEqual(deliverAt1);

    // 2nd: RECONSUMETIMES 2; REAL_TOPIC and ORIGIN_MESSAGE_ID stay the first delivery's.
    await consumer.reconsumeLater(r1, 200);
    const r2 = (await next(consumer, 15_000))!;
    expect([r2.topic, header(r2, "RECONSUMETIMES"), header(r2, "DELAY_TIME"), header(r2, "REAL_TOPIC"), header(r2, "ORIGIN_MESSAGE_ID")]).toEqual([
      `${full}-work-RETRY`,
      "2",
      "200",
      full,
      original.messageId,
    ]);

    // 3rd: past maxRedeliverCount 2, to the dead-letter topic, and never delivered again here.
    await consumer.reconsumeLater(r2, 200);
    expect(await next(consumer)).toBeNull();
    const dlq = await createReader(client, { topic: `${full}-work-DLQ`, start: "earliest" });
    const dead = await dlq.readNext(10_000);
    expect([toText(dead.key), toText(dead.value), header(dead, "RECONSUMETIMES"), header(dead, "ORIGIN_MESSAGE_ID"), header(dead, "edgelog-deliver-at")]).toEqual([
      "order-7",
      "pay",
      "3",
      original.messageId,
      null,
    ]);
    expect(await dlq.hasMessageAvailable()).toBe(false);
    dlq.close();

    // Every original was acked: no backlog on the topic nor on the retry topic.
    const admin = new Admin(client);
    const [main, retry] = await Promise.all([admin.getSubscriptionStats(topic, "work"), admin.getSubscriptionStats(`${full}-work-RETRY`, "work")]);
    expect([main.backlog, main.unacked, retry.backlog, retry.unacked]).toEqual([0, 0, 0, 0]);
    consumer.close();
  });

  it("refuses reconsumeLater without retryEnable, changing nothing", async () => {
    const topic = randomTopic("rl");
    await new Admin(client).createTopic({ name: topic, partitions: 1 });
    const consumer = await subscribe(client, { topic, subscription: "plain", initialPosition: "earliest" });
    const producer = new Producer(client);
    await producer.send({ topic, messages: [{ value: "x" }] });
    await producer.close();
    const m = (await next(consumer, 10_000))!;
    await expect(consumer.reconsumeLater(m, 100)).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    expect((await new Admin(client).getSubscriptionStats(topic, "plain")).unacked).toBe(1);
    await expect(new Admin(client).describeTopic(`${topic}-plain-RETRY`)).rejects.toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
    consumer.close();
  });
});
