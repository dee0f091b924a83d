import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planDeleteRecords, planRetention, planTruncateSlice, truncationTarget } from "../../src/lifecycle/index.ts";
import { SIM_DEFAULTS, SimPartition, show, type SimConfig } from "./lifecycle-sim.ts";

const DAY = 86_400_000;

/** Segments of two records (segment.bytes fits two one-record batches), v0..v9 produced at t = 0..9 ms. */
function tenRecords(retention: Partial<SimConfig["retention"]> = {}): SimPartition {
  const p = new SimPartition({
    ...SIM_DEFAULTS,
    roll: { segmentBytes: 2 * (61 + 8 + 1 + 2), segmentMs: DAY },
    retention: { delete: true, retentionMs: -1, retentionBytes: -1, ...retention },
  });
  for (let i = 0; i < 10; i++) p.produce([{ key: "k", value: `v${i}` }], i);
  return p;
}

describe("retention (cleanup.policy delete)", () => {
  it("segments of 2 records: retention.ms expiring v0..v4 drops [0,1] and [2,3] only (v4 shares a segment with v5), so the log start is 4", () => {
    const p = tenRecords({ retentionMs: 100 });
    expect(p.segments.map((s) => [s.baseOffset, s.lastOffset])).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
      [8, 9],
    ]);
    // At t = 105 the records with timestamp < 5 are more than 100 ms old: v0..v4.
    expect(p.runRetention(105)).toBe(4);
    expect(p.fetch(3)).toEqual({ error: "OFFSET_OUT_OF_RANGE", logStartOffset: 4 });
    expect(show(p.readAll(4)).map((r) => r.split("@")[1])).toEqual(["4", "5", "6", "7", "8", "9"]);
    expect(p.segments.map((s) => s.baseOffset)).toEqual([4, 6, 8]);
    expect(p.batches.map((b) => b.baseOffset)).toEqual([4, 5, 6, 7, 8, 9]);
  });

  it("everything expired: the active segment stays until it rolls, then goes too: earliest = latest = 10", () => {
    const p = tenRecords({ retentionMs: 100 });
    const plan = planRetention({ segments: p.segments, bounds: p.bounds, floor: null, nowMs: 1000 }, p.cfg.retention);
    expect(plan.dropped.map((d) => d.reason)).toEqual(Array(4).fill("retention.ms"));
    expect(plan.logStartOffset).toBe(8);
    expect(p.runRetention(1000)).toBe(8);
    expect(p.segments.map((s) => [s.id, s.closed])).toEqual([[8, false]]);
    // The active segment rolls (segment.ms on the idle-roll timer), then it expires like the others.
    p.roll();
    const after = planRetention({ segments: p.segments, bounds: p.bounds, floor: null, nowMs: 1000 }, p.cfg.retention);
    expect(after.commands).toEqual([{ kind: "segDelete", id: 8 }]);
    expect(p.runRetention(1000)).toBe(10);
    expect(p.segments).toEqual([]);
    expect(p.batches).toEqual([]);
    expect(p.fetch(10)).toEqual({ records: [], nextOffset: 10 });
    // The next append opens a new segment.
    p.produce([{ key: "k", value: "v10" }], 1001);
    expect(p.segments.map((s) => [s.id, s.baseOffset, s.closed])).toEqual([[10, 10, false]]);
  });

  it("deleteRecords to the high watermark: the active segment lies below the log start and goes (closed first)", () => {
    const p = tenRecords();
    const plan = planRetention({ segments: p.segments, bounds: { ...p.bounds, logStartOffset: 10 }, floor: null, nowMs: 0 }, p.cfg.retention);
    expect(plan.dropped.map((d) => d.reason)).toEqual(Array(5).fill("log-start"));
    expect(plan.commands.slice(-2)).toEqual([
      { kind: "segClose", id: 8 },
      { kind: "segDelete", id: 8 },
    ]);
  });

  it("retention.bytes drops head segments while the log stays at or above it without them", () => {
    const p = tenRecords({ retentionBytes: 3 * 144 });
    expect(p.segments.every((s) => s.bytes === 144)).toBe(true);
    expect(p.runRetention(0)).toBe(4);
    expect(p.segments.length).toBe(3);
    // Exactly at the limit: nothing more goes.
    expect(p.runRetention(0)).toBe(4);
  });

  it("without delete in cleanup.policy only segments below the log start go", () => {
    const p = tenRecords({ delete: false, retentionMs: 0 });
    expect(p.runRetention(10 * DAY)).toBe(0);
    p.deleteRecords(5);
    expect(p.runRetention(10 * DAY)).toBe(5);
    const plan = planRetention(
      { segments: tenRecords().segments, bounds: { logStartOffset: 5, logEndOffset: 10, highWatermark: 10 }, floor: null, nowMs: 0 },
      { delete: false, retentionMs: 0, retentionBytes: 0 },
    );
    expect(plan.dropped).toEqual([
      { id: 0, reason: "log-start" },
      { id: 2, reason: "log-start" },
    ]);
    expect(plan.logStartOffset).toBe(5);
  });

  it("field case B5: one record per segment, HW 5, log end 8, retention.ms=1: the log start stops at 5, never past the high watermark", () => {
    const p = new SimPartition({ ...SIM_DEFAULTS, roll: { segmentBytes: 1, segmentMs: DAY }, retention: { delete: true, retentionMs: 1, retentionBytes: -1 } });
    for (let i = 0; i < 5; i++) p.produce([{ key: null, value: `r${i}` }], 0);
    p.holdHighWatermark = 5; // both followers stopped: r5..r7 are appended with acks=1 only
    for (let i = 5; i < 8; i++) p.produce([{ key: null, value: `r${i}` }], 0);
    expect([p.highWatermark, p.logEndOffset]).toEqual([5, 8]);
    expect(p.runRetention(1000)).toBe(5);
    expect(p.logStartOffset).toBeLessThanOrEqual(p.highWatermark);
    // The followers return and r5..r7 commit: a fetch at 5 returns them.
    p.holdHighWatermark = null;
    p.highWatermark = 8;
    expect(show(p.readAll(5))).toEqual(['null="r5"@5', 'null="r6"@6', 'null="r7"@7']);
  });

  it("the rooms' floor (slowest subscription, stream forks, ...) holds retention back", () => {
    const p = tenRecords({ retentionMs: 0 });
    p.floor = 3;
    expect(p.runRetention(DAY)).toBe(2);
    p.floor = null;
    // Up to the active segment [8, 9], which retention never drops.
    expect(p.runRetention(DAY)).toBe(8);
  });

  it("a segment with an R2 copy is marked deleting (its object goes after the commit), and is not planned twice", () => {
    const p = tenRecords({ retentionMs: 0 });
    p.segments = p.segments.map((s, i) => (i === 0 ? { ...s, location: "both", r2Key: "k1" } : s));
    const plan = planRetention({ segments: p.segments, bounds: p.bounds, floor: 2, nowMs: DAY }, p.cfg.retention);
    expect(plan.commands).toEqual([{ kind: "segUpdate", id: 0, patch: { remote: "deleting" } }]);
    p.segments = p.segments.map((s, i) => (i === 0 ? { ...s, remote: "deleting" } : s));
    const again = planRetention({ segments: p.segments, bounds: { ...p.bounds, logStartOffset: 2 }, floor: 4, nowMs: DAY }, p.cfg.retention);
    expect(again.dropped).toEqual([{ id: 2, reason: "retention.ms" }]);
  });
});

