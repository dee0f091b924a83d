/**
 * One structured log line per admin action and per error answer (src/log/admin-actions.ts
 * decides which; docs/OBSERVABILITY.md "Logs" gives the shape). Registered right after the
 * metrics middleware in src/app.ts, so it sees the final status of every answer, errors and
 * refusals by the auth middleware included, and the principal that middleware set.
 *
 * What a line never holds: the Authorization header or any token, the query string, or a
 * request or answer body. The error code is read from the error answer's JSON (`error.code`,
 * the one error shape of docs/PROTOCOL.md), which every error path writes; nothing else of it.
 */
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { ROUTE_ACCESS } from "../auth/route-access.ts";
import type { AppEnv } from "../gateway/context.ts";
import { adminAction, requestLogLine } from "../log/admin-actions.ts";
import { log } from "../log/logger.ts";
import { routeRequestView } from "./auth.ts";
import { UNMATCHED_ROUTE } from "./metrics.ts";

/** Error answers larger than this are not parsed for their code (an error body is ~200 bytes). */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

export function requestLog(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const startMs = Date.now();
    await next();
    const status = c.res.status;
    // The common case first: a successful read (no admin route is a GET) logs nothing.
    if (status < 400 && (c.req.method === "GET" || c.req.method === "HEAD")) return;
    const route = routeOf(c);
    const action = adminAction(c.req.method, route);
    if (action === null && status < 400) return;
    const line = requestLogLine({
      method: c.req.method,
      route,
      status,
      code: status >= 400 ? await errorCode(c.res) : null,
      durationMs: Date.now() - startMs,
      principal: c.get("auth")?.principal ?? null,
      resources: c.get("accessChecks") ?? (await resourcesOf(c, route)),
      note: c.get("logNote") ?? null,
    });
    if (line !== null) log.at(line.level, line.event, line.fields);
  };
}

/** The route pattern that answered (as src/middleware/metrics.ts labels it). */
function routeOf(c: Context<AppEnv>): string {
  const routes = matchedRoutes(c);
  const answered = routes[c.req.routeIndex];
  if (answered !== undefined && answered.method !== "ALL") return answered.path;
  for (const r of routes) if (r.method !== "ALL") return r.path;
  return UNMATCHED_ROUTE;
}

/** `error.code` of a JSON error answer, or null. */
async function errorCode(res: Response): Promise<string | null> {
  if (!(res.headers.get("content-type") ?? "").includes("application/json")) return null;
  const len = Number(res.headers.get("content-length") ?? "0");
  if (len > MAX_ERROR_BODY_BYTES) return null;
  try {
    const body = (await res.clone().json()) as { error?: { code?: unknown } };
    return typeof body.error?.code === "string" ? body.error.code : null;
  } catch {
    return null;
  }
}

/**
 * The resources the route's access rule names, computed here when the auth middleware did not
 * (auth off): the same function, so an admin line names the topic or group either way.
 */
async function resourcesOf(c: Context<AppEnv>, route: string): Promise<{ type: string; name: string; operation: string }[]> {
  const rule = ROUTE_ACCESS[`${c.req.method} ${route}`];
  if (rule?.access !== "acl") return [];
  try {
    const checks = await rule.checks(routeRequestView(c, c.req.param() as Record<string, string>));
    return checks.map((k) => ({ type: k.resource.type, name: k.resource.name, operation: k.operation }));
  } catch {
    return []; // an invalid name: the answer already says so
  }
}
