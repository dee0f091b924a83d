/**
 * SDK instrumentation events (sdk/src/instrumentation.ts), against the in-memory fake server:
 * `request` per HTTP exchange, `request_retry` before each retry, producer `batch`, consumer
 * `fetch` with lag, and the emitter's own contract.
 */
import { describe, expect, it } from "vitest";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { Consumer } from "../../sdk/src/consumer.ts";
import { apiOf, type BatchEvent, Emitter, type FetchEvent, type RequestEvent, type RequestRetryEvent } from "../../sdk/src/instrumentation.ts";
import { Producer } from "../../sdk/src/producer.ts";
import { FakeServer } from "./sdk-fake-server.ts";

function setup() {
  const server = new FakeServer();
  server.addTopic("t", 1);
  const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
  return { server, client };
}

describe("Emitter", () => {
  it("calls listeners in order, removes one by the returned function, and drops what a listener throws", () => {
    const e = new Emitter<{ ping: (n: number) => void }>();
    const seen: string[] = [];
    expect(e.has("ping")).toBe(false);
    const offA = e.on("ping", (n) => seen.push(`a${n}`));
    e.on("ping", () => {
      throw new Error("listener bug");
    });
    e.on("ping", (n) => seen.push(`c${n}`));
    expect(e.has("ping")).toBe(true);
    e.emit("ping", 1);
    offA();
    e.emit("ping", 2);
    expect(seen).toEqual(["a1", "c1", "c2"]);
  });
});

describe("apiOf", () => {
  it("names routes as Kafka's APIs, in both topic path forms", () => {
    expect(apiOf("POST", "/v1/topics/t/partitions/0/records")).toBe("Produce");
    expect(apiOf("POST", "/v1/topics/a/b/c/records")).toBe("Produce");
    expect(apiOf("GET", "/v1/topics/a/b/c/partitions/3/records")).toBe("Fetch");
    expect(apiOf("GET", "/v1/topics/t/partitions/0/offsets")).toBe("ListOffsets");
    expect(apiOf("POST", "/v1/topics")).toBe("CreateTopics");
    expect(apiOf("DELETE", "/v1/topics/a/b/c")).toBe("DeleteTopics");
    expect(apiOf("GET", "/v1/topics/t")).toBe("DescribeTopic");
    expect(apiOf("POST", "/v1/groups/g/heartbeat")).toBe("ConsumerGroupHeartbeat");
    expect(apiOf("PUT", "/v1/users/alice")).toBe("PUT /v1/users");
  });
});

describe("client, producer and consumer events", () => {
  it("request: one event per exchange, with api, status, code, sizes and a duration", async () => {
    const { client } = setup();
    const events: RequestEvent[] = [];
    const off = client.on("request", (e) => events.push(e));
    await client.describeTopic("t");
    await client.describeTopic("missing").catch(() => undefined);
    off();
    await client.describeTopic("t");
    expect(events.map((e) => [e.api, e.method, e.path, e.status, e.code])).toEqual([
      ["DescribeTopic", "GET", "/v1/topics/t", 200, null],
      ["DescribeTopic", "GET", "/v1/topics/missing", 404, "UNKNOWN_TOPIC_OR_PARTITION"],
    ]);
    for (const e of events) {
      expect(e.durationMs).toBeGreaterThanOrEqual(0);
      expect(e.requestBytes).toBe(0);
      expect(e.responseBytes).toBeGreaterThan(0);
    }
  });

  it("request with no answer: status 0 and the network error's code", async () => {
    const failing: typeof fetch = async () => {
      throw new TypeError("fetch failed");
    };
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: failing });
    const events: RequestEvent[] = [];
    client.on("request", (e) => events.push(e));
    await client.listTopics().catch(() => undefined);
    expect(events.map((e) => [e.api, e.status, e.code, e.responseBytes])).toEqual([["ListTopics", 0, "UNAVAILABLE", 0]]);
  });

  it("producer: request_retry before each retry, then one batch with records, bytes and attempts", async () => {
    const { server, client } = setup();
    server.produceScript = [{ code: "UNAVAILABLE" }, { code: "REQUEST_TIMED_OUT" }];
    const producer = new Producer(client, { retryBackoffMs: 1, maxRetryBackoffMs: 1 });
    const retries: RequestRetryEvent[] = [];
    const batches: BatchEvent[] = [];
    const produceRequests: RequestEvent[] = [];
    producer.on("request_retry", (e) => retries.push(e));
    producer.on("batch", (e) => batches.push(e));
    client.on("request", (e) => {
      if (e.api === "Produce") produceRequests.push(e);
    });
    await producer.send({ topic: "t", messages: [{ value: "a" }, { value: "bc" }, { value: "def" }] });
    await producer.close();
    expect(retries.map((r) => [r.api, r.topic, r.partition, r.attempt, r.code])).toEqual([
      ["Produce", "t", 0, 1, "UNAVAILABLE"],
      ["Produce", "t", 0, 2, "REQUEST_TIMED_OUT"],
    ]);
    for (const r of retries) expect(r.delayMs).toBe(1);
    const sent = server.produced[0]!.bytes.length;
    expect(batches.map((b) => [b.topic, b.partition, b.records, b.bytes, b.attempts])).toEqual([["t", 0, 3, sent, 3]]);
    expect(produceRequests.map((r) => [r.status, r.code, r.requestBytes])).toEqual([
      [503, "UNAVAILABLE", sent],
      [504, "REQUEST_TIMED_OUT", sent],
      [200, null, sent],
    ]);
  });

  it("consumer: fetch events with records and the lag left after each answer", async () => {
    const { server, client } = setup();
    const enc = new TextEncoder();
    const rec = (v: string) => ({ key: null, value: enc.encode(v), headers: [], timestamp: 1 });
    server.append("t", 0, [rec("a"), rec("b"), rec("c")]);
    server.append("t", 0, [rec("d"), rec("e")]);
    const consumer = new Consumer(client, { autoOffsetReset: "earliest" });
    const fetches: FetchEvent[] = [];
    consumer.on("fetch", (e) => fetches.push(e));
    consumer.assign([{ topic: "t", partition: 0 }]);
    consumer.seek({ topic: "t", partition: 0, offset: 1 });
    const got: number[] = [];
    while (got.length < 4) for (const r of await consumer.poll({ maxWaitMs: 0, maxRecords: 2 })) got.push(r.offset);
    consumer.close();
    expect(got).toEqual([1, 2, 3, 4]);
    const first = fetches[0]!;
    expect([first.topic, first.partition, first.offset, first.highWatermark]).toEqual(["t", 0, 1, 5]);
    expect(first.lag).toBe(first.highWatermark - first.nextOffset);
    expect(first.records).toBe(first.nextOffset - first.offset);
    expect(fetches.reduce((n, f) => n + f.records, 0)).toBe(4);
    expect(fetches.at(-1)!.lag).toBe(0);
  });
});
