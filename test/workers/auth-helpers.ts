/**
 * Helpers for the auth-on workers tests: the real gateway app and the real Durable Objects,
 * with the auth vars set through an env override (the tier's wrangler.toml config runs with
 * EDGELOG_AUTH=none, the dev default; these tests need it on). Tokens are signed here with jose.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from "jose";
import { expect } from "vitest";
import { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import type { ErrorBody, ErrorCode } from "../../src/protocol/index.ts";

export const SECRET = "edgelog-test-secret-0123456789abcdef0123456789";
export const SUPERUSER = "admin";
export const AUDIENCE = "edgelog-test";
export const ISSUER = "https://issuer.test";
const BASE = "http://edgelog.test";

const app = createApp();

export interface Keys {
  rsaPrivate: CryptoKey;
  rsaPublicPem: string;
  /** A key pair whose public key is NOT in the JWKS. */
  strangerPrivate: CryptoKey;
  jwks: string;
}

export async function makeKeys(): Promise<Keys> {
  const rsa = await generateKeyPair("RS256", { extractable: true });
  const stranger = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(rsa.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  return { rsaPrivate: rsa.privateKey, rsaPublicPem: await exportSPKI(rsa.publicKey), strangerPrivate: stranger.privateKey, jwks: JSON.stringify({ keys: [jwk] }) };
}

/** The env of an auth-on gateway: HS256 secret, an inline JWKS, `admin` the superuser, aud/iss required. */
export function authEnv(keys: Keys, extra: Partial<Env> = {}): Env {
  return {
    ...env,
    EDGELOG_AUTH: "required",
    EDGELOG_JWT_SECRET: SECRET,
    EDGELOG_JWKS: keys.jwks,
    EDGELOG_SUPERUSERS: SUPERUSER,
    EDGELOG_JWT_AUDIENCE: AUDIENCE,
    EDGELOG_JWT_ISSUER: ISSUER,
    ...extra,
  } as Env;
}

/** An HS256 token with the required aud/iss, valid 1 h unless overridden. */
export async function hsToken(
  sub: string | undefined,
  o: { secret?: string | Uint8Array; payload?: JWTPayload; exp?: number; nbf?: number; aud?: string; iss?: string } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  let jwt = new SignJWT({ ...o.payload })
    .setProtectedHeader({ alg: "HS256" })
    .setIssuedAt(now)
    .setExpirationTime(o.exp ?? now + 3600)
    .setAudience(o.aud ?? AUDIENCE)
    .setIssuer(o.iss ?? ISSUER);
  if (sub !== undefined) jwt = jwt.setSubject(sub);
  if (o.nbf !== undefined) jwt = jwt.setNotBefore(o.nbf);
  const secret = typeof o.secret === "string" || o.secret === undefined ? new TextEncoder().encode(o.secret ?? SECRET) : o.secret;
  return jwt.sign(secret);
}

export async function rsToken(key: CryptoKey, sub: string, kid = "k1"): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "RS256", kid })
    .setSubject(sub)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .setAudience(AUDIENCE)
    .setIssuer(ISSUER)
    .sign(key);
}

function b64url(s: string): string {
  return btoa(s).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** An unsigned `alg: none` token (RFC 7519 section 6). */
export function noneToken(sub: string): string {
  const now = Math.floor(Date.now() / 1000);
  return `${b64url(JSON.stringify({ alg: "none", typ: "JWT" }))}.${b64url(JSON.stringify({ sub, aud: AUDIENCE, iss: ISSUER, exp: now + 3600 }))}.`;
}

export interface Req {
  token?: string;
  body?: unknown;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
}

/** One request through the gateway app with `e` as its env. */
export async function request(e: Env, method: string, path: string, r: Req = {}): Promise<Response> {
  const headers: Record<string, string> = { ...r.headers };
  if (r.token !== undefined) headers.authorization = `Bearer ${r.token}`;
  let body: BodyInit | undefined = r.rawBody;
  if (r.body !== undefined) {
    headers["content-type"] ??= "application/json";
    body = JSON.stringify(r.body);
  }
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`${BASE}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) }), e, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** Asserts status and code; returns the error. */
export async function expectCode(res: Response, status: number, code: ErrorCode): Promise<ErrorBody["error"]> {
  const text = await res.text();
  let got: string | undefined;
  try {
    got = (JSON.parse(text) as ErrorBody).error?.code;
  } catch {
    got = undefined;
  }
  expect({ status: res.status, code: got }, text).toEqual({ status, code });
  return (JSON.parse(text) as ErrorBody).error;
}

export async function expectOk(res: Response, status = 200): Promise<unknown> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return text === "" ? null : JSON.parse(text);
}

/**
 * Creates (as `token`, a superuser's) the tenant and namespace of a `tenant/namespace/topic`
 * name when missing: topics outside `public/default` need their namespace (docs/TENANTS.md).
 */
export async function ensureNamespace(e: Env, token: string, topicOrNamespace: string): Promise<void> {
  const [tenant, namespace] = topicOrNamespace.split("/");
  for (const path of [`/v1/tenants/${tenant}`, `/v1/namespaces/${tenant}/${namespace}`]) {
    const res = await request(e, "PUT", path, { token });
    const text = await res.text();
    expect([201, 409], text).toContain(res.status);
  }
}
