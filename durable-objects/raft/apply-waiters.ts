/**
 * Callers waiting for the entry they proposed to apply, by Raft index: a proposal's answer in
 * RaftMemberDO and in a replicated partition's replica (durable-objects/partition/replica.ts).
 *
 * A waiter remembers the term it proposed in. When the entry at its index applies, a waiter of
 * the same term gets the entry's answer; a waiter of another term learns that its proposal was
 * lost with a leader change (another leader's entry took the index, so it never commits: Raft's
 * log matching). A waiter not settled within its timeout gets the timeout answer and is dropped
 * (its entry may still commit later: the caller must retry idempotently). Errors (a crash, a
 * destroy) reject every waiter.
 */
export class ApplyWaiters<T> {
  readonly #byIndex = new Map<number, Waiter<T>[]>();

  /**
   * Waits for the entry at `index`, proposed in `term`.
   * @param timeoutMs ms before `timedOut()` answers instead.
   */
  wait(index: number, term: number, timeoutMs: number, timedOut: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let list = this.#byIndex.get(index);
      if (list === undefined) this.#byIndex.set(index, (list = []));
      const w: Waiter<T> = {
        term,
        settle: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        fail: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        const l = this.#byIndex.get(index);
        const at = l?.indexOf(w) ?? -1;
        if (l === undefined || at < 0) return;
        l.splice(at, 1);
        if (l.length === 0) this.#byIndex.delete(index);
        resolve(timedOut());
      }, timeoutMs);
      list.push(w);
    });
  }

  /**
   * The entry at `index` of `term` applied: its waiters of that term get `answer`, the others
   * `lost(theirTerm)`.
   */
  settle(index: number, term: number, answer: () => T, lost: (waiterTerm: number) => T): void {
    const list = this.#byIndex.get(index);
    if (list === undefined) return;
    this.#byIndex.delete(index);
    for (const w of list) w.settle(w.term === term ? answer() : lost(w.term));
  }

  /** Rejects every waiter with `err` (the object crashed or was destroyed). */
  failAll(err: Error): void {
    for (const list of this.#byIndex.values()) for (const w of list) w.fail(err);
    this.#byIndex.clear();
  }
}

interface Waiter<T> {
  term: number;
  settle: (r: T) => void;
  fail: (err: Error) => void;
}
