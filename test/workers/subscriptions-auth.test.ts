/**
 * Subscription routes with auth on (docs/SECURITY.md): a consumer needs topic READ (the token
 * may travel as the `token` query parameter of the WebSocket upgrade), stats need DESCRIBE; a
 * refused request changes nothing.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import { authEnv, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

let e: Env;
let admin: string;
const id = crypto.randomUUID().slice(0, 8);
const topic = `subs-auth-${id}`;

async function acl(principal: string, operation: string): Promise<void> {
  await expectOk(
    await request(e, "POST", "/v1/acls", {
      token: admin,
      body: { principal, resourceType: "topic", resourceName: `public/default/${topic}`, operation, patternType: "literal", permission: "allow" },
    }),
    201,
  );
}

beforeAll(async () => {
  e = authEnv(await makeKeys());
  admin = await hsToken(SUPERUSER);
  await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name: topic, partitions: 1 } }), 201);
  await acl(`reader-${id}`, "read");
  await acl(`viewer-${id}`, "describe");
});

describe("subscriptions with auth on", () => {
  it("WebSocket consumer: 401 without a token, 403 with describe only, 101 with read (token as a query parameter)", async () => {
    const path = `/v1/topics/${topic}/partitions/0/subscriptions/s/ws?type=shared&initialPosition=earliest`;
    const upgrade = { upgrade: "websocket" };
    await expectCode(await request(e, "GET", path, { headers: upgrade }), 401, "UNAUTHENTICATED");
    const viewer = await hsToken(`viewer-${id}`);
    await expectCode(await request(e, "GET", `${path}&token=${viewer}`, { headers: upgrade }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "GET", `/v1/topics/${topic}/subscriptions/s`, { token: viewer }), 404, "SUBSCRIPTION_NOT_FOUND"); // nothing was created
    const reader = await hsToken(`reader-${id}`);
    const res = await request(e, "GET", `${path}&token=${reader}`, { headers: upgrade });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    ws.accept();
    const first = await new Promise<string>((resolve) => ws.addEventListener("message", (m) => resolve(m.data as string), { once: true }));
    expect(JSON.parse(first)).toMatchObject({ type: "connected", subscription: "s" });
    ws.close(1000, "done");
    const st = (await expectOk(await request(e, "GET", `/v1/topics/${topic}/subscriptions/s`, { token: viewer }))) as { subscription: string };
    expect(st.subscription).toBe("s");
    await expectCode(await request(e, "DELETE", `/v1/topics/${topic}/subscriptions/s?force=true`, { token: viewer }), 403, "NOT_AUTHORIZED");
    await expectOk(await request(e, "DELETE", `/v1/topics/${topic}/subscriptions/s?force=true`, { token: reader }));
  });
});
