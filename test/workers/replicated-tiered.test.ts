/**
 * Tiered storage of a replicated partition (docs/RAFT.md "Tiered storage of a replicated
 * partition"): each replica offloads its own copy of its closed segments under its own R2 prefix
 * (`segments/<topicId>/<partition>/<replica>/`), reads below its local start from its own
 * objects, sweeps only its own prefix, and deletes its own objects when the topic goes. Three
 * replicas in one workerd, real alarms, R2 (Miniflare's) and RPC, through the gateway.
 *
 * Times are not asserted (they depend on the machine's load).
 */
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe as suite, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import type { ErrorBody, JsonFetchResponse, ProduceResponse } from "../../src/protocol/index.ts";
import { call, json } from "./helpers.ts";
import { REPLICAS as IDS, TEST_QUIESCED_TICK_MS, crashStarted, createReplicated, leaderOf, replica, replicaLog, sleep, status, until } from "./replica-helpers.ts";

afterEach(crashStarted);

const MiB = 1024 * 1024;
/** Values of 400 KiB: two one-record batches fill a 1 MiB segment, a third rolls it. */
const big = (i: number) => `v${i}`.padEnd(400 * 1024, ".");
const key = (topicId: string, id: string, base: number) => `segments/${topicId}/0/${id}/${String(base).padStart(20, "0")}-${base}.seg`;

/** A segment row as {@link storedAt} answers it: base offset, location, R2 key. */
const seg = (base: number, location: string, k: string | null): [number, string, string | null] => [base, location, k];

/** The storage object of replica `id` (for reading its tables). */
const objectOf = (topicId: string, id: string): DurableObjectStub => {
  const base = partitionObjectName(topicId, 0);
  return env.PARTITION.getByName(id === "r1" ? base : `${base}/${id}`);
};

/** Every R2 key under the partition's prefix, sorted. */
async function keysOf(topicId: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.SEGMENTS!.list({ prefix: `segments/${topicId}/`, limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
    out.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  return out.sort();
}

/** What a replica stores: its local batch rows (base offsets) and its segment index (base offset, location, key). */
async function storedAt(topicId: string, id: string): Promise<{ rows: number[]; segs: [number, string, string | null][] }> {
  return runInDurableObject(objectOf(topicId, id), (_o, state) => ({
    rows: state.storage.sql
      .exec<{ base_offset: number }>("SELECT base_offset FROM batches ORDER BY base_offset")
      .toArray()
      .map((r) => r.base_offset),
    segs: state.storage.sql
      .exec<{ base_offset: number; location: string; r2_key: string | null }>("SELECT base_offset, location, r2_key FROM seg_segments ORDER BY id")
      .toArray()
      .map((r) => [r.base_offset, r.location, r.r2_key] as [number, string, string | null]),
  }));
}

async function produceRetrying(name: string, value: string): Promise<ProduceResponse> {
  for (;;) {
    const res = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value }] });
    const text = await res.text();
    if (res.status === 200) return JSON.parse(text) as ProduceResponse;
    expect((JSON.parse(text) as ErrorBody).error.retriable, text).toBe(true);
    await sleep(50);
  }
}

/** Reads the partition from `from` to `end` through the gateway (retrying retriable errors, e.g. during an election): the values' first two characters, by offset. */
async function readThrough(name: string, from: number, end: number): Promise<string[]> {
  const values: string[] = [];
  for (let offset = from; offset < end; ) {
    const res = await call(`/v1/topics/${name}/partitions/0/records?offset=${offset}&maxBytes=${MiB}`);
    const text = await res.text();
    if (res.status !== 200) {
      expect((JSON.parse(text) as ErrorBody).error.retriable, text).toBe(true);
      await sleep(50);
      continue;
    }
    const f = JSON.parse(text) as JsonFetchResponse;
    values.push(...f.records.map((r) => String(r.value).slice(0, 2)));
    offset = f.nextOffset;
  }
  return values;
}

