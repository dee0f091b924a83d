/**
 * The SDK's GroupConsumer against an in-process coordinator: the consumer-group routes are
 * served by the pure coordinator core (src/groups/coordinator-core.ts, with the same request
 * validation as the gateway) and records by the SDK's fake server. Real timers, a 20 ms
 * heartbeat interval.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ProducerRecord } from "../../src/codec/index.ts";
import {
  type GroupState,
  type TopicsSnapshot,
  alterConfigs,
  commitOffsets,
  committedOffset,
  expire,
  heartbeat,
  leave,
  newGroup,
  resolvePosition,
} from "../../src/groups/coordinator-core.ts";
import { parseCommit, parseHeartbeat, parseLeave, parseOffsetFetch } from "../../src/groups/requests.ts";
import type { ErrorResult } from "../../src/protocol/errors.ts";
import type {
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
} from "../../src/protocol/groups.ts";
import { toWire } from "../../src/groups/assignment.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { EdgelogClientError } from "../../sdk/src/errors.ts";
import { GroupConsumer, type GroupsApi } from "../../sdk/src/group-consumer.ts";
import type { TopicPartition } from "../../sdk/src/consumer.ts";
import { FakeServer, text, utf8 } from "./sdk-fake-server.ts";

const T = "public/default/t";
const rec = (v: string): ProducerRecord => ({ key: null, value: utf8(v), headers: [], timestamp: 1000 });

/** GroupsApi served by the pure core, one group state per group id. */
class CoreGroups implements GroupsApi {
  readonly groups = new Map<string, GroupState>();
  readonly server: FakeServer;
  calls: string[] = [];
  /** Test hooks: awaited before an offset fetch is answered, and after a heartbeat is applied but before it is answered. */
  beforeFetchAnswer: (() => Promise<void>) | null = null;
  beforeHeartbeatAnswer: ((memberId: string) => Promise<void>) | null = null;

  constructor(server: FakeServer) {
    this.server = server;
  }

  topics(): TopicsSnapshot {
    const out: Record<string, { topicId: string; partitions: number }> = {};
    for (const [name, t] of this.server.topics) out[`public/default/${name}`] = { topicId: name, partitions: t.partitions.length };
    return out;
  }

  state(g: string): GroupState {
    let s = this.groups.get(g);
    if (s === undefined) this.groups.set(g, (s = alterConfigs(newGroup(g, Date.now()), { "heartbeat.interval.ms": 20 })));
    return s;
  }

  #ctx() {
    return { nowMs: Date.now(), topics: this.topics(), newMemberId: crypto.randomUUID() };
  }

  #result<T>(g: string, r: { ok: true; state: GroupState; value: T } | ErrorResult): T {
    if (!r.ok) throw new EdgelogClientError(r.code, r.message, { httpStatus: 409 });
    this.groups.set(g, r.state);
    return r.value;
  }

  async heartbeat(g: string, req: ConsumerGroupHeartbeatRequest): Promise<ConsumerGroupHeartbeatResponse> {
    this.calls.push("heartbeat");
    const v = this.#result(g, heartbeat(this.state(g), parseHeartbeat(JSON.parse(JSON.stringify(req))), this.#ctx()));
    await this.beforeHeartbeatAnswer?.(v.memberId);
    return { ...v, assignment: toWire(v.assignment) };
  }

  async leaveGroup(g: string, req: LeaveGroupRequest): Promise<LeaveGroupResponse> {
    this.calls.push("leave");
    return this.#result(g, leave(this.state(g), parseLeave(req), this.#ctx()));
  }

  async commitOffsets(g: string, req: OffsetCommitRequest): Promise<OffsetCommitResponse> {
    this.calls.push("commit");
    const input = parseCommit(req);
    this.#result(g, commitOffsets(this.state(g), input, this.#ctx()));
    return { offsets: input.offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset })) };
  }

  async fetchOffsets(g: string, req: OffsetFetchRequest): Promise<OffsetFetchResponse> {
    await this.beforeFetchAnswer?.();
    const input = parseOffsetFetch(req);
    const topics = this.topics();
    const s = this.state(g);
    const partitions = (input.topics ?? []).flatMap(({ topic, partitions }) =>
      (partitions ?? []).map((partition) => {
        const log = this.server.log(topic, partition);
        return resolvePosition(topic, partition, committedOffset(s, topic, partition, topics), { logStartOffset: log.logStartOffset, logEndOffset: log.logEndOffset }, input.autoOffsetReset);
      }),
    );
    return { groupId: g, partitions };
  }

  committed(g: string, partition: number): number | undefined {
    return this.groups.get(g)?.offsets[`${T}\u0000${partition}`]?.offset;
  }
}

