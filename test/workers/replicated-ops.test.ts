/**
 * Operations on a replicated partition (`replication.factor` 3; docs/RAFT.md "Replicated
 * partitions"): deleteRecords (KIP-107) as a replicated command, and field case B5 (retention
 * never moves the log start past the high watermark). Three replicas in one workerd, real alarms
 * and RPC, through the real gateway; fault injection (EDGELOG_RAFT_FAULTS) crashes replicas.
 */
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe as suite, expect, it } from "vitest";
import { Admin } from "../../sdk/src/admin.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { encodeBatch } from "../../src/codec/index.ts";
import type { ErrorBody, ProduceResponse } from "../../src/protocol/index.ts";
import type { DeleteRecordsResponse, PartitionLeaderResponse } from "../../src/protocol/types.ts";
import { call, createTopic, expectError, json, randomTopic } from "./helpers.ts";
import { METADATA_OBJECT_NAME } from "../../src/metadata/store.ts";
import { REPLICAS, crashStarted, createReplicated, leaderOf, replica, replicaLog, status, until } from "./replica-helpers.ts";

afterEach(crashStarted);

async function produceValues(name: string, values: string[]): Promise<number[]> {
  const res = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: values.map((value) => ({ value })) });
  const body = (await res.json()) as ProduceResponse;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.records.map((r) => r.offset);
}

/** A replica's log start offset (ListOffsets earliest), or undefined when it is crashed. */
async function logStartOf(topicId: string, id: string): Promise<number | undefined> {
  try {
    const r = await replica(topicId, id).listOffsets({ spec: "earliest" });
    return r.ok && r.offset !== null ? r.offset : undefined;
  } catch {
    return undefined;
  }
}

async function allAtLogStart(topicId: string, want: number, ids: readonly string[] = REPLICAS): Promise<void> {
  for (const id of ids) await until(`${id} at log start ${want}`, async () => ((await logStartOf(topicId, id)) === want ? true : undefined));
}

const fetchAt = (topicId: string, id: string, offset: number) => replica(topicId, id).fetchRecords({ offset, maxRecords: 100, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 });

suite("deleteRecords on a replicated partition (KIP-107 as a Raft command)", () => {
  it("moves every replica's log start to the same offset; below it a fetch is OFFSET_OUT_OF_RANGE on each replica; refused past the high watermark; kept across failover", async () => {
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    expect(await produceValues(name, ["v0", "v1", "v2", "v3", "v4", "v5"])).toEqual([0, 1, 2, 3, 4, 5]);
    const path = `/v1/topics/${name}/partitions/0/delete-records`;

    // Past the high watermark: refused with the bounds, nothing proposed.
    const over = await expectError(await json("POST", path, { offset: 7 }), "OFFSET_OUT_OF_RANGE", 416);
    expect(over.details).toMatchObject({ offset: 7, logStartOffset: 0, highWatermark: 6 });

    // Through the gateway (routed to the leader whichever replica r1 is), answered after commit.
    const res = await json("POST", path, { offset: 4 });
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await res.json()) as DeleteRecordsResponse).toMatchObject({ partition: 0, logStartOffset: 4 });
    await allAtLogStart(topicId, 4);
    for (const id of REPLICAS) {
      const below = await fetchAt(topicId, id, 3);
      expect(below, id).toMatchObject({ ok: false, code: "OFFSET_OUT_OF_RANGE" });
      expect((await replicaLog(topicId, id, 4)).map((r) => r.value)).toEqual(["v4", "v5"]);
    }
    // A follower asked directly proposes nothing and names the leader.
    const follower = REPLICAS.find((id) => id !== leader.replica)!;
    expect(await replica(topicId, follower).deleteRecords(5)).toMatchObject({ ok: false, code: "NOT_LEADER_OR_FOLLOWER", details: { leaderReplica: leader.replica } });
    expect(await logStartOf(topicId, follower)).toBe(4);
    // At or below the log start: a no-op answering the low watermark.
    expect(await replica(topicId, leader.replica).deleteRecords(2)).toEqual({ ok: true, logStartOffset: 4 });

    // Failover: the leader crashes; the new leader has the same log start, produce continues
    // densely, and -1 (the high watermark) is replicated from the new leader.
    await replica(topicId, leader.replica).setFaults({ crashed: true });
    const next = await leaderOf(topicId, [leader.replica]);
    expect(next.leaderEpoch).toBeGreaterThan(leader.leaderEpoch);
    expect(await logStartOf(topicId, next.replica)).toBe(4);
    let offsets: number[] | undefined;
    await until("produce after failover", async () => {
      const r = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: "v6" }] });
      if (r.status !== 200) return undefined;
      offsets = ((await r.json()) as ProduceResponse).records.map((x) => x.offset);
      return true;
    });
    expect(offsets).toEqual([6]);
    const latest = await until("deleteRecords -1 after failover", async () => {
      const r = await json("POST", path, { offset: -1 });
      return r.status === 200 ? ((await r.json()) as DeleteRecordsResponse) : undefined;
    });
    expect(latest.logStartOffset).toBe(7);
    const alive = REPLICAS.filter((id) => id !== leader.replica);
    await allAtLogStart(topicId, 7, alive);
    // The crashed replica restarts from its journal and catches up to the same log start.
    await replica(topicId, leader.replica).setFaults({});
    await allAtLogStart(topicId, 7);
    for (const id of REPLICAS) {
      await until(`${id} HW 7`, async () => ((await status(topicId, id))?.highWatermark === 7 ? true : undefined));
      expect(await fetchAt(topicId, id, 6), id).toMatchObject({ ok: false, code: "OFFSET_OUT_OF_RANGE" });
      expect(await fetchAt(topicId, id, 7), id).toMatchObject({ ok: true, batches: [], highWatermark: 7 });
    }
    // Through the gateway, whichever replica serves the read.
    await expectError(await call(`/v1/topics/${name}/partitions/0/records?offset=5`), "OFFSET_OUT_OF_RANGE", 416);
  }, 90_000);
});

