import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const index = readFileSync(join(ROOT, "sdk/src/index.ts"), "utf8");
const readme = readFileSync(join(ROOT, "sdk/README.md"), "utf8");

/** The sections of sdk/src/index.ts (`// ---- name (comment) ----`) with their value exports. */
function indexSections(): Array<{ name: string; values: string[] }> {
  const sections: Array<{ name: string; values: string[] }> = [];
  for (const part of index.split(/^\/\/ ---- /m).slice(1)) {
    const name = /^([^(-]+?)\s*(?:\(|----)/.exec(part)![1]!;
    const values: string[] = [];
    for (const m of part.matchAll(/^export \{([^}]*)\}/gm)) {
      for (const item of m[1]!.split(",")) {
        const v = item.trim();
        if (v !== "" && !v.startsWith("type ")) values.push(v);
      }
    }
    sections.push({ name, values });
  }
  return sections;
}

/** The `### ` sections of sdk/README.md: heading text and body (up to the next heading). */
function readmeSections(): Map<string, string> {
  const out = new Map<string, string>();
  const parts = readme.split(/^(#{2,3} .*)$/m);
  for (let i = 1; i < parts.length; i += 2) {
    const heading = parts[i]!;
    if (heading.startsWith("### ")) out.set(heading.slice(4).trim().toLowerCase(), parts[i + 1]!);
  }
  return out;
}

describe("sdk/README.md documents the public API (sdk/src/index.ts)", () => {
  const sections = indexSections();

  it("finds the sections of index.ts", () => {
    expect(sections.map((s) => s.name)).toEqual([
      "client",
      "admin",
      "producer",
      "consumer",
      "consumer groups",
      "subscriptions",
      "instrumentation",
      "errors",
      "bytes and text",
      "partitioning",
      "wire types and limits",
      "record model",
    ]);
  });

  it("has a ### heading per section of index.ts, naming each of its exported values in `code`", () => {
    const documented = readmeSections();
    const missing: string[] = [];
    for (const s of sections) {
      const body = documented.get(s.name);
      if (body === undefined) {
        missing.push(`### ${s.name}`);
        continue;
      }
      for (const v of s.values) if (!body.includes(`\`${v}`)) missing.push(`${s.name}: ${v}`);
    }
    expect(missing).toEqual([]);
  });
});
