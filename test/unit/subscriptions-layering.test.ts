/**
 * src/subscriptions/ is a pure core: it imports only src/protocol, src/codec and itself, uses no
 * Workers API, reads no clock and draws no random number (time comes in as `nowMs`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const DIR = join(import.meta.dirname, "../../src/subscriptions");
const files = readdirSync(DIR).filter((f) => f.endsWith(".ts"));

describe("src/subscriptions layering", () => {
  it("has files to check", () => {
    expect(files).toContain("subscription.ts");
  });

  for (const f of files) {
    it(`${f} imports only ./, ../protocol/ and ../codec/, and uses no clock, timer, randomness or Workers API`, () => {
      const src = readFileSync(join(DIR, f), "utf8");
      const specs = [...src.matchAll(/\bfrom\s+"([^"]+)"/g), ...src.matchAll(/\bimport\s*\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1]!);
      for (const s of specs) expect(s, `${f}: ${s}`).toMatch(/^(\.\/|\.\.\/protocol\/|\.\.\/codec\/)/);
      const code = src.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
      for (const banned of ["Date.now", "new Date", "performance.now", "setTimeout", "setInterval", "Math.random", "crypto.", "cloudflare:", "DurableObject", "WebSocket", "fetch("]) {
        expect(code.includes(banned), `${f} uses ${banned}`).toBe(false);
      }
    });
  }
});
