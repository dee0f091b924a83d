/**
 * The metadata store's calls to a replicated partition (src/partition/replica-admin.ts; docs/RAFT.md
 * "Replicated partitions"), against a fake namespace: describe picks the leader's view (highest
 * term), else the highest high watermark; configs go to the next replica when one is down;
 * destroy goes on without r1 only when the configs say the partition is replicated.
 */
import { describe, expect, it } from "vitest";
import { describePartition, destroyPartition, pushPartitionConfigs } from "../../src/partition/replica-admin.ts";
import type { PartitionRpc } from "../../src/partition/rpc.ts";
import type { TopicConfigs } from "../../src/protocol/types.ts";

type Fake = { role?: string; term?: number; hw?: number; down?: boolean; calls: string[] };

/** A namespace whose objects are `replicas[name]` (r1 = "t/0", r2 = "t/0/r2", ...). */
function fakeNs(replicas: Record<string, Fake>) {
  const stub = (name: string): PartitionRpc => {
    const r = replicas[name] ?? { down: true, calls: [] };
    const live = (what: string) => {
      r.calls.push(what);
      if (r.down === true) throw new Error(`${name} is down`);
    };
    return {
      replicaStatus: async () => {
        live("status");
        return { ok: true, replica: { role: r.role ?? "follower", leaderEpoch: r.term ?? 1 } };
      },
      describe: async () => {
        live("describe");
        return { ok: true, partition: { partition: 0, logStartOffset: 0, highWatermark: r.hw ?? 0, logEndOffset: r.hw ?? 0, recordCount: r.hw ?? 0, bytes: 0 } };
      },
      updateConfigs: async () => {
        live("configs");
        return { ok: true };
      },
      destroy: async () => {
        live("destroy");
        return { ok: true };
      },
    } as unknown as PartitionRpc;
  };
  return { getByName: stub, idFromName: (n: string) => n, get: (id: string) => stub(id) } as unknown as Parameters<typeof describePartition>[0];
}

const RF3 = { "replication.factor": 3 } as Partial<TopicConfigs>;

describe("replica-admin", () => {
  it("describe answers the leader's view, the highest term when two say they lead", async () => {
    const ns = fakeNs({
      "t/0": { role: "leader", term: 2, hw: 3, calls: [] },
      "t/0/r2": { role: "leader", term: 3, hw: 9, calls: [] },
      "t/0/r3": { role: "follower", term: 3, hw: 10, calls: [] },
    });
    expect(await describePartition(ns, "t", 0, RF3)).toMatchObject({ ok: true, partition: { highWatermark: 9 } });
  });

  it("describe without a leader answers the highest high watermark among the replicas that answer; UNAVAILABLE when none does", async () => {
    const ns = fakeNs({ "t/0": { hw: 2, calls: [] }, "t/0/r2": { hw: 50, down: true, calls: [] }, "t/0/r3": { hw: 7, calls: [] } });
    expect(await describePartition(ns, "t", 0, RF3)).toMatchObject({ ok: true, partition: { highWatermark: 7 } });
    const none = fakeNs({ "t/0": { down: true, calls: [] }, "t/0/r2": { down: true, calls: [] }, "t/0/r3": { down: true, calls: [] } });
    expect(await describePartition(none, "t", 0, RF3)).toMatchObject({ ok: false, code: "UNAVAILABLE" });
  });

  it("describe at replication.factor 1 asks the partition object only", async () => {
    const r1: Fake = { hw: 4, calls: [] };
    expect(await describePartition(fakeNs({ "t/0": r1 }), "t", 0, {})).toMatchObject({ ok: true, partition: { highWatermark: 4 } });
    expect(r1.calls).toEqual(["describe"]);
  });

  it("configs go to r1, then r2 when r1 is down; all down throws", async () => {
    const r1: Fake = { down: true, calls: [] };
    const r2: Fake = { calls: [] };
    const r3: Fake = { calls: [] };
    expect(await pushPartitionConfigs(fakeNs({ "t/0": r1, "t/0/r2": r2, "t/0/r3": r3 }), "t", 0, RF3 as TopicConfigs)).toEqual({ ok: true });
    expect([r1.calls, r2.calls, r3.calls]).toEqual([["configs"], ["configs"], []]);
    const all = fakeNs({ "t/0": { down: true, calls: [] }, "t/0/r2": { down: true, calls: [] }, "t/0/r3": { down: true, calls: [] } });
    await expect(pushPartitionConfigs(all, "t", 0, RF3 as TopicConfigs)).rejects.toThrow(/down/);
  });

  it("destroy without r1: r2 and r3 directly when the configs say replicated; throws when they are not known", async () => {
    const r2: Fake = { calls: [] };
    const r3: Fake = { down: true, calls: [] };
    expect(await destroyPartition(fakeNs({ "t/0": { down: true, calls: [] }, "t/0/r2": r2, "t/0/r3": r3 }), "t", 0, RF3)).toEqual({ ok: true, unreachable: ["r1", "r3"] });
    expect(r2.calls).toEqual(["destroy"]);
    const r2b: Fake = { calls: [] };
    await expect(destroyPartition(fakeNs({ "t/0": { down: true, calls: [] }, "t/0/r2": r2b }), "t", 0)).rejects.toThrow(/down/);
    expect(r2b.calls).toEqual([]);
  });
});
