/**
 * The set of individually acknowledged offsets above a subscription's mark-delete position,
 * kept as sorted, disjoint, non-adjacent closed ranges `[lo, hi]` (Pulsar's ManagedCursor
 * `individualDeletedMessages`, a range set, not one entry per message).
 *
 * Offsets are non-negative safe integers (the partition log's offsets). Every method keeps the
 * set normalised: ranges sorted by `lo`, `hi >= lo`, and a gap of at least one offset between
 * consecutive ranges (adjacent or overlapping ranges are merged on insert).
 *
 * Pure: no I/O, no clock.
 */

/** A closed range of offsets, `lo <= hi`. */
export type OffsetRange = readonly [lo: number, hi: number];

function assertOffset(o: number, what: string): void {
  if (!Number.isSafeInteger(o) || o < 0) throw new RangeError(`${what} must be a non-negative safe integer, got ${o}`);
}

export class AckRangeSet {
  /** Flat sorted pairs: los[i] .. his[i]. Two arrays keep binary search simple. */
  private los: number[] = [];
  private his: number[] = [];

  /** Builds a set from any ranges (unsorted, overlapping or adjacent ranges are fine). */
  static of(ranges: Iterable<OffsetRange>): AckRangeSet {
    const s = new AckRangeSet();
    for (const [lo, hi] of ranges) s.addRange(lo, hi);
    return s;
  }

  clone(): AckRangeSet {
    const s = new AckRangeSet();
    s.los = this.los.slice();
    s.his = this.his.slice();
    return s;
  }

  /** Number of ranges. */
  get rangeCount(): number {
    return this.los.length;
  }

  /** Number of offsets in the set. */
  get size(): number {
    let n = 0;
    for (let i = 0; i < this.los.length; i++) n += this.his[i]! - this.los[i]! + 1;
    return n;
  }

  /** Index of the last range with lo <= o, or -1. */
  private floor(o: number): number {
    let a = 0;
    let b = this.los.length - 1;
    let r = -1;
    while (a <= b) {
      const m = (a + b) >> 1;
      if (this.los[m]! <= o) {
        r = m;
        a = m + 1;
      } else b = m - 1;
    }
    return r;
  }

  has(o: number): boolean {
    const i = this.floor(o);
    return i >= 0 && this.his[i]! >= o;
  }

  /** Adds one offset. @returns true when it was not in the set before. */
  add(o: number): boolean {
    if (this.has(o)) return false;
    this.addRange(o, o);
    return true;
  }

  /**
   * Adds `[lo, hi]`, merging with overlapping and adjacent ranges.
   * @throws RangeError when `lo > hi` or either is not a non-negative safe integer.
   */
  addRange(lo: number, hi: number): void {
    assertOffset(lo, "lo");
    assertOffset(hi, "hi");
    if (lo > hi) throw new RangeError(`range lo ${lo} > hi ${hi}`);
    // First range that could touch [lo, hi]: the floor of lo - 1 (adjacent counts).
    let i = this.floor(lo - 1);
    if (i < 0 || this.his[i]! < lo - 1) i += 1;
    let j = i;
    let nlo = lo;
    let nhi = hi;
    while (j < this.los.length && this.los[j]! <= hi + 1) {
      nlo = Math.min(nlo, this.los[j]!);
      nhi = Math.max(nhi, this.his[j]!);
      j++;
    }
    this.los.splice(i, j - i, nlo);
    this.his.splice(i, j - i, nhi);
  }

  /**
   * Removes one offset, splitting its range when it is inside one.
   * @returns true when it was in the set.
   */
  delete(o: number): boolean {
    const i = this.floor(o);
    if (i < 0 || this.his[i]! < o) return false;
    const lo = this.los[i]!;
    const hi = this.his[i]!;
    if (lo === hi) {
      this.los.splice(i, 1);
      this.his.splice(i, 1);
    } else if (o === lo) this.los[i] = o + 1;
    else if (o === hi) this.his[i] = o - 1;
    else {
      this.his[i] = o - 1;
      this.los.splice(i + 1, 0, o + 1);
      this.his.splice(i + 1, 0, hi);
    }
    return true;
  }

  /** Drops every offset `<= o` (used when the mark-delete position moves to `o`). */
  removeThrough(o: number): void {
    let k = 0;
    while (k < this.los.length && this.his[k]! <= o) k++;
    if (k > 0) {
      this.los.splice(0, k);
      this.his.splice(0, k);
    }
    if (this.los.length > 0 && this.los[0]! <= o) this.los[0] = o + 1;
  }

  /** Removes everything. */
  clear(): void {
    this.los = [];
    this.his = [];
  }

  /** The lowest range, if any. */
  first(): OffsetRange | undefined {
    return this.los.length > 0 ? [this.los[0]!, this.his[0]!] : undefined;
  }

  /** Ranges in ascending order (a copy). */
  ranges(): OffsetRange[] {
    return this.los.map((lo, i) => [lo, this.his[i]!] as const);
  }

