/**
 * Consumer groups through the real gateway (SELF.fetch) and the real Durable Objects:
 * membership and rebalancing, fencing, committed offsets and lag, session expiry on the
 * coordinator's alarm, static membership, topic changes, and the admin routes.
 */
import { env, evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import type { ConsumerGroupHeartbeatResponse, GroupDescription, ListGroupsResponse, OffsetFetchResponse, ResetOffsetsResponse, TopicPartitions } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, fetchJson, json, produce, randomTopic } from "./helpers.ts";

function randomGroup(): string {
  return `g-${crypto.randomUUID()}`;
}

function full(topic: string): string {
  return `public/default/${topic}`;
}

/** A member driven over HTTP the way the SDK drives it: it adopts each answered assignment at once. */
class Member {
  memberId: string | null = null;
  epoch = 0;
  owned: TopicPartitions[] = [];
  readonly group: string;
  readonly body: Record<string, unknown>;

  constructor(group: string, body: Record<string, unknown>) {
    this.group = group;
    this.body = body;
  }

  async heartbeat(): Promise<ConsumerGroupHeartbeatResponse> {
    const joining = this.epoch === 0;
    const res = await json("POST", `/v1/groups/${this.group}/heartbeat`, {
      ...(joining ? this.body : {}),
      memberId: this.memberId,
      memberEpoch: this.epoch,
      ownedPartitions: this.owned,
      ...(this.body.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: this.body.sessionTimeoutMs } : {}),
    });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const r = JSON.parse(text) as ConsumerGroupHeartbeatResponse;
    this.memberId = r.memberId;
    this.epoch = r.memberEpoch;
    this.owned = r.assignment;
    return r;
  }

  partitions(): number[] {
    return this.owned.flatMap((tp) => tp.partitions);
  }
}

async function describeGroup(group: string): Promise<GroupDescription> {
  const res = await call(`/v1/groups/${group}`);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as GroupDescription;
}

