/**
 * The pure Raft core (src/raft/): its persistence contract, and each feature on a scripted
 * group (test/sim/harness.ts). The random simulation is the `sim` project (test/sim/).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RaftContractError, RaftNode, bootstrapStorage, type Message } from "../../src/raft/index.ts";
import { Harness, bytes, diskWith, normalEntries, text } from "../sim/harness.ts";
import { Rng } from "../sim/rng.ts";

const solo = () => new RaftNode({ id: "A", random: () => 0 }, bootstrapStorage({ voters: ["A"], learners: [] }));

describe("persistence contract", () => {
  it("a Ready's messages cannot be read before its state is persisted, and advance needs the persist", () => {
    const h = new Harness(["A", "B", "C"]);
    const a = h.node("A");
    for (let i = 0; i < 10; i++) a.tick(); // pre-vote: nothing to persist yet
    const pre = a.ready();
    expect(pre.mustPersist).toBe(false);
    expect(pre.messages.map((m) => m.type)).toEqual(["preVote", "preVote"]);
    a.advance(pre);
    a.step({ type: "preVoteResp", from: "B", to: "A", term: 1, granted: true });
    const rd = a.ready(); // candidate: term 1 and the vote for itself must be durable first
    expect(rd.hardState).toEqual({ term: 1, vote: "A", commit: 0 });
    expect(() => rd.messages).toThrow(RaftContractError);
    expect(() => a.advance(rd)).toThrow(RaftContractError);
    expect(() => a.tick()).toThrow(RaftContractError); // no input between ready() and advance()
    expect(() => a.step({ type: "voteResp", from: "B", to: "A", term: 1, granted: true })).toThrow(RaftContractError);
    a.persisted(rd);
    expect(rd.messages.map((m) => [m.type, m.to, m.term])).toEqual([
      ["vote", "B", 1],
      ["vote", "C", 1],
    ]);
    a.advance(rd);
  });

  it("a member that crashes after persisting its vote, before sending it, does not vote again in that term", () => {
    const h = new Harness(["A", "B", "C"], { preVote: false });
    // B's vote for A is persisted, then lost with B's crash; C hears nothing of term 1.
    h.drop = (m) => (m.from === "B" && m.type === "voteResp") || (m.from === "A" && m.to === "C");
    h.tick("A", 10);
    expect(h.disks.get("B")!.hardState).toEqual({ term: 1, vote: "A", commit: 0 });
    h.crash("B");
    h.restart("B");
    h.drop = (m) => m.from === "A";
    h.tick("C", 10); // C campaigns in term 1 too
    expect(h.node("C").term).toBe(1);
    expect(h.sent.filter((m) => m.type === "voteResp" && m.from === "B" && m.to === "C")).toMatchObject([{ term: 1, granted: false }]);
    expect(h.node("C").role).toBe("candidate");
  });

  it("the only voter campaigns at its first tick; one of three waits its election timeout", () => {
    const a = solo();
    a.tick();
    expect(a.role).toBe("leader");
    const h = new Harness(["A", "B", "C"]);
    h.tick("A", 1);
    expect(h.node("A").role).toBe("follower");
    expect(h.sent.filter((m) => m.from === "A")).toEqual([]);
  });

  it("a leader counts its own entry only once durable: a single member commits after advance", () => {
    const a = solo();
    for (let i = 0; i < 10; i++) a.tick();
    expect(a.role).toBe("leader");
    let rd = a.ready();
    expect(rd.entries.map((e) => e.type)).toEqual(["noop"]);
    expect(rd.committedEntries).toEqual([]);
    a.persisted(rd);
    a.advance(rd);
    expect(a.commitIndex).toBe(1);
    const p = a.propose(bytes("x"));
    expect(p).toEqual({ ok: true, index: 2, term: 1 });
    rd = a.ready();
    expect(rd.committedEntries.map((e) => e.index)).toEqual([1]);
    a.persisted(rd);
    a.advance(rd);
    rd = a.ready();
    expect(rd.committedEntries.map(text)).toEqual(["x"]);
  });

  it("refuses a message addressed to another member", () => {
    const a = solo();
    expect(() => a.step({ type: "heartbeat", from: "B", to: "Z", term: 1, commit: 0, readSeq: 0 })).toThrow(RaftContractError);
  });
});

describe("election, replication and commit", () => {
  it("elects one leader and replicates proposals to every member", () => {
    const h = new Harness(["A", "B", "C"]);
    h.elect("B");
    expect(["A", "C"].map((id) => h.node(id).leaderId)).toEqual(["B", "B"]);
    h.propose("B", "r0");
    h.propose("B", "r1");
    for (const id of ["A", "B", "C"]) expect(h.records(id)).toEqual(["r0", "r1"]);
    expect(h.node("A").propose(bytes("no"))).toEqual({ ok: false, code: "notLeader", leaderId: "B" });
  });

  it("backtracks a long divergent follower log in a few round trips (conflict term/index hints)", () => {
    const ids = ["L", "X", "F"];
    const conf = { voters: ids, learners: [] };
    const common = normalEntries(1, 5, 1);
    const h = new Harness(ids, {
      disks: {
        L: diskWith(conf, 3, 5, [...common, ...normalEntries(6, 60, 3, "good")]),
        X: diskWith(conf, 3, 5, [...common, ...normalEntries(6, 60, 3, "good")]),
        F: diskWith(conf, 2, 5, [...common, ...normalEntries(6, 80, 2, "stale")]),
      },
      applied: { L: 5, X: 5, F: 5 },
    });
    h.elect("L");
    const rejects = h.sent.filter((m) => m.from === "F" && m.type === "appendResp" && m.reject);
    expect(rejects.length).toBeLessThanOrEqual(2);
    expect(h.node("F").termAt(60)).toBe(3);
    expect(h.node("F").lastIndex).toBe(61);
    expect(h.records("F").slice(0, 2)).toEqual(["good6", "good7"]);
  });
});

describe("commit only entries of the current term (Raft paper, Fig. 8)", () => {
  /** S1 leads term 4 holding (2, term 2), also on S2; S5 holds (2, term 3); S3 and S4 hold only index 1. */
  const fig8 = (mutation?: "commitOldTerm") => {
    const ids = ["S1", "S2", "S3", "S4", "S5"];
    const conf = { voters: ids, learners: [] };
    const e1 = normalEntries(1, 1, 1);
    const h = new Harness(ids, {
      mutation,
      disks: {
        S1: diskWith(conf, 3, 1, [...e1, ...normalEntries(2, 2, 2, "old")]),
        S2: diskWith(conf, 3, 1, [...e1, ...normalEntries(2, 2, 2, "old")]),
        S3: diskWith(conf, 3, 1, e1),
        S4: diskWith(conf, 3, 1, e1),
        S5: diskWith(conf, 3, 1, [...e1, ...normalEntries(2, 2, 3, "rival")]),
      },
      applied: { S1: 1, S2: 1, S3: 1, S4: 1, S5: 1 },
    });
    h.drop = (m) => m.from === "S1" && m.type === "append"; // S1's appends are scripted below
    h.elect("S1");
    expect(h.node("S1").term).toBe(4);
    // S2 and S3 acknowledge index 2 (term 2): it is now on a majority (S1, S2, S3) ...
    const ack = (from: string, index: number) => h.node("S1").step({ type: "appendResp", from, to: "S1", term: 4, index, reject: false, hintIndex: 0, hintTerm: 0 });
    ack("S2", 2);
    ack("S3", 2);
    return { h, ack };
  };

  it("does not commit an older term's entry by counting replicas: S5 could still be elected and overwrite it", () => {
    const { h, ack } = fig8();
    expect(h.node("S1").commitIndex).toBe(1);
    // ... and it commits together with the leader's own no-op (index 3, term 4) once that is on a majority.
    ack("S2", 3);
    ack("S3", 3);
    expect(h.node("S1").commitIndex).toBe(3);
  });

  it("the commitOldTerm mutant does commit it (the bug the mutation check plants)", () => {
    const { h } = fig8("commitOldTerm");
    expect(h.node("S1").commitIndex).toBe(2);
  });
});

