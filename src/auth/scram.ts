/**
 * SCRAM credentials (RFC 5802, RFC 7677; Kafka's KIP-84 user model) with WebCrypto.
 *
 * A credential is (mechanism, salt, iterations, StoredKey, ServerKey):
 *   SaltedPassword = PBKDF2(HMAC-H, password, salt, iterations)
 *   ClientKey = HMAC(SaltedPassword, "Client Key"), StoredKey = H(ClientKey)
 *   ServerKey = HMAC(SaltedPassword, "Server Key")
 * The password is never stored; a password check recomputes StoredKey and compares in constant
 * time. Passwords are normalised to Unicode NFKC (the core of SASLprep, RFC 4013; its prohibited
 * character tables are not applied).
 *
 * Pure module: only the WebCrypto global.
 */

export const SCRAM_MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"] as const;
export type ScramMechanism = (typeof SCRAM_MECHANISMS)[number];

/** Kafka's minimum (and RFC 7677's recommended floor) for SCRAM iterations. */
export const MIN_SCRAM_ITERATIONS = 4096;
/** Upper bound: a password check must stay cheap enough for the metadata object. */
export const MAX_SCRAM_ITERATIONS = 100_000;
export const SCRAM_SALT_BYTES = 32;
export const MAX_PASSWORD_BYTES = 1024;

export interface ScramCredential {
  mechanism: ScramMechanism;
  salt: Uint8Array;
  iterations: number;
  storedKey: Uint8Array;
  serverKey: Uint8Array;
}

const HASH: Record<ScramMechanism, { name: string; bits: number }> = {
  "SCRAM-SHA-256": { name: "SHA-256", bits: 256 },
  "SCRAM-SHA-512": { name: "SHA-512", bits: 512 },
};

const utf8 = new TextEncoder();

async function hmac(hash: string, key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey("raw", key as BufferSource, { name: "HMAC", hash }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data as BufferSource));
}

async function keys(mechanism: ScramMechanism, password: string, salt: Uint8Array, iterations: number): Promise<{ storedKey: Uint8Array; serverKey: Uint8Array }> {
  const h = HASH[mechanism];
  const pw = await crypto.subtle.importKey("raw", utf8.encode(password.normalize("NFKC")), "PBKDF2", false, ["deriveBits"]);
  const salted = new Uint8Array(await crypto.subtle.deriveBits({ name: "PBKDF2", hash: h.name, salt: salt as BufferSource, iterations }, pw, h.bits));
  const clientKey = await hmac(h.name, salted, utf8.encode("Client Key"));
  const storedKey = new Uint8Array(await crypto.subtle.digest(h.name, clientKey as BufferSource));
  const serverKey = await hmac(h.name, salted, utf8.encode("Server Key"));
  return { storedKey, serverKey };
}

/** A new credential with a random salt. */
export async function createScramCredential(mechanism: ScramMechanism, password: string, iterations = MIN_SCRAM_ITERATIONS): Promise<ScramCredential> {
  const salt = crypto.getRandomValues(new Uint8Array(SCRAM_SALT_BYTES));
  return { mechanism, salt, iterations, ...(await keys(mechanism, password, salt, iterations)) };
}

/** True when `password` produces the credential's StoredKey (constant-time comparison). */
export async function checkScramPassword(c: ScramCredential, password: string): Promise<boolean> {
  const { storedKey } = await keys(c.mechanism, password, c.salt, c.iterations);
  if (storedKey.length !== c.storedKey.length) return false;
  let diff = 0;
  for (let i = 0; i < storedKey.length; i++) diff |= storedKey[i]! ^ c.storedKey[i]!;
  return diff === 0;
}
