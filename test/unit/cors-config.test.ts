/**
 * CORS configured by EDGELOG_CORS_ORIGINS / EDGELOG_CORS_ALLOW_HEADERS (docs/PROTOCOL.md, "CORS"),
 * on a bare hono app (the gateway's defaults are covered in test/workers/cors.test.ts).
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { AppEnv } from "../../src/gateway/context.ts";
import { corsMiddleware, corsOptionsFromEnv } from "../../src/middleware/cors.ts";

function app(): Hono<AppEnv> {
  const a = new Hono<AppEnv>();
  a.use("/v1/*", corsMiddleware());
  a.get("/v1/x", (c) => c.json({ ok: true }));
  return a;
}

const preflight = (origin: string, headers: string) => ({
  method: "OPTIONS",
  headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": headers },
});

describe("CORS configuration", () => {
  it("parses the variables: blank means the defaults, a list is trimmed, * anywhere means any origin", () => {
    expect(corsOptionsFromEnv({})).toEqual({ origin: "*", allowHeaders: [] });
    expect(corsOptionsFromEnv({ EDGELOG_CORS_ORIGINS: " https://a.example , https://b.example ", EDGELOG_CORS_ALLOW_HEADERS: "X-Trace, x-tenant" })).toEqual({
      origin: ["https://a.example", "https://b.example"],
      allowHeaders: ["X-Trace", "x-tenant"],
    });
    expect(corsOptionsFromEnv({ EDGELOG_CORS_ORIGINS: "https://a.example,*" }).origin).toBe("*");
  });

  it("by default allows any origin, the three base headers, and never credentials", async () => {
    const res = await app().request("/v1/x", preflight("https://app.example", "content-type,authorization"), {});
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-headers")).toBe("Content-Type,Accept,Authorization");
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("with a list of origins, echoes an allowed origin and gives another none; extra headers are allowed", async () => {
    const env = { EDGELOG_CORS_ORIGINS: "https://a.example,https://b.example", EDGELOG_CORS_ALLOW_HEADERS: "X-Trace" };
    const ok = await app().request("/v1/x", { headers: { Origin: "https://b.example" } }, env);
    expect([ok.status, ok.headers.get("access-control-allow-origin"), await ok.text()]).toEqual([200, "https://b.example", '{"ok":true}']);
    const other = await app().request("/v1/x", { headers: { Origin: "https://evil.example" } }, env);
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const pre = await app().request("/v1/x", preflight("https://a.example", "x-trace"), env);
    expect(pre.headers.get("access-control-allow-headers")).toBe("Content-Type,Accept,Authorization,X-Trace");
  });
});
