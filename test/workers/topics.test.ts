import { env } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import { decodeBatches, encodeBatch, partitionForKey } from "../../src/codec/index.ts";
import { createApp } from "../../src/app.ts";
import { BATCH_MEDIA_TYPE, DEFAULT_TOPIC_CONFIGS, MAX_REQUEST_BYTES, utf8, type InitProducerResponse, type TopicDescription, type TopicSummary } from "../../src/protocol/index.ts";
import { partitionObjectName, type PartitionRpc } from "../../src/partition/rpc.ts";
import { call, createTopic, describe, expectError, expectErrorShape, fetchJson, highWatermarks, json, produce, randomTopic, rec, sendBatch, snapshot } from "./helpers.ts";

async function listNames(): Promise<string[]> {
  const res = await call("/v1/topics");
  expect(res.status).toBe(200);
  return ((await res.json()) as { topics: TopicSummary[] }).topics.map((t) => t.name);
}

suite("gateway basics", () => {
  it("GET /v1/health answers ok", async () => {
    const res = await call("/v1/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("an unknown route answers NOT_FOUND as JSON", async () => {
    const res = await call("/v1/nope");
    const e = await expectError(res, "NOT_FOUND", 404);
    expect(e.retriable).toBe(false);
    expect(res.headers.get("content-type")).toContain("application/json");
  });

  it("a known path with another method answers METHOD_NOT_ALLOWED (405) with Allow; an unknown path NOT_FOUND", async () => {
    const t = randomTopic("mna");
    await createTopic(t, 1);
    const del = await call(`/v1/topics/${t}/partitions/0/records`, { method: "DELETE" });
    const e = await expectError(del, "METHOD_NOT_ALLOWED", 405);
    expect(del.headers.get("allow")).toBe("GET, HEAD, POST");
    expect(e.details).toEqual({ allowed: ["GET", "HEAD", "POST"] });
    const put = await call("/v1/topics", { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: `${t}-x` }) });
    await expectError(put, "METHOD_NOT_ALLOWED", 405);
    expect(put.headers.get("allow")).toBe("GET, HEAD, POST");
    // The rejected PUT created nothing.
    await expectError(await call(`/v1/topics/${t}-x`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    const offsets = await call(`/v1/topics/public/default/${t}/partitions/0/offsets?spec=latest`, { method: "POST" });
    await expectError(offsets, "METHOD_NOT_ALLOWED", 405);
    expect(offsets.headers.get("allow")).toBe("GET, HEAD");
    await expectError(await call("/v1/nope", { method: "DELETE" }), "NOT_FOUND", 404);
  });

  it("bench routes: noop, and one raw row insert per call", async () => {
    const noop = await call("/bench/noop");
    expect(noop.status).toBe(200);
    const name = randomTopic("bench");
    const body = new Uint8Array(1000).fill(7);
    const a = await call(`/bench/raw-insert/${name}`, { method: "POST", body });
    expect(await a.json()).toEqual({ id: 1, bytes: 1000 });
    const b = await call(`/bench/raw-insert/${name}`, { method: "POST", body: new Uint8Array(10) });
    expect(await b.json()).toEqual({ id: 2, bytes: 10 });
  });

  it("bench routes are NOT_FOUND unless EDGELOG_BENCH_ROUTES is 1", async () => {
    const app = createApp();
    const res = await app.fetch(new Request("http://x/bench/noop"), { ...env, EDGELOG_BENCH_ROUTES: "0" });
    await expectError(res, "NOT_FOUND", 404);
  });

  it("POST /v1/producers hands out a new id each call, epoch 0", async () => {
    const a = (await (await call("/v1/producers", { method: "POST" })).json()) as InitProducerResponse;
    const b = (await (await call("/v1/producers", { method: "POST" })).json()) as InitProducerResponse;
    expect(a.producerEpoch).toBe(0);
    expect(b.producerEpoch).toBe(0);
    expect(b.producerId).toBeGreaterThan(a.producerId);
  });
});

suite("topics", () => {
  it("creates a topic with defaults and describes every partition", async () => {
    const name = randomTopic();
    const created = await createTopic(name, 3);
    expect(created.name).toBe(`public/default/${name}`);
    expect(created.topic).toBe(name);
    expect(created.tenant).toBe("public");
    expect(created.namespace).toBe("default");
    expect(created.partitions).toBe(3);
    expect(created.configs).toEqual(DEFAULT_TOPIC_CONFIGS);
    expect(created.topicId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const d = await describe(name);
    expect(d.partitionDetails).toEqual([0, 1, 2].map((partition) => ({ partition, logStartOffset: 0, highWatermark: 0, logEndOffset: 0, recordCount: 0, bytes: 0 })));
    expect(d.topicId).toBe(created.topicId);
    expect(d.createdAt).toBe(created.createdAt);
  });

  it("defaults to one partition", async () => {
    const name = randomTopic();
    const res = await json("POST", "/v1/topics", { name });
    expect(res.status).toBe(201);
    expect(((await res.json()) as TopicDescription).partitions).toBe(1);
  });

  it("describe counts records and stored bytes", async () => {
    const name = randomTopic();
    await createTopic(name, 2);
    await produce(`/v1/topics/${name}/partitions/1/records`, { records: [{ key: "k", value: "v", timestamp: 1_700_000_000_000 }] });
    const expectedBytes = encodeBatch({}, [{ key: utf8("k"), value: utf8("v"), headers: [], timestamp: 1_700_000_000_000 }]).length;
    const d = await describe(name);
    expect(d.partitionDetails[1]).toEqual({ partition: 1, logStartOffset: 0, highWatermark: 1, logEndOffset: 1, recordCount: 1, bytes: expectedBytes });
    expect(d.partitionDetails[0]).toEqual({ partition: 0, logStartOffset: 0, highWatermark: 0, logEndOffset: 0, recordCount: 0, bytes: 0 });
  });

  it("both path forms and a %2F-encoded name address the same topic", async () => {
    const topic = randomTopic();
    const created = await createTopic(`acme/prod/${topic}`, 1);
    expect(created.name).toBe(`acme/prod/${topic}`);
    const long = (await (await call(`/v1/topics/acme/prod/${topic}`)).json()) as TopicDescription;
    const encoded = (await (await call(`/v1/topics/${encodeURIComponent(`acme/prod/${topic}`)}`)).json()) as TopicDescription;
    expect(long.topicId).toBe(created.topicId);
    expect(encoded.topicId).toBe(created.topicId);
    // The short name means public/default/<topic>, a different (absent) topic.
    await expectError(await call(`/v1/topics/${topic}`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    // Produce and fetch on the long form.
    const p = await produce(`/v1/topics/acme/prod/${topic}/records`, { records: [{ value: "x" }] });
    expect(p.topic).toBe(`acme/prod/${topic}`);
    expect(p.records.map((r) => r.offset)).toEqual([0]);
    const f = await call(`/v1/topics/acme/prod/${topic}/partitions/0/records?offset=0`);
    expect(((await f.json()) as { records: { value: unknown }[] }).records.map((r) => r.value)).toEqual(["x"]);
  });

  it("the ambiguous `{tenant}/partitions/{n}/records` path is the partition route; %2F reaches the other topic", async () => {
    const tenant = `tn${crypto.randomUUID().slice(0, 8)}`;
    await createTopic(`${tenant}/partitions/0`, 1);
    // Read as: topic `${tenant}` (absent), partition 0.
    await expectError(await json("POST", `/v1/topics/${tenant}/partitions/0/records`, { records: [{ value: "v" }] }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    const p = await produce(`/v1/topics/${encodeURIComponent(`${tenant}/partitions/0`)}/records`, { records: [{ value: "v" }] });
    expect(p.topic).toBe(`${tenant}/partitions/0`);
    expect(p.records.map((r) => r.offset)).toEqual([0]);
  });

  it("lists topics sorted by full name", async () => {
    const a = `zz-${randomTopic()}`;
    const b = `aa-${randomTopic()}`;
    await createTopic(a);
    await createTopic(b);
    const names = await listNames();
    expect(names).toContain(`public/default/${a}`);
    expect(names).toContain(`public/default/${b}`);
    expect(names).toEqual([...names].sort());
  });

  it("rejects invalid names and creates nothing", async () => {
    const before = await listNames();
    for (const name of ["", "a b", ".", "..", "x".repeat(250), "a/b", "a/b/c/d", "t/./x", "ä"]) {
      await expectError(await json("POST", "/v1/topics", { name }), "INVALID_TOPIC_NAME", 400);
    }
    const e = await expectError(await json("POST", "/v1/topics", { name: 7 }), "INVALID_REQUEST", 400);
    expect(e.details).toEqual({ field: "name" });
    expect(await listNames()).toEqual(before);
  });

  it("rejects invalid configs and partition counts and creates nothing", async () => {
    const name = randomTopic();
    await expectError(await json("POST", "/v1/topics", { name, configs: { "no.such.config": 1 } }), "INVALID_CONFIG", 400);
    await expectError(await json("POST", "/v1/topics", { name, configs: { "max.message.bytes": 0 } }), "INVALID_CONFIG", 400);
    await expectError(await json("POST", "/v1/topics", { name, configs: { "message.timestamp.type": "Now" } }), "INVALID_CONFIG", 400);
    await expectError(await json("POST", "/v1/topics", { name, configs: { "cleanup.policy": 3 } }), "INVALID_CONFIG", 400);
    await expectError(await json("POST", "/v1/topics", { name, partitions: 0 }), "INVALID_PARTITIONS", 400);
    await expectError(await json("POST", "/v1/topics", { name, partitions: 1025 }), "INVALID_PARTITIONS", 400);
    await expectError(await json("POST", "/v1/topics", { name, partitions: 1.5 }), "INVALID_PARTITIONS", 400);
    const e = await expectError(await json("POST", "/v1/topics", { name, partitions: "3" }), "INVALID_REQUEST", 400);
    expect(e.details).toEqual({ field: "partitions" });
    await expectError(await json("POST", "/v1/topics", { name, configs: [] }), "INVALID_REQUEST", 400);
    await expectError(await call(`/v1/topics/${name}`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
  });

  it("accepts decimal-string config values", async () => {
    const name = randomTopic();
    const t = await createTopic(name, 1, { "max.message.bytes": "2048", "message.timestamp.type": "LogAppendTime" });
    expect(t.configs).toEqual({ ...DEFAULT_TOPIC_CONFIGS, "max.message.bytes": 2048, "message.timestamp.type": "LogAppendTime" });
  });

  it("rejects a second create of the same name", async () => {
    const name = randomTopic();
    const first = await createTopic(name);
    await expectError(await json("POST", "/v1/topics", { name, partitions: 5 }), "TOPIC_ALREADY_EXISTS", 409);
    const d = await describe(name);
    expect(d.topicId).toBe(first.topicId);
    expect(d.partitions).toBe(1);
  });

  it("PATCH increases partitions, rejects a decrease, same count is a no-op", async () => {
    const name = randomTopic();
    await createTopic(name, 2);
    const grown = await json("PATCH", `/v1/topics/${name}`, { partitions: 4 });
    expect(grown.status).toBe(200);
    expect(((await grown.json()) as TopicDescription).partitionDetails.map((p) => p.partition)).toEqual([0, 1, 2, 3]);
    // The new partitions take records.
    const p = await produce(`/v1/topics/${name}/partitions/3/records`, { records: [{ value: "x" }] });
    expect(p.records).toEqual([{ partition: 3, offset: 0, timestamp: p.records[0]!.timestamp }]);
    const e = await expectError(await json("PATCH", `/v1/topics/${name}`, { partitions: 3 }), "PARTITION_DECREASE_NOT_ALLOWED", 400);
    expect(e.details).toEqual({ partitions: 4 });
    const same = await json("PATCH", `/v1/topics/${name}`, { partitions: 4 });
    expect(same.status).toBe(200);
    expect((await describe(name)).partitions).toBe(4);
    expect(await highWatermarks(name)).toEqual([0, 0, 0, 1]);
    await expectError(await json("PATCH", `/v1/topics/${name}`, { partitions: 2000 }), "INVALID_PARTITIONS", 400);
    await expectError(await json("PATCH", `/v1/topics/${randomTopic()}`, { partitions: 2 }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
  });

  it("PATCH configs reaches the partitions (enforced there for binary batches)", async () => {
    const name = randomTopic();
    await createTopic(name, 2);
    const res = await json("PATCH", `/v1/topics/${name}`, { configs: { "max.message.bytes": 100 } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as TopicDescription).configs["max.message.bytes"]).toBe(100);
    // The gateway does not look inside binary batches: the partition enforces its own copy.
    const batch = encodeBatch({}, [{ key: null, value: new Uint8Array(200), headers: [], timestamp: 1 }]);
    const bin = await call(`/v1/topics/${name}/partitions/1/records`, {
      method: "POST",
      headers: { "content-type": "application/vnd.edgelog.batch" },
      body: batch,
    });
    const e = await expectError(bin, "RECORD_TOO_LARGE", 413);
    // 1 attributes + 1 timestampDelta + 1 offsetDelta + 1 null key + 2+200 value + 1 header count = 207, + 2 length prefix.
    expect(e.details).toEqual({ index: 0, sizeBytes: 209, maxMessageBytes: 100 });
    expect(await highWatermarks(name)).toEqual([0, 0]);
  });

  it("repeating a PATCH of configs pushes them again to a partition that missed the first push (row updated, push failed)", async () => {
    const name = randomTopic();
    const created = await createTopic(name, 1);
    expect((await json("PATCH", `/v1/topics/${name}`, { configs: { "max.message.bytes": 100 } })).status).toBe(200);
    // The partition missed the push (the metadata store answered an error after its row was
    // written, e.g. the partition was unreachable): it still holds the old configs.
    const stale = env.PARTITION.getByName(partitionObjectName(created.topicId, 0)) as unknown as PartitionRpc;
    expect(await stale.updateConfigs(created.configs)).toEqual({ ok: true });
    const res = await json("PATCH", `/v1/topics/${name}`, { configs: { "max.message.bytes": 100 } });
    expect(res.status).toBe(200);
    const batch = encodeBatch({}, [{ key: null, value: new Uint8Array(200), headers: [], timestamp: 1 }]);
    const bin = await call(`/v1/topics/${name}/partitions/0/records`, { method: "POST", headers: { "content-type": "application/vnd.edgelog.batch" }, body: batch });
    await expectError(bin, "RECORD_TOO_LARGE", 413);
  });

  it("DELETE removes the topic; re-creating it starts every partition at offset 0", async () => {
    const name = randomTopic();
    const first = await createTopic(name, 2);
    await produce(`/v1/topics/${name}/partitions/0/records`, { records: [{ value: "a" }, { value: "b" }] });
    const del = await call(`/v1/topics/${name}`, { method: "DELETE" });
    expect(del.status).toBe(204);
    await expectError(await call(`/v1/topics/${name}`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await json("POST", `/v1/topics/${name}/records`, { records: [{ value: "c" }] }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await call(`/v1/topics/${name}`, { method: "DELETE" }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    expect(await listNames()).not.toContain(`public/default/${name}`);

    const second = await createTopic(name, 2);
    expect(second.topicId).not.toBe(first.topicId);
    expect(await highWatermarks(name)).toEqual([0, 0]);
    const p = await produce(`/v1/topics/${name}/partitions/0/records`, { records: [{ value: "c" }] });
    expect(p.records.map((r) => r.offset)).toEqual([0]);
  });

  it("alter partitions up: new partitions start empty and keyed records follow the new count", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1);
    const key = "user-1";
    const first = await produce(`/v1/topics/${t}/records`, { records: [{ key, value: "one partition" }] });
    expect(first.records.map((r) => r.partition)).toEqual([0]);
    const altered = (await (await json("PATCH", `/v1/topics/${t}`, { partitions: 3 })).json()) as TopicDescription;
    expect(altered.partitionDetails.map((p) => [p.partition, p.highWatermark])).toEqual([
      [0, 1],
      [1, 0],
      [2, 0],
    ]);
    const after = await produce(`/v1/topics/${t}/records`, {
      records: [
        { key, value: "three partitions" },
        { key: "100:48069", value: "v" },
      ],
    });
    // murmur2: "user-1" -> 2 of 3 (the README's example), "100:48069" -> 0 of 3 (after the 1 record there).
    expect([partitionForKey(utf8(key), 3), partitionForKey(utf8("100:48069"), 3)]).toEqual([2, 0]);
    expect(after.records.map((r) => [r.partition, r.offset])).toEqual([
      [2, 0],
      [0, 1],
    ]);
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
    expect(decodeBatches(body).map((b) => [b.header.baseOffset, b.header.recordCount])).toEqual([
      [0, 1],
      [1, 3],
      [4, 2],
    ]);
    expect((await describe(t)).partitionDetails[0]).toEqual({ partition: 0, logStartOffset: 0, highWatermark: 6, logEndOffset: 6, recordCount: 6, bytes: body.length });
  });
});

suite("gateway: every rejected request is one JSON error and changes nothing", () => {
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
      [
        "header value base64 number",
        json("POST", `/v1/topics/${t}/records`, { valueEncoding: "base64", records: [{ value: "QQ==", headers: [{ key: "h", value: 1 }] }] }),
        "INVALID_REQUEST",
      ],
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
        json("POST", `/v1/topics/${t}/records`, {
          records: [
            { value: "a", partition: 0 },
            { value: "b", partition: 1 },
            { value: big, partition: 1 },
            { value: "c", partition: 0 },
          ],
        }),
        "RECORD_TOO_LARGE",
      ],
      [
        "second record names a missing partition",
        json("POST", `/v1/topics/${t}/records`, {
          records: [
            { value: "a", partition: 0 },
            { value: "b", partition: 2 },
          ],
        }),
        "UNKNOWN_TOPIC_OR_PARTITION",
      ],
      ["partition route, partition 1e3", json("POST", `/v1/topics/${t}/partitions/1e3/records`, { records: [{ value: "v" }] }), "INVALID_REQUEST"],
      ["partition route, partition -1", json("POST", `/v1/topics/${t}/partitions/-1/records`, { records: [{ value: "v" }] }), "INVALID_REQUEST"],
      ["partition route, partition 2", json("POST", `/v1/topics/${t}/partitions/2/records`, { records: [{ value: "v" }] }), "UNKNOWN_TOPIC_OR_PARTITION"],
      [
        "producer fields: epoch string",
        json("POST", `/v1/topics/${t}/partitions/0/records`, { producerId: 1, producerEpoch: "0", baseSequence: 0, records: [{ value: "v" }] }),
        "INVALID_PRODUCER_ID",
      ],
      ["producer fields: only baseSequence", json("POST", `/v1/topics/${t}/partitions/0/records`, { baseSequence: 0, records: [{ value: "v" }] }), "INVALID_PRODUCER_ID"],
      [
        "producer fields: negative epoch",
        json("POST", `/v1/topics/${t}/partitions/0/records`, { producerId: 1, producerEpoch: -1, baseSequence: 0, records: [{ value: "v" }] }),
        "INVALID_PRODUCER_ID",
      ],
      [
        "unknown producer starting at sequence 5",
        json("POST", `/v1/topics/${t}/partitions/0/records`, { producerId: 987_654_321, producerEpoch: 0, baseSequence: 5, records: [{ value: "v" }] }),
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
      ],
      ["JSON with a BOM", call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": "application/json" }, body: '\uFEFF{"records":[{}]}' }), "INVALID_JSON"],
      ["JSON not UTF-8", call(`/v1/topics/${t}/records`, { method: "POST", headers: { "content-type": "application/json" }, body: new Uint8Array([0x7b, 0xff, 0x7d]) }), "INVALID_JSON"],
      ["text/plain", call(`/v1/topics/${t}/partitions/0/records`, { method: "POST", headers: { "content-type": "text/plain" }, body: '{"records":[{}]}' }), "UNSUPPORTED_MEDIA_TYPE"],
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
      [
        "create: partitions 1e400",
        call("/v1/topics", { method: "POST", headers: { "content-type": "application/json" }, body: `{"name":"${t}-x","partitions":1e400}` }),
        "INVALID_PARTITIONS",
      ],
      ["create: segment.bytes 13", json("POST", "/v1/topics", { name: `${t}-x`, configs: { "segment.bytes": 13 } }), "INVALID_CONFIG"],
      [
        "create: body over the limit",
        call("/v1/topics", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: `${t}-x`, pad: "p".repeat(MAX_REQUEST_BYTES) }) }),
        "REQUEST_TOO_LARGE",
      ],
      ["delete: %2F-encoded bad name", call(`/v1/topics/qa%2F${t}`, { method: "DELETE" }), "INVALID_TOPIC_NAME"],
      ["wrong method on a known path", call(`/v1/topics/${t}/partitions/0/offsets?spec=latest`, { method: "DELETE" }), "METHOD_NOT_ALLOWED"],
      [
        "PUT on the produce route",
        call(`/v1/topics/${t}/partitions/0/records`, { method: "PUT", headers: { "content-type": "application/json" }, body: '{"records":[{"value":"x"}]}' }),
        "METHOD_NOT_ALLOWED",
      ],
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
