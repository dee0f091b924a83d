import { env, SELF, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { partitionObjectName } from "../../../src/partition/rpc.ts";

it("probe read costs", async () => {
  const path = `probe-${crypto.randomUUID()}`;
  const put = await SELF.fetch(`http://x/v1/stream/${path}`, { method: "PUT", headers: { "content-type": "application/octet-stream" } });
  const topic = put.headers.get("Edgelog-Topic")!;
  const t = (await (await SELF.fetch(`http://x/v1/topics/${topic}`)).json()) as { topicId: string };
  const body = new Uint8Array(1024).fill(1);
  for (let i = 0; i < 5000; i += 50) await Promise.all(Array.from({ length: 50 }, () => SELF.fetch(`http://x/v1/stream/${path}`, { method: "POST", headers: { "content-type": "application/octet-stream" }, body }).then((r) => r.arrayBuffer())));
  const stub = env.PARTITION.getByName(partitionObjectName(t.topicId, 0)) as any;
  const time = async (name: string, fn: () => Promise<unknown>) => { const t0 = Date.now(); for (let i = 0; i < 10; i++) await fn(); console.log(`${name}: ${((Date.now() - t0) / 10).toFixed(1)} ms`); };
  await time("dsRead RPC 5MB", () => stub.dsRead({ path, from: { kind: "beginning" }, maxBytes: 16 << 20, waitMs: 0 }));
  await time("fetchRecords RPC 5MB", () => stub.fetchRecords({ offset: 0, maxRecords: 10000, maxBytes: 16 << 20, maxWaitMs: 0, minBytes: 1 }));
  await time("dsHead RPC", () => stub.dsHead(path));
  await time("SELF GET 5MB", async () => { const r = await SELF.fetch(`http://x/v1/stream/${path}`); await r.arrayBuffer(); });
  await time("dsRead RPC 1 record", () => stub.dsRead({ path, from: { kind: "beginning" }, maxBytes: 1, waitMs: 0 }));
  await time("dsRead inside DO (no transfer)", () => runInDurableObject(stub, async (inst: any) => { const r = await inst.dsRead({ path, from: { kind: "beginning" }, maxBytes: 16 << 20, waitMs: 0 }); return r.body.length; }));
  await time("sql scan only inside DO", () => runInDurableObject(stub, async (_inst: any, state: DurableObjectState) => { let n = 0; for (const r of state.storage.sql.exec("SELECT data FROM batches ORDER BY base_offset")) n += (r.data as ArrayBuffer).byteLength; return n; }));
  await time("noop inside DO", () => runInDurableObject(stub, async () => 1));
  expect(true).toBe(true);
}, 120_000);
