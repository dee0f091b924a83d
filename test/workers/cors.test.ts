import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("CORS on the native API", () => {
  it("answers a preflight with the allowed methods and headers, without touching state", async () => {
    const res = await SELF.fetch("http://edgelog.test/v1/topics", {
      method: "OPTIONS",
      headers: { Origin: "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    expect(res.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("content-type");
  });

  it("exposes the binary fetch bounds and the auth and quota headers on normal answers", async () => {
    const res = await SELF.fetch("http://edgelog.test/v1/health", { headers: { Origin: "https://app.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-expose-headers")).toBe(
      "Edgelog-Next-Offset,Edgelog-High-Watermark,Edgelog-Log-Start-Offset,WWW-Authenticate,Retry-After,Edgelog-Throttle-Time-Ms",
    );
  });

  it("adds no CORS headers to a request without Origin (a server, the CLI, curl): nothing for a browser to check", async () => {
    const res = await SELF.fetch("http://edgelog.test/v1/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.headers.get("access-control-expose-headers")).toBeNull();
  });
});
