// Temporary probe (not committed): interleaved rounds of the core bench's four measurements,
// with workerd and node CPU per request, medians over rounds.
import { readFileSync, readdirSync } from "node:fs";
import { EdgelogClient, Producer } from "../sdk/src/index.ts";
import { startEngine } from "./engine.ts";
const BASE = "http://edgelog.bench";
function workerdPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try { const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8"); const stat = readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" "); if (cmd.includes("workerd") && Number(stat[1]) === process.pid) out.push(Number(d)); } catch {}
  }
  return out;
}
function wcpu(pids: number[]): number { let t = 0; for (const p of pids) for (const th of readdirSync(`/proc/${p}/task`)) { try { t += Number(readFileSync(`/proc/${p}/task/${th}/schedstat`, "utf8").split(" ")[0]); } catch {} } return t / 1e6; }
async function closedLoop(total: number, conc: number, fn: (i: number) => Promise<void>) { let next = 0; await Promise.all(Array.from({ length: conc }, async () => { while (next < total) { const i = next++; await fn(i); } })); }
async function ok(res: Response) { if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`); await res.arrayBuffer(); }
const engine = await startEngine();
let inflight = 0; let last = performance.now(); let area = 0; let idle = 0;
const tick = () => { const now = performance.now(); area += inflight * (now - last); if (inflight === 0) idle += now - last; last = now; };
const f = (async (input: RequestInfo | URL, init?: RequestInit) => { tick(); inflight++; try { return await engine.fetch(input, init); } finally { tick(); inflight--; } }) as typeof fetch; const pids = workerdPids();
if (pids.length === 0) throw new Error("no workerd");
const client = new EdgelogClient({ baseUrl: BASE, fetch: f });
const partitions = 6; const BATCH = 256 * 1024; const value = new Uint8Array(1024).fill(97);
await client.createTopic({ name: "bb", partitions }); await client.createTopic({ name: "bs", partitions });
for (let i = 0; i < 20; i++) await ok(await f(`${BASE}/bench/noop`));
const R = new Map<string, { rate: number[]; w: number[]; n: number[] }>();
async function measure(name: string, units: number, fn: () => Promise<void>) {
  const w0 = wcpu(pids); const n0 = process.cpuUsage(); const t0 = performance.now();
  tick(); area = 0; idle = 0;
  await fn();
  tick(); const el = performance.now() - t0; if (process.env.INFLIGHT) console.log(`${name}: mean in flight ${(area / el).toFixed(2)}, idle ${(100 * idle / el).toFixed(1)}%`);
  const secs = (performance.now() - t0) / 1000; const n1 = process.cpuUsage(n0); const w1 = wcpu(pids);
  const e = R.get(name) ?? { rate: [], w: [], n: [] }; R.set(name, e);
  e.rate.push(units / secs); e.w.push((w1 - w0) / units); e.n.push((n1.user + n1.system) / 1000 / units);
}
const RECORDS = Number(process.env.RECORDS ?? 20000); const SINGLES = Number(process.env.SINGLES ?? 2000);
const rawBody = new Uint8Array(BATCH).fill(97); const rawN = Math.ceil((RECORDS * 1024) / BATCH);
const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
const phases = (process.env.PHASES ?? "raw,producer,noop,rawtiny,single").split(",");
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++) {
  if (phases.includes("raw")) await measure("raw-insert 256KiB (per batch)", rawN, () => closedLoop(rawN, partitions, async (i) => ok(await f(`${BASE}/bench/raw-insert/p${i % partitions}`, { method: "POST", body: rawBody }))));
  if (phases.includes("producer")) await measure("SDK producer (per 256KiB)", (RECORDS * 1024) / BATCH, async () => {
    const producer = new Producer(client, { lingerMs: 5, maxBatchBytes: BATCH });
    for (let sent = 0; sent < RECORDS; sent += 5000) await producer.send({ topic: "bb", messages: Array.from({ length: Math.min(5000, RECORDS - sent) }, (_, j) => ({ key: `k${sent + j}`, value })) });
    await producer.close();
  });
  if (phases.includes("noop")) await measure("noop", SINGLES, () => closedLoop(SINGLES, 8, async () => ok(await f(`${BASE}/bench/noop`))));
  if (phases.includes("rawtiny")) await measure("raw-insert of the JSON body", SINGLES, () => closedLoop(SINGLES, 8, async (i) => ok(await f(`${BASE}/bench/raw-insert/s${i % partitions}`, { method: "POST", body }))));
  if (phases.includes("single")) await measure("single JSON produce", SINGLES, () => closedLoop(SINGLES, 8, async (i) => ok(await f(`${BASE}/v1/topics/bs/partitions/${i % partitions}/records`, { method: "POST", headers: { "content-type": "application/json" }, body }))));
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (const [k, e] of R) console.log(`${k.padEnd(30)} rate ${med(e.rate).toFixed(1).padStart(7)}/s  workerd ${med(e.w).toFixed(2)} ms  node ${med(e.n).toFixed(2)} ms  rounds ${e.rate.map((x) => x.toFixed(0)).join(",")}`);
const g = (k: string) => R.get(k);
const raw = g("raw-insert 256KiB (per batch)"), prod = g("SDK producer (per 256KiB)"), noop = g("noop"), single = g("single JSON produce");
if (raw && prod) console.log(`batched ratio (median of per-round ratios) ${med(prod.rate.map((x, i) => x / raw.rate[i]!)).toFixed(2)}`);
if (noop && single) console.log(`single ratio (median of per-round ratios) ${med(single.rate.map((x, i) => x / noop.rate[i]!)).toFixed(2)}`);
await engine.dispose();
