/**
 * Counts every answered request in this isolate's gateway metrics (src/metrics/gateway.ts)
 * by method, registered route pattern (`/v1/topics/:topic/records`, never the raw path, so
 * the label set stays bounded) and status, with its duration. Registered first in
 * src/app.ts, so it sees the final status of errors and not-found answers too.
 */
import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../gateway/context.ts";
import { type GatewayMetrics, gatewayMetrics } from "../metrics/gateway.ts";

/** The route label of a request without a route of its own (a 404 or 405 answer). */
export const UNMATCHED_ROUTE = "unmatched";

export function requestMetrics(metrics: GatewayMetrics = gatewayMetrics): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const startMs = Date.now();
    try {
      await next();
    } finally {
      metrics.request(c.req.method, routeOf(c), c.res.status, Date.now() - startMs);
    }
  };
}

/**
 * The pattern of the handler that answered (after `next()`, `routeIndex` is the last one
 * dispatched). When a middleware answered instead (auth refused, a preflight), the first
 * matched handler: the one hono would have dispatched to. Middleware match as method "ALL".
 */
function routeOf(c: Context<AppEnv>): string {
  const routes = matchedRoutes(c);
  const answered = routes[c.req.routeIndex];
  if (answered !== undefined && answered.method !== "ALL") return answered.path;
  for (const r of routes) if (r.method !== "ALL") return r.path;
  return UNMATCHED_ROUTE;
}
