/**
 * Replica reassignment of a replicated partition (docs/RAFT.md "Replica reassignment"; Kafka's
 * AlterPartitionReassignments, KIP-455, as Raft single-server membership changes): a new replica
 * object joins as a learner, catches up (by snapshot catch-up here: the journals are kept small),
 * is promoted, and the replaced replica is removed and its data destroyed. Through the real
 * gateway, three (then four) replicas in one workerd, real alarms and RPC.
 */
import { SELF } from "cloudflare:test";
import { afterEach, describe as suite, expect, it } from "vitest";
import { Admin } from "../../sdk/src/admin.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import type { PartitionLeaderResponse, ReplicaReassignmentResponse } from "../../src/protocol/types.ts";
import { noteLeader } from "../../src/gateway/replicas.ts";
import { call, createTopic, expectError, json, randomTopic } from "./helpers.ts";
import { REPLICAS, crashStarted, createReplicated, leaderOf, replica, replicaLog, status, until, newProducer, steadyProducer, expectLogs } from "./replica-helpers.ts";

/** Replicas a test added (r4, r5): crashed after it, as crashStarted does for r1..r3. */
const added: { topicId: string; id: string }[] = [];
afterEach(async () => {
  await crashStarted();
  await Promise.all(added.splice(0).map(({ topicId, id }) => replica(topicId, id).setFaults({ crashed: true })));
});

const SMALL_JOURNAL = { keepEntries: 3, leaderKeepEntries: 5 };

async function smallJournals(topicId: string, ids: readonly string[]): Promise<void> {
  for (const id of ids) expect(await replica(topicId, id).setReplicaTestKnobs(SMALL_JOURNAL)).toMatchObject({ ok: true });
}

async function reassign(name: string, body: unknown): Promise<ReplicaReassignmentResponse> {
  const res = await json("POST", `/v1/topics/${name}/partitions/0/replicas`, body);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as ReplicaReassignmentResponse;
}

/** A removed replica holds nothing: no Raft state, no log. */
async function expectDestroyed(topicId: string, id: string): Promise<void> {
  await until(`${id} destroyed`, async () => {
    const st = await replica(topicId, id).replicaStatus();
    return st.ok && st.replica === null ? true : undefined;
  });
  const f = await replica(topicId, id).fetchRecords({ offset: 0, maxRecords: 10, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 });
  expect(f).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
  expect(await replica(topicId, id).describe()).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
}

