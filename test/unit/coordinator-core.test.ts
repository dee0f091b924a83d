import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Assignment, countOf, equals, keysOf, partitionsOf, tpKey } from "../../src/groups/assignment.ts";
import {
  type CoreContext,
  type GroupState,
  type HeartbeatInput,
  type TopicsSnapshot,
  checkInvariants,
  commitOffsets,
  committedOffset,
  expire,
  groupStateName,
  heartbeat,
  lastResolvedFilter,
  leave,
  type MayDescribe,
  type MemberState,
  newGroup,
  partitionOwners,
  resetOffsets,
  resolveSubscription,
  timers,
} from "../../src/groups/coordinator-core.ts";
import type { AssignorName } from "../../src/protocol/groups.ts";

const T = "public/default/orders";

function snapshot(partitions: number, extra: Record<string, number> = {}): TopicsSnapshot {
  const out: Record<string, { topicId: string; partitions: number }> = { [T]: { topicId: "id-orders", partitions } };
  for (const [name, n] of Object.entries(extra)) out[name] = { topicId: `id-${name}`, partitions: n };
  return out;
}

function hbInput(over: Partial<HeartbeatInput>): HeartbeatInput {
  return {
    memberId: null,
    memberEpoch: 0,
    instanceId: null,
    subscribedTopicNames: null,
    subscribedTopicRegex: null,
    ownedPartitions: null,
    sessionTimeoutMs: null,
    rebalanceTimeoutMs: null,
    assignor: null,
    clientId: null,
    ...over,
  };
}

/**
 * A simulated group: a coordinator state, a clock and clients that follow the protocol
 * (they adopt each answered assignment at once: revoke what is gone, start what is new,
 * and report what they own on the next heartbeat).
 */
class Sim {
  state: GroupState;
  nowMs = 1_000_000;
  topics: TopicsSnapshot;
  clients = new Map<string, Client>();
  private seq = 0;

  readonly assignor: AssignorName;

  constructor(partitions: number, assignor: AssignorName = "cooperative-sticky") {
    this.assignor = assignor;
    this.state = newGroup("g", this.nowMs);
    this.topics = snapshot(partitions);
  }

  ctx(): CoreContext {
    return { nowMs: this.nowMs, topics: this.topics, newMemberId: `m${++this.seq}` };
  }

  apply(next: GroupState): void {
    const bad = checkInvariants(next);
    if (bad) throw new Error(`invariant: ${bad}`);
    this.state = next;
    this.checkNoTwoOwners();
  }

  /** Client-side view: no partition is consumed by two live clients at once. */
  checkNoTwoOwners(): void {
    const seen = new Map<string, string>();
    for (const [name, c] of this.clients) {
      if (!c.alive) continue;
      for (const k of keysOf(c.owned)) {
        expect(seen.get(k), `${k} owned by ${seen.get(k)} and ${name}`).toBeUndefined();
        seen.set(k, name);
      }
    }
  }

  join(name: string, opts: { instanceId?: string; sessionTimeoutMs?: number; rebalanceTimeoutMs?: number } = {}): Client {
    const c: Client = {
      name,
      memberId: null,
      epoch: 0,
      owned: {},
      alive: true,
      instanceId: opts.instanceId ?? null,
      sessionTimeoutMs: opts.sessionTimeoutMs ?? 10_000,
      rebalanceTimeoutMs: opts.rebalanceTimeoutMs ?? 60_000,
    };
    this.clients.set(name, c);
    this.hb(name);
    return c;
  }

  hb(name: string): void {
    const c = this.clients.get(name) as Client;
    const r = heartbeat(
      this.state,
      hbInput({
        memberId: c.memberId,
        memberEpoch: c.epoch,
        instanceId: c.instanceId,
        subscribedTopicNames: c.epoch === 0 ? [T] : null,
        ownedPartitions: c.owned,
        sessionTimeoutMs: c.sessionTimeoutMs,
        rebalanceTimeoutMs: c.rebalanceTimeoutMs,
        assignor: c.epoch === 0 ? this.assignor : null,
      }),
      this.ctx(),
    );
    if (!r.ok) throw new Error(`${name}: ${r.code} ${r.message ?? ""}`);
    this.apply(r.state);
    c.memberId = r.value.memberId;
    c.epoch = r.value.memberEpoch;
    c.owned = r.value.assignment;
    this.checkNoTwoOwners();
  }

