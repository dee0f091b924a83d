import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBatch, decodeBatchHeader, encodeBatch, rewriteBatchHeader, verifyBatchCrc, type ProducerRecord } from "../../src/codec/index.ts";
import { keyId, rewriteStoredBatch, scanRecordKeys } from "../../src/lifecycle/index.ts";

const bytes = fc.option(fc.uint8Array({ maxLength: 200 }), { freq: 4 });
const record: fc.Arbitrary<ProducerRecord> = fc.record({
  key: bytes,
  value: bytes,
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 8 }), value: bytes }), { maxLength: 2 }),
  timestamp: fc.integer({ min: 0, max: 2 ** 45 }),
});

describe("rewriteStoredBatch: the bytes of a compacted batch", () => {
  it("property: the result decodes (CRC valid) to exactly the kept records, offsets and timestamps unchanged, header fields kept", () => {
    fc.assert(
      fc.property(
        fc.array(record, { minLength: 1, maxLength: 12 }),
        fc.nat({ max: 1e9 }),
        fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
        fc.boolean(),
        (records, baseOffset, mask, logAppendTime) => {
          const data = encodeBatch({ baseOffset, producerId: 7, producerEpoch: 2, baseSequence: 40, partitionLeaderEpoch: 3 }, records);
          if (logAppendTime) rewriteBatchHeader(data, { baseTimestamp: 99, maxTimestamp: 99, attributes: 0x08 });
          const before = decodeBatch(data);
          const keep = new Set(before.records.filter((_, i) => mask[i]).map((r) => r.offset));
          const out = rewriteStoredBatch(data, keep);
          if (keep.size === 0) {
            expect(out).toBeNull();
            return;
          }
          if (keep.size === records.length) {
            expect(out).toBe(data);
            return;
          }
          const after = decodeBatch(out!);
          expect(after.records).toEqual(before.records.filter((r) => keep.has(r.offset)));
          expect(after.header).toEqual({ ...before.header, recordCount: keep.size });
          expect(verifyBatchCrc(out!).totalBytes).toBe(out!.length);
          expect(decodeBatchHeader(out!).baseOffset + decodeBatchHeader(out!).lastOffsetDelta).toBe(baseOffset + records.length - 1);
          // Rewriting again with the same set is a no-op (idempotent).
          expect(rewriteStoredBatch(out!, keep)).toBe(out);
        },
      ),
    );
  });

  it("k1=a, k2=b, k1=c, k2=d in one batch keeps offsets 2 and 3, and the batch still ends at 3", () => {
    const enc = new TextEncoder();
    const data = encodeBatch(
      { baseOffset: 0 },
      ["a", "b", "c", "d"].map((v, i) => ({ key: enc.encode(`k${(i % 2) + 1}`), value: enc.encode(v), headers: [], timestamp: 1000 + i })),
    );
    const out = decodeBatch(rewriteStoredBatch(data, new Set([2, 3]))!);
    expect(out.records.map((r) => [r.offset, r.timestamp])).toEqual([
      [2, 1002],
      [3, 1003],
    ]);
    expect([out.header.baseOffset, out.header.lastOffsetDelta, out.header.recordCount]).toEqual([0, 3, 2]);
  });

  it("refuses a malformed batch", () => {
    const data = encodeBatch({ baseOffset: 0 }, [{ key: null, value: null, headers: [], timestamp: 0 }]);
    expect(() => rewriteStoredBatch(data.subarray(0, data.length - 1), new Set())).toThrow();
    const bad = data.slice();
    bad[61] = 0x7f; // record length far past the section
    expect(() => rewriteStoredBatch(bad, new Set([0]))).toThrow(/outside the records section/);
  });
});

describe("scanRecordKeys", () => {
  it("reads offsets, keys and tombstones as decodeBatch and keyId would, for any batch", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            key: fc.option(fc.uint8Array({ maxLength: 20 })),
            value: fc.option(fc.uint8Array({ maxLength: 30 })),
            headers: fc.array(fc.record({ key: fc.string({ maxLength: 5 }), value: fc.option(fc.uint8Array({ maxLength: 5 })) }), { maxLength: 2 }),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        fc.nat(1_000_000),
        (records, base) => {
          const data = encodeBatch(
            {},
            records.map((r, i) => ({ ...r, timestamp: 1_000 + i })),
          );
          rewriteBatchHeader(data, { baseOffset: base });
          const decoded = decodeBatch(data, 0, { verifyCrc: false }).records;
          expect(scanRecordKeys(data)).toEqual(decoded.map((r) => ({ offset: r.offset, key: r.key === null ? null : keyId(r.key), tombstone: r.value === null })));
        },
      ),
    );
  });
});