describe("membership (single-server changes) and learners", () => {
  it("refuses a change before the leader committed an entry of its term, and a second change while one is uncommitted", () => {
    const a = solo();
    for (let i = 0; i < 10; i++) a.tick();
    expect(a.proposeConfChange({ type: "addLearner", node: "B" })).toMatchObject({ ok: false, code: "noCommitInTerm" });
    const rd = a.ready();
    a.persisted(rd);
    a.advance(rd); // the no-op commits
    expect(a.proposeConfChange({ type: "addLearner", node: "B" })).toMatchObject({ ok: true, index: 2 });
    expect(a.conf).toEqual({ voters: ["A"], learners: ["B"] }); // effective when appended
    expect(a.proposeConfChange({ type: "promote", node: "B" })).toMatchObject({ ok: false, code: "confChangePending" });
    expect(a.matchOf("B")).toBe(0);
  });

  it("a learner catches up without voting or campaigning, then is promoted; a removed leader steps down", () => {
    const rng = new Rng(7);
    const h = new Harness(["A", "B", "C", "D"], {
      disks: {
        A: diskWith({ voters: ["A", "B", "C"], learners: [] }, 0, 0, []),
        B: diskWith({ voters: ["A", "B", "C"], learners: [] }, 0, 0, []),
        C: diskWith({ voters: ["A", "B", "C"], learners: [] }, 0, 0, []),
        D: diskWith({ voters: [], learners: [] }, 0, 0, []),
      },
      random: (n) => rng.int(n), // randomised timeouts, so the election after A leaves does not split forever
    });
    h.elect("A");
    h.propose("A", "r0");
    expect(h.node("A").proposeConfChange({ type: "addLearner", node: "D" }).ok).toBe(true);
    h.settle();
    expect(h.records("D")).toEqual(["r0"]);
    expect(h.node("D").conf).toEqual({ voters: ["A", "B", "C"], learners: ["D"] });
    h.tick("D", 100); // a learner never campaigns
    expect(h.node("D").role).toBe("follower");
    expect(h.sent.some((m) => m.from === "D" && (m.type === "preVote" || m.type === "vote"))).toBe(false);
    expect(h.node("A").proposeConfChange({ type: "promote", node: "D" }).ok).toBe(true);
    h.settle();
    expect(h.node("D").conf.voters).toEqual(["A", "B", "C", "D"]);
    // The leader removes itself: it leads until the change commits, then steps down.
    expect(h.node("A").proposeConfChange({ type: "remove", node: "A" }).ok).toBe(true);
    h.settle();
    expect(h.node("A").role).toBe("follower");
    expect(h.node("B").conf.voters).toEqual(["B", "C", "D"]);
    h.tickAll(40);
    const leaders = ["B", "C", "D"].filter((id) => h.node(id).role === "leader");
    expect(leaders).toHaveLength(1);
    h.propose(leaders[0]!, "r1");
    expect(h.records("D")).toEqual(["r0", "r1"]);
    h.tick("A", 100); // removed: never campaigns again
    expect(h.node("A").role).toBe("follower");
  });

  it("validates changes against the configuration", () => {
    const h = new Harness(["A"]);
    h.elect("A");
    expect(h.node("A").proposeConfChange({ type: "promote", node: "Z" })).toMatchObject({ ok: false, code: "invalidConfChange" });
    expect(h.node("A").proposeConfChange({ type: "addVoter", node: "A" })).toMatchObject({ ok: false, code: "invalidConfChange" });
    expect(h.node("A").proposeConfChange({ type: "remove", node: "A" })).toMatchObject({ ok: false, code: "invalidConfChange", reason: "cannot remove the last voter" });
  });
});

