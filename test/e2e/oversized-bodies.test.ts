/**
 * Oversized chunked bodies against a real `wrangler dev` server (issue 15): every body of
 * 8-12 MiB sent without Content-Length gets the table's JSON answer (413 REQUEST_TOO_LARGE, or
 * 404 NOT_FOUND on a path with no route), never a dropped connection or the ProxyWorker's
 * plain-text `500 Network connection lost`, and changes nothing.
 *
 * Before the gateway drained over-limit and unread bodies, 25 of 640 such requests failed
 * that way through wrangler dev, and 106 of 640 were dropped by workerd serving the Worker
 * directly (docs/PROTOCOL.md, "Limits"): answering while the client is still uploading lets
 * the runtime close the connection. This test fails on that code (checked) and passes now.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EdgelogClient } from "../../sdk/src/index.ts";
import { MAX_REQUEST_BYTES } from "../../src/protocol/limits.ts";
import { type DevServer, randomTopic, startWithClient } from "./dev-server.ts";

interface Outcome {
  status: number | null;
  contentType: string | null;
  body: string;
  /** A socket error seen before a complete response (a dropped connection). */
  error: string | null;
}

/** POSTs `size` bytes of `a` with Transfer-Encoding: chunked, in writes of `chunkBytes`. */
function sendChunked(baseUrl: string, path: string, size: number, chunkBytes: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const u = new URL(path, baseUrl);
    const out: Outcome = { status: null, contentType: null, body: "", error: null };
    let settled = false;
    const settle = () => {
      if (!settled) {
        settled = true;
        resolve(out);
      }
    };
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", headers: { "content-type": "application/json", "transfer-encoding": "chunked" } }, (res) => {
      out.status = res.statusCode ?? null;
      out.contentType = res.headers["content-type"] ?? null;
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        out.body += d;
      });
      res.on("end", settle);
      res.on("error", (e) => {
        out.error = `response: ${e.message}`;
        settle();
      });
    });
    // An EPIPE after the full response arrived is harmless; before it, it is a dropped connection.
    req.on("error", (e: NodeJS.ErrnoException) => {
      if (out.status === null) out.error = `request: ${e.code ?? e.message}`;
      setTimeout(settle, 100);
    });
    const buf = Buffer.alloc(chunkBytes, 0x61);
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        const n = Math.min(chunkBytes, size - sent);
        sent += n;
        if (!req.write(n === chunkBytes ? buf : buf.subarray(0, n))) {
          req.once("drain", pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

/** The same with fetch (undici) streaming a ReadableStream body in pieces of `chunkBytes`. */
async function fetchChunked(baseUrl: string, path: string, size: number, chunkBytes: number): Promise<Outcome> {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (sent >= size) return ctl.close();
      const n = Math.min(chunkBytes, size - sent);
      sent += n;
      ctl.enqueue(new Uint8Array(n).fill(0x61));
    },
  });
  try {
    const init = { method: "POST", body, duplex: "half", headers: { "content-type": "application/json" } };
    const res = await fetch(new URL(path, baseUrl), init as RequestInit);
    return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text(), error: null };
  } catch (e) {
    return { status: null, contentType: null, body: "", error: `fetch: ${(e as Error).message} ${String((e as { cause?: { code?: string } }).cause?.code ?? "")}` };
  }
}

let server: DevServer;
let client: EdgelogClient;
beforeAll(async () => ({ server, client } = await startWithClient()));
afterAll(() => server?.dispose());

describe("oversized chunked bodies through wrangler dev", () => {
  it("8-12 MiB without Content-Length: the JSON 413 (or 404) on every path, four at a time (200 requests), and nothing changes", async () => {
    const topic = randomTopic("big");
    await client.createTopic({ name: topic, partitions: 1 });
    const paths: [string, string, number][] = [
      ["produce", `/v1/topics/${topic}/records`, 413],
      ["create topic", "/v1/topics", 413],
      ["stream append", `/v1/stream/${randomTopic("s")}`, 413],
      ["group heartbeat", `/v1/groups/${randomTopic("g")}/heartbeat`, 413],
      ["no route", "/nope", 404],
    ];
    let seed = 0x15;
    const nextSize = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return MAX_REQUEST_BYTES + 1 + (seed % (4 * 1024 * 1024));
    };
    const failures: string[] = [];
    let answered = 0;
    const rounds = 10;
    for (let round = 0; round < rounds; round++) {
      for (const [name, path, status] of paths) {
        // Four clients at once: node:http and fetch, small and large writes.
        const outcomes = await Promise.all([
          sendChunked(server.baseUrl, path, nextSize(), 64 * 1024),
          sendChunked(server.baseUrl, path, nextSize(), 1024 * 1024 + 7),
          fetchChunked(server.baseUrl, path, nextSize(), 4096),
          fetchChunked(server.baseUrl, path, nextSize(), 1024 * 1024),
        ]);
        for (const o of outcomes) {
          const code = o.contentType?.startsWith("application/json") === true ? (JSON.parse(o.body) as { error?: { code?: string } }).error?.code : undefined;
          const want = status === 413 ? "REQUEST_TOO_LARGE" : "NOT_FOUND";
          if (o.error !== null || o.status !== status || code !== want) failures.push(`${name}: ${o.status} ${o.error ?? ""} ${o.body.slice(0, 120)}`);
          else answered++;
        }
      }
    }
    expect(failures, server.output().slice(-2000)).toEqual([]);
    expect(answered).toBe(rounds * paths.length * 4);
    // Rejected: the topic is still empty, no stream or group was created, no extra topic exists.
    const d = await client.describeTopic(topic);
    expect(d.partitionDetails.map((p) => p.highWatermark)).toEqual([0]);
    expect((await fetch(`${server.baseUrl}/v1/groups`).then((r) => r.json())) as unknown).toEqual({ groups: [] });
    expect(server.output()).not.toContain("Network connection lost");
  });
});