  /** Number of offsets of the set inside `[lo, hi]`. */
  countIn(lo: number, hi: number): number {
    if (lo > hi) return 0;
    let n = 0;
    for (let i = 0; i < this.los.length; i++) {
      const a = Math.max(lo, this.los[i]!);
      const b = Math.min(hi, this.his[i]!);
      if (a <= b) n += b - a + 1;
    }
    return n;
  }

  /** The first offset `>= from` that is NOT in the set. */
  nextAbsent(from: number): number {
    const i = this.floor(from);
    if (i >= 0 && this.his[i]! >= from) return this.his[i]! + 1;
    return from;
  }

  /**
   * The offsets of `[lo, hi)` NOT in the set, as closed ranges in ascending order
   * (the unacknowledged "holes" of a backlog).
   */
  gaps(lo: number, hiExclusive: number): OffsetRange[] {
    const out: [number, number][] = [];
    let cur = lo;
    for (let i = 0; i < this.los.length && cur < hiExclusive; i++) {
      if (this.his[i]! < cur) continue;
      if (this.los[i]! > cur) out.push([cur, Math.min(this.los[i]! - 1, hiExclusive - 1)]);
      cur = Math.max(cur, this.his[i]! + 1);
    }
    if (cur < hiExclusive) out.push([cur, hiExclusive - 1]);
    return out;
  }

  /** Asserts the normalised form (sorted, disjoint, non-adjacent). @throws Error on a violation. */
  assertValid(): void {
    for (let i = 0; i < this.los.length; i++) {
      assertOffset(this.los[i]!, "lo");
      assertOffset(this.his[i]!, "hi");
      if (this.los[i]! > this.his[i]!) throw new Error(`ack range ${i} has lo > hi`);
      if (i > 0 && this.los[i]! <= this.his[i - 1]! + 1) throw new Error(`ack ranges ${i - 1} and ${i} overlap or touch`);
    }
  }
}

/**
 * Default cap on the ack ranges written to storage, Pulsar's `managedLedgerMaxUnackedRangesToPersist`
 * (10,000 in current Pulsar; 1,000 when it was introduced in apache/pulsar PR #276).
 */
export const DEFAULT_MAX_ACK_RANGES_TO_PERSIST = 10_000;

/** The compact form of ack ranges and how many ranges the cap left out. */
export interface EncodedAckRanges {
  /** See {@link encodeAckRanges}. Empty string for no ranges. */
  readonly text: string;
  /** Ranges beyond the cap that were NOT written (0 normally). */
  readonly droppedRanges: number;
}

/**
 * Encodes the ranges above `markDelete` compactly: each range as `<gap>.<len>` in base 36, joined
 * by `,`, where `gap` is the number of unacknowledged offsets between the previous range's end
 * (or `markDelete`) and this range's start, and `len` is the range length minus one. So
 * mark-delete 1 with ranges `[3..4], [7]` encodes as `1.1,2.0`. A range costs at most ~23
 * characters, so 10,000 ranges stay under 230 KB (well inside a Durable Object SQLite value).
 *
 * Past `maxRanges` the LOWEST ranges (nearest the mark-delete position) are kept and the rest
 * dropped, as Pulsar truncates past `managedLedgerMaxUnackedRangesToPersist`: after a restore the
 * dropped acks are forgotten and those messages are delivered again (duplicates, never a loss).
 * The count of dropped ranges is returned so the caller can report it.
 *
 * @throws RangeError when a range is at or below `markDelete` (the set is not normalised to it).
 */
export function encodeAckRanges(set: AckRangeSet, markDelete: number, maxRanges = DEFAULT_MAX_ACK_RANGES_TO_PERSIST): EncodedAckRanges {
  const ranges = set.ranges();
  const kept = ranges.slice(0, Math.max(0, maxRanges));
  let prev = markDelete;
  const parts: string[] = [];
  for (const [lo, hi] of kept) {
    if (lo <= prev + 1) throw new RangeError(`ack range [${lo}, ${hi}] touches the mark-delete position or the previous range`);
    parts.push(`${(lo - prev - 1).toString(36)}.${(hi - lo).toString(36)}`);
    prev = hi;
  }
  return { text: parts.join(","), droppedRanges: ranges.length - kept.length };
}

const PART = /^([0-9a-z]{1,11})\.([0-9a-z]{1,11})$/;

/**
 * Decodes {@link encodeAckRanges}' text relative to `markDelete`.
 * @throws RangeError on malformed text (corrupt storage: the caller fails loudly rather than guess).
 */
export function decodeAckRanges(text: string, markDelete: number): AckRangeSet {
  const set = new AckRangeSet();
  if (text === "") return set;
  let prev = markDelete;
  for (const part of text.split(",")) {
    const m = PART.exec(part);
    if (m === null) throw new RangeError(`malformed ack range ${JSON.stringify(part)}`);
    const gap = Number.parseInt(m[1]!, 36);
    const len = Number.parseInt(m[2]!, 36);
    if (gap < 1) throw new RangeError(`ack range gap must be >= 1, got ${gap}`);
    const lo = prev + 1 + gap;
    const hi = lo + len;
    if (!Number.isSafeInteger(hi)) throw new RangeError("ack range offset overflows");
    set.addRange(lo, hi);
    prev = hi;
  }
  return set;
}
