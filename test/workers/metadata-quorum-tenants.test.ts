/**
 * Tenants, namespaces, their policies and the ACLs in the metadata quorum (docs/RAFT.md "The
 * metadata quorum", docs/TENANTS.md): records of the quorum's state machine with MetadataDO's
 * answers and error codes; the namespace check and the "not empty" checks in log order; a
 * namespace policy change reaching the partitions of its topics (through the record's tasks,
 * or the leader's sweep after a proposer's crash); a leader crash between operations (all
 * present, none twice); a follower that missed compacted records installing the snapshot; and
 * the gateway's routes with the switch on, auth off and on (a tenant's admin roles are ACL
 * records of the quorum, and the authorizer follows them).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import { encodeMetadataCommand, type LifecycleTask, type MetadataAnswer, type MetadataCommand } from "../../src/metadata/commands.ts";
import { metadataStore, tenantStore, type TenantStore, type TopicMetadataStore } from "../../src/metadata/store.ts";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { DEFAULT_TOPIC_CONFIGS } from "../../src/protocol/config.ts";
import { resolvePolicies } from "../../src/protocol/policies.ts";
import type { TopicConfigs } from "../../src/protocol/types.ts";
import { securityStore } from "../../src/auth/store.ts";
import { authEnv, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";
import { appCall, CrashingStore, eventually, leaderOf, quorumGroup } from "./metadata-quorum-helpers.ts";
import { crashStartedMembers, member, trackMembers } from "./raft-helpers.ts";

/** The configs a partition object holds (its `meta` row). */
function partitionConfigs(topicId: string, p: number): Promise<TopicConfigs> {
  const stub = env.PARTITION.getByName(partitionObjectName(topicId, p));
  return runInDurableObject(stub, (_i, state) => JSON.parse(state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'configs'").one().value) as TopicConfigs);
}

afterAll(crashStartedMembers);

const unique = (p: string) => `${p}-${crypto.randomUUID().slice(0, 8)}`;

describe("tenants and namespaces in the metadata quorum", () => {
  it("create, list, describe and delete answer as MetadataDO does, with its error codes", async () => {
    const { store } = quorumGroup("tn");
    const t = unique("acme");
    const created = await store.createTenant(t, ["alice", "bob"]);
    expect(created).toMatchObject({ ok: true, tenant: { name: t, adminRoles: ["alice", "bob"], allowedClusters: ["edgelog"], namespaces: [] } });
    expect(await store.createTenant(t, [])).toMatchObject({ ok: false, code: "TENANT_ALREADY_EXISTS", details: { tenant: t } });
    // The admin roles are ACLs on the tenant (in the quorum's log, with the tenant).
    const acls = await store.listAcls();
    expect(acls.ok && acls.acls.filter((b) => b.resourceName === t)).toEqual([
      { principal: "alice", resourceType: "tenant", resourceName: t, patternType: "literal", operation: "all", permission: "allow" },
      { principal: "bob", resourceType: "tenant", resourceName: t, patternType: "literal", operation: "all", permission: "allow" },
    ]);

    expect(await store.createNamespace(`${t}-nope`, "ns", undefined)).toMatchObject({ ok: false, code: "TENANT_NOT_FOUND" });
    const ns = await store.createNamespace(t, "orders", { messageTtlSeconds: 60 });
    expect(ns).toMatchObject({ ok: true, namespace: { name: `${t}/orders`, tenant: t, namespace: "orders", policies: { messageTtlSeconds: 60 }, topics: 0 } });
    expect(ns.ok && ns.namespace.effectivePolicies.messageTtlSeconds).toEqual({ value: 60, source: "namespace" });
    expect(await store.createNamespace(t, "orders", undefined)).toMatchObject({ ok: false, code: "NAMESPACE_ALREADY_EXISTS" });
    expect(await store.createNamespace(t, "bad", { messageTtlSeconds: -5 })).toMatchObject({ ok: false, code: "INVALID_POLICY" });
    expect(await store.createNamespace(t, "billing", undefined)).toMatchObject({ ok: true });
    expect(await store.listNamespaces(t)).toEqual({ ok: true, namespaces: [`${t}/billing`, `${t}/orders`] });
    expect(await store.listNamespaces(`${t}-nope`)).toMatchObject({ ok: false, code: "TENANT_NOT_FOUND" });
    const tenants = await store.listTenants();
    expect(tenants.ok && tenants.tenants.filter((n) => n === t || n === "public" || n === "streams")).toEqual([t, "public", "streams"]);
    expect(await store.describeTenant(t)).toMatchObject({ ok: true, tenant: { namespaces: [`${t}/billing`, `${t}/orders`] } });
    expect(await store.describeTenant(`${t}-nope`)).toMatchObject({ ok: false, code: "TENANT_NOT_FOUND" });

    // The namespace check, in log order: no topic outside an existing namespace.
    expect(await store.createTopic({ name: `${t}/missing/x` })).toMatchObject({ ok: false, code: "NAMESPACE_NOT_FOUND", details: { namespace: `${t}/missing` } });
    expect(await store.createTopic({ name: `${t}/orders/o1`, partitions: 1 })).toMatchObject({ ok: true });
    expect(await store.describeNamespace(`${t}/orders`)).toMatchObject({ ok: true, namespace: { topics: 1 } });

    // Not-empty refusals, built-in refusals.
    expect(await store.deleteNamespace(`${t}/orders`)).toMatchObject({ ok: false, code: "NAMESPACE_NOT_EMPTY", details: { namespace: `${t}/orders`, topics: 1 } });
    expect(await store.deleteTenant(t)).toMatchObject({ ok: false, code: "TENANT_NOT_EMPTY", details: { tenant: t, namespaces: [`${t}/billing`, `${t}/orders`], count: 2 } });
    expect(await store.deleteNamespace("public/default")).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { reason: "built_in" } });
    expect(await store.deleteTenant("public")).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { reason: "built_in" } });
    expect(await store.deleteNamespace(`${t}/nope`)).toMatchObject({ ok: false, code: "NAMESPACE_NOT_FOUND" });

    // Emptied, they go, and so do the literal ACLs on them.
    expect(await store.createAcls([{ principal: "carol", resourceType: "namespace", resourceName: `${t}/orders`, patternType: "literal", operation: "write", permission: "allow" }])).toEqual(
      {
        ok: true,
        created: 1,
      },
    );
    expect(await store.deleteTopic(`${t}/orders/o1`)).toMatchObject({ ok: true });
    expect(await store.deleteNamespace(`${t}/orders`)).toEqual({ ok: true });
    expect(await store.deleteNamespace(`${t}/billing`)).toEqual({ ok: true });
    expect(await store.describeNamespace(`${t}/orders`)).toMatchObject({ ok: false, code: "NAMESPACE_NOT_FOUND" });
    expect(await store.deleteTenant(t)).toEqual({ ok: true });
    expect(await store.describeTenant(t)).toMatchObject({ ok: false, code: "TENANT_NOT_FOUND" });
    const after = await store.listAcls();
    expect(after.ok && after.acls.filter((b) => b.resourceName.startsWith(t))).toEqual([]);
    // A tenant of the same name later does not inherit the old grants.
    expect(await store.createTenant(t, [])).toMatchObject({ ok: true, tenant: { adminRoles: [] } });
  });

  it("a namespace policy change reaches its topics' partitions; a refused change writes nothing; a proposer's crash is completed by the sweep", async () => {
    const { store, specs, options } = quorumGroup("np");
    const crashing = new CrashingStore(env, specs, options);
    const t = unique("pol");
    expect((await store.createTenant(t, [])).ok).toBe(true);
    expect((await store.createNamespace(t, "ns", undefined)).ok).toBe(true);
    const created = await store.createTopic({ name: `${t}/ns/a`, partitions: 2, policies: { maxProducersPerTopic: 3 } });
    expect(created.ok).toBe(true);
    const other = await store.createTopic({ name: `${t}/ns/b`, partitions: 1, configs: { "retention.ms": 1_000 } });
    expect(other.ok).toBe(true);
    if (!created.ok || !other.ok) return;
    const a = created.topic.topicId;
    const b = other.topic.topicId;
    expect((await partitionConfigs(a, 1)).policies?.maxProducersPerTopic).toBe(3);

    // Set: the topics see it with its source, and their partitions hold it.
    const set = await store.setNamespacePolicies(`${t}/ns`, { maxSubscriptionsPerTopic: 5, retention: { timeMs: 3_600_000, sizeBytes: -1 } });
    expect(set).toMatchObject({ ok: true, namespace: { policies: { maxSubscriptionsPerTopic: 5, retention: { timeMs: 3_600_000, sizeBytes: -1 } } } });
    const got = await store.getTopic(`${t}/ns/a`);
    expect(
      got.ok && [got.topic.policies.maxSubscriptionsPerTopic, got.topic.policies.maxProducersPerTopic, got.topic.configs["retention.ms"], got.topic.configSources?.["retention.ms"]],
    ).toEqual([{ value: 5, source: "namespace" }, { value: 3, source: "topic" }, 3_600_000, "namespace"]);
    for (const p of [0, 1]) {
      const c = await partitionConfigs(a, p);
      expect([c.policies?.maxSubscriptionsPerTopic, c.policies?.maxProducersPerTopic, c["retention.ms"]]).toEqual([5, 3, 3_600_000]);
    }
    // b set retention.ms itself: its own value wins over the namespace's retention.
    const bc = await partitionConfigs(b, 0);
    expect([bc.policies?.maxSubscriptionsPerTopic, bc["retention.ms"]]).toEqual([5, 1_000]);

    // Refused (a backlog quota above the retention size is not allowed): nothing changes.
    const refused = await store.setNamespacePolicies(`${t}/ns`, { retention: { timeMs: -1, sizeBytes: 1_000 }, backlogQuota: { limitBytes: 5_000, action: "producer_request_hold" } });
    expect(refused).toMatchObject({ ok: false, code: "INVALID_POLICY" });
    expect(await store.describeNamespace(`${t}/ns`)).toMatchObject({ ok: true, namespace: { policies: { maxSubscriptionsPerTopic: 5, retention: { timeMs: 3_600_000, sizeBytes: -1 } } } });
    expect(await store.setNamespacePolicies(`${t}/nope`, { maxSubscriptionsPerTopic: 1 })).toMatchObject({ ok: false, code: "NAMESPACE_NOT_FOUND" });

    // The proposer dies after the commit: the partitions do not have it yet; the leader's sweep pushes it.
    const crashed = await crashing.setNamespacePolicies(`${t}/ns`, { maxSubscriptionsPerTopic: null, messageTtlSeconds: 30 });
    expect(crashed).toMatchObject({ ok: false, code: "UNAVAILABLE" });
    expect((await partitionConfigs(a, 0)).policies?.messageTtlSeconds).not.toBe(30);
    await eventually("the sweep pushes the namespace change to every partition", async () => {
      const cs = await Promise.all([partitionConfigs(a, 0), partitionConfigs(a, 1), partitionConfigs(b, 0)]);
      return cs.every((c) => c.policies?.messageTtlSeconds === 30 && c.policies?.maxSubscriptionsPerTopic === 0);
    });
    await eventually("no task left", async () => {
      const r = await member(options.groupId, await leaderOf(options.groupId, ["m1", "m2", "m3"])).localRead({ type: "pendingLifecycle" });
      return r.ok && (r.result as { tasks: LifecycleTask[] }).tasks.length === 0;
    });
    // And a topic created now in the namespace starts with it.
    const c = await store.createTopic({ name: `${t}/ns/c`, partitions: 1 });
    expect(c.ok && (await partitionConfigs(c.topic.topicId, 0)).policies?.messageTtlSeconds).toBe(30);
  });

  it("a leader crash between operations: every tenant and namespace is present once; a retried record answers its first answer", async () => {
    const { store, ids, groupId } = quorumGroup("tc");
    const t = unique("crash");
    const names = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${t}-${from + i}`);
    for (const name of names(0, 3)) {
      expect((await store.createTenant(name, [`admin-${name}`])).ok).toBe(true);
      expect((await store.createNamespace(name, "ns", undefined)).ok).toBe(true);
    }
    const leader = await leaderOf(groupId, ids);
    expect((await member(groupId, leader).setFaults({ crashed: true })).ok).toBe(true);
    for (const name of names(3, 6)) {
      expect((await store.createTenant(name, [`admin-${name}`])).ok).toBe(true);
      expect((await store.createNamespace(name, "ns", undefined)).ok).toBe(true);
    }
    expect(await store.deleteNamespace(`${t}-5/ns`)).toEqual({ ok: true });
    expect(await store.deleteTenant(`${t}-5`)).toEqual({ ok: true });
    const listed = await store.listTenants();
    expect(listed.ok && listed.tenants.filter((n) => n.startsWith(`${t}-`))).toEqual(names(0, 5));
    for (const name of names(0, 5)) expect(await store.describeTenant(name)).toMatchObject({ ok: true, tenant: { adminRoles: [`admin-${name}`], namespaces: [`${name}/ns`] } });

    // The same record applied twice (a client's retry after an unknown outcome): the first answer, no second effect.
    const alive = ids.filter((id) => id !== leader);
    const now = member(groupId, await leaderOf(groupId, alive));
    const retried: MetadataCommand = { type: "createTenant", requestId: crypto.randomUUID(), name: `${t}-retry`, adminRoles: ["r"], createdAt: 1 };
    const first = await now.propose(encodeMetadataCommand(retried));
    const second = await now.propose(encodeMetadataCommand(retried));
    expect(first.ok && (first.result as MetadataAnswer).ok).toBe(true);
    expect(second.ok && second.result).toEqual(first.ok && first.result);
    const del: MetadataCommand = { type: "deleteTenant", requestId: crypto.randomUUID(), name: `${t}-retry` };
    const d1 = await now.propose(encodeMetadataCommand(del));
    const d2 = await now.propose(encodeMetadataCommand(del));
    expect([d1.ok && d1.result, d2.ok && d2.result]).toEqual([{ ok: true }, { ok: true }]);

    // A malformed record is answered, never thrown on: the group goes on.
    const bad = await now.propose(new TextEncoder().encode(JSON.stringify({ type: "createAcls", requestId: "x", bindings: 5 })));
    expect(bad.ok && bad.result).toMatchObject({ ok: false, code: "INVALID_REQUEST" });
    expect((await store.createTenant(`${t}-after`, [])).ok).toBe(true);
    await store.deleteTenant(`${t}-after`);

    // The crashed member restarts from its journal and holds the same tenants.
    expect((await member(groupId, leader).setFaults({})).ok).toBe(true);
    await eventually("the restarted member holds every tenant", async () => {
      const r = await member(groupId, leader).localRead({ type: "listTenants" });
      return r.ok && JSON.stringify((r.result as { tenants: string[] }).tenants.filter((n) => n.startsWith(`${t}-`))) === JSON.stringify(names(0, 5));
    });
  });

  it("snapshots carry them: a follower that missed compacted records installs the snapshot; a restart of every member keeps them", async () => {
    const { store, ids, groupId } = quorumGroup("ts", { compactEveryEntries: 4 });
    const t = unique("snap");
    expect((await store.createTenant(t, ["alice"])).ok).toBe(true);
    const leader = await leaderOf(groupId, ids);
    const follower = ids.find((id) => id !== leader)!;
    const fs = await member(groupId, follower).status();
    const appliedAtCrash = fs.ok ? fs.status.appliedIndex : Number.NaN;
    expect((await member(groupId, follower).setFaults({ crashed: true })).ok).toBe(true);
    // Records the follower misses, more than a compaction's worth.
    for (let i = 0; i < 4; i++) expect((await store.createNamespace(t, `ns${i}`, { messageTtlSeconds: 10 + i })).ok).toBe(true);
    expect((await store.createTopic({ name: `${t}/ns0/x`, policies: { maxProducersPerTopic: 2 } })).ok).toBe(true);
    expect((await store.setNamespacePolicies(`${t}/ns0`, { maxSubscriptionsPerTopic: 7 })).ok).toBe(true);
    expect((await store.createAcls([{ principal: "bob", resourceType: "tenant", resourceName: t, patternType: "literal", operation: "describe", permission: "allow" }])).ok).toBe(true);
    expect((await store.deleteNamespace(`${t}/ns3`)).ok).toBe(true);
    const ls = await member(
      groupId,
      await leaderOf(
        groupId,
        ids.filter((id) => id !== follower),
      ),
    ).status();
    // The log the follower needs is compacted away at the leader: only the snapshot can bring it up.
    expect(ls.ok && ls.status.snapshotIndex > appliedAtCrash).toBe(true);

    expect((await member(groupId, follower).setFaults({})).ok).toBe(true);
    const view = async (id: string) => {
      const q = async (query: Record<string, string>) => {
        const r = await member(groupId, id).localRead(query);
        return r.ok ? r.result : r.code;
      };
      return JSON.stringify([
        await q({ type: "describeTenant", name: t }),
        await q({ type: "describeNamespace", name: `${t}/ns0` }),
        await q({ type: "getTopic", name: `${t}/ns0/x` }),
        ((await q({ type: "listAcls" })) as { acls: { resourceName: string }[] }).acls.filter((b) => b.resourceName === t),
      ]);
    };
    const expected = await view(
      await leaderOf(
        groupId,
        ids.filter((id) => id !== follower),
      ),
    );
    expect(expected).toContain(`${t}/ns2`);
    expect(expected).not.toContain(`${t}/ns3`);
    await eventually("the follower installs the snapshot and holds the same tenants, namespaces, policies and ACLs", async () => (await view(follower)) === expected);

    // Every member crashes and restarts from its storage: nothing is lost.
    for (const id of ids) await member(groupId, id).setFaults({ crashed: true });
    for (const id of ids) await member(groupId, id).setFaults({});
    const described = await store.describeTenant(t);
    expect(described).toMatchObject({ ok: true, tenant: { adminRoles: ["alice"], namespaces: [`${t}/ns0`, `${t}/ns1`, `${t}/ns2`] } });
    const got = await store.getTopic(`${t}/ns0/x`);
    expect(got.ok && [got.topic.policies.maxSubscriptionsPerTopic, got.topic.policies.maxProducersPerTopic, got.topic.policies.messageTtlSeconds]).toEqual([
      { value: 7, source: "namespace" },
      { value: 2, source: "topic" },
      { value: 10, source: "namespace" },
    ]);
  });

  it("topics recorded before tenants moved into the quorum get their namespace adopted by the leader", async () => {
    const { store, ids, groupId } = quorumGroup("ad");
    const t = unique("old");
    expect((await store.listTenants()).ok).toBe(true); // bootstraps the group
    const leader = member(groupId, await leaderOf(groupId, ids));
    // A createTopic record of the earlier form: no namespace check, no policies.
    const topic = { name: `${t}/legacy/x`, tenant: t, namespace: "legacy", topic: "x", topicId: crypto.randomUUID(), partitions: 1, createdAt: 1 };
    const r = await leader.propose(encodeMetadataCommand({ type: "createTopic", topic: { ...topic, configs: DEFAULT_TOPIC_CONFIGS, policies: resolvePolicies({}, {}) } }));
    expect(r.ok && (r.result as MetadataAnswer).ok).toBe(true);
    await eventually("the leader's sweep adopts the namespace", async () => {
      const d = await store.describeNamespace(`${t}/legacy`);
      return d.ok && d.namespace.topics === 1 && d.namespace.createdAt === 0;
    });
    expect(await store.describeTenant(t)).toMatchObject({ ok: true, tenant: { namespaces: [`${t}/legacy`], createdAt: 0 } });
  });
});

describe("the same answers as MetadataDO", () => {
  it("one script of tenant, namespace, policy and topic calls answers alike on both stores (creation times and the quorum's metadataOffset aside)", async () => {
    const { store: quorum } = quorumGroup("eq");
    const local = tenantStore(env);
    const localTopics = metadataStore(env);
    const t = unique("same");
    type Stores = { tenants: TenantStore; topics: TopicMetadataStore };
    const script = async ({ tenants, topics }: Stores): Promise<unknown[]> => {
      const out: unknown[] = [];
      const step = async (p: Promise<unknown>) => out.push(await p);
      await step(tenants.createTenant(t, ["zed", "amy"]));
      await step(tenants.createTenant(t, []));
      await step(tenants.createNamespace(`${t}-x`, "ns", undefined));
      await step(tenants.createNamespace(t, "a", { messageTtlSeconds: 30, retention: { timeMs: 86_400_000, sizeBytes: -1 } }));
      await step(tenants.createNamespace(t, "a", undefined));
      await step(tenants.createNamespace(t, "b", { backlogQuota: { limitBytes: 10, action: "nope" } }));
      await step(tenants.createNamespace(t, "b", { retention: { timeMs: -1, sizeBytes: 1_000 }, backlogQuota: { limitBytes: 5_000, action: "producer_request_hold" } }));
      await step(topics.createTopic({ name: `${t}/zz/x` }));
      const created = await topics.createTopic({ name: `${t}/a/x`, partitions: 2, configs: { "cleanup.policy": "compact" }, policies: { maxProducersPerTopic: 2 } });
      out.push(created.ok ? { ...created.topic, topicId: "", partitionDetails: created.topic.partitionDetails.length } : created);
      await step(tenants.setNamespacePolicies(`${t}/a`, { maxSubscriptionsPerTopic: 4, messageTtlSeconds: null }));
      await step(tenants.setNamespacePolicies(`${t}/a`, { maxSubscriptionsPerTopic: -4 }));
      await step(tenants.setNamespacePolicies(`${t}/q`, { maxSubscriptionsPerTopic: 4 }));
      const got = await topics.getTopic(`${t}/a/x`);
      out.push(got.ok ? { ...got.topic, topicId: "" } : got);
      const altered = await topics.alterTopic(`${t}/a/x`, { configs: { "retention.ms": 1_000 }, policies: { maxProducersPerTopic: null } });
      out.push(altered.ok ? { ...altered.topic, topicId: "", partitionDetails: altered.topic.partitionDetails.length } : altered);
      await step(topics.alterTopic(`${t}/a/x`, { policies: { retention: { timeMs: 1, sizeBytes: 1 } } }));
      await step(tenants.describeNamespace(`${t}/a`));
      await step(tenants.deleteNamespace(`${t}/a`));
      await step(tenants.deleteTenant(t));
      await step(tenants.listNamespaces(t));
      await step(tenants.describeTenant(t));
      await step(topics.deleteTopic(`${t}/a/x`));
      await step(tenants.deleteNamespace(`${t}/a`));
      await step(tenants.deleteTenant(t));
      await step(tenants.describeTenant(t));
      return out.map((o) => JSON.parse(JSON.stringify(o, (k, v) => (k === "createdAt" ? 0 : k === "metadataOffset" ? undefined : v))) as unknown);
    };
    const a = await script({ tenants: local, topics: localTopics });
    const b = await script({ tenants: quorum, topics: quorum });
    expect(b).toEqual(a);
    // (A script whose answers were all errors would prove little.)
    expect(a.filter((x) => (x as { ok?: boolean }).ok !== false).length).toBeGreaterThan(8);
  });
});

describe("the tenant routes with EDGELOG_METADATA_QUORUM = 1", () => {
  const app = createApp();
  const quorumEnv = { ...env, EDGELOG_METADATA_QUORUM: "1" } as Env;
  const call = (method: string, path: string, body?: unknown): Promise<Response> => appCall(app, quorumEnv, method, path, body);

  it("tenant, namespace, policy and topic through the gateway live in the quorum; MetadataDO never hears of them", async () => {
    trackMembers("metadata", ["m1"]);
    const t = unique("gw");
    expect((await call("PUT", `/v1/tenants/${t}`, { adminRoles: ["alice"] })).status).toBe(201);
    expect((await call("PUT", `/v1/tenants/${t}`, {})).status).toBe(409);
    expect((await call("PUT", `/v1/namespaces/${t}/ns`, { policies: { maxProducersPerTopic: 4 } })).status).toBe(201);
    const missing = await call("POST", "/v1/topics", { name: `${t}/other/x` });
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, "NAMESPACE_NOT_FOUND"]);
    const created = await call("POST", "/v1/topics", { name: `${t}/ns/x`, partitions: 1, policies: { maxSubscriptionsPerTopic: 1 } });
    expect(created.status, await created.clone().text()).toBe(201);
    expect((await call("PUT", `/v1/namespaces/${t}/ns/policies/messageTtlSeconds`, 90)).status).toBe(200);
    const described = (await (await call("GET", `/v1/topics/${t}/ns/x`)).json()) as { policies: Record<string, { value: unknown; source: string }> };
    expect([described.policies.messageTtlSeconds, described.policies.maxProducersPerTopic, described.policies.maxSubscriptionsPerTopic]).toEqual([
      { value: 90, source: "namespace" },
      { value: 4, source: "namespace" },
      { value: 1, source: "topic" },
    ]);
    // The topic's limit holds at its partition (pushed at create).
    expect((await call("PUT", `/v1/topics/${t}/ns/x/subscriptions/a`, {})).status).toBe(201);
    expect((await call("PUT", `/v1/topics/${t}/ns/x/subscriptions/b`, {})).status).toBe(409);
    const notEmpty = await call("DELETE", `/v1/namespaces/${t}/ns`);
    expect([notEmpty.status, ((await notEmpty.json()) as { error: { code: string } }).error.code]).toEqual([409, "NAMESPACE_NOT_EMPTY"]);
    const admins = (await (await call("GET", `/v1/tenants/${t}/admins`)).json()) as { adminRoles: string[] };
    expect(admins.adminRoles).toEqual(["alice"]);
    // MetadataDO does not know the tenant.
    expect(await tenantStore(env).describeTenant(t)).toMatchObject({ ok: false, code: "TENANT_NOT_FOUND" });
    expect((await call("DELETE", `/v1/topics/${t}/ns/x`)).status).toBe(204);
    expect((await call("DELETE", `/v1/namespaces/${t}/ns`)).status).toBe(204);
    expect((await call("DELETE", `/v1/tenants/${t}`)).status).toBe(204);
    expect((await call("GET", `/v1/tenants/${t}`)).status).toBe(404);
  });
});

describe("tenant admin roles from the quorum's ACLs, with auth on", () => {
  it("a tenant's admin role (an ACL record of the quorum) manages its namespaces and grants, and nothing else", async () => {
    trackMembers("metadata", ["m1"]);
    const e = authEnv(await makeKeys(), { EDGELOG_METADATA_QUORUM: "1" });
    const admin = await hsToken(SUPERUSER);
    const id = crypto.randomUUID().slice(0, 8);
    const tenant = `qa-${id}`;
    const other = `qb-${id}`;
    const boss = `boss-${id}`;
    const user = `user-${id}`;
    const bossToken = await hsToken(boss);
    const userToken = await hsToken(user);
    await expectCode(await request(e, "PUT", `/v1/tenants/${tenant}`, { token: bossToken, body: { adminRoles: [boss] } }), 403, "NOT_AUTHORIZED");
    await expectOk(await request(e, "PUT", `/v1/tenants/${tenant}`, { token: admin, body: { adminRoles: [boss] } }), 201);
    await expectOk(await request(e, "PUT", `/v1/tenants/${other}`, { token: admin }), 201);
    await expectOk(await request(e, "PUT", `/v1/namespaces/${tenant}/ns`, { token: bossToken }), 201);
    await expectOk(await request(e, "PUT", `/v1/namespaces/${tenant}/ns/policies/maxProducersPerTopic`, { token: bossToken, body: 3 }));
    await expectCode(await request(e, "PUT", `/v1/namespaces/${other}/ns`, { token: bossToken }), 403, "NOT_AUTHORIZED");
    expect(await expectOk(await request(e, "GET", "/v1/tenants", { token: bossToken }))).toEqual({ tenants: [tenant] });
    // A Pulsar grant by the tenant admin: an ACL record too.
    await expectCode(await request(e, "GET", `/v1/namespaces/${tenant}/ns`, { token: userToken }), 403, "NOT_AUTHORIZED");
    await expectOk(await request(e, "POST", `/v1/namespaces/${tenant}/ns/permissions/${user}`, { token: bossToken, body: { actions: ["produce"] } }), 201);
    await expectOk(await request(e, "GET", `/v1/namespaces/${tenant}/ns`, { token: userToken }));
    // The bindings are the quorum's: MetadataDO's security store has none of them.
    const local = await securityStore(env).securitySnapshot();
    expect(local.ok && local.snapshot.acls.filter((b) => b.resourceName.startsWith(tenant))).toEqual([]);
    const acls = (await expectOk(await request(e, "GET", `/v1/acls?resourceName=${tenant}`, { token: admin }))) as { acls: { principal: string }[] };
    expect(acls.acls.map((b) => b.principal)).toEqual([boss]);
    // Deleting the tenant (emptied first) takes its roles with it: the same name later grants nothing.
    await expectOk(await request(e, "DELETE", `/v1/namespaces/${tenant}/ns`, { token: admin }), 204);
    await expectOk(await request(e, "DELETE", `/v1/tenants/${tenant}`, { token: admin }), 204);
    await expectOk(await request(e, "PUT", `/v1/tenants/${tenant}`, { token: admin }), 201);
    await expectCode(await request(e, "PUT", `/v1/namespaces/${tenant}/ns`, { token: bossToken }), 403, "NOT_AUTHORIZED");
  });
});