  /** Heartbeats every live client in turn until the group is stable. */
  settle(maxRounds = 20): void {
    for (let i = 0; i < maxRounds; i++) {
      for (const [name, c] of this.clients) if (c.alive) this.hb(name);
      if (groupStateName(this.state) === "Stable") return;
    }
    throw new Error(`not stable after ${maxRounds} rounds: ${JSON.stringify(this.state.members)}`);
  }

  advance(ms: number): void {
    this.nowMs += ms;
    const r = expire(this.state, { nowMs: this.nowMs, topics: this.topics });
    this.apply(r.state);
  }

  owned(name: string): Assignment {
    return (this.clients.get(name) as Client).owned;
  }
}

interface Client {
  name: string;
  memberId: string | null;
  epoch: number;
  owned: Assignment;
  alive: boolean;
  instanceId: string | null;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
}

function expectPartitionedExactly(sim: Sim, names: string[], partitions: number): void {
  const all: string[] = [];
  for (const n of names) all.push(...keysOf(sim.owned(n)));
  expect(all.sort()).toEqual(Array.from({ length: partitions }, (_, p) => tpKey(T, p)).sort());
}

describe("coordinator core: joins and rebalances", () => {
  for (const assignor of ["range", "roundrobin", "sticky", "cooperative-sticky"] as AssignorName[]) {
    it(`${assignor}: 4 partitions, A B C, then D joins mid-rebalance: one partition each, no overlap, no gap; old-epoch commit rejected`, () => {
      const sim = new Sim(4, assignor);
      sim.join("A");
      expect(countOf(sim.owned("A"))).toBe(4);
      sim.join("B");
      sim.join("C");
      // Mid-rebalance: only A has heard of the new target; B and C have not heartbeated since.
      sim.hb("A");
      expect(groupStateName(sim.state)).toBe("Reconciling");
      const a = sim.clients.get("A") as Client;
      const oldEpoch = a.epoch;
      sim.join("D");
      sim.settle();
      expect(groupStateName(sim.state)).toBe("Stable");
      for (const n of ["A", "B", "C", "D"]) expect(countOf(sim.owned(n)), n).toBe(1);
      expectPartitionedExactly(sim, ["A", "B", "C", "D"], 4);
      expect(a.epoch).toBeGreaterThan(oldEpoch);

      const mine = [...partitionsOf(sim.owned("A"))][0] as { topic: string; partition: number };
      const stale = commitOffsets(sim.state, { memberId: a.memberId, memberEpoch: oldEpoch, offsets: [{ ...mine, offset: 3, metadata: "" }] }, sim.ctx());
      expect(stale).toMatchObject({ ok: false, code: "STALE_MEMBER_EPOCH" });
      const fresh = commitOffsets(sim.state, { memberId: a.memberId, memberEpoch: a.epoch, offsets: [{ ...mine, offset: 3, metadata: "m" }] }, sim.ctx());
      expect(fresh.ok).toBe(true);
      if (fresh.ok) expect(committedOffset(fresh.state, mine.topic, mine.partition, sim.topics)).toMatchObject({ offset: 3, metadata: "m" });
      // Not the owner: rejected even at the current epoch.
      const other = [...partitionsOf(sim.owned("B"))][0] as { topic: string; partition: number };
      expect(commitOffsets(sim.state, { memberId: a.memberId, memberEpoch: a.epoch, offsets: [{ ...other, offset: 1, metadata: "" }] }, sim.ctx())).toMatchObject({
        ok: false,
        code: "UNASSIGNED_PARTITION",
      });
    });
  }

  it("cooperative: a partition moves only after its previous owner's heartbeat shows it released it", () => {
    const sim = new Sim(2);
    sim.join("A");
    expect(sim.owned("A")).toEqual({ [T]: [0, 1] });
    sim.join("B"); // target: A {0}, B {1}; B must wait for A
    expect(sim.owned("B")).toEqual({});
    expect(sim.state.members[sim.clients.get("B")?.memberId as string]?.state).toBe("unreleased_partitions");
    // A heartbeats: it is told to keep only {0} but still reports owning {0,1}.
    const a = sim.clients.get("A") as Client;
    const r1 = heartbeat(sim.state, hbInput({ memberId: a.memberId, memberEpoch: a.epoch, ownedPartitions: { [T]: [0, 1] } }), sim.ctx());
    if (!r1.ok) throw new Error(r1.code);
    sim.apply(r1.state);
    expect(r1.value.assignment).toEqual({ [T]: [0] });
    expect(r1.value.memberEpoch).toBe(a.epoch); // epoch not bumped before the revocation
    expect(r1.value.state).toBe("unrevoked_partitions");
    sim.hb("B");
    expect(sim.owned("B")).toEqual({}); // still held by A
    // A revokes (its next heartbeat reports {0}); now B may take partition 1.
    const r2 = heartbeat(sim.state, hbInput({ memberId: a.memberId, memberEpoch: a.epoch, ownedPartitions: { [T]: [0] } }), sim.ctx());
    if (!r2.ok) throw new Error(r2.code);
    a.owned = r2.value.assignment;
    a.epoch = r2.value.memberEpoch;
    sim.apply(r2.state);
    expect(r2.value.memberEpoch).toBe(sim.state.targetAssignmentEpoch);
    sim.hb("B");
    expect(sim.owned("B")).toEqual({ [T]: [1] });
  });

  it("eager (range): every partition is revoked before the new assignment", () => {
    const sim = new Sim(4, "range");
    sim.join("A");
    sim.join("B");
    const a = sim.clients.get("A") as Client;
    const r = heartbeat(sim.state, hbInput({ memberId: a.memberId, memberEpoch: a.epoch, ownedPartitions: a.owned }), sim.ctx());
    if (!r.ok) throw new Error(r.code);
    expect(r.value.assignment).toEqual({}); // revoke all, including the partitions A keeps
    expect(r.value.state).toBe("unrevoked_partitions");
    sim.apply(r.state);
    a.owned = {};
    sim.settle();
    expect(countOf(sim.owned("A")) + countOf(sim.owned("B"))).toBe(4);
  });

  it("fences unknown members and stale heartbeats; a fenced member rejoins with epoch 0", () => {
    const sim = new Sim(2);
    sim.join("A");
    const a = sim.clients.get("A") as Client;
    expect(heartbeat(sim.state, hbInput({ memberId: "nobody", memberEpoch: 3 }), sim.ctx())).toMatchObject({ ok: false, code: "UNKNOWN_MEMBER_ID" });
    expect(heartbeat(sim.state, hbInput({ memberId: a.memberId, memberEpoch: a.epoch + 5 }), sim.ctx())).toMatchObject({ ok: false, code: "FENCED_MEMBER_EPOCH" });
    expect(leave(sim.state, { memberId: a.memberId as string, memberEpoch: a.epoch + 5, temporary: false }, sim.ctx())).toMatchObject({ ok: false, code: "FENCED_MEMBER_EPOCH" });
    expect(leave(sim.state, { memberId: "nobody", memberEpoch: 1, temporary: false }, sim.ctx())).toMatchObject({ ok: false, code: "UNKNOWN_MEMBER_ID" });
    expect(commitOffsets(sim.state, { memberId: "nobody", memberEpoch: 1, offsets: [] }, sim.ctx())).toMatchObject({ ok: false, code: "UNKNOWN_MEMBER_ID" });
    // Without a member id, commits are refused while the group has members.
    expect(commitOffsets(sim.state, { memberId: null, memberEpoch: null, offsets: [{ topic: T, partition: 0, offset: 1, metadata: "" }] }, sim.ctx())).toMatchObject({
      ok: false,
      code: "UNKNOWN_MEMBER_ID",
    });
    // Rejoin with epoch 0 and the same member id: it gets its assignment back.
    const r = heartbeat(sim.state, hbInput({ memberId: a.memberId, memberEpoch: 0, ownedPartitions: {} }), sim.ctx());
    expect(r).toMatchObject({ ok: true, value: { memberId: a.memberId, assignment: { [T]: [0, 1] } } });
  });

  it("a member whose answer was lost may heartbeat with its previous epoch", () => {
    const sim = new Sim(2);
    sim.join("A");
    const a = sim.clients.get("A") as Client;
    const before = a.epoch;
    sim.join("B");
    // A's heartbeat bumps it (nothing to revoke? no: it must revoke 1) -> do both steps, then lose the answer.
    sim.hb("A");
    sim.hb("A");
    const bumped = sim.state.members[a.memberId as string]?.memberEpoch as number;
    expect(bumped).toBeGreaterThan(before);
    const r = heartbeat(
      sim.state,
      hbInput({ memberId: a.memberId, memberEpoch: sim.state.members[a.memberId as string]?.previousMemberEpoch as number, ownedPartitions: a.owned }),
      sim.ctx(),
    );
    expect(r).toMatchObject({ ok: true, value: { memberEpoch: bumped } });
  });

  it("an assignor different from the group's is refused while the group has members", () => {
    const sim = new Sim(2, "range");
    sim.join("A");
    const r = heartbeat(sim.state, hbInput({ subscribedTopicNames: [T], assignor: "roundrobin" }), sim.ctx());
    expect(r).toMatchObject({ ok: false, code: "INCONSISTENT_GROUP_PROTOCOL" });
  });
});

