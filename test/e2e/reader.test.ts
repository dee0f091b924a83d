/**
 * The SDK's `createReader()` on the real dev server: start positions with field case A4's and
 * A8's exact expectations (latest, latest inclusive, message id exclusive and inclusive,
 * earliest, an empty topic, timestamps including non-monotonic ones), fan-in of a partitioned
 * topic with a small window (permits given back by the reader), `hasMessageAvailable`, `seek`,
 * and a kill -9 of the server mid-read: the reader reconnects by itself and resumes right after
 * the last message it received, with nothing lost and nothing repeated.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, type EdgelogClient, EdgelogClientError, Producer, type Reader, type ReaderMessage, createReader, toText } from "../../sdk/src/index.ts";
import { randomTopic, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

/** A topic with `values` produced in order (partition 0 unless `partitions` > 1, then keyed), each with its timestamp if given. */
async function topicWith(values: string[], opts: { partitions?: number; timestamps?: number[] } = {}): Promise<string> {
  const topic = randomTopic("rd");
  await new Admin(client).createTopic({ name: topic, partitions: opts.partitions ?? 1 });
  if (values.length > 0) await produce(topic, values, opts.timestamps);
  return topic;
}

async function produce(topic: string, values: string[], timestamps?: number[]): Promise<void> {
  const producer = new Producer(client);
  await producer.send({ topic, messages: values.map((v, i) => ({ value: v, ...(timestamps === undefined ? {} : { timestamp: timestamps[i]! }) })) });
  await producer.close();
}

async function take(reader: Reader, n: number): Promise<ReaderMessage[]> {
  const out: ReaderMessage[] = [];
  while (out.length < n) out.push(await reader.readNext());
  return out;
}

/** Asserts nothing arrives within 1 s (the reader stays usable). */
async function nothingWithin1s(reader: Reader): Promise<void> {
  await expect(reader.readNext(1000)).rejects.toMatchObject({ code: "REQUEST_TIMED_OUT" });
}

const M = ["m0", "m1", "m2", "m3", "m4"];
const id = (offset: number) => `0000:${String(offset).padStart(16, "0")}`;

describe("createReader start positions (field case A4)", () => {
  it("latest (the default): nothing until m5 is produced, then m5; hasMessageAvailable follows", async () => {
    const topic = await topicWith(M);
    const reader = await createReader(client, { topic });
    expect(await reader.hasMessageAvailable()).toBe(false);
    await nothingWithin1s(reader);
    await produce(topic, ["m5"]);
    expect(await reader.hasMessageAvailable()).toBe(true);
    const [m] = await take(reader, 1);
    expect([m!.offset, toText(m!.value), m!.messageId, m!.redeliveryCount, m!.topic]).toEqual([5, "m5", id(5), 0, `public/default/${topic}`]);
    expect(await reader.hasMessageAvailable()).toBe(false);
    reader.close();
  });

  it("latest inclusive: m4 first, then m5 when it is produced", async () => {
    const topic = await topicWith(M);
    const reader = await createReader(client, { topic, start: "latest", startMessageIdInclusive: true });
    expect(toText((await reader.readNext()).value)).toBe("m4");
    await produce(topic, ["m5"]);
    expect(toText((await reader.readNext()).value)).toBe("m5");
    reader.close();
  });

  it("a message id: the next message first; inclusive: that message first (startMessageId is Pulsar's name)", async () => {
    const topic = await topicWith(M);
    const exclusive = await createReader(client, { topic, startMessageId: id(2) });
    const inclusive = await createReader(client, { topic, start: id(2), startMessageIdInclusive: true });
    expect((await take(exclusive, 2)).map((m) => toText(m.value))).toEqual(["m3", "m4"]);
    expect((await take(inclusive, 3)).map((m) => toText(m.value))).toEqual(["m2", "m3", "m4"]);
    exclusive.close();
    inclusive.close();
  });

  it("earliest, with or without inclusive: m0 first", async () => {
    const topic = await topicWith(M);
    for (const startMessageIdInclusive of [false, true]) {
      const reader = await createReader(client, { topic, start: "earliest", startMessageIdInclusive });
      expect((await take(reader, 5)).map((m) => m.offset)).toEqual([0, 1, 2, 3, 4]);
      expect(await reader.hasMessageAvailable()).toBe(false);
      reader.close();
    }
  });

  it("an empty topic, latest inclusive: no error and no message; after the first produce, offset 0", async () => {
    const topic = await topicWith([]);
    const reader = await createReader(client, { topic, start: "latest", startMessageIdInclusive: true });
    await nothingWithin1s(reader);
    await produce(topic, ["first"]);
    const m = await reader.readNext();
    expect([m.offset, toText(m.value)]).toEqual([0, "first"]);
    reader.close();
  });

  it("refuses a malformed start before any request, and a message id of a partition the topic lacks", async () => {
    const topic = await topicWith(M);
    await expect(createReader(client, { topic, start: "yesterday" })).rejects.toMatchObject({ code: "INVALID_MESSAGE_ID" });
    await expect(createReader(client, { topic, start: "latest", startMessageId: "earliest" })).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    await expect(createReader(client, { topic, start: "0003:0000000000000000" })).rejects.toBeInstanceOf(EdgelogClientError);
  });
});

