/**
 * Field case B5 (../shared/field-cases.md; KAFKA-5634): retention never moves the log start
 * past the high watermark, "at every moment". The exact scenario is in
 * test/unit/lifecycle-retention.test.ts; this is its property form over the real retention
 * planner (src/lifecycle/retention.ts) on the lifecycle simulator: any interleaving of
 * produce (the high watermark held back, as while followers are down and acks=1 appends go
 * on), retention runs with any retention.ms / retention.bytes, deleteRecords, and the high
 * watermark catching up.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SIM_DEFAULTS, SimPartition, show } from "./lifecycle-sim.ts";

type Step = { op: "produce"; n: number } | { op: "hold" } | { op: "release" } | { op: "retention"; atMs: number } | { op: "deleteRecords"; offset: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant("produce" as const), n: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ op: fc.constant("hold" as const) }),
  fc.record({ op: fc.constant("release" as const) }),
  fc.record({ op: fc.constant("retention" as const), atMs: fc.integer({ min: 0, max: 10_000 }) }),
  fc.record({ op: fc.constant("deleteRecords" as const), offset: fc.integer({ min: -1, max: 40 }) }),
);

describe("field case B5 (property): the log start never passes the high watermark", () => {
  it("holds after every step, and every record at or above the log start stays readable once committed", () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: -1, max: 400 }),
        fc.boolean(),
        (steps, retentionMs, retentionBytes, oneRecordSegments) => {
          const p = new SimPartition({
            ...SIM_DEFAULTS,
            roll: { segmentBytes: oneRecordSegments ? 1 : 150, segmentMs: 86_400_000 },
            retention: { delete: true, retentionMs, retentionBytes },
          });
          let clock = 0;
          let produced = 0;
          for (const s of steps) {
            if (s.op === "produce") for (let i = 0; i < s.n; i++) p.produce([{ key: null, value: `r${produced++}` }], clock++);
            else if (s.op === "hold") p.holdHighWatermark = p.highWatermark;
            else if (s.op === "release") {
              p.holdHighWatermark = null;
              p.highWatermark = p.logEndOffset;
            } else if (s.op === "retention") p.runRetention(clock + s.atMs);
            else p.deleteRecords(s.offset);
            expect(p.logStartOffset).toBeLessThanOrEqual(p.highWatermark);
            expect(p.highWatermark).toBeLessThanOrEqual(p.logEndOffset);
          }
          // The followers return: everything appended commits, and nothing above the old high
          // watermark was lost to retention.
          const start = p.logStartOffset;
          p.holdHighWatermark = null;
          p.highWatermark = p.logEndOffset;
          const read = show(p.readAll(start)).map((r) => Number(r.split("@")[1]));
          expect(read).toEqual(Array.from({ length: p.logEndOffset - start }, (_, i) => start + i));
        },
      ),
      { numRuns: 300 },
    );
  });
});
