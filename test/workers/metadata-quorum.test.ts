/**
 * The metadata quorum (docs/RAFT.md, "The metadata quorum"): TopicMetadataStore over a Raft
 * group of RaftMemberDO objects, behind EDGELOG_METADATA_QUORUM. Store-level: topics created
 * before and after the leader crashes are all present, none twice, and every answer carries
 * the metadata offset. Partition lifecycle from committed records: a crash injected between a
 * record's commit and its partitions' init or destroy is completed by the leader's sweep (or by
 * the next reader). Gateway-level: with the switch on, a topic is created, produced to and read
 * through the real routes, and the topic cache refreshes on a newer metadata offset.
 */
import { env } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import { topicCache } from "../../src/gateway/topics.ts";
import { encodeMetadataCommand, type LifecycleTask, type MetadataAnswer } from "../../src/metadata/commands.ts";
import { metadataQuorumMembers, RaftMetadataStore } from "../../src/metadata/raft-store.ts";
import { metadataStore } from "../../src/metadata/store.ts";
import { partitionStub } from "../../src/partition/rpc.ts";
import type { TopicSummary } from "../../src/protocol/types.ts";
import { appCall, CrashingStore, eventually, leaderOf, quorumGroup } from "./metadata-quorum-helpers.ts";
import { crashStartedMembers, ELECTION_TICKS, member, TICK_MS, trackMembers } from "./raft-helpers.ts";

/** Whether partition `p` of topic id `topicId` is initialised (an uninitialised or destroyed one answers UNKNOWN_TOPIC_OR_PARTITION). */
async function partitionExists(topicId: string, p: number): Promise<boolean> {
  const r = await partitionStub(env.PARTITION, topicId, p).describe();
  if (!r.ok && r.code !== "UNKNOWN_TOPIC_OR_PARTITION") throw new Error(`describe ${topicId}/${p}: ${r.code}`);
  return r.ok;
}

/** The lifecycle tasks pending in the group (read at the leader's applied state). */
async function pendingTasks(groupId: string, ids: string[]): Promise<LifecycleTask[]> {
  const r = await member(groupId, await leaderOf(groupId, ids)).localRead({ type: "pendingLifecycle" });
  if (!r.ok) throw new Error(r.code);
  return (r.result as { tasks: LifecycleTask[] }).tasks;
}

/** Members started by this file: stopped (acting crashed, no clock) after it, so nothing runs on after the file. */
afterAll(crashStartedMembers);

describe("EDGELOG_METADATA_QUORUM", () => {
  it("parses to the quorum's members; unset or off keeps MetadataDO", () => {
    expect(metadataQuorumMembers(undefined)).toBeNull();
    expect(metadataQuorumMembers("off")).toBeNull();
    expect(metadataQuorumMembers("1")).toEqual([{ id: "m1" }]);
    expect(metadataQuorumMembers("3")).toEqual([{ id: "m1" }, { id: "m2" }, { id: "m3" }]);
    expect(metadataQuorumMembers("m1@wnam, m2@enam,m3")).toEqual([{ id: "m1", locationHint: "wnam" }, { id: "m2", locationHint: "enam" }, { id: "m3" }]);
    expect(() => metadataQuorumMembers("m1@mars")).toThrow(/location hint/);
    expect(metadataStore(env)).not.toBeInstanceOf(RaftMetadataStore);
    expect(metadataStore({ ...env, EDGELOG_METADATA_QUORUM: "3" })).toBeInstanceOf(RaftMetadataStore);
  });
});