suite("replica reassignment (KIP-455 as Raft single-server membership changes)", () => {
  it("replaces a follower, then the leader, under steady idempotent produce: every acknowledged record once, offsets dense, all voters equal, the removed replicas hold nothing", async () => {
    const { name, topicId } = await createReplicated();
    await smallJournals(topicId, REPLICAS);
    const first = await leaderOf(topicId);
    const producer = steadyProducer(name, await newProducer());
    await until("12 records", async () => (producer.count() >= 12 ? true : undefined));
    await smallJournals(topicId, ["r4", "r5"]);
    added.push({ topicId, id: "r4" }, { topicId, id: "r5" });

    // 1. A follower (not r1) is replaced by r4 in weur.
    const follower = REPLICAS.find((id) => id !== first.replica && id !== "r1")!;
    const one = await reassign(name, { replace: follower, location: "weur" });
    expect(one).toMatchObject({ partition: 0, added: "r4", removed: follower });
    const voters1: string[] = [...REPLICAS.filter((id) => id !== follower), "r4"];
    expect(one.replicas).toEqual([...voters1].sort());
    const r4 = (await status(topicId, "r4"))!;
    expect(r4.voters).toEqual([...voters1].sort());
    expect(r4.learners).toEqual([]);
    // The leader's journal was compacted past index 1: r4 caught up by snapshot.
    expect(r4.catchUpInstalls).toBeGreaterThanOrEqual(1);
    await expectDestroyed(topicId, follower);
    await until("more records", async () => (producer.count() >= 20 ? true : undefined));
    // A gateway whose cache still names the removed replica (another isolate would): its answer
    // UNKNOWN_TOPIC_OR_PARTITION sends the gateway to r1's configuration, and on to the leader.
    noteLeader(topicId, 0, follower, {});
    const atRemoved = producer.count();
    await until("records after the stale route", async () => (producer.count() >= atRemoved + 3 ? true : undefined));
    noteLeader(topicId, 0, follower, {});
    const read = await call(`/v1/topics/${name}/partitions/0/records?offset=0&maxRecords=5&maxWaitMs=0`);
    expect(read.status, await read.clone().text()).toBe(200);

    // 2. The leader is replaced: first made a replica other than r1 (r1 is not replaceable yet),
    // then the reassignment hands leadership away before removing it.
    const leaderNow = (await leaderOf(topicId)).replica;
    let target = leaderNow;
    if (leaderNow === "r1") {
      target = "r4";
      const res = await json("POST", `/v1/topics/${name}/partitions/0/leader`, { replica: target });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(((await res.json()) as PartitionLeaderResponse).leaderReplica).toBe(target);
    }
    const admin = new Admin(new EdgelogClient({ baseUrl: "http://edgelog.test", fetch: (input, init) => SELF.fetch(input, init) }));
    const two = await admin.reassignReplica(name, 0, target, "apac");
    expect(two).toMatchObject({ added: "r5", removed: target });
    const voters2 = [...voters1.filter((id) => id !== target), "r5"];
    expect(two.replicas).toEqual([...voters2].sort());
    expect(two.leaderReplica).not.toBe(target);
    await expectDestroyed(topicId, target);
    await until("more records after", async () => (producer.count() >= 30 ? true : undefined));

    const { acked, values } = await producer.stop();
    await expectLogs(topicId, voters2, acked, values);
    for (const id of voters2) expect((await status(topicId, id))!.voters).toEqual([...voters2].sort());
  }, 180_000);

  it("a crash of the new replica in the middle of its catch-up: nothing half-installed is visible; after the restart it catches up whole and the reassignment completes", async () => {
    const { name, topicId } = await createReplicated();
    await smallJournals(topicId, REPLICAS);
    const leader = await leaderOf(topicId);
    const producer = steadyProducer(name, await newProducer());
    await until("12 records", async () => (producer.count() >= 12 ? true : undefined));
    const { acked: before } = await producer.stop();
    const replace = REPLICAS.find((id) => id !== leader.replica && id !== "r1")!;
    // The new replica's pull stops after two one-batch chunks.
    added.push({ topicId, id: "r4" });
    await replica(topicId, "r4").setReplicaTestKnobs({ ...SMALL_JOURNAL, chunkBytes: 1, holdAfterChunks: 2 });
    const running = json("POST", `/v1/topics/${name}/partitions/0/replicas`, { replace });
    await until("r4 pulling", async () => ((await status(topicId, "r4"))?.catchUpRunning === true ? true : undefined));
    const held = (await status(topicId, "r4"))!;
    expect(held).toMatchObject({ catchUpInstalls: 0, highWatermark: 0, learners: ["r4"] });
    expect(await replicaLog(topicId, "r4")).toEqual([]);

    await replica(topicId, "r4").setFaults({ crashed: true });
    await replica(topicId, "r4").setReplicaTestKnobs({ ...SMALL_JOURNAL, chunkBytes: 1 });
    await replica(topicId, "r4").setFaults({});
    const res = await running;
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ added: "r4", removed: replace });
    expect((await status(topicId, "r4"))!.catchUpInstalls).toBe(1);
    await expectDestroyed(topicId, replace);
    const voters: string[] = [...REPLICAS.filter((id) => id !== replace), "r4"];
    await expectLogs(topicId, voters, before, [...before.keys()]);
  }, 120_000);

  it("a new replica that does not catch up in time stays a learner (REQUEST_TIMED_OUT, retriable); the same request again resumes with it", async () => {
    const { name, topicId } = await createReplicated();
    for (const id of REPLICAS) expect(await replica(topicId, id).setReplicaTestKnobs({ ...SMALL_JOURNAL, reassignWaitMs: 1_000 })).toMatchObject({ ok: true });
    const leader = await leaderOf(topicId);
    const producer = steadyProducer(name, await newProducer());
    await until("12 records", async () => (producer.count() >= 12 ? true : undefined));
    const replace = REPLICAS.find((id) => id !== leader.replica && id !== "r1")!;
    added.push({ topicId, id: "r4" });
    await replica(topicId, "r4").setReplicaTestKnobs({ ...SMALL_JOURNAL, chunkBytes: 1, holdAfterChunks: 2 });
    const path = `/v1/topics/${name}/partitions/0/replicas`;
    const timedOut = await expectError(await json("POST", path, { replace }), "REQUEST_TIMED_OUT", 504);
    expect(timedOut.retriable).toBe(true);
    expect(timedOut.details).toMatchObject({ replica: "r4" });
    // Nothing else changed: three voters, r4 a learner; produce went on meanwhile.
    expect(await status(topicId, leader.replica)).toMatchObject({ voters: ["r1", "r2", "r3"], learners: ["r4"] });
    await replica(topicId, "r4").setReplicaTestKnobs({ ...SMALL_JOURNAL, chunkBytes: 1 });
    // The retry waits the default catch-up time: r4's pull of 1-byte chunks can take more than
    // the 1 s that made the first call time out when the machine is loaded.
    for (const id of REPLICAS) expect(await replica(topicId, id).setReplicaTestKnobs({ ...SMALL_JOURNAL })).toMatchObject({ ok: true });
    const again = await reassign(name, { replace });
    expect(again).toMatchObject({ added: "r4", removed: replace });
    await expectDestroyed(topicId, replace);
    const { acked, values } = await producer.stop();
    await expectLogs(topicId, [...REPLICAS.filter((id) => id !== replace), "r4"], acked, values);
  }, 120_000);

  it("refuses what it cannot do, changing nothing", async () => {
    const plain = randomTopic();
    await createTopic(plain);
    await expectError(await json("POST", `/v1/topics/${plain}/partitions/0/replicas`, { replace: "r2" }), "INVALID_REQUEST", 400);
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    const path = `/v1/topics/${name}/partitions/0/replicas`;
    await expectError(await json("POST", path, { replace: "r1" }), "INVALID_REQUEST", 400);
    await expectError(await json("POST", path, { replace: "r7" }), "INVALID_REQUEST", 400);
    await expectError(await json("POST", path, { replace: "x" }), "INVALID_REQUEST", 400);
    await expectError(await json("POST", path, { replace: "r2", location: "mars" }), "INVALID_REQUEST", 400);
    expect((await status(topicId, leader.replica))!).toMatchObject({ voters: ["r1", "r2", "r3"], learners: [] });
  }, 60_000);
});
