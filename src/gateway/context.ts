/**
 * Hono environment of the gateway: bindings plus the variables middleware sets.
 */
import type { Context } from "hono";
import type { Env } from "../env.ts";
import type { RequestAuth } from "../auth/authorizer.ts";
import type { ResolvedQuota } from "../auth/quotas.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** Request body bytes, read (size-limited) by the body middleware for POST/PUT/PATCH. */
    body: Uint8Array;
    /** The principal and its permissions, set by the auth middleware (src/middleware/auth.ts). */
    auth: RequestAuth;
    /** The (resource, operation) checks the auth middleware evaluated, for the request log. */
    accessChecks: readonly { type: string; name: string; operation: string }[];
    /** The client quota that applies to the request (auth middleware), if any: WebSocket produce sessions charge their batches to it. */
    quota: ResolvedQuota | null;
    /** A refusal's event and details for the request's one log line (src/middleware/request-log.ts). */
    logNote: { event: string; fields: Record<string, unknown> };
  };
}

export type AppContext = Context<AppEnv>;
