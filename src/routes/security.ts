/**
 * Security administration (docs/SECURITY.md, docs/PROTOCOL.md "Security"):
 *
 *   POST   /v1/auth/token            HTTP Basic (a SCRAM user) -> a short-lived HS256 token
 *   GET    /v1/auth/whoami           the caller's principal
 *   GET    /v1/acls?filters          list ACL bindings (kafka-acls --list)
 *   POST   /v1/acls                  add bindings {acls: [...]} (kafka-acls --add)
 *   DELETE /v1/acls?filters          remove matching bindings (kafka-acls --remove; one filter at least)
 *   GET    /v1/users                 SCRAM users (names, mechanisms, iterations; never keys)
 *   PUT    /v1/users/{user}          create a user or set its password {password, mechanism?, iterations?}
 *   DELETE /v1/users/{user}?mechanism=
 *   GET    /v1/quotas                client quota configs
 *   PUT    /v1/quotas                set/remove {user?, clientId?, producer_byte_rate?, consumer_byte_rate?, request_rate?} (null removes)
 *   GET    /v1/tenants/{tenant}/admins                              Pulsar's tenant admin roles
 *   PUT    /v1/tenants/{tenant}/admins/{role}                       add one (stored as ALL on the tenant)
 *   DELETE /v1/tenants/{tenant}/admins/{role}
 *   GET    /v1/namespaces/{tenant}/{namespace}/permissions          Pulsar's view: role -> actions
 *   POST   /v1/namespaces/{tenant}/{namespace}/permissions/{role}   grant {actions: [produce|consume|functions]}
 *   DELETE /v1/namespaces/{tenant}/{namespace}/permissions/{role}   revoke all
 *
 * Pulsar grants are stored as the equivalent ACLs on the namespace (produce = WRITE, consume =
 * READ, functions = ALTER) and so show in /v1/acls too. Every write invalidates this isolate's
 * security cache.
 */
import type { Hono } from "hono";
import { invalidateSecurityCache } from "../auth/cache.ts";
import { authConfig } from "../auth/config.ts";
import { issueToken, SCRAM_GENERATION_CLAIM } from "../auth/jwt.ts";
import { createScramCredential, MAX_PASSWORD_BYTES, MAX_SCRAM_ITERATIONS, MIN_SCRAM_ITERATIONS, SCRAM_MECHANISMS, type ScramMechanism } from "../auth/scram.ts";
import { DEFAULT_ENTITY, QUOTA_KEYS, securityStore, type QuotaKey } from "../auth/store.ts";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { asObject, jsonBody } from "../gateway/http.ts";
import { aclMatchesFilter, parseAclBinding, parseAclFilter, parsePrincipal, PULSAR_ACTIONS, type AclBinding, type PulsarAction } from "../protocol/acl.ts";
import { EdgelogError, toEdgelogError } from "../protocol/errors.ts";

/** Default and longest life of a token from POST /v1/auth/token. */
export const DEFAULT_TOKEN_TTL_SEC = 900;
export const MAX_TOKEN_TTL_SEC = 3600;

const SEGMENT = /^[a-zA-Z0-9._-]{1,64}$/;

function store(c: AppContext) {
  return securityStore(c.env);
}

function queryObject(c: AppContext): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const k of ["principal", "resourceType", "resourceName", "patternType", "operation", "permission"]) {
    const v = c.req.query(k);
    if (v !== undefined) o[k] = v;
  }
  return o;
}

function userName(raw: string | undefined): string {
  const name = parsePrincipal(raw, "user");
  if (name === "*") throw new EdgelogError("INVALID_REQUEST", "A user cannot be named *.", { field: "user" });
  return name;
}

function mechanismOf(v: unknown): ScramMechanism {
  if (v === undefined || v === null) return "SCRAM-SHA-256";
  if (typeof v !== "string" || !(SCRAM_MECHANISMS as readonly string[]).includes(v.toUpperCase())) {
    throw new EdgelogError("INVALID_REQUEST", `mechanism must be one of ${SCRAM_MECHANISMS.join(", ")}.`, { field: "mechanism" });
  }
  return v.toUpperCase() as ScramMechanism;
}

