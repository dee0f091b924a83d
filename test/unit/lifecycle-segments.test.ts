import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applySegmentCommand, checkSegmentIndex, migrateSlice, planIdleRoll, planSegmentAppend, rollReason, segmentAt, type BatchMeta, type SegmentRow } from "../../src/lifecycle/index.ts";
import { SIM_DEFAULTS, SimPartition } from "./lifecycle-sim.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function batch(baseOffset: number, records: number, bytes: number, appendMs: number, maxTimestamp = appendMs): BatchMeta {
  return { baseOffset, lastOffset: baseOffset + records - 1, bytes, records, maxTimestamp, appendMs };
}

function index(batches: readonly BatchMeta[], segmentBytes: number, segmentMs: number): SegmentRow[] {
  let rows: SegmentRow[] = [];
  for (const b of batches) rows = applySegmentCommand(rows, planSegmentAppend(rows[rows.length - 1] ?? null, b, { segmentBytes, segmentMs }));
  return rows;
}

describe("segment roll", () => {
  it("rolls on segment.bytes: a batch that would take the active segment past it starts a new one", () => {
    const rows = index([batch(0, 1, 40, 0), batch(1, 1, 40, 0), batch(2, 1, 40, 0), batch(3, 1, 100, 0), batch(4, 1, 1, 0)], 100, DAY);
    expect(rows.map((r) => [r.id, r.baseOffset, r.lastOffset, r.bytes, r.records, r.closed])).toEqual([
      [0, 0, 1, 80, 2, true],
      [2, 2, 2, 40, 1, true],
      // A batch as large as segment.bytes gets a segment of its own; the next one does not fit beside it.
      [3, 3, 3, 100, 1, true],
      [4, 4, 4, 1, 1, false],
    ]);
    expect(checkSegmentIndex(rows)).toBeUndefined();
  });

  it("rolls on segment.ms since the active segment's first append", () => {
    const rows = index([batch(0, 2, 10, 0), batch(2, 1, 10, HOUR - 1), batch(3, 1, 10, HOUR)], 1 << 30, HOUR);
    expect(rows.map((r) => [r.baseOffset, r.lastOffset, r.firstAppendMs, r.lastAppendMs])).toEqual([
      [0, 2, 0, HOUR - 1],
      [3, 3, HOUR, HOUR],
    ]);
  });

  it("field case B6: segment.ms=1h, ten single-record appends 1 s apart with CreateTime two days old make exactly one segment 0..9", () => {
    const p = new SimPartition({ ...SIM_DEFAULTS, roll: { segmentBytes: 64 << 20, segmentMs: HOUR } });
    const start = 10 * DAY;
    for (let i = 0; i < 10; i++) p.produce([{ key: "k", value: `v${i}`, timestamp: start + i * 1000 - 2 * DAY }], start + i * 1000);
    expect(p.segments.map((s) => [s.baseOffset, s.lastOffset, s.records])).toEqual([[0, 9, 10]]);
    expect(p.segments[0]!.maxTimestamp).toBe(start + 9000 - 2 * DAY);
  });

  it("rollReason names the cause; a closed or missing active segment never 'rolls'", () => {
    const [active] = index([batch(0, 1, 50, 0)], 100, HOUR);
    expect(rollReason(active!, batch(1, 1, 50, 1), { segmentBytes: 100, segmentMs: HOUR })).toBe("none");
    expect(rollReason(active!, batch(1, 1, 51, 1), { segmentBytes: 100, segmentMs: HOUR })).toBe("segment.bytes");
    expect(rollReason(active!, batch(1, 1, 1, HOUR), { segmentBytes: 100, segmentMs: HOUR })).toBe("segment.ms");
    expect(rollReason(null, batch(1, 1, 1, HOUR), { segmentBytes: 100, segmentMs: HOUR })).toBe("none");
    expect(rollReason({ ...active!, closed: true }, batch(1, 1, 1, HOUR), { segmentBytes: 100, segmentMs: HOUR })).toBe("none");
  });

  it("an append after a closed segment opens a new one; a batch that does not follow the last segment is a bug", () => {
    const [closed] = index([batch(0, 1, 5, 0)], 100, HOUR).map((r) => ({ ...r, closed: true }));
    expect(planSegmentAppend(closed!, batch(1, 1, 5, 1), { segmentBytes: 100, segmentMs: HOUR })).toMatchObject({ kind: "segRoll", closeId: null, row: { id: 1, baseOffset: 1 } });
    expect(() => planSegmentAppend(closed!, batch(0, 1, 5, 1), { segmentBytes: 100, segmentMs: HOUR })).toThrow(/does not come after/);
  });

  it("idle roll: segment.ms since the first append, or max.compaction.lag.ms on a compacted topic (KIP-354)", () => {
    const [active] = index([batch(0, 1, 5, 1000)], 100, HOUR);
    const cfg = { segmentBytes: 100, segmentMs: HOUR, compact: false, maxCompactionLagMs: 10 };
    expect(planIdleRoll(active!, cfg, 1000 + HOUR - 1)).toBeNull();
    expect(planIdleRoll(active!, cfg, 1000 + HOUR)).toEqual({ kind: "segClose", id: 0 });
    expect(planIdleRoll(active!, { ...cfg, compact: true }, 1010)).toEqual({ kind: "segClose", id: 0 });
    expect(planIdleRoll({ ...active!, closed: true }, cfg, 1000 + HOUR)).toBeNull();
    expect(planIdleRoll(null, cfg, 0)).toBeNull();
  });

  it("segmentAt finds the segment holding an offset", () => {
    const rows = index([batch(0, 2, 60, 0), batch(2, 2, 60, 0), batch(4, 2, 60, 0)], 100, DAY);
    expect([0, 1, 2, 5, 99].map((o) => segmentAt(rows, o)?.id ?? null)).toEqual([0, 0, 2, 4, 4]);
    expect(segmentAt(rows.slice(1), 0)).toBeNull();
  });

  it("checkSegmentIndex reports broken invariants", () => {
    const rows = index([batch(0, 2, 60, 0), batch(2, 2, 60, 0)], 100, DAY);
    expect(checkSegmentIndex([{ ...rows[0]!, closed: false }, rows[1]!])).toMatch(/open but not the last/);
    expect(checkSegmentIndex([rows[0]!, { ...rows[1]!, baseOffset: 1 }])).toMatch(/inside segment/);
    expect(checkSegmentIndex([{ ...rows[0]!, location: "both" }])).toMatch(/without an r2 key/);
    expect(checkSegmentIndex([{ ...rows[0]!, lastOffset: -1 }])).toMatch(/lastOffset/);
  });
});

