import { describe, expect, it } from "vitest";
import { EdgelogError } from "../../src/protocol/index.ts";
import { EdgelogClient } from "../../sdk/src/client.ts";
import { EdgelogClientError, errorFromBody } from "../../sdk/src/errors.ts";
import { utf8 } from "./sdk-fake-server.ts";

const body = (v: unknown): Uint8Array => utf8(JSON.stringify(v));

describe("errorFromBody: the code comes from the JSON body only", () => {
  it("takes code, message and details from the body and retriable from the shared table", () => {
    // The body claims retriable: true; the table says OFFSET_OUT_OF_RANGE is not.
    const e = errorFromBody(416, body({ error: { code: "OFFSET_OUT_OF_RANGE", message: "offset 9 > 4", retriable: true, details: { logStartOffset: 0, logEndOffset: 4 } } }));
    expect(e).toBeInstanceOf(EdgelogClientError);
    expect(e).toBeInstanceOf(EdgelogError);
    expect(e.name).toBe("EdgelogClientError");
    expect([e.code, e.message, e.httpStatus, e.retriable]).toEqual(["OFFSET_OUT_OF_RANGE", "offset 9 > 4", 416, false]);
    expect(e.details).toEqual({ logStartOffset: 0, logEndOffset: 4 });
  });

  it("never guesses from the status: a 400 carrying UNAVAILABLE is UNAVAILABLE (retriable), a 503 carrying RECORD_TOO_LARGE is not retriable", () => {
    const a = errorFromBody(400, body({ error: { code: "UNAVAILABLE", message: "m", retriable: false } }));
    expect([a.code, a.httpStatus, a.retriable]).toEqual(["UNAVAILABLE", 400, true]);
    const b = errorFromBody(503, body({ error: { code: "RECORD_TOO_LARGE", message: "m", retriable: true } }));
    expect([b.code, b.httpStatus, b.retriable]).toEqual(["RECORD_TOO_LARGE", 503, false]);
  });

  it("uses the table's message when the body has none", () => {
    const e = errorFromBody(409, body({ error: { code: "TOPIC_ALREADY_EXISTS" } }));
    expect(e.message).toBe("A topic with this name already exists.");
    expect(e.details).toBeUndefined();
  });

  it("a non-JSON body is INTERNAL with the status and an excerpt in details", () => {
    const e = errorFromBody(502, utf8("<html>Bad gateway</html>"));
    expect([e.code, e.httpStatus, e.retriable]).toEqual(["INTERNAL", 502, true]);
    expect(e.details).toEqual({ httpStatus: 502, body: "<html>Bad gateway</html>" });
  });

  it("an empty body is INTERNAL with only the status", () => {
    const e = errorFromBody(404, new Uint8Array(0));
    expect([e.code, e.httpStatus]).toEqual(["INTERNAL", 404]);
    expect(e.details).toEqual({ httpStatus: 404 });
  });

  it("a code missing from the table (a newer server) is INTERNAL with serverCode", () => {
    const e = errorFromBody(409, body({ error: { code: "SOMETHING_NEW", message: "new" } }));
    expect(e.code).toBe("INTERNAL");
    expect(e.details).toEqual({ httpStatus: 409, serverCode: "SOMETHING_NEW", serverMessage: "new" });
  });

  it("JSON without an error object is INTERNAL", () => {
    const e = errorFromBody(404, body({ code: "NOT_FOUND" }));
    expect(e.code).toBe("INTERNAL");
    expect(e.details).toEqual({ httpStatus: 404, body: '{"code":"NOT_FOUND"}' });
  });
});

describe("client transport errors", () => {
  it("a network failure is UNAVAILABLE (retriable, httpStatus 0) with the cause kept", async () => {
    const cause = new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:1") });
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: async () => Promise.reject(cause) });
    const e = await client.listTopics().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EdgelogClientError);
    const ce = e as EdgelogClientError;
    expect([ce.code, ce.httpStatus, ce.retriable]).toEqual(["UNAVAILABLE", 0, true]);
    expect(ce.message).toBe("Request failed before an answer was received: fetch failed (connect ECONNREFUSED 127.0.0.1:1)");
    expect(ce.cause).toBe(cause);
  });

  it("in a browser page, a network failure's message says CORS may be the cause", async () => {
    const cause = new TypeError("Failed to fetch");
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: async () => Promise.reject(cause) });
    Object.assign(globalThis, { document: {} });
    try {
      const e = (await client.listTopics().catch((x: unknown) => x)) as EdgelogClientError;
      expect([e.code, e.message]).toEqual([
        "UNAVAILABLE",
        "Request failed before an answer was received: Failed to fetch. In a browser this is also how a cross-origin request refused by CORS fails (the console says which): the gateway must allow this page's origin and every request header sent (docs/PROTOCOL.md, CORS).",
      ]);
    } finally {
      delete (globalThis as { document?: unknown }).document;
    }
  });

  it("no answer within requestTimeoutMs is REQUEST_TIMED_OUT (retriable)", async () => {
    const hang: typeof fetch = (_input, init) => new Promise((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: hang, requestTimeoutMs: 20 });
    const e = (await client.describeTopic("t").catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.httpStatus, e.retriable]).toEqual(["REQUEST_TIMED_OUT", 0, true]);
  });

  it("a caller's abort rejects with the abort reason, not an EdgelogClientError", async () => {
    const hang: typeof fetch = (_input, init) => new Promise((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal?.reason)));
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: hang });
    const ac = new AbortController();
    const reason = new Error("stop");
    const p = client.describeTopic("t", { signal: ac.signal }).catch((x: unknown) => x);
    ac.abort(reason);
    expect(await p).toBe(reason);
  });

  it("a 2xx answer that is not JSON is INTERNAL (protocol violation)", async () => {
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: async () => new Response("nope", { status: 200 }) });
    const e = (await client.listTopics().catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.httpStatus]).toEqual(["INTERNAL", 200]);
  });

  it("an error answer becomes the body's code with the received status", async () => {
    const client = new EdgelogClient({
      baseUrl: "http://x",
      fetch: async () => new Response(JSON.stringify({ error: { code: "UNKNOWN_TOPIC_OR_PARTITION", message: "no topic t", retriable: false } }), { status: 404 }),
    });
    const e = (await client.describeTopic("t").catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.message, e.httpStatus, e.retriable]).toEqual(["UNKNOWN_TOPIC_OR_PARTITION", "no topic t", 404, false]);
  });
});
