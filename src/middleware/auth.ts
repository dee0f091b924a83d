/**
 * Authentication, authorization and client quotas for every route (docs/SECURITY.md).
 *
 * Per request, after the body reader (some checks read the topics a body names):
 *   1. EDGELOG_AUTH=none: everything is allowed as principal `anonymous` (logged once per
 *      isolate); unset or invalid: only GET /v1/health, else 503 AUTH_NOT_CONFIGURED.
 *   2. CORS preflights (OPTIONS) pass: they carry no credentials and change nothing.
 *   3. The route hono will run is looked up in ROUTE_ACCESS (src/auth/route-access.ts); a
 *      route without an entry is refused (500 INTERNAL), never served; a path without a route
 *      is answered 404/405 here once authenticated (fail closed).
 *   4. `public` routes pass. Others need `Authorization: Bearer <JWT>`; on WebSocket upgrades
 *      only (`Upgrade: websocket`), a `token` query parameter is accepted instead (browsers
 *      cannot set headers; Pulsar's WebSocket API does the same). Refusals: 401
 *      UNAUTHENTICATED with `WWW-Authenticate` (RFC 6750).
 *   5. Every check of the route must pass (or its `orCluster` alternative): else 403
 *      NOT_AUTHORIZED naming the resource type; the request's one log line
 *      (src/middleware/request-log.ts) is then `edgelog.authz.denied` with principal,
 *      resource, operation and route (never the token or the query string).
 *   6. Quotas (principal + `Edgelog-Client-Id`): 429 THROTTLED with `Retry-After` and
 *      `details.throttleTimeMs`, or an admitted answer with `Edgelog-Throttle-Time-Ms`.
 */
import type { MiddlewareHandler } from "hono";
import { OPEN_AUTH, requestAuth } from "../auth/authorizer.ts";
import { securitySnapshot } from "../auth/cache.ts";
import { authConfig, type AuthSettingsEnv } from "../auth/config.ts";
import { TokenRejected, verifyToken } from "../auth/jwt.ts";
import { resolveQuota } from "../auth/quotas.ts";
import { ROUTE_ACCESS, RouteMatcher, type RouteLike, type RouteRequestView } from "../auth/route-access.ts";
import { AllowedMethods } from "../gateway/allowed-methods.ts";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { CLUSTER_RESOURCE } from "../protocol/acl.ts";
import { log } from "../log/logger.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { STREAMS_PATH_PREFIX } from "../streams/names.ts";

/** Request header naming the client id quotas are keyed by (Kafka's client.id). */
export const CLIENT_ID_HEADER = "Edgelog-Client-Id";
/** Answer header of an admitted request that used up its quota: ms to wait before the next one. */
export const THROTTLE_TIME_HEADER = "Edgelog-Throttle-Time-Ms";
const HEALTH_PATH = "/v1/health";
const REALM = 'Bearer realm="edgelog"';

export interface AuthOptions {
  /** The app's registered routes, read on the first request (they are all registered by then). */
  routes: () => readonly RouteLike[];
}

let loggedMode: string | null = null;

function logModeOnce(message: string): void {
  if (loggedMode === message) return;
  loggedMode = message;
  log.warn("edgelog.auth.mode", { message });
}

/**
 * Headers the Durable Streams middleware would have set (it runs after this one, so a refusal
 * here never reaches it): browsers must be able to read a 401/403/429 of /v1/stream/*.
 */
const STREAM_ERROR_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "WWW-Authenticate, Retry-After",
  "X-Content-Type-Options": "nosniff",
  "Cross-Origin-Resource-Policy": "cross-origin",
};

function errorResponse(c: AppContext, e: EdgelogError, headers: Record<string, string> = {}): Response {
  const extra = c.req.path.startsWith(STREAMS_PATH_PREFIX) ? { ...STREAM_ERROR_HEADERS, ...headers } : headers;
  return c.json(e.toBody(), e.httpStatus as 401, extra);
}

