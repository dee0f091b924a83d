/**
 * The layering of the code, read from its imports (as protocol-doc.test.ts reads the docs):
 * - the partition's rooms (durable-objects/partition/, design/partition-rooms.md) never import
 *   the switchboard (durable-objects/partition.ts), and a room reaches only rooms below it;
 * - the gateway (src/) never imports a Durable Object class (durable-objects/): it talks to them
 *   through the RPC interfaces of src/ (Env, src/partition/rpc.ts, src/groups/rpc.ts, ...);
 *   src/index.ts alone re-exports the classes for the Workers runtime;
 * - the pure wire layers (src/protocol/, shared with the SDK, and src/codec/) reach no Workers API.
 * Imports are read with TypeScript's own pre-processor (`import`, `import type`, `export ... from`,
 * `import()`), and relative specifiers resolved to repository paths.
 * Each rule is a function over an import graph, tested on a synthetic graph so it can fail, then
 * run on the repository.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");

/** Repository-relative file (`src/app.ts`) -> what it imports: repository-relative files, or bare specifiers (`hono`, `cloudflare:workers`). */
type ImportGraph = Map<string, string[]>;

const SWITCHBOARD = "durable-objects/partition.ts";
const ROOMS_DIR = "durable-objects/partition/";
/**
 * The partition's rooms, lowest first: a room may import (read) only the rooms before it in this
 * list. Rooms still to come (design/partition-rooms.md) take their place when they land:
 * subscriptions and lifecycle next, then transactions. A room is `partition/<name>.ts` or the
 * folder `partition/<name>/`; any other file under partition/ is shared by the rooms and is
 * transparent to the rule (what it imports counts for the room that imports it).
 */
const ROOM_ORDER = ["log", "producers", "waiters", "streams/state", "streams/read", "subscriptions", "lifecycle"] as const;

/** All `.ts` files under `dir` (repository-relative), sorted. */
function tsFiles(dir: string): string[] {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return [];
  const out: string[] = [];
  for (const name of readdirSync(abs)) {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...tsFiles(rel));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(rel);
  }
  return out.sort();
}

/** `spec` as imported from repository file `from`: a repository path for a relative import (with `.ts` or `/index.ts` added when missing), else the bare specifier. */
function resolveImport(from: string, spec: string): string {
  if (!spec.startsWith(".")) return spec;
  const base = relative(ROOT, resolve(ROOT, dirname(from), spec))
    .split("\\")
    .join("/");
  for (const candidate of [base, `${base}.ts`, `${base}/index.ts`]) {
    if (candidate.endsWith(".ts") && existsSync(join(ROOT, candidate))) return candidate;
  }
  return base;
}

/** The import graph of every `.ts` file under `dirs`. */
function readImports(dirs: readonly string[]): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of dirs.flatMap(tsFiles)) {
    const info = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
    graph.set(
      file,
      info.importedFiles.map((f) => resolveImport(file, f.fileName)),
    );
  }
  return graph;
}

