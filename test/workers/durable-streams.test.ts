/**
 * Durable Streams behaviour that is Edgelog's own choice (docs/DURABLE-STREAMS.md) and that
 * the conformance suite (test/e2e/durable-streams-conformance.test.ts) does not pin down:
 * the name and offset mappings, records on both APIs, splitting large bodies, JSON text kept
 * exactly, fork logs, caching headers, and expiry by the partition's alarm.
 */
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe as suite, expect, it } from "vitest";
import { partitionObjectName, type PartitionRpc } from "../../src/partition/rpc.ts";
import type { JsonFetchResponse, TopicDescription } from "../../src/protocol/index.ts";
import { call, expectError, fetchJson, randomTopic } from "./helpers.ts";

const token = (n: number) => `${String(n).padStart(16, "0")}_0000000000000000`;
const stream = (path: string, init?: RequestInit) => call(`/v1/stream/${path}`, init);
const put = (path: string, headers: Record<string, string>, body?: BodyInit) => stream(path, { method: "PUT", headers, ...(body !== undefined ? { body } : {}) });
const post = (path: string, headers: Record<string, string>, body?: BodyInit) => stream(path, { method: "POST", headers, ...(body !== undefined ? { body } : {}) });

async function topicOf(res: Response): Promise<TopicDescription> {
  const name = res.headers.get("Edgelog-Topic");
  expect(name).not.toBeNull();
  const t = await call(`/v1/topics/${name}`);
  expect(t.status).toBe(200);
  return (await t.json()) as TopicDescription;
}

suite("durable streams: names and offsets", () => {
  it("maps the path to streams/default/{escaped} and names the topic on every answer", async () => {
    const id = randomTopic("n");
    const res = await put(`a_b/${id}`, { "content-type": "text/plain" }, "x");
    expect(res.status).toBe(201);
    expect(res.headers.get("Edgelog-Topic")).toBe(`streams/default/a_5fb_2f${id}`);
    const t = await topicOf(res);
    expect(t.partitions).toBe(1);
    expect(t.partitionDetails[0]?.logEndOffset).toBe(1);
  });

  it("serves paths too long for a topic name through a hashed topic", async () => {
    const path = `${"long/".repeat(60)}${randomTopic("h")}`;
    const res = await put(path, { "content-type": "text/plain" }, "deep");
    expect(res.status).toBe(201);
    expect(res.headers.get("Edgelog-Topic")).toMatch(/^streams\/default\/_h[0-9a-f]{64}$/);
    expect(await (await stream(path)).text()).toBe("deep");
  });

  it("answers 400 for a token beyond the tail and for __ds paths 404", async () => {
    const id = randomTopic("o");
    await put(id, { "content-type": "text/plain" }, "x");
    await expectError(await stream(`${id}?offset=${token(2)}`), "INVALID_OFFSET", 400);
    expect((await stream(`${id}?offset=${token(1)}`)).status).toBe(200);
    await expectError(await put("__ds/subscriptions/x", { "content-type": "text/plain" }), "NOT_FOUND", 404);
  });
});

