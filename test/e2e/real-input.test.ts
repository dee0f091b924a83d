/**
 * The main job on real data, against a real `wrangler dev` server (workerd):
 * 1. the 329 real GitHub webhook payloads of @octokit/webhooks-examples, produced with the SDK
 *    into a 6-partition topic keyed by repository, consumed back byte-identical, per-key order kept;
 * 2. /var/log/dpkg.log piped through `edgelog produce` and printed back by `edgelog consume`, no diff;
 * 3. data surviving a restart and a SIGKILL of the dev server in the middle of writes;
 * 4. kill -9 of the whole server process group during heavy concurrent produce (many writers,
 *    multi-record requests, some spanning several stored batches, idempotent and not), then a
 *    restart on the same state: every acknowledged record is there at its offset, offsets are
 *    dense, every request is all or nothing, describe agrees, and idempotent retries of the
 *    last acknowledged requests are recognised as duplicates after the restart;
 * 5. `edgelog consume --follow --json` prints records produced while it runs, in order;
 * 6. the SDK producer: a message over max.message.bytes fails alone, the rest of the call and
 *    later sends go through with the idempotent sequence intact.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgelogClient, EdgelogClientError, Producer, toText } from "../../sdk/src/index.ts";
import { ROOT, randomTopic, type DevServer, readAll, startWithClient } from "./dev-server.ts";

const NODE = join(ROOT, "node_modules/.bin/node");
const CLI = join(ROOT, "sdk/bin/edgelog.js");
const DPKG_LOG = "/var/log/dpkg.log";

interface WebhookEvent {
  name: string;
  examples: Array<Record<string, unknown>>;
}

function loadWebhooks(): Array<{ key: string; value: Uint8Array }> {
  const require = createRequire(import.meta.url);
  const index = require("@octokit/webhooks-examples/api.github.com/index.json") as WebhookEvent[];
  const out: Array<{ key: string; value: Uint8Array }> = [];
  const enc = new TextEncoder();
  for (const ev of index) {
    for (const ex of ev.examples) {
      const repo = ex.repository as { full_name?: string } | undefined;
      // Events without a repository (e.g. installation, marketplace) share one stable key per event name.
      const key = repo?.full_name ?? `(no repository)/${ev.name}`;
      out.push({ key, value: enc.encode(JSON.stringify(ex)) });
    }
  }
  return out;
}

/** Runs the CLI with `stdin` piped in; resolves with exit code, stdout bytes and stderr text. */
function cli(args: string[], stdin?: Uint8Array | string): Promise<{ code: number; stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [CLI, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out), stderr: err }));
    child.stdin.end(stdin ?? "");
  });
}

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

