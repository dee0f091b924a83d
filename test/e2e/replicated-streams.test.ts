/**
 * Durable Streams on a replicated partition (docs/DURABLE-STREAMS.md "Replicated streams") on the
 * real dev server: the official client (@durable-streams/client) creates a stream with
 * `Edgelog-Replication-Factor: 3` and uses it as any other (idempotent producer, catch-up, SSE
 * tail); then a SIGKILL of the dev server (workerd) during appends with producer headers: after
 * the restart the three replicas rebuild from their journals and elect a leader, the writer
 * resends what it had in flight (same Producer-Seq, retried on retriable answers), and every
 * acknowledged message is in the stream exactly once, in order.
 */
import { DurableStream, IdempotentProducer } from "@durable-streams/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomTopic, startDevServer, type DevServer } from "./dev-server.ts";

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer({ vars: { STREAMS_LONG_POLL_TIMEOUT_MS: "2000" } });
});
afterAll(() => server?.dispose());

const url = (path: string) => `${server.baseUrl}/v1/stream/${path}`;
const RF3 = { "Edgelog-Replication-Factor": "3" };

/** A POST of one JSON message with producer headers; null when the server is gone. */
async function append(path: string, seq: number, value: string): Promise<{ status: number; text: string } | null> {
  try {
    const res = await fetch(url(path), {
      method: "POST",
      headers: { "content-type": "application/json", "Producer-Id": "crash-writer", "Producer-Epoch": "0", "Producer-Seq": String(seq) },
      body: JSON.stringify(value),
    });
    return { status: res.status, text: await res.text() };
  } catch {
    return null;
  }
}

const retriable = (r: { status: number; text: string }): boolean => {
  if (r.status < 500) return false;
  try {
    return (JSON.parse(r.text) as { error?: { retriable?: boolean } }).error?.retriable === true;
  } catch {
    return false;
  }
};

describe("durable streams at replication.factor 3 on the dev server", () => {
  it("the official client creates and uses a replicated stream", async () => {
    const path = `rf3/${randomTopic("client")}`;
    const handle = await DurableStream.create({ url: url(path), contentType: "application/json", headers: RF3 });
    const head = await fetch(url(path), { method: "HEAD" });
    const topic = head.headers.get("Edgelog-Topic");
    const described = (await (await fetch(`${server.baseUrl}/v1/topics/${topic}`)).json()) as { configs: Record<string, unknown> };
    expect(described.configs["replication.factor"]).toBe(3);

    const producer = new IdempotentProducer(handle, "rf3-client-producer", { autoClaim: true });
    for (let n = 0; n < 20; n++) producer.append(JSON.stringify({ n }));
    await producer.flush();
    const read = await handle.stream<{ n: number }>({ live: false });
    expect(await read.json()).toEqual(Array.from({ length: 20 }, (_, n) => ({ n })));

    // An SSE tail sees what is appended after it connected.
    const live = await handle.stream<{ n: number }>({ offset: read.offset, live: "sse" });
    const got = new Promise<number[]>((resolve, reject) => {
      const items: number[] = [];
      const timer = setTimeout(() => reject(new Error(`timed out with ${items.length} items`)), 15_000);
      const unsubscribe = live.subscribeJson<{ n: number }>(async (batch) => {
        items.push(...batch.items.map((i) => i.n));
        if (items.length >= 2) {
          clearTimeout(timer);
          unsubscribe();
          live.cancel();
          resolve(items);
        }
      });
    });
    await handle.append(JSON.stringify({ n: 20 }));
    await handle.append(JSON.stringify({ n: 21 }));
    expect(await got).toEqual([20, 21]);
    // Closing the producer closes the stream (the client's IdempotentProducer.close), on every replica.
    await producer.close();
    const after = await fetch(url(path), { method: "HEAD" });
    expect(after.headers.get("Stream-Closed")).toBe("true");
  }, 120_000);

  it("SIGKILL during appends: every acknowledged message is in the stream once, in order; the one in flight, resent after the restart, is stored once", async () => {
    const path = `rf3/${randomTopic("crash")}`;
    const created = await fetch(url(path), { method: "PUT", headers: { "content-type": "application/json", ...RF3 } });
    expect(created.status).toBe(201);
    const acked: string[] = [];
    let seq = 0;
    let stop = false;
    let duplicates = 0;
    /** Sends message `seq` until it is answered (200, or 204 for a duplicate); false when the server is gone. */
    const sendCurrent = async (untilOk: boolean): Promise<boolean> => {
      const value = `m${seq}`;
      for (;;) {
        const r = await append(path, seq, value);
        if (r === null) return false;
        if (retriable(r) && (untilOk || !stop)) {
          await new Promise((res) => setTimeout(res, 100));
          continue;
        }
        expect([200, 204], `${r.status} ${r.text}`).toContain(r.status);
        if (r.status === 204) duplicates++;
        acked.push(value);
        seq++;
        return true;
      }
    };
    const writer = (async () => {
      while (!stop) if (!(await sendCurrent(false))) return;
    })();
    const deadline = Date.now() + 120_000;
    while (acked.length < 40 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(acked.length, server.output().slice(-2000)).toBeGreaterThanOrEqual(40);
    await server.kill();
    stop = true;
    await writer;
    await server.restart();
    // The message in flight at the kill (maybe committed, maybe not), then 10 more.
    expect(await sendCurrent(true)).toBe(true);
    for (let k = 0; k < 10; k++) expect(await sendCurrent(true)).toBe(true);

    const want = Array.from({ length: seq }, (_, n) => `m${n}`);
    expect(acked).toEqual(want);
    let body = "";
    for (;;) {
      const res = await fetch(`${url(path)}?offset=-1`);
      body = await res.text();
      if (res.status === 200) break;
      expect(retriable({ status: res.status, text: body }), body).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(JSON.parse(body)).toEqual(want);
    console.log(`replicated stream crash test: ${acked.length} messages acknowledged, ${duplicates} duplicates answered to retries`);
  }, 300_000);
});
