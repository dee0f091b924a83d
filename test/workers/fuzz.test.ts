/**
 * The bad-input property fuzzer in the workers tier (issue 15, part 4): FUZZ_RUNS generated
 * requests (test/fuzz/requests.ts: every route family, mostly malformed) through the real
 * gateway and Durable Objects. Per request: no 5xx; an error is JSON from the one table with
 * the table's status and `retriable`; a rejected request changes nothing (the fixture snapshot
 * reads back identical). A legitimate success may change state; the snapshot is taken again.
 * A failure prints fast-check's seed and path and the minimised request; put the seed and path
 * in `REPLAY` to replay it. The same generators run against a dev server: `npm run fuzz`.
 */
import { beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { FuzzSession, anyRequest, createFixtures, describeRequest } from "../fuzz/requests.ts";
import { call } from "./helpers.ts";

const FUZZ_RUNS = 2000;
/** Set to `{ seed, path }` from a failure report to replay it. */
const REPLAY: { seed: number; path: string } | null = null;

describe("bad-input fuzzer (every route family)", () => {
  beforeAll(() => createFixtures(call));

  it(`${FUZZ_RUNS} generated requests: table errors only, no 5xx, rejected requests change nothing`, async () => {
    const session = new FuzzSession(call);
    await fc.assert(
      fc.asyncProperty(anyRequest, async (r) => {
        const { violations } = await session.step(r);
        expect(violations, describeRequest(r)).toEqual([]);
      }),
      { numRuns: FUZZ_RUNS, ...(REPLAY ?? {}) },
    );
    // Every family ran, and both rejections and successes were seen (the fuzzer is not all noise).
    const statuses = session.statuses;
    const families = new Set([...statuses.keys()].map((k) => k.split(" ")[0]));
    expect([...families].sort()).toEqual(["admin", "fetch", "groups", "offsets", "produce-binary", "produce-json", "streams", "wrong-method"]);
    const counts = [...statuses.entries()];
    expect(counts.some(([k]) => Number(k.split(" ")[1]) < 300)).toBe(true);
    expect(counts.some(([k]) => Number(k.split(" ")[1]) >= 400)).toBe(true);
    console.log("fuzz: requests by family and status", Object.fromEntries([...statuses.entries()].sort()));
  }, 300_000);
});
