/**
 * Field cases C5, C6 and C7 (../shared/field-cases.md, docs/RAFT.md "Tests") on real
 * replicated partitions: three replicas in one workerd, real alarms and RPC. Link faults
 * (`setFaults({ dropTo, dropFrom })`, dev and test builds only: durable-objects/raft/faults.ts)
 * cut one replica off from named peers; the pure core's versions of the same cases are in
 * test/unit (src/raft/).
 *
 * Election timeouts are counted in wall time (REPLICA_ELECTION_TICKS x REPLICA_TICK_MS); times
 * are never asserted (they depend on the machine's load). "No election" is checked by the terms:
 * every election, even a lost one, raises its candidate's term; a pre-vote does not.
 */
import { afterEach, describe as suite, expect, it } from "vitest";
import { encodeBatch } from "../../src/codec/index.ts";
import type { ReplicaStatus } from "../../src/partition/rpc.ts";
import type { Message } from "../../src/raft/index.ts";
import { REPLICA_ELECTION_TICKS, REPLICA_TICK_MS } from "../../durable-objects/partition/replica.ts";
import { REPLICAS as IDS, crashStarted, createReplicated, leaderOf, replica, replicaLog, sleep, status, until, produceRetrying } from "./replica-helpers.ts";

afterEach(crashStarted);

const ELECTION_MS = REPLICA_ELECTION_TICKS * REPLICA_TICK_MS;

const recordsPath = (name: string) => `/v1/topics/${name}/partitions/0/records`;

function plainBatch(value: string): Uint8Array {
  return encodeBatch({}, [{ key: null, value: new TextEncoder().encode(value), headers: [], timestamp: Date.now() }]);
}

/** A live replica's status (fails the test when it is crashed). */
async function live(topicId: string, id: string): Promise<ReplicaStatus> {
  const s = await status(topicId, id);
  expect(s, `${id} answers its status`).not.toBeNull();
  return s!;
}

/** Waits until every replica in `ids` has applied up to `hw` (offsets). */
async function allAt(topicId: string, ids: readonly string[], hw: number): Promise<void> {
  for (const id of ids) await until(`${id} at high watermark ${hw}`, async () => ((await status(topicId, id))?.highWatermark === hw ? true : undefined));
}

/** Cuts `id` off from every other replica, both ways (a symmetric partition). */
const isolate = (topicId: string, id: string) => {
  const others = IDS.filter((x) => x !== id);
  return replica(topicId, id).setFaults({ dropTo: others, dropFrom: others });
};

suite("link faults (test builds only)", () => {
  it("a one-way partition: a follower that hears the leader but is not heard keeps following; the leader commits with the other follower and the follower applies it", async () => {
    const { name, topicId } = await createReplicated();
    await produceRetrying(recordsPath(name), "v0");
    const l = await leaderOf(topicId);
    const f = IDS.find((id) => id !== l.replica)!;
    await allAt(topicId, IDS, 1);
    const term = (await live(topicId, l.replica)).leaderEpoch;
    // f sends nothing to the leader (its acks are lost); it still receives the leader's appends.
    expect(await replica(topicId, f).setFaults({ dropTo: [l.replica] })).toEqual({ ok: true, faults: { dropTo: [l.replica] } });
    for (let i = 1; i <= 3; i++) await produceRetrying(recordsPath(name), `v${i}`);
    await allAt(topicId, IDS, 4);
    const s = await live(topicId, f);
    expect(s).toMatchObject({ role: "follower", leaderReplica: l.replica, leaderEpoch: term });
    expect((await replicaLog(topicId, f)).map((r) => r.value)).toEqual(["v0", "v1", "v2", "v3"]);
    expect(await replica(topicId, f).setFaults({})).toEqual({ ok: true, faults: {} });
  });
});

