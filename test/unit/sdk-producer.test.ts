import { afterEach, describe, expect, it, vi } from "vitest";
import { BATCH_HEADER_BYTES, recordSizeBytes } from "../../src/codec/index.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { EdgelogClientError } from "../../sdk/src/errors.ts";
import { Producer, type ProducerOptions } from "../../sdk/src/producer.ts";
import { FakeServer, text, utf8 } from "./sdk-fake-server.ts";

/** Fast retries so attempt counts are observable without waiting. */
const FAST: ProducerOptions = { retryBackoffMs: 1, maxRetryBackoffMs: 1 };

function setup(partitions = 1, options: ProducerOptions = {}) {
  const server = new FakeServer();
  server.addTopic("t", partitions);
  const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
  const producer = new Producer(client, { ...FAST, ...options });
  return { server, producer };
}

/** A fake server on topic "t" (1 partition) whose first produce request is held until `release()`. */
function holdFirstProduce(): { server: FakeServer; gated: typeof fetch; release: () => void } {
  const server = new FakeServer();
  server.addTopic("t", 1);
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let produces = 0;
  const gated: typeof fetch = async (input, init) => {
    if (init?.method === "POST" && String(input).endsWith("/records") && ++produces === 1) await gate;
    return server.fetch(input, init);
  };
  return { server, gated, release };
}

const produceRequests = (server: FakeServer) => server.count("POST", /\/partitions\/\d+\/records$/);

afterEach(() => {
  vi.useRealTimers();
});

