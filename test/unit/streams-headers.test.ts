import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compareStreamSeq,
  contentTypesMatch,
  isJsonContentType,
  isSseText,
  mediaTypeEssence,
  parseAppendHeaders,
  parseClosedHeader,
  parseCreateHeaders,
  parseExpiresAt,
  parseProducerHeaders,
  parseTtlSeconds,
} from "../../src/streams/headers.ts";

function getter(h: Record<string, string>) {
  const lower = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
  return (name: string) => lower[name.toLowerCase()] ?? null;
}

describe("content types", () => {
  it("compares essences case-insensitively and without parameters", () => {
    expect(mediaTypeEssence("Application/JSON; charset=utf-8")).toBe("application/json");
    expect(mediaTypeEssence("not a type")).toBeNull();
    expect(contentTypesMatch("TEXT/PLAIN", "text/plain")).toBe(true);
    expect(contentTypesMatch("application/json", "text/plain")).toBe(false);
    expect(isJsonContentType("application/json; charset=utf-8")).toBe(true);
    expect(isJsonContentType("application/ndjson")).toBe(false);
  });

  it("uses text SSE for text/* and application/json only", () => {
    expect(isSseText("text/plain")).toBe(true);
    expect(isSseText("text/csv; charset=utf-8")).toBe(true);
    expect(isSseText("application/json")).toBe(true);
    expect(isSseText("application/octet-stream")).toBe(false);
    expect(isSseText("application/x-protobuf")).toBe(false);
    expect(isSseText("image/png")).toBe(false);
  });
});

describe("Stream-Closed", () => {
  it("is present only for true, in any case", () => {
    expect(parseClosedHeader("true")).toBe(true);
    expect(parseClosedHeader("TRUE")).toBe(true);
    for (const v of [null, "false", "yes", "1", ""]) expect(parseClosedHeader(v)).toBe(false);
  });
});

describe("Stream-TTL", () => {
  it("accepts canonical decimal seconds", () => {
    expect(parseTtlSeconds("0")).toBe(0);
    expect(parseTtlSeconds("3600")).toBe(3600);
  });
  it("rejects signs, leading zeros, fractions, exponents and junk", () => {
    for (const v of ["-1", "+60", "00060", "60.5", "1e3", "abc", "", "0x10"]) expect(parseTtlSeconds(v)).toHaveProperty("error");
  });
  it("rejects a TTL whose milliseconds are not a safe integer", () => {
    expect(parseTtlSeconds("9007199254740991")).toHaveProperty("error");
  });
});

describe("Stream-Expires-At", () => {
  it("parses RFC 3339 with Z or an offset", () => {
    expect(parseExpiresAt("2030-01-02T03:04:05Z")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5));
    expect(parseExpiresAt("2030-01-02T03:04:05.250+00:00")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5, 250));
    expect(parseExpiresAt("2030-01-02T05:04:05+02:00")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5));
  });
  it("rejects anything else", () => {
    for (const v of ["not-a-timestamp", "2030-01-02", "2030-13-02T00:00:00Z", "2030-01-02T00:00:00", "1767225600000"]) {
      expect(parseExpiresAt(v)).toHaveProperty("error");
    }
  });
  it("round-trips toISOString()", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date(0), max: new Date(Date.UTC(9999, 0)), noInvalidDate: true }), (d) => {
        expect(parseExpiresAt(d.toISOString())).toBe(d.getTime());
      }),
    );
  });
});

