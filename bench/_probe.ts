import { readFileSync, readdirSync } from "node:fs";
import { startEngine } from "./engine.ts";
import { EdgelogClient } from "../sdk/src/index.ts";
import { encodeBatch } from "../src/codec/index.ts";

const BASE = "http://edgelog.bench";
function workerdPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8");
      const stat = readFileSync(`/proc/${d}/stat`, "utf8").split(" ");
      if (cmd.includes("workerd") && Number(stat[3]) === process.pid) out.push(Number(d));
    } catch {}
  }
  return out;
}
function wcpu(pids: number[]): number {
  let t = 0;
  for (const p of pids) for (const th of readdirSync(`/proc/${p}/task`)) { try { t += Number(readFileSync(`/proc/${p}/task/${th}/schedstat`, "utf8").split(" ")[0]); } catch {} }
  return t / 1e6; // ms
}
async function closedLoop(total: number, conc: number, fn: (i: number) => Promise<void>) {
  let next = 0; const t0 = performance.now();
  await Promise.all(Array.from({ length: conc }, async () => { while (next < total) { const i = next++; await fn(i); } }));
  return (performance.now() - t0) / 1000;
}
async function ok(res: Response) { if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`); await res.arrayBuffer(); }

const engine = await startEngine();
const f = engine.fetch;
const pids = workerdPids();
const client = new EdgelogClient({ baseUrl: BASE, fetch: f });
await client.createTopic({ name: "t1", partitions: 6 });
await client.createTopic({ name: "t2", partitions: 6 });
await client.createTopic({ name: "t3", partitions: 6 });
for (let i = 0; i < 50; i++) await ok(await f(`${BASE}/bench/noop`));
const only = process.argv[2]?.split(",");
const results = new Map<string, { rate: number[]; w: number[]; nd: number[] }>();
async function phase(name: string, n: number, conc: number, fn: (i: number) => Promise<void>, bytesPer = 0) {
  if (only && !only.includes(name)) return;
  await closedLoop(Math.min(50, n), conc, fn);
  const c0 = wcpu(pids); const n0 = process.cpuUsage();
  const secs = await closedLoop(n, conc, fn);
  const c1 = wcpu(pids); const n1 = process.cpuUsage(n0);
  const e = results.get(name) ?? { rate: [], w: [], nd: [] }; results.set(name, e);
  e.rate.push(n / secs); e.w.push((c1 - c0) / n); e.nd.push((n1.user + n1.system) / 1000 / n);
  if (process.env.QUIET) return;
  console.log(`${name.padEnd(20)} ${(n / secs).toFixed(0).padStart(6)} req/s ${bytesPer ? ((n * bytesPer) / 1e6 / secs).toFixed(1) + " MB/s" : ""}  workerd ${((c1 - c0) / n).toFixed(2)} ms/req  node ${((n1.user + n1.system) / 1000 / n).toFixed(2)} ms/req  wall ${secs.toFixed(2)}s`);
}
const N = Number(process.env.N ?? 2000);
const tiny = new Uint8Array(100).fill(97);
const big = new Uint8Array(256 * 1024).fill(97);
const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
const tinyBatch = encodeBatch({}, [{ key: null, value: tiny, headers: [], timestamp: Date.now() }]);
const recs = Array.from({ length: 255 }, (_, j) => ({ key: new TextEncoder().encode(`k${j}`), value: new Uint8Array(1024).fill(97), headers: [], timestamp: Date.now() }));
const seq = [0, 0, 0, 0, 0, 0];
const { producerId } = await client.initProducerId();
for (let round = 0; round < Number(process.env.ROUNDS ?? 1); round++)
for (const ph of (process.env.PHASES ?? "noop,raw-tiny,json-single,bin-single,raw-big,bin-big,bin-big-idem").split(",")) {
  if (ph === "noop") await phase(ph, N, 8, async () => ok(await f(`${BASE}/bench/noop`)));
  if (ph === "raw-tiny") await phase(ph, N, 8, async (i) => ok(await f(`${BASE}/bench/raw-insert/q${i % 6}`, { method: "POST", body: tiny })));
  if (ph === "json-single") await phase(ph, N, 8, async (i) => ok(await f(`${BASE}/v1/topics/t1/partitions/${i % 6}/records`, { method: "POST", headers: { "content-type": "application/json" }, body })));
  if (ph === "bin-single") await phase(ph, N, 8, async (i) => ok(await f(`${BASE}/v1/topics/t2/partitions/${i % 6}/records`, { method: "POST", headers: { "content-type": "application/vnd.edgelog.batch" }, body: tinyBatch })));
  if (ph === "raw-big") await phase(ph, N / 5, 6, async (i) => ok(await f(`${BASE}/bench/raw-insert/p${i % 6}`, { method: "POST", body: big })), big.length);
  if (ph === "bin-big") { const b = encodeBatch({}, recs); await phase(ph, N / 5, 6, async (i) => ok(await f(`${BASE}/v1/topics/t3/partitions/${i % 6}/records`, { method: "POST", headers: { "content-type": "application/vnd.edgelog.batch" }, body: b })), b.length); }
  if (ph === "bin-big-idem") {
    // one worker per partition, sequential sequences (like the SDK producer)
    const n = N / 5; let sent = 0; const t0 = performance.now(); const c0 = wcpu(pids); const n0 = process.cpuUsage();
    await Promise.all([0, 1, 2, 3, 4, 5].map(async (p) => { while (sent < n) { sent++; const b = encodeBatch({ producerId, producerEpoch: 0, baseSequence: seq[p]! }, recs); seq[p]! += recs.length; await ok(await f(`${BASE}/v1/topics/t1/partitions/${p}/records`, { method: "POST", headers: { "content-type": "application/vnd.edgelog.batch" }, body: b })); } }));
    const secs = (performance.now() - t0) / 1000; const c1 = wcpu(pids); const n1 = process.cpuUsage(n0);
    console.log(`${ph.padEnd(20)} ${(n / secs).toFixed(0).padStart(6)} req/s ${((n * 262144) / 1e6 / secs).toFixed(1)} MB/s  workerd ${((c1 - c0) / n).toFixed(2)} ms/req  node ${((n1.user + n1.system) / 1000 / n).toFixed(2)} ms/req  (node includes encode)`);
  }
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const noop = results.get("noop");
for (const [k, e] of results) console.log(`MEDIAN ${k.padEnd(14)} ${med(e.rate).toFixed(0).padStart(6)} req/s  workerd ${med(e.w).toFixed(2)} ms  node ${med(e.nd).toFixed(2)} ms  ${noop ? "ratio/noop " + (med(e.rate) / med(noop.rate)).toFixed(2) : ""}  rounds ${e.rate.map((x) => x.toFixed(0)).join(",")}`);
await engine.dispose();