/** Heartbeats every member in turn until the group is Stable. */
async function settle(group: string, members: Member[], maxRounds = 10): Promise<void> {
  for (let i = 0; i < maxRounds; i++) {
    for (const m of members) await m.heartbeat();
    if ((await describeGroup(group)).state === "Stable") return;
  }
  throw new Error(`group ${group} not Stable after ${maxRounds} rounds`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

suite("consumer groups: membership and rebalancing", () => {
  it("4 partitions, A B C, then D joins mid-rebalance: each owns exactly one, no overlap, no gap; an old-epoch commit is rejected", async () => {
    const topic = randomTopic();
    await createTopic(topic, 4);
    const group = randomGroup();
    const sub = { subscribedTopicNames: [topic] };
    const [a, b, c, d] = [0, 1, 2, 3].map(() => new Member(group, sub)) as [Member, Member, Member, Member];
    await a.heartbeat();
    expect(a.owned).toEqual([{ topic: full(topic), partitions: [0, 1, 2, 3] }]);
    await b.heartbeat();
    await c.heartbeat();
    await a.heartbeat(); // A starts revoking; B and C wait for partitions
    expect((await describeGroup(group)).state).toBe("Reconciling");
    const oldEpoch = a.epoch;
    await d.heartbeat(); // D joins mid-rebalance
    await settle(group, [a, b, c, d]);

    const owned = [a, b, c, d].map((m) => m.partitions());
    for (const p of owned) expect(p).toHaveLength(1);
    expect(owned.flat().sort()).toEqual([0, 1, 2, 3]);
    const desc = await describeGroup(group);
    expect(desc.state).toBe("Stable");
    expect(desc.assignor).toBe("cooperative-sticky");
    expect(desc.members.map((m) => m.assignment[0]?.partitions[0]).sort()).toEqual([0, 1, 2, 3]);
    expect(a.epoch).toBeGreaterThan(oldEpoch);

    const mine = a.partitions()[0] as number;
    const stale = await json("POST", `/v1/groups/${group}/offsets`, {
      memberId: a.memberId,
      memberEpoch: oldEpoch,
      offsets: [{ topic, partition: mine, offset: 1 }],
    });
    await expectError(stale, "STALE_MEMBER_EPOCH", 409);
    const notMine = b.partitions()[0] as number;
    const foreign = await json("POST", `/v1/groups/${group}/offsets`, { memberId: a.memberId, memberEpoch: a.epoch, offsets: [{ topic, partition: notMine, offset: 1 }] });
    await expectError(foreign, "UNASSIGNED_PARTITION", 409);
    const ok = await json("POST", `/v1/groups/${group}/offsets`, { memberId: a.memberId, memberEpoch: a.epoch, offsets: [{ topic, partition: mine, offset: 0 }] });
    expect(ok.status).toBe(200);
  });

  it("eager assignors revoke everything first and still converge (range)", async () => {
    const topic = randomTopic();
    await createTopic(topic, 4);
    const group = randomGroup();
    const a = new Member(group, { subscribedTopicNames: [topic], assignor: "range" });
    const b = new Member(group, { subscribedTopicNames: [topic], assignor: "range" });
    await a.heartbeat();
    await b.heartbeat();
    const r = await a.heartbeat();
    expect(r.assignment).toEqual([]);
    expect(r.state).toBe("unrevoked_partitions");
    await settle(group, [a, b]);
    // Range deals consecutive ranges in member-id order.
    const [first, second] = [a, b].sort((x, y) => ((x.memberId as string) < (y.memberId as string) ? -1 : 1)) as [Member, Member];
    expect(first.partitions()).toEqual([0, 1]);
    expect(second.partitions()).toEqual([2, 3]);
    const other = await json("POST", `/v1/groups/${group}/heartbeat`, { memberEpoch: 0, subscribedTopicNames: [topic], assignor: "roundrobin" });
    await expectError(other, "INCONSISTENT_GROUP_PROTOCOL", 409);
  });

  it("fences unknown members and wrong epochs with clear codes", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1);
    const group = randomGroup();
    const a = new Member(group, { subscribedTopicNames: [topic] });
    await a.heartbeat();
    await expectError(await json("POST", `/v1/groups/${group}/heartbeat`, { memberId: "nobody", memberEpoch: 1 }), "UNKNOWN_MEMBER_ID", 409);
    await expectError(await json("POST", `/v1/groups/${group}/heartbeat`, { memberId: a.memberId, memberEpoch: a.epoch + 1 }), "FENCED_MEMBER_EPOCH", 409);
    await expectError(await json("POST", `/v1/groups/${group}/leave`, { memberId: a.memberId, memberEpoch: a.epoch + 1 }), "FENCED_MEMBER_EPOCH", 409);
    await expectError(await json("POST", `/v1/groups/${group}/leave`, { memberId: "nobody", memberEpoch: 1 }), "UNKNOWN_MEMBER_ID", 409);
    await expectError(await json("POST", `/v1/groups/${group}/offsets`, { memberId: "nobody", memberEpoch: 1, offsets: [{ topic, partition: 0, offset: 0 }] }), "UNKNOWN_MEMBER_ID", 409);
    await expectError(await json("POST", `/v1/groups/${group}/offsets`, { offsets: [{ topic, partition: 0, offset: 0 }] }), "UNKNOWN_MEMBER_ID", 409);
    const left = await json("POST", `/v1/groups/${group}/leave`, { memberId: a.memberId, memberEpoch: a.epoch });
    expect(await left.json()).toEqual({ memberId: a.memberId, memberEpoch: -1 });
    await expectError(await json("POST", `/v1/groups/${group}/heartbeat`, { memberId: a.memberId, memberEpoch: a.epoch }), "UNKNOWN_MEMBER_ID", 409);
  });

  it("validates requests", async () => {
    await expectError(await json("POST", "/v1/groups/bad%20id/heartbeat", { memberEpoch: 0, subscribedTopicNames: ["x"] }), "INVALID_GROUP_ID", 400);
    const g = randomGroup();
    await expectError(await json("POST", `/v1/groups/${g}/heartbeat`, { memberEpoch: 0, subscribedTopicNames: ["x"], assignor: "magic" }), "UNSUPPORTED_ASSIGNOR", 400);
    await expectError(await json("POST", `/v1/groups/${g}/heartbeat`, { memberEpoch: 0, subscribedTopicRegex: "(" }), "INVALID_REGULAR_EXPRESSION", 400);
    await expectError(await json("POST", `/v1/groups/${g}/heartbeat`, { memberEpoch: 0, subscribedTopicNames: ["x"], sessionTimeoutMs: 5 }), "INVALID_SESSION_TIMEOUT", 400);
    await expectError(await json("POST", `/v1/groups/${g}/heartbeat`, { memberEpoch: -1 }), "INVALID_REQUEST", 400);
    await expectError(await json("POST", `/v1/groups/${g}/offsets`, { offsets: [{ topic: "x", partition: 0, offset: -1 }] }), "INVALID_OFFSET", 400);
    await expectError(await json("POST", `/v1/groups/${g}/offsets`, { offsets: [{ topic: "x", partition: 0, offset: 1, metadata: "m".repeat(4097) }] }), "OFFSET_METADATA_TOO_LARGE", 400);
    await expectError(await call(`/v1/groups/${g}`), "GROUP_ID_NOT_FOUND", 404);
  });
});

