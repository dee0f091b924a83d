import { mkdtempSync } from "node:fs"; import { tmpdir } from "node:os"; import { join } from "node:path";
import { DurableStreamTestServer } from "@durable-streams/server";
import { startEngine } from "./engine.ts";
const engine = await startEngine();
const mfUrl = (await engine.mf.ready).toString().replace(/\/$/, "");
const ref = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir: mkdtempSync(join(tmpdir(), "ds-ref-")), compression: false });
const targets = [{ name: "ref", base: await ref.start() }, { name: "edge", base: mfUrl }];
const body = new Uint8Array(16384).map(() => Math.random() * 256);
for (const t of targets) {
  const url = `${t.base}/v1/stream/c`;
  await (await fetch(url, { method: "PUT", headers: { "content-type": "application/octet-stream" } })).arrayBuffer();
  for (let i = 0; i < 600; i++) await (await fetch(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body })).arrayBuffer();
  for (let k = 0; k < 4; k++) {
    const t0 = performance.now();
    const res = await fetch(`${url}?offset=-1`);
    const t1 = performance.now();
    const sizes: number[] = []; const r = res.body!.getReader();
    for (;;) { const { done, value } = await r.read(); if (done) break; sizes.push(value.length); }
    const t2 = performance.now();
    const hist = new Map<number, number>(); for (const s of sizes) { const b = s >= 65536 ? 65536 : s >= 16384 ? 16384 : s >= 4096 ? 4096 : 1; hist.set(b, (hist.get(b) ?? 0) + 1); }
    console.log(t.name, "ttfb", (t1 - t0).toFixed(1), "body", (t2 - t1).toFixed(1), "chunks", sizes.length, [...hist].sort((a, b) => b[0] - a[0]).map(([b, n]) => `>=${b}:${n}`).join(" "));
  }
}
await engine.dispose(); await ref.stop();
