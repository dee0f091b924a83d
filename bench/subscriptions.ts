/**
 * Subscription benchmarks (issue 17; `npm run bench -- --only subscriptions [--quick]`, or
 * `node bench/subscriptions.ts [--quick]`). Prints figures, each next to a ceiling measured in
 * the same run, interleaved in rounds so that both see the same background load; asserts nothing.
 *
 * 1. Latency: produce -> WebSocket receive, p50 and p99, with one-record produce requests sent
 *    open-loop at 1,000 msg/s to a 1-partition topic and one exclusive consumer that acks
 *    cumulatively on every frame. Ceiling: the long-poll fetch wake p99 (a fetch waiting at
 *    the log end, then one append; append sent -> fetch answered, as `--only core` measures it).
 *    Goal: WS p99 <= 2x long-poll p99. Reference: the WebSocket wake measured the same way as
 *    the long poll (one append at a time, append sent -> message received).
 * 2. Fan-out: messages/s delivered to 100 exclusive subscriptions (one socket each) of a
 *    1-partition topic while batches of 100 records are produced, against BenchDO's broadcast
 *    room sending the same `messages` frames to 100 sockets without touching storage
 *    (`/bench/broadcast/:name`). Both clocks run from the first request to the last message
 *    received by the last socket. Goal >= 0.5x.
 * 3. Shared subscription throughput: a backlog of N records on a 1-partition topic drained by a
 *    new shared subscription with 4 consumers vs 1 consumer (each acks every message
 *    individually, one ack frame per received frame), timed from the first connect until every
 *    ack receipt arrived. Goal: 4 consumers >= 1.0x of 1.
 *
 * Clients are raw WebSockets (Node's built-in) and undici HTTP straight to the Worker's socket
 * in workerd (bench/engine.ts `url`, `directFetch`), so the same client code serves a figure
 * and its ceiling. Everything runs on one machine: the client's CPU competes with workerd's.
 */
import { loadavg } from "node:os";
import { EdgelogClient, Producer } from "../sdk/src/index.ts";
import { startEngine, type Engine } from "./engine.ts";
import { closedLoop, fmt, pct } from "./util.ts";

interface Row {
  name: string;
  value: number;
  unit: string;
  ceilingName?: string;
  ceiling?: number;
  /** The goal on value / ceiling: at least (`>=`) or at most (`<=`) this ratio. */
  target?: { op: ">=" | "<="; ratio: number };
}