/** Makes replica `id`'s `owner` timer due and runs its alarm (after a restart, so the schedule's mirror reloads). */
async function runOwnerCheck(topicId: string, id: string): Promise<void> {
  await runInDurableObject(objectOf(topicId, id), (_o, state) => void state.storage.sql.exec("UPDATE _schedule SET due_ms = 0 WHERE room = 'lifecycle' AND key = 'owner'"));
  await evictDurableObject(objectOf(topicId, id));
  await runInDurableObject(objectOf(topicId, id), () => undefined);
  await runDurableObjectAlarm(objectOf(topicId, id));
}

/** Waits until every replica in `ids` holds `want` (its local rows and segment index). */
async function allStore(topicId: string, ids: readonly string[], want: (id: string) => Awaited<ReturnType<typeof storedAt>>, what: string): Promise<void> {
  for (const id of ids) {
    await until(`${id}: ${what}`, async () => (JSON.stringify(await storedAt(topicId, id)) === JSON.stringify(want(id)) ? true : undefined), 60_000);
  }
}

suite("tiered storage of a replicated partition (replication.factor 3)", () => {
  it("each replica offloads its own copy under its own prefix; reads from 0 come from R2 at the leader and again after a failover; the owner sweep keeps every live object; deleting the topic deletes all three prefixes", async () => {
    const { name, topicId } = await createReplicated({ "segment.bytes": MiB, "remote.storage.enable": true, "local.retention.ms": 0 });
    const first = await leaderOf(topicId);
    for (let i = 0; i < 5; i++) expect((await produceRetrying(name, big(i))).records[0]!.offset).toBe(i);

    // Segments [0,1] and [2,3] closed on every replica (segment.bytes: deterministic rolls);
    // each replica uploads them under its own prefix and drops its local rows; [4] stays local.
    const tiered = (id: string) => ({
      rows: [4],
      segs: [seg(0, "remote", key(topicId, id, 0)), seg(2, "remote", key(topicId, id, 2)), seg(4, "local", null)],
    });
    await allStore(topicId, IDS, tiered, "segments [0,1] and [2,3] in R2 only, under its own keys");
    const live = IDS.flatMap((id) => [key(topicId, id, 0), key(topicId, id, 2)]).sort();
    expect(await keysOf(topicId)).toEqual(live);
    // Three copies of the same bytes (each replica encoded its own committed log).
    for (const base of [0, 2]) {
      const bodies = await Promise.all(IDS.map(async (id) => new Uint8Array(await (await env.SEGMENTS!.get(key(topicId, id, base)))!.arrayBuffer()).join(",")));
      expect(bodies[1]).toBe(bodies[0]);
      expect(bodies[2]).toBe(bodies[0]);
    }

    // A reader from 0 through the gateway: offsets 0-3 exist only in R2 now (the leader's own objects).
    expect(await readThrough(name, 0, 5)).toEqual(["v0", "v1", "v2", "v3", "v4"]);

    // The leader crashes; the new leader reads its own remote segments.
    await replica(topicId, first.replica).setFaults({ crashed: true });
    const second = await leaderOf(topicId, [first.replica]);
    expect(second.replica).not.toBe(first.replica);
    expect(await readThrough(name, 0, 5)).toEqual(["v0", "v1", "v2", "v3", "v4"]);
    await replica(topicId, first.replica).setFaults({});
    await leaderOf(topicId);

    // The owner check of each replica: a stray key under its own prefix goes (an upload whose
    // row is gone), the other replicas' live objects and its own stay.
    const strays = IDS.map((id) => key(topicId, id, 99));
    for (const k of strays) await env.SEGMENTS!.put(k, new Uint8Array([1, 2, 3]));
    for (const [i, id] of IDS.entries()) {
      await runOwnerCheck(topicId, id);
      // The check may run on the runtime's own alarm call: wait for it (bounded).
      await until(`${id}'s stray deleted`, async () => ((await env.SEGMENTS!.head(key(topicId, id, 99))) === null ? true : undefined));
      // Only its own stray went: the strays of the replicas not checked yet are still there.
      expect(await keysOf(topicId)).toEqual([...live, ...strays.slice(i + 1)].sort());
    }
    expect(await keysOf(topicId)).toEqual(live);
    // Nothing live was swept: every replica still reads its remote segments (fetched at each replica directly).
    await leaderOf(topicId);
    for (const id of IDS)
      expect(
        (await replicaLog(topicId, id)).map((r) => r.value.slice(0, 2)),
        id,
      ).toEqual(["v0", "v1", "v2", "v3", "v4"]);
    expect(await readThrough(name, 0, 5)).toEqual(["v0", "v1", "v2", "v3", "v4"]);

    // Deleting the topic deletes every replica's objects.
    expect((await call(`/v1/topics/${name}`, { method: "DELETE" })).status).toBe(204);
    expect(await keysOf(topicId)).toEqual([]);
  }, 180_000);

  it("a follower whose log is replaced by snapshot catch-up pulls the tiered-away range from the leader's objects, sweeps its own old objects as orphans and tiers its new log under its own prefix", async () => {
    const { name, topicId } = await createReplicated({ "segment.bytes": MiB, "remote.storage.enable": true, "local.retention.ms": 0 });
    // A small journal (the leader compacts after a few entries) and one batch per catch-up chunk.
    for (const id of IDS)
      expect(await replica(topicId, id).setReplicaTestKnobs({ quiescedTickMs: TEST_QUIESCED_TICK_MS, keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1 })).toMatchObject({ ok: true });
    const leader = (await leaderOf(topicId)).replica;
    for (let i = 0; i < 5; i++) await produceRetrying(name, big(i));
    await allStore(topicId, IDS, (id) => ({ rows: [4], segs: [seg(0, "remote", key(topicId, id, 0)), seg(2, "remote", key(topicId, id, 2)), seg(4, "local", null)] }), "[0,3] tiered");
    const down = IDS.find((id) => id !== leader)!;
    const before = (await status(topicId, down))!;
    await replica(topicId, down).setFaults({ crashed: true });
    for (let i = 5; i < 11; i++) expect((await produceRetrying(name, big(i))).records[0]!.offset).toBe(i);
    // Small records into the active segment [10, ...]: more journal entries, so the leader compacts.
    for (let i = 0; i < 10; i++) expect((await produceRetrying(name, `s${i}`)).records[0]!.offset).toBe(11 + i);
    await until("the leader's journal compacted past the follower", async () => ((await status(topicId, leader))!.snapshotIndex > before.appliedIndex ? true : undefined));
    // The leader's own deleteRecords (per replica) moves its log start past the follower's log end (5):
    // the follower's log will be replaced from 6, and the leader holds [6, 9] in R2 only.
    expect(await replica(topicId, leader).deleteRecords(6)).toEqual({ ok: true, logStartOffset: 6 });
    const local = Array.from({ length: 11 }, (_, i) => 10 + i);
    const after = (id: string) => ({ rows: local, segs: [seg(6, "remote", key(topicId, id, 6)), seg(8, "remote", key(topicId, id, 8)), seg(10, "local", null)] });
    await allStore(topicId, [leader], after, "the leader's [6,9] in R2 only, [0,5] gone");

    await replica(topicId, down).setFaults({});
    await until(`${down} caught up`, async () => ((await status(topicId, down))?.highWatermark === 21 ? true : undefined), 60_000);
    expect((await status(topicId, down))!.catchUpInstalls).toBe(1);
    const d = await replica(topicId, down).describe();
    expect(d.ok && d.partition.logStartOffset).toBe(6);
    const want = ["v6", "v7", "v8", "v9", "v1", ...Array.from({ length: 10 }, (_, i) => `s${i}`)];
    expect((await replicaLog(topicId, leader, 6)).map((r) => r.value.slice(0, 2))).toEqual(want);
    expect(await replicaLog(topicId, down, 6)).toEqual(await replicaLog(topicId, leader, 6));
    // Its segment rows were rebuilt for the new log and offloaded again under its own keys; the
    // objects of its old rows ([0,1], [2,3]) were orphans and are gone.
    await allStore(topicId, [down], after, "the replaced log re-tiered under its own keys");
    // deleteRecords at the leader is a Raft command: every replica's retention deletes its own
    // objects below 6 (the other follower's too), and the caught-up replica's old rows' objects
    // are swept as orphans. What is left: [6,7] and [8,9], one copy per replica.
    const wantKeys = IDS.flatMap((id) => [key(topicId, id, 6), key(topicId, id, 8)]).sort();
    await until("each replica's objects below 6 deleted, its [6,9] uploaded", async () => (JSON.stringify(await keysOf(topicId)) === JSON.stringify(wantKeys) ? true : undefined), 60_000);
    await allStore(topicId, IDS, after, "[6,9] in R2 only, under its own keys");
    // The caught-up replica leads and serves the log from its own objects.
    for (let round = 0; ; round++) {
      const l = await leaderOf(topicId);
      if (l.replica === down) break;
      expect(round, "the caught-up replica never won an election").toBeLessThan(8);
      await replica(topicId, l.replica).setFaults({ crashed: true });
      await leaderOf(topicId, [l.replica]);
      await replica(topicId, l.replica).setFaults({});
    }
    expect(await readThrough(name, 6, 21)).toEqual(want);
  }, 240_000);

  it("a reassignment: the new replica copies the log (the tiered-away range from the leader's objects) and tiers it under its own prefix; the removed replica deletes only its own objects", async () => {
    const { name, topicId } = await createReplicated({ "segment.bytes": MiB, "remote.storage.enable": true, "local.retention.ms": 0 });
    const small = { quiescedTickMs: TEST_QUIESCED_TICK_MS, keepEntries: 3, leaderKeepEntries: 5 };
    for (const id of [...IDS, "r4"]) expect(await replica(topicId, id).setReplicaTestKnobs(small)).toMatchObject({ ok: true });
    const leader = (await leaderOf(topicId)).replica;
    for (let i = 0; i < 5; i++) await produceRetrying(name, big(i));
    // Small records into the active segment [4, ...]: more journal entries, so the leader compacts.
    for (let i = 0; i < 6; i++) await produceRetrying(name, `s${i}`);
    const tiered = (id: string) => ({ rows: [4, 5, 6, 7, 8, 9, 10], segs: [seg(0, "remote", key(topicId, id, 0)), seg(2, "remote", key(topicId, id, 2)), seg(4, "local", null)] });
    await allStore(topicId, IDS, tiered, "[0,3] tiered");
    try {
      const follower = IDS.find((id) => id !== leader && id !== "r1")!;
      const res = await json("POST", `/v1/topics/${name}/partitions/0/replicas`, { replace: follower });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      expect(JSON.parse(text)).toMatchObject({ added: "r4", removed: follower });
      const voters = [...IDS.filter((id) => id !== follower), "r4"];
      await until(`${follower} destroyed`, async () => {
        const st = await replica(topicId, follower).replicaStatus();
        return st.ok && st.replica === null ? true : undefined;
      });
      await until("r4 at the high watermark", async () => ((await status(topicId, "r4"))?.highWatermark === 11 ? true : undefined));
      const want = ["v0", "v1", "v2", "v3", "v4", "s0", "s1", "s2", "s3", "s4", "s5"];
      expect((await replicaLog(topicId, "r4")).map((r) => r.value.slice(0, 2))).toEqual(want);
      expect(await replicaLog(topicId, "r4")).toEqual(await replicaLog(topicId, leader));
      // r4 offloads its own copy; the removed replica's objects are gone, the others' untouched.
      await allStore(topicId, ["r4"], tiered, "r4's [0,3] tiered under its own keys");
      expect(await keysOf(topicId)).toEqual(voters.flatMap((id) => [key(topicId, id, 0), key(topicId, id, 2)]).sort());
      expect(await readThrough(name, 0, 11)).toEqual(want);
    } finally {
      await replica(topicId, "r4").setFaults({ crashed: true });
    }
  }, 180_000);
});
