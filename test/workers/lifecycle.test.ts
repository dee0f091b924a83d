/**
 * The storage lifecycle through the real gateway and the real partition object (issue 10,
 * docs/LIFECYCLE.md): segments, retention, deleteRecords (field case B1), reads inside a batch
 * (B2), segment roll with old timestamps (B6), compaction with tombstones, the produce-time checks.
 * The lifecycle's timers are run with runDurableObjectAlarm; a wake may also have run on its own
 * (the test runtime fires alarms), so each step runs wakes until the state stops changing.
 */
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe as suite, expect, it } from "vitest";
import { Consumer, EdgelogClient, GroupConsumer } from "../../sdk/src/index.ts";
import { encodeBatch } from "../../src/codec/index.ts";
import { MAX_PAUSE_MS } from "../../src/lifecycle/pace.ts";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import type { OffsetFetchResponse } from "../../src/protocol/groups.ts";
import { utf8, type DeleteRecordsResponse } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, fetchJson, json, partitionObject, produce, randomTopic } from "./helpers.ts";
import { connect } from "./subs-helpers.ts";

const DAY = 86_400_000;
const MiB = 1024 * 1024;

function stub(topicId: string): DurableObjectStub {
  return env.PARTITION.getByName(partitionObjectName(topicId, 0));
}

/**
 * Runs the partition's due timers until no lifecycle timer is due (bounded). A paced compaction
 * (src/lifecycle/pace.ts) moves its `compact` timer up to MAX_PAUSE_MS later after appends: a
 * timer due within that horizon counts, and settle sleeps until it is due and runs it.
 */
async function settle(topicId: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    await new Promise((r) => setTimeout(r, 5));
    await runDurableObjectAlarm(stub(topicId));
    const now = Date.now();
    const next = await runInDurableObject(
      stub(topicId),
      (_o, state) => state.storage.sql.exec<{ d: number | null }>("SELECT MIN(due_ms) AS d FROM _schedule WHERE room = 'lifecycle' AND due_ms <= ?", now + MAX_PAUSE_MS + 100).one().d,
    );
    if (next === null) return;
    if (next > Date.now()) await new Promise((r) => setTimeout(r, next - Date.now()));
  }
}

async function segments(topicId: string): Promise<[number, number, number][]> {
  return runInDurableObject(stub(topicId), (_o, state) =>
    state.storage.sql
      .exec<{ base_offset: number; last_offset: number; closed: number }>("SELECT base_offset, last_offset, closed FROM seg_segments ORDER BY id")
      .toArray()
      .map((r) => [r.base_offset, r.last_offset, r.closed] as [number, number, number]),
  );
}

