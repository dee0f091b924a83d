import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseTopicName } from "../../src/protocol/names.ts";
import { parseForkSource, parseStreamPath, pathForTopicPart, topicNameForPath, topicPartForPath } from "../../src/streams/names.ts";

describe("parseStreamPath", () => {
  it("decodes segments and joins them with /", () => {
    expect(parseStreamPath("/v1/stream/chat/room-1")).toEqual({ ok: true, path: "chat/room-1" });
    expect(parseStreamPath("/v1/stream/caf%C3%A9")).toEqual({ ok: true, path: "café" });
    expect(parseStreamPath("/v1/stream/a%20b")).toEqual({ ok: true, path: "a b" });
  });

  it("rejects empty, dot and slash-encoded segments, bad escapes and control characters", () => {
    for (const p of ["/v1/stream/", "/v1/stream/a//b", "/v1/stream/a/", "/v1/stream/%2e%2e", "/v1/stream/a%2Fb", "/v1/stream/%E0%A4", "/v1/stream/a%0Ab", "/v2/x"]) {
      const r = parseStreamPath(p);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toBe("invalid");
    }
  });

  it("reserves __ds for the protocol's control APIs", () => {
    const r = parseStreamPath("/v1/stream/__ds/subscriptions/x");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toBe("reserved");
  });

  it("bounds the path at 1024 bytes", () => {
    expect(parseStreamPath(`/v1/stream/${"a".repeat(1024)}`).ok).toBe(true);
    expect(parseStreamPath(`/v1/stream/${"a".repeat(1025)}`).ok).toBe(false);
  });
});

describe("parseForkSource", () => {
  it("accepts the source's URL path or an absolute URL on the same origin", () => {
    expect(parseForkSource("/v1/stream/src-1", "http://h:1")).toEqual({ ok: true, path: "src-1" });
    expect(parseForkSource("http://h:1/v1/stream/a/b", "http://h:1")).toEqual({ ok: true, path: "a/b" });
    expect(parseForkSource("http://other/v1/stream/a", "http://h:1").ok).toBe(false);
    expect(parseForkSource("src-1", "http://h:1").ok).toBe(false);
  });
});

describe("topic names", () => {
  it("keeps [A-Za-z0-9.-] and escapes every other UTF-8 byte as _xx", async () => {
    expect(await topicNameForPath("chat/room-1")).toBe("streams/default/chat_2froom-1");
    expect(await topicNameForPath("my_log")).toBe("streams/default/my_5flog");
    expect(await topicNameForPath("é")).toBe("streams/default/_c3_a9");
    expect(await topicNameForPath("v1.2")).toBe("streams/default/v1.2");
  });

  it("never produces the invalid topic names . and ..", async () => {
    expect(await topicPartForPath(".")).toBe("_2e");
    expect(await topicPartForPath("..")).toBe("_2e_2e");
  });

  it("hashes paths whose escaped form exceeds 249 characters", async () => {
    const long = `${"x/".repeat(100)}y`; // 100 escapes of 3 chars + 101 chars = 401
    const part = await topicPartForPath(long);
    expect(part).toMatch(/^_h[0-9a-f]{64}$/);
    expect(pathForTopicPart(part)).toBeNull();
    expect(await topicPartForPath(long)).toBe(part);
  });

  it("round-trips every path and always yields a valid Edgelog topic name", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "grapheme", minLength: 1, maxLength: 60 }), async (path) => {
        const part = await topicPartForPath(path);
        expect(parseTopicName(`streams/default/${part}`).topic).toBe(part);
        if (!part.startsWith("_h")) expect(pathForTopicPart(part)).toBe(path);
      }),
    );
  });

  it("rejects topic parts that are not escaped names", () => {
    expect(pathForTopicPart("a_zz")).toBeNull();
    expect(pathForTopicPart("a_2")).toBeNull();
    expect(pathForTopicPart("_ff")).toBeNull(); // 0xff alone is not UTF-8
  });
});