suite("durable streams: records", () => {
  it("splits a body larger than max.message.bytes into several records, read back byte for byte", async () => {
    const id = randomTopic("big");
    const created = await put(id, { "content-type": "application/octet-stream" });
    const body = new Uint8Array(2_500_000);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) % 251;
    const r = await post(id, { "content-type": "application/octet-stream" }, body);
    expect(r.status).toBe(204);
    expect(r.headers.get("Stream-Next-Offset")).toBe(token(3));
    const read = new Uint8Array(await (await stream(id)).arrayBuffer());
    expect(read.length).toBe(body.length);
    expect(read.findIndex((b, i) => b !== body[i])).toBe(-1); // toEqual on 2.5 M elements takes seconds
    const t = await topicOf(created);
    const native = await fetchJson(t.name, 0, "offset=0&maxRecords=10&maxBytes=8388608&encoding=base64");
    expect(native.records.map((rec) => (rec.value as string).length)).toEqual([1396652, 1396652, 540032]);
    expect(native.records.map((rec) => rec.offset)).toEqual([0, 1, 2]);
  });

  it("keeps JSON message text exactly, minus whitespace", async () => {
    const id = randomTopic("json");
    const created = await put(id, { "content-type": "application/json" }, `[ {"big": 12345678901234567890, "f": 1.50, "s": "a  b"} , [ 1, 2 ] ]`);
    expect(await (await stream(id)).text()).toBe(`[{"big":12345678901234567890,"f":1.50,"s":"a  b"},[1,2]]`);
    const t = await topicOf(created);
    const native = await fetchJson(t.name, 0, "offset=0");
    expect(native.records.map((r) => r.value)).toEqual([`{"big":12345678901234567890,"f":1.50,"s":"a  b"}`, "[1,2]"]);
  });

  it("starts a fork's own log at its fork offset; below it the native API sees retention", async () => {
    const src = randomTopic("src");
    await put(src, { "content-type": "text/plain" }, "ab");
    await post(src, { "content-type": "text/plain" }, "cd");
    const fork = `${src}-fork`;
    const created = await put(fork, { "Stream-Forked-From": `/v1/stream/${src}`, "Stream-Fork-Offset": token(1), "Stream-Fork-Sub-Offset": "1" });
    expect(created.status).toBe(201);
    expect(created.headers.get("content-type")).toBe("text/plain");
    // Inherits record 0 ("ab") from the source, then "c" materialised as the fork's record 1.
    expect(created.headers.get("Stream-Next-Offset")).toBe(token(2));
    expect(await (await stream(fork)).text()).toBe("abc");
    const t = await topicOf(created);
    expect(t.partitionDetails[0]).toMatchObject({ logStartOffset: 1, logEndOffset: 2 });
    await expectError(await call(`/v1/topics/${t.name}/partitions/0/records?offset=0`), "OFFSET_OUT_OF_RANGE", 416);
    expect((await fetchJson(t.name, 0, "offset=1")).records.map((r) => r.value)).toEqual(["c"]);
  });
});

suite("durable streams: reads across the tail cache and storage", () => {
  it("returns the same bytes from every offset whichever API appended them", async () => {
    const id = randomTopic("mixed");
    const created = await put(id, { "content-type": "text/plain" });
    const t = await topicOf(created);
    const native = (value: string) =>
      call(`/v1/topics/${t.name}/partitions/0/records`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ records: [{ value }] }) });
    const parts: string[] = [];
    for (let i = 0; i < 12; i++) {
      const v = `<${i}>`;
      // Stream appends fill the tail cache; native ones land only in storage.
      const r = i % 3 === 2 ? await native(v) : await post(id, { "content-type": "text/plain" }, v);
      expect(r.status).toBeLessThan(300);
      await r.arrayBuffer();
      parts.push(v);
    }
    for (let from = 0; from <= parts.length; from++) {
      const r = await stream(`${id}?offset=${token(from)}`);
      expect(await r.text()).toBe(parts.slice(from).join(""));
      expect(r.headers.get("Stream-Next-Offset")).toBe(token(parts.length));
    }
  });
});