describe("coordinator core: leaving, session expiry, rebalance timeout", () => {
  it("a member that stops heartbeating loses its partitions after its session timeout", () => {
    const sim = new Sim(4);
    for (const n of ["A", "B"]) sim.join(n, { sessionTimeoutMs: 3000 });
    sim.settle();
    const b = sim.clients.get("B") as Client;
    const bPartitions = sim.owned("B");
    expect(countOf(bPartitions)).toBe(2);
    b.alive = false; // crashes: no heartbeat, no leave
    const due = timers(sim.state).find((t) => t.key === `session:${b.memberId}`);
    expect(due?.dueMs).toBe((sim.state.members[b.memberId as string]?.lastHeartbeatMs as number) + 3000);
    sim.nowMs += 2000;
    sim.hb("A");
    sim.advance(999); // 2999 ms since B's last heartbeat: still a member
    expect(sim.state.members[b.memberId as string]).toBeDefined();
    sim.hb("A");
    expect(countOf(sim.owned("A"))).toBe(2);
    sim.advance(1); // 3000 ms
    expect(sim.state.members[b.memberId as string]).toBeUndefined();
    sim.hb("A");
    expect(sim.owned("A")).toEqual({ [T]: [0, 1, 2, 3] });
    expect(groupStateName(sim.state)).toBe("Stable");
  });

  it("a member that does not revoke within its rebalance timeout is removed", () => {
    const sim = new Sim(2);
    sim.join("A", { rebalanceTimeoutMs: 500, sessionTimeoutMs: 10_000 });
    sim.join("B");
    const a = sim.clients.get("A") as Client;
    // A is asked to revoke but keeps reporting both partitions.
    const r = heartbeat(sim.state, hbInput({ memberId: a.memberId, memberEpoch: a.epoch, ownedPartitions: { [T]: [0, 1] } }), sim.ctx());
    if (!r.ok) throw new Error(r.code);
    sim.apply(r.state);
    expect(timers(sim.state).find((t) => t.key === `rebalance:${a.memberId}`)?.dueMs).toBe(sim.nowMs + 500);
    a.alive = false;
    sim.nowMs += 400;
    sim.hb("B");
    sim.advance(100);
    expect(sim.state.members[a.memberId as string]).toBeUndefined();
    sim.hb("B");
    expect(sim.owned("B")).toEqual({ [T]: [0, 1] });
  });

  it("leave releases at once; the group becomes Empty", () => {
    const sim = new Sim(2);
    sim.join("A");
    sim.join("B");
    sim.settle();
    const a = sim.clients.get("A") as Client;
    const r = leave(sim.state, { memberId: a.memberId as string, memberEpoch: a.epoch, temporary: false }, sim.ctx());
    if (!r.ok) throw new Error(r.code);
    expect(r.value.memberEpoch).toBe(-1);
    sim.apply(r.state);
    a.alive = false;
    sim.hb("B");
    expect(sim.owned("B")).toEqual({ [T]: [0, 1] });
    const b = sim.clients.get("B") as Client;
    const r2 = leave(sim.state, { memberId: b.memberId as string, memberEpoch: b.epoch, temporary: false }, sim.ctx());
    if (!r2.ok) throw new Error(r2.code);
    expect(groupStateName(r2.state)).toBe("Empty");
    expect(r2.state.emptySinceMs).toBe(sim.nowMs);
  });
});

