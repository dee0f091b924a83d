/**
 * Produce over a WebSocket (docs/PROTOCOL.md "Produce over WebSocket"): one receipt per frame,
 * in frame order, after the durable commit, through the gateway's produce path; a refused frame
 * fails only itself and appends nothing.
 */
import { describe, expect, it } from "vitest";
import { call, createTopic, expectError, fetchJson, randomTopic } from "./helpers.ts";

interface Sock {
  ws: WebSocket;
  frames: Record<string, unknown>[];
  until(n: number): Promise<void>;
}

async function open(topic: string): Promise<Sock> {
  const res = await call(`/v1/topics/${topic}/produce/ws`, { headers: { upgrade: "websocket" } });
  if (res.status !== 101) throw new Error(`upgrade refused ${res.status}: ${await res.text()}`);
  const ws = res.webSocket as WebSocket;
  const frames: Record<string, unknown>[] = [];
  const waits = new Set<() => void>();
  ws.addEventListener("message", (e) => {
    frames.push(JSON.parse(e.data as string) as Record<string, unknown>);
    for (const w of [...waits]) w();
  });
  ws.accept();
  return {
    ws,
    frames,
    until: (n) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (frames.length < n) return;
          waits.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${n} frames: ${JSON.stringify(frames).slice(0, 1500)}`)), 8000);
        waits.add(check);
        check();
      }),
  };
}

describe("produce over WebSocket", () => {
  it("answers every frame in order with its records' offsets; keys keep their order per partition", async () => {
    const topic = randomTopic();
    await createTopic(topic, 3);
    const s = await open(topic);
    const n = 60;
    for (let i = 0; i < n; i++)
      s.ws.send(
        JSON.stringify({
          requestId: `r${i}`,
          records: [
            { key: `k${i % 5}`, value: `v${i}` },
            { key: `k${i % 5}`, value: `w${i}` },
          ],
        }),
      );
    await s.until(n);
    expect(s.frames.map((f) => [f.type, f.requestId])).toEqual(Array.from({ length: n }, (_, i) => ["receipt", `r${i}`]));
    // Per key: one partition, and offsets increase in frame order.
    for (let k = 0; k < 5; k++) {
      const mine = s.frames.filter((_, i) => i % 5 === k).flatMap((f) => f.records as { partition: number; offset: number }[]);
      expect(new Set(mine.map((r) => r.partition)).size).toBe(1);
      const offsets = mine.map((r) => r.offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    }
    // What the receipts say is what the log holds.
    const first = (s.frames[0]!.records as { partition: number; offset: number }[])[0]!;
    const fetched = await fetchJson(topic, first.partition, `offset=${first.offset}&maxRecords=2`);
    expect(fetched.records.map((r) => [r.key, r.value])).toEqual([
      ["k0", "v0"],
      ["k0", "w0"],
    ]);
    s.ws.close(1000);
  });

  it("a refused frame fails only itself and appends nothing; ping is answered in its turn", async () => {
    const topic = randomTopic();
    await createTopic(topic, 1, { "max.message.bytes": 1000 });
    const s = await open(topic);
    s.ws.send("{nope");
    s.ws.send(JSON.stringify({ requestId: "typo", records: [{ vlaue: "x" }] }));
    s.ws.send(JSON.stringify({ requestId: "p9", records: [{ value: "x", partition: 9 }] }));
    s.ws.send(JSON.stringify({ requestId: "big", records: [{ value: "x".repeat(2000) }] }));
    s.ws.send(JSON.stringify({ requestId: "b64", valueEncoding: "base64", records: [{ value: "%%" }] }));
    s.ws.send(JSON.stringify({ requestId: "ok", records: [{ value: "a" }, { value: "b" }] }));
    s.ws.send(JSON.stringify({ type: "ping" }));
    s.ws.send(JSON.stringify({ requestId: "x".repeat(65), records: [{ value: "a" }] }));
    await s.until(8);
    expect(s.frames.map((f) => [f.type, f.requestId, f.code])).toEqual([
      ["error", null, "INVALID_JSON"],
      ["error", "typo", "INVALID_REQUEST"],
      ["error", "p9", "UNKNOWN_TOPIC_OR_PARTITION"],
      ["error", "big", "RECORD_TOO_LARGE"],
      ["error", "b64", "INVALID_ENCODING"],
      ["receipt", "ok", undefined],
      ["pong", undefined, undefined],
      ["error", null, "INVALID_REQUEST"],
    ]);
    expect(s.frames[1]!.details).toEqual({ field: "records[0].vlaue" });
    expect((s.frames[5]!.records as { offset: number }[]).map((r) => r.offset)).toEqual([0, 1]);
    const all = await fetchJson(topic, 0, "offset=0");
    expect(all.records.map((r) => r.value)).toEqual(["a", "b"]);
    s.ws.close(1000);
  });

  it("refusals before the upgrade", async () => {
    await expectError(await call(`/v1/topics/${randomTopic()}/produce/ws`, { headers: { upgrade: "websocket" } }), "UNKNOWN_TOPIC_OR_PARTITION", 404);
    const topic = randomTopic();
    await createTopic(topic);
    await expectError(await call(`/v1/topics/${topic}/produce/ws`), "UPGRADE_REQUIRED", 426);
  });
});
