/**
 * Two WebSocket rules through the real gateway and partition objects:
 *
 * - **An ack gives back only the permit of a message the socket holds** (docs/PROTOCOL.md
 *   "Readers over WebSocket", Pulsar "Reader"): a reader's ack of an id it was never sent, or
 *   of one it acked already, is refused with INVALID_MESSAGE_ID and pushes nothing more than
 *   `receiverQueueSize`; a consumer acking messages it was not delivered gains no permits.
 * - **Frame sizes are UTF-8 bytes**: a text frame of multi-byte characters whose length in
 *   UTF-16 code units is under a limit but whose bytes are over it is refused and changes nothing.
 *
 * "Nothing more arrives" waits a short while and checks the count (no timing thresholds).
 */
import { env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { partitionObjectName } from "../../src/partition/rpc.ts";
import { call, createTopic, expectError, fetchJson, json, randomTopic } from "./helpers.ts";
import { connect, connectReader, produceValues, sleep, subStats, values, watchSocket } from "./subs-helpers.ts";

const id = (offset: number, partition = 0) => `${String(partition).padStart(4, "0")}:${String(offset).padStart(16, "0")}`;
/** Time given to a wrongly pushed message to arrive before counting (a wait, not a threshold). */
const SETTLE_MS = 400;

/** `n` copies of a 2-byte UTF-8 character: n UTF-16 code units, 2n bytes. */
const twoByte = (n: number) => "é".repeat(n);

describe("a native reader's acks", () => {
  it("an id never delivered is refused (INVALID_MESSAGE_ID) and pushes nothing beyond receiverQueueSize", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(
      topic,
      Array.from({ length: 10 }, (_, i) => `m${i}`),
    );
    const r = await connectReader(topic, { start: "earliest", receiverQueueSize: 3 });
    await r.waitMessages(3);
    // Offset 7 exists but was not sent; 50 is past the log end; both name this partition.
    r.send({ type: "ack", messageIds: [id(7)], requestId: "never-sent" });
    r.send({ type: "ack", messageIds: [id(50)], requestId: "past-end" });
    await r.until(() => r.frames.filter((f) => f.type === "error").length === 2, "2 error frames");
    expect(r.frames.filter((f) => f.type === "error")).toEqual([
      {
        type: "error",
        code: "INVALID_MESSAGE_ID",
        message: `Message ${id(7)} was not delivered to this reader, or is acked already: it gives no permit back.`,
        requestId: "never-sent",
        details: { messageId: id(7), offset: 7 },
      },
      {
        type: "error",
        code: "INVALID_MESSAGE_ID",
        message: `Message ${id(50)} was not delivered to this reader, or is acked already: it gives no permit back.`,
        requestId: "past-end",
        details: { messageId: id(50), offset: 50 },
      },
    ]);
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2"]);
    // A frame with one good and one bad id is refused whole: m0 keeps its place.
    r.send({ type: "ack", messageIds: [id(0), id(8)], requestId: "mixed" });
    await r.until(() => r.frames.some((f) => f.type === "error" && f.requestId === "mixed"), "the mixed frame's error");
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2"]);
    // A real ack gives exactly one permit back.
    r.send({ type: "ack", messageIds: [id(0)] });
    await r.waitMessages(4);
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2", "m3"]);
    await r.close();
  });

  it("a duplicate ack gives one permit only, in separate frames or in one", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(
      topic,
      Array.from({ length: 10 }, (_, i) => `m${i}`),
    );
    const r = await connectReader(topic, { start: "earliest", receiverQueueSize: 2 });
    await r.waitMessages(2);
    r.send({ type: "ack", messageIds: [id(0)], requestId: "first" });
    await r.waitMessages(3);
    r.send({ type: "ack", messageIds: [id(0)], requestId: "again" });
    r.send({ type: "ack", messageIds: [id(1), id(1)], requestId: "twice-in-one" });
    await r.until(() => r.frames.filter((f) => f.type === "error").length === 2, "2 error frames");
    expect(r.frames.filter((f) => f.type === "error").map((f) => [f.type === "error" && f.code, f.type === "error" && f.requestId])).toEqual([
      ["INVALID_MESSAGE_ID", "again"],
      ["INVALID_MESSAGE_ID", "twice-in-one"],
    ]);
    await sleep(SETTLE_MS);
    // m0 acked once: one more message (m2); the window holds m1 and m2.
    expect(values(r.messages)).toEqual(["m0", "m1", "m2"]);
    // m1 was not acked by the refused frame: acking it now gives its permit back.
    r.send({ type: "ack", messageIds: [id(1)] });
    await r.waitMessages(4);
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2", "m3"]);
    await r.close();
  });

  it("acks out of order are each counted once; new appends fill exactly the freed permits", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1", "m2", "m3"]);
    const r = await connectReader(topic, { start: "earliest", receiverQueueSize: 4 });
    await r.waitMessages(4);
    r.send({ type: "ack", messageIds: [id(3), id(1)] });
    await sleep(SETTLE_MS);
    await produceValues(topic, ["m4", "m5", "m6"]);
    await r.waitMessages(6);
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2", "m3", "m4", "m5"]);
    r.send({ type: "ack", messageIds: [id(1)], requestId: "acked-before" });
    await r.until(() => r.frames.some((f) => f.type === "error" && f.requestId === "acked-before"), "error frame");
    r.send({ type: "ack", messageIds: [id(0), id(2), id(4), id(5)] });
    await r.waitMessages(7);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2", "m3", "m4", "m5", "m6"]);
    await r.close();
  });
});

