/**
 * Kafka-style ACLs (KIP-11, KIP-290 prefixed patterns) with Pulsar's resource hierarchy, and
 * the pure authorizer that evaluates them. Shared by the gateway, MetadataDO and the SDK.
 *
 * An ACL binding is (principal, resource type, resource name, pattern type, operation,
 * permission). Evaluation of (principal P, resource R, operation O), as Kafka's
 * AclAuthorizer does (docs/SECURITY.md "Authorization"):
 *
 * - a binding applies when its principal is P or the wildcard `*`, and its resource matches:
 *   LITERAL name equal to R's name, or the LITERAL wildcard `*`; PREFIXED when R's name starts
 *   with the prefix. A PREFIXED `*` is NOT a wildcard: it matches names starting with `*`
 *   (confluentinc/kafka#1617, field case E6);
 * - Edgelog's resources nest as Pulsar's do: a topic `t/ns/x` is also governed by the bindings
 *   on namespace `t/ns` and tenant `t` (a namespace grant-permission covers its topics, a tenant
 *   admin role covers its namespaces); a namespace by its tenant's;
 * - any applicable DENY for O (or ALL) denies, whatever an allow says (deny wins, regardless of
 *   specificity: kroxylicious PR #2903);
 * - else an applicable ALLOW for O, ALL, or an operation that implies O allows. Implications
 *   (Kafka's AclOperation, KAFKA-5292): ALLOW READ, WRITE, DELETE or ALTER imply ALLOW DESCRIBE;
 *   ALLOW ALTER_CONFIGS implies ALLOW DESCRIBE_CONFIGS. READ does NOT imply DESCRIBE_CONFIGS. A
 *   DENY on READ does not deny DESCRIBE (implication is for allows only);
 * - else deny (`allow.everyone.if.no.acl.found=false`).
 *
 * Pure module: no Workers imports.
 */
import { EdgelogError } from "./errors.ts";
import { DEFAULT_NAMESPACE, DEFAULT_TENANT } from "./names.ts";

export const RESOURCE_TYPES = ["cluster", "tenant", "namespace", "topic", "group", "transactional-id"] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export const PATTERN_TYPES = ["literal", "prefixed"] as const;
export type PatternType = (typeof PATTERN_TYPES)[number];

export const ACL_OPERATIONS = ["read", "write", "create", "delete", "alter", "describe", "describe-configs", "alter-configs", "all"] as const;
export type AclOperation = (typeof ACL_OPERATIONS)[number];

export const PERMISSIONS = ["allow", "deny"] as const;
export type AclPermission = (typeof PERMISSIONS)[number];

/** The name of the one cluster resource (Kafka's `kafka-cluster`). */
export const CLUSTER_RESOURCE = "kafka-cluster";
/** The wildcard, as a principal or as a LITERAL resource name. */
export const WILDCARD = "*";

/** One ACL binding, as stored and as the admin API shows it. */
export interface AclBinding {
  /** The principal (a JWT `sub` or SCRAM user name), or `*` for every principal. */
  principal: string;
  resourceType: ResourceType;
  /** For topics the full `tenant/namespace/topic` (or a prefix of one); `*` with LITERAL is the wildcard. */
  resourceName: string;
  patternType: PatternType;
  operation: AclOperation;
  permission: AclPermission;
}

/** A resource a request touches. */
export interface Resource {
  type: ResourceType;
  /** Topic: full `tenant/namespace/topic`; namespace: `tenant/namespace`; cluster: {@link CLUSTER_RESOURCE}. */
  name: string;
}

/** Filter of `GET/DELETE /v1/acls` (kafka-acls --list/--remove): every given field must be equal. */
export type AclFilter = Partial<AclBinding>;

/** Pulsar's grant-permission actions and the ACL operation each is stored as. */
export const PULSAR_ACTIONS = { produce: "write", consume: "read", functions: "alter" } as const satisfies Record<string, AclOperation>;
export type PulsarAction = keyof typeof PULSAR_ACTIONS;

