/**
 * Runs the real Edgelog Worker and its Durable Objects in workerd through Miniflare's API
 * directly (no `wrangler dev` proxy, which costs several times the request rate), with the
 * same bundle `wrangler deploy` would upload. Requests go through `mf.dispatchFetch`, or
 * over plain HTTP to `url`: a loopback socket that workerd serves with the Worker itself
 * (Miniflare's `unsafeDirectSockets`), without Miniflare's dev-only entry worker in front.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { Pool } from "undici";

export const ROOT = resolve(import.meta.dirname, "..");

/** Reads the few wrangler.toml fields the bench needs (compat date/flags, DO bindings). */
function readWranglerToml(root: string): { compatibilityDate: string; compatibilityFlags: string[]; durableObjects: Record<string, string> } {
  const text = readFileSync(join(root, "wrangler.toml"), "utf8");
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(text)?.[1];
  const flags = /^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(text)?.[1] ?? "";
  if (!date) throw new Error("wrangler.toml has no compatibility_date");
  const durableObjects: Record<string, string> = {};
  const re = /\[\[durable_objects\.bindings\]\]\s*name\s*=\s*"([^"]+)"\s*class_name\s*=\s*"([^"]+)"/g;
  for (let m = re.exec(text); m; m = re.exec(text)) durableObjects[m[1] as string] = m[2] as string;
  return { compatibilityDate: date, compatibilityFlags: [...flags.matchAll(/"([^"]+)"/g)].map((m) => m[1] as string), durableObjects };
}

/** The bundle directory of each checkout bundled in this process (removed when the process exits). */
const bundles = new Map<string, string>();

/**
 * `wrangler deploy --dry-run` of `root` into a temporary directory, once per process and
 * checkout (about 4 s each): the bench files that start several engines (bench/security.ts,
 * bench/metadata.ts) reuse it; each engine still gets its own Durable Object storage.
 */
function bundle(root: string): string {
  const cached = bundles.get(root);
  if (cached !== undefined) return cached;
  const outdir = mkdtempSync(join(tmpdir(), "edgelog-bench-bundle-"));
  if (bundles.size === 0)
    process.once("exit", () => {
      for (const dir of bundles.values()) rmSync(dir, { recursive: true, force: true });
    });
  bundles.set(root, outdir);
  try {
    execFileSync(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outdir], {
      cwd: root,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
      stdio: ["ignore", "ignore", "inherit"],
    });
  } catch (err) {
    bundles.delete(root);
    rmSync(outdir, { recursive: true, force: true });
    throw err;
  }
  return outdir;
}

export interface Engine {
  mf: Miniflare;
  /** A `fetch` that dispatches into the Worker (for the SDK's `fetch` option). */
  fetch: typeof fetch;
  /**
   * `http://127.0.0.1:{port}`: the Worker's own socket in workerd. Requests to it skip
   * Miniflare's entry worker (dev-only routing, logging, error pages: an extra Worker hop
   * that re-streams every body, several ms per MB of answer), which production does not have.
   */
  url: string;
  /**
   * A `fetch` over plain HTTP to {@link url} built on undici's `Pool.request` (no WHATWG
   * streams or Request objects on the client side): the least client CPU per request, so the
   * figures weigh the Worker more than the harness. Relative URLs are not supported: pass
   * `${url}/...`.
   */
  directFetch: typeof fetch;
  /**
   * The EDGELOG_METADATA_QUORUM this engine runs with: "off" (MetadataDO "cluster", the bench's
   * default) unless the caller's bindings set it ("1", "3": a Raft metadata quorum of that many
   * RaftMemberDO members in this workerd; docs/RAFT.md).
   */
  metadataQuorum: string;
  dispose(): Promise<void>;
}

/**
 * Bundles the Worker with wrangler and starts it in workerd with on-disk Durable Object storage.
 * `root` is the checkout to bundle (default: this one); the A/B bench (bench/ab.ts) passes a
 * second checkout, which needs its own `node_modules` (or a link to this one's).
 *
 * Bindings are not read from wrangler.toml's `[vars]`: every engine runs with the metadata store
 * MetadataDO (EDGELOG_METADATA_QUORUM "off") unless `extraBindings` sets EDGELOG_METADATA_QUORUM
 * ("1" as `npm start` and the e2e tier run, "3" as wrangler.toml deploys; bench/metadata.ts), the
 * same variable `wrangler dev --var EDGELOG_METADATA_QUORUM:1` sets (test/e2e/dev-server.ts).
 */
export async function startEngine(extraBindings: Record<string, string> = {}, extraOptions: Record<string, unknown> = {}, root: string = ROOT): Promise<Engine> {
  const outdir = bundle(root);
  const stateDir = mkdtempSync(join(tmpdir(), "edgelog-bench-state-"));
  const cfg = readWranglerToml(root);
  const durableObjects: Record<string, { className: string; useSQLite: boolean }> = {};
  for (const [binding, className] of Object.entries(cfg.durableObjects)) durableObjects[binding] = { className, useSQLite: true };
  // Miniflare 5 takes a new options shape; convertV4MiniflareOptions maps the classic
  // single-worker shape (modules, durableObjects, bindings) onto it.
  const bindings = { EDGELOG_BENCH_ROUTES: "1", EDGELOG_AUTH: "none", EDGELOG_METADATA_QUORUM: "off", ...extraBindings };
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      name: "edgelog",
      modules: [{ type: "ESModule", path: join(outdir, "index.js"), contents: readFileSync(join(outdir, "index.js"), "utf8") }],
      modulesRoot: outdir,
      compatibilityDate: cfg.compatibilityDate,
      compatibilityFlags: cfg.compatibilityFlags,
      durableObjects,
      bindings,
      durableObjectsPersist: stateDir,
      unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
      ...extraOptions,
    } as unknown as Parameters<typeof convertV4MiniflareOptions>[0]),
  );
  await mf.ready;
  const url = (await mf.unsafeGetDirectURL("edgelog")).toString().replace(/\/$/, "");
  const dispatch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    // Fast path for what the bench and the SDK send (a URL string, a string or byte body):
    // straight to dispatchFetch, without building and re-reading a Request (a body copy and a
    // stream read in Node per request, which would count against POSTs and not GETs).
    const body = init?.body;
    if (typeof input === "string" && (body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array)) {
      const res = await mf.dispatchFetch(input, {
        method: init?.method ?? "GET",
        headers: init?.headers as Record<string, string> | undefined,
        body: body ?? undefined,
        signal: init?.signal ?? undefined,
      } as never);
      return res as unknown as Response;
    }
    const req = new Request(input as RequestInfo, init);
    const res = await mf.dispatchFetch(req.url, {
      method: req.method,
      headers: req.headers as unknown as Record<string, string>,
      body: req.body === null ? undefined : new Uint8Array(await req.arrayBuffer()),
    } as never);
    return res as unknown as Response;
  }) as typeof fetch;
  const pool = new Pool(url, { connections: 256 });
  const directFetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const u = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const body = init?.body;
    if (!(body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array)) throw new TypeError("directFetch takes a string or Uint8Array body");
    const res = await pool.request({
      path: u.pathname + u.search,
      method: (init?.method ?? "GET") as "GET",
      headers: init?.headers as Record<string, string> | undefined,
      body: body ?? undefined,
      signal: init?.signal ?? undefined,
    });
    const bytes = await res.body.arrayBuffer();
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    return new Response(res.statusCode === 204 || res.statusCode === 304 ? null : bytes, { status: res.statusCode, headers });
  }) as typeof fetch;
  return {
    mf,
    fetch: dispatch,
    url,
    directFetch,
    metadataQuorum: bindings.EDGELOG_METADATA_QUORUM,
    dispose: async () => {
      await pool.close();
      await mf.dispose();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
