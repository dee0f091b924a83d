/**
 * Kafka bridge benchmarks (run by `npm run bench -- --only kafka`, or alone:
 * `node bench/kafka-bridge.ts [--quick]`). Prints figures, each next to a ceiling measured in
 * the same run; asserts nothing.
 *
 * 1. Produce: kafkajs's producer (acks=all) through the bridge vs the SDK Producer straight to
 *    the gateway, the same 1 KiB keyed records to a 6-partition topic, `send()` of 1 000
 *    messages each, 4 sends in flight, rounds interleaved so both see the same background load.
 *    Floor (same rounds): kafkajs through a second bridge whose Edgelog appends are answered at
 *    once without an HTTP request (metadata still from the engine): what kafkajs's own CPU and
 *    the bridge's decoding allow before any Edgelog round trip.
 *    Own process (same rounds): kafkajs through `edgelog kafka-bridge` run as its own Node
 *    process, as deployed, so the bridge's CPU is off kafkajs's thread.
 * 2. Consumer catch-up: a kafkajs group consumer (eachBatch) through the bridge reading a
 *    topic from the beginning to its end vs the SDK's assign-based Consumer reading the same
 *    topic, same run (the SDK read before and after the kafkajs reads, averaged); without and
 *    without the bridge's fetch read-ahead (`fetchReadAhead`, on by default), A B B A, averaged.
 *
 * The Worker and its Durable Objects run in workerd (bench/engine.ts); the bridge talks to the
 * Worker's own socket over HTTP, as it would to a deployed gateway. kafkajs, the bridge and the
 * SDK share the bench's Node process, so the bridge's CPU competes with the client's.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Kafka, logLevel } from "kafkajs";
import { Consumer, EdgelogClient, Producer } from "../sdk/src/index.ts";
import { bridgeFetch, startKafkaBridge } from "../sdk/src/kafka-bridge/index.ts";
import { startEngine } from "./engine.ts";
import { closedLoop, fmt } from "./util.ts";

process.env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1";

interface Row {
  name: string;
  value: number;
  unit: string;
  ceilingName: string;
  ceiling: number;
  target: number;
}

function printRows(title: string, rows: Row[]): void {
  console.log(`\n## ${title}\n`);
  console.log("| measurement | value | ceiling (same run) | ratio | goal |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    const ratio = r.value / r.ceiling;
    console.log(
      `| ${r.name} | ${fmt(r.value)} ${r.unit} | ${fmt(r.ceiling)} ${r.unit} (${r.ceilingName}) | ${ratio.toFixed(2)}x | >= ${r.target}x ${ratio >= r.target ? "(met)" : "(not met)"} |`,
    );
  }
}

/** CPU time (user + system) of another process so far, ms; NaN where /proc is missing. */
function processCpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // clock ticks of 10 ms (USER_HZ 100)
  } catch {
    return Number.NaN;
  }
}

/** Edgelog appends (binary produce requests) seen by a counting fetch. */
interface Appends {
  n: number;
  bytes: number;
  /** Answers that were not 2xx, or that carried a throttle time (quotas, SECURITY.md). */
  errors: number;
  throttled: number;
}

/** kcat (librdkafka) on PATH, for the librdkafka row (skipped without it; .ci/run installs it). */
const HAS_KCAT = spawnSync("kcat", ["-V"], { stdio: "ignore" }).status === 0;

/**
 * `kcat -P` of `file` (one `key|value` record per line) to `topic` through the broker at
 * `port`, acks=all and the Java client's partitioner; resolves with the wall time from spawn
 * to exit, ms (its start-up and metadata request included).
 * @throws Error when kcat exits non-zero
 */
function kcatProduce(port: number, topic: string, file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let err = "";
    const child = spawn("kcat", ["-P", "-b", `127.0.0.1:${port}`, "-t", topic, "-K", "|", "-X", "acks=all", "-X", "topic.partitioner=murmur2_random", "-l", file], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`kcat -P exited ${code}: ${err}`))));
  });
}

const noAppends = (): Appends => ({ n: 0, bytes: 0, errors: 0, throttled: 0 });

