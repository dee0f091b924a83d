import { env } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import { encodeBatch, partitionForKey, recordSizeBytes, type ProducerRecord } from "../../src/codec/index.ts";
import { metadataStore } from "../../src/metadata/store.ts";
import { BATCH_MEDIA_TYPE, MAX_REQUEST_BYTES, PRODUCE_SUMMARY_MEDIA_TYPE, utf8 } from "../../src/protocol/index.ts";
import { call, createTopic, describe, expectError, fetchJson, highWatermarks, json, produce, randomTopic } from "./helpers.ts";

suite("produce: encodings and record model", () => {
  it("string encoding round trip (the default)", async () => {
    const t = randomTopic();
    await createTopic(t);
    const p = await produce(`/v1/topics/${t}/records`, { records: [{ key: "user-1", value: "héllo ✓", timestamp: 1000 }] });
    expect(p).toEqual({ topic: `public/default/${t}`, records: [{ partition: 0, offset: 0, timestamp: 1000 }] });
    const f = await fetchJson(t, 0, "offset=0");
    expect(f).toEqual({
      topic: `public/default/${t}`,
      partition: 0,
      records: [{ partition: 0, offset: 0, timestamp: 1000, key: "user-1", value: "héllo ✓", headers: [] }],
      nextOffset: 1,
      highWatermark: 1,
      logStartOffset: 0,
    });
  });

  it("base64 encoding round trip, padding optional, raw bytes preserved", async () => {
    const t = randomTopic();
    await createTopic(t);
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      keyEncoding: "base64",
      valueEncoding: "base64",
      records: [
        { key: "AP8=", value: "AAECAwT/", headers: [{ key: "h", value: "3q2+7w" }] },
        { key: "AP8", value: "" },
      ],
    });
    const f = await fetchJson(t, 0, "offset=0&encoding=base64");
    expect(f.records.map((r) => [r.key, r.value, r.headers])).toEqual([
      ["AP8=", "AAECAwT/", [{ key: "h", value: "3q2+7w==" }]],
      ["AP8=", "", []],
    ]);
  });

  it("json encoding stores JSON.stringify bytes and returns the value", async () => {
    const t = randomTopic();
    await createTopic(t);
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      keyEncoding: "json",
      valueEncoding: "json",
      records: [
        { key: { id: 1 }, value: { n: 1, s: ["a", true, null] }, headers: [{ key: "h", value: 42 }] },
        { key: "k", value: 3.5 },
      ],
    });
    const asJson = await fetchJson(t, 0, "offset=0&encoding=json");
    expect(asJson.records.map((r) => [r.key, r.value, r.headers])).toEqual([
      [{ id: 1 }, { n: 1, s: ["a", true, null] }, [{ key: "h", value: 42 }]],
      ["k", 3.5, []],
    ]);
    const asString = await fetchJson(t, 0, "offset=0");
    expect(asString.records.map((r) => [r.key, r.value])).toEqual([
      ['{"id":1}', '{"n":1,"s":["a",true,null]}'],
      ['"k"', "3.5"],
    ]);
  });

  it("null and empty keys/values stay distinct on every encoding", async () => {
    const t = randomTopic();
    await createTopic(t);
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      records: [{ key: null, value: null }, { key: "", value: "" }, {}, { key: "", value: null }],
    });
    for (const [encoding, empty] of [
      ["string", ""],
      ["base64", ""],
    ] as const) {
      const f = await fetchJson(t, 0, `offset=0&encoding=${encoding}`);
      expect(f.records.map((r) => [r.key, r.value])).toEqual([
        [null, null],
        [empty, empty],
        [null, null],
        [empty, null],
      ]);
    }
    const b64 = await produce(`/v1/topics/${t}/partitions/0/records`, { keyEncoding: "base64", valueEncoding: "base64", records: [{ key: "", value: null }] });
    expect(b64.records[0]!.offset).toBe(4);
    const f = await fetchJson(t, 0, "offset=4");
    expect(f.records.map((r) => [r.key, r.value])).toEqual([["", null]]);
  });

  it("duplicate and null headers round trip in order", async () => {
    const t = randomTopic();
    await createTopic(t);
    const headers = [
      { key: "h", value: "1" },
      { key: "x", value: null },
      { key: "h", value: "2" },
      { key: "h", value: "" },
      { key: "", value: "empty key" },
    ];
    await produce(`/v1/topics/${t}/records`, { records: [{ value: "v", headers }] });
    const f = await fetchJson(t, 0, "offset=0");
    expect(f.records[0]!.headers).toEqual(headers);
  });

  it("CreateTime keeps the client's timestamp, broker time when absent", async () => {
    const t = randomTopic();
    await createTopic(t);
    const before = Date.now();
    const p = await produce(`/v1/topics/${t}/records`, { records: [{ value: "a", timestamp: 5 }, { value: "b" }, { value: "c", timestamp: 0 }] });
    const after = Date.now();
    expect(p.records[0]!.timestamp).toBe(5);
    expect(p.records[1]!.timestamp).toBeGreaterThanOrEqual(before);
    expect(p.records[1]!.timestamp).toBeLessThanOrEqual(after);
    expect(p.records[2]!.timestamp).toBe(0);
    const f = await fetchJson(t, 0, "offset=0");
    expect(f.records.map((r) => r.timestamp)).toEqual(p.records.map((r) => r.timestamp));
  });

  it("LogAppendTime overrides client timestamps with broker time", async () => {
    const t = randomTopic();
    await createTopic(t, 1, { "message.timestamp.type": "LogAppendTime" });
    const before = Date.now();
    const p = await produce(`/v1/topics/${t}/records`, {
      records: [
        { value: "a", timestamp: 1000 },
        { value: "b", timestamp: 2000 },
      ],
    });
    const after = Date.now();
    const ts = p.records[0]!.timestamp;
    expect(ts).toBeGreaterThanOrEqual(before);
    expect(ts).toBeLessThanOrEqual(after);
    expect(p.records.map((r) => r.timestamp)).toEqual([ts, ts]);
    const f = await fetchJson(t, 0, "offset=0");
    expect(f.records.map((r) => r.timestamp)).toEqual([ts, ts]);
  });

  it("splits a request over MAX_STORED_BATCH_BYTES into several stored batches, offsets contiguous", async () => {
    const t = randomTopic();
    await createTopic(t);
    const big = "x".repeat(600 * 1024);
    const p = await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ value: big }, { value: big }, { value: "small" }] });
    expect(p.records.map((r) => r.offset)).toEqual([0, 1, 2]);
    // One stored batch per fetch when maxBytes is 1: the first two records are in separate rows.
    const first = await fetchJson(t, 0, "offset=0&maxBytes=1");
    expect(first.records.map((r) => r.offset)).toEqual([0]);
    expect(first.nextOffset).toBe(1);
    // The default maxBytes (1 MiB) stops before the second 600 KiB batch.
    const byDefault = await fetchJson(t, 0, "offset=0");
    expect(byDefault.records.map((r) => r.offset)).toEqual([0]);
    const all = await fetchJson(t, 0, `offset=0&maxBytes=${4 * 1024 * 1024}`);
    expect(all.records.map((r) => (r.value as string).length)).toEqual([big.length, big.length, 5]);
    expect(all.nextOffset).toBe(3);
  });

  it("null and empty header values stay distinct in string and base64, duplicates in order", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      records: [{ value: "s", headers: [{ key: "h", value: null }, { key: "h", value: "" }, { key: "h" }, { key: "", value: "k-empty" }] }],
    });
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      valueEncoding: "base64",
      records: [
        {
          value: "",
          headers: [
            { key: "h", value: "" },
            { key: "h", value: null },
            { key: "h", value: "AA" },
          ],
        },
      ],
    });
    await produce(`/v1/topics/${t}/partitions/0/records`, {
      valueEncoding: "json",
      records: [
        {
          value: null,
          headers: [
            { key: "h", value: null },
            { key: "h", value: "" },
            { key: "h", value: 0 },
          ],
        },
      ],
    });
    const asString = await fetchJson(t, 0, "offset=0");
    expect(asString.records.map((r) => [r.value, r.headers])).toEqual([
      [
        "s",
        [
          { key: "h", value: null },
          { key: "h", value: "" },
          { key: "h", value: null },
          { key: "", value: "k-empty" },
        ],
      ],
      [
        "",
        [
          { key: "h", value: "" },
          { key: "h", value: null },
          { key: "h", value: "\u0000" },
        ],
      ],
      [
        null,
        [
          { key: "h", value: null },
          { key: "h", value: '""' },
          { key: "h", value: "0" },
        ],
      ],
    ]);
    const asJson = await fetchJson(t, 0, "offset=2&encoding=json");
    expect(asJson.records.map((r) => [r.value, r.headers])).toEqual([
      [
        null,
        [
          { key: "h", value: null },
          { key: "h", value: "" },
          { key: "h", value: 0 },
        ],
      ],
    ]);
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
});

