import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import { decodeBatches, encodeBatch, type ProducerRecord } from "../../src/codec/index.ts";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { BATCH_MEDIA_TYPE, utf8, type JsonFetchResponse, type ProduceResponse, type TopicDescription } from "../../src/protocol/index.ts";
import { call, createTopic, describe, expectError, expectErrorShape, fetchJson, highWatermarks, mutate, produce, randomTopic, rec, sendBatch } from "./helpers.ts";

async function topicWith(values: string[][], configs?: Record<string, unknown>): Promise<{ name: string; created: TopicDescription }> {
  const name = randomTopic();
  const created = await createTopic(name, 1, configs);
  // One request per inner list: one stored batch each.
  for (const batch of values) await produce(`/v1/topics/${name}/partitions/0/records`, { records: batch.map((value) => ({ value })) });
  return { name, created };
}

suite("fetch", () => {
  it("at the log end answers 200 with no records and nextOffset = offset", async () => {
    const empty = await topicWith([]);
    expect(await fetchJson(empty.name, 0, "offset=0")).toEqual({
      topic: `public/default/${empty.name}`,
      partition: 0,
      records: [],
      nextOffset: 0,
      highWatermark: 0,
      logStartOffset: 0,
    });
    const { name } = await topicWith([["a", "b", "c"]]);
    const f = await fetchJson(name, 0, "offset=3");
    expect(f.records).toEqual([]);
    expect(f.nextOffset).toBe(3);
    expect(f.highWatermark).toBe(3);
  });

  it("above the log end -> OFFSET_OUT_OF_RANGE (416) with the bounds", async () => {
    const { name } = await topicWith([["a", "b", "c"]]);
    const e = await expectError(await call(`/v1/topics/${name}/partitions/0/records?offset=4`), "OFFSET_OUT_OF_RANGE", 416);
    expect(e.details).toEqual({ offset: 4, logStartOffset: 0, logEndOffset: 3, highWatermark: 3 });
  });

  it("below the log start -> OFFSET_OUT_OF_RANGE (416); the first batch may start below the offset", async () => {
    const { name, created } = await topicWith([
      ["a", "b"],
      ["c", "d"],
    ]);
    // Simulate retention having moved the log start to 1 (it is loaded again on restart).
    const stub = env.PARTITION.getByName(partitionObjectName(created.topicId, 0));
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec("UPDATE meta SET value = 1 WHERE key = 'log_start_offset'");
    });
    await evictDurableObject(stub);
    const e = await expectError(await call(`/v1/topics/${name}/partitions/0/records?offset=0`), "OFFSET_OUT_OF_RANGE", 416);
    expect(e.details).toEqual({ offset: 0, logStartOffset: 1, logEndOffset: 4, highWatermark: 4 });
    const f = await fetchJson(name, 0, "offset=1");
    expect(f.records.map((r) => [r.offset, r.value])).toEqual([
      [1, "b"],
      [2, "c"],
      [3, "d"],
    ]);
    expect(f.logStartOffset).toBe(1);
    // Binary fetch returns whole stored batches: the first starts at 0, below the offset.
    const bin = await call(`/v1/topics/${name}/partitions/0/records?offset=1`, { headers: { accept: BATCH_MEDIA_TYPE } });
    expect(decodeBatches(new Uint8Array(await bin.arrayBuffer())).map((b) => b.header.baseOffset)).toEqual([0, 2]);
    expect(bin.headers.get("edgelog-log-start-offset")).toBe("1");
  });

  it("returns the first record even when it is larger than maxBytes", async () => {
    const big = "x".repeat(10_000);
    const { name } = await topicWith([[big], ["small"]]);
    const f = await fetchJson(name, 0, "offset=0&maxBytes=1");
    expect(f.records.map((r) => [r.offset, (r.value as string).length])).toEqual([[0, 10_000]]);
    expect(f.nextOffset).toBe(1);
  });

  it("maxBytes stops before a batch that would go over it", async () => {
    const { name } = await topicWith([["a"], ["b"], ["c"]]);
    const oneBatch = encodeBatch({}, [{ key: null, value: utf8("a"), headers: [], timestamp: 0 }]).length;
    const f = await fetchJson(name, 0, `offset=0&maxBytes=${2 * oneBatch + 1}`);
    expect(f.records.map((r) => r.value)).toEqual(["a", "b"]);
    expect(f.nextOffset).toBe(2);
  });

  it("maxRecords is honoured inside a batch and across batches", async () => {
    const { name } = await topicWith([["a", "b", "c", "d", "e"], ["f"], ["g"]]);
    const inside = await fetchJson(name, 0, "offset=1&maxRecords=2");
    expect(inside.records.map((r) => r.offset)).toEqual([1, 2]);
    expect(inside.nextOffset).toBe(3);
    const across = await fetchJson(name, 0, "offset=4&maxRecords=2");
    expect(across.records.map((r) => r.offset)).toEqual([4, 5]);
    expect(across.nextOffset).toBe(6);
    const all = await fetchJson(name, 0, "offset=0");
    expect(all.records.map((r) => r.value)).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
  });

  it("encoding=json on bytes that are not JSON -> INVALID_ENCODING", async () => {
    const { name } = await topicWith([["not json"]]);
    const e = await expectError(await call(`/v1/topics/${name}/partitions/0/records?offset=0&encoding=json`), "INVALID_ENCODING", 400);
    expect(e.details).toEqual({ field: "offset 0 value" });
  });

  it("bad query parameters -> INVALID_OFFSET / INVALID_REQUEST; bad partitions", async () => {
    const { name } = await topicWith([["a"]]);
    const base = `/v1/topics/${name}/partitions/0/records`;
    for (const q of ["", "?offset=", "?offset=-1", "?offset=abc", "?offset=1.5", "?offset=01"]) {
      await expectError(await call(`${base}${q}`), "INVALID_OFFSET", 400);
    }
    for (const [q, field] of [
      ["maxRecords=0", "maxRecords"],
      ["maxBytes=0", "maxBytes"],
      ["maxWaitMs=-5", "maxWaitMs"],
      ["minBytes=x", "minBytes"],
      ["encoding=hex", "encoding"],
    ]) {
      const e = await expectError(await call(`${base}?offset=0&${q}`), "INVALID_REQUEST", 400);
      expect(e.details).toEqual({ field });
    }
    await expectError(await call(`/v1/topics/${name}/partitions/1/records?offset=0`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await call(`/v1/topics/${name}/partitions/-1/records?offset=0`), "INVALID_REQUEST", 400);
    await expectError(await call(`/v1/topics/${randomTopic()}/partitions/0/records?offset=0`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    // Upper bounds are clamped, not rejected.
    const f = await fetchJson(name, 0, "offset=0&maxRecords=99999999&maxBytes=999999999&maxWaitMs=0");
    expect(f.records.map((r) => r.value)).toEqual(["a"]);
  });

  it("a long-poll is woken by the append and returns the appended record", async () => {
    const { name } = await topicWith([["a"]]);
    const started = Date.now();
    const poll = call(`/v1/topics/${name}/partitions/0/records?offset=1&maxWaitMs=20000`);
    await new Promise((r) => setTimeout(r, 100)); // let the fetch reach the partition and wait
    const p = await produce(`/v1/topics/${name}/partitions/0/records`, { records: [{ value: "woken" }] });
    const res = await poll;
    const elapsed = Date.now() - started;
    const f = (await res.json()) as JsonFetchResponse;
    expect(f.records.map((r) => [r.offset, r.value, r.timestamp])).toEqual([[1, "woken", p.records[0]!.timestamp]]);
    expect(f.nextOffset).toBe(2);
    expect(elapsed).toBeLessThan(20_000); // returned before its deadline
  });

  it("a long-poll with no append returns empty at its deadline", async () => {
    const { name } = await topicWith([["a"]]);
    const started = Date.now();
    const f = await fetchJson(name, 0, "offset=1&maxWaitMs=300");
    const elapsed = Date.now() - started;
    expect(f.records).toEqual([]);
    expect(f.nextOffset).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(300);
  });

  it("a long-poll waits for minBytes, not just any append", async () => {
    const { name } = await topicWith([]);
    const oneBatch = encodeBatch({}, [{ key: null, value: utf8("a"), headers: [], timestamp: 0 }]).length;
    const poll = call(`/v1/topics/${name}/partitions/0/records?offset=0&maxWaitMs=20000&minBytes=${oneBatch + 1}`);
    await new Promise((r) => setTimeout(r, 100));
    await produce(`/v1/topics/${name}/partitions/0/records`, { records: [{ value: "a" }] });
    await new Promise((r) => setTimeout(r, 100));
    await produce(`/v1/topics/${name}/partitions/0/records`, { records: [{ value: "b" }] });
    const f = (await (await poll).json()) as JsonFetchResponse;
    expect(f.records.map((r) => r.value)).toEqual(["a", "b"]);
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

suite("binary produce and fetch", () => {
  it("round trips a batch byte-for-byte in the record model", async () => {
    const name = randomTopic();
    await createTopic(name);
    const records: ProducerRecord[] = [
      {
        key: utf8("k1"),
        value: utf8("v1"),
        headers: [
          { key: "h", value: utf8("1") },
          { key: "h", value: null },
        ],
        timestamp: 1_000,
      },
      { key: null, value: null, headers: [], timestamp: 900 },
      { key: new Uint8Array(0), value: new Uint8Array([0, 255, 1]), headers: [], timestamp: 1_100 },
    ];
    await produce(`/v1/topics/${name}/partitions/0/records`, { records: [{ value: "first" }] });
    const res = await call(`/v1/topics/${name}/partitions/0/records`, {
      method: "POST",
      headers: { "content-type": BATCH_MEDIA_TYPE },
      body: encodeBatch({}, records),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as ProduceResponse).records).toEqual([
      { partition: 0, offset: 1, timestamp: 1_000 },
      { partition: 0, offset: 2, timestamp: 900 },
      { partition: 0, offset: 3, timestamp: 1_100 },
    ]);
    const bin = await call(`/v1/topics/${name}/partitions/0/records?offset=1`, { headers: { accept: BATCH_MEDIA_TYPE } });
    expect(bin.status).toBe(200);
    expect(bin.headers.get("content-type")).toBe(BATCH_MEDIA_TYPE);
    expect(bin.headers.get("edgelog-next-offset")).toBe("4");
    expect(bin.headers.get("edgelog-high-watermark")).toBe("4");
    expect(bin.headers.get("edgelog-log-start-offset")).toBe("0");
    const batches = decodeBatches(new Uint8Array(await bin.arrayBuffer()));
    expect(batches.map((b) => b.header.baseOffset)).toEqual([1]);
    expect(batches[0]!.header.maxTimestamp).toBe(1_100);
    expect(batches[0]!.records).toEqual(records.map((r, i) => ({ ...r, offset: 1 + i })));
    // The JSON view of the same records.
    const f = await fetchJson(name, 0, "offset=1&encoding=base64");
    expect(f.records.map((r) => [r.key, r.value, r.headers])).toEqual([
      [
        "azE=",
        "djE=",
        [
          { key: "h", value: "MQ==" },
          { key: "h", value: null },
        ],
      ],
      [null, null, []],
      ["", "AP8B", []],
    ]);
  });

  it("a binary batch over MAX_STORED_BATCH_BYTES is stored as several batches, sequences continuing", async () => {
    const name = randomTopic();
    await createTopic(name);
    const { producerId } = (await (await call("/v1/producers", { method: "POST" })).json()) as { producerId: number };
    const big = (i: number): ProducerRecord => ({ key: null, value: new Uint8Array(600 * 1024).fill(i), headers: [], timestamp: 10 + i });
    const batch = encodeBatch({ producerId, producerEpoch: 0, baseSequence: 0 }, [big(1), big(2)]);
    const send = (): Promise<Response> => call(`/v1/topics/${name}/partitions/0/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body: batch });
    const first = (await (await send()).json()) as ProduceResponse;
    expect(first.records).toEqual([
      { partition: 0, offset: 0, timestamp: 11 },
      { partition: 0, offset: 1, timestamp: 12 },
    ]);
    expect((await (await send()).json()) as ProduceResponse).toEqual({ ...first, duplicate: true });
    const bin = await call(`/v1/topics/${name}/partitions/0/records?offset=0&maxBytes=${4 * 1024 * 1024}`, { headers: { accept: BATCH_MEDIA_TYPE } });
    const stored = decodeBatches(new Uint8Array(await bin.arrayBuffer()));
    expect(stored.map((b) => [b.header.baseOffset, b.header.recordCount, b.header.producerId, b.header.baseSequence])).toEqual([
      [0, 1, producerId, 0],
      [1, 1, producerId, 1],
    ]);
    expect(stored.map((b) => b.records[0]!.value![0])).toEqual([1, 2]);
    const next = await produce(`/v1/topics/${name}/partitions/0/records`, { producerId, producerEpoch: 0, baseSequence: 2, records: [{ value: "c" }] });
    expect(next.records.map((r) => r.offset)).toEqual([2]);
  });

  it("end of log in binary: empty body and the bounds in headers", async () => {
    const name = randomTopic();
    await createTopic(name);
    const bin = await call(`/v1/topics/${name}/partitions/0/records?offset=0`, { headers: { accept: BATCH_MEDIA_TYPE } });
    expect(bin.status).toBe(200);
    expect((await bin.arrayBuffer()).byteLength).toBe(0);
    expect(bin.headers.get("edgelog-next-offset")).toBe("0");
  });

  it("rejects a corrupt, truncated, trailing-garbage or empty batch with INVALID_BATCH / EMPTY_BATCH", async () => {
    const name = randomTopic();
    await createTopic(name);
    const good = encodeBatch({}, [{ key: null, value: utf8("abc"), headers: [], timestamp: 1 }]);
    const corrupt = good.slice();
    corrupt[corrupt.length - 1] = corrupt[corrupt.length - 1]! ^ 0xff;
    const send = (body: Uint8Array): Promise<Response> => call(`/v1/topics/${name}/partitions/0/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body });
    await expectError(await send(corrupt), "INVALID_BATCH", 400);
    await expectError(await send(good.slice(0, good.length - 1)), "INVALID_BATCH", 400);
    await expectError(await send(new Uint8Array([...good, 0])), "INVALID_BATCH", 400);
    await expectError(await send(new Uint8Array(0)), "INVALID_BATCH", 400);
    await expectError(await send(encodeBatch({}, [])), "EMPTY_BATCH", 400);
    await expectError(await send(encodeBatch({}, [{ key: null, value: null, headers: [], timestamp: -5 }])), "INVALID_TIMESTAMP", 400);
    await expectError(await send(encodeBatch({ attributes: 0x10 }, [{ key: null, value: null, headers: [], timestamp: 1 }])), "INVALID_BATCH", 400);
    expect(await highWatermarks(name)).toEqual([0]);
  });

  it("binary batches that lie are INVALID_BATCH, including attribute bits with no meaning", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    const good = encodeBatch({}, [rec("a", 5), rec("b", 6)]);
    const cases: [string, Uint8Array][] = [
      ["magic 2", mutate(good, (_v, b) => (b[0] = 2))],
      ["recordCount 3 (records say 2)", mutate(good, (v) => v.setInt32(49, 3))],
      ["recordCount 1 (records say 2)", mutate(good, (v) => v.setInt32(49, 1))],
      [
        "recordCount 1, lastOffsetDelta 0",
        mutate(good, (v) => {
          v.setInt32(49, 1);
          v.setInt32(11, 0);
        }),
      ],
      [
        "recordCount 2^31-1",
        mutate(good, (v) => {
          v.setInt32(49, 0x7fffffff);
          v.setInt32(11, 0x7ffffffe);
        }),
      ],
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
      [
        "producer 1 with epoch -1",
        mutate(good, (v) => {
          v.setBigInt64(31, 1n);
          v.setInt16(39, -1);
          v.setInt32(41, 0);
        }),
      ],
      [
        "producer 1 with sequence -1",
        mutate(good, (v) => {
          v.setBigInt64(31, 1n);
          v.setInt16(39, 0);
          v.setInt32(41, -1);
        }),
      ],
    ];
    for (const [what, body] of producerCases) {
      const e = await expectErrorShape(await sendBatch(t, 0, body), what);
      expect(e.code, what).toBe("INVALID_PRODUCER_ID");
    }
    expect((await describe(t)).partitionDetails[0]).toEqual({ partition: 0, logStartOffset: 0, highWatermark: 0, logEndOffset: 0, recordCount: 0, bytes: 0 });
    // A header that lies about maxTimestamp and baseOffset is corrected, not trusted.
    const lying = mutate(good, (v) => {
      v.setBigInt64(23, 1n);
      v.setBigInt64(3, 77n);
    });
    const ok = (await (await sendBatch(t, 0, lying)).json()) as ProduceResponse;
    expect(ok.records).toEqual([
      { partition: 0, offset: 0, timestamp: 5 },
      { partition: 0, offset: 1, timestamp: 6 },
    ]);
    const max = (await (await call(`/v1/topics/${t}/partitions/0/offsets?spec=max_timestamp`)).json()) as { offset: number; timestamp: number };
    expect([max.offset, max.timestamp]).toEqual([1, 6]);
  });
});
