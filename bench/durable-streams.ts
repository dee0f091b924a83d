/**
 * Durable Streams: Edgelog (/v1/stream/*, Worker + partition Durable Objects in workerd,
 * bench/engine.ts) side by side with the protocol authors' Node server
 * (@durable-streams/server, file-backed: `dataDir`, fdatasync per append), in one run on
 * this machine, through the same client code. Prints figures and Edgelog/reference ratios;
 * asserts nothing (shared/STYLE.md).
 *
 * Both servers answer an append only once it is durable: Edgelog after the Durable Object's
 * SQLite commit (output gate), the reference after fdatasync and its LMDB commit.
 *
 * Measured per server: append throughput with 1 KiB and 16 KiB random bodies (one stream, a
 * fixed number of appends in flight), catch-up read throughput (one reader following
 * Stream-Next-Offset from -1 to the tail, then several readers at once), and long-poll wake
 * latency (a long-poll waiting at the tail, then one append: time from sending the append
 * to the long-poll's answer). The reference runs with its default gzip and without (per
 * round, its better figure counts); the servers take turns over 3 rounds and each figure is
 * the median, so load from elsewhere on the machine falls on all of them alike.
 *
 * Run: `npm run bench -- --only streams [--quick]`, or `node bench/durable-streams.ts [--quick]`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DurableStreamTestServer } from "@durable-streams/server";
import { startEngine } from "./engine.ts";

export interface Target {
  name: string;
  fetch: typeof fetch;
  base: string;
}

interface Results {
  append1k: number;
  append16k: number;
  appendReqs1k: number;
  read1k: number;
  read16k: number;
  readParallel: number;
  wakeP50: number;
  wakeP99: number;
}

const EDGELOG_BASE = "http://edgelog.bench";
/** Appends in flight at once against one stream. */
const APPEND_CONCURRENCY = 8;
/** Readers of one stream at once, for the parallel catch-up figure. */
const PARALLEL_READERS = 4;

async function drain(res: Response): Promise<Uint8Array> {
  return new Uint8Array(await res.arrayBuffer());
}

async function expectStatus(res: Response, ...statuses: number[]): Promise<Uint8Array> {
  const body = await drain(res);
  if (!statuses.includes(res.status)) throw new Error(`HTTP ${res.status} (expected ${statuses.join("/")}): ${new TextDecoder().decode(body).slice(0, 200)}`);
  return body;
}

async function closedLoop(total: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        await fn(i);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

/** Incompressible bodies: the reference gzips answers by default, and real payloads are not all one letter. */
function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Creates an octet-stream stream and appends `count` bodies of `bytes` bytes; returns MB/s and req/s. */
async function appendThroughput(t: Target, path: string, bytes: number, count: number): Promise<{ mbps: number; rps: number }> {
  const url = `${t.base}/v1/stream/${path}`;
  await expectStatus(await t.fetch(url, { method: "PUT", headers: { "content-type": "application/octet-stream" } }), 201);
  const body = randomBytes(bytes);
  // Warm-up (connection, isolate, object), not counted.
  for (let i = 0; i < 20; i++) await expectStatus(await t.fetch(`${t.base}/v1/stream/${path}-warm`, { method: "PUT", headers: { "content-type": "application/octet-stream" } }), 200, 201);
  const secs = await closedLoop(count, APPEND_CONCURRENCY, async () => {
    await expectStatus(await t.fetch(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body }), 204);
  });
  return { mbps: (count * bytes) / 1e6 / secs, rps: count / secs };
}

/** Reads a whole stream from -1, following Stream-Next-Offset; returns the bytes read. */
async function readAll(t: Target, path: string): Promise<number> {
  const url = `${t.base}/v1/stream/${path}`;
  let offset = "-1";
  let total = 0;
  for (;;) {
    const res = await t.fetch(`${url}?offset=${encodeURIComponent(offset)}`);
    const body = await expectStatus(res, 200);
    total += body.length;
    const next = res.headers.get("stream-next-offset");
    if (next === null) throw new Error("read answer without Stream-Next-Offset");
    if (res.headers.get("stream-up-to-date") === "true" && (body.length === 0 || next === offset)) return total;
    if (res.headers.get("stream-up-to-date") === "true") return total;
    offset = next;
  }
}