suite("field case B5 on a replicated partition: retention never moves the log start past the high watermark", () => {
  it("rf 3, one record per segment: r0..r4 committed, r5..r7 acks=1 with the followers stopped; retention.ms=1 moves the log start to 5 (the high watermark), not 8; once r5..r7 commit a fetch at 5 returns them", async () => {
    const DAY = 86_400_000;
    // segment.ms = 1: every append rolls a segment, and the idle roll closes the last one.
    const { name, topicId } = await createReplicated({ "segment.ms": 1, "retention.ms": DAY });
    const leader = await leaderOf(topicId);
    const [f1, f2] = REPLICAS.filter((id) => id !== leader.replica) as [string, string];
    for (let i = 0; i < 5; i++) expect(await produceValues(name, [`r${i}`])).toEqual([i]);
    for (const id of REPLICAS) await until(`${id} HW 5`, async () => ((await status(topicId, id))?.highWatermark === 5 ? true : undefined));
    // Retention of 1 ms, while all three are up: a config change is a replicated command (it
    // needs a majority); every committed record expires, the log start reaches the high watermark.
    expect((await json("PATCH", `/v1/topics/${name}`, { configs: { "retention.ms": 1 } })).status).toBe(200);
    const bounds = async (id: string) => ({ logStart: await logStartOf(topicId, id), hw: (await status(topicId, id))?.highWatermark });
    for (const id of REPLICAS) {
      await until(`${id} log start at 5`, async () => {
        const b = await bounds(id);
        expect(b.logStart!).toBeLessThanOrEqual(b.hw!);
        return b.logStart === 5 ? true : undefined;
      });
    }
    // Both followers stop (SIGSTOP): the leader writes r5..r7 to its journal (acks=1) but cannot commit them.
    for (const f of [f1, f2]) await replica(topicId, f).setFaults({ paused: true });
    const stub = replica(topicId, leader.replica);
    for (let i = 5; i < 8; i++) {
      const batch = encodeBatch({}, [{ key: null, value: new TextEncoder().encode(`r${i}`), headers: [], timestamp: Date.now() }]);
      expect(await stub.append({ batches: [batch], acks: "1" })).toMatchObject({ ok: true, baseOffset: i, highWatermark: 5 });
    }
    // Retention back to a day (r5..r7 must not expire once committed): proposed now, after r5..r7
    // in the leader's journal, so it commits with them and is applied right after them, before
    // any retention pass. Until then the leader applies retention.ms=1 (the change is not committed).
    const lastIndex = (await status(topicId, leader.replica))!.lastIndex;
    const patched = json("PATCH", `/v1/topics/${name}`, { configs: { "retention.ms": DAY } });
    await until("the config change in the leader's journal", async () => ((await status(topicId, leader.replica))!.lastIndex > lastIndex ? true : undefined));
    // logStart <= HW at every moment; the log start stays at 5 (the high watermark), never 8.
    for (let k = 0; k < 10; k++) {
      for (const id of REPLICAS) {
        const b = await bounds(id);
        expect(b, id).toEqual({ logStart: 5, hw: 5 });
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await fetchAt(topicId, leader.replica, 5)).toMatchObject({ ok: true, batches: [], highWatermark: 5 });
    // One follower returns: only the old leader can win (its log holds r5..r7 and the change;
    // Raft's up-to-date check), and they commit. The PATCH answers 200 or, when its wait ended
    // before the commit, a retriable error; the change commits either way.
    await replica(topicId, f1).setFaults({});
    const next = await leaderOf(topicId, [f2]);
    expect(next.replica).toBe(leader.replica);
    const answer = await patched;
    if (answer.status !== 200) expect(((await answer.json()) as ErrorBody).error.retriable).toBe(true);
    for (const id of [leader.replica, f1]) {
      await until(`${id} HW 8`, async () => ((await status(topicId, id))?.highWatermark === 8 ? true : undefined));
      expect(await logStartOf(topicId, id)).toBe(5);
      expect((await replicaLog(topicId, id, 5)).map((r) => [r.offset, r.value])).toEqual([
        [5, "r5"],
        [6, "r6"],
        [7, "r7"],
      ]);
    }
  }, 90_000);
});

/** Produces `values` one request each through the gateway, resending only NOT_LEADER_OR_FOLLOWER (nothing appended); answers each value's offset. */
async function produceSteady(name: string, values: string[]): Promise<Map<string, number>> {
  const acked = new Map<string, number>();
  for (const value of values) {
    for (;;) {
      const res = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value }] });
      const text = await res.text();
      if (res.status === 200) {
        acked.set(value, (JSON.parse(text) as ProduceResponse).records[0]!.offset);
        break;
      }
      expect((JSON.parse(text) as ErrorBody).error.code, text).toBe("NOT_LEADER_OR_FOLLOWER");
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return acked;
}

