/**
 * An in-memory tail cache for a stream's partition object: the bytes of the most recent
 * records appended through the stream API, stored back to back, up to a byte budget.
 *
 * Why: readers of a stream mostly read what was just written (live tails, catch-up after a
 * short disconnect). Reading it back from SQLite costs a row fetch and a batch scan per
 * append (a stream of 1 KiB appends has 1024 rows per MiB), which dominates catch-up reads.
 * Log systems answer such reads from memory: Kafka from the page cache, Pulsar from its
 * managed-ledger cache. Values at a position never change, so cached bytes are never stale.
 *
 * Why back to back: a read answer is the records' values concatenated (byte streams) or
 * joined by commas (JSON streams). Stored as one byte sequence, each value followed by the
 * stream's `separator` (`,` for JSON, nothing otherwise), any range of records is one range
 * of bytes, which a read hands out as a few views (one per buffer it touches) instead of
 * copying value by value: per-record work was the larger part of a cached read.
 *
 * The bytes live in "slabs" (buffers of 16 KiB growing to 1 MiB, so an idle small stream
 * holds little), filled in order; a value may continue from one slab into the next. Bytes
 * once written are never modified, and slabs are dropped (never reused) when the oldest
 * records are evicted, so a view handed out stays valid for as long as its holder keeps it.
 *
 * The cache holds one contiguous offset range [start, end). Appending at `end` extends it;
 * appending anywhere else (records were appended around it, e.g. by a native producer), or
 * with another separator, starts it over.
 *
 * Pure module: no Workers imports.
 */

/** Smallest and largest slab. */
export const MIN_SLAB_BYTES = 16 * 1024;
export const MAX_SLAB_BYTES = 1024 * 1024;
/** What one cached record costs beyond its bytes (its end position), counted against the budget. */
export const RECORD_OVERHEAD_BYTES = 16;

const EMPTY = new Uint8Array(0);

interface Slab {
  /** Position of `bytes[0]` in the cache's byte sequence (positions only grow). */
  pos: number;
  bytes: Uint8Array;
}

export class ByteCache {
  readonly #maxBytes: number;
  #separator: Uint8Array = EMPTY;
  /** Slabs covering [#slabs[0].pos, #endPos) and beyond (room in the last one), in order. */
  #slabs: Slab[] = [];
  /** End position of each cached record's bytes (value + separator); `#head` indexes record `start`. */
  #ends: number[] = [];
  #head = 0;
  #start = 0;
  /** Position where record `start`'s bytes begin. */
  #startPos = 0;
  /** Position after the last record's bytes. */
  #endPos = 0;

  /** @param maxBytes budget: cached bytes plus {@link RECORD_OVERHEAD_BYTES} per record; the oldest records go first beyond it */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** First cached offset. */
  get start(): number {
    return this.#start;
  }

  /** Offset after the last cached record. */
  get end(): number {
    return this.#start + this.#ends.length - this.#head;
  }

  /** Cached bytes (values and separators). */
  get bytes(): number {
    return this.#endPos - this.#startPos;
  }

  /** Bytes stored after each value. */
  get separator(): Uint8Array {
    return this.#separator;
  }

