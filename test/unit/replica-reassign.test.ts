/** Replica ids of a reassignment (docs/RAFT.md "Replica reassignment"): naming and the next id. */
import { describe, expect, it } from "vitest";
import { nextReplicaId, replicaIndexOf, replicaObjectNameAt } from "../../src/partition/rpc.ts";

describe("replica ids", () => {
  it("rN is index N-1; its object name follows from the id alone (r1 is the partition object)", () => {
    expect(replicaIndexOf("r1")).toBe(0);
    expect(replicaIndexOf("r4")).toBe(3);
    expect(replicaIndexOf("r12")).toBe(11);
    for (const bad of ["r0", "r", "x1", "R2", "r01", 2, null, "r12345"]) expect(replicaIndexOf(bad), String(bad)).toBeNull();
    expect(replicaObjectNameAt("t", 0, replicaIndexOf("r1")!)).toBe("t/0");
    expect(replicaObjectNameAt("t", 0, replicaIndexOf("r4")!)).toBe("t/0/r4");
  });

  it("a new replica takes the id after every id in the configuration, never one of them", () => {
    expect(nextReplicaId(["r1", "r2", "r3"])).toBe("r4");
    expect(nextReplicaId(["r1", "r3", "r4"])).toBe("r5");
    expect(nextReplicaId(["r1", "r4", "r5", "r6"])).toBe("r7");
    expect(nextReplicaId(["r3", "r1"])).toBe("r4");
  });
});
