/**
 * Produce coalescing on the real dev server (workerd, one isolate): concurrent requests for
 * one partition share append RPCs (src/gateway/append-coalescer.ts), yet each gets its own
 * offsets and its own error, all-or-nothing for its own records only, and a client that
 * goes away mid-request does not hold up the others. Then regression cases: idempotent
 * duplicates and a fenced epoch inside coalesced groups, acks=0 mixed with acks=all, the topic
 * route over many partitions, near-8 MiB requests next to tiny ones, the SDK producer on a
 * LogAppendTime topic (also after lost answers: duplicate summaries), client aborts, SIGKILL
 * during coalesced produce, delete/re-create of the topic while requests queue, a Durable
 * Stream closed while native produce races it, and one idempotent producer sending
 * consecutive sequences at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgelogClient, Producer, toText } from "../../sdk/src/index.ts";
import { encodeBatch } from "../../src/codec/index.ts";
import { BATCH_MEDIA_TYPE, type JsonFetchResponse, type ProduceResponse } from "../../src/protocol/index.ts";
import { randomTopic, type DevServer, readAll, startWithClient } from "./dev-server.ts";

const SUMMARY = "application/vnd.edgelog.produce-summary+json";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

function post(path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${server.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
}

async function readValues(topic: string): Promise<Map<number, string | null>> {
  const out = new Map<number, string | null>();
  for (let offset = 0; ; ) {
    const res = await fetch(`${server.baseUrl}/v1/topics/${topic}/partitions/0/records?offset=${offset}&maxRecords=10000`);
    const f = (await res.json()) as JsonFetchResponse;
    if (f.records.length === 0) return out;
    for (const r of f.records) out.set(r.offset, r.value as string | null);
    offset = f.nextOffset;
  }
}

describe("produce coalescing (real dev server)", () => {
  it("300 concurrent requests (JSON, binary, failing ones) to one partition: own offsets, own errors, nothing else lost", async () => {
    const topic = randomTopic("coalesce");
    await client.createTopic({ name: topic, partitions: 1, configs: { "max.message.bytes": 1000 } });
    const { producerId } = (await (await fetch(`${server.baseUrl}/v1/producers`, { method: "POST" })).json()) as { producerId: number };
    const path = `/v1/topics/${topic}/partitions/0/records`;
    type Sent = { kind: "json" | "binary" | "outOfOrder" | "tooLarge"; values: string[]; res: Promise<Response> };
    const sent: Sent[] = [];
    for (let i = 0; i < 300; i++) {
      if (i % 50 === 7) {
        sent.push({ kind: "outOfOrder", values: [], res: post(path, { producerId, producerEpoch: 0, baseSequence: 1000 + i, records: [{ value: `never-${i}` }] }) });
      } else if (i % 50 === 13) {
        // One record over max.message.bytes next to a good one: the whole request fails.
        sent.push({ kind: "tooLarge", values: [], res: post(path, { records: [{ value: `ok-${i}` }, { value: "x".repeat(2000) }] }) });
      } else if (i % 3 === 0) {
        const values = [`b${i}-0`, `b${i}-1`];
        const batch = encodeBatch(
          {},
          values.map((v) => ({ key: null, value: new TextEncoder().encode(v), headers: [], timestamp: i })),
        );
        sent.push({ kind: "binary", values, res: fetch(`${server.baseUrl}${path}`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body: batch }) });
      } else {
        sent.push({ kind: "json", values: [`j${i}`], res: post(path, { records: [{ value: `j${i}` }] }) });
      }
    }
    const expectedAt = new Map<number, string>();
    for (const s of sent) {
      const res = await s.res;
      const body = (await res.json()) as ProduceResponse & { error?: { code: string } };
      if (s.kind === "outOfOrder") expect([res.status, body.error?.code]).toEqual([409, "OUT_OF_ORDER_SEQUENCE_NUMBER"]);
      else if (s.kind === "tooLarge") expect([res.status, body.error?.code]).toEqual([413, "RECORD_TOO_LARGE"]);
      else {
        expect(res.status).toBe(200);
        expect(body.records.length).toBe(s.values.length);
        // A request's records are contiguous and in its own order.
        body.records.forEach((r, k) => {
          expect(r.offset).toBe(body.records[0]!.offset + k);
          expectedAt.set(r.offset, s.values[k]!);
        });
      }
    }
    const stored = await readValues(topic);
    expect(stored.size).toBe(expectedAt.size);
    expect([...stored.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: expectedAt.size }, (_, k) => k));
    for (const [offset, value] of expectedAt) expect(stored.get(offset)).toBe(value);
  });

  it("clients that abort mid-request do not hold up the others; every answered record is stored", async () => {
    const topic = randomTopic("coalesce-abort");
    await client.createTopic({ name: topic, partitions: 1 });
    const path = `/v1/topics/${topic}/partitions/0/records`;
    const answered: Promise<{ offset: number; value: string } | null>[] = [];
    for (let i = 0; i < 120; i++) {
      const ac = new AbortController();
      const value = `v${i}`;
      answered.push(
        post(path, { records: [{ value }] }, {}, ac.signal).then(
          async (res) => {
            expect(res.status).toBe(200);
            return { offset: ((await res.json()) as ProduceResponse).records[0]!.offset, value };
          },
          (err: unknown) => {
            expect((err as Error).name).toBe("AbortError");
            return null;
          },
        ),
      );
      if (i % 4 === 0) setTimeout(() => ac.abort(), i % 8 === 0 ? 0 : 2);
    }
    const results = await Promise.all(answered);
    const ok = results.filter((r): r is { offset: number; value: string } => r !== null);
    expect(ok.length).toBeGreaterThanOrEqual(90); // only the 30 aborted ones may be missing answers
    // After all that, a fresh request is answered too: the lane is not stuck.
    const after = await post(path, { records: [{ value: "after" }] });
    expect(after.status).toBe(200);
    const stored = await readValues(topic);
    for (const r of ok) expect(stored.get(r.offset)).toBe(r.value);
    // An aborted request may or may not have been appended (its client left), but nothing else
    // is stored: every stored value was sent, and offsets are dense.
    const sentValues = new Set([...Array.from({ length: 120 }, (_, i) => `v${i}`), "after"]);
    for (const v of stored.values()) expect(sentValues.has(v as string)).toBe(true);
    expect([...stored.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: stored.size }, (_, k) => k));
  });

  it("the server logged no cross-request I/O error, hang or cancelled continuation while coalescing", () => {
    expect(server.output()).not.toMatch(/Cannot perform I\/O on behalf of a different request|code had hung|different request context/);
  });
});

describe("produce coalescing (real dev server): idempotence, acks=0, many partitions, large requests", () => {
  it("idempotent: the same request sent 20 times concurrently is appended once, every answer has the same offsets", async () => {
    const topic = randomTopic("qa-dup");
    await client.createTopic({ name: topic, partitions: 1 });
    const { producerId } = await client.initProducerId();
    const path = `/v1/topics/${topic}/partitions/0/records`;
    // Fill the lane first so the duplicates queue.
    const filler = Array.from({ length: 20 }, (_, i) => post(path, { records: [{ value: `f${i}` }] }));
    const body = { producerId, producerEpoch: 0, baseSequence: 0, records: [{ value: "a" }, { value: "b" }] };
    const dups = Array.from({ length: 20 }, (_, i) => post(path, body, i % 2 ? { accept: SUMMARY } : {}));
    const answers = await Promise.all(dups.map(async (r) => ({ status: (await r).status, body: (await (await r).json()) as Record<string, unknown> })));
    await Promise.all(filler);
    const offsets = answers.map((a) => ("records" in a.body ? (a.body as unknown as ProduceResponse).records.map((r) => r.offset) : [a.body.baseOffset, a.body.lastOffset]));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const first = offsets[0]!;
    for (let i = 0; i < offsets.length; i++) expect(offsets[i]).toEqual(first);
    expect(answers.filter((a) => a.body.duplicate !== true).length).toBe(1);
    const all = await readAll(client, topic, 1);
    expect(all.filter((r) => toText(r.value) === "a" || toText(r.value) === "b").length).toBe(2);
  });

  it("fenced epoch next to good requests: only the fenced ones fail", async () => {
    const topic = randomTopic("qa-fence");
    await client.createTopic({ name: topic, partitions: 1 });
    const { producerId } = await client.initProducerId();
    const path = `/v1/topics/${topic}/partitions/0/records`;
    expect((await post(path, { producerId, producerEpoch: 1, baseSequence: 0, records: [{ value: "e1-0" }] })).status).toBe(200);
    const reqs: { kind: string; res: Promise<Response> }[] = [];
    for (let i = 0; i < 60; i++) {
      if (i % 3 === 0) reqs.push({ kind: "fenced", res: post(path, { producerId, producerEpoch: 0, baseSequence: 1 + i, records: [{ value: `old${i}` }] }) });
      else reqs.push({ kind: "plain", res: post(path, { records: [{ value: `p${i}` }] }) });
    }
    for (const r of reqs) {
      const res = await r.res;
      const b = (await res.json()) as { error?: { code: string } };
      if (r.kind === "fenced") expect([res.status, b.error?.code]).toEqual([409, "INVALID_PRODUCER_EPOCH"]);
      else expect(res.status).toBe(200);
    }
    const all = await readAll(client, topic, 1);
    expect(all.length).toBe(41);
  });

  it("acks=0 mixed with acks=all in one lane", async () => {
    const topic = randomTopic("qa-acks0");
    await client.createTopic({ name: topic, partitions: 1 });
    const path = `/v1/topics/${topic}/partitions/0/records`;
    const reqs: { acks0: boolean; value: string; res: Promise<Response> }[] = [];
    for (let i = 0; i < 200; i++) {
      const acks0 = i % 2 === 0;
      reqs.push({ acks0, value: `v${i}`, res: post(`${path}${acks0 ? "?acks=0" : ""}`, { records: [{ value: `v${i}` }] }) });
    }
    const t0 = Date.now();
    const acked = new Map<number, string>();
    for (const r of reqs) {
      const res = await r.res;
      expect(res.status).toBe(r.acks0 ? 202 : 200);
      const b = (await res.json()) as ProduceResponse;
      if (!r.acks0) acked.set(b.records[0]!.offset, r.value);
    }
    console.log("acks mix took", Date.now() - t0);
    await new Promise((r) => setTimeout(r, 1500));
    const all = await readAll(client, topic, 1);
    expect(all.length).toBe(200);
    for (const [o, v] of acked) expect(toText(all[o]!.value)).toBe(v);
  });

  it("topic route spanning 32 partitions, 60 concurrent requests", async () => {
    const topic = randomTopic("qa-many");
    await client.createTopic({ name: topic, partitions: 32 });
    const reqs = Array.from({ length: 60 }, (_, i) => post(`/v1/topics/${topic}/records`, { records: Array.from({ length: 64 }, (_, k) => ({ partition: k % 32, value: `r${i}-${k}` })) }));
    const acked = new Map<string, string>();
    for (let i = 0; i < reqs.length; i++) {
      const res = await reqs[i]!;
      expect(res.status).toBe(200);
      const b = (await res.json()) as ProduceResponse;
      b.records.forEach((r, k) => {
        acked.set(`${r.partition}:${r.offset}`, `r${i}-${k}`);
      });
    }
    const all = await readAll(client, topic, 32);
    expect(all.length).toBe(60 * 64);
    for (const r of all) expect(acked.get(`${r.partition}:${r.offset}`)).toBe(toText(r.value));
  });

  it("near-8 MiB requests next to tiny ones", async () => {
    const topic = randomTopic("qa-big");
    await client.createTopic({ name: topic, partitions: 1 });
    const path = `/v1/topics/${topic}/partitions/0/records`;
    const big = (i: number) => {
      const values = Array.from({ length: 8 }, (_, k) => `B${i}-${k}-${"x".repeat(1_000_000 - 20)}`);
      return { values, res: post(path, { records: values.map((value) => ({ value })) }) };
    };
    const reqs: { values: string[]; res: Promise<Response> }[] = [];
    for (let i = 0; i < 40; i++) {
      if (i % 10 === 1) reqs.push(big(i));
      else reqs.push({ values: [`t${i}`], res: post(path, { records: [{ value: `t${i}` }] }) });
    }
    const acked = new Map<number, string>();
    for (const r of reqs) {
      const res = await r.res;
      const text = await res.text();
      expect(res.status, text.slice(0, 300)).toBe(200);
      const b = JSON.parse(text) as ProduceResponse;
      b.records.forEach((rec, k) => {
        acked.set(rec.offset, r.values[k]!);
      });
    }
    const all = await readAll(client, topic, 1);
    expect(all.length).toBe(acked.size);
    for (const rec of all) expect(toText(rec.value)).toBe(acked.get(rec.offset));
  });

  it("SDK producer on a LogAppendTime topic: metadata timestamps equal what a consumer reads", async () => {
    const topic = randomTopic("qa-lat");
    await client.createTopic({ name: topic, partitions: 2, configs: { "message.timestamp.type": "LogAppendTime" } });
    const producer = new Producer(client, { lingerMs: 2 });
    const metas = await Promise.all(Array.from({ length: 50 }, (_, i) => producer.send({ topic, messages: [{ value: `m${i}`, partition: i % 2, timestamp: 1234 }] })));
    await producer.close();
    const all = await readAll(client, topic, 2);
    const byPos = new Map(all.map((r) => [`${r.partition}:${r.offset}`, r]));
    for (const [m] of metas) {
      const r = byPos.get(`${m!.partition}:${m!.offset}`)!;
      expect(r.timestamp).toBe(m!.timestamp);
      expect(r.timestamp).not.toBe(1234);
    }
  });
});

describe("produce coalescing: aborts", () => {
  it("aborting many requests at random moments on a busy lane: others answered quickly, no error logs", async () => {
    const topic = randomTopic("qa-abort");
    await client.createTopic({ name: topic, partitions: 1 });
    const path = `/v1/topics/${topic}/partitions/0/records`;
    const pad = "y".repeat(200_000);
    const results: Promise<{ i: number; status: number | "aborted" | string; ms: number; offsets?: number[] }>[] = [];
    for (let i = 0; i < 400; i++) {
      const ac = new AbortController();
      const t0 = Date.now();
      const value = `v${i}-${i % 5 === 0 ? pad : ""}`;
      results.push(
        (async () => {
          try {
            const res = await post(path, { records: [{ value }] }, {}, ac.signal);
            const text = await res.text();
            if (res.status !== 200) console.log(res.status, text);
            return { i, status: res.status, ms: Date.now() - t0, offsets: res.status === 200 ? (JSON.parse(text) as ProduceResponse).records.map((r) => r.offset) : undefined };
          } catch (e) {
            return { i, status: (e as Error).name === "AbortError" ? ("aborted" as const) : String(e), ms: Date.now() - t0 };
          }
        })(),
      );
      if (i % 3 === 0) setTimeout(() => ac.abort(), Math.floor(Math.random() * 300));
      if (i % 40 === 0) await new Promise((r) => setTimeout(r, 20));
    }
    const rs = await Promise.all(results);
    const statuses = new Map<string, number>();
    for (const r of rs) statuses.set(String(r.status), (statuses.get(String(r.status)) ?? 0) + 1);
    const slow = rs
      .filter((r) => r.status === 200)
      .map((r) => r.ms)
      .sort((a, b) => b - a)
      .slice(0, 5);
    console.log("statuses", [...statuses], "slowest", slow);
    expect(rs.filter((r) => r.status !== 200 && r.status !== "aborted")).toEqual([]);
    const after = await post(path, { records: [{ value: "after" }] });
    expect(after.status).toBe(200);
    const all = await readAll(client, topic, 1);
    const byOffset = new Map(all.map((r) => [r.offset, toText(r.value)]));
    for (const r of rs) if (r.status === 200) expect(byOffset.get(r.offsets![0]!)?.startsWith(`v${r.i}-`)).toBe(true);
    expect(all.map((r) => r.offset)).toEqual(all.map((_, k) => k));
    await new Promise((r) => setTimeout(r, 500));
    const out = server.output();
    expect(out).not.toMatch(/Cannot perform I\/O on behalf of a different request|hung|different request context|Uncaught/);
  });
});

describe("produce coalescing: crash", () => {
  it("SIGKILL while many coalesced requests are in flight: every acknowledged record at its offset, dense, all-or-nothing", async () => {
    const topic = randomTopic("qa-kill");
    const partitions = 2;
    await client.createTopic({ name: topic, partitions });
    const producerIds: number[] = [];
    for (let w = 0; w < 10; w++) producerIds.push((await client.initProducerId()).producerId);
    type Ack = { key: string; partition: number; offsets: number[]; n: number };
    const acks: Ack[] = [];
    let stop = false;
    const writers = 60;
    const run = Array.from({ length: writers }, async (_, w) => {
      const partition = w % partitions;
      const idem = w < 10;
      let seq = 0;
      for (let i = 0; !stop; i++) {
        const n = 1 + ((w + i) % 5);
        const key = `w${w}-r${i}`;
        const body: Record<string, unknown> = { records: Array.from({ length: n }, (_, k) => ({ value: `${key}-k${k}` })) };
        if (idem) Object.assign(body, { producerId: producerIds[w], producerEpoch: 0, baseSequence: seq });
        const binary = !idem && i % 2 === 1;
        let status: number;
        let text: string;
        try {
          const res = binary
            ? await fetch(`${server.baseUrl}/v1/topics/${topic}/partitions/${partition}/records`, {
                method: "POST",
                headers: { "content-type": BATCH_MEDIA_TYPE, accept: SUMMARY },
                body: encodeBatch(
                  {},
                  Array.from({ length: n }, (_, k) => ({ key: null, value: new TextEncoder().encode(`${key}-k${k}`), headers: [], timestamp: 1 })),
                ),
              })
            : await post(`/v1/topics/${topic}/partitions/${partition}/records`, body, i % 3 === 0 ? { accept: SUMMARY } : {});
          status = res.status;
          text = await res.text();
        } catch {
          return;
        }
        if (status !== 200) throw new Error(`writer ${w}: HTTP ${status} ${text}`);
        const a = JSON.parse(text) as { records?: { offset: number }[]; baseOffset?: number; lastOffset?: number };
        const offsets = a.records ? a.records.map((r) => r.offset) : Array.from({ length: a.lastOffset! - a.baseOffset! + 1 }, (_, k) => a.baseOffset! + k);
        expect(offsets.length).toBe(n);
        acks.push({ key, partition, offsets, n });
        seq += n;
      }
    });
    while (acks.length < 1500) await new Promise((r) => setTimeout(r, 5));
    await server.kill();
    stop = true;
    await Promise.all(run);
    await server.restart();
    const all = await readAll(client, topic, partitions);
    const byPos = new Map(all.map((r) => [`${r.partition}:${r.offset}`, toText(r.value)]));
    for (const a of acks) {
      a.offsets.forEach((o, k) => {
        expect(byPos.get(`${a.partition}:${o}`), `${a.key} k${k} @${a.partition}:${o}`).toBe(`${a.key}-k${k}`);
      });
    }
    for (let p = 0; p < partitions; p++) {
      const offs = all.filter((r) => r.partition === p).map((r) => r.offset);
      expect(offs).toEqual(offs.map((_, k) => k));
    }
    const stored = new Map<string, number>();
    for (const r of all) {
      const key = toText(r.value)!.replace(/-k\d+$/, "");
      stored.set(key, (stored.get(key) ?? 0) + 1);
    }
    for (const [key, count] of stored) {
      const [, w, i] = /^w(\d+)-r(\d+)$/.exec(key)!.map(Number) as [number, number, number];
      expect(count, key).toBe(1 + ((w + i) % 5));
    }
    console.log("acked requests", acks.length, "stored requests", stored.size);
  });
});

describe("produce coalescing: delete and re-create", () => {
  it("topic deleted and re-created while requests are queued: no 5xx, no hang, new topic's records all answered at their offsets", async () => {
    const topic = randomTopic("qa-recreate");
    await client.createTopic({ name: topic, partitions: 1 });
    const path = `/v1/topics/${topic}/partitions/0/records`;
    const results: Promise<{ i: number; status: number; text: string; ms: number }>[] = [];
    const fire = (i: number) => {
      const t0 = Date.now();
      results.push(
        post(path, { records: [{ value: `v${i}-${"z".repeat(i % 4 === 0 ? 100_000 : 0)}` }] }).then(async (r) => ({ i, status: r.status, text: await r.text(), ms: Date.now() - t0 })),
      );
    };
    for (let i = 0; i < 150; i++) fire(i);
    await new Promise((r) => setTimeout(r, 30));
    await client.deleteTopic(topic);
    for (let i = 150; i < 250; i++) fire(i);
    await client.createTopic({ name: topic, partitions: 1 });
    for (let i = 250; i < 400; i++) fire(i);
    const rs = await Promise.all(results);
    const statuses = new Map<string, number>();
    for (const r of rs) statuses.set(`${r.status} ${r.status === 200 ? "" : r.text.slice(0, 80)}`, (statuses.get(`${r.status} ${r.status === 200 ? "" : r.text.slice(0, 80)}`) ?? 0) + 1);
    console.log(
      [...statuses],
      "slowest",
      rs
        .map((r) => r.ms)
        .sort((a, b) => b - a)
        .slice(0, 3),
    );
    expect(rs.filter((r) => r.status >= 500)).toEqual([]);
    const all = await readAll(client, topic, 1);
    expect(all.map((r) => r.offset)).toEqual(all.map((_, k) => k));
    const answered = new Map<number, number>();
    for (const r of rs) if (r.status === 200) answered.set((JSON.parse(r.text) as ProduceResponse).records[0]!.offset, r.i);
    for (const rec of all) {
      const i = Number(/^v(\d+)-/.exec(toText(rec.value)!)![1]);
      // a stored record of the new topic was answered 200 with exactly this offset
      expect(rs[i]!.status, `v${i}`).toBe(200);
      expect((JSON.parse(rs[i]!.text) as ProduceResponse).records[0]!.offset).toBe(rec.offset);
    }
  });
});

describe("produce coalescing: Durable Streams closure", () => {
  it("native produce racing a stream close: 200s all stored before the tail, the rest STREAM_CLOSED", async () => {
    const name = randomTopic("qa-ds");
    const put = await fetch(`${server.baseUrl}/v1/stream/${name}`, { method: "PUT", headers: { "content-type": "text/plain" } });
    expect(put.status).toBe(201);
    const topic = `streams/default/${name}`;
    const path = `/v1/topics/${topic}/partitions/0/records`;
    const rs: Promise<{ i: number; status: number; text: string }>[] = [];
    for (let i = 0; i < 200; i++) {
      rs.push(post(path, { records: [{ value: `n${i}` }] }, i % 2 ? { accept: SUMMARY } : {}).then(async (r) => ({ i, status: r.status, text: await r.text() })));
      if (i === 100) {
        await new Promise((r) => setTimeout(r, 40));
        void fetch(`${server.baseUrl}/v1/stream/${name}`, { method: "POST", headers: { "content-type": "text/plain", "Stream-Closed": "true" } }).then((c) => expect(c.status).toBe(204));
      }
    }
    const out = await Promise.all(rs);
    const head = await fetch(`${server.baseUrl}/v1/stream/${name}`, { method: "HEAD" });
    const tail = head.headers.get("stream-next-offset");
    const counts = new Map<string, number>();
    for (const o of out) counts.set(`${o.status}`, (counts.get(`${o.status}`) ?? 0) + 1);
    console.log([...counts], "tail", tail);
    expect(out.filter((o) => o.status !== 200 && !(o.status === 409 && o.text.includes("STREAM_CLOSED")))).toEqual([]);
    const all = await readAll(client, topic, 1);
    const ok = out.filter((o) => o.status === 200);
    expect(all.length).toBe(ok.length);
    for (const o of ok) {
      const b = JSON.parse(o.text) as { records?: { offset: number }[]; baseOffset?: number };
      const off = b.records ? b.records[0]!.offset : b.baseOffset!;
      expect(toText(all[off]!.value)).toBe(`n${o.i}`);
    }
  });
});

describe("produce coalescing, SDK producer: lost answers on a LogAppendTime topic", () => {
  it("retries after a lost answer get the duplicate summary; RecordMetadata = what a consumer reads", async () => {
    const topic = randomTopic("qa-lost");
    await client.createTopic({ name: topic, partitions: 3, configs: { "message.timestamp.type": "LogAppendTime" } });
    let produceCalls = 0;
    const lossy: typeof fetch = async (input, init) => {
      const res = await globalThis.fetch(input, init);
      if (init?.method === "POST" && String(input).includes("/records") && produceCalls++ % 2 === 0) {
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 30)); // later LogAppendTime on a wrongly re-appended batch
        throw new TypeError("fetch failed (answer lost)");
      }
      return res;
    };
    const lc = new EdgelogClient({ baseUrl: server.baseUrl, fetch: lossy });
    const producers = Array.from({ length: 6 }, () => new Producer(lc, { lingerMs: 1, retryBackoffMs: 10 }));
    const sends: Promise<unknown>[] = [];
    const metas: { value: string; partition: number; offset: number; timestamp: number }[] = [];
    for (let i = 0; i < 60; i++) {
      const value = `m${i}`;
      sends.push(
        producers[i % 6]!.send({ topic, messages: [{ value, partition: i % 3, timestamp: 7 }] }).then(([m]) =>
          metas.push({ value, partition: m!.partition, offset: m!.offset, timestamp: m!.timestamp }),
        ),
      );
    }
    await Promise.all(sends);
    await Promise.all(producers.map((p) => p.close()));
    const all = await readAll(client, topic, 3);
    expect(all.length).toBe(60);
    const byPos = new Map(all.map((r) => [`${r.partition}:${r.offset}`, r]));
    for (const m of metas) {
      const r = byPos.get(`${m.partition}:${m.offset}`);
      expect(toText(r!.value)).toBe(m.value);
      expect(r!.timestamp, m.value).toBe(m.timestamp);
    }
  });
});

describe("produce coalescing: one idempotent producer, consecutive sequences at once", () => {
  it("50 requests seq 0..49 sent concurrently: the stored sequence is a gap-free prefix-consistent order", async () => {
    const topic = randomTopic("qa-seq");
    await client.createTopic({ name: topic, partitions: 1 });
    const { producerId } = await client.initProducerId();
    const path = `/v1/topics/${topic}/partitions/0/records`;
    // keep the lane busy so these queue
    const filler = Array.from({ length: 10 }, (_, i) => post(path, { records: [{ value: `f${i}-${"q".repeat(300_000)}` }] }));
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, s) =>
        post(path, { producerId, producerEpoch: 0, baseSequence: s, records: [{ value: `s${s}` }] }).then(async (r) => ({ s, status: r.status, text: await r.text() })),
      ),
    );
    await Promise.all(filler);
    const codes = new Map<string, number>();
    for (const r of rs) {
      const k = r.status === 200 ? "200" : `${r.status} ${(JSON.parse(r.text) as { error: { code: string } }).error.code}`;
      codes.set(k, (codes.get(k) ?? 0) + 1);
    }
    console.log([...codes]);
    const all = (await readAll(client, topic, 1)).map((r) => toText(r.value)!).filter((v) => v.startsWith("s"));
    const okSeqs = rs.filter((r) => r.status === 200).map((r) => `s${r.s}`);
    expect(all).toEqual([...okSeqs].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))));
    expect(all).toEqual(all.map((_, k) => `s${k}`));
  });
});

describe("produce coalescing: topic route with aborts and acks=0", () => {
  it("64 partitions, 150 topic-route requests (a third aborted, a third acks=0): no 5xx, no stuck lane, no server errors", async () => {
    const topic = randomTopic("qa-wide");
    await client.createTopic({ name: topic, partitions: 64 });
    const rs: Promise<string>[] = [];
    for (let i = 0; i < 150; i++) {
      const ac = new AbortController();
      const acks0 = i % 3 === 1;
      rs.push(
        (async () => {
          try {
            const res = await post(
              `/v1/topics/${topic}/records${acks0 ? "?acks=0" : ""}`,
              { records: Array.from({ length: 128 }, (_, k) => ({ value: `r${i}-${k}-${"w".repeat(2000)}` })) },
              {},
              ac.signal,
            );
            await res.text();
            return String(res.status);
          } catch (e) {
            return (e as Error).name === "AbortError" ? "aborted" : String(e);
          }
        })(),
      );
      if (i % 3 === 0) setTimeout(() => ac.abort(), Math.floor(Math.random() * 400));
    }
    const out = await Promise.all(rs);
    const counts = new Map<string, number>();
    for (const o of out) counts.set(o, (counts.get(o) ?? 0) + 1);
    console.log([...counts]);
    expect(out.filter((o) => o !== "200" && o !== "202" && o !== "aborted")).toEqual([]);
    const t0 = Date.now();
    const after = await post(`/v1/topics/${topic}/records`, { records: Array.from({ length: 64 }, (_, k) => ({ partition: k, value: "after" })) });
    expect(after.status).toBe(200);
    console.log("after took", Date.now() - t0);
    await new Promise((r) => setTimeout(r, 1000));
    const all = await readAll(client, topic, 64);
    for (let p = 0; p < 64; p++) {
      const offs = all.filter((r) => r.partition === p).map((r) => r.offset);
      expect(offs).toEqual(offs.map((_, k) => k));
    }
    expect(server.output()).not.toMatch(/Cannot perform I\/O on behalf of a different request|hung|different request context|Uncaught|edgelog\.produce\.acks0_failed/);
  });
});
