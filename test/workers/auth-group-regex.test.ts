/**
 * A consumer group member's `subscribedTopicRegex` resolves only against the topics its
 * principal may describe (KIP-848; docs/SECURITY.md "The route table"), through the real
 * gateway with auth on and the real coordinator: the heartbeat answers and the group
 * description never name a topic the member cannot describe, a topic created later joins
 * only if describable, an ACL grant or revocation re-resolves it, and a superuser's regex sees all.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env.ts";
import type { ConsumerGroupHeartbeatResponse, GroupDescription, TopicPartitions } from "../../src/protocol/groups.ts";
import { authEnv, ensureNamespace, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

let e: Env;
let admin: string;
const id = crypto.randomUUID().slice(0, 8);
const ns = `qa-rx-${id}/ns`;
const mine = (n: string) => `${ns}/mine-${n}`;
const secret = (n: string) => `${ns}/secret-${n}`;
/** Matches both families: the coordinator, not the pattern, must keep the secret ones out. */
const REGEX = `${ns}/(mine|secret)-.*`;
/** What no answer to carol may contain (the regex itself, shown in describe, does not). */
const SECRET_PREFIX = `${ns}/secret-`;

/** Pauses between polling heartbeats (the coordinator re-reads topics after 1 s, ACLs after 5 s). */
const POLL_MS = 250;
/** Most polling rounds before a test gives up (not a timing check: a bound on a loop). */
const MAX_POLLS = 120;

/** A member driven over HTTP as the SDK drives it: it adopts each answered assignment at once. */
class Member {
  memberId: string | null = null;
  epoch = 0;
  owned: TopicPartitions[] = [];
  /** Every heartbeat answer's text, to check none ever named a secret topic. */
  readonly answers: string[] = [];
  readonly group: string;
  readonly token: string;

  constructor(group: string, token: string) {
    this.group = group;
    this.token = token;
  }

  async heartbeat(): Promise<ConsumerGroupHeartbeatResponse> {
    const joining = this.epoch === 0;
    const body = { ...(joining ? { subscribedTopicRegex: REGEX, assignor: "range" } : {}), memberId: this.memberId, memberEpoch: this.epoch, ownedPartitions: this.owned };
    const res = await request(e, "POST", `/v1/groups/${this.group}/heartbeat`, { token: this.token, body });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    this.answers.push(text);
    const r = JSON.parse(text) as ConsumerGroupHeartbeatResponse;
    this.memberId = r.memberId;
    this.epoch = r.memberEpoch;
    this.owned = r.assignment;
    return r;
  }

  topics(): string[] {
    return this.owned.map((tp) => tp.topic).sort();
  }
}

async function describeGroup(group: string, token: string): Promise<{ text: string; d: GroupDescription }> {
  const res = await request(e, "GET", `/v1/groups/${group}`, { token });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return { text, d: JSON.parse(text) as GroupDescription };
}

/** Heartbeats every member in turn until `done` holds and the group is Stable, or fails. */
async function until(group: string, members: Member[], done: () => boolean): Promise<void> {
  for (let i = 0; i < MAX_POLLS; i++) {
    for (const m of members) await m.heartbeat();
    if (done() && (await describeGroup(group, admin)).d.state === "Stable") return;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`not reached after ${MAX_POLLS} rounds: ${members.map((m) => JSON.stringify(m.owned)).join(" | ")}`);
}

async function createTopic(name: string): Promise<void> {
  await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name, partitions: 2 } }), 201);
}

async function acl(method: "POST" | "DELETE", principal: string, resourceType: string, resourceName: string, operation: string, patternType = "literal"): Promise<void> {
  if (method === "POST") {
    await expectOk(await request(e, "POST", "/v1/acls", { token: admin, body: { principal, resourceType, resourceName, patternType, operation } }), 201);
  } else {
    const q = new URLSearchParams({ principal, resourceType, resourceName, patternType, operation });
    await expectOk(await request(e, "DELETE", `/v1/acls?${q}`, { token: admin }));
  }
}

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  e = authEnv(await makeKeys());
  admin = await hsToken(SUPERUSER);
  await ensureNamespace(e, admin, `${ns}/x`);
  for (const t of [mine("a"), secret("a")]) await createTopic(t);
});

