/**
 * Snapshot catch-up of a replicated partition (docs/RAFT.md "Snapshot catch-up"): a replica
 * that was down while the leader's journal was compacted past it pulls the partition's state
 * from the leader and installs it in one transaction. Three replicas in one workerd, real alarms
 * and RPC; fault injection crashes replicas; test-only knobs (the same gates) make the journal
 * retention small so the leader compacts after a few entries.
 *
 * Times are not asserted (they depend on the machine's load).
 */
import { afterEach, describe as suite, expect, it } from "vitest";
import { decodeBatch, encodeBatch } from "../../src/codec/index.ts";
import type { ReplicaTestKnobs } from "../../src/partition/rpc.ts";
import type { ProduceResponse } from "../../src/protocol/index.ts";
import { json } from "./helpers.ts";
import {
  REPLICAS as IDS,
  crashStarted,
  createReplicated as createRf3,
  TEST_QUIESCED_TICK_MS,
  leaderOf,
  replica,
  sleep,
  status,
  until,
  newProducer,
  produceRetrying,
} from "./replica-helpers.ts";

afterEach(crashStarted);

/** A replicated topic whose replicas keep a small journal (`knobs` on all three). */
async function createReplicated(knobs: ReplicaTestKnobs): Promise<{ name: string; topicId: string; path: string }> {
  const { name, topicId } = await createRf3();
  for (const id of IDS) expect(await replica(topicId, id).setReplicaTestKnobs({ quiescedTickMs: TEST_QUIESCED_TICK_MS, ...knobs })).toMatchObject({ ok: true });
  return { name, topicId, path: `/v1/topics/${name}/partitions/0/records` };
}

type Rec = { offset: number; value: string; epoch: number; producerId: bigint; sequence: number; bytes: string };

/** Every stored record of a replica from its log start: offset, value, leader epoch, producer id and sequence, the batch's bytes. */
async function replicaLog(topicId: string, id: string, from = 0): Promise<Rec[]> {
  const out: Rec[] = [];
  let offset = from;
  for (;;) {
    const r = await replica(topicId, id).fetchRecords({ offset, maxRecords: 1000, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 });
    if (!r.ok) throw new Error(JSON.stringify(r));
    for (const b of r.batches) {
      const { header, records } = decodeBatch(b, 0, { verifyCrc: true });
      const bytes = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
      for (const rec of records) {
        if (rec.offset < offset) continue;
        out.push({
          offset: rec.offset,
          value: new TextDecoder().decode(rec.value!),
          epoch: header.partitionLeaderEpoch,
          producerId: BigInt(header.producerId),
          sequence: header.baseSequence < 0 ? -1 : header.baseSequence + (rec.offset - header.baseOffset),
          bytes,
        });
      }
    }
    if (r.nextOffset >= r.highWatermark) return out;
    offset = r.nextOffset;
  }
}

function idempotentBatch(producerId: number, seq: number, value: string): Uint8Array {
  return encodeBatch({ producerId, producerEpoch: 0, baseSequence: seq }, [{ key: null, value: new TextEncoder().encode(value), headers: [], timestamp: Date.now() }]);
}

/** Waits until every live replica in `ids` has applied up to `hw` (offsets). */
async function allAt(topicId: string, ids: readonly string[], hw: number): Promise<void> {
  for (const id of ids) await until(`${id} at high watermark ${hw}`, async () => ((await status(topicId, id))?.highWatermark === hw ? true : undefined));
}

/**
 * A follower down while the leader takes produce: `down` is crashed, idempotent and plain
 * records are produced until the leader's journal is compacted past what `down` had applied.
 * @returns the acknowledged idempotent requests (to retry later) and the log end offset.
 */
async function fallBehind(topicId: string, path: string, leader: string, down: string, records: number) {
  const before = (await status(topicId, down))!;
  await replica(topicId, down).setFaults({ crashed: true });
  const producerId = await newProducer();
  const acked: { req: { batches: Uint8Array[] }; baseOffset: number }[] = [];
  for (let seq = 0; seq < 3; seq++) {
    const req = { batches: [idempotentBatch(producerId, seq, `idem-${seq}`)] };
    const r = await replica(topicId, leader).append(req);
    expect(r, JSON.stringify(r)).toMatchObject({ ok: true, duplicate: false });
    if (r.ok) acked.push({ req, baseOffset: r.baseOffset });
  }
  let end = 0;
  for (let i = 0; i < records; i++) end = (await produceRetrying(path, `plain-${i}`)).records[0]!.offset + 1;
  // The leader compacted its journal past what the follower had applied: only a snapshot can catch it up.
  const l = await until("the leader's journal compacted past the follower", async () => {
    const s = await status(topicId, leader);
    return s !== null && s.snapshotIndex > before.appliedIndex ? s : undefined;
  });
  expect(l.snapshotIndex).toBeGreaterThan(before.appliedIndex);
  return { producerId, acked, end, downApplied: before.appliedIndex };
}