describe("batching", () => {
  it("collects the messages of several send() calls within lingerMs into one batch", async () => {
    const { server, producer } = setup(1, { lingerMs: 60_000 });
    const sends = [producer.send({ topic: "t", messages: [{ value: "a" }] }), producer.send({ topic: "t", messages: [{ value: "b" }, { value: "c" }] })];
    await producer.flush();
    const [m1, m2] = await Promise.all(sends);
    expect(produceRequests(server)).toBe(1);
    expect(server.produced[0]!.records.map((r) => text(r.value))).toEqual(["a", "b", "c"]);
    expect(m1).toEqual([{ topic: "t", partition: 0, offset: 0, timestamp: server.produced[0]!.records[0]!.timestamp }]);
    expect(m2!.map((m) => m.offset)).toEqual([1, 2]);
  });

  it("sends a batch when lingerMs passes, not before", async () => {
    vi.useFakeTimers();
    const { server, producer } = setup(1, { lingerMs: 5 });
    const sent = producer.send({ topic: "t", messages: [{ value: "a" }] });
    await vi.advanceTimersByTimeAsync(4);
    expect(produceRequests(server)).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(produceRequests(server)).toBe(1);
    expect((await sent).map((m) => m.offset)).toEqual([0]);
  });

  it("keeps filling a partition's open batch while its previous request is in flight (as Kafka's accumulator)", async () => {
    const { server, gated, release } = holdFirstProduce();
    const producer = new Producer(new EdgelogClient({ baseUrl: "http://x", fetch: gated }), { ...FAST, lingerMs: 1 });
    const first = producer.send({ topic: "t", messages: [{ value: "a" }] });
    await new Promise((r) => setTimeout(r, 20)); // the first request is now held in flight
    const later = ["b", "c", "d"].map((value) => producer.send({ topic: "t", messages: [{ value }] }));
    await new Promise((r) => setTimeout(r, 20)); // well past lingerMs
    release();
    await Promise.all([first, ...later]);
    expect(server.produced.map((b) => b.records.map((r) => text(r.value)))).toEqual([["a"], ["b", "c", "d"]]);
  });

  it("seals a batch when the next record would exceed maxBatchBytes", async () => {
    const value = "x".repeat(100);
    const perRecord = recordSizeBytes({ key: null, value: utf8(value), headers: [], timestamp: 0 }) + 8;
    const maxBatchBytes = BATCH_HEADER_BYTES + 3 * perRecord; // exactly 3 records fit
    const { server, producer } = setup(1, { lingerMs: 60_000, maxBatchBytes });
    const sent = producer.send({ topic: "t", messages: Array.from({ length: 7 }, (_, i) => ({ value, timestamp: 1000 + i })) });
    await producer.flush();
    expect((await sent).map((m) => m.offset)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(server.produced.map((b) => b.records.length)).toEqual([3, 3, 1]);
    for (const b of server.produced) expect(b.bytes.length).toBeLessThanOrEqual(maxBatchBytes);
  });

  it("starts a filled batch's request while a large send() is still being accumulated", async () => {
    const value = "x".repeat(100);
    const perRecord = recordSizeBytes({ key: null, value: utf8(value), headers: [], timestamp: 0 }) + 8;
    const server = new FakeServer();
    server.addTopic("t", 1);
    let bufferedAtFirstProduce: number | undefined;
    let producer!: Producer;
    const watching: typeof fetch = async (input, init) => {
      if (init?.method === "POST" && String(input).endsWith("/records")) bufferedAtFirstProduce ??= producer.bufferedBytes;
      return server.fetch(input, init);
    };
    producer = new Producer(new EdgelogClient({ baseUrl: "http://x", fetch: watching }), { ...FAST, lingerMs: 60_000, maxBatchBytes: BATCH_HEADER_BYTES + 10 * perRecord });
    const sent = producer.send({ topic: "t", messages: Array.from({ length: 1000 }, () => ({ value })) });
    await producer.flush();
    expect((await sent).map((m) => m.offset)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    // The first request left as soon as its batch was full (10 records), not after all 1000:
    // 10 records buffered, counted at their exact encoded size (offset deltas 0-9 and equal
    // timestamps take one byte each, as in a one-record batch).
    expect(bufferedAtFirstProduce).toBe(10 * (perRecord - 8));
  });

  it("sends a record larger than the topic's max.message.bytes alone, so only it fails", async () => {
    const server = new FakeServer();
    server.addTopic("t", 1, 200);
    const producer = new Producer(new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch }), { ...FAST, lingerMs: 60_000 });
    const small = producer.send({ topic: "t", messages: [{ value: "a" }] });
    const big = producer.send({ topic: "t", messages: [{ value: "x".repeat(300) }] }).catch((e: unknown) => e);
    const after = producer.send({ topic: "t", messages: [{ value: "b" }] });
    await producer.flush();
    expect((await small).map((m) => m.offset)).toEqual([0]);
    expect(((await big) as EdgelogClientError).code).toBe("RECORD_TOO_LARGE");
    expect((await after).map((m) => m.offset)).toEqual([1]);
    expect(server.produced.map((b) => b.records.length)).toEqual([1, 1, 1]);
  });

  it("a send() with one failing message rejects with its error once the others are appended", async () => {
    const server = new FakeServer();
    server.addTopic("t", 1, 200);
    const producer = new Producer(new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch }), { ...FAST, lingerMs: 60_000 });
    const sent = producer.send({ topic: "t", messages: [{ value: "a" }, { value: "x".repeat(300) }, { value: "b" }] }).catch((e: unknown) => e);
    await producer.flush();
    expect(((await sent) as EdgelogClientError).code).toBe("RECORD_TOO_LARGE");
    expect(server.log("t", 0).records.map((r) => text(r.value))).toEqual(["a", "b"]);
  });

  it("rejects maxBatchBytes above the server's request limit and maxInFlight > 1 with idempotence", () => {
    const client = new EdgelogClient({ baseUrl: "http://x" });
    expect(() => new Producer(client, { maxBatchBytes: 8 * 1024 * 1024 + 1 })).toThrow(RangeError);
    expect(() => new Producer(client, { maxInFlight: 2 })).toThrow(/maxInFlight must be 1 when idempotent/);
    expect(() => new Producer(client, { maxInFlight: 2, idempotent: false })).not.toThrow();
  });
});

