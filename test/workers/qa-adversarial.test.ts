/**
 * Adversarial cases found in QA of the running core: every rejected request answers the one
 * JSON error shape with a code from the table and its HTTP status, and changes no state;
 * binary batches that lie; semantics at the edges (partition growth and keyed partitioning,
 * describe numbers, null vs empty headers, a leading BOM, LogAppendTime retries); and
 * concurrency (many producers on one partition, many long-polls, a long-poll on a deleted topic).
 */
import { describe as suite, expect, it } from "vitest";
import { crc32c, decodeBatches, encodeBatch, partitionForKey, type ProducerRecord } from "../../src/codec/index.ts";
import {
  BATCH_MEDIA_TYPE,
  ERRORS,
  MAX_REQUEST_BYTES,
  isErrorCode,
  utf8,
  type ErrorBody,
  type JsonFetchResponse,
  type ProduceResponse,
  type TopicDescription,
} from "../../src/protocol/index.ts";
import { call, createTopic, describe, expectError, fetchJson, json, produce, randomTopic } from "./helpers.ts";

/** Everything a rejected request must leave unchanged: partition bounds, counts, bytes, configs. */
async function snapshot(name: string): Promise<Pick<TopicDescription, "partitions" | "configs" | "partitionDetails" | "topicId">> {
  const d = await describe(name);
  return { topicId: d.topicId, partitions: d.partitions, configs: d.configs, partitionDetails: d.partitionDetails };
}

/** Asserts the one error shape: JSON, a known code, the table's status and retriable flag. */
async function expectErrorShape(res: Response, what: string): Promise<ErrorBody["error"]> {
  const text = await res.text();
  expect(res.headers.get("content-type"), what).toMatch(/^application\/json/);
  const body = JSON.parse(text) as ErrorBody;
  expect(Object.keys(body), what).toEqual(["error"]);
  const e = body.error;
  expect(isErrorCode(e.code), `${what}: ${text}`).toBe(true);
  expect({ status: res.status, retriable: e.retriable, message: typeof e.message }, `${what}: ${text}`).toEqual({
    status: ERRORS[e.code].httpStatus,
    retriable: ERRORS[e.code].retriable,
    message: "string",
  });
  return e;
}

const rec = (value: string | null, timestamp = 1_000): ProducerRecord => ({ key: null, value: value === null ? null : utf8(value), headers: [], timestamp });

