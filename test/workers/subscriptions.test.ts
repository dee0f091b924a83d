/**
 * Subscriptions end to end (issue 17): consumers over the native WebSocket API through the real
 * gateway to the real partition objects, with the exact expectations. Orders and counts
 * are asserted, never timing thresholds.
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { createTopic, expectError, call, randomTopic } from "./helpers.ts";
import { connect, produceValues, subStats, values } from "./subs-helpers.ts";

describe("native WebSocket consumer", () => {
  it("delivers in order, acks after the durable commit, and stats follow", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1", "m2"]);
    const c = await connect(topic, "s", { type: "exclusive", initialPosition: "earliest" });
    const got = await c.waitMessages(3);
    expect(values(got)).toEqual(["m0", "m1", "m2"]);
    expect(got.map((m) => m.redeliveryCount)).toEqual([0, 0, 0]);
    expect(c.frames[0]).toMatchObject({ type: "connected", subscription: "s", subscriptionType: "exclusive", partition: 0, active: true });
    expect(await c.ack([got[0]!.messageId, got[2]!.messageId])).toBe(2);
    const st = await subStats(topic, "s");
    expect({ backlog: st.backlog, md: st.partitions[0]!.markDeletePosition, ranges: st.partitions[0]!.ackedRanges }).toEqual({ backlog: 1, md: 0, ranges: [[2, 2]] });
    await c.close();
  });
});
