/**
 * Edgelog as a Durable Streams server for the official client (@durable-streams/client):
 * create, append, read, tail, resume; durability across a dev-server restart; and the
 * native <-> stream mapping of docs/DURABLE-STREAMS.md, both ways.
 */
import { DurableStream, IdempotentProducer, type JsonBatch } from "@durable-streams/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomTopic, startDevServer, type DevServer } from "./dev-server.ts";

let server: DevServer;

beforeAll(async () => {
  server = await startDevServer({ vars: { STREAMS_LONG_POLL_TIMEOUT_MS: "2000" } });
});

afterAll(async () => {
  await server?.dispose();
});

const url = (path: string) => `${server.baseUrl}/v1/stream/${path}`;
const token = (offset: number) => `${String(offset).padStart(16, "0")}_0000000000000000`;

/** Collects JSON batches from a live subscription until `n` items arrived. */
function collectJson<T>(res: Awaited<ReturnType<DurableStream["stream"]>>, n: number): Promise<{ items: T[]; batches: JsonBatch<T>[] }> {
  const items: T[] = [];
  const batches: JsonBatch<T>[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${items.length}/${n} items`)), 15_000);
    const unsubscribe = res.subscribeJson<T>(async (batch) => {
      batches.push(batch);
      items.push(...batch.items);
      if (items.length >= n) {
        clearTimeout(timer);
        unsubscribe();
        res.cancel();
        resolve({ items, batches });
      }
    });
  });
}

describe("the official client against Edgelog", () => {
  it("creates, appends, reads, tails over SSE and resumes a JSON stream", async () => {
    const path = `client/${randomTopic("json")}`;
    const handle = await DurableStream.create({ url: url(path), contentType: "application/json" });
    await handle.append(JSON.stringify({ n: 1 }));
    await handle.append(JSON.stringify({ n: 2 }));

    // Catch-up read.
    const first = await handle.stream<{ n: number }>({ live: false });
    expect(await first.json()).toEqual([{ n: 1 }, { n: 2 }]);
    const saved = first.offset;
    expect(saved).toBe(token(2));

    // Tail: an SSE subscription from the saved offset sees appends made after it connected.
    const live = await handle.stream<{ n: number }>({ offset: saved, live: "sse" });
    const tail = collectJson<{ n: number }>(live, 3);
    const producer = new IdempotentProducer(handle, "client-test-producer", { autoClaim: true });
    producer.append(JSON.stringify({ n: 3 }));
    producer.append(JSON.stringify({ n: 4 }));
    await producer.flush();
    await handle.append(JSON.stringify({ n: 5 }));
    const { items, batches } = await tail;
    expect(items).toEqual([{ n: 3 }, { n: 4 }, { n: 5 }]);
    expect(batches.at(-1)?.offset).toBe(token(5));
    await producer.close();

    // Resume from the saved offset: exactly what came after it.
    const resumed = await handle.stream<{ n: number }>({ offset: saved, live: false });
    expect(await resumed.json()).toEqual([{ n: 3 }, { n: 4 }, { n: 5 }]);
    expect(resumed.upToDate).toBe(true);
  });

  it("tails a text stream with long-poll and sees the close as EOF", async () => {
    const path = `client/${randomTopic("text")}`;
    const handle = await DurableStream.create({ url: url(path), contentType: "text/plain" });
    await handle.append("a");
    const live = await handle.stream({ live: "long-poll" });
    const chunks: string[] = [];
    const ended = new Promise<void>((resolve) => {
      live.subscribeText(async (chunk) => {
        if (chunk.text !== "") chunks.push(chunk.text);
        if (chunk.streamClosed) resolve();
      });
    });
    await new Promise((r) => setTimeout(r, 300));
    await handle.append("b");
    await handle.close({ body: "c" });
    await ended;
    expect(chunks.join("")).toBe("abc");
    expect(live.streamClosed).toBe(true);
    const head = await handle.head();
    expect(head.exists && head.streamClosed).toBe(true);
    expect(head.exists && head.offset).toBe(token(3));
  });

  it("keeps streams, their closure and producer state across a dev-server restart", async () => {
    const path = `client/${randomTopic("durable")}`;
    const put = await fetch(url(path), { method: "PUT", headers: { "content-type": "text/plain", "Stream-TTL": "3600" }, body: "before " });
    expect(put.status).toBe(201);
    const producer = { "content-type": "text/plain", "Producer-Id": "p1", "Producer-Epoch": "3", "Producer-Seq": "0" };
    expect((await fetch(url(path), { method: "POST", headers: producer, body: "restart" })).status).toBe(200);
    const closedPath = `${path}-closed`;
    expect((await fetch(url(closedPath), { method: "PUT", headers: { "content-type": "text/plain", "Stream-Closed": "true" }, body: "final" })).status).toBe(201);

    await server.restart();

    const handle = new DurableStream({ url: url(path) });
    const res = await handle.stream({ live: false });
    expect(await res.text()).toBe("before restart");
    expect(res.offset).toBe(token(2));
    const head = await fetch(url(path), { method: "HEAD" });
    expect(head.headers.get("Stream-TTL")).toBe("3600");
    // The producer's state survived: its retry is a duplicate, the next sequence is accepted.
    expect((await fetch(url(path), { method: "POST", headers: producer, body: "restart" })).status).toBe(204);
    expect((await fetch(url(path), { method: "POST", headers: { ...producer, "Producer-Seq": "1" }, body: "!" })).status).toBe(200);
    const after = await fetch(url(path));
    expect(await after.text()).toBe("before restart!");

    const closed = await fetch(url(closedPath));
    expect(await closed.text()).toBe("final");
    expect(closed.headers.get("Stream-Closed")).toBe("true");
    const refused = await fetch(url(closedPath), { method: "POST", headers: { "content-type": "text/plain" }, body: "more" });
    expect(refused.status).toBe(409);
  });
});

describe("one log, two APIs (docs/DURABLE-STREAMS.md)", () => {
  const native = (topic: string, rest: string) => `${server.baseUrl}/v1/topics/${topic}${rest}`;

  it("reads native records through the stream API and stream appends through the native API (bytes)", async () => {
    const name = randomTopic("interop");
    const path = `interop/${name}`;
    const topic = `streams/default/interop_2f${name.replaceAll("_", "_5f")}`;
    const put = await fetch(url(path), { method: "PUT", headers: { "content-type": "text/plain" }, body: "hello " });
    expect(put.status).toBe(201);
    expect(put.headers.get("Edgelog-Topic")).toBe(topic);

    const produced = await fetch(native(topic, "/partitions/0/records"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ records: [{ value: "native " }, { value: "world" }] }),
    });
    expect(produced.status).toBe(200);
    expect(((await produced.json()) as { records: { offset: number }[] }).records.map((r) => r.offset)).toEqual([1, 2]);

    const read = await fetch(url(path));
    expect(await read.text()).toBe("hello native world");
    expect(read.headers.get("Stream-Next-Offset")).toBe(token(3));

    // Stream offset token N and native offset N name the same record.
    const fromOne = await fetch(`${url(path)}?offset=${token(1)}`);
    expect(await fromOne.text()).toBe("native world");

    await fetch(url(path), { method: "POST", headers: { "content-type": "text/plain" }, body: "!" });
    const fetched = await fetch(native(topic, "/partitions/0/records?offset=0"));
    const body = (await fetched.json()) as { records: { offset: number; value: string; key: unknown }[]; highWatermark: number };
    expect(body.records.map((r) => [r.offset, r.value, r.key])).toEqual([
      [0, "hello ", null],
      [1, "native ", null],
      [2, "world", null],
      [3, "!", null],
    ]);
    expect(body.highWatermark).toBe(4);

    // A closed stream refuses native producers too.
    expect((await fetch(url(path), { method: "POST", headers: { "Stream-Closed": "true" } })).status).toBe(204);
    const refused = await fetch(native(topic, "/partitions/0/records"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ records: [{ value: "late" }] }),
    });
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("STREAM_CLOSED");
  });

  it("maps one JSON message to one record, both ways", async () => {
    const name = randomTopic("interop-json");
    const topic = `streams/default/${name}`;
    expect((await fetch(url(name), { method: "PUT", headers: { "content-type": "application/json" }, body: `[{"a":1},{"b":[2, 3]}]` })).status).toBe(201);
    const produced = await fetch(native(topic, "/partitions/0/records"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ valueEncoding: "json", records: [{ value: { c: 4 } }, { value: null }] }),
    });
    expect(produced.status).toBe(200);

    const read = await fetch(url(name));
    expect(await read.json()).toEqual([{ a: 1 }, { b: [2, 3] }, { c: 4 }, null]);

    const fetched = await fetch(native(topic, "/partitions/0/records?offset=0&encoding=json"));
    const body = (await fetched.json()) as { records: { value: unknown }[] };
    expect(body.records.map((r) => r.value)).toEqual([{ a: 1 }, { b: [2, 3] }, { c: 4 }, null]);
  });

  it("shows every stream as a one-partition topic", async () => {
    const name = randomTopic("listed");
    await fetch(url(name), { method: "PUT", headers: { "content-type": "text/plain" }, body: "x" });
    const described = await fetch(native(`streams/default/${name}`, ""));
    expect(described.status).toBe(200);
    const t = (await described.json()) as { partitions: number; partitionDetails: { logEndOffset: number }[] };
    expect(t.partitions).toBe(1);
    expect(t.partitionDetails[0]?.logEndOffset).toBe(1);
    // Deleting the stream deletes the topic.
    expect((await fetch(url(name), { method: "DELETE" })).status).toBe(204);
    expect((await fetch(native(`streams/default/${name}`, ""))).status).toBe(404);
  });
});
