/**
 * Raft groups of RaftMemberDO objects in one workerd (docs/RAFT.md, "Raft member Durable
 * Objects"): real objects, real alarms as the clock, real RPC between members, the `sequence`
 * state machine. Fault injection (EDGELOG_RAFT_FAULTS, on in this tier) crashes a leader.
 *
 * Times are not asserted (they depend on the machine's load); the failover time is printed and
 * recorded in docs/benchmarks.md.
 */
import { env, evictDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { sequenceCommand, type SequenceItem, type SequenceResult } from "../../durable-objects/raft/sequence.ts";
import type { ErrorResult } from "../../src/protocol/errors.ts";
import { raftMemberName, type RaftGroupConfig, type RaftMemberRpc } from "../../src/raft/group.ts";
import { bootstrapGroup, crashStartedMembers, ELECTION_TIMEOUT_MS, leaderOf, member, sequenceGroupConfig, sequenceOf, sleep, status, TICK_MS, trackMembers, until } from "./raft-helpers.ts";

/** A `sequence` group of `ids` (see raft-helpers), compacting every 8 entries. */
const groupConfig = (ids: string[], extra: Partial<RaftGroupConfig> = {}): RaftGroupConfig => sequenceGroupConfig(ids, { compactEveryEntries: 8, ...extra });

/** Bootstraps a new group of `ids` (its members stopped after the test). */
const startGroup = (ids: string[], extra: Partial<RaftGroupConfig> = {}): Promise<RaftGroupConfig> => bootstrapGroup(groupConfig(ids, extra));

afterEach(crashStartedMembers);

/**
 * A client of the group as Edgelog's gateway will be one: it proposes at the member it believes
 * leads, follows NOT_LEADER's `leaderId`, tries another member when one is down or no leader is
 * known, and retries REQUEST_TIMED_OUT with the same command at another member (the sequence
 * machine deduplicates by id). Counts what it saw.
 */
class Client {
  readonly groupId: string;
  readonly ids: string[];
  leader: string;
  readonly seen = { notLeader: 0, timedOut: 0, down: 0 };
  constructor(groupId: string, ids: string[]) {
    this.groupId = groupId;
    this.ids = ids;
    this.leader = ids[0]!;
  }

  async propose(id: string, value: string, timeoutMs = 20_000): Promise<{ index: number; result: SequenceResult }> {
    const deadline = Date.now() + timeoutMs;
    let next = 0;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`proposal ${id} not committed within ${timeoutMs} ms (${JSON.stringify(this.seen)})`);
      let r: Awaited<ReturnType<RaftMemberRpc["propose"]>>;
      try {
        r = await member(this.groupId, this.leader).propose(sequenceCommand(id, value));
      } catch {
        // Down: try the next member at once; pause only after a whole round.
        this.seen.down++;
        this.leader = this.ids[next++ % this.ids.length]!;
        if (next % this.ids.length === 0) await sleep(TICK_MS);
        continue;
      }
      if (r.ok) return { index: r.index, result: r.result as SequenceResult };
      const e: ErrorResult = r;
      if (e.code === "NOT_LEADER") {
        this.seen.notLeader++;
        const hinted = (e.details as { leaderId?: string | null } | undefined)?.leaderId;
        this.leader = typeof hinted === "string" && hinted !== this.leader ? hinted : this.ids[next++ % this.ids.length]!;
        if (hinted === null || hinted === undefined) await sleep(TICK_MS);
      } else if (e.code === "REQUEST_TIMED_OUT") {
        // Unknown outcome (the member may be stopped or cut off): the same command, elsewhere.
        this.seen.timedOut++;
        this.leader = this.ids[next++ % this.ids.length]!;
      } else {
        throw new Error(`proposal ${id}: ${JSON.stringify(e)}`);
      }
    }
  }
}

