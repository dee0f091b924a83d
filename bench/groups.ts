/**
 * Consumer-group benchmarks (run by `npm run bench`, or alone: `node bench/groups.ts [--quick]`).
 * Prints figures, each next to a ceiling measured in the same run; asserts nothing.
 *
 * 1. Join to stable: a group of 10 members on a 60-partition topic; an 11th joins; time from
 *    its join heartbeat until every member reports `stable` at the new epoch (all partitions
 *    moved, none with two owners). Members are protocol-level loops that heartbeat like the
 *    SDK: every `heartbeat.interval.ms` when stable, every RECONCILING_HEARTBEAT_MS while not,
 *    and at once after releasing partitions. Ceiling: the heartbeat interval, since a member
 *    that must give up partitions learns it only at its next heartbeat. Both rebalance styles.
 * 2. Group consume throughput with 1 vs 3 SDK GroupConsumers (eachBatch) on a 6-partition
 *    topic, from the first join until every record was processed. Ceiling: the assign-based
 *    Consumer reading the same 6 partitions in the same run (no group protocol at all).
 *
 * Everything runs in one Node process against workerd (bench/engine.ts) on the same machine,
 * so 3 members share the CPU of 1: the ratio shows protocol overhead, not horizontal scaling.
 */
import { Consumer, EdgelogClient, GroupConsumer, Producer, RECONCILING_HEARTBEAT_MS } from "../sdk/src/index.ts";
import type { AssignorName, ConsumerGroupHeartbeatResponse, TopicPartitions } from "../src/protocol/index.ts";
import { startEngine, type Engine } from "./engine.ts";
import { fmt, pct as pctSorted } from "./util.ts";

const BASE = "http://edgelog.bench";

interface Row {
  name: string;
  value: number;
  unit: string;
  ceilingName?: string;
  ceiling?: number;
}

function printRows(title: string, rows: Row[]): void {
  console.log(`\n## ${title}\n`);
  console.log("| measurement | value | ceiling (same run) | ratio |");
  console.log("|---|---|---|---|");
  for (const r of rows) {
    const ratio = r.ceiling ? `${(r.value / r.ceiling).toFixed(2)}x` : "-";
    console.log(`| ${r.name} | ${fmt(r.value)} ${r.unit} | ${r.ceiling !== undefined ? `${fmt(r.ceiling)} ${r.unit} (${r.ceilingName})` : "-"} | ${ratio} |`);
  }
}

