/**
 * The pure half of the tenant, namespace, ACL, SCRAM-user and quota tables that MetadataDO and
 * the metadata quorum share (src/metadata/tenant-security.ts): the refusals' exact codes,
 * messages and details, and the row mappings. The stores' parity over SQL is tested in
 * test/workers/metadata-quorum-tenants.test.ts and metadata-quorum-users.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  aclBindingOf,
  aclColumns,
  builtInNamespace,
  builtInTenant,
  generationsByUser,
  namespaceDescriptionOf,
  namespaceNotEmpty,
  quotaEntriesOf,
  scramUserExportOf,
  scramUserOf,
  scramUsersOf,
  tenantInfoOf,
  tenantNotEmpty,
  unknownNamespace,
  userNotFound,
} from "../../src/metadata/tenant-security.ts";

describe("refusals", () => {
  it("answer the codes, messages and details of the error table", () => {
    expect(unknownNamespace("acme/ns")).toEqual({
      ok: false,
      code: "NAMESPACE_NOT_FOUND",
      message: "Namespace acme/ns does not exist: create it first (PUT /v1/namespaces/acme/ns).",
      details: { namespace: "acme/ns" },
    });
    expect(builtInTenant("public")).toEqual({
      ok: false,
      code: "INVALID_REQUEST",
      message: "Tenant public is built in and cannot be deleted.",
      details: { field: "tenant", reason: "built_in" },
    });
    expect(builtInTenant("acme")).toBeNull();
    expect(builtInNamespace("public/default")?.details).toEqual({ field: "namespace", reason: "built_in" });
    expect(builtInNamespace("acme/default")).toBeNull();
    expect(namespaceNotEmpty("acme/ns", 0)).toBeNull();
    expect(namespaceNotEmpty("acme/ns", 2)).toEqual({
      ok: false,
      code: "NAMESPACE_NOT_EMPTY",
      message: "Namespace acme/ns still has 2 topic(s): delete them first.",
      details: { namespace: "acme/ns", topics: 2 },
    });
    expect(userNotFound('al"ice', null).message).toBe('No SCRAM user "al\\"ice".');
    expect(userNotFound("bob", "SCRAM-SHA-512")).toEqual({ ok: false, code: "USER_NOT_FOUND", message: 'No SCRAM user "bob" with SCRAM-SHA-512.', details: { user: "bob" } });
  });

  it("TENANT_NOT_EMPTY names at most 100 namespaces and counts them all", () => {
    expect(tenantNotEmpty("acme", [])).toBeNull();
    const names = Array.from({ length: 150 }, (_, i) => `acme/ns${i}`);
    const r = tenantNotEmpty("acme", names);
    expect(r?.message).toBe("Tenant acme still has 150 namespace(s): delete them first.");
    expect(r?.details).toEqual({ tenant: "acme", namespaces: names.slice(0, 100), count: 150 });
  });
});

describe("row mappings", () => {
  it("tenants and namespaces", () => {
    expect(tenantInfoOf({ name: "acme", allowed_clusters: '["edgelog"]', created_at: 5 }, ["alice"], ["acme/ns"])).toEqual({
      name: "acme",
      adminRoles: ["alice"],
      allowedClusters: ["edgelog"],
      namespaces: ["acme/ns"],
      createdAt: 5,
    });
    const d = namespaceDescriptionOf({ name: "acme/ns", tenant: "acme", namespace: "ns", policies: '{"maxProducersPerTopic":4}', created_at: 7 }, 3);
    expect([d.name, d.tenant, d.namespace, d.policies, d.topics, d.createdAt]).toEqual(["acme/ns", "acme", "ns", { maxProducersPerTopic: 4 }, 3, 7]);
    expect(d.effectivePolicies.maxProducersPerTopic).toEqual({ value: 4, source: "namespace" });
  });

  it("ACL rows and bound columns round-trip", () => {
    const row = { principal: "alice", resource_type: "topic", resource_name: "acme/ns/t", pattern_type: "prefixed", operation: "read", permission: "deny" };
    const b = aclBindingOf(row);
    expect(b).toEqual({ principal: "alice", resourceType: "topic", resourceName: "acme/ns/t", patternType: "prefixed", operation: "read", permission: "deny" });
    expect(aclColumns(b)).toEqual(["alice", "topic", "acme/ns/t", "prefixed", "read", "deny"]);
  });

  it("SCRAM users grouped by name in row order; the export carries the keys as hex", () => {
    const rows = [
      { name: "alice", mechanism: "SCRAM-SHA-256", iterations: 4096 },
      { name: "alice", mechanism: "SCRAM-SHA-512", iterations: 5000 },
      { name: "bob", mechanism: "SCRAM-SHA-256", iterations: 4096 },
    ];
    expect(scramUsersOf(rows)).toEqual([
      {
        name: "alice",
        mechanisms: [
          { mechanism: "SCRAM-SHA-256", iterations: 4096 },
          { mechanism: "SCRAM-SHA-512", iterations: 5000 },
        ],
      },
      { name: "bob", mechanisms: [{ mechanism: "SCRAM-SHA-256", iterations: 4096 }] },
    ]);
    expect(scramUserOf("carol", [])).toBeUndefined();
    expect(scramUserOf("bob", [rows[2]!])).toEqual({ name: "bob", mechanisms: [{ mechanism: "SCRAM-SHA-256", iterations: 4096 }] });
    const bytes = (...b: number[]) => new Uint8Array(b).buffer;
    expect(scramUserExportOf({ name: "bob", mechanism: "SCRAM-SHA-256", salt: bytes(0, 255), iterations: 4096, stored_key: bytes(1), server_key: bytes(16, 32), generation: "g1" })).toEqual({
      name: "bob",
      mechanism: "SCRAM-SHA-256",
      salt: "00ff",
      iterations: 4096,
      storedKey: "01",
      serverKey: "1020",
      generation: "g1",
    });
    expect(
      generationsByUser([
        { name: "alice", generation: "a" },
        { name: "bob", generation: "b" },
        { name: "alice", generation: "c" },
      ]),
    ).toEqual({ alice: ["a", "c"], bob: ["b"] });
  });

  it("quota rows become one entry per entity, '' read as null", () => {
    expect(
      quotaEntriesOf([
        { user: "", client_id: "", key: "producer_byte_rate", value: 100 },
        { user: "alice", client_id: "", key: "consumer_byte_rate", value: 5 },
        { user: "alice", client_id: "", key: "producer_byte_rate", value: 7 },
        { user: "alice", client_id: "app", key: "request_percentage", value: 50 },
      ]),
    ).toEqual([
      { user: null, clientId: null, values: { producer_byte_rate: 100 } },
      { user: "alice", clientId: null, values: { consumer_byte_rate: 5, producer_byte_rate: 7 } },
      { user: "alice", clientId: "app", values: { request_percentage: 50 } },
    ]);
  });
});