/** Every file reachable from `start` (itself included), following imports; `through(file)` false stops the walk at that file (it is reached, not entered). */
function reachable(graph: ImportGraph, start: string, through: (file: string) => boolean = () => true): Set<string> {
  const seen = new Set<string>([start]);
  const todo = [start];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (file !== start && !through(file)) continue;
    for (const next of graph.get(file) ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  return seen;
}

/** The room a file belongs to (`durable-objects/partition/streams/state.ts` -> "streams/state"), or null for the switchboard and shared files. */
function roomOf(file: string): string | null {
  if (!file.startsWith(ROOMS_DIR)) return null;
  const rel = file.slice(ROOMS_DIR.length).replace(/\.ts$/, "");
  let best: string | null = null;
  for (const room of ROOM_ORDER) if ((rel === room || rel.startsWith(`${room}/`)) && (best === null || room.length > best.length)) best = room;
  return best;
}

/**
 * Rule (a): no file under durable-objects/partition/ reaches the switchboard, and each room reaches
 * only rooms before it in ROOM_ORDER (through shared files too). Answers one line per violation.
 */
function roomViolations(graph: ImportGraph): string[] {
  const out: string[] = [];
  for (const file of graph.keys()) {
    if (!file.startsWith(ROOMS_DIR)) continue;
    const room = roomOf(file);
    // Walk through shared files and this room's own files; stop at the switchboard and at other rooms.
    const seen = reachable(graph, file, (f) => f !== SWITCHBOARD && (roomOf(f) === null || roomOf(f) === room) && f.startsWith(ROOMS_DIR));
    if (seen.has(SWITCHBOARD)) out.push(`${file} imports the switchboard ${SWITCHBOARD}`);
    if (room === null) continue;
    const rank = ROOM_ORDER.indexOf(room as (typeof ROOM_ORDER)[number]);
    for (const f of seen) {
      const other = roomOf(f);
      if (other !== null && other !== room && ROOM_ORDER.indexOf(other as (typeof ROOM_ORDER)[number]) > rank) {
        out.push(`room ${room} (${file}) imports room ${other} (${f}), which is above it`);
      }
    }
  }
  return out.sort();
}

/** Rule (b): no file of src/ other than src/index.ts imports anything under durable-objects/. */
function gatewayViolations(graph: ImportGraph): string[] {
  const out: string[] = [];
  for (const [file, imports] of graph) {
    if (!file.startsWith("src/") || file === "src/index.ts") continue;
    for (const target of imports) if (target.startsWith("durable-objects/")) out.push(`${file} imports ${target}`);
  }
  return out.sort();
}

/** Rule (c): nothing reachable from src/protocol/, src/codec/ or src/lifecycle/ imports a Workers API (`cloudflare:*`). */
function pureLayerViolations(graph: ImportGraph): string[] {
  const out = new Set<string>();
  for (const file of graph.keys()) {
    if (!file.startsWith("src/protocol/") && !file.startsWith("src/codec/") && !file.startsWith("src/lifecycle/")) continue;
    for (const f of reachable(graph, file)) {
      for (const target of graph.get(f) ?? []) if (target.startsWith("cloudflare:")) out.add(`${file} reaches ${target} (imported by ${f})`);
    }
  }
  return [...out].sort();
}

const graphOf = (edges: Record<string, string[]>): ImportGraph => new Map(Object.entries(edges));

describe("the layering rules (on synthetic import graphs)", () => {
  it("rooms: the switchboard, directly or through a shared file, and a room above are violations; rooms below and shared files are not", () => {
    const graph = graphOf({
      "durable-objects/partition.ts": ["durable-objects/partition/log.ts", "durable-objects/partition/streams/state.ts"],
      "durable-objects/partition/log.ts": ["src/partition/core.ts", "durable-objects/partition/room.ts"],
      "durable-objects/partition/room.ts": ["src/env.ts"],
      "durable-objects/partition/producers.ts": ["durable-objects/partition/log.ts", "durable-objects/partition/producers/cache.ts"],
      "durable-objects/partition/producers/cache.ts": ["durable-objects/partition/waiters.ts"],
      "durable-objects/partition/waiters.ts": ["durable-objects/partition/log.ts"],
      "durable-objects/partition/streams/state.ts": ["durable-objects/partition/log.ts", "durable-objects/partition/producers.ts"],
      "durable-objects/partition/streams/read.ts": ["durable-objects/partition/streams/state.ts", "durable-objects/partition/helper.ts"],
      "durable-objects/partition/helper.ts": ["durable-objects/partition.ts"],
    });
    expect(roomViolations(graph)).toEqual([
      "durable-objects/partition/helper.ts imports the switchboard durable-objects/partition.ts",
      "durable-objects/partition/streams/read.ts imports the switchboard durable-objects/partition.ts",
      "room producers (durable-objects/partition/producers.ts) imports room waiters (durable-objects/partition/waiters.ts), which is above it",
      "room producers (durable-objects/partition/producers/cache.ts) imports room waiters (durable-objects/partition/waiters.ts), which is above it",
    ]);
    // The same graph without the two wrong edges is clean.
    graph.set("durable-objects/partition/producers/cache.ts", []);
    graph.set("durable-objects/partition/helper.ts", []);
    expect(roomViolations(graph)).toEqual([]);
  });

  it("rooms: a room is told apart from a longer room name and from shared files of the same folder", () => {
    expect(["log", "logging", "streams/state", "streams/state/cache", "streams/shared", "streams/read", "partition"].map((r) => roomOf(`${ROOMS_DIR}${r}.ts`))).toEqual([
      "log",
      null,
      "streams/state",
      "streams/state",
      null,
      "streams/read",
      null,
    ]);
    expect(roomOf(SWITCHBOARD)).toBe(null);
  });

  it("gateway: src/ importing durable-objects/ is a violation, even type-only; src/index.ts may", () => {
    const graph = graphOf({
      "src/index.ts": ["durable-objects/partition.ts", "src/app.ts"],
      "src/app.ts": ["hono", "src/env.ts"],
      "src/env.ts": ["durable-objects/metadata.ts"],
      "durable-objects/metadata.ts": ["src/env.ts"],
    });
    expect(gatewayViolations(graph)).toEqual(["src/env.ts imports durable-objects/metadata.ts"]);
  });

  it("pure layers: a Workers API reached from src/protocol/ or src/codec/, directly or not, is a violation", () => {
    const graph = graphOf({
      "src/protocol/index.ts": ["src/protocol/errors.ts"],
      "src/protocol/errors.ts": ["src/gateway/http.ts"],
      "src/gateway/http.ts": ["cloudflare:workers", "hono"],
      "src/codec/batch.ts": ["src/codec/crc32c.ts"],
      "src/codec/crc32c.ts": [],
      "src/routes/fetch.ts": ["cloudflare:workers"],
    });
    expect(pureLayerViolations(graph)).toEqual([
      "src/protocol/errors.ts reaches cloudflare:workers (imported by src/gateway/http.ts)",
      "src/protocol/index.ts reaches cloudflare:workers (imported by src/gateway/http.ts)",
    ]);
  });
});

describe("the layering of this repository", () => {
  const graph = readImports(["src", "durable-objects"]);

  it("reads the imports it checks (type-only ones included), resolved to files that exist", () => {
    // A check that reads nothing passes for the wrong reason: the known edges must be there.
    expect(graph.get("src/index.ts")).toContain("durable-objects/partition.ts");
    expect(graph.get("src/index.ts")).toContain("src/app.ts");
    expect(graph.get("src/protocol/index.ts")).toContain("src/protocol/errors.ts");
    expect(
      [...graph.values()]
        .flat()
        .filter((t) => t.startsWith("src/") || t.startsWith("durable-objects/"))
        .filter((t) => !graph.has(t)),
    ).toEqual([]);
  });

  it("no file under durable-objects/partition/ imports the switchboard or a room above it", () => {
    expect(roomViolations(graph)).toEqual([]);
  });

  it("src/ imports durable-objects/ only in src/index.ts", () => {
    expect(gatewayViolations(graph)).toEqual([]);
  });

  it("src/protocol/, src/codec/ and src/lifecycle/ reach no Workers API (cloudflare:*)", () => {
    expect(pureLayerViolations(graph)).toEqual([]);
  });
});