suite("durable streams: large catch-up reads (streamed answers)", () => {
  const MiB = 1024 * 1024;
  const pattern = (n: number, seed: number) => {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 17) % 251;
    return b;
  };
  const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.findIndex((x, i) => x !== b[i]) === -1;

  /** Reads from `offset` following Stream-Next-Offset to the tail; returns the bytes and the answers. */
  async function readToTail(path: string, offset: string): Promise<{ bytes: Uint8Array; answers: Response[] }> {
    const parts: Uint8Array[] = [];
    const answers: Response[] = [];
    for (;;) {
      const r = await stream(`${path}?offset=${offset}`);
      expect(r.status).toBe(200);
      const b = new Uint8Array(await r.arrayBuffer());
      parts.push(b);
      answers.push(r);
      offset = r.headers.get("Stream-Next-Offset") as string;
      if (r.headers.get("Stream-Up-To-Date") === "true") break;
    }
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let pos = 0;
    for (const p of parts) {
      out.set(p, pos);
      pos += p.length;
    }
    return { bytes: out, answers };
  }

  it("reads a byte stream larger than the tail cache, from storage then the cache, in one answer", async () => {
    const id = randomTopic("large");
    await put(id, { "content-type": "application/octet-stream" });
    const appends = Array.from({ length: 40 }, (_, i) => pattern(256 * 1024 + i, i)); // ~10 MiB: the first ~2 MiB only in storage
    for (const a of appends) expect((await post(id, { "content-type": "application/octet-stream" }, a)).status).toBe(204);
    const all = new Uint8Array(appends.reduce((n, a) => n + a.length, 0));
    let pos = 0;
    const starts: number[] = [];
    for (const a of appends) {
      starts.push(pos);
      all.set(a, pos);
      pos += a.length;
    }
    const { bytes, answers } = await readToTail(id, "-1");
    expect(answers.length).toBe(1);
    expect(same(bytes, all)).toBe(true);
    // From inside storage, at the seam, and inside the cache.
    for (const from of [3, 7, 8, 9, 30, 39]) {
      const r = await readToTail(id, token(from));
      expect(same(r.bytes, all.subarray(starts[from]))).toBe(true);
    }
  });

  it("follows Stream-Next-Offset over several answers when the backlog exceeds one", async () => {
    const id = randomTopic("backlog");
    await put(id, { "content-type": "application/octet-stream" });
    const appends = Array.from({ length: 40 }, (_, i) => pattern(MiB - 100, i)); // 40 MiB: 32 MiB per answer at most
    for (const a of appends) expect((await post(id, { "content-type": "application/octet-stream" }, a)).status).toBe(204);
    const { bytes, answers } = await readToTail(id, "-1");
    expect(answers.length).toBe(2);
    expect(bytes.length).toBe(40 * (MiB - 100));
    for (let i = 0; i < appends.length; i++) expect(same(bytes.subarray(i * (MiB - 100), (i + 1) * (MiB - 100)), appends[i] as Uint8Array)).toBe(true);
  });

  it("frames a large JSON stream as one array across storage and the cache", async () => {
    const id = randomTopic("bigjson");
    await put(id, { "content-type": "application/json" });
    const messages: unknown[] = [];
    for (let batch = 0; batch < 25; batch++) {
      const msgs = Array.from({ length: 40 }, (_, i) => ({ n: batch * 40 + i, pad: "x".repeat(9000 + i) }));
      messages.push(...msgs);
      expect((await post(id, { "content-type": "application/json" }, JSON.stringify(msgs))).status).toBe(204);
    }
    const whole = await readToTail(id, "-1");
    expect(whole.answers.length).toBe(1);
    expect(JSON.parse(new TextDecoder().decode(whole.bytes))).toEqual(messages);
    for (const from of [1, 150, 999]) {
      const r = await stream(`${id}?offset=${token(from)}`);
      expect(JSON.parse(await r.text())).toEqual(messages.slice(from));
    }
  });

  it("answers 304 to a revalidation of a streamed answer", async () => {
    const id = randomTopic("etag-big");
    await put(id, { "content-type": "application/octet-stream" }, pattern(MiB, 1));
    const first = await stream(`${id}?offset=-1`);
    expect((await first.arrayBuffer()).byteLength).toBe(MiB);
    const again = await stream(`${id}?offset=-1`, { headers: { "If-None-Match": first.headers.get("ETag") as string } });
    expect(again.status).toBe(304);
  });

  it("reads a fork over its large source's range and its own records", async () => {
    const src = randomTopic("bigsrc");
    await put(src, { "content-type": "application/octet-stream" });
    const a = pattern(3 * MiB, 2);
    expect((await post(src, { "content-type": "application/octet-stream" }, a)).status).toBe(204);
    const fork = `${src}-fork`;
    expect((await put(fork, { "Stream-Forked-From": `/v1/stream/${src}` })).status).toBe(201);
    const b = pattern(MiB, 3);
    expect((await post(fork, { "content-type": "application/octet-stream" }, b)).status).toBe(204);
    const { bytes } = await readToTail(fork, "-1");
    expect(bytes.length).toBe(a.length + b.length);
    expect(same(bytes.subarray(0, a.length), a)).toBe(true);
    expect(same(bytes.subarray(a.length), b)).toBe(true);
  });
});