function countingFetch(inner: typeof fetch, into: () => Appends): typeof fetch {
  return (input, init) => {
    if (init?.method === "POST" && init.body instanceof Uint8Array) {
      const a = into();
      a.n++;
      a.bytes += init.body.byteLength;
      return inner(input, init).then((res) => {
        if (!res.ok) a.errors++;
        if (res.headers.has("edgelog-throttle-time-ms")) a.throttled++;
        return res;
      });
    }
    return inner(input, init);
  };
}

export async function run({ quick }: { quick: boolean }): Promise<void> {
  const ROUNDS = quick ? 2 : 4;
  const PER_ROUND = quick ? 5_000 : 20_000;
  const CHUNK = 1_000;
  /** Untimed send() calls per producer path before the rounds. */
  const WARM_UP = quick ? 4 : 12;
  /** send() calls in flight at once, for both producers (an application producing from several tasks). */
  const IN_FLIGHT = 4;
  const PARTITIONS = 6;
  const value = Buffer.alloc(1024, 97);
  const engine = await startEngine();
  // Appends of each path in the current phase (per-round diagnostics).
  let appends = { bridge: noAppends(), direct: noAppends() };
  const client = new EdgelogClient({ baseUrl: engine.url });
  // The SDK producer with the SDK's default fetch, the bridges with the bridge's default
  // (bridgeFetch), as each is used; both counted.
  const directClient = new EdgelogClient({
    baseUrl: engine.url,
    fetch: countingFetch(
      (i, init) => globalThis.fetch(i, init),
      () => appends.direct,
    ),
  });
  const bridge = await startKafkaBridge({ url: engine.url, fetch: countingFetch(bridgeFetch, () => appends.bridge), port: 0, log: () => {} });
  // kafkajs's warnings and errors (retries, request timeouts, broker errors) are counted, not printed.
  const kafkajsLog: string[] = [];
  const logCreator = () => (entry: { namespace: string; log: { message: string } }) => void kafkajsLog.push(`${entry.namespace}: ${entry.log.message}`);
  const kafka = new Kafka({ brokers: [`127.0.0.1:${bridge.port}`], clientId: "bench", logLevel: logLevel.WARN, logCreator });
  const noReadAheadBridge = await startKafkaBridge({ url: engine.url, port: 0, log: () => {}, fetchReadAhead: false });
  const kafkaNoReadAhead = new Kafka({ brokers: [`127.0.0.1:${noReadAheadBridge.port}`], clientId: "bench", logLevel: logLevel.NOTHING });
  // The floor: appends answered at once, in-process (no HTTP); everything else from the engine.
  const instantAppends: typeof fetch = async (input, init) => {
    if (init?.method === "POST" && /\/partitions\/\d+\/records(\?|$)/.test(String(input)))
      return new Response(JSON.stringify({ topic: "t", partition: 0, baseOffset: 0, lastOffset: 0, logAppendTime: null, logStartOffset: 0 }), {
        headers: { "content-type": "application/json" },
      });
    return globalThis.fetch(input, init);
  };
  const floorBridge = await startKafkaBridge({ client: new EdgelogClient({ baseUrl: engine.url, fetch: instantAppends }), port: 0, log: () => {} });
  const floorKafka = new Kafka({ brokers: [`127.0.0.1:${floorBridge.port}`], clientId: "bench-floor", logLevel: logLevel.WARN, logCreator });
  // The CLI's bridge in its own process; its port is read from its "listening on" line.
  const cli: ChildProcess = spawn(process.execPath, [fileURLToPath(new URL("../sdk/bin/edgelog.js", import.meta.url).href), "kafka-bridge", "--url", engine.url, "--listen", "127.0.0.1:0"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const cliPort = await new Promise<number>((resolve, reject) => {
    let text = "";
    cli.once("exit", (code) => reject(new Error(`edgelog kafka-bridge exited (${code}): ${text}`)));
    cli.stderr!.on("data", (d: Buffer) => {
      text += d.toString();
      const m = /listening on \S+:(\d+),/.exec(text);
      if (m) resolve(Number(m[1]));
    });
  });
  // workerd (Miniflare's child) and the CLI bridge, for their CPU time per phase.
  const workerdPid = (() => {
    try {
      return Number(
        execFileSync("pgrep", ["-P", String(process.pid), "workerd"])
          .toString()
          .trim()
          .split("\n")[0],
      );
    } catch {
      return undefined;
    }
  })();
  let gcMs = 0;
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs += e.duration;
  });
  gcObserver.observe({ entryTypes: ["gc"] });
  const cliKafka = new Kafka({ brokers: [`127.0.0.1:${cliPort}`], clientId: "bench-cli", logLevel: logLevel.WARN, logCreator });
  try {
    const viaBridge = `kb-bridge-${Date.now()}`;
    const direct = `kb-direct-${Date.now()}`;
    await client.createTopic({ name: viaBridge, partitions: PARTITIONS });
    await client.createTopic({ name: direct, partitions: PARTITIONS });
    const ownProcess = `kb-cli-${Date.now()}`;
    await client.createTopic({ name: ownProcess, partitions: PARTITIONS });
    const viaKcat = `kb-kcat-${Date.now()}`;
    await client.createTopic({ name: viaKcat, partitions: PARTITIONS });
    const kcatDir = mkdtempSync(join(tmpdir(), "edgelog-bench-kcat-"));
    /** The round's records as kcat input lines (`key|value`), written untimed. */
    const kcatInput = (round: number): string => {
      const file = join(kcatDir, `round-${round}.txt`);
      const text = value.toString("latin1");
      const lines: string[] = [];
      for (let c = 0; c < PER_ROUND / CHUNK; c++) for (const m of messages(round, c)) lines.push(`${m.key}|${text}`);
      writeFileSync(file, `${lines.join("\n")}\n`);
      return file;
    };

    const kProducer = kafka.producer({ allowAutoTopicCreation: false });
    await kProducer.connect();
    const floorProducer = floorKafka.producer({ allowAutoTopicCreation: false });
    await floorProducer.connect();
    const cliProducer = cliKafka.producer({ allowAutoTopicCreation: false });
    await cliProducer.connect();
    const sdkProducer = new Producer(directClient);
    const messages = (round: number, chunk: number) => Array.from({ length: CHUNK }, (_, i) => ({ key: `k${(round * PER_ROUND + chunk * CHUNK + i) % 1000}`, value }));
    // Warm-up (untimed): connections, isolates, objects, and WARM_UP sends per path, IN_FLIGHT at
    // a time as in the rounds, so that kafkajs's, the bridge's (its merge of queued batches runs
    // only with sends in flight together) and the SDK's code is optimised before the first timed
    // round (a cold first round ran at a third to half the speed of the others).
    await closedLoop(WARM_UP, IN_FLIGHT, async (c) => void (await kProducer.send({ topic: viaBridge, messages: messages(0, c) })));
    await closedLoop(WARM_UP, IN_FLIGHT, async (c) => void (await floorProducer.send({ topic: viaBridge, messages: messages(0, c) })));
    await closedLoop(WARM_UP, IN_FLIGHT, async (c) => void (await cliProducer.send({ topic: ownProcess, messages: messages(0, c) })));
    await closedLoop(WARM_UP, IN_FLIGHT, (c) =>
      sdkProducer.send({ topic: direct, messages: messages(0, c).map((m) => ({ key: m.key, value: new Uint8Array(m.value) })) }).then(() => undefined),
    );
    // Each kafkajs producer is connected only around its own phase (untimed): a connected
    // kafkajs client re-arms a 1 ms timer forever (docs/benchmarks.md), which would take CPU
    // from the other phases.
    await kProducer.disconnect();
    await floorProducer.disconnect();
    await cliProducer.disconnect();

    let bridgeMs = 0;
    let directMs = 0;
    let floorMs = 0;
    let cliMs = 0;
    /** CPU time of this process (kafkajs + bridge, or the SDK producer), ms. */
    const cpu = { bridge: 0, direct: 0, floor: 0, cli: 0 };
    /** CPU time of workerd during each path's phases, and of the CLI bridge process, ms. */
    const workerdCpu = { bridge: 0, direct: 0, cli: 0, kcat: 0 };
    let cliBridgeCpu = 0;
    /** The librdkafka row (kcat through the own-process bridge): wall time, the bridge's CPU, records. */
    const kcat = { ms: 0, bridgeCpu: 0, records: 0 };
    if (HAS_KCAT) await kcatProduce(cliPort, viaKcat, kcatInput(0)); // warm-up, untimed
    const roundLines: string[] = [];
    const cpuMs = (): number => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      appends = { bridge: noAppends(), direct: noAppends() };
      const gc = { bridge: 0, direct: 0 };
      const runBridge = async (): Promise<number> => {
        await kProducer.connect();
        const t0 = performance.now();
        const c0 = cpuMs();
        const w0 = processCpuMs(workerdPid);
        const g0 = gcMs;
        await closedLoop(PER_ROUND / CHUNK, IN_FLIGHT, async (c) => void (await kProducer.send({ topic: viaBridge, acks: -1, messages: messages(round, c) })));
        cpu.bridge += cpuMs() - c0;
        workerdCpu.bridge += processCpuMs(workerdPid) - w0;
        gc.bridge = gcMs - g0;
        const ms = performance.now() - t0;
        await kProducer.disconnect();
        return ms;
      };
      const runDirect = async (): Promise<number> => {
        const t0 = performance.now();
        const c0 = cpuMs();
        const w0 = processCpuMs(workerdPid);
        const g0 = gcMs;
        await closedLoop(
          PER_ROUND / CHUNK,
          IN_FLIGHT,
          async (c) => void (await sdkProducer.send({ topic: direct, messages: messages(round, c).map((m) => ({ key: m.key, value: new Uint8Array(m.value) })) })),
        );
        await sdkProducer.flush();
        cpu.direct += cpuMs() - c0;
        workerdCpu.direct += processCpuMs(workerdPid) - w0;
        gc.direct = gcMs - g0;
        return performance.now() - t0;
      };
      const [b, d] =
        round % 2 === 0
          ? [await runBridge(), await runDirect()]
          : await (async () => {
              const d = await runDirect();
              return [await runBridge(), d];
            })();
      bridgeMs += b;
      directMs += d;
      ratios.push(d / b);
      const kb = (a: Appends): string => `${fmt(a.bytes / Math.max(1, a.n) / 1024)} KiB (${a.errors} errors, ${a.throttled} throttled)`;
      roundLines.push(
        `round ${round} (${round % 2 === 0 ? "bridge first" : "SDK first"}): ${(d / b).toFixed(2)}x; bridge ${fmt(b)} ms, ${appends.bridge.n} appends of ${kb(appends.bridge)}, GC ${fmt(gc.bridge)} ms; SDK ${fmt(d)} ms, ${appends.direct.n} appends of ${kb(appends.direct)}, GC ${fmt(gc.direct)} ms`,
      );
      await floorProducer.connect();
      const f0 = performance.now();
      const c0 = cpuMs();
      await closedLoop(PER_ROUND / CHUNK, IN_FLIGHT, async (c) => void (await floorProducer.send({ topic: viaBridge, acks: -1, messages: messages(round, c) })));
      cpu.floor += cpuMs() - c0;
      floorMs += performance.now() - f0;
      await floorProducer.disconnect();
      await cliProducer.connect();
      const p0 = performance.now();
      const pc0 = cpuMs();
      const pw0 = processCpuMs(workerdPid);
      const pb0 = processCpuMs(cli.pid);
      await closedLoop(PER_ROUND / CHUNK, IN_FLIGHT, async (c) => void (await cliProducer.send({ topic: ownProcess, acks: -1, messages: messages(round, c) })));
      cliMs += performance.now() - p0;
      cpu.cli += cpuMs() - pc0;
      workerdCpu.cli += processCpuMs(workerdPid) - pw0;
      cliBridgeCpu += processCpuMs(cli.pid) - pb0;
      await cliProducer.disconnect();
      if (HAS_KCAT) {
        const file = kcatInput(round);
        const kw0 = processCpuMs(workerdPid);
        const kb0 = processCpuMs(cli.pid);
        kcat.ms += await kcatProduce(cliPort, viaKcat, file);
        workerdCpu.kcat += processCpuMs(workerdPid) - kw0;
        kcat.bridgeCpu += processCpuMs(cli.pid) - kb0;
        kcat.records += PER_ROUND;
      }
    }
    await sdkProducer.close();
    const produced = ROUNDS * PER_ROUND;
    if (HAS_KCAT) {
      // Every record kcat sent (warm-up included) must be in the topic, or its rate means nothing.
      let stored = 0;
      for (let p = 0; p < PARTITIONS; p++) stored += (await client.listOffsets(viaKcat, p, "latest")).offset ?? 0;
      if (stored !== kcat.records + PER_ROUND) throw new Error(`kcat phase: ${stored} records stored, ${kcat.records + PER_ROUND} sent`);
    }
    rmSync(kcatDir, { recursive: true, force: true });

    // Consumer catch-up over the same topic (the one the bridge wrote, warm-up records included).
    const total = produced + WARM_UP * CHUNK;
    const sdkRead = async (): Promise<number> => {
      const consumer = new Consumer(client, { maxRecords: 10_000 });
      consumer.assign(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: viaBridge, partition })));
      await consumer.seekToBeginning();
      const t0 = performance.now();
      let n = 0;
      while (n < total) n += (await consumer.poll({ maxWaitMs: 0 })).length;
      const ms = performance.now() - t0;
      consumer.close();
      return ms;
    };
    const kafkaRead = async (via: Kafka): Promise<number> => {
      const t0 = performance.now();
      const consumer = via.consumer({ groupId: `kb-bench-${Date.now()}-${Math.random()}`, maxBytesPerPartition: 4 * 1024 * 1024, maxBytes: 24 * 1024 * 1024 });
      await consumer.connect();
      await consumer.subscribe({ topic: viaBridge, fromBeginning: true });
      let n = 0;
      await new Promise<void>((resolve) => {
        void consumer.run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            n += batch.messages.length;
            if (n >= total) resolve();
          },
        });
      });
      const ms = performance.now() - t0;
      await consumer.disconnect();
      return ms;
    };
    // One untimed read of each kind first (as the produce phases warm up), then the timed
    // reads in A B B A order (default, without read-ahead, without, default) so neither gets the warmer storage.
    await sdkRead();
    await kafkaRead(kafka);
    await kafkaRead(kafkaNoReadAhead);
    const reads = { sdk: [await sdkRead()], bridge: [await kafkaRead(kafka)], noReadAhead: [await kafkaRead(kafkaNoReadAhead)] };
    reads.noReadAhead.push(await kafkaRead(kafkaNoReadAhead));
    reads.bridge.push(await kafkaRead(kafka));
    reads.sdk.push(await sdkRead());
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
    const [sdkMs, kafkaMs, kafkaNoReadAheadMs] = [mean(reads.sdk), mean(reads.bridge), mean(reads.noReadAhead)];

    printRows("Kafka bridge (kafkajs through the bridge vs the SDK direct)", [
      {
        name: `produce, ${fmt(produced)} x 1 KiB records, send() of ${CHUNK}, ${IN_FLIGHT} in flight`,
        value: produced / (bridgeMs / 1000),
        unit: "records/s",
        ceilingName: "SDK Producer direct",
        ceiling: produced / (directMs / 1000),
        target: 0.7,
      },
      {
        name: "produce floor: kafkajs + bridge, appends answered at once (no Edgelog)",
        value: produced / (floorMs / 1000),
        unit: "records/s",
        ceilingName: "SDK Producer direct",
        ceiling: produced / (directMs / 1000),
        target: 0.7,
      },
      {
        name: "produce, bridge in its own process (edgelog kafka-bridge)",
        value: produced / (cliMs / 1000),
        unit: "records/s",
        ceilingName: "SDK Producer direct",
        ceiling: produced / (directMs / 1000),
        target: 0.7,
      },
      ...(HAS_KCAT
        ? [
            {
              name: `produce, librdkafka (kcat -P, ${fmt(kcat.records)} records, its own batching) through the bridge in its own process`,
              value: kcat.records / (kcat.ms / 1000),
              unit: "records/s",
              ceilingName: "SDK Producer direct",
              ceiling: produced / (directMs / 1000),
              target: 0.7,
            },
          ]
        : []),
      {
        name: `consumer catch-up, ${fmt(total)} records from the beginning`,
        value: total / (kafkaMs / 1000),
        unit: "records/s",
        ceilingName: "SDK Consumer direct",
        ceiling: total / (sdkMs / 1000),
        target: 0.7,
      },
      {
        name: "consumer catch-up without the bridge's fetch read-ahead (fetchReadAhead: false)",
        value: total / (kafkaNoReadAheadMs / 1000),
        unit: "records/s",
        ceilingName: "SDK Consumer direct",
        ceiling: total / (sdkMs / 1000),
        target: 0.7,
      },
    ]);
    console.log(`\nPer-round produce ratios (${ROUNDS} interleaved rounds): ${ratios.map((r) => `${r.toFixed(2)}x`).join(", ")}`);
    const perK = (ms: number): string => fmt(ms / (produced / 1000));
    for (const line of roundLines) console.log(line);
    console.log(`kafkajs warnings and errors logged (all phases): ${kafkajsLog.length}${kafkajsLog.length > 0 ? ` (first: ${kafkajsLog.slice(0, 3).join("; ")})` : ""}`);
    console.log(
      `Produce CPU of the bench process per 1 000 records: SDK Producer ${perK(cpu.direct)} ms; kafkajs + bridge ${perK(cpu.bridge)} ms; kafkajs + bridge with appends answered at once ${perK(cpu.floor)} ms; kafkajs alone (bridge in its own process) ${perK(cpu.cli)} ms`,
    );
    console.log(
      `Produce CPU of workerd per 1 000 records: SDK path ${perK(workerdCpu.direct)} ms; bridge path ${perK(workerdCpu.bridge)} ms; own-process bridge path ${perK(workerdCpu.cli)} ms. CPU of the bridge's own process per 1 000 records: ${perK(cliBridgeCpu)} ms`,
    );
    const sdkTotal = cpu.direct + workerdCpu.direct;
    console.log(
      `Whole-path CPU per 1 000 records (all processes): SDK path ${perK(sdkTotal)} ms; kafkajs + bridge in-process ${perK(cpu.bridge + workerdCpu.bridge)} ms (ratio if CPU-bound: ${(sdkTotal / (cpu.bridge + workerdCpu.bridge)).toFixed(2)}x); bridge in its own process ${perK(cpu.cli + cliBridgeCpu + workerdCpu.cli)} ms (${(sdkTotal / (cpu.cli + cliBridgeCpu + workerdCpu.cli)).toFixed(2)}x)`,
    );
    // The machine's bound: every process of a path shares this machine's cores, so a path that
    // needs C ms of CPU per 1 000 records cannot pass cores x 1 000 / C x 1 000 records/s
    // however well its processes overlap. For the own-process path, also what the bridge
    // process may spend at most for the goal, given what kafkajs and workerd spent.
    const cores = availableParallelism();
    const sdkRate = produced / (directMs / 1000);
    const boundOf = (cpuMs: number): number => (cores * 1000 * 1000) / (cpuMs / (produced / 1000)) / sdkRate;
    const goalBudget = (cores * 1000 * 1000) / (0.7 * sdkRate) - (cpu.cli + workerdCpu.cli) / (produced / 1000);
    console.log(
      `Machine bound (${cores} cores shared by every process of a path): in-process bridge path at most ${boundOf(cpu.bridge + workerdCpu.bridge).toFixed(2)}x of the SDK's ${fmt(sdkRate)} records/s, own-process path at most ${boundOf(cpu.cli + cliBridgeCpu + workerdCpu.cli).toFixed(2)}x; for 0.7x the own-process bridge could spend ${fmt(goalBudget)} ms per 1 000 records beside kafkajs and workerd (it spent ${perK(cliBridgeCpu)} ms)`,
    );
    if (HAS_KCAT)
      console.log(
        `librdkafka (kcat) through the own-process bridge, CPU per 1 000 records: bridge process ${fmt(kcat.bridgeCpu / (kcat.records / 1000))} ms, workerd ${fmt(workerdCpu.kcat / (kcat.records / 1000))} ms (kcat's own not measured: it is a child that exits)`,
      );
    console.log(`Catch-up reads, ms: SDK ${reads.sdk.map(fmt).join(", ")}; kafkajs ${reads.bridge.map(fmt).join(", ")}; kafkajs without read-ahead ${reads.noReadAhead.map(fmt).join(", ")}`);
    console.log("Catch-up: the kafkajs time includes its connect and group join (one JoinGroup + SyncGroup through the bridge), the SDK's starts at its first poll.");
  } finally {
    if (cli.exitCode === null) {
      const exited = new Promise((resolve) => cli.once("exit", resolve));
      cli.kill("SIGINT");
      await exited;
    }
    gcObserver.disconnect();
    await floorBridge.close();
    await noReadAheadBridge.close();
    await bridge.close();
    await engine.dispose();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
  await run({ quick: values.quick === true });
}
