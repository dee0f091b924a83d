/**
 * CORS for the native API, so browsers on other origins can use the SDK (it needs only
 * `fetch`). Built on hono's `cors` middleware. The Durable Streams routes set their own
 * headers (protocol section 12.7), so they are skipped here.
 *
 * Configured per deployment by two variables (wrangler.toml `[vars]`, docs/PROTOCOL.md "CORS"):
 * `EDGELOG_CORS_ORIGINS` (comma-separated origins, or `*`; default `*`) and
 * `EDGELOG_CORS_ALLOW_HEADERS` (request headers allowed besides Content-Type, Accept and
 * Authorization; default none). `*` is a safe default here because no answer is ever sent
 * with `Access-Control-Allow-Credentials`: a page on another origin gets no cookies or other
 * ambient credentials of the user's, only what its own code attaches (an Authorization header).
 */
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "../gateway/context.ts";

export interface CorsOptions {
  /** Allowed origins. @default "*" */
  origin: string | string[];
  /** Request headers allowed besides {@link BASE_ALLOWED_HEADERS}. @default [] */
  allowHeaders: readonly string[];
  /** Path prefixes that handle CORS themselves. */
  skipPrefixes: readonly string[];
  /** Preflight cache lifetime in seconds. @default 86400 */
  maxAgeSeconds: number;
}

const DEFAULTS: CorsOptions = { origin: "*", allowHeaders: [], skipPrefixes: [], maxAgeSeconds: 86_400 };

/** Request headers a browser client may always send (the SDK's, plus Authorization). */
export const BASE_ALLOWED_HEADERS = ["Content-Type", "Accept", "Authorization"];

/** Response headers a browser client must be able to read (binary fetch bounds; auth and quota answers, docs/SECURITY.md). */
export const EXPOSED_HEADERS = ["Edgelog-Next-Offset", "Edgelog-High-Watermark", "Edgelog-Log-Start-Offset", "WWW-Authenticate", "Retry-After", "Edgelog-Throttle-Time-Ms"];

/** The two variables, parsed: undefined or blank means the default. */
export function corsOptionsFromEnv(env: { EDGELOG_CORS_ORIGINS?: string | undefined; EDGELOG_CORS_ALLOW_HEADERS?: string | undefined }): Pick<CorsOptions, "origin" | "allowHeaders"> {
  const list = (v: string | undefined): string[] =>
    (v ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  const origins = list(env.EDGELOG_CORS_ORIGINS);
  return { origin: origins.length === 0 || origins.includes("*") ? "*" : origins, allowHeaders: list(env.EDGELOG_CORS_ALLOW_HEADERS) };
}

/**
 * @param options fixed options; `origin` and `allowHeaders` not given here come from the
 *   request's environment (EDGELOG_CORS_ORIGINS, EDGELOG_CORS_ALLOW_HEADERS).
 */
export function corsMiddleware(options: Partial<CorsOptions> = {}): MiddlewareHandler<AppEnv> {
  const { skipPrefixes, maxAgeSeconds } = { ...DEFAULTS, ...options };
  // One hono handler per configuration (the variables are the same for every request of a deployment).
  let cached: { key: string; handler: MiddlewareHandler } | undefined;
  const handlerFor = (origin: string | string[], allowHeaders: readonly string[]): MiddlewareHandler => {
    const key = JSON.stringify([origin, allowHeaders]);
    if (cached?.key !== key) {
      cached = {
        key,
        handler: cors({
          origin,
          allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
          allowHeaders: [...BASE_ALLOWED_HEADERS, ...allowHeaders],
          exposeHeaders: EXPOSED_HEADERS,
          maxAge: maxAgeSeconds,
        }),
      };
    }
    return cached.handler;
  };
  return async (c, next) => {
    // Browsers send Origin on every cross-origin request and every preflight; without it
    // (the SDK on a server, the CLI, curl) CORS headers mean nothing. Skipping saves ~0.07 ms
    // of gateway CPU per request (~6% of a one-record produce, docs/benchmarks.md): hono's cors
    // sets headers on a placeholder Response, then copies them into a new copy of the real one.
    // No /v1 answer is cacheable (no validators, no Cache-Control), so omitting `Vary: Origin`
    // cannot let a cache serve a header-less answer to a browser.
    if (c.req.header("origin") === undefined) return next();
    if (skipPrefixes.some((p) => c.req.path.startsWith(p))) return next();
    const fromEnv = corsOptionsFromEnv(c.env ?? {});
    return handlerFor(options.origin ?? fromEnv.origin, options.allowHeaders ?? fromEnv.allowHeaders)(c, next);
  };
}
