/**
 * Authentication settings from the Worker's vars and secrets (docs/SECURITY.md "Configuration"):
 *
 * | name | meaning |
 * |---|---|
 * | `EDGELOG_AUTH` | `none` (no authentication: local development) or `required` |
 * | `EDGELOG_JWT_SECRET` | HS256 secret (a secret, `wrangler secret put`); also signs `POST /v1/auth/token` answers |
 * | `EDGELOG_JWKS` | a JWKS document (JSON) or an `https://` URL of one (RS256/ES256/EdDSA public keys) |
 * | `EDGELOG_SUPERUSERS` | comma-separated principals that bypass ACLs (Kafka's `super.users`) |
 * | `EDGELOG_JWT_AUDIENCE`, `EDGELOG_JWT_ISSUER` | required `aud` / `iss` when set |
 * | `EDGELOG_JWT_CLOCK_SKEW_SECONDS` | tolerance on `exp`/`nbf` @default 30 |
 *
 * The deployed-without-auth rule: `EDGELOG_AUTH` unset (the project's wrangler.toml does not
 * set it; `npm start`, the tests and the bench pass `none` explicitly), not one of the two
 * values, or `required` without a key to verify tokens with, resolves to `unconfigured`: the
 * gateway serves only `GET /v1/health` and answers everything else 503 AUTH_NOT_CONFIGURED, so
 * a `wrangler deploy` of the project as it is never serves data unauthenticated.
 *
 * Pure module (no Workers imports); parsed once per distinct set of values.
 */
import { log } from "../log/logger.ts";

export interface AuthSettingsEnv {
  EDGELOG_AUTH?: string;
  EDGELOG_JWT_SECRET?: string;
  EDGELOG_JWKS?: string;
  EDGELOG_SUPERUSERS?: string;
  EDGELOG_JWT_AUDIENCE?: string;
  EDGELOG_JWT_ISSUER?: string;
  EDGELOG_JWT_CLOCK_SKEW_SECONDS?: string;
}

export type JwksSource = { kind: "inline"; jwks: { keys: Record<string, unknown>[] } } | { kind: "url"; url: URL };

export type AuthConfig =
  | { mode: "none" }
  | { mode: "unconfigured"; reason: string }
  | {
      mode: "required";
      /** HS256 key bytes (UTF-8 of the secret). */
      jwtSecret: Uint8Array | null;
      jwks: JwksSource | null;
      superusers: ReadonlySet<string>;
      audience: string | null;
      issuer: string | null;
      clockSkewSec: number;
    };

/** Shortest HS256 secret accepted: RFC 7518 section 3.2 wants a key at least as long as the hash (32 bytes). */
export const MIN_JWT_SECRET_BYTES = 32;
/** Longest EDGELOG_JWT_CLOCK_SKEW_SECONDS accepted. */
export const MAX_CLOCK_SKEW_SEC = 300;
/** @default 30 s */
export const DEFAULT_CLOCK_SKEW_SEC = 30;

const cache = new Map<string, AuthConfig>();

/** The config for these values, parsed once per distinct set (vars do not change within an isolate's life). */
export function authConfig(env: AuthSettingsEnv): AuthConfig {
  const key = JSON.stringify([
    env.EDGELOG_AUTH,
    env.EDGELOG_JWT_SECRET,
    env.EDGELOG_JWKS,
    env.EDGELOG_SUPERUSERS,
    env.EDGELOG_JWT_AUDIENCE,
    env.EDGELOG_JWT_ISSUER,
    env.EDGELOG_JWT_CLOCK_SKEW_SECONDS,
  ]);
  let cfg = cache.get(key);
  if (cfg === undefined) {
    cfg = parseAuthConfig(env);
    if (cache.size > 16) cache.clear();
    cache.set(key, cfg);
  }
  return cfg;
}

