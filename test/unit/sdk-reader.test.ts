/**
 * The SDK's reader (sdk/src/reader.ts) against fake reader sockets over the fake server's logs
 * (test/unit/sdk-fake-sockets.ts): fan-in across partitions, permits given back in groups of
 * half the window, the reconnect position after a drop (right after the last message received,
 * inclusive, so nothing is lost or repeated; for a reader that received nothing, the start
 * offset the server reported), no permits given back on a new socket for an old socket's
 * messages, hasMessageAvailable, seek, timeouts and close.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ProducerRecord } from "../../src/codec/index.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { createReader, type Reader, type ReaderMessage } from "../../sdk/src/reader.ts";
import { FakeServer, text, utf8 } from "./sdk-fake-server.ts";
import { FakeSockets } from "./sdk-fake-sockets.ts";

const rec = (v: string, timestamp = 1000): ProducerRecord => ({ key: null, value: utf8(v), headers: [], timestamp });
const id = (p: number, o: number) => `${String(p).padStart(4, "0")}:${String(o).padStart(16, "0")}`;

let server: FakeServer;
let sockets: FakeSockets;
let client: EdgelogClient;
beforeEach(() => {
  server = new FakeServer();
  sockets = new FakeSockets(server);
  vi.stubGlobal("WebSocket", sockets.WebSocket);
  client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
});
afterEach(() => {
  vi.unstubAllGlobals();
});

async function take(reader: Reader, n: number): Promise<ReaderMessage[]> {
  const out: ReaderMessage[] = [];
  while (out.length < n) out.push(await reader.readNext());
  return out;
}

const until = async (cond: () => boolean): Promise<void> => {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
};

describe("createReader on fake sockets", () => {
  it("fans in every partition; gives permits back in groups of half the window, never more than the window in flight", async () => {
    server.addTopic("t", 2);
    for (let i = 0; i < 10; i++) {
      server.append("t", 0, [rec(`a${i}`)]);
      server.append("t", 1, [rec(`b${i}`)]);
    }
    const reader = await createReader(client, { topic: "t", start: "earliest", receiverQueueSize: 4 });
    const got = await take(reader, 20);
    expect(got.filter((m) => m.partition === 0).map((m) => text(m.value))).toEqual(Array.from({ length: 10 }, (_, i) => `a${i}`));
    expect(got.filter((m) => m.partition === 1).map((m) => text(m.value))).toEqual(Array.from({ length: 10 }, (_, i) => `b${i}`));
    expect(got[0]).toMatchObject({ topic: "public/default/t", messageId: id(0, 0), redeliveryCount: 0 });
    for (const p of [0, 1]) {
      const acks = sockets.framesTo(`/partitions/${p}/readers/ws`).map((f) => f.frame);
      expect(acks).toEqual(Array.from({ length: 5 }, (_, i) => ({ type: "ack", messageIds: [id(p, 2 * i), id(p, 2 * i + 1)] })));
      expect(sockets.maxInFlight.get(`/v1/topics/public/default/t/partitions/${p}/readers/ws`)).toBe(4);
    }
    expect(sockets.opened.map((u) => [u.searchParams.get("start"), u.searchParams.get("inclusive"), u.searchParams.get("receiverQueueSize")])).toEqual([
      ["earliest", "false", "4"],
      ["earliest", "false", "4"],
    ]);
    reader.close();
  });

  it("a dropped socket reopens right after the last message received (inclusive): nothing lost, nothing repeated", async () => {
    server.addTopic("t", 1);
    for (let i = 0; i < 10; i++) server.append("t", 0, [rec(`m${i}`)]);
    const reader = await createReader(client, { topic: "t", start: "earliest", receiverQueueSize: 4 });
    // 3 read: 2 permits given back at half the window, so 6 received (offsets 0..5).
    const first = await take(reader, 3);
    sockets.refuseOpens = 1; // the first reopening fails too; the next one succeeds
    sockets.drop();
    server.append("t", 0, [rec("while-away")]);
    await until(() => sockets.opened.length === 3);
    const rest = await take(reader, 8);
    expect([...first, ...rest].map((m) => m.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(text(rest[rest.length - 1]!.value)).toBe("while-away");
    expect(sockets.opened.slice(1).map((u) => [u.searchParams.get("start"), u.searchParams.get("inclusive")])).toEqual([
      [id(0, 6), "true"],
      [id(0, 6), "true"],
    ]);
    // Offsets 3..5 came on the first socket: their permits are not given back on the new one
    // (connection 2: the refused opening never connected).
    const acked = sockets.framesTo("/readers/ws").flatMap((f) => (f.frame.messageIds as string[]).map((m) => [f.connection, m] as const));
    expect(acked).toEqual([
      [1, id(0, 0)],
      [1, id(0, 1)],
      [2, id(0, 6)],
      [2, id(0, 7)],
      [2, id(0, 8)],
      [2, id(0, 9)],
    ]);
    reader.close();
  });

  it("a latest reader that received nothing resumes at the start offset the server reported, not at the new latest", async () => {
    server.addTopic("t", 1);
    server.append("t", 0, [rec("old")]);
    const reader = await createReader(client, { topic: "t" });
    sockets.drop();
    server.append("t", 0, [rec("produced while away")]);
    const m = await reader.readNext();
    expect([m.offset, text(m.value)]).toEqual([1, "produced while away"]);
    expect(sockets.opened.map((u) => u.searchParams.get("start"))).toEqual(["latest", id(0, 1)]);
    reader.close();
  });

  it("hasMessageAvailable: false at the end, true with an append past what was read", async () => {
    server.addTopic("t", 2);
    server.append("t", 1, [rec("x")]);
    const reader = await createReader(client, { topic: "t", start: "earliest" });
    expect(await reader.hasMessageAvailable()).toBe(true);
    await reader.readNext();
    expect(await reader.hasMessageAvailable()).toBe(false);
    server.append("t", 0, [rec("y")]);
    expect(await reader.hasMessageAvailable()).toBe(true);
    expect(text((await reader.readNext()).value)).toBe("y");
    expect(await reader.hasMessageAvailable()).toBe(false);
    reader.close();
  });

  it("a message id reads its partition only; seek moves every partition (timestamp) or one (message id) and drops what was queued", async () => {
    server.addTopic("t", 2);
    server.append("t", 0, [rec("a0", 100), rec("a1", 200), rec("a2", 300)]);
    server.append("t", 1, [rec("b0", 100), rec("b1", 200)]);
    const reader = await createReader(client, { topic: "t", startMessageId: id(1, 0) });
    expect(sockets.opened.map((u) => u.pathname)).toEqual(["/v1/topics/public%2Fdefault%2Ft/partitions/1/readers/ws"]);
    expect(text((await reader.readNext()).value)).toBe("b1");
    await reader.seek({ timestamp: 200 });
    const after = await take(reader, 3);
    expect(after.map((m) => text(m.value)).sort()).toEqual(["a1", "a2", "b1"]);
    await reader.seek(id(0, 0));
    expect((await take(reader, 2)).map((m) => text(m.value))).toEqual(["a1", "a2"]);
    expect(await reader.hasMessageAvailable()).toBe(false);
    reader.close();
  });

  it("readNext(timeoutMs) rejects with REQUEST_TIMED_OUT and the reader stays usable; close rejects a pending readNext", async () => {
    server.addTopic("t", 1);
    const reader = await createReader(client, { topic: "t" });
    await expect(reader.readNext(20)).rejects.toMatchObject({ code: "REQUEST_TIMED_OUT" });
    server.append("t", 0, [rec("late")]);
    expect(text((await reader.readNext(5000)).value)).toBe("late");
    const pending = reader.readNext();
    reader.close();
    await expect(pending).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(reader.readNext()).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("stops on a final close code (4003, the topic was deleted) without reconnecting", async () => {
    server.addTopic("t", 1);
    const reader = await createReader(client, { topic: "t" });
    const pending = reader.readNext();
    sockets.drop(4003);
    await expect(pending).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await new Promise((r) => setTimeout(r, 300));
    expect(sockets.opened.length).toBe(1);
  });

  it("refuses bad starts before any request", async () => {
    server.addTopic("t", 1);
    await expect(createReader(client, { topic: "t", start: "0001:xyz" })).rejects.toMatchObject({ code: "INVALID_MESSAGE_ID" });
    await expect(createReader(client, { topic: "t", start: { timestamp: -1 } })).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    await expect(createReader(client, { topic: "t", start: "earliest", startMessageId: "latest" })).rejects.toMatchObject({ code: "INVALID_REQUEST" });
    expect(server.requests).toEqual([]);
  });

  it("refuses a receiverQueueSize the server would refuse, before any request (a refused upgrade would surface as UNAVAILABLE)", async () => {
    server.addTopic("t", 1);
    for (const receiverQueueSize of [0, 10_001, 1.5]) {
      await expect(createReader(client, { topic: "t", receiverQueueSize })).rejects.toMatchObject({ code: "INVALID_REQUEST", details: { field: "receiverQueueSize" } });
    }
    expect(server.requests).toEqual([]);
  });
});
