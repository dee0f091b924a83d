import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { toBytes, toText } from "../../sdk/src/text.ts";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

const encoder = new TextEncoder();

describe("toBytes", () => {
  it("property: any string encodes exactly as TextEncoder does (ASCII fast path or not)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: "grapheme", maxLength: 80 }), fc.string({ unit: "binary", maxLength: 80 })), (s) => {
        expect(toBytes(s)).toEqual(encoder.encode(s));
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps null and empty apart, and passes bytes through", () => {
    expect(toBytes(null)).toBeNull();
    expect(toBytes(undefined)).toBeNull();
    expect(toBytes("")).toEqual(new Uint8Array(0));
    const b = new Uint8Array([1, 2, 3]);
    expect(toBytes(b)).toBe(b);
    expect(toBytes("é")).toEqual(new Uint8Array([0xc3, 0xa9]));
    expect(toBytes(`${"a".repeat(64)}é`)).toEqual(encoder.encode(`${"a".repeat(64)}é`));
    expect(toBytes("\u007f\u0080")).toEqual(new Uint8Array([0x7f, 0xc2, 0x80]));
  });
});

describe("toText", () => {
  it("keeps a leading U+FEFF (it is data, as in the server's JSON answers)", () => {
    expect(toText(utf8("\uFEFFhello"))).toBe("\uFEFFhello");
  });
});
