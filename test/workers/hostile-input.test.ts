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

suite("parsing as strict as the contract", () => {
  it("topic configs: exact decimal strings, documented minima; a rejected create or alter changes nothing", async () => {
    const name = `cfg-${crypto.randomUUID()}`;
    const bad: [string, unknown][] = [
      ["max.message.bytes", "1 "],
      ["max.message.bytes", " 2048"],
      ["max.message.bytes", "02048"],
      ["max.message.bytes", "+2048"],
      ["max.message.bytes", "2e3"],
      ["max.message.bytes", "2048.0"],
      ["max.message.bytes", 1],
      ["max.message.bytes", 63],
      ["retention.ms", "-01"],
      ["retention.ms", "-0"],
      ["retention.ms", -2],
      ["segment.bytes", 14],
      ["segment.bytes", 1048575],
      ["cleanup.policy", "del ete"],
    ];
    for (const [key, value] of bad) {
      const e = await expectError(await json("POST", "/v1/topics", { name, configs: { [key]: value } }), "INVALID_CONFIG", 400);
      expect(e.details?.config, `${key}=${JSON.stringify(value)}`).toBe(key);
    }
    await expectError(await call(`/v1/topics/${name}`), "UNKNOWN_TOPIC_OR_PARTITION", 404);

    const t = await createTopic(name, 1, { "max.message.bytes": "64", "retention.ms": "-1", "segment.bytes": 1048576, "cleanup.policy": "compact, delete" });
    expect([t.configs["max.message.bytes"], t.configs["retention.ms"], t.configs["segment.bytes"], t.configs["cleanup.policy"]]).toEqual([64, -1, 1048576, "compact,delete"]);
    await expectError(await json("PATCH", `/v1/topics/${name}`, { configs: { "max.message.bytes": "100 " } }), "INVALID_CONFIG", 400);
    const after = (await (await call(`/v1/topics/${name}`)).json()) as { configs: Record<string, unknown> };
    expect(after.configs["max.message.bytes"]).toBe(64);
  });

  it("group configs: exact decimal strings", async () => {
    const g = randomGroup();
    const join = await json("POST", `/v1/groups/${g}/heartbeat`, { memberEpoch: 0, subscribedTopicNames: ["x"] });
    expect(join.status).toBe(200);
    for (const v of ["05000", "5000 ", "+5000"]) {
      await expectError(await json("PATCH", `/v1/groups/${g}`, { configs: { "heartbeat.interval.ms": v } }), "INVALID_CONFIG", 400);
    }
    const ok = await json("PATCH", `/v1/groups/${g}`, { configs: { "heartbeat.interval.ms": "4000" } });
    expect(((await ok.json()) as { configs: Record<string, number> }).configs["heartbeat.interval.ms"]).toBe(4000);
  });

  it("fetch: every clamped parameter clamps, even beyond 2^53; malformed values are INVALID_REQUEST", async () => {
    const topic = `clamp-${crypto.randomUUID()}`;
    await createTopic(topic);
    const huge = "9".repeat(40);
    for (const q of [`maxWaitMs=${huge}&minBytes=0`, `maxWaitMs=9007199254740993&minBytes=0`, `maxRecords=${huge}`, `maxBytes=${huge}`, `minBytes=${huge}&maxWaitMs=0`]) {
      const res = await call(`/v1/topics/${topic}/partitions/0/records?offset=0&${q}`);
      const body = await res.text();
      expect(res.status, `${q}: ${body}`).toBe(200);
      expect((JSON.parse(body) as { records: unknown[] }).records).toEqual([]);
    }
    for (const q of ["maxWaitMs=-1", "maxWaitMs=1.5", "maxWaitMs=01", "maxRecords=0", "maxBytes=1e3"]) {
      await expectError(await call(`/v1/topics/${topic}/partitions/0/records?offset=0&${q}`), "INVALID_REQUEST", 400);
    }
  });

  it("reset-offsets {to: offset} clamps an integer beyond 2^53 to the log end", async () => {
    const topic = `reset-${crypto.randomUUID()}`;
    await createTopic(topic);
    await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "a" }, { value: "b" }] });
    const g = randomGroup();
    const res = await json("POST", `/v1/groups/${g}/reset-offsets`, { topics: [{ topic, partitions: [0] }], spec: { to: "offset", offset: 1e20 }, dryRun: true });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect((JSON.parse(text) as { offsets: { offset: number }[] }).offsets.map((o) => o.offset)).toEqual([2]);
  });

  it("Durable Streams: Producer-Epoch and Producer-Seq with leading zeros or a sign are 400 and append nothing", async () => {
    const path = `/v1/stream/ds-${crypto.randomUUID()}`;
    const created = await call(path, { method: "PUT", headers: { "content-type": "text/plain" } });
    expect(created.status).toBe(201);
    const tail = async () => (await call(path, { method: "HEAD" })).headers.get("Stream-Next-Offset");
    const before = await tail();
    for (const [epoch, seq] of [
      ["00", "0"],
      ["01", "0"],
      ["+1", "0"],
      ["0", "00"],
      ["0", "1.0"],
    ]) {
      const res = await call(path, { method: "POST", headers: { "content-type": "text/plain", "Producer-Id": "p", "Producer-Epoch": epoch!, "Producer-Seq": seq! }, body: "x" });
      const e = await expectError(res, "INVALID_REQUEST", 400);
      expect(e.message).toMatch(/without sign or leading zeros/);
    }
    expect(await tail()).toBe(before);
    const ok = await call(path, { method: "POST", headers: { "content-type": "text/plain", "Producer-Id": "p", "Producer-Epoch": "0", "Producer-Seq": "0" }, body: "x" });
    expect(ok.status).toBe(200);
    expect(await tail()).not.toBe(before);
  });
});
