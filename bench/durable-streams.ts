/**
 * Durable Streams: Edgelog (/v1/stream/*, Worker + partition Durable Objects in workerd,
 * bench/engine.ts) side by side with the protocol authors' Node server
 * (@durable-streams/server, file-backed: `dataDir`, fdatasync per append), in one run on
 * this machine. Prints figures and Edgelog/reference ratios; asserts nothing (shared/STYLE.md).
 *
 * Same conditions on both sides:
 * - one client: Node's global `fetch`, over HTTP on 127.0.0.1, for every server. Edgelog is
 *   reached on the Worker's own workerd socket (bench/engine.ts `url`): the real Worker
 *   bundle and Durable Objects, without Miniflare's dev-only entry worker, an extra Worker
 *   hop that production does not have and that re-streams every answer body (it cost
 *   Edgelog 2x on large reads), and without `wrangler dev`'s proxy Worker on top of that;
 * - the same requests: random (incompressible) bodies of the same sizes, the same number of
 *   appends, the same catch-up reads from -1 following Stream-Next-Offset, and every read
 *   is checked to return exactly the bytes appended;
 * - durability: both answer an append only once it is on disk: Edgelog after the Durable
 *   Object's SQLite commit (workerd fsyncs it; the output gate holds the answer), the
 *   reference after fdatasync;
 * - processes: each server runs in its own process (workerd; a Node process for each
 *   reference, bench/ds-reference-server.ts), none in the bench client's;
 * - interleaving: the servers take turns in short slices (appends in fifths, one catch-up
 *   read each in rotating order, long-polls in blocks), so load from elsewhere on the
 *   machine falls on all of them alike. Catch-up figures are medians over repeated reads
 *   (9 per round, 3 with --quick): one read of a large stream varies by 2x on this machine.
 *   Three rounds (one with --quick); each figure is the median over rounds.
 *
 * The reference is compared in its faster configuration for these bodies: without gzip
 * (random bytes do not compress; its default gzip only costs it CPU). Its default
 * configuration is measured too and printed for information.
 *
 * Measured per server: append throughput with 1 KiB and 16 KiB bodies (one stream, 8
 * appends in flight), catch-up read throughput (one reader from -1 to the tail, then 4
 * readers at once), and long-poll wake latency (a long-poll waiting at the tail, then one
 * append: time from sending the append to the long-poll's answer).
 *
 * Also measured: the same Edgelog with the streams at `replication.factor` 3 (a fourth target,
 * its streams under `rf3/`), printed as its own column and its ratio to factor 1.
 *
 * Run: `npm run bench -- --only streams [--quick]`, or `node bench/durable-streams.ts [--quick]`.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { startEngine } from "./engine.ts";
import { fmt, pct, closedLoop } from "./util.ts";

export interface Target {
  name: string;
  fetch: typeof fetch;
  base: string;
  /** Prepended to every stream path (two targets on one server keep apart). */
  prefix?: string;
  /** Extra headers of a stream's PUT (Edgelog-Replication-Factor). */
  createHeaders?: Record<string, string>;
}

/** The URL of stream `path` on `t`. */
function streamUrl(t: Target, path: string): string {
  return `${t.base}/v1/stream/${t.prefix ?? ""}${path}`;
}

interface Results {
  append1k: number;
  append16k: number;
  appendReqs1k: number;
  read1k: number;
  read16k: number;
  readParallel: number;
  wakeP50: number;
  wakeP99: number;
}

/** Appends in flight at once against one stream. */
const APPEND_CONCURRENCY = 8;
/** Readers of one stream at once, for the parallel catch-up figure. */
const PARALLEL_READERS = 4;
/** Slices each append run is cut into; the servers take turns slice by slice. */
const APPEND_SLICES = 5;
/** Long-polls per turn of a server in the wake-latency measurement. */
const WAKE_BLOCK = 25;

async function drain(res: Response): Promise<Uint8Array> {
  return new Uint8Array(await res.arrayBuffer());
}

async function expectStatus(res: Response, ...statuses: number[]): Promise<Uint8Array> {
  const body = await drain(res);
  if (!statuses.includes(res.status)) throw new Error(`HTTP ${res.status} (expected ${statuses.join("/")}): ${new TextDecoder().decode(body).slice(0, 200)}`);
  return body;
}

