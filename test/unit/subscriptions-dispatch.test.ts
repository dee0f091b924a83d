/**
 * The subscription types' pickers: exclusive admission, failover's active consumer (Pulsar's
 * current rule), shared round-robin with priority levels, Key_Shared auto-split hash ranges and
 * draining hashes (PIP-379), and the permit modes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admitConsumer, AutoSplitHashRanges, type ConsumerRef, failoverActive, InFlightHashes, KEY_HASH_RANGE, Permits, RoundRobin } from "../../src/subscriptions/index.ts";

const ref = (id: string, joinSeq: number, priorityLevel = 0, name = id): ConsumerRef => ({ id, name, priorityLevel, joinSeq });

describe("admission", () => {
  it("exclusive refuses a second consumer with CONSUMER_BUSY; another type is refused too", () => {
    expect(admitConsumer("exclusive", 0, "exclusive")).toBeNull();
    expect(admitConsumer("exclusive", 1, "exclusive")?.code).toBe("CONSUMER_BUSY");
    expect(admitConsumer("shared", 2, "failover")).toMatchObject({ code: "CONSUMER_BUSY", details: { subscriptionType: "shared" } });
    expect(admitConsumer("shared", 2, "shared")).toBeNull();
    expect(admitConsumer("shared", 0, "failover")).toBeNull();
  });
});

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("failover active consumer", { timeout: 30_000 }, () => {
  it("non-partitioned: the first to join stays active whatever joins later (no flapping, PR #4604)", () => {
    const a = ref("a", 0, 0, "zeta");
    const b = ref("b", 1, 0, "alpha");
    expect(failoverActive([a], 0, false)).toBe("a");
    expect(failoverActive([a, b], 0, false)).toBe("a");
    expect(failoverActive([b, a], 0, false)).toBe("a");
    expect(failoverActive([b], 0, false)).toBe("b");
    expect(failoverActive([], 0, false)).toBeNull();
  });

  it("partitioned: highest priority level, sorted by name, partition i -> i % n", () => {
    const cs = [ref("x", 0, 0, "c2"), ref("y", 1, 0, "c1"), ref("z", 2, 1, "c0")];
    expect([0, 1, 2, 3].map((p) => failoverActive(cs, p, true))).toEqual(["y", "x", "y", "x"]);
    // only lower-priority consumers left: they take over
    expect(failoverActive([ref("z", 2, 1, "c0")], 3, true)).toBe("z");
  });

  it("partitioned: the answer does not depend on the order consumers are listed (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.string({ maxLength: 3 }), fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 6, selector: (t) => t[0] }),
        fc.integer({ min: 0, max: 7 }),
        (specs, p) => {
          const cs = specs.map(([n, pl], i) => ref(`id${i}`, i, pl, n));
          expect(failoverActive([...cs].reverse(), p, true)).toBe(failoverActive(cs, p, true));
        },
      ),
    );
  });
});

describe("shared round-robin", () => {
  it("rotates over consumers with permits, higher priority first", () => {
    const rr = new RoundRobin();
    const cs = [ref("a", 0), ref("b", 1), ref("c", 2)];
    const all = () => true;
    expect([1, 2, 3, 4].map(() => rr.pick(cs, all))).toEqual(["a", "b", "c", "a"]);
    expect(rr.pick(cs, (id) => id !== "b")).toBe("c");
    expect(rr.pick(cs, () => false)).toBeNull();
    const prio = [ref("a", 0, 1), ref("b", 1, 0)];
    expect([rr.pick(prio, all), rr.pick(prio, all), rr.pick(prio, (id) => id === "a")]).toEqual(["b", "b", "a"]);
  });
});

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("key_shared auto-split hash ranges", { timeout: 30_000 }, () => {
  it("splits the largest range and hands a leaver's range to its neighbour", () => {
    const r = new AutoSplitHashRanges();
    r.add("a");
    expect(r.ranges()).toEqual([{ start: 0, end: 65535, consumerId: "a" }]);
    r.add("b");
    expect(r.ranges()).toEqual([
      { start: 0, end: 32767, consumerId: "a" },
      { start: 32768, end: 65535, consumerId: "b" },
    ]);
    r.add("c");
    expect(r.ranges().map((x) => x.consumerId)).toEqual(["a", "c", "b"]);
    expect(r.ranges()[1]).toEqual({ start: 16384, end: 32767, consumerId: "c" });
    r.remove("c"); // c's range goes to the range just after it: b's
    expect(r.ranges()).toEqual([
      { start: 0, end: 16383, consumerId: "a" },
      { start: 16384, end: 65535, consumerId: "b" },
    ]);
    r.remove("b"); // the last range goes to the range just before it
    expect(r.ranges()).toEqual([{ start: 0, end: 65535, consumerId: "a" }]);
  });

  it("always covers the space with one range per consumer, and is sticky (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 7 })), { maxLength: 60 }),
        fc.array(fc.integer({ min: 0, max: KEY_HASH_RANGE - 1 }), { minLength: 1, maxLength: 20 }),
        (ops, hashes) => {
          const r = new AutoSplitHashRanges();
          const members = new Set<string>();
          for (const [join, n] of ops) {
            const id = `c${n}`;
            const before = hashes.map((h) => r.owner(h));
            if (join) {
              r.add(id);
              members.add(id);
            } else {
              r.remove(id);
              members.delete(id);
            }
            const rs = r.ranges();
            expect(new Set(rs.map((x) => x.consumerId))).toEqual(members);
            expect(rs.length).toBe(members.size);
            if (rs.length > 0) {
              expect(rs[0]!.start).toBe(0);
              expect(rs.at(-1)!.end).toBe(KEY_HASH_RANGE - 1);
              for (let i = 1; i < rs.length; i++) expect(rs[i]!.start).toBe(rs[i - 1]!.end + 1);
            }
            // sticky: a hash changes owner only to the joiner, or away from the leaver
            hashes.forEach((h, i) => {
              const now = r.owner(h);
              if (before[i] !== now && before[i] !== null) expect(join ? now === id : before[i] === id).toBe(true);
            });
          }
        },
      ),
    );
  });
});

describe("draining hashes", () => {
  it("a hash held by one consumer is refused to another until all its messages leave flight", () => {
    const d = new InFlightHashes();
    d.add(7, "a");
    d.add(7, "a");
    expect(d.allows(7, "b")).toBe(false);
    expect(d.allows(7, "a")).toBe(true);
    d.remove(7);
    expect(d.allows(7, "b")).toBe(false);
    d.remove(7);
    expect(d.allows(7, "b")).toBe(true);
    expect(() => d.remove(7)).toThrow();
  });
});

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("permits", { timeout: 30_000 }, () => {
  it("window mode: never negative, available + in flight = receiver queue (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(fc.boolean(), { maxLength: 50 }), (q, ops) => {
        const p = new Permits({ kind: "window", receiverQueueSize: q });
        for (const take of ops) {
          if (take && p.available > 0) p.take();
          else if (!take && p.unacked > 0) p.release();
          expect(p.available).toBeGreaterThanOrEqual(0);
          expect(p.available + p.unacked).toBe(q);
        }
        expect(p.grant(1)).toBe(false);
      }),
    );
  });

  it("credit mode: only grants add permits; releases do not", () => {
    const p = new Permits({ kind: "credit" });
    expect(p.available).toBe(0);
    expect(p.grant(2)).toBe(true);
    p.take();
    p.release();
    expect(p.available).toBe(1);
    expect(p.grant(0)).toBe(false);
    expect(p.grant(1.5)).toBe(false);
    expect(() => new Permits({ kind: "window", receiverQueueSize: 0 })).toThrow(RangeError);
  });
});