describe("coordinator core: static membership", () => {
  it("a static member restarting within its session timeout gets its partitions back without a rebalance", () => {
    const sim = new Sim(6);
    sim.join("A", { instanceId: "inst-a", sessionTimeoutMs: 5000 });
    sim.join("B", { instanceId: "inst-b", sessionTimeoutMs: 5000 });
    sim.join("C", { instanceId: "inst-c", sessionTimeoutMs: 5000 });
    sim.settle();
    const before = new Map([...sim.clients].map(([n, c]) => [n, c.owned]));
    const epochBefore = sim.state.groupEpoch;
    const b = sim.clients.get("B") as Client;

    // Graceful temporary leave (epoch -2), then a new process with the same instance id.
    const l = leave(sim.state, { memberId: b.memberId as string, memberEpoch: b.epoch, temporary: true }, sim.ctx());
    if (!l.ok) throw new Error(l.code);
    expect(l.value.memberEpoch).toBe(-2);
    sim.apply(l.state);
    b.alive = false;
    sim.nowMs += 2000;
    sim.hb("A");
    sim.hb("C");
    sim.join("B2", { instanceId: "inst-b", sessionTimeoutMs: 5000 });
    expect(sim.owned("B2")).toEqual(before.get("B"));
    expect(sim.state.groupEpoch).toBe(epochBefore);
    expect(sim.state.members[b.memberId as string]).toBeUndefined();

    // A crash (no leave) followed by a quick restart also keeps the assignment.
    const c = sim.clients.get("C") as Client;
    c.alive = false;
    sim.nowMs += 1000;
    sim.join("C2", { instanceId: "inst-c", sessionTimeoutMs: 5000 });
    expect(sim.owned("C2")).toEqual(before.get("C"));
    expect(sim.state.groupEpoch).toBe(epochBefore);
    // The replaced member id is fenced.
    expect(heartbeat(sim.state, hbInput({ memberId: c.memberId, memberEpoch: c.epoch }), sim.ctx())).toMatchObject({ ok: false, code: "UNKNOWN_MEMBER_ID" });
    sim.settle();
    expect(sim.owned("A")).toEqual(before.get("A"));
  });

  it("a static member that does not come back within its session timeout is removed and its partitions move", () => {
    const sim = new Sim(4);
    sim.join("A", { instanceId: "inst-a", sessionTimeoutMs: 1000 });
    sim.join("B", { instanceId: "inst-b", sessionTimeoutMs: 1000 });
    sim.settle();
    const b = sim.clients.get("B") as Client;
    const l = leave(sim.state, { memberId: b.memberId as string, memberEpoch: b.epoch, temporary: true }, sim.ctx());
    if (!l.ok) throw new Error(l.code);
    sim.apply(l.state);
    b.alive = false;
    sim.nowMs += 600;
    sim.hb("A");
    expect(countOf(sim.owned("A"))).toBe(2); // B's partitions stay reserved
    sim.advance(400);
    sim.settle();
    expect(sim.owned("A")).toEqual({ [T]: [0, 1, 2, 3] });
  });
});

