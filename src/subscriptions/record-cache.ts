/**
 * The subscriptions room's cache of decoded record batches, so that dispatch reads the log's
 * SQLite once per batch rather than once per subscription and per delivered message.
 *
 * Why: every append dispatches to every subscription of the partition, and each delivery looks
 * its record up again; without this cache each of those lookups was a SQL read that copied the
 * whole stored batch out of SQLite (100 subscriptions x 100 records of one append = 10,000
 * reads of the same batch; bench/subscriptions.ts, docs/benchmarks.md "Subscriptions").
 *
 * Pure: no I/O. Batches are given decoded (their records in offset order, as
 * `decodeBatch(...).records`), keyed by their base offset; at most `maxBatches` are kept, the
 * oldest inserted evicted first. A batch is found by the offsets of its first and last records,
 * so an offset in a gap (no record, e.g. after compaction) is never answered from the cache.
 */
import type { LogRecord } from "../codec/types.ts";

/** Batches kept. @default 64 */
export const DEFAULT_RECORD_CACHE_BATCHES = 64;

export class RecordCache {
  /** Base offset -> records, in insertion order (the eviction order). */
  readonly #byBase = new Map<number, LogRecord[]>();
  /** The same batches sorted by their first record's offset (binary search by offset). */
  #sorted: LogRecord[][] = [];
  readonly maxBatches: number;

  /** @param maxBatches batches kept, >= 1. @default DEFAULT_RECORD_CACHE_BATCHES */
  constructor(maxBatches: number = DEFAULT_RECORD_CACHE_BATCHES) {
    if (!Number.isSafeInteger(maxBatches) || maxBatches < 1) throw new RangeError(`maxBatches must be an integer >= 1, got ${maxBatches}`);
    this.maxBatches = maxBatches;
  }

  get size(): number {
    return this.#byBase.size;
  }

  /** The decoded records of the stored batch at `baseOffset`: cached, else `decode()`d and cached. */
  batch(baseOffset: number, decode: () => LogRecord[]): LogRecord[] {
    const hit = this.#byBase.get(baseOffset);
    if (hit !== undefined) return hit;
    const records = decode();
    if (this.#byBase.size >= this.maxBatches) {
      const [oldBase, old] = this.#byBase.entries().next().value as [number, LogRecord[]];
      this.#byBase.delete(oldBase);
      this.#sorted = this.#sorted.filter((b) => b !== old);
    }
    this.#byBase.set(baseOffset, records);
    const first = records[0];
    if (first !== undefined) this.#sorted.splice(this.#indexAfter(first.offset), 0, records);
    return records;
  }

  /** The cached batch whose first record offset <= offset <= its last record offset, if any. */
  holding(offset: number): LogRecord[] | undefined {
    const i = this.#indexAfter(offset) - 1;
    const b = this.#sorted[i];
    return b !== undefined && offset <= b[b.length - 1]!.offset ? b : undefined;
  }

  /** The cached record at `offset` (binary search in the batch holding it), if a cached batch holds one. */
  record(offset: number): LogRecord | undefined {
    const b = this.holding(offset);
    if (b === undefined) return undefined;
    let lo = 0;
    let hi = b.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (b[mid]!.offset < offset) lo = mid + 1;
      else hi = mid;
    }
    const r = b[lo];
    return r !== undefined && r.offset === offset ? r : undefined;
  }

  /**
   * Records with `from <= offset < end` in offset order, at most `max`, from cached batches
   * only; null when an offset in between is not in a cached batch (read the log then). The
   * walk goes from the batch holding `from` to the batch holding the offset after its last
   * record, and so on: it stops at the first offset no cached batch holds.
   */
  read(from: number, end: number, max: number): LogRecord[] | null {
    const out: LogRecord[] = [];
    let at = from;
    while (at < end && out.length < max) {
      const b = this.holding(at);
      if (b === undefined) return null;
      for (const r of b) {
        if (r.offset < at || r.offset >= end) continue;
        out.push(r);
        if (out.length >= max) return out;
      }
      at = b[b.length - 1]!.offset + 1;
    }
    return out;
  }

  clear(): void {
    this.#byBase.clear();
    this.#sorted = [];
  }

  /** The index of the first sorted batch whose first offset is > offset. */
  #indexAfter(offset: number): number {
    let lo = 0;
    let hi = this.#sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#sorted[mid]![0]!.offset <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
