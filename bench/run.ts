/**
 * `npm run bench`: Edgelog's core benchmarks, each printed next to a ceiling measured in the
 * same run on the same path (Miniflare's dispatchFetch into the real Worker and Durable
 * Objects in workerd; see bench/engine.ts). Prints figures and ratios; asserts nothing.
 *
 * Usage: npm run bench [-- --only core|groups|streams|security|kafka|metrics|lifecycle|subscriptions|raft|metadata|ab] [--quick] [--path dispatch|direct] [--baseline DIR]
 *
 * --only ab --baseline DIR: interleaved A/B of the core data path against another checkout
 * (bench/ab.ts); not part of the default run.
 *
 * --path (core only): `dispatch` (default) sends every request with Miniflare's dispatchFetch;
 * `direct` sends them over HTTP to the Worker's own socket in workerd with a lean undici
 * client (see bench/engine.ts), measuring the same Worker with less client CPU per request.
 */
import { parseArgs } from "node:util";
import { EdgelogClient, Producer } from "../sdk/src/index.ts";
import { startEngine, type Engine } from "./engine.ts";
import { fmt, pct, closedLoop } from "./util.ts";

const { values: args } = parseArgs({
  options: { only: { type: "string" }, quick: { type: "boolean", default: false }, path: { type: "string", default: "dispatch" }, baseline: { type: "string" } },
});
const QUICK = args.quick === true;
if (args.path !== "dispatch" && args.path !== "direct") throw new Error(`--path must be dispatch or direct, got ${args.path}`);
const PATH = args.path;

export interface Row {
  name: string;
  value: number;
  unit: string;
  ceilingName?: string;
  ceiling?: number;
  target?: number;
}

export function printRows(title: string, rows: Row[]): void {
  console.log(`\n## ${title}\n`);
  console.log("| measurement | value | ceiling (same run) | ratio | target |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    const ratio = r.ceiling ? r.value / r.ceiling : undefined;
    console.log(
      `| ${r.name} | ${fmt(r.value)} ${r.unit} | ${r.ceiling !== undefined ? `${fmt(r.ceiling)} ${r.unit} (${r.ceilingName})` : "-"} | ${ratio !== undefined ? `${ratio.toFixed(2)}x` : "-"} | ${r.target !== undefined ? `>= ${r.target}x ${ratio !== undefined && ratio >= r.target ? "(met)" : "(not met)"}` : "-"} |`,
    );
  }
}

