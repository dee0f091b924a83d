/**
 * QA against the real dev server (workerd):
 * 1. kill -9 of the whole server process group during heavy concurrent produce (many writers,
 *    multi-record requests, some spanning several stored batches, idempotent and not), then a
 *    restart on the same state: every acknowledged record is there at its offset, offsets are
 *    dense, every request is all or nothing, describe agrees, and idempotent retries of the
 *    last acknowledged requests are recognised as duplicates after the restart;
 * 2. `edgelog consume --follow --json` prints records produced while it runs, in order;
 * 3. the SDK producer: a message over max.message.bytes fails alone, the rest of the call and
 *    later sends go through with the idempotent sequence intact.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgelogClient, EdgelogClientError, Producer, toText } from "../../sdk/src/index.ts";
import { ROOT, randomTopic, type DevServer, readAll, startWithClient } from "./dev-server.ts";

const NODE = join(ROOT, "node_modules/.bin/node");
const CLI = join(ROOT, "sdk/bin/edgelog.js");

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

/** Records per request of writer `w`'s request `i` (1..40, deterministic). */
const recordsIn = (w: number, i: number): number => 1 + ((i * 7 + w) % 40);

interface Ack {
  w: number;
  i: number;
  partition: number;
  baseSequence: number;
  offsets: number[];
}

describe("QA: crash, follow, oversized messages", () => {
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
      a.offsets.forEach((offset, k) => expect(byPosition.get(`${a.partition}:${offset}`)?.startsWith(`w${a.w}-r${a.i}-k${k}-`), `${a.w}/${a.i}/${k}`).toBe(true));
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
    const lines = out.trim().split("\n").map((l) => JSON.parse(l) as { partition: number; offset: number; value: string; key: string; timestamp: number; headers: unknown[] });
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
