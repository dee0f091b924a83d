/**
 * Durable Streams on replicated partitions (docs/DURABLE-STREAMS.md "Replicated streams";
 * docs/RAFT.md "Replicated partitions"): a stream created with `Edgelog-Replication-Factor: 3`
 * lives on three partition objects forming a Raft group; every stream write is a Raft entry
 * decided by every replica at apply. Three replicas in one workerd, real alarms and RPC, driven
 * through the real gateway; fault injection (EDGELOG_RAFT_FAULTS, on in this tier) crashes
 * replicas. Times are not asserted (they depend on the machine's load).
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { afterEach, describe as suite, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import type { ErrorBody, TopicDescription } from "../../src/protocol/index.ts";
import type { StreamRpc } from "../../src/streams/rpc.ts";
import { call, expectError, json, randomTopic } from "./helpers.ts";
import { REPLICAS as IDS, leaderOf, replica, replicaLog, sleep, status, until } from "./replica-helpers.ts";

const token = (n: number) => `${String(n).padStart(16, "0")}_0000000000000000`;
const stream = (path: string, init?: RequestInit) => call(`/v1/stream/${path}`, init);
const put = (path: string, headers: Record<string, string>, body?: BodyInit) => stream(path, { method: "PUT", headers, ...(body !== undefined ? { body } : {}) });
const post = (path: string, headers: Record<string, string>, body?: BodyInit) => stream(path, { method: "POST", headers, ...(body !== undefined ? { body } : {}) });
const RF3 = { "Edgelog-Replication-Factor": "3" };
const producer = (id: string, epoch: number, seq: number) => ({ "Producer-Id": id, "Producer-Epoch": String(epoch), "Producer-Seq": String(seq) });

/** Topics whose replicas this file started: made to act crashed after each test, so no clock runs on. */
const started: string[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).flatMap((topicId) => IDS.map((id) => replica(topicId, id).setFaults({ crashed: true }))));
});

function stubOf(topicId: string, id: string): DurableObjectStub {
  const base = partitionObjectName(topicId, 0);
  return env.PARTITION.getByName(id === "r1" ? base : `${base}/${id}`);
}

/** Creates a replicated text stream through the gateway: its topic, checked at replication.factor 3. */
async function createStream(path: string, headers: Record<string, string> = {}, body?: string): Promise<TopicDescription> {
  const res = await put(path, { "content-type": "text/plain", ...RF3, ...headers }, body);
  expect(res.status, await res.clone().text()).toBe(201);
  const t = (await (await call(`/v1/topics/${res.headers.get("Edgelog-Topic")}`)).json()) as TopicDescription;
  expect(t.configs["replication.factor"]).toBe(3);
  started.push(t.topicId);
  return t;
}

/** The streams room's rows of a replica (every column), and its log as (offset, value, leader epoch). */
async function dsState(topicId: string, id: string) {
  const rows = await runInDurableObject(stubOf(topicId, id), (_o, state) => ({
    stream: state.storage.sql.exec("SELECT * FROM ds_stream").toArray(),
    producers: state.storage.sql.exec("SELECT * FROM ds_producers ORDER BY producer_id").toArray(),
  }));
  return { ...rows, log: await replicaLog(topicId, id) };
}

/** Waits until every replica has applied everything the leader committed (no entry in flight). */
async function settled(topicId: string): Promise<void> {
  await until("every replica applied the leader's commit", async () => {
    const l = await leaderOf(topicId);
    if (l.appliedIndex !== l.lastIndex) return undefined;
    for (const id of IDS) if ((await status(topicId, id))?.appliedIndex !== l.appliedIndex) return undefined;
    return true;
  });
}

/** The three replicas' streams rooms and logs are identical; @returns the leader's. */
async function expectSameOnAll(topicId: string): Promise<Awaited<ReturnType<typeof dsState>>> {
  await settled(topicId);
  const all = await Promise.all(IDS.map((id) => dsState(topicId, id)));
  for (let k = 1; k < all.length; k++) expect(all[k], IDS[k]).toEqual(all[0]);
  return all[0]!;
}

