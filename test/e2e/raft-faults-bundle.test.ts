/**
 * Raft fault injection cannot be enabled in a production build (durable-objects/raft/faults.ts):
 * the bundle `wrangler deploy --dry-run --outdir` produces (what `wrangler deploy` uploads) is
 * run in workerd with EDGELOG_RAFT_FAULTS = "1", and a member refuses `setFaults` (link faults
 * included) (and a
 * partition replica its test-only knobs) while its
 * Raft RPCs work. The build runs without NODE_ENV in its environment, as a deploy from a
 * shell or CI does (vitest sets NODE_ENV=test in this process).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RaftMemberRpc } from "../../src/raft/group.ts";
import type { PartitionRpc } from "../../src/partition/rpc.ts";

const ROOT = resolve(import.meta.dirname, "../..");

describe("the production bundle", () => {
  const outdir = mkdtempSync(join(tmpdir(), "edgelog-raft-bundle-"));
  let mf: Miniflare | undefined;
  let bundle = "";

  beforeAll(() => {
    const env: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: "false" };
    delete env.NODE_ENV;
    execFileSync(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outdir], { cwd: ROOT, env, stdio: ["ignore", "ignore", "inherit"] });
    bundle = readFileSync(join(outdir, "index.js"), "utf8");
  });

  afterAll(async () => {
    await mf?.dispose();
    rmSync(outdir, { recursive: true, force: true });
  });

  it("has the build gate folded to false", () => {
    // The gate is `process.env.NODE_ENV !== "production"`, replaced at bundle time.
    expect(bundle).toMatch(/var FAULTS_IN_BUILD = false;/);
    expect(bundle).not.toContain("process.env.NODE_ENV");
  });

  it("refuses setFaults with EDGELOG_RAFT_FAULTS = 1, while the member works", async () => {
    const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
    const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)![1]!;
    const flags = /^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)![1]!;
    mf = new Miniflare(
      convertV4MiniflareOptions({
        name: "edgelog",
        modules: [{ type: "ESModule", path: join(outdir, "index.js"), contents: bundle }],
        modulesRoot: outdir,
        compatibilityDate,
        compatibilityFlags: [...flags.matchAll(/"([^"]+)"/g)].map((m) => m[1]!),
        durableObjects: { RAFT_MEMBER: { className: "RaftMemberDO", useSQLite: true }, PARTITION: { className: "PartitionDO", useSQLite: true } },
        bindings: { EDGELOG_RAFT_FAULTS: "1", EDGELOG_AUTH: "none" },
      } as unknown as Parameters<typeof convertV4MiniflareOptions>[0]),
    );
    await mf.ready;
    const ns = await mf.getDurableObjectNamespace("RAFT_MEMBER");
    const stub = ns.get(ns.idFromName("prod/m1")) as unknown as RaftMemberRpc;
    const boot = await stub.bootstrap({ groupId: "prod", members: [{ id: "m1" }], stateMachine: "sequence" }, "m1");
    expect(boot.ok).toBe(true);
    expect(await stub.setFaults({ crashed: true })).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { faultInjection: false } });
    // Link faults (per-peer drops, symmetric or one-way partitions) have the same gate.
    expect(await stub.setFaults({ dropTo: ["m2"], dropFrom: ["m2"] })).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { faultInjection: false } });
    const st = await stub.status();
    expect(st.ok && st.status.memberId).toBe("m1");
    // A replicated partition's replicas have the same gate (docs/RAFT.md "Replicated partitions").
    const pns = await mf.getDurableObjectNamespace("PARTITION");
    const partition = pns.get(pns.idFromName("prod-topic/0")) as unknown as PartitionRpc;
    expect(await partition.setFaults({ crashed: true })).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { faultInjection: false } });
    expect(await partition.setFaults({ dropTo: ["r2"] })).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { faultInjection: false } });
    expect(await partition.setFaults({ dropFrom: ["r3"] })).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { faultInjection: false } });
    // So do the test-only knobs of a replica (journal retention, catch-up chunks; docs/RAFT.md "Snapshot catch-up").
    expect(await partition.setReplicaTestKnobs({ keepEntries: 1 })).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { faultInjection: false } });
  });
});
