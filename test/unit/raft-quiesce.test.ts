/**
 * Quiescence of idle Raft groups (docs/RAFT.md "Quiescence") as scripted scenarios on the pure
 * core, driven the way the Durable Object shells drive it (`Harness.tickShells`: awake members
 * tick every round, quiesced ones every SLOW rounds, their slow period).
 */
import { describe, expect, it } from "vitest";
import { QUIESCED_MISSED_TICKS } from "../../src/raft/node.ts";
import type { Message } from "../../src/raft/types.ts";
import { Harness, bytes } from "../sim/harness.ts";

const IDS = ["n1", "n2", "n3"];
/** A quiesced member ticks once every SLOW rounds (as 5 s against 100 ms ticks would be 50). */
const SLOW = 10;

/** Deterministic election jitter, so that two followers do not time out in the same round forever. */
function jitter(seed = 7): (n: number) => number {
  let x = seed;
  return (n) => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x % n;
  };
}

function quietGroup(): Harness {
  const h = new Harness(IDS, { quiesce: true, random: jitter() });
  h.elect("n1");
  h.propose("n1", "a");
  const rounds = h.tickShells(20, SLOW, () => IDS.every((id) => h.node(id).quiesced));
  expect(rounds).toBeLessThan(20);
  return h;
}

const sentSince = (h: Harness, from: number): Message[] => h.sent.slice(from);