async function offsetOf(topic: string, spec: "earliest" | "latest"): Promise<number> {
  const res = await call(`/v1/topics/${topic}/partitions/0/offsets?spec=${spec}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { offset: number }).offset;
}

const produceTo = (topic: string, records: unknown[]) => produce(`/v1/topics/${topic}/partitions/0/records`, { records });

function deleteRecords(topic: string, offset: unknown): Promise<Response> {
  return json("POST", `/v1/topics/${topic}/partitions/0/delete-records`, { offset });
}

/** An SDK client whose requests go through the gateway of this test runtime. */
function sdkClient(): EdgelogClient {
  return new EdgelogClient({
    baseUrl: "http://edgelog.test",
    fetch: ((input: RequestInfo | URL, init?: RequestInit) =>
      call(new URL(input instanceof Request ? input.url : input).pathname + new URL(input instanceof Request ? input.url : input).search, init)) as typeof fetch,
  });
}

suite("segments and retention (issue 10's test)", () => {
  it("v0..v9 in segments of two: retention drops [0,1] and [2,3], log start 4; groups reset to 4 (earliest) or 10 (latest); all expired after the roll: earliest = latest = 10", async () => {
    const topic = randomTopic();
    // Values of 400 KiB: two one-record batches fit segment.bytes = 1 MiB, a third rolls.
    const t = await createTopic(topic, 1, { "segment.bytes": MiB, "retention.ms": DAY });
    const now = Date.now();
    const big = (i: number) => `v${i}`.padEnd(400 * 1024, ".");
    for (let i = 0; i < 10; i++) await produceTo(topic, [{ value: big(i), timestamp: i < 5 ? now - 3 * DAY : now }]);
    await settle(t.topicId);
    // v0..v4 expired, but v4 shares segment [4, 5] with v5, which has not: the log start is 4.
    expect(await segments(t.topicId)).toEqual([
      [4, 5, 1],
      [6, 7, 1],
      [8, 9, 0],
    ]);
    expect(await offsetOf(topic, "earliest")).toBe(4);
    expect(await offsetOf(topic, "latest")).toBe(10);
    const e = await expectError(await call(`/v1/topics/${topic}/partitions/0/records?offset=2`), "OFFSET_OUT_OF_RANGE", 416);
    expect(e.details).toMatchObject({ offset: 2, logStartOffset: 4, logEndOffset: 10 });
    const f = await fetchJson(topic, 0, "offset=4&maxRecords=1");
    expect([f.records.map((r) => r.offset), f.logStartOffset]).toEqual([[4], 4]);
    // The rows are gone, not only hidden.
    const rows = await runInDurableObject(stub(t.topicId), (_o, state) => state.storage.sql.exec<{ base_offset: number }>("SELECT base_offset FROM batches ORDER BY base_offset").toArray());
    expect(rows.map((r) => r.base_offset)).toEqual([4, 5, 6, 7, 8, 9]);

    // A group committed at 2: earliest resumes at the log start, latest at the log end.
    const group = randomTopic("g");
    expect((await json("POST", `/v1/groups/${group}/offsets`, { offsets: [{ topic, partition: 0, offset: 2 }] })).status).toBe(200);
    const resolved = async (policy: string) => {
      const res = await call(`/v1/groups/${group}/offsets?topic=${encodeURIComponent(topic)}&autoOffsetReset=${policy}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as OffsetFetchResponse;
      return body.partitions[0]!.offset;
    };
    expect(await resolved("earliest")).toBe(4);
    expect(await resolved("latest")).toBe(10);

    // Everything expires once the active segment rolls (segment.ms, a dynamic config change).
    expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "retention.ms": 1, "segment.ms": 1 } })).status).toBe(200);
    await settle(t.topicId);
    expect([await offsetOf(topic, "earliest"), await offsetOf(topic, "latest")]).toEqual([10, 10]);
    expect(await segments(t.topicId)).toEqual([]);
    expect((await fetchJson(topic, 0, "offset=10")).records).toEqual([]);
    // The next append opens a new segment at 10.
    await produceTo(topic, [{ value: "v10" }]);
    expect(await segments(t.topicId)).toEqual([[10, 10, 0]]);
  });

  it("retention.bytes drops head segments while the log stays above it; the active segment stays", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": MiB, "retention.bytes": 2 * MiB });
    const big = (i: number) => `v${i}`.padEnd(400 * 1024, ".");
    for (let i = 0; i < 10; i++) await produceTo(topic, [{ value: big(i) }]);
    await settle(t.topicId);
    // Five segments of ~800 KiB: dropping from the head while the rest stays >= 2 MiB leaves three.
    expect((await segments(t.topicId)).map((s) => s[0])).toEqual([4, 6, 8]);
    expect(await offsetOf(topic, "earliest")).toBe(4);
  });

  it("B6: ten appends of records two days old make one segment (segment.ms counts append time)", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.ms": 3_600_000, "message.timestamp.type": "CreateTime" });
    const old = Date.now() - 2 * DAY;
    for (let i = 0; i < 10; i++) {
      await produceTo(topic, [{ value: `r${i}`, timestamp: old + i }]);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await segments(t.topicId)).toEqual([[0, 9, 0]]);
  });

  it("a partition stored before the segment index is indexed in slices without rewriting a batch", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": MiB });
    for (let i = 0; i < 3; i++) await produceTo(topic, [{ value: `r${i}`.padEnd(400 * 1024, ".") }]);
    const before = await runInDurableObject(stub(t.topicId), (_o, state) => {
      const data = state.storage.sql.exec<{ base_offset: number; data: ArrayBuffer }>("SELECT base_offset, data FROM batches ORDER BY base_offset").toArray();
      // As an object from before the lifecycle room: no segment rows, room version 0.
      state.storage.sql.exec("DELETE FROM seg_segments");
      state.storage.sql.exec("DELETE FROM _schedule WHERE room = 'lifecycle'");
      return data.map((r) => [r.base_offset, new Uint8Array(r.data).join(",")]);
    });
    await evictDurableObject(stub(t.topicId));
    await produceTo(topic, [{ value: "r3" }]);
    await settle(t.topicId);
    expect(await segments(t.topicId)).toEqual([
      [0, 1, 1],
      [2, 3, 0],
    ]);
    const after = await runInDurableObject(stub(t.topicId), (_o, state) =>
      state.storage.sql
        .exec<{ base_offset: number; data: ArrayBuffer }>("SELECT base_offset, data FROM batches WHERE base_offset < 3 ORDER BY base_offset")
        .toArray()
        .map((r) => [r.base_offset, new Uint8Array(r.data).join(",")]),
    );
    expect(after).toEqual(before);
  });
});

suite("deleteRecords (KIP-107, field case B1)", () => {
  it("follows the B1 table: 3, 2 (no-op), 3 (no-op), 11 (refused), -2 (refused), -1 (the high watermark)", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic);
    await produceTo(
      topic,
      Array.from({ length: 10 }, (_, i) => ({ value: `v${i}` })),
    );
    const ok = async (offset: number, low: number) => {
      const res = await deleteRecords(topic, offset);
      const body = (await res.json()) as DeleteRecordsResponse;
      expect([res.status, body.logStartOffset]).toEqual([200, low]);
    };
    await ok(3, 3);
    await ok(2, 3);
    await ok(3, 3);
    const e = await expectError(await deleteRecords(topic, 11), "OFFSET_OUT_OF_RANGE", 416);
    expect(e.details).toEqual({ offset: 11, logStartOffset: 3, logEndOffset: 10, highWatermark: 10 });
    await expectError(await deleteRecords(topic, -2), "OFFSET_OUT_OF_RANGE", 416);
    await expectError(await deleteRecords(topic, "3"), "INVALID_OFFSET", 400);
    await expectError(await deleteRecords(topic, 1.5), "INVALID_OFFSET", 400);
    expect(await offsetOf(topic, "earliest")).toBe(3);
    await ok(-1, 10);
    expect([await offsetOf(topic, "earliest"), await offsetOf(topic, "latest")]).toEqual([10, 10]);
    const below = await expectError(await call(`/v1/topics/${topic}/partitions/0/records?offset=9`), "OFFSET_OUT_OF_RANGE", 416);
    expect(below.details).toMatchObject({ logStartOffset: 10 });
    const at = await fetchJson(topic, 0, "offset=10");
    expect([at.records, at.nextOffset]).toEqual([[], 10]);
    await settle(t.topicId);
    // The rows went on the lifecycle's timer; the one request's batch was wholly below 10.
    const rows = await runInDurableObject(stub(t.topicId), (_o, state) => state.storage.sql.exec("SELECT base_offset FROM batches").toArray());
    expect(rows).toEqual([]);
    expect((await call(`/v1/topics/${topic}`).then((r) => r.json())) as { partitionDetails: { bytes: number }[] }).toMatchObject({ partitionDetails: [{ bytes: 0 }] });
    await expectError(await json("POST", `/v1/topics/${randomTopic()}/partitions/0/delete-records`, { offset: 1 }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
  });

  it("a batch straddling the new log start keeps its rows; a fetch hands out only the records at or after it (SDK too)", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceTo(
      topic,
      ["a", "b", "c", "d", "e"].map((value) => ({ value })),
    );
    expect((await deleteRecords(topic, 2)).status).toBe(200);
    const f = await fetchJson(topic, 0, "offset=2");
    expect(f.records.map((r) => [r.offset, r.value])).toEqual([
      [2, "c"],
      [3, "d"],
      [4, "e"],
    ]);
    const sdk = await sdkClient().fetchRecords(topic, 0, { offset: 2 });
    expect(sdk.records.map((r) => r.offset)).toEqual([2, 3, 4]);
  });
});