describe("partitioning (same as the server and the Java client)", () => {
  it('puts key "100:48069" on partition 9 of 12 and "wu" on partition 0 of 10', async () => {
    const server = new FakeServer();
    server.addTopic("twelve", 12);
    server.addTopic("ten", 10);
    const producer = new Producer(new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch }), FAST);
    const [a] = await producer.send({ topic: "twelve", messages: [{ key: "100:48069", value: "v" }] });
    const [b] = await producer.send({ topic: "ten", messages: [{ key: utf8("wu"), value: "v" }] });
    expect([a!.partition, b!.partition]).toEqual([9, 0]);
    expect(server.requests.filter((r) => r.method === "POST").map((r) => r.path)).toEqual(["/v1/producers", "/v1/topics/twelve/partitions/9/records", "/v1/topics/ten/partitions/0/records"]);
  });

  it("an explicit partition wins over the key", async () => {
    const { server, producer } = setup(12);
    const [m] = await producer.send({ topic: "t", messages: [{ key: "100:48069", value: "v", partition: 4 }] });
    expect(m!.partition).toBe(4);
    expect(server.produced[0]!.partition).toBe(4);
  });

  it("null keys stick to one partition per batch, then move to the next (KIP-480)", async () => {
    const { server, producer } = setup(3, { lingerMs: 60_000 });
    const first = producer.send({ topic: "t", messages: [{ value: "a" }, { value: "b" }, { value: "c" }] });
    await producer.flush();
    const second = producer.send({ topic: "t", messages: [{ value: "d" }] });
    await producer.flush();
    const third = producer.send({ topic: "t", messages: [{ value: "e" }] });
    await producer.flush();
    const p0 = (await first)[0]!.partition;
    expect((await first).map((m) => m.partition)).toEqual([p0, p0, p0]);
    expect((await second)[0]!.partition).toBe((p0 + 1) % 3);
    expect((await third)[0]!.partition).toBe((p0 + 2) % 3);
    expect(server.produced.map((b) => b.records.length)).toEqual([3, 1, 1]);
  });

  it("re-reads the partition count after UNKNOWN_TOPIC_OR_PARTITION", async () => {
    const { server, producer } = setup(1);
    await producer.send({ topic: "t", messages: [{ value: "a" }] });
    const e = await producer.send({ topic: "t", messages: [{ value: "b", partition: 3 }] }).catch((x: unknown) => x);
    expect((e as EdgelogClientError).code).toBe("UNKNOWN_TOPIC_OR_PARTITION");
    expect(server.count("GET", /^\/v1\/topics\/t$/)).toBe(1);
    await producer.send({ topic: "t", messages: [{ value: "c" }] });
    expect(server.count("GET", /^\/v1\/topics\/t$/)).toBe(2);
  });

  it("fails fast with UNKNOWN_TOPIC_OR_PARTITION for a missing topic", async () => {
    const { server, producer } = setup(1);
    const e = (await producer.send({ topic: "missing", messages: [{ value: "a" }] }).catch((x: unknown) => x)) as EdgelogClientError;
    expect(e.code).toBe("UNKNOWN_TOPIC_OR_PARTITION");
    expect(server.count("GET", /^\/v1\/topics\/missing$/)).toBe(1);
    expect(produceRequests(server)).toBe(0);
  });
});

describe("retries", () => {
  it("retries retriable errors and succeeds: UNAVAILABLE, REQUEST_TIMED_OUT, then ok = 3 attempts", async () => {
    const { server, producer } = setup();
    server.produceScript = [{ code: "UNAVAILABLE" }, { code: "REQUEST_TIMED_OUT" }];
    const [m] = await producer.send({ topic: "t", messages: [{ value: "a" }] });
    expect(m!.offset).toBe(0);
    expect(produceRequests(server)).toBe(3);
    expect(server.log("t", 0).records.length).toBe(1);
  });

  it("gives up after `retries` retries: 1 + 5 attempts by default", async () => {
    const { server, producer } = setup();
    server.produceScript = Array.from({ length: 10 }, () => ({ code: "UNAVAILABLE" as const }));
    const e = (await producer.send({ topic: "t", messages: [{ value: "a" }] }).catch((x: unknown) => x)) as EdgelogClientError;
    expect(e).toBeInstanceOf(EdgelogClientError);
    expect([e.code, e.retriable]).toEqual(["UNAVAILABLE", true]);
    expect(produceRequests(server)).toBe(6);
  });

  it("honours retries: 2 (3 attempts) and retries a non-JSON 502 (INTERNAL is retriable)", async () => {
    const { server, producer } = setup(1, { retries: 2 });
    server.produceScript = [{ rawStatus: 502, rawBody: "<html>bad gateway</html>" }, { rawStatus: 502, rawBody: "x" }, { rawStatus: 502, rawBody: "y" }, "ok"];
    const e = (await producer.send({ topic: "t", messages: [{ value: "a" }] }).catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.httpStatus]).toEqual(["INTERNAL", 502]);
    expect(produceRequests(server)).toBe(3);
  });

  it("does not retry non-retriable errors: exactly 1 attempt", async () => {
    const { server, producer } = setup();
    server.produceScript = [{ code: "INVALID_BATCH" }];
    const e = (await producer.send({ topic: "t", messages: [{ value: "a" }] }).catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.retriable, e.httpStatus]).toEqual(["INVALID_BATCH", false, 400]);
    expect(produceRequests(server)).toBe(1);
  });

  it("decides by code, not status: RECORD_TOO_LARGE answered with 503 is not retried", async () => {
    const { server, producer } = setup();
    server.produceScript = [{ code: "RECORD_TOO_LARGE", status: 503 }];
    const e = (await producer.send({ topic: "t", messages: [{ value: "a" }] }).catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.httpStatus]).toEqual(["RECORD_TOO_LARGE", 503]);
    expect(produceRequests(server)).toBe(1);
  });
});