describe("a native reader's window across a hibernation", () => {
  it("after the object is evicted, an ack acked before or never delivered is still refused, and a held message still gives exactly its permit back", async () => {
    const topic = randomTopic();
    const created = await createTopic(topic);
    await produceValues(
      topic,
      Array.from({ length: 10 }, (_, i) => `m${i}`),
    );
    const r = await connectReader(topic, { start: "earliest", receiverQueueSize: 3 });
    await r.waitMessages(3);
    // Out of order: m1 acked, m0 and m2 held, m3 sent in m1's place.
    r.send({ type: "ack", messageIds: [id(1)] });
    await r.waitMessages(4);
    await evictDurableObject(env.PARTITION.getByName(partitionObjectName(created.topicId, 0)));
    r.send({ type: "ack", messageIds: [id(1)], requestId: "acked-before" });
    r.send({ type: "ack", messageIds: [id(8)], requestId: "never-sent" });
    await r.until(() => r.frames.filter((f) => f.type === "error").length === 2, "2 error frames");
    expect(r.frames.filter((f) => f.type === "error").map((f) => [f.type === "error" && f.code, f.type === "error" && f.requestId])).toEqual([
      ["INVALID_MESSAGE_ID", "acked-before"],
      ["INVALID_MESSAGE_ID", "never-sent"],
    ]);
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2", "m3"]);
    r.send({ type: "ack", messageIds: [id(0), id(2)] });
    await r.waitMessages(6);
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0", "m1", "m2", "m3", "m4", "m5"]);
    await r.close();
  });
});

describe("a consumer's acks of messages it was not delivered", () => {
  it("ack the backlog: acked (Pulsar: any message of the subscription), but no permit for this consumer", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(
      topic,
      Array.from({ length: 8 }, (_, i) => `m${i}`),
    );
    const c = await connect(topic, "s", { initialPosition: "earliest", receiverQueueSize: 2 });
    await c.waitMessages(2);
    // m5 and m6 were never delivered: acking them acks them, and frees no permit.
    expect(await c.ack([id(5), id(6)])).toBe(2);
    expect(await c.ack([id(5)])).toBe(0);
    await sleep(SETTLE_MS);
    expect(values(c.messages)).toEqual(["m0", "m1"]);
    const st = await subStats(topic, "s");
    expect(st.partitions[0]!.consumers.map((x) => [x.permits, x.unacked])).toEqual([[0, 2]]);
    // A duplicate ack of a delivered message gives its permit back once.
    expect(await c.ack([id(0)])).toBe(1);
    expect(await c.ack([id(0)])).toBe(0);
    await c.waitMessages(3);
    await sleep(SETTLE_MS);
    expect(values(c.messages)).toEqual(["m0", "m1", "m2"]);
    // The acked backlog is never delivered: after m4 comes m7.
    expect(await c.ack([id(1), id(2)])).toBe(2);
    await c.waitMessages(5);
    expect(await c.ack([id(3), id(4)])).toBe(2);
    await c.waitMessages(6);
    expect(values(c.messages)).toEqual(["m0", "m1", "m2", "m3", "m4", "m7"]);
    await c.close();
  });

  it("a message held by another consumer: the ack gives the permit to its holder, not to the one that acked", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const a = await connect(topic, "shared", { type: "shared", initialPosition: "earliest", receiverQueueSize: 1 });
    await a.until(() => a.frames.some((f) => f.type === "connected"), "a connected");
    const b = await connect(topic, "shared", { type: "shared", initialPosition: "earliest", receiverQueueSize: 1 });
    await b.until(() => b.frames.some((f) => f.type === "connected"), "b connected");
    await produceValues(topic, ["m0", "m1", "m2", "m3"]);
    await a.waitMessages(1);
    await b.waitMessages(1);
    // b acks a's message: a's permit comes back (a gets the next one), b gets nothing more.
    expect(await b.ack([a.messages[0]!.messageId])).toBe(1);
    await a.waitMessages(2);
    await sleep(SETTLE_MS);
    expect([a.messages.length, b.messages.length]).toEqual([2, 1]);
    await Promise.all([a.close(), b.close()]);
  });
});

