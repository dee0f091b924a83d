/**
 * Hono environment of the gateway: bindings plus the variables middleware sets.
 */
import type { Context } from "hono";
import type { Env } from "../env.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** Request body bytes, read (size-limited) by the body middleware for POST/PUT/PATCH. */
    body: Uint8Array;
  };
}

export type AppContext = Context<AppEnv>;
