/**
 * Produce contract additions: unknown JSON fields rejected, the record-count limit on binary
 * batches, and the `acks` query parameter (docs/PROTOCOL.md, Produce).
 */
import { describe as suite, expect, it } from "vitest";
import { encodeBatch, type ProducerRecord } from "../../src/codec/index.ts";
import { BATCH_MEDIA_TYPE, MAX_RECORDS_PER_REQUEST, utf8, type JsonFetchResponse } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, fetchJson, highWatermarks, json, randomTopic } from "./helpers.ts";

function binary(path: string, batch: Uint8Array): Promise<Response> {
  return call(path, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body: batch });
}

/** Long-polls the partition until it holds `count` records; no timing threshold, only a bound on attempts. */
async function awaitRecords(topic: string, count: number): Promise<JsonFetchResponse> {
  let f = await fetchJson(topic, 0, "offset=0&maxWaitMs=1000");
  for (let attempt = 0; f.records.length < count && attempt < 30; attempt++) f = await fetchJson(topic, 0, "offset=0&maxWaitMs=1000");
  return f;
}

suite("produce: unknown JSON fields", () => {
  it("a misspelt record field is INVALID_REQUEST naming it, nothing appended", async () => {
    const t = randomTopic();
    await createTopic(t);
    for (const path of [`/v1/topics/${t}/records`, `/v1/topics/${t}/partitions/0/records`]) {
      const e = await expectError(await json("POST", path, { records: [{ value: "ok" }, { vlaue: "x" }] }), "INVALID_REQUEST", 400);
      expect([e.message, e.details]).toEqual(["Unknown field records[1].vlaue.", { field: "records[1].vlaue" }]);
    }
    const e = await expectError(await json("POST", `/v1/topics/${t}/records`, { records: [{ value: "ok" }], valueEncodng: "json" }), "INVALID_REQUEST", 400);
    expect(e.details).toEqual({ field: "valueEncodng" });
    expect(await highWatermarks(t)).toEqual([0]);
  });
});

suite("produce: record count of a binary batch", () => {
  it(`a batch of ${MAX_RECORDS_PER_REQUEST + 1} records is INVALID_REQUEST, nothing appended`, async () => {
    const t = randomTopic();
    await createTopic(t);
    const records: ProducerRecord[] = Array.from({ length: MAX_RECORDS_PER_REQUEST + 1 }, () => ({ key: null, value: null, headers: [], timestamp: 1 }));
    const e = await expectError(await binary(`/v1/topics/${t}/partitions/0/records`, encodeBatch({}, records)), "INVALID_REQUEST", 400);
    expect(e.details).toEqual({ field: "recordCount", recordCount: MAX_RECORDS_PER_REQUEST + 1, maxRecords: MAX_RECORDS_PER_REQUEST });
    expect(await highWatermarks(t)).toEqual([0]);
  });
});

suite("produce: acks", () => {
  it("acks=0 on the topic route answers 202 {topic, accepted} and the records become visible", async () => {
    const t = randomTopic();
    await createTopic(t);
    const res = await json("POST", `/v1/topics/${t}/records?acks=0`, {
      records: [
        { value: "a", timestamp: 5 },
        { value: "b", timestamp: 6 },
      ],
    });
    expect([res.status, await res.json()]).toEqual([202, { topic: `public/default/${t}`, accepted: 2 }]);
    const f = await awaitRecords(t, 2);
    expect(f.records.map((r) => [r.offset, r.value, r.timestamp])).toEqual([
      [0, "a", 5],
      [1, "b", 6],
    ]);
  });

  it("acks=0 on the partition route, JSON and binary, answers 202 and appends", async () => {
    const t = randomTopic();
    await createTopic(t);
    const r1 = await json("POST", `/v1/topics/${t}/partitions/0/records?acks=0`, { records: [{ value: "a" }] });
    expect([r1.status, await r1.json()]).toEqual([202, { topic: `public/default/${t}`, accepted: 1 }]);
    await awaitRecords(t, 1);
    const batch = encodeBatch({}, [
      { key: null, value: utf8("b"), headers: [], timestamp: 7 },
      { key: null, value: utf8("c"), headers: [], timestamp: 8 },
    ]);
    const r2 = await binary(`/v1/topics/${t}/partitions/0/records?acks=0`, batch);
    expect([r2.status, await r2.json()]).toEqual([202, { topic: `public/default/${t}`, accepted: 2 }]);
    expect((await awaitRecords(t, 3)).records.map((r) => r.value)).toEqual(["a", "b", "c"]);
  });

  it("acks=0 still answers validation errors synchronously, nothing appended", async () => {
    const t = randomTopic();
    await createTopic(t, 1, { "max.message.bytes": 100 });
    await expectError(await json("POST", `/v1/topics/${t}/records?acks=0`, { records: [{ vlaue: "x" }] }), "INVALID_REQUEST", 400);
    const big = await expectError(await json("POST", `/v1/topics/${t}/records?acks=0`, { records: [{ value: "x".repeat(200) }] }), "RECORD_TOO_LARGE", 413);
    expect(big.details?.index).toBe(0);
    // A binary batch with a negative timestamp: checked in the gateway under acks=0 (the partition's answer is not awaited).
    const negative = encodeBatch({}, [{ key: null, value: utf8("x"), headers: [], timestamp: -5 }]);
    await expectError(await binary(`/v1/topics/${t}/partitions/0/records?acks=0`, negative), "INVALID_TIMESTAMP", 400);
    await expectError(await json("POST", `/v1/topics/${t}/partitions/1/records?acks=0`, { records: [{ value: "x" }] }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    expect(await highWatermarks(t)).toEqual([0]);
  });

  it("an invalid acks value is INVALID_REQUEST naming acks, nothing appended", async () => {
    const t = randomTopic();
    await createTopic(t);
    for (const acks of ["2", "-1", "ALL", ""]) {
      const e = await expectError(await json("POST", `/v1/topics/${t}/records?acks=${acks}`, { records: [{ value: "a" }] }), "INVALID_REQUEST", 400);
      expect(e.details).toEqual({ field: "acks" });
    }
    await expectError(await json("POST", `/v1/topics/${t}/partitions/0/records?acks=x`, { records: [{ value: "a" }] }), "INVALID_REQUEST", 400);
    expect(await highWatermarks(t)).toEqual([0]);
  });

  it("acks=1 and acks=all answer exactly as the default: 200 with offsets", async () => {
    const t = randomTopic();
    await createTopic(t);
    const answers: unknown[] = [];
    for (const q of ["?acks=1", "?acks=all", ""]) {
      const res = await json("POST", `/v1/topics/${t}/partitions/0/records${q}`, { records: [{ value: "a", timestamp: 9 }] });
      answers.push([res.status, await res.json()]);
    }
    const topic = `public/default/${t}`;
    expect(answers).toEqual([
      [200, { topic, records: [{ partition: 0, offset: 0, timestamp: 9 }] }],
      [200, { topic, records: [{ partition: 0, offset: 1, timestamp: 9 }] }],
      [200, { topic, records: [{ partition: 0, offset: 2, timestamp: 9 }] }],
    ]);
  });
});
