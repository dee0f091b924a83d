/**
 * The mutation check: with one deliberate bug switched on at a time (test/sim/mutants.ts), the
 * simulator finds a safety violation within its default seed count. A simulator that cannot
 * fail proves nothing; this shows each check bites.
 */
import { describe, expect, it } from "vitest";
import { MUTATIONS, type Mutation } from "./mutants.ts";
import { DEFAULT_SEEDS } from "./seeds.ts";
import { runSeed, type ViolationKind } from "./simulator.ts";

/** What each bug must be caught as (any safety check counts; never only "liveness"). */
const SAFETY: ViolationKind[] = ["electionSafety", "ackedEntryLost", "logMatching", "leaderCompleteness", "stateMachineSafety", "linearizability", "assertion"];

function firstViolation(mutation: Mutation): { seed: number; kind: ViolationKind; message: string } | null {
  for (let seed = 1; seed <= DEFAULT_SEEDS; seed++) {
    const r = runSeed({ seed, mutation });
    if (r.violation !== null) return { seed, kind: r.violation.kind, message: r.violation.message };
  }
  return null;
}

describe("mutation check: every deliberate bug is caught within the default seed count", () => {
  it("lists the five mutants", () => {
    expect([...MUTATIONS].sort()).toEqual(["commitOldTerm", "readWithoutReadIndex", "skipPersistBeforeSend", "truncateOnStaleAppend", "voteWithoutLogCheck"]);
  });
  for (const mutation of MUTATIONS) {
    it(`${mutation} is caught by a safety check`, () => {
      const found = firstViolation(mutation);
      expect(found, `${mutation} survived ${DEFAULT_SEEDS} seeds`).not.toBeNull();
      expect(SAFETY).toContain(found!.kind);
      // The same seed without the bug is clean: the violation is the mutant's.
      expect(runSeed({ seed: found!.seed }).violation).toBeNull();
    });
  }
});