suite("B2: fetch from an offset inside a batch", () => {
  it("answers exactly the records at or after the offset", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceTo(
      topic,
      [0, 1, 2, 3, 4].map((i) => ({ value: `r${i}` })),
    );
    await produceTo(
      topic,
      [5, 6, 7].map((i) => ({ value: `r${i}` })),
    );
    const offsets = async (q: string) => {
      const f = await fetchJson(topic, 0, q);
      return [f.records.map((r) => r.offset), f.nextOffset];
    };
    expect(await offsets("offset=2")).toEqual([[2, 3, 4, 5, 6, 7], 8]);
    expect(await offsets("offset=4")).toEqual([[4, 5, 6, 7], 8]);
    expect(await offsets("offset=7")).toEqual([[7], 8]);
    expect(await offsets("offset=3&maxRecords=2")).toEqual([[3, 4], 5]);
  });
});

suite("produce-time checks", () => {
  it("KIP-937: a timestamp too far in the future or past is INVALID_TIMESTAMP and nothing is stored", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1, { "message.timestamp.before.max.ms": DAY });
    const future = await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "ok" }, { value: "x", timestamp: Date.now() + 2 * 3_600_000 }] });
    const e = await expectError(future, "INVALID_TIMESTAMP", 400);
    expect(e.details).toMatchObject({ index: 1, config: "message.timestamp.after.max.ms", maxMs: 3_600_000 });
    const past = await expectError(await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "x", timestamp: Date.now() - 2 * DAY }] }), "INVALID_TIMESTAMP", 400);
    expect(past.details).toMatchObject({ index: 0, config: "message.timestamp.before.max.ms" });
    expect(await offsetOf(topic, "latest")).toBe(0);
  });

  it("a compacted topic refuses a record without a key (INVALID_RECORD); an empty key is a key", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1, { "cleanup.policy": "compact" });
    const e = await expectError(await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ key: "k", value: "v" }, { value: "no key" }] }), "INVALID_RECORD", 400);
    expect(e.details).toEqual({ index: 1, reason: "null-key" });
    await produceTo(topic, [{ key: "", value: "empty key" }]);
    expect(await offsetOf(topic, "latest")).toBe(1);
  });

  it("a request spread over partitions is refused whole: a keyless record or an out-of-bounds timestamp writes nothing anywhere (fuzz seed 1144339226)", async () => {
    const topic = randomTopic();
    await createTopic(topic, 4, { "cleanup.policy": "compact,delete" });
    const ends = async () => {
      const d = (await (await call(`/v1/topics/${topic}`)).json()) as { partitionDetails: { logEndOffset: number }[] };
      return d.partitionDetails.map((p) => p.logEndOffset);
    };
    // Keyed records land on other partitions than the keyless one would: none may be written.
    const keyed = ["a", "b", "c", "d", "e", "f"].map((key) => ({ key, value: "v" }));
    const e = await expectError(await json("POST", `/v1/topics/${topic}/records`, { records: [...keyed, { key: null, value: "" }] }), "INVALID_RECORD", 400);
    expect(e.details).toEqual({ index: 6, reason: "null-key" });
    expect(await ends()).toEqual([0, 0, 0, 0]);
    const t = await expectError(
      await json("POST", `/v1/topics/${topic}/records`, { records: [...keyed, { key: "g", value: "v", timestamp: Date.now() + 86_400_000 }] }),
      "INVALID_TIMESTAMP",
      400,
    );
    expect(t.details).toMatchObject({ index: 6, config: "message.timestamp.after.max.ms" });
    expect(await ends()).toEqual([0, 0, 0, 0]);
  });
});

/** Closes the active segment (segment.ms = 1, a dynamic config change) and runs the lifecycle's timers until idle. */
async function rollAndSettle(topic: string, topicId: string, configs: Record<string, unknown> = {}): Promise<void> {
  expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "segment.ms": 1, ...configs } })).status).toBe(200);
  await settle(topicId);
}

async function keyed(topic: string): Promise<{ records: string[]; nextOffset: number }> {
  const f = await fetchJson(topic, 0, "offset=0");
  return { records: f.records.map((r) => `${r.key}=${r.value === null ? "null" : JSON.stringify(r.value)}@${r.offset}`), nextOffset: f.nextOffset };
}

/** One request per record, so that each is its own batch. */
async function produceEach(topic: string, records: { key: string; value: string | null }[]): Promise<void> {
  for (const r of records) await produceTo(topic, [r]);
}