describe("deleteRecords (KIP-107): field case B1", () => {
  it("v0..v9 (HW 10): 3 ok -> 3; 2 no-op; 3 no-op; 11 OFFSET_OUT_OF_RANGE; -2 OFFSET_OUT_OF_RANGE; -1 ok -> 10", () => {
    const p = tenRecords();
    const steps: [number, string, number][] = [];
    for (const offset of [3, 2, 3, 11, -2, -1]) {
      const r = p.deleteRecords(offset);
      steps.push([offset, "ok" in r ? r.code : r.changed ? "OK" : "OK, a no-op", p.logStartOffset]);
    }
    expect(steps).toEqual([
      [3, "OK", 3],
      [2, "OK, a no-op", 3],
      [3, "OK, a no-op", 3],
      [11, "OFFSET_OUT_OF_RANGE", 3],
      [-2, "OFFSET_OUT_OF_RANGE", 3],
      [-1, "OK", 10],
    ]);
    expect([p.logStartOffset, p.logEndOffset]).toEqual([10, 10]);
    expect(p.fetch(9)).toEqual({ error: "OFFSET_OUT_OF_RANGE", logStartOffset: 10 });
    expect(p.fetch(10)).toEqual({ records: [], nextOffset: 10 });
  });

  it("the refusal carries the bounds; a fractional offset is INVALID_OFFSET; the answer is the low watermark", () => {
    const bounds = { logStartOffset: 3, logEndOffset: 10, highWatermark: 10 };
    expect(planDeleteRecords(11, bounds)).toEqual({
      ok: false,
      code: "OFFSET_OUT_OF_RANGE",
      message: "deleteRecords offset 11 is outside [0, 10] (-1 = the high watermark).",
      details: { offset: 11, logStartOffset: 3, logEndOffset: 10, highWatermark: 10 },
    });
    expect(planDeleteRecords(1.5, bounds)).toMatchObject({ ok: false, code: "INVALID_OFFSET" });
    expect(planDeleteRecords(10, bounds)).toEqual({ logStartOffset: 10, changed: true });
    // Bounded by the high watermark, not the log end (acks=1 records not yet replicated).
    expect(planDeleteRecords(9, { ...bounds, highWatermark: 8 })).toMatchObject({ ok: false, code: "OFFSET_OUT_OF_RANGE" });
    expect(planDeleteRecords(-1, { ...bounds, highWatermark: 8 })).toEqual({ logStartOffset: 8, changed: true });
  });

  it("a batch straddling the new log start stays stored; the fetch hands out only records at or after it (B2)", () => {
    const p = new SimPartition();
    p.produce(
      [0, 1, 2, 3, 4].map((i) => ({ key: null, value: `v${i}` })),
      0,
    );
    p.produce(
      [5, 6, 7].map((i) => ({ key: null, value: `v${i}` })),
      0,
    );
    p.deleteRecords(2);
    expect(p.batches.map((b) => b.baseOffset)).toEqual([0, 5]);
    expect(show(p.readAll(2, 100)).map((r) => r.split("@")[1])).toEqual(["2", "3", "4", "5", "6", "7"]);
  });

  it("the physical truncation waits for the floor while the log start moves (a stream fork reads below it)", () => {
    expect(truncationTarget(8, null)).toBe(8);
    expect(truncationTarget(8, 3)).toBe(3);
    expect(truncationTarget(2, 3)).toBe(2);
    const p = tenRecords();
    p.floor = 4;
    p.deleteRecords(7);
    expect(p.logStartOffset).toBe(7);
    expect(p.batches[0]!.baseOffset).toBe(4);
  });
});

