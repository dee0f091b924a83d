import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeOffset, encodeOffset, parseOffsetParam, START_TOKEN } from "../../src/streams/offsets.ts";

describe("offset tokens", () => {
  it("encodes an Edgelog offset as 16 digits, underscore, 16 zeros", () => {
    expect(encodeOffset(0)).toBe("0000000000000000_0000000000000000");
    expect(encodeOffset(42)).toBe("0000000000000042_0000000000000000");
    expect(encodeOffset(Number.MAX_SAFE_INTEGER)).toBe("9007199254740991_0000000000000000");
    expect(START_TOKEN).toBe(encodeOffset(0));
  });

  it("rejects offsets that are not non-negative safe integers", () => {
    expect(() => encodeOffset(-1)).toThrow(RangeError);
    expect(() => encodeOffset(1.5)).toThrow(RangeError);
    expect(() => encodeOffset(2 ** 53)).toThrow(RangeError);
  });

  it("round-trips and sorts lexicographically exactly as numerically", () => {
    fc.assert(
      fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), fc.nat({ max: Number.MAX_SAFE_INTEGER }), (a, b) => {
        expect(decodeOffset(encodeOffset(a))).toBe(a);
        const ta = encodeOffset(a);
        const tb = encodeOffset(b);
        expect(Math.sign(ta < tb ? -1 : ta > tb ? 1 : 0)).toBe(Math.sign(a - b));
      }),
    );
  });

  it("ignores the reserved second field on input", () => {
    expect(decodeOffset("0000000000000007_0000000000000123")).toBe(7);
  });

  it("decodes only the exact 16_16 digit shape", () => {
    for (const bad of ["", "0_0", "000000000000000_0000000000000000", "0000000000000000-0000000000000000", "0000000000000000_000000000000000a", " 0000000000000000_0000000000000000"]) {
      expect(decodeOffset(bad)).toBeNull();
    }
    // 16 digits above 2^53 are not safe integers.
    expect(decodeOffset("9999999999999999_0000000000000000")).toBeNull();
  });
});

describe("parseOffsetParam", () => {
  it("maps absence and -1 to the beginning, now to the tail", () => {
    expect(parseOffsetParam([])).toEqual({ kind: "beginning" });
    expect(parseOffsetParam(["-1"])).toEqual({ kind: "beginning" });
    expect(parseOffsetParam(["now"])).toEqual({ kind: "now" });
    expect(parseOffsetParam([START_TOKEN])).toEqual({ kind: "offset", offset: 0 });
    expect(parseOffsetParam([encodeOffset(9)])).toEqual({ kind: "offset", offset: 9 });
  });

  it("rejects empty, repeated and malformed values", () => {
    expect(parseOffsetParam([""])).toEqual({ error: "The offset parameter must not be empty." });
    expect(parseOffsetParam(["a", "b"])).toEqual({ error: "The offset parameter must be given at most once." });
    for (const bad of ["0,1", "0 1", "../x", "x/..", "-1\u0000", "now\n", "abc", "-2", "NOW"]) {
      expect(parseOffsetParam([bad])).toHaveProperty("error");
    }
  });

  it("rejects every value holding a space, comma, slash, NUL or line break", () => {
    const bad = fc.oneof(
      fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a} ${b}`),
      fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a},${b}`),
      fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a}/${b}`),
      fc.string().map((s) => `${s}\u0000`),
      fc.string().map((s) => `${s}\r\n`),
    );
    fc.assert(
      fc.property(bad, (v) => {
        expect(parseOffsetParam([v])).toHaveProperty("error");
      }),
    );
  });
});
