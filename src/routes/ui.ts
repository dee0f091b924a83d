import type { Hono } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { UI_ASSETS } from "../ui/assets.generated.ts";

/** Path prefix of the web console. */
export const UI_PATH = "/ui/";

/**
 * The page's Content-Security-Policy: only this origin's script, style and API (the console
 * calls /v1 on the origin that served it), nothing inline, no framing (clickjacking of the
 * delete buttons), no form posts elsewhere.
 */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * `GET /ui/*`: the web console (docs/OBSERVABILITY.md "Web console"), a static single-page app
 * bundled into the Worker (src/ui/assets.generated.ts, built from src/ui/app/). `/ui`
 * redirects to `/ui/`, `/ui/` is the page, `/ui/{file}` its script and style; any other path
 * under /ui/ is `NOT_FOUND` (the app routes in the URL fragment, `#/topics/...`, so a page
 * reload never asks the server for an app route). Answers carry a strong ETag and
 * `Cache-Control: no-cache` (revalidated on every load: a deploy shows at once, and an
 * unchanged file costs a 304). The files are public (no data in them); the API calls the page
 * makes carry the user's token.
 */
export function uiRoutes(app: Hono<AppEnv>): void {
  app.get("/ui/*", (c) => {
    const path = c.req.path;
    if (path === "/ui") return c.redirect(UI_PATH, 301);
    const name = path === UI_PATH ? "index.html" : path.slice(UI_PATH.length);
    const file = Object.hasOwn(UI_ASSETS, name) ? UI_ASSETS[name] : undefined;
    if (file === undefined) throw new EdgelogError("NOT_FOUND", `No console file ${path}.`);
    const headers: Record<string, string> = {
      "Content-Type": file.contentType,
      ETag: file.etag,
      "Cache-Control": "no-cache",
      "X-Content-Type-Options": "nosniff",
    };
    if (name === "index.html") {
      headers["Content-Security-Policy"] = CSP;
      headers["Referrer-Policy"] = "no-referrer";
    }
    const inm = c.req.header("if-none-match");
    if (inm?.split(",").some((t) => t.trim().replace(/^W\//, "") === file.etag)) return c.body(null, 304, headers);
    return c.body(file.body, 200, headers);
  });
}
