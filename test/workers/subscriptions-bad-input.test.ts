/**
 * Bad input to the subscription surfaces through the real gateway and partition objects (a QA
 * pass as a new user): every refusal is the table's code and changes nothing, and an admin
 * route finds a subscription that exists on some partitions only.
 */
import { describe, expect, it } from "vitest";
import { call, createTopic, expectError, json, randomTopic } from "./helpers.ts";
import { connect, connectReader, produceValues, subStats } from "./subs-helpers.ts";

const upgrade = (path: string) => call(path, { headers: { upgrade: "websocket" } });

describe("consumer socket refusals", () => {
  it("a refused ack keeps its requestId in the error frame, and acks nothing", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1"]);
    const c = await connect(topic, "s", { initialPosition: "earliest" });
    const [m0] = await c.waitMessages(2);
    c.send({ type: "ack", messageIds: [m0!.messageId, "garbage"], requestId: "bad-ack" });
    await c.until(() => c.frames.some((f) => f.type === "error"), "error frame");
    expect(c.frames.find((f) => f.type === "error")).toEqual({
      type: "error",
      code: "INVALID_MESSAGE_ID",
      message: '"garbage" is not a message id.',
      requestId: "bad-ack",
      details: { messageId: "garbage" },
    });
    c.send({ type: "nack", messageIds: ["0001:0000000000000000"], requestId: "other-partition" });
    await c.until(() => c.frames.some((f) => f.type === "error" && f.requestId === "other-partition"), "error frame of the nack");
    expect(await c.ack([m0!.messageId])).toBe(1); // m0 was not acked by the refused frame
    await c.close();
  });

  it("an invalid deadLetterTopic is refused before the upgrade (400, details.field) and creates no subscription", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const e = await expectError(await upgrade(`/v1/topics/${topic}/partitions/0/subscriptions/s/ws?maxRedeliverCount=1&deadLetterTopic=a/b`), "INVALID_REQUEST", 400);
    expect(e.details).toEqual({ field: "deadLetterTopic" });
    await expectError(await call(`/v1/topics/${topic}/subscriptions/s`), "SUBSCRIPTION_NOT_FOUND", 404);
  });

  it("a reader's start message id of another partition is refused (INVALID_MESSAGE_ID), not read as an offset of this one", async () => {
    const topic = randomTopic();
    await createTopic(topic, 2);
    const e = await expectError(await upgrade(`/v1/topics/${topic}/partitions/0/readers/ws?start=0001:0000000000000000`), "INVALID_MESSAGE_ID", 400);
    expect(e.details).toEqual({ field: "start" });
    const r = await connectReader(topic, { start: "0001:0000000000000000", inclusive: true }, 1);
    await r.until(() => r.frames.length > 0, "reader frame");
    expect(r.frames[0]).toEqual({ type: "reader", partition: 1, startOffset: 0 });
    await r.close();
  });

  it("a reader's refused nack keeps its requestId (NOT_ALLOWED)", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0"]);
    const r = await connectReader(topic, { start: "earliest" });
    const [m0] = await r.waitMessages(1);
    r.send({ type: "nack", messageIds: [m0!.messageId], requestId: "reader-nack" });
    await r.until(() => r.frames.some((f) => f.type === "error"), "error frame");
    expect(r.frames.find((f) => f.type === "error")).toEqual({
      type: "error",
      code: "NOT_ALLOWED",
      message: "A reader only acks (to give permits back) and pings.",
      requestId: "reader-nack",
    });
    await r.close();
  });
});

