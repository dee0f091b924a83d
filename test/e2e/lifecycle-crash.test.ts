/**
 * kill -9 of the real dev server (workerd) during compaction and during offload to R2 (issue 10,
 * docs/LIFECYCLE.md): after each restart the log is consistent. Every acknowledged record that
 * compaction must keep (the latest of its key) is there, unchanged, at the offset it was
 * acknowledged at; no offset appears twice; nothing appears that was not produced at that
 * offset; the log end offset is unchanged. For offload, every record is still read (from the
 * rows or from R2) byte for byte, and once the partition has settled every R2 object under its
 * prefix is recorded by a segment row (no orphan) and every remote segment has its object.
 *
 * Whether a kill landed in the middle of the work is read from the persisted state while the
 * server is down (the partition's SQLite file: the compaction checkpoint's phase, segment rows
 * with an upload owed), with Node's built-in SQLite; each scenario kills until one kill has
 * landed mid-work (bounded).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomTopic, startDevServer, type DevServer } from "./dev-server.ts";

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer();
});
afterAll(() => server?.dispose());

const MAX_KILLS = 5;

async function post(path: string, body: unknown, method = "POST"): Promise<Response> {
  return fetch(`${server.baseUrl}${path}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

/** Opens each SQLite file of `dir` (read-only) and returns the first for which `pick` answers non-undefined. */
function inSqlite<T>(dir: string, pick: (db: DatabaseSync) => T | undefined): T | undefined {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".sqlite") && n !== "metadata.sqlite");
  } catch {
    return undefined;
  }
  for (const n of names) {
    const db = new DatabaseSync(join(dir, n), { readOnly: true });
    try {
      const v = pick(db);
      if (v !== undefined) return v;
    } catch {
      // another class's layout
    } finally {
      db.close();
    }
  }
  return undefined;
}

type SegRow = { id: number; base_offset: number; last_offset: number; closed: number; location: string; r2_key: string | null; remote: string };

/** The partition's persisted lifecycle state (server down): segment rows and the compaction phase. */
function partitionState(topicId: string): { segments: SegRow[]; phase: string } {
  const dir = join(server.persistDir, "v3/do/edgelog-PartitionDO");
  const s = inSqlite(dir, (db) => {
    const meta = db.prepare("SELECT value FROM meta WHERE key = 'topic_id'").get() as { value: string } | undefined;
    if (meta?.value !== topicId) return undefined;
    const segments = db.prepare("SELECT id, base_offset, last_offset, closed, location, r2_key, remote FROM seg_segments ORDER BY id").all() as SegRow[];
    const cp = db.prepare("SELECT checkpoint FROM seg_clean_state WHERE id = 1").get() as { checkpoint: string } | undefined;
    return { segments, phase: cp === undefined ? "idle" : (JSON.parse(cp.checkpoint) as { phase: string }).phase };
  });
  if (s === undefined) throw new Error(`no persisted partition for topic id ${topicId}`);
  return s;
}

/** R2 keys under `prefix` in Miniflare's persisted bucket (server down). */
function r2Keys(prefix: string): string[] {
  const dir = join(server.persistDir, "v3/r2/miniflare-R2BucketObject");
  return (
    inSqlite(dir, (db) => {
      const rows = db.prepare("SELECT key FROM _mf_objects WHERE substr(key, 1, ?) = ? ORDER BY key").all(prefix.length, prefix) as { key: string }[];
      return rows.length > 0 ? rows.map((r) => r.key) : undefined;
    }) ?? []
  );
}

type Rec = { offset: number; key: string | null; value: string | null };

/** Every record from offset 0 to the log end, through the HTTP fetch (nextOffset moves past gaps). */
async function readAll(topic: string): Promise<{ records: Rec[]; logEndOffset: number }> {
  const records: Rec[] = [];
  let offset = 0;
  for (;;) {
    const res = await fetch(`${server.baseUrl}/v1/topics/${topic}/partitions/0/records?offset=${offset}&maxRecords=2000&maxWaitMs=0`);
    expect(res.status, await res.clone().text()).toBe(200);
    const f = (await res.json()) as { records: Rec[]; nextOffset: number; highWatermark: number };
    records.push(...f.records.map((r) => ({ offset: r.offset, key: r.key, value: r.value })));
    if (f.nextOffset >= f.highWatermark) return { records, logEndOffset: f.highWatermark };
    expect(f.nextOffset).toBeGreaterThan(offset);
    offset = f.nextOffset;
  }
}

