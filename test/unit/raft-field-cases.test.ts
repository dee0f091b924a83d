/**
 * Field cases of area C (shared/field-cases.md) as exact scenarios on the pure Raft core.
 * A Kafka offset is the ordinal of a normal entry in the log (no-ops and configuration
 * entries take none), so "m2@1" is the second normal entry.
 */
import { describe, expect, it } from "vitest";
import { RaftNode, type Message } from "../../src/raft/index.ts";
import { Harness, bytes, diskWith, normalEntries, text } from "../sim/harness.ts";

const ABC = ["A", "B", "C"];
const conf = (ids: string[]) => ({ voters: ids, learners: [] });

describe("C2 leader-epoch truncation (KIP-101 scenarios in Raft terms)", () => {
  it("scenario 1: a restarted follower keeps entries above its known HW and, elected, serves them; the next produce gets offset 2", () => {
    const h = new Harness(["L", "F1", "F2"]);
    h.elect("L");
    // F2 hears nothing from L; F1 stops hearing from L once it has m2 (so it never learns m2 committed).
    let f1HasM2 = false;
    h.drop = (m) => {
      if (m.from === "L" && m.to === "F2") return true;
      if (m.from === "L" && m.to === "F1") {
        if (f1HasM2) return true;
        if (m.type === "append" && m.entries.some((e) => text(e) === "m2")) f1HasM2 = true;
      }
      return false;
    };
    const m1 = h.propose("L", "m1");
    const m2 = h.propose("L", "m2");
    expect(h.node("L").commitIndex).toBe(m2.index); // acks=all answered for m2
    expect(h.node("F1").commitIndex).toBe(m1.index); // F1 knows HW 1 only
    expect(h.records("F1")).toEqual(["m1"]);

    h.crash("F1");
    h.restart("F1");
    expect(h.logRecords("F1")).toEqual([
      { text: "m1", term: 1 },
      { text: "m2", term: 1 },
    ]); // not truncated to its HW on restart
    h.crash("L");
    h.drop = null;
    h.tick("F2", 10); // F2's lease on L expires; its own pre-vote fails (F1's log is longer)
    h.elect("F1"); // with F2's vote
    expect(h.node("F1").term).toBe(2);
    expect(h.records("F1")).toEqual(["m1", "m2"]);
    expect(h.records("F2")).toEqual(["m1", "m2"]);
    h.propose("F1", "m3");
    expect(h.records("F1").indexOf("m3")).toBe(2); // next produce: offset 2
  });

  it("scenario 2: a deposed leader truncates its uncommitted m2 and takes m3; offset 1 never means two records", () => {
    const h = new Harness(ABC);
    h.crash("C");
    h.elect("A"); // term 1, with B
    h.propose("A", "m1");
    expect(h.records("B")).toEqual(["m1"]);
    h.cut("A", "B");
    h.propose("A", "m2"); // appended on A only: uncommitted, never acked
    expect(h.node("A").commitIndex).toBeLessThan(h.node("A").lastIndex);
    h.crash("A");
    h.crash("B");
    h.heal();
    h.restart("B");
    h.restart("C");
    h.elect("B");
    expect(h.node("B").term).toBe(2);
    h.propose("B", "m3");
    expect(h.records("B")).toEqual(["m1", "m3"]);
    h.restart("A");
    h.tickAll(3);
    for (const id of ABC) {
      expect(h.logRecords(id)).toEqual([
        { text: "m1", term: 1 },
        { text: "m3", term: 2 },
      ]);
      expect(h.records(id)).toEqual(["m1", "m3"]); // nobody ever applied (served) m2
    }
  });
});

