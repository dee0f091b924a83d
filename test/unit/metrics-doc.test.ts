/**
 * docs/OBSERVABILITY.md and the Grafana dashboard cannot fall behind the code: every metric
 * family the code writes (a string literal `"edgelog_..."` passed to the exposition writer in
 * src/metrics/) is documented, every documented family is written, and every family the
 * dashboard queries exists.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const read = (rel: string): string => readFileSync(join(ROOT, rel), "utf8");

/** Family names written by the code: the first argument of counter/gauge/histogram calls. */
function writtenFamilies(): string[] {
  const out = new Set<string>();
  for (const f of readdirSync(join(ROOT, "src/metrics"))) {
    for (const m of read(`src/metrics/${f}`).matchAll(/\.(?:counter|gauge|histogram)\(\s*"(edgelog_[a-z0-9_]+)"/g)) out.add(m[1]!);
  }
  return [...out].sort();
}

/** Family names in the doc's tables (first cell, in backticks). */
function documentedFamilies(doc: string): string[] {
  return [...new Set([...doc.matchAll(/^\| `(edgelog_[a-z0-9_]+)` \|/gm)].map((m) => m[1]!))].sort();
}

describe("metrics documentation", () => {
  it("the parsers find something (a parse that finds nothing cannot pass)", () => {
    expect(writtenFamilies().length).toBeGreaterThan(20);
    expect(documentedFamilies("| `edgelog_x_total` | counter |\n")).toEqual(["edgelog_x_total"]);
  });

  it("documents exactly the families the code writes", () => {
    expect(documentedFamilies(read("docs/OBSERVABILITY.md"))).toEqual(writtenFamilies());
  });

  it("the Grafana dashboard queries only families the code writes", () => {
    const dashboard = JSON.parse(read("docs/grafana/edgelog-dashboard.json")) as { panels: { targets: { expr: string }[] }[] };
    const written = new Set(writtenFamilies());
    const queried = new Set<string>();
    for (const p of dashboard.panels) for (const t of p.targets) for (const m of t.expr.matchAll(/edgelog_[a-z0-9_]+/g)) queried.add(m[0].replace(/_(bucket|sum|count)$/, ""));
    expect([...queried].filter((q) => !written.has(q))).toEqual([]);
    expect(queried.size).toBeGreaterThan(10);
  });
});
