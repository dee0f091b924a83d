/**
 * Every route the gateway registers has an entry in the route access table, and the table
 * names no route that does not exist; a route without an entry is refused, never served.
 * Also: the deployed-without-auth rule through the real app.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { ROUTE_ACCESS, RouteMatcher } from "../../src/auth/route-access.ts";
import type { Env } from "../../src/env.ts";
import { authEnv, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

describe("route access table", () => {
  const keys = new RouteMatcher(createApp().routes).keys();

  it("has an entry for every route hono registers (HTTP and WebSocket, every API area)", () => {
    const missing = keys.filter((k) => ROUTE_ACCESS[k] === undefined);
    expect(missing).toEqual([]);
    // The areas are all there (a guard against reading an empty route list).
    for (const k of ["POST /v1/topics/:topic/records", "GET /v1/groups/:group", "POST /v1/stream/*", "POST /v1/acls", "GET /bench/noop", "GET /v1/health"]) expect(keys).toContain(k);
  });

  it("names no route that is not registered", () => {
    expect(Object.keys(ROUTE_ACCESS).filter((k) => !keys.includes(k))).toEqual([]);
  });

  it("a route registered without an entry is refused (500 INTERNAL) with auth on", async () => {
    const app = createApp();
    app.get("/v1/unlisted", (c) => c.json({ leaked: true }));
    const e = authEnv(await makeKeys());
    const res = await app.fetch(new Request("http://edgelog.test/v1/unlisted", { headers: { authorization: `Bearer ${await hsToken(SUPERUSER)}` } }), e);
    await expectCode(res, 500, "INTERNAL");
  });
});

describe("EDGELOG_AUTH unset (wrangler deploy of the project's config)", () => {
  const unset = { ...env, EDGELOG_AUTH: undefined } as unknown as Env;

  it("serves /v1/health and answers everything else 503 AUTH_NOT_CONFIGURED, changing nothing", async () => {
    expect(await expectOk(await request(unset, "GET", "/v1/health"))).toEqual({ ok: true });
    const name = `unset-${crypto.randomUUID()}`;
    const err = await expectCode(await request(unset, "POST", "/v1/topics", { body: { name } }), 503, "AUTH_NOT_CONFIGURED");
    expect(err.details).toEqual({ reason: "EDGELOG_AUTH is not set" });
    await expectCode(await request(unset, "GET", "/v1/topics"), 503, "AUTH_NOT_CONFIGURED");
    await expectCode(await request(unset, "GET", "/v1/stream/x"), 503, "AUTH_NOT_CONFIGURED");
    // With auth off (the tier's config), the topic was indeed not created.
    await expectCode(await request(env as Env, "GET", `/v1/topics/${name}`), 404, "UNKNOWN_TOPIC_OR_PARTITION");
  });

  it("EDGELOG_AUTH=required without a key is unconfigured too", async () => {
    const noKey = { ...env, EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: undefined, EDGELOG_JWKS: undefined } as unknown as Env;
    await expectCode(await request(noKey, "GET", "/v1/topics"), 503, "AUTH_NOT_CONFIGURED");
    expect((await request(noKey, "GET", "/v1/health")).status).toBe(200);
  });
});