describe("idempotence (KIP-98)", () => {
  it("a retry after a lost acknowledgement resends the same bytes and base sequence; the server dedups", async () => {
    const { server, producer } = setup();
    server.produceScript = [{ code: "UNAVAILABLE", appendFirst: true }];
    const first = await producer.send({ topic: "t", messages: [{ value: "a" }, { value: "b" }, { value: "c" }] });
    const second = await producer.send({ topic: "t", messages: [{ value: "d" }] });
    expect(first.map((m) => m.offset)).toEqual([0, 1, 2]);
    expect(second.map((m) => m.offset)).toEqual([3]);
    expect(server.produced.map((b) => [b.header.producerId, b.header.producerEpoch, b.header.baseSequence, b.records.length])).toEqual([
      [1000, 0, 0, 3],
      [1000, 0, 0, 3],
      [1000, 0, 3, 1],
    ]);
    expect(server.produced[1]!.bytes).toEqual(server.produced[0]!.bytes);
    expect(server.log("t", 0).records.map((r) => text(r.value))).toEqual(["a", "b", "c", "d"]);
    expect(server.count("POST", /^\/v1\/producers$/)).toBe(1);
  });

  it("the sequence advances only on success: after a rejected batch the next one reuses its base sequence", async () => {
    const { server, producer } = setup();
    await producer.send({ topic: "t", messages: [{ value: "a" }, { value: "b" }] });
    server.produceScript = [{ code: "INVALID_BATCH" }];
    await producer.send({ topic: "t", messages: [{ value: "x" }] }).catch(() => undefined);
    await producer.send({ topic: "t", messages: [{ value: "c" }] });
    expect(server.produced.map((b) => b.header.baseSequence)).toEqual([0, 2, 2]);
    expect(server.log("t", 0).records.map((r) => text(r.value))).toEqual(["a", "b", "c"]);
  });

  it("keeps one sequence per partition under one producer id", async () => {
    const { server, producer } = setup(2);
    await producer.send({
      topic: "t",
      messages: [
        { value: "a", partition: 0 },
        { value: "b", partition: 1 },
      ],
    });
    await producer.send({
      topic: "t",
      messages: [
        { value: "c", partition: 1 },
        { value: "d", partition: 1 },
      ],
    });
    await producer.send({ topic: "t", messages: [{ value: "e", partition: 0 }] });
    expect(server.produced.map((b) => [b.partition, b.header.producerId, b.header.baseSequence])).toEqual([
      [0, 1000, 0],
      [1, 1000, 0],
      [1, 1000, 1],
      [0, 1000, 1],
    ]);
    expect(server.count("POST", /^\/v1\/producers$/)).toBe(1);
  });

  it("after retries are exhausted the sequence is unknown: the next batch uses a new producer id from sequence 0", async () => {
    const { server, producer } = setup(1, { retries: 1 });
    server.produceScript = [{ code: "UNAVAILABLE", appendFirst: true }, { code: "UNAVAILABLE" }];
    await producer.send({ topic: "t", messages: [{ value: "a" }] }).catch(() => undefined);
    await producer.send({ topic: "t", messages: [{ value: "b" }] });
    expect(server.produced.map((b) => [b.header.producerId, b.header.baseSequence])).toEqual([
      [1000, 0],
      [1000, 0],
      [1001, 0],
    ]);
  });

  it("a batch sealed during its predecessor's flight is sent with the base sequence of the predecessor when that one fails", async () => {
    const { server, gated, release } = holdFirstProduce();
    const value = "x".repeat(100);
    const perRecord = recordSizeBytes({ key: null, value: utf8(`${value}a`), headers: [], timestamp: 0 }) + 8;
    // Two records per batch: the second send() fills a sealed batch while the first is held.
    const producer = new Producer(new EdgelogClient({ baseUrl: "http://x", fetch: gated }), { ...FAST, lingerMs: 60_000, maxBatchBytes: BATCH_HEADER_BYTES + 2 * perRecord });
    server.produceScript = [{ code: "INVALID_BATCH" }];
    const first = producer.send({ topic: "t", messages: [{ value: `${value}a` }, { value: `${value}b` }] }).catch((e: unknown) => e);
    const second = producer.send({ topic: "t", messages: [{ value: `${value}c` }, { value: `${value}d` }] });
    // The first request is held in flight while the second batch is sealed and checksummed ahead.
    await new Promise((r) => setTimeout(r, 20));
    release();
    expect(await first).toBeInstanceOf(EdgelogClientError);
    expect((await second).map((m) => m.offset)).toEqual([0, 1]);
    // Sent with base sequence 0: the first batch failed, so its sequence was never used.
    expect(server.produced.map((b) => [b.header.producerId, b.header.baseSequence, b.records.length])).toEqual([
      [1000, 0, 2],
      [1000, 0, 2],
    ]);
    expect(server.log("t", 0).records.map((r) => text(r.value))).toEqual([`${value}c`, `${value}d`]);
  });

  it("sends batches encoded ahead with dense sequences, and reused buffers never alter a retried batch's bytes", async () => {
    const value = "v".repeat(200);
    const perRecord = recordSizeBytes({ key: null, value: utf8(`${value}0-0`), headers: [], timestamp: 0 }) + 8;
    const { server, producer } = setup(2, { lingerMs: 60_000, maxBatchBytes: BATCH_HEADER_BYTES + 3 * perRecord });
    // The 2nd produce request appends but loses its acknowledgement: its retry must carry the same bytes.
    server.produceScript = ["ok", { code: "UNAVAILABLE", appendFirst: true }];
    const sends: Promise<Awaited<ReturnType<typeof producer.send>>>[] = [];
    const sent: { value: string; partition: number }[] = [];
    for (let i = 0; i < 8; i++) {
      const messages = Array.from({ length: 6 }, (_, j) => ({ value: `${value}${i}-${j}`, partition: (i + j) % 2 }));
      sent.push(...messages);
      sends.push(producer.send({ topic: "t", messages }));
    }
    await producer.flush();
    const results = (await Promise.all(sends)).flat();
    const retried = server.produced.filter((b, i) => server.produced.findIndex((o) => o.partition === b.partition && o.header.baseSequence === b.header.baseSequence) !== i);
    expect(retried).toHaveLength(1);
    const original = server.produced.find((o) => o.partition === retried[0]!.partition && o.header.baseSequence === retried[0]!.header.baseSequence)!;
    expect(retried[0]!.bytes).toEqual(original.bytes);
    for (const p of [0, 1]) {
      let expected = 0;
      for (const b of server.produced.filter((x) => x.partition === p && x !== retried[0])) {
        expect(b.header.baseSequence).toBe(expected);
        expected += b.records.length;
      }
      // Every message once, in send order, at the offset its result names.
      const log = server.log("t", p).records.map((r) => text(r.value));
      expect(log).toEqual(sent.filter((m) => m.partition === p).map((m) => m.value));
      results.forEach((m, k) => {
        if (m.partition === p) expect(log[m.offset]).toBe(sent[k]!.value);
      });
    }
  });

  it("with idempotent: false no producer id is requested and batches carry producer id -1", async () => {
    const { server, producer } = setup(1, { idempotent: false });
    await producer.send({ topic: "t", messages: [{ value: "a" }] });
    expect(server.count("POST", /^\/v1\/producers$/)).toBe(0);
    expect([server.produced[0]!.header.producerId, server.produced[0]!.header.baseSequence]).toEqual([-1, -1]);
  });
});

