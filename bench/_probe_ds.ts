// Temporary probe (streams perf engineer; delete before handing back).
import { readFileSync, readdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DurableStreamTestServer } from "@durable-streams/server";
import { startEngine } from "./engine.ts";

function workerdPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try { const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8"); const stat = readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" "); if (cmd.includes("workerd") && Number(stat[1]) === process.pid) out.push(Number(d)); } catch {}
  }
  return out;
}
function wcpu(pids: number[]): number { let t = 0; for (const p of pids) for (const th of readdirSync(`/proc/${p}/task`)) { try { t += Number(readFileSync(`/proc/${p}/task/${th}/schedstat`, "utf8").split(" ")[0]); } catch {} } return t / 1e6; }

const engine = await startEngine();
const pids = workerdPids();
const mfUrl = (await engine.mf.ready).toString().replace(/\/$/, "");
const dataDir = mkdtempSync(join(tmpdir(), "ds-ref-"));
const ref = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir, compression: false });
const refUrl = await ref.start();
type T = { name: string; f: typeof fetch; base: string };
const targets: T[] = [
  { name: "ref", f: fetch, base: refUrl },
  { name: "edge-dispatch", f: engine.fetch, base: "http://edgelog.bench" },
  { name: "edge-http", f: fetch, base: mfUrl },
];
const only = process.env.ONLY?.split(",");
function rnd(n: number) { const o = new Uint8Array(n); for (let i = 0; i < n; i += 65536) crypto.getRandomValues(o.subarray(i, Math.min(n, i + 65536))); return o; }
async function setup(t: T, path: string, size: number, count: number) {
  const url = `${t.base}/v1/stream/${path}`;
  const r = await t.f(url, { method: "PUT", headers: { "content-type": "application/octet-stream" } }); await r.arrayBuffer();
  const body = rnd(size);
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => { while (next < count) { next++; const r = await t.f(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body }); await r.arrayBuffer(); if (r.status !== 204) throw new Error(String(r.status)); } }));
}
async function readAll(t: T, path: string): Promise<[number, number]> {
  let offset = "-1"; let total = 0; let reqs = 0;
  for (;;) {
    const res = await t.f(`${t.base}/v1/stream/${path}?offset=${encodeURIComponent(offset)}`);
    const b = new Uint8Array(await res.arrayBuffer()); reqs++;
    total += b.length;
    offset = res.headers.get("stream-next-offset")!;
    if (res.headers.get("stream-up-to-date") === "true") return [total, reqs];
  }
}
const id = Date.now().toString(36);
const N1 = Number(process.env.N1 ?? 5000), N16 = Number(process.env.N16 ?? 1500);
const sel = targets.filter((t) => !only || only.includes(t.name));
for (const t of sel) {
  if (t.name === "edge-http") continue; // shares edge-dispatch's streams
  await setup(t, `r1-${id}`, 1024, N1);
  await setup(t, `r16-${id}`, 16384, N16);
}
const REPS = Number(process.env.REPS ?? 5);
const res: Record<string, number[]> = {};
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++)
  for (const t of sel) for (const [p, bytes] of [[`r1-${id}`, N1 * 1024], [`r16-${id}`, N16 * 16384]] as const) {
    const c0 = wcpu(pids); const n0 = process.cpuUsage(); const t0 = performance.now(); let reqs = 0;
    for (let i = 0; i < REPS; i++) { const [got, r] = await readAll(t, p); reqs += r; if (got !== bytes) throw new Error(`${t.name} ${got} != ${bytes}`); }
    const ms = performance.now() - t0; const n1 = process.cpuUsage(n0); const c1 = wcpu(pids);
    const k = `${t.name} ${p.split("-")[0]}`;
    (res[k] ??= []).push((REPS * bytes) / 1e3 / ms);
    console.log(`${k.padEnd(20)} ${((REPS * bytes) / 1e3 / ms).toFixed(0).padStart(5)} MB/s  ${(ms / REPS).toFixed(1)} ms/read  reqs/read ${reqs / REPS}  workerd ${((c1 - c0) / REPS).toFixed(1)} ms  node ${((n1.user + n1.system) / 1000 / REPS).toFixed(1)} ms`);
  }
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (const [k, v] of Object.entries(res)) console.log(`MEDIAN ${k.padEnd(20)} ${med(v).toFixed(0)} MB/s`);
await engine.dispose(); await ref.stop();
