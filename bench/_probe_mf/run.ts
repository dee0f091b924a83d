import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { readFileSync, readdirSync } from "node:fs";
function workerdPids(): number[] { const out: number[] = []; for (const d of readdirSync("/proc")) { if (!/^\d+$/.test(d)) continue; try { const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8"); const stat = readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" "); if (cmd.includes("workerd") && Number(stat[1]) === process.pid) out.push(Number(d)); } catch {} } return out; }
function wcpu(pids: number[]): number { let t = 0; for (const p of pids) for (const th of readdirSync(`/proc/${p}/task`)) { try { t += Number(readFileSync(`/proc/${p}/task/${th}/schedstat`, "utf8").split(" ")[0]); } catch {} } return t / 1e6; }
const script = `
import { DurableObject } from "cloudflare:workers";
let blob = null;
function make(n) { if (!blob || blob.length !== n) { blob = new Uint8Array(n); for (let i = 0; i < n; i += 4096) blob[i] = i & 255; } return blob; }
export class D extends DurableObject {
  async rpcBytes(n) { const src = make(n); const out = new Uint8Array(n); out.set(src); return { body: out }; }
  async rpcStream(n, chunk) { const src = make(n); let pos = 0;
    return new ReadableStream({ type: "bytes", pull(c) { if (pos >= n) { c.close(); return; } const e = Math.min(n, pos + chunk); c.enqueue(src.slice(pos, e)); pos = e; } }); }
  async rpcChunks(n, chunk) { const src = make(n); const out = []; for (let p = 0; p < n; p += chunk) out.push(src.slice(p, Math.min(n, p + chunk))); return out; }
  async fetch(req) { const n = Number(new URL(req.url).searchParams.get("n")); const src = make(n); const out = new Uint8Array(n); out.set(src); return new Response(out); }
}
export default {
  async fetch(req, env) {
    const u = new URL(req.url); const n = Number(u.searchParams.get("n")); const mode = u.pathname.slice(1);
    const stub = env.D.get(env.D.idFromName("x"));
    if (mode === "local") { const src = make(n); const out = new Uint8Array(n); out.set(src); return new Response(out); }
    if (mode === "rpc") { const r = await stub.rpcBytes(n); return new Response(r.body); }
    if (mode === "stream") { const s = await stub.rpcStream(n, Number(u.searchParams.get("c") ?? 1048576)); return new Response(s); }
    if (mode === "fixed") { const s = await stub.rpcStream(n, Number(u.searchParams.get("c") ?? 1048576)); return new Response(s.pipeThrough(new FixedLengthStream(n))); }
    if (mode === "chunks") { const parts = await stub.rpcChunks(n, Number(u.searchParams.get("c") ?? 1048576)); return new Response(new Blob(parts)); }
    if (mode === "dofetch") { return stub.fetch(req); }
    return new Response("?", { status: 404 });
  }
};`;
const mf = new Miniflare(convertV4MiniflareOptions({ name: "p", modules: true, script, compatibilityDate: "2026-10-01", compatibilityFlags: ["nodejs_compat"], durableObjects: { D: { className: "D", useSQLite: true } } } as any));
const url = (await mf.ready).toString(); const pids = workerdPids();
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const modes = (process.env.MODES ?? "local,rpc,stream,fixed,chunks,dofetch").split(",");
for (const n of [5 << 20, 16 << 20]) {
  for (let round = 0; round < 2; round++) for (const m of modes) {
    const tt: number[] = [], wall: number[] = [], wc: number[] = [], nc: number[] = [];
    for (let i = 0; i < 12; i++) {
      const c0 = wcpu(pids); const n0 = process.cpuUsage(); const t0 = performance.now(); const r = await fetch(`${url}${m}?n=${n}&c=${process.env.CHUNK ?? 1048576}`); const t1 = performance.now(); const b = await r.arrayBuffer(); const t2 = performance.now();
      if (b.byteLength !== n) throw new Error(`${m} ${b.byteLength}`);
      tt.push(t1 - t0); wall.push(t2 - t0); wc.push(wcpu(pids) - c0); const n1 = process.cpuUsage(n0); nc.push((n1.user + n1.system) / 1000);
    }
    console.log(`${(n >> 20)} MiB ${m.padEnd(8)} ttfb ${med(tt).toFixed(1).padStart(5)} ms  total ${med(wall).toFixed(1).padStart(5)} ms  ${(n / 1e3 / med(wall)).toFixed(0)} MB/s  workerd ${med(wc).toFixed(1)} ms  node ${med(nc).toFixed(1)} ms`);
  }
}
await mf.dispose();