suite("field case C5: PreVote, a rejoining partitioned replica does not depose the leader", () => {
  it("C is isolated for 10 election timeouts while A and B commit 5 records: C's term never moves; after the heal A still leads at the same term, no replica's term moved (0 elections) and C catches up", async () => {
    const { name, topicId } = await createReplicated();
    const path = recordsPath(name);
    await produceRetrying(path, "before");
    const a = await leaderOf(topicId);
    await allAt(topicId, IDS, 1);
    const term = (await live(topicId, a.replica)).leaderEpoch;
    const c = IDS.find((id) => id !== a.replica)!;
    const b = IDS.find((id) => id !== a.replica && id !== c)!;
    for (const id of IDS) expect((await live(topicId, id)).leaderEpoch).toBe(term);

    expect((await isolate(topicId, c)).ok).toBe(true);
    const healAt = Date.now() + 10 * ELECTION_MS;
    let produced = 0;
    let samples = 0;
    while (Date.now() < healAt || produced < 5) {
      if (produced < 5) await produceRetrying(path, `during-${produced++}`);
      const [sa, sb, sc] = await Promise.all([live(topicId, a.replica), live(topicId, b), live(topicId, c)]);
      // C's pre-votes reach no one and raise no term; A keeps a quorum with B.
      expect(sc.leaderEpoch, "C's term during the partition").toBe(term);
      expect(sa).toMatchObject({ role: "leader", leaderEpoch: term });
      expect(sb).toMatchObject({ role: "follower", leaderReplica: a.replica, leaderEpoch: term });
      samples++;
      await sleep(100);
    }
    expect(samples).toBeGreaterThan(0);
    // C never saw the 5 records.
    expect((await live(topicId, c)).highWatermark).toBe(1);

    expect(await replica(topicId, c).setFaults({})).toEqual({ ok: true, faults: {} });
    await allAt(topicId, IDS, 6);
    // Two more election timeouts after the heal: still A at the same term, no election anywhere.
    const watchUntil = Date.now() + 2 * ELECTION_MS;
    while (Date.now() < watchUntil) {
      const [sa, sb, sc] = await Promise.all([live(topicId, a.replica), live(topicId, b), live(topicId, c)]);
      expect(sa).toMatchObject({ role: "leader", leaderEpoch: term });
      expect(sb).toMatchObject({ role: "follower", leaderReplica: a.replica, leaderEpoch: term });
      expect(sc).toMatchObject({ role: "follower", leaderReplica: a.replica, leaderEpoch: term });
      await sleep(100);
    }
    const logs = await Promise.all(IDS.map((id) => replicaLog(topicId, id)));
    for (const log of logs) expect(log).toEqual(logs[0]);
    expect(logs[0]!.map((r) => r.value)).toEqual(["before", ...Array.from({ length: 5 }, (_, i) => `during-${i}`)]);
    expect(new Set(logs[0]!.map((r) => r.epoch))).toEqual(new Set([term]));
  });
});

suite("field case C6: PreVote liveness when a voter's term is behind", () => {
  it("C isolated at term T while A and B go through later terms (B leading, with new records); B crashes as C rejoins: A leads at B's term + 1, C takes that term and follows A", async () => {
    const { name, topicId } = await createReplicated();
    const path = recordsPath(name);
    await produceRetrying(path, "v0");
    const first = await leaderOf(topicId);
    await allAt(topicId, IDS, 1);
    const c = IDS.find((id) => id !== first.replica)!;
    const cTerm = (await live(topicId, c)).leaderEpoch;
    expect((await isolate(topicId, c)).ok).toBe(true);

    // The two others raise the term by leadership transfers (TimeoutNow), each with a record.
    const [x, y] = IDS.filter((id) => id !== c) as [string, string];
    let leader = first.replica;
    for (let i = 0; i < 4; i++) {
      const target = leader === x ? y : x;
      const r = await until(`leadership moved to ${target}`, async () => {
        const t = await replica(topicId, leader).transferLeadership(target);
        if (t.ok) return t;
        expect(t.code).toBe("PREFERRED_LEADER_NOT_AVAILABLE");
        return undefined;
      });
      expect(r).toMatchObject({ ok: true, leaderReplica: target, transferred: true });
      leader = target;
      const appended = await replica(topicId, leader).append({ batches: [plainBatch(`t${i}`)] });
      expect(appended, JSON.stringify(appended)).toMatchObject({ ok: true });
    }
    const b = leader;
    const a = b === x ? y : x;
    await allAt(topicId, [a, b], 5);
    const sb = await live(topicId, b);
    const sa = await live(topicId, a);
    const sc = await live(topicId, c);
    expect(sb.role).toBe("leader");
    const bTerm = sb.leaderEpoch;
    expect(bTerm).toBeGreaterThanOrEqual(cTerm + 4);
    expect(sa.leaderEpoch).toBe(bTerm);
    expect(sc.leaderEpoch).toBe(cTerm);
    // A's log is longer than C's: C cannot win, and must not block A.
    expect(sa.lastIndex).toBeGreaterThan(sc.lastIndex);

    // B crashes at the same time as C rejoins.
    await Promise.all([replica(topicId, b).setFaults({ crashed: true }), replica(topicId, c).setFaults({})]);
    const elected = await leaderOf(topicId, [b]);
    expect(elected.replica).toBe(a);
    expect(elected.leaderEpoch).toBe(bTerm + 1);
    const cAfter = await until("C follows A", async () => {
      const s = await status(topicId, c);
      return s?.leaderReplica === a ? s : undefined;
    });
    expect(cAfter).toMatchObject({ role: "follower", leaderEpoch: bTerm + 1 });
    // The pair commits: a produce is acknowledged and C applies everything.
    await produceRetrying(path, "after");
    await allAt(topicId, [a, c], 6);
    expect((await replicaLog(topicId, c)).map((r) => r.value)).toEqual(["v0", "t0", "t1", "t2", "t3", "after"]);
    expect((await live(topicId, a)).leaderEpoch).toBe(bTerm + 1);
  });
});

