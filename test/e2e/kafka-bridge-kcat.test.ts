/**
 * kcat (librdkafka, Debian's package) against the Kafka bridge, started in-process on a free
 * port in front of a real `wrangler dev` server: metadata (-L), producing with keys and headers
 * (-P -K -H), consuming back byte-identical (-C -o beginning -e), relative and timestamp
 * offsets (-o -N, -o s@TS), group consumption with commits (-G), an idempotent producer
 * (enable.idempotence), and batches compressed with each of Kafka's four codecs.
 *
 * kcat is installed by .ci/run (`apt-get install kcat`); without it these tests are skipped
 * with a message saying so.
 */
import { spawn, spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EdgelogClient } from "../../sdk/src/index.ts";
import { startKafkaBridge, type KafkaBridge } from "../../sdk/src/kafka-bridge/index.ts";
import { randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";

const HAS_KCAT = spawnSync("kcat", ["-V"], { stdio: "ignore" }).status === 0;
if (!HAS_KCAT) console.warn("kafka-bridge-kcat: kcat is not installed (apt-get install kcat, as .ci/run does): these tests are skipped");

let server: DevServer;
let client: EdgelogClient;
let bridge: KafkaBridge;
let brokers: string;

beforeAll(async () => {
  if (!HAS_KCAT) return;
  ({ server, client } = await startWithClient());
  // Built from the URL, as the CLI runs it: appends go through the bridge's own HTTP path (http.ts).
  bridge = await startKafkaBridge({ url: server.baseUrl, host: "127.0.0.1", port: 0, log: () => {} });
  brokers = `127.0.0.1:${bridge.port}`;
});
afterAll(async () => {
  await bridge?.close();
  await server?.dispose();
});

/** Runs kcat with `stdin`; resolves with its exit code, stdout and stderr. */
function kcat(args: string[], stdin = ""): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("kcat", ["-b", brokers, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout: out, stderr: err }));
    child.stdin.end(stdin);
  });
}

interface KcatJson {
  topic: string;
  partition: number;
  offset: number;
  ts: number;
  key: string | null;
  payload: string | null;
  headers?: string[];
}

