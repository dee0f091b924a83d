/**
 * Subscriptions on a replicated partition (`replication.factor` 3; docs/RAFT.md "Subscriptions
 * are replicated"): cursor writes are Raft entries applied by every replica, consumers, readers
 * and the subscription calls are served by the leader only, and a consumer reconnects through
 * the gateway to a new leader after a failover. Three replicas in one workerd, real alarms and
 * RPC, through the real gateway; fault injection (EDGELOG_RAFT_FAULTS) crashes replicas.
 * No timing is asserted.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe as suite, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import type { SubscriptionRpc } from "../../src/subscriptions/rpc.ts";
import { SUB_CLOSE } from "../../src/subscriptions/wire.ts";
import { call, expectError, fetchJson, json } from "./helpers.ts";
import { REPLICAS, crashStarted, createReplicated, leaderOf, replica, sleep, status, until, produceRetrying } from "./replica-helpers.ts";
import { connect, connectReader, produceValues, values, watchSocket } from "./subs-helpers.ts";
import { MAX_PAUSE_MS } from "../../src/lifecycle/pace.ts";

afterEach(crashStarted);

type Row = { name: string; mark_delete: number; cursor: string; meta: string };

const replicaObject = (topicId: string, id: string) => env.PARTITION.getByName(id === "r1" ? partitionObjectName(topicId, 0) : `${partitionObjectName(topicId, 0)}/${id}`);

/** A replica's stored subscriptions (its `sub_subscriptions` rows), read in the object itself. */
async function subRows(topicId: string, id: string): Promise<Row[]> {
  const stub = replicaObject(topicId, id);
  return runInDurableObject(stub, (_o, state) =>
    state.storage.sql
      .exec<Row>("SELECT name, mark_delete, cursor, meta FROM sub_subscriptions ORDER BY name")
      .toArray()
      .map((r) => ({ ...r })),
  );
}

/** Waits until every replica in `ids` stores the same subscriptions as `ids[0]`, satisfying `pred`; answers them. */
async function sameCursors(topicId: string, ids: readonly string[], pred: (rows: Row[]) => boolean): Promise<Row[]> {
  return until(`equal cursors on ${ids.join(", ")}`, async () => {
    const all = await Promise.all(ids.map((id) => subRows(topicId, id)));
    const first = JSON.stringify(all[0]);
    return all.every((r) => JSON.stringify(r) === first) && pred(all[0]!) ? all[0]! : undefined;
  });
}

/** Runs a replica's due timers until no lifecycle timer is due (bounded), as test/workers/lifecycle.test.ts's `settle`. */
async function settle(topicId: string, id: string): Promise<void> {
  const stub = replicaObject(topicId, id);
  for (let i = 0; i < 400; i++) {
    await sleep(5);
    await runDurableObjectAlarm(stub);
    const now = Date.now();
    const next = await runInDurableObject(
      stub,
      (_o, state) => state.storage.sql.exec<{ d: number | null }>("SELECT MIN(due_ms) AS d FROM _schedule WHERE room = 'lifecycle' AND due_ms <= ?", now + MAX_PAUSE_MS + 100).one().d,
    );
    if (next === null) return;
    if (next > Date.now()) await sleep(next - Date.now());
  }
}

/** A replica's log start offset. */
async function logStartOf(topicId: string, id: string): Promise<number> {
  const r = await replica(topicId, id).listOffsets({ spec: "earliest" });
  if (!r.ok || r.offset === null) throw new Error(JSON.stringify(r));
  return r.offset;
}

const subRpc = (topicId: string, id: string) => replica(topicId, id) as unknown as SubscriptionRpc;

async function stats(name: string, sub: string): Promise<{ backlog: number; partitions: { markDeletePosition: number; ackedRanges: [number, number][]; consumers: unknown[] }[] }> {
  const res = await call(`/v1/topics/${name}/subscriptions/${sub}`);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text);
}

/** Produces one record per request to partition 0, retrying retriable refusals (an election) every 100 ms; answers its offset. */
async function produceOne(name: string, value: string): Promise<number> {
  return (await produceRetrying(`/v1/topics/${name}/partitions/0/records`, value, 100)).records[0]!.offset;
}

