import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Assignment, countOf, partitionsOf, tpKey } from "../../src/groups/assignment.ts";
import { ASSIGNORS, type AssignorInput, type AssignorMember, type GroupAssignment, rangeAssign, roundRobinAssign, stickyAssign } from "../../src/groups/assignors.ts";
import type { AssignorName } from "../../src/protocol/groups.ts";

const NAMES = Object.keys(ASSIGNORS) as AssignorName[];
const STICKY: AssignorName[] = ["sticky", "cooperative-sticky"];

function member(memberId: string, topics: string[], current: Assignment = {}, instanceId: string | null = null): AssignorMember {
  return { memberId, instanceId, topics, current };
}

/** Every partition of a topic that has at least one subscriber. */
function expectedPartitions(input: AssignorInput): Set<string> {
  const out = new Set<string>();
  for (const m of input.members) {
    for (const t of m.topics) for (let p = 0; p < (input.partitionCounts[t] ?? 0); p++) out.add(tpKey(t, p));
  }
  return out;
}

/** Validity, no double ownership, no gap. */
function checkComplete(input: AssignorInput, out: GroupAssignment): void {
  expect(Object.keys(out).sort()).toEqual(input.members.map((m) => m.memberId).sort());
  const owner = new Map<string, string>();
  for (const m of input.members) {
    for (const { topic, partition } of partitionsOf(out[m.memberId] ?? {})) {
      const k = tpKey(topic, partition);
      expect(owner.get(k), `partition ${topic}:${partition} assigned twice`).toBeUndefined();
      owner.set(k, m.memberId);
      expect(m.topics).toContain(topic);
      expect(partition).toBeLessThan(input.partitionCounts[topic] ?? 0);
    }
  }
  expect(new Set(owner.keys())).toEqual(expectedPartitions(input));
}

function counts(out: GroupAssignment): number[] {
  return Object.values(out).map(countOf);
}

function spread(out: GroupAssignment): number {
  const c = counts(out);
  return c.length === 0 ? 0 : Math.max(...c) - Math.min(...c);
}

/** No partition could move to an eligible member owning two or more fewer (sticky's balance under any subscriptions). */
function checkLocallyBalanced(input: AssignorInput, out: GroupAssignment): void {
  for (const a of input.members) {
    const na = countOf(out[a.memberId] ?? {});
    for (const { topic } of partitionsOf(out[a.memberId] ?? {})) {
      for (const b of input.members) {
        if (b.topics.includes(topic)) expect(countOf(out[b.memberId] ?? {})).toBeGreaterThanOrEqual(na - 1);
      }
    }
  }
}

/** Partition -> owner map. */
function owners(out: GroupAssignment): Map<string, string> {
  const m = new Map<string, string>();
  for (const [id, a] of Object.entries(out)) for (const { topic, partition } of partitionsOf(a)) m.set(tpKey(topic, partition), id);
  return m;
}

// ---- generators ----

const topicsArb = fc
  .uniqueArray(fc.constantFrom("a", "b", "c", "d"), { minLength: 1, maxLength: 4 })
  .chain((names) => fc.tuple(fc.constant(names), fc.array(fc.integer({ min: 1, max: 12 }), { minLength: names.length, maxLength: names.length })))
  .map(([names, ns]) => Object.fromEntries(names.map((n, i) => [n, ns[i] as number])) as Record<string, number>);

const memberIdsArb = fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,6}$/), { minLength: 1, maxLength: 9 });

/** Members that all subscribe to every topic. */
const equalInputArb = fc.tuple(topicsArb, memberIdsArb).map(([partitionCounts, ids]) => ({
  partitionCounts,
  members: ids.map((id) => member(id, Object.keys(partitionCounts))),
}));

/** Members with random non-empty subscriptions (possibly to a topic that does not exist). */
const unequalInputArb = fc
  .tuple(topicsArb, memberIdsArb)
  .chain(([partitionCounts, ids]) =>
    fc
      .array(fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "zz"), { minLength: 1, maxLength: 5 }), { minLength: ids.length, maxLength: ids.length })
      .map((subs) => ({ partitionCounts, members: ids.map((id, i) => member(id, subs[i] as string[])) })),
  );