describe("coordinator core: topic changes", () => {
  it("more partitions, a new topic matching a regex, and a deleted topic each produce a new target", () => {
    const sim = new Sim(2);
    const r = heartbeat(sim.state, hbInput({ subscribedTopicRegex: "orders.*" }), sim.ctx());
    if (!r.ok) throw new Error(r.code);
    sim.apply(r.state);
    const id = r.value.memberId;
    let epoch = r.value.memberEpoch;
    let owned = r.value.assignment;
    expect(owned).toEqual({ [T]: [0, 1] });
    const beat = () => {
      const x = heartbeat(sim.state, hbInput({ memberId: id, memberEpoch: epoch, ownedPartitions: owned }), sim.ctx());
      if (!x.ok) throw new Error(x.code);
      sim.apply(x.state);
      epoch = x.value.memberEpoch;
      owned = x.value.assignment;
    };
    sim.topics = snapshot(3);
    beat();
    expect(owned).toEqual({ [T]: [0, 1, 2] });
    sim.topics = snapshot(3, { "public/default/orders-eu": 2, "public/default/payments": 1, "acme/prod/orders-us": 1 });
    beat();
    expect(owned).toEqual({ [T]: [0, 1, 2], "public/default/orders-eu": [0, 1] });
    sim.topics = { "public/default/orders-eu": { topicId: "id-public/default/orders-eu", partitions: 2 } };
    beat();
    beat();
    expect(owned).toEqual({ "public/default/orders-eu": [0, 1] });
  });

  it("a regex is matched against the whole full name too", () => {
    const sim = new Sim(1);
    sim.topics = snapshot(1, { "acme/prod/orders-us": 1 });
    const r = heartbeat(sim.state, hbInput({ subscribedTopicRegex: "acme/prod/.*" }), sim.ctx());
    expect(r).toMatchObject({ ok: true, value: { assignment: { "acme/prod/orders-us": [0] } } });
  });
});