suite("snapshot catch-up of a replicated partition", () => {
  it("a follower down past the leader's compacted journal returns, pulls the state in chunks and has the same offsets, bytes, leader epochs and producer state; then it leads and a retried idempotent produce is a duplicate", async () => {
    const { topicId, path } = await createReplicated({ keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1 });
    const first = await leaderOf(topicId);
    // Some history every replica applies normally.
    for (let i = 0; i < 5; i++) await produceRetrying(path, `early-${i}`);
    const down = IDS.find((id) => id !== first.replica)!;
    await allAt(topicId, IDS, 5);
    const { producerId, acked, end } = await fallBehind(topicId, path, first.replica, down, 20);

    await replica(topicId, down).setFaults({});
    await allAt(topicId, IDS, end);
    const back = (await status(topicId, down))!;
    expect(back.catchUpInstalls).toBe(1);
    expect(back.snapshotIndex).toBeGreaterThan(0);
    const want = await replicaLog(topicId, first.replica);
    expect(want.length).toBe(end);
    expect(want.map((r) => r.offset)).toEqual(Array.from({ length: end }, (_, i) => i));
    for (const id of IDS) expect(await replicaLog(topicId, id), id).toEqual(want);

    // Produce goes on; the caught-up replica follows with normal appends.
    for (let i = 0; i < 3; i++) await produceRetrying(path, `after-${i}`);
    await allAt(topicId, IDS, end + 3);

    // Make the caught-up replica the leader: crash leaders until it wins an election.
    for (let round = 0; ; round++) {
      const l = await leaderOf(topicId);
      if (l.replica === down) break;
      expect(round, "the caught-up replica never won an election").toBeLessThan(8);
      await replica(topicId, l.replica).setFaults({ crashed: true });
      const next = await leaderOf(topicId, [l.replica]);
      await replica(topicId, l.replica).setFaults({});
      if (next.replica !== down) await allAt(topicId, IDS, end + 3);
    }
    // Its producer state came with the snapshot: a retry of an acknowledged request is a duplicate with the original offsets.
    for (const a of acked) {
      const retry = await replica(topicId, down).append(a.req);
      expect(retry).toMatchObject({ ok: true, baseOffset: a.baseOffset, lastOffset: a.baseOffset, duplicate: true });
    }
    const next = await replica(topicId, down).append({ batches: [idempotentBatch(producerId, 3, "idem-3")] });
    expect(next).toMatchObject({ ok: true, baseOffset: end + 3, duplicate: false });
    const log = await replicaLog(topicId, down);
    expect(log.map((r) => r.offset)).toEqual(Array.from({ length: end + 4 }, (_, i) => i));
    expect(log.filter((r) => r.value.startsWith("idem-")).map((r) => r.value)).toEqual(["idem-0", "idem-1", "idem-2", "idem-3"]);
    const res = await json("POST", path, { records: [{ value: "via-gateway" }] });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(((await res.json()) as ProduceResponse).records[0]!.offset).toBe(end + 4);
  }, 120_000);

  it("when the leader's log start has moved past the follower's log end, the follower's log is replaced by the leader's from its log start", async () => {
    const { topicId, path } = await createReplicated({ keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1 });
    const leader = await leaderOf(topicId);
    for (let i = 0; i < 4; i++) await produceRetrying(path, `early-${i}`);
    await allAt(topicId, IDS, 4);
    const down = IDS.find((id) => id !== leader.replica)!;
    const { end } = await fallBehind(topicId, path, leader.replica, down, 10);
    // The leader's own deleteRecords (KIP-107, per replica) moves its log start past the follower's end (4).
    const start = end - 3;
    expect(await replica(topicId, leader.replica).deleteRecords(start)).toEqual({ ok: true, logStartOffset: start });
    await replica(topicId, down).setFaults({});
    await allAt(topicId, [down], end);
    const d = await replica(topicId, down).describe();
    expect(d.ok && d.partition.logStartOffset).toBe(start);
    const want = await replicaLog(topicId, leader.replica, start);
    expect(want.map((r) => r.offset)).toEqual([start, start + 1, start + 2]);
    expect(await replicaLog(topicId, down, start)).toEqual(want);
    // Below the new log start there is nothing any more on the follower.
    const below = await replica(topicId, down).fetchRecords({ offset: 0, maxRecords: 10, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 });
    expect(below).toMatchObject({ ok: false, code: "OFFSET_OUT_OF_RANGE" });
    // It follows normally afterwards.
    await produceRetrying(path, "after");
    await allAt(topicId, IDS, end + 1);
    expect((await replicaLog(topicId, down, start)).map((r) => r.value)).toEqual([...want.map((r) => r.value), "after"]);
  }, 120_000);

  it("a replicated deleteRecords the follower missed (below its log end, so its log is kept) reaches it with the snapshot: its log start is the leader's", async () => {
    const { name, topicId, path } = await createReplicated({ keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1 });
    const leader = await leaderOf(topicId);
    for (let i = 0; i < 4; i++) await produceRetrying(path, `early-${i}`);
    await allAt(topicId, IDS, 4);
    const down = IDS.find((id) => id !== leader.replica)!;
    await fallBehind(topicId, path, leader.replica, down, 5);
    // KIP-107 through the gateway: a Raft command the follower is down for, at 2 (below its log end, 4).
    const res = await json("POST", `/v1/topics/${name}/partitions/0/delete-records`, { offset: 2 });
    expect(res.status, await res.clone().text()).toBe(200);
    // More entries, so the leader's journal no longer holds the deleteRecords entry either.
    let end = 0;
    for (let i = 0; i < 10; i++) end = (await produceRetrying(path, `late-${i}`)).records[0]!.offset + 1;
    await replica(topicId, down).setFaults({});
    await allAt(topicId, [down], end);
    expect((await status(topicId, down))!.catchUpInstalls).toBe(1);
    const d = await replica(topicId, down).describe();
    expect(d.ok && d.partition.logStartOffset).toBe(2);
    const below = await replica(topicId, down).fetchRecords({ offset: 0, maxRecords: 10, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 });
    expect(below).toMatchObject({ ok: false, code: "OFFSET_OUT_OF_RANGE" });
    expect(await replicaLog(topicId, down, 2)).toEqual(await replicaLog(topicId, leader.replica, 2));
  }, 120_000);

  it("a crash in the middle of a pull leaves the old state visible (nothing half-installed); after the restart the pull starts over and installs whole", async () => {
    const { topicId, path } = await createReplicated({ keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1 });
    const leader = await leaderOf(topicId);
    for (let i = 0; i < 4; i++) await produceRetrying(path, `early-${i}`);
    await allAt(topicId, IDS, 4);
    const down = IDS.find((id) => id !== leader.replica)!;
    const oldLog = await replicaLog(topicId, down);
    const { end } = await fallBehind(topicId, path, leader.replica, down, 12);

    // The pull stops after two chunks (one batch each) are staged.
    await replica(topicId, down).setReplicaTestKnobs({ keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1, holdAfterChunks: 2 });
    await replica(topicId, down).setFaults({});
    await until("the pull held after two chunks", async () => ((await status(topicId, down))?.catchUpRunning === true ? true : undefined));
    await sleep(300);
    const held = (await status(topicId, down))!;
    expect(held.catchUpRunning).toBe(true);
    expect(held.catchUpInstalls).toBe(0);
    // What a consumer sees there is still the old committed prefix: the staged batches are invisible.
    expect(held.highWatermark).toBe(4);
    expect(await replicaLog(topicId, down)).toEqual(oldLog);

    // Crash mid-pull, then restart without the hold: the pull starts over and installs once.
    await replica(topicId, down).setFaults({ crashed: true });
    await replica(topicId, down).setReplicaTestKnobs({ keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1 });
    await replica(topicId, down).setFaults({});
    await allAt(topicId, IDS, end);
    expect((await status(topicId, down))!.catchUpInstalls).toBe(1);
    const want = await replicaLog(topicId, leader.replica);
    expect(want.map((r) => r.offset)).toEqual(Array.from({ length: end }, (_, i) => i));
    expect(await replicaLog(topicId, down)).toEqual(want);
  }, 120_000);

  it("batches of 700 KB, 9.8 MB in all (more than one answer of at most 8 MiB), arrive byte for byte", async () => {
    const { topicId, path } = await createReplicated({ keepEntries: 3, leaderKeepEntries: 5 });
    const leader = await leaderOf(topicId);
    await produceRetrying(path, "small");
    await allAt(topicId, IDS, 1);
    const down = IDS.find((id) => id !== leader.replica)!;
    await replica(topicId, down).setFaults({ crashed: true });
    const big = "y".repeat(700_000);
    for (let i = 0; i < 14; i++) await produceRetrying(path, `${big}${i}`);
    await until("the leader's journal compacted", async () => ((await status(topicId, leader.replica))!.snapshotIndex > 2 ? true : undefined));
    await replica(topicId, down).setFaults({});
    await allAt(topicId, [down], 15);
    expect((await status(topicId, down))!.catchUpInstalls).toBe(1);
    const want = await replicaLog(topicId, leader.replica);
    expect(want.length).toBe(15);
    expect(await replicaLog(topicId, down)).toEqual(want);
  }, 120_000);

  it("test knobs are refused with bad values", async () => {
    const { topicId } = await createReplicated({ keepEntries: 3 });
    const r = await replica(topicId, "r1").setReplicaTestKnobs({ keepEntries: 0 });
    expect(r).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
  });
});
