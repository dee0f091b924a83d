/**
 * An in-memory tail cache of record values for a stream's partition object: the values of
 * the most recent records appended through the stream API, up to a byte budget.
 *
 * Why: readers of a stream mostly read what was just written (live tails, catch-up after a
 * short disconnect). Reading it back from SQLite costs a row fetch and a batch scan per
 * append (a stream of 1 KiB appends has 1024 rows per MiB), which dominates catch-up reads.
 * Log systems answer such reads from memory: Kafka from the page cache, Pulsar from its
 * managed-ledger cache. Values at a position never change, so a cached value is never stale.
 *
 * The cache holds one contiguous offset range [start, end). Appending at `end` extends it;
 * appending anywhere else (records were appended around it, e.g. by a native producer) starts
 * it over. Reads take what the cache has and continue from storage beyond it.
 *
 * Pure module: no Workers imports.
 */
export class ValueCache {
  readonly #maxBytes: number;
  /** Values of offsets [start, end); `#head` indexes the value at `start`. */
  #values: (Uint8Array | null)[] = [];
  #head = 0;
  #start = 0;
  #bytes = 0;

  /** @param maxBytes budget of cached value bytes; the oldest values go first beyond it */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** First cached offset. */
  get start(): number {
    return this.#start;
  }

  /** Offset after the last cached value. */
  get end(): number {
    return this.#start + this.#values.length - this.#head;
  }

  /** Cached value bytes. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Records that `values` were appended at `baseOffset`, `baseOffset + 1`, ... */
  append(baseOffset: number, values: readonly (Uint8Array | null)[]): void {
    if (baseOffset !== this.end || this.#values.length === this.#head) this.reset(baseOffset);
    for (const v of values) {
      this.#values.push(v);
      this.#bytes += v?.length ?? 0;
    }
    while (this.#bytes > this.#maxBytes && this.#head < this.#values.length) {
      this.#bytes -= this.#values[this.#head]?.length ?? 0;
      this.#values[this.#head] = null;
      this.#head++;
      this.#start++;
    }
    // Drop evicted slots once they are the larger part of the array (amortised O(1)).
    if (this.#head > 1024 && this.#head * 2 > this.#values.length) {
      this.#values = this.#values.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Empties the cache; the next append at `offset` starts it. */
  reset(offset = 0): void {
    this.#values = [];
    this.#head = 0;
    this.#start = offset;
    this.#bytes = 0;
  }

  /**
   * Appends to `out` the cached values from `from` on, below `until`, stopping before
   * `maxBytes` of values would be exceeded (counting `bytesSoFar`; when `out` is empty the
   * first value always goes in).
   * @returns the offset after the last value taken (`from` when the cache does not hold `from`)
   */
  read(from: number, until: number, maxBytes: number, bytesSoFar: number, out: (Uint8Array | null)[]): number {
    if (from < this.#start || from >= this.end) return from;
    let next = from;
    let bytes = bytesSoFar;
    const stop = Math.min(until, this.end);
    for (let i = this.#head + (from - this.#start); next < stop; i++) {
      const v = this.#values[i] ?? null;
      const len = v?.length ?? 0;
      if (out.length > 0 && bytes + len > maxBytes) break;
      out.push(v);
      bytes += len;
      next++;
    }
    return next;
  }
}