async function consumeJson(topic: string, ...extra: string[]): Promise<KcatJson[]> {
  const r = await kcat(["-C", "-t", topic, "-e", "-J", "-q", ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as KcatJson);
}

describe.skipIf(!HAS_KCAT)("kcat through the Kafka bridge", () => {
  it("-L lists the namespace's topics with their partitions, the bridge as broker 0 and leader", async () => {
    const topic = randomTopic("kcat-l");
    await client.createTopic({ name: topic, partitions: 3 });
    const r = await kcat(["-L", "-J"]);
    expect(r.code, r.stderr).toBe(0);
    const md = JSON.parse(r.stdout) as { brokers: { id: number; name: string }[]; topics: { topic: string; partitions: { partition: number; leader: number }[] }[] };
    expect(md.brokers).toEqual([{ id: 0, name: brokers }]);
    const t = md.topics.find((x) => x.topic === topic);
    expect(t?.partitions.map((p) => [p.partition, p.leader])).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
    ]);
  });

  it("-P with keys and headers, then -C -o beginning -e reads them back byte-identical, keys on the Java partitioner's partitions", async () => {
    const topic = randomTopic("kcat-p");
    await client.createTopic({ name: topic, partitions: 4 });
    const lines = Array.from({ length: 40 }, (_, i) => [`user-${i % 7}`, `value ${i} äöü ✓ "quoted" \\ tab\there`]);
    // murmur2_random: librdkafka's Java-compatible partitioner (its default is consistent_random, CRC32).
    const r = await kcat(
      ["-P", "-t", topic, "-X", "topic.partitioner=murmur2_random", "-K", "|", "-H", "source=kcat", "-H", "empty=", "-H", "source=dup"],
      `${lines.map(([k, v]) => `${k}|${v}`).join("\n")}\n`,
    );
    expect(r.code, r.stderr).toBe(0);

    const got = await consumeJson(topic, "-o", "beginning");
    expect(got).toHaveLength(40);
    // Per-key order is kept and every record arrives once, exactly as sent.
    for (let k = 0; k < 7; k++) {
      const key = `user-${k}`;
      expect(got.filter((m) => m.key === key).map((m) => m.payload)).toEqual(lines.filter(([kk]) => kk === key).map(([, v]) => v));
    }
    for (const m of got) expect(m.headers).toEqual(["source", "kcat", "empty", "", "source", "dup"]);

    // The same records through the SDK directly: same bytes, and each key on murmur2(key) % 4.
    const { partitionForKey } = await import("../../sdk/src/index.ts");
    const direct = await readAll(client, topic, 4);
    expect(direct).toHaveLength(40);
    const enc = new TextEncoder();
    for (const rec of direct) {
      const key = new TextDecoder().decode(rec.key!);
      expect(rec.partition).toBe(partitionForKey(enc.encode(key), 4));
      expect(rec.headers.map((h) => [h.key, h.value === null ? null : new TextDecoder().decode(h.value)])).toEqual([
        ["source", "kcat"],
        ["empty", ""],
        ["source", "dup"],
      ]);
    }
  });

  it("-o -N reads the last N records of each partition; -o s@TS from the first record at or after TS", async () => {
    const topic = randomTopic("kcat-o");
    await client.createTopic({ name: topic, partitions: 1 });
    const t0 = 1_700_000_000_000;
    await client.produce(topic, { records: Array.from({ length: 10 }, (_, i) => ({ value: `r${i}`, timestamp: t0 + i * 1000 })) }, { partition: 0 });

    const last3 = await consumeJson(topic, "-o", "-3");
    expect(last3.map((m) => [m.offset, m.payload])).toEqual([
      [7, "r7"],
      [8, "r8"],
      [9, "r9"],
    ]);

    const fromTs = await consumeJson(topic, "-o", `s@${t0 + 6500}`);
    expect(fromTs.map((m) => [m.offset, m.payload, m.ts])).toEqual([
      [7, "r7", t0 + 7000],
      [8, "r8", t0 + 8000],
      [9, "r9", t0 + 9000],
    ]);

    // ListOffsets by max timestamp (-3, KIP-734): a later record with an older timestamp does
    // not move it from r9; -1 (latest) answers the log end.
    await client.produce(topic, { records: [{ value: "late", timestamp: t0 }] }, { partition: 0 });
    const query = async (ts: number): Promise<number> => {
      const r = await kcat(["-Q", "-t", `${topic}:0:${ts}`]);
      expect(r.code, r.stderr).toBe(0);
      return Number(/offset (-?\d+)/.exec(r.stdout)?.[1]);
    };
    expect(await query(-3)).toBe(9);
    expect(await query(-1)).toBe(11);
    expect(await query(t0 + 6500)).toBe(7);
  });

  it("-o beyond the end gets OFFSET_OUT_OF_RANGE and applies auto.offset.reset (librdkafka needs empty, not null, records)", async () => {
    const topic = randomTopic("kcat-oor");
    await client.createTopic({ name: topic, partitions: 1 });
    await client.produce(topic, { records: ["a", "b", "c"].map((value) => ({ value })) }, { partition: 0 });
    const all = await consumeJson(topic, "-o", "1000", "-X", "auto.offset.reset=earliest");
    expect(all.map((m) => [m.offset, m.payload])).toEqual([
      [0, "a"],
      [1, "b"],
      [2, "c"],
    ]);
  });

  it("-G consumes as a group, commits the end offsets and leaves", async () => {
    const topic = randomTopic("kcat-g");
    const group = randomTopic("g");
    await client.createTopic({ name: topic, partitions: 3 });
    await client.produce(topic, { records: Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })) });
    const r = await kcat(["-G", group, topic, "-o", "beginning", "-e", "-q", "-f", "%p:%o:%s\\n", "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100"]);
    expect(r.code, r.stderr).toBe(0);
    const seen = r.stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.split(":")[2])
      .sort();
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => `v${i}`).sort());

    const d = await client.describeGroup(group);
    expect(d.members).toEqual([]);
    const ends = (await client.describeTopic(topic)).partitionDetails.map((p) => p.logEndOffset);
    expect(d.offsets.map((o) => [o.partition, o.committedOffset])).toEqual(ends.map((e, p) => [p, e]));
  });

  it("two -G members share the partitions through a rebalance, commits carry over: every record once", async () => {
    const topic = randomTopic("kcat-g2");
    const group = randomTopic("g2");
    await client.createTopic({ name: topic, partitions: 4 });
    const batch = (tag: string) => ({ records: Array.from({ length: 200 }, (_, i) => ({ key: `${tag}${i}`, value: `${tag}-${i}` })) });
    await client.produce(topic, batch("a"));
    const member = (name: string) => {
      const child = spawn(
        "kcat",
        [
          "-b",
          brokers,
          "-G",
          group,
          topic,
          "-q",
          "-u",
          "-f",
          `${name} %p %o %s\\n`,
          "-X",
          "heartbeat.interval.ms=500",
          "-X",
          "auto.offset.reset=earliest",
          "-X",
          "auto.commit.interval.ms=200",
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      const lines: string[] = [];
      let rest = "";
      child.stdout.on("data", (d: Buffer) => {
        const parts = (rest + d.toString()).split("\n");
        rest = parts.pop()!;
        lines.push(...parts);
      });
      const exited = new Promise<void>((r) => child.on("close", () => r()));
      return {
        lines,
        stop: async () => {
          child.kill("SIGTERM");
          await exited;
        },
      };
    };
    const until = async (cond: () => boolean | Promise<boolean>, what: string) => {
      const deadline = Date.now() + 90_000;
      while (!(await cond())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    const a = member("A");
    await until(() => a.lines.length > 0, "A's first records");
    const b = member("B");
    await until(async () => {
      const d = await client.describeGroup(group);
      return d.members.length === 2 && d.members.every((m) => m.assignment.length > 0);
    }, "both members assigned");
    await client.produce(topic, batch("b"));
    const distinct = () => new Set([...a.lines, ...b.lines].map((l) => l.split(" ").slice(1, 3).join(":"))).size;
    await until(() => distinct() === 400, "every record");
    await Promise.all([a.stop(), b.stop()]);
    const all = [...a.lines, ...b.lines];
    expect(new Set(all.map((l) => l.split(" ")[3])).size).toBe(400);
    expect(a.lines.length).toBeGreaterThan(0);
    expect(b.lines.length).toBeGreaterThan(0);
    // B's partitions were read by B from A's committed offsets on: nothing B read had been read by A.
    const byA = new Set(a.lines.map((l) => l.split(" ").slice(1, 3).join(":")));
    expect(b.lines.filter((l) => byA.has(l.split(" ").slice(1, 3).join(":")))).toEqual([]);
  });

  it("an idempotent producer (enable.idempotence=true, gzip) appends every record once, in order", async () => {
    const topic = randomTopic("kcat-idem");
    await client.createTopic({ name: topic, partitions: 1 });
    const values = Array.from({ length: 2000 }, (_, i) => `m${i}`);
    const r = await kcat(["-P", "-t", topic, "-p", "0", "-X", "enable.idempotence=true", "-z", "gzip", "-X", "linger.ms=5"], `${values.join("\n")}\n`);
    expect(r.code, r.stderr).toBe(0);
    const direct = await readAll(client, topic, 1);
    expect(direct.map((x) => new TextDecoder().decode(x.value!))).toEqual(values);
    expect(direct.map((x) => x.offset)).toEqual(values.map((_, i) => i));
  });

  it("batches compressed with gzip, snappy, lz4 and zstd are decompressed: records arrive byte-identical", async () => {
    const values = Array.from({ length: 3000 }, (_, i) => `${i} ${"abc".repeat(10)}`);
    for (const codec of ["gzip", "snappy", "lz4", "zstd"]) {
      const topic = randomTopic(`kcat-${codec}`);
      await client.createTopic({ name: topic, partitions: 1 });
      const r = await kcat(["-P", "-t", topic, "-z", codec, "-d", "msg"], `${values.join("\n")}\n`);
      expect(r.code, r.stderr).toBe(0);
      // librdkafka says which codec each produced batch used: it really compressed.
      expect(r.stderr).toMatch(new RegExp(`MsgVersion 2.*${codec}\\)`));
      const direct = await readAll(client, topic, 1);
      expect(
        direct.map((x) => new TextDecoder().decode(x.value!)),
        codec,
      ).toEqual(values);
    }
  });
});
