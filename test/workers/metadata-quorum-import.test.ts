/**
 * The one-time import of MetadataDO's state into the metadata quorum (docs/RAFT.md, "Migration
 * from MetadataDO"): state created with the quorum off (tenants, namespaces with policies,
 * topics with records, ACLs, a SCRAM user, quotas, producer ids) is all found once the switch is
 * on, none twice, with the topics' partitions still served; an import stopped half-way is
 * completed by the next run with every row once; once done, the leader never imports again.
 */
import { env } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import type { MetadataExport } from "../../src/metadata/commands.ts";
import { IMPORT_PART_ROWS } from "../../src/metadata/import.ts";
import { RaftMetadataStore } from "../../src/metadata/raft-store.ts";
import { METADATA_OBJECT_NAME, metadataStore } from "../../src/metadata/store.ts";
import type { RpcResult } from "../../src/protocol/errors.ts";
import { appCall, eventually as pollUntil, quorumGroup } from "./metadata-quorum-helpers.ts";
import { crashStartedMembers, trackMembers } from "./raft-helpers.ts";

const app = createApp();
const offEnv = env as Env;
const onEnv = { ...env, EDGELOG_METADATA_QUORUM: "1" } as Env;

const call = (e: Env, method: string, path: string, body?: unknown): Promise<Response> => appCall(app, e, method, path, body);

async function ok(res: Response, status = 200): Promise<unknown> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return text === "" ? null : JSON.parse(text);
}

/** Polls every 100 ms, up to 30 s (an import runs in the leader's sweep). */
const eventually = (what: string, check: () => Promise<boolean>): Promise<void> => pollUntil(what, check, 30_000, 100);

afterAll(crashStartedMembers);

async function exportOf(): Promise<MetadataExport> {
  const r = (await env.METADATA.getByName(METADATA_OBJECT_NAME).exportMetadata()) as RpcResult<{ export: MetadataExport }>;
  if (!r.ok) throw new Error(r.code);
  return r.export;
}

/** Everything the gateway shows, as lists whose duplicates the test looks for. */
async function view(e: Env, tenant: string) {
  const topics = ((await ok(await call(e, "GET", "/v1/topics"))) as { topics: { name: string }[] }).topics.map((t) => t.name).filter((n) => n.startsWith(tenant));
  const tenants = ((await ok(await call(e, "GET", "/v1/tenants"))) as { tenants: string[] }).tenants.filter((n) => n === tenant);
  const namespaces = ((await ok(await call(e, "GET", `/v1/namespaces/${tenant}`))) as { namespaces: string[] }).namespaces;
  const namespace = await ok(await call(e, "GET", `/v1/namespaces/${tenant}/ns`));
  const acls = ((await ok(await call(e, "GET", `/v1/acls?resourceName=${tenant}`))) as { acls: unknown[] }).acls;
  const users = ((await ok(await call(e, "GET", "/v1/users"))) as { users: { name: string }[] }).users.filter((u) => u.name.startsWith(tenant));
  const quotas = ((await ok(await call(e, "GET", "/v1/quotas"))) as { quotas: { user: string | null }[] }).quotas.filter((q) => q.user?.startsWith(tenant));
  return { topics, tenants, namespaces, namespace, acls, users, quotas };
}

