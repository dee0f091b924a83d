/**
 * Partition placement (docs/RAFT.md "Partition placement"): the pure pieces. The replica ids a
 * caller uses for a partition (the placement's, recorded leader first, else r1..rf), the initial
 * placement from `replica.locations`, and the shape check of a `partitionChange` record.
 */
import { describe, expect, it } from "vitest";
import { initialReplicas, malformedPlacementRecord } from "../../durable-objects/raft/metadata-placements.ts";
import type { MetadataCommand } from "../../src/metadata/commands.ts";
import { replicaIdsOf } from "../../src/partition/replica-admin.ts";
import type { PartitionPlacement } from "../../src/protocol/types.ts";

const rf3 = { "replication.factor": 3 } as const;

describe("replicaIdsOf", () => {
  it("is r1..rf without a placement (MetadataDO, or a topic from before placements)", () => {
    expect(replicaIdsOf(undefined, 0, rf3)).toEqual(["r1", "r2", "r3"]);
    expect(replicaIdsOf(undefined, 0, {})).toEqual(["r1"]);
    expect(replicaIdsOf([], 2, rf3)).toEqual(["r1", "r2", "r3"]);
  });

  it("is the placement's replicas, the recorded leader first", () => {
    const placements: PartitionPlacement[] = [
      { partition: 0, replicas: ["r2", "r3", "r4"].map((id) => ({ id, location: null })), leader: "r3", leaderEpoch: 4 },
      { partition: 1, replicas: ["r1", "r2", "r5"].map((id) => ({ id, location: "weur" })), leader: null, leaderEpoch: -1 },
    ];
    expect(replicaIdsOf(placements, 0, rf3)).toEqual(["r3", "r2", "r4"]);
    expect(replicaIdsOf(placements, 1, rf3)).toEqual(["r1", "r2", "r5"]);
    // A partition the placements do not name (a topic that grew, not recorded yet).
    expect(replicaIdsOf(placements, 2, rf3)).toEqual(["r1", "r2", "r3"]);
    // A recorded leader that is no replica any more is not put first.
    expect(replicaIdsOf([{ ...placements[0]!, leader: "r1" }], 0, rf3)).toEqual(["r2", "r3", "r4"]);
  });
});

describe("initialReplicas", () => {
  it("is r1..rf with the replica.locations hints in order, null without", () => {
    expect(initialReplicas({ "replication.factor": 3, "replica.locations": "wnam,enam,weur" })).toEqual([
      { id: "r1", location: "wnam" },
      { id: "r2", location: "enam" },
      { id: "r3", location: "weur" },
    ]);
    expect(initialReplicas(rf3)).toEqual([
      { id: "r1", location: null },
      { id: "r2", location: null },
      { id: "r3", location: null },
    ]);
  });
});

describe("malformedPlacementRecord", () => {
  const ok = (c: object) => malformedPlacementRecord({ type: "partitionChange", topicId: "t", partition: 0, ...c } as MetadataCommand);
  it("accepts replicas, a leader with its epoch, or both", () => {
    expect(
      ok({
        replicas: [
          { id: "r2", location: null },
          { id: "r4", location: "apac" },
        ],
      }),
    ).toBeNull();
    expect(ok({ leader: "r2", leaderEpoch: 3 })).toBeNull();
    expect(ok({ replicas: [{ id: "r2", location: null }], leader: "r2", leaderEpoch: 0 })).toBeNull();
  });
  it("refuses nothing to change, a leader without its epoch, bad ids, locations, duplicates and partitions", () => {
    for (const bad of [
      {},
      { leader: "r2" },
      { leaderEpoch: 2 },
      { leader: "x", leaderEpoch: 2 },
      { leader: "r2", leaderEpoch: -1 },
      { replicas: [] },
      { replicas: [{ id: "r0", location: null }] },
      { replicas: [{ id: "r2", location: "mars" }] },
      {
        replicas: [
          { id: "r2", location: null },
          { id: "r2", location: null },
        ],
      },
      { partition: -1, leader: "r1", leaderEpoch: 1 },
    ]) {
      expect(ok(bad), JSON.stringify(bad)).not.toBeNull();
    }
    // Other record types are not this check's business.
    expect(malformedPlacementRecord({ type: "importDone" })).toBeNull();
  });
});
