/**
 * Storage lifecycle benchmarks (issue 10; `npm run bench -- --only lifecycle [--quick]`).
 * Prints figures; asserts nothing.
 *
 * 1. Compaction throughput against the same partition's catch-up fetch throughput (goal >= 0.5x):
 *    a one-partition topic of N keyed 100-byte records over N/10 keys, in 1 MiB segments, is
 *    read from 0 to the end (the ceiling), then turned into a compacted topic (`cleanup.policy`
 *    compact, `segment.ms` 1 so the active segment rolls too) and timed until a read from 0 holds
 *    exactly one record per key. Compaction runs on the partition's alarm, one step of at most
 *    256 batches per wake, so the figure includes the wakes' scheduling.
 * 2. Retention drop cost: the same bytes in 1 MiB segments, once as batches of 10 records and once
 *    as batches of 1 000, dropped at once (`retention.ms` 1, `segment.ms` 1); timed until the log
 *    start reaches the log end. The SQL per dropped segment is fixed (one `seg_segments` delete and
 *    one `meta` write in the retention commit; then one `DELETE FROM batches` and one `meta` write
 *    per slice of up to 1 000 batch rows), so the time follows the batch rows, not the records.
 * 3. Fetch from R2-offloaded segments against a local fetch of the same partition (goal >= 0.5x
 *    on Miniflare's local R2): N records in 1 MiB segments, read from 0 to the end twice from the
 *    rows, then `remote.storage.enable` with `local.retention.ms` 0 offloads them and drops the
 *    local copies (waited for on the stored bytes), and the same reads go to R2 (header, cached offset index,
 *    one range read per answer; an answer stops at its segment's end).
 * 4. Produce while compaction runs against produce alone, on the same partition (goal >= 0.8x): a
 *    compacted topic holds a keyed backlog that `min.compaction.lag.ms` (1 day) keeps from being
 *    cleaned. Three rounds of: a burst timed alone, then `min.compaction.lag.ms` 0 starts
 *    compaction and the same burst is timed during it, waited for until the stored bytes stop
 *    changing; then (lag 1 day again) one more alone burst. Round 1 compacts the backlog, later
 *    rounds what the bursts added (each pass rewrites from the log start). The ceiling is the
 *    mean of the alone bursts; per-round ratios are against the two alone bursts around it.
 *
 * Everything runs in one Node process against workerd (bench/engine.ts) on one machine.
 */
import { EdgelogClient, Producer } from "../sdk/src/index.ts";
import { startEngine, type Engine } from "./engine.ts";
import { fmt } from "./util.ts";

const BASE = "http://edgelog.bench";

async function ok(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${text}`);
  return text === "" ? null : JSON.parse(text);
}

async function patch(engine: Engine, topic: string, configs: Record<string, unknown>): Promise<void> {
  await ok(await engine.fetch(`${BASE}/v1/topics/${topic}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify({ configs }) }));
}

/** Reads partition 0 from `from` to its end with the binary path; answers the records read. */
async function readAll(client: EdgelogClient, topic: string, from: number, end: number): Promise<number> {
  let records = 0;
  for (let offset = from; offset < end; ) {
    const page = await client.fetchRecords(topic, 0, { offset, maxBytes: 4 * 1024 * 1024, maxRecords: 10_000 });
    records += page.records.length;
    if (page.nextOffset <= offset) throw new Error(`fetch at ${offset} did not move`);
    offset = page.nextOffset;
  }
  return records;
}

async function produceKeyed(client: EdgelogClient, topic: string, n: number, keys: number, recordsPerBatch: number, valueBytes: number): Promise<void> {
  const producer = new Producer(client, { lingerMs: 1, maxBatchBytes: recordsPerBatch * (valueBytes + 40) });
  const value = new Uint8Array(valueBytes).fill(97);
  for (let sent = 0; sent < n; sent += recordsPerBatch) {
    await producer.send({ topic, messages: Array.from({ length: Math.min(recordsPerBatch, n - sent) }, (_, i) => ({ key: `k${(sent + i) % keys}`, value, partition: 0 })) });
  }
  await producer.close();
}

async function bounds(engine: Engine, topic: string): Promise<{ logStartOffset: number; logEndOffset: number }> {
  const d = (await ok(await engine.fetch(`${BASE}/v1/topics/${topic}`))) as { partitionDetails: { logStartOffset: number; logEndOffset: number }[] };
  return d.partitionDetails[0]!;
}

const MiB = 1024 * 1024;
const DAY = 86_400_000;

/** The partition's stored bytes (describe: the rows of `batches`; offloaded segments not counted). */
async function bytesOf(engine: Engine, topic: string): Promise<number> {
  return ((await ok(await engine.fetch(`${BASE}/v1/topics/${topic}`))) as { partitionDetails: { bytes: number }[] }).partitionDetails[0]!.bytes;
}

