/** `GET /`'s index stays in step with docs/PROTOCOL.md and package.json. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { API_INDEX } from "../../src/protocol/index-doc.ts";

const ROOT = join(import.meta.dirname, "../..");

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, "")
    .replace(/ /g, "-");

describe("the API index (GET /)", () => {
  it("links only to documents and headings that exist", () => {
    const broken: string[] = [];
    for (const r of API_INDEX.routes) {
      const [file, hash] = r.docs.split("#");
      const text = readFileSync(join(ROOT, file!), "utf8");
      if (hash !== undefined && ![...text.matchAll(/^#{1,6} (.*)$/gm)].some((m) => anchor(m[1]!) === hash)) broken.push(r.docs);
    }
    expect(broken).toEqual([]);
  });

  it("has package.json's version", () => {
    expect(API_INDEX.version).toBe((JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version);
  });
});
