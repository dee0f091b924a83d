/**
 * Partition placement in the metadata quorum (docs/RAFT.md "Partition placement"; KRaft's
 * PartitionRecord / PartitionChangeRecord), with EDGELOG_METADATA_QUORUM on for the whole Worker
 * (this project's bindings: the partition objects report to the quorum too). Through the real
 * gateway, replicas in one workerd, real alarms and RPC:
 * - GET topic shows each partition's replicas with their location hints, and the leader and leader
 *   epoch the partition's Raft group reported; after a leadership transfer the record follows;
 * - r1 replaced by r4 under steady idempotent produce: every acknowledged record once, the
 *   placement names r4, configs pushed afterwards reach r4, describe and metrics ask r4, and a
 *   topic delete destroys r2, r3 and r4 (the removed r1 holds nothing);
 * - a gateway that died between the reassignment and its metadata record: the same request
 *   again records the placement;
 * - a create with one replica down: the majority serves, the leader's sweep initialises the
 *   last replica once it is back;
 * - a follower of the quorum that installs a snapshot has the placements.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { LifecycleTask } from "../../src/metadata/commands.ts";
import { METADATA_GROUP_ID, RaftMetadataStore } from "../../src/metadata/raft-store.ts";
import type { ErrorBody, ProduceResponse, TopicDescription, TopicSummary } from "../../src/protocol/index.ts";
import type { PartitionLeaderResponse, ReplicaReassignmentResponse, TopicConfigs } from "../../src/protocol/types.ts";
import { call, createTopic, json, jsonRetryingReassignment, randomTopic } from "../workers/helpers.ts";
import { quorumGroup } from "../workers/metadata-quorum-helpers.ts";
import { crashStartedMembers, member, trackMembers } from "../workers/raft-helpers.ts";
import { crashStarted, leaderOf, replica, replicaLog, sleep, status, until, newProducer, steadyProducer, produceRetrying, expectLogs } from "../workers/replica-helpers.ts";

/** Replica objects a test started (r1..r5 of its topics): made to act crashed after it, so no clock runs on. */
const startedReplicas: { topicId: string; id: string; p?: number }[] = [];
/** Metadata members started by the file (the group `metadata` serves every test: stopped after all of them). */
trackMembers(METADATA_GROUP_ID, ["m1"]);
afterEach(async () => {
  await crashStarted();
  await Promise.all(startedReplicas.splice(0).map(({ topicId, id, p }) => replica(topicId, id, p).setFaults({ crashed: true })));
});
afterAll(crashStartedMembers);

async function createReplicated(locations = "wnam,enam,weur"): Promise<{ name: string; topicId: string; created: TopicDescription }> {
  const name = randomTopic("pl");
  const created = await createTopic(name, 1, { "replication.factor": 3, "replica.locations": locations });
  for (const id of ["r1", "r2", "r3", "r4", "r5"]) startedReplicas.push({ topicId: created.topicId, id });
  return { name, topicId: created.topicId, created };
}

async function describeTopic(name: string): Promise<TopicDescription> {
  const res = await call(`/v1/topics/${name}`);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as TopicDescription;
}

/** The placement of partition 0 as the metadata quorum has it (a linearizable read). */
async function placementOf(name: string) {
  const r = await new RaftMetadataStore(env, [{ id: "m1" }]).getTopic(`public/default/${name}`);
  if (!r.ok) throw new Error(`${r.code}: ${r.message}`);
  return r.topic.placements?.[0];
}

/** The lifecycle tasks pending in the metadata quorum. */
async function pendingTasks(): Promise<LifecycleTask[]> {
  const r = await member(METADATA_GROUP_ID, "m1").localRead({ type: "pendingLifecycle" });
  if (!r.ok) throw new Error(r.code);
  return (r.result as { tasks: LifecycleTask[] }).tasks;
}

/** A replica's stored configs (the log room's `configs` meta row). */
async function heldConfigs(topicId: string, id: string): Promise<TopicConfigs> {
  return runInDurableObject(replica(topicId, id) as unknown as DurableObjectStub, (_o, state) => {
    const row = state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'configs'").toArray()[0];
    return JSON.parse(String(row?.value)) as TopicConfigs;
  });
}