describe("coordinator core: a member's subscription is filtered by what its principal may describe (KIP-848)", () => {
  const mine = (n: string) => `acme/prod/mine-${n}`;
  const secret = (n: string) => `acme/prod/secret-${n}`;
  /** Alice may describe `mine-*` (a prefixed ACL) and whatever `extra` holds; nobody else is filtered here. */
  const extra = new Set<string>();
  const acl: MayDescribe = (principal, topic) => principal === "alice" && (topic.startsWith("acme/prod/mine-") || extra.has(topic));

  function topicsOf(names: string[]): TopicsSnapshot {
    return Object.fromEntries(names.map((n) => [n, { topicId: `id-${n}`, partitions: 2 }]));
  }

  it("resolveSubscription keeps only describable matches of names and regex; no predicate means nothing; no principal means no filter", () => {
    const topics = topicsOf([mine("a"), secret("a"), "public/default/mine-b"]);
    const m = (principal: string | null): MemberState =>
      ({
        memberId: "m",
        subscribedTopicNames: [secret("a")],
        subscribedTopicRegex: "(acme/prod/)?(mine|secret)-.*",
        principal,
        resolvedTopics: null,
      }) as unknown as MemberState;
    // public/default/mine-b matches by its short name, but alice's ACL covers acme/prod/mine-* only.
    expect(resolveSubscription(m("alice"), topics, acl)).toEqual([mine("a")]);
    expect(resolveSubscription(m("mallory"), topics, acl)).toEqual([]);
    expect(resolveSubscription(m("alice"), topics)).toEqual([]);
    expect(resolveSubscription(m(null), topics)).toEqual([mine("a"), secret("a"), "public/default/mine-b"].sort());
  });

  it("property: a principal's resolution is the unfiltered resolution intersected with what it may describe", () => {
    const name = fc.tuple(fc.constantFrom("acme/prod/", "public/default/", "other/ns/"), fc.constantFrom("mine-", "secret-", "x"), fc.stringMatching(/^[a-c]{0,3}$/)).map((p) => p.join(""));
    fc.assert(
      fc.property(fc.uniqueArray(name, { maxLength: 12 }), fc.func(fc.boolean()), fc.constantFrom(".*", "mine-.*", ".*/secret-.*", "(acme/prod/)?x.*"), (names, allowed, regex) => {
        const topics = topicsOf(names);
        const mayDescribe: MayDescribe = (_p, t) => allowed(t);
        const m = (principal: string | null) => ({ memberId: "m", subscribedTopicNames: names.slice(0, 3), subscribedTopicRegex: regex, principal }) as unknown as MemberState;
        const all = resolveSubscription(m(null), topics, mayDescribe);
        expect(resolveSubscription(m("p"), topics, mayDescribe)).toEqual(all.filter((t) => allowed(t)));
      }),
      { numRuns: 200 },
    );
  });

  it("in a group with a superuser, the restricted member is never assigned a topic it cannot describe; grants and revocations re-resolve it", () => {
    extra.clear();
    let topics = topicsOf([mine("a"), mine("b"), secret("a")]);
    let state = newGroup("g", 0);
    const now = 1000;
    const beat = (memberId: string | null, epoch: number, owned: Assignment | null, principal: string | null, first: boolean) => {
      const r = heartbeat(state, hbInput({ memberId, memberEpoch: epoch, ownedPartitions: owned, subscribedTopicRegex: first ? "acme/prod/.*" : null, assignor: first ? "range" : null }), {
        nowMs: now,
        topics,
        newMemberId: memberId ?? `m-${principal ?? "admin"}`,
        principal,
        mayDescribe: acl,
      });
      if (!r.ok) throw new Error(`${r.code} ${r.message ?? ""}`);
      expect(checkInvariants(r.state)).toBeUndefined();
      state = r.state;
      return r.value;
    };
    const clients: Record<string, { id: string | null; epoch: number; owned: Assignment | null; principal: string | null }> = {
      alice: { id: null, epoch: 0, owned: null, principal: "alice" },
      admin: { id: null, epoch: 0, owned: null, principal: null },
    };
    const round = () => {
      for (let i = 0; i < 6; i++) {
        for (const c of Object.values(clients)) {
          const v = beat(c.id, c.epoch, c.owned, c.principal, c.id === null);
          c.id = v.memberId;
          c.epoch = v.memberEpoch;
          c.owned = v.assignment;
        }
      }
      expect(groupStateName(state)).toBe("Stable");
    };
    const topicsHeld = (c: string) => Object.keys(clients[c]?.owned ?? {}).sort();
    round();
    expect(topicsHeld("alice").every((t) => t.includes("/mine-"))).toBe(true);
    // range: the secret topic's 2 partitions go to the only member subscribed to it.
    expect(clients.admin?.owned?.[secret("a")]).toEqual([0, 1]);
    expect(state.members[clients.alice?.id ?? ""]?.resolvedTopics).toEqual([mine("a"), mine("b")]);

    // A topic created later: the describable one joins alice's subscription, the other never does.
    topics = topicsOf([mine("a"), mine("b"), secret("a"), mine("c"), secret("b")]);
    round();
    expect(state.members[clients.alice?.id ?? ""]?.resolvedTopics).toEqual([mine("a"), mine("b"), mine("c")]);
    expect(topicsHeld("alice").some((t) => t.includes("/secret-"))).toBe(false);

    // A grant: the group's subscription metadata does not change (the superuser resolved the
    // topic already), but the group epoch does, and alice now shares the topic.
    const meta = state.subscriptionMetadata;
    const epoch = state.groupEpoch;
    extra.add(secret("a"));
    round();
    expect(state.subscriptionMetadata).toEqual(meta);
    expect(state.groupEpoch).toBeGreaterThan(epoch);
    expect(topicsHeld("alice")).toContain(secret("a"));
    // A revocation takes it away again.
    extra.clear();
    round();
    expect(topicsHeld("alice").some((t) => t.includes("/secret-"))).toBe(false);
    expect(Object.keys(state.targetAssignment[clients.alice?.id ?? ""] ?? {}).some((t) => t.includes("/secret-"))).toBe(false);
  });

  it("without readable ACLs (a timer), a principal keeps what its members last resolved to and gains nothing", () => {
    const topics = topicsOf([mine("a"), mine("b"), secret("a")]);
    const j = heartbeat(newGroup("g", 0), hbInput({ subscribedTopicRegex: "acme/prod/.*" }), { nowMs: 0, topics, newMemberId: "m", principal: "alice", mayDescribe: acl });
    if (!j.ok) throw new Error(j.code);
    const fallback = lastResolvedFilter(j.state);
    expect([mine("a"), mine("b"), secret("a"), mine("c")].filter((t) => fallback("alice", t))).toEqual([mine("a"), mine("b")]);
    expect(fallback("bob", mine("a"))).toBe(false);
    expect(lastResolvedFilter(null)("alice", mine("a"))).toBe(false);
    // A session expiry of another member with that filter leaves alice's target as it was.
    const withMine = { ...topics, [mine("c")]: { topicId: "id-c", partitions: 1 } };
    const r = expire(j.state, { nowMs: 1, topics: withMine, mayDescribe: fallback });
    expect(r.state.members.m?.resolvedTopics).toEqual([mine("a"), mine("b")]);
  });

  it("a member that loses its principal (auth turned off, or made a superuser) is unfiltered at its next heartbeat", () => {
    const topics = topicsOf([mine("a"), secret("a")]);
    const j = heartbeat(newGroup("g", 0), hbInput({ subscribedTopicRegex: "acme/prod/.*" }), { nowMs: 0, topics, newMemberId: "m", principal: "alice", mayDescribe: acl });
    if (!j.ok) throw new Error(j.code);
    expect(j.value.assignment).toEqual({ [mine("a")]: [0, 1] });
    const h = heartbeat(j.state, hbInput({ memberId: "m", memberEpoch: j.value.memberEpoch, ownedPartitions: j.value.assignment }), { nowMs: 1, topics, principal: null, mayDescribe: acl });
    if (!h.ok) throw new Error(h.code);
    expect(h.value.assignment).toEqual({ [mine("a")]: [0, 1], [secret("a")]: [0, 1] });
  });
});

