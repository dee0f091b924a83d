/**
 * Helpers for the workers tests: every request goes through the real gateway (SELF.fetch)
 * to the real Durable Objects. Each test uses its own random topic names.
 */
import { SELF, env } from "cloudflare:test";
import type parsePrometheusTextFormat from "parse-prometheus-text-format";
import { expect } from "vitest";
import { crc32c, encodeBatch, type ProducerRecord } from "../../src/codec/index.ts";
import { partitionObjectName, type PartitionRpc } from "../../src/partition/rpc.ts";
import {
  BATCH_MEDIA_TYPE,
  ERRORS,
  isErrorCode,
  utf8,
  type ErrorBody,
  type ErrorCode,
  type JsonFetchResponse,
  type ProduceResponse,
  type TopicDescription,
} from "../../src/protocol/index.ts";

const BASE = "http://edgelog.test";

/** A fresh topic name, unique per call. */
export function randomTopic(prefix = "t"): string {
  return `${prefix}-${crypto.randomUUID()}`;
}

export function call(path: string, init?: RequestInit): Promise<Response> {
  return SELF.fetch(`${BASE}${path}`, init);
}

export function json(method: string, path: string, body: unknown): Promise<Response> {
  return call(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

/**
 * `json`, sent again (every 100 ms, at most `tries` times) while it answers 409
 * REASSIGNMENT_IN_PROGRESS, which is retriable: another membership change is running, or the
 * partition's leader (e.g. just elected) has not committed an entry of its term yet.
 */
export async function jsonRetryingReassignment(method: string, path: string, body: unknown, tries = 100): Promise<Response> {
  for (let i = 1; ; i++) {
    const res = await json(method, path, body);
    if (res.status !== 409 || i >= tries) return res;
    const code = ((await res.clone().json()) as ErrorBody).error?.code;
    if (code !== "REASSIGNMENT_IN_PROGRESS") return res;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Asserts the error body shape and code; returns the error for further checks. */
export async function expectError(res: Response, code: ErrorCode, status: number): Promise<ErrorBody["error"]> {
  const text = await res.text();
  expect({ status: res.status, code: (JSON.parse(text) as ErrorBody).error?.code }).toEqual({ status, code });
  return (JSON.parse(text) as ErrorBody).error;
}

/**
 * Creates tenant and namespace `tenant/namespace` if missing (a topic outside `public/default`
 * needs its namespace first, docs/TENANTS.md). test/workers/tenants.test.ts tests the refusal.
 */
export async function ensureNamespace(namespace: string): Promise<void> {
  const [tenant, ns] = namespace.split("/");
  for (const path of [`/v1/tenants/${tenant}`, `/v1/namespaces/${tenant}/${ns}`]) {
    const res = await call(path, { method: "PUT" });
    await res.body?.cancel();
    expect([201, 409]).toContain(res.status);
  }
}

/** Creates a topic (and, for a `tenant/namespace/topic` name, its namespace when missing). */
export async function createTopic(name: string, partitions = 1, configs?: Record<string, unknown>): Promise<TopicDescription> {
  const parts = name.split("/");
  if (parts.length === 3) await ensureNamespace(`${parts[0]}/${parts[1]}`);
  const res = await json("POST", "/v1/topics", { name, partitions, ...(configs ? { configs } : {}) });
  expect(res.status).toBe(201);
  return (await res.json()) as TopicDescription;
}

export async function describe(name: string): Promise<TopicDescription> {
  const res = await call(`/v1/topics/${name}`);
  expect(res.status).toBe(200);
  return (await res.json()) as TopicDescription;
}

/** High watermark of every partition, in partition order. */
export async function highWatermarks(name: string): Promise<number[]> {
  return (await describe(name)).partitionDetails.map((p) => p.highWatermark);
}

export async function produce(path: string, body: unknown): Promise<ProduceResponse> {
  const res = await json("POST", path, body);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as ProduceResponse;
}

export async function fetchJson(topic: string, partition: number, query: string): Promise<JsonFetchResponse> {
  const res = await call(`/v1/topics/${topic}/partitions/${partition}/records?${query}`);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as JsonFetchResponse;
}

/** The partition Durable Object of a topic id, called directly (RPC), bypassing the gateway. */
export function partitionObject(topicId: string, p = 0): PartitionRpc {
  return env.PARTITION.getByName(partitionObjectName(topicId, p)) as unknown as PartitionRpc;
}

/** A one-record batch (null key, UTF-8 `value`, no headers). */
export const oneRecordBatch = (value: string, timestamp = 1): Uint8Array => encodeBatch({}, [{ key: null, value: new TextEncoder().encode(value), headers: [], timestamp }]);

/** Everything a rejected request must leave unchanged: partition bounds, counts, bytes, configs. */
export async function snapshot(name: string): Promise<Pick<TopicDescription, "partitions" | "configs" | "partitionDetails" | "topicId">> {
  const d = await describe(name);
  return { topicId: d.topicId, partitions: d.partitions, configs: d.configs, partitionDetails: d.partitionDetails };
}

/** Asserts the one error shape: JSON, a known code, the table's status and retriable flag. */
export async function expectErrorShape(res: Response, what: string): Promise<ErrorBody["error"]> {
  const text = await res.text();
  expect(res.headers.get("content-type"), what).toMatch(/^application\/json/);
  const body = JSON.parse(text) as ErrorBody;
  expect(Object.keys(body), what).toEqual(["error"]);
  const e = body.error;
  expect(isErrorCode(e.code), `${what}: ${text}`).toBe(true);
  expect({ status: res.status, retriable: e.retriable, message: typeof e.message }, `${what}: ${text}`).toEqual({
    status: ERRORS[e.code].httpStatus,
    retriable: ERRORS[e.code].retriable,
    message: "string",
  });
  return e;
}

export const rec = (value: string | null, timestamp = 1_000): ProducerRecord => ({ key: null, value: value === null ? null : utf8(value), headers: [], timestamp });

export function sendBatch(topic: string, partition: number, body: Uint8Array): Promise<Response> {
  return call(`/v1/topics/${topic}/partitions/${partition}/records`, { method: "POST", headers: { "content-type": BATCH_MEDIA_TYPE }, body });
}

/** A copy of `batch` changed by `f` (DataView over the copy); `fixCrc` recomputes the records CRC. */
export function mutate(batch: Uint8Array, f: (v: DataView, b: Uint8Array) => void, fixCrc = false): Uint8Array {
  const b = batch.slice();
  const v = new DataView(b.buffer);
  f(v, b);
  if (fixCrc) v.setUint32(53, crc32c(b, 61, b.length)); // layout: src/codec/batch.ts
  return b;
}

/** A scrape of GET /v1/metrics, parsed (Prometheus text format 0.0.4). */
export type MetricFamilies = ReturnType<typeof parsePrometheusTextFormat>;

/** The value of the one sample of `name` whose labels include `labels`, or undefined when none (throws when no family or several samples match). */
export function metricValue(families: MetricFamilies, name: string, labels: Record<string, string>): number | undefined {
  const f = families.find((x) => x.name === name);
  if (f === undefined) throw new Error(`no family ${name}`);
  const matches = f.metrics.filter((m) => "value" in m && Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  if (matches.length > 1) throw new Error(`${matches.length} samples of ${name} match ${JSON.stringify(labels)}`);
  const m = matches[0];
  return m !== undefined && "value" in m ? Number(m.value) : undefined;
}