suite("leadership transfer (Kafka's preferred leader election, KIP-460; Raft's TimeoutNow)", () => {
  it("hands leadership to the replica asked for under steady produce: a higher leader epoch, produce continues on the new leader, nothing lost, offsets dense, all replicas equal", async () => {
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    const target = REPLICAS.find((id) => id !== leader.replica)!;
    const path = `/v1/topics/${name}/partitions/0/leader`;
    const values = Array.from({ length: 40 }, (_, i) => `w${i}`);
    const first = await produceSteady(name, values.slice(0, 10));
    const steady = produceSteady(name, values.slice(10, 30));
    const res = await json("POST", path, { replica: target });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const moved = JSON.parse(text) as PartitionLeaderResponse;
    expect(moved).toMatchObject({ partition: 0, leaderReplica: target, transferred: true });
    expect(moved.leaderEpoch).toBeGreaterThan(leader.leaderEpoch);
    expect(await status(topicId, target)).toMatchObject({ role: "leader", leaderEpoch: moved.leaderEpoch });
    const during = await steady;
    const after = await produceSteady(name, values.slice(30));
    // Asking again for the leader it already is: nothing to do.
    // (through the SDK's Admin, as an operator would)
    const admin = new Admin(new EdgelogClient({ baseUrl: "http://edgelog.test", fetch: (input, init) => SELF.fetch(input, init) }));
    const again = await admin.transferLeadership(name, 0, target);
    expect(again).toMatchObject({ leaderReplica: target, leaderEpoch: moved.leaderEpoch, transferred: false });
    // Every acknowledged record once, at its acknowledged offset, on every replica; offsets dense.
    const acked = new Map([...first, ...during, ...after]);
    expect([...acked.values()].sort((a, b) => a - b)).toEqual(values.map((_, i) => i));
    for (const id of REPLICAS) {
      await until(`${id} HW 40`, async () => ((await status(topicId, id))?.highWatermark === 40 ? true : undefined));
      const log = await replicaLog(topicId, id);
      expect(log.map((r) => [r.offset, r.value])).toEqual(values.map((v) => [acked.get(v)!, v]).sort((a, b) => (a[0] as number) - (b[0] as number)));
      // The records appended after the transfer carry the new leader epoch.
      expect(log.find((r) => r.value === "w39")!.epoch).toBe(moved.leaderEpoch);
    }
  }, 90_000);

  it("refuses a replica the partition does not have; a transfer to a crashed replica fails retriably and the leader keeps leading", async () => {
    const plain = randomTopic();
    await createTopic(plain);
    const bad = await expectError(await json("POST", `/v1/topics/${plain}/partitions/0/leader`, { replica: "r2" }), "INVALID_REQUEST", 400);
    expect(bad.details).toMatchObject({ field: "replica", replicationFactor: 1 });
    const one = await json("POST", `/v1/topics/${plain}/partitions/0/leader`, { replica: "r1" });
    expect((await one.json()) as PartitionLeaderResponse).toMatchObject({ leaderReplica: "r1", transferred: false });

    const { name, topicId } = await createReplicated();
    const path = `/v1/topics/${name}/partitions/0/leader`;
    await expectError(await json("POST", path, { replica: "r4" }), "INVALID_REQUEST", 400);
    await expectError(await json("POST", path, { replica: 2 }), "INVALID_REQUEST", 400);
    const leader = await leaderOf(topicId);
    // r1 when it follows: the gateway, which knows no leader of this new topic yet, tries r1
    // first and must go on to the others (the transfer is idempotent) instead of answering UNAVAILABLE.
    const target = leader.replica === "r1" ? "r2" : "r1";
    await replica(topicId, target).setFaults({ crashed: true });
    const e = await expectError(await json("POST", path, { replica: target }), "PREFERRED_LEADER_NOT_AVAILABLE", 503);
    expect(e.retriable).toBe(true);
    expect(e.details).toMatchObject({ replica: target });
    // The abandoned transfer leaves the leader in place, taking produce again.
    await until("produce after the abandoned transfer", async () =>
      (await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: "x" }] })).status === 200 ? true : undefined,
    );
    expect(await status(topicId, leader.replica)).toMatchObject({ role: "leader", leaderEpoch: leader.leaderEpoch });
  }, 90_000);
});