describe("subscription admin refusals", () => {
  it("a subscription on one partition of two (a one-partition consumer) can be described, sought, cleared and deleted", async () => {
    const topic = randomTopic();
    await createTopic(topic, 2);
    await produceValues(topic, ["a", "b", "c"], [], 0);
    const c = await connect(topic, "one", { initialPosition: "earliest" }, 0);
    await c.waitMessages(3);
    await c.close();
    const st = await subStats(topic, "one");
    expect([st.backlog, (st.partitions as unknown as { partition: number }[]).map((p) => p.partition)]).toEqual([3, [0]]);
    const list = (await (await call(`/v1/topics/${topic}/subscriptions`)).json()) as { subscriptions: { subscription: string }[] };
    expect(list.subscriptions.map((s) => s.subscription)).toEqual(["one"]);
    const sought = (await (await json("POST", `/v1/topics/${topic}/subscriptions/one/seek`, { messageId: "0000:0000000000000001" })).json()) as { backlog: number };
    expect(sought.backlog).toBe(2);
    const skipped = (await (await json("POST", `/v1/topics/${topic}/subscriptions/one/skip`, { count: 1 })).json()) as { skipped: number; backlog: number };
    expect([skipped.skipped, skipped.backlog]).toEqual([1, 1]);
    await expectError(await json("POST", `/v1/topics/${topic}/subscriptions/one/skip`, { count: 1, partition: 1 }), "SUBSCRIPTION_NOT_FOUND", 404);
    await expectError(await json("POST", `/v1/topics/${topic}/subscriptions/one/seek`, { messageId: "0001:0000000000000000" }), "SUBSCRIPTION_NOT_FOUND", 404);
    const cleared = (await (await json("POST", `/v1/topics/${topic}/subscriptions/one/clear-backlog`, {})).json()) as { cleared: number; backlog: number };
    expect([cleared.cleared, cleared.backlog]).toEqual([1, 0]);
    expect((await call(`/v1/topics/${topic}/subscriptions/one`, { method: "DELETE" })).status).toBe(200);
    await expectError(await call(`/v1/topics/${topic}/subscriptions/one`), "SUBSCRIPTION_NOT_FOUND", 404);
    await expectError(await call(`/v1/topics/${topic}/subscriptions/one`, { method: "DELETE" }), "SUBSCRIPTION_NOT_FOUND", 404);
  });

  it("seek without a target, by a message id of a missing partition, and skip on a missing partition are refused and change nothing", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["a", "b", "c"]);
    expect((await json("PUT", `/v1/topics/${topic}/subscriptions/s`, { initialPosition: "earliest" })).status).toBe(201);
    const e = await expectError(await json("POST", `/v1/topics/${topic}/subscriptions/s/seek`, {}), "INVALID_REQUEST", 400);
    expect(e.details).toEqual({ field: "position" });
    await expectError(await json("POST", `/v1/topics/${topic}/subscriptions/s/seek`, { messageId: "0007:0000000000000001" }), "INVALID_MESSAGE_ID", 400);
    await expectError(await json("POST", `/v1/topics/${topic}/subscriptions/s/skip`, { count: 2, partition: 5 }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await json("PUT", `/v1/topics/${topic}/subscriptions/t`, { messageId: "0003:0000000000000000" }), "INVALID_MESSAGE_ID", 400);
    await expectError(await call(`/v1/topics/${topic}/subscriptions/t`), "SUBSCRIPTION_NOT_FOUND", 404);
    const st = await subStats(topic, "s");
    expect([st.backlog, st.partitions[0]!.markDeletePosition]).toEqual([3, -1]);
  });
});

describe("HTTP pull refusals", () => {
  it("a receive on an exclusive or failover subscription without consumers is refused (CONSUMER_BUSY) and leaves its type", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["a", "b"]);
    for (const type of ["exclusive", "failover"]) {
      expect((await json("PUT", `/v1/topics/${topic}/subscriptions/${type}`, { type, initialPosition: "earliest" })).status).toBe(201);
      const e = await expectError(await json("POST", `/v1/topics/${topic}/partitions/0/subscriptions/${type}/receive`, {}), "CONSUMER_BUSY", 409);
      expect(e.details).toEqual({ subscriptionType: type });
      const st = (await subStats(topic, type)) as Awaited<ReturnType<typeof subStats>> & { type: string };
      expect([st.type, st.backlog, st.unacked]).toEqual([type, 2, 0]);
    }
  });
});
