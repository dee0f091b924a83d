import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonMessages, resolveSubOffset, splitBody } from "../../src/streams/records.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const texts = (r: ReturnType<typeof jsonMessages>) => (r.ok ? r.messages.map((m) => dec.decode(m)) : r.reason);

describe("jsonMessages", () => {
  it("flattens exactly one level of a top-level array (PROTOCOL.md 9.1.2)", () => {
    expect(texts(jsonMessages(enc.encode(`{"event": "created"}`), false))).toEqual([`{"event":"created"}`]);
    expect(texts(jsonMessages(enc.encode(`[{"event": "a"}, {"event": "b"}]`), false))).toEqual([`{"event":"a"}`, `{"event":"b"}`]);
    expect(texts(jsonMessages(enc.encode(`[[1,2], [3,4]]`), false))).toEqual([`[1,2]`, `[3,4]`]);
    expect(texts(jsonMessages(enc.encode(`[[[1,2,3]]]`), false))).toEqual([`[[1,2,3]]`]);
    expect(texts(jsonMessages(enc.encode(` 42 `), false))).toEqual([`42`]);
    expect(texts(jsonMessages(enc.encode(`"a [b, c]"`), false))).toEqual([`"a [b, c]"`]);
  });

  it("keeps whitespace and brackets inside strings, and number text exactly", () => {
    expect(texts(jsonMessages(enc.encode(`[ {"s": "x , ] y\\" z"} ,\n 12345678901234567890 , 1.50 ]`), false))).toEqual([`{"s":"x , ] y\\" z"}`, `12345678901234567890`, `1.50`]);
  });

  it("rejects invalid JSON and invalid UTF-8", () => {
    expect(texts(jsonMessages(enc.encode(`{ invalid json }`), false))).toBe("invalid-json");
    expect(texts(jsonMessages(new Uint8Array([0x22, 0xff, 0x22]), false))).toBe("invalid-json");
    expect(texts(jsonMessages(new Uint8Array(0), true))).toBe("invalid-json");
  });

  it("rejects an empty array on POST but not on PUT", () => {
    expect(texts(jsonMessages(enc.encode(`[]`), false))).toBe("empty-array");
    expect(texts(jsonMessages(enc.encode(` [ ] `), true))).toEqual([]);
  });

  it("splits any array into messages that parse back to its elements", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { minLength: 1, maxLength: 8 }), fc.boolean(), (arr, pretty) => {
        const body = enc.encode(JSON.stringify(arr, null, pretty ? 2 : undefined));
        const r = jsonMessages(body, false);
        expect(r.ok).toBe(true);
        if (r.ok) expect(r.messages.map((m) => JSON.parse(dec.decode(m)))).toEqual(JSON.parse(JSON.stringify(arr)));
      }),
    );
  });
});

describe("splitBody", () => {
  it("returns the body itself when it fits", () => {
    const b = enc.encode("hello");
    expect(splitBody(b, 5)).toEqual([b]);
  });

  it("never splits a UTF-8 character and loses no byte", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 200 }), fc.integer({ min: 4, max: 20 }), (s, max) => {
        const body = enc.encode(s);
        const chunks = splitBody(body, max);
        expect(Buffer.concat(chunks)).toEqual(Buffer.from(body));
        for (const c of chunks) {
          expect(c.length).toBeLessThanOrEqual(max);
          expect(c.length).toBeGreaterThan(0);
          expect(() => strict.decode(c)).not.toThrow();
        }
      }),
    );
  });

  it("splits binary bodies into bounded chunks", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 4, max: 50 }), (body, max) => {
        const chunks = splitBody(body, max);
        expect(Buffer.concat(chunks)).toEqual(Buffer.from(body));
        for (const c of chunks) expect(c.length).toBeLessThanOrEqual(max);
      }),
    );
  });
});

describe("resolveSubOffset", () => {
  const vals = ["hello", "world"].map((s) => enc.encode(s));

  it("counts messages in JSON streams", () => {
    expect(resolveSubOffset(3, [enc.encode("1"), enc.encode("2"), enc.encode("3")], 2, true)).toEqual({ forkOffset: 5, prefix: null });
    expect(resolveSubOffset(3, [enc.encode("1"), enc.encode("2"), enc.encode("3")], 3, true)).toEqual({ forkOffset: 6, prefix: null });
    expect(resolveSubOffset(3, [enc.encode("1")], 2, true)).toBeNull();
  });

  it("counts bytes in byte streams, materializing a partial record", () => {
    expect(resolveSubOffset(0, vals, 0, false)).toEqual({ forkOffset: 0, prefix: null });
    expect(resolveSubOffset(0, vals, 3, false)).toEqual({ forkOffset: 0, prefix: enc.encode("hel") });
    expect(resolveSubOffset(0, vals, 5, false)).toEqual({ forkOffset: 1, prefix: null });
    expect(resolveSubOffset(0, vals, 7, false)).toEqual({ forkOffset: 1, prefix: enc.encode("wo") });
    expect(resolveSubOffset(0, vals, 10, false)).toEqual({ forkOffset: 2, prefix: null });
    expect(resolveSubOffset(0, vals, 11, false)).toBeNull();
    expect(resolveSubOffset(4, [], 1, false)).toBeNull();
  });
});
