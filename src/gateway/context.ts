/**
 * Hono environment of the gateway: bindings plus the variables middleware sets.
 */
import type { Context } from "hono";
import type { Env } from "../env.ts";
import type { RequestAuth } from "../auth/authorizer.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** Request body bytes, read (size-limited) by the body middleware for POST/PUT/PATCH. */
    body: Uint8Array;
    /** The principal and its permissions, set by the auth middleware (src/middleware/auth.ts). */
    auth: RequestAuth;
  };
}

export type AppContext = Context<AppEnv>;
