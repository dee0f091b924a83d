/**
 * The waiters room of a partition: long-poll fetches and stream reads waiting for the next
 * append. In memory only (a waiter is a pending RPC; an evicted object has none). Woken by
 * the log's appends (a listener wired in the switchboard's constructor) and by the stream
 * rooms (a close, a delete), and on destroy.
 *
 * Bounded: at most {@link WAITERS_MAX} waiters; one more wakes the oldest early, whose caller
 * then answers with what it has (an empty fetch is a valid long-poll answer: Kafka answers at
 * max.wait.ms or minBytes, whichever comes first, and a client polls again).
 */

/** Most waiters one partition keeps (each holds a timer and a pending RPC). */
export const WAITERS_MAX = 10_000;

export class WaitersRoom {
  readonly name = "waiters";
  readonly #waiters = new Set<() => void>();
  /** Bound once: the listener the switchboard registers with the log. */
  readonly wake = (): void => {
    const waiters = this.#waiters;
    if (waiters.size === 0) return;
    for (const done of [...waiters]) done();
  };

  /** How many callers are waiting now. */
  get size(): number {
    return this.#waiters.size;
  }

  /** Resolves at the next wake (an append, a close, a destroy), or after `ms`. */
  next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      if (this.#waiters.size >= WAITERS_MAX) {
        const oldest = this.#waiters.values().next();
        if (oldest.done !== true) oldest.value();
      }
      this.#waiters.add(done);
    });
  }
}
