/**
 * The partition as rooms (durable-objects/partition.ts and durable-objects/partition/):
 * adoption of an object created under the legacy single `_schema` version with idempotent
 * producer state, the invariants checked after load, and the producer lifetimes on the
 * base's schedule (`producer.id.expiration.ms`, KIP-854): native producers (timer
 * producers/expiry) and Durable Streams producers (timer streams/producers).
 */
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { DEFAULT_TOPIC_CONFIGS, type TopicDescription } from "../../src/protocol/index.ts";
import type { PartitionRpc } from "../../src/partition/rpc.ts";
import { encodeBatch } from "../../src/codec/index.ts";
import { call, createTopic, expectError, fetchJson, json, oneRecordBatch, partitionObject, randomTopic } from "./helpers.ts";
import { LEGACY_PARTITION, makeLegacy, tableNames } from "./legacy-schema.ts";

const records = (...values: string[]) => values.map((value) => ({ value }));

/** An idempotent produce to partition 0 (JSON route). */
function idempotent(topic: string, producerId: number, baseSequence: number, ...values: string[]): Promise<Response> {
  return json("POST", `/v1/topics/${topic}/partitions/0/records`, { producerId, producerEpoch: 0, baseSequence, records: records(...values) });
}

async function newProducerId(): Promise<number> {
  const res = await call("/v1/producers", { method: "POST" });
  expect(res.status).toBe(200);
  return ((await res.json()) as { producerId: number }).producerId;
}

function stub(topicId: string): DurableObjectStub {
  return env.PARTITION.getByName(partitionObjectName(topicId, 0));
}