async function ok(res: Response): Promise<void> {
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

/** Base URL of every request: Miniflare's dispatch accepts any origin; the direct path needs the socket's. */
let BASE = "http://edgelog.bench";

const list = (xs: number[]): string => xs.map((x) => `${x.toFixed(2)}x`).join(", ");
const median = (xs: number[]): string =>
  `${pct(
    [...xs].sort((a, b) => a - b),
    50,
  ).toFixed(2)}x`;

async function benchCore(engine: Engine): Promise<void> {
  const f = PATH === "direct" ? engine.directFetch : engine.fetch;
  if (PATH === "direct") BASE = engine.url;
  const client = new EdgelogClient({ baseUrl: BASE, fetch: f });
  const RECORD_BYTES = 1024;
  const BATCH_BYTES = 256 * 1024;
  const totalRecords = QUICK ? 20_000 : 400_000;
  const concurrency = 8;
  const partitions = 6;
  const value = new Uint8Array(RECORD_BYTES).fill(97);

  // Each measured path runs in ROUNDS slices interleaved with its ceiling (the order alternating
  // per round), so both see the same background load: on a shared machine a one-shot ceiling
  // followed by a one-shot measurement can swing the ratio by 2x. Totals are summed over the
  // rounds; the per-round ratios are printed after the table to show the spread.
  // Rounds split the batched workload at send() boundaries (totalRecords / ROUNDS is a
  // multiple of the 5000-message chunk), so slicing adds no partial batches.
  // 10 rounds of 40 000 records (full run): a round's ratio swings by up to ±0.2 on this
  // machine (a SQLite WAL checkpoint or a GC lands in one path's slice), so many rounds average
  // that out; and each round ends with a flush, which sends every partition's partial last
  // batch (6 more requests than the ceiling's full ones, and a drain), a cost of slicing the
  // run that a continuously producing application does not have: long rounds keep it small.
  const ROUNDS = QUICK ? 4 : 10;

  // warm-up: create topics, first requests load the isolate and the objects
  await client.createTopic({ name: "bench-batched", partitions });
  await client.createTopic({ name: "bench-warmup", partitions });
  await client.createTopic({ name: "bench-single", partitions });
  for (let i = 0; i < 20; i++) await ok(await f(`${BASE}/bench/noop`));
  const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
  for (let p = 0; p < partitions; p++) {
    await ok(await f(`${BASE}/v1/topics/bench-single/partitions/${p}/records`, { method: "POST", headers: { "content-type": "application/json" }, body }));
    await ok(await f(`${BASE}/bench/raw-insert/s${p}`, { method: "POST", body }));
    await ok(await f(`${BASE}/bench/raw-insert/p${p}`, { method: "POST", body: new Uint8Array(16) }));
  }

  // --- batched produce through the SDK producer (idempotent, 1 KiB records, batches of
  // BATCH_BYTES, send() calls of 5000 messages pipelined), against its ceiling: a raw
  // single-row blob insert into a Durable Object, same request size as a batch.
  const rawBody = new Uint8Array(BATCH_BYTES).fill(97);
  const producer = new Producer(client, { lingerMs: 5, maxBatchBytes: BATCH_BYTES });
  const chunk = 5_000;
  if ((totalRecords / ROUNDS) % chunk !== 0) throw new Error("bench: totalRecords / ROUNDS must be a multiple of the send() chunk");
  let rawSecs = 0;
  let rawBytes = 0;
  let prodSecs = 0;
  let sent = 0;
  const batchedRatios: number[] = [];
  // Warm-up (not measured): JIT, the producer's metadata and producer id, the objects' start-up.
  for (let i = 0; i < partitions * 2; i++) await ok(await f(`${BASE}/bench/raw-insert/p${i % partitions}`, { method: "POST", body: rawBody }));
  await Promise.all(Array.from({ length: 4 }, (_, k) => producer.send({ topic: "bench-warmup", messages: Array.from({ length: 500 }, (_, j) => ({ key: `w${k}-${j}`, value })) })));
  for (let round = 0; round < ROUNDS; round++) {
    const roundEnd = Math.round((totalRecords * (round + 1)) / ROUNDS);
    const roundRecords = roundEnd - sent;
    const rawRequests = Math.ceil((roundRecords * RECORD_BYTES) / BATCH_BYTES);
    const raw = async (): Promise<number> =>
      closedLoop(rawRequests, partitions, async (i) => {
        await ok(await f(`${BASE}/bench/raw-insert/p${i % partitions}`, { method: "POST", body: rawBody }));
      });
    const produce = async (): Promise<number> => {
      const t0 = performance.now();
      // send() calls are pipelined (not awaited one by one), as a Kafka producer's sends are:
      // the producer's maxBufferedBytes bounds memory, and awaiting each call would drain the
      // pipeline at every call boundary and leave a partial batch per partition. Each chunk is
      // built after the previous send() call, with a turn of the event loop between (as an
      // application reading its input from I/O has), so the first requests leave while later
      // chunks are built instead of after all of them.
      const pending: Promise<unknown>[] = [];
      for (; sent < roundEnd; sent += Math.min(chunk, roundEnd - sent)) {
        const n = Math.min(chunk, roundEnd - sent);
        const base = sent;
        pending.push(producer.send({ topic: "bench-batched", messages: Array.from({ length: n }, (_, j) => ({ key: `k${base + j}`, value })) }));
        await new Promise((resolve) => setImmediate(resolve));
      }
      await producer.flush();
      await Promise.all(pending);
      return (performance.now() - t0) / 1000;
    };
    let r: number, p: number;
    if (round % 2 === 0) {
      r = await raw();
      p = await produce();
    } else {
      p = await produce();
      r = await raw();
    }
    rawSecs += r;
    rawBytes += rawRequests * BATCH_BYTES;
    prodSecs += p;
    batchedRatios.push((roundRecords * RECORD_BYTES) / p / ((rawRequests * BATCH_BYTES) / r));
  }
  await producer.close();
  const rawMBps = rawBytes / 1e6 / rawSecs;
  const prodMBps = (totalRecords * RECORD_BYTES) / 1e6 / prodSecs;

  // --- one record per request vs a no-op Worker route, same concurrency; and, as a reference,
  // the floor of a durable write per request on this path without coalescing: the same body
  // stored as one raw row per request (HTTP in, one DO RPC, one SQLite commit, HTTP out).
  // Shapes: (clients in flight, partitions). The gateway coalesces concurrent requests for one
  // partition (src/gateway/append-coalescer.ts), so what counts is clients per partition.
  const singles = QUICK ? 2_000 : 8_000;
  const perRound = Math.ceil(singles / ROUNDS);
  const singlesDone = perRound * ROUNDS;
  const shapes: { clients: number; partitions: number; topic: string }[] = [
    { clients: concurrency, partitions, topic: "bench-single" },
    { clients: 64, partitions, topic: "bench-single" },
    { clients: 64, partitions: 1, topic: "bench-single-1" },
  ];
  await client.createTopic({ name: "bench-single-1", partitions: 1 });
  const singleRows: Row[] = [];
  const singleRatioLines: string[] = [];
  for (const shape of shapes) {
    const { clients, partitions: parts, topic } = shape;
    const produceOne = async (i: number): Promise<void> =>
      ok(await f(`${BASE}/v1/topics/${topic}/partitions/${i % parts}/records`, { method: "POST", headers: { "content-type": "application/json" }, body }));
    await closedLoop(200, clients, produceOne); // warm-up of this shape
    let noopSecs = 0;
    let postNoopSecs = 0;
    let rawSmallSecs = 0;
    let singleSecs = 0;
    const ratios: number[] = [];
    // Reference: the no-op route POSTed the same JSON body (read by the same body middleware),
    // i.e. the request shape of a produce with nothing done.
    const postNoop = async (): Promise<number> =>
      closedLoop(perRound, clients, async () => ok(await f(`${BASE}/bench/noop`, { method: "POST", headers: { "content-type": "application/json" }, body })));
    for (let round = 0; round < ROUNDS; round++) {
      const noop = async (): Promise<number> => closedLoop(perRound, clients, async () => ok(await f(`${BASE}/bench/noop`)));
      const rawSmall = async (): Promise<number> => closedLoop(perRound, clients, async (i) => ok(await f(`${BASE}/bench/raw-insert/s${i % parts}`, { method: "POST", body })));
      const single = async (): Promise<number> => closedLoop(perRound, clients, produceOne);
      let n: number, r: number, p: number;
      if (round % 2 === 0) {
        n = await noop();
        r = await rawSmall();
        p = await single();
      } else {
        p = await single();
        r = await rawSmall();
        n = await noop();
      }
      noopSecs += n;
      rawSmallSecs += r;
      singleSecs += p;
      postNoopSecs += await postNoop();
      ratios.push(n / p);
    }
    const label = `${clients} clients, ${parts} partition${parts === 1 ? "" : "s"}`;
    singleRows.push(
      { name: `one record per request (JSON, ${label})`, value: singlesDone / singleSecs, unit: "req/s", ceilingName: "no-op Worker route", ceiling: singlesDone / noopSecs, target: 0.6 },
      {
        name: `reference: the same body as one raw DO row per request (${label})`,
        value: singlesDone / rawSmallSecs,
        unit: "req/s",
        ceilingName: "no-op Worker route",
        ceiling: singlesDone / noopSecs,
      },
      {
        name: `reference: one record per request vs the no-op route POSTed the same body (${label})`,
        value: singlesDone / singleSecs,
        unit: "req/s",
        ceilingName: "POST no-op route",
        ceiling: singlesDone / postNoopSecs,
      },
    );
    singleRatioLines.push(`one record per request, ${label}: ${list(ratios)} (median ${median(ratios)})`);
  }

  // --- catch-up fetch of everything the batched producer wrote (binary fetch, all partitions)
  const t1 = performance.now();
  let fetchedBytes = 0;
  let fetchedRecords = 0;
  await Promise.all(
    Array.from({ length: partitions }, async (_, p) => {
      let offset = 0;
      for (;;) {
        const r = await client.fetchRecords("bench-batched", p, { offset, maxBytes: 4 * 1024 * 1024, maxRecords: 10_000 });
        if (r.records.length === 0) break;
        for (const rec of r.records) fetchedBytes += rec.value?.byteLength ?? 0;
        fetchedRecords += r.records.length;
        offset = r.nextOffset;
      }
    }),
  );
  const fetchSecs = (performance.now() - t1) / 1000;
  if (fetchedRecords !== totalRecords) throw new Error(`catch-up read ${fetchedRecords} records, expected ${totalRecords}`);

  // --- long-poll wake latency: a waiting fetch at the log end, then one append
  await client.createTopic({ name: "bench-wake", partitions: 1 });
  const lat: number[] = [];
  const rounds = QUICK ? 50 : 200;
  for (let i = 0; i < rounds; i++) {
    const waiting = client.fetchRecords("bench-wake", 0, { offset: i, maxWaitMs: 10_000 });
    await new Promise((r) => setTimeout(r, 2)); // let the fetch reach the object
    const ts = performance.now();
    const prod = f(`${BASE}/v1/topics/bench-wake/partitions/0/records`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ records: [{ value: String(i) }] }),
    });
    const got = await waiting;
    lat.push(performance.now() - ts);
    await ok(await prod);
    if (got.records.length !== 1) throw new Error(`long-poll round ${i} woke with ${got.records.length} records`);
  }
  lat.sort((a, b) => a - b);

  printRows(`Core: produce and fetch (${PATH === "direct" ? "undici Pool -> the Worker's own socket in workerd" : "Miniflare dispatchFetch"} -> Worker -> Durable Objects, workerd)`, [
    {
      name: `batched produce, SDK producer, 1 KiB records, ${BATCH_BYTES / 1024} KiB batches, ${partitions} partitions`,
      value: prodMBps,
      unit: "MB/s",
      ceilingName: `raw ${BATCH_BYTES / 1024} KiB single-row DO insert`,
      ceiling: rawMBps,
      target: 0.8,
    },
    { name: "batched produce, records/s", value: totalRecords / prodSecs, unit: "records/s" },
    ...singleRows,
    { name: "catch-up fetch (binary, 6 partitions in parallel)", value: fetchedBytes / 1e6 / fetchSecs, unit: "MB/s", ceilingName: `raw DO insert`, ceiling: rawMBps },
    { name: "catch-up fetch, records/s", value: fetchedRecords / fetchSecs, unit: "records/s" },
    { name: "long-poll wake latency p50 (append sent -> fetch answered)", value: pct(lat, 50), unit: "ms" },
    { name: "long-poll wake latency p99", value: pct(lat, 99), unit: "ms" },
  ]);
  console.log(`\nPer-round ratios (${ROUNDS} interleaved rounds):\n- batched produce: ${list(batchedRatios)} (median ${median(batchedRatios)})`);
  for (const line of singleRatioLines) console.log(`- ${line}`);
}