/** A destroyed replica holds nothing: no Raft state, no log. */
async function expectDestroyed(topicId: string, id: string): Promise<void> {
  await until(`${id} destroyed`, async () => {
    const st = await replica(topicId, id).replicaStatus();
    return st.ok && st.replica === null ? true : undefined;
  });
  expect(await replica(topicId, id).describe()).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
}

describe("partition placement in the metadata quorum", () => {
  it("GET topic shows replicas, locations, leader and leader epoch; after a leadership transfer the recorded leader follows", async () => {
    const { name, topicId, created } = await createReplicated();
    // The create's answer already carries the placement (leader not reported yet).
    expect(created.placements?.[0]?.replicas).toEqual([
      { id: "r1", location: "wnam" },
      { id: "r2", location: "enam" },
      { id: "r3", location: "weur" },
    ]);
    const leader = await leaderOf(topicId);
    // The new leader reports itself (a partitionChange record); GET topic reads it.
    await until("the leader recorded", async () => {
      const d = await describeTopic(name);
      const p = d.placements?.[0];
      return p?.leader === leader.replica && p.leaderEpoch === leader.leaderEpoch ? true : undefined;
    });
    const target = ["r1", "r2", "r3"].find((id) => id !== leader.replica)!;
    const res = await json("POST", `/v1/topics/${name}/partitions/0/leader`, { replica: target });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const moved = JSON.parse(text) as PartitionLeaderResponse;
    expect(moved.leaderReplica).toBe(target);
    expect(moved.leaderEpoch).toBeGreaterThan(leader.leaderEpoch);
    await until("the new leader recorded", async () => {
      const p = (await describeTopic(name)).placements?.[0];
      return p?.leader === target && p.leaderEpoch === moved.leaderEpoch ? true : undefined;
    });
    const d = await describeTopic(name);
    expect(d.placements).toEqual([
      {
        partition: 0,
        replicas: [
          { id: "r1", location: "wnam" },
          { id: "r2", location: "enam" },
          { id: "r3", location: "weur" },
        ],
        leader: target,
        leaderEpoch: moved.leaderEpoch,
      },
    ]);
  }, 60_000);

  it("replaces r1 by r4 under steady idempotent produce: every acknowledged record once, the placement names r4, configs reach r4, describe and metrics ask r4, and a delete destroys r2, r3 and r4", async () => {
    const { name, topicId } = await createReplicated();
    // r1 leads first: its replacement hands the leadership away before it is removed.
    await leaderOf(topicId);
    const moved = await json("POST", `/v1/topics/${name}/partitions/0/leader`, { replica: "r1" });
    expect(moved.status, await moved.clone().text()).toBe(200);
    const producer = steadyProducer(name, await newProducer());
    await until("10 records", async () => (producer.count() >= 10 ? true : undefined));

    const res = await jsonRetryingReassignment("POST", `/v1/topics/${name}/partitions/0/replicas`, { replace: "r1", location: "apac" });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const done = JSON.parse(text) as ReplicaReassignmentResponse;
    expect(done).toMatchObject({ added: "r4", removed: "r1", replicas: ["r2", "r3", "r4"] });
    expect(done.leaderReplica).not.toBe("r1");
    expect(typeof done.metadataOffset).toBe("number");
    // The placement in the metadata: r2, r3 with their creation hints, r4 at its own.
    const placed = await placementOf(name);
    expect(placed?.replicas).toEqual([
      { id: "r2", location: "enam" },
      { id: "r3", location: "weur" },
      { id: "r4", location: "apac" },
    ]);
    await expectDestroyed(topicId, "r1");
    const at = producer.count();
    await until("records after the replacement", async () => (producer.count() >= at + 10 ? true : undefined));
    const { acked, values } = await producer.stop();

    // Every acknowledged record once at its offset on every voter, offsets dense.
    const end = acked.size;
    await expectLogs(topicId, ["r2", "r3", "r4"], acked, values);
    for (const id of ["r2", "r3", "r4"]) expect((await status(topicId, id))!.voters).toEqual(["r2", "r3", "r4"]);

    // A config change after the replacement reaches r4 (r1 is gone: nothing may address it).
    const patched = await json("PATCH", `/v1/topics/${name}`, { configs: { "retention.ms": 123_456_789 } });
    expect(patched.status, await patched.clone().text()).toBe(200);
    for (const id of ["r2", "r3", "r4"]) await until(`${id} has the new configs`, async () => ((await heldConfigs(topicId, id))["retention.ms"] === 123_456_789 ? true : undefined));
    expect(await replica(topicId, "r1").describe()).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });

    // Describe asks the placement's replicas (with r1 it would find no replica with the data).
    const d = await describeTopic(name);
    expect(d.partitionDetails[0]).toMatchObject({ highWatermark: end, logEndOffset: end });
    expect(d.placements?.[0]?.replicas.map((r) => r.id)).toEqual(["r2", "r3", "r4"]);
    // Metrics too: the replica gauges of r2, r3, r4, none of r1, and the partition's offsets.
    const metrics = await (await call("/v1/metrics")).text();
    const mine = metrics.split("\n").filter((l) => l.includes(name));
    const replicaLabels = new Set(mine.flatMap((l) => [...l.matchAll(/replica="(r[0-9]+)"/g)].map((m) => m[1])));
    expect([...replicaLabels].sort()).toEqual(["r2", "r3", "r4"]);
    expect(mine.some((l) => l.startsWith("edgelog_partition_high_watermark") && l.endsWith(` ${end}`))).toBe(true);

    // The delete destroys every replica of the placement, r4 included; r1 holds nothing.
    const deleted = await call(`/v1/topics/${name}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    for (const id of ["r1", "r2", "r3", "r4"]) await expectDestroyed(topicId, id);
    expect((await pendingTasks()).filter((t) => t.topicId === topicId)).toEqual([]);
  }, 180_000);

  it("a gateway that died between the reassignment and its metadata record: the same request again records the placement", async () => {
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    const replace = ["r2", "r3"].find((id) => id !== leader.replica)!;
    // The reassignment runs at the partition (as the gateway's call does), and the gateway dies
    // before proposing the record: the metadata still names `replace`.
    const direct = await replica(topicId, leader.replica).reassignReplica({ replace, location: "weur" });
    expect(direct).toMatchObject({ ok: true, added: "r4", removed: replace });
    expect((await placementOf(name))?.replicas.map((r) => r.id)).toEqual(["r1", "r2", "r3"]);
    // The same request again: the partition has done it; the gateway records it and answers done.
    const res = await jsonRetryingReassignment("POST", `/v1/topics/${name}/partitions/0/replicas`, { replace, location: "weur" });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const voters = ["r1", "r2", "r3", "r4"].filter((id) => id !== replace);
    expect(JSON.parse(text)).toMatchObject({ added: "r4", removed: replace, replicas: voters });
    const placed = await placementOf(name);
    expect(placed?.replicas).toEqual(voters.map((id) => ({ id, location: { r1: "wnam", r2: "enam", r3: "weur", r4: "weur" }[id] })));
    // Recorded once: a third try finds nothing to do (the metadata no longer names `replace`).
    const again = await jsonRetryingReassignment("POST", `/v1/topics/${name}/partitions/0/replicas`, { replace, location: "weur" });
    expect(again.status).toBe(400);
    expect((await placementOf(name))?.replicas).toEqual(placed?.replicas);
    const d = await describeTopic(name);
    expect(d.placements?.[0]?.replicas.map((r) => r.id)).toEqual(voters);
  }, 120_000);

  it("a create with one replica down: the other two serve, and the leader's sweep initialises the last one once it is back", async () => {
    // A gateway isolate that dies right after the create's record commits (so the test can
    // crash a replica before any init), then the topic is used through the gateway.
    class CrashingStore extends RaftMetadataStore {
      protected override async completeLifecycle(): Promise<void> {
        throw new Error("injected crash between the record's commit and the partition calls");
      }
    }
    const name = randomTopic("pc");
    const created = await new CrashingStore(env, [{ id: "m1" }]).createTopic({ name, partitions: 1, configs: { "replication.factor": 3 } });
    if (!created.ok) throw new Error(created.code);
    const topicId = created.topic.topicId;
    for (const id of ["r1", "r2", "r3"]) startedReplicas.push({ topicId, id });
    expect(await replica(topicId, "r3").setFaults({ crashed: true })).toMatchObject({ ok: true });
    expect((await pendingTasks()).filter((t) => t.topicId === topicId)).toHaveLength(1);

    // r1 and r2 are initialised by the first reader, elect a leader and take produce.
    for (let i = 0; i < 3; i++) await produceRetrying(`/v1/topics/${name}/partitions/0/records`, `v${i}`);
    expect((await leaderOf(topicId, ["r3"])).highWatermark).toBe(3);
    // The task stays pending while r3 is down (the create is not complete).
    await sleep(2_500);
    expect((await pendingTasks()).filter((t) => t.topicId === topicId)).toHaveLength(1);

    // r3 is back: the sweep initialises it, it joins and catches up; the task is done.
    expect(await replica(topicId, "r3").setFaults({})).toMatchObject({ ok: true });
    await until("the task done", async () => ((await pendingTasks()).some((t) => t.topicId === topicId) ? undefined : true));
    await until("r3 caught up", async () => ((await status(topicId, "r3"))?.highWatermark === 3 ? true : undefined));
    expect((await status(topicId, "r3"))!.voters).toEqual(["r1", "r2", "r3"]);
    expect((await replicaLog(topicId, "r3")).map((r) => r.value)).toEqual(["v0", "v1", "v2"]);
  }, 120_000);

  it("snapshots carry the placements: a follower of the quorum that installs one has them", async () => {
    const { ids, groupId, store } = quorumGroup("ps", { compactEveryEntries: 4 });
    const first = await store.listTopics();
    expect(first.ok).toBe(true);
    const leaderId = async (except: string[] = []) =>
      until("a metadata leader", async () => {
        for (const id of ids.filter((x) => !except.includes(x))) {
          const s = await member(groupId, id)
            .status()
            .catch(() => null);
          if (s?.ok && s.status.role === "leader") return id;
        }
        return undefined;
      });
    const leader = await leaderId();
    const out = ids.find((id) => id !== leader)!;
    const fs = await member(groupId, out).status();
    const appliedAtCrash = fs.ok ? fs.status.appliedIndex : Number.NaN;
    expect((await member(groupId, out).setFaults({ crashed: true })).ok).toBe(true);

    // A replicated topic, a reassignment's record and a leader report: records the follower misses.
    const name = randomTopic("ps");
    const created = await store.createTopic({ name, partitions: 2, configs: { "replication.factor": 3, "replica.locations": "wnam,enam,weur" } });
    if (!created.ok) throw new Error(created.code);
    const topicId = created.topic.topicId;
    for (const id of ["r1", "r2", "r3"]) for (const p of [0, 1]) startedReplicas.push({ topicId, id, p });
    const moved = await store.recordPlacement({
      topicId,
      partition: 1,
      replicas: [
        { id: "r1", location: "wnam" },
        { id: "r3", location: "weur" },
        { id: "r4", location: "apac" },
      ],
    });
    expect(moved.ok).toBe(true);
    expect((await store.recordPlacement({ topicId, partition: 0, leader: "r2", leaderEpoch: 7 })).ok).toBe(true);
    // A late report of an older epoch does not move the leader back.
    expect((await store.recordPlacement({ topicId, partition: 0, leader: "r3", leaderEpoch: 6 })).ok).toBe(true);
    for (let i = 0; i < 4; i++) expect((await store.createTopic({ name: randomTopic("ps-filler") })).ok).toBe(true);
    const ls = await member(groupId, await leaderId([out])).status();
    expect(ls.ok && ls.status.snapshotIndex > appliedAtCrash).toBe(true);

    const expected = [
      {
        partition: 0,
        replicas: [
          { id: "r1", location: "wnam" },
          { id: "r2", location: "enam" },
          { id: "r3", location: "weur" },
        ],
        leader: "r2",
        leaderEpoch: 7,
      },
      {
        partition: 1,
        replicas: [
          { id: "r1", location: "wnam" },
          { id: "r3", location: "weur" },
          { id: "r4", location: "apac" },
        ],
        leader: null,
        leaderEpoch: -1,
      },
    ];
    const got = await store.getTopic(name);
    expect(got.ok && got.topic.placements).toEqual(expected);
    expect((await member(groupId, out).setFaults({})).ok).toBe(true);
    await until("the follower installs the snapshot with the placements", async () => {
      const r = await member(groupId, out).localRead({ type: "getTopic", name: `public/default/${name}` });
      const topic = r.ok ? (r.result as { topic?: TopicSummary }).topic : undefined;
      return JSON.stringify(topic?.placements) === JSON.stringify(expected) ? true : undefined;
    });
    const st = await member(groupId, out).status();
    expect(st.ok && st.status.snapshotIndex > appliedAtCrash).toBe(true);
  }, 120_000);

  it("a delete with one replica down: the others are destroyed at once, the task stays pending, and the sweep destroys the last one once it is back", async () => {
    const { name, topicId } = await createReplicated();
    await leaderOf(topicId);
    expect((await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: "x" }] })).status).toBe(200);
    expect(await replica(topicId, "r2").setFaults({ crashed: true })).toMatchObject({ ok: true });
    const deleted = await call(`/v1/topics/${name}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    expect((await call(`/v1/topics/${name}`)).status).toBe(404);
    for (const id of ["r1", "r3"]) await expectDestroyed(topicId, id);
    await sleep(2_500);
    const pending = (await pendingTasks()).filter((t) => t.topicId === topicId);
    expect(pending).toMatchObject([{ action: "destroy", replicas: [["r1", "r2", "r3"]] }]);
    expect(await replica(topicId, "r2").setFaults({})).toMatchObject({ ok: true });
    await until("the destroy task done", async () => ((await pendingTasks()).some((t) => t.topicId === topicId) ? undefined : true));
    await expectDestroyed(topicId, "r2");
  }, 60_000);

  it("a partition's error answer carries the metadata offset of the configs it holds", async () => {
    const name = randomTopic("po");
    const created = await createTopic(name, 1);
    startedReplicas.push({ topicId: created.topicId, id: "r1" });
    const patched = await json("PATCH", `/v1/topics/${name}`, { configs: { "retention.ms": 222_000_000 } });
    expect(patched.status).toBe(200);
    const held = await runInDurableObject(replica(created.topicId, "r1") as unknown as DurableObjectStub, (_o, state) =>
      Number(state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'configs_offset'").toArray()[0]?.value),
    );
    expect(held).toBeGreaterThan(0);
    const res = await call(`/v1/topics/${name}/partitions/0/records?offset=99&maxWaitMs=0`);
    const body = (await res.json()) as ErrorBody;
    expect(body.error.code).toBe("OFFSET_OUT_OF_RANGE");
    expect(body.error.details?.metadataOffset).toBe(held);
  });

  it("the gateway tries the recorded leader first: a fresh isolate's first produce succeeds with r1 down", async () => {
    const { name, topicId } = await createReplicated();
    let leader = (await leaderOf(topicId)).replica;
    if (leader === "r1") {
      // Moved at the partition itself, so this isolate hears of it only through the metadata.
      const moved = await replica(topicId, "r1").transferLeadership("r2");
      expect(moved).toMatchObject({ ok: true, leaderReplica: "r2" });
      leader = "r2";
    }
    await until("the leader recorded", async () => ((await placementOf(name))?.leader === leader ? true : undefined));
    expect(await replica(topicId, "r1").setFaults({ crashed: true })).toMatchObject({ ok: true });
    // Without the placement the first try would be r1, whose failed call is answered UNAVAILABLE
    // (a produce is not resent: it may have been proposed).
    const res = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: "first" }] });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as ProduceResponse).records[0]!.offset).toBe(0);
  }, 60_000);
});