/** Incompressible bodies: the reference gzips answers by default, and real payloads are not all one letter. */
function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The servers in turn, starting with a different one each time (`turn`), so none always goes first. */
function rotated<T>(xs: readonly T[], turn: number): T[] {
  return xs.map((_, i) => xs[(i + turn) % xs.length] as T);
}

async function createStream(t: Target, path: string, contentType: string): Promise<string> {
  const res = await t.fetch(streamUrl(t, path), { method: "PUT", headers: { "content-type": contentType, ...t.createHeaders } });
  await expectStatus(res, 201);
  return res.headers.get("stream-next-offset") as string;
}

/**
 * Append throughput, servers interleaved: each creates a stream, then they take turns
 * appending `count / APPEND_SLICES` bodies of `bytes` bytes (`APPEND_CONCURRENCY` in flight).
 * @returns per server, MB/s and appends/s over its slices
 */
async function appendThroughput(servers: readonly Target[], path: string, bytes: number, count: number): Promise<{ mbps: number; rps: number }[]> {
  const body = randomBytes(bytes);
  const secs = servers.map(() => 0);
  for (const t of servers) {
    await createStream(t, path, "application/octet-stream");
    // Warm-up (connection, isolate, object), not counted.
    for (let i = 0; i < 20; i++)
      await expectStatus(await t.fetch(streamUrl(t, `${path}-warm`), { method: "PUT", headers: { "content-type": "application/octet-stream", ...t.createHeaders } }), 200, 201);
  }
  const perSlice = Math.ceil(count / APPEND_SLICES);
  for (let s = 0; s < APPEND_SLICES; s++) {
    for (const t of rotated(servers, s)) {
      const url = streamUrl(t, path);
      const n = Math.min(perSlice, count - s * perSlice);
      const k = servers.indexOf(t);
      secs[k] =
        (secs[k] as number) +
        (await closedLoop(n, APPEND_CONCURRENCY, async () => {
          await expectStatus(await t.fetch(url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body }), 204);
        }));
    }
  }
  return secs.map((s) => ({ mbps: (count * bytes) / 1e6 / s, rps: count / s }));
}

/** Reads a whole stream from -1, following Stream-Next-Offset to the tail; returns the bytes read. */
async function readAll(t: Target, path: string): Promise<number> {
  const url = streamUrl(t, path);
  let offset = "-1";
  let total = 0;
  for (;;) {
    const res = await t.fetch(`${url}?offset=${encodeURIComponent(offset)}`);
    const body = await expectStatus(res, 200);
    total += body.length;
    const next = res.headers.get("stream-next-offset");
    if (next === null) throw new Error("read answer without Stream-Next-Offset");
    if (res.headers.get("stream-up-to-date") === "true") return total;
    offset = next;
  }
}

/**
 * Catch-up read throughput, servers interleaved: `repeats` times, each server in turn has
 * `readers` readers read the whole stream at once. @returns per server, the median MB/s
 */
async function readThroughput(servers: readonly Target[], path: string, expectedBytes: number, readers: number, repeats: number): Promise<number[]> {
  const samples: number[][] = servers.map(() => []);
  for (let r = 0; r < repeats; r++) {
    for (const t of rotated(servers, r)) {
      const t0 = performance.now();
      const got = await Promise.all(Array.from({ length: readers }, () => readAll(t, path)));
      const secs = (performance.now() - t0) / 1000;
      for (const g of got) if (g !== expectedBytes) throw new Error(`${t.name}: read ${g} bytes of ${path}, expected ${expectedBytes}`);
      samples[servers.indexOf(t)]?.push((readers * expectedBytes) / 1e6 / secs);
    }
  }
  return samples.map(median);
}

/**
 * Long-poll wake latency, servers interleaved in blocks of {@link WAKE_BLOCK}: a long-poll
 * at the tail, then one append; ms from sending the append to the long-poll's answer.
 * @returns per server, the sorted latencies
 */