suite("durable streams: refilling the tail cache from storage", () => {
  it("serves records appended natively (storage only) the same on every read, bytes and JSON", async () => {
    for (const [ct, vals, expected] of [
      ["text/plain", ["a", null, "bc", "d"], ["a", "", "bc", "d"]],
      ["application/json", ["1", null, `{"x":2}`, "[3]"], ["1", "null", `{"x":2}`, "[3]"]],
    ] as const) {
      const id = randomTopic("refill");
      const t = await topicOf(await put(id, { "content-type": ct }));
      const r = await call(`/v1/topics/${t.name}/partitions/0/records`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ records: vals.map((value) => ({ value })) }),
      });
      expect(r.status).toBeLessThan(300);
      await r.arrayBuffer();
      const frame = (xs: readonly string[]) => (ct === "application/json" ? `[${xs.join(",")}]` : xs.join(""));
      // The first read takes them from storage and refills the (empty) cache after the null
      // value; the next ones are served from the cache from there on.
      for (let round = 0; round < 3; round++) {
        for (let from = 0; from <= vals.length; from++) {
          const res = await stream(`${id}?offset=${token(from)}`);
          expect(await res.text()).toBe(frame(expected.slice(from)));
        }
      }
      // A stream append extends what was refilled.
      expect((await post(id, { "content-type": ct }, ct === "application/json" ? "5" : "e")).status).toBe(204);
      expect(await (await stream(`${id}?offset=${token(2)}`)).text()).toBe(frame([...expected.slice(2), ct === "application/json" ? "5" : "e"]));
    }
  });
  it("refills it from a large streamed read of native records, then serves the same bytes", async () => {
    const id = randomTopic("refill-big");
    const t = await topicOf(await put(id, { "content-type": "text/plain" }));
    const vals = Array.from({ length: 6 }, (_, i) => String.fromCharCode(97 + i).repeat(200_000 + i));
    for (const value of vals) {
      const r = await call(`/v1/topics/${t.name}/partitions/0/records`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ records: [{ value }] }) });
      expect(r.status).toBeLessThan(300);
      await r.arrayBuffer();
    }
    for (let round = 0; round < 3; round++) {
      expect(await (await stream(`${id}?offset=-1`)).text()).toBe(vals.join(""));
      expect(await (await stream(`${id}?offset=${token(4)}`)).text()).toBe(vals.slice(4).join(""));
    }
    expect((await post(id, { "content-type": "text/plain" }, "!")).status).toBe(204);
    expect(await (await stream(`${id}?offset=${token(1)}`)).text()).toBe(`${vals.slice(1).join("")}!`);
  });
});

suite("durable streams: caching headers", () => {
  it("caches data chunks, never the tail or HEAD, and changes the ETag on close", async () => {
    const id = randomTopic("etag");
    await put(id, { "content-type": "text/plain" }, "data");
    const first = await stream(id);
    await first.arrayBuffer();
    expect(first.headers.get("cache-control")).toBe("public, max-age=60, stale-while-revalidate=300");
    const etag = first.headers.get("etag") as string;
    expect(etag).toMatch(/^"[0-9a-f-]+:0000000000000000_0000000000000000:0000000000000001_0000000000000000"$/);
    const again = await stream(id, { headers: { "If-None-Match": etag } });
    expect(again.status).toBe(304);
    const tail = await stream(`${id}?offset=${token(1)}`);
    await tail.arrayBuffer();
    expect(tail.headers.get("cache-control")).toBe("no-store");
    const head = await stream(id, { method: "HEAD" });
    expect(head.headers.get("cache-control")).toBe("no-store");

    await post(id, { "Stream-Closed": "true" });
    const closed = await stream(id, { headers: { "If-None-Match": etag } });
    expect(closed.status).toBe(200);
    expect(closed.headers.get("etag")).toBe(`${etag.slice(0, -1)}:c"`);
    expect(closed.headers.get("Stream-Closed")).toBe("true");
  });

  it("caps max-age at the stream's remaining lifetime", async () => {
    const id = randomTopic("ttl");
    await put(id, { "content-type": "text/plain", "Stream-TTL": "30" }, "x");
    const r = await stream(id);
    await r.arrayBuffer();
    expect(r.headers.get("cache-control")).toBe("public, max-age=30, stale-while-revalidate=300");
  });
});

