import { mkdtempSync } from "node:fs"; import { tmpdir } from "node:os"; import { join } from "node:path";
import { DurableStreamTestServer } from "@durable-streams/server";
import { startEngine } from "./engine.ts";
const engine = await startEngine();
const mfUrl = (await engine.mf.ready).toString().replace(/\/$/, "");
const ref = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir: mkdtempSync(join(tmpdir(), "ds-ref-")), compression: false });
const refUrl = await ref.start();
type T = { name: string; f: typeof fetch; base: string };
const targets: T[] = [ { name: "ref", f: fetch, base: refUrl }, { name: "edge-dispatch", f: engine.fetch, base: "http://edgelog.bench" }, { name: "edge-http", f: fetch, base: mfUrl } ];
function rnd(n: number) { const o = new Uint8Array(n); for (let i = 0; i < n; i += 65536) crypto.getRandomValues(o.subarray(i, Math.min(n, i + 65536))); return o; }
async function setup(t: T, path: string, size: number, count: number) {
  const url = `${t.base}/v1/stream/${path}`;
  const r = await t.f(url, { method: "PUT", headers: { "content-type": "application/octet-stream" } }); await r.arrayBuffer();
  const body = rnd(size); let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => { while (next < count) { next++; const r = await t.f(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body }); await r.arrayBuffer(); } }));
}
async function readAll(t: T, path: string) {
  let offset = "-1"; let total = 0;
  for (;;) { const res = await t.f(`${t.base}/v1/stream/${path}?offset=${encodeURIComponent(offset)}`); total += (await res.arrayBuffer()).byteLength; offset = res.headers.get("stream-next-offset")!; if (res.headers.get("stream-up-to-date") === "true") return total; }
}
for (let round = 0; round < 3; round++) for (const t of targets) {
  const id = `${round}-${t.name}`;
  await setup(t, `a-${id}`, 1024, 5000); await setup(t, `b-${id}`, 16384, 1500);
  const out: string[] = [];
  for (const [p, bytes] of [[`a-${id}`, 5000 * 1024], [`b-${id}`, 1500 * 16384]] as const) {
    const ms: number[] = [];
    for (let i = 0; i < 6; i++) { const t0 = performance.now(); await readAll(t, p); ms.push(performance.now() - t0); }
    out.push(`${p[0]}: ${ms.map((m) => ((bytes / 1e3) / m).toFixed(0)).join(" ")}`);
  }
  console.log(t.name.padEnd(14), out.join("  |  "), "MB/s per read");
}
await engine.dispose(); await ref.stop();
