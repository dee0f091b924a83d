/**
 * The pure rules of a replica's snapshot catch-up (src/partition/catch-up.ts; docs/RAFT.md
 * "Snapshot catch-up"): which range to pull, the checks of each pulled chunk, the decision at
 * install time, the chunk sizes.
 */
import { describe, expect, it } from "vitest";
import { checkChunk, installDecision, planCatchUp, producerRowsBytes } from "../../src/partition/catch-up.ts";

const span = (baseOffset: number, lastOffset: number, sizeBytes = 100) => ({ baseOffset, lastOffset, sizeBytes });

describe("planCatchUp", () => {
  it("pulls from the follower's log end when the peer still stores it: the follower's log is kept", () => {
    expect(planCatchUp({ logStartOffset: 0, logEndOffset: 40 }, { logStartOffset: 0, logEndOffset: 100 })).toEqual({ from: 40, end: 100, replace: false });
    // The peer's retention reached exactly the follower's end: still contiguous.
    expect(planCatchUp({ logStartOffset: 0, logEndOffset: 40 }, { logStartOffset: 40, logEndOffset: 100 })).toEqual({ from: 40, end: 100, replace: false });
    // Nothing to pull (only Raft-internal entries were missing): an empty range.
    expect(planCatchUp({ logStartOffset: 5, logEndOffset: 100 }, { logStartOffset: 0, logEndOffset: 100 })).toEqual({ from: 100, end: 100, replace: false });
  });

  it("replaces the follower's log by the peer's whole log when the peer's log start is past the follower's end (Kafka's full truncation)", () => {
    expect(planCatchUp({ logStartOffset: 0, logEndOffset: 40 }, { logStartOffset: 41, logEndOffset: 100 })).toEqual({ from: 41, end: 100, replace: true });
  });

  it("refuses a manifest older than the follower's state and a malformed one", () => {
    expect(planCatchUp({ logStartOffset: 0, logEndOffset: 120 }, { logStartOffset: 0, logEndOffset: 100 })).toHaveProperty("error");
    expect(planCatchUp({ logStartOffset: 0, logEndOffset: 10 }, { logStartOffset: 101, logEndOffset: 100 })).toHaveProperty("error");
  });
});

describe("checkChunk", () => {
  const keep = { from: 40, end: 100, replace: false };
  it("accepts ascending rows inside [from, end), with gaps (compaction removes whole batches)", () => {
    expect(checkChunk([span(40, 49), span(50, 59), span(70, 79)], 80, keep, null)).toBeUndefined();
    expect(checkChunk([span(80, 99)], 100, keep, 79)).toBeUndefined();
  });

  it("refuses overlap with what is staged, rows before from or at/after end, a malformed row, a wrong next", () => {
    expect(checkChunk([span(75, 80)], 81, keep, 79)).toMatch(/overlaps/);
    expect(checkChunk([span(30, 49)], 50, keep, null)).toMatch(/before 40/);
    expect(checkChunk([span(90, 100)], 101, keep, 79)).toMatch(/beyond the end/);
    expect(checkChunk([span(50, 49)], 50, keep, null)).toMatch(/malformed/);
    expect(checkChunk([span(40, 49)], 60, keep, null)).toMatch(/next 60/);
  });

  it("when the log is replaced, the first batch may start before from (the peer's log start inside a batch)", () => {
    const replace = { from: 45, end: 100, replace: true };
    expect(checkChunk([span(40, 49)], 50, replace, null)).toBeUndefined();
    expect(checkChunk([span(40, 44)], 45, replace, null)).toMatch(/before 45/);
    expect(checkChunk([span(40, 49)], 50, keep, null)).toBeUndefined();
    expect(checkChunk([span(38, 49)], 50, keep, null)).toMatch(/before 40/);
  });

  it("an empty chunk is only the end of the range", () => {
    expect(checkChunk([], 100, keep, 79)).toBeUndefined();
    expect(checkChunk([], 80, keep, 79)).toMatch(/empty chunk/);
  });
});

describe("installDecision", () => {
  const pulled = { index: 500, term: 3, from: 40, replace: false, followerEndAtStart: 40 };
  it("installs when the follower still lacks the index and its log did not move", () => {
    expect(installDecision({ commitIndex: 10, termAtIndex: undefined, logEndOffset: 40 }, pulled)).toBe("install");
    // A different term at the index (a divergent entry): replaced as Raft's InstallSnapshot does.
    expect(installDecision({ commitIndex: 10, termAtIndex: 2, logEndOffset: 40 }, pulled)).toBe("install");
  });

  it("drops the pull when the follower's commit reached the index or its log holds (index, term): the entries replay normally", () => {
    expect(installDecision({ commitIndex: 500, termAtIndex: 3, logEndOffset: 90 }, pulled)).toBe("obsolete");
    expect(installDecision({ commitIndex: 400, termAtIndex: 3, logEndOffset: 70 }, pulled)).toBe("obsolete");
  });

  it("pulls again when the follower applied entries meanwhile (its log end moved)", () => {
    expect(installDecision({ commitIndex: 20, termAtIndex: undefined, logEndOffset: 45 }, pulled)).toBe("restart");
  });
});

describe("manifest size", () => {
  it("estimates the producer state's serialised size", () => {
    expect(producerRowsBytes({ producers: [[1, 0, 4, 0]], batches: [[1, 0, 0, 4, 0, 4]] })).toBe(90);
  });
});
