/**
 * `GET /ui/*`: the web console's files through the real gateway app (src/routes/ui.ts), with auth
 * on: public, cached by ETag, under a Content-Security-Policy; the API behind stays protected.
 * The console itself runs in Chromium in test/e2e/console.test.ts.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import { UI_ASSETS } from "../../src/ui/assets.generated.ts";
import { authEnv, expectCode, makeKeys, request } from "./auth-helpers.ts";

describe("the web console's files", () => {
  let secured: Env;
  beforeAll(async () => {
    secured = authEnv(await makeKeys());
  });

  it("/ui redirects to /ui/, which is the page, public with auth on; the API it calls is not", async () => {
    const redirect = await request(secured, "GET", "/ui");
    expect([redirect.status, redirect.headers.get("location")]).toEqual([301, "/ui/"]);
    const page = await request(secured, "GET", "/ui/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(await page.text()).toBe(UI_ASSETS["index.html"]!.body);
    await expectCode(await request(secured, "GET", "/v1/topics"), 401, "UNAUTHENTICATED");
  });

  it("serves the script and style with their ETags, and 304 when the browser has them", async () => {
    for (const [name, type] of [
      ["app.js", "text/javascript; charset=utf-8"],
      ["app.css", "text/css; charset=utf-8"],
    ] as const) {
      const res = await request(env as Env, "GET", `/ui/${name}`);
      expect([res.status, res.headers.get("content-type"), res.headers.get("etag")]).toEqual([200, type, UI_ASSETS[name]!.etag]);
      expect(await res.text()).toBe(UI_ASSETS[name]!.body);
      const again = await request(env as Env, "GET", `/ui/${name}`, { headers: { "if-none-match": `W/"other", ${UI_ASSETS[name]!.etag}` } });
      expect([again.status, await again.text()]).toEqual([304, ""]);
      const changed = await request(env as Env, "GET", `/ui/${name}`, { headers: { "if-none-match": '"other"' } });
      expect(changed.status).toBe(200);
      await changed.arrayBuffer();
    }
  });

  it("answers NOT_FOUND for any other path under /ui/ (the app routes in the fragment)", async () => {
    for (const path of ["/ui/topics", "/ui/app.js.map", "/ui/constructor", "/ui/__proto__", "/ui/ui/app.js"]) await expectCode(await request(env as Env, "GET", path), 404, "NOT_FOUND");
    await expectCode(await request(env as Env, "POST", "/ui/"), 405, "METHOD_NOT_ALLOWED");
  });

  it("is not served while EDGELOG_AUTH is unset: only /v1/health is (docs/SECURITY.md)", async () => {
    await expectCode(await request({ ...env, EDGELOG_AUTH: undefined } as unknown as Env, "GET", "/ui/"), 503, "AUTH_NOT_CONFIGURED");
  });
});
