import { describe, expect, it } from "vitest";
import type { ProducerRecord } from "../../src/codec/index.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { Consumer, type ConsumerOptions, type ConsumerRecord } from "../../sdk/src/consumer.ts";
import type { EdgelogClientError } from "../../sdk/src/errors.ts";
import { toJson, toText } from "../../sdk/src/text.ts";
import { FakeServer, text, utf8 } from "./sdk-fake-server.ts";

const rec = (v: string, timestamp = 1000): ProducerRecord => ({ key: null, value: utf8(v), headers: [], timestamp });
const values = (rs: ConsumerRecord[]) => rs.map((r) => text(r.value));
const offsets = (rs: ConsumerRecord[]) => rs.map((r) => [r.partition, r.offset]);

function setup(partitions = 1, options: ConsumerOptions = {}) {
  const server = new FakeServer();
  server.addTopic("t", partitions);
  const consumer = new Consumer(new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch }), { retryBackoffMs: 1, maxRetryBackoffMs: 1, ...options });
  return { server, consumer };
}

describe("seek and positions", () => {
  it("skips the records below the seek offset inside a returned batch", async () => {
    const { server, consumer } = setup();
    server.append("t", 0, [rec("r0"), rec("r1"), rec("r2"), rec("r3"), rec("r4")]); // one stored batch, offsets 0..4
    consumer.assign([{ topic: "t", partition: 0 }]);
    consumer.seek({ topic: "t", partition: 0, offset: 3 });
    const got = await consumer.poll({ maxWaitMs: 0 });
    expect(offsets(got)).toEqual([
      [0, 3],
      [0, 4],
    ]);
    expect(values(got)).toEqual(["r3", "r4"]);
    expect(server.requests.find((r) => r.path.endsWith("/records"))!.query.get("offset")).toBe("3");
    expect(await consumer.position({ topic: "t", partition: 0 })).toBe(5);
  });

  it("starts at the log end by default (autoOffsetReset latest) and at the start with earliest", async () => {
    const { server, consumer } = setup();
    server.append("t", 0, [rec("old")]);
    consumer.assign([{ topic: "t", partition: 0 }]);
    expect(await consumer.position({ topic: "t", partition: 0 })).toBe(1);
    expect(await consumer.poll({ maxWaitMs: 0 })).toEqual([]);
    server.append("t", 0, [rec("new")]);
    expect(values(await consumer.poll({ maxWaitMs: 0 }))).toEqual(["new"]);

    const earliest = new Consumer(new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch }), { autoOffsetReset: "earliest" });
    earliest.assign([{ topic: "t", partition: 0 }]);
    expect(values(await earliest.poll({ maxWaitMs: 0 }))).toEqual(["old", "new"]);
  });

  it("seekToBeginning / seekToEnd use ListOffsets earliest / latest", async () => {
    const { server, consumer } = setup();
    server.append("t", 0, [rec("a"), rec("b")]);
    consumer.assign([{ topic: "t", partition: 0 }]);
    await consumer.seekToBeginning();
    expect(await consumer.position({ topic: "t", partition: 0 })).toBe(0);
    await consumer.seekToEnd([{ topic: "t", partition: 0 }]);
    expect(await consumer.position({ topic: "t", partition: 0 })).toBe(2);
  });

  it("seekToTimestamp goes to the first record with timestamp >= ts, or to the end when none", async () => {
    const { server, consumer } = setup();
    server.append("t", 0, [rec("a", 1000), rec("b", 3000), rec("c", 2000), rec("d", 4000)]);
    consumer.assign([{ topic: "t", partition: 0 }]);
    expect(await consumer.seekToTimestamp("t", 0, 2500)).toBe(1);
    expect(values(await consumer.poll({ maxWaitMs: 0 }))).toEqual(["b", "c", "d"]);
    expect(await consumer.seekToTimestamp("t", 0, 9999)).toBe(4);
    expect(await consumer.position({ topic: "t", partition: 0 })).toBe(4);
  });

  it("a seek during a pending long-poll drops its answer", async () => {
    const { server, consumer } = setup();
    server.append("t", 0, [rec("a"), rec("b")]);
    consumer.assign([{ topic: "t", partition: 0 }]);
    consumer.seek({ topic: "t", partition: 0, offset: 2 });
    const pending = consumer.poll({ maxWaitMs: 2000 });
    await new Promise((r) => setTimeout(r, 20));
    consumer.seek({ topic: "t", partition: 0, offset: 1 });
    expect(values(await pending)).toEqual(["b"]);
  });

  it("operations on an unassigned partition throw", async () => {
    const { consumer } = setup();
    expect(() => consumer.seek({ topic: "t", partition: 0, offset: 0 })).toThrow("Partition t[0] is not assigned.");
    expect(() => consumer.assign([{ topic: "t", partition: -1 }])).toThrow(RangeError);
  });
});