function timers(storage: DurableObjectStorage): string[] {
  return storage.sql
    .exec<{ room: string; key: string }>("SELECT room, key FROM _schedule ORDER BY room, key")
    .toArray()
    .map((t) => `${t.room}/${t.key}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

suite("partition rooms: adoption of a legacy object", () => {
  it("keeps idempotent producer state: a retry is still a duplicate and the next sequence is accepted", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic);
    const producerId = await newProducerId();
    expect((await idempotent(topic, producerId, 0, "a", "b")).status).toBe(200);
    const s = stub(created.topicId);
    await runInDurableObject(s, async (_o, state) => {
      // The producers row as the old code stored it (today's has a last_append_ms column too).
      const legacyProducers = [{ producer_id: producerId, producer_epoch: 0, last_sequence: 1 }];
      const kept = await makeLegacy(state.storage, LEGACY_PARTITION, { producers: legacyProducers });
      expect(kept.producer_batches?.length).toBe(1);
      expect(tableNames(state.storage)).toContain("_schema");
    });
    await evictDurableObject(s);
    const before = Date.now();
    const retry = await idempotent(topic, producerId, 0, "a", "b");
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ duplicate: true });
    expect((await idempotent(topic, producerId, 2, "c")).status).toBe(200);
    expect((await fetchJson(topic, 0, "offset=0")).records.map((r) => [r.offset, r.value])).toEqual([
      [0, "a"],
      [1, "b"],
      [2, "c"],
    ]);
    await runInDurableObject(s, (_o, state) => {
      const rows = state.storage.sql.exec<{ room: string; version: number }>("SELECT room, version FROM _rooms ORDER BY room").toArray();
      expect(rows).toEqual([
        { room: "lifecycle", version: 2 },
        { room: "log", version: 2 },
        { room: "producers", version: 2 },
        // The Raft journal of a replicated partition's replica (docs/RAFT.md): empty at replication.factor 1.
        { room: "raft", version: 1 },
        { room: "streams", version: 1 },
        { room: "subs", version: 1 },
      ]);
      // Producers migration 2 gave the adopted producer a last append time: now (a whole window).
      const p = state.storage.sql.exec<{ last_append_ms: number }>("SELECT last_append_ms FROM producers").one();
      expect(p.last_append_ms).toBeGreaterThanOrEqual(before - 60_000);
      expect(timers(state.storage)).toEqual(["lifecycle/owner", "lifecycle/retention", "producers/expiry"]);
    });
  });
});

suite("partition rooms: the append's cost", () => {
  it("stays 3 SQL statements for a non-idempotent append and 5 (6 when a kept request drops out) for an idempotent one", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic);
    const producerId = await newProducerId();
    const batch = (baseSequence: number) => encodeBatch({ producerId, producerEpoch: 0, baseSequence }, [{ key: null, value: new TextEncoder().encode("v"), headers: [], timestamp: 1 }]);
    await runInDurableObject(stub(created.topicId), async (o, state) => {
      const sql = state.storage.sql as SqlStorage & { exec: SqlStorage["exec"] };
      const exec = sql.exec.bind(sql);
      const statements: string[] = [];
      sql.exec = ((query: string, ...params: SqlStorageValue[]) => {
        statements.push(query.trim().split(/\s+/).slice(0, 3).join(" "));
        return exec(query, ...params);
      }) as SqlStorage["exec"];
      const p = o as unknown as PartitionRpc;
      const count = async (f: () => Promise<unknown>): Promise<string[]> => {
        statements.length = 0;
        expect(await f()).toMatchObject({ ok: true });
        return [...statements];
      };
      try {
        // The first append opens the first segment and sets the lifecycle timer (its segment.ms roll).
        expect(await count(() => p.append({ batches: [oneRecordBatch("a")] }))).toEqual(["INSERT INTO batches", "UPDATE meta SET", "INSERT INTO seg_segments", "INSERT INTO _schedule"]);
        expect(await count(() => p.append({ batches: [oneRecordBatch("a")] }))).toEqual(["INSERT INTO batches", "UPDATE meta SET", "UPDATE seg_segments SET"]);
        // A producer's first request reads its state once (none) and sets the expiry timer once.
        expect(await count(() => p.append({ batches: [batch(0)] }))).toEqual([
          "SELECT producer_epoch, last_sequence",
          "INSERT INTO batches",
          "UPDATE meta SET",
          "INSERT INTO producers",
          "INSERT INTO producer_batches",
          "UPDATE seg_segments SET",
          "INSERT INTO _schedule",
        ]);
        for (let seq = 1; seq < 5; seq++) {
          expect(await count(() => p.append({ batches: [batch(seq)] }))).toEqual([
            "INSERT INTO batches",
            "UPDATE meta SET",
            "INSERT INTO producers",
            "INSERT INTO producer_batches",
            "UPDATE seg_segments SET",
          ]);
        }
        // The sixth request: the oldest of the 5 kept requests drops out.
        expect(await count(() => p.append({ batches: [batch(5)] }))).toEqual([
          "INSERT INTO batches",
          "UPDATE meta SET",
          "INSERT INTO producers",
          "INSERT INTO producer_batches",
          "DELETE FROM producer_batches",
          "UPDATE seg_segments SET",
        ]);
      } finally {
        sql.exec = exec;
      }
    });
  });
});

suite("partition rooms: invariants", () => {
  it("loading stored bounds that break an invariant throws instead of serving them", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic);
    expect((await json("POST", `/v1/topics/${topic}/partitions/0/records`, { records: records("a") })).status).toBe(200);
    await runInDurableObject(stub(created.topicId), (o, state) => {
      const load = () => (o as unknown as { onStart(): void }).onStart();
      // log start offset 5 > log end offset 1: a bug, never a state to serve. (Start-up runs
      // this same load; a throw there resets the object.)
      state.storage.sql.exec("UPDATE meta SET value = 5 WHERE key = 'log_start_offset'");
      expect(load).toThrow("partition log loaded with a broken invariant: expected 0 <= logStartOffset 5 <= highWatermark 1 <= logEndOffset 1");
      state.storage.sql.exec("UPDATE meta SET value = 0 WHERE key = 'log_start_offset'");
      state.storage.sql.exec("UPDATE meta SET value = -3 WHERE key = 'stored_bytes'");
      expect(load).toThrow("partition log loaded with a broken invariant: storedBytes -3 < 0");
      state.storage.sql.exec("UPDATE meta SET value = 0 WHERE key = 'stored_bytes'");
      load();
    });
    // The state as loaded last (stored bytes 0 as written back) is what the partition serves.
    expect(await partitionObject(created.topicId).describe()).toMatchObject({ ok: true, partition: { logStartOffset: 0, highWatermark: 1, logEndOffset: 1, bytes: 0 } });
  });
});

suite("partition rooms: native producer expiry (producer.id.expiration.ms)", () => {
  it("validates the config and shows its default", async () => {
    const topic = randomTopic();
    expect((await createTopic(topic)).configs["producer.id.expiration.ms"]).toBe(86_400_000);
    expect(DEFAULT_TOPIC_CONFIGS["producer.id.expiration.ms"]).toBe(86_400_000);
    for (const bad of [0, -1, 2 ** 31, "x"]) {
      await expectError(await json("POST", "/v1/topics", { name: randomTopic(), configs: { "producer.id.expiration.ms": bad } }), "INVALID_CONFIG", 400);
    }
  });

  it("keeps a producer within its idle time: the timer is set a window ahead and a wake before it forgets nothing", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic);
    const producerId = await newProducerId();
    const before = Date.now();
    expect((await idempotent(topic, producerId, 0, "a")).status).toBe(200);
    const s = stub(created.topicId);
    await runInDurableObject(s, (_o, state) => {
      const due = state.storage.sql.exec<{ due_ms: number }>("SELECT due_ms FROM _schedule WHERE room = 'producers' AND key = 'expiry'").one().due_ms;
      expect(due).toBeGreaterThanOrEqual(before + 86_400_000);
    });
    await runDurableObjectAlarm(s);
    expect((await idempotent(topic, producerId, 1, "b")).status).toBe(200);
  });

  it("forgets an idle producer at its expiry timer; coming back it starts over at sequence 0", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic, 1, { "producer.id.expiration.ms": 50 });
    const producerId = await newProducerId();
    expect((await idempotent(topic, producerId, 0, "a", "b")).status).toBe(200);
    const s = stub(created.topicId);
    await runInDurableObject(s, (_o, state) => expect(timers(state.storage)).toEqual(["lifecycle/owner", "lifecycle/retention", "producers/expiry"]));
    await sleep(150);
    await runDurableObjectAlarm(s); // the timer is due: it ran already or runs now
    await runInDurableObject(s, (_o, state) => {
      expect(state.storage.sql.exec("SELECT * FROM producers").toArray()).toEqual([]);
      expect(state.storage.sql.exec("SELECT * FROM producer_batches").toArray()).toEqual([]);
      // The lifecycle's segment.ms roll of the active segment is still ahead.
      expect(timers(state.storage)).toEqual(["lifecycle/owner", "lifecycle/retention"]);
    });
    // The partition has not seen this producer any more: sequence 2 is out of order, 0 starts it again.
    const e = await expectError(await idempotent(topic, producerId, 2, "c"), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
    expect(e.details).toEqual({ expectedSequence: 0, baseSequence: 2 });
    expect((await idempotent(topic, producerId, 0, "c")).status).toBe(200);
    expect((await fetchJson(topic, 0, "offset=0")).records.map((r) => r.value)).toEqual(["a", "b", "c"]);
  });
});

suite("partition rooms: producer expiry follows a config change", () => {
  it("a shorter producer.id.expiration.ms moves the expiry timer of producers already known", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic);
    const producerId = await newProducerId();
    expect((await idempotent(topic, producerId, 0, "a")).status).toBe(200);
    expect((await json("PATCH", `/v1/topics/${topic}`, { configs: { "producer.id.expiration.ms": 50 } })).status).toBe(200);
    const s = stub(created.topicId);
    await runInDurableObject(s, (_o, state) => {
      // Either the timer is due within the new 50 ms (not the old day), or on a slow machine it
      // has already run, and then the producer is gone.
      const row = state.storage.sql.exec<{ due_ms: number }>("SELECT due_ms FROM _schedule WHERE room = 'producers' AND key = 'expiry'").toArray()[0];
      if (row !== undefined) expect(row.due_ms).toBeLessThan(Date.now() + 60_000);
      else expect(state.storage.sql.exec("SELECT 1 FROM producers WHERE producer_id = ?", producerId).toArray()).toEqual([]);
    });
    await sleep(150);
    // The alarm may also fire on its own (workerd runs it when due, late on a loaded machine),
    // and then runDurableObjectAlarm finds nothing to run: wait until the expiry has happened.
    const known = () => runInDurableObject(s, (_o, state) => state.storage.sql.exec("SELECT 1 FROM producers WHERE producer_id = ?", producerId).toArray().length > 0);
    for (let i = 0; i < 100 && (await known()); i++) {
      await runDurableObjectAlarm(s);
      if (await known()) await sleep(50);
    }
    expect(await known()).toBe(false);
    await expectError(await idempotent(topic, producerId, 1, "b"), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
  });
});

suite("partition rooms: Durable Streams producer expiry", () => {
  it("forgets an idle Producer-Id at the streams/producers timer; coming back it starts over at Producer-Seq 0", async () => {
    const path = randomTopic("ds");
    const created = await call(`/v1/stream/${path}`, { method: "PUT", headers: { "content-type": "text/plain" } });
    expect(created.status).toBe(201);
    const t = (await (await call(`/v1/topics/${created.headers.get("Edgelog-Topic")}`)).json()) as TopicDescription;
    expect((await json("PATCH", `/v1/topics/${t.name}`, { configs: { "producer.id.expiration.ms": 50 } })).status).toBe(200);
    const append = (seq: number, body: string) =>
      call(`/v1/stream/${path}`, { method: "POST", headers: { "content-type": "text/plain", "Producer-Id": "p1", "Producer-Epoch": "0", "Producer-Seq": String(seq) }, body });
    expect((await append(0, "a")).status).toBe(200);
    expect((await append(1, "b")).status).toBe(200);
    const s = stub(t.topicId);
    await runInDurableObject(s, (_o, state) => {
      expect(state.storage.sql.exec("SELECT producer_id, last_seq FROM ds_producers").toArray()).toEqual([{ producer_id: "p1", last_seq: 1 }]);
      expect(timers(state.storage)).toContain("streams/producers");
    });
    await sleep(150);
    await runDurableObjectAlarm(s);
    await runInDurableObject(s, (_o, state) => {
      expect(state.storage.sql.exec("SELECT * FROM ds_producers").toArray()).toEqual([]);
      expect(timers(state.storage)).not.toContain("streams/producers");
    });
    await expectError(await append(2, "c"), "OUT_OF_ORDER_SEQUENCE_NUMBER", 409);
    expect((await append(0, "c")).status).toBe(200);
    expect(await (await call(`/v1/stream/${path}`)).text()).toBe("abc");
  });
});