describe("coordinator core: offsets", () => {
  it("commits from outside the group only while it is empty; reset only while empty; retention after empty", () => {
    const sim = new Sim(2);
    sim.state = { ...sim.state, configs: { ...sim.state.configs, "offsets.retention.ms": 10_000 } };
    const c = commitOffsets(sim.state, { memberId: null, memberEpoch: null, offsets: [{ topic: T, partition: 1, offset: 7, metadata: "" }] }, sim.ctx());
    if (!c.ok) throw new Error(c.code);
    sim.apply(c.state);
    expect(commitOffsets(sim.state, { memberId: null, memberEpoch: null, offsets: [{ topic: T, partition: 5, offset: 1, metadata: "" }] }, sim.ctx())).toMatchObject({
      ok: false,
      code: "UNKNOWN_TOPIC_OR_PARTITION",
    });
    sim.join("A");
    expect(resetOffsets(sim.state, [{ topic: T, partition: 0, offset: 0 }], sim.ctx())).toMatchObject({ ok: false, code: "NON_EMPTY_GROUP" });
    const a = sim.clients.get("A") as Client;
    const l = leave(sim.state, { memberId: a.memberId as string, memberEpoch: a.epoch, temporary: false }, sim.ctx());
    if (!l.ok) throw new Error(l.code);
    sim.apply(l.state);
    a.alive = false;
    const rs = resetOffsets(sim.state, [{ topic: T, partition: 0, offset: 3 }], sim.ctx());
    if (!rs.ok) throw new Error(rs.code);
    sim.apply(rs.state);
    expect(committedOffset(sim.state, T, 0, sim.topics)?.offset).toBe(3);
    // Recreated topic (new id): old offsets do not apply.
    expect(committedOffset(sim.state, T, 0, { [T]: { topicId: "other", partitions: 2 } })).toBeUndefined();
    expect(timers(sim.state)).toEqual([{ key: "offsets", dueMs: sim.nowMs + 10_000 }]);
    sim.nowMs += 9_999;
    expect(expire(sim.state, { nowMs: sim.nowMs, topics: sim.topics })).toMatchObject({ expiredOffsets: 0, dead: false });
    const e = expire(sim.state, { nowMs: sim.nowMs + 1, topics: sim.topics });
    expect(e).toMatchObject({ expiredOffsets: 2, dead: true });
  });
});

