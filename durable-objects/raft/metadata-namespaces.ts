/**
 * Tenants, namespaces, their policies and the ACLs as part of the metadata quorum's state
 * machine (durable-objects/raft/metadata-machine.ts; docs/RAFT.md, docs/TENANTS.md): the same
 * rows, answers and error codes as MetadataDO's (durable-objects/metadata-tenants.ts,
 * durable-objects/metadata-security.ts), applied from committed records in log order, so the
 * checks MetadataDO serialises with its mutation queue ("namespace exists" for a topic create,
 * "not empty" for a delete) are serialised by the log.
 *
 * Tables (room `raft-metadata`, migration 3): `rsm_tenants`, `rsm_namespaces` (the columns of
 * MetadataDO's `tenants` and `namespaces`), `rsm_acls` (its `acls`: a tenant's admin roles are
 * the `all` allow ACLs on the tenant, written in the same apply as the tenant, as
 * KRaft keeps ACLs as AccessControlEntryRecords in the same log) and `rsm_requests`
 * (request id -> first answer, for the records' idempotent retry).
 *
 * Runs inside the member's apply transaction: no transactions, clocks or randomness here.
 */
import { aclMatchesFilter, type AclBinding, type AclFilter } from "../../src/protocol/acl.ts";
import { EdgelogError, type ErrorCode } from "../../src/protocol/errors.ts";
import {
  BUILT_IN_NAMESPACES,
  BUILT_IN_TENANTS,
  CLUSTER_NAME,
  checkPolicyRules,
  policyValues,
  resolvePolicies,
  type NamespaceDescription,
  type PolicyOverrides,
  type TenantInfo,
} from "../../src/protocol/policies.ts";
import type { MetadataAnswer, MetadataCommand } from "../../src/metadata/commands.ts";
import {
  aclBindingOf,
  aclColumns,
  builtInNamespace,
  builtInTenant,
  namespaceDescriptionOf,
  namespaceExists,
  namespaceNotEmpty,
  tenantExists,
  tenantInfoOf,
  tenantNotEmpty,
  unknownNamespace,
  unknownTenant,
  type AclRow,
  type NamespaceRow,
  type TenantRow,
} from "../../src/metadata/tenant-security.ts";
import type { Sql } from "../base.ts";

/** Records whose answers are kept for a retry with the same request id (a window of the log, in records). */
export const REQUEST_WINDOW_RECORDS = 10_000;

export type RequestRow = { request_id: string; record_index: number; answer: string };

/** Migration 3 of the room: the tables, the built-in tenants and namespaces. */
export function namespacesMigrationUp(sql: Sql): void {
  sql.run(`
    ALTER TABLE rsm_topics ADD COLUMN policies TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE rsm_topics ADD COLUMN config_keys TEXT;
    CREATE INDEX rsm_topics_by_namespace ON rsm_topics (tenant, namespace);
    CREATE TABLE rsm_tenants (name TEXT PRIMARY KEY, allowed_clusters TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE rsm_namespaces (
      name TEXT PRIMARY KEY, tenant TEXT NOT NULL, namespace TEXT NOT NULL, policies TEXT NOT NULL, created_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX rsm_namespaces_by_tenant ON rsm_namespaces (tenant, name);
    CREATE TABLE rsm_acls (
      principal TEXT NOT NULL, resource_type TEXT NOT NULL, resource_name TEXT NOT NULL,
      pattern_type TEXT NOT NULL, operation TEXT NOT NULL, permission TEXT NOT NULL,
      PRIMARY KEY (principal, resource_type, resource_name, pattern_type, operation, permission)
    ) WITHOUT ROWID;
    CREATE TABLE rsm_requests (request_id TEXT PRIMARY KEY, record_index INTEGER NOT NULL, answer TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX rsm_requests_by_index ON rsm_requests (record_index);
  `);
  insertBuiltIns(sql);
}

/**
 * The built-in tenants and namespaces (`public/default`, `streams/default`), created at 0:
 * they exist in every state (they cannot be deleted), so adding them in a migration or a
 * restore keeps every member's state the same. Topics created before this migration are not
 * adopted here (members migrate at different applied indexes, so what each would adopt
 * differs): the leader proposes `adoptNamespaces` instead, a record like any other.
 */
export function insertBuiltIns(sql: Sql): void {
  const clusters = JSON.stringify([CLUSTER_NAME]);
  for (const t of BUILT_IN_TENANTS) sql.run("INSERT OR IGNORE INTO rsm_tenants (name, allowed_clusters, created_at) VALUES (?, ?, 0)", t, clusters);
  for (const ns of BUILT_IN_NAMESPACES) {
    const [tenant, namespace] = ns.split("/") as [string, string];
    sql.run("INSERT OR IGNORE INTO rsm_namespaces (name, tenant, namespace, policies, created_at) VALUES (?, ?, ?, '{}', 0)", ns, tenant, namespace);
  }
}

