/**
 * Produce coalescing on the real dev server (workerd, one isolate): concurrent requests for
 * one partition share append RPCs (src/gateway/append-coalescer.ts), yet each gets its own
 * offsets and its own error, all-or-nothing for its own records only, and a client that
 * goes away mid-request does not hold up the others.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgelogClient } from "../../sdk/src/index.ts";
import { encodeBatch } from "../../src/codec/index.ts";
import { BATCH_MEDIA_TYPE, type JsonFetchResponse, type ProduceResponse } from "../../src/protocol/index.ts";
import { randomTopic, type DevServer, startWithClient } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

function post(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${server.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
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
        const batch = encodeBatch({}, values.map((v) => ({ key: null, value: new TextEncoder().encode(v), headers: [], timestamp: i })));
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
        post(path, { records: [{ value }] }, ac.signal).then(
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