/** Produces `requests` requests (one batch each) of `perBatch` keyed records of about `valueBytes` (8 in flight); the acknowledged records by offset. */
async function produceKeyed(topic: string, round: number, requests: number, perBatch: number, keys: number, valueBytes: number): Promise<Map<number, Rec>> {
  const acked = new Map<number, Rec>();
  let next = 0;
  const writer = async () => {
    for (let i = next++; i < requests; i = next++) {
      const records = Array.from({ length: perBatch }, (_, j) => ({ key: `k${(i * perBatch + j) % keys}`, value: `r${round}-${i}-${j}-${"x".repeat(valueBytes)}` }));
      const res = await post(`/v1/topics/${topic}/partitions/0/records`, { records });
      expect(res.status, await res.clone().text()).toBe(200);
      const offsets = ((await res.json()) as { records: { offset: number }[] }).records.map((r) => r.offset);
      offsets.forEach((o, j) => {
        acked.set(o, { offset: o, ...records[j]! });
      });
    }
  };
  await Promise.all(Array.from({ length: 8 }, writer));
  return acked;
}

/** The partition's stored bytes (describe): they change when a compaction rewrite or a local truncation commits. */
async function storedBytes(topic: string): Promise<number> {
  const res = await fetch(`${server.baseUrl}/v1/topics/${topic}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { partitionDetails: { bytes: number }[] }).partitionDetails[0]!.bytes;
}

/**
 * Kills the server in the middle of the work a config change (`patch`) starts: odd kills a few
 * ms after the change, even kills as soon as the stored bytes first change (a step committed,
 * more owed). Then reads the persisted state with `inspect` while the server is down, and starts
 * it again.
 */
async function killDuring<T>(kill: number, topic: string, patch: Record<string, unknown>, inspect: () => T): Promise<T> {
  const before = await storedBytes(topic);
  expect((await post(`/v1/topics/${topic}`, { configs: patch }, "PATCH")).status).toBe(200);
  if (kill % 2 === 1) await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 50)));
  else for (let i = 0; i < 2000 && (await storedBytes(topic)) === before; i++);
  await server.kill();
  const seen = inspect();
  await server.restart();
  return seen;
}

async function createTopic(topic: string, configs: Record<string, unknown>): Promise<string> {
  const created = await post("/v1/topics", { name: topic, partitions: 1, configs: { "segment.bytes": 1024 * 1024, ...configs } });
  expect(created.status, await created.clone().text()).toBe(201);
  return ((await created.json()) as { topicId: string }).topicId;
}

describe("kill -9 during compaction", () => {
  it("keeps every latest record per key at its offset, duplicates nothing, and leaves offsets unchanged", async () => {
    let midPass = 0;
    for (let kill = 0; kill < MAX_KILLS && midPass === 0; kill++) {
      // A fresh compacted topic whose backlog min.compaction.lag.ms keeps dirty until the kill's config change.
      const topic = randomTopic("lc-compact");
      const topicId = await createTopic(topic, { "cleanup.policy": "compact", "min.compaction.lag.ms": 86_400_000, "delete.retention.ms": 86_400_000 });
      const produced = await produceKeyed(topic, kill, 600, 5, 300, 2000);
      const phase = await killDuring(kill, topic, { "min.compaction.lag.ms": 0, "min.cleanable.dirty.ratio": 0.01 }, () => partitionState(topicId).phase);
      if (phase !== "idle") midPass++;
      const check = async (): Promise<number> => {
        const { records, logEndOffset } = await readAll(topic);
        expect(logEndOffset).toBe(produced.size);
        // Offsets strictly increasing (no duplicate), and each record is the one acknowledged at its offset.
        for (let i = 1; i < records.length; i++) expect(records[i]!.offset).toBeGreaterThan(records[i - 1]!.offset);
        for (const r of records) expect(r).toEqual(produced.get(r.offset));
        // The latest record of every key is kept.
        const latest = new Map<string, number>();
        for (const [o, r] of produced) if ((latest.get(r.key!) ?? -1) < o) latest.set(r.key!, o);
        const present = new Set(records.map((r) => r.offset));
        for (const [key, o] of latest) expect({ key, offset: o, present: present.has(o) }).toEqual({ key, offset: o, present: true });
        return records.length;
      };
      await check();
      // Compaction resumes after the restart and removes superseded records (it is not just skipped).
      let left = produced.size;
      for (let i = 0; i < 60 && left > 300 + 600; i++) {
        await new Promise((r) => setTimeout(r, 500));
        left = await check();
      }
      // Closed segments keep at most one record per key (300 keys); the active segment (1 MiB: about
      // 100 batches of 5 records) is not compacted.
      expect(left).toBeLessThanOrEqual(300 + 600);
    }
    expect(midPass, "no kill landed in the middle of a compaction pass").toBeGreaterThan(0);
  }, 900_000);
});

describe("kill -9 during offload to R2", () => {
  it("reads every record byte for byte after restart; once settled every object is recorded and every remote segment has its object", async () => {
    let midOffload = 0;
    const topics: { topic: string; topicId: string; produced: Map<number, Rec> }[] = [];
    for (let kill = 0; kill < MAX_KILLS && midOffload === 0; kill++) {
      // A fresh topic, offloaded from the kill's config change on (remote.storage.enable may be turned on later, not off).
      const topic = randomTopic("lc-tier");
      const topicId = await createTopic(topic, {});
      const prefix = `segments/${topicId}/0/`;
      const produced = await produceKeyed(topic, kill, 400, 10, 1_000_000, 2000);
      topics.push({ topic, topicId, produced });
      const seen = await killDuring(kill, topic, { "remote.storage.enable": true, "local.retention.ms": 0 }, () => ({ segments: partitionState(topicId).segments, keys: r2Keys(prefix) }));
      // Mid-offload: an upload owed (copying), or some closed segments offloaded and others not yet.
      const closed = seen.segments.filter((s) => s.closed === 1);
      if (closed.some((s) => s.remote === "copying") || (closed.some((s) => s.location === "local") && closed.some((s) => s.location !== "local"))) midOffload++;
      const { records, logEndOffset } = await readAll(topic);
      expect(logEndOffset).toBe(produced.size);
      // Nothing is compacted or retained here: every offset, once, with its acknowledged record.
      expect(records.map((r) => r.offset)).toEqual([...produced.keys()].sort((a, b) => a - b));
      for (const r of records) expect(r).toEqual(produced.get(r.offset));
    }
    expect(midOffload, "no kill landed in the middle of an offload").toBeGreaterThan(0);
    // Settle: let the tier timers finish (uploads owed after the restart included), then look at the files.
    let settled = false;
    for (let i = 0; i < 6 && !settled; i++) {
      await new Promise((r) => setTimeout(r, 3000));
      await server.stop();
      settled = topics.every(({ topicId }) => partitionState(topicId).segments.every((s) => s.closed === 0 || (s.location === "remote" && s.remote === "none")));
      if (settled) {
        for (const { topicId } of topics) {
          const segments = partitionState(topicId).segments;
          // Every object is recorded by exactly one segment row, and every remote segment has its object.
          expect(r2Keys(`segments/${topicId}/0/`)).toEqual(
            segments
              .filter((s) => s.location !== "local")
              .map((s) => s.r2_key)
              .sort(),
          );
        }
      }
      await server.restart();
    }
    expect(settled, "the offload did not settle").toBe(true);
    for (const { topic, produced } of topics) {
      const { records } = await readAll(topic);
      expect(records.length).toBe(produced.size);
      for (const r of records) expect(r).toEqual(produced.get(r.offset));
    }
  }, 900_000);
});