describe("C5 PreVote: a rejoining partitioned member does not depose the leader", () => {
  const run = (preVote: boolean) => {
    const disks = Object.fromEntries(ABC.map((id) => [id, diskWith(conf(ABC), 1, 0, [])]));
    const h = new Harness(ABC, { preVote, disks });
    h.elect("A");
    expect(h.node("A").term).toBe(2);
    h.isolate("C");
    const cTerms: number[] = [];
    let proposed = 0;
    h.tickAll(10 * 10, () => {
      cTerms.push(h.node("C").term);
      if (proposed < 5 && h.node("A").role === "leader") h.propose("A", `r${proposed++}`);
    });
    h.heal();
    const leaderTerms: string[] = [];
    h.tickAll(5, () => leaderTerms.push(`${h.node("A").role}@${h.node("A").term}`));
    return { h, cTerms, leaderTerms };
  };

  it("with PreVote: C stays at term 2, A stays leader of term 2 with no election, C catches up", () => {
    const { h, cTerms, leaderTerms } = run(true);
    expect(new Set(cTerms)).toEqual(new Set([2]));
    expect(leaderTerms).toEqual(Array(5).fill("leader@2"));
    for (const id of ABC) expect(h.node(id).term).toBe(2);
    expect(h.records("C")).toEqual(["r0", "r1", "r2", "r3", "r4"]);
  });

  it("without PreVote (the check's control): C inflates its term to >= 12 and A steps down", () => {
    const { h, cTerms } = run(false);
    expect(Math.max(...cTerms)).toBeGreaterThanOrEqual(12);
    expect(h.node("A").term).toBeGreaterThanOrEqual(12);
  });
});

describe("C6 PreVote liveness when a voter's term is behind (etcd-io/etcd#8243)", () => {
  /** C isolated at term 1 while A and B go through terms 2..5 (B leads 5 with new entries); then B crashes as C rejoins. */
  const setup = () => {
    const disks = Object.fromEntries(ABC.map((id) => [id, diskWith(conf(ABC), 1, 0, [])]));
    const h = new Harness(ABC, { disks });
    h.isolate("C");
    h.elect("A"); // term 2
    for (const [from, to] of [
      ["A", "B"],
      ["B", "A"],
      ["A", "B"],
    ] as const) {
      expect(h.node(from).transferLeadership(to)).toEqual({ ok: true });
      h.settle();
      expect(h.node(to).role).toBe("leader");
    }
    expect(h.node("B").term).toBe(5);
    h.propose("B", "x1");
    h.propose("B", "x2");
    h.crash("B");
    h.heal();
    expect(h.node("C").term).toBe(1);
    expect(h.node("A").term).toBe(5);
    expect(h.node("A").lastIndex).toBeGreaterThan(h.node("C").lastIndex);
    return h;
  };

  it("C pre-campaigns first: A's rejection carries term 5, C adopts it; A then leads term 6 within 2 election timeouts", () => {
    const h = setup();
    h.tick("C", 10); // C's election timeout: pre-vote at term 2
    expect(h.node("C").term).toBe(5);
    expect(h.node("C").role).toBe("follower");
    let rounds = 0;
    while (h.node("A").role !== "leader" && rounds < 20) {
      h.tickAll(1);
      rounds++;
    }
    expect(10 + rounds).toBeLessThanOrEqual(20);
    expect(h.node("A").term).toBe(6);
    expect(h.node("C").term).toBe(6);
    expect(h.node("C").leaderId).toBe("A");
  });

  it("A campaigns first: C grants the pre-vote, A leads term 6 and C follows", () => {
    const h = setup();
    let rounds = 0;
    while (h.node("A").role !== "leader" && rounds < 20) {
      h.tick("A");
      rounds++;
    }
    expect(rounds).toBeLessThanOrEqual(20);
    expect(h.node("A").term).toBe(6);
    expect(h.node("C").term).toBe(6);
    expect(h.node("C").leaderId).toBe("A");
    expect(h.records("C")).toEqual(["x1", "x2"]);
  });
});