describe("an HTTP pull lease's acks of messages it does not hold", () => {
  it("refused whole (INVALID_MESSAGE_ID, details.offset), nothing acked, and no more messages than maxMessages", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const base = `/v1/topics/${topic}/partitions/0/subscriptions/q`;
    await produceValues(topic, ["m0", "m1", "m2", "m3", "m4"]);
    const receive = async (body: unknown) => (await (await json("POST", `${base}/receive`, body)).json()) as { leaseId: string; messages: { messageId: string; value: string }[] };
    const a = await receive({ initialPosition: "earliest", maxMessages: 2 });
    const b = await receive({ maxMessages: 1 });
    expect([a.messages.map((m) => m.value), b.messages.map((m) => m.value)]).toEqual([["m0", "m1"], ["m2"]]);
    // b's message, and m4 (never delivered): not held by lease a.
    for (const other of [b.messages[0]!.messageId, id(4)]) {
      const e = await expectError(await json("POST", `${base}/leases/${a.leaseId}/ack`, { messageIds: [a.messages[0]!.messageId, other] }), "INVALID_MESSAGE_ID", 400);
      expect(e.details).toMatchObject({ leaseId: a.leaseId, offset: Number(other.slice(5)) });
    }
    const st = await subStats(topic, "q");
    expect([st.backlog, st.unacked]).toEqual([5, 3]);
    expect(await (await json("POST", `${base}/leases/${a.leaseId}/ack`, {})).json()).toEqual({ leaseId: a.leaseId, settled: 2, remaining: 0 });
    expect(await (await json("POST", `${base}/leases/${b.leaseId}/ack`, {})).json()).toEqual({ leaseId: b.leaseId, settled: 1, remaining: 0 });
    // A duplicate ack: the lease ended with its last message.
    await expectError(await json("POST", `${base}/leases/${a.leaseId}/ack`, { messageIds: [a.messages[0]!.messageId] }), "LEASE_NOT_FOUND", 404);
    const c = await receive({ maxMessages: 10 });
    expect(c.messages.map((m) => m.value)).toEqual(["m3", "m4"]);
  });
});

describe("a Pulsar reader's acks (gateway fan-in)", () => {
  async function pulsarReader(path: string) {
    const res = await call(path, { headers: { upgrade: "websocket" } });
    if (res.status !== 101) throw new Error(`upgrade refused ${res.status}: ${await res.text()}`);
    const ws = res.webSocket as WebSocket;
    const s = watchSocket<Record<string, unknown>>(ws);
    return { ws, ...s, messages: () => s.frames.filter((f) => "payload" in f), errors: () => s.frames.filter((f) => "errorCode" in f) };
  }

  it("an id never delivered or acked twice is refused with error:7 INVALID_MESSAGE_ID and frees nothing", async () => {
    const name = randomTopic("pr");
    await createTopic(`public/default/${name}`, 2);
    // 3 messages per partition.
    await produceValues(`public/default/${name}`, ["a0", "a1", "a2"], [], 0);
    await produceValues(`public/default/${name}`, ["b0", "b1", "b2"], [], 1);
    const r = await pulsarReader(`/ws/v2/reader/persistent/public/default/${name}?messageId=earliest&receiverQueueSize=2`);
    await r.until(() => r.messages().length === 2, "2 messages");
    const got = r.messages().map((m) => m.messageId as string);
    const undelivered = [id(2, 0), id(2, 1)].map((n) => btoa(n)).find((x) => !got.includes(x))!;
    r.ws.send(JSON.stringify({ messageId: undelivered }));
    await r.until(() => r.errors().length === 1, "an error frame");
    expect(r.errors()[0]).toEqual({
      result: "error:7",
      errorCode: "INVALID_MESSAGE_ID",
      errorMsg: `Message ${undelivered} was not delivered to this reader, or is acked already: it gives no permit back.`,
    });
    await sleep(SETTLE_MS);
    expect(r.messages().length).toBe(2);
    r.ws.send(JSON.stringify({ messageId: got[0] }));
    await r.until(() => r.messages().length === 3, "a 3rd message");
    r.ws.send(JSON.stringify({ messageId: got[0] }));
    await r.until(() => r.errors().length === 2, "a 2nd error frame");
    await sleep(SETTLE_MS);
    expect(r.messages().length).toBe(3);
    expect(new Set(r.messages().map((m) => m.messageId)).size).toBe(3);
    r.ws.close(1000, "done");
    await r.closed;
  });
});

