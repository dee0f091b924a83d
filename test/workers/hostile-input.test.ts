/**
 * Hostile input (issue 15) through the real gateway and Durable Objects: the ReDoS
 * reproduction of a consumer-group subscription regex, and parsing as strict as
 * docs/PROTOCOL.md says. No timing thresholds: a backtracking engine makes these requests
 * never return, so completing at all is the behaviour under test.
 */
import { describe as suite, expect, it } from "vitest";
import type { ConsumerGroupHeartbeatResponse } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, json } from "./helpers.ts";

const randomGroup = (): string => `g-${crypto.randomUUID()}`;

suite("subscription regexes run in linear time (RE2)", () => {
  it("the issue's reproduction: (a+)+$ against a topic named a...ab answers, and /v1/health answers meanwhile", async () => {
    // A topic name part is at most 249 characters; 200 a's already take V8's backtracking
    // engine longer than the age of the universe (the unit tier runs 10,000).
    const attack = `${"a".repeat(200)}b${crypto.randomUUID().slice(0, 8)}`;
    await createTopic(attack);
    const heartbeat = json("POST", `/v1/groups/${randomGroup()}/heartbeat`, { memberEpoch: 0, subscribedTopicRegex: "(a+)+$" });
    const health = call("/v1/health");
    const [hb, h] = await Promise.all([heartbeat, health]);
    expect(h.status).toBe(200);
    const text = await hb.text();
    expect(hb.status, text).toBe(200);
    const r = JSON.parse(text) as ConsumerGroupHeartbeatResponse;
    expect(r.assignment.some((tp) => tp.topic === `public/default/${attack}`)).toBe(false);

    // The same shape that does match: the matcher really ran over the topic list.
    const hit = await json("POST", `/v1/groups/${randomGroup()}/heartbeat`, { memberEpoch: 0, subscribedTopicRegex: `(a+)+b${attack.slice(201)}` });
    const hitBody = (await hit.json()) as ConsumerGroupHeartbeatResponse;
    expect(hitBody.assignment).toEqual([{ topic: `public/default/${attack}`, partitions: [0] }]);
  });

  it("RE2 syntax is accepted ((?i), \\pL) and backreferences, lookaround and oversized programs are INVALID_REGULAR_EXPRESSION", async () => {
    const topic = `Orders-${crypto.randomUUID()}`;
    await createTopic(topic);
    const ok = await json("POST", `/v1/groups/${randomGroup()}/heartbeat`, { memberEpoch: 0, subscribedTopicRegex: `(?i)orders-${topic.slice(7)}` });
    expect(((await ok.json()) as ConsumerGroupHeartbeatResponse).assignment).toEqual([{ topic: `public/default/${topic}`, partitions: [0] }]);
    for (const bad of ["(a)\\1", "(?=orders).*", "(?<!x)orders", "\\pL{1000}\\pL{1000}\\pL{1000}", "a{1001}"]) {
      const g = randomGroup();
      const e = await expectError(await json("POST", `/v1/groups/${g}/heartbeat`, { memberEpoch: 0, subscribedTopicRegex: bad }), "INVALID_REGULAR_EXPRESSION", 400);
      expect(e.details?.field).toBe("subscribedTopicRegex");
      // Rejected: the group was not created.
      await expectError(await call(`/v1/groups/${g}`), "GROUP_ID_NOT_FOUND", 404);
    }
  });
});
