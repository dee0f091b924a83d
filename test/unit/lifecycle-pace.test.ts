/**
 * Compaction pacing (src/lifecycle/pace.ts): the duty cycle's bound, no pause without appends, the
 * byte rate, the step budget's range and adaptation, and that a paced pass always finishes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_COMPACTION_PACE,
  FIRST_PACED_STEP_BYTES,
  FULL_STEP_BUDGET,
  MAX_PAUSE_MS,
  MIN_MAX_BYTES_PER_SECOND,
  MIN_STEP_BYTES,
  RECENT_APPEND_MS,
  appendsFlowing,
  compactionPaceFromVars,
  compactionPauseMs,
  compactionStepBudget,
  type CompactionPace,
  type StepCost,
} from "../../src/lifecycle/index.ts";

const paceArb: fc.Arbitrary<CompactionPace> = fc.record({
  dutyCycle: fc.double({ min: 0.01, max: 1, noNaN: true }),
  targetStepMs: fc.integer({ min: 1, max: 100 }),
  maxBytesPerSecond: fc.option(fc.integer({ min: MIN_MAX_BYTES_PER_SECOND, max: 64 * 1024 * 1024 }), { nil: null }),
});
const stepArb: fc.Arbitrary<StepCost> = fc.record({ bytes: fc.integer({ min: 0, max: 16 * 1024 * 1024 }), ms: fc.integer({ min: 0, max: 5_000 }) });

describe("compactionPauseMs", () => {
  it("while appends flow, compaction takes at most the duty cycle of wall time (unless the pause is at its cap)", () => {
    fc.assert(
      fc.property(paceArb, stepArb, (pace, step) => {
        const pause = compactionPauseMs(step, true, pace);
        if (pause < MAX_PAUSE_MS && step.ms + pause > 0) expect(step.ms / (step.ms + pause)).toBeLessThanOrEqual(pace.dutyCycle + 1e-9);
      }),
    );
  });

  it("is an integer in [0, MAX_PAUSE_MS]", () => {
    fc.assert(
      fc.property(paceArb, stepArb, fc.boolean(), (pace, step, busy) => {
        const pause = compactionPauseMs(step, busy, pace);
        expect(Number.isInteger(pause)).toBe(true);
        expect(pause).toBeGreaterThanOrEqual(0);
        expect(pause).toBeLessThanOrEqual(MAX_PAUSE_MS);
      }),
    );
  });

  it("without appends since the previous step and without a byte rate there is no pause", () => {
    fc.assert(
      fc.property(paceArb, stepArb, (pace, step) => {
        expect(compactionPauseMs(step, false, { ...pace, maxBytesPerSecond: null })).toBe(0);
      }),
    );
  });

  it("a byte rate holds at all times: a step of at most one second's bytes and its pause take bytes / rate", () => {
    fc.assert(
      fc.property(paceArb, stepArb, fc.boolean(), fc.integer({ min: MIN_MAX_BYTES_PER_SECOND, max: 64 * 1024 * 1024 }), (pace, step, busy, rate) => {
        fc.pre(step.bytes <= rate);
        const pause = compactionPauseMs(step, busy, { ...pace, maxBytesPerSecond: rate });
        expect(step.ms + pause).toBeGreaterThanOrEqual((step.bytes * 1000) / rate - 1e-9);
      }),
    );
  });

  it("examples: duty cycle 0.2 pauses 4x the step; 1 MiB at 1 MiB/s after 100 ms waits 900 ms; the cap", () => {
    const pace = { ...DEFAULT_COMPACTION_PACE, dutyCycle: 0.2 };
    expect(compactionPauseMs({ bytes: 1, ms: 10 }, true, pace)).toBe(40);
    expect(compactionPauseMs({ bytes: 1, ms: 10 }, false, pace)).toBe(0);
    expect(compactionPauseMs({ bytes: 1024 * 1024, ms: 100 }, false, { ...pace, maxBytesPerSecond: 1024 * 1024 })).toBe(900);
    expect(compactionPauseMs({ bytes: 1, ms: 1_000 }, true, pace)).toBe(MAX_PAUSE_MS);
    expect(compactionPauseMs({ bytes: 1, ms: 10 }, true, { ...pace, dutyCycle: 1 })).toBe(0);
  });
});

describe("appendsFlowing", () => {
  it("an append since the previous step, or the last one less than RECENT_APPEND_MS ago", () => {
    expect(appendsFlowing(1, null, 0)).toBe(true);
    expect(appendsFlowing(0, null, 5_000)).toBe(false);
    expect(appendsFlowing(0, 1_000, 1_000 + RECENT_APPEND_MS - 1)).toBe(true);
    expect(appendsFlowing(0, 1_000, 1_000 + RECENT_APPEND_MS)).toBe(false);
  });
});

describe("compactionStepBudget", () => {
  it("stays within [MIN_STEP_BYTES, FULL_STEP_BUDGET] and never below one batch", () => {
    fc.assert(
      fc.property(paceArb, fc.option(stepArb, { nil: null }), fc.boolean(), (pace, last, busy) => {
        const b = compactionStepBudget(busy, last, pace);
        expect(b.maxBatches).toBe(FULL_STEP_BUDGET.maxBatches);
        expect(b.maxBytes).toBeGreaterThanOrEqual(MIN_STEP_BYTES);
        expect(b.maxBytes).toBeLessThanOrEqual(FULL_STEP_BUDGET.maxBytes);
        if (pace.maxBytesPerSecond !== null) expect(b.maxBytes).toBeLessThanOrEqual(Math.max(MIN_STEP_BYTES, pace.maxBytesPerSecond));
      }),
    );
  });

  it("without appends: the full budget; with: scaled from the last step to targetStepMs", () => {
    const pace = { ...DEFAULT_COMPACTION_PACE, targetStepMs: 10 };
    expect(compactionStepBudget(false, { bytes: 100, ms: 100 }, pace)).toEqual(FULL_STEP_BUDGET);
    // 4 MiB took 80 ms: 10 ms is 512 KiB.
    expect(compactionStepBudget(true, { bytes: 4 * 1024 * 1024, ms: 80 }, pace).maxBytes).toBe(512 * 1024);
    expect(compactionStepBudget(true, { bytes: 4 * 1024 * 1024, ms: 1 }, pace).maxBytes).toBe(FULL_STEP_BUDGET.maxBytes);
    expect(compactionStepBudget(true, { bytes: 1024, ms: 1_000 }, pace).maxBytes).toBe(MIN_STEP_BYTES);
    expect(compactionStepBudget(true, null, pace).maxBytes).toBe(FIRST_PACED_STEP_BYTES);
    expect(compactionStepBudget(true, { bytes: 4096, ms: 0 }, pace).maxBytes).toBe(FIRST_PACED_STEP_BYTES);
  });
});

describe("a paced pass always finishes", () => {
  it("whatever the appends and the measured durations: one batch at least per step, pauses bounded", () => {
    fc.assert(
      fc.property(
        paceArb,
        fc.array(fc.integer({ min: 1, max: 2 * 1024 * 1024 }), { minLength: 1, maxLength: 300 }),
        fc.infiniteStream(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 2_000 }))),
        (pace, batchBytes, world) => {
          // The shell's read: the first batch always, then up to the budget (batchesInRange).
          let next = 0;
          let last: StepCost | null = null;
          let steps = 0;
          let wallMs = 0;
          const it = world[Symbol.iterator]();
          while (next < batchBytes.length) {
            const [busy, ms] = it.next().value as [boolean, number];
            const budget = compactionStepBudget(busy, last, pace);
            let bytes = 0;
            let rows = 0;
            while (next < batchBytes.length && (rows === 0 || (rows < budget.maxBatches && bytes + batchBytes[next]! <= budget.maxBytes))) {
              bytes += batchBytes[next++]!;
              rows++;
            }
            expect(rows).toBeGreaterThan(0);
            last = { bytes, ms };
            wallMs += ms + compactionPauseMs(last, busy, pace);
            steps++;
          }
          expect(steps).toBeLessThanOrEqual(batchBytes.length);
          expect(wallMs).toBeLessThanOrEqual(steps * (2_000 + MAX_PAUSE_MS));
        },
      ),
    );
  });
});

describe("compactionPaceFromVars (wrangler vars)", () => {
  it("unset: the defaults", () => {
    expect(compactionPaceFromVars({})).toEqual({ pace: DEFAULT_COMPACTION_PACE, errors: [] });
  });

  it("valid values", () => {
    expect(compactionPaceFromVars({ EDGELOG_COMPACTION_DUTY_CYCLE: "0.5", EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND: "1048576" })).toEqual({
      pace: { ...DEFAULT_COMPACTION_PACE, dutyCycle: 0.5, maxBytesPerSecond: 1048576 },
      errors: [],
    });
    expect(compactionPaceFromVars({ EDGELOG_COMPACTION_DUTY_CYCLE: "1", EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND: "-1" }).pace).toEqual({ ...DEFAULT_COMPACTION_PACE, dutyCycle: 1 });
  });

  it("a bad value keeps its default and says why", () => {
    for (const duty of ["0", "1.5", "-0.2", "abc", "0.2x", "."]) {
      const r = compactionPaceFromVars({ EDGELOG_COMPACTION_DUTY_CYCLE: duty });
      expect(r.pace).toEqual(DEFAULT_COMPACTION_PACE);
      expect(r.errors).toEqual([`EDGELOG_COMPACTION_DUTY_CYCLE must be a number in (0, 1], got ${JSON.stringify(duty)}; using 0.1`]);
    }
    for (const rate of ["0", "100", "1e9", "01048576", "-2", "1.5"]) {
      const r = compactionPaceFromVars({ EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND: rate });
      expect(r.pace).toEqual(DEFAULT_COMPACTION_PACE);
      expect(r.errors).toEqual([`EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND must be -1 or an integer >= ${MIN_MAX_BYTES_PER_SECOND}, got ${JSON.stringify(rate)}; using no limit`]);
    }
  });
});
