/**
 * The shared Durable Object base (durable-objects/base.ts) inside workerd: per-room
 * migrations, adoption of objects created under the legacy single `_schema` version, and the
 * one schedule behind the sealed alarm. BenchDO's `echo` room is the proving ground for
 * timers: a test installs its `onTimer` on the live instance.
 */
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe as suite, expect, it, vi } from "vitest";
import { BenchDO } from "../../durable-objects/bench.ts";
import { ATTACHMENT_MAX_BYTES, Sql, TIMERS_PER_WAKE, checkRooms, migrateRooms, sendableCloseCode, type RoomSchema, type RoomTimers } from "../../durable-objects/base.ts";
import { TIMER_RETRY_BASE_MS } from "../../durable-objects/schedule.ts";
import type { Env } from "../../src/env.ts";
import { GROUP_DIRECTORY_OBJECT_NAME } from "../../src/groups/rpc.ts";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { call, createTopic, expectError, fetchJson, json, produce, randomTopic } from "./helpers.ts";
import { LEGACY_COORDINATOR, LEGACY_PARTITION, legacyMigrate, makeLegacy, tableNames } from "./legacy-schema.ts";

/** What a test reaches of a live object: the base's protected members. */
interface BaseInternals {
  timers(room: string): RoomTimers;
  onTimer(room: string, key: string, dueMs: number): void | Promise<void>;
  alarm(): Promise<void>;
}
const internals = (o: BenchDO): BaseInternals => o as unknown as BaseInternals;

function bench(): DurableObjectStub<BenchDO> {
  return env.BENCH.getByName(`base-${crypto.randomUUID()}`);
}

function rooms(storage: DurableObjectStorage): Record<string, number> {
  return Object.fromEntries(
    storage.sql
      .exec<{ room: string; version: number }>("SELECT room, version FROM _rooms ORDER BY room")
      .toArray()
      .map((r) => [r.room, r.version]),
  );
}

