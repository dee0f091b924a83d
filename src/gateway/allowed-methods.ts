/**
 * Which methods a path has routes for, so that a known path asked with another method is
 * answered 405 METHOD_NOT_ALLOWED with an `Allow` header (RFC 9110 section 15.5.6) instead of
 * 404 NOT_FOUND.
 *
 * Built once from the app's registered routes (hono's `app.routes`): each route path is turned
 * into a regular expression with hono's pattern syntax as the gateway uses it: `:name` is one
 * path segment, `*` any rest. Middleware routes (method `ALL`) do not count: they run for
 * every method. Pure: no Workers imports.
 */

export interface RouteLike {
  method: string;
  path: string;
}

export class AllowedMethods {
  readonly #routes: { method: string; pattern: RegExp }[] = [];

  constructor(routes: readonly RouteLike[]) {
    for (const r of routes) {
      if (r.method === "ALL") continue;
      this.#routes.push({ method: r.method.toUpperCase(), pattern: routePattern(r.path) });
    }
  }

  /**
   * Methods with a route for `path`, sorted, with HEAD wherever GET is (hono answers HEAD
   * with the GET route); [] for a path no route knows.
   */
  forPath(path: string): string[] {
    const methods = new Set<string>();
    for (const r of this.#routes) if (r.pattern.test(path)) methods.add(r.method);
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  }
}

/** `/v1/topics/:topic/records` -> /^\/v1\/topics\/[^/]+\/records\/?$/ ; a `*` matches any rest. */
function routePattern(path: string): RegExp {
  let re = "";
  for (const part of path.split(/(\/\*$|:[A-Za-z0-9_]+|\*)/)) {
    if (part === "") continue;
    if (part === "/*") re += "(?:/.*)?";
    else if (part === "*") re += ".*";
    else if (part.startsWith(":")) re += "[^/]+";
    else re += part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}/?$`);
}
