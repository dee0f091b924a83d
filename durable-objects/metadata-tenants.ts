/**
 * Tenants and namespaces of the cluster (Pulsar's model; docs/TENANTS.md), kept by MetadataDO
 * beside the topics (room `metadata`, migration 3):
 *
 * - tenants(name PK, allowed_clusters JSON, created_at ms);
 * - namespaces(name PK = `tenant/namespace`, tenant, namespace, policies JSON (only the
 *   policies set), created_at ms), index on tenant;
 * - topics gains `policies` (JSON, the topic's own policy overrides, default `{}`) and
 *   `config_keys` (JSON array of the configs the topic set itself; NULL for topics created
 *   before this migration, read as "the configs that differ from their defaults").
 *
 * The migration creates the built-in `public/default` and `streams/default` (and their tenants)
 * and adopts every tenant and namespace that existing topics already use, so an existing
 * deployment keeps all its topics reachable and creatable.
 *
 * A tenant's admin roles are not a column: they are the `all` allow ACLs on the tenant (the
 * authorizer's notion of tenant admin, docs/SECURITY.md), written in the same transaction as
 * the tenant row. Deleting a tenant or namespace also removes the literal ACLs on it, so a
 * later tenant or namespace of the same name does not inherit old grants.
 *
 * Everything here is synchronous SQLite in one transaction per write; MetadataDO serialises
 * the writes that also push configs to partitions.
 */
import type { RpcResult } from "../src/protocol/errors.ts";
import { BUILT_IN_NAMESPACES, BUILT_IN_TENANTS, CLUSTER_NAME, type NamespaceDescription, type PolicyOverrides, type TenantInfo } from "../src/protocol/policies.ts";
import {
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
  type NamespaceRow,
  type TenantRow,
} from "../src/metadata/tenant-security.ts";
import type { Migration, Sql } from "./base.ts";

export const TENANTS_MIGRATION_NAME = "tenants";

export function tenantsMigration(version: number): Migration {
  return {
    version,
    name: TENANTS_MIGRATION_NAME,
    up(sql) {
      sql.run(`
        CREATE TABLE tenants (
          name TEXT PRIMARY KEY,
          allowed_clusters TEXT NOT NULL,
          created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE namespaces (
          name TEXT PRIMARY KEY,
          tenant TEXT NOT NULL,
          namespace TEXT NOT NULL,
          policies TEXT NOT NULL,
          created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX namespaces_by_tenant ON namespaces (tenant, name);
        ALTER TABLE topics ADD COLUMN policies TEXT NOT NULL DEFAULT '{}';
        ALTER TABLE topics ADD COLUMN config_keys TEXT;
        CREATE INDEX topics_by_namespace ON topics (tenant, namespace);
      `);
      const clusters = JSON.stringify([CLUSTER_NAME]);
      for (const t of BUILT_IN_TENANTS) sql.run("INSERT INTO tenants (name, allowed_clusters, created_at) VALUES (?, ?, 0)", t, clusters);
      for (const ns of BUILT_IN_NAMESPACES) {
        const [tenant, namespace] = ns.split("/") as [string, string];
        sql.run("INSERT INTO namespaces (name, tenant, namespace, policies, created_at) VALUES (?, ?, ?, '{}', 0)", ns, tenant, namespace);
      }
      // Adopt what existing topics use (created_at 0 = adopted).
      sql.run("INSERT OR IGNORE INTO tenants (name, allowed_clusters, created_at) SELECT DISTINCT tenant, ?, 0 FROM topics", clusters);
      sql.run(
        `INSERT OR IGNORE INTO namespaces (name, tenant, namespace, policies, created_at)
         SELECT DISTINCT tenant || '/' || namespace, tenant, namespace, '{}', 0 FROM topics`,
      );
    },
  };
}

/** Tenant and namespace rows and their ACL side effects; no partition I/O. */
export class TenantTables {
  readonly #sql: Sql;
  readonly #storage: DurableObjectStorage;

  constructor(sql: Sql, storage: DurableObjectStorage) {
    this.#sql = sql;
    this.#storage = storage;
  }

  // ---- tenants ----

