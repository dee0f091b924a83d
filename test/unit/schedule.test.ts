/** The pure schedule of the Durable Object base (durable-objects/schedule.ts). */
import fc from "fast-check";
import { describe as suite, expect, it } from "vitest";
import { TIMER_RETRY_BASE_MS, TIMER_RETRY_MAX_MS, TimerSchedule, normalizeDueMs, timerRetryDelayMs } from "../../durable-objects/schedule.ts";

suite("timerRetryDelayMs", () => {
  it("doubles from the base per failure in a row, capped", () => {
    expect([1, 2, 3, 4].map(timerRetryDelayMs)).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(timerRetryDelayMs(9)).toBe(256_000);
    expect(timerRetryDelayMs(10)).toBe(TIMER_RETRY_MAX_MS);
    expect(timerRetryDelayMs(10_000)).toBe(TIMER_RETRY_MAX_MS);
    expect(TIMER_RETRY_BASE_MS).toBe(1_000);
  });

  it("refuses a failure count that is not a positive integer", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => timerRetryDelayMs(bad)).toThrow(RangeError);
  });
});

suite("normalizeDueMs", () => {
  it("rounds fractions up, maps times before the epoch to 0, refuses NaN and infinities", () => {
    expect([normalizeDueMs(5), normalizeDueMs(5.01), normalizeDueMs(-1), normalizeDueMs(-0.5), normalizeDueMs(0)]).toEqual([5, 6, 0, 0, 0]);
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) expect(() => normalizeDueMs(bad)).toThrow(RangeError);
  });
});

suite("TimerSchedule", () => {
  it("orders due timers by due time, then room, then key, and takes at most the limit", () => {
    const s = new TimerSchedule();
    s.set("subs", "b", 20);
    s.set("log", "z", 20);
    s.set("log", "a", 20);
    s.set("streams", "expiry", 10);
    s.set("subs", "later", 100);
    expect(s.due(50, 10)).toEqual([
      { room: "streams", key: "expiry", dueMs: 10 },
      { room: "log", key: "a", dueMs: 20 },
      { room: "log", key: "z", dueMs: 20 },
      { room: "subs", key: "b", dueMs: 20 },
    ]);
    expect(s.due(50, 2).map((t) => t.key)).toEqual(["expiry", "a"]);
    expect(s.due(9, 10)).toEqual([]);
    expect(s.due(50, 0)).toEqual([]);
    expect(s.size).toBe(5);
  });

  it("one entry per (room, key): setting again moves it; clearRoom removes only that room", () => {
    const s = new TimerSchedule();
    s.set("a", "k", 5);
    s.set("a", "k", 50);
    s.set("b", "k", 7);
    expect([s.size, s.get("a", "k"), s.earliest()]).toEqual([2, 50, 7]);
    expect(s.clearRoom("b")).toEqual(["k"]);
    expect([s.size, s.get("b", "k"), s.earliest()]).toEqual([1, undefined, 50]);
    expect(s.delete("a", "k")).toBe(true);
    expect(s.delete("a", "k")).toBe(false);
    expect([s.size, s.earliest()]).toEqual([0, undefined]);
  });

  it("refuses due times that are not non-negative integers", () => {
    const s = new TimerSchedule();
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => s.set("a", "k", bad)).toThrow(RangeError);
    expect(s.size).toBe(0);
  });

  it("earliest() always equals the minimum of the entries, whatever the sequence of changes (property)", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("set" as const), room: fc.constantFrom("a", "b", "c"), key: fc.constantFrom("x", "y", "z"), due: fc.nat(1000) }),
      fc.record({ kind: fc.constant("delete" as const), room: fc.constantFrom("a", "b", "c"), key: fc.constantFrom("x", "y", "z") }),
      fc.record({ kind: fc.constant("clearRoom" as const), room: fc.constantFrom("a", "b", "c") }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const s = new TimerSchedule();
        const model = new Map<string, number>();
        for (const o of ops) {
          if (o.kind === "set") {
            s.set(o.room, o.key, o.due);
            model.set(`${o.room}/${o.key}`, o.due);
          } else if (o.kind === "delete") {
            expect(s.delete(o.room, o.key)).toBe(model.delete(`${o.room}/${o.key}`));
          } else {
            s.clearRoom(o.room);
            for (const k of [...model.keys()]) if (k.startsWith(`${o.room}/`)) model.delete(k);
          }
          const min = model.size === 0 ? undefined : Math.min(...model.values());
          expect(s.earliest()).toBe(min);
          expect(s.size).toBe(model.size);
        }
        const due = s.entries();
        expect(due.map((t) => `${t.room}/${t.key}`).sort()).toEqual([...model.keys()].sort());
        for (let i = 1; i < due.length; i++) expect((due[i - 1] as { dueMs: number }).dueMs).toBeLessThanOrEqual((due[i] as { dueMs: number }).dueMs);
      }),
    );
  });
});
