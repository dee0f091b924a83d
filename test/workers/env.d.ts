// Types `env` from "cloudflare:test" / "cloudflare:workers" with the Worker's bindings.
import type { Env as EdgelogEnv } from "../../src/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends EdgelogEnv {}
  }
}
