/**
 * Code blocks of the Markdown files, read as the e2e tests run them (readme.test.ts,
 * sdk-package.test.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./dev-server.ts";

export interface Snippet {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  /** Why it is not run, from the comment before it; undefined: it is run. */
  notRun: string | undefined;
}

/** The fenced code blocks of a Markdown file, in order. */
export function snippets(file: string): Snippet[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const out: Snippet[] = [];
  for (const m of text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    const before = text.slice(0, m.index);
    const line = before.split("\n").length;
    const previous = before.trimEnd().split("\n").pop() ?? "";
    const reason = /^<!-- not run by test\/e2e\/readme\.test\.ts: (.*) -->$/.exec(previous)?.[1];
    out.push({ file, line, lang: m[1]!, code: m[2]!, notRun: reason });
  }
  return out;
}

/** A snippet with the README's gateway address (`localhost:8787`, `127.0.0.1:8787`) replaced. */
export function withAddress(code: string, port: number): string {
  return code.replaceAll("localhost:8787", `127.0.0.1:${port}`).replaceAll("127.0.0.1:8787", `127.0.0.1:${port}`);
}
