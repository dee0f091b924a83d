/**
 * The multipart form of a remote segment object (src/lifecycle/tiered.ts SegmentObjectWriter):
 * the parts, concatenated in part-number order, are byte for byte the single-put object, and they
 * keep R2's rules (every part but the last exactly the part size, the last not larger, part size
 * at least 5 MiB).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeBatch } from "../../src/codec/index.ts";
import { R2_MIN_PART_BYTES, SegmentObjectError, SegmentObjectWriter, decodeSegmentObject, encodeSegmentObject } from "../../src/lifecycle/index.ts";

const PART = R2_MIN_PART_BYTES;

/** Stored batches of the given value sizes (bytes), one record each, consecutive offsets. */
function batches(sizes: readonly number[]): Uint8Array[] {
  return sizes.map((n, i) =>
    encodeBatch(
      { baseOffset: i * 2 },
      [0, 1].map((j) => ({ key: null, value: new Uint8Array(n >> 1).fill(97 + ((i + j) % 26)), headers: [], timestamp: 1_000 + i })),
    ),
  );
}

/** Byte equality without a diff of megabytes (vitest's toEqual on large arrays runs out of memory). */
function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Runs the writer; answers the parts in part-number order (part 1 first). */
function write(bs: readonly Uint8Array[], partBytes = PART): Uint8Array[] {
  const w = new SegmentObjectWriter(partBytes);
  const middle: Uint8Array[] = [];
  for (const b of bs) middle.push(...w.add(b));
  const { first, rest } = w.finish();
  return [first, ...middle, ...rest];
}

describe("SegmentObjectWriter (multipart segment objects)", () => {
  it("parts concatenate to the single-put object; all but the last are exactly the part size", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 2, max: 3 * 1024 * 1024 }), { minLength: 1, maxLength: 8 }), (sizes) => {
        const bs = batches(sizes);
        const parts = write(bs);
        expect(same(concat(parts), encodeSegmentObject(bs))).toBe(true);
        for (const p of parts.slice(0, -1)) expect(p.length).toBe(PART);
        expect(parts[parts.length - 1]!.length).toBeGreaterThan(0);
        expect(parts[parts.length - 1]!.length).toBeLessThanOrEqual(PART);
      }),
      { numRuns: 15 },
    );
  });

  it("an object of exactly one part, and one that ends on a part boundary", () => {
    const one = batches([100, 200]);
    expect(write(one).length).toBe(1);
    expect(same(concat(write(one)), encodeSegmentObject(one))).toBe(true);
    // Grow a batch until the whole object is exactly two parts long.
    let second = 1024;
    let bs = batches([4 * 1024 * 1024, second]);
    for (let i = 0; i < 20 && encodeSegmentObject(bs).length !== 2 * PART; i++) {
      // Each record holds half of the size asked (two records per batch); varint lengths shift a byte now and then.
      second += 2 * PART - encodeSegmentObject(bs).length || 1;
      bs = batches([4 * 1024 * 1024, second]);
    }
    expect(encodeSegmentObject(bs).length).toBe(2 * PART);
    const parts = write(bs);
    expect(parts.map((p) => p.length)).toEqual([PART, PART]);
    const decoded = decodeSegmentObject(concat(parts)).batches;
    expect(decoded.length).toBe(2);
    expect(decoded.every((d, i) => same(d, bs[i]!))).toBe(true);
  });

  it("refuses a part size below R2's 5 MiB, no batch, and batches out of order", () => {
    expect(() => new SegmentObjectWriter(PART - 1)).toThrow(SegmentObjectError);
    expect(() => new SegmentObjectWriter(PART).finish()).toThrow(/at least one batch/);
    const w = new SegmentObjectWriter(PART);
    const [a, b] = batches([10, 10]);
    w.add(b!);
    expect(() => w.add(a!)).toThrow(/does not follow/);
  });
});