/** Waits until every member in `ids` has applied exactly `want` (ids in order), and returns their sequences. */
async function allApplied(groupId: string, ids: string[], want: string[]): Promise<SequenceItem[][]> {
  return until(`all members to apply ${want.length} commands`, async () => {
    const seqs = await Promise.all(ids.map((id) => sequenceOf(groupId, id)));
    return seqs.every((s) => s.length >= want.length) ? seqs : undefined;
  });
}

describe("a 3-member Raft group of Durable Objects", () => {
  it("elects a leader; N proposals through it are applied in order on every member; NOT_LEADER names the leader", async () => {
    const ids = ["m1", "m2", "m3"];
    const config = await startGroup(ids);
    const leader = await leaderOf(config.groupId, ids);
    expect(leader.conf).toEqual({ voters: ids, learners: [] });

    const N = 30;
    const want = Array.from({ length: N }, (_, i) => `c${i}`);
    const results: SequenceResult[] = [];
    for (const id of want) {
      const r = await member(config.groupId, leader.memberId).propose(sequenceCommand(id, `v-${id}`));
      expect(r.ok, JSON.stringify(r)).toBe(true);
      if (r.ok) results.push(r.result as SequenceResult);
    }
    // The leader answered each once it was committed and applied: sequence numbers 1..N, no duplicate.
    expect(results).toEqual(want.map((_, i) => ({ seq: i + 1, duplicate: false })));

    const seqs = await allApplied(config.groupId, ids, want);
    for (const s of seqs) expect(s.map((x) => [x.seq, x.id, x.value])).toEqual(want.map((id, i) => [i + 1, id, `v-${id}`]));
    // Raft indexes are the same on every member (the log is the same log).
    expect(new Set(seqs.map((s) => JSON.stringify(s.map((x) => x.index)))).size).toBe(1);

    // The same command again is applied once: answered with its original sequence number.
    const again = await member(config.groupId, leader.memberId).propose(sequenceCommand("c3", "v-c3"));
    expect(again.ok && again.result).toEqual({ seq: 4, duplicate: true });

    // A follower refuses with NOT_LEADER and names the leader (its id and its object's name).
    const follower = ids.find((id) => id !== leader.memberId)!;
    const refused = await member(config.groupId, follower).propose(sequenceCommand("x", "x"));
    expect(refused).toMatchObject({
      ok: false,
      code: "NOT_LEADER",
      details: { groupId: config.groupId, leaderId: leader.memberId, leaderName: raftMemberName(config.groupId, leader.memberId), term: leader.term },
    });

    // Linearizable read at the leader sees every applied command; a follower refuses it.
    const read = await member(config.groupId, leader.memberId).read({ limit: 1 });
    expect(read.ok && (read.result as { count: number }).count).toBe(N);
    expect(await member(config.groupId, follower).read({})).toMatchObject({ ok: false, code: "NOT_LEADER", details: { leaderId: leader.memberId } });

    // The log was compacted (every 8 applied entries) on every member.
    for (const id of ids) expect((await status(config.groupId, id))!.snapshotIndex).toBeGreaterThan(0);
  });

  it("the leader crashes: a new leader is elected, proposals resume, nothing committed is lost or applied twice", async () => {
    const ids = ["m1", "m2", "m3"];
    const config = await startGroup(ids);
    const first = await leaderOf(config.groupId, ids);
    const client = new Client(config.groupId, ids);
    client.leader = first.memberId;
    const committed: string[] = [];
    for (let i = 0; i < 10; i++) {
      await client.propose(`a${i}`, `a${i}`);
      committed.push(`a${i}`);
    }

    // Fault: the leader acts crashed (its memory is gone; calls to it fail).
    const faultAt = Date.now();
    const crashed = await member(config.groupId, first.memberId).setFaults({ crashed: true });
    expect(crashed).toEqual({ ok: true, faults: { crashed: true } });
    const down = await member(config.groupId, first.memberId)
      .status()
      .then(
        () => "answered",
        (err: unknown) => String(err),
      );
    expect(down).toMatch(/crashed/);

    const r = await client.propose("b0", "b0");
    const failoverMs = Date.now() - faultAt;
    committed.push("b0");
    const survivors = ids.filter((id) => id !== first.memberId);
    const second = await leaderOf(config.groupId, ids);
    expect(second.memberId).not.toBe(first.memberId);
    expect(second.term).toBeGreaterThan(first.term);
    expect(r.result).toEqual({ seq: 11, duplicate: false });
    console.log(
      `raft failover: ${failoverMs} ms from the leader's crash to the first committed proposal (${(failoverMs / ELECTION_TIMEOUT_MS).toFixed(2)}x the election timeout of ${ELECTION_TIMEOUT_MS} ms, randomised to [${ELECTION_TIMEOUT_MS}, ${2 * ELECTION_TIMEOUT_MS})); client saw ${JSON.stringify(client.seen)}`,
    );

    for (let i = 1; i < 10; i++) {
      await client.propose(`b${i}`, `b${i}`);
      committed.push(`b${i}`);
    }
    const onSurvivors = await allApplied(config.groupId, survivors, committed);
    for (const s of onSurvivors) expect(s.map((x) => x.id)).toEqual(committed);

    // The old leader restarts from its durable state and catches up (from a snapshot: the
    // others compacted past what it holds), with every entry once, in order.
    expect(await member(config.groupId, first.memberId).setFaults({})).toEqual({ ok: true, faults: {} });
    const all = await allApplied(config.groupId, ids, committed);
    for (const s of all) {
      expect(s.map((x) => x.id)).toEqual(committed);
      expect(s.map((x) => x.seq)).toEqual(committed.map((_, i) => i + 1));
    }
    const back = (await status(config.groupId, first.memberId))!;
    expect(back.role).toBe("follower");
    expect(back.leaderId).toBe(second.memberId);
  });

  it("a member evicted from memory restarts from its journal: same term, log and applied state", async () => {
    const ids = ["m1", "m2", "m3"];
    const config = await startGroup(ids);
    const leader = await leaderOf(config.groupId, ids);
    const client = new Client(config.groupId, ids);
    client.leader = leader.memberId;
    const want = Array.from({ length: 12 }, (_, i) => `e${i}`);
    for (const id of want) await client.propose(id, id);
    await allApplied(config.groupId, ids, want);
    const follower = ids.find((id) => id !== leader.memberId)!;
    const before = (await status(config.groupId, follower))!;
    await evictDurableObject(env.RAFT_MEMBER.get(env.RAFT_MEMBER.idFromName(raftMemberName(config.groupId, follower))));
    const after = (await status(config.groupId, follower))!;
    expect({ term: after.term, lastIndex: after.lastIndex >= before.lastIndex, applied: after.appliedIndex >= before.appliedIndex }).toEqual({
      term: before.term,
      lastIndex: true,
      applied: true,
    });
    expect((await sequenceOf(config.groupId, follower)).map((x) => x.id)).toEqual(want);
  });

  it("membership: a new member joins as a learner, catches up, is promoted; then an old one is removed", async () => {
    const ids = ["m1", "m2", "m3"];
    const config = await startGroup(ids);
    const leader = await leaderOf(config.groupId, ids);
    const client = new Client(config.groupId, ids);
    client.leader = leader.memberId;
    const want = Array.from({ length: 12 }, (_, i) => `j${i}`);
    for (const id of want) await client.propose(id, id);

    // m4 is not in the configuration: it bootstraps empty and learns the group from the leader.
    trackMembers(config.groupId, ["m4"]);
    const joined = await member(config.groupId, "m4").bootstrap(config, "m4");
    expect(joined.ok && joined.status.conf).toEqual({ voters: [], learners: [] });
    const added = await member(config.groupId, leader.memberId).changeMembership({ type: "addLearner", node: "m4" }, "weur");
    expect(added).toMatchObject({ ok: true, conf: { voters: ids, learners: ["m4"] } });
    // It catches up (from a snapshot: the leader compacted its log every 8 entries).
    const onM4 = await allApplied(config.groupId, ["m4"], want);
    expect(onM4[0]!.map((x) => x.id)).toEqual(want);
    // A learner does not vote and does not lead; a proposal at it names the leader.
    expect(await member(config.groupId, "m4").propose(sequenceCommand("n", "n"))).toMatchObject({ ok: false, code: "NOT_LEADER", details: { leaderId: leader.memberId } });

    expect(await member(config.groupId, leader.memberId).changeMembership({ type: "promote", node: "m4" })).toMatchObject({
      ok: true,
      conf: { voters: ["m1", "m2", "m3", "m4"], learners: [] },
    });
    const gone = ids.find((id) => id !== leader.memberId)!;
    expect(await member(config.groupId, leader.memberId).changeMembership({ type: "remove", node: gone })).toMatchObject({ ok: true });
    const now = ["m1", "m2", "m3", "m4"].filter((id) => id !== gone);
    await client.propose("after", "after");
    const seqs = await allApplied(config.groupId, now, [...want, "after"]);
    for (const s of seqs) expect(s.map((x) => x.id)).toEqual([...want, "after"]);
    for (const id of now) expect((await status(config.groupId, id))!.conf).toEqual({ voters: now, learners: [] });
    // A change that does not fit the configuration is refused with nothing appended.
    expect(await member(config.groupId, leader.memberId).changeMembership({ type: "promote", node: "m9" })).toMatchObject({
      ok: false,
      code: "INVALID_REQUEST",
      details: { reason: "invalidConfChange" },
    });
  });

  it("a paused leader loses its leadership; messages dropped at a rate and delayed still let the group commit", async () => {
    const ids = ["m1", "m2", "m3"];
    const config = await startGroup(ids);
    const first = await leaderOf(config.groupId, ids);
    // Every member drops a third of what it sends, and one delays all of it by 30 ms: Raft's
    // resends carry the group through.
    for (const id of ids) expect((await member(config.groupId, id).setFaults({ dropRate: 0.33, ...(id === "m3" ? { delayMs: 30 } : {}) })).ok).toBe(true);
    const client = new Client(config.groupId, ids);
    client.leader = first.memberId;
    const want = Array.from({ length: 5 }, (_, i) => `d${i}`);
    for (const id of want) await client.propose(id, id);
    for (const id of ids) expect((await member(config.groupId, id).setFaults({})).ok).toBe(true);

    // The leader stops (SIGSTOP-like): the others elect a new leader; when it resumes it follows.
    expect(await member(config.groupId, first.memberId).setFaults({ paused: true })).toEqual({ ok: true, faults: { paused: true } });
    const others = ids.filter((id) => id !== first.memberId);
    const second = await leaderOf(config.groupId, others);
    expect(second.memberId).not.toBe(first.memberId);
    client.leader = second.memberId;
    await client.propose("p0", "p0");
    expect((await member(config.groupId, first.memberId).setFaults({})).ok).toBe(true);
    const all = await allApplied(config.groupId, ids, [...want, "p0"]);
    for (const s of all) expect(s.map((x) => x.id)).toEqual([...want, "p0"]);
    const back = await until("the resumed member to follow", async () => {
      const st = await status(config.groupId, first.memberId);
      return st !== null && st.role === "follower" && st.leaderId !== null ? st : undefined;
    });
    expect(back.term).toBeGreaterThanOrEqual(second.term);
  });

  it("link faults: a follower cut off from both peers keeps its term (PreVote) while the others commit, and catches up after the heal with no election; a leader that hears no one (one-way) steps down", async () => {
    const ids = ["m1", "m2", "m3"];
    const config = await startGroup(ids);
    const first = await leaderOf(config.groupId, ids);
    const client = new Client(config.groupId, ids);
    client.leader = first.memberId;
    await client.propose("a0", "a0");
    const [f, other] = ids.filter((id) => id !== first.memberId) as [string, string];
    const peers = ids.filter((id) => id !== f);
    expect(await member(config.groupId, f).setFaults({ dropTo: peers, dropFrom: peers })).toEqual({ ok: true, faults: { dropTo: peers, dropFrom: peers } });
    const cut = Date.now() + 5 * ELECTION_TIMEOUT_MS;
    const want = ["a0"];
    for (let i = 0; Date.now() < cut; i++) {
      if (i < 5) {
        await client.propose(`b${i}`, `b${i}`);
        want.push(`b${i}`);
      }
      expect((await status(config.groupId, f))!.term).toBe(first.term);
      expect((await status(config.groupId, first.memberId))!).toMatchObject({ role: "leader", term: first.term });
      await sleep(50);
    }
    expect((await member(config.groupId, f).setFaults({})).ok).toBe(true);
    const seqs = await allApplied(config.groupId, ids, want);
    for (const s of seqs) expect(s.map((x) => x.id)).toEqual(want);
    for (const id of ids) expect((await status(config.groupId, id))!.term).toBe(first.term);

    // One-way: the leader still sends, but hears no one: CheckQuorum makes it step down, and the
    // two others (which hear nothing from it either way once it stops) elect a new leader.
    expect((await member(config.groupId, first.memberId).setFaults({ dropFrom: [f, other] })).ok).toBe(true);
    // An idle group is quiesced, and a quiesced leader runs no CheckQuorum round (nothing needs a
    // leader; docs/RAFT.md "Quiescence"): a read wakes it. The read is never confirmed (no answer
    // arrives), and is refused when the leader steps down.
    const read = member(config.groupId, first.memberId).read({});
    await until("the leader that hears no one to step down", async () => {
      const st = await status(config.groupId, first.memberId);
      return st !== null && st.role !== "leader" ? true : undefined;
    });
    expect(await read).toMatchObject({ ok: false, code: "NOT_LEADER" });
    const second = await leaderOf(config.groupId, [f, other]);
    expect(second.term).toBeGreaterThan(first.term);
    expect((await member(config.groupId, first.memberId).setFaults({})).ok).toBe(true);
    client.leader = second.memberId;
    await client.propose("c0", "c0");
    const all = await allApplied(config.groupId, ids, [...want, "c0"]);
    for (const s of all) expect(s.map((x) => x.id)).toEqual([...want, "c0"]);
  });

  it("a single-member group elects itself and commits alone", async () => {
    const config = await startGroup(["solo"]);
    const leader = await leaderOf(config.groupId, ["solo"]);
    expect(leader.memberId).toBe("solo");
    const r = await member(config.groupId, "solo").propose(sequenceCommand("only", "1"));
    expect(r.ok && r.result).toEqual({ seq: 1, duplicate: false });
  });

  it("refuses a bad configuration, a second bootstrap as another member, and bad faults", async () => {
    const config = groupConfig(["m1", "m2"]);
    trackMembers(config.groupId, ["m1"]);
    const m = member(config.groupId, "m1");
    expect(await m.bootstrap({ ...config, members: [{ id: "m1" }, { id: "m1" }] }, "m1")).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect(await m.bootstrap({ ...config, stateMachine: "nope" }, "m1")).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect(await m.bootstrap({ ...config, tickMs: 1 }, "m1")).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect(await m.propose(sequenceCommand("a", "b"))).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect((await m.bootstrap(config, "m1")).ok).toBe(true);
    expect((await m.bootstrap(config, "m1")).ok).toBe(true); // the same again: a no-op
    expect(await m.bootstrap(config, "m2")).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { memberId: "m1" } });
    expect(await m.setFaults({ dropRate: 2 })).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect(await m.setFaults({ dropTo: [42 as unknown as string] })).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
  });
});