suite("produce: partitioning", () => {
  it("keyed records land where Kafka's default partitioner puts them", async () => {
    const t12 = randomTopic();
    const t10 = randomTopic();
    await createTopic(t12, 12);
    await createTopic(t10, 10);
    const a = await produce(`/v1/topics/${t12}/records`, { records: [{ key: "100:48069", value: "v" }] });
    expect(a.records).toEqual([{ partition: 9, offset: 0, timestamp: a.records[0]!.timestamp }]);
    const b = await produce(`/v1/topics/${t10}/records`, { records: [{ key: "wu", value: "v" }] });
    expect(b.records).toEqual([{ partition: 0, offset: 0, timestamp: b.records[0]!.timestamp }]);
    // An empty key is a key (hashed), not a null key.
    const c = await produce(`/v1/topics/${t12}/records`, {
      records: [
        { key: "", value: "v" },
        { key: "100:48069", value: "w" },
      ],
    });
    expect(partitionForKey(new Uint8Array(0), 12)).toBe(9);
    expect(c.records.map((r) => [r.partition, r.offset])).toEqual([
      [9, 1],
      [9, 2],
    ]);
  });

  it("explicit partition beats the key; null keys are sticky per request, round-robin across requests", async () => {
    const t = randomTopic();
    await createTopic(t, 3);
    const p = await produce(`/v1/topics/${t}/records`, {
      records: [{ key: "100:48069", value: "a", partition: 2 }, { value: "b" }, { value: "c" }],
    });
    expect(p.records[0]!.partition).toBe(2);
    expect(p.records[1]!.partition).toBe(p.records[2]!.partition);
    const q = await produce(`/v1/topics/${t}/records`, { records: [{ value: "d" }] });
    const r = await produce(`/v1/topics/${t}/records`, { records: [{ value: "e" }] });
    expect(q.records[0]!.partition).toBe((p.records[1]!.partition + 1) % 3);
    expect(r.records[0]!.partition).toBe((p.records[1]!.partition + 2) % 3);
  });

  it("a multi-partition request answers in request order with per-partition offsets", async () => {
    const t = randomTopic();
    await createTopic(t, 3);
    const p = await produce(`/v1/topics/${t}/records`, {
      records: [
        { value: "a", partition: 1 },
        { value: "b", partition: 0 },
        { value: "c", partition: 1 },
        { value: "d", partition: 2 },
        { value: "e", partition: 1 },
      ],
    });
    expect(p.records.map((r) => [r.partition, r.offset])).toEqual([
      [1, 0],
      [0, 0],
      [1, 1],
      [2, 0],
      [1, 2],
    ]);
    expect(await highWatermarks(t)).toEqual([1, 3, 1]);
    const f = await fetchJson(t, 1, "offset=0");
    expect(f.records.map((r) => r.value)).toEqual(["a", "c", "e"]);
  });
});

