/**
 * Upgrade across issue 9 on the real dev server: data written by the code before the
 * partition became rooms (one `_schema` version per object, the stream expiry alarm set
 * directly, the group coordinator's own `schedule` table) is read by today's code from the
 * same persist directory: topics and records, an idempotent producer's state (a retry of its
 * last request is a duplicate), Durable Streams with their Producer-Ids, a stream's TTL
 * expiry armed by the old code, and a group's committed offsets.
 *
 * The old code is commit {@link LEGACY_COMMIT} (main just before issue 9), extracted with
 * `git archive` into a temporary folder that borrows this repository's node_modules.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, startDevServer, type DevServer } from "./dev-server.ts";

/** main just before issue 9 (the partition as rooms, per-room migrations). */
const LEGACY_COMMIT = "40a5f9c55a877229cadc74a448a116f6bcdccb3b";

const dirs: string[] = [];
let server: DevServer | undefined;
afterAll(async () => {
  await server?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The legacy code in a temporary folder, or null when this clone lacks the commit (shallow). */
function legacyTree(): string | null {
  try {
    execFileSync("git", ["cat-file", "-e", `${LEGACY_COMMIT}^{commit}`], { cwd: ROOT, stdio: "ignore" });
  } catch {
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), "edgelog-legacy-"));
  dirs.push(dir);
  const tar = execFileSync("git", ["archive", "--format=tar", LEGACY_COMMIT], { cwd: ROOT, maxBuffer: 256 * 1024 * 1024 });
  execFileSync("tar", ["-x", "-C", dir], { input: tar });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  return dir;
}

async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  return fetch(`${base}${path}`, init);
}

async function json<T>(res: Promise<Response>, status = 200): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, text).toBe(status);
  return (text === "" ? {} : JSON.parse(text)) as T;
}

type Produced = { records: { partition: number; offset: number }[] };
type Fetched = { records: { offset: number; value: string }[]; nextOffset: number };

async function values(base: string, topic: string, partition: number): Promise<string[]> {
  const f = await json<Fetched>(call(base, "GET", `/v1/topics/${topic}/partitions/${partition}/records?offset=0&maxRecords=10000`));
  expect(f.records.map((r) => r.offset)).toEqual(f.records.map((_, i) => i));
  return f.records.map((r) => r.value);
}

async function topicNames(base: string): Promise<string[]> {
  const t = await json<{ topics: { name: string }[] }>(call(base, "GET", "/v1/topics"));
  return t.topics.map((x) => x.name);
}

