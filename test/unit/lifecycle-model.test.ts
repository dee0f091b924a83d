/**
 * The model property: after any sequence of produces, compactions (crashing and restarting
 * at random steps), retention runs, deleteRecords, idle rolls and time passing, on a
 * `compact,delete` topic driven only by the pure lifecycle core:
 * - the latest value per key equals a simple model's (a key whose latest record is live shows
 *   exactly it; a key whose latest is a tombstone shows the tombstone or nothing, never an older
 *   value; a key wholly below the log start shows nothing);
 * - stored offsets stay strictly increasing, each record exactly as produced;
 * - the log start never decreases and never passes the high watermark;
 * - a consumer reading from any offset in [log start, log end] reaches the log end.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkSegmentIndex } from "../../src/lifecycle/index.ts";
import { Crash, SIM_DEFAULTS, SimPartition, type SimRecord } from "./lifecycle-sim.ts";

type Op =
  | { kind: "produce"; records: { key: string; value: string | null }[] }
  | { kind: "tick"; ms: number }
  | { kind: "compact"; crashAt: number | null; maxBatches: number; maxMapKeys: number }
  | { kind: "retention" }
  | { kind: "deleteRecords"; at: number }
  | { kind: "idleRoll" };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("produce" as const),
      records: fc.array(fc.record({ key: fc.constantFrom("a", "b", "c"), value: fc.option(fc.constantFrom("", "1", "22", "333"), { freq: 4 }) }), { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 400 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("compact" as const),
      crashAt: fc.option(fc.integer({ min: 0, max: 8 })),
      maxBatches: fc.integer({ min: 1, max: 4 }),
      maxMapKeys: fc.integer({ min: 1, max: 5 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("retention" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("deleteRecords" as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("idleRoll" as const) }) },
);

describe("lifecycle model", () => {
  it("property: latest value per key matches the model; offsets increase; log start never decreases; every reader reaches the log end", () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 10, maxLength: 80 }), fc.integer({ min: 70, max: 300 }), (ops, segmentBytes) => {
        const p = new SimPartition({
          roll: { segmentBytes, segmentMs: 500 },
          retention: { delete: true, retentionMs: 1500, retentionBytes: -1 },
          compaction: { ...SIM_DEFAULTS.compaction, compact: true, deleteRetentionMs: 300, minCleanableDirtyRatio: 0.3, maxCompactionLagMs: 2000 },
        });
        const produced = new Map<number, SimRecord>();
        const latest = new Map<string, number>();
        let now = 0;
        let lastStart = 0;
        for (const o of ops) {
          switch (o.kind) {
            case "produce":
              for (const r of p.produce(o.records, now).records) {
                produced.set(r.offset, r);
                latest.set(r.key!, r.offset);
              }
              break;
            case "tick":
              now += o.ms;
              break;
            case "idleRoll":
              p.idleRoll(now);
              break;
            case "retention":
              p.runRetention(now);
              break;
            case "deleteRecords":
              p.deleteRecords(o.at % (p.highWatermark + 1));
              break;
            case "compact":
              try {
                let step = 0;
                p.runCompaction(now, { maxBatches: o.maxBatches, maxMapKeys: o.maxMapKeys, crashAt: () => o.crashAt === step++ });
              } catch (e) {
                if (!(e instanceof Crash)) throw e;
                p.restart();
              }
              break;
          }
          // ---- invariants after every operation ----
          expect(p.logStartOffset).toBeGreaterThanOrEqual(lastStart);
          expect(p.logStartOffset).toBeLessThanOrEqual(p.highWatermark);
          lastStart = p.logStartOffset;
          expect(checkSegmentIndex(p.segments)).toBeUndefined();
          const stored = p.batches.flatMap((b) => b.records);
          for (let i = 1; i < stored.length; i++) expect(stored[i]!.offset).toBeGreaterThan(stored[i - 1]!.offset);
          for (const r of stored) expect(r).toEqual(produced.get(r.offset));
        }
        // ---- the model: the latest value per key ----
        const visible = p.readAll(p.logStartOffset);
        const seen = new Map<string, SimRecord>();
        for (const r of visible) seen.set(r.key!, r);
        for (const [key, offset] of latest) {
          const want = produced.get(offset)!;
          const got = seen.get(key);
          if (offset < p.logStartOffset) expect(got, `key ${key} below the log start`).toBeUndefined();
          else if (want.value !== null) expect(got, `key ${key}`).toEqual(want);
          else if (got !== undefined) expect(got, `key ${key}: a tombstone or nothing, never an older value`).toEqual(want);
        }
        // ---- every reader reaches the log end, from any offset ----
        for (let from = p.logStartOffset; from <= p.logEndOffset; from++) {
          const got = p.readAll(from, 2).map((r) => r.offset);
          expect(got).toEqual(visible.map((r) => r.offset).filter((x) => x >= from));
        }
      }),
      { numRuns: 300 },
    );
  });
});