suite("compaction (cleanup.policy=compact)", () => {
  it("k1=v1, k2=v2, k1=null: within delete.retention.ms [k2=v2@1, k1=null@2]; after it [k2=v2@1]", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "cleanup.policy": "compact" });
    await produceEach(topic, [
      { key: "k1", value: "v1" },
      { key: "k2", value: "v2" },
      { key: "k1", value: null },
    ]);
    await rollAndSettle(topic, t.topicId);
    expect(await keyed(topic)).toEqual({ records: ['k2="v2"@1', "k1=null@2"], nextOffset: 3 });
    // The tombstone's window ends (delete.retention.ms lowered: judged again at once).
    await rollAndSettle(topic, t.topicId, { "delete.retention.ms": 0 });
    expect(await keyed(topic)).toEqual({ records: ['k2="v2"@1'], nextOffset: 3 });
    // The stored bytes follow the rewrite.
    const d = (await (await call(`/v1/topics/${topic}`)).json()) as { partitionDetails: { bytes: number; logEndOffset: number }[] };
    const stored = await runInDurableObject(stub(t.topicId), (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT SUM(size_bytes) AS n FROM batches").one().n);
    expect([d.partitionDetails[0]!.bytes, d.partitionDetails[0]!.logEndOffset]).toEqual([stored, 3]);
  });

  it("a segment held back by min.compaction.lag.ms is compacted once it is old enough, without another append or roll (the timer is armed for it)", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "cleanup.policy": "compact", "min.compaction.lag.ms": 6_000 });
    await produceEach(topic, [
      { key: "k", value: "1" },
      { key: "k", value: "2" },
    ]);
    await rollAndSettle(topic, t.topicId);
    // Too young: nothing cleaned yet (settle runs only timers due within about a second; the
    // lag leaves a loaded machine several seconds between the produce and this read).
    expect(await keyed(topic)).toEqual({ records: ['k="1"@0', 'k="2"@1'], nextOffset: 2 });
    await new Promise((r) => setTimeout(r, 6_100));
    await settle(t.topicId);
    expect(await keyed(topic)).toEqual({ records: ['k="2"@1'], nextOffset: 2 });
  });

  it("a subscription is never delivered a record compaction removed after its batch was read (the decoded-batch cache is dropped)", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "cleanup.policy": "compact" });
    // One batch [b=b1@0, a=a1@1], then a=a2@2: compaction removes a1 from the first batch.
    await produceTo(topic, [
      { key: "b", value: "b1" },
      { key: "a", value: "a1" },
    ]);
    await produceTo(topic, [{ key: "a", value: "a2" }]);
    const c = await connect(topic, "s", { initialPosition: "earliest", pullMode: true });
    c.send({ type: "permit", permits: 1 });
    const [first] = await c.waitMessages(1);
    expect([first!.offset, first!.value]).toEqual([0, "b1"]); // the first batch is now decoded in memory
    await rollAndSettle(topic, t.topicId);
    expect(await keyed(topic)).toEqual({ records: ['b="b1"@0', 'a="a2"@2'], nextOffset: 3 });
    await c.ack([first!.messageId]);
    c.send({ type: "permit", permits: 2 });
    await c.until(() => c.messages.some((m) => m.offset === 2), "the message at offset 2");
    expect(c.messages.map((m) => `${m.key}=${m.value}@${m.offset}`)).toEqual(["b=b1@0", "a=a2@2"]);
    await c.close();
  });

  it("a topic of tombstones only compacts, after the window, to an empty read whose nextOffset is the log end offset", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "cleanup.policy": "compact", "delete.retention.ms": 0 });
    await produceEach(topic, [
      { key: "k1", value: null },
      { key: "k2", value: null },
      { key: "k3", value: null },
    ]);
    await rollAndSettle(topic, t.topicId);
    expect(await keyed(topic)).toEqual({ records: [], nextOffset: 3 });
    // The same through the binary path's header, and the SDK consumer moves past the gap.
    const bin = await call(`/v1/topics/${topic}/partitions/0/records?offset=0`, { headers: { accept: "application/vnd.edgelog.batch" } });
    expect([(await bin.arrayBuffer()).byteLength, bin.headers.get("edgelog-next-offset")]).toEqual([0, "3"]);
  });

  it("k1=a, k2=b, k1=c, k2=d: a fetch at 0 returns offsets 2 and 3 with nextOffset 4 (HTTP, SDK consumer, group consumer)", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "cleanup.policy": "compact" });
    await produceEach(topic, [
      { key: "k1", value: "a" },
      { key: "k2", value: "b" },
      { key: "k1", value: "c" },
      { key: "k2", value: "d" },
    ]);
    await rollAndSettle(topic, t.topicId);
    expect(await keyed(topic)).toEqual({ records: ['k1="c"@2', 'k2="d"@3'], nextOffset: 4 });
    const client = sdkClient();
    const page = await client.fetchRecords(topic, 0, { offset: 0 });
    expect([page.records.map((r) => r.offset), page.nextOffset]).toEqual([[2, 3], 4]);
    const consumer = new Consumer(client, { autoOffsetReset: "earliest" });
    consumer.assign([{ topic, partition: 0 }]);
    const polled = await consumer.poll({ maxWaitMs: 2_000 });
    expect(polled.map((r) => r.offset)).toEqual([2, 3]);
    expect(await consumer.position({ topic, partition: 0 })).toBe(4);
    // The group consumer (kafkajs's shape) from the beginning gets the same records and commits 4.
    const groupId = randomTopic("gc");
    const gc = new GroupConsumer(client, { groupId, sessionTimeoutMs: 10_000 });
    await gc.subscribe({ topics: [topic], fromBeginning: true });
    const delivered: string[] = [];
    await gc.run({
      eachMessage: async ({ message }) => {
        delivered.push(`${message.offset}`);
      },
    });
    for (let i = 0; i < 200 && delivered.length < 2; i++) await new Promise((r) => setTimeout(r, 25));
    await gc.disconnect();
    expect(delivered).toEqual(["2", "3"]);
    const committed = (await (await call(`/v1/groups/${groupId}/offsets?topic=${encodeURIComponent(topic)}`)).json()) as OffsetFetchResponse;
    expect(committed.partitions[0]!.committedOffset).toBe(4);
    // A group at 0 (the log start) reads from 0 and gets the compacted answer.
    const group = randomTopic("g");
    expect((await json("POST", `/v1/groups/${group}/offsets`, { offsets: [{ topic, partition: 0, offset: 0 }] })).status).toBe(200);
    const r = (await (await call(`/v1/groups/${group}/offsets?topic=${encodeURIComponent(topic)}`)).json()) as OffsetFetchResponse;
    expect(r.partitions[0]!.offset).toBe(0);
  });

  it('k2="" (empty, not null) survives; k1=null goes after the window', async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "cleanup.policy": "compact", "delete.retention.ms": 0 });
    await produceEach(topic, [
      { key: "k1", value: "v" },
      { key: "k2", value: "" },
      { key: "k1", value: null },
    ]);
    await rollAndSettle(topic, t.topicId);
    expect(await keyed(topic)).toEqual({ records: ['k2=""@1'], nextOffset: 3 });
  });

  for (const evict of [true, false])
    it(`is restartable: a failure inside a step ${evict ? "and a restart between every step" : "(no restart: the room restores its key map from the rows)"} lose and duplicate nothing`, async () => {
      const topic = randomTopic();
      const t = await createTopic(topic, 1, { "cleanup.policy": "compact", "delete.retention.ms": 0 });
      // 600 one-record batches over 40 keys (more than two slices of 256 batches), every tenth a tombstone.
      const p = partitionObject(t.topicId);
      const latest = new Map<string, string | null>();
      for (let i = 0; i < 600; i++) {
        const key = `k${i % 40}`;
        const value = i % 10 === 9 ? null : `v${i}`;
        latest.set(key, value);
        const r = await p.append({ batches: [encodeBatch({}, [{ key: utf8(key), value: value === null ? null : utf8(value), headers: [], timestamp: Date.now() }])] });
        expect(r.ok).toBe(true);
      }
      let failures = 0;
      /** Makes the next checkpoint write fail inside its transaction (after the batch rewrites). */
      const failNextCheckpoint = (state: DurableObjectState): void => {
        const sql = state.storage.sql as SqlStorage & { exec: SqlStorage["exec"] };
        const exec = sql.exec.bind(sql);
        sql.exec = ((query: string, ...params: SqlStorageValue[]) => {
          if (query.startsWith("INSERT INTO seg_clean_state")) {
            sql.exec = exec;
            failures++;
            throw new Error("injected failure between the rewrites and the checkpoint");
          }
          return exec(query, ...params);
        }) as SqlStorage["exec"];
      };
      // The first failure is armed before the config change that starts the pass: on a loaded
      // machine the runtime's own alarm calls may run the whole pass before the loop gets a turn.
      await runInDurableObject(stub(t.topicId), (_o, state) => failNextCheckpoint(state));
      expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "segment.ms": 1 } })).status).toBe(200);
      for (let wake = 0; wake < 60; wake++) {
        // Every third wake fails inside its transaction (at the checkpoint write, after the batch rewrites).
        const fail = wake % 3 === 1;
        const next = await runInDurableObject(stub(t.topicId), (_o, state) => {
          // Evicted, the object reloads its timers from _schedule: make them due now. Live, it keeps
          // them in memory: wait until the earliest is due (a failed step is retried after 1 s).
          if (evict) state.storage.sql.exec("UPDATE _schedule SET due_ms = 0 WHERE room = 'lifecycle'");
          if (fail) failNextCheckpoint(state);
          return state.storage.sql.exec<{ d: number | null }>("SELECT MIN(due_ms) AS d FROM _schedule WHERE room = 'lifecycle'").one().d;
        });
        if (evict) {
          await evictDurableObject(stub(t.topicId));
          await runInDurableObject(stub(t.topicId), () => undefined);
        } else if (next !== null && next > Date.now()) await new Promise((r) => setTimeout(r, Math.min(next - Date.now(), 1_100)));
        await runDurableObjectAlarm(stub(t.topicId));
        const idle = await runInDurableObject(stub(t.topicId), (_o, state) => {
          const cp = state.storage.sql.exec<{ checkpoint: string }>("SELECT checkpoint FROM seg_clean_state").toArray()[0];
          const open = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM seg_segments WHERE closed = 0").one().n;
          return cp !== undefined && (JSON.parse(cp.checkpoint) as { phase: string }).phase === "idle" && open === 0;
        });
        if (idle && wake > 6) break;
      }
      expect(failures).toBeGreaterThan(0);
      const all: { key: string; value: string | null; offset: number }[] = [];
      let offset = 0;
      for (;;) {
        const f = await fetchJson(topic, 0, `offset=${offset}&maxRecords=100`);
        all.push(...f.records.map((r) => ({ key: String(r.key), value: r.value === null ? null : String(r.value), offset: r.offset })));
        if (f.nextOffset >= 600) break;
        expect(f.nextOffset).toBeGreaterThan(offset);
        offset = f.nextOffset;
      }
      // Offsets strictly increasing, one record per key with a value, each its latest; tombstones gone.
      expect(all.map((r) => r.offset)).toEqual([...all.map((r) => r.offset)].sort((a, b) => a - b));
      expect(new Set(all.map((r) => r.offset)).size).toBe(all.length);
      const expected = [...latest].filter(([, v]) => v !== null).sort();
      expect(all.map((r) => [r.key, r.value]).sort()).toEqual(expected);
    });
});