function sendBatch(topic: string, partition: number, body: Uint8Array): Promise<Response> {
  return call(`/v1/topics/${topic}/partitions/${partition}/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body });
}

/** A copy of `batch` changed by `f` (DataView over the copy); `fixCrc` recomputes the records CRC. */
function mutate(batch: Uint8Array, f: (v: DataView, b: Uint8Array) => void, fixCrc = false): Uint8Array {
  const b = batch.slice();
  const v = new DataView(b.buffer);
  f(v, b);
  if (fixCrc) v.setUint32(53, crc32c(b, 61, b.length)); // layout: src/codec/batch.ts
  return b;
}

suite("QA: every rejected request is one JSON error and changes nothing", () => {
  it("produce, fetch, offsets and admin routes reject bad input without touching state", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 2, { "max.message.bytes": 200 });
    await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ value: "seed" }] });
    const before = await snapshot(t);
    const topicsBefore = ((await (await call("/v1/topics")).json()) as { topics: { name: string }[] }).topics.map((x) => x.name);

    const big = "x".repeat(300);
    const cases: [string, Promise<Response>, string][] = [
      // produce, JSON
      ["records[0] is a string", json("POST", `/v1/topics/${t}/records`, { records: ["v"] }), "INVALID_REQUEST"],
      ["header key null", json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v", headers: [{ key: null, value: "x" }] }] }), "INVALID_REQUEST"],
      ["header value base64 number", json("POST", `/v1/topics/${t}/records`, { valueEncoding: "base64", records: [{ value: "QQ==", headers: [{ key: "h", value: 1 }] }] }), "INVALID_REQUEST"],
      ["header value array (string encoding)", json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v", headers: [{ key: "h", value: ["x"] }] }] }), "INVALID_REQUEST"],
      ["value object (string encoding)", json("POST", `/v1/topics/${t}/records`, { records: [{ value: { a: 1 } }] }), "INVALID_REQUEST"],
      ["partition float", json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v", partition: 0.5 }] }), "INVALID_REQUEST"],
      ["partition huge", json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v", partition: 1e300 }] }), "INVALID_REQUEST"],
      ["timestamp string", json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v", timestamp: "1000" }] }), "INVALID_REQUEST"],
      ["timestamp 1e300", json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v", timestamp: 1e300 }] }), "INVALID_TIMESTAMP"],
      ["base64 with a newline", json("POST", `/v1/topics/${t}/records`, { valueEncoding: "base64", records: [{ value: "QUJD\nQUJD" }] }), "INVALID_ENCODING"],
      ["base64url alphabet", json("POST", `/v1/topics/${t}/records`, { keyEncoding: "base64", records: [{ key: "_-8", value: "v" }] }), "INVALID_ENCODING"],
      ["101 thousand records", json("POST", `/v1/topics/${t}/records`, { records: Array.from({ length: 100_001 }, () => ({})) }), "INVALID_REQUEST"],
      [
        "a too-large record in the middle of a multi-partition request",
        json("POST", `/v1/topics/${t}/records`, { records: [{ value: "a", partition: 0 }, { value: "b", partition: 1 }, { value: big, partition: 1 }, { value: "c", partition: 0 }] }),
        "RECORD_TOO_LARGE",
      ],
      ["second record names a missing partition", json("POST", `/v1/topics/${t}/records`, { records: [{ value: "a", partition: 0 }, { value: "b", partition: 2 }] }), "UNKNOWN_TOPIC_OR_PARTITION"],
      ["partition route, partition 1e3", json("POST", `/v1/topics/${t}/partitions/1e3/records`, { records: [{ value: "v" }] }), "INVALID_REQUEST"],
      ["partition route, partition -1", json("POST", `/v1/topics/${t}/partitions/-1/records`, { records: [{ value: "v" }] }), "INVALID_REQUEST"],
      ["partition route, partition 2", json("POST", `/v1/topics/${t}/partitions/2/records`, { records: [{ value: "v" }] }), "UNKNOWN_TOPIC_OR_PARTITION"],
      ["producer fields: epoch string", json("POST", `/v1/topics/${t}/partitions/0/records`, { producerId: 1, producerEpoch: "0", baseSequence: 0, records: [{ value: "v" }] }), "INVALID_PRODUCER_ID"],
      ["producer fields: only baseSequence", json("POST", `/v1/topics/${t}/partitions/0/records`, { baseSequence: 0, records: [{ value: "v" }] }), "INVALID_PRODUCER_ID"],
      ["producer fields: negative epoch", json("POST", `/v1/topics/${t}/partitions/0/records`, { producerId: 1, producerEpoch: -1, baseSequence: 0, records: [{ value: "v" }] }), "INVALID_PRODUCER_ID"],
      ["unknown producer starting at sequence 5", json("POST", `/v1/topics/${t}/partitions/0/records`, { producerId: 987_654_321, producerEpoch: 0, baseSequence: 5, records: [{ value: "v" }] }), "OUT_OF_ORDER_SEQUENCE_NUMBER"],
      ["JSON with a BOM", call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": "application/json" }, body: "\uFEFF{\"records\":[{}]}" }), "INVALID_JSON"],
      ["JSON not UTF-8", call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": "application/json" }, body: new Uint8Array([0x7b, 0xff, 0x7d]) }), "INVALID_JSON"],
      ["text/plain", call(`/v1/topics/${t}/partitions/0/records`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{\"records\":[{}]}" }), "UNSUPPORTED_MEDIA_TYPE"],
      // fetch and offsets
      ["fetch offset 1.0", call(`/v1/topics/${t}/partitions/0/records?offset=1.0`), "INVALID_OFFSET"],
      ["fetch offset 1e0", call(`/v1/topics/${t}/partitions/0/records?offset=1e0`), "INVALID_OFFSET"],
      ["fetch offset 2^53", call(`/v1/topics/${t}/partitions/0/records?offset=9007199254740992`), "INVALID_OFFSET"],
      ["fetch offset above the end", call(`/v1/topics/${t}/partitions/0/records?offset=2`), "OFFSET_OUT_OF_RANGE"],
      ["fetch maxWaitMs NaN", call(`/v1/topics/${t}/partitions/0/records?offset=0&maxWaitMs=NaN`), "INVALID_REQUEST"],
      ["fetch minBytes -1", call(`/v1/topics/${t}/partitions/0/records?offset=0&minBytes=-1`), "INVALID_REQUEST"],
      ["fetch maxBytes 1.5", call(`/v1/topics/${t}/partitions/0/records?offset=0&maxBytes=1.5`), "INVALID_REQUEST"],
      ["fetch encoding HEX", call(`/v1/topics/${t}/partitions/0/records?offset=0&encoding=HEX`), "INVALID_REQUEST"],
      ["fetch partition 01", call(`/v1/topics/${t}/partitions/01/records?offset=0`), "INVALID_REQUEST"],
      ["fetch partition 2", call(`/v1/topics/${t}/partitions/2/records?offset=0`), "UNKNOWN_TOPIC_OR_PARTITION"],
      ["offsets spec Latest", call(`/v1/topics/${t}/partitions/0/offsets?spec=Latest`), "INVALID_OFFSET"],
      ["offsets timestamp 1e3", call(`/v1/topics/${t}/partitions/0/offsets?spec=timestamp&timestamp=1e3`), "INVALID_OFFSET"],
      ["offsets timestamp -1", call(`/v1/topics/${t}/partitions/0/offsets?spec=timestamp&timestamp=-1`), "INVALID_OFFSET"],
      // admin
      ["alter: decrease", json("PATCH", `/v1/topics/${t}`, { partitions: 1 }), "PARTITION_DECREASE_NOT_ALLOWED"],
      ["alter: increase with a bad config", json("PATCH", `/v1/topics/${t}`, { partitions: 4, configs: { "max.message.bytes": 100, "retention.ms": "forever" } }), "INVALID_CONFIG"],
      ["alter: partitions as a string", json("PATCH", `/v1/topics/${t}`, { partitions: "4" }), "INVALID_REQUEST"],
      ["alter: configs an array", json("PATCH", `/v1/topics/${t}`, { configs: [["max.message.bytes", 1]] }), "INVALID_REQUEST"],
      ["alter: unknown config", json("PATCH", `/v1/topics/${t}`, { configs: { "compression.type": "gzip" } }), "INVALID_CONFIG"],
      ["create: the same name", json("POST", "/v1/topics", { name: t }), "TOPIC_ALREADY_EXISTS"],
      ["create: same name, full form", json("POST", "/v1/topics", { name: `public/default/${t}`, partitions: 5 }), "TOPIC_ALREADY_EXISTS"],
      ["create: 250 characters", json("POST", "/v1/topics", { name: "q".repeat(250) }), "INVALID_TOPIC_NAME"],
      ["create: tenant only", json("POST", "/v1/topics", { name: `qa/${t}` }), "INVALID_TOPIC_NAME"],
      ["create: '..' namespace", json("POST", "/v1/topics", { name: `qa/../${t}` }), "INVALID_TOPIC_NAME"],
      ["create: partitions 1e400", call("/v1/topics", { method: "POST", headers: { "content-type": "application/json" }, body: `{"name":"${t}-x","partitions":1e400}` }), "INVALID_PARTITIONS"],
      ["create: segment.bytes 13", json("POST", "/v1/topics", { name: `${t}-x`, configs: { "segment.bytes": 13 } }), "INVALID_CONFIG"],
      ["create: body over the limit", call("/v1/topics", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: `${t}-x`, pad: "p".repeat(MAX_REQUEST_BYTES) }) }), "REQUEST_TOO_LARGE"],
      ["delete: %2F-encoded bad name", call(`/v1/topics/qa%2F${t}`, { method: "DELETE" }), "INVALID_TOPIC_NAME"],
      ["wrong method on a known path", call(`/v1/topics/${t}/partitions/0/offsets?spec=latest`, { method: "DELETE" }), "METHOD_NOT_ALLOWED"],
      ["PUT on the produce route", call(`/v1/topics/${t}/partitions/0/records`, { method: "PUT", headers: { "content-type": "application/json" }, body: '{"records":[{"value":"x"}]}' }), "METHOD_NOT_ALLOWED"],
    ];
    for (const [what, pending, code] of cases) {
      const e = await expectErrorShape(await pending, what);
      expect(e.code, what).toBe(code);
    }
    expect(await snapshot(t)).toEqual(before);
    const topicsAfter = ((await (await call("/v1/topics")).json()) as { topics: { name: string }[] }).topics.map((x) => x.name);
    expect(topicsAfter.filter((n) => n.includes(t))).toEqual(topicsBefore.filter((n) => n.includes(t)));
    await expectError(await call(`/v1/topics/${t}-x`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
  });

  it("binary batches that lie are INVALID_BATCH, including attribute bits with no meaning", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    const good = encodeBatch({}, [rec("a", 5), rec("b", 6)]);
    const cases: [string, Uint8Array][] = [
      ["magic 2", mutate(good, (_v, b) => (b[0] = 2))],
      ["recordCount 3 (records say 2)", mutate(good, (v) => v.setInt32(49, 3))],
      ["recordCount 1 (records say 2)", mutate(good, (v) => v.setInt32(49, 1))],
      ["recordCount 1, lastOffsetDelta 0", mutate(good, (v) => { v.setInt32(49, 1); v.setInt32(11, 0); })],
      ["recordCount 2^31-1", mutate(good, (v) => { v.setInt32(49, 0x7fffffff); v.setInt32(11, 0x7ffffffe); })],
      ["recordCount -1", mutate(good, (v) => v.setInt32(49, -1))],
      ["lastOffsetDelta 5 (offset gaps)", mutate(good, (v) => v.setInt32(11, 5))],
      ["recordsLength 2^30", mutate(good, (v) => v.setUint32(57, 2 ** 30))],
      ["recordsLength 3", mutate(good, (v) => v.setUint32(57, 3))],
      ["negative baseOffset", mutate(good, (v) => v.setBigInt64(3, -1n))],
      ["producer id beyond 2^53", mutate(good, (v) => v.setBigInt64(31, 1n << 60n))],
      ["compression gzip", mutate(good, (v) => v.setUint16(1, 1))],
      ["LogAppendTime bit", mutate(good, (v) => v.setUint16(1, 0x08))],
      ["control bit", mutate(good, (v) => v.setUint16(1, 0x20))],
      ["unassigned attribute bit 6", mutate(good, (v) => v.setUint16(1, 0x40))],
      ["unassigned attribute bit 15", mutate(good, (v) => v.setUint16(1, 0x8000))],
      ["record attributes 1", mutate(good, (_v, b) => (b[62] = 1), true)],
      ["two batches in one body", new Uint8Array([...good, ...good])],
    ];
    for (const [what, body] of cases) {
      const e = await expectErrorShape(await sendBatch(t, 0, body), what);
      expect(e.code, what).toBe("INVALID_BATCH");
    }
    const producerCases: [string, Uint8Array][] = [
      ["producer id -5", mutate(good, (v) => v.setBigInt64(31, -5n))],
      ["producer 1 with epoch -1", mutate(good, (v) => { v.setBigInt64(31, 1n); v.setInt16(39, -1); v.setInt32(41, 0); })],
      ["producer 1 with sequence -1", mutate(good, (v) => { v.setBigInt64(31, 1n); v.setInt16(39, 0); v.setInt32(41, -1); })],
    ];
    for (const [what, body] of producerCases) {
      const e = await expectErrorShape(await sendBatch(t, 0, body), what);
      expect(e.code, what).toBe("INVALID_PRODUCER_ID");
    }
    expect((await describe(t)).partitionDetails[0]).toEqual({ partition: 0, logStartOffset: 0, highWatermark: 0, logEndOffset: 0, recordCount: 0, bytes: 0 });
    // A header that lies about maxTimestamp and baseOffset is corrected, not trusted.
    const lying = mutate(good, (v) => { v.setBigInt64(23, 1n); v.setBigInt64(3, 77n); });
    const ok = (await (await sendBatch(t, 0, lying)).json()) as ProduceResponse;
    expect(ok.records).toEqual([{ partition: 0, offset: 0, timestamp: 5 }, { partition: 0, offset: 1, timestamp: 6 }]);
    const max = (await (await call(`/v1/topics/${t}/partitions/0/offsets?spec=max_timestamp`)).json()) as { offset: number; timestamp: number };
    expect([max.offset, max.timestamp]).toEqual([1, 6]);
  });

  it("an unknown topic is named by its full name on every route", async () => {
    const t = randomTopic("qa-missing");
    const full = `public/default/${t}`;
    for (const res of [
      await call(`/v1/topics/${t}`),
      await json("PATCH", `/v1/topics/${t}`, {}),
      await call(`/v1/topics/${t}`, { method: "DELETE" }),
      await json("POST", `/v1/topics/${t}/records`, { records: [{}] }),
      await call(`/v1/topics/${t}/partitions/0/records?offset=0`),
    ]) {
      const e = await expectError(res, "UNKNOWN_TOPIC_OR_PARTITION", 404);
      expect(e.details).toEqual({ topic: full });
    }
  });
});

suite("QA: semantics at the edges", () => {
  it("alter partitions up: new partitions start empty and keyed records follow the new count", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    const key = "user-1";
    const first = await produce(`/v1/topics/${t}/records`, { records: [{ key, value: "one partition" }] });
    expect(first.records.map((r) => r.partition)).toEqual([0]);
    const altered = (await (await json("PATCH", `/v1/topics/${t}`, { partitions: 3 })).json()) as TopicDescription;
    expect(altered.partitionDetails.map((p) => [p.partition, p.highWatermark])).toEqual([[0, 1], [1, 0], [2, 0]]);
    const after = await produce(`/v1/topics/${t}/records`, { records: [{ key, value: "three partitions" }, { key: "100:48069", value: "v" }] });
    // murmur2: "user-1" -> 2 of 3 (the README's example), "100:48069" -> 0 of 3 (after the 1 record there).
    expect([partitionForKey(utf8(key), 3), partitionForKey(utf8("100:48069"), 3)]).toEqual([2, 0]);
    expect(after.records.map((r) => [r.partition, r.offset])).toEqual([[2, 0], [0, 1]]);
    expect(await fetchJson(t, 2, "offset=0").then((f) => f.records[0]!.value)).toBe("three partitions");
  });

  it("describe counts exactly the stored batch bytes a binary fetch returns", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ key: "k", value: "v", headers: [{ key: "h", value: null }] }] });
    await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ value: "x".repeat(1000) }, { value: "" }, {}] });
    await sendBatch(t, 0, encodeBatch({}, [rec("bin"), rec(null)]));
    const bin = await call(`/v1/topics/${t}/partitions/0/records?offset=0`, { headers: { accept: BATCH_MEDIA_TYPE } });
    const body = new Uint8Array(await bin.arrayBuffer());
    expect(decodeBatches(body).map((b) => [b.header.baseOffset, b.header.recordCount])).toEqual([[0, 1], [1, 3], [4, 2]]);
    expect((await describe(t)).partitionDetails[0]).toEqual({ partition: 0, logStartOffset: 0, highWatermark: 6, logEndOffset: 6, recordCount: 6, bytes: body.length });
  });

  it("null and empty header values stay distinct in string and base64, duplicates in order", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      records: [{ value: "s", headers: [{ key: "h", value: null }, { key: "h", value: "" }, { key: "h" }, { key: "", value: "k-empty" }] }],
    });
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      valueEncoding: "base64",
      records: [{ value: "", headers: [{ key: "h", value: "" }, { key: "h", value: null }, { key: "h", value: "AA" }] }],
    });
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      valueEncoding: "json",
      records: [{ value: null, headers: [{ key: "h", value: null }, { key: "h", value: "" }, { key: "h", value: 0 }] }],
    });
    const asString = await fetchJson(t, 0, "offset=0");
    expect(asString.records.map((r) => [r.value, r.headers])).toEqual([
      ["s", [{ key: "h", value: null }, { key: "h", value: "" }, { key: "h", value: null }, { key: "", value: "k-empty" }]],
      ["", [{ key: "h", value: "" }, { key: "h", value: null }, { key: "h", value: "\u0000" }]],
      [null, [{ key: "h", value: null }, { key: "h", value: '""' }, { key: "h", value: "0" }]],
    ]);
    const asJson = await fetchJson(t, 0, "offset=2&encoding=json");
    expect(asJson.records.map((r) => [r.value, r.headers])).toEqual([[null, [{ key: "h", value: null }, { key: "h", value: "" }, { key: "h", value: 0 }]]]);
  });

  it("a leading U+FEFF (BOM) and a U+0000 in a string value are data and round trip", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ key: "\uFEFFk", value: "\uFEFFv\u0000w" }] });
    const f = await fetchJson(t, 0, "offset=0");
    expect([f.records[0]!.key, f.records[0]!.value]).toEqual(["\uFEFFk", "\uFEFFv\u0000w"]);
    const b64 = await fetchJson(t, 0, "offset=0&encoding=base64");
    expect(b64.records[0]!.value).toBe("77u/dgB3");
  });

  it("under LogAppendTime an idempotent retry answers the original broker timestamps", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1, { "message.timestamp.type": "LogAppendTime" });
    const { producerId } = (await (await call("/v1/producers", { method: "POST" })).json()) as { producerId: number };
    const body = { producerId, producerEpoch: 0, baseSequence: 0, records: [{ value: "a", timestamp: 5 }, { value: "b", timestamp: 6 }] };
    const first = await produce(`/v1/topics/${t}/partitions/0/records`, body);
    expect(first.records.map((r) => r.offset)).toEqual([0, 1]);
    expect(first.records[0]!.timestamp).toBeGreaterThan(1_000_000_000_000);
    expect(first.records[1]!.timestamp).toBe(first.records[0]!.timestamp);
    await new Promise((r) => setTimeout(r, 5));
    const retry = await produce(`/v1/topics/${t}/partitions/0/records`, body);
    expect(retry).toEqual({ ...first, duplicate: true });
    expect((await fetchJson(t, 0, "offset=0")).records.map((r) => r.timestamp)).toEqual(first.records.map((r) => r.timestamp));
  });
});

suite("QA: concurrency", () => {
  it("many concurrent producers on one partition get dense offsets, no gaps, no duplicates", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    const clients = 16;
    const requests = 5;
    const perRequest = 7;
    const acked: number[][] = [];
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let r = 0; r < requests; r++) {
          const p = await produce(`/v1/topics/${t}/partitions/0/records`, { records: Array.from({ length: perRequest }, (_, k) => ({ value: `${c}/${r}/${k}` })) });
          acked.push(p.records.map((x) => x.offset));
        }
      }),
    );
    const total = clients * requests * perRequest;
    // Each request's offsets are contiguous, and all of them together are exactly 0..total-1.
    for (const offs of acked) expect(offs).toEqual(Array.from({ length: perRequest }, (_, k) => offs[0]! + k));
    expect(acked.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i));
    const f = await fetchJson(t, 0, `offset=0&maxRecords=${total}`);
    expect(f.records.map((r) => r.offset)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(new Set(f.records.map((r) => r.value)).size).toBe(total);
  });

  it("one append wakes every waiting long-poll", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    const waiting = Array.from({ length: 20 }, () => call(`/v1/topics/${t}/partitions/0/records?offset=0&maxWaitMs=20000`));
    await new Promise((r) => setTimeout(r, 200));
    const startedMs = Date.now();
    await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ value: "wake" }] });
    const answers = await Promise.all(waiting.map(async (p) => (await (await p).json()) as JsonFetchResponse));
    expect(Date.now() - startedMs).toBeLessThan(10_000); // woken by the append, not by the 20 s deadline
    expect(answers.map((a) => [a.records.map((r) => r.value), a.nextOffset])).toEqual(Array.from({ length: 20 }, () => [["wake"], 1]));
  });

  it("a long-poll held while its topic is deleted answers UNKNOWN_TOPIC_OR_PARTITION at once; re-created, the topic is empty", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ value: "old" }] });
    const startedMs = Date.now();
    const held = call(`/v1/topics/${t}/partitions/0/records?offset=1&maxWaitMs=30000`);
    await new Promise((r) => setTimeout(r, 200));
    expect((await call(`/v1/topics/${t}`, { method: "DELETE" })).status).toBe(204);
    const e = await expectError(await held, "UNKNOWN_TOPIC_OR_PARTITION", 404);
    expect(e.details).toEqual({ topic: `public/default/${t}` });
    expect(Date.now() - startedMs).toBeLessThan(15_000); // not at its 30 s deadline
    await createTopic(t, 1);
    expect(await fetchJson(t, 0, "offset=0")).toEqual({ topic: `public/default/${t}`, partition: 0, records: [], nextOffset: 0, highWatermark: 0, logStartOffset: 0 });
    await expectError(await call(`/v1/topics/${t}/partitions/0/records?offset=1`), "OFFSET_OUT_OF_RANGE", 416);
  });
});
