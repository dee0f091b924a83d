/**
 * The pure part of the base's "one alarm, many timers" (durable-objects/base.ts): the
 * in-memory mirror of the `_schedule` table and the retry backoff of a failed timer. No
 * Workers imports, so the unit tier tests it in node.
 *
 * A timer is `(room, key) -> dueMs` (epoch milliseconds, an integer). One entry per
 * (room, key): setting a key again moves it.
 */

/** One timer that is due, as handed to a room's `onTimer`. */
export interface DueTimer {
  room: string;
  key: string;
  /** When it was due (epoch ms); it runs at this time or later, never earlier. */
  dueMs: number;
}

/** Retry delay of the first failure of a timer (ms); doubles per consecutive failure. */
export const TIMER_RETRY_BASE_MS = 1_000;
/** Longest retry delay of a failing timer (ms): a broken room is retried at least this often. */
export const TIMER_RETRY_MAX_MS = 5 * 60_000;

/**
 * Delay before retrying a timer whose handler threw `failures` times in a row (1 = first
 * failure): TIMER_RETRY_BASE_MS · 2^(failures-1), capped at TIMER_RETRY_MAX_MS.
 * @throws RangeError when `failures` is not a positive integer (a bug).
 */
export function timerRetryDelayMs(failures: number): number {
  if (!Number.isInteger(failures) || failures < 1) throw new RangeError(`timer failures must be a positive integer, got ${failures}`);
  // 2^30 s is far past the cap: stop doubling before the number grows silly.
  return Math.min(TIMER_RETRY_MAX_MS, TIMER_RETRY_BASE_MS * 2 ** Math.min(failures - 1, 30));
}

/** Checks a stored timer's due time: a non-negative integer number of epoch ms. */
export function checkDueMs(dueMs: number): void {
  if (!Number.isSafeInteger(dueMs) || dueMs < 0) throw new RangeError(`timer due time must be a non-negative integer of epoch ms, got ${dueMs}`);
}

/**
 * A requested due time as stored: fractions round up (a timer never runs early) and a time
 * before the epoch becomes 0 (a due time in the past means "at once", whatever its value).
 * @throws RangeError for NaN or an infinite time (a bug of the caller).
 */
export function normalizeDueMs(dueMs: number): number {
  if (!Number.isFinite(dueMs)) throw new RangeError(`timer due time must be a finite number of epoch ms, got ${dueMs}`);
  return Math.max(0, Math.ceil(dueMs));
}

/**
 * The schedule in memory: timers by room then key, with the earliest due time cached
 * (recomputed by one scan only when the earliest entry is moved or removed).
 */
export class TimerSchedule {
  readonly #rooms = new Map<string, Map<string, number>>();
  #size = 0;
  /** Earliest due time, undefined when empty; null when it must be recomputed. */
  #earliest: number | undefined | null = undefined;

  get size(): number {
    return this.#size;
  }

  get(room: string, key: string): number | undefined {
    return this.#rooms.get(room)?.get(key);
  }

  /** Adds or moves a timer. */
  set(room: string, key: string, dueMs: number): void {
    checkDueMs(dueMs);
    let keys = this.#rooms.get(room);
    if (keys === undefined) this.#rooms.set(room, (keys = new Map()));
    const before = keys.get(key);
    if (before === undefined) this.#size++;
    keys.set(key, dueMs);
    if (this.#earliest === null) return;
    if (this.#earliest === undefined || dueMs < this.#earliest) this.#earliest = dueMs;
    else if (before === this.#earliest && dueMs > before) this.#earliest = null;
  }

  /** Removes a timer. @returns whether it existed. */
  delete(room: string, key: string): boolean {
    const keys = this.#rooms.get(room);
    const before = keys?.get(key);
    if (keys === undefined || before === undefined) return false;
    keys.delete(key);
    if (keys.size === 0) this.#rooms.delete(room);
    this.#size--;
    if (before === this.#earliest) this.#earliest = this.#size === 0 ? undefined : null;
    return true;
  }

  /** Removes every timer of a room. @returns the keys removed. */
  clearRoom(room: string): string[] {
    const keys = this.#rooms.get(room);
    if (keys === undefined) return [];
    const removed = [...keys.keys()];
    for (const k of removed) this.delete(room, k);
    return removed;
  }

  clear(): void {
    this.#rooms.clear();
    this.#size = 0;
    this.#earliest = undefined;
  }

  /** The earliest due time of any timer (epoch ms), or undefined when there is none. */
  earliest(): number | undefined {
    if (this.#earliest === null) {
      let min: number | undefined;
      for (const keys of this.#rooms.values()) for (const due of keys.values()) if (min === undefined || due < min) min = due;
      this.#earliest = min;
    }
    return this.#earliest;
  }

  /**
   * At most `limit` timers due at `nowMs` (dueMs ≤ nowMs), earliest first; ties in room then
   * key order (code-unit order), so the order is the same on every run. Removes nothing.
   */
  due(nowMs: number, limit: number): DueTimer[] {
    const out: DueTimer[] = [];
    if (limit <= 0) return out;
    for (const [room, keys] of this.#rooms) for (const [key, dueMs] of keys) if (dueMs <= nowMs) out.push({ room, key, dueMs });
    out.sort(compareDue);
    if (out.length > limit) out.length = limit;
    return out;
  }

  /** Every timer, earliest first (for tests and diagnostics). */
  entries(): DueTimer[] {
    return this.due(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  }
}

function compareDue(a: DueTimer, b: DueTimer): number {
  return a.dueMs - b.dueMs || (a.room < b.room ? -1 : a.room > b.room ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}
