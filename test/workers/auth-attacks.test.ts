/**
 * The attack table (issue 12): each case through the real gateway and Durable Objects with
 * auth on, its exact status and code, and the state read back unchanged.
 */
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env.ts";
import type { TopicDescription } from "../../src/protocol/index.ts";
import { authEnv, ensureNamespace, expectCode, expectOk, hsToken, makeKeys, noneToken, request, rsToken, SUPERUSER, type Keys } from "./auth-helpers.ts";

let keys: Keys;
let e: Env;
let admin: string;
const id = crypto.randomUUID().slice(0, 8);
// Two tenants; alice is allowed everything on tenant A only.
const A = `ta-${id}`;
const B = `tb-${id}`;
const secret = `${B}/ns/secret`;
const mine = `${A}/ns/orders`;
const warnings: string[] = [];

async function createTopic(name: string): Promise<void> {
  await ensureNamespace(e, admin, name);
  await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name, partitions: 1 } }), 201);
}

async function hwm(name: string): Promise<number> {
  const t = (await expectOk(await request(e, "GET", `/v1/topics/${name}`, { token: admin }))) as TopicDescription;
  return t.partitionDetails[0]!.highWatermark;
}

async function acl(principal: string, resourceType: string, resourceName: string, operation: string, o: { patternType?: string; permission?: string } = {}): Promise<void> {
  await expectOk(
    await request(e, "POST", "/v1/acls", {
      token: admin,
      body: { principal, resourceType, resourceName, operation, patternType: o.patternType ?? "literal", permission: o.permission ?? "allow" },
    }),
    201,
  );
}

const oneRecord = { records: [{ value: "x" }] };
const produce = (path: string, token?: string, headers?: Record<string, string>) =>
  request(e, "POST", `/v1/topics/${path}/partitions/0/records`, { ...(token !== undefined ? { token } : {}), body: oneRecord, ...(headers ? { headers } : {}) });

beforeAll(async () => {
  vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => void warnings.push(args.map(String).join(" ")));
  keys = await makeKeys();
  e = authEnv(keys);
  admin = await hsToken(SUPERUSER);
  await createTopic(secret);
  await createTopic(mine);
  await expectOk(await produce(secret, admin));
  await acl(`alice-${id}`, "tenant", A, "all");
});

afterAll(() => {
  vi.restoreAllMocks();
});

