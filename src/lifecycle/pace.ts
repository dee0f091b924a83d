/**
 * Compaction pacing, pure: how much one compaction step may read and how long the `compact` timer
 * waits before the next step, so that appends keep most of the partition's one thread while a
 * pass runs.
 *
 * Kafka's cleaner runs on its own threads and throttles its I/O with the broker config
 * `log.cleaner.io.max.bytes.per.second`. A partition object has one thread: a compaction step
 * (read, key scan, batch rewrites, checkpoint, one transaction) runs between appends, and an
 * append that arrives meanwhile waits for it. So the room paces the steps:
 *
 * - while appends flow ({@link appendsFlowing}: an append since the previous step, or in the
 *   last {@link RECENT_APPEND_MS}), a step reads a
 *   budget sized so that it takes about {@link CompactionPace.targetStepMs} (scaled from the
 *   previous step's bytes and measured duration), and the next step waits for a pause
 *   proportional to the step's own duration: a duty cycle of at most
 *   {@link CompactionPace.dutyCycle} of wall time;
 * - with no appends in between, a step reads the full budget ({@link FULL_STEP_BUDGET}) and the
 *   next follows at once (idle compaction runs at full speed);
 * - an optional byte rate ({@link CompactionPace.maxBytesPerSecond}, Kafka's
 *   `log.cleaner.io.max.bytes.per.second`) holds at all times, as Kafka's throttler does.
 *
 * Every pause is at most {@link MAX_PAUSE_MS} and every step reads at least one batch, so a
 * pass always finishes, at worst one batch per {@link MAX_PAUSE_MS} plus the step.
 *
 * Why the time bound is between steps, not inside one: a step is one synchronous piece of work
 * (SQLite calls are synchronous in a Durable Object) and on Cloudflare's runtime the clock does
 * not move during synchronous execution (`Date.now()` advances on I/O only, a Spectre
 * mitigation), so a step cannot look at the time while it runs. Its duration is measured around
 * it (the room awaits a zero-delay timer when the clock did not move) and the next step's size
 * and the pause follow from it.
 */

/** Pacing settings (the partition's; docs/LIFECYCLE.md "Compaction"). */
export interface CompactionPace {
  /** Largest share of wall time compaction steps take while appends flow, in (0, 1]. 1 = no pause. @default 0.1 */
  dutyCycle: number;
  /** Intended duration of one step while appends flow (ms): the next step's bytes scale to it. @default 10 */
  targetStepMs: number;
  /** Bytes a pass may read per second, at all times (Kafka's `log.cleaner.io.max.bytes.per.second`), or null for no limit. @default null */
  maxBytesPerSecond: number | null;
}

export const DEFAULT_COMPACTION_PACE: CompactionPace = { dutyCycle: 0.1, targetStepMs: 10, maxBytesPerSecond: null };

/** What one step may read: batches and stored bytes (the first batch always, whatever its size). */
export interface StepBudget {
  maxBatches: number;
  maxBytes: number;
}

/** The budget of a step with no appends in between (the step size before pacing existed). */
export const FULL_STEP_BUDGET: StepBudget = { maxBatches: 256, maxBytes: 8 * 1024 * 1024 };
/** The smallest byte budget of a paced step (a step of one batch is still possible: the first batch is always read). */
export const MIN_STEP_BYTES = 64 * 1024;
/** The byte budget of the first paced step, before any step was measured. */
export const FIRST_PACED_STEP_BYTES = 512 * 1024;
/** The longest pause between two steps (ms): bounds how slow a pass can get. */
export const MAX_PAUSE_MS = 1_000;
/** Smallest `maxBytesPerSecond` accepted: one smallest step per second. */
export const MIN_MAX_BYTES_PER_SECOND = MIN_STEP_BYTES;

/**
 * Appends this recent (ms) count as flowing: a pass that starts right after a burst's last append
 * (or right before the next burst's first) is paced from its first step. Kafka's cleaner
 * throttle needs no such signal (it holds at all times); Edgelog paces only against appends.
 */
export const RECENT_APPEND_MS = 100;

/**
 * Whether appends flow, for the next step: any append since the previous step, or the last one
 * less than {@link RECENT_APPEND_MS} ago. `lastAppendMs` null: none since the object started.
 */
export function appendsFlowing(appendsSinceStep: number, lastAppendMs: number | null, nowMs: number): boolean {
  return appendsSinceStep > 0 || (lastAppendMs !== null && nowMs - lastAppendMs < RECENT_APPEND_MS);
}