export function parseAuthConfig(env: AuthSettingsEnv): AuthConfig {
  const mode = env.EDGELOG_AUTH?.trim().toLowerCase();
  if (mode === undefined || mode === "") return { mode: "unconfigured", reason: "EDGELOG_AUTH is not set" };
  if (mode === "none") return { mode: "none" };
  if (mode !== "required") return { mode: "unconfigured", reason: `EDGELOG_AUTH must be "none" or "required"` };
  let jwtSecret: Uint8Array | null = null;
  if (env.EDGELOG_JWT_SECRET !== undefined && env.EDGELOG_JWT_SECRET !== "") {
    jwtSecret = new TextEncoder().encode(env.EDGELOG_JWT_SECRET);
    // Short secrets are accepted for local development (the README's `s3cret`) but logged.
    if (jwtSecret.length < MIN_JWT_SECRET_BYTES)
      log.warn("edgelog.auth.weak_secret", { message: `EDGELOG_JWT_SECRET is shorter than ${MIN_JWT_SECRET_BYTES} bytes: fine for local development, too weak for a deployment.` });
  }
  let jwks: JwksSource | null = null;
  const rawJwks = env.EDGELOG_JWKS?.trim();
  if (rawJwks !== undefined && rawJwks !== "") {
    if (rawJwks.startsWith("{")) {
      let doc: unknown;
      try {
        doc = JSON.parse(rawJwks);
      } catch {
        return { mode: "unconfigured", reason: "EDGELOG_JWKS is neither a JSON JWKS document nor a URL" };
      }
      const keys = (doc as { keys?: unknown }).keys;
      if (!Array.isArray(keys) || keys.length === 0) return { mode: "unconfigured", reason: "EDGELOG_JWKS has no keys" };
      if (keys.some((k) => typeof k !== "object" || k === null || "d" in k || (k as { kty?: unknown }).kty === "oct")) {
        // Private or symmetric keys in a JWKS would let HS256 tokens be verified with public material.
        return { mode: "unconfigured", reason: "EDGELOG_JWKS must hold public asymmetric keys only" };
      }
      jwks = { kind: "inline", jwks: { keys: keys as Record<string, unknown>[] } };
    } else {
      let url: URL;
      try {
        url = new URL(rawJwks);
      } catch {
        return { mode: "unconfigured", reason: "EDGELOG_JWKS is neither a JSON JWKS document nor a URL" };
      }
      if (url.protocol !== "https:" && url.hostname !== "127.0.0.1" && url.hostname !== "localhost") {
        return { mode: "unconfigured", reason: "EDGELOG_JWKS URL must be https (or loopback for development)" };
      }
      jwks = { kind: "url", url };
    }
  }
  if (jwtSecret === null && jwks === null) return { mode: "unconfigured", reason: "EDGELOG_AUTH=required needs EDGELOG_JWT_SECRET or EDGELOG_JWKS" };
  let clockSkewSec = DEFAULT_CLOCK_SKEW_SEC;
  if (env.EDGELOG_JWT_CLOCK_SKEW_SECONDS !== undefined && env.EDGELOG_JWT_CLOCK_SKEW_SECONDS !== "") {
    const n = Number(env.EDGELOG_JWT_CLOCK_SKEW_SECONDS);
    if (!Number.isInteger(n) || n < 0 || n > MAX_CLOCK_SKEW_SEC) return { mode: "unconfigured", reason: `EDGELOG_JWT_CLOCK_SKEW_SECONDS must be an integer in [0, ${MAX_CLOCK_SKEW_SEC}]` };
    clockSkewSec = n;
  }
  const superusers = new Set(
    (env.EDGELOG_SUPERUSERS ?? "")
      .split(",")
      .map((s) => s.trim())
      .map((s) => (s.startsWith("User:") ? s.slice(5) : s))
      .filter((s) => s !== "" && s !== "*"),
  );
  return {
    mode: "required",
    jwtSecret,
    jwks,
    superusers,
    audience: nonEmpty(env.EDGELOG_JWT_AUDIENCE),
    issuer: nonEmpty(env.EDGELOG_JWT_ISSUER),
    clockSkewSec,
  };
}

function nonEmpty(s: string | undefined): string | null {
  const t = s?.trim();
  return t === undefined || t === "" ? null : t;
}
