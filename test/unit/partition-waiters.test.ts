import { describe, expect, it, vi } from "vitest";
import { WAITERS_MAX, WaitersRoom } from "../../durable-objects/partition/waiters.ts";

describe("WaitersRoom", () => {
  it("wakes every waiter at once, and each at its own timeout otherwise", async () => {
    vi.useFakeTimers();
    try {
      const w = new WaitersRoom();
      const woken: string[] = [];
      void w.next(1000).then(() => woken.push("a"));
      void w.next(50).then(() => woken.push("b"));
      expect(w.size).toBe(2);
      await vi.advanceTimersByTimeAsync(60);
      expect(woken).toEqual(["b"]);
      expect(w.size).toBe(1);
      w.wake();
      await Promise.resolve();
      expect(woken).toEqual(["b", "a"]);
      expect(w.size).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it(`is bounded: waiter ${WAITERS_MAX + 1} wakes the oldest early`, async () => {
    vi.useFakeTimers();
    try {
      const w = new WaitersRoom();
      let oldestWoken = false;
      void w.next(60_000).then(() => (oldestWoken = true));
      for (let i = 1; i < WAITERS_MAX; i++) void w.next(60_000);
      expect(w.size).toBe(WAITERS_MAX);
      await Promise.resolve();
      expect(oldestWoken).toBe(false);
      void w.next(60_000);
      await Promise.resolve();
      expect(oldestWoken).toBe(true);
      expect(w.size).toBe(WAITERS_MAX);
      w.wake();
      expect(w.size).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
