/**
 * The choice of a replicated partition's offsets for metrics (src/metrics/replicas.ts): the
 * leader in the highest term, else the highest high watermark; r1's metrics otherwise kept.
 */
import { describe, expect, it } from "vitest";
import { leaderView, withLeaderOffsets } from "../../src/metrics/replicas.ts";
import type { PartitionMetrics, ReplicaStatus } from "../../src/partition/rpc.ts";

function st(replica: string, role: string, term: number, hw: number): ReplicaStatus {
  return {
    replica,
    role,
    leaderEpoch: term,
    leaderReplica: null,
    commitIndex: 0,
    appliedIndex: 0,
    lastIndex: 0,
    highWatermark: hw,
    logStartOffset: 1,
    logEndOffset: hw,
    inSyncReplicas: null,
    snapshotIndex: 0,
    voters: [],
    learners: [],
    catchUpInstalls: 0,
    catchUpRunning: false,
  };
}

describe("leaderView", () => {
  it("picks the leader, in the highest term when two say they lead", () => {
    expect(leaderView([st("r1", "follower", 3, 2), st("r2", "leader", 3, 9), st("r3", "follower", 3, 9)])?.replica).toBe("r2");
    expect(leaderView([st("r1", "leader", 2, 7), st("r2", "leader", 3, 5), null])?.replica).toBe("r2");
    expect(leaderView([null, st("r2", "follower", 4, 5), st("r3", "leader", 4, 5)])?.replica).toBe("r3");
  });

  it("without a leader, the highest high watermark; null when none answered", () => {
    expect(leaderView([st("r1", "candidate", 5, 3), st("r2", "follower", 4, 8), null])?.replica).toBe("r2");
    expect(leaderView([null, null, null])).toBeNull();
  });

  it("withLeaderOffsets replaces only the offsets", () => {
    const m = { topic: "t/n/x", partition: 0, logStartOffset: 0, highWatermark: 1, logEndOffset: 1, storedBytes: 7 } as PartitionMetrics;
    expect(withLeaderOffsets(m, st("r2", "leader", 3, 9))).toMatchObject({ logStartOffset: 1, highWatermark: 9, logEndOffset: 9, storedBytes: 7 });
    expect(withLeaderOffsets(m, null)).toBe(m);
  });
});
