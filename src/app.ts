/**
 * The gateway: a hono app. Order matters:
 *   -. every answered request counted in this isolate's metrics (middleware/metrics.ts), first
 *      so it sees the final status of errors too; then one JSON log line per admin action and
 *      per error answer (middleware/request-log.ts), with the principal auth set;
 *   -. unread request bodies drained (bounded) before any answer leaves (middleware/body.ts);
 *   0. CORS on /v1/* (preflights answered before anything reads a body; streams do their own),
 *      and JSON answers ending with a newline (not the streams');
 *   1. body reader on /v1/* (POST/PUT/PATCH bodies read once, size-limited: REQUEST_TOO_LARGE);
 *   2. bench gate + body reader on /bench/* (404 unless EDGELOG_BENCH_ROUTES = "1");
 *   3. auth on every path (src/middleware/auth.ts: authentication, the route's ACL checks,
 *      quotas; after the body reader, as some checks read the topics a body names);
 *   4. routes (specific paths before ambiguous ones, see topicRoute);
 *   5. notFound -> METHOD_NOT_ALLOWED (with `Allow`) when the path has routes for other
 *      methods, else NOT_FOUND JSON; one onError -> the error table's JSON and HTTP status
 *      (and the headers an ErrorWithHeaders carries, e.g. Durable Streams' protocol headers).
 */
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./gateway/context.ts";
import { AllowedMethods } from "./gateway/allowed-methods.ts";
import { ErrorWithHeaders, toEdgelogErrorResponse } from "./gateway/errors.ts";
import { authMiddleware } from "./middleware/auth.ts";
import { benchGate } from "./middleware/bench.ts";
import { bodyReader, drainUnreadBody } from "./middleware/body.ts";
import { corsMiddleware } from "./middleware/cors.ts";
import { jsonNewline } from "./middleware/json-newline.ts";
import { requestMetrics } from "./middleware/metrics.ts";
import { requestLog } from "./middleware/request-log.ts";
import { EdgelogError } from "./protocol/errors.ts";
import { MAX_REQUEST_BYTES, MAX_STORED_BATCH_BYTES } from "./protocol/limits.ts";
import { benchRoutes } from "./routes/bench.ts";
import { durableStreamsRoutes } from "./routes/compat/durable-streams.ts";
import { fetchRoutes } from "./routes/fetch.ts";
import { groupRoutes } from "./routes/groups.ts";
import { healthRoutes } from "./routes/health.ts";
import { metricsRoutes } from "./routes/metrics.ts";
import { pulsarWsRoutes } from "./routes/compat/pulsar-ws.ts";
import { produceRoutes } from "./routes/produce.ts";
import { producerRoutes } from "./routes/producers.ts";
import { securityRoutes } from "./routes/security.ts";
import { subscriptionRoutes } from "./routes/subscriptions.ts";
import { tenantRoutes } from "./routes/tenants.ts";
import { topicRoutes } from "./routes/topics.ts";
import { uiRoutes } from "./routes/ui.ts";
import { STREAMS_PATH_PREFIX } from "./streams/names.ts";

export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.use("*", requestMetrics());
  app.use("*", requestLog());
  app.use("*", drainUnreadBody());
  app.use("/v1/*", corsMiddleware({ skipPrefixes: [STREAMS_PATH_PREFIX] }));
  app.use("*", jsonNewline({ skipPrefixes: [STREAMS_PATH_PREFIX] }));
  app.use("/v1/*", bodyReader({ maxBytes: MAX_REQUEST_BYTES }));
  // A bench row must fit SQLite's 2 MB row limit.
  app.use("/bench/*", benchGate(), bodyReader({ maxBytes: MAX_STORED_BATCH_BYTES }));
  app.use("*", authMiddleware({ routes: () => app.routes }));

  healthRoutes(app);
  produceRoutes(app);
  fetchRoutes(app);
  // Before the topic routes: GET/DELETE /v1/topics/t/subscriptions/s would also match the
  // long topic form /v1/topics/{tenant}/{namespace}/{topic}, and hono runs the first match.
  subscriptionRoutes(app);
  topicRoutes(app);
  producerRoutes(app);
  groupRoutes(app);
  benchRoutes(app);
  durableStreamsRoutes(app);
  pulsarWsRoutes(app);
  securityRoutes(app);
  tenantRoutes(app);
  metricsRoutes(app);
  uiRoutes(app);

  const allowed = new AllowedMethods(app.routes);
  app.notFound((c) => {
    const methods = allowed.forPath(c.req.path);
    if (methods.length > 0 && !methods.includes(c.req.method)) {
      const message = `${c.req.method} is not allowed on ${c.req.path}; allowed: ${methods.join(", ")}.`;
      return errorResponse(c, new ErrorWithHeaders("METHOD_NOT_ALLOWED", message, { allowed: methods }, { Allow: methods.join(", ") }));
    }
    return errorResponse(c, new EdgelogError("NOT_FOUND", `No route for ${c.req.method} ${c.req.path}.`));
  });
  app.onError((err, c) => errorResponse(c, err));
  return app;
}

/**
 * The one error writer: anything thrown (or not found) becomes the error table's HTTP status
 * and JSON body (toEdgelogErrorResponse), with the headers an {@link ErrorWithHeaders} carries.
 */
function errorResponse(c: Context<AppEnv>, err: unknown): Response {
  const e = toEdgelogErrorResponse(err);
  return c.json(e.toBody(), e.httpStatus as ContentfulStatusCode, e instanceof ErrorWithHeaders ? { ...e.headers } : undefined);
}
