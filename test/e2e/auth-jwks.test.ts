/**
 * EDGELOG_JWKS as a URL on a real `wrangler dev`: keys fetched from a loopback JWKS server,
 * `kid` rotation (an unknown kid refetches the set once the 10 s cooldown has passed), and a
 * removed key refused for new tokens.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JWKS_COOLDOWN_MS } from "../../src/auth/jwt.ts";
import { startDevServer, type DevServer } from "./dev-server.ts";

let jwksServer: Server;
let jwks = { keys: [] as object[] };
let fetches = 0;
let server: DevServer;
const keys: Record<string, { priv: CryptoKey; pub: object }> = {};

async function token(kid: string, jti: string): Promise<string> {
  return new SignJWT({ jti }).setProtectedHeader({ alg: "RS256", kid }).setSubject("admin").setExpirationTime("1h").sign(keys[kid]!.priv);
}

async function whoami(t: string): Promise<number> {
  const res = await fetch(`${server.baseUrl}/v1/auth/whoami`, { headers: { authorization: `Bearer ${t}` } });
  await res.arrayBuffer();
  return res.status;
}

beforeAll(async () => {
  for (const kid of ["k1", "k2"]) {
    const pair = await generateKeyPair("RS256", { extractable: true });
    keys[kid] = { priv: pair.privateKey, pub: { ...(await exportJWK(pair.publicKey)), kid, alg: "RS256" } };
  }
  jwks = { keys: [keys.k1!.pub] };
  jwksServer = createServer((_, res) => {
    fetches++;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, "127.0.0.1", resolve));
  const port = (jwksServer.address() as AddressInfo).port;
  server = await startDevServer({ vars: { EDGELOG_AUTH: "required", EDGELOG_JWKS: `http://127.0.0.1:${port}/jwks.json`, EDGELOG_SUPERUSERS: "admin" } });
});

afterAll(async () => {
  await server?.dispose();
  await new Promise((resolve) => jwksServer?.close(resolve));
});

describe("JWKS from a URL", () => {
  it("verifies with the fetched keys, follows a kid rotation after the cooldown, and refuses the removed key", async () => {
    expect(await whoami(await token("k1", "a"))).toBe(200);
    expect(fetches).toBe(1);
    // k2 is not published yet: refused.
    expect(await whoami(await token("k2", "b"))).toBe(401);
    // Rotation: k2 replaces k1. Within the cooldown the set is not refetched.
    jwks = { keys: [keys.k2!.pub] };
    await new Promise((r) => setTimeout(r, JWKS_COOLDOWN_MS + 1000));
    expect(await whoami(await token("k2", "c"))).toBe(200);
    expect(fetches).toBe(2);
    // A new k1 token: k1 is gone from the set.
    expect(await whoami(await token("k1", "d"))).toBe(401);
  }, 60_000);
});