describe("upgrade from the code before rooms (real dev server, same persist dir)", () => {
  const tree = legacyTree();
  it.skipIf(tree === null)(
    "topics, idempotent producers, streams with their producers and TTL, group offsets",
    async () => {
      const persistDir = mkdtempSync(join(tmpdir(), "edgelog-upgrade-"));
      dirs.push(persistDir);
      mkdirSync(persistDir, { recursive: true });

      // ---- the old code writes ----
      server = await startDevServer({ persistDir, cwd: tree as string });
      let base = server.baseUrl;
      await json(call(base, "POST", "/v1/topics", { name: "up-plain", partitions: 2 }), 201);
      for (let p = 0; p < 2; p++) await json(call(base, "POST", `/v1/topics/up-plain/partitions/${p}/records`, { records: Array.from({ length: 20 }, (_, i) => ({ value: `p${p}-${i}` })) }));
      await json(call(base, "POST", "/v1/topics", { name: "up-idem", partitions: 1 }), 201);
      // A topic outside public/default, from before namespaces existed (issue 17).
      await json(call(base, "POST", "/v1/topics", { name: "acme/prod/up-ns", partitions: 1, configs: { "retention.ms": 60000 } }), 201);
      const { producerId } = await json<{ producerId: number }>(call(base, "POST", "/v1/producers"));
      const idem = (seq: number) => ({ producerId, producerEpoch: 0, baseSequence: seq * 2, records: [{ value: `i${seq}a` }, { value: `i${seq}b` }] });
      let lastAck: Produced | undefined;
      for (let s = 0; s < 5; s++) lastAck = await json<Produced>(call(base, "POST", "/v1/topics/up-idem/partitions/0/records", idem(s)));
      expect(lastAck?.records.map((r) => r.offset)).toEqual([8, 9]);

      await json(call(base, "PUT", "/v1/stream/up-s1", undefined, { "content-type": "text/plain" }), 201);
      for (let seq = 0; seq < 3; seq++) {
        const r = await call(base, "POST", "/v1/stream/up-s1", `v${seq};`, { "content-type": "text/plain", "Producer-Id": "w1", "Producer-Epoch": "0", "Producer-Seq": String(seq) });
        expect(r.status, await r.text()).toBeLessThan(300);
      }
      // A stream with a short TTL: the old code arms its expiry alarm directly.
      const ttlSeconds = 8;
      await json(call(base, "PUT", "/v1/stream/up-ttl", undefined, { "content-type": "text/plain", "Stream-TTL": String(ttlSeconds) }), 201);
      const ttlCreatedMs = Date.now();

      await json(
        call(base, "POST", "/v1/groups/up-g/offsets", {
          offsets: [
            { topic: "up-plain", partition: 0, offset: 7, metadata: "m" },
            { topic: "up-plain", partition: 1, offset: 3 },
          ],
        }),
      );
      expect(await topicNames(base)).toEqual(expect.arrayContaining(["public/default/up-plain", "public/default/up-idem", "streams/default/up-s1", "streams/default/up-ttl"]));
      await server.stop();

      // ---- today's code reads ----
      server = await startDevServer({ persistDir });
      base = server.baseUrl;
      for (let p = 0; p < 2; p++) expect(await values(base, "up-plain", p)).toEqual(Array.from({ length: 20 }, (_, i) => `p${p}-${i}`));
      // Its namespace was adopted by the metadata migration: it exists, holds the topic, takes
      // new topics, and the topic's non-default retention.ms stays its own.
      expect(await json<{ topics: number }>(call(base, "GET", "/v1/namespaces/acme/prod"))).toMatchObject({ name: "acme/prod", topics: 1, createdAt: 0 });
      await json(call(base, "POST", "/v1/topics", { name: "acme/prod/up-ns2", partitions: 1 }), 201);
      await json(call(base, "PUT", "/v1/namespaces/acme/prod/policies/retention", { timeMs: 120000, sizeBytes: -1 }));
      const nsTopic = await json<{ configs: Record<string, unknown>; policies: Record<string, unknown> }>(call(base, "GET", "/v1/topics/acme/prod/up-ns"));
      expect([nsTopic.configs["retention.ms"], nsTopic.policies.retention]).toEqual([60000, { value: { timeMs: 60000, sizeBytes: -1 }, source: "topic" }]);
      // The idempotent producer's state survived adoption: its last request again is a duplicate
      // (same offsets, nothing appended); the next sequence appends densely.
      const dup = await json<Produced>(call(base, "POST", "/v1/topics/up-idem/partitions/0/records", idem(4)));
      expect(dup.records.map((r) => r.offset)).toEqual([8, 9]);
      const next = await json<Produced>(call(base, "POST", "/v1/topics/up-idem/partitions/0/records", idem(5)));
      expect(next.records.map((r) => r.offset)).toEqual([10, 11]);
      expect(await values(base, "up-idem", 0)).toEqual(Array.from({ length: 6 }, (_, s) => [`i${s}a`, `i${s}b`]).flat());

      // The stream and its Producer-Id: a retry of seq 2 is a duplicate, seq 3 appends.
      const retry = await call(base, "POST", "/v1/stream/up-s1", "v2;", { "content-type": "text/plain", "Producer-Id": "w1", "Producer-Epoch": "0", "Producer-Seq": "2" });
      expect(retry.status, await retry.text()).toBe(204);
      const s3 = await call(base, "POST", "/v1/stream/up-s1", "v3;", { "content-type": "text/plain", "Producer-Id": "w1", "Producer-Epoch": "0", "Producer-Seq": "3" });
      expect(s3.status, await s3.text()).toBeLessThan(300);
      const read = await call(base, "GET", "/v1/stream/up-s1?offset=-1");
      expect(await read.text()).toBe("v0;v1;v2;v3;");

      const offsets = await json<{ partitions: { topic: string; partition: number; committedOffset: number | null; metadata: string | null }[] }>(
        call(base, "GET", "/v1/groups/up-g/offsets"),
      );
      const byPartition = new Map<string, [number | null, string | null]>(offsets.partitions.map((p) => [`${p.topic}/${p.partition}`, [p.committedOffset, p.metadata]]));
      expect(byPartition.get("public/default/up-plain/0"), JSON.stringify(offsets)).toEqual([7, "m"]);
      expect(byPartition.get("public/default/up-plain/1"), JSON.stringify(offsets)).toEqual([3, ""]);

      // The TTL stream is never touched after the upgrade: its expiry timer (armed by the old
      // code as the platform alarm) must still delete it and its topic.
      await new Promise((r) => setTimeout(r, Math.max(0, ttlCreatedMs + ttlSeconds * 1000 + 3000 - Date.now())));
      for (let i = 0; i < 100 && (await topicNames(base)).includes("streams/default/up-ttl"); i++) await new Promise((r) => setTimeout(r, 200));
      expect(await topicNames(base)).not.toContain("streams/default/up-ttl");
    },
    240_000,
  );
});
