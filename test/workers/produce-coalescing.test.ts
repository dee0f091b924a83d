/**
 * Concurrent produce requests for one partition: every request gets its own offsets, its own
 * error, and all-or-nothing for its own records only; and PartitionDO.appendMany, the RPC a
 * gateway's coalesced requests share (src/gateway/append-coalescer.ts).
 * In this tier the gateway's coalescing is off (see vitest.config.ts);
 * test/e2e/produce-coalescing.test.ts runs concurrent requests with it on.
 */
import { describe as suite, expect, it } from "vitest";
import type { AppendOk, AppendRequest } from "../../src/partition/rpc.ts";
import type { RpcResult } from "../../src/protocol/errors.ts";
import type { ProduceResponse } from "../../src/protocol/index.ts";
import { call, createTopic, fetchJson, highWatermarks, json, oneRecordBatch, partitionObject, produce, randomTopic } from "./helpers.ts";

const partition = partitionObject;
const batch = oneRecordBatch;

suite("produce: concurrent requests for one partition", () => {
  it("100 concurrent one-record requests get 100 distinct dense offsets, each holding its own record", async () => {
    const t = randomTopic();
    await createTopic(t);
    const n = 100;
    const answers = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const res = await json("POST", `/v1/topics/${t}/partitions/0/records`, { records: [{ value: `v${i}` }] });
        expect(res.status).toBe(200);
        return { i, offset: ((await res.json()) as ProduceResponse).records[0]!.offset };
      }),
    );
    expect(answers.map((a) => a.offset).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, k) => k));
    const stored = await fetchJson(t, 0, "offset=0&maxRecords=1000");
    const byOffset = new Map(stored.records.map((r) => [r.offset, r.value]));
    for (const a of answers) expect(byOffset.get(a.offset)).toBe(`v${a.i}`);
  });

  it("a failing request among concurrent ones fails alone: the others are appended, it is not", async () => {
    const t = randomTopic();
    await createTopic(t);
    const { producerId } = (await (await call("/v1/producers", { method: "POST" })).json()) as { producerId: number };
    const path = `/v1/topics/${t}/partitions/0/records`;
    const good = Array.from({ length: 20 }, (_, i) => json("POST", path, { records: [{ value: `g${i}` }] }));
    // Idempotent producer at sequence 5 with nothing before it: OUT_OF_ORDER_SEQUENCE_NUMBER.
    const bad = json("POST", path, { producerId, producerEpoch: 0, baseSequence: 5, records: [{ value: "bad" }] });
    const statuses = await Promise.all(
      [...good, bad].map(async (r) => {
        const res = await r;
        return [res.status, ((await res.json()) as { error?: { code: string } }).error?.code ?? "ok"];
      }),
    );
    expect(statuses.slice(0, 20)).toEqual(Array.from({ length: 20 }, () => [200, "ok"]));
    expect(statuses[20]).toEqual([409, "OUT_OF_ORDER_SEQUENCE_NUMBER"]);
    expect(await highWatermarks(t)).toEqual([20]);
    const values = (await fetchJson(t, 0, "offset=0")).records.map((r) => r.value);
    expect(values.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `g${i}`).sort());
  });

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
});

suite("PartitionDO.appendMany", () => {
  it("appends each request in order, each all-or-nothing: an invalid one in the middle changes nothing and the next follows densely", async () => {
    const t = randomTopic();
    const created = await createTopic(t);
    const bad = batch("x");
    bad[bad.length - 1]! ^= 0xff; // corrupt the last record byte: framing still holds, the record does not
    const out = await partition(created.topicId).appendMany([{ batches: [batch("a", 10), batch("b", 11)] }, { batches: [batch("ok-then-bad"), bad] }, { batches: [batch("c", 12)] }]);
    expect(out.map((r) => (r.ok ? [(r as AppendOk).baseOffset, (r as AppendOk).lastOffset] : r.code))).toEqual([[0, 1], "INVALID_BATCH", [2, 2]]);
    const stored = await fetchJson(t, 0, "offset=0");
    expect(stored.records.map((r) => [r.offset, r.value, r.timestamp])).toEqual([
      [0, "a", 10],
      [1, "b", 11],
      [2, "c", 12],
    ]);
  });

  it("answers UNKNOWN_TOPIC_OR_PARTITION for every request on a partition that does not exist", async () => {
    const out = await partition(crypto.randomUUID()).appendMany([{ batches: [batch("a")] }, { batches: [batch("b")] }]);
    expect(out.map((r) => (r.ok ? "ok" : r.code))).toEqual(["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"]);
  });

  it("a request that throws fails alone; the committed request before it gets its offsets", async () => {
    // Each carried request is its own transaction and "one request's failure MUST NOT affect another's"
    // (docs/PROTOCOL.md "Atomicity and acks"): the throwing request gets INTERNAL, the others their
    // offsets. Its batch is not a Uint8Array, standing in for any unexpected throw.
    const t = randomTopic();
    const created = await createTopic(t);
    const throwing = { batches: [[1, 2, 3]], crcVerified: true } as unknown as AppendRequest;
    let out: unknown;
    try {
      out = await partition(created.topicId).appendMany([{ batches: [batch("a", 10)] }, throwing, { batches: [batch("c", 12)] }]);
    } catch (e) {
      out = e;
    }
    // What was committed:
    const stored = (await fetchJson(t, 0, "offset=0")).records.map((r) => [r.offset, r.value]);
    expect({ out: Array.isArray(out) ? (out as RpcResult<AppendOk>[]).map((r) => (r.ok ? r.baseOffset : r.code)) : String(out), stored }).toEqual({
      out: [0, "INTERNAL", 1],
      stored: [
        [0, "a"],
        [1, "c"],
      ],
    });
  });
});
