/**
 * CORS for the native API, so browsers on other origins can use the SDK (it needs only
 * `fetch`). Built on hono's `cors` middleware. The Durable Streams routes set their own
 * headers (protocol section 12.7), so they are skipped here.
 */
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "../gateway/context.ts";

export interface CorsOptions {
  /** Allowed origins. @default "*" */
  origin: string | string[];
  /** Path prefixes that handle CORS themselves. */
  skipPrefixes: readonly string[];
  /** Preflight cache lifetime in seconds. @default 86400 */
  maxAgeSeconds: number;
}

const DEFAULTS: CorsOptions = { origin: "*", skipPrefixes: [], maxAgeSeconds: 86_400 };

/** Response headers a browser client must be able to read (binary fetch bounds; auth and quota answers, docs/SECURITY.md). */
export const EXPOSED_HEADERS = ["Edgelog-Next-Offset", "Edgelog-High-Watermark", "Edgelog-Log-Start-Offset", "WWW-Authenticate", "Retry-After", "Edgelog-Throttle-Time-Ms"];

export function corsMiddleware(options: Partial<CorsOptions> = {}): MiddlewareHandler<AppEnv> {
  const { origin, skipPrefixes, maxAgeSeconds } = { ...DEFAULTS, ...options };
  const handler = cors({
    origin,
    allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    allowHeaders: ["Content-Type", "Accept", "Authorization"],
    exposeHeaders: EXPOSED_HEADERS,
    maxAge: maxAgeSeconds,
  });
  return async (c, next) => {
    // Browsers send Origin on every cross-origin request and every preflight; without it
    // (the SDK on a server, the CLI, curl) CORS headers mean nothing. Skipping saves ~0.07 ms
    // of gateway CPU per request (~6% of a one-record produce, docs/benchmarks.md): hono's cors
    // sets headers on a placeholder Response, then copies them into a new copy of the real one.
    // No /v1 answer is cacheable (no validators, no Cache-Control), so omitting `Vary: Origin`
    // cannot let a cache serve a header-less answer to a browser.
    if (c.req.header("origin") === undefined) return next();
    if (skipPrefixes.some((p) => c.req.path.startsWith(p))) return next();
    return handler(c, next);
  };
}