suite("compaction over binary, long and many keys (the key map held in memory, persisted as rows)", () => {
  /** Every record from offset 0 on, keys and values as hex (fetched with encoding=base64). */
  async function readHex(topic: string): Promise<{ offset: number; key: string; value: string | null }[]> {
    const out: { offset: number; key: string; value: string | null }[] = [];
    const hex = (b: string | null) => (b === null ? null : Array.from(atob(b), (c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(""));
    for (let offset = 0; ; ) {
      const f = await fetchJson(topic, 0, `offset=${offset}&maxRecords=100&encoding=base64`);
      for (const r of f.records) out.push({ offset: r.offset, key: hex(r.key as string)!, value: hex(r.value as string | null) });
      if (f.nextOffset >= f.highWatermark) return out;
      offset = f.nextOffset;
    }
  }
  const hexOf = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

  for (const restart of [false, true]) {
    it(`bytes 0x00-0xff, the empty key, keys of 64, 65 and 9000 bytes, 300 more; four rounds with tombstones${restart ? ", the object evicted between steps" : ""}: one record per key, the model's latest`, async () => {
      const topic = randomTopic();
      const t = await createTopic(topic, 1, { "cleanup.policy": "compact", "segment.ms": 1, "min.cleanable.dirty.ratio": 0, "delete.retention.ms": 0 });
      const keys: Uint8Array[] = [new Uint8Array([0]), new Uint8Array([0, 0]), new Uint8Array([0xff, 0x80]), new Uint8Array(0), new Uint8Array(64).fill(7), new Uint8Array(65).fill(7)];
      keys.push(
        new Uint8Array(9000).map((_, i) => i % 256),
        new Uint8Array(9000).map((_, i) => (i + 1) % 256),
      );
      for (let i = 0; i < 300; i++) keys.push(new TextEncoder().encode(`k${i}`));
      const model = new Map<string, string | null>();
      // Timestamps one ms apart, running a little ahead of the clock (min.compaction.lag.ms 0 holds nothing back).
      let ts = Date.now();
      const steps = async () => {
        if (!restart) return settle(t.topicId);
        for (let i = 0; i < 200; i++) {
          await evictDurableObject(stub(t.topicId));
          await runDurableObjectAlarm(stub(t.topicId));
          const st = await runInDurableObject(stub(t.topicId), (_o, state) => state.storage.sql.exec<{ checkpoint: string }>("SELECT checkpoint FROM seg_clean_state").toArray());
          if (st[0] !== undefined && JSON.parse(st[0].checkpoint).phase === "idle") return settle(t.topicId);
        }
      };
      for (let round = 0; round < 4; round++) {
        const records = keys.map((key, i) => ({ key, value: round > 0 && (i + round) % 5 === 0 ? null : new TextEncoder().encode(`v${round}-${i}`), headers: [], timestamp: ts++ }));
        for (let j = 0; j < records.length; j += 50) {
          const chunk = records.slice(j, j + 50);
          const res = await call(`/v1/topics/${topic}/partitions/0/records`, { method: "POST", headers: { "content-type": "application/vnd.edgelog.batch" }, body: encodeBatch({}, chunk) });
          expect(res.status, await res.clone().text()).toBe(200);
          for (const r of chunk) model.set(hexOf(r.key), r.value === null ? null : hexOf(r.value));
        }
        await steps();
      }
      // Two more appends close the last segment of round 3, then compaction runs to the end.
      await produceTo(topic, [{ key: "zz", value: "a" }]);
      await steps();
      await produceTo(topic, [{ key: "zz", value: "b" }]);
      await steps();
      const read = await readHex(topic);
      const keysRead = read.map((r) => r.key);
      expect(new Set(keysRead).size).toBe(keysRead.length);
      const got = new Map(read.map((r) => [r.key, r.value]));
      got.delete(hexOf(new TextEncoder().encode("zz")));
      const live = [...model].filter(([, v]) => v !== null);
      expect(got.size).toBe(live.length);
      for (const [k, v] of live) expect(got.get(k), k.slice(0, 16)).toBe(v);
    }, 120_000);
  }
});

suite("compaction state from before migration 2 (seg_clean_keys)", () => {
  it("a pass in progress when migration 2 replaced the key rows maps its dirty range again and finishes as it would have", async () => {
    const topic = randomTopic();
    // min.compaction.lag.ms holds any pass back: the test plants the running pass itself.
    const t = await createTopic(topic, 1, { "cleanup.policy": "compact", "delete.retention.ms": 0, "min.compaction.lag.ms": DAY });
    await produceEach(topic, [
      { key: "k1", value: "a" },
      { key: "k2", value: "b" },
      { key: "k1", value: "c" },
      { key: "k2", value: null },
      { key: "k3", value: "d" },
    ]);
    await rollAndSettle(topic, t.topicId);
    expect((await keyed(topic)).records).toHaveLength(5);
    // The object as lifecycle schema version 1 left it: seg_clean_keys with a row, and a checkpoint
    // in the rewrite phase that names no key rows (the map was in seg_clean_keys).
    await runInDurableObject(stub(t.topicId), (_o, state) => {
      const sql = state.storage.sql;
      const segs = sql.exec<{ base_offset: number; last_append_ms: number }>("SELECT base_offset, last_append_ms FROM seg_segments ORDER BY id").toArray();
      const segments = segs.map((r, i) => ({ baseOffset: r.base_offset, end: segs[i + 1]?.base_offset ?? 5, lastAppendMs: r.last_append_ms }));
      const pass = { startedMs: Date.now(), dirtyFrom: 0, end: 5, segments, tombstoneExpiryMs: null };
      sql.exec("DROP TABLE seg_clean_map");
      sql.exec("CREATE TABLE seg_clean_keys (key BLOB PRIMARY KEY, offset INTEGER NOT NULL) WITHOUT ROWID");
      sql.exec("INSERT INTO seg_clean_keys (key, offset) VALUES (?, ?)", new TextEncoder().encode("k1").buffer, 0);
      sql.exec("UPDATE _rooms SET version = 1 WHERE room = 'lifecycle'");
      sql.exec("INSERT OR REPLACE INTO seg_clean_state (id, checkpoint) VALUES (1, ?)", JSON.stringify({ phase: "rewrite", cleanOffset: 0, pass, cursor: 0 }));
    });
    await evictDurableObject(stub(t.topicId));
    await settle(t.topicId);
    expect(await keyed(topic)).toEqual({ records: ['k1="c"@2', 'k3="d"@4'], nextOffset: 5 });
    await runInDurableObject(stub(t.topicId), (_o, state) => {
      const sql = state.storage.sql;
      expect(sql.exec<{ version: number }>("SELECT version FROM _rooms WHERE room = 'lifecycle'").one().version).toBe(2);
      expect(sql.exec("SELECT name FROM sqlite_master WHERE name = 'seg_clean_keys'").toArray()).toEqual([]);
      expect(sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM seg_clean_map").one().n).toBe(0);
      expect((JSON.parse(sql.exec<{ checkpoint: string }>("SELECT checkpoint FROM seg_clean_state").one().checkpoint) as { phase: string }).phase).toBe("idle");
    });
  });
});

suite("property: the real partition against a model (fast-check)", () => {
  type Op = { kind: "produce"; records: { key: string; value: string | null }[] } | { kind: "settle" } | { kind: "deleteRecords"; fraction: number };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant("produce" as const),
        records: fc.array(fc.record({ key: fc.constantFrom("a", "b", "c"), value: fc.option(fc.constantFrom("", "1", "22"), { freq: 3 }) }), { minLength: 1, maxLength: 3 }),
      }),
    },
    { weight: 2, arbitrary: fc.constant({ kind: "settle" as const }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("deleteRecords" as const), fraction: fc.double({ min: 0, max: 1, noNaN: true }) }) },
  );

  it("latest value per key as the model's; offsets strictly increasing, records as produced; log start never decreases; every reader reaches the log end", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 10 }), fc.boolean(), async (ops, keepTombstones) => {
        const topic = randomTopic();
        // segment.ms = 1: nearly every append rolls, so compaction and retention have closed segments to work on.
        const t = await createTopic(topic, 1, { "cleanup.policy": "compact,delete", "segment.ms": 1, "min.cleanable.dirty.ratio": 0, "delete.retention.ms": keepTombstones ? DAY : 0 });
        const produced = new Map<number, { key: string; value: string | null }>();
        let end = 0;
        let lastStart = 0;
        for (const op of ops) {
          if (op.kind === "produce") {
            const r = await produceTo(topic, op.records);
            for (const [i, rec] of r.records.entries()) produced.set(rec.offset, op.records[i]!);
            end += op.records.length;
          } else if (op.kind === "settle") await settle(t.topicId);
          else expect((await deleteRecords(topic, Math.floor(lastStart + op.fraction * (end - lastStart)))).status).toBe(200);
          // Read everything from the log start.
          const start = await offsetOf(topic, "earliest");
          expect(start).toBeGreaterThanOrEqual(lastStart);
          lastStart = start;
          // Compaction and retention also run on their own timers while the test reads, so one
          // read of several fetches may straddle a compaction step (see 3, then find 4 gone with
          // delete.retention.ms 0: Kafka promises tombstones only to readers within that window).
          // Read until two whole reads agree: removal is monotonic, so equal reads are a snapshot.
          const readAll = async () => {
            const out: { key: string; value: string | null; offset: number }[] = [];
            for (let offset = start; offset < end; ) {
              const f = await fetchJson(topic, 0, `offset=${offset}&maxRecords=2`);
              expect(f.nextOffset).toBeGreaterThan(offset);
              out.push(...f.records.map((r) => ({ key: String(r.key), value: r.value === null ? null : String(r.value), offset: r.offset })));
              offset = f.nextOffset;
            }
            return out;
          };
          let read = await readAll();
          for (let attempt = 0; attempt < 20; attempt++) {
            const again = await readAll();
            if (JSON.stringify(again) === JSON.stringify(read)) break;
            read = again;
          }
          for (let i = 1; i < read.length; i++) expect(read[i]!.offset).toBeGreaterThan(read[i - 1]!.offset);
          for (const r of read) expect({ key: r.key, value: r.value }).toEqual(produced.get(r.offset));
          // Per key: the model's latest record at or after the log start, or (a tombstone) it or nothing.
          for (const key of ["a", "b", "c"]) {
            let latest: { offset: number; value: string | null } | null = null;
            for (const [offset, r] of produced) if (r.key === key && (latest === null || offset > latest.offset)) latest = { offset, value: r.value };
            const seen = read.filter((r) => r.key === key).pop();
            if (latest === null || latest.offset < start) expect(seen).toBeUndefined();
            else if (latest.value !== null) expect(seen).toEqual({ key, value: latest.value, offset: latest.offset });
            else if (seen !== undefined) expect(seen).toEqual({ key, value: null, offset: latest.offset });
          }
        }
      }),
      { numRuns: 6 },
    );
  }, 120_000);
});

