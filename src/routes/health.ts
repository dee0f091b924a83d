import type { Hono } from "hono";
import type { AppEnv } from "../gateway/context.ts";

/** `GET /v1/health`: the gateway is up (no Durable Object is called). */
export function healthRoutes(app: Hono<AppEnv>): void {
  app.get("/v1/health", (c) => c.json({ ok: true }));
}