describe("the metadata quorum (3 members)", () => {
  it("topics created before and after the leader crashes are all present, none twice; answers carry the metadata offset", async () => {
    const { ids, groupId, store } = quorumGroup("md");
    const prefix = `q-${crypto.randomUUID().slice(0, 8)}`;
    const names = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${prefix}-${from + i}`);

    // The first call bootstraps the group (every member, same configuration).
    const offsets: number[] = [];
    for (const name of names(0, 5)) {
      const r = await store.createTopic({ name, partitions: 2 });
      expect(r.ok, JSON.stringify(r)).toBe(true);
      if (r.ok) offsets.push(r.metadataOffset!);
    }
    // Each create is a later record of the metadata log.
    expect([...offsets].sort((a, b) => a - b)).toEqual(offsets);
    expect(new Set(offsets).size).toBe(5);

    const got = await store.getTopic(`${prefix}-0`);
    expect(got.ok && { name: got.topic.name, partitions: got.topic.partitions }).toEqual({ name: `public/default/${prefix}-0`, partitions: 2 });
    expect(got.ok && got.metadataOffset! >= offsets[4]!).toBe(true);
    expect(await store.createTopic({ name: `${prefix}-0` })).toMatchObject({ ok: false, code: "TOPIC_ALREADY_EXISTS" });
    // Topic policies are records of the quorum too: set at create, changed by an alter.
    const withPolicy = await store.createTopic({ name: `${prefix}-p`, policies: { maxProducersPerTopic: 1 } });
    expect(withPolicy.ok && withPolicy.topic.policies.maxProducersPerTopic).toEqual({ value: 1, source: "topic" });
    const repoliced = await store.alterTopic(`${prefix}-p`, { policies: { maxProducersPerTopic: null, maxSubscriptionsPerTopic: 2 } });
    expect(repoliced.ok && [repoliced.topic.policies.maxProducersPerTopic, repoliced.topic.policies.maxSubscriptionsPerTopic]).toEqual([
      { value: 0, source: "default" },
      { value: 2, source: "topic" },
    ]);
    expect(await store.deleteTopic(`${prefix}-p`)).toMatchObject({ ok: true });
    const altered = await store.alterTopic(`${prefix}-1`, { partitions: 3, configs: { "retention.ms": 60_000 } });
    expect(altered.ok && { partitions: altered.topic.partitions, retention: altered.topic.configs["retention.ms"], details: altered.topic.partitionDetails.length }).toEqual({
      partitions: 3,
      retention: 60_000,
      details: 3,
    });
    expect(await store.alterTopic(`${prefix}-1`, { partitions: 1 })).toMatchObject({ ok: false, code: "PARTITION_DECREASE_NOT_ALLOWED" });

    // Producer ids come from blocks (KIP-730): unique.
    const pids = new Set<number>();
    for (let i = 0; i < 5; i++) {
      const r = await store.initProducerId();
      expect(r.ok).toBe(true);
      if (r.ok) pids.add(r.producerId);
    }
    expect(pids.size).toBe(5);

    // The leader crashes; admin writes continue at a new leader.
    const leader = await leaderOf(groupId, ids);
    expect((await member(groupId, leader).setFaults({ crashed: true })).ok).toBe(true);
    const faultAt = Date.now();
    const after = await store.createTopic({ name: `${prefix}-5` });
    const failoverMs = Date.now() - faultAt;
    expect(after.ok, JSON.stringify(after)).toBe(true);
    console.log(`metadata quorum failover: ${failoverMs} ms from the leader's crash to the first committed createTopic (election timeout ${TICK_MS * ELECTION_TICKS} ms)`);
    for (const name of names(6, 10)) expect((await store.createTopic({ name })).ok).toBe(true);
    expect(await store.deleteTopic(`${prefix}-9`)).toMatchObject({ ok: true });

    const listed = await store.listTopics();
    expect(listed.ok).toBe(true);
    if (!listed.ok) return;
    const ours = listed.topics.filter((t) => t.topic.startsWith(`${prefix}-`)).map((t) => t.topic);
    expect(ours).toEqual(names(0, 9).sort());
    // Every topic's partitions were initialised from its record, before and after the
    // failover, and the deleted topic's destroyed; no lifecycle task is left.
    for (const t of listed.topics.filter((x) => x.topic.startsWith(`${prefix}-`))) {
      for (let p = 0; p < t.partitions; p++) expect(await partitionExists(t.topicId, p), `${t.topic}/${p}`).toBe(true);
    }
    await eventually(
      "no lifecycle task pending",
      async () =>
        (
          await pendingTasks(
            groupId,
            ids.filter((id) => id !== leader),
          )
        ).length === 0,
    );

    // The crashed member restarts from its journal and holds the same metadata.
    expect((await member(groupId, leader).setFaults({})).ok).toBe(true);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await member(groupId, leader).localRead({ type: "listTopics" });
      const topics = r.ok ? (r.result as { topics: { topic: string }[] }).topics.map((t) => t.topic) : [];
      if (JSON.stringify(topics) === JSON.stringify(ours)) break;
      if (Date.now() > deadline) throw new Error(`the restarted member holds ${JSON.stringify(topics)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});

describe("partition lifecycle from committed metadata records", () => {
  it("a crash between a record's commit and its partitions' init or destroy is completed by the leader's sweep, never orphaned", async () => {
    const { ids, groupId, specs, options, store } = quorumGroup("lc");
    const crashing = new CrashingStore(env, specs, options);
    const prefix = `lc-${crypto.randomUUID().slice(0, 8)}`;
    const list = async (): Promise<TopicSummary[]> => {
      const r = await store.listTopics();
      if (!r.ok) throw new Error(r.code);
      return r.topics;
    };
    const topicNamed = async (short: string): Promise<TopicSummary> => (await list()).find((t) => t.topic === short)!;

    // Create: the record commits, the proposer "dies" before initialising the partitions.
    expect(await crashing.createTopic({ name: `${prefix}-a`, partitions: 2 })).toMatchObject({ ok: true });
    const a = await topicNamed(`${prefix}-a`);
    expect(a.partitions).toBe(2);
    expect([await partitionExists(a.topicId, 0), await partitionExists(a.topicId, 1)]).toEqual([false, false]);
    expect((await pendingTasks(groupId, ids)).map((t) => [t.action, t.topicId])).toEqual([["sync", a.topicId]]);
    // The leader's sweep completes it and records it done.
    await eventually("the sweep initialises a's partitions", async () => (await partitionExists(a.topicId, 0)) && (await partitionExists(a.topicId, 1)));
    await eventually("a's task is recorded done", async () => (await pendingTasks(groupId, ids)).length === 0);

    // Delete: the removal commits, the proposer dies before destroying the partitions.
    expect((await store.createTopic({ name: `${prefix}-b`, partitions: 2 })).ok).toBe(true);
    const b = await topicNamed(`${prefix}-b`);
    expect([await partitionExists(b.topicId, 0), await partitionExists(b.topicId, 1)]).toEqual([true, true]);
    expect(await crashing.deleteTopic(`${prefix}-b`)).toMatchObject({ ok: true });
    expect((await list()).some((t) => t.topic === `${prefix}-b`)).toBe(false);
    expect(await partitionExists(b.topicId, 0)).toBe(true);
    await eventually("the sweep destroys b's partitions", async () => !(await partitionExists(b.topicId, 0)) && !(await partitionExists(b.topicId, 1)));
    await eventually("b's task is recorded done", async () => (await pendingTasks(groupId, ids)).length === 0);

    // Alter (grow 1 -> 3 and a new config): the record commits, its partition calls do not happen.
    expect((await store.createTopic({ name: `${prefix}-c`, partitions: 1 })).ok).toBe(true);
    expect(await crashing.alterTopic(`${prefix}-c`, { partitions: 3, configs: { "retention.ms": 120_000 } })).toMatchObject({ ok: false, code: "UNAVAILABLE" });
    const c = await topicNamed(`${prefix}-c`);
    expect([c.partitions, await partitionExists(c.topicId, 1)]).toEqual([3, false]);
    await eventually("the sweep initialises c's new partitions", async () => (await partitionExists(c.topicId, 1)) && (await partitionExists(c.topicId, 2)));
    await eventually("c's task is recorded done", async () => (await pendingTasks(groupId, ids)).length === 0);
    // The config reached the old partition too.
    const p0 = await partitionStub(env.PARTITION, c.topicId, 0).describe();
    const p2 = await partitionStub(env.PARTITION, c.topicId, 2).describe();
    expect(p0.ok && p2.ok).toBe(true);

    // The proposer dies after the commit AND the leader crashes before its sweep: the task is
    // replicated state, so the new leader's sweep completes it.
    expect((await crashing.createTopic({ name: `${prefix}-e`, partitions: 1 })).ok).toBe(true);
    const e = await topicNamed(`${prefix}-e`);
    const oldLeader = await leaderOf(groupId, ids);
    expect((await member(groupId, oldLeader).setFaults({ crashed: true })).ok).toBe(true);
    const alive = ids.filter((id) => id !== oldLeader);
    await eventually("the new leader's sweep initialises e's partition", async () => partitionExists(e.topicId, 0));
    await eventually("e's task is recorded done", async () => (await pendingTasks(groupId, alive)).length === 0);
    expect(await leaderOf(groupId, alive)).not.toBe(oldLeader);

    // A reader that meets a pending create completes it before answering: no caller routes to
    // a partition before its init, whether or not the sweep got there.
    expect((await crashing.createTopic({ name: `${prefix}-d`, partitions: 1 })).ok).toBe(true);
    const got = await store.getTopic(`${prefix}-d`);
    expect(got.ok).toBe(true);
    if (got.ok) expect(await partitionExists(got.topic.topicId, 0)).toBe(true);
  });

  it("a slow runner's init after the topic's delete is undone: lifecycleDone answers that the topic is gone", async () => {
    const { ids, groupId, specs, options } = quorumGroup("lc1", {}, ["m1"]);
    const crashing = new CrashingStore(env, specs, options);
    const name = `lc1-${crypto.randomUUID().slice(0, 8)}`;
    expect((await crashing.createTopic({ name, partitions: 1 })).ok).toBe(true);
    // Take the create's task as a runner would have read it, then the topic is deleted (and
    // the delete's task completed) before that runner gets to init.
    const [task] = await pendingTasks(groupId, ids);
    expect(task?.action).toBe("sync");
    const del = await member(groupId, "m1").propose(encodeMetadataCommand({ type: "deleteTopic", name: `public/default/${name}`, topicId: task!.topicId }));
    expect(del.ok && (del.result as MetadataAnswer).ok).toBe(true);
    const { completeLifecycleTask } = await import("../../src/metadata/lifecycle.ts");
    const propose = async (cmd: Parameters<typeof encodeMetadataCommand>[0]): Promise<MetadataAnswer> => {
      const r = await member(groupId, "m1").propose(encodeMetadataCommand(cmd));
      if (!r.ok) throw new Error(r.code);
      return r.result as MetadataAnswer;
    };
    const [destroyTask] = await pendingTasks(groupId, ids);
    expect(destroyTask).toMatchObject({ action: "destroy", topicId: task!.topicId });
    await completeLifecycleTask(env.PARTITION, destroyTask!, propose);
    // The slow runner now inits the partition of a deleted topic...
    await completeLifecycleTask(env.PARTITION, task!, propose);
    // ...and, told the topic is gone, destroys it again.
    expect(await partitionExists(task!.topicId, 0)).toBe(false);
    expect(await pendingTasks(groupId, ids)).toEqual([]);
  });
});

describe("the gateway with EDGELOG_METADATA_QUORUM = 1", () => {
  const app = createApp();
  const quorumEnv = { ...env, EDGELOG_METADATA_QUORUM: "1" } as Env;
  const call = (method: string, path: string, body?: unknown): Promise<Response> => appCall(app, quorumEnv, method, path, body);

  it("creates a topic in the quorum, produces to it and reads it back; MetadataDO never hears of it", async () => {
    trackMembers("metadata", ["m1"]);
    const topic = `gq-${crypto.randomUUID().slice(0, 8)}`;
    const created = await call("POST", "/v1/topics", { name: topic, partitions: 1 });
    expect(created.status, await created.clone().text()).toBe(201);
    const produced = await call("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "hello" }, { value: "quorum" }] });
    expect(produced.status, await produced.clone().text()).toBe(200);
    const fetched = await call("GET", `/v1/topics/${topic}/partitions/0/records?offset=0`);
    expect(fetched.status).toBe(200);
    expect(((await fetched.json()) as { records: { value: string }[] }).records.map((r) => r.value)).toEqual(["hello", "quorum"]);
    const described = await call("GET", `/v1/topics/${topic}`);
    expect(((await described.json()) as { partitionDetails: { logEndOffset: number }[] }).partitionDetails[0]!.logEndOffset).toBe(2);
    // Not in MetadataDO: the default store does not know it.
    expect(await metadataStore(env).getTopic(topic)).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
  });

  it("the topic cache refreshes an entry once this isolate sees a newer metadata offset", async () => {
    trackMembers("metadata", ["m1"]);
    const topic = `gc-${crypto.randomUUID().slice(0, 8)}`;
    const full = `public/default/${topic}`;
    expect((await call("POST", "/v1/topics", { name: topic, partitions: 1 })).status).toBe(201);
    // A produce loads the topic into the cache, tagged with the offset it reflects.
    expect((await call("POST", `/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "a" }] })).status).toBe(200);
    // (peek at time 0: the TTL is not what this test is about.)
    expect(topicCache.peek(full, 0)?.partitions).toBe(1);

    // Another isolate grows the topic to 2 partitions: its record goes straight to the quorum,
    // so this isolate has not seen its offset, and its entry stays in use (the TTL bound).
    const m1 = member("metadata", "m1");
    const cur = await m1.localRead({ type: "getTopic", name: full });
    const summary = (cur.ok ? (cur.result as unknown as MetadataAnswer & { ok: true }) : null)?.topic;
    expect(summary?.partitions).toBe(1);
    const altered = await m1.propose(encodeMetadataCommand({ type: "alterTopic", name: full, topicId: summary!.topicId, partitions: 2, configs: summary!.configs }));
    expect(altered.ok && (altered.result as MetadataAnswer).ok).toBe(true);
    expect(topicCache.peek(full, 0)?.partitions).toBe(1);

    // Any answer through this isolate that carries a newer offset (here: listing topics) makes
    // the entry stale: the next lookup reloads it.
    const refreshes = topicCache.offsetRefreshes;
    expect((await call("GET", "/v1/topics")).status).toBe(200);
    expect(topicCache.peek(full, 0)).toBeUndefined();
    expect(topicCache.offsetRefreshes).toBe(refreshes + 1);
    // The reload meets the alter's pending partition task and completes it before answering:
    // partition 1 is there at once (the leader's sweep is not needed).
    const produced = await call("POST", `/v1/topics/${topic}/partitions/1/records`, { records: [{ value: "b" }] });
    expect(produced.status, await produced.clone().text()).toBe(200);
    expect(topicCache.peek(full, 0)?.partitions).toBe(2);
  });
});
