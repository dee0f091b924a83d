import { describe as suite, expect, it } from "vitest";
import { encodeBatch } from "../../src/codec/index.ts";
import { BATCH_MEDIA_TYPE, utf8, type InitProducerResponse, type ProduceResponse } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, fetchJson, highWatermarks, json, produce, randomTopic } from "./helpers.ts";

async function newProducer(): Promise<InitProducerResponse> {
  const res = await call("/v1/producers", { method: "POST" });
  expect(res.status).toBe(200);
  return (await res.json()) as InitProducerResponse;
}

function records(...values: string[]): { value: string }[] {
  return values.map((value) => ({ value }));
}

suite("idempotent producers (KIP-98)", () => {
  it("a retry appends nothing and answers the original offsets and timestamps", async () => {
    const t = randomTopic();
    await createTopic(t);
    const { producerId } = await newProducer();
    const path = `/v1/topics/${t}/partitions/0/records`;
    await produce(path, { records: records("x") }); // a non-idempotent record first: offsets start at 1 below
    const body = { producerId, producerEpoch: 0, baseSequence: 0, records: records("a", "b") }; // no timestamps: broker time
    const first = await produce(path, body);
    expect(first.records.map((r) => r.offset)).toEqual([1, 2]);
    expect(first.duplicate).toBeUndefined();
    await new Promise((r) => setTimeout(r, 5));
    const retry = await produce(path, body);
    expect(retry).toEqual({ ...first, duplicate: true });
    expect(await highWatermarks(t)).toEqual([3]);
    const next = await produce(path, { producerId, producerEpoch: 0, baseSequence: 2, records: records("c") });
    expect(next.records.map((r) => r.offset)).toEqual([3]);
    const f = await fetchJson(t, 0, "offset=0");
    expect(f.records.map((r) => r.value)).toEqual(["x", "a", "b", "c"]);
  });

  it("an out-of-order sequence is rejected with the expected sequence", async () => {
    const t = randomTopic();
    await createTopic(t);
    const { producerId } = await newProducer();
    const path = `/v1/topics/${t}/partitions/0/records`;
    // A producer new to this partition must start at 0.
    const e0 = await expectError(await json("POST", path, { producerId, producerEpoch: 0, baseSequence: 3, records: records("a") }), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
    expect(e0.details).toEqual({ expectedSequence: 0, baseSequence: 3 });
    await produce(path, { producerId, producerEpoch: 0, baseSequence: 0, records: records("a", "b", "c", "d") });
    const gap = await expectError(await json("POST", path, { producerId, producerEpoch: 0, baseSequence: 5, records: records("e") }), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
    expect(gap.details).toEqual({ expectedSequence: 4, baseSequence: 5 });
    // Same base sequence but a different record count is not a duplicate.
    const overlap = await expectError(await json("POST", path, { producerId, producerEpoch: 0, baseSequence: 0, records: records("a") }), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
    expect(overlap.details).toEqual({ expectedSequence: 4, baseSequence: 0 });
    expect(await highWatermarks(t)).toEqual([4]);
  });

  it("a stale epoch is fenced; a new epoch must start at sequence 0", async () => {
    const t = randomTopic();
    await createTopic(t);
    const { producerId } = await newProducer();
    const path = `/v1/topics/${t}/partitions/0/records`;
    await produce(path, { producerId, producerEpoch: 1, baseSequence: 0, records: records("a") });
    const fenced = await expectError(await json("POST", path, { producerId, producerEpoch: 0, baseSequence: 1, records: records("b") }), "INVALID_PRODUCER_EPOCH", 409);
    expect(fenced.details).toEqual({ producerEpoch: 0, currentEpoch: 1 });
    const bump = await expectError(await json("POST", path, { producerId, producerEpoch: 2, baseSequence: 1, records: records("b") }), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
    expect(bump.details).toEqual({ expectedSequence: 0, baseSequence: 1 });
    const ok = await produce(path, { producerId, producerEpoch: 2, baseSequence: 0, records: records("b") });
    expect(ok.records.map((r) => r.offset)).toEqual([1]);
    // The old epoch stays fenced, even for a retry of its own request.
    await expectError(await json("POST", path, { producerId, producerEpoch: 1, baseSequence: 0, records: records("a") }), "INVALID_PRODUCER_EPOCH", 409);
    expect(await highWatermarks(t)).toEqual([2]);
  });

  it("only the last 5 requests are remembered", async () => {
    const t = randomTopic();
    await createTopic(t);
    const { producerId } = await newProducer();
    const path = `/v1/topics/${t}/partitions/0/records`;
    const sent: ProduceResponse[] = [];
    for (let seq = 0; seq < 6; seq++) sent.push(await produce(path, { producerId, producerEpoch: 0, baseSequence: seq, records: records(`r${seq}`) }));
    // Sequence 1 is among the last 5: duplicate. Sequence 0 is not: out of order.
    expect(await produce(path, { producerId, producerEpoch: 0, baseSequence: 1, records: records("r1") })).toEqual({ ...sent[1], duplicate: true });
    const old = await expectError(await json("POST", path, { producerId, producerEpoch: 0, baseSequence: 0, records: records("r0") }), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
    expect(old.details).toEqual({ expectedSequence: 6, baseSequence: 0 });
    expect(await highWatermarks(t)).toEqual([6]);
  });

  it("producer fields are validated", async () => {
    const t = randomTopic();
    await createTopic(t);
    const path = `/v1/topics/${t}/partitions/0/records`;
    for (const [fields, field] of [
      [{ producerId: -1, producerEpoch: 0, baseSequence: 0 }, "producerId"],
      [{ producerId: 1, producerEpoch: 0 }, "baseSequence"],
      [{ producerId: 1, producerEpoch: 40000, baseSequence: 0 }, "producerEpoch"],
      [{ producerId: 1, producerEpoch: 0, baseSequence: 2 ** 31 - 1 }, "baseSequence"],
    ] as const) {
      const e = await expectError(await json("POST", path, { ...fields, records: records("a", "b") }), "INVALID_PRODUCER_ID", 400);
      expect(e.details).toEqual({ field });
    }
    expect(await highWatermarks(t)).toEqual([0]);
  });

  it("binary batches carry the producer fields in their header", async () => {
    const t = randomTopic();
    await createTopic(t);
    const { producerId } = await newProducer();
    const batch = encodeBatch({ producerId, producerEpoch: 0, baseSequence: 0 }, [
      { key: null, value: utf8("a"), headers: [], timestamp: 10 },
      { key: null, value: utf8("b"), headers: [], timestamp: 20 },
    ]);
    const send = (): Promise<Response> => call(`/v1/topics/${t}/partitions/0/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body: batch });
    const first = (await (await send()).json()) as ProduceResponse;
    expect(first).toEqual({
      topic: `public/default/${t}`,
      records: [
        { partition: 0, offset: 0, timestamp: 10 },
        { partition: 0, offset: 1, timestamp: 20 },
      ],
    });
    const retry = (await (await send()).json()) as ProduceResponse;
    expect(retry).toEqual({ ...first, duplicate: true });
    // The JSON path continues the same sequence.
    const next = await produce(`/v1/topics/${t}/partitions/0/records`, { producerId, producerEpoch: 0, baseSequence: 2, records: records("c") });
    expect(next.records.map((r) => r.offset)).toEqual([2]);
    expect(await highWatermarks(t)).toEqual([3]);
  });

  it("under LogAppendTime an idempotent retry answers the original broker timestamps", async () => {
    const t = randomTopic("qa");
    await createTopic(t, 1, { "message.timestamp.type": "LogAppendTime" });
    const { producerId } = (await (await call("/v1/producers", { method: "POST" })).json()) as { producerId: number };
    const body = {
      producerId,
      producerEpoch: 0,
      baseSequence: 0,
      records: [
        { value: "a", timestamp: 5 },
        { value: "b", timestamp: 6 },
      ],
    };
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
