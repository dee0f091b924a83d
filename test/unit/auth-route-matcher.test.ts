/**
 * The auth middleware authorizes the resource the route will act on only if its route lookup
 * agrees with hono's: same route, same decoded parameters. Property test against hono itself
 * over the gateway's route shapes and arbitrary (percent-encoded) segments.
 */
import fc from "fast-check";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { RouteMatcher } from "../../src/auth/route-access.ts";

const PATTERNS = [
  "/v1/topics/:topic/partitions/:partition/records",
  "/v1/topics/:tenant/:namespace/:topic/partitions/:partition/records",
  "/v1/topics/:topic/records",
  "/v1/topics/:tenant/:namespace/:topic/records",
  "/v1/topics/:topic",
  "/v1/topics/:tenant/:namespace/:topic",
  "/v1/groups/:group/offsets",
  "/v1/groups/:group",
  "/v1/stream/*",
];

/** What the matcher said for the last request, computed in a middleware from `c.req.path` as the gateway's is. */
let mine: ReturnType<RouteMatcher["match"]> | undefined;

function honoApp(): Hono {
  const app = new Hono();
  let matcher: RouteMatcher | null = null;
  app.use("*", async (c, next) => {
    matcher ??= new RouteMatcher(app.routes);
    mine = matcher.match(c.req.method, c.req.path);
    await next();
  });
  for (const p of PATTERNS) app.post(p, (c) => c.json({ route: p, params: c.req.param() }));
  return app;
}

const segment = fc.oneof(
  fc.stringMatching(/^[a-zA-Z0-9._-]{1,12}$/),
  fc.string({ minLength: 1, maxLength: 12 }).map((s) => encodeURIComponent(s)),
  fc.constantFrom("a%2Fb%2Fc", "partitions", "records", "offsets", "%2F", "x%2Fpartitions%2F0", ".", "..", "", "%25", "%zz", "a%2"),
);

describe("RouteMatcher agrees with hono", () => {
  const app = honoApp();

  it("on the route and the decoded parameters of any path", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 6 }), fc.constantFrom("/v1/topics/", "/v1/groups/", "/v1/stream/", "/v1/stream", "/v1/"), async (segments, prefix) => {
        const path = prefix + segments.join("/");
        let url: URL;
        try {
          url = new URL(`http://x${path}`);
        } catch {
          return;
        }
        mine = undefined;
        const res = await app.fetch(new Request(url, { method: "POST" }));
        if (res.status === 404) {
          expect(mine).toBeNull();
          return;
        }
        const theirs = (await res.json()) as { route: string; params: Record<string, string> };
        expect(mine).toEqual({ key: `POST ${theirs.route}`, params: theirs.params });
      }),
      { numRuns: 3000 },
    );
  });
});
