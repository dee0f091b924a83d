import { startEngine } from "./engine.ts";
import { closedLoop } from "./util.ts";
const BASE = "http://edgelog.bench";
for (const q of ["off", "1"]) {
  const e = await startEngine({ EDGELOG_METADATA_QUORUM: q });
  const post = async (path: string, body: unknown) => {
    const r = await e.fetch(`${BASE}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const t = await r.text();
    if (r.status >= 300) throw new Error(`${r.status} ${t}`);
  };
  await e.fetch(`${BASE}/v1/topics`).then((r) => r.text());
  for (let i = 0; i < 5; i++) await post("/v1/acls", { principal: `w${i}`, resourceType: "topic", resourceName: "x", operation: "read" });
  for (const c of [1, 8]) {
    const n = 40;
    const s = await closedLoop(n, c, async (i) => post("/v1/acls", { principal: `p${c}-${i}`, resourceType: "topic", resourceName: "x", operation: "read" }));
    console.log(`${q} acl create c=${c}: ${(n / s).toFixed(1)} ops/s`);
    const s2 = await closedLoop(n, c, async (i) => post("/v1/topics", { name: `t${c}-${i}`, partitions: 1 }));
    console.log(`${q} topic create c=${c}: ${(n / s2).toFixed(1)} ops/s`);
  }
  await e.dispose();
}
