// GroupConsumer.subscribe sends regex subscriptions to the coordinator as RE2 source
// (issue 15): a string pattern untouched (RE2 syntax such as `(?i)` that JavaScript's RegExp
// rejects), RegExp sources as they are, several patterns as one alternation of groups.
import { describe, expect, it } from "vitest";
import type { ConsumerGroupHeartbeatRequest } from "../../src/protocol/groups.ts";
import { compileSubscriptionRegex } from "../../src/groups/subscription-regex.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { GroupConsumer, type GroupsApi, type SubscribeOptions } from "../../sdk/src/group-consumer.ts";

/** Subscribes, runs until the first heartbeat, and returns its subscribedTopicRegex. */
async function sentRegex(s: SubscribeOptions): Promise<string | null | undefined> {
  let first: ConsumerGroupHeartbeatRequest | null = null;
  const api: GroupsApi = {
    heartbeat: async (_g, req) => {
      first ??= req;
      return { memberId: "m", memberEpoch: 1, heartbeatIntervalMs: 1000, assignment: [], assignor: "range", state: "stable" };
    },
    leaveGroup: async () => ({ memberId: "m", memberEpoch: -1 }),
    commitOffsets: async () => ({ offsets: [] }),
    fetchOffsets: async () => ({ groupId: "g", topics: [] }) as never,
  };
  const c = new GroupConsumer(new EdgelogClient({ baseUrl: "http://127.0.0.1:9" }), { groupId: "g" }, api);
  await c.subscribe(s);
  await c.run({ eachMessage: async () => undefined });
  for (let i = 0; i < 100 && first === null; i++) await new Promise((r) => setTimeout(r, 5));
  await c.disconnect();
  return (first as ConsumerGroupHeartbeatRequest | null)?.subscribedTopicRegex;
}

describe("GroupConsumer.subscribe with patterns", () => {
  it("sends a string pattern untouched, even RE2-only syntax", async () => {
    expect(await sentRegex({ pattern: "(?i)orders-.*" })).toBe("(?i)orders-.*");
  });

  it("sends a RegExp's source, and several patterns as one alternation that RE2 compiles", async () => {
    const sent = await sentRegex({ topics: ["plain", /orders-.*/], pattern: "(?i)PAY.*" });
    expect(sent).toBe("(?:orders-.*)|(?:(?i)PAY.*)");
    const re = compileSubscriptionRegex(sent as string);
    expect([re.matches("orders-eu"), re.matches("payments"), re.matches("ORDERS-eu"), re.matches("plain")]).toEqual([true, true, false, false]);
  });
});