describe("real input through the real dev server", () => {
  it("GitHub webhook payloads: SDK produce into 6 partitions, consume back byte-identical with per-key order", async () => {
    const events = loadWebhooks();
    expect(events.length).toBe(329);
    const topic = randomTopic("webhooks");
    await client.createTopic({ name: topic, partitions: 6 });

    const producer = new Producer(client);
    const metas = await producer.send({ topic, messages: events.map((e) => ({ key: e.key, value: e.value })) });
    await producer.close();
    expect(metas.length).toBe(329);

    const records = await readAll(client, topic, 6);
    expect(records.length).toBe(329);

    // Produced order per key vs consumed order per key (offset order within a partition).
    const expected = new Map<string, string[]>();
    for (const e of events) expected.set(e.key, [...(expected.get(e.key) ?? []), Buffer.from(e.value).toString("base64")]);
    const got = new Map<string, string[]>();
    const sorted = [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
    for (const r of sorted) {
      const key = new TextDecoder().decode(r.key ?? new Uint8Array());
      got.set(key, [...(got.get(key) ?? []), Buffer.from(r.value ?? new Uint8Array()).toString("base64")]);
    }
    expect(got).toEqual(expected);

    // Every key lives on exactly one partition, the one the producer reported.
    const partitionOfKey = new Map<string, number>();
    events.forEach((e, i) => {
      partitionOfKey.set(e.key, metas[i]?.partition ?? -1);
    });
    for (const r of records) expect(r.partition).toBe(partitionOfKey.get(new TextDecoder().decode(r.key ?? new Uint8Array())));

    // Describe agrees with what was read.
    const desc = await client.describeTopic(topic);
    expect(desc.partitionDetails.reduce((n, p) => n + p.recordCount, 0)).toBe(329);
  });

  it("dpkg.log: `edgelog produce` then `edgelog consume --from-beginning -n <lines>` prints it back unchanged", async () => {
    expect(existsSync(DPKG_LOG)).toBe(true);
    const log = readFileSync(DPKG_LOG);
    const lines = log.toString("latin1").split("\n").length - (log.at(-1) === 0x0a ? 1 : 0);
    const topic = randomTopic("dpkg");
    const url = ["--url", server.baseUrl];

    const created = await cli([...url, "topics", "create", topic, "--partitions", "1"]);
    expect(created.code, created.stderr).toBe(0);
    const produced = await cli([...url, "produce", topic], log);
    expect(produced.code, produced.stderr).toBe(0);

    const consumed = await cli([...url, "consume", topic, "--from-beginning", "-n", String(lines)]);
    expect(consumed.code, consumed.stderr).toBe(0);
    expect(consumed.stdout.equals(log)).toBe(true);

    const desc = await client.describeTopic(topic);
    expect(desc.partitionDetails[0]?.highWatermark).toBe(lines);
  });

  it("CLI errors are obvious: unknown topic exits 1 with the code, bad usage exits 2", async () => {
    const url = ["--url", server.baseUrl];
    const missing = await cli([...url, "consume", randomTopic("missing"), "--from-beginning"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("UNKNOWN_TOPIC_OR_PARTITION");
    const usage = await cli([...url, "topics", "frobnicate"]);
    expect(usage.code).toBe(2);
  });

  it("data survives a graceful restart and a SIGKILL in the middle of writes: every acknowledged record is there", async () => {
    const topic = randomTopic("durable");
    await client.createTopic({ name: topic, partitions: 2 });
    const producer = new Producer(client);
    await producer.send({ topic, messages: Array.from({ length: 100 }, (_, i) => ({ key: `k${i}`, value: `before-restart-${i}` })) });
    await producer.close();
    const before = await client.describeTopic(topic);

    await server.restart();
    const after = await client.describeTopic(topic);
    expect(after.partitionDetails.map((p) => p.highWatermark)).toEqual(before.partitionDetails.map((p) => p.highWatermark));
    expect((await readAll(client, topic, 2)).length).toBe(100);

    // Single-record produces, one after another; kill -9 while they run.
    const acked: Array<{ partition: number; offset: number; value: string }> = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        const value = `during-kill-${i}`;
        try {
          const res = await fetch(`${server.baseUrl}/v1/topics/${topic}/partitions/${i % 2}/records`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ records: [{ value }] }),
          });
          if (!res.ok) break;
          const body = (await res.json()) as { records: Array<{ partition: number; offset: number }> };
          const r = body.records[0];
          if (r) acked.push({ partition: r.partition, offset: r.offset, value });
        } catch {
          break; // the server died under us
        }
      }
    })();
    while (acked.length < 30) await new Promise((r) => setTimeout(r, 20));
    await server.kill();
    stop = true;
    await writer;

    await server.restart();
    const all = await readAll(client, topic, 2);
    const byPos = new Map(all.map((r) => [`${r.partition}:${r.offset}`, new TextDecoder().decode(r.value ?? new Uint8Array())]));
    for (const a of acked) expect(byPos.get(`${a.partition}:${a.offset}`)).toBe(a.value);
    // Offsets stay dense from 0 on each partition after the crash.
    for (const p of [0, 1]) {
      const offs = all.filter((r) => r.partition === p).map((r) => r.offset);
      expect(offs).toEqual(Array.from({ length: offs.length }, (_, i) => i));
    }
  });
});

