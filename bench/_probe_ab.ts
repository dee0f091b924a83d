// Temporary A/B probe (streams perf engineer; delete before handing back): two engines from one bundle,
// engine B with extra bindings, plus the reference; interleaved catch-up reads, medians.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os"; import { join } from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { DurableStreamTestServer } from "@durable-streams/server";
const ROOT = join(import.meta.dirname, "..");
const outdir = mkdtempSync(join(tmpdir(), "ab-bundle-"));
execFileSync(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outdir], { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false" }, stdio: ["ignore", "ignore", "inherit"] });
const code = readFileSync(join(outdir, "index.js"), "utf8");
const durableObjects: Record<string, unknown> = {};
for (const [b, c] of [["PARTITION", "PartitionDO"], ["METADATA", "MetadataDO"], ["BENCH", "BenchDO"], ["GROUP_COORDINATOR", "GroupCoordinatorDO"], ["GROUP_DIRECTORY", "GroupDirectoryDO"]]) durableObjects[b] = { className: c, useSQLite: true };
function engine(bindings: Record<string, string>) {
  return new Miniflare(convertV4MiniflareOptions({ name: "edgelog", modules: [{ type: "ESModule", path: join(outdir, "index.js"), contents: code }], modulesRoot: outdir, compatibilityDate: "2026-10-01", compatibilityFlags: ["nodejs_compat"], durableObjects, bindings: { EDGELOG_BENCH_ROUTES: "1", ...bindings }, durableObjectsPersist: mkdtempSync(join(tmpdir(), "ab-state-")) } as never));
}
const A = engine(JSON.parse(process.env.A ?? "{}")); const B = engine(JSON.parse(process.env.B ?? '{"PROTO_STREAM":"1"}'));
type T = { name: string; base: string };
const targets: T[] = [{ name: "A", base: (await A.ready).toString().replace(/\/$/, "") }, { name: "B", base: (await B.ready).toString().replace(/\/$/, "") }];
let ref: DurableStreamTestServer | null = null;
if (process.env.REF === "1") { ref = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir: mkdtempSync(join(tmpdir(), "ds-ref-")), compression: false }); targets.push({ name: "ref", base: await ref.start() }); }
function rnd(n: number) { const o = new Uint8Array(n); for (let i = 0; i < n; i += 65536) crypto.getRandomValues(o.subarray(i, Math.min(n, i + 65536))); return o; }
async function setup(t: T, path: string, size: number, count: number, ct: string) {
  const url = `${t.base}/v1/stream/${path}`;
  const r = await fetch(url, { method: "PUT", headers: { "content-type": ct } }); await r.arrayBuffer();
  const body = ct === "application/json" ? JSON.stringify({ x: "y".repeat(size - 10) }) : rnd(size); let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => { while (next < count) { next++; const r = await fetch(url, { method: "POST", headers: { "content-type": ct }, body }); await r.arrayBuffer(); if (r.status >= 300) throw new Error(String(r.status)); } }));
}
async function readAll(t: T, path: string): Promise<[number, number]> {
  let offset = "-1"; let total = 0; let n = 0;
  for (;;) { const res = await fetch(`${t.base}/v1/stream/${path}?offset=${encodeURIComponent(offset)}`); total += (await res.arrayBuffer()).byteLength; n++; offset = res.headers.get("stream-next-offset")!; if (res.headers.get("stream-up-to-date") === "true") return [total, n]; }
}
const streams: [string, number, number, string][] = [["r1", 1024, Number(process.env.N1 ?? 5000), "application/octet-stream"], ["r16", 16384, Number(process.env.N16 ?? 1500), "application/octet-stream"]];
if (process.env.JSON) streams.push(["rj", 1024, 5000, "application/json"]);
for (const t of targets) for (const [p, s, c, ct] of streams) await setup(t, p, s, c, ct);
const REPS = Number(process.env.REPS ?? 5);
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const all: Record<string, number[]> = {}; const reqsOf: Record<string, number> = {};
for (let round = 0; round < Number(process.env.ROUNDS ?? 6); round++)
  for (const [p] of streams) for (const t of targets) {
    for (let i = 0; i < REPS; i++) { const t0 = performance.now(); const [bytes, reqs] = await readAll(t, p); const ms = performance.now() - t0; (all[`${p} ${t.name}`] ??= []).push(bytes / 1e3 / ms); reqsOf[`${p} ${t.name}`] = reqs; }
  }
for (const [p] of streams) console.log(p.padEnd(4), targets.map((t) => `${t.name} ${med(all[`${p} ${t.name}`]!).toFixed(0)} MB/s (${reqsOf[`${p} ${t.name}`]} req)`).join("   "), `  B/A ${(med(all[`${p} B`]!) / med(all[`${p} A`]!)).toFixed(2)}`, ref ? ` A/ref ${(med(all[`${p} A`]!) / med(all[`${p} ref`]!)).toFixed(2)} B/ref ${(med(all[`${p} B`]!) / med(all[`${p} ref`]!)).toFixed(2)}` : "");
await A.dispose(); await B.dispose(); await ref?.stop();