suite("replica.locations (a location hint per replica)", () => {
  it("creates the three replicas with their hints (ignored by local workerd): they elect and replicate; the config is fixed and validated", async () => {
    const { name, topicId } = await createReplicated({ "replica.locations": "wnam, enam, weur" });
    const d = (await (await call(`/v1/topics/${name}`)).json()) as { configs: Record<string, unknown> };
    expect(d.configs["replica.locations"]).toBe("wnam,enam,weur");
    await leaderOf(topicId);
    expect(await produceValues(name, ["a", "b", "c"])).toEqual([0, 1, 2]);
    for (const id of REPLICAS) await until(`${id} HW 3`, async () => ((await status(topicId, id))?.highWatermark === 3 ? true : undefined));
    const fixed = await expectError(await json("PATCH", `/v1/topics/${name}`, { configs: { "replica.locations": "weur,enam,wnam" } }), "INVALID_CONFIG", 400);
    expect(fixed.details).toEqual({ config: "replica.locations" });
    const unknown = await expectError(
      await json("POST", "/v1/topics", { name: randomTopic(), configs: { "replication.factor": 3, "replica.locations": "wnam,enam,moon" } }),
      "INVALID_CONFIG",
      400,
    );
    expect(unknown.details).toEqual({ config: "replica.locations" });
    await expectError(await json("POST", "/v1/topics", { name: randomTopic(), configs: { "replication.factor": 3, "replica.locations": "wnam" } }), "INVALID_CONFIG", 400);
  }, 60_000);

  it("the metadata store creates each partition object (r1) with the first hint, at creation and when partitions are added", async () => {
    // Local workerd ignores hints: record what the metadata object asks its PARTITION namespace for.
    const asked: string[] = [];
    const name = randomTopic();
    await runInDurableObject(env.METADATA.getByName(METADATA_OBJECT_NAME), async (instance) => {
      const host = instance as unknown as { env: { PARTITION: DurableObjectNamespace } };
      const real = host.env.PARTITION;
      host.env.PARTITION = new Proxy(real, {
        get(target, prop) {
          if (prop === "get") {
            return (id: DurableObjectId, opts?: DurableObjectNamespaceGetDurableObjectOptions) => {
              asked.push(`${opts?.locationHint}`);
              return target.get(id, opts);
            };
          }
          if (prop === "getByName") {
            return (n: string) => {
              asked.push("none");
              return target.getByName(n);
            };
          }
          const v = Reflect.get(target, prop, target) as unknown;
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      try {
        const store = instance as unknown as {
          createTopic(r: unknown): Promise<{ ok: boolean }>;
          alterTopic(n: string, r: unknown): Promise<{ ok: boolean }>;
        };
        expect(await store.createTopic({ name, partitions: 2, configs: { "replica.locations": "weur" } })).toMatchObject({ ok: true });
        expect(await store.alterTopic(`public/default/${name}`, { partitions: 3 })).toMatchObject({ ok: true });
      } finally {
        host.env.PARTITION = real;
      }
    });
    // Three inits (two at creation, one added), and every other stub of those objects (config
    // pushes, describe) asks with the same hint: never without one (getByName would be "none").
    expect(asked.length).toBeGreaterThanOrEqual(3);
    expect(new Set(asked)).toEqual(new Set(["weur"]));
  });
});