  /** Errors: TENANT_ALREADY_EXISTS. Names and roles are validated by the caller. */
  createTenant(name: string, adminRoles: readonly string[]): RpcResult<{ tenant: TenantInfo }> {
    if (this.#tenant(name) !== undefined) return tenantExists(name);
    this.#storage.transactionSync(() => {
      this.#sql.run("INSERT INTO tenants (name, allowed_clusters, created_at) VALUES (?, ?, ?)", name, JSON.stringify([CLUSTER_NAME]), Date.now());
      for (const role of adminRoles) {
        this.#sql.run(
          `INSERT OR IGNORE INTO acls (principal, resource_type, resource_name, pattern_type, operation, permission)
           VALUES (?, 'tenant', ?, 'literal', 'all', 'allow')`,
          role,
          name,
        );
      }
    });
    return { ok: true, tenant: this.#info(this.#tenant(name)!) };
  }

  listTenants(): string[] {
    return this.#sql.all<{ name: string }>("SELECT name FROM tenants ORDER BY name").map((r) => r.name);
  }

  /** Errors: TENANT_NOT_FOUND. */
  describeTenant(name: string): RpcResult<{ tenant: TenantInfo }> {
    const row = this.#tenant(name);
    return row === undefined ? unknownTenant(name) : { ok: true, tenant: this.#info(row) };
  }

  /** Errors: TENANT_NOT_FOUND, TENANT_NOT_EMPTY, INVALID_REQUEST (a built-in tenant). */
  deleteTenant(name: string): RpcResult<object> {
    const builtIn = builtInTenant(name);
    if (builtIn !== null) return builtIn;
    if (this.#tenant(name) === undefined) return unknownTenant(name);
    const notEmpty = tenantNotEmpty(name, this.#namespacesOf(name));
    if (notEmpty !== null) return notEmpty;
    this.#storage.transactionSync(() => {
      this.#sql.run("DELETE FROM tenants WHERE name = ?", name);
      this.#sql.run("DELETE FROM acls WHERE resource_type = 'tenant' AND pattern_type = 'literal' AND resource_name = ?", name);
    });
    return { ok: true };
  }

  // ---- namespaces ----

  /** Errors: TENANT_NOT_FOUND, NAMESPACE_ALREADY_EXISTS. `policies` already validated. */
  createNamespace(tenant: string, namespace: string, policies: PolicyOverrides): RpcResult<{ namespace: NamespaceDescription }> {
    const full = `${tenant}/${namespace}`;
    if (this.#tenant(tenant) === undefined) return unknownTenant(tenant);
    if (this.namespaceRow(full) !== undefined) return namespaceExists(full);
    this.#sql.run("INSERT INTO namespaces (name, tenant, namespace, policies, created_at) VALUES (?, ?, ?, ?, ?)", full, tenant, namespace, JSON.stringify(policies), Date.now());
    return { ok: true, namespace: this.describeRow(this.namespaceRow(full)!) };
  }

  /** Errors: TENANT_NOT_FOUND. */
  listNamespaces(tenant: string): RpcResult<{ namespaces: string[] }> {
    if (this.#tenant(tenant) === undefined) return unknownTenant(tenant);
    return { ok: true, namespaces: this.#namespacesOf(tenant) };
  }

  /** Errors: NAMESPACE_NOT_FOUND, NAMESPACE_NOT_EMPTY, INVALID_REQUEST (a built-in namespace). */
  deleteNamespace(full: string): RpcResult<object> {
    const builtIn = builtInNamespace(full);
    if (builtIn !== null) return builtIn;
    const row = this.namespaceRow(full);
    if (row === undefined) return unknownNamespace(full);
    const notEmpty = namespaceNotEmpty(full, this.#topicCount(row));
    if (notEmpty !== null) return notEmpty;
    this.#storage.transactionSync(() => {
      this.#sql.run("DELETE FROM namespaces WHERE name = ?", full);
      // Pulsar's grants (produce/consume/functions) and any other literal ACL on the namespace.
      this.#sql.run("DELETE FROM acls WHERE resource_type = 'namespace' AND pattern_type = 'literal' AND resource_name = ?", full);
    });
    return { ok: true };
  }

  namespaceRow(full: string): NamespaceRow | undefined {
    return this.#sql.first<NamespaceRow>("SELECT * FROM namespaces WHERE name = ?", full);
  }

  /** The policies set on a namespace, or undefined when it does not exist. */
  namespacePolicies(full: string): PolicyOverrides | undefined {
    const row = this.namespaceRow(full);
    return row === undefined ? undefined : (JSON.parse(row.policies) as PolicyOverrides);
  }

  /** Replaces the policies set on a namespace (the caller merged and validated them). */
  writeNamespacePolicies(full: string, policies: PolicyOverrides): void {
    this.#sql.run("UPDATE namespaces SET policies = ? WHERE name = ?", JSON.stringify(policies), full);
  }

  describeRow(row: NamespaceRow): NamespaceDescription {
    return namespaceDescriptionOf(row, this.#topicCount(row));
  }

  // ---- helpers ----

  #tenant(name: string): TenantRow | undefined {
    return this.#sql.first<TenantRow>("SELECT * FROM tenants WHERE name = ?", name);
  }

  #namespacesOf(tenant: string): string[] {
    return this.#sql.all<{ name: string }>("SELECT name FROM namespaces WHERE tenant = ? ORDER BY name", tenant).map((r) => r.name);
  }

  #topicCount(row: NamespaceRow): number {
    return this.#sql.first<{ n: number }>("SELECT COUNT(*) AS n FROM topics WHERE tenant = ? AND namespace = ?", row.tenant, row.namespace)?.n ?? 0;
  }

  #info(row: TenantRow): TenantInfo {
    const adminRoles = this.#sql
      .all<{ principal: string }>(
        "SELECT principal FROM acls WHERE resource_type = 'tenant' AND pattern_type = 'literal' AND resource_name = ? AND operation = 'all' AND permission = 'allow' ORDER BY principal",
        row.name,
      )
      .map((r) => r.principal);
    return tenantInfoOf(row, adminRoles, this.#namespacesOf(row.name));
  }
}