suite("per-room migrations", () => {
  it("run each room's migrations in order, rooms in the given order, and only the newer ones again", async () => {
    const stub = bench();
    await runInDurableObject(stub, (_o, state) => {
      const ran: string[] = [];
      const room = (name: string, n: number): RoomSchema => ({
        room: name,
        migrations: Array.from({ length: n }, (_, i) => ({
          version: i + 1,
          name: `${name}-${i + 1}`,
          up(sql: Sql) {
            ran.push(`${name}-${i + 1}`);
            sql.run(`CREATE TABLE ${name}_${i + 1} (x INTEGER)`);
          },
        })),
      });
      const sql = new Sql(state.storage.sql);
      expect([...migrateRooms(state.storage, sql, [room("alpha", 2), room("beta", 1)])]).toEqual([
        ["alpha", 2],
        ["beta", 1],
      ]);
      expect(ran).toEqual(["alpha-1", "alpha-2", "beta-1"]);
      ran.length = 0;
      migrateRooms(state.storage, sql, [room("alpha", 3), room("beta", 1), room("gamma", 1)]);
      expect(ran).toEqual(["alpha-3", "gamma-1"]);
      expect(rooms(state.storage)).toEqual({ alpha: 3, beta: 1, bench: 1, gamma: 1 });
      // Code older than the stored room refuses to start rather than run on an unknown schema.
      expect(() => migrateRooms(state.storage, sql, [room("alpha", 2)])).toThrow(/alpha is at version 3, newer than this code's 2/);
    });
  });

  it("a failed migration leaves its room at the previous version with nothing of it applied", async () => {
    await runInDurableObject(bench(), (_o, state) => {
      const sql = new Sql(state.storage.sql);
      const failing: RoomSchema = {
        room: "delta",
        migrations: [
          { version: 1, name: "ok", up: (s) => s.run("CREATE TABLE delta_a (x INTEGER)") },
          {
            version: 2,
            name: "fails",
            up: (s) => {
              s.run("CREATE TABLE delta_b (x INTEGER)");
              throw new Error("boom");
            },
          },
        ],
      };
      expect(() => migrateRooms(state.storage, sql, [failing])).toThrow("boom");
      expect(rooms(state.storage).delta).toBe(1);
      expect(tableNames(state.storage).filter((t) => t.startsWith("delta_"))).toEqual(["delta_a"]);
    });
  });

  it("refuses malformed room lists", () => {
    const m = (version: number) => ({ version, name: `m${version}`, up() {} });
    expect(() => checkRooms([{ room: "a", migrations: [m(1), m(3)] }])).toThrow(/numbered 1, 2, … without gaps/);
    expect(() => checkRooms([{ room: "a", migrations: [m(2)] }])).toThrow(/without gaps/);
    expect(() =>
      checkRooms([
        { room: "a", migrations: [] },
        { room: "a", migrations: [] },
      ]),
    ).toThrow(/declared twice/);
    expect(() => checkRooms([{ room: "Log", migrations: [] }])).toThrow(/lower-case/);
    expect(() =>
      checkRooms([
        { room: "log", migrations: [m(1), m(2)] },
        { room: "streams", migrations: [] },
      ]),
    ).not.toThrow();
  });
});

suite("legacy adoption", () => {
  it("a legacy object without adoptLegacy is refused; adoption happens once and drops _schema", async () => {
    await runInDurableObject(bench(), (_o, state) => {
      const sql = new Sql(state.storage.sql);
      state.storage.sql.exec("DROP TABLE _rooms");
      expect(legacyMigrate(state.storage, [{ version: 1, name: "x", sql: "CREATE TABLE legacy_x (x INTEGER)" }])).toBe(1);
      const room: RoomSchema = {
        room: "legacy",
        migrations: [
          { version: 1, name: "x", up: (s) => s.run("CREATE TABLE legacy_x (x INTEGER)") },
          { version: 2, name: "y", up: (s) => s.run("CREATE TABLE legacy_y (y INTEGER)") },
        ],
      };
      expect(() => migrateRooms(state.storage, sql, [room])).toThrow(/legacy _schema version 1 found and no adoptLegacy given/);
      expect(tableNames(state.storage)).toContain("_schema");
      expect(() => migrateRooms(state.storage, sql, [room], () => ({ other: 1 }))).toThrow(/unknown room other/);
      expect([...migrateRooms(state.storage, sql, [room], (v) => ({ legacy: v }))]).toEqual([["legacy", 2]]);
      expect(tableNames(state.storage)).not.toContain("_schema");
      expect(rooms(state.storage)).toEqual({ legacy: 2 });
    });
  });

  it("a partition created under _schema v2 by the old migrate path is adopted, readable and writable", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic);
    await produce(`/v1/topics/${topic}/records`, { records: [{ value: "a" }, { value: "b" }] });
    const stub = env.PARTITION.getByName(partitionObjectName(created.topicId, 0));
    await runInDurableObject(stub, async (_o, state) => {
      const kept = await makeLegacy(state.storage, LEGACY_PARTITION);
      expect(kept.batches?.length).toBe(1);
      expect(tableNames(state.storage)).toEqual(["_schema", "batches", "ds_producers", "ds_stream", "meta", "producer_batches", "producers"]);
      expect(state.storage.sql.exec("SELECT version FROM _schema").one()).toEqual({ version: 2 });
    });
    await evictDurableObject(stub);
    const f = await fetchJson(topic, 0, "offset=0");
    expect(f.records.map((r) => [r.offset, r.value])).toEqual([
      [0, "a"],
      [1, "b"],
    ]);
    await produce(`/v1/topics/${topic}/records`, { records: [{ value: "c" }] });
    expect((await fetchJson(topic, 0, "offset=0")).records.map((r) => r.value)).toEqual(["a", "b", "c"]);
    await runInDurableObject(stub, (_o, state) => {
      expect(tableNames(state.storage)).not.toContain("_schema");
      expect(rooms(state.storage)).toEqual({ lifecycle: 2, log: 2, producers: 2, raft: 1, streams: 1, subs: 1 });
    });
  });

  it("a Durable Streams partition created under _schema v2 keeps its stream", async () => {
    const path = randomTopic("legacy");
    const created = await call(`/v1/stream/${path}`, { method: "PUT", headers: { "content-type": "text/plain" }, body: "hello" });
    expect(created.status).toBe(201);
    const t = await call(`/v1/topics/${created.headers.get("Edgelog-Topic")}`);
    const { topicId } = (await t.json()) as { topicId: string };
    const stub = env.PARTITION.getByName(partitionObjectName(topicId, 0));
    await runInDurableObject(stub, async (_o, state) => {
      expect((await makeLegacy(state.storage, LEGACY_PARTITION)).ds_stream?.length).toBe(1);
    });
    await evictDurableObject(stub);
    const read = await call(`/v1/stream/${path}`);
    expect({ status: read.status, body: await read.text() }).toEqual({ status: 200, body: "hello" });
  });
  it("an adopted partition gets the timers its state needs: stream expiry, Producer-Id and native producer expiry (the old code's platform alarm is gone)", async () => {
    const path = randomTopic("legacy");
    const created = await call(`/v1/stream/${path}`, { method: "PUT", headers: { "content-type": "text/plain", "Stream-TTL": "3600" }, body: "hello" });
    expect(created.status).toBe(201);
    const w = await call(`/v1/stream/${path}`, { method: "POST", headers: { "content-type": "text/plain", "Producer-Id": "w1", "Producer-Epoch": "0", "Producer-Seq": "0" }, body: "x" });
    expect(w.status).toBeLessThan(300);
    const t = await call(`/v1/topics/${created.headers.get("Edgelog-Topic")}`);
    const { topicId } = (await t.json()) as { topicId: string };
    const stub = env.PARTITION.getByName(partitionObjectName(topicId, 0));
    const topic = randomTopic();
    const native = await createTopic(topic);
    const pid = (await (await call("/v1/producers", { method: "POST" })).json()) as { producerId: number };
    await produce(`/v1/topics/${topic}/partitions/0/records`, { producerId: pid.producerId, producerEpoch: 0, baseSequence: 0, records: [{ value: "a" }] });
    const nativeStub = env.PARTITION.getByName(partitionObjectName(native.topicId, 0));
    for (const s of [stub, nativeStub]) {
      await runInDurableObject(s, async (_o, state) => {
        // The legacy producers table has no last_append_ms (producers migration 2 adds it).
        const producers = state.storage.sql.exec("SELECT producer_id, producer_epoch, last_sequence FROM producers").toArray();
        await makeLegacy(state.storage, LEGACY_PARTITION, { producers });
      });
    }
    for (const s of [stub, nativeStub]) await evictDurableObject(s);
    // HEAD neither touches the stream nor writes: only start-up can have set the timers.
    expect((await call(`/v1/stream/${path}`, { method: "HEAD" })).status).toBe(200);
    expect((await fetchJson(topic, 0, "offset=0")).records.length).toBe(1);
    const timersOf = (s: DurableObjectStub) =>
      runInDurableObject(s, (_o, state) =>
        state.storage.sql
          .exec<{ t: string }>("SELECT room || '/' || key AS t FROM _schedule ORDER BY t")
          .toArray()
          .map((r) => r.t),
      );
    // The lifecycle room (added after the legacy layout) indexes the stored batches at start-up
    // (lifecycle/index), then waits for the active segment's roll (lifecycle/retention): one or
    // both may be pending, depending on whether the alarm ran already.
    const lifecycleTimer = (ts: string[]) => ts.some((t) => t === "lifecycle/index" || t === "lifecycle/retention");
    const others = (ts: string[]) => ts.filter((t) => !t.startsWith("lifecycle/"));
    const [streamTimers, nativeTimers] = [await timersOf(stub), await timersOf(nativeStub)];
    expect([others(streamTimers), lifecycleTimer(streamTimers)]).toEqual([["streams/expiry", "streams/producers"], true]);
    expect([others(nativeTimers), lifecycleTimer(nativeTimers)]).toEqual([["producers/expiry"], true]);
  });

  it("a group coordinator that crashed inside a timer call (its row already removed) sets the timers its state needs at start-up", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1);
    const group = `g-${crypto.randomUUID()}`;
    const hb = await json("POST", `/v1/groups/${group}/heartbeat`, { memberId: null, memberEpoch: 0, subscribedTopicNames: [topic], sessionTimeoutMs: 45_000 });
    expect(hb.status).toBe(200);
    const { memberId } = (await hb.json()) as { memberId: string };
    const stub = (env as unknown as Env).GROUP_COORDINATOR.getByName(group);
    const scheduled = () => runInDurableObject(stub, (_o, state) => state.storage.sql.exec<{ t: string; due_ms: number }>("SELECT room || '/' || key AS t, due_ms FROM _schedule").toArray());
    const before = await scheduled();
    expect(before.map((r) => r.t)).toEqual([`group/session:${memberId}`]);
    // The base's alarm removes a timer's row before the call; the group's handler then awaits
    // the metadata store, and a crash there leaves the group without the timer.
    await runInDurableObject(stub, (_o, state) => void state.storage.sql.exec("DELETE FROM _schedule"));
    await evictDurableObject(stub);
    expect(await scheduled()).toEqual(before);
  });

  it("a group coordinator created under _schema v1 keeps its group, and its legacy schedule becomes the group and directory rooms' timers", async () => {
    const topic = randomTopic();
    await createTopic(topic, 2);
    const group = `g-${crypto.randomUUID()}`;
    const hb = await json("POST", `/v1/groups/${group}/heartbeat`, { memberId: null, memberEpoch: 0, subscribedTopicNames: [topic], sessionTimeoutMs: 45_000 });
    expect(hb.status).toBe(200);
    const { memberId } = (await hb.json()) as { memberId: string };
    const stub = (env as unknown as Env).GROUP_COORDINATOR.getByName(group);
    const retryMs = Date.now() + 3_600_000;
    let sessionDue = 0;
    await runInDurableObject(stub, async (_o, state) => {
      const timers = state.storage.sql.exec<{ room: string; key: string; due_ms: number }>("SELECT room, key, due_ms FROM _schedule").toArray();
      expect(timers.map((t) => `${t.room}/${t.key}`)).toEqual([`group/session:${memberId}`]);
      sessionDue = (timers[0] as { due_ms: number }).due_ms;
      // The old code kept every timer in one table, a directory push retry under `directory:<group>`.
      await makeLegacy(state.storage, LEGACY_COORDINATOR, {
        schedule: [
          { key: `session:${memberId}`, due_ms: sessionDue },
          { key: `directory:${group}`, due_ms: retryMs },
        ],
      });
      expect(tableNames(state.storage)).toEqual(["_schema", "grp", "members", "offsets", "schedule", "targets"]);
    });
    await evictDurableObject(stub);
    const d = await call(`/v1/groups/${group}`);
    const text = await d.text();
    expect(d.status, text).toBe(200);
    expect((JSON.parse(text) as { members: { memberId: string }[] }).members.map((m) => m.memberId)).toEqual([memberId]);
    await runInDurableObject(stub, async (_o, state) => {
      expect(tableNames(state.storage)).toEqual(["_rooms", "_schedule", "grp", "members", "offsets", "targets"]);
      expect(rooms(state.storage)).toEqual({ group: 2 });
      expect(state.storage.sql.exec("SELECT room, key, due_ms FROM _schedule ORDER BY room, key").toArray()).toEqual([
        { room: "directory", key: group, due_ms: retryMs },
        { room: "group", key: `session:${memberId}`, due_ms: sessionDue },
      ]);
      expect(await state.storage.getAlarm()).toBe(sessionDue);
    });
  });
});

