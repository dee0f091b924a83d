/**
 * Security benchmark (`npm run bench -- --only security`; part of the full run):
 *
 * 1. one-record produce and one-record fetch with JWT auth and ACLs on (a non-superuser
 *    principal allowed by a topic ACL, so every request verifies a cached token and takes a
 *    cached ACL decision), against the same Worker with auth off, in the same run: two engines
 *    per side (four workerd processes), rounds in rotating order, and the A/A ratios (engine B
 *    over engine A of the same side) printed as the noise floor of the comparison. Goal: >= 0.9x.
 * 2. quota accuracy: a principal limited to 1 MiB/s producing 64 KiB requests as fast as it can
 *    (two workers, no back-off) for 10 s: accepted rate / configured rate. The KIP-599 model
 *    predicts (burst 2 s + 10 s) / 10 s = 1.2x (docs/SECURITY.md "Quotas").
 *
 * 3. the auth middleware's own CPU per request, in Node (no Worker, so no machine noise from
 *    Durable Objects): a cached token verification, the route lookup and a memoised ACL
 *    decision, against an uncached HS256 verification.
 *
 * Prints figures; asserts nothing.
 */
import { SignJWT } from "jose";
import { createApp } from "../src/app.ts";
import { AclIndex, requestAuth } from "../src/auth/authorizer.ts";
import { parseAuthConfig } from "../src/auth/config.ts";
import { verifyToken } from "../src/auth/jwt.ts";
import { RouteMatcher } from "../src/auth/route-access.ts";
import { parseAclBinding } from "../src/protocol/acl.ts";
import { startEngine, type Engine } from "./engine.ts";
import { closedLoop, fmt } from "./util.ts";

const BASE = "http://edgelog.bench";
const SECRET = "bench-secret-bench-secret-bench-secret-0123";
const MiB = 1024 * 1024;

async function token(sub: string): Promise<string> {
  return new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setExpirationTime("2h").sign(new TextEncoder().encode(SECRET));
}

interface Row {
  name: string;
  value: number;
  unit: string;
  ceilingName: string;
  ceiling: number;
  target?: number;
}

function printRows(title: string, rows: Row[]): void {
  console.log(`\n## ${title}\n`);
  console.log("| measurement | value | reference (same run) | ratio | target |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    const ratio = r.value / r.ceiling;
    const target = r.target === undefined ? "-" : `>= ${r.target}x ${ratio >= r.target ? "(met)" : "(not met)"}`;
    console.log(`| ${r.name} | ${fmt(r.value)} ${r.unit} | ${fmt(r.ceiling)} ${r.unit} (${r.ceilingName}) | ${ratio.toFixed(2)}x | ${target} |`);
  }
}

async function ok(res: Response): Promise<void> {
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
}

/** µs of CPU per request for the middleware's steps (Node, one thread). */
async function middlewareCpu(): Promise<{ cachedUs: number; uncachedUs: number }> {
  const cfg = parseAuthConfig({ EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: SECRET });
  if (cfg.mode !== "required") throw new Error("bench config");
  const matcher = new RouteMatcher(createApp().routes);
  const acls = new AclIndex([parseAclBinding({ principal: "bench-user", resourceType: "topic", resourceName: "bench-sec", operation: "write" })]);
  const t = await token("bench-user");
  const N = 100_000;
  let t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const v = await verifyToken(cfg, t);
    const route = matcher.match("POST", `/v1/topics/bench-sec/partitions/${i & 3}/records`);
    const auth = requestAuth(acls, v.principal, cfg.superusers);
    if (route === null || !auth.can({ type: "topic", name: "public/default/bench-sec" }, "write")) throw new Error("bench: denied");
  }
  const cachedUs = ((performance.now() - t0) * 1000) / N;
  const M = 2_000;
  const fresh = await Promise.all(
    Array.from({ length: M }, (_, i) => new SignJWT({ i }).setProtectedHeader({ alg: "HS256" }).setSubject("bench-user").setExpirationTime("2h").sign(new TextEncoder().encode(SECRET))),
  );
  t0 = performance.now();
  for (const f of fresh) await verifyToken(cfg, f);
  const uncachedUs = ((performance.now() - t0) * 1000) / M;
  return { cachedUs, uncachedUs };
}