/** Operations an ALLOW of `op` also allows (besides itself). */
const IMPLIES: Partial<Record<AclOperation, readonly AclOperation[]>> = {
  read: ["describe"],
  write: ["describe"],
  delete: ["describe"],
  alter: ["describe"],
  "alter-configs": ["describe-configs"],
};

/** True when an ALLOW binding for `granted` allows `requested`. */
export function allowCovers(granted: AclOperation, requested: AclOperation): boolean {
  return granted === "all" || granted === requested || (IMPLIES[granted]?.includes(requested) ?? false);
}

/** True when a DENY binding for `denied` denies `requested` (no implication: KAFKA-5292). */
export function denyCovers(denied: AclOperation, requested: AclOperation): boolean {
  return denied === "all" || denied === requested;
}

/** True when the binding's resource pattern matches `name` (same resource type assumed). */
export function patternMatches(b: Pick<AclBinding, "resourceName" | "patternType">, name: string): boolean {
  if (b.patternType === "literal") return b.resourceName === WILDCARD || b.resourceName === name;
  return name.startsWith(b.resourceName);
}

/**
 * The resources whose bindings govern `r`, most specific first: a topic, its namespace and
 * its tenant; a namespace and its tenant; anything else itself only.
 */
export function governingResources(r: Resource): Resource[] {
  if (r.type === "topic") {
    const [tenant, namespace] = r.name.split("/");
    if (tenant !== undefined && namespace !== undefined) {
      return [r, { type: "namespace", name: `${tenant}/${namespace}` }, { type: "tenant", name: tenant }];
    }
  }
  if (r.type === "namespace") {
    const [tenant] = r.name.split("/");
    if (tenant !== undefined) return [r, { type: "tenant", name: tenant }];
  }
  return [r];
}

/** Outcome of {@link authorize}: the binding that decided it, when one did. */
export interface AclDecision {
  allowed: boolean;
  /** The deciding binding: the first applicable DENY, else the first covering ALLOW; absent when nothing matched (default deny). */
  binding?: AclBinding;
}

/**
 * Evaluates `bindings` for (principal, resource, operation) (rules in the file comment).
 * `superusers` bypass ACLs (Kafka's super.users). Linear in the number of bindings: the
 * gateway indexes them by resource type first (see AclIndex).
 */
export function authorize(bindings: readonly AclBinding[], principal: string, resource: Resource, operation: AclOperation, superusers: ReadonlySet<string> = new Set()): AclDecision {
  if (superusers.has(principal)) return { allowed: true };
  let allow: AclBinding | undefined;
  for (const g of governingResources(resource)) {
    for (const b of bindings) {
      if (b.resourceType !== g.type) continue;
      if (b.principal !== principal && b.principal !== WILDCARD) continue;
      if (!patternMatches(b, g.name)) continue;
      if (b.permission === "deny") {
        if (denyCovers(b.operation, operation)) return { allowed: false, binding: b };
      } else if (allow === undefined && allowCovers(b.operation, operation)) {
        allow = b;
      }
    }
  }
  return allow === undefined ? { allowed: false } : { allowed: true, binding: allow };
}

/** True when `b` passes every field given in `f`. */
export function aclMatchesFilter(b: AclBinding, f: AclFilter): boolean {
  for (const k of ["principal", "resourceType", "resourceName", "patternType", "operation", "permission"] as const) {
    if (f[k] !== undefined && f[k] !== b[k]) return false;
  }
  return true;
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], field: string): T {
  const s = typeof v === "string" ? v.toLowerCase().replaceAll("_", "-") : v;
  if (typeof s !== "string" || !(allowed as readonly string[]).includes(s)) {
    throw new EdgelogError("INVALID_REQUEST", `${field} must be one of ${allowed.join(", ")}, got ${JSON.stringify(v)}.`, { field });
  }
  return s as T;
}

const PRINCIPAL = /^[A-Za-z0-9._@+=:/-]{1,256}$|^\*$/;