/**
 * C7 (b) on real replicas: the leader is cut off and takes `lostCount` appends it can never
 * commit; the other two elect a leader in a later term, which takes `takenCount` records and
 * compacts its journal; after the heal the old leader is sent InstallSnapshot.
 * `suffixPastLeader`: the old leader's conflicting suffix reaches past the new leader's whole log.
 */
async function deposedLeaderCatchesUp(lostCount: number, takenCount: number, suffixPastLeader: boolean): Promise<void> {
  const { name, topicId } = await createReplicated();
  for (const id of IDS) expect(await replica(topicId, id).setReplicaTestKnobs({ keepEntries: 3, leaderKeepEntries: 5 })).toMatchObject({ ok: true });
  const path = recordsPath(name);
  for (let i = 0; i < 3; i++) await produceRetrying(path, `c${i}`);
  const old = await leaderOf(topicId);
  await allAt(topicId, IDS, 3);
  const oldTerm = (await live(topicId, old.replica)).leaderEpoch;

  // The leader is cut off and takes appends it can never commit (its own journal only).
  expect((await isolate(topicId, old.replica)).ok).toBe(true);
  const lost = Array.from({ length: lostCount }, (_, i) => i).map((i) => replica(topicId, old.replica).append({ batches: [plainBatch(`lost-${i}`)] }));
  const deposed = await until("the cut-off leader holds uncommitted entries", async () => {
    const s = await status(topicId, old.replica);
    return s !== null && s.lastIndex >= s.commitIndex + lostCount ? s : undefined;
  });
  expect(deposed.leaderEpoch).toBe(oldTerm);

  // The other two elect a leader in a later term; it takes records and compacts its journal
  // past the old leader's commit: only a snapshot can catch the old leader up.
  const n = await leaderOf(topicId, [old.replica]);
  expect(n.leaderEpoch).toBeGreaterThan(oldTerm);
  let end = 3;
  for (let i = 0; i < takenCount; i++) {
    const r = await replica(topicId, n.replica).append({ batches: [plainBatch(`n${i}`)] });
    expect(r, JSON.stringify(r)).toMatchObject({ ok: true });
    if (r.ok) end = r.baseOffset + 1;
  }
  const compacted = await until("the new leader's journal compacted past the old leader's commit", async () => {
    const s = await status(topicId, n.replica);
    return s !== null && s.snapshotIndex > deposed.commitIndex + 1 ? s : undefined;
  });
  if (suffixPastLeader) expect(deposed.lastIndex).toBeGreaterThan(compacted.lastIndex);
  else expect(compacted.snapshotIndex).toBeGreaterThan(deposed.lastIndex);
  // None of the cut-off leader's appends was acknowledged.
  for (const r of await Promise.all(lost)) expect(r.ok, JSON.stringify(r)).toBe(false);
  const held = await live(topicId, old.replica);
  expect(held.highWatermark).toBe(3);
  expect(held.lastIndex).toBeGreaterThan(held.commitIndex);

  // Heal: the old leader follows, is sent the snapshot and installs it.
  expect(await replica(topicId, old.replica).setFaults({})).toEqual({ ok: true, faults: {} });
  await allAt(topicId, IDS, end);
  const nl = await live(topicId, n.replica);
  // The install rebuilds its Raft node from the journal: it knows the leader again at the next heartbeat.
  const back = await until("the old leader follows the new one", async () => {
    const s = await status(topicId, old.replica);
    return s?.leaderReplica === n.replica ? s : undefined;
  });
  expect(back).toMatchObject({ role: "follower", leaderReplica: n.replica, leaderEpoch: nl.leaderEpoch, catchUpInstalls: 1 });
  expect(back.snapshotIndex).toBeGreaterThanOrEqual(compacted.snapshotIndex);
  expect(back.lastIndex).toBe(nl.lastIndex);
  expect(back.commitIndex).toBe(nl.commitIndex);

  // The next appends succeed at the first try: no conflicting entry was left, no second install.
  for (let i = 0; i < 3; i++) await produceRetrying(path, `after-${i}`);
  await allAt(topicId, IDS, end + 3);
  const final = await live(topicId, old.replica);
  expect(final.catchUpInstalls).toBe(1);
  expect(final.lastIndex).toBe((await live(topicId, n.replica)).lastIndex);
  const logs = await Promise.all(IDS.map((id) => replicaLog(topicId, id)));
  for (const log of logs) expect(log).toEqual(logs[0]);
  const values = logs[0]!.map((r) => r.value);
  expect(values).toEqual(["c0", "c1", "c2", ...Array.from({ length: takenCount }, (_, i) => `n${i}`), "after-0", "after-1", "after-2"]);
  expect(values.some((v) => v.startsWith("lost-"))).toBe(false);
  expect(logs[0]!.map((r) => r.offset)).toEqual(values.map((_, i) => i));
}