function unauthenticated(c: AppContext, message: string, tokenSent: boolean): Response {
  // Logged once, as the request's line (src/middleware/request-log.ts): never the token.
  c.set("logNote", { event: "edgelog.auth.unauthenticated", fields: { reason: message } });
  return errorResponse(c, new EdgelogError("UNAUTHENTICATED", message), { "WWW-Authenticate": tokenSent ? `${REALM}, error="invalid_token"` : REALM });
}

/** Local memory of refusals per quota bucket: refuse without a QuotaDO call until then. */
const throttledUntil = new Map<string, number>();

/**
 * Logs the auth mode once per isolate: at module load (src/index.ts, so `npm start` prints it
 * at start-up) and again never, unless the vars differ (tests with env overrides).
 */
export function logAuthMode(env: AuthSettingsEnv): void {
  const cfg = authConfig(env);
  if (cfg.mode === "none") logModeOnce("Edgelog: authentication is OFF (EDGELOG_AUTH=none): every request is allowed. Local development only: docs/SECURITY.md.");
  else if (cfg.mode === "unconfigured") logModeOnce(`Edgelog: authentication is not configured (${cfg.reason}): only ${HEALTH_PATH} is served. docs/SECURITY.md.`);
}

/** What an access rule sees of the request (src/auth/route-access.ts RouteRequestView). */
export function routeRequestView(c: AppContext, params: Record<string, string>): RouteRequestView {
  return {
    params,
    path: c.req.path,
    queries: (name: string) => c.req.queries(name) ?? [],
    body: c.get("body") ?? new Uint8Array(0),
    header: (name: string) => c.req.header(name),
    origin: new URL(c.req.url).origin,
  };
}