describe("createReader by timestamp (field case A8's positions)", () => {
  it("timestamps 100..500: 250 starts at m2, 300 at m2 (equal counts), 600 at the next message produced", async () => {
    const topic = await topicWith(M, { timestamps: [100, 200, 300, 400, 500] });
    const at250 = await createReader(client, { topic, start: { timestamp: 250 } });
    const at300 = await createReader(client, { topic, start: { timestamp: 300 } });
    const at600 = await createReader(client, { topic, start: { timestamp: 600 } });
    expect((await take(at250, 3)).map((m) => m.offset)).toEqual([2, 3, 4]);
    expect((await take(at300, 1)).map((m) => m.offset)).toEqual([2]);
    expect(await at600.hasMessageAvailable()).toBe(false);
    await nothingWithin1s(at600);
    await produce(topic, ["m5"]);
    expect((await at600.readNext()).offset).toBe(5);
    for (const r of [at250, at300, at600]) r.close();
  });

  it("non-monotonic timestamps 2, 1, 3, 5, 4, 6: timestamp 4 starts at offset 3, then 4 and 5 (not offset 0)", async () => {
    const topic = await topicWith(["a", "b", "c", "d", "e", "f"], { timestamps: [2, 1, 3, 5, 4, 6] });
    const reader = await createReader(client, { topic, start: { timestamp: 4 } });
    expect((await take(reader, 3)).map((m) => m.offset)).toEqual([3, 4, 5]);
    expect(await reader.hasMessageAvailable()).toBe(false);
    reader.close();
  });
});

describe("createReader over a partitioned topic", () => {
  it("fans in 4 partitions with a window of 3 (keys spread by murmur2): every message once, in per-partition order; then seek", async () => {
    const topic = randomTopic("rd");
    await new Admin(client).createTopic({ name: topic, partitions: 4 });
    const producer = new Producer(client);
    await producer.send({ topic, messages: Array.from({ length: 40 }, (_, i) => ({ key: `k${i % 8}`, value: `m${i}` })) });
    await producer.close();
    // Window 3 per partition: reading all 40 needs the reader to give permits back.
    const reader = await createReader(client, { topic, start: "earliest", receiverQueueSize: 3 });
    const got = await take(reader, 40);
    expect(new Set(got.map((m) => toText(m.value))).size).toBe(40);
    for (let p = 0; p < 4; p++) {
      const offsets = got.filter((m) => m.partition === p).map((m) => m.offset);
      expect(offsets).toEqual(offsets.map((_, i) => i));
    }
    expect(await reader.hasMessageAvailable()).toBe(false);
    // A message id seeks its partition only (Pulsar's multi-topics reader, PR #7518).
    const counts = [0, 1, 2, 3].map((p) => got.filter((m) => m.partition === p).length);
    const p2 = got.filter((m) => m.partition === counts.indexOf(Math.max(...counts)));
    await reader.seek(p2[1]!.messageId);
    expect((await take(reader, p2.length - 2)).map((m) => m.messageId)).toEqual(p2.slice(2).map((m) => m.messageId));
    expect(await reader.hasMessageAvailable()).toBe(false);
    // earliest: every partition again.
    await reader.seek("earliest");
    expect((await take(reader, 40)).map((m) => m.messageId).sort()).toEqual(got.map((m) => m.messageId).sort());
    reader.close();
  });
});

describe("createReader reconnects", () => {
  it("kill -9 mid-read: resumes after the last message received, nothing lost, nothing repeated", async () => {
    const topic = await topicWith(
      Array.from({ length: 20 }, (_, i) => `m${i}`),
      { partitions: 2 },
    );
    const reader = await createReader(client, { topic, start: "earliest", receiverQueueSize: 4 });
    const first = await take(reader, 10);
    await server.kill();
    await server.restart();
    await produce(
      topic,
      Array.from({ length: 10 }, (_, i) => `n${i}`),
    );
    const rest = await take(reader, 20);
    const all = [...first, ...rest];
    expect(all.map((m) => toText(m.value)).sort()).toEqual([...Array.from({ length: 20 }, (_, i) => `m${i}`), ...Array.from({ length: 10 }, (_, i) => `n${i}`)].sort());
    for (const p of [0, 1]) {
      const offsets = all.filter((m) => m.partition === p).map((m) => m.offset);
      expect(offsets).toEqual(offsets.map((_, i) => i));
    }
    expect(await reader.hasMessageAvailable()).toBe(false);
    await nothingWithin1s(reader);
    reader.close();
  });
});