describe("coordinator core: randomized simulation (seeded)", () => {
  it("no two owners, invariants hold, and the group converges with no gap", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<AssignorName>("range", "roundrobin", "sticky", "cooperative-sticky"),
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.tuple(fc.constantFrom("join", "hb", "hb", "hb", "leave", "crash", "tick", "slow-hb"), fc.nat()), { minLength: 5, maxLength: 60 }),
        (assignor, partitions, ops) => {
          const sim = new Sim(partitions, assignor);
          let n = 0;
          const live = () => [...sim.clients.values()].filter((c) => c.alive);
          for (const [op, x] of ops) {
            const cs = live();
            const c = cs.length > 0 ? cs[x % cs.length] : undefined;
            if (op === "join" || c === undefined) {
              sim.join(`c${n++}`, { sessionTimeoutMs: 2000 });
            } else if (op === "hb") {
              sim.hb(c.name);
            } else if (op === "slow-hb") {
              // Heartbeat but keep owning what is being revoked (it has not finished yet).
              const r = heartbeat(sim.state, hbInput({ memberId: c.memberId, memberEpoch: c.epoch, ownedPartitions: c.owned }), sim.ctx());
              if (!r.ok) throw new Error(r.code);
              sim.apply(r.state);
              // It may start new partitions only when it is not revoking any.
              const m = sim.state.members[c.memberId as string];
              if (m && m.state !== "unrevoked_partitions") c.owned = r.value.assignment;
              c.epoch = r.value.memberEpoch;
              sim.checkNoTwoOwners();
            } else if (op === "leave") {
              const r = leave(sim.state, { memberId: c.memberId as string, memberEpoch: c.epoch, temporary: false }, sim.ctx());
              if (!r.ok) throw new Error(r.code);
              sim.apply(r.state);
              c.alive = false;
            } else if (op === "crash") {
              c.alive = false;
            } else {
              sim.nowMs += 500;
              for (const l of live()) sim.hb(l.name);
              sim.advance(0);
            }
          }
          // Crashed members expire; then everyone left converges.
          for (const l of live()) sim.hb(l.name);
          sim.nowMs += 2000;
          for (const l of live()) sim.hb(l.name);
          sim.advance(0);
          if (live().length === 0) return;
          sim.settle(30);
          const owners = partitionOwners(sim.state);
          expect(owners.size).toBe(partitions);
          for (const c of live()) expect(equals(c.owned, sim.state.members[c.memberId as string]?.assigned ?? {})).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
