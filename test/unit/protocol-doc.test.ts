/**
 * docs/PROTOCOL.md's error-code table mirrors src/protocol/errors.ts (the source of truth):
 * every code, with its HTTP status and retriable flag, and no code that the table lacks.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../src/protocol/index.ts";

const PROTOCOL_MD = join(import.meta.dirname, "../../docs/PROTOCOL.md");

describe("docs/PROTOCOL.md error codes", () => {
  it("lists every code of the error table with its status and retriable flag, and nothing else", () => {
    const doc = readFileSync(PROTOCOL_MD, "utf8");
    const section = doc.slice(doc.indexOf("## Error codes"));
    const rows = new Map<string, { httpStatus: number; retriable: boolean }>();
    for (const m of section.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \| (yes|no) \|/gm)) {
      rows.set(m[1]!, { httpStatus: Number(m[2]), retriable: m[3] === "yes" });
    }
    const expected = new Map(Object.entries(ERRORS).map(([code, s]) => [code, { httpStatus: s.httpStatus, retriable: s.retriable }]));
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(expected));
  });
});
