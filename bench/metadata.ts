/**
 * Metadata quorum: admin latency (`npm run bench -- --only metadata [--quick]`). Prints figures;
 * asserts nothing.
 *
 * Three engines in one run (bench/engine.ts), one per metadata store: MetadataDO "cluster"
 * (EDGELOG_METADATA_QUORUM "off": the ceiling, one object, one SQLite transaction per change),
 * a Raft metadata quorum of one member ("1": `npm start`, the e2e tier) and of three ("3": what
 * wrangler.toml deploys; all three RaftMemberDO members in the same workerd process here).
 * Every request goes through the real gateway (Miniflare dispatchFetch) with auth off.
 *
 * Measured per engine, in interleaved rounds (the engines' order rotating each round, so load
 * from other work on the machine hits all three alike):
 * - topic create (`POST /v1/topics`, 1 partition), one at a time and with 8 in flight;
 * - an ACL binding added (`POST /v1/acls`): one record (MetadataDO: one transaction), no
 *   partition call, so the bare cost of a commit;
 * - topic describe (`GET /v1/topics/{t}`) and list (`GET /v1/topics`): every one reaches the
 *   metadata store (the admin routes have no cache: with the quorum a linearizable ReadIndex
 *   read at the leader), and describe also asks the partition for its offsets;
 * - the data path's topic lookup, cold against cached: a one-record fetch of a topic whose entry
 *   in the gateway's topic cache has expired (its TTL is 2 s: a miss, `getTopic` at the store,
 *   then the partition) against the same fetch right after (a hit: the partition only);
 * - config change (`PATCH /v1/topics/{t}` `retention.ms`) and delete (`DELETE /v1/topics/{t}`;
 *   one at a time, and with 8 in flight);
 * - read-your-writes: a config change, then at once a describe (is the new value there?), and a
 *   partition added, then at once a produce to it (accepted?): latency of the read, and how many
 *   reads missed the write (expected none: docs/RAFT.md "The gateway's topic cache");
 * - the first metadata request after the engine starts (`GET /v1/topics`, after a no-op request
 *   has loaded the isolate): with the quorum, the members' bootstrap, the first election and the
 *   one-time import from MetadataDO (docs/RAFT.md "Migration from MetadataDO"), one sample each;
 * - the produce hot path, MetadataDO against quorum "1": one-record produce and fetch, 8 in
 *   flight, interleaved rounds; the topic metadata comes from the gateway's cache (the lookups
 *   that missed it are counted from `GET /v1/metrics`), so the quorum should not show here.
 *
 * Latency rows are per request, end to end at the client; p99 of a few dozen samples is about
 * their maximum. Sizes: 3 rounds of 10 + 24 topics per engine (`--quick`: 2 of 4 + 8); about
 * 2.5 minutes on the shared 2-core machine (`--quick`: about 1).
 */
import { readdirSync, readFileSync } from "node:fs";
import { startEngine, type Engine } from "./engine.ts";
import { closedLoop, fmt, pct } from "./util.ts";

const BASE = "http://edgelog.bench";
const JSON_HEADERS = { "content-type": "application/json" };
/** The gateway's topic cache TTL (src/gateway/topics.ts TOPIC_METADATA_TTL_MS) plus a margin. */
const CACHE_EXPIRED_AFTER_MS = 2000 + 150;

type Setup = "off" | "q1" | "q3";
const SETUPS: { key: Setup; quorum: string; label: string }[] = [
  { key: "off", quorum: "off", label: 'MetadataDO ("off")' },
  { key: "q1", quorum: "1", label: 'quorum "1"' },
  { key: "q3", quorum: "3", label: 'quorum "3"' },
];

interface Answer {
  status: number;
  body: unknown;
  ms: number;
}

/**
 * One request (`body`: a value sent as JSON, or a string sent as it is); answers status, parsed
 * JSON body (or null) and latency in ms. @throws when the status is not `expect`
 */
async function call(engine: Engine, method: string, path: string, body?: unknown, expect = 200): Promise<Answer> {
  const t0 = performance.now();
  const res = await engine.fetch(`${BASE}${path}`, { method, ...(body === undefined ? {} : { headers: JSON_HEADERS, body: typeof body === "string" ? body : JSON.stringify(body) }) });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== expect) throw new Error(`${engine.metadataQuorum}: ${method} ${path}: HTTP ${res.status}: ${text}`);
  return { status: res.status, body: res.headers.get("content-type")?.includes("json") === true ? JSON.parse(text) : null, ms };
}

