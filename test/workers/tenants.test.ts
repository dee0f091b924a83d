/**
 * Tenants, namespaces and namespace policies (issue 17, docs/TENANTS.md) through the real
 * gateway and MetadataDO: the built-in `public/default`, the admin lifecycle, bad input (each
 * refused with its code and changing nothing), topics in missing namespaces, policy
 * inheritance with its source, the effective configs and policies a partition stores, and the
 * routes' ACLs with auth on.
 */
import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import type { TenantStore, TopicMetadataStore } from "../../src/metadata/store.ts";
import { DEFAULT_TOPIC_CONFIGS, type EffectivePolicies, type NamespaceDescription, type TenantInfo, type TopicConfigs, type TopicDescription } from "../../src/protocol/index.ts";
import { authEnv, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";
import { call, createTopic, describe as describeTopic, expectError, json, partitionObject } from "./helpers.ts";

const uid = (): string => crypto.randomUUID().slice(0, 8);

async function ok<T>(res: Response, status = 200): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return (text === "" ? null : JSON.parse(text)) as T;
}

async function newNamespace(policies?: unknown): Promise<string> {
  const tenant = `tn-${uid()}`;
  await ok(await json("PUT", `/v1/tenants/${tenant}`, {}), 201);
  await ok(await json("PUT", `/v1/namespaces/${tenant}/ns`, policies === undefined ? {} : { policies }), 201);
  return `${tenant}/ns`;
}

const policiesOf = async (ns: string): Promise<EffectivePolicies> => (await ok<{ policies: EffectivePolicies }>(await call(`/v1/namespaces/${ns}/policies`))).policies;

/** The configs (with `policies`) partition 0 of a topic stored, read from its own SQLite. */
async function partitionConfigs(topicId: string): Promise<TopicConfigs> {
  return runInDurableObject(partitionObject(topicId) as unknown as DurableObjectStub, (_i, state) => {
    const row = state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'configs'").one();
    return JSON.parse(row.value) as TopicConfigs;
  });
}

describe("built in", () => {
  it("public/default and streams/default exist from the start and cannot be deleted; short topic names need no namespace call", async () => {
    const tenants = await ok<{ tenants: string[] }>(await call("/v1/tenants"));
    expect(tenants.tenants).toEqual(expect.arrayContaining(["public", "streams"]));
    const pub = await ok<TenantInfo>(await call("/v1/tenants/public"));
    expect(pub).toMatchObject({ name: "public", allowedClusters: ["edgelog"], namespaces: ["public/default"] });
    expect(await ok(await call("/v1/namespaces/public"))).toEqual({ tenant: "public", namespaces: ["public/default"] });
    const d = await ok<NamespaceDescription>(await call("/v1/namespaces/public/default"));
    expect(d).toMatchObject({ name: "public/default", tenant: "public", namespace: "default", policies: {} });
    expect(d.effectivePolicies.messageTtlSeconds).toEqual({ value: 0, source: "default" });
    const e1 = await expectError(await call("/v1/namespaces/public/default", { method: "DELETE" }), "INVALID_REQUEST", 400);
    expect(e1.details).toEqual({ field: "namespace", reason: "built_in" });
    await expectError(await call("/v1/namespaces/streams/default", { method: "DELETE" }), "INVALID_REQUEST", 400);
    await expectError(await call("/v1/tenants/public", { method: "DELETE" }), "INVALID_REQUEST", 400);
    await ok(await call("/v1/namespaces/public/default"));
    const t = await createTopic(`short-${uid()}`);
    expect(t.name.startsWith("public/default/")).toBe(true);
  });
});

