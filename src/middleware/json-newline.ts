/**
 * JSON answers end with a newline, so `curl` output ends its line in a terminal. JSON allows
 * whitespace after the value (RFC 8259 section 2), so every JSON parser reads the same value.
 * Done by replacing this request's `c.json` (one closure per request) rather than rewriting
 * each answer's body, which would copy it on the produce path. Paths in `skipPrefixes` (the
 * Durable Streams protocol, whose bodies are specified byte for byte) keep hono's `c.json`.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../gateway/context.ts";

export interface JsonNewlineOptions {
  /** Path prefixes whose JSON answers stay exactly as hono writes them. */
  skipPrefixes: readonly string[];
}

export function jsonNewline(options: JsonNewlineOptions): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!options.skipPrefixes.some((p) => c.req.path.startsWith(p))) {
      const body = c.body as (data: string, arg?: unknown, headers?: Record<string, string>) => Response;
      const json = (object: unknown, arg?: unknown, headers?: Record<string, string>): Response =>
        body(`${JSON.stringify(object)}\n`, arg, { "Content-Type": "application/json", ...headers });
      c.json = json as unknown as typeof c.json;
    }
    await next();
  };
}
