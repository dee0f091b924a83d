/**
 * SIGKILL of the real dev server (workerd) during produce to a replicated partition
 * (`replication.factor` 3, docs/RAFT.md), twice over the same persist directory: idempotent
 * and plain writers over HTTP. After each restart the three replicas rebuild their Raft nodes
 * from their journals, elect a leader, and every idempotent writer resends the request it had in
 * flight (same sequence numbers, retried on retriable answers while the election runs). Then:
 * every acknowledged record is stored once, at the offset it was acknowledged at; offsets are
 * dense; each idempotent writer's records appear exactly once, in order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toText, type ConsumerRecord, type EdgelogClient } from "../../sdk/src/index.ts";
import { randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

const KILLS = 2;

type Outcome = { status: number; text: string } | null;

async function send(path: string, body: unknown): Promise<Outcome> {
  try {
    const res = await fetch(`${server.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  } catch {
    return null;
  }
}

const retriable = (r: { text: string }): boolean => {
  try {
    return (JSON.parse(r.text) as { error?: { retriable?: boolean } }).error?.retriable === true;
  } catch {
    return false;
  }
};

describe("crash: SIGKILL during replicated produce", () => {
  it("kills twice: acknowledged records survive once, idempotent retries after restart are deduplicated", async () => {
    const topic = randomTopic("crash-rf3");
    await client.createTopic({ name: topic, partitions: 1, configs: { "replication.factor": 3, "min.insync.replicas": 2 } });
    const path = `/v1/topics/${topic}/partitions/0/records`;
    const acked = new Map<string, number>();
    const idem = await Promise.all(
      [0, 1, 2].map(async () => ({ producerId: (await client.initProducerId()).producerId, seq: 0, inflight: null as null | { body: unknown; values: string[] } })),
    );
    let stop = false;
    let acks = 0;
    let retries = 0;

    /** Sends the writer's request in flight until it is answered 200 (retriable errors: again), or the server is gone (false). */
    const idemPost = async (i: (typeof idem)[number], untilOk: boolean): Promise<boolean> => {
      const f = i.inflight!;
      for (;;) {
        const r = await send(path, f.body);
        if (r === null) return false;
        if (r.status !== 200 && retriable(r) && (untilOk || !stop)) {
          await new Promise((res) => setTimeout(res, 100));
          continue;
        }
        expect(r.status, r.text).toBe(200);
        const offsets = (JSON.parse(r.text) as { records: { offset: number }[] }).records.map((x) => x.offset);
        f.values.forEach((v, k) => {
          const before = acked.get(v);
          if (before !== undefined) expect(before).toBe(offsets[k]);
          acked.set(v, offsets[k]!);
        });
        i.seq += f.values.length;
        i.inflight = null;
        acks++;
        return true;
      }
    };

    for (let cycle = 0; cycle < KILLS; cycle++) {
      stop = false;
      const target = acks + 60;
      const runs: Promise<void>[] = [];
      for (const i of idem) {
        runs.push(
          (async () => {
            while (!stop) {
              const values = [0, 1].map((k) => `i${i.producerId}-${i.seq + k}`);
              i.inflight = { body: { producerId: i.producerId, producerEpoch: 0, baseSequence: i.seq, records: values.map((value) => ({ value })) }, values };
              if (!(await idemPost(i, false))) return;
            }
          })(),
        );
      }
      runs.push(
        (async () => {
          for (let n = 0; !stop; n++) {
            const value = `c${cycle}-${n}`;
            const r = await send(path, { records: [{ value }] });
            if (r === null) return;
            if (r.status !== 200 && retriable(r)) continue; // not acknowledged: may or may not be stored
            expect(r.status, r.text).toBe(200);
            acked.set(value, (JSON.parse(r.text) as { records: { offset: number }[] }).records[0]!.offset);
            acks++;
          }
        })(),
      );
      const deadline = Date.now() + 120_000;
      while (acks < target && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      expect(acks, server.output().slice(-2000)).toBeGreaterThanOrEqual(target);
      await server.kill();
      stop = true;
      await Promise.all(runs);
      await server.restart();
      for (const i of idem) if (i.inflight !== null) expect(await idemPost(i, true), `retry ${++retries}`).toBe(true);
    }

    // Every replica's log holds only committed records; a lagging one catches up.
    let all: ConsumerRecord[] = [];
    const deadline = Date.now() + 30_000;
    for (;;) {
      all = await readAll(client, topic, 1);
      const have = new Set(all.map((r) => toText(r.value)));
      if ([...acked.keys()].every((v) => have.has(v)) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(all.map((r) => r.offset)).toEqual(all.map((_, k) => k));
    const stored = new Map<string, number[]>();
    for (const r of all) {
      const v = toText(r.value) ?? "";
      stored.set(v, [...(stored.get(v) ?? []), r.offset]);
    }
    for (const [v, at] of acked) expect(stored.get(v), v).toEqual([at]);
    for (const i of idem) {
      const mine = all.filter((r) => (toText(r.value) ?? "").startsWith(`i${i.producerId}-`)).map((r) => toText(r.value));
      expect(mine).toEqual(Array.from({ length: i.seq }, (_, k) => `i${i.producerId}-${k}`));
    }
    console.log(`replicated crash test: ${acked.size} records acknowledged, ${retries} retries after restart, ${KILLS} kills`);
  }, 300_000);
});
