/**
 * Helpers for tests of replicated partitions (`replication.factor` 3; docs/RAFT.md "Replicated
 * partitions"): the replicas' objects, their Raft status, waiting for a leader, and the log a
 * replica holds. Replicas a test started are made to act crashed after it ({@link crashStarted}),
 * so no clock runs on after the file.
 */
import { env } from "cloudflare:test";
import { expect } from "vitest";
import { decodeBatch } from "../../src/codec/index.ts";
import type { PartitionRpc, ReplicaStatus } from "../../src/partition/rpc.ts";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import type { ErrorBody, InitProducerResponse, ProduceResponse } from "../../src/protocol/index.ts";
import { call, createTopic, json, randomTopic } from "./helpers.ts";

export const REPLICAS = ["r1", "r2", "r3"] as const;

/** The object of replica `id` of partition `p`. */
export function replica(topicId: string, id: string, p = 0): PartitionRpc {
  const base = partitionObjectName(topicId, p);
  return env.PARTITION.getByName(id === "r1" ? base : `${base}/${id}`) as unknown as PartitionRpc;
}

const started: string[] = [];

/** For `afterEach`: every replica started by the test acts crashed (no clock runs on). */
export async function crashStarted(): Promise<void> {
  await Promise.all(started.splice(0).flatMap((topicId) => REPLICAS.map((id) => replica(topicId, id).setFaults({ crashed: true }))));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every 25 ms until it answers something other than undefined. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** A replica's Raft view, or null when it is crashed. */
export async function status(topicId: string, id: string): Promise<ReplicaStatus | null> {
  try {
    const r = await replica(topicId, id).replicaStatus();
    return r.ok ? r.replica : null;
  } catch {
    return null;
  }
}

/** Waits for a replica (not in `except`) that is the leader. */
export async function leaderOf(topicId: string, except: string[] = []): Promise<ReplicaStatus> {
  return until("a leader", async () => {
    for (const id of REPLICAS) {
      if (except.includes(id)) continue;
      const s = await status(topicId, id);
      if (s?.role === "leader") return s;
    }
    return undefined;
  });
}

/**
 * The quiesced tick of the replicas tests create (ms; the default is REPLICA_QUIESCED_TICK_MS,
 * 5 s): a test that crashes the leader of an idle group and waits for a new one without sending
 * it a request waits 2-3 quiesced ticks (docs/RAFT.md "Quiescence"), so 1 s keeps that to a few
 * seconds on a loaded machine. A later `setReplicaTestKnobs` without it restores the default.
 */
export const TEST_QUIESCED_TICK_MS = 1_000;

/** Creates a one-partition topic at replication.factor 3 (crashed after the test: {@link crashStarted}), named `name` or at random. */
export async function createReplicated(configs: Record<string, unknown> = {}, name = randomTopic("rf3")): Promise<{ name: string; topicId: string }> {
  const d = await createTopic(name, 1, { "replication.factor": 3, ...configs });
  started.push(d.topicId);
  expect(d.configs["replication.factor"]).toBe(3);
  for (const id of REPLICAS) expect(await replica(d.topicId, id).setReplicaTestKnobs({ quiescedTickMs: TEST_QUIESCED_TICK_MS })).toMatchObject({ ok: true });
  return { name, topicId: d.topicId };
}

/** Every stored record of a replica from `from` on, as (offset, value, leader epoch). */
export async function replicaLog(topicId: string, id: string, from = 0): Promise<{ offset: number; value: string; epoch: number }[]> {
  const out: { offset: number; value: string; epoch: number }[] = [];
  let offset = from;
  for (;;) {
    const r = await replica(topicId, id).fetchRecords({ offset, maxRecords: 1000, maxBytes: 1 << 20, maxWaitMs: 0, minBytes: 0 });
    if (!r.ok) throw new Error(JSON.stringify(r));
    for (const b of r.batches) {
      const { header, records } = decodeBatch(b, 0, { verifyCrc: true });
      for (const rec of records) if (rec.offset >= offset) out.push({ offset: rec.offset, value: new TextDecoder().decode(rec.value!), epoch: header.partitionLeaderEpoch });
    }
    if (r.nextOffset >= r.highWatermark) return out;
    offset = r.nextOffset;
  }
}

/** Every voter's log equals the acknowledged records: each once at its offset, offsets dense. */
export async function expectLogs(topicId: string, voters: readonly string[], acked: Map<string, number>, values: string[]): Promise<void> {
  const end = acked.size;
  expect([...acked.values()].sort((a, b) => a - b)).toEqual(Array.from({ length: end }, (_, i) => i));
  const want = values
    .filter((v) => acked.has(v))
    .map((v) => [acked.get(v)!, v])
    .sort((a, b) => (a[0] as number) - (b[0] as number));
  for (const id of voters) {
    await until(`${id} at high watermark ${end}`, async () => ((await status(topicId, id))?.highWatermark === end ? true : undefined));
    const log = await replicaLog(topicId, id);
    expect(
      log.map((r) => [r.offset, r.value]),
      id,
    ).toEqual(want);
  }
}

/** A new producer id from the gateway (`POST /v1/producers`). */
export async function newProducer(): Promise<number> {
  const res = await call("/v1/producers", { method: "POST" });
  expect(res.status).toBe(200);
  return ((await res.json()) as InitProducerResponse).producerId;
}

/**
 * POSTs produce request `body` to `path` through the gateway, resent every `retryMs` on a
 * retriable error as a client would (any other error fails the test); answers the 200 body.
 * Resending is safe where the only failures are calls to a replica that was down or not the
 * leader (nothing appended), or where the body is idempotent.
 */
export async function postRetrying(path: string, body: unknown, retryMs = 50): Promise<ProduceResponse> {
  for (;;) {
    const res = await json("POST", path, body);
    const text = await res.text();
    if (res.status === 200) return JSON.parse(text) as ProduceResponse;
    expect((JSON.parse(text) as ErrorBody).error.retriable, text).toBe(true);
    await sleep(retryMs);
  }
}

/** Produces one record `value` to `path` (a partition's records route), retrying as {@link postRetrying}. */
export function produceRetrying(path: string, value: string, retryMs = 50): Promise<ProduceResponse> {
  return postRetrying(path, { records: [{ value }] }, retryMs);
}

/** Produces `values` in one request to partition 0 of `name`, retrying as {@link postRetrying}; answers their offsets. */
export async function produceValuesRetrying(name: string, values: string[]): Promise<number[]> {
  return (await postRetrying(`/v1/topics/${name}/partitions/0/records`, { records: values.map((value) => ({ value })) })).records.map((r) => r.offset);
}

/**
 * Steady idempotent produce through the gateway to partition 0 of `name`, one record per
 * request (`m0`, `m1`, ...), the same body resent on a retriable error (anything else fails the
 * test). `stop()` ends it and answers the acknowledged value -> offset and every value sent.
 */
export function steadyProducer(name: string, producerId: number) {
  const acked = new Map<string, number>();
  const values: string[] = [];
  let stop = false;
  const done = (async () => {
    for (let sequence = 0; !stop; sequence++) {
      const value = `m${sequence}`;
      values.push(value);
      const body = { producerId, producerEpoch: 0, baseSequence: sequence, records: [{ value }] };
      acked.set(value, (await postRetrying(`/v1/topics/${name}/partitions/0/records`, body, 20)).records[0]!.offset);
    }
  })();
  return {
    acked,
    count: () => acked.size,
    stop: async () => {
      stop = true;
      await done;
      return { acked, values };
    },
  };
}
