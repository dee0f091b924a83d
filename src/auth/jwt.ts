/**
 * JWT bearer token verification with `jose` (Pulsar's token authentication: the principal is
 * the `sub` claim, Pulsar's role) and the per-isolate cache of verified tokens.
 *
 * Algorithms are pinned per key (RFC 8725 section 3.1): an `HS256` token is verified with
 * EDGELOG_JWT_SECRET only, and only with HS256; any other `alg` is verified against the JWKS
 * only, with the asymmetric algorithms below (a JWK's own `alg`, when present, narrows it
 * further: jose selects keys by `kid`, `kty` and `alg`). So `alg: none`, an HS256 token signed
 * with an RSA public key (algorithm confusion: the JWKS is never used as an HMAC secret), an
 * unknown `kid` and a token over {@link MAX_TOKEN_BYTES} are refused.
 *
 * Verified tokens are cached per isolate (at most {@link TOKEN_CACHE_ENTRIES}, each at most
 * {@link MAX_CACHED_TOKEN_CHARS}; longer ones are verified every time) until the
 * earlier of their `exp` (+ skew) and {@link TOKEN_CACHE_TTL_MS} after verification: a key
 * removed from a JWKS stops being honoured within that bound plus the JWKS cache age.
 */
import { createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload, type JWTVerifyGetKey } from "jose";
import type { AuthConfig } from "./config.ts";

/** Longest token accepted, in characters (8 KiB: far above any sane claims set, below header limits). */
export const MAX_TOKEN_BYTES = 8192;
/** Algorithms accepted from the JWKS. */
export const ASYMMETRIC_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA", "Ed25519"];
/** How long a verified token is trusted without re-verifying. */
export const TOKEN_CACHE_TTL_MS = 60_000;
/** At most this many verified tokens are cached, each at most {@link MAX_CACHED_TOKEN_CHARS} long (<= 10 MB). */
export const TOKEN_CACHE_ENTRIES = 5_000;
export const MAX_CACHED_TOKEN_CHARS = 2048;
/** Remote JWKS: refetched at most this often on an unknown `kid` (key rotation), kept this long otherwise. */
export const JWKS_COOLDOWN_MS = 10_000;
export const JWKS_MAX_AGE_MS = 600_000;

/** Claim carried by tokens that POST /v1/auth/token issues: the SCRAM credential's generation. */
export const SCRAM_GENERATION_CLAIM = "edgelog_scram";

export interface VerifiedToken {
  principal: string;
  /** Set on tokens issued for a SCRAM user: checked against the user's current credential. */
  scramGeneration: string | null;
}

/** Why a token was refused (logged as a reason, never with the token). */
export class TokenRejected extends Error {}

type RequiredConfig = Extract<AuthConfig, { mode: "required" }>;

const jwksSets = new WeakMap<RequiredConfig, JWTVerifyGetKey>();
const verified = new Map<string, { token: VerifiedToken; untilMs: number }>();

function jwksOf(cfg: RequiredConfig): JWTVerifyGetKey | null {
  if (cfg.jwks === null) return null;
  let set = jwksSets.get(cfg);
  if (set === undefined) {
    set =
      cfg.jwks.kind === "inline"
        ? createLocalJWKSet(cfg.jwks.jwks as unknown as Parameters<typeof createLocalJWKSet>[0])
        : createRemoteJWKSet(cfg.jwks.url, { cooldownDuration: JWKS_COOLDOWN_MS, cacheMaxAge: JWKS_MAX_AGE_MS });
    jwksSets.set(cfg, set);
  }
  return set;
}

/**
 * Verifies a compact JWS and returns its principal.
 * @throws TokenRejected for every refusal (malformed, alg not allowed, bad signature, expired,
 *   not yet valid, wrong aud/iss, unknown kid, no `sub`, oversized)
 */
export async function verifyToken(cfg: RequiredConfig, token: string, nowMs = Date.now()): Promise<VerifiedToken> {
  if (token.length > MAX_TOKEN_BYTES) throw new TokenRejected("token too large");
  const hit = verified.get(token);
  if (hit !== undefined) {
    if (hit.untilMs > nowMs) return hit.token;
    verified.delete(token);
  }
  let alg: string | undefined;
  try {
    alg = decodeProtectedHeader(token).alg;
  } catch {
    throw new TokenRejected("malformed token");
  }
  let payload: JWTPayload;
  const options = {
    clockTolerance: cfg.clockSkewSec,
    currentDate: new Date(nowMs),
    ...(cfg.audience !== null ? { audience: cfg.audience } : {}),
    ...(cfg.issuer !== null ? { issuer: cfg.issuer } : {}),
  };
  try {
    if (alg === "HS256") {
      if (cfg.jwtSecret === null) throw new TokenRejected("HS256 tokens are not accepted (no EDGELOG_JWT_SECRET)");
      payload = (await jwtVerify(token, cfg.jwtSecret, { ...options, algorithms: ["HS256"] })).payload;
    } else if (alg !== undefined && ASYMMETRIC_ALGORITHMS.includes(alg)) {
      const jwks = jwksOf(cfg);
      if (jwks === null) throw new TokenRejected(`${alg} tokens are not accepted (no EDGELOG_JWKS)`);
      payload = (await jwtVerify(token, jwks, { ...options, algorithms: ASYMMETRIC_ALGORITHMS })).payload;
    } else {
      throw new TokenRejected(`algorithm ${JSON.stringify(alg)} is not accepted`);
    }
  } catch (e) {
    if (e instanceof TokenRejected) throw e;
    // jose's error codes (ERR_JWT_EXPIRED, ERR_JWKS_NO_MATCHING_KEY, ...) name the reason without the token.
    throw new TokenRejected((e as { code?: string }).code ?? "invalid token");
  }
  if (typeof payload.sub !== "string" || payload.sub === "") throw new TokenRejected("token has no sub claim");
  const gen = payload[SCRAM_GENERATION_CLAIM];
  const result: VerifiedToken = { principal: payload.sub, scramGeneration: typeof gen === "string" ? gen : null };
  const expMs = typeof payload.exp === "number" ? (payload.exp + cfg.clockSkewSec) * 1000 : Number.POSITIVE_INFINITY;
  if (token.length <= MAX_CACHED_TOKEN_CHARS) {
    if (verified.size >= TOKEN_CACHE_ENTRIES) verified.clear();
    verified.set(token, { token: result, untilMs: Math.min(expMs, nowMs + TOKEN_CACHE_TTL_MS) });
  }
  return result;
}

/**
 * An HS256 token for `sub`, valid `ttlSec` seconds (POST /v1/auth/token, `edgelog token issue`).
 * Carries the configured `iss`/`aud` so the gateway's own verification accepts it.
 */
export async function issueToken(
  secret: Uint8Array,
  o: { sub: string; ttlSec: number; issuer?: string | null; audience?: string | null; claims?: Record<string, unknown> },
): Promise<{ token: string; expiresAt: number }> {
  const nowSec = Math.floor(Date.now() / 1000);
  let jwt = new SignJWT({ ...o.claims })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(o.sub)
    .setIssuedAt(nowSec)
    .setExpirationTime(nowSec + o.ttlSec);
  if (o.issuer) jwt = jwt.setIssuer(o.issuer);
  if (o.audience) jwt = jwt.setAudience(o.audience);
  return { token: await jwt.sign(secret), expiresAt: (nowSec + o.ttlSec) * 1000 };
}
