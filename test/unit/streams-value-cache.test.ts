import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValueCache } from "../../src/streams/value-cache.ts";

const v = (n: number, len = 1) => new Uint8Array(len).fill(n);

describe("ValueCache", () => {
  it("extends a contiguous range and reads from any offset in it", () => {
    const c = new ValueCache(100);
    c.append(10, [v(1), v(2)]);
    c.append(12, [null, v(4)]);
    expect([c.start, c.end, c.bytes]).toEqual([10, 14, 3]);
    const out: (Uint8Array | null)[] = [];
    expect(c.read(11, 100, 100, 0, out)).toBe(14);
    expect(out).toEqual([v(2), null, v(4)]);
  });

  it("starts over when an append is not at its end", () => {
    const c = new ValueCache(100);
    c.append(0, [v(1)]);
    c.append(5, [v(6)]); // offsets 1..4 were appended elsewhere
    expect([c.start, c.end]).toEqual([5, 6]);
    expect(c.read(0, 10, 100, 0, [])).toBe(0);
  });

  it("evicts the oldest values beyond its budget", () => {
    const c = new ValueCache(10);
    c.append(0, [v(1, 4), v(2, 4), v(3, 4)]);
    expect([c.start, c.end, c.bytes]).toEqual([1, 3, 8]);
  });

  it("stops before maxBytes but always returns a first value, and honours `until`", () => {
    const c = new ValueCache(100);
    c.append(0, [v(1, 5), v(2, 5), v(3, 5)]);
    const a: (Uint8Array | null)[] = [];
    expect(c.read(0, 10, 7, 0, a)).toBe(1);
    expect(a.length).toBe(1);
    const b: (Uint8Array | null)[] = [];
    expect(c.read(0, 10, 1, 0, b)).toBe(1); // first value even though larger
    const d: (Uint8Array | null)[] = [v(9)];
    expect(c.read(0, 10, 5, 5, d)).toBe(0); // already full
    expect(c.read(1, 2, 100, 0, [])).toBe(2);
  });

  it("always agrees with the log it caches", () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.nat({ max: 20 }), { minLength: 1, maxLength: 5 }), { maxLength: 40 }), fc.integer({ min: 1, max: 60 }), fc.nat(), (appends, budget, pick) => {
        const c = new ValueCache(budget);
        const log: Uint8Array[] = [];
        for (const lens of appends) {
          const vals = lens.map((len) => v(log.length % 250, len));
          c.append(log.length, vals);
          log.push(...vals);
        }
        expect(c.end).toBe(log.length);
        expect(c.bytes).toBeLessThanOrEqual(budget);
        if (c.end > c.start) {
          const from = c.start + (pick % (c.end - c.start));
          const out: (Uint8Array | null)[] = [];
          const next = c.read(from, log.length, Number.MAX_SAFE_INTEGER, 0, out);
          expect(next).toBe(log.length);
          expect(out).toEqual(log.slice(from));
        }
      }),
    );
  });
});
