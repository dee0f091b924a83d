import type { Hono } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { API_INDEX } from "../protocol/index-doc.ts";

/**
 * `GET /`: a small JSON index of the API (name, version, the route areas with their section of
 * docs/PROTOCOL.md). `GET /v1/health`: the gateway is up. Neither calls a Durable Object.
 */
export function healthRoutes(app: Hono<AppEnv>): void {
  app.get("/", (c) => c.json(API_INDEX));
  app.get("/v1/health", (c) => c.json({ ok: true }));
}