describe("assignors: fixed examples (Kafka's documented outcomes)", () => {
  it("range: consecutive ranges per topic, first members get the extra partition", () => {
    // Kafka's RangeAssignor javadoc: C0, C1 subscribed to t0, t1 with 3 partitions each.
    const out = rangeAssign({ partitionCounts: { t0: 3, t1: 3 }, members: [member("C1", ["t0", "t1"]), member("C0", ["t0", "t1"])] });
    expect(out).toEqual({ C0: { t0: [0, 1], t1: [0, 1] }, C1: { t0: [2], t1: [2] } });
  });

  it("roundrobin: partitions dealt in turn over sorted members", () => {
    // Kafka's RoundRobinAssignor javadoc example.
    const out = roundRobinAssign({ partitionCounts: { t0: 3, t1: 3 }, members: [member("C0", ["t0", "t1"]), member("C1", ["t0", "t1"])] });
    expect(out).toEqual({ C0: { t0: [0, 2], t1: [1] }, C1: { t0: [1], t1: [0, 2] } });
  });

  it("roundrobin with unequal subscriptions skips unsubscribed members", () => {
    // Kafka's javadoc: C0 {t0}, C1 {t0,t1}, C2 {t0,t1,t2}; t0 1 partition, t1 2, t2 3.
    const out = roundRobinAssign({
      partitionCounts: { t0: 1, t1: 2, t2: 3 },
      members: [member("C0", ["t0"]), member("C1", ["t0", "t1"]), member("C2", ["t0", "t1", "t2"])],
    });
    expect(out).toEqual({ C0: { t0: [0] }, C1: { t1: [0] }, C2: { t1: [1], t2: [0, 1, 2] } });
  });

  it("static members sort before dynamic ones by instance id (range)", () => {
    const out = rangeAssign({ partitionCounts: { t: 3 }, members: [member("a", ["t"]), member("z", ["t"], {}, "i-1")] });
    expect(out).toEqual({ z: { t: [0, 1] }, a: { t: [2] } });
  });

  it("sticky: a joining member takes partitions only from the most loaded members", () => {
    const current = stickyAssign({ partitionCounts: { t: 6 }, members: [member("A", ["t"]), member("B", ["t"])] });
    expect(current).toEqual({ A: { t: [0, 2, 4] }, B: { t: [1, 3, 5] } });
    const next = stickyAssign({
      partitionCounts: { t: 6 },
      members: [member("A", ["t"], current.A), member("B", ["t"], current.B), member("C", ["t"])],
    });
    expect(next).toEqual({ A: { t: [0, 2] }, B: { t: [1, 3] }, C: { t: [4, 5] } });
  });

  it("every assignor gives nothing for a topic that does not exist and handles no members", () => {
    for (const name of NAMES) {
      expect(ASSIGNORS[name].assign({ partitionCounts: {}, members: [member("A", ["missing"])] })).toEqual({ A: {} });
      expect(ASSIGNORS[name].assign({ partitionCounts: { t: 3 }, members: [] })).toEqual({});
    }
  });
});

