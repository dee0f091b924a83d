/**
 * Security benchmark (`npm run bench -- --only security`; part of the full run):
 *
 * 1. one-record produce and one-record fetch with JWT auth and ACLs on (a non-superuser
 *    principal allowed by a topic ACL, so every request verifies a cached token and takes a
 *    cached ACL decision), against the same Worker with auth off, in the same run: two engines,
 *    interleaved rounds. Goal: >= 0.9x.
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
  const off = await startEngine();
  const on = await startEngine({ EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: SECRET, EDGELOG_SUPERUSERS: "admin" });
  try {
    const admin = await token("admin");
    const user = await token("bench-user");
    const json = (t: string | null) => ({ "content-type": "application/json", ...(t === null ? {} : { authorization: `Bearer ${t}` }) });
    for (const [engine, t] of [
      [off, null],
      [on, admin],
    ] as const) {
      await ok(await engine.fetch(`${BASE}/v1/topics`, { method: "POST", headers: json(t), body: JSON.stringify({ name: "bench-sec", partitions: 4 }) }));
    }
    for (const operation of ["write", "read"]) {
      await ok(
        await on.fetch(`${BASE}/v1/acls`, {
          method: "POST",
          headers: json(admin),
          body: JSON.stringify({ principal: "bench-user", resourceType: "topic", resourceName: "bench-sec", operation }),
        }),
      );
    }
    const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
    const perRound = opts.quick ? 1000 : 4000;
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
    // warm-up
    await produce(off, null);
    await produce(on, user);
    const secs = { produceOff: 0, produceOn: 0, fetchOff: 0, fetchOn: 0 };
    const ratios: { produce: number[]; fetch: number[] } = { produce: [], fetch: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const first = r % 2 === 0;
      const [a, b] = first ? [await produce(off, null), await produce(on, user)] : [0, 0];
      const [d, c] = first ? [0, 0] : [await produce(on, user), await produce(off, null)];
      const pOff = a + c;
      const pOn = b + d;
      const [e, f2] = first ? [await fetchOne(off, null), await fetchOne(on, user)] : [0, 0];
      const [h, g] = first ? [0, 0] : [await fetchOne(on, user), await fetchOne(off, null)];
      const fOff = e + g;
      const fOn = f2 + h;
      secs.produceOff += pOff;
      secs.produceOn += pOn;
      secs.fetchOff += fOff;
      secs.fetchOn += fOn;
      ratios.produce.push(pOff / pOn);
      ratios.fetch.push(fOff / fOn);
    }
    const total = perRound * ROUNDS;
    const rows: Row[] = [
      { name: "one-record produce, JWT + ACLs on (8 concurrent)", value: total / secs.produceOn, unit: "req/s", ceilingName: "auth off", ceiling: total / secs.produceOff, target: 0.9 },
      { name: "one-record fetch, JWT + ACLs on (8 concurrent)", value: total / secs.fetchOn, unit: "req/s", ceilingName: "auth off", ceiling: total / secs.fetchOff, target: 0.9 },
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
    await off.dispose();
    await on.dispose();
  }
}