type Fail = MetadataAnswer & { ok: false };

const fail = (code: ErrorCode, message: string, details?: Record<string, unknown>): Fail => (details === undefined ? { ok: false, code, message } : { ok: false, code, message, details });

/** An EdgelogError of a shared validator as an answer (apply never throws on bad input). */
export function failOf(e: unknown): Fail {
  if (e instanceof EdgelogError) return fail(e.code, e.message, e.details);
  throw e;
}

const isString = (v: unknown): v is string => typeof v === "string" && v !== "";
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const ACL_FIELDS = ["principal", "resourceType", "resourceName", "patternType", "operation", "permission"] as const;

/**
 * The shape of a tenant, namespace or ACL record, checked before it is applied: a malformed
 * record (a bug in a proposer) is answered INVALID_REQUEST and changes nothing, on every
 * member alike, rather than thrown on (which would stop every member at that entry).
 * @returns what is wrong, or null
 */
export function malformedRecord(c: MetadataCommand): string | null {
  switch (c.type) {
    case "createTenant":
      return isString(c.name) && Array.isArray(c.adminRoles) && c.adminRoles.every(isString) && Number.isSafeInteger(c.createdAt)
        ? null
        : "createTenant needs {name, adminRoles: string[], createdAt}";
    case "deleteTenant":
    case "deleteNamespace":
      return isString(c.name) ? null : `${c.type} needs {name}`;
    case "createNamespace":
      return isString(c.tenant) && isString(c.namespace) && isObject(c.policies) && Number.isSafeInteger(c.createdAt)
        ? null
        : "createNamespace needs {tenant, namespace, policies, createdAt}";
    case "setNamespacePolicies":
      return isString(c.name) && c.name.includes("/") && isObject(c.changes) ? null : "setNamespacePolicies needs {name: tenant/namespace, changes}";
    case "createAcls":
      return Array.isArray(c.bindings) && c.bindings.every((b) => isObject(b) && ACL_FIELDS.every((f) => typeof b[f] === "string")) ? null : "createAcls needs {bindings: AclBinding[]}";
    case "deleteAcls":
      return isObject(c.filter) && Object.values(c.filter).every((v) => v === undefined || typeof v === "string") ? null : "deleteAcls needs {filter}";
    case "createTopic":
      return isObject(c.topic) && isString(c.topic.name) && isString(c.topic.topicId) && Number.isSafeInteger(c.topic.partitions) && isObject(c.topic.configs)
        ? null
        : "createTopic needs {topic: TopicSummary}";
    case "alterTopic":
      return isString(c.name) && isString(c.topicId) && (c.partitions === undefined || Number.isSafeInteger(c.partitions)) && (c.patch === undefined || isObject(c.patch))
        ? null
        : "alterTopic needs {name, topicId, partitions?, patch? | configs?}";
    default:
      return null;
  }
}

/** The tenant, namespace, ACL and request tables of the state machine. */
export class QuorumNamespaces {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  // ---- idempotent retries ----

  /**
   * Answers the record of `requestId` applied at `index`: the first answer again when the id
   * was applied before (within {@link REQUEST_WINDOW_RECORDS} records), else `apply()`'s,
   * remembered. Old answers are dropped by record index, so every member keeps the same ones.
   */
  once(requestId: unknown, index: number, apply: () => MetadataAnswer): MetadataAnswer {
    if (typeof requestId !== "string" || requestId === "") return fail("INVALID_REQUEST", "The metadata record has no requestId.");
    const seen = this.#sql.first<RequestRow>("SELECT * FROM rsm_requests WHERE request_id = ?", requestId);
    if (seen !== undefined) return JSON.parse(seen.answer) as MetadataAnswer;
    const answer = apply();
    this.#sql.run("DELETE FROM rsm_requests WHERE record_index <= ?", index - REQUEST_WINDOW_RECORDS);
    this.#sql.run("INSERT INTO rsm_requests (request_id, record_index, answer) VALUES (?, ?, ?)", requestId, index, JSON.stringify(answer));
    return answer;
  }

  // ---- tenants ----

