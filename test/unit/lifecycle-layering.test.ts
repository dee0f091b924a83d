/**
 * src/lifecycle/ is a pure core (docs/LIFECYCLE.md): everything it reaches, following imports, is
 * itself, src/protocol/, src/codec/ or src/partition/core.ts, and no package (so no Workers API,
 * no clock, no I/O). Imports are read with TypeScript's pre-processor, as layering.test.ts does.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const ALLOWED = [/^src\/lifecycle\//, /^src\/protocol\//, /^src\/codec\//, /^src\/partition\/core\.ts$/];

function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
  return info.importedFiles.map(({ fileName: spec }) => {
    if (!spec.startsWith(".")) return spec;
    const base = relative(ROOT, resolve(ROOT, dirname(file), spec))
      .split("\\")
      .join("/");
    return [base, `${base}.ts`, `${base}/index.ts`].find((c) => c.endsWith(".ts") && existsSync(join(ROOT, c))) ?? base;
  });
}

/** Files reached from `start` and the edges that leave the allowed set. */
function violations(start: readonly string[], read: (file: string) => string[]): string[] {
  const out: string[] = [];
  const seen = new Set(start);
  const todo = [...start];
  while (todo.length > 0) {
    const file = todo.pop()!;
    for (const target of read(file)) {
      if (!ALLOWED.some((re) => re.test(target))) {
        out.push(`${file} imports ${target}`);
        continue;
      }
      if (!seen.has(target)) {
        seen.add(target);
        todo.push(target);
      }
    }
  }
  return out.sort();
}

describe("src/lifecycle/ is pure", () => {
  it("the rule catches a Workers API, a package and a shell import, directly or not (synthetic graph)", () => {
    const graph: Record<string, string[]> = {
      "src/lifecycle/a.ts": ["src/protocol/errors.ts", "src/partition/core.ts", "src/partition/rpc.ts"],
      "src/partition/core.ts": ["src/codec/index.ts"],
      "src/codec/index.ts": ["cloudflare:workers"],
      "src/protocol/errors.ts": ["hono"],
    };
    expect(violations(["src/lifecycle/a.ts"], (f) => graph[f] ?? [])).toEqual([
      "src/codec/index.ts imports cloudflare:workers",
      "src/lifecycle/a.ts imports src/partition/rpc.ts",
      "src/protocol/errors.ts imports hono",
    ]);
  });

  it("in this repository", () => {
    const files = readdirSync(join(ROOT, "src/lifecycle"))
      .filter((f) => f.endsWith(".ts"))
      .map((f) => `src/lifecycle/${f}`);
    expect(files).toContain("src/lifecycle/index.ts");
    expect(importsOf("src/lifecycle/retention.ts")).toContain("src/partition/core.ts");
    expect(violations(files, importsOf)).toEqual([]);
  });
});