const consumers: GroupConsumer[] = [];

function setup(partitions: number, perPartition: number) {
  const server = new FakeServer();
  server.addTopic("t", partitions);
  for (let p = 0; p < partitions; p++)
    server.append(
      "t",
      p,
      Array.from({ length: perPartition }, (_, i) => rec(`p${p}-${i}`)),
    );
  const api = new CoreGroups(server);
  const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
  const make = (options: Partial<ConstructorParameters<typeof GroupConsumer>[1]> = {}) => {
    const c = new GroupConsumer(client, { groupId: "g", maxWaitMs: 20, retryBackoffMs: 5, ...options }, api);
    consumers.push(c);
    return c;
  };
  return { server, api, make };
}

async function until(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.disconnect()));
});

describe("GroupConsumer", () => {
  it("eachBatch that stops early on isStale() after pause(): the unprocessed rest is redelivered on resume, not auto-resolved", async () => {
    const { api, make } = setup(1, 10);
    const processed: number[] = [];
    let paused = false;
    let resumeFn: (() => void) | undefined;
    const c = make();
    await c.subscribe({ topic: "t", fromBeginning: true });
    await c.run({
      eachBatch: async ({ batch, isStale, pause }) => {
        for (const m of batch.messages) {
          if (isStale()) return; // stop early, resolving nothing more
          processed.push(m.offset);
          if (!paused && m.offset === 2) {
            paused = true;
            resumeFn = pause();
          }
        }
      },
    });
    await until(() => resumeFn !== undefined);
    await new Promise((r) => setTimeout(r, 50));
    // Only 0..2 were processed; nothing past them may count as processed or be committed.
    expect(processed).toEqual([0, 1, 2]);
    await c.commitOffsets();
    expect(api.committed("g", 0) ?? 0).toBeLessThanOrEqual(3);
    resumeFn!();
    await until(() => processed.includes(9));
    // 3..9 were delivered after the resume (0..2 may be delivered again: at-least-once).
    for (let o = 3; o < 10; o++) expect(processed.filter((x) => x === o).length, `offset ${o}`).toBeGreaterThanOrEqual(1);
  });

  it("two members split a topic, every record once; disconnect commits; a restart resumes with nothing redelivered", async () => {
    const { api, make } = setup(4, 5);
    const seen: string[] = [];
    const a = make({ clientId: "a" });
    const b = make({ clientId: "b" });
    for (const c of [a, b]) {
      await c.subscribe({ topic: "t", fromBeginning: true });
      await c.run({ eachMessage: async ({ message }) => void seen.push(text(message.value) as string) });
    }
    await until(() => seen.length >= 20);
    await until(() => a.assignment().length === 2 && b.assignment().length === 2);
    expect([...a.assignment(), ...b.assignment()].map((tp) => tp.partition).sort()).toEqual([0, 1, 2, 3]);
    expect(a.assignment()[0]?.topic).toBe("t"); // short names for public/default
    await a.disconnect();
    await b.disconnect();
    expect(seen.sort()).toEqual(
      Array.from({ length: 4 }, (_, p) => Array.from({ length: 5 }, (_, i) => `p${p}-${i}`))
        .flat()
        .sort(),
    );
    for (let p = 0; p < 4; p++) expect(api.committed("g", p)).toBe(5);
    expect(Object.keys(api.groups.get("g")?.members ?? {})).toEqual([]);

    const again: string[] = [];
    const c = make();
    await c.subscribe({ topics: ["t"] });
    await c.run({ eachMessage: async ({ message }) => void again.push(text(message.value) as string) });
    await until(() => c.assignment().length === 4);
    await new Promise((r) => setTimeout(r, 100));
    expect(again).toEqual([]);
  });

  it("a graceful rebalance commits before releasing: the new owner starts at the committed offset, no duplicates", async () => {
    const { api, make } = setup(2, 50);
    const byMember = new Map<string, string[]>();
    const revoked: TopicPartition[][] = [];
    const a = make();
    a.on("revoked", async (tps) => {
      revoked.push(tps);
    });
    await a.subscribe({ topic: "t", fromBeginning: true });
    let slow = true;
    await a.run({
      eachMessage: async ({ message }) => {
        byMember.set("a", [...(byMember.get("a") ?? []), `${message.partition}:${message.offset}`]);
        if (slow) await new Promise((r) => setTimeout(r, 2));
      },
    });
    await until(() => (byMember.get("a")?.length ?? 0) >= 10);
    const b = make();
    await b.subscribe({ topic: "t", fromBeginning: true });
    await b.run({
      eachMessage: async ({ message }) => void byMember.set("b", [...(byMember.get("b") ?? []), `${message.partition}:${message.offset}`]),
    });
    await until(() => revoked.length === 1);
    slow = false;
    const moved = revoked[0]?.[0]?.partition as number;
    const committedAtRevoke = api.committed("g", moved) as number;
    await until(() => (byMember.get("a")?.length ?? 0) + (byMember.get("b")?.length ?? 0) >= 100);
    const all = [...(byMember.get("a") ?? []), ...(byMember.get("b") ?? [])];
    expect(new Set(all).size).toBe(all.length); // no duplicates
    expect(all.length).toBe(100);
    const bOnMoved = (byMember.get("b") ?? []).filter((k) => k.startsWith(`${moved}:`)).map((k) => Number(k.split(":")[1]));
    expect(bOnMoved[0]).toBe(committedAtRevoke);
    expect((byMember.get("a") ?? []).filter((k) => k.startsWith(`${moved}:`))).toHaveLength(committedAtRevoke);
  });

  it("a member removed by the coordinator sees its partitions lost, rejoins and continues from the last commit", async () => {
    const { api, make } = setup(1, 10);
    const lost: TopicPartition[][] = [];
    const got: number[] = [];
    const a = make({ sessionTimeoutMs: 200 });
    a.on("lost", (tps) => void lost.push(tps));
    await a.subscribe({ topic: "t", fromBeginning: true });
    await a.run({ autoCommit: false, eachMessage: async ({ message }) => void got.push(message.offset) });
    await until(() => got.length === 10);
    await a.commitOffsets([{ topic: "t", partition: 0, offset: 4 }]);
    expect(api.committed("g", 0)).toBe(4);
    // The coordinator expires the member (as its alarm would after a missed session).
    const s = api.groups.get("g") as GroupState;
    api.groups.set("g", expire(s, { nowMs: Date.now() + 10_000, topics: api.topics() }).state);
    await until(() => lost.length === 1);
    expect(lost[0]).toEqual([{ topic: "t", partition: 0 }]);
    await until(() => got.length === 16);
    expect(got.slice(10)).toEqual([4, 5, 6, 7, 8, 9]); // redelivered from the commit: at-least-once
  });

  it("pause, resume and seek; eachBatch with resolveOffset; a failing handler is retried", async () => {
    const { server, api, make } = setup(1, 5);
    const batches: number[][] = [];
    let failOnce = true;
    const a = make();
    await a.subscribe({ topic: "t", fromBeginning: true });
    await a.run({
      eachBatchAutoResolve: false,
      autoCommitIntervalMs: 20,
      eachBatch: async ({ batch, resolveOffset }) => {
        batches.push(batch.messages.map((m) => m.offset));
        for (const m of batch.messages) {
          if (m.offset === 3 && failOnce) {
            failOnce = false;
            throw new Error("boom");
          }
          resolveOffset(m.offset);
        }
      },
    });
    a.on("error", () => {});
    await until(() => batches.length >= 2);
    expect(batches[0]).toEqual([0, 1, 2, 3, 4]);
    expect(batches[1]).toEqual([3, 4]); // retried from the failed offset
    await until(() => api.committed("g", 0) === 5);

    a.pause([{ topic: "t" }]);
    expect(a.paused()).toEqual([{ topic: "t", partition: 0 }]);
    server.append("t", 0, [rec("x5"), rec("x6")]);
    await new Promise((r) => setTimeout(r, 80));
    expect(batches).toHaveLength(2);
    a.resume([{ topic: "t" }]);
    await until(() => batches.length === 3);
    expect(batches[2]).toEqual([5, 6]);
    a.seek({ topic: "t", partition: 0, offset: 1 });
    await until(() => batches.length === 4);
    expect(batches[3]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(() => a.seek({ topic: "other", partition: 0, offset: 0 })).toThrow(/not assigned/);
  });
});

describe("GroupConsumer: the message in progress when a partition is revoked (issue 4)", () => {
  it("is committed before the partition is released: the new owner starts right after it, no duplicate", async () => {
    const { api, make } = setup(2, 5);
    const seen: { a: string[]; b: string[] } = { a: [], b: [] };
    let inFlight = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Member ids fix the sticky assignor's choice: b takes the highest partition, 1, from a.
    const a = make({ memberId: "a" });
    await a.subscribe({ topic: "t", fromBeginning: true });
    await a.run({
      eachMessage: async ({ partition, message }) => {
        if (partition === 1 && message.offset === 2) {
          inFlight = true;
          await gate; // still being processed when the revocation arrives
        }
        seen.a.push(`${partition}:${message.offset}`);
      },
    });
    await until(() => inFlight);
    const b = make({ memberId: "b" });
    await b.subscribe({ topic: "t", fromBeginning: true });
    await b.run({ eachMessage: async ({ partition, message }) => void seen.b.push(`${partition}:${message.offset}`) });
    // a's heartbeat was answered without partition 1 (the SDK starts revoking it at once).
    const pending = () => api.groups.get("g")?.members["a"]?.pendingRevocation ?? {};
    await until(() => Object.values(pending()).some((ps) => ps.includes(1)));
    await new Promise((r) => setTimeout(r, 50));
    expect(seen.a).not.toContain("1:2");
    release();
    await until(() => seen.a.length + seen.b.length >= 10);
    await new Promise((r) => setTimeout(r, 50));
    expect(seen.a).toContain("1:2");
    const all = [...seen.a, ...seen.b];
    expect(
      all.filter((k, i) => all.indexOf(k) !== i),
      "duplicates",
    ).toEqual([]);
    expect(seen.b.filter((k) => k.startsWith("1:"))[0]).toBe("1:3");
    expect(all.sort()).toEqual(["0:0", "0:1", "0:2", "0:3", "0:4", "1:0", "1:1", "1:2", "1:3", "1:4"]);
  });
});

describe("GroupConsumer: a partition revoked while its offsets are being fetched (issue 4)", () => {
  it("is not consumed by two members when the revoking heartbeat is answered after the offsets", async () => {
    const { api, make } = setup(2, 5);
    const seen: { a: string[]; b: string[] } = { a: [], b: [] };
    // a's first offset fetch (for partitions 0 and 1) is answered only when the test says so.
    let fetching = false;
    let answerFetch!: () => void;
    const fetchGate = new Promise<void>((r) => (answerFetch = r));
    api.beforeFetchAnswer = async () => {
      api.beforeFetchAnswer = null;
      fetching = true;
      await fetchGate;
    };
    const a = make({ memberId: "a" });
    a.on("error", () => {});
    await a.subscribe({ topic: "t", fromBeginning: true });
    await a.run({ eachMessage: async ({ partition, message }) => void seen.a.push(`${partition}:${message.offset}`) });
    await until(() => fetching);
    // b joins: the target moves partition 1 to b. a's heartbeats are applied at once but
    // answered late (after a's offset fetch), like HTTP calls overtaking each other.
    let answerHeartbeats!: () => void;
    const heartbeatGate = new Promise<void>((r) => (answerHeartbeats = r));
    api.beforeHeartbeatAnswer = (memberId) => (memberId === "a" ? heartbeatGate : Promise.resolve());
    const b = make({ memberId: "b" });
    await b.subscribe({ topic: "t", fromBeginning: true });
    await b.run({ eachMessage: async ({ partition, message }) => void seen.b.push(`${partition}:${message.offset}`) });
    await until(() => api.groups.get("g")?.members["b"] !== undefined);
    await new Promise((r) => setTimeout(r, 150)); // heartbeats of both (20 ms interval)
    answerFetch();
    await new Promise((r) => setTimeout(r, 150)); // a's offsets are in
    api.beforeHeartbeatAnswer = null;
    answerHeartbeats();
    await until(() => new Set([...seen.a, ...seen.b]).size === 10);
    await new Promise((r) => setTimeout(r, 100));
    const all = [...seen.a, ...seen.b];
    expect(
      all.filter((k, i) => all.indexOf(k) !== i),
      "duplicates",
    ).toEqual([]);
    expect(seen.b.filter((k) => k.startsWith("0:"))).toEqual([]);
  });
});