async function wakeLatency(servers: readonly Target[], path: string, rounds: number): Promise<number[][]> {
  const offsets = new Map<Target, string>();
  for (const t of servers) offsets.set(t, await createStream(t, path, "text/plain"));
  const lat: number[][] = servers.map(() => []);
  for (let done = 0, turn = 0; done < rounds; done += WAKE_BLOCK, turn++) {
    for (const t of rotated(servers, turn)) {
      const url = streamUrl(t, path);
      for (let i = done; i < Math.min(rounds, done + WAKE_BLOCK); i++) {
        const waiting = t.fetch(`${url}?offset=${encodeURIComponent(offsets.get(t) as string)}&live=long-poll`);
        await new Promise((r) => setTimeout(r, 5)); // let the long-poll reach the server
        const ts = performance.now();
        const append = t.fetch(url, { method: "POST", headers: { "content-type": "text/plain" }, body: String(i) });
        const res = await waiting;
        const body = await expectStatus(res, 200);
        lat[servers.indexOf(t)]?.push(performance.now() - ts);
        await expectStatus(await append, 204);
        if (new TextDecoder().decode(body) !== String(i)) throw new Error(`${t.name}: long-poll round ${i} woke with ${JSON.stringify(new TextDecoder().decode(body))}`);
        offsets.set(t, res.headers.get("stream-next-offset") as string);
      }
    }
  }
  return lat.map((l) => l.sort((a, b) => a - b));
}

/** One round: every measurement, the servers interleaved. @returns per server */
async function measureRound(servers: readonly Target[], quick: boolean, round: number): Promise<Results[]> {
  const id = `${Date.now().toString(36)}-${round}`;
  const n1k = quick ? 1_000 : 5_000;
  const n16k = quick ? 300 : 1_500;
  const repeats = quick ? 3 : 9;
  const a1 = await appendThroughput(servers, `bench-1k-${id}`, 1024, n1k);
  const a16 = await appendThroughput(servers, `bench-16k-${id}`, 16 * 1024, n16k);
  const read1k = await readThroughput(servers, `bench-1k-${id}`, n1k * 1024, 1, repeats);
  const read16k = await readThroughput(servers, `bench-16k-${id}`, n16k * 16 * 1024, 1, repeats);
  const readParallel = await readThroughput(servers, `bench-16k-${id}`, n16k * 16 * 1024, PARALLEL_READERS, repeats);
  const lat = await wakeLatency(servers, `bench-wake-${id}`, quick ? 50 : 200);
  return servers.map((_, i) => ({
    append1k: a1[i]?.mbps ?? Number.NaN,
    appendReqs1k: a1[i]?.rps ?? Number.NaN,
    append16k: a16[i]?.mbps ?? Number.NaN,
    read1k: read1k[i] ?? Number.NaN,
    read16k: read16k[i] ?? Number.NaN,
    readParallel: readParallel[i] ?? Number.NaN,
    wakeP50: pct(lat[i] ?? [], 50),
    wakeP99: pct(lat[i] ?? [], 99),
  }));
}

/**
 * Prints one table: Edgelog, reference (no gzip), Edgelog/reference, target, and the
 * reference in its default configuration for information. For latencies the ratio is
 * reference/Edgelog, so above 1 always means Edgelog is better.
 */