suite("produce: rejected requests change nothing", () => {
  async function topic(partitions = 2, configs?: Record<string, unknown>): Promise<string> {
    const t = randomTopic();
    await createTopic(t, partitions, configs);
    await produce(`/v1/topics/${t}/partitions/0/records`, { records: [{ value: "seed" }] });
    return t;
  }

  it("a too-large record rejects the whole multi-partition request", async () => {
    const t = await topic(3, { "max.message.bytes": 1000 });
    const tooBig = { key: null, value: utf8("y".repeat(1000)), headers: [], timestamp: 0 };
    const res = await json("POST", `/v1/topics/${t}/records`, {
      records: [
        { value: "a", partition: 0 },
        { value: "b", partition: 1 },
        { value: "y".repeat(1000), partition: 2, timestamp: 0 },
      ],
    });
    const e = await expectError(res, "RECORD_TOO_LARGE", 413);
    expect(e.details).toEqual({ index: 2, sizeBytes: recordSizeBytes(tooBig), maxMessageBytes: 1000 });
    // 1 attributes + 1 timestampDelta + 1 offsetDelta + 1 null key + 2+1000 value + 1 header count = 1007, + 2 length prefix.
    expect(recordSizeBytes(tooBig)).toBe(1009);
    expect(await highWatermarks(t)).toEqual([1, 0, 0]);
  });

  it("a too-large record rejects the whole single-partition request", async () => {
    const t = await topic(1, { "max.message.bytes": 1000 });
    const res = await json("POST", `/v1/topics/${t}/partitions/0/records`, {
      records: [{ value: "a" }, { value: "y".repeat(2000) }, { value: "c" }],
    });
    const e = await expectError(res, "RECORD_TOO_LARGE", 413);
    expect(e.details).toMatchObject({ index: 1, maxMessageBytes: 1000 });
    expect(await highWatermarks(t)).toEqual([1]);
  });

  it("malformed JSON -> INVALID_JSON", async () => {
    const t = await topic();
    for (const body of ["{", "", "records", '{"records": [}']) {
      const res = await call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": "application/json" }, body });
      await expectError(res, "INVALID_JSON", 400);
    }
    expect(await highWatermarks(t)).toEqual([1, 0]);
  });

  it("wrong types -> INVALID_REQUEST naming the field", async () => {
    const t = await topic();
    const cases: [unknown, string][] = [
      [[], "body"],
      [{ records: {} }, "records"],
      [{ records: [1] }, "records[0]"],
      [{ records: [{ key: 5 }] }, "records[0].key"],
      [{ records: [{ value: "ok" }, { value: { a: 1 } }] }, "records[1].value"],
      [{ records: [{ value: "v", headers: {} }] }, "records[0].headers"],
      [{ records: [{ value: "v", headers: [{ key: 1, value: "x" }] }] }, "records[0].headers[0].key"],
      [{ records: [{ value: "v", headers: [{ key: "h", value: 2 }] }] }, "records[0].headers[0].value"],
      [{ records: [{ value: "v", timestamp: "now" }] }, "records[0].timestamp"],
      [{ records: [{ value: "v", partition: -1 }] }, "records[0].partition"],
      [{ records: [{ value: "v", partition: "1" }] }, "records[0].partition"],
      [{ keyEncoding: "hex", records: [{ value: "v" }] }, "keyEncoding"],
      [{ valueEncoding: 1, records: [{ value: "v" }] }, "valueEncoding"],
      [{ keyEncoding: "base64", records: [{ key: 7 }] }, "records[0].key"],
      [{ producerId: 1, producerEpoch: 0, baseSequence: 0, records: [{ value: "v" }] }, "producerId"],
    ];
    for (const [body, field] of cases) {
      const e = await expectError(await json("POST", `/v1/topics/${t}/records`, body), "INVALID_REQUEST", 400);
      expect(e.details, JSON.stringify(body)).toEqual({ field });
      expect(e.message).toContain(field);
    }
    expect(await highWatermarks(t)).toEqual([1, 0]);
  });

  it("bad base64 -> INVALID_ENCODING (whitespace, URL-safe alphabet, bad padding, stray bits)", async () => {
    const t = await topic();
    for (const v of ["QQ=", "QQ===", "Q", "QU JD", "QUJD\n", "-_8=", "QUJD=", "QR==", "@@@@", " QUJD"]) {
      const res = await json("POST", `/v1/topics/${t}/records`, { valueEncoding: "base64", records: [{ value: "QUJD" }, { value: v }] });
      const e = await expectError(res, "INVALID_ENCODING", 400);
      expect(e.details, v).toEqual({ field: "records[1].value" });
    }
    const hdr = await json("POST", `/v1/topics/${t}/records`, { valueEncoding: "base64", records: [{ value: "QUJD", headers: [{ key: "h", value: "!" }] }] });
    expect((await expectError(hdr, "INVALID_ENCODING", 400)).details).toEqual({ field: "records[0].headers[0].value" });
    expect(await highWatermarks(t)).toEqual([1, 0]);
  });

  it("bad timestamps -> INVALID_TIMESTAMP", async () => {
    const t = await topic();
    for (const timestamp of [-1, 1.5, 2 ** 53]) {
      await expectError(await json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v", timestamp }] }), "INVALID_TIMESTAMP", 400);
    }
    expect(await highWatermarks(t)).toEqual([1, 0]);
  });

  it("empty records -> EMPTY_BATCH", async () => {
    const t = await topic();
    await expectError(await json("POST", `/v1/topics/${t}/records`, { records: [] }), "EMPTY_BATCH", 400);
    await expectError(await json("POST", `/v1/topics/${t}/partitions/1/records`, { records: [] }), "EMPTY_BATCH", 400);
    expect(await highWatermarks(t)).toEqual([1, 0]);
  });

  it("unknown topic -> UNKNOWN_TOPIC_OR_PARTITION (404)", async () => {
    const t = randomTopic();
    await expectError(await json("POST", `/v1/topics/${t}/records`, { records: [{ value: "v" }] }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await json("POST", `/v1/topics/${t}/partitions/0/records`, { records: [{ value: "v" }] }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await call(`/v1/topics/${t}`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
  });

  it("partition out of range -> UNKNOWN_TOPIC_OR_PARTITION; malformed partition -> INVALID_REQUEST", async () => {
    const t = await topic();
    const e = await expectError(await json("POST", `/v1/topics/${t}/partitions/2/records`, { records: [{ value: "v" }] }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    expect(e.details).toEqual({ topic: `public/default/${t}`, partition: 2, partitions: 2 });
    await expectError(
      await json("POST", `/v1/topics/${t}/records`, {
        records: [
          { value: "v", partition: 0 },
          { value: "w", partition: 5 },
        ],
      }),
      "UNKNOWN_TOPIC_OR_PARTITION",
      404,
    );
    await expectError(await json("POST", `/v1/topics/${t}/partitions/x/records`, { records: [{ value: "v" }] }), "INVALID_REQUEST", 400);
    await expectError(await json("POST", `/v1/topics/${t}/partitions/01/records`, { records: [{ value: "v" }] }), "INVALID_REQUEST", 400);
    // A record naming another partition on a partition route.
    await expectError(await json("POST", `/v1/topics/${t}/partitions/0/records`, { records: [{ value: "v", partition: 1 }] }), "INVALID_REQUEST", 400);
    expect(await highWatermarks(t)).toEqual([1, 0]);
  });

  it("body over MAX_REQUEST_BYTES -> REQUEST_TOO_LARGE (413), by Content-Length and by bytes read", async () => {
    const t = await topic();
    const big = JSON.stringify({ records: [{ value: "z".repeat(MAX_REQUEST_BYTES) }] });
    const res = await call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
    const e = await expectError(res, "REQUEST_TOO_LARGE", 413);
    expect(e.details).toEqual({ maxRequestBytes: MAX_REQUEST_BYTES });
    // A streamed body has no Content-Length: the bytes read are counted.
    const chunk = new Uint8Array(1024 * 1024).fill(0x7a);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > MAX_REQUEST_BYTES) controller.close();
        else {
          controller.enqueue(chunk);
          sent += chunk.length;
        }
      },
    });
    const streamed = await call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": "application/json" }, body: stream });
    await expectError(streamed, "REQUEST_TOO_LARGE", 413);
    expect(await highWatermarks(t)).toEqual([1, 0]);
  });

  it("unsupported Content-Type -> UNSUPPORTED_MEDIA_TYPE (415)", async () => {
    const t = await topic();
    const body = JSON.stringify({ records: [{ value: "v" }] });
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/vnd.edgelog.batch"]) {
      const res = await call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": type }, body });
      await expectError(res, "UNSUPPORTED_MEDIA_TYPE", 415);
    }
    const res = await call(`/v1/topics/${t}/partitions/0/records`, { method: "POST", headers: { "content-type": "text/plain" }, body });
    await expectError(res, "UNSUPPORTED_MEDIA_TYPE", 415);
    // application/json with a charset parameter is JSON.
    const ok = await call(`/v1/topics/${t}/partitions/1/records`, { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body });
    expect(ok.status).toBe(200);
    expect(await highWatermarks(t)).toEqual([1, 1]);
  });
});

suite("produce: stale topic metadata in the gateway cache", () => {
  it("a topic deleted and re-created behind the cache is refreshed and retried once", async () => {
    const t = randomTopic();
    const full = `public/default/${t}`;
    await createTopic(t);
    await produce(`/v1/topics/${t}/records`, { records: [{ value: "cached" }] }); // caches the topic id
    // Another isolate deletes and re-creates the topic: this isolate's cache is not told.
    const store = metadataStore(env);
    expect((await store.deleteTopic(full)).ok).toBe(true);
    expect((await store.createTopic({ name: full, partitions: 1 })).ok).toBe(true);
    const p = await produce(`/v1/topics/${t}/records`, { records: [{ value: "fresh" }] });
    expect(p.records.map((r) => r.offset)).toEqual([0]);
    const f = await fetchJson(t, 0, "offset=0");
    expect(f.records.map((r) => r.value)).toEqual(["fresh"]);
  });

  it("a partition added behind the cache is found after one refresh", async () => {
    const t = randomTopic();
    await createTopic(t, 1);
    await produce(`/v1/topics/${t}/records`, { records: [{ value: "cached" }] });
    expect((await metadataStore(env).alterTopic(`public/default/${t}`, { partitions: 3 })).ok).toBe(true);
    const p = await produce(`/v1/topics/${t}/partitions/2/records`, { records: [{ value: "new partition" }] });
    expect(p.records).toEqual([{ partition: 2, offset: 0, timestamp: p.records[0]!.timestamp }]);
    expect((await describe(t)).partitions).toBe(3);
  });
});

suite("produce: compact answer (Accept: application/vnd.edgelog.produce-summary+json)", () => {
  const summary = { accept: PRODUCE_SUMMARY_MEDIA_TYPE };

  it("binary and JSON produce answer the offset range; CreateTime gives logAppendTime null", async () => {
    const t = randomTopic();
    await createTopic(t);
    const records: ProducerRecord[] = [0, 1, 2].map((i) => ({ key: null, value: utf8(`v${i}`), headers: [], timestamp: 100 + i }));
    const res = await call(`/v1/topics/${t}/partitions/0/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE, ...summary }, body: encodeBatch({}, records) });
    expect([res.status, res.headers.get("content-type"), await res.json()]).toEqual([
      200,
      PRODUCE_SUMMARY_MEDIA_TYPE,
      { topic: `public/default/${t}`, partition: 0, baseOffset: 0, lastOffset: 2, logAppendTime: null, logStartOffset: 0 },
    ]);
    const j = await call(`/v1/topics/${t}/partitions/0/records`, {
      method: "POST",
      headers: { "content-type": "application/json", ...summary },
      body: JSON.stringify({ records: [{ value: "a" }, { value: "b" }] }),
    });
    expect(await j.json()).toEqual({ topic: `public/default/${t}`, partition: 0, baseOffset: 3, lastOffset: 4, logAppendTime: null, logStartOffset: 0 });
    // Without the Accept header: one entry per record, as before.
    const plain = await call(`/v1/topics/${t}/partitions/0/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body: encodeBatch({}, records.slice(0, 1)) });
    const full = (await plain.json()) as { records: unknown[] };
    expect(full.records).toEqual([{ partition: 0, offset: 5, timestamp: 100 }]);
  });

  it("a LogAppendTime topic answers the broker time every record carries; an idempotent retry is a duplicate with the original range", async () => {
    const t = randomTopic();
    await createTopic(t, 1, { "message.timestamp.type": "LogAppendTime" });
    const { producerId } = (await (await call("/v1/producers", { method: "POST" })).json()) as { producerId: number };
    const batch = encodeBatch({ producerId, producerEpoch: 0, baseSequence: 0 }, [
      { key: null, value: utf8("x"), headers: [], timestamp: 1 },
      { key: null, value: utf8("y"), headers: [], timestamp: 2 },
    ]);
    const send = () => call(`/v1/topics/${t}/partitions/0/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE, ...summary }, body: batch });
    const first = (await (await send()).json()) as { logAppendTime: number; baseOffset: number; lastOffset: number; duplicate?: boolean };
    expect(first.logAppendTime).toBeGreaterThan(1_000_000_000_000);
    const stored = await fetchJson(t, 0, "offset=0");
    expect(stored.records.map((r) => r.timestamp)).toEqual([first.logAppendTime, first.logAppendTime]);
    const retry = (await (await send()).json()) as typeof first;
    expect(retry).toEqual({ ...first, duplicate: true });
    expect(await highWatermarks(t)).toEqual([2]);
  });

  it("errors keep the error body under the compact Accept", async () => {
    const t = randomTopic();
    await createTopic(t);
    const res = await call(`/v1/topics/${t}/partitions/3/records`, {
      method: "POST",
      headers: { "content-type": "application/json", ...summary },
      body: JSON.stringify({ records: [{ value: "a" }] }),
    });
    await expectError(res, "UNKNOWN_TOPIC_OR_PARTITION", 404);
  });

  // RFC 9110 §12.4.2: a media range with q=0 is "not acceptable" (src/gateway/http.ts acceptsMediaType).
  for (const accept of [`${PRODUCE_SUMMARY_MEDIA_TYPE};q=0, application/json`, `application/json, ${PRODUCE_SUMMARY_MEDIA_TYPE}; q=0.0`]) {
    it(`Accept: ${accept} -> the full answer (the summary type is refused with q=0)`, async () => {
      const t = randomTopic();
      await createTopic(t);
      const res = await call(`/v1/topics/${t}/partitions/0/records`, {
        method: "POST",
        headers: { "content-type": "application/json", accept },
        body: JSON.stringify({ records: [{ value: "a", timestamp: 5 }] }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ topic: `public/default/${t}`, records: [{ partition: 0, offset: 0, timestamp: 5 }] });
    });
  }
});
