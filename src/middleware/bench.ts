/**
 * Gate for /bench/* routes: they exist only when the EDGELOG_BENCH_ROUTES binding is "1"
 * (wrangler.toml var, off in production); otherwise they answer NOT_FOUND like any unknown path.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { EdgelogError } from "../protocol/errors.ts";

export interface BenchGateOptions {
  /** Binding value that enables the routes. @default "1" */
  enabledValue: string;
}

export function benchGate(options: Partial<BenchGateOptions> = {}): MiddlewareHandler<AppEnv> {
  const { enabledValue } = { enabledValue: "1", ...options };
  return async (c, next) => {
    if (c.env.EDGELOG_BENCH_ROUTES !== enabledValue) throw new EdgelogError("NOT_FOUND");
    await next();
  };
}
