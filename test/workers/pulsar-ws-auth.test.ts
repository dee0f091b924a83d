/**
 * Pulsar's WebSocket API with auth on (docs/SECURITY.md): the token travels as the `token`
 * query parameter, as Pulsar's browser clients pass it; the producer needs topic WRITE, the
 * consumer and reader topic READ (Pulsar's produce and consume permissions). A refusal is
 * answered before the upgrade and creates nothing.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import { authEnv, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

let e: Env;
let admin: string;
const id = crypto.randomUUID().slice(0, 8);
const topic = `pulsar-auth-${id}`;
const upgrade = { upgrade: "websocket" };

async function acl(principal: string, operation: string): Promise<void> {
  await expectOk(
    await request(e, "POST", "/v1/acls", {
      token: admin,
      body: { principal, resourceType: "topic", resourceName: `public/default/${topic}`, operation, patternType: "literal", permission: "allow" },
    }),
    201,
  );
}

function firstFrame(ws: WebSocket): Promise<Record<string, unknown>> {
  return new Promise((resolve) => ws.addEventListener("message", (m) => resolve(JSON.parse(m.data as string) as Record<string, unknown>), { once: true }));
}

beforeAll(async () => {
  e = authEnv(await makeKeys());
  admin = await hsToken(SUPERUSER);
  await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name: topic, partitions: 1 } }), 201);
  await acl(`writer-${id}`, "write");
  await acl(`reader-${id}`, "read");
});

describe("Pulsar WebSocket API with auth on", () => {
  it("producer: 401 without a token, 403 with read only, 101 with write; the message is stored", async () => {
    const path = `/ws/v2/producer/persistent/public/default/${topic}`;
    await expectCode(await request(e, "GET", path, { headers: upgrade }), 401, "UNAUTHENTICATED");
    await expectCode(await request(e, "GET", `${path}?token=${await hsToken(`reader-${id}`)}`, { headers: upgrade }), 403, "NOT_AUTHORIZED");
    const res = await request(e, "GET", `${path}?token=${await hsToken(`writer-${id}`)}`, { headers: upgrade });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    ws.accept();
    const receipt = firstFrame(ws);
    ws.send(JSON.stringify({ payload: "SGVsbG8gV29ybGQ=", context: "1" }));
    expect(await receipt).toEqual({ result: "ok", messageId: btoa("0000:0000000000000000"), context: "1" });
    ws.close(1000, "done");
  });

  it("a client quota applies to every batch of a producer socket: past it, send-error THROTTLED, nothing appended", async () => {
    const user = `quota-${id}`;
    const qtopic = `pulsar-quota-${id}`;
    await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name: qtopic, partitions: 1 } }), 201);
    await expectOk(
      await request(e, "POST", "/v1/acls", { token: admin, body: { principal: user, resourceType: "topic", resourceName: `public/default/${qtopic}`, operation: "write" } }),
      201,
    );
    await expectOk(await request(e, "PUT", "/v1/quotas", { token: admin, body: { user, request_rate: 1 } }));
    const res = await request(e, "GET", `/ws/v2/producer/persistent/public/default/${qtopic}?token=${await hsToken(user)}`, { headers: upgrade });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    ws.accept();
    const receipts: Record<string, unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      const next = firstFrame(ws);
      ws.send(JSON.stringify({ payload: "eA==", context: `c${i}` }));
      receipts.push(await next);
    }
    ws.close(1000, "done");
    const ok = receipts.filter((r) => r.result === "ok").length;
    const throttled = receipts.filter((r) => r.result === "send-error:8" && r.errorCode === "THROTTLED");
    expect(ok + throttled.length).toBe(5);
    expect(throttled.length).toBeGreaterThan(0);
    const t = (await expectOk(await request(e, "GET", `/v1/topics/${qtopic}`, { token: admin }))) as { partitionDetails: { highWatermark: number }[] };
    expect(t.partitionDetails[0]!.highWatermark).toBe(ok);
    await expectOk(await request(e, "PUT", "/v1/quotas", { token: admin, body: { user, request_rate: null } }));
  });

  it("consumer and reader: 403 with write only, 101 with read; a refused consumer creates no subscription", async () => {
    const consumer = `/ws/v2/consumer/persistent/public/default/${topic}/s?subscriptionType=Shared&subscriptionInitialPosition=Earliest`;
    const reader = `/ws/v2/reader/persistent/public/default/${topic}?messageId=earliest`;
    const writer = await hsToken(`writer-${id}`);
    await expectCode(await request(e, "GET", consumer, { headers: upgrade }), 401, "UNAUTHENTICATED");
    await expectCode(await request(e, "GET", `${consumer}&token=${writer}`, { headers: upgrade }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "GET", `${reader}&token=${writer}`, { headers: upgrade }), 403, "NOT_AUTHORIZED");
    await expectCode(await request(e, "GET", `/v1/topics/${topic}/subscriptions/s`, { token: admin }), 404, "SUBSCRIPTION_NOT_FOUND");
    const token = await hsToken(`reader-${id}`);
    for (const path of [consumer, reader]) {
      const res = await request(e, "GET", `${path}&token=${token}`, { headers: upgrade });
      expect(res.status).toBe(101);
      const ws = res.webSocket as WebSocket;
      ws.accept();
      const m = await firstFrame(ws);
      expect(m).toMatchObject({ messageId: btoa("0000:0000000000000000"), payload: "SGVsbG8gV29ybGQ=", redeliveryCount: 0 });
      ws.send(JSON.stringify({ messageId: m.messageId }));
      ws.close(1000, "done");
    }
  });
});