describe("truncateBefore slices", () => {
  const spans = fc.array(fc.record({ records: fc.integer({ min: 1, max: 4 }), bytes: fc.integer({ min: 61, max: 300 }) }), { maxLength: 40 });

  it("property: slices delete exactly the batches wholly below the target, each within maxRows/maxBytes (the first row always), and finish", () => {
    fc.assert(
      fc.property(spans, fc.integer({ min: 0, max: 120 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 61, max: 700 }), (raw, before, maxRows, maxBytes) => {
        let offset = 0;
        let stored = raw.map((b) => {
          const s = { baseOffset: offset, lastOffset: offset + b.records - 1, bytes: b.bytes };
          offset += b.records;
          return s;
        });
        const expected = stored.filter((b) => b.lastOffset >= before);
        for (let slices = 0; ; slices++) {
          expect(slices).toBeLessThanOrEqual(raw.length + 1);
          const slice = planTruncateSlice(before, stored.slice(0, maxRows + 1), { maxRows, maxBytes });
          if (slice.command !== null) {
            const gone = stored.filter((b) => b.lastOffset < slice.command!.offset);
            expect(gone.length).toBeGreaterThan(0);
            expect(gone.length).toBeLessThanOrEqual(maxRows);
            if (gone.length > 1) expect(gone.reduce((n, b) => n + b.bytes, 0)).toBeLessThanOrEqual(maxBytes);
            expect(gone.every((b) => b.lastOffset < before)).toBe(true);
            stored = stored.filter((b) => b.lastOffset >= slice.command!.offset);
          }
          if (slice.done) break;
        }
        expect(stored).toEqual(expected);
        // Resumable and idempotent: planning again deletes nothing more.
        expect(planTruncateSlice(before, stored.slice(0, maxRows + 1), { maxRows, maxBytes })).toEqual({ command: null, done: true });
      }),
    );
  });
});