suite("one alarm, many timers", () => {
  it("fires due timers of several rooms in due order, removes each before its call, and re-arms at the earliest left", async () => {
    const stub = bench();
    await runInDurableObject(stub, async (o, state) => {
      const b = internals(o);
      const fired: string[] = [];
      b.onTimer = (room, key, dueMs) => {
        // The row is gone before the call: the handler sees its own timer unset.
        fired.push(`${room}/${key}@${dueMs}:${b.timers(room).dueMs(key) ?? "unset"}`);
      };
      const now = Date.now();
      b.timers("echo").set("b", now - 10);
      b.timers("bench").set("a", now - 30);
      b.timers("echo").set("c", now - 20);
      b.timers("bench").set("later", now + 3_600_000);
      // The platform stores an alarm in the past as "now": it fires at once.
      expect(await state.storage.getAlarm()).toBeLessThanOrEqual(Date.now());
      await b.alarm();
      expect(fired).toEqual([`bench/a@${now - 30}:unset`, `echo/c@${now - 20}:unset`, `echo/b@${now - 10}:unset`]);
      expect(state.storage.sql.exec("SELECT room, key, due_ms FROM _schedule").toArray()).toEqual([{ room: "bench", key: "later", due_ms: now + 3_600_000 }]);
      expect(await state.storage.getAlarm()).toBe(now + 3_600_000);
      b.timers("bench").clear("later");
      expect(await state.storage.getAlarm()).toBeNull();
    });
  });

  it("a throwing timer is retried with backoff and does not starve the others", async () => {
    const stub = bench();
    await runInDurableObject(stub, async (o) => {
      const b = internals(o);
      const fired: string[] = [];
      b.onTimer = (room, key) => {
        fired.push(`${room}/${key}`);
        if (key === "bad") throw new Error("room failure");
      };
      const now = Date.now();
      b.timers("bench").set("bad", now - 100);
      b.timers("echo").set("good", now - 50);
      let before = Date.now();
      await b.alarm();
      expect(fired).toEqual(["bench/bad", "echo/good"]);
      const first = b.timers("bench").dueMs("bad") as number;
      expect(first - before).toBeGreaterThanOrEqual(TIMER_RETRY_BASE_MS);
      expect(first - Date.now()).toBeLessThanOrEqual(TIMER_RETRY_BASE_MS);
      // Second failure in a row: twice the delay.
      b.timers("bench").set("bad", now - 100);
      before = Date.now();
      await b.alarm();
      const second = b.timers("bench").dueMs("bad") as number;
      expect(second - before).toBeGreaterThanOrEqual(2 * TIMER_RETRY_BASE_MS);
      expect(second - Date.now()).toBeLessThanOrEqual(2 * TIMER_RETRY_BASE_MS);
      // A success resets the count.
      b.onTimer = (room, key) => void fired.push(`${room}/${key}:ok`);
      b.timers("bench").set("bad", now - 100);
      await b.alarm();
      expect(fired.at(-1)).toBe("bench/bad:ok");
      expect(b.timers("bench").dueMs("bad")).toBeUndefined();
    });
  });

  it(`dispatches at most ${TIMERS_PER_WAKE} timers per wake and re-arms at once for the rest`, async () => {
    const stub = bench();
    await runInDurableObject(stub, async (o, state) => {
      const b = internals(o);
      const fired: number[] = [];
      b.onTimer = (_room, key) => void fired.push(Number(key));
      const now = Date.now();
      const n = TIMERS_PER_WAKE + 8;
      // Set in reverse so that due order, not insertion order, decides.
      for (let i = n - 1; i >= 0; i--) b.timers(i % 2 === 0 ? "bench" : "echo").set(String(i), now - 1000 + i);
      await b.alarm();
      expect(fired).toEqual(Array.from({ length: TIMERS_PER_WAKE }, (_, i) => i));
      expect(await state.storage.getAlarm()).toBeLessThanOrEqual(Date.now());
      expect(internals(o).timers("bench").dueMs(String(TIMERS_PER_WAKE))).toBe(now - 1000 + TIMERS_PER_WAKE);
      await b.alarm();
      expect(fired).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(await state.storage.getAlarm()).toBeNull();
    });
  });

  it("a timer handler may set its own key again (a repeating timer), and clearAll removes a room's timers", async () => {
    const stub = bench();
    await runInDurableObject(stub, async (o, state) => {
      const b = internals(o);
      const now = Date.now();
      b.onTimer = (room, key) => b.timers(room).set(key, now + 60_000);
      b.timers("echo").set("tick", now - 1);
      b.timers("echo").set("other", now + 120_000);
      b.timers("bench").set("keep", now + 90_000);
      await b.alarm();
      expect(b.timers("echo").dueMs("tick")).toBe(now + 60_000);
      expect(await state.storage.getAlarm()).toBe(now + 60_000);
      b.timers("echo").clearAll();
      expect([b.timers("echo").dueMs("tick"), b.timers("echo").dueMs("other"), b.timers("bench").dueMs("keep")]).toEqual([undefined, undefined, now + 90_000]);
      expect(state.storage.sql.exec("SELECT room, key FROM _schedule").toArray()).toEqual([{ room: "bench", key: "keep" }]);
      expect(await state.storage.getAlarm()).toBe(now + 90_000);
      b.timers("bench").clearAll();
    });
  });

  it("an alarm that wakes before any timer is due runs nothing and arms again at the earliest", async () => {
    const stub = bench();
    const due = Date.now() + 3_600_000;
    const fired: string[] = [];
    await runInDurableObject(stub, (o) => {
      internals(o).onTimer = (room, key) => void fired.push(`${room}/${key}`);
      internals(o).timers("echo").set("later", due);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(fired).toEqual([]);
    await runInDurableObject(stub, async (o, state) => {
      expect(await state.storage.getAlarm()).toBe(due);
      internals(o).timers("echo").clearAll();
      expect(await state.storage.getAlarm()).toBeNull();
    });
  });

  it("a timer set in a transaction that rolls back never runs; timers survive eviction", async () => {
    const stub = bench();
    const now = Date.now();
    await runInDurableObject(stub, async (o, state) => {
      const b = internals(o);
      const fired: string[] = [];
      b.onTimer = (room, key) => void fired.push(`${room}/${key}`);
      expect(() =>
        state.storage.transactionSync(() => {
          b.timers("echo").set("ghost", now - 5);
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      await b.alarm();
      expect(fired).toEqual([]);
      expect(b.timers("echo").dueMs("ghost")).toBeUndefined();
      b.timers("echo").set("kept", now + 3_600_000);
    });
    await evictDurableObject(stub);
    await runInDurableObject(stub, async (o, state) => {
      expect(internals(o).timers("echo").dueMs("kept")).toBe(now + 3_600_000);
      expect(await state.storage.getAlarm()).toBe(now + 3_600_000);
      expect(() => internals(o).timers("nope")).toThrow(/unknown room/);
      expect(() => internals(o).timers("echo").set("", now)).toThrow(/non-empty/);
      expect(() => internals(o).timers("echo").set("x", Number.NaN)).toThrow(RangeError);
      internals(o)
        .timers("echo")
        .set("frac", now + 1000.25);
      internals(o).timers("echo").set("before-epoch", -5);
      expect([internals(o).timers("echo").dueMs("frac"), internals(o).timers("echo").dueMs("before-epoch")]).toEqual([now + 1001, 0]);
      internals(o).timers("echo").clearAll();
    });
  });
});

suite("group coordinator timers", () => {
  it("a due `directory` timer pushes the group's listing again", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1);
    const group = `g-${crypto.randomUUID()}`;
    expect((await json("POST", `/v1/groups/${group}/heartbeat`, { memberId: null, memberEpoch: 0, subscribedTopicNames: [topic] })).status).toBe(200);
    const groupsEnv = env as unknown as Env;
    const listed = async () => ((await (await call("/v1/groups")).json()) as { groups: { groupId: string }[] }).groups.some((g) => g.groupId === group);
    await vi.waitFor(async () => expect(await listed()).toBe(true));
    // The directory loses the listing (as if the push had failed); the retry timer restores it.
    await runInDurableObject(groupsEnv.GROUP_DIRECTORY.getByName(GROUP_DIRECTORY_OBJECT_NAME), (_o, state) => {
      state.storage.sql.exec("DELETE FROM groups WHERE group_id = ?", group);
    });
    expect(await listed()).toBe(false);
    await runInDurableObject(groupsEnv.GROUP_COORDINATOR.getByName(group), async (o) => {
      const c = o as unknown as BaseInternals;
      c.timers("directory").set(group, Date.now() - 1);
      await c.alarm();
    });
    await vi.waitFor(async () => expect(await listed()).toBe(true));
  });
});

suite("sealed entry points", () => {
  it("a subclass that defines alarm, fetch or a webSocket handler is refused at construction", async () => {
    class OwnAlarm extends BenchDO {
      override async alarm(): Promise<void> {}
    }
    class OwnMessage extends BenchDO {
      override async webSocketMessage(): Promise<void> {}
    }
    class Deeper extends OwnAlarm {}
    await runInDurableObject(bench(), (_o, state) => {
      expect(() => new OwnAlarm(state, env)).toThrow(/OwnAlarm defines alarm\(\): platform entry points are sealed/);
      expect(() => new OwnMessage(state, env)).toThrow(/defines webSocketMessage\(\)/);
      expect(() => new Deeper(state, env)).toThrow(/defines alarm\(\)/);
    });
  });
});

suite("sealed WebSocket entry points and hibernation (BenchDO's echo room)", () => {
  /** Opens an echo socket through the gateway; collects what it receives. */
  async function connect(name: string, label: string): Promise<{ ws: WebSocket; next(): Promise<MessageEvent>; closed: Promise<CloseEvent> }> {
    const res = await call(`/bench/echo/${name}?label=${label}`, { headers: { upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    const queue: MessageEvent[] = [];
    const waiting: ((e: MessageEvent) => void)[] = [];
    ws.addEventListener("message", (e) => {
      const w = waiting.shift();
      if (w) w(e);
      else queue.push(e);
    });
    const closed = new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve));
    ws.accept();
    return {
      ws,
      next: () => {
        const e = queue.shift();
        return e ? Promise.resolve(e) : new Promise((resolve) => waiting.push(resolve));
      },
      closed,
    };
  }
  type Echo = { echo: string; label: string; connectedMs: number; messages: number; instance: string };

  it("echoes, hibernates on eviction, wakes a new instance on a message with the attachment intact", async () => {
    const name = `echo-${crypto.randomUUID()}`;
    const before = Date.now();
    const s = await connect(name, "alpha");
    s.ws.send("one");
    const first = JSON.parse((await s.next()).data as string) as Echo;
    expect({ ...first, connectedMs: 0, instance: "" }).toEqual({ echo: "one", label: "alpha", connectedMs: 0, messages: 1, instance: "" });
    expect(first.connectedMs).toBeGreaterThanOrEqual(before - 1000);
    const bytes = new Uint8Array([0, 1, 2, 255]);
    s.ws.send(bytes);
    const bin = (await s.next()).data as Blob | ArrayBuffer; // a Blob with the default binaryType
    expect(new Uint8Array(bin instanceof Blob ? await bin.arrayBuffer() : bin)).toEqual(bytes);

    const stub = env.BENCH.getByName(name);
    await evictDurableObject(stub); // hibernatable sockets are hibernated, not closed
    s.ws.send("two");
    const second = JSON.parse((await s.next()).data as string) as Echo;
    expect(second.instance).not.toBe(first.instance); // a new instance answered
    expect(second).toEqual({ echo: "two", label: "alpha", connectedMs: first.connectedMs, messages: 3, instance: second.instance });
    s.ws.close(1000, "done");
    const closed = await s.closed;
    expect(closed.code).toBe(1000); // the object answered the close frame with the same code
  });

  it("closes a socket whose attachment is corrupted or absent with 1008", async () => {
    for (const corrupt of ["not json", null, JSON.stringify({ r: "nope", v: 1 }), JSON.stringify({ r: "echo", v: 0 }), 42]) {
      const name = `echo-${crypto.randomUUID()}`;
      const s = await connect(name, "beta");
      s.ws.send("hello");
      expect((JSON.parse((await s.next()).data as string) as Echo).messages).toBe(1);
      await runInDurableObject(env.BENCH.getByName(name), (_o, state) => {
        const sockets = state.getWebSockets();
        expect(sockets).toHaveLength(1);
        sockets[0]?.serializeAttachment(corrupt);
      });
      s.ws.send("again");
      const closed = await s.closed;
      expect({ corrupt, code: closed.code }).toEqual({ corrupt, code: 1008 });
    }
  });

  it("answers anything but a WebSocket upgrade with a JSON error; refuses state beyond the attachment limit", async () => {
    const name = `echo-${crypto.randomUUID()}`;
    const plain = await call(`/bench/echo/${name}?label=x`);
    expect(plain.headers.get("upgrade")).toBe("websocket");
    await expectError(plain, "UPGRADE_REQUIRED", 426);
    const direct = await env.BENCH.getByName(name).fetch("http://bench/", { method: "POST", body: "x" });
    expect(direct.headers.get("allow")).toBe("GET");
    await expectError(direct, "METHOD_NOT_ALLOWED", 405);
    await expectError(await call(`/bench/echo/${name}?label=${encodeURIComponent("bad label")}`, { headers: { upgrade: "websocket" } }), "INVALID_REQUEST", 400);
    const e = await expectError(await call(`/bench/echo/${name}?label=${"x".repeat(ATTACHMENT_MAX_BYTES)}`, { headers: { upgrade: "websocket" } }), "INVALID_REQUEST", 400);
    expect(e.details).toEqual({ attachmentBytes: ATTACHMENT_MAX_BYTES + 70, maxBytes: ATTACHMENT_MAX_BYTES - 16 });
    // The largest label that fits is accepted, and the platform takes its attachment.
    const s = await connect(name, "x".repeat(ATTACHMENT_MAX_BYTES - 16 - 70));
    s.ws.send("fits");
    expect((JSON.parse((await s.next()).data as string) as Echo).label).toHaveLength(ATTACHMENT_MAX_BYTES - 16 - 70);
    s.ws.close(1000, "done");
    await s.closed;
  });

  it("answers a close frame with a reserved code by a normal close", () => {
    expect([1000, 1001, 1008, 1011, 3000, 4999, 1005, 1006, 1015, 999, 2000, 5000].map(sendableCloseCode)).toEqual([1000, 1001, 1008, 1011, 3000, 4999, 1000, 1000, 1000, 1000, 1000, 1000]);
  });
});