describe("assignors: properties (fast-check)", () => {
  it("complete, no double ownership, deterministic under input order, for every assignor and any subscriptions", () => {
    fc.assert(
      fc.property(unequalInputArb, fc.constantFrom(...NAMES), fc.integer(), (input, name, seed) => {
        const out = ASSIGNORS[name].assign(input);
        checkComplete(input, out);
        // Determinism: a shuffled member order (and reassigned object identities) gives the same result.
        const shuffled = [...input.members].sort((a, b) => ((hash(a.memberId) ^ seed) >>> 0) - ((hash(b.memberId) ^ seed) >>> 0));
        expect(ASSIGNORS[name].assign({ ...input, members: shuffled.map((m) => ({ ...m })) })).toEqual(out);
      }),
      { numRuns: 300 },
    );
  });

  it("balance with equal subscriptions: counts differ by at most 1 (roundrobin, sticky, cooperative-sticky)", () => {
    fc.assert(
      fc.property(equalInputArb, fc.constantFrom<AssignorName>("roundrobin", "sticky", "cooperative-sticky"), (input, name) => {
        const out = ASSIGNORS[name].assign(input);
        expect(spread(out)).toBeLessThanOrEqual(1);
      }),
      { numRuns: 300 },
    );
  });

  it("range is balanced per topic (and overall for one topic)", () => {
    fc.assert(
      fc.property(equalInputArb, (input) => {
        const out = rangeAssign(input);
        for (const topic of Object.keys(input.partitionCounts)) {
          const perTopic = Object.values(out).map((a) => a[topic]?.length ?? 0);
          expect(Math.max(...perTopic) - Math.min(...perTopic)).toBeLessThanOrEqual(1);
          // Consecutive ranges: each member's partitions of a topic are contiguous.
          for (const a of Object.values(out)) {
            const ps = a[topic] ?? [];
            ps.forEach((p, i) => {
              if (i > 0) expect(p).toBe((ps[i - 1] as number) + 1);
            });
          }
        }
        if (Object.keys(input.partitionCounts).length === 1) expect(spread(out)).toBeLessThanOrEqual(1);
      }),
      { numRuns: 200 },
    );
  });

  it("sticky is locally balanced under any subscriptions", () => {
    fc.assert(
      fc.property(unequalInputArb, (input) => checkLocallyBalanced(input, stickyAssign(input))),
      { numRuns: 300 },
    );
  });

  type Op = { kind: "join"; id: string } | { kind: "leave"; index: number };
  const opsArb = fc.array(
    fc.oneof(
      fc.stringMatching(/^[a-z0-9]{1,6}$/).map((id): Op => ({ kind: "join", id: `n-${id}` })),
      fc.nat().map((index): Op => ({ kind: "leave", index })),
    ),
    { minLength: 1, maxLength: 12 },
  );

  it("stickiness over sequences of joins and leaves (equal subscriptions): only the necessary partitions move", () => {
    fc.assert(
      fc.property(equalInputArb, opsArb, fc.constantFrom(...STICKY), (initial, ops, name) => {
        const assign = ASSIGNORS[name].assign;
        const topics = Object.keys(initial.partitionCounts);
        let out = assign(initial);
        let ids = initial.members.map((m) => m.memberId);
        for (const op of ops) {
          const before = owners(out);
          let joined: string | undefined;
          let left: string | undefined;
          if (op.kind === "join") {
            if (ids.includes(op.id)) continue;
            joined = op.id;
            ids = [...ids, op.id];
          } else {
            if (ids.length <= 1) continue;
            left = ids[op.index % ids.length] as string;
            ids = ids.filter((id) => id !== left);
          }
          const input = { partitionCounts: initial.partitionCounts, members: ids.map((id) => member(id, topics, out[id] ?? {})) };
          const next = assign(input);
          checkComplete(input, next);
          expect(spread(next)).toBeLessThanOrEqual(1);
          const after = owners(next);
          let moved = 0;
          for (const [k, prev] of before) {
            const now = after.get(k) as string;
            if (prev === now) continue;
            moved++;
            if (joined !== undefined) expect(now, "on a join, moved partitions go to the new member").toBe(joined);
            if (left !== undefined) expect(prev, "on a leave, only the leaver's partitions move").toBe(left);
          }
          if (joined !== undefined) expect(moved).toBe(countOf(next[joined] ?? {}));
          if (left !== undefined) expect(moved).toBe(countOf(out[left] ?? {}));
          out = next;
        }
      }),
      { numRuns: 200 },
    );
  });

  it("sticky keeps every still-valid partition when the membership does not change", () => {
    fc.assert(
      fc.property(unequalInputArb, fc.constantFrom(...STICKY), (input, name) => {
        const first = ASSIGNORS[name].assign(input);
        const again = ASSIGNORS[name].assign({ ...input, members: input.members.map((m) => ({ ...m, current: first[m.memberId] ?? {} })) });
        expect(again).toEqual(first);
      }),
      { numRuns: 200 },
    );
  });
});

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h;
}
