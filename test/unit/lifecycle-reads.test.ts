import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nextFetchOffset, visibleRecords } from "../../src/lifecycle/index.ts";
import { SIM_DEFAULTS, SimPartition, show } from "./lifecycle-sim.ts";

const offsetsOf = (r: ReturnType<SimPartition["fetch"]>) => ("records" in r ? { offsets: r.records.map((x) => x.offset), nextOffset: r.nextOffset } : r);

describe("field case B2: fetch from an offset in the middle of a batch", () => {
  // Request 1 produces 5 records as one batch (0..4); request 2 produces 3 (5..7).
  const p = new SimPartition();
  p.produce(
    [0, 1, 2, 3, 4].map((i) => ({ key: null, value: `v${i}` })),
    0,
  );
  p.produce(
    [5, 6, 7].map((i) => ({ key: null, value: `v${i}` })),
    0,
  );

  it("offset=2 gives 2..7 and nextOffset 8; offset=4 gives 4..7; offset=7 gives 7", () => {
    expect(offsetsOf(p.fetch(2))).toEqual({ offsets: [2, 3, 4, 5, 6, 7], nextOffset: 8 });
    expect(offsetsOf(p.fetch(4))).toEqual({ offsets: [4, 5, 6, 7], nextOffset: 8 });
    expect(offsetsOf(p.fetch(7))).toEqual({ offsets: [7], nextOffset: 8 });
  });

  it("offset=3&maxRecords=2 gives 3, 4 and nextOffset 5", () => {
    expect(offsetsOf(p.fetch(3, 2))).toEqual({ offsets: [3, 4], nextOffset: 5 });
  });
});

describe("nextFetchOffset: an empty answer below the high watermark always moves the offset", () => {
  it("the cases", () => {
    // Past or at HW: wait where you are.
    expect(nextFetchOffset({ offset: 10, highWatermark: 10, lastBatchOffset: null, more: false })).toBe(10);
    // Nothing stored in [offset, HW): jump to HW.
    expect(nextFetchOffset({ offset: 3, highWatermark: 10, lastBatchOffset: null, more: false })).toBe(10);
    // Stopped at a limit: after the last covered batch, even if its tail was compacted away.
    expect(nextFetchOffset({ offset: 3, highWatermark: 10, lastBatchOffset: 5, more: true })).toBe(6);
    // Covered everything stored below HW: the rest is a gap.
    expect(nextFetchOffset({ offset: 3, highWatermark: 10, lastBatchOffset: 5, more: false })).toBe(10);
  });

  it("a compacted gap: batches 0..1 and 4..5 gone, the consumer crosses them without an empty round trip", () => {
    const p = new SimPartition({ ...SIM_DEFAULTS });
    for (let i = 0; i < 8; i++) p.produce([{ key: `k${i}`, value: `v${i}` }], 0);
    p.batches = p.batches.filter((b) => ![0, 1, 4, 5].includes(b.baseOffset));
    expect(offsetsOf(p.fetch(0, 1))).toEqual({ offsets: [2], nextOffset: 3 });
    expect(offsetsOf(p.fetch(4, 1))).toEqual({ offsets: [6], nextOffset: 7 });
    expect(show(p.readAll(0, 1))).toEqual(['k2="v2"@2', 'k3="v3"@3', 'k6="v6"@6', 'k7="v7"@7']);
  });

  it("property: from any offset in [log start, HW), reads reach HW, each strictly advancing, each record once", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 15 }),
        fc.array(fc.boolean(), { maxLength: 60 }),
        fc.nat(),
        fc.integer({ min: 1, max: 5 }),
        (sizes, keep, from, maxRecords) => {
          const p = new SimPartition();
          for (const n of sizes)
            p.produce(
              Array.from({ length: n }, () => ({ key: "k", value: "v" })),
              0,
            );
          // Compaction-like holes: drop records, and whole batches that end up empty.
          let i = 0;
          for (const b of p.batches) b.records = b.records.filter(() => keep[i++] ?? true);
          p.batches = p.batches.filter((b) => b.records.length > 0);
          const start = from % p.logEndOffset;
          const got = p.readAll(start, maxRecords).map((r) => r.offset);
          expect(got).toEqual(p.batches.flatMap((b) => b.records.map((r) => r.offset)).filter((o) => o >= start));
        },
      ),
    );
  });
});

describe("visibleRecords", () => {
  it("keeps records at or after max(fetch offset, log start) and below the high watermark", () => {
    const recs = [0, 1, 2, 3, 4, 5].map((offset) => ({ offset }));
    expect(visibleRecords(recs, 1, 3, 5).map((r) => r.offset)).toEqual([3, 4]);
    expect(visibleRecords(recs, 4, 0, 10).map((r) => r.offset)).toEqual([4, 5]);
  });
});