describe("a re-created topic (new partition incarnation, KIP-360 spirit)", () => {
  it("resets the partition's sequence to 0 and resends once when the partition expects sequence 0", async () => {
    const server = new FakeServer();
    server.addTopic("t", 1);
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
    const producer = new Producer(client, FAST);
    await producer.send({ topic: "t", messages: [{ value: "a" }, { value: "b" }] });
    await client.deleteTopic("t");
    await client.createTopic({ name: "t", partitions: 1 });
    const after = await producer.send({ topic: "t", messages: [{ value: "c" }] });
    const next = await producer.send({ topic: "t", messages: [{ value: "d" }] });
    expect(after.map((m) => m.offset)).toEqual([0]);
    expect(next.map((m) => m.offset)).toEqual([1]);
    expect(server.produced.map((b) => [b.header.producerId, b.header.baseSequence, b.records.length])).toEqual([
      [1000, 0, 2],
      [1000, 2, 1],
      [1000, 0, 1],
      [1000, 1, 1],
    ]);
    expect(server.log("t", 0).records.map((r) => text(r.value))).toEqual(["c", "d"]);
    expect(server.count("POST", /^\/v1\/producers$/)).toBe(1);
  });

  it("resends only once: a second expected-0 answer fails the batch", async () => {
    const { server, producer } = setup();
    await producer.send({ topic: "t", messages: [{ value: "a" }] });
    const fresh = { code: "OUT_OF_ORDER_SEQUENCE_NUMBER" as const, details: { expectedSequence: 0, baseSequence: 1 } };
    server.produceScript = [fresh, fresh];
    const err = await producer.send({ topic: "t", messages: [{ value: "b" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EdgelogClientError);
    expect((err as EdgelogClientError).code).toBe("OUT_OF_ORDER_SEQUENCE_NUMBER");
    expect(server.produced.map((b) => b.header.baseSequence)).toEqual([0, 1, 0]);
  });

  it("keeps any other OUT_OF_ORDER_SEQUENCE_NUMBER fatal for the batch, with no resend", async () => {
    const { server, producer } = setup();
    await producer.send({ topic: "t", messages: [{ value: "a" }] });
    server.produceScript = [{ code: "OUT_OF_ORDER_SEQUENCE_NUMBER", details: { expectedSequence: 3, baseSequence: 1 } }];
    const err = await producer.send({ topic: "t", messages: [{ value: "b" }] }).catch((e: unknown) => e);
    expect((err as EdgelogClientError).code).toBe("OUT_OF_ORDER_SEQUENCE_NUMBER");
    await producer.send({ topic: "t", messages: [{ value: "c" }] });
    expect(server.produced.map((b) => [b.header.producerId, b.header.baseSequence])).toEqual([
      [1000, 0],
      [1000, 1],
      [1001, 0],
    ]);
  });
});

describe("acks", () => {
  it("acks 0 sends ?acks=0 and resolves with offset -1, the chosen partition and the CreateTime", async () => {
    const { server, producer } = setup(1, { acks: 0, idempotent: false });
    const sent = await producer.send({
      topic: "t",
      messages: [
        { value: "a", timestamp: 7 },
        { value: "b", timestamp: 8 },
      ],
    });
    expect(sent).toEqual([
      { topic: "t", partition: 0, offset: -1, timestamp: 7 },
      { topic: "t", partition: 0, offset: -1, timestamp: 8 },
    ]);
    expect(server.requests.filter((r) => r.method === "POST").map((r) => r.query.get("acks"))).toEqual(["0"]);
  });

  it("acks 1 sends ?acks=1 and answers offsets; the default sends no acks parameter", async () => {
    const one = setup(1, { acks: 1 });
    expect((await one.producer.send({ topic: "t", messages: [{ value: "a" }] })).map((m) => m.offset)).toEqual([0]);
    expect(one.server.requests.filter((r) => /records$/.test(r.path)).map((r) => r.query.get("acks"))).toEqual(["1"]);
    const all = setup();
    await all.producer.send({ topic: "t", messages: [{ value: "a" }] });
    expect(all.server.requests.filter((r) => /records$/.test(r.path)).map((r) => r.query.get("acks"))).toEqual([null]);
  });

  it("acks 0 needs idempotent: false (RangeError), and unknown values are refused", () => {
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: new FakeServer().fetch });
    expect(() => new Producer(client, { acks: 0 })).toThrow(RangeError);
    expect(() => new Producer(client, { acks: 1 })).not.toThrow();
    expect(() => new Producer(client, { acks: 2 as 1, idempotent: false })).toThrow(/acks must be "all", 1 or 0, got 2/);
    expect(() => new Producer(client, { acks: 0, idempotent: false })).not.toThrow();
  });
});

describe("message encoding", () => {
  it("keeps null distinct from empty, strings as UTF-8, headers ordered with duplicates, explicit timestamps", async () => {
    const { server, producer } = setup();
    await producer.send({
      topic: "t",
      messages: [
        { key: null, value: null, timestamp: 5 },
        { key: "", value: "", timestamp: 6 },
        {
          key: "k",
          value: new Uint8Array([0, 255]),
          headers: [
            { key: "h", value: "1" },
            { key: "h", value: null },
            { key: "g", value: "" },
          ],
          timestamp: 7,
        },
        { value: "é", headers: { a: "x", b: utf8("y") }, timestamp: 8 },
      ],
    });
    const stored = server.log("t", 0).records;
    expect(stored.map((r) => [r.key, r.value, r.timestamp])).toEqual([
      [null, null, 5],
      [new Uint8Array(0), new Uint8Array(0), 6],
      [utf8("k"), new Uint8Array([0, 255]), 7],
      [null, utf8("é"), 8],
    ]);
    expect(stored[2]!.headers).toEqual([
      { key: "h", value: utf8("1") },
      { key: "h", value: null },
      { key: "g", value: new Uint8Array(0) },
    ]);
    expect(stored[3]!.headers).toEqual([
      { key: "a", value: utf8("x") },
      { key: "b", value: utf8("y") },
    ]);
  });

  it("rejects a malformed message before sending anything", async () => {
    const { server, producer } = setup();
    await expect(producer.send({ topic: "t", messages: [{ value: "a" }, { value: "b", timestamp: -1 }] })).rejects.toThrow(RangeError);
    await expect(producer.send({ topic: "t", messages: [{ value: "a", partition: 1.5 }] })).rejects.toThrow(RangeError);
    expect(server.requests.length).toBe(0);
  });
});

describe("flush, close and memory", () => {
  it("close() flushes lingering batches, then send() rejects", async () => {
    const { server, producer } = setup(1, { lingerMs: 60_000 });
    const sent = producer.send({ topic: "t", messages: [{ value: "a" }] });
    await producer.close();
    expect((await sent).map((m) => m.offset)).toEqual([0]);
    expect(produceRequests(server)).toBe(1);
    await expect(producer.send({ topic: "t", messages: [{ value: "b" }] })).rejects.toThrow("Producer is closed.");
  });

  it("waits for buffer space (maxBufferedBytes) and keeps the order of the messages", async () => {
    const value = "x".repeat(1000);
    const { server, producer } = setup(1, { lingerMs: 0, maxBufferedBytes: 2500 });
    const sends = Array.from({ length: 10 }, (_, i) => producer.send({ topic: "t", messages: [{ value: `${i}${value}` }] }));
    const offsets = (await Promise.all(sends)).map((m) => m[0]!.offset);
    expect(offsets).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // At most two ~1 KB records fit in 2500 bytes, so no request carried more than two.
    expect(Math.max(...server.produced.map((b) => b.records.length))).toBeLessThanOrEqual(2);
    expect(producer.bufferedBytes).toBe(0);
  });

  it("a full buffer sends lingering batches at once instead of waiting lingerMs", async () => {
    const value = "x".repeat(1000);
    const { server, producer } = setup(1, { lingerMs: 60_000, maxBufferedBytes: 2500 });
    const started = Date.now();
    const sends = Array.from({ length: 5 }, () => producer.send({ topic: "t", messages: [{ value }] }));
    await Promise.all(sends.slice(0, 3)); // the third needed space: the first batch went out without linger
    expect(Date.now() - started).toBeLessThan(5000);
    await producer.close();
    expect(server.log("t", 0).records.length).toBe(5);
  });
});

describe("backoffMs (KIP-580: exponential, ±20% jitter, capped)", () => {
  it("doubles per attempt from retryBackoffMs and caps at maxRetryBackoffMs", async () => {
    const { backoffMs } = await import("../../sdk/src/retry.ts");
    const mid = () => 0.5; // factor 1.0
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffMs(a, 100, 1000, mid))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(backoffMs(0, 100, 1000, () => 0)).toBe(80);
    expect(backoffMs(1, 100, 1000, () => 0.99)).toBe(239);
    expect(backoffMs(3, 100, 1000, () => 0.99)).toBe(957);
    expect(backoffMs(4, 100, 1000, () => 0.99)).toBe(1000);
  });
});