async function retriable(res: Response): Promise<boolean> {
  if (res.status < 500) return false;
  const body = (await res.json()) as ErrorBody;
  return body.error.retriable;
}

suite("durable streams at replication.factor 3", () => {
  it("creates, appends with idempotent producers, reads back at the leader; the ds_* state and the log are the same on all three", async () => {
    const path = randomTopic("rs");
    const t = await createStream(path, {}, "a");
    const leader = await leaderOf(t.topicId);
    // PUT is idempotent; another factor for an existing stream is a conflict; bad factors are refused.
    expect((await put(path, { "content-type": "text/plain", ...RF3 })).status).toBe(200);
    expect((await put(path, { "content-type": "text/plain" })).status).toBe(200);
    await expectError(await put(path, { "content-type": "text/plain", "Edgelog-Replication-Factor": "1" }), "STREAM_CONFLICT", 409);
    await expectError(await put(randomTopic("rs"), { "content-type": "text/plain", "Edgelog-Replication-Factor": "2" }), "INVALID_REQUEST", 400);

    let r = await post(path, { "content-type": "text/plain", ...producer("p", 0, 0) }, "b");
    expect(r.status).toBe(200);
    expect([r.headers.get("Stream-Next-Offset"), r.headers.get("Producer-Epoch"), r.headers.get("Producer-Seq")]).toEqual([token(2), "0", "0"]);
    expect((await post(path, { "content-type": "text/plain", ...producer("p", 0, 1) }, "c")).status).toBe(200);
    // A retry is a duplicate: 204, nothing written.
    r = await post(path, { "content-type": "text/plain", ...producer("p", 0, 1) }, "c");
    expect([r.status, r.headers.get("Producer-Seq"), r.headers.get("Stream-Next-Offset")]).toEqual([204, "1", token(3)]);
    // A plain append, then a long-poll at the tail woken by the next append.
    expect((await post(path, { "content-type": "text/plain" }, "d")).status).toBe(204);
    const poll = stream(`${path}?offset=${token(4)}&live=long-poll`);
    await sleep(100);
    expect((await post(path, { "content-type": "text/plain", ...producer("q", 3, 0) }, "e")).status).toBe(200);
    const polled = await poll;
    expect([polled.status, await polled.text(), polled.headers.get("Stream-Next-Offset")]).toEqual([200, "e", token(5)]);

    const read = await stream(`${path}?offset=-1`);
    expect([read.status, await read.text(), read.headers.get("Stream-Next-Offset"), read.headers.get("Stream-Up-To-Date")]).toEqual([200, "abcde", token(5), "true"]);
    const head = await stream(path, { method: "HEAD" });
    expect([head.status, head.headers.get("Stream-Next-Offset")]).toEqual([200, token(5)]);
    // The native API reads the same records.
    const native = (await (await call(`/v1/topics/${t.name}/partitions/0/records?offset=0`)).json()) as { records: { value: string }[] };
    expect(native.records.map((x) => x.value)).toEqual(["a", "b", "c", "d", "e"]);

    const same = await expectSameOnAll(t.topicId);
    expect(same.log.map((x) => [x.offset, x.value])).toEqual([
      [0, "a"],
      [1, "b"],
      [2, "c"],
      [3, "d"],
      [4, "e"],
    ]);
    // The records carry the Raft term as leader epoch.
    expect(new Set(same.log.map((x) => x.epoch))).toEqual(new Set([leader.leaderEpoch]));
    expect(same.stream).toMatchObject([{ path, content_type: "text/plain", closed: 0, soft_deleted: 0 }]);
    expect(same.producers.map((p) => [p.producer_id, p.epoch, p.last_seq])).toEqual([
      ["p", 0, 1],
      ["q", 3, 0],
    ]);
    // A follower serves no stream call: it names the leader (the gateway went there).
    const follower = IDS.find((id) => id !== leader.replica)!;
    const direct = replica(t.topicId, follower) as unknown as StreamRpc;
    expect(await direct.dsRead({ path, from: { kind: "beginning" }, maxBytes: 1 << 20, maxRecords: 100, waitMs: 0 })).toMatchObject({
      ok: false,
      code: "NOT_LEADER_OR_FOLLOWER",
      details: { leaderReplica: leader.replica },
    });
    expect(
      await direct.dsAppend({ path, contentType: "text/plain", body: new TextEncoder().encode("x"), messages: null, bodyError: null, close: false, streamSeq: null, producer: null }),
    ).toMatchObject({
      ok: false,
      code: "NOT_LEADER_OR_FOLLOWER",
    });
    // A stream without the header keeps factor 1 (today's single object).
    const plain = await put(randomTopic("rs1"), { "content-type": "text/plain" }, "x");
    expect(plain.status).toBe(201);
    const pt = (await (await call(`/v1/topics/${plain.headers.get("Edgelog-Topic")}`)).json()) as TopicDescription;
    expect(pt.configs["replication.factor"]).toBe(1);
    expect(await replica(pt.topicId, "r1").replicaStatus()).toEqual({ ok: true, replica: null });
  });

  it("refuses bad input as at factor 1 and changes nothing on any replica", async () => {
    const path = randomTopic("rsbad");
    const t = await createStream(path, {}, "a");
    expect((await post(path, { "content-type": "text/plain", ...producer("p", 1, 0), "Stream-Seq": "5" }, "b")).status).toBe(200);
    const before = await expectSameOnAll(t.topicId);
    await expectError(await post(path, { "content-type": "application/json" }, "[1]"), "CONTENT_TYPE_MISMATCH", 409);
    const stale = await post(path, { "content-type": "text/plain", ...producer("p", 0, 1) }, "x");
    expect([stale.status, stale.headers.get("Producer-Epoch")]).toEqual([403, "1"]);
    const gap = await post(path, { "content-type": "text/plain", ...producer("p", 1, 3) }, "x");
    expect([gap.status, gap.headers.get("Producer-Expected-Seq"), gap.headers.get("Producer-Received-Seq")]).toEqual([409, "1", "3"]);
    await expectError(await post(path, { "content-type": "text/plain", ...producer("p", 2, 1) }, "x"), "INVALID_PRODUCER_SEQUENCE", 400);
    await expectError(await post(path, { "content-type": "text/plain", "Stream-Seq": "4" }, "x"), "STREAM_SEQ_CONFLICT", 409);
    await expectError(await post(path, { "content-type": "text/plain" }), "EMPTY_BATCH", 400);
    await expectError(await stream(`${path}?offset=${token(9)}`), "INVALID_OFFSET", 400);
    // One entry is at most the Raft message limit (1 MiB): a larger body is refused, nothing proposed.
    await expectError(await post(path, { "content-type": "text/plain", ...producer("p", 1, 1) }, new Uint8Array(1_500_000)), "REQUEST_TOO_LARGE", 413);
    await expectError(await put(path, { "content-type": "application/json", ...RF3 }), "STREAM_CONFLICT", 409);
    // A fork at a bad offset: refused, nothing referenced.
    await expectError(await put(randomTopic("rsfork"), { "content-type": "text/plain", "Stream-Forked-From": `/v1/stream/${path}`, "Stream-Fork-Offset": token(7) }), "INVALID_OFFSET", 400);
    expect(await expectSameOnAll(t.topicId)).toEqual(before);
    expect(await (await stream(path)).text()).toBe("ab");
  });

  it("closes and deletes on every replica; a PUT afterwards starts a new stream", async () => {
    const path = randomTopic("rsdel");
    const t = await createStream(path, {}, "a");
    const closed = await post(path, { "content-type": "text/plain", "Stream-Closed": "true", ...producer("w", 0, 0) }, "z");
    expect([closed.status, closed.headers.get("Stream-Closed")]).toEqual([200, "true"]);
    const state = await expectSameOnAll(t.topicId);
    expect(state.stream).toMatchObject([{ closed: 1, closed_by_id: "w", closed_by_epoch: 0, closed_by_seq: 0 }]);
    const refused = await post(path, { "content-type": "text/plain" }, "y");
    expect([refused.status, refused.headers.get("Stream-Closed"), refused.headers.get("Stream-Next-Offset")]).toEqual([409, "true", token(2)]);
    // The closing producer's retry is a duplicate; a native producer is refused too.
    expect((await post(path, { "content-type": "text/plain", "Stream-Closed": "true", ...producer("w", 0, 0) }, "z")).status).toBe(204);
    await expectError(await json("POST", `/v1/topics/${t.name}/partitions/0/records`, { records: [{ value: "n" }] }), "STREAM_CLOSED", 409);
    const read = await stream(`${path}?offset=-1`);
    expect([await read.text(), read.headers.get("Stream-Closed")]).toEqual(["az", "true"]);
    // SSE at the leader: the data, then the control event that says closed, and the connection ends.
    const sse = await stream(`${path}?offset=-1&live=sse`);
    expect([sse.status, sse.headers.get("content-type")]).toEqual([200, "text/event-stream"]);
    const events = await sse.text();
    expect(events).toContain("event: data\ndata:az\n");
    expect(events).toContain('"streamClosed":true');

    expect((await stream(path, { method: "DELETE" })).status).toBe(204);
    await expectError(await stream(path), "STREAM_NOT_FOUND", 404);
    expect((await call(`/v1/topics/${t.name}`)).status).toBe(404);
    // Every replica's storage is gone.
    for (const id of IDS) {
      await until(`${id} destroyed`, async () => ((await replica(t.topicId, id).describe()).ok ? undefined : true));
      expect(await replica(t.topicId, id).describe()).toMatchObject({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION" });
      expect(await runInDurableObject(stubOf(t.topicId, id), (_o, s) => s.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'ds_stream'").toArray())).toEqual([]);
    }
    const again = await createStream(path, {}, "new");
    expect(again.topicId).not.toBe(t.topicId);
    expect(await (await stream(path)).text()).toBe("new");
  });

  it("the leader crashes mid-appends: a new leader takes over, every acknowledged append is present once, a retry after failover is a duplicate, reads never showed what later vanished", async () => {
    const path = randomTopic("rsfail");
    const t = await createStream(path, { "content-type": "application/json" });
    const first = await leaderOf(t.topicId);
    const acked: string[] = [];
    const seen: string[][] = [];
    let retriableAnswers = 0;
    let duplicates = 0;
    let stop = false;
    const TOTAL = 40;
    // One idempotent producer, one append per message, the same request resent on a retriable error.
    const writer = (async () => {
      for (let seq = 0; seq < TOTAL; seq++) {
        const value = `m${seq}`;
        for (;;) {
          const res = await post(path, { "content-type": "application/json", ...producer("w", 0, seq) }, JSON.stringify(value));
          if (res.status === 200 || res.status === 204) {
            if (res.status === 204) duplicates++;
            expect(res.headers.get("Producer-Seq")).toBe(String(seq));
            acked.push(value);
            break;
          }
          expect(await retriable(res), `append ${seq}: ${res.status}`).toBe(true);
          retriableAnswers++;
          await sleep(50);
        }
      }
    })();
    // A catch-up reader from the start, all along: what it sees must never vanish.
    const reader = (async () => {
      while (!stop) {
        const res = await stream(`${path}?offset=-1`);
        if (res.status === 200) seen.push(JSON.parse(await res.text()) as string[]);
        else expect(await retriable(res), `read: ${res.status}`).toBe(true);
        await sleep(20);
      }
    })();
    await until("10 acknowledged appends", async () => (acked.length >= 10 ? true : undefined));
    await replica(t.topicId, first.replica).setFaults({ crashed: true });
    const faultAt = Date.now();
    const next = await leaderOf(t.topicId, [first.replica]);
    console.log(`replicated stream failover: new leader ${next.replica} in term ${next.leaderEpoch} after ${Date.now() - faultAt} ms`);
    expect(next.leaderEpoch).toBeGreaterThan(first.leaderEpoch);
    await writer;
    stop = true;
    await reader;
    await replica(t.topicId, first.replica).setFaults({});

    const want = Array.from({ length: TOTAL }, (_, i) => `m${i}`);
    expect(acked).toEqual(want);
    const final = await stream(`${path}?offset=-1`);
    expect(JSON.parse(await final.text())).toEqual(want);
    expect(final.headers.get("Stream-Next-Offset")).toBe(token(TOTAL));
    for (const s of seen) expect(want.slice(0, s.length), "a read showed data that is not in the final log").toEqual(s);
    // A retry of an acknowledged append after the failover is a duplicate, not a second copy.
    const retry = await post(path, { "content-type": "application/json", ...producer("w", 0, 7) }, JSON.stringify("m7"));
    expect([retry.status, retry.headers.get("Producer-Seq"), retry.headers.get("Stream-Next-Offset")]).toEqual([204, String(TOTAL - 1), token(TOTAL)]);
    const same = await expectSameOnAll(t.topicId);
    expect(same.log.map((x) => x.value)).toEqual(want.map((v) => JSON.stringify(v)));
    expect(same.log.map((x) => x.offset)).toEqual(want.map((_, i) => i));
    // Leader epochs never go back along the log.
    for (let k = 1; k < same.log.length; k++) expect(same.log[k]!.epoch).toBeGreaterThanOrEqual(same.log[k - 1]!.epoch);
    expect(same.producers.map((p) => [p.producer_id, p.epoch, p.last_seq])).toEqual([["w", 0, TOTAL - 1]]);
    console.log(`replicated stream failover: ${retriableAnswers} retriable answers, ${duplicates} duplicates answered to retries, ${seen.length} reads`);
  });

  it("a replica that catches up by snapshot has the stream state; once it leads, a retried append is a duplicate", async () => {
    const path = randomTopic("rscatch");
    const t = await createStream(path, {}, "a");
    for (const id of IDS) expect(await replica(t.topicId, id).setReplicaTestKnobs({ keepEntries: 3, leaderKeepEntries: 5, chunkBytes: 1 })).toMatchObject({ ok: true });
    const leader = await leaderOf(t.topicId);
    await settled(t.topicId);
    const down = IDS.find((id) => id !== leader.replica)!;
    const before = (await status(t.topicId, down))!;
    await replica(t.topicId, down).setFaults({ crashed: true });
    for (let seq = 0; seq < 20; seq++)
      expect((await post(path, { "content-type": "text/plain", ...producer("p", 2, seq), "Stream-Seq": `s${String(seq).padStart(3, "0")}` }, `v${seq}`)).status).toBe(200);
    const closed = await post(path, { "content-type": "text/plain", "Stream-Closed": "true", ...producer("p", 2, 20) }, "v20");
    expect(closed.status).toBe(200);
    await until("the leader's journal compacted past the follower", async () => {
      const s = await status(t.topicId, leader.replica);
      return s !== null && s.snapshotIndex > before.appliedIndex ? true : undefined;
    });
    await replica(t.topicId, down).setFaults({});
    await until(`${down} caught up by snapshot`, async () => ((await status(t.topicId, down))?.catchUpInstalls === 1 ? true : undefined));
    const same = await expectSameOnAll(t.topicId);
    expect(same.stream).toMatchObject([{ path, closed: 1, closed_by_id: "p", closed_by_epoch: 2, closed_by_seq: 20, stream_seq: "s019" }]);
    expect(same.producers.map((p) => [p.producer_id, p.epoch, p.last_seq])).toEqual([["p", 2, 20]]);
    expect(same.log.map((x) => x.value)).toEqual(["a", ...Array.from({ length: 21 }, (_, i) => `v${i}`)]);

    // The caught-up replica leads: the stream answers as before.
    const moved = await until(`${down} leads`, async () => {
      const l = await leaderOf(t.topicId);
      const r = await replica(t.topicId, l.replica).transferLeadership(down);
      if (!r.ok) console.log(`transfer to ${down}: ${JSON.stringify(r)}`);
      return r.ok ? r : undefined;
    });
    expect(moved).toMatchObject({ ok: true, leaderReplica: down });
    // The retry of the closing request (its producer tuple) is a duplicate; anything else is refused: the stream is closed.
    const retry = await post(path, { "content-type": "text/plain", "Stream-Closed": "true", ...producer("p", 2, 20) }, "v20");
    expect([retry.status, retry.headers.get("Stream-Closed"), retry.headers.get("Stream-Next-Offset")]).toEqual([204, "true", token(22)]);
    const refused = await post(path, { "content-type": "text/plain", ...producer("p", 2, 21) }, "v21");
    expect([refused.status, refused.headers.get("Stream-Closed")]).toEqual([409, "true"]);
    const read = await stream(`${path}?offset=${token(19)}`);
    expect([await read.text(), read.headers.get("Stream-Closed"), read.headers.get("Stream-Next-Offset")]).toEqual(["v18v19v20", "true", token(22)]);
    expect(await expectSameOnAll(t.topicId)).toEqual(same);
  });

  it("expires an idle replicated stream by the leader's timer: every replica destroyed, the topic deleted", async () => {
    const path = randomTopic("rsttl");
    const t = await createStream(path, { "Stream-TTL": "1" }, "a");
    expect(await (await stream(path)).text()).toBe("a");
    await until("the topic deleted by expiry", async () => ((await call(`/v1/topics/${t.name}`)).status === 404 ? true : undefined));
    await expectError(await stream(path), "STREAM_NOT_FOUND", 404);
    for (const id of IDS) {
      await until(`${id} destroyed`, async () => ((await replica(t.topicId, id).describe()).ok ? undefined : true));
    }
  });

  it("a stream marked deleted whose topic's destroy did not finish answers 404 everywhere; the leader's timer or a PUT finishes it", async () => {
    // As if the leader crashed right after the delete's commit: the mark on all three, the topic still listed.
    const markDeleted = async (topicId: string): Promise<void> => {
      await settled(topicId);
      for (const id of IDS) {
        await runInDurableObject(stubOf(topicId, id), (_o, s) => {
          s.storage.sql.exec("UPDATE ds_stream SET soft_deleted = 2 WHERE id = 1");
        });
        await evictDurableObject(stubOf(topicId, id));
      }
      await leaderOf(topicId);
    };
    const byTimer = randomTopic("rsmark");
    const a = await createStream(byTimer, {}, "old");
    await markDeleted(a.topicId);
    await expectError(await stream(byTimer), "STREAM_NOT_FOUND", 404);
    await expectError(await post(byTimer, { "content-type": "text/plain" }, "x"), "STREAM_NOT_FOUND", 404);
    expect((await stream(byTimer, { method: "HEAD" })).status).toBe(404);
    // The leader's timer (10 s after it loaded the mark) deletes the topic, destroying every replica.
    await until("the topic deleted by the leader", async () => ((await call(`/v1/topics/${a.name}`)).status === 404 ? true : undefined));
    for (const id of IDS) await until(`${id} destroyed`, async () => ((await replica(a.topicId, id).describe()).ok ? undefined : true));

    const byPut = randomTopic("rsmark");
    const b = await createStream(byPut, {}, "old");
    await markDeleted(b.topicId);
    const again = await createStream(byPut, {}, "new");
    expect(again.topicId).not.toBe(b.topicId);
    expect(await (await stream(byPut)).text()).toBe("new");
    for (const id of IDS) await until(`${id} of the old topic destroyed`, async () => ((await replica(b.topicId, id).describe()).ok ? undefined : true));
  });

  it("an append whose answer was lost (its leader cut off after the followers took it) commits under the next leader, and its retry is a duplicate", async () => {
    const path = randomTopic("rslost");
    const t = await createStream(path, {}, "a");
    const first = await leaderOf(t.topicId);
    await settled(t.topicId);
    const others = IDS.filter((id) => id !== first.replica);
    // The leader still sends (the followers persist the entry) but hears no answer: it cannot commit, and steps down.
    expect(await replica(t.topicId, first.replica).setFaults({ dropFrom: others })).toMatchObject({ ok: true });
    const lost = await post(path, { "content-type": "text/plain", ...producer("p", 0, 0) }, "b");
    expect(lost.status, await lost.clone().text()).toBeGreaterThanOrEqual(500);
    expect(await retriable(lost)).toBe(true);
    const next = await leaderOf(t.topicId, [first.replica]);
    expect(next.leaderEpoch).toBeGreaterThan(first.leaderEpoch);
    await replica(t.topicId, first.replica).setFaults({});
    // The retry: the entry committed with the new leader's first entry, so it is a duplicate.
    let retry: Response;
    for (;;) {
      retry = await post(path, { "content-type": "text/plain", ...producer("p", 0, 0) }, "b");
      if (retry.status < 500) break;
      expect(await retriable(retry)).toBe(true);
      await sleep(50);
    }
    expect([retry.status, retry.headers.get("Producer-Seq"), retry.headers.get("Stream-Next-Offset")]).toEqual([204, "0", token(2)]);
    expect(await (await stream(path)).text()).toBe("ab");
    const same = await expectSameOnAll(t.topicId);
    expect(same.log.map((x) => [x.offset, x.value, x.epoch > first.leaderEpoch])).toEqual([
      [0, "a", false],
      [1, "b", false],
    ]);
  });

  it("honours min.insync.replicas as an acks=all produce: below it an append is refused NOT_ENOUGH_REPLICAS (retriable), nothing written", async () => {
    const path = randomTopic("rsisr");
    const t = await createStream(path, {}, "a");
    const patched = await json("PATCH", `/v1/topics/${t.name}`, { configs: { "min.insync.replicas": 3 } });
    expect(patched.status, await patched.clone().text()).toBe(200);
    const leader = await leaderOf(t.topicId);
    const follower = IDS.find((id) => id !== leader.replica)!;
    await replica(t.topicId, follower).setFaults({ crashed: true });
    await until("the leader sees 2 in-sync replicas", async () => ((await status(t.topicId, leader.replica))?.inSyncReplicas === 2 ? true : undefined));
    const refused = await post(path, { "content-type": "text/plain", ...producer("p", 0, 0) }, "b");
    const e = await expectError(refused, "NOT_ENOUGH_REPLICAS", 503);
    expect(e.details).toMatchObject({ inSync: 2, minInsyncReplicas: 3 });
    await replica(t.topicId, follower).setFaults({});
    await until("3 in-sync replicas", async () => ((await status(t.topicId, leader.replica))?.inSyncReplicas === 3 ? true : undefined));
    expect((await post(path, { "content-type": "text/plain", ...producer("p", 0, 0) }, "b")).status).toBe(200);
    const same = await expectSameOnAll(t.topicId);
    expect(same.log.map((x) => x.value)).toEqual(["a", "b"]);
    expect(same.producers.map((p) => [p.producer_id, p.last_seq])).toEqual([["p", 0]]);
  });

  it("replicates a sliding TTL's last access: a read moves it on every replica", async () => {
    const path = randomTopic("rstouch");
    const t = await createStream(path, { "Stream-TTL": "60" }, "a");
    const created = await expectSameOnAll(t.topicId);
    const createdAt = created.stream[0]!.last_access_ms as number;
    // Written at most every min(1 s, TTL/10): a read more than 1 s later writes it (a Raft entry).
    await sleep(1_100);
    expect(await (await stream(path)).text()).toBe("a");
    await until("the touch applied everywhere", async () => {
      const all = await Promise.all(IDS.map((id) => dsState(t.topicId, id)));
      return all.every((x) => (x.stream[0]!.last_access_ms as number) > createdAt) ? true : undefined;
    });
    const touched = await expectSameOnAll(t.topicId);
    expect(touched.stream[0]!.last_access_ms as number).toBeGreaterThanOrEqual(createdAt + 1_100);
    expect(touched.log.map((x) => x.value)).toEqual(["a"]);
  });

  it("forks a replicated stream, and replicated forks: the reference is replicated, the fork reads its source at the source's leader (through a failover), deletes cascade", async () => {
    const source = randomTopic("rssrc");
    const t = await createStream(source, {}, "abc");
    expect((await post(source, { "content-type": "text/plain" }, "d")).status).toBe(204);
    const forkPath = randomTopic("rsfork");
    const created = await put(forkPath, { "content-type": "text/plain", "Stream-Forked-From": `/v1/stream/${source}`, "Stream-Fork-Offset": token(1) }, "x");
    expect(created.status, await created.clone().text()).toBe(201);
    const forkTopic = (await (await call(`/v1/topics/${created.headers.get("Edgelog-Topic")}`)).json()) as TopicDescription;
    expect(forkTopic.configs["replication.factor"]).toBe(1);
    expect(await (await stream(forkPath)).text()).toBe("abcx");
    const referenced = await expectSameOnAll(t.topicId);
    expect(referenced.stream).toMatchObject([{ ref_count: 1, soft_deleted: 0 }]);

    // A replicated fork, inside the source's first record (a byte sub-offset: its first bytes become the fork's first record).
    const replicatedFork = randomTopic("rsfork3");
    const f3 = await createStream(replicatedFork, { "Stream-Forked-From": `/v1/stream/${source}`, "Stream-Fork-Offset": token(0), "Stream-Fork-Sub-Offset": "2" });
    expect((await post(replicatedFork, { "content-type": "text/plain", ...producer("f", 0, 0) }, "y")).status).toBe(200);
    expect(await (await stream(replicatedFork)).text()).toBe("aby");
    const f3State = await expectSameOnAll(f3.topicId);
    expect(f3State.stream).toMatchObject([{ fork_source_path: source, fork_source_topic_id: t.topicId, fork_anchor: 0, fork_sub_offset: 2, fork_offset: 0, ref_count: 0 }]);
    expect(f3State.log.map((x) => [x.offset, x.value])).toEqual([
      [0, "ab"],
      [1, "y"],
    ]);
    expect((await expectSameOnAll(t.topicId)).stream).toMatchObject([{ ref_count: 2 }]);
    // Deleting the replicated fork destroys its replicas and releases its reference.
    expect((await stream(replicatedFork, { method: "DELETE" })).status).toBe(204);
    for (const id of IDS) await until(`${id} of the fork destroyed`, async () => ((await replica(f3.topicId, id).describe()).ok ? undefined : true));
    expect((await expectSameOnAll(t.topicId)).stream).toMatchObject([{ ref_count: 1 }]);

    // The source's leader crashes, r1 (the object a fork reaches first): the fork's reads of its
    // source learn from the topic's configs that it is replicated, and follow the new leader.
    await until("r1 leads the source", async () => {
      const l = await leaderOf(t.topicId);
      if (l.replica === "r1") return true;
      await replica(t.topicId, l.replica).transferLeadership("r1");
      return undefined;
    });
    const leader = await leaderOf(t.topicId);
    expect(leader.replica).toBe("r1");
    await replica(t.topicId, "r1").setFaults({ crashed: true });
    let read: Response;
    for (;;) {
      read = await stream(forkPath);
      if (read.status === 200) break;
      expect(await retriable(read), `fork read: ${read.status}`).toBe(true);
      await sleep(50);
    }
    expect(await read.text()).toBe("abcx");
    await replica(t.topicId, leader.replica).setFaults({});

    // Deleting the source keeps it for its fork (410 for it, on every replica); deleting the fork then deletes it.
    expect((await stream(source, { method: "DELETE" })).status).toBe(204);
    await expectError(await stream(source), "STREAM_GONE", 410);
    expect((await expectSameOnAll(t.topicId)).stream).toMatchObject([{ ref_count: 1, soft_deleted: 1 }]);
    expect(await (await stream(forkPath)).text()).toBe("abcx");
    expect((await stream(forkPath, { method: "DELETE" })).status).toBe(204);
    await until("the source's topic deleted with its last fork", async () => ((await call(`/v1/topics/${t.name}`)).status === 404 ? true : undefined));
    for (const id of IDS) await until(`${id} destroyed`, async () => ((await replica(t.topicId, id).describe()).ok ? undefined : true));
    await expectError(await stream(source), "STREAM_NOT_FOUND", 404);
  });
});
