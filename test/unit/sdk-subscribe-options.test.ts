/**
 * `subscribe()` refuses options the server would refuse before opening any socket, with the
 * server's code and field (src/subscriptions/wire.ts): a refused upgrade reaches a WebSocket
 * client only as a close without its JSON error, so it surfaced as UNAVAILABLE (e.g. the CLI's
 * `edgelog subscribe logs -s 'bad name'`).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { EdgelogClientError } from "../../sdk/src/errors.ts";
import { subscribe } from "../../sdk/src/subscription.ts";
import { FakeServer, text, utf8 } from "./sdk-fake-server.ts";
import { FakeSockets } from "./sdk-fake-sockets.ts";

let server: FakeServer;
let sockets: FakeSockets;
let client: EdgelogClient;
beforeEach(() => {
  server = new FakeServer();
  sockets = new FakeSockets(server);
  vi.stubGlobal("WebSocket", sockets.WebSocket);
  client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
  server.addTopic("orders", 2);
});
afterEach(() => {
  vi.unstubAllGlobals();
});

describe("subscribe() option checks", () => {
  it("a bad option rejects with INVALID_REQUEST naming the field, and no socket is opened", async () => {
    for (const [options, field] of [
      [{ subscription: "bad name" }, "subscription"],
      [{ subscription: "s", ackTimeoutMs: 500 }, "ackTimeoutMs"],
      [{ subscription: "s", receiverQueueSize: 0 }, "receiverQueueSize"],
      [{ subscription: "s", consumerName: "a b" }, "consumerName"],
      [{ subscription: "s", deadLetterPolicy: { maxRedeliverCount: 1, deadLetterTopic: "a/b" } }, "deadLetterTopic"],
    ] as const) {
      const e = await subscribe(client, { topic: "orders", ...options }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(EdgelogClientError);
      expect([field, (e as EdgelogClientError).code, (e as EdgelogClientError).details]).toEqual([field, "INVALID_REQUEST", { field }]);
    }
    expect(sockets.opened).toEqual([]);
  });

  it("good options still open one socket per partition", async () => {
    const c = await subscribe(client, { topic: "orders", subscription: "s", deadLetterPolicy: { maxRedeliverCount: 1, deadLetterTopic: "acme/orders/dlq" } });
    expect(sockets.opened.map((u) => u.searchParams.get("deadLetterTopic"))).toEqual(["acme/orders/dlq", "acme/orders/dlq"]);
    c.close();
  });
});

describe("receive(timeoutMs)", () => {
  it("rejects with REQUEST_TIMED_OUT and takes no message with it: the next one goes to the next receive", async () => {
    const c = await subscribe(client, { topic: "orders", subscription: "s", initialPosition: "earliest" });
    await expect(c.receive(20)).rejects.toMatchObject({ code: "REQUEST_TIMED_OUT" });
    server.append("orders", 0, [{ key: null, value: utf8("late"), headers: [], timestamp: 1000 }]);
    expect(text((await c.receive(5000)).value)).toBe("late");
    const pending = c.receive();
    c.close();
    await expect(pending).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });
});
