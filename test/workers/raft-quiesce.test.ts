/**
 * Quiescence of idle Raft groups of RaftMemberDO objects (docs/RAFT.md "Quiescence"), in one
 * workerd with real alarms: an idle group goes quiet (every member quiesced, its tick timer at
 * the quiesced period, few ticks), wakes on a proposal, and still fails over when its leader is
 * fault-injected while quiesced (with a request, and with none: missed quiesce heartbeats).
 *
 * Times are printed, not asserted (the machine is shared); the tick counts compare with the
 * configured periods only, which load can lower but never raise.
 */
import { env, evictDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { sequenceCommand } from "../../durable-objects/raft/sequence.ts";
import { raftMemberName, type RaftGroupConfig, type RaftMemberStatus } from "../../src/raft/group.ts";
import {
  bootstrapGroup,
  crashStartedMembers,
  ELECTION_TIMEOUT_MS,
  leaderOf,
  member,
  QUIESCED_TICK_MS,
  sequenceGroupConfig,
  sequenceOf as sequenceItems,
  sleep,
  status,
  statuses,
  TICK_MS,
  until,
} from "./raft-helpers.ts";

const IDS = ["m1", "m2", "m3"];

afterEach(crashStartedMembers);

/** Bootstraps a new `sequence` group of IDS (see raft-helpers; its members stopped after the test); answers its group id. */
async function startGroup(extra: Partial<RaftGroupConfig> = {}): Promise<string> {
  return (await bootstrapGroup(sequenceGroupConfig(IDS, extra, "q"))).groupId;
}

/** Waits until every member in `ids` is quiesced. */
async function allQuiesced(groupId: string, ids = IDS): Promise<RaftMemberStatus[]> {
  return until("every member to quiesce", async () => {
    const all = await statuses(groupId, ids);
    return all.length === ids.length && all.every((s) => s.quiesced) ? all : undefined;
  });
}

/** Proposes at whichever member leads, following NOT_LEADER and skipping members that are down; the sequence machine deduplicates retries. */
async function propose(groupId: string, id: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let at = IDS[0]!;
  let next = 0;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`proposal ${id} not committed within ${timeoutMs} ms`);
    try {
      const r = await member(groupId, at).propose(sequenceCommand(id, id));
      if (r.ok) return;
      const hinted = (r.details as { leaderId?: string | null } | undefined)?.leaderId;
      at = typeof hinted === "string" && hinted !== at ? hinted : IDS[next++ % IDS.length]!;
      if (typeof hinted !== "string") await sleep(TICK_MS);
    } catch {
      at = IDS[next++ % IDS.length]!;
      await sleep(TICK_MS / 5);
    }
  }
}

/** The ids of the commands member `id` has applied, in order. */
const sequenceOf = async (groupId: string, id: string): Promise<string[]> => (await sequenceItems(groupId, id)).map((x) => x.id);