async function readThroughput(t: Target, path: string, expectedBytes: number, readers: number): Promise<number> {
  const t0 = performance.now();
  const got = await Promise.all(Array.from({ length: readers }, () => readAll(t, path)));
  const secs = (performance.now() - t0) / 1000;
  for (const g of got) if (g !== expectedBytes) throw new Error(`${t.name}: read ${g} bytes of ${path}, expected ${expectedBytes}`);
  return (readers * expectedBytes) / 1e6 / secs;
}

/** Long-poll at the tail, then one append: ms from sending the append to the long-poll's answer. */
async function wakeLatency(t: Target, path: string, rounds: number): Promise<number[]> {
  const url = `${t.base}/v1/stream/${path}`;
  const put = await t.fetch(url, { method: "PUT", headers: { "content-type": "text/plain" } });
  await expectStatus(put, 201);
  let offset = put.headers.get("stream-next-offset") as string;
  const lat: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const waiting = t.fetch(`${url}?offset=${encodeURIComponent(offset)}&live=long-poll`);
    await new Promise((r) => setTimeout(r, 5)); // let the long-poll reach the server
    const ts = performance.now();
    const append = t.fetch(url, { method: "POST", headers: { "content-type": "text/plain" }, body: String(i) });
    const res = await waiting;
    const body = await expectStatus(res, 200);
    lat.push(performance.now() - ts);
    await expectStatus(await append, 204);
    if (new TextDecoder().decode(body) !== String(i)) throw new Error(`${t.name}: long-poll round ${i} woke with ${JSON.stringify(new TextDecoder().decode(body))}`);
    offset = res.headers.get("stream-next-offset") as string;
  }
  return lat.sort((a, b) => a - b);
}

async function measure(t: Target, quick: boolean): Promise<Results> {
  const id = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const n1k = quick ? 1_000 : 5_000;
  const n16k = quick ? 300 : 1_500;
  const a1 = await appendThroughput(t, `bench-1k-${id}`, 1024, n1k);
  const a16 = await appendThroughput(t, `bench-16k-${id}`, 16 * 1024, n16k);
  const read1k = await readThroughput(t, `bench-1k-${id}`, n1k * 1024, 1);
  const read16k = await readThroughput(t, `bench-16k-${id}`, n16k * 16 * 1024, 1);
  const readParallel = await readThroughput(t, `bench-16k-${id}`, n16k * 16 * 1024, PARALLEL_READERS);
  const lat = await wakeLatency(t, `bench-wake-${id}`, quick ? 50 : 200);
  return {
    append1k: a1.mbps,
    appendReqs1k: a1.rps,
    append16k: a16.mbps,
    read1k,
    read16k,
    readParallel,
    wakeP50: pct(lat, 50),
    wakeP99: pct(lat, 99),
  };
}

function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}

/**
 * Prints one table: Edgelog, reference, Edgelog/reference. For latencies the ratio is
 * reference/Edgelog, so above 1 always means Edgelog is better.
 */
