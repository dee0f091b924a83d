/**
 * The tenant, namespace, ACL, SCRAM-user and quota tables as both metadata stores keep them:
 * MetadataDO (durable-objects/metadata-tenants.ts, durable-objects/metadata-security.ts) and
 * the metadata quorum's state machine (durable-objects/raft/metadata-namespaces.ts,
 * durable-objects/raft/metadata-users.ts, the same columns in `rsm_` tables). Here: the row
 * shapes, their mappings to answers, and the refusals, so both stores answer with the same
 * codes, messages and details (test/workers/metadata-quorum-tenants.test.ts and
 * metadata-quorum-users.test.ts run one script against both). The SQL stays with each store.
 *
 * Pure module: no Workers imports, no I/O.
 */
import { toHex } from "../auth/hex.ts";
import type { ScramCredential, ScramMechanism } from "../auth/scram.ts";
import type { QuotaEntry, QuotaKey, ScramUserSummary } from "../auth/store.ts";
import type { AclBinding } from "../protocol/acl.ts";
import type { ErrorCode } from "../protocol/errors.ts";
import { BUILT_IN_NAMESPACES, BUILT_IN_TENANTS, resolvePolicies, type NamespaceDescription, type PolicyOverrides, type TenantInfo } from "../protocol/policies.ts";
import type { ScramUserExport } from "./commands.ts";

/** `allowed_clusters`: JSON array of cluster names; `created_at`: ms (0 for built-in and adopted tenants). */
export type TenantRow = { name: string; allowed_clusters: string; created_at: number };
/** `name`: `tenant/namespace`; `policies`: JSON, only the policies set; `created_at`: ms (0 for built-in and adopted ones). */
export type NamespaceRow = { name: string; tenant: string; namespace: string; policies: string; created_at: number };
export type AclRow = { principal: string; resource_type: string; resource_name: string; pattern_type: string; operation: string; permission: string };
/** One RFC 5802 credential of a user for one mechanism (salted keys as bytes, never the password). */
export type ScramUserRow = { name: string; mechanism: string; salt: ArrayBuffer; iterations: number; stored_key: ArrayBuffer; server_key: ArrayBuffer; generation: string };
/** One quota value of an entity (`''` = no such component, Kafka's default entity). */
export type QuotaRow = { user: string; client_id: string; key: string; value: number };

/** A refusal as both stores answer it (an RPC ErrorResult and a MetadataAnswer alike). */
export type Refusal = { ok: false; code: ErrorCode; message: string; details: Record<string, unknown> };

const refusal = (code: ErrorCode, message: string, details: Record<string, unknown>): Refusal => ({ ok: false, code, message, details });

// ---- tenants and namespaces ----

export const unknownTenant = (name: string): Refusal => refusal("TENANT_NOT_FOUND", `Tenant ${name} does not exist.`, { tenant: name });
export const unknownNamespace = (full: string): Refusal =>
  refusal("NAMESPACE_NOT_FOUND", `Namespace ${full} does not exist: create it first (PUT /v1/namespaces/${full}).`, { namespace: full });
export const tenantExists = (name: string): Refusal => refusal("TENANT_ALREADY_EXISTS", `Tenant ${name} already exists.`, { tenant: name });
export const namespaceExists = (full: string): Refusal => refusal("NAMESPACE_ALREADY_EXISTS", `Namespace ${full} already exists.`, { namespace: full });

/** INVALID_REQUEST when `name` is a built-in tenant (never deleted), else null. */
export function builtInTenant(name: string): Refusal | null {
  return (BUILT_IN_TENANTS as readonly string[]).includes(name)
    ? refusal("INVALID_REQUEST", `Tenant ${name} is built in and cannot be deleted.`, { field: "tenant", reason: "built_in" })
    : null;
}

/** INVALID_REQUEST when `full` is a built-in namespace (never deleted), else null. */
export function builtInNamespace(full: string): Refusal | null {
  return (BUILT_IN_NAMESPACES as readonly string[]).includes(full)
    ? refusal("INVALID_REQUEST", `Namespace ${full} is built in and cannot be deleted.`, { field: "namespace", reason: "built_in" })
    : null;
}

/** TENANT_NOT_EMPTY with at most the first 100 of its `namespaces` (`count` is all of them); null when it has none. */
export function tenantNotEmpty(name: string, namespaces: readonly string[]): Refusal | null {
  if (namespaces.length === 0) return null;
  return refusal("TENANT_NOT_EMPTY", `Tenant ${name} still has ${namespaces.length} namespace(s): delete them first.`, {
    tenant: name,
    namespaces: namespaces.slice(0, 100),
    count: namespaces.length,
  });
}

/** NAMESPACE_NOT_EMPTY while the namespace has `topics` topics; null when it has none. */
export function namespaceNotEmpty(full: string, topics: number): Refusal | null {
  return topics > 0 ? refusal("NAMESPACE_NOT_EMPTY", `Namespace ${full} still has ${topics} topic(s): delete them first.`, { namespace: full, topics }) : null;
}