function pct(values: number[], p: number): number {
  return pctSorted(
    [...values].sort((a, b) => a - b),
    p,
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A protocol-level member: heartbeats like the SDK and adopts each answered assignment at once. */
class SimMember {
  memberId: string = crypto.randomUUID();
  epoch = 0;
  owned: TopicPartitions[] = [];
  last: ConsumerGroupHeartbeatResponse | undefined;
  running = true;
  #wake: (() => void) | undefined;
  readonly #client: EdgelogClient;
  readonly #group: string;
  readonly #topic: string;
  readonly #assignor: AssignorName;
  readonly loop: Promise<void>;

  constructor(client: EdgelogClient, group: string, topic: string, assignor: AssignorName) {
    this.#client = client;
    this.#group = group;
    this.#topic = topic;
    this.#assignor = assignor;
    this.loop = this.#run();
  }

  async #beat(): Promise<void> {
    const r = await this.#client.heartbeat(this.#group, {
      memberId: this.memberId,
      memberEpoch: this.epoch,
      ownedPartitions: this.owned,
      ...(this.epoch === 0 ? { subscribedTopicNames: [this.#topic], assignor: this.#assignor, sessionTimeoutMs: 30_000 } : {}),
    });
    const released = count(this.owned) > count(intersect(this.owned, r.assignment));
    this.epoch = r.memberEpoch;
    this.owned = r.assignment;
    this.last = r;
    if (released) this.#wake?.(); // report the release at once, as the SDK does
  }

  async #run(): Promise<void> {
    while (this.running) {
      const before = this.last;
      await this.#beat();
      if (this.last !== before && this.last !== undefined && count(this.owned) < count(before?.assignment ?? [])) continue;
      const interval = this.last?.state === "stable" ? (this.last?.heartbeatIntervalMs ?? 500) : Math.min(this.last?.heartbeatIntervalMs ?? 500, RECONCILING_HEARTBEAT_MS);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, interval);
        this.#wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  async leave(): Promise<void> {
    this.running = false;
    this.#wake?.();
    await this.loop;
    await this.#client.leaveGroup(this.#group, { memberId: this.memberId, memberEpoch: this.epoch });
  }
}

function count(a: TopicPartitions[]): number {
  return a.reduce((n, tp) => n + tp.partitions.length, 0);
}

function intersect(a: TopicPartitions[], b: TopicPartitions[]): TopicPartitions[] {
  return a.map((tp) => ({ topic: tp.topic, partitions: tp.partitions.filter((p) => b.find((x) => x.topic === tp.topic)?.partitions.includes(p)) }));
}

/** True when every member answered `stable` at one epoch and the partitions are covered exactly once. */
function allStable(members: SimMember[], partitions: number): boolean {
  const epochs = new Set(members.map((m) => m.last?.memberEpoch));
  if (epochs.size !== 1 || members.some((m) => m.last?.state !== "stable")) return false;
  const seen = members.flatMap((m) => m.owned.flatMap((tp) => tp.partitions));
  return seen.length === partitions && new Set(seen).size === partitions;
}

async function waitUntil(cond: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error("timed out");
    await sleep(2);
  }
}

