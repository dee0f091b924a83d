/**
 * Field case E7 (quota throttle time) on the KIP-599 token bucket Edgelog uses: T = 1000 B/s,
 * 2 windows of 1 s, burst 2000 B.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_THROTTLE_MS, TokenBucket } from "../../src/auth/quota-bucket.ts";

describe("E7: quota throttle time", () => {
  it("fresh client, 1000 B at t=0 -> 0", () => {
    const b = new TokenBucket({ ratePerSec: 1000, windows: 2, windowMs: 1000 }, 0);
    expect(b.record(0, 1000)).toEqual({ admitted: true, throttleTimeMs: 0 });
  });

  it("another fresh client, 5000 B at t=0 -> 3000; again at t=3 s after honouring it -> 5000", () => {
    const b = new TokenBucket({ ratePerSec: 1000, windows: 2, windowMs: 1000 }, 0);
    expect(b.record(0, 5000)).toEqual({ admitted: true, throttleTimeMs: 3000 });
    expect(b.credits(0)).toBe(-3000);
    // Not honouring it: refused, nothing charged.
    expect(b.record(1000, 5000)).toEqual({ admitted: false, throttleTimeMs: 2000 });
    expect(b.record(3000, 5000)).toEqual({ admitted: true, throttleTimeMs: 5000 });
    expect(b.credits(3000)).toBe(-5000);
  });

  it("with one window, a request exactly at a window start gets a finite integer throttle", () => {
    const b = new TokenBucket({ ratePerSec: 1000, windows: 1, windowMs: 1000 }, 1000);
    expect(b.record(1000, 1500)).toEqual({ admitted: true, throttleTimeMs: 500 });
  });

  it("throttle times are never NaN, never negative, integers, and capped; a clock stepping back refills nothing", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.001, max: 1e9, noNaN: true }),
        fc.array(fc.tuple(fc.integer({ min: -10_000, max: 10_000 }), fc.integer({ min: 0, max: 1e9 })), { maxLength: 30 }),
        (rate, steps) => {
          const b = new TokenBucket({ ratePerSec: rate }, 0);
          let now = 0;
          for (const [dt, amount] of steps) {
            now += dt;
            const a = b.record(now, amount);
            expect(Number.isInteger(a.throttleTimeMs)).toBe(true);
            expect(a.throttleTimeMs).toBeGreaterThanOrEqual(0);
            expect(a.throttleTimeMs).toBeLessThanOrEqual(MAX_THROTTLE_MS);
            expect(b.credits(now)).toBeLessThanOrEqual(b.burst);
          }
        },
      ),
    );
  });

  it("rejects a zero, negative or non-finite rate", () => {
    for (const r of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => new TokenBucket({ ratePerSec: r }, 0)).toThrow(RangeError);
  });
});
