/**
 * `npm run bench -- --only ab --baseline DIR [--quick]`: an interleaved A/B of the core data
 * path between two checkouts of Edgelog, in one run on one machine.
 *
 * A is the checkout at DIR (e.g. a `git worktree` of main before a refactor, with its own
 * `node_modules` or a link to this one's), B is this checkout. Both Workers run at once, each in
 * its own workerd (bench/engine.ts), driven by this checkout's SDK over Miniflare's
 * dispatchFetch. Every round runs each workload on A and on B back to back, the order
 * alternating per round, so both see the same background load; the table gives B/A per
 * workload over the summed rounds and the per-round spread. Prints figures, asserts nothing.
 *
 * Workloads (the ones issue 9's "behaviour unchanged, performance kept" gate names):
 * - batched produce: SDK producer (idempotent), 1 KiB records, 256 KiB batches, 6 partitions (MB/s);
 * - one record per request: JSON produce, 8 clients over 6 partitions (req/s);
 * - catch-up fetch: binary fetch of the round's batched records, 6 partitions in parallel (MB/s);
 * - long-poll wake latency: a fetch waiting at the log end, then one append (ms, p50/p99).
 */
import { resolve } from "node:path";
import { EdgelogClient, Producer } from "../sdk/src/index.ts";
import { startEngine, type Engine } from "./engine.ts";
import { closedLoop, fmt, pct } from "./util.ts";

const RECORD_BYTES = 1024;
const BATCH_BYTES = 256 * 1024;
const PARTITIONS = 6;

interface Side {
  label: string;
  engine: Engine;
  client: EdgelogClient;
  producer: Producer;
  /** Records written to `ab-batched` so far, per partition end offsets after each round. */
  written: number;
  batchedSecs: number;
  batchedBytes: number;
  singleSecs: number;
  singles: number;
  fetchSecs: number;
  fetchBytes: number;
  wake: number[];
  wakeRounds: number;
}

async function ok(res: Response): Promise<void> {
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

const BASE = "http://edgelog.bench";

async function setUp(label: string, engine: Engine): Promise<Side> {
  const client = new EdgelogClient({ baseUrl: BASE, fetch: engine.fetch });
  for (const name of ["ab-batched", "ab-single", "ab-warmup"]) await client.createTopic({ name, partitions: PARTITIONS });
  await client.createTopic({ name: "ab-wake", partitions: 1 });
  const producer = new Producer(client, { lingerMs: 5, maxBatchBytes: BATCH_BYTES });
  const value = new Uint8Array(RECORD_BYTES).fill(97);
  await Promise.all(Array.from({ length: 4 }, (_, k) => producer.send({ topic: "ab-warmup", messages: Array.from({ length: 500 }, (_, j) => ({ key: `w${k}-${j}`, value })) })));
  const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
  await closedLoop(200, 8, async (i) =>
    ok(await engine.fetch(`${BASE}/v1/topics/ab-single/partitions/${i % PARTITIONS}/records`, { method: "POST", headers: { "content-type": "application/json" }, body })),
  );
  return { label, engine, client, producer, written: 0, batchedSecs: 0, batchedBytes: 0, singleSecs: 0, singles: 0, fetchSecs: 0, fetchBytes: 0, wake: [], wakeRounds: 0 };
}

async function batched(s: Side, records: number): Promise<number> {
  const value = new Uint8Array(RECORD_BYTES).fill(97);
  const t0 = performance.now();
  const pending: Promise<unknown>[] = [];
  const chunk = 5_000;
  for (let sent = 0; sent < records; sent += chunk) {
    const n = Math.min(chunk, records - sent);
    const base = s.written + sent;
    pending.push(s.producer.send({ topic: "ab-batched", messages: Array.from({ length: n }, (_, j) => ({ key: `k${base + j}`, value })) }));
    await new Promise((r) => setImmediate(r));
  }
  await s.producer.flush();
  await Promise.all(pending);
  const secs = (performance.now() - t0) / 1000;
  s.written += records;
  s.batchedSecs += secs;
  s.batchedBytes += records * RECORD_BYTES;
  return secs;
}

async function single(s: Side, requests: number): Promise<number> {
  const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
  const secs = await closedLoop(requests, 8, async (i) =>
    ok(await s.engine.fetch(`${BASE}/v1/topics/ab-single/partitions/${i % PARTITIONS}/records`, { method: "POST", headers: { "content-type": "application/json" }, body })),
  );
  s.singleSecs += secs;
  s.singles += requests;
  return secs;
}

/** Reads every partition of `ab-batched` from `from[p]` to its end; returns seconds and advances `from`. */
async function catchUp(s: Side, from: number[]): Promise<number> {
  const t0 = performance.now();
  let bytes = 0;
  await Promise.all(
    from.map(async (start, p) => {
      let offset = start;
      for (;;) {
        const r = await s.client.fetchRecords("ab-batched", p, { offset, maxBytes: 4 * 1024 * 1024, maxRecords: 10_000 });
        if (r.records.length === 0) break;
        for (const rec of r.records) bytes += rec.value?.byteLength ?? 0;
        offset = r.nextOffset;
      }
      from[p] = offset;
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  s.fetchSecs += secs;
  s.fetchBytes += bytes;
  return secs;
}

async function wake(s: Side, rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    const offset = s.wakeRounds++;
    const waiting = s.client.fetchRecords("ab-wake", 0, { offset, maxWaitMs: 10_000 });
    await new Promise((r) => setTimeout(r, 2));
    const ts = performance.now();
    const prod = s.engine.fetch(`${BASE}/v1/topics/ab-wake/partitions/0/records`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ records: [{ value: String(offset) }] }),
    });
    const got = await waiting;
    s.wake.push(performance.now() - ts);
    await ok(await prod);
    if (got.records.length !== 1) throw new Error(`${s.label}: long-poll round ${offset} woke with ${got.records.length} records`);
  }
}

