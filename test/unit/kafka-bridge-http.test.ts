/**
 * The bridge's append fetch (sdk/src/kafka-bridge/http.ts) against a local node:http server:
 * a Uint8Array body arrives byte-exact with its headers, the answer (status, headers, body)
 * comes back as a Response, error answers keep their status and body for the SDK client's
 * error mapping, an abort rejects with the signal's reason, a refused connection rejects like
 * Node's fetch (TypeError with the socket error as cause), and other requests go to fetch.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { EdgelogClientError } from "../../sdk/src/errors.ts";
import { bridgeFetch } from "../../sdk/src/kafka-bridge/http.ts";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

let server: Server;
let base: string;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) });
      if (req.url!.startsWith("/hang")) return; // never answers
      if (req.url!.startsWith("/error")) {
        res.writeHead(409, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "OUT_OF_ORDER_SEQUENCE_NUMBER", message: "expected sequence 5" } }));
        return;
      }
      if (req.url!.startsWith("/empty")) {
        res.writeHead(204);
        res.end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json", "x-echo-bytes": String(Buffer.concat(chunks).length) });
      res.end(JSON.stringify({ topic: "t", partition: 0, baseOffset: 7, lastOffset: 9, logAppendTime: null, logStartOffset: 0 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("bridgeFetch", () => {
  it("sends a Uint8Array body byte-exact (a view into a larger buffer) with its headers and hands the answer back", async () => {
    const backing = new Uint8Array(300_000).map((_, i) => i % 251);
    const body = backing.subarray(1000, 251_000);
    const res = await bridgeFetch(`${base}/v1/topics/t/partitions/0/records?acks=all`, {
      method: "POST",
      headers: { "content-type": "application/vnd.edgelog.batch", authorization: "Bearer abc" },
      body,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-echo-bytes")).toBe("250000");
    expect(await res.json()).toMatchObject({ baseOffset: 7, lastOffset: 9 });
    const s = seen.at(-1)!;
    expect(s.method).toBe("POST");
    expect(s.url).toBe("/v1/topics/t/partitions/0/records?acks=all");
    expect(s.headers["content-type"]).toBe("application/vnd.edgelog.batch");
    expect(s.headers["authorization"]).toBe("Bearer abc");
    expect(s.headers["content-length"]).toBe("250000");
    expect(Buffer.compare(s.body, Buffer.from(body))).toBe(0);
  });

  it("keeps an error answer's status and body, so the SDK client maps it to the Edgelog error", async () => {
    const client = new EdgelogClient({ baseUrl: `${base}/error`, fetch: bridgeFetch });
    const err = await client.produceBatchSummary("t", 0, new Uint8Array(10)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EdgelogClientError);
    expect((err as EdgelogClientError).code).toBe("OUT_OF_ORDER_SEQUENCE_NUMBER");
  });

  it("answers a null-body status without a body", async () => {
    const res = await bridgeFetch(`${base}/empty`, { method: "POST", body: new Uint8Array(1) });
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it("rejects with the signal's reason when aborted, before or during the exchange", async () => {
    const before = new AbortController();
    before.abort(new Error("gone"));
    await expect(bridgeFetch(`${base}/hang`, { method: "POST", body: new Uint8Array(1), signal: before.signal })).rejects.toThrow("gone");
    const during = new AbortController();
    const pending = bridgeFetch(`${base}/hang`, { method: "POST", body: new Uint8Array(1), signal: during.signal });
    setTimeout(() => during.abort(new Error("stopped")), 20);
    await expect(pending).rejects.toThrow("stopped");
  });

  it("rejects a refused connection as Node's fetch does, which the SDK client reports as UNAVAILABLE", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const err = await bridgeFetch(`http://127.0.0.1:${port}/x`, { method: "POST", body: new Uint8Array(1) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect(((err as TypeError).cause as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
    const client = new EdgelogClient({ baseUrl: `http://127.0.0.1:${port}`, fetch: bridgeFetch });
    await expect(client.produceBatchSummary("t", 0, new Uint8Array(1))).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });

  it("hands requests without a Uint8Array body to fetch", async () => {
    const n = seen.length;
    const res = await bridgeFetch(`${base}/json`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ a: 1 }) });
    expect(res.status).toBe(200);
    expect(seen[n]!.body.toString()).toBe('{"a":1}');
    const get = await bridgeFetch(`${base}/get`);
    expect(get.status).toBe(200);
    expect(seen[n + 1]!.method).toBe("GET");
  });
});
