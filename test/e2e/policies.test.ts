/**
 * Namespace policies on the real dev server (workerd, produce coalescing on): concurrent produce
 * requests held by a `producer_request_hold` backlog quota (one coalesced append RPC may carry
 * several of them) are all written once a consumer acknowledges, none lost or written twice;
 * and the SDK producer sees BACKLOG_QUOTA_EXCEEDED under `producer_exception`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgelogClient, EdgelogClientError, Producer, subscribe, toText } from "../../sdk/src/index.ts";
import type { ProduceResponse } from "../../src/protocol/index.ts";
import { type DevServer, startWithClient } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient({ vars: { EDGELOG_BACKLOG_HOLD_TIMEOUT_MS: "60000" } })));
afterAll(() => server?.dispose());

const uid = (): string => crypto.randomUUID().slice(0, 8);

async function send(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${server.baseUrl}${path}`, { method, headers: { "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

async function expectStatus(res: Response, status: number): Promise<unknown> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  return text === "" ? null : JSON.parse(text);
}

/** A topic in a fresh namespace with `policies`, and a subscription at its end. */
async function setUp(policies: Record<string, unknown>): Promise<string> {
  const tenant = `e2e-${uid()}`;
  await expectStatus(await send("PUT", `/v1/tenants/${tenant}`, {}), 201);
  await expectStatus(await send("PUT", `/v1/namespaces/${tenant}/ns`, { policies }), 201);
  const topic = `${tenant}/ns/t`;
  await expectStatus(await send("POST", "/v1/topics", { name: topic, partitions: 1 }), 201);
  await expectStatus(await send("PUT", `/v1/topics/${topic}/subscriptions/s`, { position: "latest" }), 201);
  return topic;
}

const big = (i: number) => `${i}`.padEnd(400, "x");

describe("backlog quota on the dev server", () => {
  it("producer_request_hold: concurrent held requests (coalesced or not) are all written once the consumer acks, each once", async () => {
    const topic = await setUp({ backlogQuota: { limitBytes: 500, action: "producer_request_hold" } });
    const produce = (values: string[]) => send("POST", `/v1/topics/${topic}/partitions/0/records`, { records: values.map((value) => ({ value })) });
    await expectStatus(await produce([big(0), big(1)]), 200); // ~900 bytes: over the limit
    const held = [2, 3, 4].map((i) => produce([big(i)]).then(async (r) => (await expectStatus(r, 200)) as ProduceResponse));
    // A consumer acks everything it gets, until the held requests are written.
    const consumer = await subscribe(client, { topic, subscription: "s", type: "exclusive" });
    const seen: string[] = [];
    const consuming = (async () => {
      while (seen.length < 5) {
        const m = await consumer.receive();
        seen.push(toText(m.value)!.slice(0, 1));
        await consumer.acknowledge(m);
      }
    })();
    const answers = await Promise.all(held);
    await consuming;
    const offsets = answers.map((a) => a.records[0]!.offset).sort((a, b) => a - b);
    expect(offsets).toEqual([2, 3, 4]);
    expect([...seen].sort()).toEqual(["0", "1", "2", "3", "4"]);
    consumer.close();
  });

  it("producer_exception: the SDK producer gets BACKLOG_QUOTA_EXCEEDED (not retried), and sends again after the consumer acks", async () => {
    const topic = await setUp({ backlogQuota: { limitBytes: 500, action: "producer_exception" } });
    const producer = new Producer(client, { idempotent: true });
    await producer.send({
      topic,
      messages: [
        { value: big(0), partition: 0 },
        { value: big(1), partition: 0 },
      ],
    });
    const err = await producer.send({ topic, messages: [{ value: big(2), partition: 0 }] }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EdgelogClientError);
    expect((err as EdgelogClientError).code).toBe("BACKLOG_QUOTA_EXCEEDED");
    await producer.close();
    const consumer = await subscribe(client, { topic, subscription: "s", type: "exclusive" });
    for (let i = 0; i < 2; i++) await consumer.acknowledge(await consumer.receive());
    // The ack receipt follows the commit: the next produce sees the backlog at 0.
    const again = new Producer(client);
    await again.send({ topic, messages: [{ value: big(3), partition: 0 }] });
    await again.close();
    expect(toText((await consumer.receive()).value)!.slice(0, 1)).toBe("3");
    consumer.close();
  });
});