/** A step that ran: what it read and how long it took (ms, as measured around it; 0 when the clock did not move). */
export interface StepCost {
  bytes: number;
  ms: number;
}

/**
 * The budget of the next step. `busy`: appends arrived since the previous step. `last`: the
 * previous step's cost, or null. A busy step reads the bytes that took about `targetStepMs`
 * last time (within [{@link MIN_STEP_BYTES}, {@link FULL_STEP_BUDGET}.maxBytes]); a byte rate
 * further bounds every step to one second of it.
 */
export function compactionStepBudget(busy: boolean, last: StepCost | null, pace: CompactionPace): StepBudget {
  let maxBytes = FULL_STEP_BUDGET.maxBytes;
  if (busy) {
    // No measured step yet (or one too short for the clock to see): a middle size.
    maxBytes = last === null || last.bytes <= 0 || last.ms <= 0 ? FIRST_PACED_STEP_BYTES : Math.floor((last.bytes * pace.targetStepMs) / last.ms);
    maxBytes = clamp(maxBytes, MIN_STEP_BYTES, FULL_STEP_BUDGET.maxBytes);
  }
  if (pace.maxBytesPerSecond !== null) maxBytes = Math.max(MIN_STEP_BYTES, Math.min(maxBytes, pace.maxBytesPerSecond));
  return { maxBatches: FULL_STEP_BUDGET.maxBatches, maxBytes };
}

/**
 * The pause (ms) before the next step, after a step of cost `step`: while busy, the duty cycle's
 * `step.ms * (1 - dutyCycle) / dutyCycle`; always, the byte rate's `bytes / rate` less the
 * step's own time; the larger of the two, at most {@link MAX_PAUSE_MS}, never negative.
 */
export function compactionPauseMs(step: StepCost, busy: boolean, pace: CompactionPace): number {
  let pause = 0;
  if (busy && pace.dutyCycle < 1) pause = (Math.max(0, step.ms) * (1 - pace.dutyCycle)) / pace.dutyCycle;
  if (pace.maxBytesPerSecond !== null) pause = Math.max(pause, (Math.max(0, step.bytes) * 1000) / pace.maxBytesPerSecond - Math.max(0, step.ms));
  return Math.min(MAX_PAUSE_MS, Math.ceil(pause));
}

/** Wrangler vars of the pace (strings, as vars are); unset = the default. */
export interface CompactionPaceVars {
  /** (0, 1]. */
  EDGELOG_COMPACTION_DUTY_CYCLE?: string | undefined;
  /** An integer >= {@link MIN_MAX_BYTES_PER_SECOND}, or "-1" / unset for no limit. */
  EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND?: string | undefined;
}

/**
 * The pace from wrangler vars, validated. A bad value is not fatal (it would stop every
 * partition): it keeps its default and is reported in `errors` (one message per var) for the
 * caller to log.
 */
export function compactionPaceFromVars(vars: CompactionPaceVars): { pace: CompactionPace; errors: string[] } {
  const pace: CompactionPace = { ...DEFAULT_COMPACTION_PACE };
  const errors: string[] = [];
  const duty = vars.EDGELOG_COMPACTION_DUTY_CYCLE?.trim();
  if (duty !== undefined && duty !== "") {
    const n = /^(0|1)?(\.\d+)?$/.test(duty) && duty !== "." ? Number(duty) : Number.NaN;
    if (Number.isFinite(n) && n > 0 && n <= 1) pace.dutyCycle = n;
    else errors.push(`EDGELOG_COMPACTION_DUTY_CYCLE must be a number in (0, 1], got ${JSON.stringify(vars.EDGELOG_COMPACTION_DUTY_CYCLE)}; using ${DEFAULT_COMPACTION_PACE.dutyCycle}`);
  }
  const rate = vars.EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND?.trim();
  if (rate !== undefined && rate !== "" && rate !== "-1") {
    const n = /^[1-9][0-9]*$/.test(rate) ? Number(rate) : Number.NaN;
    if (Number.isSafeInteger(n) && n >= MIN_MAX_BYTES_PER_SECOND) pace.maxBytesPerSecond = n;
    else
      errors.push(
        `EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND must be -1 or an integer >= ${MIN_MAX_BYTES_PER_SECOND}, got ${JSON.stringify(vars.EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND)}; using no limit`,
      );
  }
  return { pace, errors };
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}
