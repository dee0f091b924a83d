/**
 * Admin operations on a replicated partition (`replication.factor` 3; docs/RAFT.md "Replicated
 * partitions"): a config change is a Raft command (a majority is enough; a replica that was
 * down applies it on its return, from the journal or from the catch-up manifest), a topic
 * delete with a replica down answers success and the replica destroys itself when it is back,
 * and describe answers the leader's high watermark while r1 is a lagging follower. Three
 * replicas in one workerd, real alarms and RPC, through the real gateway; fault injection
 * (EDGELOG_RAFT_FAULTS) crashes and pauses replicas.
 */
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe as suite, expect, it } from "vitest";
import type { TopicDescription } from "../../src/protocol/types.ts";
import { call, json } from "./helpers.ts";
import { crashStarted, createReplicated, leaderOf, replica, status, until, produceValuesRetrying } from "./replica-helpers.ts";

afterEach(crashStarted);

/** The configs a replica has stored (its log meta row), or null once it holds no partition. */
async function storedConfigs(topicId: string, id: string): Promise<Record<string, unknown> | null> {
  return runInDurableObject(replica(topicId, id) as unknown as DurableObjectStub, (_o, state) => {
    const rows = state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'configs'").toArray();
    return rows.length === 0 ? null : (JSON.parse(rows[0]!.value) as Record<string, unknown>);
  });
}

/** Whether a replica holds any row of its partition's log (meta or batches); false once destroyed. */
async function holdsData(topicId: string, id: string): Promise<boolean> {
  return runInDurableObject(replica(topicId, id) as unknown as DurableObjectStub, (_o, state) => {
    const tables = state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'batches')").toArray();
    for (const t of tables) if (state.storage.sql.exec(`SELECT 1 FROM ${t.name} LIMIT 1`).toArray().length > 0) return true;
    return false;
  });
}

/** Makes `to` the leader (leadership transfer) unless it already leads. */
async function leadBy(topicId: string, to: string): Promise<void> {
  const leader = await leaderOf(topicId);
  if (leader.replica !== to) expect(await replica(topicId, leader.replica).transferLeadership(to)).toMatchObject({ ok: true, leaderReplica: to });
  await until(`${to} leads`, async () => ((await status(topicId, to))?.role === "leader" ? true : undefined));
}

suite("config changes of a replicated partition (a Raft command)", () => {
  for (const down of ["r1", "r3"]) {
    it(`a PATCH with follower ${down} crashed succeeds (a majority); ${down} has the configs after it returns`, async () => {
      const { name, topicId } = await createReplicated();
      await leadBy(topicId, "r2");
      await replica(topicId, down).setFaults({ crashed: true });
      const res = await json("PATCH", `/v1/topics/${name}`, { configs: { "retention.ms": 123_456_789 } });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(((await res.json()) as TopicDescription).configs["retention.ms"]).toBe(123_456_789);
      // The majority has it at once (applied before the answer at the leader, right after at the other).
      const up = ["r1", "r2", "r3"].filter((id) => id !== down);
      for (const id of up) await until(`${id} has the configs`, async () => ((await storedConfigs(topicId, id))?.["retention.ms"] === 123_456_789 ? true : undefined));
      // The crashed one has not.
      expect((await storedConfigs(topicId, down))?.["retention.ms"]).not.toBe(123_456_789);
      await replica(topicId, down).setFaults({});
      await until(`${down} has the configs after its return`, async () => ((await storedConfigs(topicId, down))?.["retention.ms"] === 123_456_789 ? true : undefined));
      // Every replica at the same applied index after the change.
      await produceValuesRetrying(name, ["after"]);
      await until("the same high watermark on all three", async () => {
        const hw = await Promise.all(["r1", "r2", "r3"].map(async (id) => (await status(topicId, id))?.highWatermark));
        return hw.every((h) => h === 1) ? true : undefined;
      });
    });
  }

  it("a follower that missed the change and catches up by snapshot takes the configs from the manifest", async () => {
    const { name, topicId } = await createReplicated();
    for (const id of ["r1", "r2", "r3"]) expect(await replica(topicId, id).setReplicaTestKnobs({ keepEntries: 3, leaderKeepEntries: 5 })).toMatchObject({ ok: true });
    await leadBy(topicId, "r2");
    await replica(topicId, "r3").setFaults({ crashed: true });
    const res = await json("PATCH", `/v1/topics/${name}`, { configs: { "retention.ms": 987_654_321 } });
    expect(res.status, await res.clone().text()).toBe(200);
    // Enough entries after the change that the leader's journal no longer holds it.
    for (let i = 0; i < 12; i++) await produceValuesRetrying(name, [`v${i}`]);
    const before = (await status(topicId, "r2"))!;
    expect(before.snapshotIndex).toBeGreaterThan(0);
    await replica(topicId, "r3").setFaults({});
    const caughtUp = await until("r3 installs a snapshot", async () => {
      const s = await status(topicId, "r3");
      return s !== null && s.catchUpInstalls > 0 && s.highWatermark === 12 ? s : undefined;
    });
    expect(caughtUp.catchUpInstalls).toBeGreaterThan(0);
    expect((await storedConfigs(topicId, "r3"))?.["retention.ms"]).toBe(987_654_321);
  });
});

suite("topic deletion with a replica down", () => {
  for (const down of ["r2", "r1"]) {
    it(`a DELETE with ${down} crashed answers success; ${down} destroys itself after it returns (its owner check)`, async () => {
      const { name, topicId } = await createReplicated();
      await leaderOf(topicId);
      await produceValuesRetrying(name, ["a", "b", "c"]);
      await replica(topicId, down).setFaults({ crashed: true });
      const res = await call(`/v1/topics/${name}`, { method: "DELETE" });
      expect(res.status, await res.clone().text()).toBeLessThan(300);
      expect((await call(`/v1/topics/${name}`)).status).toBe(404);
      for (const id of ["r1", "r2", "r3"].filter((x) => x !== down)) expect(await holdsData(topicId, id), id).toBe(false);
      // The one that was down still has its rows until it is back.
      expect(await holdsData(topicId, down)).toBe(true);
      await replica(topicId, down).setFaults({});
      // Back, it finds no leader (its peers are gone), runs its owner check: the topic is gone.
      await until(`${down} destroys itself`, async () => ((await holdsData(topicId, down)) ? undefined : true), 60_000);
      expect(await replica(topicId, down).describe()).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
    }, 90_000);
  }
});

suite("describe of a replicated partition", () => {
  it("answers the leader's high watermark while r1 is a lagging follower", async () => {
    const { name, topicId } = await createReplicated();
    await leadBy(topicId, "r2");
    // r1 paused: it drops the leader's messages (lags) but answers calls.
    await replica(topicId, "r1").setFaults({ paused: true });
    expect(await produceValuesRetrying(name, ["a", "b", "c", "d", "e"])).toEqual([0, 1, 2, 3, 4]);
    const leader = (await status(topicId, "r2"))!;
    expect(leader.role).toBe("leader");
    expect(leader.highWatermark).toBe(5);
    const r1 = await replica(topicId, "r1").describe();
    expect(r1).toMatchObject({ ok: true, partition: { highWatermark: 0 } });
    const res = await call(`/v1/topics/${name}`);
    expect(res.status).toBe(200);
    const d = (await res.json()) as TopicDescription;
    expect(d.partitionDetails[0]).toMatchObject({ highWatermark: 5, logEndOffset: 5, logStartOffset: 0 });
    await replica(topicId, "r1").setFaults({});
  });
});
