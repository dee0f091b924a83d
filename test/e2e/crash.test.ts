/**
 * SIGKILL of the real dev server (workerd) in the middle of mixed traffic, three times over
 * the same persist directory: idempotent and plain produce over HTTP, Durable Streams
 * appends with Producer-Ids, and group offset commits. After each restart every writer
 * retries the request it had in flight (the same sequence numbers). Then: every
 * acknowledged record is stored once, unchanged, at the offset it was acknowledged at;
 * offsets are dense; an idempotent writer's records appear exactly once each, in order
 * (a retry of a request that committed before the kill is answered as a duplicate); a
 * stream holds each Producer-Id's writes exactly once, in order; a group's committed offset
 * is at least the last acknowledged commit. Then a kill while many stream expiry timers fire.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toText } from "../../sdk/src/index.ts";
import { randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";
import type { EdgelogClient } from "../../sdk/src/index.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

/** How many times the server is killed (EDGELOG_CRASH_KILLS to run more). */
const KILLS = Number(process.env.EDGELOG_CRASH_KILLS ?? 3);

type Outcome = { status: number; text: string } | null;

async function send(path: string, init: RequestInit): Promise<Outcome> {
  try {
    const res = await fetch(`${server.baseUrl}${path}`, init);
    return { status: res.status, text: await res.text() };
  } catch {
    return null;
  }
}
const jsonInit = (body: unknown): RequestInit => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("crash: SIGKILL during mixed traffic", () => {
  it("kills (3 by default): acknowledged writes survive once, idempotent retries after restart are deduplicated", async () => {
    const topic = randomTopic("crash");
    const partitions = 2;
    await client.createTopic({ name: topic, partitions });
    const idemWriters = 6;
    const plainWriters = 6;
    const producerIds: number[] = [];
    for (let w = 0; w < idemWriters; w++) producerIds.push((await client.initProducerId()).producerId);
    const streams = ["a", "b", "c"].map((s) => `${randomTopic("crash-s")}-${s}`);
    for (const s of streams) expect((await send(`/v1/stream/${s}`, { method: "PUT", headers: { "content-type": "text/plain" } }))?.status).toBe(201);
    const group = randomTopic("crash-g");

    // Acknowledged native records: value -> [partition, offset].
    const acked = new Map<string, [number, number]>();
    // Per idempotent writer: next sequence, its request in flight (retried after restart).
    const idem = producerIds.map((producerId, w) => ({ producerId, partition: w % partitions, seq: 0, batch: 0, inflight: null as null | { body: unknown; values: string[] } }));
    // Per stream writer: next Producer-Seq, the body in flight.
    const dsw = streams.flatMap((s) => [0, 1].map((k) => ({ stream: s, id: `p${k}`, seq: 0, inflight: null as null | string })));
    let lastCommit = -1;
    let commitSeq = 0;
    let stop = false;
    let acks = 0;
    let retries = 0;

    const idemPost = async (i: (typeof idem)[number]): Promise<boolean> => {
      const f = i.inflight!;
      const r = await send(`/v1/topics/${topic}/partitions/${i.partition}/records`, jsonInit(f.body));
      if (r === null) return false;
      expect(r.status, r.text).toBe(200);
      const offsets = (JSON.parse(r.text) as { records: { offset: number }[] }).records.map((x) => x.offset);
      expect(offsets.length).toBe(f.values.length);
      f.values.forEach((v, k) => {
        const before = acked.get(v);
        // A retry answered as a duplicate gives the same offsets as the first answer.
        if (before !== undefined) expect(before).toEqual([i.partition, offsets[k]]);
        acked.set(v, [i.partition, offsets[k]!]);
      });
      i.seq += f.values.length;
      i.inflight = null;
      acks++;
      return true;
    };
    const dsPost = async (d: (typeof dsw)[number]): Promise<boolean> => {
      const r = await send(`/v1/stream/${d.stream}`, {
        method: "POST",
        headers: { "content-type": "text/plain", "Producer-Id": d.id, "Producer-Epoch": "0", "Producer-Seq": String(d.seq) },
        body: d.inflight!,
      });
      if (r === null) return false;
      expect([200, 204], `${d.stream} ${d.id} ${d.seq}: ${r.status} ${r.text}`).toContain(r.status);
      d.seq++;
      d.inflight = null;
      acks++;
      return true;
    };

    for (let cycle = 0; cycle < KILLS; cycle++) {
      stop = false;
      const target = acks + 400;
      const runs: Promise<void>[] = [];
      for (const i of idem) {
        runs.push(
          (async () => {
            while (!stop) {
              const n = 1 + (i.batch % 4);
              const values = Array.from({ length: n }, (_, k) => `i${i.producerId}-${i.seq + k}`);
              i.inflight = { body: { producerId: i.producerId, producerEpoch: 0, baseSequence: i.seq, records: values.map((value) => ({ value })) }, values };
              i.batch++;
              if (!(await idemPost(i))) return;
            }
          })(),
        );
      }
      for (let w = 0; w < plainWriters; w++) {
        runs.push(
          (async () => {
            for (let n = 0; !stop; n++) {
              const value = `c${cycle}-w${w}-${n}`;
              const partition = (w + n) % partitions;
              const r = await send(`/v1/topics/${topic}/partitions/${partition}/records`, jsonInit({ records: [{ value }] }));
              if (r === null) return;
              expect(r.status, r.text).toBe(200);
              acked.set(value, [partition, (JSON.parse(r.text) as { records: { offset: number }[] }).records[0]!.offset]);
              acks++;
            }
          })(),
        );
      }
      for (const d of dsw) {
        runs.push(
          (async () => {
            while (!stop) {
              d.inflight = `${d.id}.${d.seq};`;
              if (!(await dsPost(d))) return;
            }
          })(),
        );
      }
      runs.push(
        (async () => {
          while (!stop) {
            const offset = ++commitSeq;
            const r = await send(`/v1/groups/${group}/offsets`, jsonInit({ offsets: [{ topic, partition: 0, offset }] }));
            if (r === null) return;
            expect(r.status, r.text).toBe(200);
            lastCommit = offset;
            acks++;
          }
        })(),
      );
      while (acks < target) await new Promise((r) => setTimeout(r, 5));
      await server.kill();
      stop = true;
      await Promise.all(runs);
      await server.restart();
      // Every writer retries what it had in flight, with the same sequence numbers.
      for (const i of idem) if (i.inflight !== null) expect(await idemPost(i), `retry ${++retries}`).toBe(true);
      for (const d of dsw) if (d.inflight !== null) expect(await dsPost(d), `retry ${++retries}`).toBe(true);
    }

    const all = await readAll(client, topic, partitions);
    for (let p = 0; p < partitions; p++) {
      const offsets = all.filter((r) => r.partition === p).map((r) => r.offset);
      expect(offsets).toEqual(offsets.map((_, k) => k));
    }
    const stored = new Map<string, [number, number][]>();
    for (const r of all) {
      const v = toText(r.value) ?? "";
      stored.set(v, [...(stored.get(v) ?? []), [r.partition, r.offset]]);
    }
    for (const [v, at] of acked) expect(stored.get(v), v).toEqual([at]);
    for (const i of idem) {
      const mine = all.filter((r) => (toText(r.value) ?? "").startsWith(`i${i.producerId}-`)).map((r) => toText(r.value));
      expect(mine).toEqual(Array.from({ length: i.seq }, (_, k) => `i${i.producerId}-${k}`));
    }
    for (const s of streams) {
      const res = await fetch(`${server.baseUrl}/v1/stream/${s}?offset=-1`);
      const tokens = (await res.text()).split(";").filter((t) => t !== "");
      for (const d of dsw.filter((x) => x.stream === s)) {
        expect(tokens.filter((t) => t.startsWith(`${d.id}.`))).toEqual(Array.from({ length: d.seq }, (_, k) => `${d.id}.${k}`));
      }
    }
    const committed = (await (await fetch(`${server.baseUrl}/v1/groups/${group}/offsets`)).json()) as { partitions: { committedOffset: number | null }[] };
    expect(committed.partitions[0]?.committedOffset ?? -1).toBeGreaterThanOrEqual(lastCommit);
    expect(committed.partitions[0]?.committedOffset ?? -1).toBeLessThanOrEqual(commitSeq);
    console.log(
      `crash test: ${acked.size} native records acknowledged, ${dsw.reduce((n, d) => n + d.seq, 0)} stream appends, ${lastCommit} commits, ${retries} retries after restart, ${KILLS} kills`,
    );
  }, 300_000);

  it("kill while many streams expire: each expired stream answers 404 and can be created again", async () => {
    const names = Array.from({ length: 40 }, (_, i) => `${randomTopic("crash-ttl")}-${i}`);
    for (const n of names) expect((await send(`/v1/stream/${n}`, { method: "PUT", headers: { "content-type": "text/plain", "Stream-TTL": "2" }, body: "x" }))?.status).toBe(201);
    // The expiry timers fire about 2 s after creation: kill in the middle of them.
    await new Promise((r) => setTimeout(r, 2050));
    await server.kill();
    await server.restart();
    await new Promise((r) => setTimeout(r, 4000));
    for (const n of names) expect((await send(`/v1/stream/${n}`, {}))?.status, n).toBe(404);
    // A stream whose partition was wiped before its topic's delete (the crash fell between
    // the two) is still re-creatable: the create repairs the leftover topic row.
    for (const n of names) {
      const r = await send(`/v1/stream/${n}`, { method: "PUT", headers: { "content-type": "text/plain" }, body: "z" });
      expect(r?.status, `${n}: ${r?.text}`).toBe(201);
      expect((await send(`/v1/stream/${n}`, {}))?.text).toBe("z");
    }
  }, 120_000);
});