/** Polls the stored bytes every 50 ms until they have not changed for `quietMs`; answers when they last changed (performance.now()). */
async function lastChangeOfBytes(engine: Engine, topic: string, quietMs: number, limitMs = 600_000): Promise<number> {
  const t0 = performance.now();
  let last = await bytesOf(engine, topic);
  let lastChange = performance.now();
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const b = await bytesOf(engine, topic);
    if (b !== last) {
      last = b;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > quietMs) return lastChange;
    if (performance.now() - t0 > limitMs) throw new Error(`${topic}: stored bytes still changing after ${limitMs} ms`);
  }
}

export async function run(opts: { quick: boolean }): Promise<void> {
  // The SEGMENTS bucket (tiered storage): Miniflare's local R2.
  const engine = await startEngine({}, { r2Buckets: ["SEGMENTS"] });
  try {
    const client = new EdgelogClient({ baseUrl: BASE, fetch: engine.fetch });
    // Issue 10's size: a 1M-record keyed topic (100,000 keys) in the full run.
    const n = opts.quick ? 50_000 : 1_000_000;
    const keys = n / 10;

    // 1. Compaction against catch-up fetch.
    const topic = "bench-lifecycle-compact";
    await client.createTopic({ name: topic, partitions: 1, configs: { "segment.bytes": 1024 * 1024, "retention.ms": -1 } });
    await produceKeyed(client, topic, n, keys, 500, 100);
    const t0 = performance.now();
    const read = await readAll(client, topic, 0, n);
    const fetchSecs = (performance.now() - t0) / 1000;
    if (read !== n) throw new Error(`read ${read} of ${n} records`);
    const t1 = performance.now();
    await patch(engine, topic, { "cleanup.policy": "compact", "segment.ms": 1, "min.cleanable.dirty.ratio": 0 });
    // Poll the stored bytes (cheap) and time the last change; then check a read holds one record per key.
    const storedBytes = async (): Promise<number> => ((await ok(await engine.fetch(`${BASE}/v1/topics/${topic}`))) as { partitionDetails: { bytes: number }[] }).partitionDetails[0]!.bytes;
    let last = await storedBytes();
    let lastChange = performance.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      const b = await storedBytes();
      if (b !== last) {
        last = b;
        lastChange = performance.now();
      } else if (performance.now() - lastChange > 2_000) {
        const left = await readAll(client, topic, 0, n);
        if (left === keys) break;
        lastChange = performance.now();
      }
      if (performance.now() - t1 > 600_000) throw new Error("compaction did not finish in 10 min");
    }
    const compactSecs = (lastChange - t1) / 1000;

    // 2. Retention drop cost, by records per batch.
    const drops: { recordsPerBatch: number; segments: number; secs: number }[] = [];
    for (const recordsPerBatch of [10, 1_000]) {
      const name = `bench-lifecycle-retention-${recordsPerBatch}`;
      const valueBytes = Math.floor(10_000 / recordsPerBatch);
      const total = (opts.quick ? 2_000 : 10_000) * (recordsPerBatch / 10);
      await client.createTopic({ name, partitions: 1, configs: { "segment.bytes": 1024 * 1024 } });
      await produceKeyed(client, name, total, total, recordsPerBatch, valueBytes);
      const segments = Math.ceil((total * (valueBytes + 20)) / (1024 * 1024));
      const t = performance.now();
      await patch(engine, name, { "retention.ms": 1, "segment.ms": 1 });
      for (;;) {
        const b = await bounds(engine, name);
        if (b.logStartOffset === b.logEndOffset) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      drops.push({ recordsPerBatch, segments, secs: (performance.now() - t) / 1000 });
    }

    // 3. R2 read-through against local fetch, same partition, same records.
    const tierTopic = "bench-lifecycle-tier";
    const tn = opts.quick ? 50_000 : 200_000;
    // Remote storage is turned on only after the local reads, so no upload competes with them.
    await client.createTopic({ name: tierTopic, partitions: 1, configs: { "segment.bytes": MiB } });
    await produceKeyed(client, tierTopic, tn, tn, 500, 100);
    const timedRead = async (): Promise<number> => {
      const t = performance.now();
      const got = await readAll(client, tierTopic, 0, tn);
      if (got !== tn) throw new Error(`read ${got} of ${tn} records`);
      return (performance.now() - t) / 1000;
    };
    const localSecs = (await timedRead()) + (await timedRead());
    await patch(engine, tierTopic, { "remote.storage.enable": true, "local.retention.ms": 0 });
    // Offloaded when only the active segment (at most 1 MiB) is stored locally.
    for (let waited = 0; (await bytesOf(engine, tierTopic)) > MiB; waited += 100) {
      if (waited > 600_000) throw new Error("offload did not finish in 10 min");
      await new Promise((r) => setTimeout(r, 100));
    }
    const remoteSecs = (await timedRead()) + (await timedRead());

    // 4. Produce during compaction against produce alone, same partition.
    const pc = "bench-lifecycle-produce-compact";
    const burst = opts.quick ? 20_000 : 50_000;
    // The backlog round 1 compacts: 200,000 records over 20,000 keys in the full run (as in the earlier runs).
    const backlog = opts.quick ? 50_000 : 200_000;
    const backlogKeys = backlog / 10;
    await client.createTopic({ name: pc, partitions: 1, configs: { "segment.bytes": MiB, "cleanup.policy": "compact", "min.compaction.lag.ms": DAY } });
    await produceKeyed(client, pc, backlog, backlogKeys, 500, 100);
    const timedBurst = async (): Promise<number> => {
      const t = performance.now();
      await produceKeyed(client, pc, burst, backlogKeys, 500, 100);
      return (performance.now() - t) / 1000;
    };
    // Rounds of (alone, during): one pair is too noisy on a shared machine. Round 1 compacts the
    // whole backlog; later rounds the bursts since (and every pass rewrites from the log start).
    const rounds = 3;
    const alone: number[] = [];
    const during: number[] = [];
    const compactSecs4: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await patch(engine, pc, { "min.compaction.lag.ms": DAY, "min.cleanable.dirty.ratio": 0.5 });
      alone.push(await timedBurst());
      const compactStart = performance.now();
      await patch(engine, pc, { "min.compaction.lag.ms": 0, "min.cleanable.dirty.ratio": 0 });
      during.push(await timedBurst());
      compactSecs4.push(((await lastChangeOfBytes(engine, pc, 2_000)) - compactStart) / 1000);
    }
    await patch(engine, pc, { "min.compaction.lag.ms": DAY, "min.cleanable.dirty.ratio": 0.5 });
    alone.push(await timedBurst());

    console.log("\n## Storage lifecycle\n");
    console.log("| measurement | value | ceiling (same run) | ratio | target |");
    console.log("|---|---|---|---|---|");
    const compactRate = n / compactSecs;
    const fetchRate = n / fetchSecs;
    const ratio = compactRate / fetchRate;
    console.log(
      `| compaction, ${n} records over ${keys} keys (timed to the last change of the stored bytes, polled every 50 ms) | ${fmt(compactRate)} records/s | ${fmt(fetchRate)} records/s (catch-up fetch of the same partition) | ${ratio.toFixed(2)}x | >= 0.5x ${ratio >= 0.5 ? "(met)" : "(not met)"} |`,
    );
    const localRate = (2 * tn) / localSecs;
    const remoteRate = (2 * tn) / remoteSecs;
    const tierRatio = remoteRate / localRate;
    console.log(
      `| fetch from R2-offloaded segments, ${tn} records of 100 B in 1 MiB segments, read twice | ${fmt(remoteRate)} records/s | ${fmt(localRate)} records/s (the same reads from local rows, before the offload) | ${tierRatio.toFixed(2)}x | >= 0.5x ${tierRatio >= 0.5 ? "(met)" : "(not met)"} |`,
    );
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    const aloneRate = (alone.length * burst) / sum(alone);
    const duringRate = (during.length * burst) / sum(during);
    const produceRatio = duringRate / aloneRate;
    // Per round: the burst during compaction against the mean of the alone bursts around it.
    const perRound = during.map((d, i) => (burst / d / ((2 * burst) / (alone[i]! + alone[i + 1]!))).toFixed(2));
    console.log(
      `| produce during compaction, ${burst} keyed records in 500-record batches to the partition compacting (round 1: a ${backlog}-record backlog), ${rounds} rounds (per round ${perRound.join(", ")}; compaction took ${compactSecs4.map((x) => fmt(x)).join(", ")} s from the config change to the last change of the stored bytes, the burst's own appends included) | ${fmt(duringRate)} records/s | ${fmt(aloneRate)} records/s (the same burst alone, ${alone.length} bursts interleaved: ${alone.map((x) => fmt(burst / x)).join(", ")}) | ${produceRatio.toFixed(2)}x | >= 0.8x ${produceRatio >= 0.8 ? "(met)" : "(not met)"} |`,
    );
    for (const d of drops) {
      console.log(`| retention drop, ~${d.segments} segments of 1 MiB, ${d.recordsPerBatch} records per batch | ${fmt(d.secs * 1000)} ms | - | - | - |`);
    }
  } finally {
    await engine.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run({ quick: process.argv.includes("--quick") });