function print(e: Results, r: Results, rDefault: Results, e3: Results, quick: boolean, rounds: number): void {
  const rows: [string, keyof Results, string, "higher" | "lower", number | null][] = [
    ["append, 1 KiB bodies", "append1k", "MB/s", "higher", 0.8],
    ["append, 1 KiB bodies", "appendReqs1k", "appends/s", "higher", 0.8],
    ["append, 16 KiB bodies", "append16k", "MB/s", "higher", 0.8],
    ["catch-up read, 1 KiB appends, one reader", "read1k", "MB/s", "higher", 1.0],
    ["catch-up read, 16 KiB appends, one reader", "read16k", "MB/s", "higher", 1.0],
    [`catch-up read, 16 KiB appends, ${PARALLEL_READERS} readers`, "readParallel", "MB/s", "higher", 1.0],
    ["long-poll wake latency p50", "wakeP50", "ms", "lower", null],
    ["long-poll wake latency p99", "wakeP99", "ms", "lower", null],
  ];
  console.log(`\n## Durable Streams: Edgelog vs @durable-streams/server (file-backed), ${quick ? "quick" : "full"} run, median of ${rounds} round(s)\n`);
  console.log(
    `One client for all (Node fetch over HTTP on 127.0.0.1); Edgelog on the Worker's own workerd socket. Appends: one stream, ${APPEND_CONCURRENCY} in flight, random bodies, durable before the answer on both sides. Reference compared without gzip (its faster configuration for random bodies); its default (gzip) in the last column.\n`,
  );
  console.log(
    'The last two columns: the same Edgelog with the stream at `replication.factor` 3 (`Edgelog-Replication-Factor: 3`: three partition objects in the same workerd, every append a Raft entry committed by two of them), and its ratio to factor 1 (docs/DURABLE-STREAMS.md "Replicated streams").\n',
  );
  console.log("| measurement | Edgelog | reference | Edgelog/reference | target | reference, default gzip | Edgelog rf 3 | rf 3/rf 1 |");
  console.log("|---|---|---|---|---|---|---|---|");
  for (const [name, key, unit, better, target] of rows) {
    const ev = e[key];
    const rv = r[key];
    const ratio = better === "higher" ? ev / rv : rv / ev;
    const t = target === null ? "-" : `>= ${target}x ${ratio >= target ? "(met)" : "(not met)"}`;
    const e3v = e3[key];
    const r3 = better === "higher" ? e3v / ev : ev / e3v;
    console.log(
      `| ${name} | ${fmt(ev)} ${unit} | ${fmt(rv)} ${unit} | ${ratio.toFixed(2)}x${better === "lower" ? " (ref/Edgelog)" : ""} | ${t} | ${fmt(rDefault[key])} ${unit} | ${fmt(e3v)} ${unit} | ${r3.toFixed(2)}x${better === "lower" ? " (rf1/rf3)" : ""} |`,
    );
  }
}

/** Per measurement, the median of the rounds (robust to a round disturbed by other load). */
function medianOf(rounds: Results[]): Results {
  const pick = (k: keyof Results) => median(rounds.map((r) => r[k]));
  return {
    append1k: pick("append1k"),
    appendReqs1k: pick("appendReqs1k"),
    append16k: pick("append16k"),
    read1k: pick("read1k"),
    read16k: pick("read16k"),
    readParallel: pick("readParallel"),
    wakeP50: pick("wakeP50"),
    wakeP99: pick("wakeP99"),
  };
}

/**
 * A reference server, file-backed (dataDir), otherwise with its defaults unless `compression`
 * is off, in a Node process of its own (bench/ds-reference-server.ts).
 */
async function startReference(compression: boolean): Promise<{ target: Target; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, "ds-reference-server.ts"), ...(compression ? [] : ["--no-compression"])], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((res) => child.once("exit", () => res()));
  const url = await new Promise<string>((res, rej) => {
    child.once("exit", (code) => rej(new Error(`reference server exited (${code}) before listening`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith("{")) res((JSON.parse(line) as { url: string }).url);
    });
  });
  return {
    target: { name: `reference${compression ? " (gzip)" : ""}`, fetch, base: url },
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/**
 * Runs the measurements and prints the table: Edgelog, the reference without gzip and the
 * reference with its default gzip, interleaved, in rounds (3, or 1 with `quick`).
 * @param opts.edgelog an already running Edgelog to measure instead of starting bench/engine.ts
 */
export async function run(opts: { quick: boolean; edgelog?: Target }): Promise<void> {
  const rounds = opts.quick ? 1 : 3;
  const refPlain = await startReference(false);
  const refGzip = await startReference(true);
  const engine = opts.edgelog === undefined ? await startEngine() : null;
  const edgelog = opts.edgelog ?? { name: "Edgelog", fetch, base: (engine as NonNullable<typeof engine>).url };
  const edgelogRf3: Target = { ...edgelog, name: `${edgelog.name} rf 3`, prefix: "rf3/", createHeaders: { "Edgelog-Replication-Factor": "3" } };
  const servers = [edgelog, refPlain.target, refGzip.target, edgelogRf3];
  try {
    const per: Results[][] = servers.map(() => []);
    for (let i = 0; i < rounds; i++) {
      const r = await measureRound(servers, opts.quick, i);
      r.forEach((x, k) => {
        per[k]?.push(x);
      });
    }
    print(medianOf(per[0] ?? []), medianOf(per[1] ?? []), medianOf(per[2] ?? []), medianOf(per[3] ?? []), opts.quick, rounds);
  } finally {
    await engine?.dispose();
    await refPlain.stop();
    await refGzip.stop();
  }
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  await run({ quick: process.argv.includes("--quick") });
}