function printRows(title: string, rows: Row[]): void {
  console.log(`\n## ${title}\n`);
  console.log("| measurement | value | ceiling (same run) | ratio | target |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    const ratio = r.ceiling ? r.value / r.ceiling : undefined;
    const met = r.target === undefined || ratio === undefined ? undefined : r.target.op === ">=" ? ratio >= r.target.ratio : ratio <= r.target.ratio;
    console.log(
      `| ${r.name} | ${fmt(r.value)} ${r.unit} | ${r.ceiling !== undefined ? `${fmt(r.ceiling)} ${r.unit} (${r.ceilingName})` : "-"} | ${ratio !== undefined ? `${ratio.toFixed(2)}x` : "-"} | ${r.target !== undefined ? `${r.target.op} ${r.target.ratio}x ${met ? "(met)" : "(not met)"}` : "-"} |`,
    );
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const sorted = (xs: number[]): number[] => [...xs].sort((a, b) => a - b);
const list = (xs: number[]): string => xs.map((x) => `${x.toFixed(2)}x`).join(", ");

/** A message as the server's `messages` frame carries it (encoding `string`). */
interface WireMessage {
  messageId: string;
  offset: number;
  value: string | null;
}

/**
 * A raw WebSocket that parses every text frame as JSON and hands `messages` frames to
 * `onMessages`; `open()` resolves on the first frame (`connected` for a consumer), or on
 * `open` when `greeting` is false (broadcast sockets get no greeting).
 */
class RawSocket {
  readonly ws: WebSocket;
  onMessages: (ms: WireMessage[], atMs: number) => void = () => undefined;
  /** Sum of `acked` over the `acked` receipts received. */
  acked = 0;
  #requests = 0;

  private constructor(url: string) {
    this.ws = new WebSocket(url);
  }

  static async open(url: string, greeting: boolean): Promise<RawSocket> {
    const s = new RawSocket(url);
    await new Promise<void>((resolve, reject) => {
      s.ws.addEventListener("error", () => reject(new Error(`WebSocket ${url} failed`)));
      s.ws.addEventListener("close", (e) => reject(new Error(`WebSocket ${url} closed: ${e.code} ${e.reason}`)));
      if (!greeting) s.ws.addEventListener("open", () => resolve());
      s.ws.addEventListener("message", (e) => {
        const atMs = performance.now();
        const f = JSON.parse(String(e.data)) as { type: string; messages?: WireMessage[]; acked?: number; code?: string; message?: string };
        if (f.type === "connected") resolve();
        else if (f.type === "messages" && f.messages !== undefined) s.onMessages(f.messages, atMs);
        else if (f.type === "acked") s.acked += f.acked ?? 0;
        else if (f.type === "error") throw new Error(`server error frame: ${f.code} ${f.message}`);
      });
    });
    return s;
  }

  ack(ids: string[]): void {
    for (let i = 0; i < ids.length; i += 1000) this.ws.send(JSON.stringify({ type: "ack", messageIds: ids.slice(i, i + 1000), requestId: `r${this.#requests++}` }));
  }

  ackCumulative(id: string): void {
    this.ws.send(JSON.stringify({ type: "ackCumulative", messageId: id, requestId: `r${this.#requests++}` }));
  }

  close(): void {
    this.ws.close(1000, "bench done");
  }
}

/** A harness over one engine: direct HTTP and WebSocket URLs. */
class Harness {
  readonly engine: Engine;
  readonly client: EdgelogClient;
  readonly ws: string;
  constructor(engine: Engine) {
    this.engine = engine;
    this.client = new EdgelogClient({ baseUrl: engine.url, fetch: engine.directFetch });
    this.ws = engine.url.replace(/^http/, "ws");
  }

  async post(path: string, body: string): Promise<unknown> {
    const res = await this.engine.directFetch(`${this.engine.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const text = await res.text();
    if (!res.ok) throw new Error(`POST ${path}: HTTP ${res.status}: ${text}`);
    return JSON.parse(text) as unknown;
  }

  produce(topic: string, values: string[]): Promise<unknown> {
    return this.post(`/v1/topics/${topic}/partitions/0/records`, JSON.stringify({ records: values.map((value) => ({ value })) }));
  }

  consumer(topic: string, sub: string, query: Record<string, string>): Promise<RawSocket> {
    const q = new URLSearchParams({ encoding: "string", ...query });
    return RawSocket.open(`${this.ws}/v1/topics/${topic}/partitions/0/subscriptions/${sub}/ws?${q}`, true);
  }
}

/** 1. Produce -> WebSocket receive latency at 1,000 msg/s, against the long-poll wake. */
async function latency(h: Harness, quick: boolean): Promise<void> {
  const RATE = 1000;
  const ROUNDS = quick ? 2 : 4;
  const STREAM_MS = quick ? 1500 : 2500;
  const WAKES = quick ? 30 : 60;
  const topic = "bench-subs-latency";
  const wakeTopic = "bench-subs-wake";
  const wsWakeTopic = "bench-subs-ws-wake";
  for (const t of [topic, wakeTopic, wsWakeTopic]) await h.client.createTopic({ name: t, partitions: 1 });

  // Two consumers follow the same stream: the WebSocket subscription and a long-poll fetch
  // loop. A message's latency at each is its arrival minus the time it was handed to the producer.
  const sentAt = new Map<number, number>();
  const wsWaiting = new Set<number>();
  const lpWaiting = new Set<number>();
  let wsLat: number[] = [];
  let lpLat: number[] = [];
  const c = await h.consumer(topic, "lat", { type: "exclusive" });
  c.onMessages = (ms, atMs) => {
    for (const m of ms) {
      const n = Number(m.value);
      if (wsWaiting.delete(n)) wsLat.push(atMs - (sentAt.get(n) as number));
    }
    const last = ms.at(-1);
    if (last !== undefined) c.ackCumulative(last.messageId);
  };
  let following = true;
  const follower = (async () => {
    const decoder = new TextDecoder();
    let offset = 0;
    while (following) {
      const r = await h.client.fetchRecords(topic, 0, { offset, maxWaitMs: 1_000 });
      const atMs = performance.now();
      for (const rec of r.records) {
        const n = Number(decoder.decode(rec.value ?? new Uint8Array()));
        if (lpWaiting.delete(n)) lpLat.push(atMs - (sentAt.get(n) as number));
      }
      offset = r.nextOffset;
    }
  })();
  // The user path to 1,000 msg/s: the SDK producer, batching what arrives within lingerMs 1.
  const producer = new Producer(h.client, { lingerMs: 1 });
  let seq = 0;
  /**
   * Hands one message at a time to the producer open-loop at RATE for `ms` (`sdk`: the SDK
   * producer; `single`: one produce request per message); waits until both consumers got every
   * one. Answers their latencies, the produce-ack latencies and the rate achieved.
   */
  const stream = async (ms: number, mode: "sdk" | "single"): Promise<{ ws: number[]; lp: number[]; ack: number[]; rate: number }> => {
    wsLat = [];
    lpLat = [];
    const ack: number[] = [];
    const t0 = performance.now();
    const first = seq;
    const pending: Promise<unknown>[] = [];
    for (;;) {
      const elapsed = performance.now() - t0;
      if (elapsed >= ms) break;
      const due = first + Math.floor((elapsed * RATE) / 1000);
      for (; seq <= due; seq++) {
        const ts = performance.now();
        sentAt.set(seq, ts);
        wsWaiting.add(seq);
        lpWaiting.add(seq);
        const sent = mode === "sdk" ? producer.send({ topic, messages: [{ value: String(seq) }] }) : h.produce(topic, [String(seq)]);
        pending.push(sent.then(() => ack.push(performance.now() - ts)));
      }
      await sleep(1);
    }
    await Promise.all(pending);
    while (wsWaiting.size > 0 || lpWaiting.size > 0) await sleep(5);
    sentAt.clear();
    return { ws: wsLat, lp: lpLat, ack, rate: ((seq - first) * 1000) / ms };
  };

  // The WebSocket wake, one append at a time (the long poll's method).
  const w = await h.consumer(wsWakeTopic, "wake", { type: "exclusive" });
  let arrived: ((atMs: number) => void) | null = null;
  w.onMessages = (ms, atMs) => {
    arrived?.(atMs);
    const last = ms.at(-1);
    if (last !== undefined) w.ackCumulative(last.messageId);
  };
  const wsWakes = async (n: number, out: number[]): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const got = new Promise<number>((r) => (arrived = r));
      const ts = performance.now();
      const prod = h.produce(wsWakeTopic, [String(i)]);
      out.push((await got) - ts);
      await prod;
      await sleep(2);
    }
  };

  let wakeOffset = 0;
  const longPolls = async (n: number, out: number[]): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const waiting = h.client.fetchRecords(wakeTopic, 0, { offset: wakeOffset, maxWaitMs: 10_000 });
      await sleep(2); // let the fetch reach the object
      const ts = performance.now();
      const prod = h.produce(wakeTopic, [String(i)]);
      const got = await waiting;
      out.push(performance.now() - ts);
      await prod;
      if (got.records.length !== 1) throw new Error(`long-poll round ${i} woke with ${got.records.length} records`);
      wakeOffset++;
    }
  };

  // Warm-up (not measured).
  await stream(500, "sdk");
  await stream(300, "single");
  await longPolls(10, []);
  await wsWakes(10, []);

  const longPoll: number[] = [];
  const wsWake: number[] = [];
  const sdk = { ws: [] as number[], lp: [] as number[], ack: [] as number[], rates: [] as number[] };
  const single = { ws: [] as number[], lp: [] as number[], ack: [] as number[], rates: [] as number[] };
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const steps = [
      async () => longPolls(WAKES, longPoll),
      async () => {
        const r = await stream(STREAM_MS, "sdk");
        sdk.ws.push(...r.ws);
        sdk.lp.push(...r.lp);
        sdk.ack.push(...r.ack);
        sdk.rates.push(r.rate);
        ratios.push(pct(sorted(r.ws), 99) / pct(sorted(r.lp), 99));
      },
      async () => wsWakes(WAKES, wsWake),
      async () => {
        const r = await stream(STREAM_MS, "single");
        single.ws.push(...r.ws);
        single.lp.push(...r.lp);
        single.ack.push(...r.ack);
        single.rates.push(r.rate);
      },
    ];
    for (const step of round % 2 === 0 ? steps : [...steps].reverse()) await step();
  }
  following = false;
  await follower;
  c.close();
  w.close();
  await producer.close();

  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const p = (xs: number[], q: number) => pct(sorted(xs), q);
  const follow = (xs: number[], q: number) => ({ ceilingName: `long-poll fetch loop following the same messages, p${q}`, ceiling: p(xs, q) });
  const wake = (q: number) => ({ ceilingName: `long-poll wake p${q}, one append at a time, ${longPoll.length} wakes`, ceiling: p(longPoll, q) });
  printRows("Subscriptions 1: produce -> WebSocket receive latency (1-partition topic, one exclusive consumer acking cumulatively)", [
    {
      name: `WS receive latency p50 at ${RATE} msg/s, SDK producer (lingerMs 1; achieved ${fmt(avg(sdk.rates))} msg/s, ${sdk.ws.length} messages)`,
      value: p(sdk.ws, 50),
      unit: "ms",
      ...follow(sdk.lp, 50),
    },
    { name: `WS receive latency p99 at ${RATE} msg/s, SDK producer`, value: p(sdk.ws, 99), unit: "ms", ...follow(sdk.lp, 99), target: { op: "<=", ratio: 2 } },
    { name: "the same WS p99 against the long-poll wake measured alone", value: p(sdk.ws, 99), unit: "ms", ...wake(99), target: { op: "<=", ratio: 2 } },
    { name: "reference: the same messages' produce ack latency p50 (send() called -> resolved)", value: p(sdk.ack, 50), unit: "ms", ...follow(sdk.lp, 50) },
    { name: "reference: the same messages' produce ack latency p99", value: p(sdk.ack, 99), unit: "ms", ...follow(sdk.lp, 99) },
    {
      name: `reference: WS receive latency p50 at ${RATE} msg/s, one produce request per message (achieved ${fmt(avg(single.rates))} msg/s)`,
      value: p(single.ws, 50),
      unit: "ms",
      ...follow(single.lp, 50),
    },
    { name: "reference: the same, p99", value: p(single.ws, 99), unit: "ms", ...follow(single.lp, 99) },
    { name: "reference: the same requests' produce ack latency p99", value: p(single.ack, 99), unit: "ms", ...follow(single.lp, 99) },
    { name: "reference: WS wake p50 (one append at a time, as the long poll)", value: p(wsWake, 50), unit: "ms", ...wake(50) },
    { name: "reference: WS wake p99", value: p(wsWake, 99), unit: "ms", ...wake(99) },
  ]);
  console.log(`\nPer-round ratios (WS receive p99 / long-poll follower p99 on the same messages, SDK producer at ${RATE} msg/s, ${ROUNDS} interleaved rounds): ${list(ratios)}`);
}

/** 2. Fan-out to 100 subscriptions against a broadcast of the same frames to 100 sockets. */
async function fanout(h: Harness, quick: boolean): Promise<void> {
  const SUBSCRIBERS = 100;
  const BATCH = 100;
  const MESSAGES = quick ? 2_000 : 5_000;
  const ROUNDS = quick ? 2 : 4;
  const CONCURRENCY = 4;
  const topic = "bench-subs-fanout";
  const bare = "bench-subs-fanout-bare";
  const room = `fanout-${Date.now()}`;
  await h.client.createTopic({ name: topic, partitions: 1 });
  await h.client.createTopic({ name: bare, partitions: 1 });
  const value = "v".repeat(100);

  // Per socket: messages received in the current round; subscription sockets ack cumulatively
  // every ACK_EVERY messages (half the default window of 1,000 permits).
  const ACK_EVERY = 500;
  let roundDone: () => void = () => undefined;
  let remaining = 0;
  const track = (s: RawSocket, ack: boolean) => {
    let got = 0;
    let sinceAck = 0;
    s.onMessages = (ms) => {
      got += ms.length;
      sinceAck += ms.length;
      const last = ms.at(-1);
      if (ack && last !== undefined && sinceAck >= ACK_EVERY) {
        s.ackCumulative(last.messageId);
        sinceAck = 0;
      }
      if (got >= MESSAGES) {
        got -= MESSAGES;
        if (--remaining === 0) roundDone();
      }
    };
  };
  const subs: RawSocket[] = [];
  const casts: RawSocket[] = [];
  for (let i = 0; i < SUBSCRIBERS; i += 10) {
    subs.push(...(await Promise.all(Array.from({ length: 10 }, (_, k) => h.consumer(topic, `f${i + k}`, { type: "exclusive" })))));
    casts.push(...(await Promise.all(Array.from({ length: 10 }, () => RawSocket.open(`${h.ws}/bench/broadcast/${room}`, false)))));
  }
  for (const s of subs) track(s, true);
  for (const s of casts) track(s, false);

  let nextOffset = 0;
  let nextValue = 0;
  const produceRound = (to = topic): Promise<number> =>
    closedLoop(MESSAGES / BATCH, CONCURRENCY, async () => {
      await h.produce(
        to,
        Array.from({ length: BATCH }, () => `${value}${nextValue++}`),
      );
    });
  // The same frames as the subscription sends (the wire shape of docs/PROTOCOL.md, encoding string).
  const frame = (): string => {
    const ts = Date.now();
    const messages = Array.from({ length: BATCH }, () => {
      const offset = nextOffset++;
      return { messageId: `0000:${String(offset).padStart(16, "0")}`, partition: 0, offset, timestamp: ts, key: null, value: `${value}${offset}`, headers: [], redeliveryCount: 0 };
    });
    return JSON.stringify({ type: "messages", messages });
  };
  const broadcastRound = (): Promise<number> =>
    closedLoop(MESSAGES / BATCH, CONCURRENCY, async () => {
      const r = (await h.post(`/bench/broadcast/${room}`, frame())) as { sockets: number };
      if (r.sockets !== SUBSCRIBERS) throw new Error(`broadcast reached ${r.sockets} sockets`);
    });
  /** Runs one side's round: from the first request until every socket of that side has MESSAGES more. */
  const timed = async (send: () => Promise<number>): Promise<number> => {
    remaining = SUBSCRIBERS;
    const done = new Promise<void>((r) => (roundDone = r));
    const t0 = performance.now();
    await send();
    await done;
    return (performance.now() - t0) / 1000;
  };

  // Warm-up round of each (not measured).
  await timed(() => produceRound());
  await timed(broadcastRound);
  await produceRound(bare);
  let subSecs = 0;
  let castSecs = 0;
  let bareSecs = 0;
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let s: number;
    let b: number;
    if (round % 2 === 0) {
      s = await timed(() => produceRound());
      b = await timed(broadcastRound);
    } else {
      b = await timed(broadcastRound);
      s = await timed(() => produceRound());
    }
    subSecs += s;
    castSecs += b;
    ratios.push(b / s);
    // The produce requests alone (a topic without subscriptions): the part of a round no fan-out can remove.
    bareSecs += await produceRound(bare);
  }
  for (const s of [...subs, ...casts]) s.close();
  const delivered = SUBSCRIBERS * MESSAGES * ROUNDS;
  printRows(`Subscriptions 2: fan-out to ${SUBSCRIBERS} subscribers (1-partition topic)`, [
    {
      name: `messages delivered/s to ${SUBSCRIBERS} exclusive subscriptions (${MESSAGES} per round, produced in batches of ${BATCH}, ${CONCURRENCY} requests in flight)`,
      value: delivered / subSecs,
      unit: "msg/s",
      ceilingName: `BenchDO broadcasting the same frames to ${SUBSCRIBERS} sockets, no storage`,
      ceiling: delivered / castSecs,
      target: { op: ">=", ratio: 0.5 },
    },
    {
      name: `reference: the round's produce requests alone (a topic without subscriptions), seconds per ${MESSAGES} messages`,
      value: (bareSecs / ROUNDS) * 1000,
      unit: "ms",
      ceilingName: "a fan-out round, first request to last delivery",
      ceiling: (subSecs / ROUNDS) * 1000,
    },
  ]);
  console.log(`\nPer-round ratios (${ROUNDS} interleaved rounds): ${list(ratios)}`);
}

/** 3. Shared subscription: 4 consumers against 1 draining the same backlog. */
async function shared(h: Harness, quick: boolean): Promise<void> {
  const N = quick ? 10_000 : 40_000;
  const ROUNDS = quick ? 3 : 5;
  const topic = "bench-subs-shared";
  await h.client.createTopic({ name: topic, partitions: 1 });
  const value = "v".repeat(100);
  for (let i = 0; i < N; i += 500)
    await h.produce(
      topic,
      Array.from({ length: 500 }, (_, j) => `${value}${i + j}`),
    );

  /** Drains the backlog with a new shared subscription of `consumers` consumers; answers seconds. */
  const drain = async (sub: string, consumers: number): Promise<number> => {
    await h.engine.directFetch(`${h.engine.url}/v1/topics/${topic}/subscriptions/${sub}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "shared", initialPosition: "earliest" }),
    });
    let finished: () => void = () => undefined;
    const done = new Promise<void>((r) => (finished = r));
    const sockets: RawSocket[] = [];
    const t0 = performance.now();
    const check = () => {
      if (sockets.reduce((a, s) => a + s.acked, 0) >= N) finished();
    };
    await Promise.all(
      Array.from({ length: consumers }, async () => {
        const s = await h.consumer(topic, sub, { type: "shared" });
        sockets.push(s);
        s.onMessages = (ms) => s.ack(ms.map((m) => m.messageId));
        // Receipts are counted by RawSocket; poll them cheaply.
        s.ws.addEventListener("message", check);
      }),
    );
    await done;
    const secs = (performance.now() - t0) / 1000;
    for (const s of sockets) s.close();
    return secs;
  };

  await drain("warm-1", 1);
  await drain("warm-4", 4);
  let one = 0;
  let four = 0;
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let a: number;
    let b: number;
    if (round % 2 === 0) {
      a = await drain(`one-${round}`, 1);
      b = await drain(`four-${round}`, 4);
    } else {
      b = await drain(`four-${round}`, 4);
      a = await drain(`one-${round}`, 1);
    }
    one += a;
    four += b;
    ratios.push(a / b);
  }
  printRows("Subscriptions 3: shared subscription throughput (1-partition topic, every message acked)", [
    {
      name: `${N} messages drained by 4 consumers (receive + individual acks until every receipt)`,
      value: (N * ROUNDS) / four,
      unit: "msg/s",
      ceilingName: "the same with 1 consumer",
      ceiling: (N * ROUNDS) / one,
      target: { op: ">=", ratio: 1 },
    },
  ]);
  console.log(`\nPer-round ratios (${ROUNDS} interleaved rounds): ${list(ratios)}`);
}

/** Runs the three parts (or those named in `parts`: latency, fanout, shared). */
export async function run(opts: { quick: boolean; parts?: string[] }): Promise<void> {
  const load = (): string =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(", ");
  console.log(`\nload average at the start of the subscription benchmarks: ${load()}`);
  const engine = await startEngine();
  try {
    const h = new Harness(engine);
    const want = (p: string) => opts.parts === undefined || opts.parts.includes(p);
    if (want("latency")) await latency(h, opts.quick);
    if (want("fanout")) await fanout(h, opts.quick);
    if (want("shared")) await shared(h, opts.quick);
  } finally {
    await engine.dispose();
  }
  console.log(`\nload average at the end: ${load()}`);
}

// Alone: `node bench/subscriptions.ts [--quick] [--part latency|fanout|shared ...]`.
if (import.meta.url === `file://${process.argv[1]}`) {
  const parts = process.argv.flatMap((a, i) => (a === "--part" && process.argv[i + 1] !== undefined ? [process.argv[i + 1] as string] : []));
  await run({ quick: process.argv.includes("--quick"), parts: parts.length > 0 ? parts : undefined });
}