  /**
   * Records that `values` were appended at `baseOffset`, `baseOffset + 1`, ...; each is stored
   * followed by `separator`. The values are copied.
   */
  append(baseOffset: number, values: readonly Uint8Array[], separator: Uint8Array = EMPTY): void {
    if (baseOffset !== this.end || this.end === this.#start || !sameBytes(separator, this.#separator)) this.reset(baseOffset, separator);
    for (const v of values) {
      this.#write(v);
      if (separator.length > 0) this.#write(separator);
      this.#ends.push(this.#endPos);
    }
    this.#evict();
  }

  /** Empties the cache; the next append at `offset` (with `separator`) starts it. */
  reset(offset = 0, separator: Uint8Array = EMPTY): void {
    this.#separator = separator;
    this.#slabs = [];
    this.#ends = [];
    this.#head = 0;
    this.#start = offset;
    this.#startPos = 0;
    this.#endPos = 0;
  }

  /**
   * How far a read from `from` can go in the cache: the largest `next <= until` such that the
   * bytes of records [from, next) are at most `maxBytes`, or `from + 1` when even the first
   * record is larger and `atLeastOne` is set.
   * @returns `next` (`from` when the cache does not hold `from`)
   */
  span(from: number, until: number, maxBytes: number, atLeastOne: boolean): number {
    const end = this.end;
    if (from < this.#start || from >= end || until <= from) return from;
    const stop = Math.min(until, end);
    const limit = this.#pos(from) + maxBytes;
    // Largest k in [from, stop] whose start position (end of record k - 1) is within the limit.
    let lo = from;
    let hi = stop;
    while (lo < hi) {
      const mid = lo + Math.ceil((hi - lo) / 2);
      if (this.#pos(mid) <= limit) lo = mid;
      else hi = mid - 1;
    }
    return lo === from && atLeastOne ? from + 1 : lo;
  }

  /** Bytes of records [from, next), which the cache holds (values and separators). */
  byteLength(from: number, next: number): number {
    return this.#pos(next) - this.#pos(from);
  }

  /**
   * Appends to `out` views of the bytes of records [from, next) (values and separators), one
   * per slab the range touches. The views stay valid: cached bytes are never overwritten.
   * @returns the number of bytes
   */
  views(from: number, next: number, out: Uint8Array[]): number {
    this.#check(from, next);
    const p0 = this.#pos(from);
    const q = this.#pos(next);
    let p = p0;
    for (let i = this.#slabAt(p); p < q; i++) {
      const s = this.#slabs[i] as Slab;
      const a = p - s.pos;
      const b = Math.min(q - s.pos, s.bytes.length);
      out.push(s.bytes.subarray(a, b));
      p += b - a;
    }
    return q - p0;
  }

  /** A copy of the value at `offset` (without its separator), which the cache holds. */
  value(offset: number): Uint8Array {
    this.#check(offset, offset + 1);
    const parts: Uint8Array[] = [];
    const n = this.views(offset, offset + 1, parts) - this.#separator.length;
    const out = new Uint8Array(n);
    let pos = 0;
    for (const p of parts) {
      const take = Math.min(p.length, n - pos);
      out.set(take === p.length ? p : p.subarray(0, take), pos);
      pos += take;
    }
    return out;
  }

  #check(from: number, next: number): void {
    if (from < this.#start || next > this.end || next < from) throw new RangeError(`records [${from}, ${next}) are not all cached ([${this.#start}, ${this.end}))`);
  }

  /** Position where record `offset`'s bytes begin (start <= offset <= end). */
  #pos(offset: number): number {
    return offset === this.#start ? this.#startPos : (this.#ends[this.#head + offset - this.#start - 1] as number);
  }

  /** Index of the slab holding position `p` (which is cached). */
  #slabAt(p: number): number {
    let lo = 0;
    let hi = this.#slabs.length - 1;
    while (lo < hi) {
      const mid = lo + Math.ceil((hi - lo) / 2);
      if ((this.#slabs[mid] as Slab).pos <= p) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  #write(src: Uint8Array): void {
    let rest = src;
    while (rest.length > 0) {
      let slab = this.#slabs[this.#slabs.length - 1];
      let room = slab === undefined ? 0 : slab.pos + slab.bytes.length - this.#endPos;
      if (slab === undefined || room === 0) {
        // Grow with the cache: small streams stay small, busy ones get few large slabs.
        const size = Math.min(MAX_SLAB_BYTES, Math.max(MIN_SLAB_BYTES, this.bytes, rest.length));
        slab = { pos: this.#endPos, bytes: new Uint8Array(size) };
        this.#slabs.push(slab);
        room = size;
      }
      const n = Math.min(room, rest.length);
      slab.bytes.set(n === rest.length ? rest : rest.subarray(0, n), this.#endPos - slab.pos);
      this.#endPos += n;
      rest = rest.subarray(n);
    }
  }

  #evict(): void {
    const overhead = (n: number) => n * RECORD_OVERHEAD_BYTES;
    let count = this.#ends.length - this.#head;
    while (count > 0 && this.#endPos - this.#startPos + overhead(count) > this.#maxBytes) {
      this.#startPos = this.#ends[this.#head] as number;
      this.#head++;
      this.#start++;
      count--;
    }
    // Slabs wholly before the first cached byte (or all of them, when nothing is left).
    let drop = 0;
    while (drop < this.#slabs.length) {
      const s = this.#slabs[drop] as Slab;
      if (count > 0 && s.pos + s.bytes.length > this.#startPos) break;
      drop++;
    }
    if (drop > 0) this.#slabs = this.#slabs.slice(drop);
    if (count === 0) {
      this.#ends = [];
      this.#head = 0;
      this.#startPos = this.#endPos;
    } else if (this.#head > 1024 && this.#head * 2 > this.#ends.length) {
      // Drop evicted ends once they are the larger part of the array (amortised O(1)).
      this.#ends = this.#ends.slice(this.#head);
      this.#head = 0;
    }
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