async function benchJoin(client: EdgelogClient, quick: boolean): Promise<Row[]> {
  const PARTITIONS = 60;
  const HEARTBEAT_INTERVAL_MS = 500;
  const rounds = quick ? 3 : 8;
  const topic = `bench-groups-join-${Date.now()}`;
  await client.createTopic({ name: topic, partitions: PARTITIONS });
  const rows: Row[] = [];
  for (const assignor of ["cooperative-sticky", "range"] as AssignorName[]) {
    const group = `bench-join-${assignor}-${Date.now()}`;
    await client.alterGroup(group, { configs: { "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS } });
    const members: SimMember[] = [];
    for (let i = 0; i < 10; i++) members.push(new SimMember(client, group, topic, assignor));
    await waitUntil(() => allStable(members, PARTITIONS), 60_000);
    const times: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Join at a random point of the others' heartbeat cycle.
      await sleep(Math.random() * HEARTBEAT_INTERVAL_MS);
      const t0 = performance.now();
      const joiner = new SimMember(client, group, topic, assignor);
      const all = [...members, joiner];
      await waitUntil(() => joiner.last !== undefined && allStable(all, PARTITIONS), 60_000);
      times.push(performance.now() - t0);
      await joiner.leave();
      await waitUntil(() => allStable(members, PARTITIONS), 60_000);
    }
    for (const m of members) await m.leave();
    rows.push(
      { name: `join a group of 10 -> stable, ${assignor} (60 partitions) p50`, value: pct(times, 50), unit: "ms", ceilingName: "heartbeat.interval.ms", ceiling: HEARTBEAT_INTERVAL_MS },
      { name: `join a group of 10 -> stable, ${assignor} max of ${rounds}`, value: Math.max(...times), unit: "ms", ceilingName: "heartbeat.interval.ms", ceiling: HEARTBEAT_INTERVAL_MS },
    );
  }
  return rows;
}

async function benchConsume(client: EdgelogClient, quick: boolean): Promise<Row[]> {
  const PARTITIONS = 6;
  const RECORD_BYTES = 256;
  const total = quick ? 60_000 : 240_000;
  const topic = `bench-groups-consume-${Date.now()}`;
  await client.createTopic({ name: topic, partitions: PARTITIONS });
  const producer = new Producer(client);
  const value = new Uint8Array(RECORD_BYTES).fill(98);
  const ends = new Array<number>(PARTITIONS).fill(0);
  for (let i = 0; i < total; i += 5000) {
    const n = Math.min(5000, total - i);
    const sent = await Promise.all(Array.from({ length: n }, (_, j) => producer.send({ topic, messages: [{ value, partition: (i + j) % PARTITIONS }] })));
    for (const batch of sent) for (const m of batch) ends[m.partition] = Math.max(ends[m.partition] as number, m.offset + 1);
  }
  await producer.close();

  // Ceiling: the assign-based consumer over the same partitions; the first pass warms the
  // partition objects, the second is measured.
  let rawRate = 0;
  for (let pass = 0; pass < 2; pass++) {
    const raw = new Consumer(client, { autoOffsetReset: "earliest", maxWaitMs: 100, maxRecords: 5000 });
    raw.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition })));
    let rawCount = 0;
    const r0 = performance.now();
    while (rawCount < total) rawCount += (await raw.poll()).length;
    rawRate = total / ((performance.now() - r0) / 1000);
    raw.close();
  }

  const rows: Row[] = [{ name: "assign-based consumer, 6 partitions (no group)", value: rawRate, unit: "records/s" }];
  for (const n of [1, 3]) {
    const group = `bench-consume-${n}-${Date.now()}`;
    await client.alterGroup(group, { configs: { "heartbeat.interval.ms": 500 } });
    const next = new Array<number>(PARTITIONS).fill(0); // highest processed offset + 1, per partition
    let processed = 0;
    const consumers = Array.from({ length: n }, () => new GroupConsumer(client, { groupId: group, maxRecords: 5000, maxWaitMs: 100 }));
    const joined = performance.now();
    for (const c of consumers) {
      // Hold every partition until the group is stable, so the figure is the steady state of
      // n members (not one member draining the topic while the others join).
      c.on("assigned", (tps) => c.pause(tps.map((tp) => ({ topic: tp.topic, partitions: [tp.partition] }))));
      await c.subscribe({ topics: [topic], fromBeginning: true });
      await c.run({
        eachBatch: async ({ batch }) => {
          processed += batch.messages.length;
          next[batch.partition] = Math.max(next[batch.partition] as number, batch.lastOffset() + 1);
        },
      });
    }
    for (;;) {
      const d = await client.describeGroup(group);
      const owned = consumers.reduce((k, c) => k + c.assignment().length, 0);
      if (d.state === "Stable" && d.members.length === n && owned === PARTITIONS) break;
      await sleep(20);
    }
    const stableMs = performance.now() - joined;
    const t0 = performance.now();
    for (const c of consumers) c.resume([{ topic }]);
    await waitUntil(() => next.every((x, p) => x >= (ends[p] as number)), 300_000);
    const secs = (performance.now() - t0) / 1000;
    await Promise.all(consumers.map((c) => c.disconnect()));
    rows.push({
      name: `group consume, ${n} member${n === 1 ? "" : "s"}, stable group (formed in ${stableMs.toFixed(0)} ms; ${processed - total} redelivered)`,
      value: total / secs,
      unit: "records/s",
      ceilingName: "assign-based consumer",
      ceiling: rawRate,
    });
  }
  return rows;
}

/** Both benchmarks against any gateway (`client`). */
export async function benchGroups(client: EdgelogClient, quick: boolean): Promise<void> {
  printRows("Consumer groups: join -> stable assignment", await benchJoin(client, quick));
  printRows(`Consumer groups: consume throughput, 6 partitions, 256-byte records`, await benchConsume(client, quick));
}

export async function run(opts: { quick: boolean }): Promise<void> {
  const engine: Engine = await startEngine();
  try {
    await benchGroups(new EdgelogClient({ baseUrl: BASE, fetch: engine.fetch }), opts.quick);
  } finally {
    await engine.dispose();
  }
}

if ((import.meta as { main?: boolean }).main === true) await run({ quick: process.argv.includes("--quick") });