describe("quiescence: the rule", () => {
  it("an idle group quiesces: the leader sends a quiesce heartbeat, the followers stop their election timers; only the beacons and their answers flow", () => {
    const h = quietGroup();
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(true);
    // Quiet from now on: the leader's quiesce heartbeat once per slow tick and its answers, nothing else.
    const mark = h.sent.length;
    h.tickShells(10 * SLOW, SLOW);
    const msgs = sentSince(h, mark);
    expect(msgs.length).toBe(10 * 4);
    const beacons = msgs.filter((m) => m.type === "heartbeat" && m.from === "n1" && m.quiesce !== undefined);
    const answers = msgs.filter((m) => m.type === "heartbeatResp" && m.to === "n1");
    expect([beacons.length, answers.length]).toEqual([20, 20]);
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(true);
    expect(h.node("n1").role).toBe("leader");
    expect(h.node("n1").term).toBe(1);
    for (const id of IDS) expect(h.node(id).commitIndex, id).toBe(h.node("n1").lastIndex);
  });

  it("is off unless configured: a group without it heartbeats every tick forever", () => {
    const h = new Harness(IDS, { random: jitter() });
    h.elect("n1");
    h.propose("n1", "a");
    const mark = h.sent.length;
    h.tickShells(50, SLOW);
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(false);
    expect(sentSince(h, mark).filter((m) => m.type === "heartbeat").length).toBe(100);
  });

  it("a proposal wakes the leader, which heartbeats at once; the entry commits everywhere and the group quiesces again", () => {
    const h = quietGroup();
    const mark = h.sent.length;
    const r = h.node("n1").propose(bytes("b"));
    expect(r.ok).toBe(true);
    expect(h.node("n1").quiesced).toBe(false);
    h.settle();
    const msgs = sentSince(h, mark);
    expect(msgs.some((m) => m.type === "heartbeat" && m.from === "n1" && m.quiesce === undefined)).toBe(true);
    for (const id of IDS) expect(h.records(id), id).toEqual(["a", "b"]);
    // The followers took new entries: awake again until the next quiesce heartbeat.
    expect(h.node("n2").quiesced).toBe(false);
    h.tickShells(5, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(true);
  });

  it("a ReadIndex and a leadership transfer wake the leader; no quiesce while either is pending", () => {
    const h = quietGroup();
    expect(h.node("n1").readIndex("r1")).toEqual({ ok: true });
    expect(h.node("n1").quiesced).toBe(false);
    h.settle();
    expect(h.readStates.get("n1")!.map((r) => r.ctx)).toEqual(["r1"]);
    // The heartbeat of a new ReadIndex round wakes the followers too (the leader is serving).
    expect([h.node("n2").quiesced, h.node("n3").quiesced]).toEqual([false, false]);
    h.tickShells(5, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    expect(h.node("n1").quiesced).toBe(true);

    // A transfer to a member that never answers stays pending: the leader stays awake.
    h.cut("n1", "n3");
    expect(h.node("n1").transferLeadership("n3")).toEqual({ ok: true });
    expect(h.node("n1").quiesced).toBe(false);
    h.settle();
    h.tickShells(5, SLOW);
    expect(h.node("n1").leadTransferee).toBe("n3");
    expect(h.node("n1").quiesced).toBe(false);
  });

  it("a request at a quiesced follower wakes it, and it asks its leader (and the other voters) to wake", () => {
    const h = quietGroup();
    const mark = h.sent.length;
    const r = h.node("n2").propose(bytes("x"));
    expect(r).toEqual({ ok: false, code: "notLeader", leaderId: "n1" });
    expect(h.node("n2").quiesced).toBe(false);
    h.settle();
    const msgs = sentSince(h, mark);
    // It wakes the other voters too (if the leader were dead, their election timers would start together).
    expect(msgs.slice(0, 2)).toMatchObject([
      { type: "wake", from: "n2", to: "n1" },
      { type: "wake", from: "n2", to: "n3" },
    ]);
    // The leader woke and heartbeat at once; then the group goes quiet again without an election.
    expect(msgs.some((m) => m.type === "heartbeat" && m.from === "n1" && m.quiesce === undefined)).toBe(true);
    h.tickShells(5, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(true);
    expect(h.node("n1").term).toBe(1);
  });

  it("wake(): a request the shell refuses by itself wakes a quiesced follower as a proposal would; a no-op when awake", () => {
    const h = quietGroup();
    const mark = h.sent.length;
    h.node("n3").wake();
    expect(h.node("n3").quiesced).toBe(false);
    expect(h.node("n1").quiesced).toBe(true); // until the wake requests arrive
    h.settle();
    expect(sentSince(h, mark).slice(0, 2)).toMatchObject([
      { type: "wake", from: "n3", to: "n1" },
      { type: "wake", from: "n3", to: "n2" },
    ]);
    const again = h.sent.length;
    h.node("n3").wake();
    h.settle();
    expect(sentSince(h, again)).toEqual([]);
    h.tickShells(5, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(true);
    expect(h.node("n1").term).toBe(1);
  });

  it("a follower with a lagging log does not quiesce, and the leader does not quiesce while a member lags", () => {
    const h = new Harness(IDS, { quiesce: true, random: jitter() });
    h.elect("n1");
    h.cut("n1", "n3");
    h.propose("n1", "a");
    h.propose("n1", "b");
    expect(h.node("n3").lastIndex).toBeLessThan(h.node("n1").lastIndex);
    h.tickShells(3 * SLOW, SLOW);
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(false);

    // A quiesce heartbeat that reaches a lagging follower (crafted: the leader would not send
    // one) is answered and turned into a wake request; the follower keeps its election timer.
    const n3 = h.node("n3");
    const mark = h.sent.length;
    n3.step({ type: "heartbeat", from: "n1", to: "n3", term: 1, commit: 3, readSeq: 0, quiesce: { lastIndex: 3, lastTerm: 1 } });
    expect(n3.quiesced).toBe(false);
    h.settle();
    const answers = sentSince(h, mark).filter((m) => m.from === "n3");
    expect(answers.map((m) => m.type).sort()).toEqual(["heartbeatResp", "wake"]);

    // Healed, the follower catches up and the whole group quiesces.
    h.heal();
    h.tickShells(3 * SLOW, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    for (const id of IDS) expect(h.node(id).quiesced, id).toBe(true);
    expect(h.records("n3")).toEqual(["a", "b"]);
  });
});

describe("quiescence: failure detection and partitions", () => {
  it("quiesced, then the leader crashes, then a client proposes at a follower: a new leader is elected and the proposal commits", () => {
    const h = quietGroup();
    h.crash("n1");
    // The request wakes n2, which wakes the other voters (its wake request to n1 is lost): both
    // followers' election timers run again, together.
    expect(h.node("n2").propose(bytes("x"))).toMatchObject({ ok: false, code: "notLeader", leaderId: "n1" });
    h.settle();
    expect(h.node("n3").quiesced).toBe(false);
    const rounds = h.tickShells(20 * SLOW, SLOW, () => ["n2", "n3"].some((id) => h.node(id).role === "leader"));
    const leader = ["n2", "n3"].find((id) => h.node(id).role === "leader")!;
    expect(leader).toBeDefined();
    expect(h.node(leader).term).toBeGreaterThanOrEqual(2);
    // Rounds from the request to a leader: at least one election timeout (10-19 ticks here).
    expect(rounds).toBeGreaterThanOrEqual(10);
    h.propose(leader, "x");
    expect(h.records("n2")).toEqual(["a", "x"]);
    expect(h.records("n3")).toEqual(["a", "x"]);
  });

  it(`quiesced, then the leader crashes and nobody asks: followers wake after ${QUIESCED_MISSED_TICKS} missed quiesce heartbeats and elect a leader`, () => {
    const h = quietGroup();
    h.crash("n1");
    const rounds = h.tickShells(30 * SLOW, SLOW, () => ["n2", "n3"].some((id) => h.node(id).role === "leader"));
    expect(["n2", "n3"].some((id) => h.node(id).role === "leader")).toBe(true);
    // At least the misses (slow ticks) before anyone wakes, then an election.
    expect(rounds).toBeGreaterThan(QUIESCED_MISSED_TICKS * SLOW);
  });

  it("quiesced, then the leader is cut off: the others elect a leader and commit; after the heal the old leader follows and the group quiesces again", () => {
    const h = quietGroup();
    h.isolate("n1");
    h.tickShells(30 * SLOW, SLOW, () => ["n2", "n3"].some((id) => h.node(id).role === "leader"));
    const leader = ["n2", "n3"].find((id) => h.node(id).role === "leader")!;
    expect(leader).toBeDefined();
    h.propose(leader, "b");
    // The old leader is still quiesced on its side: it never saw anything to wake it.
    expect(h.node("n1").role).toBe("leader");
    h.heal();
    h.tickShells(10 * SLOW, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    expect(h.node("n1").role).toBe("follower");
    expect(h.node("n1").leaderId).toBe(leader);
    for (const id of IDS) {
      expect(h.node(id).quiesced, id).toBe(true);
      expect(h.records(id), id).toEqual(["a", "b"]);
    }
  });

  it("quiesced, then a follower is cut off and the partition heals: same leader, same term, quiet again", () => {
    const h = quietGroup();
    h.isolate("n3");
    h.tickShells(10 * SLOW, SLOW);
    // n3 missed the quiesce heartbeats, woke and campaigns (pre-votes only: its term stays).
    expect(h.node("n3").quiesced).toBe(false);
    expect(h.node("n3").term).toBe(1);
    expect(h.node("n1").quiesced).toBe(true);
    h.heal();
    h.tickShells(10 * SLOW, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    for (const id of IDS) {
      expect(h.node(id).quiesced, id).toBe(true);
      expect(h.node(id).term, id).toBe(1);
    }
    expect(h.node("n3").leaderId).toBe("n1");
  });

  it("a quiesced follower that restarts (an evicted object) finds the leader again without an election", () => {
    const h = quietGroup();
    h.crash("n3");
    h.restart("n3");
    expect(h.node("n3").quiesced).toBe(false);
    h.tickShells(10 * SLOW, SLOW, () => IDS.every((id) => h.node(id).quiesced));
    for (const id of IDS) {
      expect(h.node(id).quiesced, id).toBe(true);
      expect(h.node(id).term, id).toBe(1);
    }
    expect(h.node("n3").leaderId).toBe("n1");
  });
});
