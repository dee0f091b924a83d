/**
 * The deployed-without-auth rule and the auth vars (src/auth/config.ts, docs/SECURITY.md).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAuthConfig } from "../../src/auth/config.ts";
import { resolveQuota } from "../../src/auth/quotas.ts";

const ROOT = join(import.meta.dirname, "../..");

/** The [vars] table of wrangler.toml (string values only, as the project uses). */
function wranglerVars(): Record<string, string> {
  const text = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const section = text.slice(text.indexOf("[vars]") + "[vars]".length).split(/^\[/m)[0]!;
  const vars: Record<string, string> = {};
  for (const m of section.matchAll(/^([A-Z0-9_]+)\s*=\s*"([^"]*)"/gm)) vars[m[1]!] = m[2]!;
  return vars;
}

describe("deployed without auth settings", () => {
  it("wrangler.toml's vars do not set EDGELOG_AUTH, so `wrangler deploy` of it resolves to unconfigured (only /v1/health)", () => {
    const vars = wranglerVars();
    expect(Object.keys(vars)).toContain("EDGELOG_BENCH_ROUTES");
    expect(vars.EDGELOG_AUTH).toBeUndefined();
    expect(parseAuthConfig(vars)).toEqual({ mode: "unconfigured", reason: "EDGELOG_AUTH is not set" });
  });

  it("npm start passes EDGELOG_AUTH=none explicitly", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toContain("--var EDGELOG_AUTH:none");
  });
});

describe("parseAuthConfig", () => {
  it("none, required with a secret, required without a key, an unknown mode", () => {
    expect(parseAuthConfig({ EDGELOG_AUTH: "none" })).toEqual({ mode: "none" });
    expect(parseAuthConfig({ EDGELOG_AUTH: "required" }).mode).toBe("unconfigured");
    expect(parseAuthConfig({ EDGELOG_AUTH: "on", EDGELOG_JWT_SECRET: "x".repeat(32) }).mode).toBe("unconfigured");
    const cfg = parseAuthConfig({ EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: "x".repeat(32), EDGELOG_SUPERUSERS: "User:admin, ops ,*" });
    expect(cfg.mode).toBe("required");
    if (cfg.mode === "required") {
      expect([...cfg.superusers]).toEqual(["admin", "ops"]);
      expect(cfg.clockSkewSec).toBe(30);
    }
  });

  it("refuses a JWKS holding a symmetric or private key, and a plain-http JWKS URL", () => {
    expect(parseAuthConfig({ EDGELOG_AUTH: "required", EDGELOG_JWKS: JSON.stringify({ keys: [{ kty: "oct", k: "c2VjcmV0" }] }) }).mode).toBe("unconfigured");
    expect(parseAuthConfig({ EDGELOG_AUTH: "required", EDGELOG_JWKS: JSON.stringify({ keys: [{ kty: "RSA", n: "x", e: "AQAB", d: "y" }] }) }).mode).toBe("unconfigured");
    expect(parseAuthConfig({ EDGELOG_AUTH: "required", EDGELOG_JWKS: "http://keys.example/jwks.json" }).mode).toBe("unconfigured");
    expect(parseAuthConfig({ EDGELOG_AUTH: "required", EDGELOG_JWKS: "https://keys.example/jwks.json" }).mode).toBe("required");
  });
});

describe("resolveQuota (Kafka's precedence)", () => {
  const q = (user: string | null, clientId: string | null, v: number) => ({ user, clientId, values: { producer_byte_rate: v } });
  const quotas = [q("<default>", null, 1), q("alice", null, 2), q("alice", "app", 3), q(null, "<default>", 4), q("<default>", "app", 5)];
  it("the most specific entity wins; defaults get a bucket per user or client", () => {
    expect(resolveQuota(quotas, "alice", "app")).toEqual({ bucketKey: "user=alice,client=app", rates: { producerByteRate: 3 } });
    expect(resolveQuota(quotas, "alice", "other")).toEqual({ bucketKey: "user=alice", rates: { producerByteRate: 2 } });
    expect(resolveQuota(quotas, "bob", "app")).toEqual({ bucketKey: "user=bob,client=app", rates: { producerByteRate: 5 } });
    expect(resolveQuota(quotas, "bob", null)).toEqual({ bucketKey: "user=bob", rates: { producerByteRate: 1 } });
    expect(resolveQuota([q(null, "<default>", 4)], "bob", "x")).toEqual({ bucketKey: "client=x", rates: { producerByteRate: 4 } });
    expect(resolveQuota([], "bob", "x")).toBeNull();
  });
});
