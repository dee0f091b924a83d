import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cacheControl, CURSOR_EPOCH_MS, CURSOR_INTERVAL_MS, ifNoneMatchHits, responseCursor, streamEtag } from "../../src/streams/http-cache.ts";
import { longPollNoContentHeaders, readHeaders, type ReadOutcome } from "../../src/streams/read.ts";
import { sseControlEvent, sseDataEvent } from "../../src/streams/sse.ts";

const enc = new TextEncoder();

describe("responseCursor", () => {
  const now = CURSOR_EPOCH_MS + 1000 * CURSOR_INTERVAL_MS + 5;

  it("is the current 20 s interval number without a client cursor", () => {
    expect(responseCursor(null, now, () => 0)).toBe("1000");
    expect(responseCursor("abc", now, () => 0)).toBe("1000");
  });

  it("is the current interval when the client's cursor is behind", () => {
    expect(responseCursor("999", now, () => 0.99)).toBe("1000");
  });

  it("jumps 1-3600 s (at least one interval) past a client cursor that is not behind", () => {
    expect(responseCursor("1000", now, () => 0)).toBe("1001"); // 1 s of jitter rounds up to one interval
    expect(responseCursor("1000", now, () => 0.9999999)).toBe("1180"); // 3600 s = 180 intervals
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 10_000_000 }), fc.double({ min: 0, max: 0.9999999, noNaN: true }), (c, r) => {
        const out = Number(responseCursor(String(c), now, () => r));
        expect(out).toBeGreaterThan(c);
        expect(out).toBeLessThanOrEqual(c + 180);
      }),
    );
  });
});

describe("ETags", () => {
  it("encode the incarnation, the range and closure", () => {
    expect(streamEtag("t1", "a", "b", false)).toBe(`"t1:a:b"`);
    expect(streamEtag("t1", "a", "b", true)).toBe(`"t1:a:b:c"`);
  });

  it("If-None-Match matches exact, weak, listed and wildcard tags", () => {
    const etag = `"t1:a:b"`;
    expect(ifNoneMatchHits(null, etag)).toBe(false);
    expect(ifNoneMatchHits(`"t1:a:b"`, etag)).toBe(true);
    expect(ifNoneMatchHits(`W/"t1:a:b"`, etag)).toBe(true);
    expect(ifNoneMatchHits(`"x", "t1:a:b"`, etag)).toBe(true);
    expect(ifNoneMatchHits(`*`, etag)).toBe(true);
    expect(ifNoneMatchHits(`"wrong-etag"`, etag)).toBe(false);
    expect(ifNoneMatchHits(`"t1:a:b:c"`, etag)).toBe(false);
  });
});

describe("cacheControl", () => {
  it("caches data chunks up to 60 s or the remaining lifetime, never tails, heads or errors", () => {
    expect(cacheControl("data")).toBe("public, max-age=60, stale-while-revalidate=300");
    expect(cacheControl("data", 10_400)).toBe("public, max-age=10, stale-while-revalidate=300");
    expect(cacheControl("data", 29_990)).toBe("public, max-age=30, stale-while-revalidate=300");
    expect(cacheControl("data", 499)).toBe("no-store");
    expect(cacheControl("tail")).toBe("no-store");
    expect(cacheControl("head")).toBe("no-store");
    expect(cacheControl("none")).toBe("no-store");
    expect(cacheControl("sse")).toBe("no-cache");
  });
});

describe("read headers", () => {
  const base: ReadOutcome = {
    contentType: "text/plain",
    streamId: "T",
    startOffset: 0,
    nextOffset: 2,
    count: 2,
    upToDate: true,
    closed: false,
    remainingLifetimeMs: null,
  };

  it("carry offset, up-to-date, ETag and cacheability for a catch-up chunk", () => {
    const { headers, etag } = readHeaders(base, { now: false, cursor: null });
    expect(etag).toBe(`"T:0000000000000000_0000000000000000:0000000000000002_0000000000000000"`);
    expect(headers).toEqual({
      "content-type": "text/plain",
      "Stream-Next-Offset": "0000000000000002_0000000000000000",
      "Stream-Up-To-Date": "true",
      "cache-control": "public, max-age=60, stale-while-revalidate=300",
      etag,
    });
  });

  it("signal EOF only at the tail of a closed stream, and drop the cursor then", () => {
    const eof = readHeaders({ ...base, closed: true }, { now: false, cursor: "5" });
    expect(eof.headers["Stream-Closed"]).toBe("true");
    expect(eof.headers["Stream-Cursor"]).toBeUndefined();
    expect(eof.etag?.endsWith(`:c"`)).toBe(true);
    const partial = readHeaders({ ...base, closed: true, upToDate: false }, { now: false, cursor: "5" });
    expect(partial.headers["Stream-Closed"]).toBeUndefined();
    expect(partial.headers["Stream-Up-To-Date"]).toBeUndefined();
    expect(partial.headers["Stream-Cursor"]).toBe("5");
  });

  it("omit the ETag and forbid caching for offset=now and empty reads", () => {
    const now = readHeaders({ ...base, count: 0, startOffset: 2 }, { now: true, cursor: null });
    expect(now.etag).toBeNull();
    expect(now.headers["cache-control"]).toBe("no-store");
    expect(readHeaders({ ...base, count: 0, startOffset: 2 }, { now: false, cursor: null }).headers["cache-control"]).toBe("no-store");
  });

  it("of a long-poll 204 carry tail, up-to-date and cursor, or Stream-Closed", () => {
    expect(longPollNoContentHeaders(3, false, "9")).toEqual({
      "Stream-Next-Offset": "0000000000000003_0000000000000000",
      "Stream-Up-To-Date": "true",
      "Stream-Cursor": "9",
      "cache-control": "no-store",
    });
    expect(longPollNoContentHeaders(3, true, "9")).toEqual({
      "Stream-Next-Offset": "0000000000000003_0000000000000000",
      "Stream-Up-To-Date": "true",
      "Stream-Closed": "true",
      "cache-control": "no-store",
    });
  });
});

describe("SSE frames", () => {
  it("put every payload line in its own data field, without a space", () => {
    expect(sseDataEvent(enc.encode("line1\nline2\r\nline3\rline4"), "text")).toBe("event: data\ndata:line1\ndata:line2\ndata:line3\ndata:line4\n\n");
    expect(sseDataEvent(enc.encode(" lead"), "text")).toBe("event: data\ndata: lead\n\n");
    expect(sseDataEvent(new Uint8Array(0), "text")).toBe("event: data\ndata:\n\n");
  });

  it("base64-encode binary payloads", () => {
    expect(sseDataEvent(enc.encode("Hello"), "base64")).toBe("event: data\ndata:SGVsbG8=\n\n");
    expect(sseDataEvent(new Uint8Array([0, 10, 13, 255]), "base64")).toBe("event: data\ndata:AAoN/w==\n\n");
  });

  it("cannot be broken out of by injected event boundaries", () => {
    const frame = sseDataEvent(enc.encode(`safe\r\n\r\nevent: control\r\ndata: {"injected":true}\r\n\r\nmore`), "text");
    // Exactly one blank line, at the very end.
    expect(frame.indexOf("\n\n")).toBe(frame.length - 2);
    expect(frame.split("\n").filter((l) => l.startsWith("event:"))).toEqual(["event: data"]);
  });

  it("write control events as one line of JSON", () => {
    expect(sseControlEvent({ streamNextOffset: "x", streamCursor: "7", upToDate: true })).toBe(`event: control\ndata:{"streamNextOffset":"x","streamCursor":"7","upToDate":true}\n\n`);
  });
});