describe("parseCreateHeaders", () => {
  it("reads content type, expiry, closure and fork headers", () => {
    expect(parseCreateHeaders(getter({ "content-type": "text/plain", "Stream-TTL": "60", "Stream-Closed": "true" }))).toEqual({
      contentType: "text/plain",
      closed: true,
      ttlSeconds: 60,
      expiresAtMs: null,
      fork: null,
    });
    expect(parseCreateHeaders(getter({ "Stream-Forked-From": "/v1/stream/a", "Stream-Fork-Offset": "0000000000000003_0000000000000000", "Stream-Fork-Sub-Offset": "2" }))).toEqual({
      contentType: null,
      closed: false,
      ttlSeconds: null,
      expiresAtMs: null,
      fork: { source: "/v1/stream/a", offset: 3, offsetToken: "0000000000000003_0000000000000000", subOffset: 2 },
    });
  });

  it("rejects TTL together with Expires-At", () => {
    expect(parseCreateHeaders(getter({ "Stream-TTL": "1", "Stream-Expires-At": "2030-01-01T00:00:00Z" }))).toEqual({
      error: "Send Stream-TTL or Stream-Expires-At, not both.",
    });
  });

  it("rejects fork offsets and sub-offsets without a source, and malformed ones", () => {
    expect(parseCreateHeaders(getter({ "Stream-Fork-Sub-Offset": "0" }))).toHaveProperty("error");
    expect(parseCreateHeaders(getter({ "Stream-Fork-Offset": "0000000000000000_0000000000000000" }))).toHaveProperty("error");
    for (const bad of ["-1", "abc", "1.5", "05", "+1", ""]) {
      expect(parseCreateHeaders(getter({ "Stream-Forked-From": "/v1/stream/a", "Stream-Fork-Sub-Offset": bad }))).toHaveProperty("error");
    }
    expect(parseCreateHeaders(getter({ "Stream-Forked-From": "/v1/stream/a", "Stream-Fork-Offset": "12" }))).toHaveProperty("error");
  });

  it("rejects a Content-Type that is not a media type", () => {
    expect(parseCreateHeaders(getter({ "content-type": "garbage" }))).toHaveProperty("error");
  });
});

describe("producer headers", () => {
  it("are all or nothing", () => {
    expect(parseProducerHeaders(getter({}))).toBeNull();
    expect(parseProducerHeaders(getter({ "Producer-Id": "p", "Producer-Epoch": "0", "Producer-Seq": "7" }))).toEqual({ id: "p", epoch: 0, seq: 7 });
    expect(parseProducerHeaders(getter({ "Producer-Id": "p" }))).toHaveProperty("error");
    expect(parseProducerHeaders(getter({ "Producer-Epoch": "0" }))).toHaveProperty("error");
    expect(parseProducerHeaders(getter({ "Producer-Id": "p", "Producer-Epoch": "0" }))).toHaveProperty("error");
  });
  it("reject empty ids and non-integer or unsafe numbers", () => {
    expect(parseProducerHeaders(getter({ "Producer-Id": "", "Producer-Epoch": "0", "Producer-Seq": "0" }))).toHaveProperty("error");
    for (const [e, s] of [
      ["0", "1abc"],
      ["0xyz", "0"],
      ["1e3", "0"],
      ["-1", "0"],
      ["9007199254740992", "0"],
    ]) {
      expect(parseProducerHeaders(getter({ "Producer-Id": "p", "Producer-Epoch": e as string, "Producer-Seq": s as string }))).toHaveProperty("error");
    }
  });
});

describe("parseAppendHeaders", () => {
  it("reads content type, Stream-Seq, close and producer", () => {
    expect(parseAppendHeaders(getter({ "content-type": "text/plain", "stream-seq": "001", "Stream-Closed": "TRUE" }))).toEqual({
      contentType: "text/plain",
      streamSeq: "001",
      close: true,
      producer: null,
    });
    expect(parseAppendHeaders(getter({}))).toEqual({ contentType: null, streamSeq: null, close: false, producer: null });
    expect(parseAppendHeaders(getter({ "stream-seq": "" }))).toHaveProperty("error");
  });
});

describe("compareStreamSeq", () => {
  it("orders byte-wise, not numerically or case-insensitively", () => {
    expect(compareStreamSeq("10", "2")).toBeLessThan(0);
    expect(compareStreamSeq("10", "09")).toBeGreaterThan(0);
    expect(compareStreamSeq("B", "a")).toBeLessThan(0);
    expect(compareStreamSeq("001", "001")).toBe(0);
    expect(compareStreamSeq("a", "ab")).toBeLessThan(0);
  });
  it("orders by UTF-8 bytes where UTF-16 code units disagree", () => {
    // U+FFFD is EF BF BD; U+1F600 is F0 9F 98 80: bytes say emoji > U+FFFD, UTF-16 says the opposite.
    expect("\u{1F600}" < "\uFFFD").toBe(true);
    expect(compareStreamSeq("\u{1F600}", "\uFFFD")).toBeGreaterThan(0);
  });
  it("agrees with sorting the UTF-8 encodings", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" }), (a, b) => {
        const x = Buffer.from(a, "utf8");
        const y = Buffer.from(b, "utf8");
        expect(Math.sign(compareStreamSeq(a, b))).toBe(Math.sign(Buffer.compare(x, y)));
      }),
    );
  });
});