function namespaceOf(c: AppContext): string {
  const tenant = c.req.param("tenant") ?? "";
  const namespace = c.req.param("namespace") ?? "";
  if (!SEGMENT.test(tenant) || !SEGMENT.test(namespace)) throw new EdgelogError("INVALID_REQUEST", "tenant and namespace are 1-64 characters of [a-zA-Z0-9._-].", { field: "namespace" });
  return `${tenant}/${namespace}`;
}

export function securityRoutes(app: Hono<AppEnv>): void {
  app.post("/v1/auth/token", async (c) => {
    const cfg = authConfig(c.env);
    if (cfg.mode !== "required" || cfg.jwtSecret === null) {
      throw new EdgelogError("AUTH_NOT_CONFIGURED", "Token exchange needs EDGELOG_AUTH=required and EDGELOG_JWT_SECRET (it signs the tokens).");
    }
    const basic = /^Basic[ ]+([A-Za-z0-9+/=]+)[ ]*$/i.exec(c.req.header("authorization") ?? "");
    let user = "";
    let password = "";
    if (basic !== null) {
      let decoded = "";
      try {
        decoded = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(atob(basic[1]!), (ch) => ch.charCodeAt(0)));
      } catch {
        decoded = "";
      }
      const colon = decoded.indexOf(":");
      if (colon > 0) {
        user = decoded.slice(0, colon);
        password = decoded.slice(colon + 1);
      }
    }
    if (user === "" || new TextEncoder().encode(password).length > MAX_PASSWORD_BYTES) {
      return c.json(new EdgelogError("UNAUTHENTICATED", "Send Authorization: Basic base64(user:password).").toBody(), 401, { "WWW-Authenticate": 'Basic realm="edgelog", charset="UTF-8"' });
    }
    let ttlSec = DEFAULT_TOKEN_TTL_SEC;
    const ttlRaw = c.req.query("ttlSeconds");
    if (ttlRaw !== undefined) {
      const n = Number(ttlRaw);
      if (!Number.isInteger(n) || n < 1 || n > MAX_TOKEN_TTL_SEC)
        throw new EdgelogError("INVALID_REQUEST", `ttlSeconds must be an integer in [1, ${MAX_TOKEN_TTL_SEC}].`, { field: "ttlSeconds" });
      ttlSec = n;
    }
    const r = await store(c).authenticateScram(user, password);
    if (!r.ok) {
      if (r.code === "THROTTLED") {
        const ms = Number(r.details?.throttleTimeMs ?? 1000);
        return c.json(toEdgelogError(r).toBody(), 429, { "Retry-After": String(Math.max(1, Math.ceil(ms / 1000))) });
      }
      if (r.code === "UNAUTHENTICATED") {
        c.set("logNote", { event: "edgelog.auth.unauthenticated", fields: { reason: "wrong user name or password", user } });
        return c.json(toEdgelogError(r).toBody(), 401, { "WWW-Authenticate": 'Basic realm="edgelog", charset="UTF-8"' });
      }
      throw toEdgelogError(r);
    }
    const { token, expiresAt } = await issueToken(cfg.jwtSecret, { sub: user, ttlSec, issuer: cfg.issuer, audience: cfg.audience, claims: { [SCRAM_GENERATION_CLAIM]: r.generation } });
    c.header("Cache-Control", "no-store");
    return c.json({ token, tokenType: "Bearer", expiresIn: ttlSec, expiresAt });
  });

  app.get("/v1/auth/whoami", (c) => {
    const auth = c.get("auth");
    return c.json({ principal: auth.principal, superuser: auth.superuser });
  });

  // ---- ACLs ----
  app.get("/v1/acls", async (c) => {
    const filter = parseAclFilter(queryObject(c));
    const r = await store(c).securitySnapshot();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ acls: r.snapshot.acls.filter((b) => aclMatchesFilter(b, filter)) });
  });

  app.post("/v1/acls", async (c) => {
    const body = asObject(jsonBody(c), "body");
    const raw = Array.isArray(body.acls) ? body.acls : [body];
    if (raw.length === 0 || raw.length > 1000) throw new EdgelogError("INVALID_REQUEST", "acls must hold 1-1000 bindings.", { field: "acls" });
    const bindings = raw.map(parseAclBinding);
    const r = await store(c).createAcls(bindings);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ created: r.created, acls: bindings }, 201);
  });

  app.delete("/v1/acls", async (c) => {
    const filter = parseAclFilter(queryObject(c));
    if (Object.keys(filter).length === 0) throw new EdgelogError("INVALID_REQUEST", "Give at least one filter (principal, resourceType, resourceName, patternType, operation, permission).");
    const r = await store(c).deleteAcls(filter);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ deleted: r.deleted });
  });

  // ---- SCRAM users ----
  app.get("/v1/users", async (c) => {
    const r = await store(c).listScramUsers();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ users: r.users });
  });

  app.put("/v1/users/:user", async (c) => {
    const name = userName(c.req.param("user"));
    // HTTP Basic splits `user:password` at the first colon (RFC 7617 section 2): such a user could never log in.
    if (name.includes(":")) throw new EdgelogError("INVALID_REQUEST", "A SCRAM user name cannot contain ':' (HTTP Basic at POST /v1/auth/token could not carry it).", { field: "user" });
    const body = asObject(jsonBody(c), "body");
    if (typeof body.password !== "string" || body.password === "" || new TextEncoder().encode(body.password).length > MAX_PASSWORD_BYTES) {
      throw new EdgelogError("INVALID_REQUEST", `password must be a non-empty string of at most ${MAX_PASSWORD_BYTES} bytes.`, { field: "password" });
    }
    const mechanism = mechanismOf(body.mechanism);
    const iterations = body.iterations === undefined ? MIN_SCRAM_ITERATIONS : body.iterations;
    if (typeof iterations !== "number" || !Number.isInteger(iterations) || iterations < MIN_SCRAM_ITERATIONS || iterations > MAX_SCRAM_ITERATIONS) {
      throw new EdgelogError("INVALID_REQUEST", `iterations must be an integer in [${MIN_SCRAM_ITERATIONS}, ${MAX_SCRAM_ITERATIONS}].`, { field: "iterations" });
    }
    const credential = await createScramCredential(mechanism, body.password, iterations);
    const r = await store(c).upsertScramUser(name, credential);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ user: r.user });
  });

  app.delete("/v1/users/:user", async (c) => {
    const name = userName(c.req.param("user"));
    const m = c.req.query("mechanism");
    const r = await store(c).deleteScramUser(name, m === undefined ? null : mechanismOf(m));
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.body(null, 204);
  });

  // ---- quotas ----
  app.get("/v1/quotas", async (c) => {
    const r = await store(c).securitySnapshot();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ quotas: r.snapshot.quotas });
  });

  app.put("/v1/quotas", async (c) => {
    const body = asObject(jsonBody(c), "body");
    const entityPart = (v: unknown, field: string): string | null => {
      if (v === undefined || v === null) return null;
      if (v === DEFAULT_ENTITY) return v;
      return field === "user" ? userName(typeof v === "string" ? v : undefined) : typeof v === "string" && /^[A-Za-z0-9._-]{1,256}$/.test(v) ? v : invalidClient();
    };
    const user = entityPart(body.user, "user");
    const clientId = entityPart(body.clientId, "clientId");
    if (user === null && clientId === null) throw new EdgelogError("INVALID_REQUEST", "Give user and/or clientId (a name or <default>).", { field: "user" });
    const values: Partial<Record<QuotaKey, number | null>> = {};
    for (const k of QUOTA_KEYS) {
      const v = body[k];
      if (v === undefined) continue;
      if (v !== null && (typeof v !== "number" || !Number.isFinite(v) || v <= 0 || v > 1e12)) {
        throw new EdgelogError("INVALID_REQUEST", `${k} must be a positive number (per second), or null to remove it.`, { field: k });
      }
      values[k] = v;
    }
    if (Object.keys(values).length === 0) throw new EdgelogError("INVALID_REQUEST", `Give at least one of ${QUOTA_KEYS.join(", ")}.`);
    const r = await store(c).alterQuotas({ user, clientId }, values);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ quota: r.quota });
  });

  // ---- Pulsar's tenant admin roles, stored as ALL on the tenant ----
  app.get("/v1/tenants/:tenant/admins", async (c) => {
    const tenant = tenantOf(c);
    const r = await store(c).securitySnapshot();
    if (!r.ok) throw toEdgelogError(r);
    const adminRoles = r.snapshot.acls
      .filter((b) => b.resourceType === "tenant" && b.patternType === "literal" && b.resourceName === tenant && b.operation === "all" && b.permission === "allow")
      .map((b) => b.principal);
    return c.json({ tenant, adminRoles });
  });

  app.put("/v1/tenants/:tenant/admins/:role", async (c) => {
    const binding = tenantAdmin(tenantOf(c), parsePrincipal(c.req.param("role"), "role"));
    const r = await store(c).createAcls([binding]);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ tenant: binding.resourceName, role: binding.principal, acls: [binding] });
  });

  app.delete("/v1/tenants/:tenant/admins/:role", async (c) => {
    const binding = tenantAdmin(tenantOf(c), parsePrincipal(c.req.param("role"), "role"));
    const r = await store(c).deleteAcls(binding);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ deleted: r.deleted });
  });

  // ---- Pulsar's namespace permissions, stored as ACLs ----
  app.get("/v1/namespaces/:tenant/:namespace/permissions", async (c) => {
    const ns = namespaceOf(c);
    const r = await store(c).securitySnapshot();
    if (!r.ok) throw toEdgelogError(r);
    const byRole: Record<string, PulsarAction[]> = {};
    for (const b of r.snapshot.acls) {
      if (b.resourceType !== "namespace" || b.patternType !== "literal" || b.resourceName !== ns || b.permission !== "allow") continue;
      for (const [action, op] of Object.entries(PULSAR_ACTIONS)) {
        if (b.operation === op) (byRole[b.principal] ??= []).push(action as PulsarAction);
      }
    }
    return c.json({ namespace: ns, permissions: byRole });
  });

  app.post("/v1/namespaces/:tenant/:namespace/permissions/:role", async (c) => {
    const ns = namespaceOf(c);
    const role = parsePrincipal(c.req.param("role"), "role");
    const body = asObject(jsonBody(c), "body");
    if (!Array.isArray(body.actions) || body.actions.length === 0)
      throw new EdgelogError("INVALID_REQUEST", "actions must be a non-empty array of produce, consume, functions.", { field: "actions" });
    const bindings: AclBinding[] = body.actions.map((a) => {
      if (typeof a !== "string" || !Object.hasOwn(PULSAR_ACTIONS, a))
        throw new EdgelogError("INVALID_REQUEST", `Unknown action ${JSON.stringify(a)}: use produce, consume, functions.`, { field: "actions" });
      return { principal: role, resourceType: "namespace", resourceName: ns, patternType: "literal", operation: PULSAR_ACTIONS[a as PulsarAction], permission: "allow" };
    });
    const r = await store(c).createAcls(bindings);
    invalidateSecurityCache();
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ namespace: ns, role, acls: bindings }, 201);
  });

  app.delete("/v1/namespaces/:tenant/:namespace/permissions/:role", async (c) => {
    const ns = namespaceOf(c);
    const role = parsePrincipal(c.req.param("role"), "role");
    const deleted: AclBinding[] = [];
    for (const op of Object.values(PULSAR_ACTIONS)) {
      const r = await store(c).deleteAcls({ principal: role, resourceType: "namespace", resourceName: ns, patternType: "literal", operation: op, permission: "allow" });
      if (!r.ok) throw toEdgelogError(r);
      deleted.push(...r.deleted);
    }
    invalidateSecurityCache();
    return c.json({ deleted });
  });
}

function tenantOf(c: AppContext): string {
  const tenant = c.req.param("tenant") ?? "";
  if (!SEGMENT.test(tenant)) throw new EdgelogError("INVALID_REQUEST", "tenant is 1-64 characters of [a-zA-Z0-9._-].", { field: "tenant" });
  return tenant;
}

function tenantAdmin(tenant: string, role: string): AclBinding {
  return { principal: role, resourceType: "tenant", resourceName: tenant, patternType: "literal", operation: "all", permission: "allow" };
}

function invalidClient(): never {
  throw new EdgelogError("INVALID_REQUEST", "clientId must be 1-256 characters of [A-Za-z0-9._-], or <default>.", { field: "clientId" });
}