describe("tenants and namespaces", () => {
  it("create, list, describe, delete; a non-empty tenant or namespace is refused with its code", async () => {
    const tenant = `acme-${uid()}`;
    const created = await ok<TenantInfo>(await json("PUT", `/v1/tenants/${tenant}`, { adminRoles: ["User:bob", "alice", "alice"], allowedClusters: ["edgelog"] }), 201);
    expect(created).toEqual({ name: tenant, adminRoles: ["alice", "bob"], allowedClusters: ["edgelog"], namespaces: [], createdAt: expect.any(Number) });
    // The admin roles are the authorizer's tenant admins (an `all` ACL on the tenant).
    expect(await ok(await call(`/v1/tenants/${tenant}/admins`))).toEqual({ tenant, adminRoles: ["alice", "bob"] });
    await expectError(await json("PUT", `/v1/tenants/${tenant}`, {}), "TENANT_ALREADY_EXISTS", 409);
    expect((await ok<{ tenants: string[] }>(await call("/v1/tenants"))).tenants).toContain(tenant);

    const ns = await ok<NamespaceDescription>(await call(`/v1/namespaces/${tenant}/orders`, { method: "PUT" }), 201);
    expect(ns).toMatchObject({ name: `${tenant}/orders`, tenant, namespace: "orders", policies: {}, topics: 0 });
    await expectError(await json("PUT", `/v1/namespaces/${tenant}/orders`, {}), "NAMESPACE_ALREADY_EXISTS", 409);
    expect(await ok(await call(`/v1/namespaces/${tenant}`))).toEqual({ tenant, namespaces: [`${tenant}/orders`] });

    const del = await expectError(await call(`/v1/tenants/${tenant}`, { method: "DELETE" }), "TENANT_NOT_EMPTY", 409);
    expect(del.details).toEqual({ tenant, namespaces: [`${tenant}/orders`], count: 1 });
    await createTopic(`${tenant}/orders/eu`);
    expect((await ok<NamespaceDescription>(await call(`/v1/namespaces/${tenant}/orders`))).topics).toBe(1);
    const nsDel = await expectError(await call(`/v1/namespaces/${tenant}/orders`, { method: "DELETE" }), "NAMESPACE_NOT_EMPTY", 409);
    expect(nsDel.details).toEqual({ namespace: `${tenant}/orders`, topics: 1 });
    await describeTopic(`${tenant}/orders/eu`);

    await ok(await call(`/v1/topics/${tenant}/orders/eu`, { method: "DELETE" }), 204);
    await ok(await call(`/v1/namespaces/${tenant}/orders`, { method: "DELETE" }), 204);
    await expectError(await call(`/v1/namespaces/${tenant}/orders`), "NAMESPACE_NOT_FOUND", 404);
    await ok(await call(`/v1/tenants/${tenant}`, { method: "DELETE" }), 204);
    await expectError(await call(`/v1/tenants/${tenant}`), "TENANT_NOT_FOUND", 404);
    await expectError(await call(`/v1/namespaces/${tenant}`), "TENANT_NOT_FOUND", 404);
    // Its admin ACLs went with it: a new tenant of the same name starts without them.
    expect(await ok(await call(`/v1/tenants/${tenant}/admins`))).toEqual({ tenant, adminRoles: [] });
    await ok(await call(`/v1/tenants/${tenant}`, { method: "PUT" }), 201);
    expect((await ok<TenantInfo>(await call(`/v1/tenants/${tenant}`))).adminRoles).toEqual([]);
  });

  it("a topic in a namespace that does not exist is refused with NAMESPACE_NOT_FOUND and nothing is created", async () => {
    const tenant = `ghost-${uid()}`;
    const e = await expectError(await json("POST", "/v1/topics", { name: `${tenant}/nope/t`, partitions: 2 }), "NAMESPACE_NOT_FOUND", 404);
    expect(e.details).toEqual({ namespace: `${tenant}/nope` });
    await expectError(await call(`/v1/topics/${tenant}/nope/t`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    await expectError(await call(`/v1/tenants/${tenant}`), "TENANT_NOT_FOUND", 404);
    // Namespace under a missing tenant.
    await expectError(await json("PUT", `/v1/namespaces/${tenant}/ns`, {}), "TENANT_NOT_FOUND", 404);
    await expectError(await call(`/v1/namespaces/${tenant}/ns`), "NAMESPACE_NOT_FOUND", 404);
  });

  it("bad input: each refused with its code, changing nothing", async () => {
    const ns = await newNamespace({ messageTtlSeconds: 30 });
    const [tenant] = ns.split("/") as [string];
    const fresh = `fresh-${uid()}`;
    const raw = (method: string, path: string, body: string) => call(path, { method, headers: { "content-type": "application/json" }, body });
    const cases: [string, Promise<Response>, string, number][] = [
      ["tenant: malformed JSON", raw("PUT", `/v1/tenants/${fresh}`, "{"), "INVALID_JSON", 400],
      ["tenant: body an array", json("PUT", `/v1/tenants/${fresh}`, []), "INVALID_REQUEST", 400],
      ["tenant: unknown field", json("PUT", `/v1/tenants/${fresh}`, { admins: ["a"] }), "INVALID_REQUEST", 400],
      ["tenant: adminRoles not an array", json("PUT", `/v1/tenants/${fresh}`, { adminRoles: "alice" }), "INVALID_REQUEST", 400],
      ["tenant: adminRoles with a number", json("PUT", `/v1/tenants/${fresh}`, { adminRoles: ["alice", 7] }), "INVALID_REQUEST", 400],
      ["tenant: another cluster", json("PUT", `/v1/tenants/${fresh}`, { allowedClusters: ["us-west"] }), "INVALID_REQUEST", 400],
      ["tenant: '..' name", call("/v1/tenants/..", { method: "PUT" }), "NOT_FOUND", 404],
      ["tenant: name too long", call(`/v1/tenants/${"x".repeat(65)}`, { method: "PUT" }), "INVALID_REQUEST", 400],
      ["tenant: bad character", call("/v1/tenants/a%20b", { method: "PUT" }), "INVALID_REQUEST", 400],
      ["tenant: wrong content type", call(`/v1/tenants/${fresh}`, { method: "PUT", headers: { "content-type": "text/plain" }, body: "{}" }), "UNSUPPORTED_MEDIA_TYPE", 415],
      ["namespace: unknown field", json("PUT", `/v1/namespaces/${tenant}/other`, { policy: {} }), "INVALID_REQUEST", 400],
      ["namespace: policies not an object", json("PUT", `/v1/namespaces/${tenant}/other`, { policies: [1] }), "INVALID_POLICY", 400],
      ["namespace: bad initial policy", json("PUT", `/v1/namespaces/${tenant}/other`, { policies: { messageTtlSeconds: -1 } }), "INVALID_POLICY", 400],
      ["policy: unknown name", json("PUT", `/v1/namespaces/${ns}/policies/messageTTL`, 5), "INVALID_POLICY", 400],
      ["policy: TTL as a string", json("PUT", `/v1/namespaces/${ns}/policies/messageTtlSeconds`, "60"), "INVALID_POLICY", 400],
      ["policy: TTL fractional", json("PUT", `/v1/namespaces/${ns}/policies/messageTtlSeconds`, 1.5), "INVALID_POLICY", 400],
      ["policy: null value", json("PUT", `/v1/namespaces/${ns}/policies/messageTtlSeconds`, null), "INVALID_POLICY", 400],
      ["policy: malformed JSON", raw("PUT", `/v1/namespaces/${ns}/policies/messageTtlSeconds`, "6 0"), "INVALID_JSON", 400],
      ["policy: retention missing sizeBytes", json("PUT", `/v1/namespaces/${ns}/policies/retention`, { timeMs: 1000 }), "INVALID_POLICY", 400],
      ["policy: retention -2", json("PUT", `/v1/namespaces/${ns}/policies/retention`, { timeMs: -2, sizeBytes: -1 }), "INVALID_POLICY", 400],
      ["policy: backlog quota action", json("PUT", `/v1/namespaces/${ns}/policies/backlogQuota`, { limitBytes: 1000, action: "drop" }), "INVALID_POLICY", 400],
      ["policy: backlog quota 0 bytes", json("PUT", `/v1/namespaces/${ns}/policies/backlogQuota`, { limitBytes: 0 }), "INVALID_POLICY", 400],
      ["policy: rate with no field", json("PUT", `/v1/namespaces/${ns}/policies/publishRate`, {}), "INVALID_POLICY", 400],
      ["policy: rate unknown field", json("PUT", `/v1/namespaces/${ns}/policies/dispatchRate`, { msgs: 5 }), "INVALID_POLICY", 400],
      ["policy: rate 0", json("PUT", `/v1/namespaces/${ns}/policies/dispatchRate`, { messagesPerSecond: 0 }), "INVALID_POLICY", 400],
      ["policy: count negative", json("PUT", `/v1/namespaces/${ns}/policies/maxProducersPerTopic`, -1), "INVALID_POLICY", 400],
      ["policy: count too large", json("PUT", `/v1/namespaces/${ns}/policies/maxSubscriptionsPerTopic`, 2 ** 31), "INVALID_POLICY", 400],
      ["policy: unknown namespace", json("PUT", `/v1/namespaces/${tenant}/missing/policies/messageTtlSeconds`, 5), "NAMESPACE_NOT_FOUND", 404],
      ["policy: remove unknown name", call(`/v1/namespaces/${ns}/policies/ttl`, { method: "DELETE" }), "INVALID_POLICY", 400],
      ["topic: policies not an object", json("POST", "/v1/topics", { name: `${ns}/bad`, policies: 3 }), "INVALID_POLICY", 400],
      ["topic: retention as a policy", json("POST", "/v1/topics", { name: `${ns}/bad`, policies: { retention: { timeMs: 1, sizeBytes: 1 } } }), "INVALID_POLICY", 400],
      ["topic: bad policy value", json("POST", "/v1/topics", { name: `${ns}/bad`, policies: { maxConsumersPerSubscription: "2" } }), "INVALID_POLICY", 400],
      ["topic: configs null unknown", json("PATCH", `/v1/topics/${ns}/nope`, { configs: { "retention.ms": null } }), "UNKNOWN_TOPIC_OR_PARTITION", 404],
    ];
    for (const [what, res, code, status] of cases) {
      const r = await res;
      const text = await r.text();
      expect({ what, status: r.status, code: (JSON.parse(text) as { error: { code: string } }).error.code }, text).toEqual({ what, status, code });
    }
    // Pulsar's rule between policies: a backlog quota above the retention size.
    await ok(await json("PUT", `/v1/namespaces/${ns}/policies/retention`, { timeMs: -1, sizeBytes: 1000 }));
    const rule = await expectError(await json("PUT", `/v1/namespaces/${ns}/policies/backlogQuota`, { limitBytes: 2000, action: "producer_exception" }), "INVALID_POLICY", 400);
    expect(rule.details).toEqual({ policy: "backlogQuota", field: "limitBytes" });
    // Nothing changed: no tenant, no namespace, no topic, the policies as they were.
    await expectError(await call(`/v1/tenants/${fresh}`), "TENANT_NOT_FOUND", 404);
    await expectError(await call(`/v1/namespaces/${tenant}/other`), "NAMESPACE_NOT_FOUND", 404);
    await expectError(await call(`/v1/topics/${ns}/bad`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    const after = await ok<NamespaceDescription>(await call(`/v1/namespaces/${ns}`));
    expect(after.policies).toEqual({ messageTtlSeconds: 30, retention: { timeMs: -1, sizeBytes: 1000 } });
  });
});

describe("policies", () => {
  it("topics inherit namespace policies unless they override; describe names each source; partitions store the effective values", async () => {
    const ns = await newNamespace();
    expect(await ok(await json("PUT", `/v1/namespaces/${ns}/policies/messageTtlSeconds`, 3600))).toMatchObject({
      namespace: ns,
      policies: { messageTtlSeconds: { value: 3600, source: "namespace" }, maxProducersPerTopic: { value: 0, source: "default" } },
    });
    await ok(await json("PUT", `/v1/namespaces/${ns}/policies/retention`, { timeMs: 3_600_000, sizeBytes: 1_048_576 }));
    await ok(await json("PUT", `/v1/namespaces/${ns}/policies/backlogQuota`, { limitBytes: 65_536, action: "consumer_backlog_eviction" }));
    const inherit = await createTopic(`${ns}/inherit`, 2);
    expect(inherit.policies).toEqual({
      messageTtlSeconds: { value: 3600, source: "namespace" },
      retention: { value: { timeMs: 3_600_000, sizeBytes: 1_048_576 }, source: "namespace" },
      backlogQuota: { value: { limitBytes: 65_536, action: "consumer_backlog_eviction" }, source: "namespace" },
      publishRate: { value: { messagesPerSecond: -1, bytesPerSecond: -1 }, source: "default" },
      dispatchRate: { value: { messagesPerSecond: -1, bytesPerSecond: -1 }, source: "default" },
      maxProducersPerTopic: { value: 0, source: "default" },
      maxConsumersPerSubscription: { value: 0, source: "default" },
      maxSubscriptionsPerTopic: { value: 0, source: "default" },
    });
    expect([inherit.configs["retention.ms"], inherit.configs["retention.bytes"]]).toEqual([3_600_000, 1_048_576]);

    const own = await ok<TopicDescription>(
      await json("POST", "/v1/topics", { name: `${ns}/own`, configs: { "retention.ms": 60_000 }, policies: { messageTtlSeconds: 60, publishRate: { bytesPerSecond: 1024 } } }),
      201,
    );
    expect(own.policies.messageTtlSeconds).toEqual({ value: 60, source: "topic" });
    expect(own.policies.publishRate).toEqual({ value: { messagesPerSecond: -1, bytesPerSecond: 1024 }, source: "topic" });
    // Retention per field: the topic's retention.ms, the namespace's size.
    expect(own.policies.retention).toEqual({ value: { timeMs: 60_000, sizeBytes: 1_048_576 }, source: "topic" });
    expect([own.configs["retention.ms"], own.configs["retention.bytes"]]).toEqual([60_000, 1_048_576]);
    // Each config's source (as Kafka's DescribeConfigs): the topic's own, the namespace's retention, or the default.
    const sources = (t: TopicDescription, keys: (keyof TopicDescription["configs"])[]) => keys.map((k) => t.configSources?.[k]);
    expect(sources(inherit, ["retention.ms", "retention.bytes", "cleanup.policy"])).toEqual(["namespace", "namespace", "default"]);
    expect(sources(own, ["retention.ms", "retention.bytes", "segment.bytes"])).toEqual(["topic", "namespace", "default"]);

    // The partitions hold the effective configs and policy values (every partition: 0 and 1).
    const p0 = await partitionConfigs(inherit.topicId);
    expect([p0["retention.ms"], p0["retention.bytes"], p0.policies?.messageTtlSeconds, p0.policies?.backlogQuota]).toEqual([
      3_600_000,
      1_048_576,
      3600,
      { limitBytes: 65_536, action: "consumer_backlog_eviction" },
    ]);

    // The namespace changes: topics that inherit follow (describe and their partitions); overrides stay.
    await ok(await call(`/v1/namespaces/${ns}/policies/messageTtlSeconds`, { method: "DELETE" }));
    await ok(await json("PUT", `/v1/namespaces/${ns}/policies/retention`, { timeMs: 7_200_000, sizeBytes: -1 }));
    const i2 = await describeTopic(`${ns}/inherit`);
    expect(i2.policies.messageTtlSeconds).toEqual({ value: 0, source: "default" });
    expect(i2.configs["retention.ms"]).toBe(7_200_000);
    const p1 = await partitionConfigs(inherit.topicId);
    expect([p1["retention.ms"], p1["retention.bytes"], p1.policies?.messageTtlSeconds]).toEqual([7_200_000, -1, 0]);
    const o2 = await describeTopic(`${ns}/own`);
    expect(o2.policies.messageTtlSeconds).toEqual({ value: 60, source: "topic" });
    expect(o2.policies.retention).toEqual({ value: { timeMs: 60_000, sizeBytes: -1 }, source: "topic" });

    // The topic removes its overrides (null): it inherits again.
    const o3 = await ok<TopicDescription>(await json("PATCH", `/v1/topics/${ns}/own`, { configs: { "retention.ms": null }, policies: { messageTtlSeconds: null } }));
    expect(o3.policies.retention).toEqual({ value: { timeMs: 7_200_000, sizeBytes: -1 }, source: "namespace" });
    expect(o3.policies.messageTtlSeconds).toEqual({ value: 0, source: "default" });
    expect(o3.policies.publishRate.source).toBe("topic");
    expect(sources(o3, ["retention.ms", "retention.bytes"])).toEqual(["namespace", "namespace"]);
    expect((await partitionConfigs(own.topicId))["retention.ms"]).toBe(7_200_000);
    expect((await policiesOf(ns)).retention).toEqual({ value: { timeMs: 7_200_000, sizeBytes: -1 }, source: "namespace" });
  });

  it("a namespace retention that would break a topic's config rules is refused whole", async () => {
    const ns = await newNamespace();
    await createTopic(`${ns}/local`, 1, { "local.retention.ms": 600_000 });
    const e = await expectError(await json("PUT", `/v1/namespaces/${ns}/policies/retention`, { timeMs: 60_000, sizeBytes: -1 }), "INVALID_CONFIG", 400);
    expect(e.details).toMatchObject({ config: "local.retention.ms", topic: `${ns}/local` });
    expect((await policiesOf(ns)).retention.source).toBe("default");
    expect((await describeTopic(`${ns}/local`)).configs["retention.ms"]).toBe(604_800_000);
  });
});

describe("an existing deployment (metadata created before tenants)", () => {
  it("migration 3 adopts the tenants and namespaces its topics use, and their non-default configs as topic overrides", async () => {
    const stub = env.METADATA.getByName(`upgrade-${uid()}`);
    const store = stub as unknown as TenantStore & TopicMetadataStore;
    await store.listTenants();
    const topicId = crypto.randomUUID();
    const configs = { "retention.ms": 1000, "retention.bytes": -1 };
    expect(await partitionObject(topicId).init({ topic: "acme/orders/eu", topicId, partition: 0, configs: { ...DEFAULT_TOPIC_CONFIGS, ...configs } })).toEqual({ ok: true });
    // Back to the schema of migration 2, holding a topic of a namespace nobody created.
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec(`
        DROP INDEX topics_by_namespace;
        ALTER TABLE topics DROP COLUMN policies;
        ALTER TABLE topics DROP COLUMN config_keys;
        DROP TABLE tenants;
        DROP TABLE namespaces;
        UPDATE _rooms SET version = 2 WHERE room = 'metadata';
      `);
      state.storage.sql.exec(
        "INSERT INTO topics (name, tenant, namespace, topic, topic_id, partitions, configs, created_at) VALUES ('acme/orders/eu', 'acme', 'orders', 'eu', ?, 1, ?, 1)",
        topicId,
        JSON.stringify(configs),
      );
    });
    await evictDurableObject(stub);
    const tenants = await store.listTenants();
    expect(tenants.ok && tenants.tenants).toEqual(["acme", "public", "streams"]);
    const ns = await store.describeNamespace("acme/orders");
    expect(ns.ok && { topics: ns.namespace.topics, createdAt: ns.namespace.createdAt }).toEqual({ topics: 1, createdAt: 0 });
    const t = await store.getTopic("acme/orders/eu");
    // retention.ms differs from its default: the topic's own; retention.bytes is the default (-1): inherited.
    expect(t.ok && t.topic.policies.retention).toEqual({ value: { timeMs: 1000, sizeBytes: -1 }, source: "topic" });
    const set = await store.setNamespacePolicies("acme/orders", { retention: { timeMs: 5000, sizeBytes: 4096 } });
    expect(set.ok).toBe(true);
    const t2 = await store.getTopic("acme/orders/eu");
    expect(t2.ok && [t2.topic.configs["retention.ms"], t2.topic.configs["retention.bytes"]]).toEqual([1000, 4096]);
    const stored = await partitionConfigs(topicId);
    expect([stored["retention.ms"], stored["retention.bytes"], stored.policies?.retention]).toEqual([1000, 4096, { timeMs: 1000, sizeBytes: 4096 }]);
  });
});

describe("with auth on", () => {
  let e: Env;
  let admin: string;
  beforeAll(async () => {
    e = authEnv(await makeKeys());
    admin = await hsToken(SUPERUSER);
  });

  it("superusers create tenants; a tenant's admin roles manage its namespaces and policies, and nothing else", async () => {
    const id = uid();
    const tenant = `sec-${id}`;
    const other = `other-${id}`;
    const boss = `boss-${id}`;
    const user = `user-${id}`;
    const bossToken = await hsToken(boss);
    const userToken = await hsToken(user);
    await expectCode(await request(e, "PUT", `/v1/tenants/${tenant}`), 401, "UNAUTHENTICATED");
    await expectCode(await request(e, "PUT", `/v1/tenants/${tenant}`, { token: bossToken, body: { adminRoles: [boss] } }), 403, "NOT_AUTHORIZED");
    await expectOk(await request(e, "PUT", `/v1/tenants/${tenant}`, { token: admin, body: { adminRoles: [boss] } }), 201);
    await expectOk(await request(e, "PUT", `/v1/tenants/${other}`, { token: admin }), 201);

    // The admin role: its tenant's namespaces, policies and topics.
    await expectOk(await request(e, "PUT", `/v1/namespaces/${tenant}/ns`, { token: bossToken }), 201);
    await expectOk(await request(e, "PUT", `/v1/namespaces/${tenant}/ns/policies/maxProducersPerTopic`, { token: bossToken, body: 3 }));
    await expectOk(await request(e, "GET", `/v1/namespaces/${tenant}/ns/policies`, { token: bossToken }));
    await expectOk(await request(e, "GET", `/v1/namespaces/${tenant}`, { token: bossToken }));
    await expectOk(await request(e, "GET", `/v1/tenants/${tenant}`, { token: bossToken }));
    await expectOk(await request(e, "POST", "/v1/topics", { token: bossToken, body: { name: `${tenant}/ns/t` } }), 201);
    expect(await expectOk(await request(e, "GET", "/v1/tenants", { token: bossToken }))).toEqual({ tenants: [tenant] });
    // ... and nothing of another tenant, nor tenant deletion (superusers only).
    await expectCode(await request(e, "PUT", `/v1/namespaces/${other}/ns`, { token: bossToken }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "GET", `/v1/tenants/${other}`, { token: bossToken }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "DELETE", `/v1/tenants/${tenant}`, { token: bossToken }), 403, "NOT_AUTHORIZED");

    // A role granted produce on the namespace may describe it, not read or change its policies, nor delete it.
    await expectOk(await request(e, "POST", `/v1/namespaces/${tenant}/ns/permissions/${user}`, { token: bossToken, body: { actions: ["produce"] } }), 201);
    await expectOk(await request(e, "GET", `/v1/namespaces/${tenant}/ns`, { token: userToken }));
    await expectCode(await request(e, "GET", `/v1/namespaces/${tenant}/ns/policies`, { token: userToken }), 403, "NOT_AUTHORIZED");
    const denied = await expectCode(await request(e, "PUT", `/v1/namespaces/${tenant}/ns/policies/maxProducersPerTopic`, { token: userToken, body: 100 }), 403, "NOT_AUTHORIZED");
    expect(denied.details).toEqual({ resourceType: "namespace", resource: `${tenant}/ns`, operation: "alter-configs" });
    await expectCode(await request(e, "DELETE", `/v1/namespaces/${tenant}/ns/policies/maxProducersPerTopic`, { token: userToken }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "DELETE", `/v1/namespaces/${tenant}/ns`, { token: userToken }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "PUT", `/v1/namespaces/${tenant}/ns2`, { token: userToken }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "GET", `/v1/namespaces/${tenant}`, { token: userToken }), 403, "NOT_AUTHORIZED");
    expect(await expectOk(await request(e, "GET", "/v1/tenants", { token: userToken }))).toEqual({ tenants: [] });
    // The refusals changed nothing.
    const d = (await expectOk(await request(e, "GET", `/v1/namespaces/${tenant}/ns`, { token: admin }))) as NamespaceDescription;
    expect(d.policies).toEqual({ maxProducersPerTopic: 3 });
    await expectCode(await request(e, "GET", `/v1/namespaces/${tenant}/ns2`, { token: admin }), 404, "NAMESPACE_NOT_FOUND");

    // Deleting the namespace takes its grants with it.
    await expectOk(await request(e, "DELETE", `/v1/topics/${tenant}/ns/t`, { token: bossToken }), 204);
    await expectOk(await request(e, "DELETE", `/v1/namespaces/${tenant}/ns`, { token: bossToken }), 204);
    expect(await expectOk(await request(e, "GET", `/v1/acls?resourceType=namespace&resourceName=${tenant}/ns`, { token: admin }))).toEqual({ acls: [] });
  });
});