suite("subscriptions on a replicated partition", () => {
  it("acks are replicated: every replica stores the same cursor; a follower answers NOT_LEADER_OR_FOLLOWER; through the gateway it works; refusals change nothing", async () => {
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    expect(await produceValues(name, ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"])).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const c = await connect(name, "s", { type: "shared", initialPosition: "earliest" });
    const got = await c.waitMessages(8);
    expect(values(got)).toEqual(["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"]);
    // Answered after the Raft commit: a majority stores the cursor change.
    expect(await c.ack([got[0]!, got[1]!, got[2]!, got[5]!].map((m) => m.messageId))).toBe(4);
    const rows = await sameCursors(topicId, REPLICAS, (r) => r.length === 1 && r[0]!.mark_delete === 2);
    expect(rows.map((r) => [r.name, r.mark_delete])).toEqual([["s", 2]]);
    const st = await stats(name, "s");
    expect({ backlog: st.backlog, md: st.partitions[0]!.markDeletePosition, ranges: st.partitions[0]!.ackedRanges, consumers: st.partitions[0]!.consumers.length }).toEqual({
      backlog: 4,
      md: 2,
      ranges: [[5, 5]],
      consumers: 1,
    });

    // A follower serves no subscription call, names the leader, and stores nothing new.
    for (const id of REPLICAS.filter((r) => r !== leader.replica)) {
      expect(await subRpc(topicId, id).subStats("s")).toMatchObject({ ok: false, code: "NOT_LEADER_OR_FOLLOWER", details: { leaderReplica: leader.replica } });
      expect(await subRpc(topicId, id).subCreate({ subscription: "other", type: "shared", position: { kind: "earliest" } })).toMatchObject({
        ok: false,
        code: "NOT_LEADER_OR_FOLLOWER",
      });
    }
    // A consumer's upgrade sent straight to a follower is refused the same way (no socket).
    const follower = REPLICAS.find((r) => r !== leader.replica)!;
    const upgrade = await replicaObject(topicId, follower).fetch(
      new Request("https://partition.internal/ws?type=shared", { headers: { upgrade: "websocket", "edgelog-socket": "consumer", "edgelog-subscription": "s" } }),
    );
    expect(upgrade.status).toBe(503);
    expect(((await upgrade.json()) as { error: { code: string; details: { leaderReplica: string } } }).error).toMatchObject({
      code: "NOT_LEADER_OR_FOLLOWER",
      details: { leaderReplica: leader.replica },
    });
    // Through the gateway (whichever replica it asks first), a new subscription is created on all three.
    const created = await json("PUT", `/v1/topics/${name}/subscriptions/other`, { position: "earliest" });
    expect(created.status, await created.clone().text()).toBe(201);
    await sameCursors(topicId, REPLICAS, (r) => r.map((x) => x.name).join() === "other,s");

    // Bad input: the same refusals as at factor 1, and no replica's state changes.
    const before = await subRows(topicId, leader.replica);
    c.send({ type: "ack", messageIds: ["0000:0000000000000099"], requestId: "bad" });
    await c.until(() => c.frames.some((f) => f.type === "error" && f.requestId === "bad"), "the refusal");
    expect(c.frames.find((f) => f.type === "error" && f.requestId === "bad")).toMatchObject({ code: "INVALID_MESSAGE_ID" });
    await expectError(await json("POST", `/v1/topics/${name}/subscriptions/s/seek`, {}), "INVALID_REQUEST", 400);
    await expectError(await json("PUT", `/v1/topics/${name}/subscriptions/bad`, { type: "nope" }), "INVALID_REQUEST", 400);
    await expectError(await call(`/v1/topics/${name}/subscriptions/missing`), "SUBSCRIPTION_NOT_FOUND", 404);
    await expectError(await call(`/v1/topics/${name}/subscriptions/s`, { method: "DELETE" }), "SUBSCRIPTION_HAS_CONSUMERS", 409);
    await sleep(300);
    for (const id of REPLICAS) expect(await subRows(topicId, id), id).toEqual(before);

    // Seek and delete are replicated too.
    const seek = await json("POST", `/v1/topics/${name}/subscriptions/other/seek`, { messageId: "0000:0000000000000004" });
    expect(seek.status, await seek.clone().text()).toBe(200);
    await sameCursors(topicId, REPLICAS, (r) => r.find((x) => x.name === "other")?.mark_delete === 3);
    const del = await call(`/v1/topics/${name}/subscriptions/other`, { method: "DELETE" });
    expect(del.status, await del.clone().text()).toBe(200);
    await sameCursors(topicId, REPLICAS, (r) => r.map((x) => x.name).join() === "s");
    await c.close();
  }, 60_000);

  it("failover: the leader crashes; its consumer's socket closes with 1012; a consumer through the gateway at the new leader gets every unacked message and none of the acked ones; cursors equal on every replica", async () => {
    const { name, topicId } = await createReplicated();
    const leader = await leaderOf(topicId);
    const sent = Array.from({ length: 10 }, (_, i) => `m${i}`);
    expect(await produceValues(name, sent)).toEqual(sent.map((_, i) => i));
    const c = await connect(name, "s", { type: "shared", initialPosition: "earliest" });
    const got = await c.waitMessages(10);
    const acked = [0, 1, 2, 3, 4, 7];
    expect(await c.ack(acked.map((i) => got[i]!.messageId))).toBe(6);
    // Messages 5, 6, 8 and 9 are delivered and unacked when the leader goes down.
    await replica(topicId, leader.replica).setFaults({ crashed: true });
    const closed = await c.closed;
    expect(closed.code).toBe(SUB_CLOSE.leaderChanged);

    const next = await leaderOf(topicId, [leader.replica]);
    expect(next.leaderEpoch).toBeGreaterThan(leader.leaderEpoch);
    const survivors = REPLICAS.filter((id) => id !== leader.replica);
    // The consumer reconnects through the gateway (its cached leader is down: it finds the new one).
    const again = await until("a consumer at the new leader", async () => {
      try {
        return await connect(name, "s", { type: "shared" });
      } catch {
        return undefined;
      }
    });
    const redelivered = await again.waitMessages(4);
    expect(values(redelivered)).toEqual(["m5", "m6", "m8", "m9"]);
    // Pulsar's semantics on broker failover: a redelivery after a disconnect keeps the count.
    expect(redelivered.map((m) => m.redeliveryCount)).toEqual([0, 0, 0, 0]);
    await sleep(300);
    expect(again.messages).toHaveLength(4);
    // New records flow to it, and its acks commit at the new leader.
    expect(await produceOne(name, "m10")).toBe(10);
    const more = await again.waitMessages(5);
    expect(await again.ack(more.map((m) => m.messageId))).toBe(5);
    await sameCursors(topicId, survivors, (r) => r[0]?.mark_delete === 10);

    // The crashed replica returns, catches up from the journal, and stores the same cursor.
    await replica(topicId, leader.replica).setFaults({});
    const rows = await sameCursors(topicId, REPLICAS, (r) => r[0]?.mark_delete === 10);
    expect(rows.map((r) => [r.name, r.mark_delete])).toEqual([["s", 10]]);
    await again.close();
  }, 90_000);

  it("leadership transfer closes the old leader's sockets (1012); the backlog quota is enforced by the new leader r2 against the replicated cursors", async () => {
    const uid = crypto.randomUUID().slice(0, 8);
    const tenant = `rs-${uid}`;
    expect((await json("PUT", `/v1/tenants/${tenant}`, {})).status).toBe(201);
    expect((await json("PUT", `/v1/namespaces/${tenant}/ns`, {})).status).toBe(201);
    const { name, topicId } = await createReplicated({}, `${tenant}/ns/t-${uid}`);
    const first = await leaderOf(topicId);
    expect((await json("PUT", `/v1/topics/${name}/subscriptions/s`, { position: "latest" })).status).toBe(201);
    const c = await connect(name, "s", { type: "exclusive" });
    await c.until(() => c.frames.some((f) => f.type === "connected"), "connected");
    if (first.replica !== "r2") {
      const t = await json("POST", `/v1/topics/${name}/partitions/0/leader`, { replica: "r2" });
      expect(t.status, await t.clone().text()).toBe(200);
      expect((await c.closed).code).toBe(SUB_CLOSE.leaderChanged);
    } else await c.close();
    expect((await leaderOf(topicId)).replica).toBe("r2");

    const quota = await json("PUT", `/v1/namespaces/${tenant}/ns/policies/backlogQuota`, { limitBytes: 1000, action: "producer_exception" });
    expect(quota.status, await quota.clone().text()).toBe(200);
    const big = (i: number) => `${i}`.padEnd(400, "x");
    let accepted = 0;
    let refused: Response | null = null;
    for (let i = 0; i < 10 && refused === null; i++) {
      const res = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: big(i) }] });
      if (res.status === 200) accepted++;
      else refused = res;
    }
    // As at factor 1 (test/workers/policies.test.ts): three ~470-byte batches, the third takes the backlog over 1000 bytes.
    expect(accepted).toBe(3);
    const e = await expectError(refused!, "BACKLOG_QUOTA_EXCEEDED", 409);
    expect(e.details).toMatchObject({ limitBytes: 1000 });
    // A consumer at r2 acks everything: produce is accepted again.
    const c2 = await connect(name, "s", { type: "exclusive" });
    const got = await c2.waitMessages(3);
    expect(await c2.ack(got.map((m) => m.messageId))).toBe(3);
    const after = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: big(9) }] });
    expect(after.status, await after.clone().text()).toBe(200);
    await sameCursors(topicId, REPLICAS, (r) => r[0]?.mark_delete === 2);
    await c2.close();

    // maxProducersPerTopic, checked by r2 against the replicated producer state.
    expect((await json("PATCH", `/v1/topics/${name}`, { policies: { maxProducersPerTopic: 1 } })).status).toBe(200);
    const pid = async (): Promise<number> => ((await (await call("/v1/producers", { method: "POST" })).json()) as { producerId: number }).producerId;
    const [a, b] = [await pid(), await pid()];
    const send = (producerId: number) => json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: "v" }], producerId, producerEpoch: 0, baseSequence: 0 });
    const fromA = await send(a);
    expect(fromA.status, await fromA.clone().text()).toBe(200);
    const over = await expectError(await send(b), "MAX_PRODUCERS_REACHED", 409);
    expect(over.details).toMatchObject({ maxProducersPerTopic: 1, producers: 1 });
  }, 60_000);

  it("a replica that catches up by snapshot has the cursors", async () => {
    const { name, topicId } = await createReplicated();
    for (const id of REPLICAS) expect(await replica(topicId, id).setReplicaTestKnobs({ keepEntries: 3, leaderKeepEntries: 5 })).toMatchObject({ ok: true });
    const leader = await leaderOf(topicId);
    const down = REPLICAS.find((id) => id !== leader.replica)!;
    await replica(topicId, down).setFaults({ crashed: true });
    // While it is down: a subscription, acks, more subscriptions, and enough entries for the leader to compact past it.
    for (let i = 0; i < 6; i++) await produceOne(name, `m${i}`);
    const c = await connect(name, "s", { type: "shared", initialPosition: "earliest" });
    const got = await c.waitMessages(6);
    expect(await c.ack([got[0]!, got[1]!, got[4]!].map((m) => m.messageId))).toBe(3);
    expect((await json("PUT", `/v1/topics/${name}/subscriptions/t`, { position: "latest" })).status).toBe(201);
    for (let i = 6; i < 20; i++) await produceOne(name, `m${i}`);
    const before = (await status(topicId, leader.replica))!;
    expect(before.snapshotIndex).toBeGreaterThan(0);
    const want = await subRows(topicId, leader.replica);
    expect(want.map((r) => [r.name, r.mark_delete])).toEqual([
      ["s", 1],
      ["t", 5],
    ]);
    await c.close();

    await replica(topicId, down).setFaults({});
    await until("the snapshot install", async () => ((await status(topicId, down))?.catchUpInstalls === 1 ? true : undefined));
    expect(await subRows(topicId, down)).toEqual(await subRows(topicId, leader.replica));
    expect((await subRows(topicId, down)).map((r) => JSON.parse(r.cursor) as unknown)).toEqual(want.map((r) => JSON.parse(r.cursor) as unknown));
  }, 90_000);

  it("retention respects the replicated cursors on every replica: expired segments stay below the slowest mark-delete position", async () => {
    const DAY = 86_400_000;
    const { name, topicId } = await createReplicated({ "segment.bytes": 1024 * 1024, "retention.ms": DAY });
    await leaderOf(topicId);
    expect((await json("PUT", `/v1/topics/${name}/subscriptions/slow`, { initialPosition: "earliest" })).status).toBe(201);
    const old = Date.now() - 3 * DAY;
    // Values of 400 KiB: two one-record batches per 1 MiB segment; [0,1] and [2,3] expire, [4] is the active segment.
    for (let i = 0; i < 5; i++) {
      const res = await json("POST", `/v1/topics/${name}/partitions/0/records`, { records: [{ value: `v${i}`.padEnd(400 * 1024, "."), timestamp: old }] });
      expect(res.status, await res.clone().text()).toBe(200);
    }
    await sameCursors(topicId, REPLICAS, (r) => r.length === 1);
    for (const id of REPLICAS) await settle(topicId, id);
    for (const id of REPLICAS) expect(await logStartOf(topicId, id), id).toBe(0);
    // The subscription acks 0..1: its mark-delete position 1 lets [0,1] go on every replica, not [2,3].
    const c = await connect(name, "slow", { receiverQueueSize: 2 });
    const got = await c.waitMessages(2);
    expect(await c.ack(got.map((m) => m.messageId))).toBe(2);
    await sameCursors(topicId, REPLICAS, (r) => r[0]?.mark_delete === 1);
    // The next retention check (moved to now by a config change, replicated) drops [0,1] only.
    expect((await json("PATCH", `/v1/topics/${name}`, { configs: { "retention.ms": DAY - 1 } })).status).toBe(200);
    for (const id of REPLICAS) {
      await until(`${id}'s retention`, async () => {
        await settle(topicId, id);
        return (await logStartOf(topicId, id)) === 2 ? true : undefined;
      });
    }
    await sleep(200);
    for (const id of REPLICAS) expect(await logStartOf(topicId, id), id).toBe(2);
    await c.close();
  }, 90_000);

  it("the Pulsar WebSocket consumer, a reader and HTTP pull are served at the leader; a leadership transfer closes the Pulsar session and the reader with 1012; a new session gets the unacked message", async () => {
    const { name, topicId } = await createReplicated({}, `public/default/${crypto.randomUUID().slice(0, 8)}`);
    const first = await leaderOf(topicId);
    const res = await call(`/ws/v2/consumer/persistent/${name}/ps`, { headers: { upgrade: "websocket" } });
    expect(res.status, res.status === 101 ? "" : await res.text()).toBe(101);
    const pulsar = watchSocket<Record<string, unknown>>(res.webSocket as WebSocket);
    const pulsarMessages = () => pulsar.frames.filter((f) => "payload" in f);
    expect(await produceValues(name, ["m0", "m1", "m2"])).toEqual([0, 1, 2]);
    await pulsar.until(() => pulsarMessages().length === 3, "3 messages on the Pulsar session");
    for (const m of pulsarMessages().slice(0, 2)) (res.webSocket as WebSocket).send(JSON.stringify({ messageId: m.messageId }));
    await sameCursors(topicId, REPLICAS, (r) => r[0]?.name === "ps" && r[0].mark_delete === 1);
    const reader = await connectReader(name, { start: "earliest" });
    expect(values(await reader.waitMessages(3))).toEqual(["m0", "m1", "m2"]);

    // HTTP pull (a lease) at the leader, its ack replicated.
    const received = await json("POST", `/v1/topics/${name}/partitions/0/subscriptions/pull/receive`, { maxMessages: 10, initialPosition: "earliest" });
    const lease = (await received.json()) as { leaseId: string; messages: { value: string }[] };
    expect(received.status).toBe(200);
    expect(lease.messages.map((m) => m.value)).toEqual(["m0", "m1", "m2"]);
    const settled = await json("POST", `/v1/topics/${name}/partitions/0/subscriptions/pull/leases/${lease.leaseId}/ack`, {});
    expect(settled.status, await settled.clone().text()).toBe(200);
    await sameCursors(topicId, REPLICAS, (r) => r.find((x) => x.name === "pull")?.mark_delete === 2);

    const to = REPLICAS.find((id) => id !== first.replica)!;
    const t = await json("POST", `/v1/topics/${name}/partitions/0/leader`, { replica: to });
    expect(t.status, await t.clone().text()).toBe(200);
    expect((await pulsar.closed).code).toBe(SUB_CLOSE.leaderChanged);
    expect((await reader.closed).code).toBe(SUB_CLOSE.leaderChanged);
    const again = await call(`/ws/v2/consumer/persistent/${name}/ps`, { headers: { upgrade: "websocket" } });
    expect(again.status).toBe(101);
    const session = watchSocket<Record<string, unknown>>(again.webSocket as WebSocket);
    await session.until(() => session.frames.some((f) => "payload" in f), "the unacked message");
    await sleep(300);
    const got = session.frames.filter((f) => "payload" in f);
    expect(got.map((m) => [atob(m.payload as string), m.redeliveryCount])).toEqual([["m2", 0]]);
    (again.webSocket as WebSocket).close(1000, "done");
  }, 60_000);

  it("dead-letter decisions and copies are replicated: nacked past maxRedeliverCount, exactly one copy, the original acked on every replica", async () => {
    const { name, topicId } = await createReplicated();
    await leaderOf(topicId);
    const c = await connect(name, "s", { type: "shared", maxRedeliverCount: 1, negativeAckRedeliveryDelayMs: 50 });
    await c.until(() => c.frames.some((f) => f.type === "connected"), "connected");
    expect(await produceValues(name, ["ok", "poison"])).toEqual([0, 1]);
    const first = await c.waitMessages(2);
    await c.ack([first[0]!.messageId]);
    for (let i = 2; i <= 3; i++) {
      const got = await c.waitMessages(i);
      expect(await c.nack([got[i - 1]!.messageId])).toBe(1);
    }
    expect(c.messages.map((m) => [m.value, m.redeliveryCount])).toEqual([
      ["ok", 0],
      ["poison", 0],
      ["poison", 1],
    ]);
    // The copy is produced after the decision commits; the original is acked after the copy: on every replica.
    const rows = await sameCursors(topicId, REPLICAS, (r) => r[0]?.mark_delete === 1);
    expect((JSON.parse(rows[0]!.meta) as { dlq: { producerId: number } | null }).dlq).not.toBeNull();
    const dlq = await fetchJson(`${name}-s-DLQ`, 0, "offset=0");
    expect(dlq.records.map((r) => r.value)).toEqual(["poison"]);
    await sleep(300);
    expect(c.messages).toHaveLength(3);
    await c.close();
  }, 60_000);

  it("a dead-letter topic at factor 3 led by r2 gets its copy at the leader (not at r1)", async () => {
    const { name, topicId } = await createReplicated({}, undefined);
    await leaderOf(topicId);
    const dlqName = `${name}-s-DLQ`;
    const dlq = await createReplicated({}, dlqName);
    if ((await leaderOf(dlq.topicId)).replica !== "r2") {
      const t = await json("POST", `/v1/topics/${dlqName}/partitions/0/leader`, { replica: "r2" });
      expect(t.status, await t.clone().text()).toBe(200);
    }
    expect((await leaderOf(dlq.topicId)).replica).toBe("r2");
    const c = await connect(name, "s", { type: "shared", maxRedeliverCount: 1, negativeAckRedeliveryDelayMs: 50 });
    await c.until(() => c.frames.some((f) => f.type === "connected"), "connected");
    expect(await produceValues(name, ["poison"])).toEqual([0]);
    for (let i = 1; i <= 2; i++) {
      const got = await c.waitMessages(i);
      expect(await c.nack([got[i - 1]!.messageId])).toBe(1);
    }
    await sameCursors(topicId, REPLICAS, (r) => r[0]?.mark_delete === 0);
    const copied = await fetchJson(dlqName, 0, "offset=0");
    expect(copied.records.map((r) => r.value)).toEqual(["poison"]);
    await c.close();
  }, 60_000);
});