suite("tiered storage to R2 (remote.storage.enable, KIP-405 names)", () => {
  it("offloads closed segments, drops their local rows, reads them through byte for byte, and deletes the objects with retention", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": MiB, "remote.storage.enable": true, "local.retention.ms": 0 });
    const big = (i: number) => `v${i}`.padEnd(400 * 1024, ".");
    for (let i = 0; i < 5; i++) await produceTo(topic, [{ value: big(i), key: `k${i}` }]);
    const binary = async (offset: number): Promise<[string, string | null]> => {
      // maxBytes=1: one whole batch per answer (KIP-74), wherever it is stored.
      const res = await call(`/v1/topics/${topic}/partitions/0/records?offset=${offset}&maxBytes=1`, { headers: { accept: "application/vnd.edgelog.batch" } });
      expect(res.status).toBe(200);
      return [new Uint8Array(await res.arrayBuffer()).join(","), res.headers.get("edgelog-next-offset")];
    };
    const before = await Promise.all([0, 1, 2, 3, 4].map(binary));
    await settle(t.topicId);
    // Segments [0,1] and [2,3] are in R2 only; the active segment [4] stays local.
    const objects = (await env.SEGMENTS!.list({ prefix: `segments/${t.topicId}/0/` })).objects.map((o) => o.key);
    expect(objects).toEqual([`segments/${t.topicId}/0/00000000000000000000-0.seg`, `segments/${t.topicId}/0/00000000000000000002-2.seg`]);
    const local = await runInDurableObject(stub(t.topicId), (_o, state) => ({
      rows: state.storage.sql
        .exec<{ base_offset: number }>("SELECT base_offset FROM batches ORDER BY base_offset")
        .toArray()
        .map((r) => r.base_offset),
      segs: state.storage.sql
        .exec<{ id: number; location: string }>("SELECT id, location FROM seg_segments ORDER BY id")
        .toArray()
        .map((r) => [r.id, r.location]),
    }));
    expect(local).toEqual({
      rows: [4],
      segs: [
        [0, "remote"],
        [2, "remote"],
        [4, "local"],
      ],
    });
    // The same bytes and the same next offsets from R2 as from the rows before.
    expect(await Promise.all([0, 1, 2, 3, 4].map(binary))).toEqual(before);
    // A reader from 0 reaches the end, JSON and SDK alike.
    const values: string[] = [];
    for (let offset = 0; offset < 5; ) {
      const f = await fetchJson(topic, 0, `offset=${offset}`);
      values.push(...f.records.map((r) => String(r.value).slice(0, 2)));
      offset = f.nextOffset;
    }
    expect(values).toEqual(["v0", "v1", "v2", "v3", "v4"]);
    const consumer = new Consumer(sdkClient(), { autoOffsetReset: "earliest" });
    consumer.assign([{ topic, partition: 0 }]);
    const seen: number[] = [];
    while (seen.length < 5) seen.push(...(await consumer.poll({ maxWaitMs: 100, maxBytes: MiB })).map((r) => r.offset));
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    // Retention deletes remote segments too: the objects, then their rows.
    expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "retention.ms": 1, "local.retention.ms": 1, "segment.ms": 1 } })).status).toBe(200);
    await settle(t.topicId);
    await settle(t.topicId);
    expect((await env.SEGMENTS!.list({ prefix: `segments/${t.topicId}/0/` })).objects.map((o) => o.key)).toEqual([]);
    expect(await offsetOf(topic, "earliest")).toBe(5);
  });
});

