/**
 * The choice of a replicated partition's offsets for metrics (src/metrics/replicas.ts): the
 * leader in the highest term, else the highest high watermark; r1's metrics otherwise kept.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { leaderView, withLeaderOffsets } from "../../src/metrics/replicas.ts";
import { chooseLeaderView } from "../../src/partition/replica-admin.ts";
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

  it("chooseLeaderView (the one rule describe and the scrape use): a leader of the highest term when any leads, else a highest high watermark; -1 for none", () => {
    const view = fc.option(fc.record({ leader: fc.boolean(), leaderEpoch: fc.integer({ min: 0, max: 5 }), highWatermark: fc.integer({ min: 0, max: 20 }) }), { nil: null });
    fc.assert(
      fc.property(fc.array(view, { maxLength: 5 }), (views) => {
        const i = chooseLeaderView(views);
        const answered = views.filter((v) => v !== null);
        if (answered.length === 0) return i === -1;
        const chosen = views[i]!;
        const leaders = answered.filter((v) => v.leader);
        if (leaders.length > 0) return chosen.leader && chosen.leaderEpoch === Math.max(...leaders.map((v) => v.leaderEpoch));
        return chosen.highWatermark === Math.max(...answered.map((v) => v.highWatermark));
      }),
    );
  });
});
