import { describe, expect, it } from "vitest";
import { decodeBatch, partitionForKey } from "../../src/codec/index.ts";
import { choosePartitions, encodeForPartition, groupByPartition, parseProduceRequest } from "../../src/gateway/produce-request.ts";
import { EdgelogError } from "../../src/protocol/errors.ts";
import { MAX_STORED_BATCH_BYTES, utf8 } from "../../src/protocol/index.ts";

const opts = { nowMs: 123, allowProducer: true };

describe("parseProduceRequest", () => {
  it("applies encodings, defaults the timestamp to broker time, keeps explicit partitions", () => {
    const r = parseProduceRequest(
      { keyEncoding: "base64", valueEncoding: "json", records: [{ key: "AQI", value: [1], headers: [{ key: "h", value: null }], partition: 3 }, { timestamp: 9 }] },
      opts,
    );
    expect(r.records).toEqual([
      { key: new Uint8Array([1, 2]), value: utf8("[1]"), headers: [{ key: "h", value: null }], timestamp: 123 },
      { key: null, value: null, headers: [], timestamp: 9 },
    ]);
    expect(r.partitions).toEqual([3, undefined]);
    expect(r.producer).toBeNull();
  });

  it("reads producer fields only where allowed", () => {
    const body = { producerId: 4, producerEpoch: 1, baseSequence: 7, records: [{ value: "a" }] };
    expect(parseProduceRequest(body, opts).producer).toEqual({ producerId: 4, producerEpoch: 1, baseSequence: 7 });
    expect(() => parseProduceRequest(body, { ...opts, allowProducer: false })).toThrow(/partition route/);
  });
});

describe("parseProduceRequest: unknown fields", () => {
  const rejection = (body: unknown): { code: string; message: string; details: unknown } => {
    try {
      parseProduceRequest(body, opts);
    } catch (e) {
      if (e instanceof EdgelogError) return { code: e.code, message: e.message, details: e.details };
      throw e;
    }
    throw new Error("accepted");
  };

  it("rejects a misspelt record field instead of storing a null value", () => {
    expect(rejection({ records: [{ value: "ok" }, { vlaue: "x" }] })).toEqual({
      code: "INVALID_REQUEST",
      message: "Unknown field records[1].vlaue.",
      details: { field: "records[1].vlaue" },
    });
  });

  it("rejects an unknown request field and an unknown header field", () => {
    expect(rejection({ records: [{ value: "x" }], valueEncodign: "json" })).toEqual({
      code: "INVALID_REQUEST",
      message: "Unknown field valueEncodign.",
      details: { field: "valueEncodign" },
    });
    expect(rejection({ records: [{ value: "x", headers: [{ key: "h", vale: "v" }] }] })).toEqual({
      code: "INVALID_REQUEST",
      message: "Unknown field records[0].headers[0].vale.",
      details: { field: "records[0].headers[0].vale" },
    });
  });

  it("accepts every documented field", () => {
    const body = {
      keyEncoding: "string",
      valueEncoding: "string",
      producerId: 1,
      producerEpoch: 0,
      baseSequence: 0,
      records: [{ key: "k", value: "v", headers: [{ key: "h", value: "x" }], partition: 0, timestamp: 5 }],
    };
    expect(parseProduceRequest(body, opts).records).toEqual([{ key: utf8("k"), value: utf8("v"), headers: [{ key: "h", value: utf8("x") }], timestamp: 5 }]);
  });
});

describe("choosePartitions", () => {
  it("explicit > key hash > one round-robin partition per request", () => {
    const key = utf8("100:48069");
    let calls = 0;
    const rr = (): number => {
      calls++;
      return 7;
    };
    const records = [
      { key, value: null, headers: [], timestamp: 0 },
      { key: null, value: null, headers: [], timestamp: 0 },
      { key, value: null, headers: [], timestamp: 0 },
      { key: null, value: null, headers: [], timestamp: 0 },
    ];
    expect(choosePartitions(records, [undefined, undefined, 1, undefined], 12, rr)).toEqual([partitionForKey(key, 12), 7, 1, 7]);
    expect(partitionForKey(key, 12)).toBe(9);
    expect(calls).toBe(1);
  });
});

describe("groupByPartition / encodeForPartition", () => {
  it("groups in request order and splits large groups with contiguous sequences", () => {
    const big = { key: null, value: new Uint8Array(600 * 1024), headers: [], timestamp: 1 };
    const small = { key: null, value: utf8("s"), headers: [], timestamp: 2 };
    const groups = groupByPartition([big, small, big, small], [1, 0, 1, 1]);
    expect(groups.map((g) => [g.partition, g.indexes])).toEqual([
      [1, [0, 2, 3]],
      [0, [1]],
    ]);
    const batches = encodeForPartition(groups[0]!.records, { producerId: 5, producerEpoch: 0, baseSequence: 10 });
    expect(batches.every((b) => b.length <= MAX_STORED_BATCH_BYTES)).toBe(true);
    expect(batches.map((b) => decodeBatch(b).header).map((h) => [h.producerId, h.baseSequence, h.recordCount])).toEqual([
      [5, 10, 1],
      [5, 11, 2],
    ]);
  });
});