suite("tiered storage turned on by a config change", () => {
  it("offloads the segments already closed without waiting for another segment to close", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": MiB });
    for (let i = 0; i < 3; i++) await produceTo(topic, [{ value: `v${i}`.padEnd(400 * 1024, ".") }]);
    await settle(t.topicId);
    expect(await segments(t.topicId)).toEqual([
      [0, 1, 1],
      [2, 2, 0],
    ]);
    expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "remote.storage.enable": true, "local.retention.ms": 0 } })).status).toBe(200);
    await settle(t.topicId);
    await settle(t.topicId);
    expect((await env.SEGMENTS!.list({ prefix: `segments/${t.topicId}/0/` })).objects.map((o) => o.key)).toEqual([`segments/${t.topicId}/0/00000000000000000000-0.seg`]);
    const rows = await runInDurableObject(stub(t.topicId), (_o, state) => state.storage.sql.exec<{ base_offset: number }>("SELECT base_offset FROM batches ORDER BY base_offset").toArray());
    expect(rows.map((r) => r.base_offset)).toEqual([2]);
    expect((await fetchJson(topic, 0, "offset=0")).records.map((r) => String(r.value).slice(0, 2))).toEqual(["v0", "v1"]);
  });
});

suite("tiered storage: deleting the topic deletes its objects", () => {
  it("leaves no R2 object under the partition's prefix", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": MiB, "remote.storage.enable": true });
    for (let i = 0; i < 3; i++) await produceTo(topic, [{ value: `v${i}`.padEnd(400 * 1024, ".") }]);
    await settle(t.topicId);
    const prefix = `segments/${t.topicId}/0/`;
    expect((await env.SEGMENTS!.list({ prefix })).objects.length).toBe(1);
    expect((await call(`/v1/topics/${topic}`, { method: "DELETE" })).status).toBe(204);
    expect((await env.SEGMENTS!.list({ prefix })).objects).toEqual([]);
  });
});

suite("the floor: rooms that still need offsets hold retention back", () => {
  it("a subscription at the earliest position keeps every expired segment; deleting it lets retention go", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": MiB, "retention.ms": DAY });
    const created = await json("PUT", `/v1/topics/${topic}/subscriptions/slow`, { initialPosition: "earliest" });
    expect(created.status).toBe(201);
    const old = Date.now() - 3 * DAY;
    for (let i = 0; i < 5; i++) await produceTo(topic, [{ value: `v${i}`.padEnd(400 * 1024, "."), timestamp: old }]);
    await settle(t.topicId);
    // Segments [0,1] and [2,3] expired, but the subscription's mark-delete position is before 0.
    expect(await offsetOf(topic, "earliest")).toBe(0);
    expect((await call(`/v1/topics/${topic}/subscriptions/slow`, { method: "DELETE" })).status).toBe(200);
    // The floor is gone: the next retention check (moved to now by a config change) drops both.
    expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "retention.ms": DAY - 1 } })).status).toBe(200);
    await settle(t.topicId);
    expect(await offsetOf(topic, "earliest")).toBe(4);
  });
});
