/**
 * The metadata quorum (docs/RAFT.md, "The metadata quorum"): TopicMetadataStore over a Raft
 * group of RaftMemberDO objects, behind EDGELOG_METADATA_QUORUM. Store-level: topics created
 * before and after the leader crashes are all present, none twice, and every answer carries
 * the metadata offset. Gateway-level: with the switch on, a topic is created, produced to and
 * read through the real routes.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import { metadataQuorumMembers, RaftMetadataStore } from "../../src/metadata/raft-store.ts";
import { metadataStore } from "../../src/metadata/store.ts";
import { raftMemberName, type RaftMemberRpc } from "../../src/raft/group.ts";

const TICK_MS = 50;
const ELECTION_TICKS = 10;

function member(groupId: string, id: string): RaftMemberRpc {
  return env.RAFT_MEMBER.get(env.RAFT_MEMBER.idFromName(raftMemberName(groupId, id))) as unknown as RaftMemberRpc;
}

async function leaderOf(groupId: string, ids: string[]): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const id of ids) {
      const s = await member(groupId, id)
        .status()
        .catch(() => null);
      if (s?.ok && s.status.role === "leader") return id;
    }
    if (Date.now() > deadline) throw new Error("no leader");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Members started by this file: stopped (acting crashed, no clock) after it, so nothing runs on after the file. */
const started: [groupId: string, id: string][] = [];
afterAll(async () => {
  await Promise.all(started.map(([g, id]) => member(g, id).setFaults({ crashed: true })));
});

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
    const ids = ["m1", "m2", "m3"];
    const groupId = `md-${crypto.randomUUID().slice(0, 8)}`;
    for (const id of ids) started.push([groupId, id]);
    const store = new RaftMetadataStore(
      env,
      ids.map((id) => ({ id })),
      { groupId, tickMs: TICK_MS, electionTicks: ELECTION_TICKS },
    );
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

describe("the gateway with EDGELOG_METADATA_QUORUM = 1", () => {
  const app = createApp();
  const quorumEnv = { ...env, EDGELOG_METADATA_QUORUM: "1" } as Env;
  async function call(method: string, path: string, body?: unknown): Promise<Response> {
    const ctx = createExecutionContext();
    const init: RequestInit = body === undefined ? { method } : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
    const res = await app.fetch(new Request(`http://edgelog.test${path}`, init), quorumEnv, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  }

  it("creates a topic in the quorum, produces to it and reads it back; MetadataDO never hears of it", async () => {
    started.push(["metadata", "m1"]);
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
});
