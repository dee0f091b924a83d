/**
 * Metrics benchmarks (run by `npm run bench`, or alone: `node bench/metrics.ts [--quick]`).
 * Prints figures; asserts nothing.
 *
 * 1. Produce throughput with a `GET /v1/metrics` scrape every second, against no scrape, in
 *    interleaved rounds of the same run (issue 13's goal: >= 0.97x). The producer is the SDK
 *    producer (idempotent, 1 KiB records, 256 KiB batches) on a 64-partition topic, as the
 *    issue's "a scrape every 15 s on a topic with 64 partitions", scraped 15 times as often.
 * 2. Scrape latency (p50, p99 of sequential scrapes) of a deployment of exactly 1, 64 and
 *    1,024 partitions (one topic of that many partitions at a time, in a deployment of its
 *    own; the previous topic is deleted first, and a scrape reads every partition).
 *
 * Everything runs in one Node process against workerd (bench/engine.ts) on one machine, so the
 * scraper, the producer and the Worker share the CPU.
 */
import { parseArgs } from "node:util";
import { EdgelogClient, Producer } from "../sdk/src/index.ts";
import { startEngine, type Engine } from "./engine.ts";
import { fmt, pct } from "./util.ts";

const BASE = "http://edgelog.bench";

async function scrape(engine: Engine): Promise<string> {
  const res = await engine.fetch(`${BASE}/v1/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`scrape: HTTP ${res.status}: ${text}`);
  return text;
}

function scrapedPartitions(text: string): number {
  const m = /^edgelog_scrape_partitions\{result="ok"\} (\d+)$/m.exec(text);
  if (m === null) throw new Error("scrape without edgelog_scrape_partitions");
  return Number(m[1]);
}

export async function run(opts: { quick: boolean }): Promise<void> {
  const engine = await startEngine();
  try {
    const client = new EdgelogClient({ baseUrl: BASE, fetch: engine.fetch });
    const partitions = 64;
    const RECORD_BYTES = 1024;
    // Rounds of a few seconds each way: a round of about one second is decided by a single WAL
    // checkpoint or GC pause (per-round ratios from 0.5x to 1.5x in the first runs).
    const ROUNDS = opts.quick ? 4 : 10;
    const perRound = opts.quick ? 20_000 : 240_000;
    const value = new Uint8Array(RECORD_BYTES).fill(97);
    await client.createTopic({ name: "bench-metrics", partitions });
    const producer = new Producer(client, { lingerMs: 5, maxBatchBytes: 256 * 1024 });
    let key = 0;
    const produce = async (n: number): Promise<number> => {
      const t0 = performance.now();
      const pending: Promise<unknown>[] = [];
      for (let sent = 0; sent < n; sent += 5_000) {
        pending.push(producer.send({ topic: "bench-metrics", messages: Array.from({ length: Math.min(5_000, n - sent) }, () => ({ key: `k${key++}`, value })) }));
        await new Promise((resolve) => setImmediate(resolve));
      }
      await producer.flush();
      await Promise.all(pending);
      return (performance.now() - t0) / 1000;
    };
    /** Produces `n` records while scraping every `everyMs`; answers the produce seconds and the scrapes made. */
    const produceScraped = async (n: number, everyMs: number): Promise<{ secs: number; scrapes: number }> => {
      let scrapes = 0;
      let running = true;
      // The first scrape at once, then one every `everyMs` (a round shorter than that still gets one).
      const scraper = (async () => {
        while (running) {
          await scrape(engine);
          scrapes++;
          await new Promise((r) => setTimeout(r, everyMs));
        }
      })();
      const secs = await produce(n);
      running = false;
      await scraper;
      return { secs, scrapes };
    };
    await produce(5_000); // warm-up: objects started, producer id, metadata
    await scrape(engine);
    let plainSecs = 0;
    let scrapedSecs = 0;
    let scrapes = 0;
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let p: number;
      let s: { secs: number; scrapes: number };
      if (round % 2 === 0) {
        p = await produce(perRound);
        s = await produceScraped(perRound, 1000);
      } else {
        s = await produceScraped(perRound, 1000);
        p = await produce(perRound);
      }
      plainSecs += p;
      scrapedSecs += s.secs;
      scrapes += s.scrapes;
      ratios.push(p / s.secs);
    }
    await producer.close();
    const total = perRound * ROUNDS;
    const mbps = (secs: number): number => (total * RECORD_BYTES) / 1e6 / secs;

    console.log("\n## Metrics: produce with a scrape every second, and scrape latency\n");
    console.log("| measurement | value | ceiling (same run) | ratio | target |");
    console.log("|---|---|---|---|---|");
    const ratio = mbps(scrapedSecs) / mbps(plainSecs);
    console.log(
      `| batched produce, ${partitions} partitions, scraped every 1 s (${scrapes} scrapes) | ${fmt(mbps(scrapedSecs))} MB/s | ${fmt(mbps(plainSecs))} MB/s (no scrape) | ${ratio.toFixed(2)}x | >= 0.97x ${ratio >= 0.97 ? "(met)" : "(not met)"} |`,
    );
    const sorted = [...ratios].sort((x, y) => x - y);
    const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
    const sd = Math.sqrt(ratios.reduce((a, r) => a + (r - mean) ** 2, 0) / Math.max(1, ratios.length - 1));
    // 95% interval of the mean per-round ratio (Student's t with ROUNDS - 1 degrees of freedom).
    const t95 = ROUNDS === 10 ? 2.262 : 3.182;
    const half = (t95 * sd) / Math.sqrt(ratios.length);
    const perRoundLine = `Per-round throughput ratios, scraped over no scrape (${ROUNDS} interleaved rounds of ${perRound} records each way): ${ratios.map((r) => `${r.toFixed(2)}x`).join(", ")} (median ${pct(sorted, 50).toFixed(2)}x; mean ${mean.toFixed(3)}x, 95% interval ${(mean - half).toFixed(3)}..${(mean + half).toFixed(3)})`;
    // Printed now: the latency part below runs long on a loaded machine, and may fail.
    console.log(`\n${perRoundLine}\n`);
    const latency = await scrapeLatency(opts.quick);
    console.log("| measurement | value | ceiling (same run) | ratio | target |");
    console.log("|---|---|---|---|---|");
    for (const l of latency) {
      console.log(`| scrape latency p50, ${l.partitions} partitions in the deployment | ${fmt(l.p50)} ms | - | - | - |`);
      console.log(`| scrape latency p99, ${l.partitions} partitions in the deployment | ${fmt(l.p99)} ms | - | - | - |`);
    }
  } finally {
    await engine.dispose();
  }
}

/** Scrape latency of a deployment of exactly 1, 64 and 1,024 partitions (its own engine). */
async function scrapeLatency(quick: boolean): Promise<{ partitions: number; p50: number; p99: number }[]> {
  const engine = await startEngine();
  try {
    // Creating 1,024 partitions' objects can take longer than the default 30 s on a loaded machine.
    const client = new EdgelogClient({ baseUrl: BASE, fetch: engine.fetch, requestTimeoutMs: 600_000 });
    // Scrape latency as the deployment grows.
    const latency: { partitions: number; p50: number; p99: number }[] = [];
    const samples = quick ? 10 : 30;
    let previous: string | null = null;
    for (const [name, n] of [
      ["bench-metrics-1", 1],
      ["bench-metrics-64", 64],
      ["bench-metrics-1024", 1024],
    ] as const) {
      if (previous !== null) await client.deleteTopic(previous);
      previous = name;
      await client.createTopic({ name, partitions: n });
      const first = await scrape(engine); // warm-up: starts the new objects
      const lat: number[] = [];
      for (let i = 0; i < samples; i++) {
        const t0 = performance.now();
        await scrape(engine);
        lat.push(performance.now() - t0);
      }
      lat.sort((a, b) => a - b);
      latency.push({ partitions: scrapedPartitions(first), p50: pct(lat, 50), p99: pct(lat, 99) });
    }

    return latency;
  } finally {
    await engine.dispose();
  }
}

if ((import.meta as { main?: boolean }).main === true) {
  const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
  await run({ quick: values.quick === true });
}
