// Temporary probe (streams perf engineer; delete before handing back).
import { readFileSync, readdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os"; import { join } from "node:path";
import { DurableStreamTestServer } from "@durable-streams/server";
import { startEngine } from "./engine.ts";
function workerdPids(): number[] { const out: number[] = []; for (const d of readdirSync("/proc")) { if (!/^\d+$/.test(d)) continue; try { const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8"); const stat = readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" "); if (cmd.includes("workerd") && Number(stat[1]) === process.pid) out.push(Number(d)); } catch {} } return out; }
function wcpu(pids: number[]): number { let t = 0; for (const p of pids) for (const th of readdirSync(`/proc/${p}/task`)) { try { t += Number(readFileSync(`/proc/${p}/task/${th}/schedstat`, "utf8").split(" ")[0]); } catch {} } return t / 1e6; }
const withRef = process.env.REF === "1";
const engine = await startEngine(); const pids = workerdPids();
const mfUrl = (await engine.mf.ready).toString().replace(/\/$/, "");
type T = { name: string; base: string };
const targets: T[] = [{ name: "edge", base: mfUrl }];
let ref: DurableStreamTestServer | null = null;
if (withRef) { ref = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir: mkdtempSync(join(tmpdir(), "ds-ref-")), compression: false }); targets.unshift({ name: "ref", base: await ref.start() }); }
function rnd(n: number) { const o = new Uint8Array(n); for (let i = 0; i < n; i += 65536) crypto.getRandomValues(o.subarray(i, Math.min(n, i + 65536))); return o; }
async function setup(t: T, path: string, size: number, count: number, ct = "application/octet-stream") {
  const url = `${t.base}/v1/stream/${path}`;
  const r = await fetch(url, { method: "PUT", headers: { "content-type": ct } }); await r.arrayBuffer();
  const body = ct === "application/json" ? JSON.stringify({ x: "y".repeat(size - 10) }) : rnd(size); let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => { while (next < count) { next++; const r = await fetch(url, { method: "POST", headers: { "content-type": ct }, body }); await r.arrayBuffer(); if (r.status >= 300) throw new Error(String(r.status)); } }));
}
async function readAll(t: T, path: string): Promise<[number, number]> {
  let offset = "-1"; let total = 0; let n = 0;
  for (;;) { const res = await fetch(`${t.base}/v1/stream/${path}?offset=${encodeURIComponent(offset)}`); total += (await res.arrayBuffer()).byteLength; n++; offset = res.headers.get("stream-next-offset")!; if (res.headers.get("stream-up-to-date") === "true") return [total, n]; }
}
const streams: [string, number, number, string?][] = [["r1", 1024, 5000], ["r16", 16384, 1500]];
if (process.env.JSON) streams.push(["rj", 1024, 5000, "application/json"]);
for (const t of targets) for (const [p, s, c, ct] of streams) await setup(t, p, s, c, ct);
const REPS = Number(process.env.REPS ?? 15);
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
for (let round = 0; round < Number(process.env.ROUNDS ?? 2); round++)
for (const t of targets) for (const [p] of streams) {
  const wall: number[] = [], w: number[] = [], nd: number[] = []; let bytes = 0, reqs = 0;
  for (let i = 0; i < REPS; i++) { const c0 = wcpu(pids); const n0 = process.cpuUsage(); const t0 = performance.now(); [bytes, reqs] = await readAll(t, p); wall.push(performance.now() - t0); const n1 = process.cpuUsage(n0); w.push(wcpu(pids) - c0); nd.push((n1.user + n1.system) / 1000); }
  console.log(`${t.name.padEnd(5)} ${p.padEnd(4)} ${(bytes / 1e3 / med(wall)).toFixed(0).padStart(4)} MB/s (median)  wall ${med(wall).toFixed(1)} ms  workerd ${med(w).toFixed(1)} ms  node ${med(nd).toFixed(1)} ms  reqs ${reqs}`);
}
await engine.dispose(); await ref?.stop();