describe("poll", () => {
  it("returns as soon as one partition has records while the others long-poll, and delivers theirs later", async () => {
    const { server, consumer } = setup(2, { autoOffsetReset: "earliest" });
    server.append("t", 1, [rec("p1")]);
    consumer.assign([
      { topic: "t", partition: 0 },
      { topic: "t", partition: 1 },
    ]);
    const started = Date.now();
    const first = await consumer.poll({ maxWaitMs: 5000 });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(offsets(first)).toEqual([[1, 0]]);
    server.append("t", 0, [rec("p0")]); // wakes partition 0's pending long-poll
    const second = await consumer.poll({ maxWaitMs: 5000 });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(offsets(second)).toEqual([[0, 0]]);
    expect(values(second)).toEqual(["p0"]);
    consumer.close();
  });

  it("waits maxWaitMs and returns [] when nothing arrives", async () => {
    const { consumer } = setup();
    consumer.assign([{ topic: "t", partition: 0 }]);
    const started = Date.now();
    expect(await consumer.poll({ maxWaitMs: 50 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(consumer.highWatermark({ topic: "t", partition: 0 })).toBe(0);
  });

  it("returns at most maxRecords and keeps the rest for the next poll", async () => {
    const { server, consumer } = setup(1, { autoOffsetReset: "earliest" });
    server.append(
      "t",
      0,
      Array.from({ length: 10 }, (_, i) => rec(`v${i}`)),
    );
    consumer.assign([{ topic: "t", partition: 0 }]);
    const sizes: number[] = [];
    for (let i = 0; i < 3; i++) sizes.push((await consumer.poll({ maxWaitMs: 0, maxRecords: 4 })).length);
    expect(sizes).toEqual([4, 4, 2]);
    expect(await consumer.position({ topic: "t", partition: 0 })).toBe(10);
    expect(server.count("GET", /\/records$/)).toBe(1);
  });

  it("gives records with bytes, headers and timestamps; toText/toJson decode them", async () => {
    const { server, consumer } = setup(1, { autoOffsetReset: "earliest" });
    server.append("t", 0, [
      { key: utf8("k"), value: utf8('{"n":1}'), headers: [{ key: "h", value: null }], timestamp: 42 },
      { key: null, value: null, headers: [], timestamp: 43 },
    ]);
    consumer.assign([{ topic: "t", partition: 0 }]);
    const [a, b] = await consumer.poll({ maxWaitMs: 0 });
    expect(a).toEqual({ topic: "t", partition: 0, offset: 0, timestamp: 42, key: utf8("k"), value: utf8('{"n":1}'), headers: [{ key: "h", value: null }] });
    expect([toText(a!.key), toJson(a!.value)]).toEqual(["k", { n: 1 }]);
    expect([b!.key, b!.value, toText(b!.value), toJson(b!.value)]).toEqual([null, null, null, null]);
  });

  it("OFFSET_OUT_OF_RANGE rejects with autoOffsetReset none and resets with earliest", async () => {
    const { server, consumer } = setup(1, { autoOffsetReset: "none" });
    server.append("t", 0, [rec("a")]);
    consumer.assign([{ topic: "t", partition: 0 }]);
    consumer.seek({ topic: "t", partition: 0, offset: 5 });
    const e = (await consumer.poll({ maxWaitMs: 0 }).catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.details]).toEqual(["OFFSET_OUT_OF_RANGE", { logStartOffset: 0, logEndOffset: 1, highWatermark: 1 }]);

    const resetting = new Consumer(new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch }), { autoOffsetReset: "earliest" });
    resetting.assign([{ topic: "t", partition: 0 }]);
    resetting.seek({ topic: "t", partition: 0, offset: 5 });
    expect(values(await resetting.poll({ maxWaitMs: 0 }))).toEqual(["a"]);
    expect(server.requests.filter((r) => r.path.endsWith("/records")).map((r) => r.query.get("offset"))).toEqual(["5", "5", "0"]);
  });

  it("rejects a non-retriable fetch error at once (UNKNOWN_TOPIC_OR_PARTITION)", async () => {
    const { server, consumer } = setup();
    consumer.assign([{ topic: "t", partition: 3 }]);
    consumer.seek({ topic: "t", partition: 3, offset: 0 });
    const e = (await consumer.poll({ maxWaitMs: 0 }).catch((x: unknown) => x)) as EdgelogClientError;
    expect(e.code).toBe("UNKNOWN_TOPIC_OR_PARTITION");
    expect(server.count("GET", /\/records$/)).toBe(1);
  });

  it("retries retriable fetch errors and rejects after `retries` consecutive failures", async () => {
    let calls = 0;
    const failing: typeof fetch = async () => {
      calls++;
      return new Response(JSON.stringify({ error: { code: "UNAVAILABLE", message: "busy", retriable: true } }), { status: 503 });
    };
    const consumer = new Consumer(new EdgelogClient({ baseUrl: "http://x", fetch: failing }), { retries: 2, retryBackoffMs: 1, maxRetryBackoffMs: 1 });
    consumer.assign([{ topic: "t", partition: 0 }]);
    consumer.seek({ topic: "t", partition: 0, offset: 0 });
    const e = (await consumer.poll({ maxWaitMs: 1000 }).catch((x: unknown) => x)) as EdgelogClientError;
    expect(e.code).toBe("UNAVAILABLE");
    expect(calls).toBe(3);
  });

  it("poll({maxWaitMs: 0}) answers [] only when every partition was asked: waits for a fetch an earlier poll left in flight instead of answering [] without data", async () => {
    const server = new FakeServer();
    server.addTopic("t", 2);
    server.append("t", 0, [{ key: null, value: utf8("slow"), headers: [], timestamp: 1 }]);
    server.append("t", 1, [{ key: null, value: utf8("fast"), headers: [], timestamp: 1 }]);
    // Partition 0's fetches answer 150 ms late; everything else at once.
    const slowFetch: typeof fetch = async (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (/\/partitions\/0\/records/.test(url)) await new Promise((r) => setTimeout(r, 150));
      return server.fetch(input, init);
    };
    const consumer = new Consumer(new EdgelogClient({ baseUrl: "http://x", fetch: slowFetch }));
    consumer.assign([
      { topic: "t", partition: 0 },
      { topic: "t", partition: 1 },
    ]);
    await consumer.seekToBeginning();
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const batch = await consumer.poll({ maxWaitMs: 0 });
      if (batch.length === 0) break;
      seen.push(...batch.map((r) => `${r.partition}:${toText(r.value)}`));
    }
    expect(seen).toEqual(["1:fast", "0:slow"]);
    consumer.close();
  });
});