export async function run(opts: { quick: boolean }): Promise<void> {
  const cpu = await middlewareCpu();
  console.log(
    `\nauth middleware CPU per request (Node): ${cpu.cachedUs.toFixed(2)} µs with a cached token, route lookup and memoised ACL decision; ${cpu.uncachedUs.toFixed(1)} µs for an uncached HS256 verification`,
  );
  // Two engines per side (A/A control): a workerd process's own luck (its core, its state
  // directory, its GC) moved single-engine ratios by more than the middleware costs, so each
  // side is the sum of two engines and the off/off and on/on ratios are printed as the noise floor.
  const off = await startEngine();
  const on = await startEngine({ EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: SECRET, EDGELOG_SUPERUSERS: "admin" });
  const off2 = await startEngine();
  const on2 = await startEngine({ EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: SECRET, EDGELOG_SUPERUSERS: "admin" });
  try {
    const admin = await token("admin");
    const user = await token("bench-user");
    const json = (t: string | null) => ({ "content-type": "application/json", ...(t === null ? {} : { authorization: `Bearer ${t}` }) });
    for (const [engine, t] of [
      [off, null],
      [on, admin],
      [off2, null],
      [on2, admin],
    ] as const) {
      await ok(await engine.fetch(`${BASE}/v1/topics`, { method: "POST", headers: json(t), body: JSON.stringify({ name: "bench-sec", partitions: 4 }) }));
    }
    for (const engine of [on, on2]) {
      for (const operation of ["write", "read"]) {
        await ok(
          await engine.fetch(`${BASE}/v1/acls`, {
            method: "POST",
            headers: json(admin),
            body: JSON.stringify({ principal: "bench-user", resourceType: "topic", resourceName: "bench-sec", operation }),
          }),
        );
      }
    }
    const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
    const perRound = opts.quick ? 500 : 2000;
    const ROUNDS = opts.quick ? 4 : 10;
    const concurrency = 8;
    const produce = (engine: Engine, t: string | null) =>
      closedLoop(perRound, concurrency, async (i) => {
        await ok(await engine.fetch(`${BASE}/v1/topics/bench-sec/partitions/${i % 4}/records`, { method: "POST", headers: json(t), body }));
      });
    const fetchOne = (engine: Engine, t: string | null) =>
      closedLoop(perRound, concurrency, async (i) => {
        await ok(await engine.fetch(`${BASE}/v1/topics/bench-sec/partitions/${i % 4}/records?offset=0&maxRecords=1`, { headers: t === null ? {} : { authorization: `Bearer ${t}` } }));
      });
    type Side = "offA" | "onA" | "offB" | "onB";
    const sides: [Side, Engine, string | null][] = [
      ["offA", off, null],
      ["onA", on, user],
      ["offB", off2, null],
      ["onB", on2, user],
    ];
    for (const [, engine, t] of sides) {
      await produce(engine, t); // warm-up
      await fetchOne(engine, t);
    }
    const secs = { produce: { offA: 0, onA: 0, offB: 0, onB: 0 }, fetch: { offA: 0, onA: 0, offB: 0, onB: 0 } };
    const ratios: { produce: number[]; fetch: number[] } = { produce: [], fetch: [] };
    for (let r = 0; r < ROUNDS; r++) {
      // Rotate the order every round so no engine always runs first (or after the same one).
      const order = sides.map((_, k) => sides[(k + r) % sides.length] as [Side, Engine, string | null]);
      if (r % 2 === 1) order.reverse();
      const round = { produce: { offA: 0, onA: 0, offB: 0, onB: 0 }, fetch: { offA: 0, onA: 0, offB: 0, onB: 0 } };
      for (const [name, engine, t] of order) round.produce[name] = await produce(engine, t);
      for (const [name, engine, t] of order) round.fetch[name] = await fetchOne(engine, t);
      for (const k of ["produce", "fetch"] as const) {
        for (const name of ["offA", "onA", "offB", "onB"] as const) secs[k][name] += round[k][name];
        ratios[k].push((round[k].offA + round[k].offB) / (round[k].onA + round[k].onB));
      }
    }
    const total = perRound * ROUNDS;
    const rate = (k: "produce" | "fetch", ...names: Side[]) => (total * names.length) / names.reduce((a, n) => a + secs[k][n], 0);
    const rows: Row[] = [
      {
        name: "one-record produce, JWT + ACLs on (8 concurrent, 2 engines)",
        value: rate("produce", "onA", "onB"),
        unit: "req/s",
        ceilingName: "auth off, 2 engines",
        ceiling: rate("produce", "offA", "offB"),
        target: 0.9,
      },
      {
        name: "one-record fetch, JWT + ACLs on (8 concurrent, 2 engines)",
        value: rate("fetch", "onA", "onB"),
        unit: "req/s",
        ceilingName: "auth off, 2 engines",
        ceiling: rate("fetch", "offA", "offB"),
        target: 0.9,
      },
      { name: "A/A control: produce, auth off engine B", value: rate("produce", "offB"), unit: "req/s", ceilingName: "auth off engine A", ceiling: rate("produce", "offA") },
      { name: "A/A control: produce, auth on engine B", value: rate("produce", "onB"), unit: "req/s", ceilingName: "auth on engine A", ceiling: rate("produce", "onA") },
      { name: "A/A control: fetch, auth off engine B", value: rate("fetch", "offB"), unit: "req/s", ceilingName: "auth off engine A", ceiling: rate("fetch", "offA") },
      { name: "A/A control: fetch, auth on engine B", value: rate("fetch", "onB"), unit: "req/s", ceilingName: "auth on engine A", ceiling: rate("fetch", "onA") },
    ];

    // ---- quota accuracy ----
    await ok(
      await on.fetch(`${BASE}/v1/acls`, {
        method: "POST",
        headers: json(admin),
        body: JSON.stringify({ principal: "flood-user", resourceType: "topic", resourceName: "bench-sec", operation: "write" }),
      }),
    );
    await ok(await on.fetch(`${BASE}/v1/quotas`, { method: "PUT", headers: json(admin), body: JSON.stringify({ user: "flood-user", producer_byte_rate: MiB }) }));
    const flood = await token("flood-user");
    const payload = JSON.stringify({ records: [{ value: "v".repeat(64 * 1024) }] });
    const bytes = new TextEncoder().encode(payload).length;
    const durationMs = opts.quick ? 5000 : 10_000;
    const t0 = Date.now();
    let accepted = 0;
    let throttled = 0;
    await Promise.all(
      [0, 1].map(async () => {
        while (Date.now() - t0 < durationMs) {
          const res = await on.fetch(`${BASE}/v1/topics/bench-sec/partitions/0/records`, { method: "POST", headers: json(flood), body: payload });
          await res.arrayBuffer();
          if (res.status === 200) accepted += bytes;
          else if (res.status === 429) throttled++;
          else throw new Error(`quota flood: HTTP ${res.status}`);
        }
      }),
    );
    const elapsed = (Date.now() - t0) / 1000;
    rows.push({
      name: `quota accuracy: accepted rate at producer_byte_rate 1 MiB/s, ${elapsed.toFixed(1)} s flood (${throttled} throttled answers)`,
      value: accepted / elapsed / MiB,
      unit: "MiB/s",
      ceilingName: "configured",
      ceiling: 1,
    });
    printRows("Security: auth on vs off, quota accuracy", rows);
    console.log(`\nper-round off/on time ratios (>1: auth on faster): produce ${ratios.produce.map((x) => fmt(x)).join(", ")}; fetch ${ratios.fetch.map((x) => fmt(x)).join(", ")}`);
  } finally {
    for (const e of [off, on, off2, on2]) await e.dispose();
  }
}
