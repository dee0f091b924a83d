/**
 * docs/ARCHITECTURE.md cannot silently fall behind the code: every Durable Object class the
 * Worker exports (src/index.ts) or binds (wrangler.toml) is named in it, and every table a
 * Durable Object creates (`CREATE TABLE [IF NOT EXISTS] name` anywhere under durable-objects/)
 * appears in it as `name` (in backticks). The parsers are tested on samples so a parse that
 * finds nothing cannot pass for a clean check.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const read = (rel: string): string => readFileSync(join(ROOT, rel), "utf8");

/** Class names re-exported from a durable-objects/ module by the Worker entry (`export { A, B as C } from "../durable-objects/x.ts"`). */
function exportedDurableObjectClasses(indexTs: string): string[] {
  const out: string[] = [];
  for (const m of indexTs.matchAll(/export\s*\{([^}]*)\}\s*from\s*["'][^"']*durable-objects\/[^"']*["']/g)) {
    for (const part of m[1]!.split(",")) {
      const name = part
        .trim()
        .split(/\s+as\s+/)
        .pop()!
        .trim();
      if (name !== "" && !name.startsWith("type ")) out.push(name);
    }
  }
  return [...new Set(out)].sort();
}

/** `class_name` of every `[[durable_objects.bindings]]` entry. */
function boundDurableObjectClasses(wranglerToml: string): string[] {
  const out: string[] = [];
  for (const block of wranglerToml.split(/^\[\[/m).filter((b) => b.startsWith("durable_objects.bindings]]"))) {
    const m = /^\s*class_name\s*=\s*"([^"]+)"/m.exec(block);
    if (m) out.push(m[1]!);
  }
  return [...new Set(out)].sort();
}

/** Table names of every `CREATE TABLE [IF NOT EXISTS] name` (name optionally quoted) in `source`. */
function createdTables(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["`[]?([A-Za-z_][A-Za-z0-9_]*)/gi)) out.push(m[1]!);
  return [...new Set(out)].sort();
}

function tsFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) return tsFiles(rel);
    return name.endsWith(".ts") ? [rel] : [];
  });
}

/** The names of `names` that `doc` does not mention as `word` (whole word) or `` `name` `` (backticked), per `style`. */
function missing(doc: string, names: readonly string[], style: "word" | "backticked"): string[] {
  return names.filter((n) => (style === "word" ? !new RegExp(`\\b${n}\\b`).test(doc) : !doc.includes(`\`${n}\``)));
}

describe("the parsers (on samples)", () => {
  it("finds re-exported classes, bindings and created tables, and nothing else", () => {
    const index = `import { createApp } from "./app.ts";\nexport { ADO } from "../durable-objects/a.ts";\nexport { BDO, CDO as Renamed } from '../durable-objects/b/c.ts';\nexport { helper } from "./helper.ts";`;
    expect(exportedDurableObjectClasses(index)).toEqual(["ADO", "BDO", "Renamed"]);
    const toml = `[[durable_objects.bindings]]\nname = "A"\nclass_name = "ADO"\n\n[[migrations]]\ntag = "v1"\nnew_sqlite_classes = ["ADO", "ZDO"]\n\n[[durable_objects.bindings]]\nname = "B"\nclass_name = "BDO"\n`;
    expect(boundDurableObjectClasses(toml)).toEqual(["ADO", "BDO"]);
    const sql = 'sql.run(`CREATE TABLE meta (k TEXT); create table if not exists _rooms (room TEXT);\n  CREATE TABLE IF NOT EXISTS "sub_cursors" (x)`); // CREATE INDEX i ON meta (k)';
    expect(createdTables(sql)).toEqual(["_rooms", "meta", "sub_cursors"]);
  });

  it("a name the doc does not mention is reported; prose does not count for a table", () => {
    const doc = "The PartitionDO keeps `batches`; topics are listed in meta.";
    expect(missing(doc, ["PartitionDO", "MetadataDO"], "word")).toEqual(["MetadataDO"]);
    expect(missing(doc, ["batches", "topics", "meta"], "backticked")).toEqual(["topics", "meta"]);
  });
});

describe("docs/ARCHITECTURE.md", () => {
  const doc = read("docs/ARCHITECTURE.md");
  const exported = exportedDurableObjectClasses(read("src/index.ts"));
  const bound = boundDurableObjectClasses(read("wrangler.toml"));
  const tables = [...new Set(tsFiles("durable-objects").flatMap((f) => createdTables(read(f))))].sort();

  it("the Worker exports exactly the Durable Object classes wrangler.toml binds", () => {
    expect(exported.length).toBeGreaterThanOrEqual(5);
    expect(exported).toEqual(bound);
  });

  it("names every exported or bound Durable Object class", () => {
    expect(missing(doc, [...new Set([...exported, ...bound])], "word")).toEqual([]);
  });

  it("names every table a Durable Object creates, in backticks", () => {
    expect(tables).toEqual(expect.arrayContaining(["batches", "meta", "topics", "ds_stream"]));
    expect(missing(doc, tables, "backticked")).toEqual([]);
  });
});