afterAll(() => {
  vi.restoreAllMocks();
});

describe("a member's subscription regex resolves only to topics its principal may describe", () => {
  it("beside a superuser in one group: assigned only describable topics, also those created later; grants and revocations apply; answers never name the secret topics", {
    timeout: 120_000,
  }, async () => {
    const group = `qa-rx-g-${id}`;
    const carol = `carol-${id}`;
    await acl("POST", carol, "group", group, "read");
    await acl("POST", carol, "topic", `${ns}/mine-`, "describe", "prefixed");
    const c = new Member(group, await hsToken(carol));
    const su = new Member(group, admin);

    // Alone: carol gets both partitions of mine-a and nothing else.
    await c.heartbeat();
    await until(group, [c], () => c.topics().join() === mine("a"));
    expect(c.owned).toEqual([{ topic: mine("a"), partitions: [0, 1] }]);

    // The superuser's member resolves the same regex to every topic: range gives it all of
    // secret-a (nobody else subscribes to it) and shares mine-a.
    await until(group, [c, su], () => su.topics().includes(secret("a")) && c.topics().join() === mine("a") && su.topics().includes(mine("a")));
    expect(su.owned.find((tp) => tp.topic === secret("a"))?.partitions).toEqual([0, 1]);

    // Topics created later: the describable one joins carol's subscription, the other never does.
    for (const t of [mine("b"), secret("b")]) await createTopic(t);
    await until(group, [c, su], () => c.topics().includes(mine("b")) && su.topics().includes(secret("b")));
    expect(c.topics().every((t) => t.startsWith(`${ns}/mine-`))).toBe(true);
    expect(su.topics()).toEqual([mine("a"), mine("b"), secret("a"), secret("b")]);

    // The group description carol may read names no secret topic (other members' assignments
    // and the offsets rows are filtered); the superuser's names them.
    const seen = await describeGroup(group, c.token);
    expect(seen.text).not.toContain(SECRET_PREFIX);
    expect(seen.d.members.map((m) => m.memberId).sort()).toEqual([c.memberId, su.memberId].sort());
    expect(seen.d.offsets.map((o) => o.topic).every((t) => t.startsWith(`${ns}/mine-`))).toBe(true);
    expect((await describeGroup(group, admin)).text).toContain(secret("a"));
    expect(c.answers.join("\n")).not.toContain(SECRET_PREFIX);

    // A grant of describe on secret-a reaches the coordinator (within the ACL cache's 5 s):
    // carol now shares it; the revocation takes it away again.
    await acl("POST", carol, "topic", secret("a"), "describe");
    await until(group, [c, su], () => c.topics().includes(secret("a")));
    expect(c.topics()).not.toContain(secret("b"));
    await acl("DELETE", carol, "topic", secret("a"), "describe");
    await until(group, [c, su], () => !c.topics().includes(secret("a")));
    const after = await describeGroup(group, c.token);
    expect(after.text).not.toContain(SECRET_PREFIX);
    expect(c.topics().every((t) => t.startsWith(`${ns}/mine-`))).toBe(true);
  });

  it("a superuser alone sees every topic its regex matches; a principal with no topic ACL gets nothing", { timeout: 60_000 }, async () => {
    const group = `qa-rx-su-${id}`;
    const su = new Member(group, admin);
    await until(group, [su], () => su.topics().length >= 2);
    expect(su.topics()).toEqual(expect.arrayContaining([mine("a"), secret("a")]));

    const dave = `dave-${id}`;
    const other = `qa-rx-d-${id}`;
    await acl("POST", dave, "group", other, "read");
    const d = new Member(other, await hsToken(dave));
    const r = await d.heartbeat();
    expect(r.assignment).toEqual([]);
    const seen = await describeGroup(other, d.token);
    expect(seen.text).not.toContain(SECRET_PREFIX);
    expect(seen.text).not.toContain(`${ns}/mine-`);
  });
});
