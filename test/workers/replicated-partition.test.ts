/**
 * Replicated partitions (`replication.factor` 3; docs/RAFT.md "Replicated partitions"): three
 * partition objects forming a Raft group in one workerd, real alarms as the clock, real RPC
 * between replicas, driven through the real gateway. Fault injection (EDGELOG_RAFT_FAULTS, on in
 * this tier) crashes replicas. Replica helpers: ./replica-helpers.ts.
 *
 * Times are not asserted (they depend on the machine's load); the failover time is printed.
 */
import { afterEach, describe as suite, expect, it } from "vitest";
import { encodeBatch } from "../../src/codec/index.ts";
import type { ErrorBody, JsonFetchResponse, ProduceResponse } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, json, oneRecordBatch, randomTopic } from "./helpers.ts";
import { REPLICAS as IDS, crashStarted, createReplicated, leaderOf, replica, replicaLog, sleep, status, until, newProducer, produceRetrying } from "./replica-helpers.ts";

afterEach(crashStarted);

suite("replication.factor (topic config)", () => {
  it("is 1 by default, 1 or 3 when given, fixed after creation; min.insync.replicas at most the factor", async () => {
    const plain = await createTopic(randomTopic());
    expect(plain.configs["replication.factor"]).toBe(1);
    expect(plain.configs["min.insync.replicas"]).toBe(1);
    const status1 = await replica(plain.topicId, "r1").replicaStatus();
    expect(status1).toEqual({ ok: true, replica: null });
    const bad2 = await expectError(await json("POST", "/v1/topics", { name: randomTopic(), configs: { "replication.factor": 2 } }), "INVALID_CONFIG", 400);
    expect(bad2.details).toEqual({ config: "replication.factor" });
    await expectError(await json("POST", "/v1/topics", { name: randomTopic(), configs: { "replication.factor": 5 } }), "INVALID_CONFIG", 400);
    const isr = await expectError(await json("POST", "/v1/topics", { name: randomTopic(), configs: { "min.insync.replicas": 2 } }), "INVALID_CONFIG", 400);
    expect(isr.details).toEqual({ config: "min.insync.replicas" });
    const { name } = await createReplicated({ "min.insync.replicas": 2 });
    const alter = await expectError(await json("PATCH", `/v1/topics/${name}`, { configs: { "replication.factor": 1 } }), "INVALID_CONFIG", 400);
    expect(alter.details).toEqual({ config: "replication.factor" });
    // Repeating the same factor is not a change.
    const same = await json("PATCH", `/v1/topics/${name}`, { configs: { "replication.factor": 3, "min.insync.replicas": 3 } });
    expect(same.status, await same.clone().text()).toBe(200);
  });
});