function print(e: Results, r: Results, quick: boolean, rounds: number): void {
  const rows: [string, number, number, string, "higher" | "lower", number | null][] = [
    ["append, 1 KiB bodies", e.append1k, r.append1k, "MB/s", "higher", 0.8],
    ["append, 1 KiB bodies", e.appendReqs1k, r.appendReqs1k, "appends/s", "higher", 0.8],
    ["append, 16 KiB bodies", e.append16k, r.append16k, "MB/s", "higher", 0.8],
    ["catch-up read, 1 KiB appends, one reader", e.read1k, r.read1k, "MB/s", "higher", 1.0],
    ["catch-up read, 16 KiB appends, one reader", e.read16k, r.read16k, "MB/s", "higher", 1.0],
    [`catch-up read, 16 KiB appends, ${PARALLEL_READERS} readers`, e.readParallel, r.readParallel, "MB/s", "higher", 1.0],
    ["long-poll wake latency p50", e.wakeP50, r.wakeP50, "ms", "lower", null],
    ["long-poll wake latency p99", e.wakeP99, r.wakeP99, "ms", "lower", null],
  ];
  console.log(`\n## Durable Streams: Edgelog vs @durable-streams/server (file-backed), ${quick ? "quick" : "full"} run, median of ${rounds} round(s)\n`);
  console.log(
    `Appends: one stream, ${APPEND_CONCURRENCY} in flight, random bodies. Edgelog through Miniflare dispatchFetch (workerd); reference over HTTP on 127.0.0.1, the better of its runs with and without gzip.\n`,
  );
  console.log("| measurement | Edgelog | reference | Edgelog/reference | target |");
  console.log("|---|---|---|---|---|");
  for (const [name, ev, rv, unit, better, target] of rows) {
    const ratio = better === "higher" ? ev / rv : rv / ev;
    const t = target === null ? "-" : `>= ${target}x ${ratio >= target ? "(met)" : "(not met)"}`;
    console.log(`| ${name} | ${fmt(ev)} ${unit} | ${fmt(rv)} ${unit} | ${ratio.toFixed(2)}x${better === "lower" ? " (ref/Edgelog)" : ""} | ${t} |`);
  }
}

/** Per measurement, the better of two figures (higher, or lower for latencies). */
function bestOf(a: Results, b: Results): Results {
  return combine([a, b], (xs, lowerIsBetter) => (lowerIsBetter ? Math.min(...xs) : Math.max(...xs)));
}

/** Per measurement, the median of the rounds (robust to a round disturbed by other load). */
function medianOf(rounds: Results[]): Results {
  return combine(rounds, (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  });
}

function combine(rs: Results[], f: (xs: number[], lowerIsBetter: boolean) => number): Results {
  const pick = (k: keyof Results, lower = false) => f(rs.map((r) => r[k]), lower);
  return {
    append1k: pick("append1k"),
    appendReqs1k: pick("appendReqs1k"),
    append16k: pick("append16k"),
    read1k: pick("read1k"),
    read16k: pick("read16k"),
    readParallel: pick("readParallel"),
    wakeP50: pick("wakeP50", true),
    wakeP99: pick("wakeP99", true),
  };
}

/** A reference server, file-backed (dataDir), otherwise with its defaults unless `compression` is off. */
async function startReference(compression: boolean): Promise<{ target: Target; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "ds-reference-"));
  // Defaults: 30 s long-poll; gzip for answers of 1 KiB or more when the client accepts it (Node's fetch does).
  const server = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir, compression });
  const url = await server.start();
  return {
    target: { name: `reference${compression ? "" : " (no gzip)"}`, fetch, base: url },
    stop: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs the measurements and prints the table. The three servers (Edgelog; the reference with
 * its default gzip and without: the bodies are random, so gzip only costs it CPU) are measured
 * one after another, in rounds (3, or 1 with `quick`), so that load from elsewhere on the
 * machine falls on all of them alike. Per round the reference counts with its better
 * configuration; each figure is the median over the rounds.
 * @param opts.edgelog an already running Edgelog to measure instead of starting bench/engine.ts
 */
export async function run(opts: { quick: boolean; edgelog?: Target }): Promise<void> {
  const rounds = opts.quick ? 1 : 3;
  const refGzip = await startReference(true);
  const refPlain = await startReference(false);
  const engine = opts.edgelog === undefined ? await startEngine() : null;
  const edgelog = opts.edgelog ?? { name: "Edgelog", fetch: (engine as NonNullable<typeof engine>).fetch, base: EDGELOG_BASE };
  try {
    const e: Results[] = [];
    const r: Results[] = [];
    for (let i = 0; i < rounds; i++) {
      r.push(bestOf(await measure(refGzip.target, opts.quick), await measure(refPlain.target, opts.quick)));
      e.push(await measure(edgelog, opts.quick));
    }
    print(medianOf(e), medianOf(r), opts.quick, rounds);
  } finally {
    await engine?.dispose();
    await refGzip.stop();
    await refPlain.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  await run({ quick: process.argv.includes("--quick") });
}
