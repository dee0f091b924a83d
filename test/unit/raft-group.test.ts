/**
 * The pure parts of Raft member objects: group configuration (src/raft/group.ts) and the fault
 * settings and gate of durable-objects/raft/faults.ts.
 */
import { describe, expect, it } from "vitest";
import { checkFaults, faultsEnabled, FAULTS_IN_BUILD, linkDropped } from "../../durable-objects/raft/faults.ts";
import { raftMemberName, resolveGroupConfig } from "../../src/raft/group.ts";

describe("resolveGroupConfig", () => {
  const base = { groupId: "metadata", members: [{ id: "m1" }, { id: "m2", locationHint: "weur" as const }, { id: "m3" }], stateMachine: "sequence" };

  it("fills in the defaults (100 ms ticks, 10-tick election timeout, heartbeat every tick, quiescence on with a 5 s quiesced tick)", () => {
    expect(resolveGroupConfig(base)).toEqual({
      groupId: "metadata",
      members: [{ id: "m1" }, { id: "m2", locationHint: "weur" }, { id: "m3" }],
      stateMachine: "sequence",
      tickMs: 100,
      electionTicks: 10,
      heartbeatTicks: 1,
      compactEveryEntries: 1000,
      requestTimeoutMs: 5000,
      quiesce: true,
      quiescedTickMs: 5000,
    });
  });

  it("refuses what cannot run", () => {
    const refused = (extra: object) => resolveGroupConfig({ ...base, ...extra });
    expect(refused({ groupId: "Bad/Id" })).toMatch(/groupId/);
    expect(refused({ members: [] })).toMatch(/1 to 7 members/);
    expect(refused({ members: Array.from({ length: 8 }, (_, i) => ({ id: `m${i}` })) })).toMatch(/1 to 7 members/);
    expect(refused({ members: [{ id: "m1" }, { id: "m1" }] })).toMatch(/listed twice/);
    expect(refused({ members: [{ id: "m1", locationHint: "mars" }] })).toMatch(/unknown location hint/);
    expect(refused({ tickMs: 5 })).toMatch(/tickMs must be an integer in \[10, 10000\]/);
    expect(refused({ electionTicks: 3, heartbeatTicks: 3 })).toMatch(/heartbeatTicks \(3\) must be < electionTicks \(3\)/);
    expect(refused({ stateMachine: "" })).toMatch(/stateMachine/);
    expect(refused({ quiesce: "yes" })).toMatch(/quiesce must be a boolean/);
    expect(refused({ tickMs: 100, quiescedTickMs: 50 })).toMatch(/quiescedTickMs \(50\) must be >= tickMs \(100\)/);
    expect(refused({ quiescedTickMs: 700_000 })).toMatch(/quiescedTickMs must be an integer/);
  });

  it("names a member's object after its group", () => {
    expect(raftMemberName("metadata", "m2")).toBe("metadata/m2");
  });
});

describe("fault settings", () => {
  it("normalises and checks", () => {
    expect(checkFaults({})).toEqual({});
    expect(checkFaults({ crashed: false, paused: false, dropRate: 0, delayMs: 0 })).toEqual({});
    expect(checkFaults({ crashed: true, dropRate: 0.25, delayMs: 40 })).toEqual({ crashed: true, dropRate: 0.25, delayMs: 40 });
    expect(checkFaults({ dropRate: 1.5 })).toMatch(/dropRate/);
    expect(checkFaults({ delayMs: 1.5 })).toMatch(/delayMs/);
    expect(checkFaults({ delayMs: 60_001 })).toMatch(/delayMs/);
    expect(checkFaults({ paused: "yes" as unknown as boolean })).toMatch(/paused/);
    // Link faults: per-peer drops, deduplicated; an empty list is no fault.
    expect(checkFaults({ dropTo: ["r2", "r3", "r2"], dropFrom: [] })).toEqual({ dropTo: ["r2", "r3"] });
    expect(checkFaults({ dropFrom: ["r1"] })).toEqual({ dropFrom: ["r1"] });
    expect(checkFaults({ dropTo: "r2" as unknown as string[] })).toMatch(/dropTo/);
    expect(checkFaults({ dropFrom: [""] })).toMatch(/dropFrom/);
    expect(checkFaults({ dropFrom: Array.from({ length: 17 }, (_, i) => `m${i}`) })).toMatch(/dropFrom/);
    expect(linkDropped({ dropTo: ["r2"] }, "to", "r2")).toBe(true);
    expect(linkDropped({ dropTo: ["r2"] }, "from", "r2")).toBe(false);
    expect(linkDropped({ dropFrom: ["r2"] }, "from", "r3")).toBe(false);
  });

  it("need EDGELOG_RAFT_FAULTS = 1 in a non-production build (this test runs unbundled: NODE_ENV is not production)", () => {
    expect(FAULTS_IN_BUILD).toBe(true);
    expect(faultsEnabled({ EDGELOG_RAFT_FAULTS: "1" })).toBe(true);
    expect(faultsEnabled({})).toBe(false);
    expect(faultsEnabled({ EDGELOG_RAFT_FAULTS: "true" })).toBe(false);
  });
});
