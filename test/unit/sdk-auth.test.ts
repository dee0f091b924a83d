/**
 * SDK authentication and throttling against a fake fetch: bearer tokens (string, provider
 * renewed before exp, SCRAM exchange) and the back-off on THROTTLED / Edgelog-Throttle-Time-Ms.
 */
import { describe, expect, it } from "vitest";
import { EdgelogClient } from "../../sdk/src/client.ts";

function jwt(exp: number): string {
  const b = (o: object) => btoa(JSON.stringify(o)).replaceAll("=", "");
  return `${b({ alg: "HS256" })}.${b({ sub: "u", exp })}.sig`;
}

interface Seen {
  url: string;
  auth: string | null;
  clientId: string | null;
  at: number;
}

function fakeServer(answer: (url: string, n: number) => Response): { fetch: typeof fetch; seen: Seen[] } {
  const seen: Seen[] = [];
  const f = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    seen.push({ url: String(input), auth: headers.get("authorization"), clientId: headers.get("edgelog-client-id"), at: Date.now() });
    return answer(String(input), seen.length);
  }) as typeof fetch;
  return { fetch: f, seen };
}

const ok = () => new Response(JSON.stringify({ topics: [] }), { status: 200, headers: { "content-type": "application/json" } });

describe("SDK auth", () => {
  it("sends a string token and the client id", async () => {
    const s = fakeServer(ok);
    const c = new EdgelogClient({ baseUrl: "http://x", token: "abc", clientId: "app-1", fetch: s.fetch });
    await c.listTopics();
    expect(s.seen[0]).toMatchObject({ auth: "Bearer abc", clientId: "app-1" });
  });

  it("calls a provider again once its token is within 30 s of exp, not before", async () => {
    const s = fakeServer(ok);
    const now = Math.floor(Date.now() / 1000);
    const tokens = [jwt(now + 10), jwt(now + 3600)];
    let calls = 0;
    const c = new EdgelogClient({ baseUrl: "http://x", token: () => tokens[calls++]!, fetch: s.fetch });
    await c.listTopics();
    await c.listTopics();
    await c.listTopics();
    expect(calls).toBe(2);
    expect(s.seen.map((x) => x.auth)).toEqual([`Bearer ${tokens[0]}`, `Bearer ${tokens[1]}`, `Bearer ${tokens[1]}`]);
  });

  it("exchanges username/password at /v1/auth/token with HTTP Basic, then uses the token", async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = jwt(now + 900);
    const s = fakeServer((url) =>
      url.includes("/v1/auth/token") ? new Response(JSON.stringify({ token, tokenType: "Bearer", expiresIn: 900, expiresAt: (now + 900) * 1000 }), { status: 200 }) : ok(),
    );
    const c = new EdgelogClient({ baseUrl: "http://x", username: "alice", password: "pässword", fetch: s.fetch });
    await c.listTopics();
    await c.listTopics();
    expect(s.seen.length).toBe(3);
    expect(s.seen[0]!.auth).toBe(`Basic ${btoa(String.fromCharCode(...new TextEncoder().encode("alice:pässword")))}`);
    expect(s.seen[1]!.auth).toBe(`Bearer ${token}`);
    expect(s.seen[2]!.auth).toBe(`Bearer ${token}`);
  });

  it("after a 429 THROTTLED, holds the next request for throttleTimeMs", async () => {
    const s = fakeServer((_, n) =>
      n === 1
        ? new Response(JSON.stringify({ error: { code: "THROTTLED", message: "q", retriable: true, details: { throttleTimeMs: 300 } } }), { status: 429, headers: { "retry-after": "1" } })
        : ok(),
    );
    const c = new EdgelogClient({ baseUrl: "http://x", fetch: s.fetch });
    await expect(c.listTopics()).rejects.toMatchObject({ code: "THROTTLED", retriable: true });
    await c.listTopics();
    expect(s.seen[1]!.at - s.seen[0]!.at).toBeGreaterThanOrEqual(290);
  });

  it("after an admitted answer with Edgelog-Throttle-Time-Ms, holds the next request for it", async () => {
    const s = fakeServer((_, n) => (n === 1 ? new Response(JSON.stringify({ topics: [] }), { status: 200, headers: { "edgelog-throttle-time-ms": "200" } }) : ok()));
    const c = new EdgelogClient({ baseUrl: "http://x", fetch: s.fetch });
    await c.listTopics();
    await c.listTopics();
    expect(s.seen[1]!.at - s.seen[0]!.at).toBeGreaterThanOrEqual(190);
  });
});