export function authMiddleware(o: AuthOptions): MiddlewareHandler<AppEnv> {
  let matcher: RouteMatcher | null = null;
  let allowed: AllowedMethods | null = null;
  return async (c, next) => {
    const cfg = authConfig(c.env);
    if (cfg.mode === "none") {
      logAuthMode(c.env);
      c.set("auth", OPEN_AUTH);
      return next();
    }
    if (cfg.mode === "unconfigured") {
      logAuthMode(c.env);
      if (c.req.path === HEALTH_PATH && (c.req.method === "GET" || c.req.method === "HEAD")) return next();
      return errorResponse(c, new EdgelogError("AUTH_NOT_CONFIGURED", undefined, { reason: cfg.reason }));
    }
    if (c.req.method === "OPTIONS") return next();

    matcher ??= new RouteMatcher(o.routes());
    const route = matcher.match(c.req.method, c.req.path);
    const rule = route === null ? undefined : ROUTE_ACCESS[route.key];
    if (route !== null && rule === undefined) {
      log.error("edgelog.auth.route_without_rule", { route: route.key, message: "This route has no entry in ROUTE_ACCESS (src/auth/route-access.ts): refused." });
      throw new EdgelogError("INTERNAL", "This route has no access rule.");
    }
    if (rule?.access === "public") return next();

    // ---- authentication ----
    const header = c.req.header("authorization");
    let token: string | undefined;
    if (header !== undefined) {
      const m = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header);
      if (m === null) return unauthenticated(c, "The Authorization header must be `Bearer <token>` (exchange a user's password at POST /v1/auth/token).", true);
      token = m[1];
    } else {
      const q = c.req.query("token");
      if (q !== undefined) {
        if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
          return unauthenticated(c, "A token query parameter is accepted on WebSocket upgrades only: send Authorization: Bearer <token>.", true);
        }
        token = q;
      }
    }
    if (token === undefined || token === "") return unauthenticated(c, "No credentials: send Authorization: Bearer <token>.", false);
    let principal: string;
    let scramGeneration: string | null;
    try {
      ({ principal, scramGeneration } = await verifyToken(cfg, token));
    } catch (e) {
      if (e instanceof TokenRejected) return unauthenticated(c, `Invalid token (${e.message}).`, true);
      throw e;
    }
    const sec = await securitySnapshot(c.env);
    if (scramGeneration !== null && !(sec.snapshot.users[principal]?.includes(scramGeneration) ?? false)) {
      return unauthenticated(c, "Invalid token (the SCRAM user was deleted or its password changed).", true);
    }
    const auth = requestAuth(sec.acls, principal, cfg.superusers);
    c.set("auth", auth);
    if (route === null || rule === undefined) {
      // No route: answered here, as the app's notFound would (404, or 405 with Allow), rather
      // than by next(): should hono ever run a route this lookup missed, it runs unchecked
      // otherwise. Fail closed.
      allowed ??= new AllowedMethods(o.routes());
      const methods = allowed.forPath(c.req.path);
      if (methods.length > 0 && !methods.includes(c.req.method)) {
        const e = new EdgelogError("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed on ${c.req.path}; allowed: ${methods.join(", ")}.`, { allowed: methods });
        return errorResponse(c, e, { Allow: methods.join(", ") });
      }
      return errorResponse(c, new EdgelogError("NOT_FOUND", `No route for ${c.req.method} ${c.req.path}.`));
    }

    // ---- authorization ----
    if (rule.access === "acl") {
      const checks = await rule.checks(routeRequestView(c, route.params));
      c.set(
        "accessChecks",
        checks.map((k) => ({ type: k.resource.type, name: k.resource.name, operation: k.operation })),
      );
      for (const check of checks) {
        if (auth.can(check.resource, check.operation)) continue;
        if (check.orCluster !== undefined && auth.can({ type: "cluster", name: CLUSTER_RESOURCE }, check.orCluster)) continue;
        // The request's one log line (src/middleware/request-log.ts) carries the principal.
        c.set("logNote", {
          event: "edgelog.authz.denied",
          fields: { resourceType: check.resource.type, resource: check.resource.name, operation: check.operation },
        });
        return errorResponse(
          c,
          new EdgelogError("NOT_AUTHORIZED", `Principal ${principal} may not ${check.operation} ${check.resource.type} ${check.resource.name}.`, {
            resourceType: check.resource.type,
            resource: check.resource.name,
            operation: check.operation,
          }),
        );
      }
    }

    // ---- quotas ----
    const quota = resolveQuota(sec.snapshot.quotas, principal, c.req.header(CLIENT_ID_HEADER) ?? null);
    // A WebSocket produce session charges each batch to it (src/gateway/ws-produce.ts).
    c.set("quota", quota);
    if (quota === null) return next();
    const kind = rule.access === "acl" ? rule.quota : undefined;
    const now = Date.now();
    const until = throttledUntil.get(quota.bucketKey);
    if (until !== undefined && until > now) return throttled(c, until - now);
    const stub = c.env.QUOTA.getByName(quota.bucketKey);
    const produceBytes = kind === "produce" ? (c.get("body")?.length ?? 0) : 0;
    const answer = await stub.admit(quota.rates, produceBytes, kind === "fetch");
    if (!answer.admitted) {
      if (throttledUntil.size > 10_000) throttledUntil.clear();
      throttledUntil.set(quota.bucketKey, now + answer.throttleTimeMs);
      return throttled(c, answer.throttleTimeMs);
    }
    await next();
    let throttleTimeMs = answer.throttleTimeMs;
    // An SSE answer is open-ended: its bytes are not counted (docs/SECURITY.md).
    if (kind === "fetch" && quota.rates.consumerByteRate !== undefined && c.res.ok && !(c.res.headers.get("content-type") ?? "").includes("text/event-stream")) {
      const bytes = (await c.res.clone().arrayBuffer()).byteLength;
      throttleTimeMs = Math.max(throttleTimeMs, await stub.chargeFetch(quota.rates, bytes));
    }
    if (throttleTimeMs > 0) {
      try {
        c.res.headers.set(THROTTLE_TIME_HEADER, String(throttleTimeMs));
      } catch {
        // Immutable headers (a Response passed through from a subrequest): copy it.
        const res = new Response(c.res.body, c.res);
        res.headers.set(THROTTLE_TIME_HEADER, String(throttleTimeMs));
        c.res = res;
      }
    }
  };
}

function throttled(c: AppContext, throttleTimeMs: number): Response {
  const ms = Math.max(1, Math.ceil(throttleTimeMs));
  return errorResponse(c, new EdgelogError("THROTTLED", `Quota exceeded: retry in ${ms} ms.`, { throttleTimeMs: ms }), { "Retry-After": String(Math.ceil(ms / 1000)) });
}
