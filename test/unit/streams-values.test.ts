import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBatch, encodeBatch, rewriteBatchHeader, type ProducerRecord } from "../../src/codec/index.ts";
import { forEachValue } from "../../src/streams/values.ts";

const bytes = fc.option(fc.uint8Array({ maxLength: 300 }), { nil: null });
const record: fc.Arbitrary<ProducerRecord> = fc.record({
  key: bytes,
  value: bytes,
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 10 }), value: bytes }), { maxLength: 3 }),
  timestamp: fc.nat({ max: 2 ** 45 }),
});

describe("forEachValue", () => {
  it("yields exactly decodeBatch's offsets and values, for any batch at any base offset", () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 12 }), fc.nat({ max: Number.MAX_SAFE_INTEGER - 100 }), (records, baseOffset) => {
        const batch = encodeBatch({}, records);
        rewriteBatchHeader(batch, { baseOffset });
        const expected = decodeBatch(batch, 0, { verifyCrc: false }).records.map((r) => [r.offset, r.value]);
        const got: [number, Uint8Array | null][] = [];
        forEachValue(batch, (offset, value) => {
          got.push([offset, value === null ? null : value.slice()]);
        });
        expect(got).toEqual(expected);
      }),
    );
  });

  it("stops when the visitor returns false", () => {
    const batch = encodeBatch(
      {},
      [1, 2, 3].map((n) => ({ key: null, value: new Uint8Array([n]), headers: [], timestamp: 0 })),
    );
    const seen: number[] = [];
    forEachValue(batch, (offset) => {
      seen.push(offset);
      return offset < 1;
    });
    expect(seen).toEqual([0, 1]);
  });

  it("refuses what is not a v1 batch", () => {
    expect(() => forEachValue(new Uint8Array(10), () => undefined)).toThrow("not a v1 record batch");
    const batch = encodeBatch({}, [{ key: null, value: new Uint8Array(50), headers: [], timestamp: 0 }]);
    expect(() => forEachValue(batch.subarray(0, batch.length - 10), () => undefined)).toThrow("truncated record batch");
  });
});