describe("leadership transfer, ReadIndex, CheckQuorum", () => {
  it("hands leadership over with TimeoutNow; proposals are refused meanwhile", () => {
    const h = new Harness(["A", "B", "C"]);
    h.elect("A");
    h.propose("A", "r0");
    h.cut("A", "B"); // B is behind when the transfer starts
    h.propose("A", "r1");
    expect(h.node("A").transferLeadership("B")).toEqual({ ok: true });
    expect(h.node("A").propose(bytes("r2"))).toEqual({ ok: false, code: "transferInProgress", leaderId: "B" });
    h.heal();
    h.tickAll(1); // heartbeat answers let A catch B up, then TimeoutNow
    expect(h.node("B").role).toBe("leader");
    expect(h.node("B").term).toBe(2);
    expect(h.sent.filter((m) => m.type === "timeoutNow")).toHaveLength(1);
    expect(h.records("B")).toEqual(["r0", "r1"]);
  });

  it("confirms a read with a quorum round and gives the commit index to wait for", () => {
    const h = new Harness(["A", "B", "C"]);
    h.elect("A");
    const p = h.propose("A", "r0");
    expect(h.node("A").readIndex("q1")).toEqual({ ok: true });
    h.settle();
    expect(h.readStates.get("A")).toEqual([{ index: p.index, ctx: "q1" }]);
    expect(h.node("B").readIndex("q2")).toEqual({ ok: false, code: "notLeader", leaderId: "A" });
  });

  it("a partitioned leader never confirms a read, steps down within an election timeout and drops the read", () => {
    const h = new Harness(["A", "B", "C"]);
    h.elect("A");
    h.isolate("A");
    h.node("A").readIndex("q1");
    let dropped: string[] = [];
    for (let i = 0; i < 20 && h.node("A").role === "leader"; i++) {
      const a = h.node("A");
      a.tick();
      const rd = a.ready();
      a.persisted(rd);
      expect(rd.readStates).toEqual([]);
      dropped = dropped.concat(rd.droppedReads);
      a.advance(rd);
    }
    expect(h.node("A").role).toBe("follower");
    expect(dropped).toEqual(["q1"]);
  });
});

