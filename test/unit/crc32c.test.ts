import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32c } from "../../src/codec/crc32c.ts";

const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Bit-at-a-time reference (the definition), to check the sliced tables against. */
function crc32cBitwise(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

describe("crc32c", () => {
  it("matches the CRC-32C check value for ASCII 123456789", () => {
    expect(crc32c(ascii("123456789"))).toBe(0xe3069283);
  });

  it("is 0 for empty input", () => {
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  // RFC 3720 (iSCSI) appendix B.4 test vectors.
  it("matches RFC 3720 B.4: 32 bytes of 0x00", () => {
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
  });

  it("matches RFC 3720 B.4: 32 bytes of 0xFF", () => {
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
  });

  it("matches RFC 3720 B.4: 32 incrementing bytes 0x00..0x1F", () => {
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
  });

  it("matches RFC 3720 B.4: 32 decrementing bytes 0x1F..0x00", () => {
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
  });

  it("returns an unsigned value (high bit set stays positive)", () => {
    expect(crc32c(ascii("123456789"))).toBe(3808858755);
  });

  it("checksums only [start, end)", () => {
    const buf = ascii("xx123456789yyy");
    expect(crc32c(buf, 2, 11)).toBe(0xe3069283);
    expect(crc32c(buf, 2)).toBe(crc32c(ascii("123456789yyy")));
    expect(crc32c(buf, 5, 5)).toBe(0);
  });

  it("throws RangeError for a range outside the buffer", () => {
    const buf = new Uint8Array(4);
    expect(() => crc32c(buf, -1, 2)).toThrow(RangeError);
    expect(() => crc32c(buf, 3, 2)).toThrow(RangeError);
    expect(() => crc32c(buf, 0, 5)).toThrow(RangeError);
    expect(() => crc32c(buf, 0.5, 2)).toThrow(RangeError);
  });

  it("equals the bit-at-a-time definition for any bytes and any subrange", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), fc.nat(), (bytes, a, b) => {
        const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
        const end = start + (b % (bytes.length - start + 1));
        expect(crc32c(bytes, start, end)).toBe(crc32cBitwise(bytes.subarray(start, end)));
      }),
    );
  });

  it("equals the definition on the 16-byte word path at every alignment of the view and the range", () => {
    // Inputs >= 256 bytes take the aligned Int32Array loop; vary the view's byteOffset (the
    // word alignment is absolute in the ArrayBuffer) and the range's start and end.
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 256, maxLength: 2000 }), fc.nat(7), fc.nat(40), fc.nat(40), (bytes, viewOffset, a, b) => {
        const backing = new Uint8Array(bytes.length + viewOffset);
        backing.set(bytes, viewOffset);
        const view = backing.subarray(viewOffset);
        const start = a % 8;
        const end = view.length - (b % 24);
        expect(crc32c(view, start, end)).toBe(crc32cBitwise(view.subarray(start, end)));
      }),
      { numRuns: 200 },
    );
  });
});