describe("a Pulsar consumer's ack of a message waiting in the gateway's buffer", () => {
  it("acks it (any message of the subscription may be acked) and it is never pushed; the window stays receiverQueueSize", async () => {
    const name = randomTopic("pc");
    const topic = `public/default/${name}`;
    await createTopic(topic, 2);
    await produceValues(topic, ["a0"], [], 0);
    await produceValues(topic, ["b0"], [], 1);
    const res = await call(`/ws/v2/consumer/persistent/${topic}/s?subscriptionType=Shared&receiverQueueSize=1&subscriptionInitialPosition=Earliest`, {
      headers: { upgrade: "websocket" },
    });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    const c = watchSocket<Record<string, unknown>>(ws);
    const messages = () => c.frames.filter((f) => "payload" in f);
    await c.until(() => messages().length === 1, "1 message");
    await sleep(SETTLE_MS);
    expect(messages().length).toBe(1);
    const first = messages()[0]!.messageId as string;
    // The other partition's message was delivered to the gateway and waits for the window.
    const other = btoa(atob(first).startsWith("0000") ? id(0, 1) : id(0, 0));
    ws.send(JSON.stringify({ messageId: other }));
    ws.send(JSON.stringify({ messageId: first }));
    let backlog = -1;
    for (let i = 0; i < 40 && backlog !== 0; i++) {
      await sleep(100);
      backlog = (await subStats(topic, "s")).backlog;
    }
    expect(backlog).toBe(0);
    await sleep(SETTLE_MS);
    expect([messages().length, c.frames.filter((f) => "errorCode" in f).length]).toEqual([1, 0]);
    ws.close(1000, "done");
    await c.closed;
  });
});

describe("a Pulsar session's partition sockets", () => {
  it("what every partition delivers at once on connecting reaches the client (partition 0's first frames are not dropped while the others open)", async () => {
    const name = randomTopic("pc4");
    const topic = `public/default/${name}`;
    await createTopic(topic, 4);
    for (let p = 0; p < 4; p++) await produceValues(topic, [`p${p}`], [], p);
    for (const path of [`/ws/v2/consumer/persistent/${topic}/s?subscriptionType=Shared&subscriptionInitialPosition=Earliest`, `/ws/v2/reader/persistent/${topic}?messageId=earliest`]) {
      const res = await call(path, { headers: { upgrade: "websocket" } });
      expect(res.status).toBe(101);
      const ws = res.webSocket as WebSocket;
      const c = watchSocket<Record<string, unknown>>(ws);
      await c.until(() => c.frames.filter((f) => "payload" in f).length === 4, "4 messages");
      expect(
        c.frames
          .filter((f) => "payload" in f)
          .map((f) => atob(f.payload as string))
          .sort(),
      ).toEqual(["p0", "p1", "p2", "p3"]);
      ws.close(1000, "done");
      await c.closed;
    }
  });
});