describe("switching an existing deployment to the metadata quorum", () => {
  it("finds every tenant, namespace, topic (with its records), ACL, user and quota, none twice; the import never runs again", async () => {
    const t = `imp-${crypto.randomUUID().slice(0, 8)}`;
    // ---- with the quorum off: state in MetadataDO ----
    await ok(await call(offEnv, "PUT", `/v1/tenants/${t}`, { adminRoles: ["alice"] }), 201);
    await ok(await call(offEnv, "PUT", `/v1/namespaces/${t}/ns`, { policies: { maxProducersPerTopic: 4 } }), 201);
    await ok(await call(offEnv, "POST", "/v1/topics", { name: `${t}/ns/orders`, partitions: 2, configs: { "retention.ms": 3_600_000 } }), 201);
    await ok(await call(offEnv, "POST", "/v1/topics", { name: `${t}/ns/audit`, partitions: 1 }), 201);
    for (const p of [0, 1]) await ok(await call(offEnv, "POST", `/v1/topics/${t}/ns/orders/partitions/${p}/records`, { records: [{ value: `a${p}` }, { value: `b${p}` }] }));
    await ok(
      await call(offEnv, "POST", "/v1/acls", { principal: "bob", resourceType: "topic", resourceName: `${t}/ns/orders`, patternType: "literal", operation: "read", permission: "allow" }),
      201,
    );
    await ok(await call(offEnv, "PUT", `/v1/users/${t}-carol`, { password: "carol-pw" }));
    await ok(await call(offEnv, "PUT", "/v1/quotas", { user: `${t}-carol`, producer_byte_rate: 2048 }));
    const lastProducerId = ((await ok(await call(offEnv, "POST", "/v1/producers", {}))) as { producerId: number }).producerId;
    const before = await view(offEnv, t);
    expect(before.topics).toEqual([`${t}/ns/audit`, `${t}/ns/orders`]);

    // ---- the switch on: the group `metadata`, its first leader imports ----
    trackMembers("metadata", ["m1"]);
    const quorum = new RaftMetadataStore(env, [{ id: "m1" }]);
    await eventually("the import is done", async () => {
      const s = await quorum.importStatus();
      return s.ok && s.done;
    });
    const after = await view(onEnv, t);
    expect(after).toEqual(before);
    expect(new Set(after.acls.map((a) => JSON.stringify(a))).size).toBe(after.acls.length);
    const described = (await ok(await call(onEnv, "GET", `/v1/topics/${t}/ns/orders`))) as {
      topicId: string;
      configs: Record<string, unknown>;
      policies: Record<string, { value: unknown; source: string }>;
    };
    expect(described.configs["retention.ms"]).toBe(3_600_000);
    expect(described.policies.maxProducersPerTopic).toEqual({ value: 4, source: "namespace" });
    const local = await metadataStore(offEnv).getTopic(`${t}/ns/orders`);
    expect(local.ok && local.topic.topicId).toBe(described.topicId);
    // The partitions are the same objects: their records are served.
    for (const p of [0, 1]) {
      const fetched = (await ok(await call(onEnv, "GET", `/v1/topics/${t}/ns/orders/partitions/${p}/records?offset=0`))) as { records: { value: string }[] };
      expect(fetched.records.map((r) => r.value)).toEqual([`a${p}`, `b${p}`]);
    }
    await ok(await call(onEnv, "POST", `/v1/topics/${t}/ns/orders/partitions/0/records`, { records: [{ value: "c0" }] }));
    // Producer ids continue past MetadataDO's.
    const next = ((await ok(await call(onEnv, "POST", "/v1/producers", {}))) as { producerId: number }).producerId;
    expect(next).toBeGreaterThan(lastProducerId);
    // The imported user logs in at the quorum (its credential came over salted, as stored).
    expect((await quorum.authenticateScram(`${t}-carol`, "carol-pw")).ok).toBe(true);

    // Done means done: a topic deleted in the quorum is not imported back by later sweeps.
    await ok(await call(onEnv, "DELETE", `/v1/topics/${t}/ns/audit`), 204);
    await new Promise((r) => setTimeout(r, 5_000)); // two sweep periods of the default clock
    expect((await view(onEnv, t)).topics).toEqual([`${t}/ns/orders`]);
  });

  it("an import stopped half-way is completed by the next run: every row once", async () => {
    const t = `half-${crypto.randomUUID().slice(0, 8)}`;
    await ok(await call(offEnv, "PUT", `/v1/tenants/${t}`, { adminRoles: ["root"] }), 201);
    await ok(await call(offEnv, "PUT", `/v1/namespaces/${t}/ns`), 201);
    for (let i = 0; i < 3; i++) await ok(await call(offEnv, "POST", "/v1/topics", { name: `${t}/ns/t${i}` }), 201);
    await ok(await call(offEnv, "PUT", `/v1/users/${t}-u`, { password: "pw-u" }));
    const exported = await exportOf();
    const { store } = quorumGroup("half");
    // A group that is not `metadata` never imports by itself: this test drives it.
    const first = await store.importFrom(exported, { stopAfterParts: 2 });
    expect(first.parts).toBe(2);
    expect(await store.importStatus()).toMatchObject({ ok: true, done: false });
    const tenants = await store.listTenants();
    expect(tenants.ok && tenants.tenants.includes(t)).toBe(true);
    // Every row but the built-in tenants and namespaces, which every quorum state has.
    const builtIn = ["public", "streams", "public/default", "streams/default"];
    const rows = (Object.keys(exported) as (keyof MetadataExport)[]).flatMap((k) => (Array.isArray(exported[k]) ? (exported[k] as { name?: string }[]) : []));
    const total = rows.filter((r) => r.name === undefined || !builtIn.includes(r.name)).length;
    expect(total).toBeGreaterThan(first.imported);
    // The next leader's run, from the start: what the first added is not added again.
    const second = await store.importFrom(exported);
    expect(first.imported + second.imported).toBe(total);
    expect(second.parts).toBeGreaterThan(first.parts);
    expect(await store.importStatus()).toMatchObject({ ok: true, done: true });
    const again = await store.importFrom(exported);
    expect(again.imported).toBe(0);
    const topics = await store.listTopics();
    expect(topics.ok && topics.topics.map((x) => x.name).filter((n) => n.startsWith(t))).toEqual([`${t}/ns/t0`, `${t}/ns/t1`, `${t}/ns/t2`]);
    const users = await store.listScramUsers();
    expect(users.ok && users.users.filter((u) => u.name === `${t}-u`).length).toBe(1);
    // Each imported topic's partitions are proven initialised (its task ran and was recorded done).
    const got = await store.getTopic(`${t}/ns/t1`);
    expect(got.ok).toBe(true);
    expect(IMPORT_PART_ROWS).toBeGreaterThan(0);
  });
});
