import { describe, expect, it } from "vitest";
import { RATE_WINDOW_SECONDS, RateMeter } from "../../src/subscriptions/rates.ts";

describe("RateMeter", () => {
  it("averages events over the window of whole seconds and forgets what slid out", () => {
    const m = new RateMeter();
    const t0 = 1_000_000;
    m.add(10, t0);
    m.add(10, t0 + 1500);
    expect(m.rate(t0 + 1999)).toBe(20 / RATE_WINDOW_SECONDS);
    // 9 s after the first second, it slides out; the second's events stay.
    expect(m.rate(t0 + RATE_WINDOW_SECONDS * 1000)).toBe(10 / RATE_WINDOW_SECONDS);
    expect(m.rate(t0 + 60_000)).toBe(0);
    expect(m.total).toBe(20);
    m.add(5, t0 + 60_000);
    expect(m.rate(t0 + 60_500)).toBe(5 / RATE_WINDOW_SECONDS);
  });
});