describe("snapshots", () => {
  it("sends a snapshot in chunks of at most maxSnapshotChunkBytes and the follower installs it", () => {
    const h = new Harness(["A", "B", "C"], { maxSnapshotChunkBytes: 16 });
    h.elect("A");
    h.crash("C");
    for (let i = 0; i < 12; i++) h.propose("A", `record-${i}`);
    const snap = h.compact("A");
    expect(snap.data.byteLength).toBeGreaterThan(100);
    h.restart("C");
    h.tickAll(2);
    const chunks = h.sent.filter((m): m is Extract<Message, { type: "snapshot" }> => m.type === "snapshot" && m.to === "C");
    expect(chunks.length).toBe(Math.ceil(snap.data.byteLength / 16));
    expect(chunks.every((c) => c.chunk.byteLength <= 16)).toBe(true);
    expect(chunks.map((c) => c.offset)).toEqual(chunks.map((_, i) => i * 16));
    expect(h.disks.get("C")!.snapshot.data).toEqual(snap.data);
    expect(h.node("C").firstIndex).toBe(snap.meta.index + 1);
    h.propose("A", "after");
    expect(h.records("C").at(-1)).toBe("after");
  });
});

describe("test seams stay out of production", () => {
  it("no production file imports the simulator or its mutants, or subclasses RaftNode", () => {
    const root = join(import.meta.dirname, "../..");
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith(".ts")) files.push(p);
      }
    };
    walk(join(root, "src"));
    walk(join(root, "durable-objects"));
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const src = readFileSync(f, "utf8");
      expect(src, f).not.toMatch(/from\s+["'][^"']*(test\/|mutants)|extends\s+RaftNode\b/);
    }
  });
});