describe("migration of a partition that has batches but no segment rows", () => {
  const batches = fc.array(fc.record({ records: fc.integer({ min: 1, max: 5 }), bytes: fc.integer({ min: 61, max: 400 }), ts: fc.integer({ min: 0, max: 1e12 }) }), { maxLength: 60 });

  it("property: building the index in slices of any size gives the same rows as appending one by one, and a valid index", () => {
    fc.assert(
      fc.property(batches, fc.integer({ min: 1, max: 10 }), fc.integer({ min: 100, max: 2000 }), (raw, sliceSize, segmentBytes) => {
        const nowMs = 5e12;
        let offset = 0;
        const metas = raw.map((b) => {
          const m = batch(offset, b.records, b.bytes, nowMs, b.ts);
          offset += b.records;
          return m;
        });
        const cfg = { segmentBytes, segmentMs: DAY };
        let rows: SegmentRow[] = [];
        for (let i = 0; i < metas.length; i += sliceSize) {
          // The room reads the batches after the last row's lastOffset, a slice at a time.
          const last = rows[rows.length - 1] ?? null;
          const next = metas.filter((m) => m.baseOffset > (last?.lastOffset ?? -1)).slice(0, sliceSize);
          for (const c of migrateSlice(last, next, cfg)) rows = applySegmentCommand(rows, c);
        }
        expect(rows).toEqual(index(metas, segmentBytes, DAY));
        expect(checkSegmentIndex(rows)).toBeUndefined();
        // Every batch is in exactly one segment, and the stats add up.
        expect(rows.reduce((n, r) => n + r.records, 0)).toBe(offset);
        expect(rows.reduce((n, r) => n + r.bytes, 0)).toBe(raw.reduce((n, b) => n + b.bytes, 0));
        expect(rows.filter((r) => !r.closed).length).toBe(rows.length === 0 ? 0 : 1);
      }),
    );
  });
});
