/**
 * Quiescence of an idle replicated partition (docs/RAFT.md "Quiescence"): three replicas in one
 * workerd, real alarms, through the gateway. An idle partition goes quiet (every replica
 * quiesced, its Raft tick at the quiesced period), a produce wakes it (acks=all with
 * min.insync.replicas 3 is accepted at once), and a leader fault-injected while quiet fails
 * over: produce resumes after retriable errors and every acknowledged record is present once.
 *
 * Times are printed, not asserted; tick counts compare with the configured periods only (load
 * can lower them, never raise them).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ErrorBody, ProduceResponse } from "../../src/protocol/index.ts";
import type { ReplicaStatus } from "../../src/partition/rpc.ts";
import { json } from "./helpers.ts";
import { REPLICAS, crashStarted, createReplicated, leaderOf, replica, replicaLog, sleep, status, until, produceRetrying } from "./replica-helpers.ts";

afterEach(crashStarted);

/** The quiesced tick period the test sets on every replica (test knob; 5 s by default). */
const QUIESCED_TICK_MS = 1000;
const TICK_MS = 100;

async function quietKnobs(topicId: string): Promise<void> {
  for (const id of REPLICAS) expect((await replica(topicId, id).setReplicaTestKnobs({ quiescedTickMs: QUIESCED_TICK_MS })).ok).toBe(true);
}

async function statuses(topicId: string): Promise<(ReplicaStatus | null)[]> {
  return Promise.all(REPLICAS.map((id) => status(topicId, id)));
}

async function allQuiesced(topicId: string, ids: readonly string[] = REPLICAS): Promise<ReplicaStatus[]> {
  return until("every replica to quiesce", async () => {
    const all = await Promise.all(ids.map((id) => status(topicId, id)));
    return all.every((s) => s?.quiesced === true) ? (all as ReplicaStatus[]) : undefined;
  });
}

async function produce(path: string, value: string): Promise<{ status: number; body: ProduceResponse | ErrorBody }> {
  const res = await json("POST", path, { records: [{ value }] });
  return { status: res.status, body: (await res.json()) as ProduceResponse | ErrorBody };
}

describe("quiescence of a replicated partition", () => {
  it("an idle partition goes quiet; a produce (acks=all, min.insync.replicas 3) wakes it and commits on all three; it goes quiet again", async () => {
    const { name, topicId } = await createReplicated({ "min.insync.replicas": 3 });
    await quietKnobs(topicId);
    const leader = await leaderOf(topicId);
    const path = `/v1/topics/${name}/partitions/0/records`;
    for (let i = 0; i < 5; i++) expect((await produce(path, `a${i}`)).status).toBe(200);

    const quiet = await allQuiesced(topicId);
    for (const s of quiet) {
      expect(s.leaderEpoch).toBe(leader.leaderEpoch);
      expect(s.nextTickInMs).not.toBeNull();
      expect(s.nextTickInMs!).toBeLessThanOrEqual(QUIESCED_TICK_MS);
    }
    const windowMs = 3 * QUIESCED_TICK_MS;
    const before = await statuses(topicId);
    await sleep(windowMs);
    const after = await statuses(topicId);
    for (let i = 0; i < REPLICAS.length; i++) {
      expect(after[i]!.quiesced).toBe(true);
      expect(after[i]!.ticks! - before[i]!.ticks!, REPLICAS[i]).toBeLessThanOrEqual(windowMs / QUIESCED_TICK_MS + 1);
    }
    console.log(
      `partition quiescence: ${REPLICAS.map((id, i) => `${id} ${after[i]!.ticks! - before[i]!.ticks!}`).join(", ")} Raft ticks in ${windowMs} ms quiesced (${windowMs / TICK_MS} at the ${TICK_MS} ms tick)`,
    );
    // The quiesced leader counts the replicas that had everything as in sync: acks=all with
    // min.insync.replicas 3 is accepted by the produce that wakes it, and by the next one.
    const woke = Date.now();
    const first = await produce(path, "b0");
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    console.log(`partition quiescence: a produce at a quiesced partition answered in ${Date.now() - woke} ms`);
    expect((first.body as ProduceResponse).records[0]!.offset).toBe(5);
    const second = await produce(path, "b1");
    expect(second.status, JSON.stringify(second.body)).toBe(200);

    await allQuiesced(topicId);
    const want = ["a0", "a1", "a2", "a3", "a4", "b0", "b1"].map((value, offset) => ({ offset, value, epoch: leader.leaderEpoch }));
    for (const id of REPLICAS) expect(await replicaLog(topicId, id)).toEqual(want);
  });

  it("the leader is fault-injected while the partition is quiet: produce resumes after retriable errors, no acknowledged record is lost, offsets dense", async () => {
    const { name, topicId } = await createReplicated();
    await quietKnobs(topicId);
    const path = `/v1/topics/${name}/partitions/0/records`;
    const acked: { offset: number; value: string }[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await produceRetrying(path, `a${i}`);
      acked.push({ offset: r.records[0]!.offset, value: `a${i}` });
    }
    const first = await leaderOf(topicId);
    await allQuiesced(topicId);

    const faultAt = Date.now();
    expect((await replica(topicId, first.replica).setFaults({ crashed: true })).ok).toBe(true);
    const r = await produceRetrying(path, "b0");
    const failoverMs = Date.now() - faultAt;
    acked.push({ offset: r.records[0]!.offset, value: "b0" });
    console.log(`partition quiescence: first produce after an idle period with the leader crashed acknowledged after ${failoverMs} ms`);
    for (let i = 1; i < 5; i++) {
      const x = await produceRetrying(path, `b${i}`);
      acked.push({ offset: x.records[0]!.offset, value: `b${i}` });
    }
    const second = await leaderOf(topicId, [first.replica]);
    expect(second.leaderEpoch).toBeGreaterThan(first.leaderEpoch);

    // The crashed replica restarts from its journal and catches up; all three logs are the same.
    expect((await replica(topicId, first.replica).setFaults({})).ok).toBe(true);
    await until(`${first.replica} caught up`, async () => ((await status(topicId, first.replica))?.highWatermark === 10 ? true : undefined));
    expect(acked.map((a) => a.offset)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    for (const id of REPLICAS) expect((await replicaLog(topicId, id)).map(({ offset, value }) => ({ offset, value }))).toEqual(acked);
    await allQuiesced(topicId);
  });
});