async function main(): Promise<void> {
  console.log(`# Edgelog benchmarks — ${new Date().toISOString()} — node ${process.version}, ${QUICK ? "quick" : "full"} run, ${PATH} path`);
  const only = args.only;
  if (only === "ab") {
    const { run } = await import("./ab.ts");
    await run({ quick: QUICK, baseline: args.baseline });
    return;
  }
  if (only === undefined || only === "core") {
    const engine = await startEngine();
    try {
      await benchCore(engine);
    } finally {
      await engine.dispose();
    }
  }
  for (const [name, file] of [
    ["groups", "./groups.ts"],
    ["streams", "./durable-streams.ts"],
    ["security", "./security.ts"],
    ["kafka", "./kafka-bridge.ts"],
    ["metrics", "./metrics.ts"],
    ["lifecycle", "./lifecycle.ts"],
    ["subscriptions", "./subscriptions.ts"],
    ["raft", "./raft.ts"],
    ["metadata", "./metadata.ts"],
  ] as const) {
    if (only !== undefined && only !== name) continue;
    try {
      const mod = (await import(file)) as { run?: (opts: { quick: boolean }) => Promise<void> };
      if (mod.run) await mod.run({ quick: QUICK });
    } catch (e) {
      if ((e as { code?: string }).code === "ERR_MODULE_NOT_FOUND") continue;
      throw e;
    }
  }
}

await main();
