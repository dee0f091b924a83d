/**
 * Attacks found by probing a real `wrangler dev` with auth on (QA of issue 12), each kept as a
 * regression test through the real gateway and Durable Objects.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FREE_FAILURES, MAX_TRACKED_FAILURES } from "../../durable-objects/metadata-security.ts";
import { securityStore } from "../../src/auth/store.ts";
import type { Env } from "../../src/env.ts";
import type { GroupDescription, OffsetFetchResponse } from "../../src/protocol/groups.ts";
import { authEnv, ensureNamespace, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

let e: Env;
let admin: string;
const id = crypto.randomUUID().slice(0, 8);

async function acl(principal: string, resourceType: string, resourceName: string, operation: string): Promise<void> {
  await expectOk(await request(e, "POST", "/v1/acls", { token: admin, body: { principal, resourceType, resourceName, operation } }), 201);
}

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation(() => {});
  e = authEnv(await makeKeys());
  admin = await hsToken(SUPERUSER);
});

afterAll(() => {
  vi.restoreAllMocks();
});

describe("group answers show only topics the principal may describe", () => {
  it("an all-topics offset fetch and a group description leave out the offsets of topics it cannot describe", async () => {
    const mine = `qa-${id}/ns/mine`;
    const secret = `qa-${id}/ns/secret`;
    const group = `qa-g-${id}`;
    for (const name of [mine, secret]) {
      await ensureNamespace(e, admin, name);
      await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name, partitions: 1 } }), 201);
    }
    await expectOk(await request(e, "POST", `/v1/topics/${secret}/partitions/0/records`, { token: admin, body: { records: [{ value: "a" }, { value: "b" }] } }));
    // The group committed on both topics (admin); mallory may use the group and read `mine` only.
    await expectOk(
      await request(e, "POST", `/v1/groups/${group}/offsets`, {
        token: admin,
        body: {
          offsets: [
            { topic: mine, partition: 0, offset: 0 },
            { topic: secret, partition: 0, offset: 1 },
          ],
        },
      }),
    );
    const mallory = `mallory-${id}`;
    await acl(mallory, "group", group, "all");
    await acl(mallory, "topic", mine, "read");
    const token = await hsToken(mallory);

    const topicsOf = (rows: { topic: string }[]) => rows.map((r) => r.topic).sort();
    const fetched = (await expectOk(await request(e, "POST", `/v1/groups/${group}/offsets/fetch`, { token, body: {} }))) as OffsetFetchResponse;
    expect(topicsOf(fetched.partitions)).toEqual([mine]);
    const got = (await expectOk(await request(e, "GET", `/v1/groups/${group}/offsets`, { token }))) as OffsetFetchResponse;
    expect(topicsOf(got.partitions)).toEqual([mine]);
    const described = (await expectOk(await request(e, "GET", `/v1/groups/${group}`, { token }))) as GroupDescription;
    expect(topicsOf(described.offsets)).toEqual([mine]);
    expect(described.totalLag).toBe(0);
    expect(JSON.stringify([fetched, got, described])).not.toContain("secret");

    // A superuser still sees both.
    const all = (await expectOk(await request(e, "POST", `/v1/groups/${group}/offsets/fetch`, { token: admin, body: {} }))) as OffsetFetchResponse;
    expect(topicsOf(all.partitions)).toEqual([mine, secret].sort());
    const full = (await expectOk(await request(e, "GET", `/v1/groups/${group}`, { token: admin }))) as GroupDescription;
    expect(full.totalLag).toBe(1);
  });
});

describe("SCRAM lock-out", () => {
  // Thousands of RPCs and a few PBKDF2 runs: a generous timeout for a loaded machine (not a timing check).
  it("flooding the failure table with unknown user names does not reset a locked-out user's count", { timeout: 180_000 }, async () => {
    const user = `victim-${id}`;
    const basic = (p: string) => ({ headers: { authorization: `Basic ${btoa(`${user}:${p}`)}` } });
    await expectOk(await request(e, "PUT", `/v1/users/${user}`, { token: admin, body: { password: "right" } }));
    for (let i = 0; i <= FREE_FAILURES; i++) await expectCode(await request(e, "POST", "/v1/auth/token", basic("wrong")), 401, "UNAUTHENTICATED");
    // The attacker fills the table with failures for names that do not exist (cheap: no PBKDF2).
    const store = securityStore(e);
    for (let i = 0; i <= MAX_TRACKED_FAILURES; i += 500) {
      const rs = await Promise.all(Array.from({ length: 500 }, (_, j) => store.authenticateScram(`flood-${id}-${i + j}`, "x")));
      expect(rs.every((r) => !r.ok)).toBe(true);
    }
    // The victim's count survived: one more failure (or the lock still running) and the right
    // password is refused 429, not answered with a token.
    await request(e, "POST", "/v1/auth/token", basic("wrong"));
    await expectCode(await request(e, "POST", "/v1/auth/token", basic("right")), 429, "THROTTLED");
  });
});

describe("consumer group heartbeat", () => {
  it("subscribing to a topic the member may not describe is 403 (topic) and assigns nothing; a describable one joins", async () => {
    const secret = `qa-hb-${id}/ns/secret`;
    const mine = `qa-hb-${id}/ns/mine`;
    const group = `qa-hb-g-${id}`;
    for (const name of [secret, mine]) {
      await ensureNamespace(e, admin, name);
      await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name, partitions: 3 } }), 201);
    }
    const oscar = `oscar-${id}`;
    await acl(oscar, "group", group, "read");
    await acl(oscar, "topic", mine, "read");
    const token = await hsToken(oscar);
    const denied = await expectCode(
      await request(e, "POST", `/v1/groups/${group}/heartbeat`, { token, body: { memberEpoch: 0, subscribedTopicNames: [mine, secret] } }),
      403,
      "NOT_AUTHORIZED",
    );
    expect(denied.details).toEqual({ resourceType: "topic", resource: secret, operation: "describe" });
    // No member joined: the group was not even created.
    await expectCode(await request(e, "GET", `/v1/groups/${group}`, { token: admin }), 404, "GROUP_ID_NOT_FOUND");
    const joined = (await expectOk(await request(e, "POST", `/v1/groups/${group}/heartbeat`, { token, body: { memberEpoch: 0, subscribedTopicNames: [mine] } }))) as {
      assignment: { topic: string }[];
    };
    expect(joined.assignment.map((a) => a.topic)).toEqual([mine]);
  });
});

describe("SCRAM user names", () => {
  it("a user name with ':' is refused (HTTP Basic could never carry it) and nothing is stored", async () => {
    const err = await expectCode(await request(e, "PUT", `/v1/users/${encodeURIComponent(`svc:${id}`)}`, { token: admin, body: { password: "p" } }), 400, "INVALID_REQUEST");
    expect(err.details).toEqual({ field: "user" });
    const { users } = (await expectOk(await request(e, "GET", "/v1/users", { token: admin }))) as { users: { name: string }[] };
    expect(users.map((u) => u.name)).not.toContain(`svc:${id}`);
    // Kafka's `User:` prefix is still accepted and dropped.
    await expectOk(await request(e, "PUT", `/v1/users/User:svc-${id}`, { token: admin, body: { password: "p" } }));
    const ok = await request(e, "POST", "/v1/auth/token", { headers: { authorization: `Basic ${btoa(`svc-${id}:p`)}` } });
    expect(ok.status).toBe(200);
  });
});

describe("Durable Streams fork", () => {
  it("forking a stream needs READ on the source: a fork of a stream the principal cannot read is 403 and creates nothing", async () => {
    const source = `/v1/stream/qa-secret-${id}`;
    await expectOk(await request(e, "PUT", source, { token: admin, headers: { "content-type": "text/plain" } }), 201);
    await expectOk(await request(e, "POST", source, { token: admin, headers: { "content-type": "text/plain" }, rawBody: "TOPSECRET" }), 204);
    const peggy = `peggy-${id}`;
    await expectOk(
      await request(e, "POST", "/v1/acls", {
        token: admin,
        body: { principal: peggy, resourceType: "topic", resourceName: `streams/default/peggy-${id}`, patternType: "prefixed", operation: "all" },
      }),
      201,
    );
    const token = await hsToken(peggy);
    // Both forms of Stream-Forked-From: the path and the absolute URL on this origin.
    for (const [i, from] of [source, `http://edgelog.test${source}`].entries()) {
      const fork = `/v1/stream/peggy-${id}-${i}`;
      const err = await expectCode(await request(e, "PUT", fork, { token, headers: { "content-type": "text/plain", "Stream-Forked-From": from } }), 403, "NOT_AUTHORIZED");
      expect(err.details).toEqual({ resourceType: "topic", resource: `streams/default/qa-secret-${id}`, operation: "read" });
      await expectCode(await request(e, "GET", `${fork}?offset=-1`, { token }), 404, "STREAM_NOT_FOUND");
    }
    // With READ on the source the same fork is created and serves the source's records.
    await acl(peggy, "topic", `streams/default/qa-secret-${id}`, "read");
    const fork = `/v1/stream/peggy-${id}-ok`;
    await expectOk(await request(e, "PUT", fork, { token, headers: { "content-type": "text/plain", "Stream-Forked-From": source } }), 201);
    const read = await request(e, "GET", `${fork}?offset=-1`, { token });
    expect(read.status).toBe(200);
    expect(await read.text()).toBe("TOPSECRET");
  });
});

describe("Pulsar permissions", () => {
  it("a role granted `functions` on a namespace cannot grant itself produce/consume; the tenant admin can grant", async () => {
    const tenant = `qa-fn-${id}`;
    const ns = `${tenant}/ns`;
    await ensureNamespace(e, admin, ns);
    await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name: `${ns}/data`, partitions: 1 } }), 201);
    await expectOk(await request(e, "POST", `/v1/topics/${ns}/data/records`, { token: admin, body: { records: [{ value: "private" }] } }));
    const fn = `fn-${id}`;
    const token = await hsToken(fn);
    await expectOk(await request(e, "POST", `/v1/namespaces/${ns}/permissions/${fn}`, { token: admin, body: { actions: ["functions"] } }), 201);
    const err = await expectCode(await request(e, "POST", `/v1/namespaces/${ns}/permissions/${fn}`, { token, body: { actions: ["consume", "produce"] } }), 403, "NOT_AUTHORIZED");
    expect(err.details).toEqual({ resourceType: "tenant", resource: tenant, operation: "alter" });
    await expectCode(await request(e, "DELETE", `/v1/namespaces/${ns}/permissions/${fn}`, { token }), 403, "NOT_AUTHORIZED");
    // State unchanged: still functions only, and no read.
    const view = (await expectOk(await request(e, "GET", `/v1/namespaces/${ns}/permissions`, { token: admin }))) as { permissions: Record<string, string[]> };
    expect(view.permissions[fn]).toEqual(["functions"]);
    await expectCode(await request(e, "GET", `/v1/topics/${ns}/data/partitions/0/records?offset=0`, { token }), 403, "NOT_AUTHORIZED");

    // The tenant's admin role grants.
    const tadmin = `tadmin-${id}`;
    await expectOk(await request(e, "PUT", `/v1/tenants/${tenant}/admins/${tadmin}`, { token: admin }));
    await expectOk(await request(e, "POST", `/v1/namespaces/${ns}/permissions/${fn}`, { token: await hsToken(tadmin), body: { actions: ["consume"] } }), 201);
    await expectOk(await request(e, "GET", `/v1/topics/${ns}/data/partitions/0/records?offset=0`, { token }));
  });
});
