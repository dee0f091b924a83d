/**
 * What nothing owns (issue 10, docs/LIFECYCLE.md "Orphans"), through the real gateway and the
 * real objects: a 1,024-partition topic created and deleted without errors, leaving no rows, no
 * timers and no R2 objects; a partition object whose topic record is gone (a crash between the
 * record and the partitions) destroys itself on its `owner` timer; an owned one deletes the R2
 * objects under its prefix that no segment row holds; the Worker's scheduled sweep deletes
 * objects under topic ids no record holds, once old enough. Also the multipart upload of a
 * segment too large for one put from memory.
 */
import { createExecutionContext, createScheduledController, env, evictDurableObject, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import worker from "../../src/index.ts";
import { ORPHAN_OBJECT_GRACE_MS } from "../../src/lifecycle/index.ts";
import { partitionObjectName, partitionStub } from "../../src/partition/rpc.ts";
import { DEFAULT_TOPIC_CONFIGS } from "../../src/protocol/config.ts";
import { call, createTopic, describe, expectError, json, produce, randomTopic } from "./helpers.ts";

const MiB = 1024 * 1024;

const objectStub = (topicId: string, p: number): DurableObjectStub => env.PARTITION.getByName(partitionObjectName(topicId, p));

/**
 * What a partition object still stores: rows in any table but the base's `_rooms` (a restarted
 * object runs its migrations again, so empty tables may exist), timers, the alarm.
 */
async function leftovers(topicId: string, p: number): Promise<{ rows: Record<string, number>; alarm: number | null; timers: number }> {
  return runInDurableObject(objectStub(topicId, p), async (_o, state) => {
    const sql = state.storage.sql;
    const rows: Record<string, number> = {};
    for (const { name } of sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('_rooms', '_schedule') AND name NOT LIKE 'sqlite%' AND name NOT LIKE '_cf%'")
      .toArray()) {
      // Table names come from sqlite_master, not from input.
      const n = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM "${name}"`).one().n;
      if (n > 0) rows[name] = n;
    }
    const timers = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM _schedule").one().n;
    return { rows, alarm: await state.storage.getAlarm(), timers };
  });
}

const NOTHING = { rows: {}, alarm: null, timers: 0 };

/** Polls `leftovers` until the object keeps nothing (a destroy on the alarm may still be running), bounded. */
async function expectNothingLeft(topicId: string, p: number): Promise<void> {
  let last = await leftovers(topicId, p);
  for (let i = 0; i < 100 && JSON.stringify(last) !== JSON.stringify(NOTHING); i++) {
    await new Promise((r) => setTimeout(r, 50));
    last = await leftovers(topicId, p);
  }
  expect({ p, ...last }).toEqual({ p, ...NOTHING });
}

/** Runs a partition's due timers until none is due (bounded). */
async function settle(topicId: string, p: number): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 5));
    if (!(await runDurableObjectAlarm(objectStub(topicId, p)))) {
      const due = await runInDurableObject(
        objectStub(topicId, p),
        (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM _schedule WHERE room = 'lifecycle' AND due_ms <= ?", Date.now()).one().n,
      );
      if (due === 0) return;
    }
  }
}

/** Makes the partition's `owner` timer due and runs the alarm (after a restart, so the schedule's mirror reloads). */
async function runOwnerCheck(topicId: string, p: number): Promise<void> {
  await runInDurableObject(objectStub(topicId, p), (_o, state) => void state.storage.sql.exec("UPDATE _schedule SET due_ms = 0 WHERE room = 'lifecycle' AND key = 'owner'"));
  await evictDurableObject(objectStub(topicId, p));
  await runInDurableObject(objectStub(topicId, p), () => undefined);
  await runDurableObjectAlarm(objectStub(topicId, p));
}

const big = (i: number) => `v${i}`.padEnd(400 * 1024, ".");

suite("a 1,024-partition topic (issue 10)", () => {
  it("is created and deleted without errors; its partitions keep no rows, no timers and no R2 objects", async () => {
    const topic = randomTopic();
    const created = await json("POST", "/v1/topics", { name: topic, partitions: 1024, configs: { "segment.bytes": MiB, "remote.storage.enable": true } });
    expect(created.status, await created.clone().text()).toBe(201);
    const t = (await created.json()) as { topicId: string; partitions: number };
    expect(t.partitions).toBe(1024);
    const d = await describe(topic);
    expect(d.partitionDetails.length).toBe(1024);
    expect(d.partitionDetails.map((p) => p.partition)).toEqual(Array.from({ length: 1024 }, (_, i) => i));
    // Three partitions across the range get records, a closed segment and its R2 object.
    const used = [0, 511, 1023];
    for (const p of used) {
      for (let i = 0; i < 3; i++) await produce(`/v1/topics/${topic}/partitions/${p}/records`, { records: [{ value: big(i) }] });
      await settle(t.topicId, p);
      expect((await env.SEGMENTS!.list({ prefix: `segments/${t.topicId}/${p}/` })).objects.length).toBe(1);
    }
    const del = await call(`/v1/topics/${topic}`, { method: "DELETE" });
    expect(del.status, await del.clone().text()).toBe(204);
    await expectError(await call(`/v1/topics/${topic}`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    expect((await env.SEGMENTS!.list({ prefix: `segments/${t.topicId}/` })).objects).toEqual([]);
    // Every partition object: no table but the base's (empty) bookkeeping, no timer, no alarm.
    for (let p = 0; p < 1024; p++) expect({ p, ...(await leftovers(t.topicId, p)) }).toEqual({ p, ...NOTHING });
    // A partition RPC answers for nothing any more.
    expect(await partitionStub(env.PARTITION, t.topicId, 1023).describe()).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
  }, 600_000);
});

suite("orphaned partitions: the owner check", () => {
  it("a partition whose topic record never existed (create crashed before it) destroys itself, R2 objects included", async () => {
    const topicId = crypto.randomUUID();
    const name = `public/default/${randomTopic("orphan")}`;
    const p = partitionStub(env.PARTITION, topicId, 0);
    expect(await p.init({ topic: name, topicId, partition: 0, configs: { ...DEFAULT_TOPIC_CONFIGS, "segment.bytes": MiB, "remote.storage.enable": true } })).toEqual({ ok: true });
    const { encodeBatch } = await import("../../src/codec/index.ts");
    for (let i = 0; i < 3; i++)
      expect((await p.append({ batches: [encodeBatch({}, [{ key: null, value: new TextEncoder().encode(big(i)), headers: [], timestamp: Date.now() }])] })).ok).toBe(true);
    await settle(topicId, 0);
    expect((await env.SEGMENTS!.list({ prefix: `segments/${topicId}/0/` })).objects.length).toBe(1);
    // The first check is an hour after init.
    const due = await runInDurableObject(objectStub(topicId, 0), (_o, state) =>
      state.storage.sql.exec<{ due_ms: number }>("SELECT due_ms FROM _schedule WHERE room = 'lifecycle' AND key = 'owner'").one(),
    );
    expect(due.due_ms).toBeGreaterThan(Date.now() + 59 * 60_000);
    await runOwnerCheck(topicId, 0);
    await expectNothingLeft(topicId, 0);
    expect((await env.SEGMENTS!.list({ prefix: `segments/${topicId}/` })).objects).toEqual([]);
    expect(await p.describe()).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
  });

  it("a partition of a topic deleted and created again (another topic id) destroys itself; the new topic's stays", async () => {
    const topic = randomTopic();
    const first = await createTopic(topic, 1);
    // The delete's record went, but (as after a crash) the old partition kept its rows: re-init one under the old id.
    expect((await call(`/v1/topics/${topic}`, { method: "DELETE" })).status).toBe(204);
    const second = await createTopic(topic, 1);
    const old = partitionStub(env.PARTITION, first.topicId, 0);
    await evictDurableObject(objectStub(first.topicId, 0));
    expect(await old.init({ topic: `public/default/${topic}`, topicId: first.topicId, partition: 0, configs: DEFAULT_TOPIC_CONFIGS })).toEqual({ ok: true });
    await runOwnerCheck(first.topicId, 0);
    await expectNothingLeft(first.topicId, 0);
    // The live topic's partition is owned: the check keeps it and sets the next one a day out.
    await produce(`/v1/topics/${topic}/partitions/0/records`, { records: [{ value: "kept" }] });
    await runOwnerCheck(second.topicId, 0);
    // The check may still be awaiting the metadata store (its timer row is removed while it runs): poll, bounded.
    const ownerDue = () =>
      runInDurableObject(
        objectStub(second.topicId, 0),
        (_o, state) => state.storage.sql.exec<{ due_ms: number }>("SELECT due_ms FROM _schedule WHERE room = 'lifecycle' AND key = 'owner'").toArray()[0]?.due_ms ?? 0,
      );
    let due = await ownerDue();
    for (let i = 0; i < 100 && due < Date.now() + 23 * 3_600_000; i++) {
      await new Promise((r) => setTimeout(r, 50));
      due = await ownerDue();
    }
    expect(due).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    const f = (await (await call(`/v1/topics/${topic}/partitions/0/records?offset=0`)).json()) as { records: { value: string }[] };
    expect(f.records.map((r) => r.value)).toEqual(["kept"]);
  });

  it("a partition beyond its topic's partition count (a count change that failed before its record) destroys itself", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 2);
    const extra = partitionStub(env.PARTITION, t.topicId, 2);
    expect(await extra.init({ topic: `public/default/${topic}`, topicId: t.topicId, partition: 2, configs: DEFAULT_TOPIC_CONFIGS })).toEqual({ ok: true });
    await runOwnerCheck(t.topicId, 2);
    await expectNothingLeft(t.topicId, 2);
    // Partitions 0 and 1 are the topic's: untouched.
    expect((await describe(topic)).partitionDetails.length).toBe(2);
  });

  it("an owned partition deletes the R2 objects under its prefix that no segment row holds, and only those", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": MiB, "remote.storage.enable": true });
    for (let i = 0; i < 3; i++) await produce(`/v1/topics/${topic}/partitions/0/records`, { records: [{ value: big(i) }] });
    await settle(t.topicId, 0);
    const prefix = `segments/${t.topicId}/0/`;
    const held = (await env.SEGMENTS!.list({ prefix })).objects.map((o) => o.key);
    expect(held.length).toBe(1);
    // An upload that landed after its row was gone (or never recorded): a key no row holds.
    const stray = `${prefix}00000000000000000099-99.seg`;
    await env.SEGMENTS!.put(stray, new Uint8Array([1, 2, 3]));
    await runOwnerCheck(t.topicId, 0);
    // The check may run on the runtime's own alarm call: wait for it (bounded).
    const keys = async () => (await env.SEGMENTS!.list({ prefix })).objects.map((o) => o.key);
    for (let i = 0; i < 100 && (await keys()).length > 1; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await keys()).toEqual(held);
    // The offloaded segment still reads through.
    const f = (await (await call(`/v1/topics/${topic}/partitions/0/records?offset=0&maxRecords=1`)).json()) as { records: { offset: number }[] };
    expect(f.records.map((r) => r.offset)).toEqual([0]);
  });
});

suite("the scheduled R2 sweep", () => {
  it("deletes objects under topic ids no topic record holds once older than the grace, and keeps live topics' objects", async () => {
    const live = await createTopic(randomTopic(), 1, { "segment.bytes": MiB, "remote.storage.enable": true });
    const liveKey = `segments/${live.topicId}/0/00000000000000000000-0.seg`;
    await env.SEGMENTS!.put(liveKey, new Uint8Array([1]));
    const goneId = crypto.randomUUID();
    const goneKeys = [`segments/${goneId}/0/00000000000000000000-0.seg`, `segments/${goneId}/3/00000000000000000010-10.seg`];
    for (const k of goneKeys) await env.SEGMENTS!.put(k, new Uint8Array([2]));
    const sweep = async (nowMs: number) => {
      // The Worker's own scheduled handler, as the cron trigger calls it.
      const ctx = createExecutionContext();
      await worker.scheduled(createScheduledController({ scheduledTime: new Date(nowMs), cron: "17 * * * *" }), env as Env, ctx);
      await waitOnExecutionContext(ctx);
    };
    // Just uploaded: within the grace, kept (it may belong to a topic whose record is being written).
    await sweep(Date.now());
    expect((await env.SEGMENTS!.list({ prefix: `segments/${goneId}/` })).objects.length).toBe(2);
    await sweep(Date.now() + ORPHAN_OBJECT_GRACE_MS + 60_000);
    expect((await env.SEGMENTS!.list({ prefix: `segments/${goneId}/` })).objects).toEqual([]);
    expect((await env.SEGMENTS!.list({ prefix: `segments/${live.topicId}/` })).objects.map((o) => o.key)).toEqual([liveKey]);
  });
});

suite("tiered storage: multipart upload of a large segment", () => {
  it("uploads a segment above 16 MiB in 8 MiB parts; the object decodes to the stored batches and reads through byte for byte", async () => {
    const topic = randomTopic();
    const t = await createTopic(topic, 1, { "segment.bytes": 64 * MiB, "remote.storage.enable": true });
    const value = (i: number) => `m${i}`.padEnd(900 * 1024, String.fromCharCode(97 + (i % 26)));
    for (let i = 0; i < 20; i++) await produce(`/v1/topics/${topic}/partitions/0/records`, { records: [{ value: value(i) }] });
    const binary = async (offset: number): Promise<Uint8Array> => {
      const res = await call(`/v1/topics/${topic}/partitions/0/records?offset=${offset}&maxBytes=1`, { headers: { accept: "application/vnd.edgelog.batch" } });
      expect(res.status).toBe(200);
      return new Uint8Array(await res.arrayBuffer());
    };
    const local: Uint8Array[] = [];
    for (let i = 0; i < 20; i++) local.push(await binary(i));
    // The idle roll closes the 18 MB segment; local.retention.ms 0 then drops the rows once it is in R2.
    expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "segment.ms": 1, "local.retention.ms": 0 } })).status).toBe(200);
    await settle(t.topicId, 0);
    await settle(t.topicId, 0);
    const key = `segments/${t.topicId}/0/00000000000000000000-0.seg`;
    const head = await env.SEGMENTS!.head(key);
    expect(head).not.toBeNull();
    // A multipart object's etag ends with its part count (R2 mimics S3): 18 MB in 8 MiB parts is 3.
    expect(head!.etag).toMatch(/-3$/);
    const obj = new Uint8Array(await (await env.SEGMENTS!.get(key))!.arrayBuffer());
    const { decodeSegmentObject } = await import("../../src/lifecycle/index.ts");
    const decoded = decodeSegmentObject(obj);
    expect(decoded.header.batchCount).toBe(20);
    const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
    expect(decoded.batches.every((b, i) => sameBytes(b, local[i]!))).toBe(true);
    // The rows are gone; every batch reads through from the object with the same bytes.
    const rows = await runInDurableObject(objectStub(t.topicId, 0), (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM batches").one().n);
    expect(rows).toBe(0);
    for (let i = 0; i < 20; i++) expect(sameBytes(await binary(i), local[i]!)).toBe(true);
  }, 120_000);
});
