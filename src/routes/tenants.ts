/**
 * Tenants and namespaces (Pulsar's admin model; docs/TENANTS.md, docs/PROTOCOL.md "Tenants and
 * namespaces"):
 *
 *   GET    /v1/tenants                                      {tenants: [name]} (those the principal may describe)
 *   PUT    /v1/tenants/{tenant}                             create {adminRoles?, allowedClusters?} -> 201 TenantInfo
 *   GET    /v1/tenants/{tenant}                             TenantInfo
 *   DELETE /v1/tenants/{tenant}                             204 (TENANT_NOT_EMPTY while it has namespaces)
 *   GET    /v1/namespaces/{tenant}                          {tenant, namespaces: [tenant/namespace]}
 *   PUT    /v1/namespaces/{tenant}/{namespace}              create {policies?} -> 201 NamespaceDescription
 *   GET    /v1/namespaces/{tenant}/{namespace}              NamespaceDescription
 *   DELETE /v1/namespaces/{tenant}/{namespace}              204 (NAMESPACE_NOT_EMPTY while it has topics)
 *   GET    /v1/namespaces/{tenant}/{namespace}/policies     {namespace, policies: {name: {value, source}}}
 *   PUT    /v1/namespaces/{tenant}/{namespace}/policies/{policy}     set one (body: the value)
 *   DELETE /v1/namespaces/{tenant}/{namespace}/policies/{policy}     remove one (the default applies)
 *
 * Each route validates names and shapes, then makes one call to the metadata store. Writes that
 * touch ACLs (tenant admin roles; deletes, which remove the literal ACLs of the resource)
 * invalidate this isolate's security cache; policy changes invalidate nothing here (topic
 * metadata caches follow within their bound, docs/ARCHITECTURE.md "Metadata caching").
 */
import type { Hono } from "hono";
import { invalidateSecurityCache } from "../auth/cache.ts";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { asObject, jsonBody } from "../gateway/http.ts";
import { tenantStore } from "../metadata/store.ts";
import { parsePrincipal } from "../protocol/acl.ts";
import { EdgelogError, toEdgelogError } from "../protocol/errors.ts";
import { CLUSTER_NAME, parseNamespaceName, parsePolicyName, parseTenantName } from "../protocol/policies.ts";

/** Most admin roles given at creation. */
const MAX_ADMIN_ROLES = 100;

/** The JSON object body, or {} for an empty body (Pulsar's create accepts none). */
function optionalObjectBody(c: AppContext): Record<string, unknown> {
  if (c.get("body").length === 0) return {};
  return asObject(jsonBody(c), "body");
}

function onlyFields(body: Record<string, unknown>, fields: readonly string[]): void {
  for (const k of Object.keys(body)) {
    if (!fields.includes(k)) throw new EdgelogError("INVALID_REQUEST", `Unknown field ${k}: use ${fields.join(", ")}.`, { field: k });
  }
}

function adminRolesOf(v: unknown): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.length > MAX_ADMIN_ROLES)
    throw new EdgelogError("INVALID_REQUEST", `adminRoles must be an array of at most ${MAX_ADMIN_ROLES} principals.`, { field: "adminRoles" });
  const roles = v.map((r, i) => parsePrincipal(r, `adminRoles[${i}]`));
  return [...new Set(roles)];
}

function checkClusters(v: unknown): void {
  if (v === undefined) return;
  if (!Array.isArray(v) || v.length !== 1 || v[0] !== CLUSTER_NAME) {
    throw new EdgelogError("INVALID_REQUEST", `allowedClusters must be ["${CLUSTER_NAME}"]: a deployment is one cluster.`, { field: "allowedClusters" });
  }
}

function namespaceOf(c: AppContext) {
  return parseNamespaceName(c.req.param("tenant"), c.req.param("namespace"));
}

export function tenantRoutes(app: Hono<AppEnv>): void {
  const store = (c: AppContext) => tenantStore(c.env);

  // ---- tenants ----
  app.get("/v1/tenants", async (c) => {
    const r = await store(c).listTenants();
    if (!r.ok) throw toEdgelogError(r);
    const auth = c.get("auth");
    return c.json({ tenants: r.tenants.filter((name) => auth.can({ type: "tenant", name }, "describe")) });
  });

  app.put("/v1/tenants/:tenant", async (c) => {
    const name = parseTenantName(c.req.param("tenant"));
    const body = optionalObjectBody(c);
    onlyFields(body, ["adminRoles", "allowedClusters"]);
    const adminRoles = adminRolesOf(body.adminRoles);
    checkClusters(body.allowedClusters);
    const r = await store(c).createTenant(name, adminRoles);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json(r.tenant, 201);
  });

  app.get("/v1/tenants/:tenant", async (c) => {
    const r = await store(c).describeTenant(parseTenantName(c.req.param("tenant")));
    if (!r.ok) throw toEdgelogError(r);
    return c.json(r.tenant);
  });

  app.delete("/v1/tenants/:tenant", async (c) => {
    const r = await store(c).deleteTenant(parseTenantName(c.req.param("tenant")));
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.body(null, 204);
  });

  // ---- namespaces ----
  app.get("/v1/namespaces/:tenant", async (c) => {
    const tenant = parseTenantName(c.req.param("tenant"));
    const r = await store(c).listNamespaces(tenant);
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ tenant, namespaces: r.namespaces });
  });

  app.put("/v1/namespaces/:tenant/:namespace", async (c) => {
    const ns = namespaceOf(c);
    const body = optionalObjectBody(c);
    onlyFields(body, ["policies"]);
    const r = await store(c).createNamespace(ns.tenant, ns.namespace, body.policies);
    if (!r.ok) throw toEdgelogError(r);
    return c.json(r.namespace, 201);
  });

  app.get("/v1/namespaces/:tenant/:namespace", async (c) => {
    const r = await store(c).describeNamespace(namespaceOf(c).full);
    if (!r.ok) throw toEdgelogError(r);
    return c.json(r.namespace);
  });

  app.delete("/v1/namespaces/:tenant/:namespace", async (c) => {
    const r = await store(c).deleteNamespace(namespaceOf(c).full);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.body(null, 204);
  });

  app.get("/v1/namespaces/:tenant/:namespace/policies", async (c) => {
    const r = await store(c).describeNamespace(namespaceOf(c).full);
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ namespace: r.namespace.name, policies: r.namespace.effectivePolicies });
  });

  app.put("/v1/namespaces/:tenant/:namespace/policies/:policy", async (c) => {
    const ns = namespaceOf(c);
    const policy = parsePolicyName(c.req.param("policy"));
    const value = jsonBody(c);
    // null would mean "remove" in the store's patch: removing is DELETE here.
    if (value === null) throw new EdgelogError("INVALID_POLICY", `Give ${policy}'s value; to remove it, DELETE the policy.`, { policy });
    const r = await store(c).setNamespacePolicies(ns.full, { [policy]: value });
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ namespace: r.namespace.name, policies: r.namespace.effectivePolicies });
  });

  app.delete("/v1/namespaces/:tenant/:namespace/policies/:policy", async (c) => {
    const ns = namespaceOf(c);
    const policy = parsePolicyName(c.req.param("policy"));
    const r = await store(c).setNamespacePolicies(ns.full, { [policy]: null });
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ namespace: r.namespace.name, policies: r.namespace.effectivePolicies });
  });
}
