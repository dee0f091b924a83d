import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ByteCache, MAX_SLAB_BYTES, MIN_SLAB_BYTES, RECORD_OVERHEAD_BYTES } from "../../src/streams/byte-cache.ts";

const v = (n: number, len = 1) => new Uint8Array(len).fill(n);
const COMMA = new Uint8Array([0x2c]);

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/** Byte equality without element-by-element diffing (large buffers). */
function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

/** The bytes of records [from, next) as the cache hands them out. */
function read(c: ByteCache, from: number, next: number): Uint8Array {
  const out: Uint8Array[] = [];
  const n = c.views(from, next, out);
  const b = concat(out);
  expect(b.length).toBe(n);
  return b;
}

/** Budget that holds exactly `records` records of `len` bytes (plus `sep` each). */
const budget = (records: number, len: number, sep = 0) => records * (len + sep + RECORD_OVERHEAD_BYTES);

describe("ByteCache", () => {
  it("extends a contiguous range and hands out any range of it as bytes", () => {
    const c = new ByteCache(1000);
    c.append(10, [v(1), v(2, 2)]);
    c.append(12, [v(3, 3)]);
    expect([c.start, c.end, c.bytes]).toEqual([10, 13, 6]);
    expect(read(c, 11, 13)).toEqual(new Uint8Array([2, 2, 3, 3, 3]));
    expect(read(c, 10, 10)).toEqual(new Uint8Array(0));
    expect(c.value(11)).toEqual(v(2, 2));
    expect(c.byteLength(10, 12)).toBe(3);
  });

  it("stores a separator after each value, and value() leaves it out", () => {
    const c = new ByteCache(1000);
    c.append(0, [v(7, 2), v(8)], COMMA);
    expect(read(c, 0, 2)).toEqual(new Uint8Array([7, 7, 0x2c, 8, 0x2c]));
    expect(c.value(0)).toEqual(v(7, 2));
    // Another separator starts over.
    c.append(2, [v(9)]);
    expect([c.start, c.end]).toEqual([2, 3]);
    expect(read(c, 2, 3)).toEqual(v(9));
  });

  it("starts over when an append is not at its end", () => {
    const c = new ByteCache(1000);
    c.append(0, [v(1)]);
    c.append(5, [v(6)]); // offsets 1..4 were appended elsewhere
    expect([c.start, c.end]).toEqual([5, 6]);
    expect(c.span(0, 10, 100, true)).toBe(0);
    expect(() => c.views(0, 1, [])).toThrow(RangeError);
  });

  it("evicts the oldest records beyond its budget (bytes plus per-record overhead)", () => {
    const c = new ByteCache(budget(2, 4));
    c.append(0, [v(1, 4), v(2, 4), v(3, 4)]);
    expect([c.start, c.end, c.bytes]).toEqual([1, 3, 8]);
    expect(read(c, 1, 3)).toEqual(concat([v(2, 4), v(3, 4)]));
    // A record larger than the whole budget empties the cache; the next append starts it again.
    c.append(3, [v(4, 1000)]);
    expect(c.end - c.start).toBe(0);
    c.append(4, [v(5)]);
    expect([c.start, c.end]).toEqual([4, 5]);
  });

  it("spans: stops before maxBytes, takes a first record anyway when asked, honours `until`", () => {
    const c = new ByteCache(1000);
    c.append(0, [v(1, 5), v(2, 5), v(3, 5)]);
    expect(c.span(0, 10, 7, true)).toBe(1);
    expect(c.span(0, 10, 10, true)).toBe(2);
    expect(c.span(0, 10, 1, true)).toBe(1); // first record even though larger
    expect(c.span(0, 10, 1, false)).toBe(0);
    expect(c.span(1, 2, 100, true)).toBe(2);
    expect(c.span(0, 10, 100, true)).toBe(3);
    expect(c.span(3, 10, 100, true)).toBe(3); // the end is not cached
  });

  it("hands out one view per slab, and views stay valid after eviction", () => {
    const c = new ByteCache(4 * MAX_SLAB_BYTES);
    const big = v(5, MAX_SLAB_BYTES + 100);
    c.append(0, [v(1, 10), big, v(2, 10)]);
    const out: Uint8Array[] = [];
    c.views(0, 3, out);
    expect(out.length).toBeGreaterThanOrEqual(2);
    expect(out.length).toBeLessThanOrEqual(4);
    expect(same(concat(out), concat([v(1, 10), big, v(2, 10)]))).toBe(true);
    const kept = concat(out);
    for (let i = 0; i < 10; i++) c.append(3 + i, [v(i, MAX_SLAB_BYTES)]);
    expect(c.start).toBeGreaterThan(0);
    expect(same(concat(out), kept)).toBe(true);
    expect(same(c.value(c.end - 1), v(9, MAX_SLAB_BYTES))).toBe(true);
  });

  it("starts small: a slab is allocated as the cache grows", () => {
    const c = new ByteCache(64 * 1024 * 1024);
    c.append(0, [v(1, 10)]);
    const out: Uint8Array[] = [];
    c.views(0, 1, out);
    expect(out[0]?.buffer.byteLength).toBe(MIN_SLAB_BYTES);
  });

  it("always agrees with the log it caches", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 5 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 2000 }),
        fc.boolean(),
        fc.nat(),
        fc.nat(),
        (appends, budgetBytes, json, pick, pickMax) => {
          const sep = json ? COMMA : new Uint8Array(0);
          const c = new ByteCache(budgetBytes);
          const log: Uint8Array[] = [];
          for (const lens of appends) {
            const vals = lens.map((len) => v(log.length % 250, len));
            c.append(log.length, vals, sep);
            log.push(...vals);
          }
          expect(c.end === c.start || c.end === log.length).toBe(true);
          expect(c.bytes + (c.end - c.start) * RECORD_OVERHEAD_BYTES).toBeLessThanOrEqual(budgetBytes);
          if (c.end > c.start) {
            const from = c.start + (pick % (c.end - c.start));
            const expected = concat(log.slice(from).flatMap((x) => [x, sep]));
            expect(read(c, from, c.end)).toEqual(expected);
            for (let o = from; o < c.end; o++) expect(c.value(o)).toEqual(log[o]);
            // span never exceeds maxBytes unless it takes the single first record
            const maxBytes = pickMax % 200;
            const next = c.span(from, log.length, maxBytes, true);
            expect(next).toBeGreaterThan(from);
            if (next > from + 1) expect(c.byteLength(from, next)).toBeLessThanOrEqual(maxBytes);
            if (next < c.end) expect(c.byteLength(from, next + 1)).toBeGreaterThan(maxBytes);
          }
        },
      ),
    );
  });
});
