/**
 * Replicated partitions (issue 11; `npm run bench -- --only raft [--quick]`). Prints figures;
 * asserts nothing.
 *
 * Produce throughput and latency of one partition at `replication.factor` 3 against the same at
 * 1, in the same run, interleaved round by round (so load from other work on the machine hits
 * both alike): a closed loop of C concurrent clients, each sending one JSON produce request of
 * R records (100-byte values) at a time, acks=all, through the real gateway. At 1 a request is
 * one transaction of the partition object; at 3 it is a Raft entry: the leader's journal write,
 * one RPC to each follower, their journal writes, their answers, the commit, and the apply
 * transaction on each of the three. All three replicas are Durable Objects of one workerd
 * process here, so they share one thread: the floor of the ratio is about 1/3 of the work
 * spread over one thread, before the extra round trips (docs/benchmarks.md).
 *
 * Failover time is printed by test/workers/replicated-partition.test.ts (fault injection is
 * compiled out of the bundle this engine runs).
 */
import { EdgelogClient } from "../sdk/src/index.ts";
import { startEngine, type Engine } from "./engine.ts";
import { closedLoop, fmt, pct } from "./util.ts";

const BASE = "http://edgelog.bench";

async function produce(engine: Engine, topic: string, body: string): Promise<void> {
  const res = await engine.fetch(`${BASE}/v1/topics/${topic}/partitions/0/records`, { method: "POST", headers: { "content-type": "application/json" }, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${text}`);
}

async function waitWritable(engine: Engine, topic: string, body: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await produce(engine, topic, body);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function run(opts: { quick: boolean }): Promise<void> {
  const engine = await startEngine();
  try {
    const client = new EdgelogClient({ baseUrl: BASE, fetch: engine.fetch });
    const rounds = opts.quick ? 2 : 4;
    const requests = opts.quick ? 300 : 800;
    const concurrency = 8;
    const recordsPerRequest = 10;
    const value = "x".repeat(100);
    const body = JSON.stringify({ records: Array.from({ length: recordsPerRequest }, () => ({ value })) });
    const topics = { rf1: "bench-raft-rf1", rf3: "bench-raft-rf3" } as const;
    await client.createTopic({ name: topics.rf1, partitions: 1 });
    await client.createTopic({ name: topics.rf3, partitions: 1, configs: { "replication.factor": 3, "min.insync.replicas": 2 } });
    // The rf=3 group elects its first leader (1-2 election timeouts), then both warm up.
    await waitWritable(engine, topics.rf3, body);
    for (const t of Object.values(topics)) await closedLoop(100, concurrency, () => produce(engine, t, body));
    const results = { rf1: { secs: 0, lat: [] as number[] }, rf3: { secs: 0, lat: [] as number[] } };
    const ratios: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const perRound: Record<string, number> = {};
      for (const key of round % 2 === 0 ? (["rf1", "rf3"] as const) : (["rf3", "rf1"] as const)) {
        const lat = results[key].lat;
        const secs = await closedLoop(requests, concurrency, async () => {
          const t0 = performance.now();
          await produce(engine, topics[key], body);
          lat.push(performance.now() - t0);
        });
        results[key].secs += secs;
        perRound[key] = (requests * recordsPerRequest) / secs;
      }
      ratios.push(perRound.rf3! / perRound.rf1!);
    }
    console.log(
      `\n## Replicated partitions: produce at replication.factor 3 vs 1 (${rounds} interleaved rounds of ${requests} requests x ${recordsPerRequest} records, ${concurrency} clients, acks=all)\n`,
    );
    console.log("| topic | records/s | p50 ms | p99 ms |\n|---|---|---|---|");
    const rate: Record<string, number> = {};
    for (const key of ["rf1", "rf3"] as const) {
      const r = results[key];
      r.lat.sort((a, b) => a - b);
      rate[key] = (rounds * requests * recordsPerRequest) / r.secs;
      console.log(`| ${key} | ${fmt(rate[key]!)} | ${fmt(pct(r.lat, 50))} | ${fmt(pct(r.lat, 99))} |`);
    }
    console.log(`\nthroughput ratio rf3/rf1: ${fmt(rate.rf3! / rate.rf1!)}x overall; per round: ${ratios.map((x) => fmt(x)).join(", ")}`);
  } finally {
    await engine.dispose();
  }
}