suite("consumer groups: offsets", () => {
  it("after consuming offsets 0..2 and committing, a restarted member resumes with nothing redelivered and lag 0", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1);
    await produce(`/v1/topics/${topic}/records`, { records: [{ value: "a" }, { value: "b" }, { value: "c" }] });
    const group = randomGroup();
    const first = new Member(group, { subscribedTopicNames: [topic] });
    await first.heartbeat();
    expect(first.partitions()).toEqual([0]);

    const pos = (await (await json("POST", `/v1/groups/${group}/offsets/fetch`, { topics: [{ topic, partitions: [0] }], autoOffsetReset: "earliest" })).json()) as OffsetFetchResponse;
    expect(pos.partitions).toEqual([{ topic: full(topic), partition: 0, offset: 0, committedOffset: null, metadata: null, reset: "earliest", logStartOffset: 0, logEndOffset: 3 }]);
    const fetched = await fetchJson(topic, 0, "offset=0");
    expect(fetched.records.map((r) => r.value)).toEqual(["a", "b", "c"]);
    const commit = await json("POST", `/v1/groups/${group}/offsets`, {
      memberId: first.memberId,
      memberEpoch: first.epoch,
      offsets: [{ topic, partition: 0, offset: fetched.nextOffset, metadata: "worker-1" }],
    });
    expect(commit.status).toBe(200);
    expect(await commit.json()).toEqual({ offsets: [{ topic: full(topic), partition: 0, offset: 3 }] });
    expect((await json("POST", `/v1/groups/${group}/leave`, { memberId: first.memberId, memberEpoch: first.epoch })).status).toBe(200);

    // Survives the coordinator being evicted (state reloaded from SQLite).
    await evictDurableObject(env.GROUP_COORDINATOR.getByName(group));

    const restarted = new Member(group, { subscribedTopicNames: [topic] });
    await restarted.heartbeat();
    expect(restarted.partitions()).toEqual([0]);
    const resumed = (await (await json("POST", `/v1/groups/${group}/offsets/fetch`, { topics: [{ topic }], autoOffsetReset: "earliest" })).json()) as OffsetFetchResponse;
    expect(resumed.partitions).toEqual([{ topic: full(topic), partition: 0, offset: 3, committedOffset: 3, metadata: "worker-1", logStartOffset: 0, logEndOffset: 3 }]);
    expect((await fetchJson(topic, 0, "offset=3")).records).toEqual([]);
    const desc = await describeGroup(group);
    expect(desc.offsets).toEqual([{ topic: full(topic), partition: 0, committedOffset: 3, metadata: "worker-1", memberId: restarted.memberId, logStartOffset: 0, logEndOffset: 3, lag: 0 }]);
    expect(desc.totalLag).toBe(0);
  });

  it("auto.offset.reset: latest resumes at the log end, none surfaces OFFSET_OUT_OF_RANGE", async () => {
    const topic = randomTopic();
    await createTopic(topic, 2);
    await produce(`/v1/topics/${topic}/records`, {
      records: [
        { value: "x", partition: 1 },
        { value: "y", partition: 1 },
      ],
    });
    const group = randomGroup();
    const latest = (await (await call(`/v1/groups/${group}/offsets?topic=${topic}&autoOffsetReset=latest`)).json()) as OffsetFetchResponse;
    expect(latest.partitions.map((p) => [p.partition, p.offset, p.reset])).toEqual([
      [0, 0, "latest"],
      [1, 2, "latest"],
    ]);
    const none = (await (await call(`/v1/groups/${group}/offsets?topic=${topic}&autoOffsetReset=none`)).json()) as OffsetFetchResponse;
    expect(none.partitions.map((p) => [p.partition, p.offset, p.error?.code])).toEqual([
      [0, null, "OFFSET_OUT_OF_RANGE"],
      [1, null, "OFFSET_OUT_OF_RANGE"],
    ]);
    // A committed offset beyond the log end is out of range too.
    expect((await json("POST", `/v1/groups/${group}/offsets`, { offsets: [{ topic, partition: 1, offset: 9 }] })).status).toBe(200);
    const out = (await (await json("POST", `/v1/groups/${group}/offsets/fetch`, { topics: [{ topic, partitions: [1] }], autoOffsetReset: "none" })).json()) as OffsetFetchResponse;
    expect(out.partitions[0]).toMatchObject({ offset: null, committedOffset: 9, error: { code: "OFFSET_OUT_OF_RANGE" } });
    const early = (await (await json("POST", `/v1/groups/${group}/offsets/fetch`, { topics: [{ topic, partitions: [1] }], autoOffsetReset: "earliest" })).json()) as OffsetFetchResponse;
    expect(early.partitions[0]).toMatchObject({ offset: 0, committedOffset: 9, reset: "earliest" });
  });

  it("admin: list, describe with lag, reset-offsets only while empty, delete", async () => {
    const topic = randomTopic();
    await createTopic(topic, 2);
    const t0 = Date.now();
    await produce(`/v1/topics/${topic}/records`, { records: [0, 1, 2, 3, 4].map((i) => ({ value: `v${i}`, partition: 0, timestamp: t0 + i * 1000 })) });
    const group = randomGroup();
    const m = new Member(group, { subscribedTopicNames: [topic], clientId: "cli-1" });
    await m.heartbeat();
    await json("POST", `/v1/groups/${group}/offsets`, { memberId: m.memberId, memberEpoch: m.epoch, offsets: [{ topic, partition: 0, offset: 2 }] });

    const listed = (await (await call("/v1/groups")).json()) as ListGroupsResponse;
    expect(listed.groups.find((g) => g.groupId === group)).toEqual({ groupId: group, state: "Stable", assignor: "cooperative-sticky", members: 1 });

    const d = await describeGroup(group);
    expect(d.members).toHaveLength(1);
    expect(d.members[0]).toMatchObject({ memberId: m.memberId, clientId: "cli-1", assignment: [{ topic: full(topic), partitions: [0, 1] }] });
    expect(d.offsets.map((o) => [o.partition, o.committedOffset, o.logEndOffset, o.lag])).toEqual([
      [0, 2, 5, 3],
      [1, null, 0, null],
    ]);
    expect(d.totalLag).toBe(3);

    const reset = (spec: unknown, dryRun = false) => json("POST", `/v1/groups/${group}/reset-offsets`, { topics: [{ topic, partitions: [0] }], spec, dryRun });
    await expectError(await reset({ to: "earliest" }), "NON_EMPTY_GROUP", 409);
    await expectError(await call(`/v1/groups/${group}`, { method: "DELETE" }), "NON_EMPTY_GROUP", 409);
    await json("POST", `/v1/groups/${group}/leave`, { memberId: m.memberId, memberEpoch: m.epoch });

    const offsetOf = async (r: Response) => ((await r.json()) as ResetOffsetsResponse).offsets[0]?.offset;
    expect(await offsetOf(await reset({ to: "latest" }, true))).toBe(5);
    expect((await describeGroup(group)).offsets[0]?.committedOffset).toBe(2); // dry run wrote nothing
    expect(await offsetOf(await reset({ to: "latest" }))).toBe(5);
    expect(await offsetOf(await reset({ to: "earliest" }))).toBe(0);
    expect(await offsetOf(await reset({ to: "timestamp", timestamp: t0 + 2500 }))).toBe(3);
    expect(await offsetOf(await reset({ to: "offset", offset: 4 }))).toBe(4);
    expect(await offsetOf(await reset({ to: "offset", offset: 99 }))).toBe(5); // clamped to the log end
    const after = await describeGroup(group);
    expect(after.state).toBe("Empty");
    expect(after.offsets[0]).toMatchObject({ committedOffset: 5, lag: 0 });

    expect((await call(`/v1/groups/${group}`, { method: "DELETE" })).status).toBe(204);
    await expectError(await call(`/v1/groups/${group}`), "GROUP_ID_NOT_FOUND", 404);
    await expectError(await call(`/v1/groups/${group}`, { method: "DELETE" }), "GROUP_ID_NOT_FOUND", 404);
    // The directory learns of the deletion in the background.
    for (let i = 0; i < 50; i++) {
      const groups = ((await (await call("/v1/groups")).json()) as ListGroupsResponse).groups;
      if (!groups.some((g) => g.groupId === group)) return;
      await sleep(20);
    }
    throw new Error("deleted group still listed");
  });

  it("offsets of an empty group expire after offsets.retention.ms", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1);
    const group = randomGroup();
    const patched = await json("PATCH", `/v1/groups/${group}`, { configs: { "offsets.retention.ms": 1000 } });
    expect(patched.status).toBe(200);
    expect(await json("POST", `/v1/groups/${group}/offsets`, { offsets: [{ topic, partition: 0, offset: 0 }] })).toHaveProperty("status", 200);
    expect((await describeGroup(group)).offsets[0]?.committedOffset).toBe(0);
    await sleep(1100);
    // The alarm may already have fired on its own; if not, run it now.
    await runDurableObjectAlarm(env.GROUP_COORDINATOR.getByName(group));
    await expectError(await call(`/v1/groups/${group}`), "GROUP_ID_NOT_FOUND", 404);
  });
});

