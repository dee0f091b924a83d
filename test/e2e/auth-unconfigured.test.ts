/**
 * The deployed-without-auth rule on a real `wrangler dev` of the project's wrangler.toml with
 * EDGELOG_AUTH left empty (as a `wrangler deploy` of it would run): only /v1/health answers,
 * everything else is 503 AUTH_NOT_CONFIGURED, and the mode is logged at start-up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevServer, type DevServer } from "./dev-server.ts";

let server: DevServer;

beforeAll(async () => {
  server = await startDevServer({ vars: { EDGELOG_AUTH: "" } });
});

afterAll(async () => {
  await server?.dispose();
});

describe("EDGELOG_AUTH unset", () => {
  it("serves /v1/health only", async () => {
    const health = await fetch(`${server.baseUrl}/v1/health`);
    expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { ok: true } });
    for (const [method, path] of [
      ["GET", "/v1/topics"],
      ["POST", "/v1/topics"],
      ["GET", "/v1/stream/x"],
      ["POST", "/v1/auth/token"],
      ["GET", "/nope"],
    ] as const) {
      const res = await fetch(`${server.baseUrl}${path}`, { method, ...(method === "POST" ? { headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "t" }) } : {}) });
      const body = (await res.json()) as { error: { code: string } };
      expect({ path, status: res.status, code: body.error.code }).toEqual({ path, status: 503, code: "AUTH_NOT_CONFIGURED" });
    }
  });

  it("logs the mode", () => {
    expect(server.output()).toContain("authentication is not configured (EDGELOG_AUTH is not set)");
  });
});