suite("a replicated partition (3 replicas)", () => {
  it("elects a leader; produce commits on every replica with the same offsets, leader epoch = term; a follower answers NOT_LEADER_OR_FOLLOWER", async () => {
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    const path = `/v1/topics/${name}/partitions/0/records`;
    for (let i = 0; i < 10; i++) {
      const r = await json("POST", path, { records: [{ value: `v${2 * i}` }, { value: `v${2 * i + 1}` }] });
      const body = (await r.json()) as ProduceResponse;
      expect(r.status, JSON.stringify(body)).toBe(200);
      expect(body.records.map((x) => x.offset)).toEqual([2 * i, 2 * i + 1]);
    }
    const want = Array.from({ length: 20 }, (_, i) => ({ offset: i, value: `v${i}`, epoch: leader.leaderEpoch }));
    for (const id of IDS) {
      await until(`${id} applied`, async () => ((await status(topicId, id))?.highWatermark === 20 ? true : undefined));
      expect(await replicaLog(topicId, id)).toEqual(want);
    }
    const follower = IDS.find((id) => id !== leader.replica)!;
    const refused = await replica(topicId, follower).append({ batches: [oneRecordBatch("x")] });
    expect(refused.ok).toBe(false);
    expect(refused).toMatchObject({ code: "NOT_LEADER_OR_FOLLOWER", details: { replica: follower, leaderReplica: leader.replica, leaderEpoch: leader.leaderEpoch } });
    // Nothing was appended by the refusal.
    expect((await status(topicId, leader.replica))!.highWatermark).toBe(20);
    // acks=1 at the leader: answered after its own write with the offsets the entries get at
    // commit (two idempotent requests pipelined); a retry in the same group waits for its commit
    // and is recognised as a duplicate.
    const producerId = await newProducer();
    const p0 = { batches: [idempotentBatch(producerId, 0, "p0")], acks: "1" as const };
    const many = await replica(topicId, leader.replica).appendMany([p0, { batches: [idempotentBatch(producerId, 1, "p1")], acks: "1" }, p0]);
    expect(many.map((r) => (r.ok ? [r.baseOffset, r.duplicate] : r.code))).toEqual([
      [20, false],
      [21, false],
      [20, true],
    ]);
    await until("HW 22", async () => ((await status(topicId, leader.replica))?.highWatermark === 22 ? true : undefined));
    want.push({ offset: 20, value: "p0", epoch: leader.leaderEpoch }, { offset: 21, value: "p1", epoch: leader.leaderEpoch });
    for (const id of IDS) {
      await until(`${id} applied p0, p1`, async () => ((await status(topicId, id))?.highWatermark === 22 ? true : undefined));
      expect(await replicaLog(topicId, id)).toEqual(want);
    }
    // The gateway reads from any replica: the JSON fetch sees the 20 records.
    const f = (await (await call(`/v1/topics/${name}/partitions/0/records?offset=0&maxRecords=100`)).json()) as JsonFetchResponse;
    expect(f.records.map((r) => r.value)).toEqual(want.map((w) => w.value));
    expect(f.highWatermark).toBe(22);
  });

  it("the leader crashes under steady idempotent produce: a new leader takes over, every acknowledged record is present once, offsets dense, nothing a consumer saw vanishes", async () => {
    const { name, topicId } = await createReplicated({ "min.insync.replicas": 2 });
    const first = await leaderOf(topicId);
    const producerId = await newProducer();
    const path = `/v1/topics/${name}/partitions/0/records`;
    const acked = new Map<string, number>();
    const retriableSeen = new Map<string, number>();
    let stop = false;
    let sequence = 0;
    let faultAt: number | null = null;
    let firstAfterFault: number | null = null;
    // The producer: one idempotent record per request, the same body resent on a retriable error.
    const producer = (async () => {
      while (!stop) {
        const value = `m${sequence}`;
        const body = { producerId, producerEpoch: 0, baseSequence: sequence, records: [{ value }] };
        for (;;) {
          const sentMs = Date.now();
          const res = await json("POST", path, body);
          const text = await res.text();
          if (res.status === 200) {
            acked.set(value, (JSON.parse(text) as ProduceResponse).records[0]!.offset);
            if (faultAt !== null && sentMs >= faultAt && firstAfterFault === null) firstAfterFault = Date.now();
            break;
          }
          const e = (JSON.parse(text) as ErrorBody).error;
          expect(e.retriable, text).toBe(true);
          retriableSeen.set(e.code, (retriableSeen.get(e.code) ?? 0) + 1);
          await sleep(20);
        }
        sequence++;
      }
    })();
    // The consumer: reads from the gateway, remembers every record it saw at its offset.
    const seen = new Map<number, string>();
    const consumer = (async () => {
      let offset = 0;
      while (!stop) {
        const res = await call(`/v1/topics/${name}/partitions/0/records?offset=${offset}&maxRecords=100&maxWaitMs=200`);
        if (res.status !== 200) {
          await res.body?.cancel();
          await sleep(20);
          continue;
        }
        const f = (await res.json()) as JsonFetchResponse;
        for (const r of f.records) {
          expect(r.offset).toBeLessThan(f.highWatermark);
          const before = seen.get(r.offset);
          if (before !== undefined) expect(before).toBe(r.value);
          seen.set(r.offset, r.value as string);
        }
        offset = f.nextOffset;
      }
    })();
    await until("20 acknowledged records", async () => (acked.size >= 20 ? true : undefined));
    faultAt = Date.now();
    await replica(topicId, first.replica).setFaults({ crashed: true });
    const ackedAtFault = acked.size;
    await until("a produce sent after the fault acknowledged", async () => (firstAfterFault !== null ? true : undefined));
    console.log(`replicated partition failover: ${firstAfterFault! - faultAt} ms from the crash of leader ${first.replica} to the first produce sent after it being acknowledged`);
    const second = await leaderOf(topicId, [first.replica]);
    expect(second.leaderEpoch).toBeGreaterThan(first.leaderEpoch);
    await until("20 more acknowledged records", async () => (acked.size >= ackedAtFault + 20 ? true : undefined));
    // The old leader restarts from its journal and catches up.
    await replica(topicId, first.replica).setFaults({});
    stop = true;
    await producer;
    await consumer;
    const end = (await status(topicId, second.replica))!.highWatermark;
    await until(`${first.replica} caught up`, async () => ((await status(topicId, first.replica))?.highWatermark === end ? true : undefined));
    const logs = await Promise.all(IDS.map((id) => replicaLog(topicId, id)));
    expect(logs[1]).toEqual(logs[0]);
    expect(logs[2]).toEqual(logs[0]);
    const log = logs[0]!;
    // Offsets dense from 0: Raft's no-ops take none.
    expect(log.map((r) => r.offset)).toEqual(log.map((_, i) => i));
    // Every acknowledged record once, at its acknowledged offset; nothing else (each sequence appended once).
    const values = log.map((r) => r.value);
    expect(new Set(values).size).toBe(values.length);
    for (const [value, offset] of acked) expect(log[offset]?.value, value).toBe(value);
    expect(values).toEqual(Array.from({ length: values.length }, (_, i) => `m${i}`));
    expect(acked.size).toBe(values.length);
    // What the consumer saw is still there, at the same offsets.
    for (const [offset, value] of seen) expect(log[offset]?.value).toBe(value);
    // Leader epochs never go back along the log, and the new term's batches carry it.
    for (let i = 1; i < log.length; i++) expect(log[i]!.epoch).toBeGreaterThanOrEqual(log[i - 1]!.epoch);
    expect(log[log.length - 1]!.epoch).toBe(second.leaderEpoch);
    console.log(`retriable errors seen by the producer during failover: ${JSON.stringify(Object.fromEntries(retriableSeen))}`);
  }, 60_000);

  it("idempotent producer state is replicated: a retry after failover is answered as a duplicate with the original offsets", async () => {
    const { topicId } = await createReplicated();
    const first = await leaderOf(topicId);
    const producerId = await newProducer();
    const req = { batches: [idempotentBatch(producerId, 0, "once")] };
    const acked = await replica(topicId, first.replica).append(req);
    expect(acked).toMatchObject({ ok: true, baseOffset: 0, duplicate: false });
    await replica(topicId, first.replica).setFaults({ crashed: true });
    const second = await leaderOf(topicId, [first.replica]);
    const retry = await until("the retry answered", async () => {
      const r = await replica(topicId, second.replica).append(req);
      return r.ok ? r : undefined;
    });
    expect(retry).toMatchObject({ ok: true, baseOffset: 0, lastOffset: 0, duplicate: true });
    // The next sequence is accepted after it, at the next offset.
    const next = await replica(topicId, second.replica).append({ batches: [idempotentBatch(producerId, 1, "twice")] });
    expect(next).toMatchObject({ ok: true, baseOffset: 1, duplicate: false });
    expect((await replicaLog(topicId, second.replica)).map((r) => r.value)).toEqual(["once", "twice"]);
  }, 60_000);

  it("min.insync.replicas 3: one follower down refuses acks=all with NOT_ENOUGH_REPLICAS (nothing appended), acks=1 still commits", async () => {
    const { name, topicId } = await createReplicated({ "min.insync.replicas": 3 });
    const leader = await leaderOf(topicId);
    const path = `/v1/topics/${name}/partitions/0/records`;
    const ok = await json("POST", path, { records: [{ value: "a" }] });
    expect(ok.status, await ok.clone().text()).toBe(200);
    const down = IDS.find((id) => id !== leader.replica)!;
    await replica(topicId, down).setFaults({ crashed: true });
    // The leader stops counting it within an election timeout; a majority still commits.
    await until("ISR 2", async () => ((await status(topicId, leader.replica))?.inSyncReplicas === 2 ? true : undefined));
    const refused = await expectError(await json("POST", path, { records: [{ value: "b" }] }), "NOT_ENOUGH_REPLICAS", 503);
    expect(refused).toMatchObject({ retriable: true, details: { inSync: 2, minInsyncReplicas: 3 } });
    const one = await json("POST", `${path}?acks=1`, { records: [{ value: "c" }] });
    const oneBody = await one.text();
    expect(one.status, oneBody).toBe(200);
    expect((JSON.parse(oneBody) as ProduceResponse).records[0]!.offset).toBe(1);
    // The follower returns: acks=all is accepted again.
    await replica(topicId, down).setFaults({});
    await until("ISR 3", async () => ((await status(topicId, leader.replica))?.inSyncReplicas === 3 ? true : undefined));
    const again = await json("POST", path, { records: [{ value: "d" }] });
    expect(again.status, await again.clone().text()).toBe(200);
    expect((await replicaLog(topicId, leader.replica)).map((r) => r.value)).toEqual(["a", "c", "d"]);
  }, 60_000);

  it("field case C2, scenario 1: a follower restarts, the leader dies, the follower is elected: nothing committed is truncated, the next produce gets the next offset", async () => {
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    const [f1, f2] = IDS.filter((id) => id !== leader.replica) as [string, string];
    const path = `/v1/topics/${name}/partitions/0/records`;
    for (const value of ["m1", "m2"]) expect((await json("POST", path, { records: [{ value }] })).status).toBe(200);
    // F1 restarts (from its journal), then the leader dies.
    await replica(topicId, f1).setFaults({ crashed: true });
    await replica(topicId, f1).setFaults({});
    await replica(topicId, leader.replica).setFaults({ crashed: true });
    const next = await leaderOf(topicId, [leader.replica]);
    expect([f1, f2]).toContain(next.replica);
    await until("m1, m2 committed at the new leader", async () => ((await status(topicId, next.replica))?.highWatermark === 2 ? true : undefined));
    expect((await replicaLog(topicId, next.replica)).map((r) => [r.offset, r.value])).toEqual([
      [0, "m1"],
      [1, "m2"],
    ]);
    expect((await produceRetrying(path, "m3")).records[0]!.offset).toBe(2);
  }, 60_000);

  it("field case C2, scenario 2: an entry only the old leader wrote is truncated when it returns; offset 1 never means two records, no consumer saw it", async () => {
    const { name, topicId } = await createReplicated();
    const a = (await leaderOf(topicId)).replica;
    const [b, c] = IDS.filter((id) => id !== a) as [string, string];
    const path = `/v1/topics/${name}/partitions/0/records`;
    expect((await json("POST", path, { records: [{ value: "m1" }] })).status).toBe(200);
    for (const id of IDS) await until(`${id} holds m1`, async () => ((await status(topicId, id))?.highWatermark === 1 ? true : undefined));
    const term1 = (await status(topicId, a))!.leaderEpoch;
    // C is down; A's messages are all lost, so B never receives m2: A writes it alone, uncommitted.
    await replica(topicId, c).setFaults({ crashed: true });
    await replica(topicId, a).setFaults({ dropRate: 1 });
    const m2 = replica(topicId, a)
      .append({ batches: [oneRecordBatch("m2")] })
      .catch(() => null);
    await until("m2 in A's journal", async () => {
      const st = await status(topicId, a);
      return st !== null && st.lastIndex > st.commitIndex ? true : undefined;
    });
    // No consumer sees it: A's high watermark is its commit.
    expect(await replica(topicId, a).fetchRecords({ offset: 0, maxRecords: 10, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 })).toMatchObject({ ok: true, highWatermark: 1 });
    // Everyone crashes; B and C come back and elect a leader, which commits m3 at offset 1.
    for (const id of [a, b]) await replica(topicId, id).setFaults({ crashed: true });
    expect(await m2).toBeNull(); // the crash failed the waiting call: never acknowledged
    for (const id of [b, c]) await replica(topicId, id).setFaults({});
    const next = await leaderOf(topicId, [a]);
    expect(next.leaderEpoch).toBeGreaterThan(term1);
    expect((await produceRetrying(path, "m3")).records[0]!.offset).toBe(1);
    // A returns as a follower: its divergent entry is truncated by the consistency check before it was ever applied.
    await replica(topicId, a).setFaults({});
    await until("A caught up", async () => ((await status(topicId, a))?.highWatermark === 2 ? true : undefined));
    for (const id of IDS) {
      expect((await replicaLog(topicId, id)).map((r) => [r.offset, r.value, r.epoch])).toEqual([
        [0, "m1", term1],
        [1, "m3", next.leaderEpoch],
      ]);
    }
  }, 60_000);

  it("field case C8: with both followers down, acks=1 is acknowledged (the leader's durable write) but not visible, acks=all gets a retriable error; after one follower returns the record appears once", async () => {
    const { name, topicId } = await createReplicated({ "min.insync.replicas": 2 });
    const leader = await leaderOf(topicId);
    const followers = IDS.filter((id) => id !== leader.replica);
    const stub = replica(topicId, leader.replica);
    for (const f of followers) await replica(topicId, f).setFaults({ crashed: true });
    const producerId = await newProducer();
    const r0 = { batches: [idempotentBatch(producerId, 0, "r0")], acks: "1" as const };
    const acked = await stub.append(r0);
    expect(acked).toMatchObject({ ok: true, baseOffset: 0, lastOffset: 0, duplicate: false, highWatermark: 0 });
    // Not visible: the high watermark is the commit, which needs a follower.
    const empty = { ok: true, batches: [], highWatermark: 0 };
    expect(await stub.fetchRecords({ offset: 0, maxRecords: 10, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 })).toMatchObject(empty);
    // acks=all through the gateway: a retriable error, never a success (NOT_ENOUGH_REPLICAS while
    // the leader still leads; NOT_LEADER_OR_FOLLOWER once CheckQuorum has deposed it; UNAVAILABLE
    // when the gateway tried a crashed follower first: the outcome of a failed call is unknown, so
    // it is not resent; REQUEST_TIMED_OUT, 504, when the leader still counted a follower heard
    // within the last election timeout as it proposed, on a slow machine, and the entry could
    // not commit).
    const res = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: "r1" }] });
    const body = (await res.json()) as ErrorBody;
    expect([503, 504]).toContain(res.status);
    expect(["NOT_ENOUGH_REPLICAS", "NOT_LEADER_OR_FOLLOWER", "UNAVAILABLE", "REQUEST_TIMED_OUT"]).toContain(body.error.code);
    expect(body.error.retriable).toBe(true);
    expect(await stub.fetchRecords({ offset: 0, maxRecords: 10, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 })).toMatchObject(empty);
    // One follower returns. Only the old leader can win (its log holds r0, the follower's does
    // not: Raft's up-to-date check), and r0 commits with its new term's no-op.
    await replica(topicId, followers[0]!).setFaults({});
    const next = await leaderOf(topicId, [followers[1]!]);
    expect(next.replica).toBe(leader.replica);
    await until("HW >= 1 on the returned follower", async () => (((await status(topicId, followers[0]!))?.highWatermark ?? 0) >= 1 ? true : undefined));
    // The idempotent retry is recognised: r0 appears once, at its acknowledged offset.
    const retry = await replica(topicId, next.replica).append({ ...r0, acks: undefined });
    expect(retry).toMatchObject({ ok: true, baseOffset: 0, lastOffset: 0, duplicate: true });
    // r1 was never acknowledged: it is absent, except after a timeout, whose entry may still
    // commit (after r0, once).
    const expected = body.error.code === "REQUEST_TIMED_OUT" ? [["r0"], ["r0", "r1"]] : [["r0"]];
    const logs = [(await replicaLog(topicId, followers[0]!)).map((r) => r.value), (await replicaLog(topicId, next.replica)).map((r) => r.value)];
    for (const l of logs) expect(expected).toContainEqual(l);
  }, 60_000);
});

/** A one-record idempotent batch: producer id, epoch 0, base sequence `seq`. */
function idempotentBatch(producerId: number, seq: number, value: string): Uint8Array {
  return encodeBatch({ producerId, producerEpoch: 0, baseSequence: seq }, [{ key: null, value: new TextEncoder().encode(value), headers: [], timestamp: Date.now() }]);
}