/**
 * A principal as given by an admin: `alice`, or Kafka's `User:alice` (the `User:` prefix is
 * dropped: Edgelog has one principal type), or `*`.
 * @throws EdgelogError INVALID_REQUEST
 */
export function parsePrincipal(v: unknown, field = "principal"): string {
  if (typeof v !== "string") throw new EdgelogError("INVALID_REQUEST", `${field} must be a string.`, { field });
  const p = v.startsWith("User:") ? v.slice(5) : v;
  if (!PRINCIPAL.test(p)) throw new EdgelogError("INVALID_REQUEST", `${field} ${JSON.stringify(v)} is not a valid principal (1-256 characters of [A-Za-z0-9._@+=:/-], or *).`, { field });
  return p;
}

/**
 * The stored resource name: topic names without a `/` are taken in `public/default` (as
 * short topic names are), so `orders-` PREFIXED matches `public/default/orders-eu`; the LITERAL
 * wildcard `*` stays as it is. Namespace names are `tenant/namespace`; the cluster's is
 * {@link CLUSTER_RESOURCE}.
 * @throws EdgelogError INVALID_REQUEST
 */
export function normalizeResourceName(type: ResourceType, patternType: PatternType, name: unknown): string {
  if (typeof name !== "string" || name === "" || name.length > 512) {
    throw new EdgelogError("INVALID_REQUEST", "resourceName must be a non-empty string of at most 512 characters.", { field: "resourceName" });
  }
  if (patternType === "literal" && name === WILDCARD) return name;
  if (type === "cluster") {
    if (name !== CLUSTER_RESOURCE) throw new EdgelogError("INVALID_REQUEST", `The cluster resource is named ${CLUSTER_RESOURCE}.`, { field: "resourceName" });
    return name;
  }
  if (type === "topic" && !name.includes("/")) return `${DEFAULT_TENANT}/${DEFAULT_NAMESPACE}/${name}`;
  return name;
}

/**
 * Validates one binding of an admin request (`User:` prefixes dropped, names normalized,
 * operation/permission names case-insensitive with `_` or `-`).
 * @throws EdgelogError INVALID_REQUEST
 */
export function parseAclBinding(v: unknown): AclBinding {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new EdgelogError("INVALID_REQUEST", "An ACL binding must be a JSON object.");
  const o = v as Record<string, unknown>;
  const resourceType = oneOf(o.resourceType, RESOURCE_TYPES, "resourceType");
  const patternType = o.patternType === undefined ? "literal" : oneOf(o.patternType, PATTERN_TYPES, "patternType");
  const operation = oneOf(o.operation, ACL_OPERATIONS, "operation");
  const permission = o.permission === undefined ? "allow" : oneOf(o.permission, PERMISSIONS, "permission");
  const resourceName = normalizeResourceName(resourceType, patternType, resourceType === "cluster" && o.resourceName === undefined ? CLUSTER_RESOURCE : o.resourceName);
  return { principal: parsePrincipal(o.principal), resourceType, resourceName, patternType, operation, permission };
}

/**
 * A filter from query parameters or JSON (absent fields match anything).
 * @throws EdgelogError INVALID_REQUEST
 */
export function parseAclFilter(o: Record<string, unknown>): AclFilter {
  const f: AclFilter = {};
  if (o.principal !== undefined) f.principal = parsePrincipal(o.principal);
  if (o.resourceType !== undefined) f.resourceType = oneOf(o.resourceType, RESOURCE_TYPES, "resourceType");
  if (o.patternType !== undefined) f.patternType = oneOf(o.patternType, PATTERN_TYPES, "patternType");
  if (o.operation !== undefined) f.operation = oneOf(o.operation, ACL_OPERATIONS, "operation");
  if (o.permission !== undefined) f.permission = oneOf(o.permission, PERMISSIONS, "permission");
  if (o.resourceName !== undefined) {
    f.resourceName = f.resourceType !== undefined ? normalizeResourceName(f.resourceType, f.patternType ?? "literal", o.resourceName) : String(o.resourceName);
  }
  return f;
}