describe("C7 InstallSnapshot: prefix snapshot and conflicting entry", () => {
  it("(a) a snapshot behind the follower's commit keeps its entries, does not reset the state machine, and succeeds", () => {
    const f = new RaftNode(
      { id: "F", random: () => 0 },
      { hardState: { term: 1, vote: null, commit: 10 }, snapshot: diskWith(conf(["F", "L", "M"]), 0, 0, []).snapshot, entries: normalEntries(1, 10, 1), applied: 10 },
    );
    f.step({ type: "snapshot", from: "L", to: "F", term: 1, meta: { index: 6, term: 1, conf: conf(["F", "L", "M"]) }, offset: 0, chunk: bytes("state@6"), done: true, totalBytes: 7 });
    const rd = f.ready();
    f.persisted(rd);
    expect(rd.snapshot).toBeUndefined();
    expect(rd.committedEntries).toEqual([]); // nothing re-applied
    expect(rd.messages).toEqual([{ type: "snapshotResp", from: "F", to: "L", term: 1, snapshotIndex: 6, nextOffset: 0, done: true, matchIndex: 10 }]);
    f.advance(rd);
    expect(f.lastIndex).toBe(10);
    expect(f.appliedIndex).toBe(10);
    expect(f.entries(7, 10).map(text)).toEqual(["e7", "e8", "e9", "e10"]);
  });

  it("(b) a snapshot whose last entry conflicts drops the whole log; the next append at 7/3 succeeds first time; exactly 1 InstallSnapshot", () => {
    const ids = ["L", "X", "F"];
    const snap = { meta: { index: 7, term: 3, conf: conf(ids) }, data: bytes("state@7") };
    const h = new Harness(ids, {
      disks: {
        L: { hardState: { term: 3, vote: null, commit: 7 }, snapshot: snap, entries: [] },
        X: { hardState: { term: 3, vote: null, commit: 7 }, snapshot: snap, entries: [] },
        F: diskWith(conf(ids), 2, 5, [...normalEntries(1, 5, 1), ...normalEntries(6, 8, 2, "stale")]),
      },
      applied: { F: 5 },
    });
    h.elect("L");
    const toF = h.sent.filter((m) => m.to === "F");
    const snapshots = toF.filter((m) => m.type === "snapshot");
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]).toMatchObject({ meta: { index: 7, term: 3 } });
    const f = h.node("F");
    expect(f.firstIndex).toBe(8); // whole log dropped: the snapshot covers 1..7
    expect(f.termAt(7)).toBe(3);
    // The first append after the snapshot: prevLogIndex 7, prevLogTerm 3, entries from 8; accepted.
    const after = toF.slice(toF.indexOf(snapshots[0]!) + 1).filter((m) => m.type === "append");
    expect(after[0]).toMatchObject({ prevLogIndex: 7, prevLogTerm: 3 });
    expect((after[0] as Extract<Message, { type: "append" }>).entries[0]?.index).toBe(8);
    const fromF = h.sent.filter((m) => m.from === "F" && m.type === "appendResp");
    const lastSnapResp = h.sent.findIndex((m) => m.from === "F" && m.type === "snapshotResp");
    expect(h.sent.slice(lastSnapResp).find((m) => m.from === "F" && m.type === "appendResp")).toMatchObject({ reject: false, index: 8 });
    expect(fromF.length).toBeGreaterThan(0);
    expect(f.lastIndex).toBe(8);
    expect(f.termAt(8)).toBe(4);
    expect(h.node("L").commitIndex).toBe(8);
  });
});

describe("C8 acks=1 versus visibility while only a minority is alive (core part)", () => {
  it("the leader's own durable write is not committed (HW stays) until a follower returns; then each record is committed once", () => {
    const h = new Harness(["L", "F1", "F2"]);
    h.elect("L");
    const hw0 = h.node("L").commitIndex;
    h.crash("F1");
    h.crash("F2");
    const r0 = h.propose("L", "r0");
    // acks=1 point: r0 is durable on the leader's disk ...
    expect(h.disks.get("L")!.entries.some((e) => e.index === r0.index && text(e) === "r0")).toBe(true);
    // ... but not committed: the high watermark does not move and nothing is applied (visible).
    h.propose("L", "r1"); // acks=all: never answered as a success while the followers are down
    for (let i = 0; i < 30; i++) {
      h.tickAll(1);
      expect(h.node("L").commitIndex).toBe(hw0);
      expect(h.records("L")).toEqual([]);
    }
    // CheckQuorum: a leader without a quorum steps down; a produce now gets NOT_LEADER (retriable).
    expect(h.node("L").role).not.toBe("leader");
    expect(h.node("L").propose(bytes("r2"))).toMatchObject({ ok: false, code: "notLeader" });
    h.restart("F1");
    h.tickAll(40);
    expect(h.node("L").role).toBe("leader"); // F1's log lacks r0/r1: only L can win
    expect(h.records("L")).toEqual(["r0", "r1"]);
    expect(h.records("F1")).toEqual(["r0", "r1"]);
  });
});
