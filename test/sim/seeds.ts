/**
 * Shared body of the seed-range test files (test/sim/seeds-*.test.ts): the default seed count
 * of `npm test` is split over files so vitest runs them in parallel workers.
 */
import { expect, it } from "vitest";
import { runSeed } from "./simulator.ts";

/** Default seed count of the simulator in `npm test` and of the mutation check. */
export const DEFAULT_SEEDS = 10_000;
/** Seeds per file: DEFAULT_SEEDS split over this many files. */
export const SEED_FILES = 4;
const CHUNK = 250;

/** Defines one test per CHUNK seeds of file `part` (1-based) of SEED_FILES. */
export function seedRange(part: number): void {
  const per = DEFAULT_SEEDS / SEED_FILES;
  const first = 1 + (part - 1) * per;
  for (let lo = first; lo < first + per; lo += CHUNK) {
    const hi = Math.min(lo + CHUNK, first + per) - 1;
    it(`seeds ${lo}..${hi}: no violation`, () => {
      for (let s = lo; s <= hi; s++) {
        const r = runSeed({ seed: s });
        if (r.violation !== null) {
          expect.fail(`seed ${s}: ${r.violation.kind} at ${r.violation.atMs} ms: ${r.violation.message} (replay: npm run sim -- --seed ${s})`);
        }
      }
    });
  }
}