export async function run(opts: { quick: boolean; baseline?: string }): Promise<void> {
  if (opts.baseline === undefined) throw new Error("--only ab needs --baseline DIR (a checkout of the code to compare against)");
  const rounds = opts.quick ? 4 : 10;
  const batchedPerRound = opts.quick ? 10_000 : 30_000;
  const singlesPerRound = opts.quick ? 400 : 1_000;
  const wakePerRound = opts.quick ? 10 : 30;
  const engineA = await startEngine({}, {}, resolve(opts.baseline));
  const engineB = await startEngine();
  try {
    const a = await setUp("A (baseline)", engineA);
    const b = await setUp("B (this checkout)", engineB);
    const fromA = Array<number>(PARTITIONS).fill(0);
    const fromB = Array<number>(PARTITIONS).fill(0);
    const ratios: Record<string, number[]> = { batched: [], single: [], fetch: [] };
    for (let round = 0; round < rounds; round++) {
      const order: [Side, number[]][] =
        round % 2 === 0
          ? [
              [a, fromA],
              [b, fromB],
            ]
          : [
              [b, fromB],
              [a, fromA],
            ];
      const t: Record<string, Record<string, number>> = { [a.label]: {}, [b.label]: {} };
      for (const [s] of order) (t[s.label] as Record<string, number>).batched = await batched(s, batchedPerRound);
      for (const [s] of order) (t[s.label] as Record<string, number>).single = await single(s, singlesPerRound);
      for (const [s, from] of order) (t[s.label] as Record<string, number>).fetch = await catchUp(s, from);
      for (const [s] of order) await wake(s, wakePerRound);
      // Equal work per side in a round: the ratio of rates is the inverse ratio of times.
      for (const k of ["batched", "single", "fetch"]) ratios[k]?.push((t[a.label]?.[k] ?? Number.NaN) / (t[b.label]?.[k] ?? Number.NaN));
    }
    await a.producer.close();
    await b.producer.close();
    const rate = (x: number, secs: number) => x / secs;
    const rows: [string, number, number, string, boolean][] = [
      ["batched produce (SDK producer, 1 KiB records, 6 partitions)", rate(a.batchedBytes / 1e6, a.batchedSecs), rate(b.batchedBytes / 1e6, b.batchedSecs), "MB/s", true],
      ["one record per request (JSON, 8 clients, 6 partitions)", rate(a.singles, a.singleSecs), rate(b.singles, b.singleSecs), "req/s", true],
      ["catch-up fetch (binary, 6 partitions in parallel)", rate(a.fetchBytes / 1e6, a.fetchSecs), rate(b.fetchBytes / 1e6, b.fetchSecs), "MB/s", true],
    ];
    const sa = [...a.wake].sort((x, y) => x - y);
    const sb = [...b.wake].sort((x, y) => x - y);
    console.log(`\n## A/B: ${rounds} interleaved rounds (A = ${opts.baseline}, B = this checkout)\n`);
    console.log("| measurement | A (baseline) | B (this checkout) | B/A |");
    console.log("|---|---|---|---|");
    for (const [name, va, vb, unit] of rows) console.log(`| ${name} | ${fmt(va)} ${unit} | ${fmt(vb)} ${unit} | ${(vb / va).toFixed(2)}x |`);
    for (const p of [50, 99]) console.log(`| long-poll wake latency p${p} (lower is better) | ${fmt(pct(sa, p))} ms | ${fmt(pct(sb, p))} ms | ${(pct(sb, p) / pct(sa, p)).toFixed(2)}x |`);
    const list = (xs: number[]) => xs.map((x) => `${x.toFixed(2)}x`).join(", ");
    console.log(`\nPer-round B/A (rates):`);
    for (const [k, xs] of Object.entries(ratios))
      console.log(
        `- ${k}: ${list(xs)} (median ${pct(
          [...xs].sort((x, y) => x - y),
          50,
        ).toFixed(2)}x)`,
      );
  } finally {
    await engineA.dispose();
    await engineB.dispose();
  }
}