/** A tenant's answer: its row, its admin roles (the `all` allow ACLs on it) and its namespaces' full names. */
export function tenantInfoOf(row: TenantRow, adminRoles: string[], namespaces: string[]): TenantInfo {
  return { name: row.name, adminRoles, allowedClusters: JSON.parse(row.allowed_clusters) as string[], namespaces, createdAt: row.created_at };
}

/** A namespace's answer: its row (the policies set and their effective values) and its number of topics. */
export function namespaceDescriptionOf(row: NamespaceRow, topics: number): NamespaceDescription {
  const policies = JSON.parse(row.policies) as PolicyOverrides;
  return {
    name: row.name,
    tenant: row.tenant,
    namespace: row.namespace,
    policies,
    effectivePolicies: resolvePolicies(policies, {}),
    topics,
    createdAt: row.created_at,
  };
}

// ---- ACLs ----

export function aclBindingOf(r: AclRow): AclBinding {
  return {
    principal: r.principal,
    resourceType: r.resource_type as AclBinding["resourceType"],
    resourceName: r.resource_name,
    patternType: r.pattern_type as AclBinding["patternType"],
    operation: r.operation as AclBinding["operation"],
    permission: r.permission as AclBinding["permission"],
  };
}

/** A binding's values in the table's column order (principal, resource_type, resource_name, pattern_type, operation, permission), for bound parameters. */
export function aclColumns(b: AclBinding): [string, string, string, string, string, string] {
  return [b.principal, b.resourceType, b.resourceName, b.patternType, b.operation, b.permission];
}

// ---- SCRAM users and quotas ----

/** USER_NOT_FOUND for a user without a credential (for `mechanism`, when not null). */
export function userNotFound(name: string, mechanism: ScramMechanism | null): Refusal {
  return refusal("USER_NOT_FOUND", `No SCRAM user ${JSON.stringify(name)}${mechanism === null ? "" : ` with ${mechanism}`}.`, { user: name });
}

/** The users and their mechanisms, from rows in (name, mechanism) order. */
export function scramUsersOf(rows: readonly { name: string; mechanism: string; iterations: number }[]): ScramUserSummary[] {
  const byName = new Map<string, ScramUserSummary>();
  for (const r of rows) {
    let u = byName.get(r.name);
    if (u === undefined) byName.set(r.name, (u = { name: r.name, mechanisms: [] }));
    u.mechanisms.push({ mechanism: r.mechanism as ScramMechanism, iterations: r.iterations });
  }
  return [...byName.values()];
}

/** One user's mechanisms, from its rows in mechanism order; undefined when it has none. */
export function scramUserOf(name: string, rows: readonly { mechanism: string; iterations: number }[]): ScramUserSummary | undefined {
  if (rows.length === 0) return undefined;
  return { name, mechanisms: rows.map((r) => ({ mechanism: r.mechanism as ScramMechanism, iterations: r.iterations })) };
}

/** The credentials a password check tries (checkScramUser in durable-objects/metadata-security.ts). */
export function scramCredentialsOf(rows: readonly ScramUserRow[]): (ScramCredential & { generation: string })[] {
  return rows.map((r) => ({
    mechanism: r.mechanism as ScramMechanism,
    salt: new Uint8Array(r.salt),
    iterations: r.iterations,
    storedKey: new Uint8Array(r.stored_key),
    serverKey: new Uint8Array(r.server_key),
    generation: r.generation,
  }));
}

/** A credential row as the export and the quorum's snapshot carry it (bytes as hex). */
export function scramUserExportOf(r: ScramUserRow): ScramUserExport {
  return {
    name: r.name,
    mechanism: r.mechanism as ScramMechanism,
    salt: toHex(new Uint8Array(r.salt)),
    iterations: r.iterations,
    storedKey: toHex(new Uint8Array(r.stored_key)),
    serverKey: toHex(new Uint8Array(r.server_key)),
    generation: r.generation,
  };
}

/** Per user, the generations of its credentials (the gateway's snapshot: a changed credential invalidates what it cached). */
export function generationsByUser(rows: readonly { name: string; generation: string }[]): Record<string, string[]> {
  const users: Record<string, string[]> = {};
  for (const r of rows) (users[r.name] ??= []).push(r.generation);
  return users;
}

/** The quota entries, from rows in (user, client_id, key) order: one entry per entity, `''` read as null. */
export function quotaEntriesOf(rows: readonly QuotaRow[]): QuotaEntry[] {
  const out = new Map<string, QuotaEntry>();
  for (const r of rows) {
    const k = `${r.user}\u0000${r.client_id}`;
    let e = out.get(k);
    if (e === undefined) out.set(k, (e = { user: r.user === "" ? null : r.user, clientId: r.client_id === "" ? null : r.client_id, values: {} }));
    e.values[r.key as QuotaKey] = r.value;
  }
  return [...out.values()];
}