suite("consumer groups: session expiry, static membership, topic changes", () => {
  it("a member that stops heartbeating loses its partitions after its session timeout; the others pick them up", async () => {
    const topic = randomTopic();
    await createTopic(topic, 4);
    const group = randomGroup();
    const a = new Member(group, { subscribedTopicNames: [topic], sessionTimeoutMs: 800 });
    const b = new Member(group, { subscribedTopicNames: [topic], sessionTimeoutMs: 800 });
    await a.heartbeat();
    await b.heartbeat();
    await settle(group, [a, b]);
    expect(b.partitions()).toHaveLength(2);
    // B stops. A keeps heartbeating within its own session timeout.
    const stub = env.GROUP_COORDINATOR.getByName(group);
    for (let i = 0; i < 4; i++) {
      await sleep(250);
      await a.heartbeat();
      await runDurableObjectAlarm(stub);
    }
    const d = await describeGroup(group);
    expect(d.members.map((m) => m.memberId)).toEqual([a.memberId]);
    await a.heartbeat();
    expect(a.partitions()).toEqual([0, 1, 2, 3]);
    expect((await describeGroup(group)).state).toBe("Stable");
  });

  it("static membership survives a quick restart (graceful or crash) without moving partitions", async () => {
    const topic = randomTopic();
    await createTopic(topic, 6);
    const group = randomGroup();
    const mk = (instanceId: string) => new Member(group, { subscribedTopicNames: [topic], instanceId, sessionTimeoutMs: 10_000 });
    const [a, b, c] = [mk("inst-a"), mk("inst-b"), mk("inst-c")];
    for (const m of [a, b, c]) await m.heartbeat();
    await settle(group, [a, b, c]);
    const before = await describeGroup(group);
    const owned = { a: a.partitions(), b: b.partitions(), c: c.partitions() };

    // Graceful: leave temporarily (epoch -2), restart with the same instance id.
    const left = await json("POST", `/v1/groups/${group}/leave`, { memberId: b.memberId, memberEpoch: b.epoch, temporary: true });
    expect(await left.json()).toEqual({ memberId: b.memberId, memberEpoch: -2 });
    const b2 = mk("inst-b");
    await b2.heartbeat();
    expect(b2.partitions()).toEqual(owned.b);
    // Crash: no leave at all.
    const c2 = mk("inst-c");
    await c2.heartbeat();
    expect(c2.partitions()).toEqual(owned.c);
    await a.heartbeat();
    expect(a.partitions()).toEqual(owned.a);

    const after = await describeGroup(group);
    expect(after.state).toBe("Stable");
    expect(after.groupEpoch).toBe(before.groupEpoch);
    expect(after.members.map((m) => m.instanceId).sort()).toEqual(["inst-a", "inst-b", "inst-c"]);
    await expectError(await json("POST", `/v1/groups/${group}/heartbeat`, { memberId: c.memberId, memberEpoch: c.epoch }), "UNKNOWN_MEMBER_ID", 409);
  });

  it("more partitions and a new topic matching the regex trigger a new assignment", async () => {
    const prefix = `rx${crypto.randomUUID().slice(0, 8)}`;
    await createTopic(`${prefix}-a`, 1);
    const group = randomGroup();
    const m = new Member(group, { subscribedTopicRegex: `${prefix}-.*` });
    await m.heartbeat();
    expect(m.owned).toEqual([{ topic: full(`${prefix}-a`), partitions: [0] }]);
    expect((await json("PATCH", `/v1/topics/${prefix}-a`, { partitions: 2 })).status).toBe(200);
    await createTopic(`${prefix}-b`, 1);
    await sleep(1100); // the coordinator's topic list lives TOPICS_SNAPSHOT_TTL_MS
    await m.heartbeat();
    expect(m.owned).toEqual([
      { topic: full(`${prefix}-a`), partitions: [0, 1] },
      { topic: full(`${prefix}-b`), partitions: [0] },
    ]);
    expect((await call(`/v1/topics/${prefix}-b`, { method: "DELETE" })).status).toBe(204);
    await sleep(1100);
    await m.heartbeat();
    expect(m.owned).toEqual([{ topic: full(`${prefix}-a`), partitions: [0, 1] }]);
  });
});
