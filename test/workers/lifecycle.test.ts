/**
 * The storage lifecycle through the real gateway and the real partition object (issue 10,
 * docs/LIFECYCLE.md): segments, retention, deleteRecords (field case B1), reads inside a batch
 * (B2), segment roll with old timestamps (B6), compaction with tombstones, the produce-time checks.
 * The lifecycle's timers are run with runDurableObjectAlarm; a wake may also have run on its own
 * (the test runtime fires alarms), so each step runs wakes until the state stops changing.
 */
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import { EdgelogClient } from "../../sdk/src/index.ts";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import type { OffsetFetchResponse } from "../../src/protocol/groups.ts";
import type { DeleteRecordsResponse } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, fetchJson, json, produce, randomTopic } from "./helpers.ts";

const DAY = 86_400_000;
const MiB = 1024 * 1024;

function stub(topicId: string): DurableObjectStub {
  return env.PARTITION.getByName(partitionObjectName(topicId, 0));
}

/** Runs the partition's due timers until a wake finds nothing due (bounded). */
async function settle(topicId: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 5));
    if (!(await runDurableObjectAlarm(stub(topicId)))) {
      // No alarm was set, or it ran already: check nothing is due now.
      const due = await runInDurableObject(
        stub(topicId),
        (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM _schedule WHERE room = 'lifecycle' AND due_ms <= ?", Date.now()).one().n,
      );
      if (due === 0) return;
    }
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
});