suite("durable streams: expiry", () => {
  it("expires an idle stream from the partition's alarm, deleting its topic", async () => {
    const id = randomTopic("idle");
    const created = await put(id, { "content-type": "text/plain", "Stream-TTL": "1" }, "x");
    const t = await topicOf(created);
    // Only the metadata store is asked from here on: no stream request could expire it lazily.
    const deadline = Date.now() + 5000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      const res = await call(`/v1/topics/${t.name}`);
      await res.arrayBuffer();
      status = res.status;
    }
    expect(status).toBe(404);
    await expectError(await stream(id), "STREAM_NOT_FOUND", 404);
  });

  it("a stream whose partition was destroyed but whose topic delete never happened (crash between the two) can be created again", async () => {
    const path = randomTopic("stranded");
    const c = await put(path, { "content-type": "text/plain" }, "old");
    expect(c.status).toBe(201);
    const topic = c.headers.get("Edgelog-Topic") as string;
    const before = (await (await call(`/v1/topics/${topic}`)).json()) as TopicDescription;
    // What an expiry or DELETE leaves when it stops after the partition's own destroy.
    const partition = env.PARTITION.getByName(partitionObjectName(before.topicId, 0)) as unknown as PartitionRpc;
    expect(await partition.destroy()).toEqual({ ok: true });
    expect((await stream(path)).status).toBe(404);
    const again = await put(path, { "content-type": "text/plain" }, "new");
    expect(again.status, await again.text()).toBe(201);
    expect(await (await stream(path)).text()).toBe("new");
    const after = (await (await call(`/v1/topics/${topic}`)).json()) as TopicDescription;
    expect(after.topicId).not.toBe(before.topicId);
  });

  it("re-arms the alarm when reads moved the deadline", async () => {
    const id = randomTopic("busy");
    const created = await put(id, { "content-type": "text/plain", "Stream-TTL": "2" }, "x");
    const t = await topicOf(created);
    await new Promise((r) => setTimeout(r, 1500));
    await (await stream(id)).arrayBuffer(); // a read: the deadline moves 2 s on
    const stub = env.PARTITION.getByName(partitionObjectName(t.topicId, 0));
    await new Promise((r) => setTimeout(r, 600)); // past the first deadline: the alarm fired and re-armed
    expect((await stream(id, { method: "HEAD" })).status).toBe(200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await stream(id, { method: "HEAD" })).status).toBe(200);
  });

  it("keeps an expired source with forks as gone (410) until its last fork is deleted", async () => {
    const src = randomTopic("src");
    await put(src, { "content-type": "text/plain", "Stream-TTL": "1" }, "kept");
    const fork = `${src}-fork`;
    expect((await put(fork, { "Stream-Forked-From": `/v1/stream/${src}`, "Stream-TTL": "3600" })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await stream(src, { method: "HEAD" })).status).toBe(410);
    expect(await (await stream(fork)).text()).toBe("kept");
    expect((await stream(fork, { method: "DELETE" })).status).toBe(204);
    expect((await stream(src, { method: "HEAD" })).status).toBe(404);
  });
});

suite("durable streams: native producers", () => {
  it("are refused while the stream is closed", async () => {
    const id = randomTopic("closed");
    const created = await put(id, { "content-type": "text/plain", "Stream-Closed": "true" });
    const t = await topicOf(created);
    const res = await call(`/v1/topics/${t.name}/partitions/0/records`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ records: [{ value: "late" }] }),
    });
    await expectError(res, "STREAM_CLOSED", 409);
    const f = (await (await call(`/v1/topics/${t.name}/partitions/0/records?offset=0`)).json()) as JsonFetchResponse;
    expect(f.records).toEqual([]);
  });
});