  createTenant(name: string, adminRoles: readonly string[], createdAt: number): MetadataAnswer {
    if (this.#tenant(name) !== undefined) return tenantExists(name);
    this.#sql.run("INSERT INTO rsm_tenants (name, allowed_clusters, created_at) VALUES (?, ?, ?)", name, JSON.stringify([CLUSTER_NAME]), createdAt);
    for (const role of adminRoles) this.#insertAcl({ principal: role, resourceType: "tenant", resourceName: name, patternType: "literal", operation: "all", permission: "allow" });
    return { ok: true, tenant: this.#info(this.#tenant(name)!) };
  }

  listTenants(): string[] {
    return this.#sql.all<{ name: string }>("SELECT name FROM rsm_tenants ORDER BY name").map((r) => r.name);
  }

  describeTenant(name: string): MetadataAnswer {
    const row = this.#tenant(name);
    return row === undefined ? unknownTenant(name) : { ok: true, tenant: this.#info(row) };
  }

  deleteTenant(name: string): MetadataAnswer {
    const builtIn = builtInTenant(name);
    if (builtIn !== null) return builtIn;
    if (this.#tenant(name) === undefined) return unknownTenant(name);
    const notEmpty = tenantNotEmpty(name, this.#namespacesOf(name));
    if (notEmpty !== null) return notEmpty;
    this.#sql.run("DELETE FROM rsm_tenants WHERE name = ?", name);
    this.#sql.run("DELETE FROM rsm_acls WHERE resource_type = 'tenant' AND pattern_type = 'literal' AND resource_name = ?", name);
    return { ok: true };
  }

  // ---- namespaces ----

  createNamespace(tenant: string, namespace: string, policies: PolicyOverrides, createdAt: number): MetadataAnswer {
    const full = `${tenant}/${namespace}`;
    if (this.#tenant(tenant) === undefined) return unknownTenant(tenant);
    if (this.namespaceRow(full) !== undefined) return namespaceExists(full);
    try {
      checkPolicyRules(policyValues(resolvePolicies(policies, {})));
    } catch (e) {
      return failOf(e);
    }
    this.#sql.run("INSERT INTO rsm_namespaces (name, tenant, namespace, policies, created_at) VALUES (?, ?, ?, ?, ?)", full, tenant, namespace, JSON.stringify(policies), createdAt);
    return { ok: true, namespace: this.describeRow(this.namespaceRow(full)!) };
  }

  listNamespaces(tenant: string): MetadataAnswer & { namespaces?: string[] } {
    if (this.#tenant(tenant) === undefined) return unknownTenant(tenant);
    return { ok: true, namespaces: this.#namespacesOf(tenant) };
  }

  describeNamespace(full: string): MetadataAnswer {
    const row = this.namespaceRow(full);
    return row === undefined ? unknownNamespace(full) : { ok: true, namespace: this.describeRow(row) };
  }

  deleteNamespace(full: string): MetadataAnswer {
    const builtIn = builtInNamespace(full);
    if (builtIn !== null) return builtIn;
    const row = this.namespaceRow(full);
    if (row === undefined) return unknownNamespace(full);
    const notEmpty = namespaceNotEmpty(full, this.#topicCount(row));
    if (notEmpty !== null) return notEmpty;
    this.#sql.run("DELETE FROM rsm_namespaces WHERE name = ?", full);
    // Pulsar's grants (produce/consume/functions) and any other literal ACL on the namespace.
    this.#sql.run("DELETE FROM rsm_acls WHERE resource_type = 'namespace' AND pattern_type = 'literal' AND resource_name = ?", full);
    return { ok: true };
  }

  namespaceRow(full: string): NamespaceRow | undefined {
    return this.#sql.first<NamespaceRow>("SELECT * FROM rsm_namespaces WHERE name = ?", full);
  }

  /** The policies set on a namespace, or undefined when it does not exist. */
  namespacePolicies(full: string): PolicyOverrides | undefined {
    const row = this.namespaceRow(full);
    return row === undefined ? undefined : (JSON.parse(row.policies) as PolicyOverrides);
  }

  writeNamespacePolicies(full: string, policies: PolicyOverrides): void {
    this.#sql.run("UPDATE rsm_namespaces SET policies = ? WHERE name = ?", JSON.stringify(policies), full);
  }

  describeRow(row: NamespaceRow): NamespaceDescription {
    return namespaceDescriptionOf(row, this.#topicCount(row));
  }

  /** Records a tenant and a namespace (created at 0, no policies) for every topic whose namespace has no row. */
  adoptNamespaces(): MetadataAnswer {
    const clusters = JSON.stringify([CLUSTER_NAME]);
    this.#sql.run("INSERT OR IGNORE INTO rsm_tenants (name, allowed_clusters, created_at) SELECT DISTINCT tenant, ?, 0 FROM rsm_topics", clusters);
    this.#sql.run(
      "INSERT OR IGNORE INTO rsm_namespaces (name, tenant, namespace, policies, created_at) SELECT DISTINCT tenant || '/' || namespace, tenant, namespace, '{}', 0 FROM rsm_topics",
    );
    return { ok: true };
  }

  /** Whether some topic's namespace has no row (the leader then proposes `adoptNamespaces`). */
  hasOrphanTopics(): boolean {
    return (
      this.#sql.first<{ one: number }>("SELECT 1 AS one FROM rsm_topics t WHERE NOT EXISTS (SELECT 1 FROM rsm_namespaces n WHERE n.name = t.tenant || '/' || t.namespace) LIMIT 1") !==
      undefined
    );
  }

  // ---- ACLs ----

  createAcls(bindings: readonly AclBinding[]): MetadataAnswer {
    let created = 0;
    for (const b of bindings) created += this.#insertAcl(b);
    return { ok: true, created };
  }

  deleteAcls(filter: AclFilter): MetadataAnswer {
    const deleted = this.listAcls().filter((b) => aclMatchesFilter(b, filter));
    for (const b of deleted) {
      this.#sql.run("DELETE FROM rsm_acls WHERE principal = ? AND resource_type = ? AND resource_name = ? AND pattern_type = ? AND operation = ? AND permission = ?", ...aclColumns(b));
    }
    return { ok: true, deleted };
  }

  /** Every binding, in MetadataDO's order. */
  listAcls(): AclBinding[] {
    return this.#sql.all<AclRow>("SELECT * FROM rsm_acls ORDER BY resource_type, resource_name, principal, operation, permission").map(aclBindingOf);
  }

  // ---- snapshot ----

  /** The rows of every table, for the state machine's image. */
  image(): { tenants: TenantRow[]; namespaces: NamespaceRow[]; acls: AclRow[]; requests: RequestRow[] } {
    return {
      tenants: this.#sql.all<TenantRow>("SELECT * FROM rsm_tenants ORDER BY name"),
      namespaces: this.#sql.all<NamespaceRow>("SELECT * FROM rsm_namespaces ORDER BY name"),
      acls: this.#sql.all<AclRow>("SELECT * FROM rsm_acls ORDER BY principal, resource_type, resource_name, pattern_type, operation, permission"),
      requests: this.#sql.all<RequestRow>("SELECT * FROM rsm_requests ORDER BY record_index, request_id"),
    };
  }

  /** Replaces every table with an image's rows; an image from before migration 3 (no `tenants`) leaves the built-ins only. */
  restore(image: { tenants?: TenantRow[]; namespaces?: NamespaceRow[]; acls?: AclRow[]; requests?: RequestRow[] }): void {
    for (const t of ["rsm_tenants", "rsm_namespaces", "rsm_acls", "rsm_requests"]) this.#sql.run(`DELETE FROM ${t}`);
    if (image.tenants === undefined) {
      insertBuiltIns(this.#sql);
      return;
    }
    for (const t of image.tenants) this.#sql.run("INSERT INTO rsm_tenants (name, allowed_clusters, created_at) VALUES (?, ?, ?)", t.name, t.allowed_clusters, t.created_at);
    for (const n of image.namespaces ?? []) {
      this.#sql.run("INSERT INTO rsm_namespaces (name, tenant, namespace, policies, created_at) VALUES (?, ?, ?, ?, ?)", n.name, n.tenant, n.namespace, n.policies, n.created_at);
    }
    for (const a of image.acls ?? []) this.#insertAcl(aclBindingOf(a));
    for (const r of image.requests ?? []) this.#sql.run("INSERT INTO rsm_requests (request_id, record_index, answer) VALUES (?, ?, ?)", r.request_id, r.record_index, r.answer);
  }

  // ---- helpers ----

  /** 1 when the binding is new, 0 when it existed. */
  #insertAcl(b: AclBinding): number {
    return this.#sql.all(
      "INSERT OR IGNORE INTO rsm_acls (principal, resource_type, resource_name, pattern_type, operation, permission) VALUES (?, ?, ?, ?, ?, ?) RETURNING 1 AS one",
      ...aclColumns(b),
    ).length;
  }

  #tenant(name: string): TenantRow | undefined {
    return this.#sql.first<TenantRow>("SELECT * FROM rsm_tenants WHERE name = ?", name);
  }

  #namespacesOf(tenant: string): string[] {
    return this.#sql.all<{ name: string }>("SELECT name FROM rsm_namespaces WHERE tenant = ? ORDER BY name", tenant).map((r) => r.name);
  }

  #topicCount(row: NamespaceRow): number {
    return this.#sql.first<{ n: number }>("SELECT COUNT(*) AS n FROM rsm_topics WHERE tenant = ? AND namespace = ?", row.tenant, row.namespace)?.n ?? 0;
  }

  #info(row: TenantRow): TenantInfo {
    const adminRoles = this.#sql
      .all<{ principal: string }>(
        "SELECT principal FROM rsm_acls WHERE resource_type = 'tenant' AND pattern_type = 'literal' AND resource_name = ? AND operation = 'all' AND permission = 'allow' ORDER BY principal",
        row.name,
      )
      .map((r) => r.principal);
    return tenantInfoOf(row, adminRoles, this.#namespacesOf(row.name));
  }
}
