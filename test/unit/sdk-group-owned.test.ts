import { describe, expect, it } from "vitest";
import { OwnedPartitions, partitionKey, partitionsOf } from "../../sdk/src/group-consumer/owned.ts";

const T = "public/default/orders";
const U = "acme/prod/audit";
const k = (topic: string, partition: number) => partitionKey(topic, partition);

/** A state owning `partitions` of T at the given offsets (committed = offset). */
function owning(offsets: Record<number, number | null>): OwnedPartitions {
  const s = new OwnedPartitions();
  const partitions = Object.keys(offsets).map(Number);
  s.setTarget([{ topic: T, partitions }]);
  s.beginAdd();
  for (const p of partitions) s.take({ topic: T, partition: p, offset: offsets[p]!, committedOffset: offsets[p]! });
  s.endAdd(partitions.map((p) => k(T, p)));
  return s;
}

describe("OwnedPartitions (pure state of the group consumer)", () => {
  it("reports partitions being added as owned, sorted by topic and partition, until they are taken or dropped", () => {
    const s = new OwnedPartitions();
    s.setTarget([
      { topic: T, partitions: [2, 0] },
      { topic: U, partitions: [1] },
    ]);
    expect(s.sameAsTarget()).toBe(false);
    expect(s.wire()).toEqual([]);
    const added = s.beginAdd();
    expect(added.map(([key]) => key)).toEqual([k(T, 2), k(T, 0), k(U, 1)]);
    expect(s.wire()).toEqual([
      { topic: U, partitions: [1] },
      { topic: T, partitions: [0, 2] },
    ]);
    expect(s.assignment()).toEqual([]);
    // The assignment moves on while the offsets are fetched: U-1 is no longer ours.
    s.setTarget([{ topic: T, partitions: [0, 2] }]);
    expect(s.canTake({ topic: U, partition: 1 })).toBe(false);
    expect(s.canTake({ topic: T, partition: 0 })).toBe(true);
    s.take({ topic: T, partition: 0, offset: 5, committedOffset: 5 });
    s.take({ topic: T, partition: 2, offset: null, committedOffset: null });
    expect(s.canTake({ topic: T, partition: 0 })).toBe(false);
    s.endAdd(added.map(([key]) => key));
    expect(s.wire()).toEqual([{ topic: T, partitions: [0, 2] }]);
    expect(s.sameAsTarget()).toBe(true);
    expect(s.assignment()).toEqual([
      { topic: "orders", partition: 0 },
      { topic: "orders", partition: 2 },
    ]);
    // Partition 2 has no position (autoOffsetReset "none"): not fetched until seek.
    expect(s.active()).toEqual([{ topic: T, partition: 0 }]);
    expect(s.fetchPosition(k(T, 2))).toBeUndefined();
    s.reposition(k(T, 2), 9);
    expect(s.active()).toEqual([
      { topic: T, partition: 0 },
      { topic: T, partition: 2 },
    ]);
    expect(s.fetchPosition(k(T, 2))).toEqual({ topic: T, partition: 2, offset: 9 });
  });

  it("revocation marks partitions stale for a delivery in progress; release forgets them", () => {
    const s = owning({ 0: 0, 1: 0 });
    const start0 = s.snapshot(k(T, 0));
    const start1 = s.snapshot(k(T, 1));
    s.setTarget([{ topic: T, partitions: [1] }]);
    expect(s.beginRevoke()).toEqual([k(T, 0)]);
    expect(s.isStale(k(T, 0), start0)).toBe(true);
    expect(s.isStale(k(T, 1), start1)).toBe(false);
    // The message in progress still counts as processed: it is committed before the release.
    s.markProcessed(k(T, 0), start0, 4);
    expect(s.uncommitted([k(T, 0)])).toEqual([{ topic: T, partition: 0, offset: 4 }]);
    s.release([k(T, 0)]);
    expect(s.keys()).toEqual([k(T, 1)]);
    expect(s.sameAsTarget()).toBe(true);
  });

  it("a seek during a delivery wins over the message that finishes afterwards", () => {
    const s = owning({ 0: 10 });
    const start = s.snapshot(k(T, 0));
    s.reposition(k(T, 0), 3);
    expect(s.isStale(k(T, 0), start)).toBe(true);
    s.markProcessed(k(T, 0), start, 11);
    expect(s.uncommitted()).toEqual([{ topic: T, partition: 0, offset: 3 }]);
  });

  it("pause bumps the generation and leaves the fetch set; resume returns only what was paused", () => {
    const s = owning({ 0: 0, 1: 0 });
    const start = s.snapshot(k(T, 1));
    s.pause(s.select([{ topic: "orders", partitions: [1] }]));
    expect(s.isStale(k(T, 1), start)).toBe(true);
    expect(s.active()).toEqual([{ topic: T, partition: 0 }]);
    expect(s.paused()).toEqual([{ topic: "orders", partition: 1 }]);
    expect(s.resume(s.select([{ topic: "orders" }]))).toEqual([k(T, 1)]);
    expect(s.paused()).toEqual([]);
    expect(s.active()).toEqual([
      { topic: T, partition: 0 },
      { topic: T, partition: 1 },
    ]);
  });

  it("commits move the committed offset; nothing is uncommitted twice", () => {
    const s = owning({ 0: 2, 1: 7 });
    s.markProcessed(k(T, 0), s.snapshot(k(T, 0)), 5);
    expect(s.uncommitted()).toEqual([{ topic: T, partition: 0, offset: 5 }]);
    s.markCommitted([{ topic: T, partition: 0, offset: 5 }]);
    expect(s.uncommitted()).toEqual([]);
  });

  it("losing everything marks all partitions revoking and clear forgets the target too", () => {
    const s = owning({ 0: 0, 3: 1 });
    const start = s.snapshot(k(T, 3));
    expect(s.beginLose()).toEqual([k(T, 0), k(T, 3)]);
    expect(s.isStale(k(T, 3), start)).toBe(true);
    s.clear();
    expect([s.keys(), s.wire(), s.sameAsTarget()]).toEqual([[], [], true]);
    expect(partitionsOf([k(U, 4), k(T, 3)])).toEqual([
      { topic: U, partition: 4 },
      { topic: "orders", partition: 3 },
    ]);
  });
});