/** Records per request of writer `w`'s request `i` (1..40, deterministic). */
const recordsIn = (w: number, i: number): number => 1 + ((i * 7 + w) % 40);

interface Ack {
  w: number;
  i: number;
  partition: number;
  baseSequence: number;
  offsets: number[];
}

describe("real dev server: crash under heavy concurrent produce, the CLI following, oversized messages", () => {
  it("kill -9 during heavy concurrent produce: acknowledged records survive, dense, all-or-nothing, retries deduplicated", async () => {
    const topic = randomTopic("qa-crash");
    const partitions = 3;
    await client.createTopic({ name: topic, partitions });
    // One idempotent writer per partition (its own producer id), three plain writers per partition.
    const producerIds: number[] = [];
    for (let p = 0; p < partitions; p++) producerIds.push((await client.initProducerId()).producerId);
    const writers = 12;
    const acks: Ack[] = [];
    let stop = false;
    const run = Array.from({ length: writers }, async (_, w) => {
      const partition = w % partitions;
      const idempotent = w < partitions;
      let baseSequence = 0;
      for (let i = 0; !stop; i++) {
        const n = recordsIn(w, i);
        const pad = i % 10 === 3 ? "x".repeat(60_000) : ""; // ~2.4 MB requests: several stored batches
        const body: Record<string, unknown> = { records: Array.from({ length: n }, (_, k) => ({ value: `w${w}-r${i}-k${k}-${pad}` })) };
        if (idempotent) Object.assign(body, { producerId: producerIds[w], producerEpoch: 0, baseSequence });
        let status: number;
        let text: string;
        try {
          const res = await fetch(`${server.baseUrl}/v1/topics/${topic}/partitions/${partition}/records`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body),
          });
          status = res.status;
          text = await res.text();
        } catch {
          return; // the server died under us (before or while answering): not acknowledged
        }
        if (status !== 200) throw new Error(`writer ${w}: HTTP ${status} ${text}`);
        const answer = JSON.parse(text) as { records: { offset: number }[] };
        acks.push({ w, i, partition, baseSequence, offsets: answer.records.map((r) => r.offset) });
        baseSequence += n;
      }
    });
    while (acks.length < 150) await new Promise((r) => setTimeout(r, 20));
    await server.kill(); // SIGKILL to the whole process group (wrangler and workerd)
    stop = true;
    await Promise.all(run);

    await server.restart();
    const all = await readAll(client, topic, partitions);
    const byPosition = new Map(all.map((r) => [`${r.partition}:${r.offset}`, toText(r.value)]));
    // Every acknowledged record is at its acknowledged offset.
    for (const a of acks) {
      a.offsets.forEach((offset, k) => {
        expect(byPosition.get(`${a.partition}:${offset}`)?.startsWith(`w${a.w}-r${a.i}-k${k}-`), `${a.w}/${a.i}/${k}`).toBe(true);
      });
    }
    // Offsets dense from 0 on every partition, and describe agrees.
    const desc = await client.describeTopic(topic);
    for (let p = 0; p < partitions; p++) {
      const offsets = all.filter((r) => r.partition === p).map((r) => r.offset);
      expect(offsets).toEqual(Array.from({ length: offsets.length }, (_, i) => i));
      expect(desc.partitionDetails[p]).toMatchObject({ logStartOffset: 0, highWatermark: offsets.length, logEndOffset: offsets.length, recordCount: offsets.length });
    }
    // All or nothing: a stored request has all its records, once, contiguous.
    const stored = new Map<string, number[]>();
    for (const r of all) {
      const m = /^w(\d+)-r(\d+)-k(\d+)-/.exec(toText(r.value) ?? "");
      expect(m, toText(r.value)?.slice(0, 40)).not.toBeNull();
      const key = `${m![1]}/${m![2]}`;
      stored.set(key, [...(stored.get(key) ?? []), r.offset]);
    }
    for (const [key, offsets] of stored) {
      const [w, i] = key.split("/").map(Number) as [number, number];
      expect(offsets, key).toEqual(Array.from({ length: recordsIn(w, i) }, (_, k) => offsets[0]! + k));
    }
    expect(stored.size).toBeGreaterThanOrEqual(acks.length);
    // The producer state survived too: retrying each idempotent writer's last acknowledged request is a duplicate.
    for (let w = 0; w < partitions; w++) {
      const last = acks.filter((a) => a.w === w).at(-1);
      if (last === undefined) continue;
      const res = await client.produce(
        topic,
        { producerId: producerIds[w], producerEpoch: 0, baseSequence: last.baseSequence, records: Array.from({ length: last.offsets.length }, () => ({ value: "retry" })) },
        { partition: last.partition },
      );
      expect({ duplicate: res.duplicate, offsets: res.records.map((r) => r.offset) }).toEqual({ duplicate: true, offsets: last.offsets });
    }
    expect((await client.describeTopic(topic)).partitionDetails.map((p) => p.highWatermark)).toEqual(desc.partitionDetails.map((p) => p.highWatermark));
  });

  it("`edgelog consume --follow --json` prints records produced while it runs, in order, and exits 0 at -n", async () => {
    const topic = randomTopic("qa-follow");
    await client.createTopic({ name: topic, partitions: 2 });
    const child = spawn(NODE, [CLI, "--url", server.baseUrl, "consume", topic, "--from-beginning", "--follow", "--json", "-n", "6"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
    // Produce in three rounds while it follows, across both partitions.
    for (let round = 0; round < 3; round++) {
      await new Promise((r) => setTimeout(r, 700));
      for (const partition of [0, 1]) {
        await client.produce(topic, { records: [{ key: `k${round}`, value: `r${round}p${partition}`, headers: [{ key: "h", value: null }], timestamp: 1000 + round }] }, { partition });
      }
    }
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await exited;
    clearTimeout(killer);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const lines = out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { partition: number; offset: number; value: string; key: string; timestamp: number; headers: unknown[] });
    const byPartition = (p: number) => lines.filter((l) => l.partition === p).map((l) => [l.offset, l.key, l.value, l.timestamp, l.headers]);
    expect(byPartition(0)).toEqual([0, 1, 2].map((r) => [r, `k${r}`, `r${r}p0`, 1000 + r, [{ key: "h", value: null }]]));
    expect(byPartition(1)).toEqual([0, 1, 2].map((r) => [r, `k${r}`, `r${r}p1`, 1000 + r, [{ key: "h", value: null }]]));
  });

  it("SDK producer: a message over max.message.bytes fails alone; the rest of the call and later sends are appended", async () => {
    const topic = randomTopic("qa-oversize");
    await client.createTopic({ name: topic, partitions: 1, configs: { "max.message.bytes": 1000 } });
    const producer = new Producer(client, { lingerMs: 20 });
    const failed = producer.send({ topic, messages: [{ value: "a" }, { value: "x".repeat(5000) }, { value: "c" }] }).then(
      () => null,
      (e: unknown) => e,
    );
    const later = producer.send({ topic, messages: [{ value: "d" }] });
    const e = await failed;
    expect(e).toBeInstanceOf(EdgelogClientError);
    expect((e as EdgelogClientError).code).toBe("RECORD_TOO_LARGE");
    expect((await later).map((m) => m.offset)).toEqual([2]);
    await producer.close();
    await producer.close(); // twice is fine
    await expect(producer.send({ topic, messages: [{ value: "e" }] })).rejects.toThrow("Producer is closed.");
    expect((await readAll(client, topic, 1)).map((r) => [r.offset, toText(r.value)])).toEqual([
      [0, "a"],
      [1, "c"],
      [2, "d"],
    ]);
  });
});