describe("frame sizes are UTF-8 bytes", () => {
  it("a consumer's ack frame of 2-byte characters under 64 Ki code units but over 64 KiB is refused (INVALID_REQUEST) and acks nothing", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0"]);
    const c = await connect(topic, "s", { initialPosition: "earliest" });
    const [m0] = await c.waitMessages(1);
    const frame = JSON.stringify({ type: "ack", messageIds: [m0!.messageId], requestId: "big", note: twoByte(40_000) });
    expect(frame.length).toBeLessThan(64 * 1024);
    expect(new TextEncoder().encode(frame).length).toBeGreaterThan(64 * 1024);
    c.ws.send(frame);
    await c.until(() => c.frames.some((f) => f.type === "error" || f.type === "acked"), "an answer");
    expect(c.frames.find((f) => f.type === "error" || f.type === "acked")).toEqual({
      type: "error",
      code: "INVALID_REQUEST",
      message: "A frame is at most 65536 bytes of UTF-8 text.",
      // An oversized frame is not parsed, so its requestId is not read.
      requestId: null,
      details: { maxBytes: 65536 },
    });
    // m0 was not acked by the refused frame.
    expect(await c.ack([m0!.messageId])).toBe(1);
    await c.close();
  });

  it("a reader's ack frame over 64 KiB of UTF-8 is refused and gives no permit back", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    await produceValues(topic, ["m0", "m1"]);
    const r = await connectReader(topic, { start: "earliest", receiverQueueSize: 1 });
    await r.waitMessages(1);
    r.ws.send(JSON.stringify({ type: "ack", messageIds: [id(0)], pad: twoByte(40_000) }));
    await r.until(() => r.frames.some((f) => f.type === "error"), "an error frame");
    expect(r.frames.find((f) => f.type === "error")).toMatchObject({ code: "INVALID_REQUEST", details: { maxBytes: 65536 } });
    await sleep(SETTLE_MS);
    expect(values(r.messages)).toEqual(["m0"]);
    r.send({ type: "ack", messageIds: [id(0)] });
    await r.waitMessages(2);
    await r.close();
  });

  it("a server frame of multi-byte text is cut at 512 KiB of UTF-8, not of code units", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    // 4 values of 100,000 3-byte characters: 300 KB each, ~400 KB of code units in all.
    const big = Array.from({ length: 4 }, (_, i) => `${i}${"€".repeat(100_000)}`);
    for (const v of big) await produceValues(topic, [v]);
    const r = await connectReader(topic, { start: "earliest" });
    await r.waitMessages(4);
    const frames = r.frames.filter((f) => f.type === "messages");
    expect(frames.map((f) => (f.type === "messages" ? f.messages.length : 0))).toEqual([1, 1, 1, 1]);
    expect(values(r.messages)).toEqual(big);
    await r.close();
  });

  it("a Pulsar producer frame under 1 Mi code units but over 1 MiB of UTF-8 is refused (send-error:3 INVALID_REQUEST) and stores nothing", async () => {
    const name = randomTopic("pp");
    await createTopic(`public/default/${name}`);
    const res = await call(`/ws/v2/producer/persistent/public/default/${name}`, { headers: { upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    const s = watchSocket<Record<string, unknown>>(ws);
    // 400,000 3-byte characters: 400 K code units, 1.2 MB.
    const frame = JSON.stringify({ payload: btoa("x"), properties: { p: "€".repeat(400_000) }, context: "big" });
    expect(frame.length).toBeLessThan(1024 * 1024);
    ws.send(frame);
    ws.send(JSON.stringify({ payload: btoa("small"), context: "ok" }));
    await s.until(() => s.frames.length === 2, "2 receipts");
    expect(s.frames[0]).toEqual({ result: "send-error:3", errorCode: "INVALID_REQUEST", errorMsg: "A frame is at most 1048576 bytes of UTF-8 text.", context: undefined });
    expect(s.frames[1]).toMatchObject({ result: "ok", context: "ok", messageId: btoa(id(0)) });
    const fetched = await fetchJson(`public/default/${name}`, 0, "offset=0");
    expect(fetched.records.map((x) => x.value)).toEqual(["small"]);
    ws.close(1000, "done");
    await s.closed;
  });

  it("a native produce frame over 1 MiB of UTF-8 is refused (REQUEST_TOO_LARGE) and stores nothing", async () => {
    const topic = randomTopic();
    await createTopic(topic);
    const res = await call(`/v1/topics/${topic}/produce/ws`, { headers: { upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket as WebSocket;
    const s = watchSocket<Record<string, unknown>>(ws);
    const frame = JSON.stringify({ requestId: "big", records: [{ value: "€".repeat(400_000) }] });
    expect(frame.length).toBeLessThan(1024 * 1024);
    ws.send(frame);
    ws.send(JSON.stringify({ requestId: "small", records: [{ value: "ok" }] }));
    await s.until(() => s.frames.length === 2, "2 receipts");
    expect(s.frames[0]).toEqual({
      type: "error",
      requestId: null,
      code: "REQUEST_TOO_LARGE",
      message: "A frame is at most 1048576 bytes of UTF-8 text.",
      details: { maxBytes: 1048576 },
    });
    expect(s.frames[1]).toMatchObject({ type: "receipt", requestId: "small", records: [{ partition: 0, offset: 0 }] });
    const fetched = await fetchJson(topic, 0, "offset=0");
    expect(fetched.records.map((x) => x.value)).toEqual(["ok"]);
    ws.close(1000, "done");
    await s.closed;
  });
});
