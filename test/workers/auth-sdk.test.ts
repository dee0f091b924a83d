/**
 * The SDK against the auth-on gateway (real app and Durable Objects, env override): Admin's
 * security calls, a SCRAM user's username/password exchange, and a Producer and Consumer that
 * back off on THROTTLED and still deliver everything.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { Admin, Consumer, EdgelogClient, Producer, toText } from "../../sdk/src/index.ts";
import type { Env } from "../../src/env.ts";
import { authEnv, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

let e: Env;
let adminClient: EdgelogClient;
const id = crypto.randomUUID().slice(0, 8);

/** Statuses the SDK clients received, in order, and how many answers carried a throttle time. */
const statuses: number[] = [];
let throttledAnswers = 0;

function clientFetch(): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const res = await request(e, init?.method ?? "GET", `${url.pathname}${url.search}`, { headers, ...(init?.body != null ? { rawBody: init.body as BodyInit } : {}) });
    statuses.push(res.status);
    if (res.status === 429 || Number(res.headers.get("edgelog-throttle-time-ms") ?? 0) > 0) throttledAnswers++;
    return res;
  }) as typeof fetch;
}

beforeAll(async () => {
  e = authEnv(await makeKeys());
  adminClient = new EdgelogClient({ baseUrl: "http://edgelog.test", fetch: clientFetch(), token: await hsToken(SUPERUSER) });
});

describe("SDK with auth on", () => {
  it("Admin manages users, ACLs, Pulsar permissions and quotas", async () => {
    const admin = new Admin(adminClient);
    const user = `sdk-${id}`;
    const u = await admin.upsertUser(user, "secret-pw", { mechanism: "SCRAM-SHA-256", iterations: 8192 });
    expect(u).toEqual({ name: user, mechanisms: [{ mechanism: "SCRAM-SHA-256", iterations: 8192 }] });
    expect((await admin.listUsers()).find((x) => x.name === user)).toEqual(u);
    const stored = { principal: user, resourceType: "topic", resourceName: `public/default/sdk-${id}-`, patternType: "prefixed", operation: "read", permission: "allow" };
    expect(await admin.createAcls([{ principal: `User:${user}`, resourceType: "topic", resourceName: `sdk-${id}-`, patternType: "prefixed", operation: "read" }])).toEqual({
      created: 1,
      acls: [stored],
    });
    expect(await admin.listAcls({ principal: user })).toEqual([stored]);
    await admin.grantPermission(`t-${id}/ns`, user, ["produce"]);
    expect(await admin.listPermissions(`t-${id}/ns`)).toEqual({ [user]: ["produce"] });
    await admin.revokePermission(`t-${id}/ns`, user);
    expect(await admin.listPermissions(`t-${id}/ns`)).toEqual({});
    expect(await admin.alterQuotas({ user, clientId: "<default>" }, { consumer_byte_rate: 5000 })).toEqual({ user, clientId: "<default>", values: { consumer_byte_rate: 5000 } });
    expect((await admin.describeQuotas()).filter((q) => q.user === user)).toEqual([{ user, clientId: "<default>", values: { consumer_byte_rate: 5000 } }]);
    expect((await admin.deleteAcls({ principal: user })).length).toBe(1);
    await admin.deleteUser(user);
    await expect(admin.deleteUser(user)).rejects.toMatchObject({ code: "USER_NOT_FOUND" });
  });

  it("a username/password client produces and consumes; under a request_rate quota the Producer and Consumer back off and lose nothing", async () => {
    const admin = new Admin(adminClient);
    const user = `app-${id}`;
    const topic = `q-${id}/ns/sdk`;
    await admin.createTenant(`q-${id}`);
    await admin.createNamespace(`q-${id}/ns`);
    await admin.createTopic({ name: topic, partitions: 1 });
    await admin.upsertUser(user, "pw");
    await admin.grantPermission(`q-${id}/ns`, user, ["produce", "consume"]);
    await admin.alterQuotas({ user }, { request_rate: 4 });
    const client = new EdgelogClient({ baseUrl: "http://edgelog.test", fetch: clientFetch(), username: user, password: "pw", clientId: "sdk-test" });
    expect(await client.whoami()).toEqual({ principal: user, superuser: false });
    statuses.length = 0;
    throttledAnswers = 0;
    const producer = new Producer(client, { lingerMs: 0 });
    const n = 12;
    for (let i = 0; i < n; i++) await producer.send({ topic, messages: [{ value: `m${i}` }] });
    await producer.close();
    const consumer = new Consumer(client);
    consumer.assign([{ topic, partition: 0 }]);
    await consumer.seekToBeginning();
    const seen: string[] = [];
    while (seen.length < n) for (const r of await consumer.poll({ maxWaitMs: 200 })) seen.push(toText(r.value) ?? "");
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => `m${i}`));
    // The quota did bite: answers carried a throttle time (429 THROTTLED, or an admitted answer
    // with Edgelog-Throttle-Time-Ms that the client honoured before its next request).
    expect(throttledAnswers).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  }, 60_000);
});