describe("quiescence of a Raft group of Durable Objects", () => {
  it("an idle group goes quiet: every member quiesced, its tick timer at the quiesced period, ticking at most at that rate; a proposal wakes it and it goes quiet again", async () => {
    const groupId = await startGroup();
    const leader = await leaderOf(groupId, IDS);
    await propose(groupId, "a");
    const quiet = await allQuiesced(groupId);
    for (const s of quiet) {
      expect(s.term).toBe(leader.term);
      // The pending tick is the slow one (set from a quiesced tick or the quiesce itself), never the 50 ms one.
      expect(s.nextTickInMs).not.toBeNull();
      expect(s.nextTickInMs!).toBeLessThanOrEqual(QUIESCED_TICK_MS);
    }
    expect(quiet.filter((s) => s.nextTickInMs! > TICK_MS).length).toBeGreaterThan(0);

    // Over a window, a quiesced member ticks at most once per quiesced period (+1 for the edge).
    const windowMs = 3 * QUIESCED_TICK_MS;
    const before = await statuses(groupId, IDS);
    await sleep(windowMs);
    const after = await statuses(groupId, IDS);
    for (let i = 0; i < IDS.length; i++) {
      expect(after[i]!.quiesced).toBe(true);
      expect(after[i]!.ticks - before[i]!.ticks, IDS[i]).toBeLessThanOrEqual(windowMs / QUIESCED_TICK_MS + 1);
    }
    console.log(
      `raft quiescence: ${IDS.map((id, i) => `${id} ${after[i]!.ticks - before[i]!.ticks}`).join(", ")} ticks in ${windowMs} ms quiesced (${windowMs / TICK_MS} at the ${TICK_MS} ms tick)`,
    );

    // A proposal wakes the group; the entry is applied everywhere; the group goes quiet again.
    const woke = Date.now();
    await propose(groupId, "b");
    console.log(`raft quiescence: a proposal at a quiesced leader committed in ${Date.now() - woke} ms`);
    await allQuiesced(groupId);
    for (const id of IDS) expect(await sequenceOf(groupId, id)).toEqual(["a", "b"]);
    expect((await leaderOf(groupId, IDS)).term).toBe(leader.term);
  });

  it("a group with quiescence off keeps ticking every tick (the control)", async () => {
    const groupId = await startGroup({ quiesce: false });
    await leaderOf(groupId, IDS);
    await propose(groupId, "a");
    const windowMs = 3 * QUIESCED_TICK_MS;
    const before = await statuses(groupId, IDS);
    await sleep(windowMs);
    const after = await statuses(groupId, IDS);
    for (let i = 0; i < IDS.length; i++) {
      expect(after[i]!.quiesced).toBe(false);
      expect(after[i]!.ticks - before[i]!.ticks, IDS[i]).toBeGreaterThan(windowMs / QUIESCED_TICK_MS + 1);
    }
  });

  it("a quiesced member evicted from memory (and then the leader) restarts awake, finds its leader again without an election, and the group goes quiet again", async () => {
    const groupId = await startGroup();
    const leader = await leaderOf(groupId, IDS);
    await propose(groupId, "a");
    await allQuiesced(groupId);
    const evict = (id: string) => evictDurableObject(env.RAFT_MEMBER.get(env.RAFT_MEMBER.idFromName(raftMemberName(groupId, id))));
    const follower = IDS.find((id) => id !== leader.memberId)!;
    await evict(follower);
    const back = (await status(groupId, follower))!;
    expect(back.quiesced).toBe(false);
    expect(back.nextTickInMs!).toBeLessThanOrEqual(TICK_MS);
    await allQuiesced(groupId);
    // No election: its pre-vote (if it campaigned before hearing the leader) cannot raise a term.
    for (const s of await statuses(groupId, IDS)) expect([s.memberId, s.term, s.leaderId]).toEqual([s.memberId, leader.term, leader.memberId]);
    // The leader evicted too: it restarts as a follower (leadership is not durable), the group
    // elects (it may be the same member, in a later term) and goes quiet again; nothing lost.
    await evict(leader.memberId);
    const again = await leaderOf(groupId, IDS);
    await allQuiesced(groupId);
    for (const s of await statuses(groupId, IDS)) expect(s.term, s.memberId).toBeGreaterThanOrEqual(leader.term);
    for (const s of await statuses(groupId, IDS)) expect(s.leaderId, s.memberId).toBe(again.memberId);
    await propose(groupId, "b");
    for (const id of IDS) expect(await sequenceOf(groupId, id)).toEqual(["a", "b"]);
  });

  it("the leader crashes while quiesced and a client proposes at once: the request wakes the followers, one is elected, nothing committed is lost", async () => {
    const groupId = await startGroup();
    const first = await leaderOf(groupId, IDS);
    for (const id of ["a", "b", "c"]) await propose(groupId, id);
    await allQuiesced(groupId);
    const faultAt = Date.now();
    expect((await member(groupId, first.memberId).setFaults({ crashed: true })).ok).toBe(true);
    await propose(groupId, "d");
    const failoverMs = Date.now() - faultAt;
    const survivors = IDS.filter((id) => id !== first.memberId);
    const second = await leaderOf(groupId, survivors);
    expect(second.term).toBeGreaterThan(first.term);
    console.log(
      `raft quiescence: first request after an idle period with the leader crashed committed after ${failoverMs} ms (${(failoverMs / ELECTION_TIMEOUT_MS).toFixed(2)}x the election timeout of ${ELECTION_TIMEOUT_MS} ms)`,
    );
    for (const id of survivors) expect(await sequenceOf(groupId, id)).toEqual(["a", "b", "c", "d"]);
    // The crashed member restarts from its journal and catches up; the group goes quiet again.
    expect((await member(groupId, first.memberId).setFaults({})).ok).toBe(true);
    await until("the restarted member to catch up", async () => ((await sequenceOf(groupId, first.memberId)).length === 4 ? true : undefined));
    expect(await sequenceOf(groupId, first.memberId)).toEqual(["a", "b", "c", "d"]);
    await allQuiesced(groupId);
  });

  it("the leader crashes while quiesced and nobody asks: the followers miss its quiesce heartbeats, wake and elect a leader", async () => {
    const groupId = await startGroup();
    const first = await leaderOf(groupId, IDS);
    await propose(groupId, "a");
    await allQuiesced(groupId);
    const faultAt = Date.now();
    expect((await member(groupId, first.memberId).setFaults({ crashed: true })).ok).toBe(true);
    const survivors = IDS.filter((id) => id !== first.memberId);
    const second = await leaderOf(groupId, survivors);
    const detectMs = Date.now() - faultAt;
    expect(second.term).toBeGreaterThan(first.term);
    console.log(
      `raft quiescence: with no request, a new leader ${detectMs} ms after the quiesced leader crashed (quiesced tick ${QUIESCED_TICK_MS} ms: 2-3 of them, then an election of ${ELECTION_TIMEOUT_MS}-${2 * ELECTION_TIMEOUT_MS} ms)`,
    );
    await propose(groupId, "b");
    for (const id of survivors) expect(await sequenceOf(groupId, id)).toEqual(["a", "b"]);
  });
});