describe("authentication", () => {
  it("no token: 401 UNAUTHENTICATED with WWW-Authenticate, nothing written", async () => {
    const res = await produce(secret);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="edgelog"');
    await expectCode(res, 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("malformed token", async () => {
    const res = await produce(secret, "not.a.jwt");
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="edgelog", error="invalid_token"');
    await expectCode(res, 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("a non-Bearer Authorization header (Basic on a data route)", async () => {
    await expectCode(
      await request(e, "POST", `/v1/topics/${secret}/partitions/0/records`, { headers: { authorization: `Basic ${btoa("admin:x")}` }, body: oneRecord }),
      401,
      "UNAUTHENTICATED",
    );
    expect(await hwm(secret)).toBe(1);
  });

  it("alg: none", async () => {
    await expectCode(await produce(secret, noneToken(SUPERUSER)), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("expired beyond the clock skew", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectCode(await produce(secret, await hsToken(SUPERUSER, { exp: now - 120 })), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("expired within the clock skew (30 s) is still accepted", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectOk(await request(e, "GET", `/v1/topics/${secret}`, { token: await hsToken(SUPERUSER, { exp: now - 5 }) }));
  });

  it("not yet valid (nbf beyond the skew)", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectCode(await produce(secret, await hsToken(SUPERUSER, { nbf: now + 600 })), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("wrong aud", async () => {
    await expectCode(await produce(secret, await hsToken(SUPERUSER, { aud: "someone-else" })), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("wrong iss", async () => {
    await expectCode(await produce(secret, await hsToken(SUPERUSER, { iss: "https://evil.test" })), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("HS256 signed with the wrong key", async () => {
    await expectCode(await produce(secret, await hsToken(SUPERUSER, { secret: "another-secret-another-secret-another" })), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("RS256 with an unknown kid", async () => {
    await expectCode(await produce(secret, await rsToken(keys.strangerPrivate, SUPERUSER, "nope")), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("RS256 with the JWKS kid but signed by another key", async () => {
    await expectCode(await produce(secret, await rsToken(keys.strangerPrivate, SUPERUSER, "k1")), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(1);
  });

  it("a valid RS256 token from the JWKS is accepted", async () => {
    const token = await rsToken(keys.rsaPrivate, SUPERUSER);
    await expectOk(await produce(secret, token));
    expect(await hwm(secret)).toBe(2);
  });

  it("HS/RS algorithm confusion: HS256 keyed with the RSA public key", async () => {
    const token = await hsToken(SUPERUSER, { secret: new TextEncoder().encode(keys.rsaPublicPem) });
    await expectCode(await produce(secret, token), 401, "UNAUTHENTICATED");
    const withKid = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256", kid: "k1" })
      .setSubject(SUPERUSER)
      .setAudience("edgelog-test")
      .setIssuer("https://issuer.test")
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(keys.rsaPublicPem));
    await expectCode(await produce(secret, withKid), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(2);
  });

  it("an oversized token", async () => {
    const token = await hsToken(SUPERUSER, { payload: { pad: "x".repeat(9000) } });
    await expectCode(await produce(secret, token), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(2);
  });

  it("a token without sub", async () => {
    await expectCode(await produce(secret, await hsToken(undefined)), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(2);
  });

  it("a token as a query parameter on a plain request", async () => {
    await expectCode(await request(e, "POST", `/v1/topics/${secret}/partitions/0/records?token=${admin}`, { body: oneRecord }), 401, "UNAUTHENTICATED");
    expect(await hwm(secret)).toBe(2);
  });

  it("a WebSocket upgrade without a token", async () => {
    const res = await request(e, "GET", `/v1/topics/${secret}/partitions/0/records?offset=0`, { headers: { upgrade: "websocket", connection: "Upgrade" } });
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="edgelog"');
    await expectCode(res, 401, "UNAUTHENTICATED");
  });

  it("a WebSocket upgrade with the token as a query parameter is authenticated", async () => {
    const res = await request(e, "GET", `/v1/topics/${secret}/partitions/0/records?offset=0&token=${admin}`, { headers: { upgrade: "websocket", connection: "Upgrade" } });
    const body = (await expectOk(res)) as { records: unknown[] };
    expect(body.records.length).toBe(2);
  });

  it("never logs a token", () => {
    expect(warnings.length).toBeGreaterThan(0);
    for (const w of warnings) expect(w).not.toContain(admin);
  });
});

describe("SCRAM users", () => {
  const user = `scram-${id}`;
  const basic = (u: string, p: string) => ({ authorization: `Basic ${btoa(`${u}:${p}`)}` });

  it("a token for a deleted user is refused; a wrong password is 401; repeated failures are throttled", async () => {
    await expectOk(await request(e, "PUT", `/v1/users/${user}`, { token: admin, body: { password: "pa55word", mechanism: "SCRAM-SHA-512", iterations: 4096 } }));
    const listed = (await expectOk(await request(e, "GET", "/v1/users", { token: admin }))) as { users: { name: string }[] };
    expect(JSON.stringify(listed)).not.toContain("pa55word");
    const { token } = (await expectOk(await request(e, "POST", "/v1/auth/token", { headers: basic(user, "pa55word") }))) as { token: string };
    await acl(user, "topic", secret, "describe");
    await expectOk(await request(e, "GET", `/v1/topics/${secret}`, { token }));
    await expectOk(await request(e, "DELETE", `/v1/users/${user}`, { token: admin }), 204);
    await expectCode(await request(e, "GET", `/v1/topics/${secret}`, { token }), 401, "UNAUTHENTICATED");

    await expectOk(await request(e, "PUT", `/v1/users/${user}`, { token: admin, body: { password: "right" } }));
    const wrong = await request(e, "POST", "/v1/auth/token", { headers: basic(user, "wrong") });
    expect(wrong.headers.get("www-authenticate")).toContain("Basic");
    await expectCode(wrong, 401, "UNAUTHENTICATED");
    await expectCode(await request(e, "POST", "/v1/auth/token", { headers: basic(user, "wrong") }), 401, "UNAUTHENTICATED");
    await expectCode(await request(e, "POST", "/v1/auth/token", { headers: basic(user, "wrong") }), 401, "UNAUTHENTICATED");
    await expectCode(await request(e, "POST", "/v1/auth/token", { headers: basic(user, "wrong") }), 401, "UNAUTHENTICATED");
    const locked = await request(e, "POST", "/v1/auth/token", { headers: basic(user, "right") });
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const err = await expectCode(locked, 429, "THROTTLED");
    expect(err.details?.throttleTimeMs).toBeGreaterThan(0);
  });

  it("a password change kills the tokens issued before it", async () => {
    const u = `scram2-${id}`;
    await expectOk(await request(e, "PUT", `/v1/users/${u}`, { token: admin, body: { password: "one" } }));
    const { token } = (await expectOk(await request(e, "POST", "/v1/auth/token", { headers: basic(u, "one") }))) as { token: string };
    expect((await expectOk(await request(e, "GET", "/v1/auth/whoami", { token }))) as object).toEqual({ principal: u, superuser: false });
    await expectOk(await request(e, "PUT", `/v1/users/${u}`, { token: admin, body: { password: "two" } }));
    await expectCode(await request(e, "GET", "/v1/auth/whoami", { token }), 401, "UNAUTHENTICATED");
  });
});

describe("authorization", () => {
  it("a prefixed ACL does not match siblings (orders- vs orders vs order); a literal does not match a longer name", async () => {
    const bob = await hsToken(`bob-${id}`);
    const dave = await hsToken(`dave-${id}`);
    for (const t of ["orders-archive", "orders", "order"]) await createTopic(`${A}/px/${t}`);
    await acl(`bob-${id}`, "topic", `${A}/px/orders-`, "write", { patternType: "prefixed" });
    await acl(`dave-${id}`, "topic", `${A}/px/orders`, "write");
    await expectOk(await produce(`${A}/px/orders-archive`, bob));
    const denied = await expectCode(await produce(`${A}/px/orders`, bob), 403, "NOT_AUTHORIZED");
    expect(denied.details).toEqual({ resourceType: "topic", resource: `${A}/px/orders`, operation: "write" });
    await expectCode(await produce(`${A}/px/order`, bob), 403, "NOT_AUTHORIZED");
    await expectCode(await produce(`${A}/px/orders-archive`, dave), 403, "NOT_AUTHORIZED");
    await expectOk(await produce(`${A}/px/orders`, dave));
    expect([await hwm(`${A}/px/orders-archive`), await hwm(`${A}/px/orders`), await hwm(`${A}/px/order`)]).toEqual([1, 1, 0]);
    expect(warnings.some((w) => w.includes("edgelog.authz.denied") && w.includes(`bob-${id}`) && w.includes(`${A}/px/order"`))).toBe(true);
  });

  it("deny overrides allow", async () => {
    const erin = `erin-${id}`;
    await acl(erin, "tenant", A, "write");
    await acl(erin, "topic", mine, "write", { permission: "deny" });
    await expectCode(await produce(mine, await hsToken(erin)), 403, "NOT_AUTHORIZED");
    expect(await hwm(mine)).toBe(0);
  });

  it("wildcards: a LITERAL * resource, a * principal", async () => {
    const grace = await hsToken(`grace-${id}`);
    await expectCode(await produce(mine, grace), 403, "NOT_AUTHORIZED");
    await acl(`grace-${id}`, "topic", "*", "write");
    await expectOk(await produce(mine, grace));
    const pub = `${A}/pub/news`;
    await createTopic(pub);
    const anyone = await hsToken(`zed-${id}`);
    await expectCode(await request(e, "GET", `/v1/topics/${pub}`, { token: anyone }), 403, "NOT_AUTHORIZED");
    await acl("*", "topic", pub, "describe");
    await expectOk(await request(e, "GET", `/v1/topics/${pub}`, { token: anyone }));
    expect(await hwm(mine)).toBe(1);
  });

  it("a principal allowed on one tenant cannot reach another tenant's topic through any path shape", async () => {
    const alice = await hsToken(`alice-${id}`);
    await expectOk(await produce(mine, alice));
    const enc = encodeURIComponent(secret);
    expect(enc).toContain("%2F");
    const cases: [string, string, unknown?][] = [
      ["POST", `/v1/topics/${secret}/partitions/0/records`, oneRecord],
      ["POST", `/v1/topics/${enc}/partitions/0/records`, oneRecord],
      ["POST", `/v1/topics/${secret}/records`, oneRecord],
      ["POST", `/v1/topics/${enc}/records`, oneRecord],
      ["POST", `/v1/topics/${B}%2Fns/secret/records`, oneRecord],
      ["GET", `/v1/topics/${secret}/partitions/0/records?offset=0`],
      ["GET", `/v1/topics/${enc}/partitions/0/records?offset=0`],
      ["GET", `/v1/topics/${secret}/partitions/0/offsets?spec=latest`],
      ["GET", `/v1/topics/${secret}`],
      ["GET", `/v1/topics/${enc}`],
      ["PATCH", `/v1/topics/${enc}`, { configs: { "retention.ms": 1000 } }],
      ["DELETE", `/v1/topics/${secret}`],
      ["DELETE", `/v1/topics/${enc}`],
      ["POST", "/v1/topics", { name: `${B}/ns/new` }],
    ];
    for (const [method, path, body] of cases) {
      const res = await request(e, method, path, { token: alice, ...(body !== undefined ? { body } : {}) });
      if (path.includes(`${B}%2Fns/secret`)) {
        // Two segments before /records: only the long GET/PATCH/DELETE form has that shape.
        await expectCode(res, 405, "METHOD_NOT_ALLOWED");
        continue;
      }
      const err = await expectCode(res, 403, "NOT_AUTHORIZED");
      expect(err.details?.resourceType, `${method} ${path}`).toBe("topic");
    }
    // The short name is public/default/secret: not alice's either.
    await expectCode(await produce("secret", alice), 403, "NOT_AUTHORIZED");
    expect(await hwm(secret)).toBe(2);
    const t = (await expectOk(await request(e, "GET", `/v1/topics/${secret}`, { token: admin }))) as TopicDescription;
    expect(t.configs["retention.ms"]).not.toBe(1000);
    await expectCode(await request(e, "GET", `/v1/topics/${B}/ns/new`, { token: admin }), 404, "UNKNOWN_TOPIC_OR_PARTITION");
    // Lists show only what alice may describe.
    const list = (await expectOk(await request(e, "GET", "/v1/topics", { token: alice }))) as { topics: { name: string }[] };
    expect(list.topics.map((x) => x.name).filter((n) => n.includes(id))).toEqual([mine, `${A}/pub/news`, `${A}/px/order`, `${A}/px/orders`, `${A}/px/orders-archive`].sort());
  });

  it("a group commit without group READ (403 group), and without topic READ (403 topic)", async () => {
    const henry = `henry-${id}`;
    const token = await hsToken(henry);
    const group = `g-${id}`;
    await acl(henry, "topic", mine, "read");
    const commit = { offsets: [{ topic: mine, partition: 0, offset: 1 }] };
    const err = await expectCode(await request(e, "POST", `/v1/groups/${group}/offsets`, { token, body: commit }), 403, "NOT_AUTHORIZED");
    expect(err.details).toEqual({ resourceType: "group", resource: group, operation: "read" });
    const ivan = `ivan-${id}`;
    await acl(ivan, "group", group, "read");
    const err2 = await expectCode(
      await request(e, "POST", `/v1/groups/${group}/offsets`, { token: await hsToken(ivan), body: { offsets: [{ topic: secret, partition: 0, offset: 1 }] } }),
      403,
      "NOT_AUTHORIZED",
    );
    expect(err2.details?.resourceType).toBe("topic");
    const committed = (await expectOk(await request(e, "GET", `/v1/groups/${group}/offsets?topic=${encodeURIComponent(mine)}`, { token: admin }))) as object;
    expect(JSON.stringify(committed)).not.toContain('"offset":1');
  });

  it("a malformed commit body from a principal without group READ is 403 (the group check comes first); the group list shows only describable groups", async () => {
    const kate = `kate-${id}`;
    const token = await hsToken(kate);
    const bad = await request(e, "POST", `/v1/groups/g-${id}/offsets`, { token, rawBody: "{not json", headers: { "content-type": "application/json" } });
    expect((await expectCode(bad, 403, "NOT_AUTHORIZED")).details?.resourceType).toBe("group");
    const [g1, g2] = [`seen-${id}`, `hidden-${id}`];
    for (const g of [g1, g2]) await expectOk(await request(e, "POST", `/v1/groups/${g}/offsets`, { token: admin, body: { offsets: [{ topic: mine, partition: 0, offset: 0 }] } }));
    await acl(kate, "group", g1, "describe");
    // The directory is updated in the background (eventually consistent): wait until both show.
    const listed = async (t: string) => ((await expectOk(await request(e, "GET", "/v1/groups", { token: t }))) as { groups: { groupId: string }[] }).groups.map((g) => g.groupId);
    for (let i = 0; i < 100 && !(await listed(admin)).includes(g2); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await listed(admin)).toEqual(expect.arrayContaining([g1, g2]));
    expect(await listed(token)).toEqual([g1]);
  });

  it("a Durable Streams append without WRITE, and a create without CREATE", async () => {
    const path = `/v1/stream/auth-${id}`;
    await expectOk(await request(e, "PUT", path, { token: admin, headers: { "content-type": "text/plain" } }), 201);
    await expectOk(await request(e, "POST", path, { token: admin, headers: { "content-type": "text/plain" }, rawBody: "one" }), 204);
    const ivy = `ivy-${id}`;
    await acl(ivy, "namespace", "streams/default", "read");
    const token = await hsToken(ivy);
    const refused = await request(e, "POST", path, { token, headers: { "content-type": "text/plain" }, rawBody: "two" });
    // A browser can read the refusal (the stream middleware's CORS headers).
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
    await expectCode(refused, 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "PUT", `${path}-new`, { token, headers: { "content-type": "text/plain" } }), 403, "NOT_AUTHORIZED");
    expect(await (await request(e, "GET", `${path}?offset=-1`, { token })).text()).toBe("one");
    expect((await request(e, "HEAD", `${path}-new`, { token: admin })).status).toBe(404);
  });

  it("admin APIs need cluster permissions; state unchanged", async () => {
    const mallory = await hsToken(`mallory-${id}`);
    const err = await expectCode(
      await request(e, "POST", "/v1/acls", { token: mallory, body: { principal: `mallory-${id}`, resourceType: "topic", resourceName: "*", operation: "all" } }),
      403,
      "NOT_AUTHORIZED",
    );
    expect(err.details?.resourceType).toBe("cluster");
    await expectCode(await request(e, "PUT", `/v1/users/mallory-${id}`, { token: mallory, body: { password: "x" } }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "PUT", "/v1/quotas", { token: mallory, body: { user: `mallory-${id}`, request_rate: 1e9 } }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "POST", `/v1/namespaces/${A}/ns/permissions/mallory-${id}`, { token: mallory, body: { actions: ["produce"] } }), 403, "NOT_AUTHORIZED");
    const acls = (await expectOk(await request(e, "GET", `/v1/acls?principal=mallory-${id}`, { token: admin }))) as { acls: unknown[] };
    expect(acls.acls).toEqual([]);
    const users = (await expectOk(await request(e, "GET", "/v1/users", { token: admin }))) as { users: { name: string }[] };
    expect(users.users.map((u) => u.name)).not.toContain(`mallory-${id}`);
  });

  it("a Pulsar tenant admin role is ALL on the tenant: its topics, and nothing outside it", async () => {
    const role = `tadmin-${id}`;
    const token = await hsToken(role);
    await expectCode(await request(e, "PUT", `/v1/tenants/${A}/admins/${role}`, { token }), 403, "NOT_AUTHORIZED");
    await expectOk(await request(e, "PUT", `/v1/tenants/${A}/admins/${role}`, { token: admin }));
    expect(await expectOk(await request(e, "GET", `/v1/tenants/${A}/admins`, { token }))).toEqual({ tenant: A, adminRoles: expect.arrayContaining([`alice-${id}`, role]) });
    // The tenant admin creates a namespace of its tenant, then a topic in it.
    await expectOk(await request(e, "PUT", `/v1/namespaces/${A}/adm`, { token }), 201);
    await expectOk(await request(e, "POST", "/v1/topics", { token, body: { name: `${A}/adm/new` } }), 201);
    await expectCode(await request(e, "POST", "/v1/topics", { token, body: { name: `${B}/adm/new` } }), 403, "NOT_AUTHORIZED");
    await expectOk(await request(e, "DELETE", `/v1/tenants/${A}/admins/${role}`, { token: admin }));
    await expectCode(await request(e, "DELETE", `/v1/topics/${A}/adm/new`, { token }), 403, "NOT_AUTHORIZED");
  });

  it("Pulsar grant-permission is stored as ACLs and shown both ways", async () => {
    const role = `pulsar-${id}`;
    const token = await hsToken(role);
    await expectCode(await produce(mine, token), 403, "NOT_AUTHORIZED");
    await expectOk(await request(e, "POST", `/v1/namespaces/${A}/ns/permissions/${role}`, { token: admin, body: { actions: ["produce", "consume"] } }), 201);
    const view = (await expectOk(await request(e, "GET", `/v1/namespaces/${A}/ns/permissions`, { token: admin }))) as { permissions: Record<string, string[]> };
    expect(view.permissions[role]?.sort()).toEqual(["consume", "produce"]);
    const acls = (await expectOk(await request(e, "GET", `/v1/acls?principal=${role}`, { token: admin }))) as { acls: { operation: string; resourceType: string }[] };
    expect(acls.acls.map((a) => `${a.resourceType}:${a.operation}`).sort()).toEqual(["namespace:read", "namespace:write"]);
    await expectOk(await produce(mine, token));
    await expectOk(await request(e, "DELETE", `/v1/namespaces/${A}/ns/permissions/${role}`, { token: admin }));
    await expectCode(await produce(mine, token), 403, "NOT_AUTHORIZED");
  });
});