suite("field case C7: InstallSnapshot, prefix snapshot and conflicting entry", () => {
  it("(a) a retransmitted InstallSnapshot behind a follower's commit is answered and changes nothing: entries after it kept, applied index and log unchanged, no catch-up", async () => {
    const { name, topicId } = await createReplicated();
    const path = recordsPath(name);
    for (let i = 0; i < 10; i++) await produceRetrying(path, `v${i}`);
    const l = await leaderOf(topicId);
    const f = IDS.find((id) => id !== l.replica)!;
    await allAt(topicId, IDS, 10);
    const before = await live(topicId, f);
    const logBefore = await replicaLog(topicId, f);
    expect(before.commitIndex).toBeGreaterThan(4);
    // The leader's snapshot at an index the follower committed long ago, sent again.
    const meta = { index: before.commitIndex - 4, term: before.leaderEpoch, conf: { voters: [...before.voters], learners: [...before.learners] } };
    const m: Message = { type: "snapshot", from: l.replica, to: f, term: before.leaderEpoch, meta, offset: 0, chunk: new Uint8Array(0), done: true, totalBytes: 0 };
    await replica(topicId, f).replicaDeliver([m]);
    await sleep(3 * REPLICA_TICK_MS);
    const after = await live(topicId, f);
    expect(after).toMatchObject({
      role: "follower",
      leaderReplica: l.replica,
      leaderEpoch: before.leaderEpoch,
      lastIndex: before.lastIndex,
      commitIndex: before.commitIndex,
      appliedIndex: before.appliedIndex,
      highWatermark: 10,
      catchUpInstalls: 0,
      catchUpRunning: false,
    });
    expect(await replicaLog(topicId, f)).toEqual(logBefore);
    // Replication goes on.
    await produceRetrying(path, "v10");
    await allAt(topicId, IDS, 11);
    expect((await live(topicId, f)).catchUpInstalls).toBe(0);
  });

  it("(b) a deposed leader's uncommitted entries conflict with the new leader's snapshot: it drops its whole journal for the snapshot, once, and the next appends succeed; its entries are never visible", async () => {
    await deposedLeaderCatchesUp(3, 20, false);
  });

  it("(b) the same with the deposed leader's conflicting suffix reaching past the new leader's last index: nothing of it survives the install", async () => {
    await deposedLeaderCatchesUp(16, 8, true);
  });
});