/** The workerd processes this process started (Miniflare spawns each engine's workerd as a child). */
function childWorkerds(): Set<number> {
  const out = new Set<number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, "utf8");
      const fields = st.slice(st.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === process.pid && st.includes("(workerd)")) out.add(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** CPU time (user + system, all threads) of process `pid` so far, in ms (Linux /proc; 10 ms resolution at 100 ticks/s). NaN elsewhere. */
function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const st = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = st.slice(st.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Latency samples, the wall time they took (for ops/s) and the engine's workerd CPU time meanwhile. */
class Samples {
  readonly ms: number[] = [];
  secs = 0;
  ops = 0;
  cpu = 0;
  /** workerd CPU ms per operation (the Worker and every Durable Object of the engine; not the client). */
  cpuPerOp(): number {
    return this.cpu / this.ops;
  }
  sorted(): number[] {
    return [...this.ms].sort((a, b) => a - b);
  }
  p(q: number): number {
    return pct(this.sorted(), q);
  }
  rate(): number {
    return this.ops / this.secs;
  }
}

/** Runs `n` operations `concurrency` at a time against the engine whose workerd is `pid`; each answers its latency. */
async function timed(s: Samples, pid: number | undefined, n: number, concurrency: number, op: (i: number) => Promise<number>): Promise<void> {
  const cpu0 = cpuMs(pid);
  s.secs += await closedLoop(n, concurrency, async (i) => {
    s.ms.push(await op(i));
  });
  s.cpu += cpuMs(pid) - cpu0;
  s.ops += n;
}

/** The gateway's topic cache lookups so far (hit, miss), from `GET /v1/metrics`. */
async function cacheLookups(engine: Engine): Promise<{ hit: number; miss: number }> {
  const text = (await (await engine.fetch(`${BASE}/v1/metrics`)).text()) as string;
  const read = (result: string) => Number(new RegExp(`^edgelog_gateway_topic_cache_lookups_total\\{result="${result}"\\} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
  return { hit: read("hit"), miss: read("miss") };
}

const MEASURES = [
  "createSerial",
  "createConc",
  "acl",
  "describe",
  "list",
  "lookupCold",
  "lookupCached",
  "alter",
  "rywRead",
  "rywProduce",
  "deleteSerial",
  "deleteConc",
  "produce",
  "fetch",
] as const;
type Measure = (typeof MEASURES)[number];

export async function run(opts: { quick: boolean }): Promise<void> {
  const ROUNDS = opts.quick ? 2 : 3;
  const SERIAL = opts.quick ? 4 : 10; // topics created one at a time per round and engine
  const CONC = opts.quick ? 8 : 24; // topics created with 8 in flight per round and engine
  const LISTS = opts.quick ? 2 : 6;
  const HOT_ROUNDS = opts.quick ? 2 : 6;
  const HOT = opts.quick ? 150 : 250; // one-record produce (and fetch) requests per hot-path round and engine
  const CONCURRENCY = 8;

  const engines = {} as Record<Setup, Engine>;
  const pids = {} as Record<Setup, number | undefined>;
  const first = {} as Record<Setup, { noopMs: number; metadataMs: number; startMs: number }>;
  const s = Object.fromEntries(SETUPS.map(({ key }) => [key, Object.fromEntries(MEASURES.map((m) => [m, new Samples()])) as Record<Measure, Samples>])) as Record<
    Setup,
    Record<Measure, Samples>
  >;
  const stale = { off: { read: 0, produce: 0 }, q1: { read: 0, produce: 0 }, q3: { read: 0, produce: 0 } } as Record<Setup, { read: number; produce: number }>;
  const roundRatios: Record<"q1" | "q3", number[]> = { q1: [], q3: [] };
  try {
    // ---- start, and the first request after the start ----
    for (const { key, quorum } of SETUPS) {
      const t0 = performance.now();
      const before = childWorkerds();
      const engine = await startEngine({ EDGELOG_METADATA_QUORUM: quorum });
      engines[key] = engine;
      pids[key] = [...childWorkerds()].find((pid) => !before.has(pid));
      const startMs = performance.now() - t0; // bundle + workerd start
      const noop = await call(engine, "GET", "/bench/noop");
      // The first metadata request: retried if it answers UNAVAILABLE (the store's 15 s deadline).
      const t1 = performance.now();
      for (;;) {
        const res = await engine.fetch(`${BASE}/v1/topics`);
        const text = await res.text();
        if (res.status === 200) break;
        if (res.status !== 503 || performance.now() - t1 > 60_000) throw new Error(`${quorum}: first GET /v1/topics: HTTP ${res.status}: ${text}`);
      }
      first[key] = { noopMs: noop.ms, metadataMs: performance.now() - t1, startMs };
    }
    // Warm-up (not measured): a topic through its whole life on each engine.
    for (const { key } of SETUPS) {
      const e = engines[key];
      for (let i = 0; i < 3; i++) {
        const t = `warm-${i}`;
        await call(e, "POST", "/v1/topics", { name: t, partitions: 1 }, 201);
        await call(e, "GET", `/v1/topics/${t}`);
        await call(e, "PATCH", `/v1/topics/${t}`, { configs: { "retention.ms": 3_600_000 } });
        await call(e, "GET", `/v1/topics/${t}/partitions/0/records?offset=0&maxRecords=1`);
        await call(e, "DELETE", `/v1/topics/${t}`, undefined, 204);
      }
    }

    // ---- admin operations, interleaved rounds ----
    for (let round = 0; round < ROUNDS; round++) {
      const order = SETUPS.map((_, k) => SETUPS[(k + round) % SETUPS.length]!.key);
      if (round % 2 === 1) order.reverse();
      const serial = Array.from({ length: SERIAL }, (_, i) => `adm-r${round}-s${i}`);
      const conc = Array.from({ length: CONC }, (_, i) => `adm-r${round}-c${i}`);
      const roundCreateMs: Partial<Record<Setup, number>> = {};
      for (const key of order) {
        const e = engines[key];
        const m = s[key];
        const before = m.createSerial.ms.length;
        await timed(m.createSerial, pids[key], SERIAL, 1, async (i) => (await call(e, "POST", "/v1/topics", { name: serial[i], partitions: 1 }, 201)).ms);
        roundCreateMs[key] = m.createSerial.ms.slice(before).reduce((a, b) => a + b, 0);
        await timed(m.createConc, pids[key], CONC, CONCURRENCY, async (i) => (await call(e, "POST", "/v1/topics", { name: conc[i], partitions: 1 }, 201)).ms);
        await timed(m.describe, pids[key], SERIAL, 1, async (i) => (await call(e, "GET", `/v1/topics/${serial[i]}`)).ms);
        await timed(m.list, pids[key], LISTS, 1, async () => (await call(e, "GET", "/v1/topics")).ms);
        // One record and nothing else (no partition call): an ACL binding added.
        await timed(
          m.acl,
          pids[key],
          SERIAL,
          1,
          async (i) => (await call(e, "POST", "/v1/acls", { principal: `bench-r${round}-${i}`, resourceType: "topic", resourceName: serial[i], operation: "read" }, 201)).ms,
        );
        // First fetch of each topic (not measured): the partition object's first read.
        for (const t of serial) await call(e, "GET", `/v1/topics/${t}/partitions/0/records?offset=0&maxRecords=1`);
      }
      roundRatios.q1.push(roundCreateMs.q1! / roundCreateMs.off!);
      roundRatios.q3.push(roundCreateMs.q3! / roundCreateMs.off!);
      // The lookups: every entry expired (no admin write meanwhile), then a miss and a hit per topic.
      await new Promise((r) => setTimeout(r, CACHE_EXPIRED_AFTER_MS));
      for (const key of order) {
        const e = engines[key];
        const m = s[key];
        for (const t of serial) {
          const path = `/v1/topics/${t}/partitions/0/records?offset=0&maxRecords=1`;
          m.lookupCold.ms.push((await call(e, "GET", path)).ms);
          m.lookupCached.ms.push((await call(e, "GET", path)).ms);
        }
      }
      for (const key of order) {
        const e = engines[key];
        const m = s[key];
        await timed(m.alter, pids[key], SERIAL, 1, async (i) => (await call(e, "PATCH", `/v1/topics/${serial[i]}`, { configs: { "retention.ms": 7_200_000 + i } })).ms);
        // Read-your-writes: the describe right after the change must show it; so must a produce
        // to a partition added by the change.
        for (let i = 0; i < SERIAL; i++) {
          const t = serial[i]!;
          const want = 10_800_000 + round * 1000 + i;
          await call(e, "PATCH", `/v1/topics/${t}`, { configs: { "retention.ms": want } });
          const read = await call(e, "GET", `/v1/topics/${t}`);
          m.rywRead.ms.push(read.ms);
          if (Number((read.body as { configs: Record<string, unknown> }).configs["retention.ms"]) !== want) stale[key].read++;
          await call(e, "PATCH", `/v1/topics/${t}`, { partitions: 2 });
          const t0 = performance.now();
          const res = await e.fetch(`${BASE}/v1/topics/${t}/partitions/1/records`, { method: "POST", headers: JSON_HEADERS, body: JSON.stringify({ records: [{ value: "x" }] }) });
          await res.text();
          m.rywProduce.ms.push(performance.now() - t0);
          if (res.status !== 200) stale[key].produce++;
        }
        await timed(m.deleteSerial, pids[key], SERIAL, 1, async (i) => (await call(e, "DELETE", `/v1/topics/${serial[i]}`, undefined, 204)).ms);
        await timed(m.deleteConc, pids[key], CONC, CONCURRENCY, async (i) => (await call(e, "DELETE", `/v1/topics/${conc[i]}`, undefined, 204)).ms);
      }
    }

    // ---- the produce hot path: one-record produce and fetch, topic metadata cached ----
    // MetadataDO against quorum "1" only (quorum "3" differs from "1" on this path only in the
    // lookups that miss the cache, one per topic every 2 s): the three-member engine is stopped
    // first, so its members' ticks do not load the comparison.
    await engines.q3.dispose();
    delete (engines as Partial<Record<Setup, Engine>>).q3;
    const HOT_SETUPS = ["off", "q1"] as const;
    const body = JSON.stringify({ records: [{ value: "x".repeat(100) }] });
    const hot = "hot-path";
    for (const key of HOT_SETUPS) {
      const e = engines[key];
      await call(e, "POST", "/v1/topics", { name: hot, partitions: 4 }, 201);
      await closedLoop(200, CONCURRENCY, async (i) => void (await call(e, "POST", `/v1/topics/${hot}/partitions/${i % 4}/records`, body)));
    }
    const lookupsBefore = {} as Record<Setup, { hit: number; miss: number }>;
    for (const key of HOT_SETUPS) lookupsBefore[key] = await cacheLookups(engines[key]);
    const hotRatios = { produce: [] as number[], fetch: [] as number[] };
    for (let round = 0; round < HOT_ROUNDS; round++) {
      const order = round % 2 === 0 ? HOT_SETUPS : ([...HOT_SETUPS].reverse() as Setup[]);
      const secs = {} as Record<Setup, { produce: number; fetch: number }>;
      for (const key of order) {
        const e = engines[key];
        const m = s[key];
        const p0 = m.produce.secs;
        await timed(m.produce, pids[key], HOT, CONCURRENCY, async (i) => (await call(e, "POST", `/v1/topics/${hot}/partitions/${i % 4}/records`, body)).ms);
        const f0 = m.fetch.secs;
        await timed(
          m.fetch,
          pids[key],
          HOT,
          CONCURRENCY,
          async (i) => (await call(e, "GET", `/v1/topics/${hot}/partitions/${i % 4}/records?offset=${Math.floor(i / 4) % 50}&maxRecords=1`)).ms,
        );
        secs[key] = { produce: m.produce.secs - p0, fetch: m.fetch.secs - f0 };
      }
      hotRatios.produce.push(secs.off.produce / secs.q1.produce);
      hotRatios.fetch.push(secs.off.fetch / secs.q1.fetch);
    }
    const lookups = {} as Record<Setup, { hit: number; miss: number }>;
    for (const key of HOT_SETUPS) {
      const now = await cacheLookups(engines[key]);
      lookups[key] = { hit: now.hit - lookupsBefore[key].hit, miss: now.miss - lookupsBefore[key].miss };
    }

    // ---- report ----
    console.log(
      `\n## Metadata quorum: admin latency (MetadataDO "off" is the ceiling, same run; ${ROUNDS} interleaved rounds: ${SERIAL} topics created one at a time and ${CONC} with ${CONCURRENCY} in flight per round and engine, 1 partition each; ${ROUNDS * SERIAL} samples per latency row, ${ROUNDS * LISTS} for list)\n`,
    );
    console.log('| measurement | MetadataDO "off" (ceiling) | quorum "1" | vs off | quorum "3" | vs off |');
    console.log("|---|---|---|---|---|---|");
    const row = (name: string, v: (k: Setup) => number, unit: string) => {
      const off = v("off");
      const cell = (x: number) => (Number.isNaN(x) ? "- | -" : `${fmt(x)} ${unit} | ${(x / off).toFixed(2)}x`);
      console.log(`| ${name} | ${fmt(off)} ${unit} | ${cell(v("q1"))} | ${cell(v("q3"))} |`);
    };
    const lat = (name: string, m: Measure) => {
      row(`${name} p50`, (k) => s[k][m].p(50), "ms");
      row(`${name} p99`, (k) => s[k][m].p(99), "ms");
    };
    row("first metadata request after start (GET /v1/topics; one sample)", (k) => first[k].metadataMs, "ms");
    lat("topic create, one at a time", "createSerial");
    row("topic create, one at a time", (k) => s[k].createSerial.rate(), "ops/s");
    lat(`topic create, ${CONCURRENCY} in flight`, "createConc");
    row(`topic create, ${CONCURRENCY} in flight`, (k) => s[k].createConc.rate(), "ops/s");
    lat("topic describe (store read + partition offsets)", "describe");
    lat("topic list", "list");
    lat("ACL create (one record, no partition call)", "acl");
    lat("data-path lookup, cold (cache entry expired: store getTopic + one-record fetch)", "lookupCold");
    lat("data-path lookup, cached (one-record fetch, cache hit)", "lookupCached");
    lat("topic config change (retention.ms)", "alter");
    lat("read-your-writes: describe right after a config change", "rywRead");
    lat("read-your-writes: produce to a partition just added", "rywProduce");
    lat("topic delete, one at a time", "deleteSerial");
    row(`topic delete, ${CONCURRENCY} in flight`, (k) => s[k].deleteConc.rate(), "ops/s");
    row(`hot path: one-record produce, ${CONCURRENCY} in flight (${HOT_ROUNDS} rounds of ${HOT})`, (k) => s[k].produce.rate(), "req/s");
    row(`hot path: one-record fetch, ${CONCURRENCY} in flight (${HOT_ROUNDS} rounds of ${HOT})`, (k) => s[k].fetch.rate(), "req/s");
    lat("hot path: one-record produce", "produce");
    console.log(
      "\nworkerd CPU time per operation (user + system of the engine's workerd process from /proc, all its threads: the Worker and every Durable Object; not the client; 10 ms resolution, summed over the phase):\n",
    );
    console.log('| operation | MetadataDO "off" (ceiling) | quorum "1" | vs off | quorum "3" | vs off |');
    console.log("|---|---|---|---|---|---|");
    row("topic create, one at a time", (k) => s[k].createSerial.cpuPerOp(), "ms");
    row(`topic create, ${CONCURRENCY} in flight`, (k) => s[k].createConc.cpuPerOp(), "ms");
    row("topic describe", (k) => s[k].describe.cpuPerOp(), "ms");
    row("topic list", (k) => s[k].list.cpuPerOp(), "ms");
    row("ACL create", (k) => s[k].acl.cpuPerOp(), "ms");
    row("topic config change", (k) => s[k].alter.cpuPerOp(), "ms");
    row("topic delete, one at a time", (k) => s[k].deleteSerial.cpuPerOp(), "ms");
    row(`topic delete, ${CONCURRENCY} in flight`, (k) => s[k].deleteConc.cpuPerOp(), "ms");
    row("hot path: one-record produce", (k) => s[k].produce.cpuPerOp(), "ms");
    row("hot path: one-record fetch", (k) => s[k].fetch.cpuPerOp(), "ms");
    console.log('\n"vs off": the figure over MetadataDO\'s (latency: above 1x is slower; ops/s and req/s: below 1x is slower).');
    console.log(
      `read-your-writes misses (a describe without the new config / a produce to the new partition refused): ${SETUPS.map(({ key, label }) => `${label} ${stale[key].read}/${stale[key].produce} of ${s[key].rywRead.ms.length}`).join("; ")}`,
    );
    console.log(
      `first request after start: ${SETUPS.map(({ key, label }) => `${label}: engine start ${fmt(first[key].startMs / 1000)} s (bundle + workerd), first no-op request ${fmt(first[key].noopMs)} ms, first metadata request ${fmt(first[key].metadataMs)} ms`).join("; ")}`,
    );
    console.log(`per-round ratio of serial create time: quorum "1" ${roundRatios.q1.map((x) => fmt(x)).join(", ")}; quorum "3" ${roundRatios.q3.map((x) => fmt(x)).join(", ")}`);
    console.log(`hot path per-round rate ratios (quorum "1" / off): produce ${hotRatios.produce.map((x) => fmt(x)).join(", ")}; fetch ${hotRatios.fetch.map((x) => fmt(x)).join(", ")}`);
    console.log(
      `hot path topic cache lookups (GET /v1/metrics, during the measured rounds): ${SETUPS.filter(({ key }) => key !== "q3")
        .map(({ key, label }) => `${label} ${lookups[key].hit} hits, ${lookups[key].miss} misses`)
        .join("; ")}`,
    );
  } finally {
    for (const e of Object.values(engines)) await e.dispose();
  }
}
