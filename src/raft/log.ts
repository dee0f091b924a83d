/**
 * The in-memory Raft log of one member: a compacted prefix (the snapshot: `snapIndex`,
 * `snapTerm`) followed by the entries `snapIndex + 1 .. lastIndex`. It tracks how much of it
 * is durable (`stableIndex`) for the persistence contract of {@link RaftNode}. Pure.
 *
 * A member keeps its whole uncompacted log in memory; snapshots bound it (docs/RAFT.md).
 */
import type { Entry } from "./types.ts";
import { raftAssert } from "./errors.ts";

export class RaftLog {
  /** Last index covered by the snapshot (0 = none). */
  snapIndex: number;
  /** Term of `snapIndex` (0 = none). */
  snapTerm: number;
  /** entries[i].index === snapIndex + 1 + i. */
  entries: Entry[];
  /** Entries up to this index are durable; above it they are waiting in a Ready. */
  stableIndex: number;

  constructor(snapIndex: number, snapTerm: number, entries: Entry[]) {
    this.snapIndex = snapIndex;
    this.snapTerm = snapTerm;
    this.entries = entries;
    for (let i = 0; i < entries.length; i++) {
      raftAssert(entries[i]!.index === snapIndex + 1 + i, `log: entry ${i} has index ${entries[i]!.index}, expected ${snapIndex + 1 + i}`);
    }
    this.stableIndex = this.lastIndex();
  }

  /** First index still held as an entry (snapIndex + 1). */
  firstIndex(): number {
    return this.snapIndex + 1;
  }

  lastIndex(): number {
    return this.snapIndex + this.entries.length;
  }

  lastTerm(): number {
    const n = this.entries.length;
    return n === 0 ? this.snapTerm : this.entries[n - 1]!.term;
  }

  /** Term of `index`, or undefined when compacted away (below snapIndex) or beyond the end. */
  term(index: number): number | undefined {
    if (index === this.snapIndex) return this.snapTerm;
    if (index < this.snapIndex || index > this.lastIndex()) return undefined;
    return this.entries[index - this.snapIndex - 1]!.term;
  }

  entry(index: number): Entry | undefined {
    if (index <= this.snapIndex || index > this.lastIndex()) return undefined;
    return this.entries[index - this.snapIndex - 1];
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Entries lo..hi inclusive (all must be held). */
  slice(lo: number, hi: number): Entry[] {
    raftAssert(lo > this.snapIndex && hi <= this.lastIndex(), `log: slice ${lo}..${hi} outside ${this.firstIndex()}..${this.lastIndex()}`);
    return this.entries.slice(lo - this.snapIndex - 1, hi - this.snapIndex);
  }

  /** Raft §5.4.1: is (lastIndex, lastTerm) at least as up to date as this log? */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Fast-backtracking hint (etcd-raft's findConflictByTerm): the largest index <= `index` whose
   * term is <= `term`, with that term. Stops at the snapshot (its entries are committed, so the
   * other side has them). Returns [index, term].
   */
  findConflictByTerm(index: number, term: number): [number, number] {
    let i = Math.min(index, this.lastIndex());
    for (; i > this.snapIndex; i--) {
      const t = this.term(i)!;
      if (t <= term) return [i, t];
    }
    return [this.snapIndex, this.snapTerm];
  }

  /** Appends entries that follow lastIndex. */
  append(entries: Entry[]): void {
    for (const e of entries) {
      raftAssert(e.index === this.lastIndex() + 1, `log: append index ${e.index} after last ${this.lastIndex()}`);
      this.entries.push(e);
    }
  }

  /** Drops entries from `index` on (they conflict with the leader's). */
  truncateFrom(index: number): void {
    raftAssert(index > this.snapIndex, `log: truncate at ${index} inside the snapshot (${this.snapIndex})`);
    this.entries.length = Math.max(0, index - this.snapIndex - 1);
    if (this.stableIndex >= index) this.stableIndex = index - 1;
  }

  /** Drops the prefix up to `index` (covered by a snapshot whose last entry has term `term`). */
  compactTo(index: number, term: number): void {
    raftAssert(index >= this.snapIndex, `log: compact to ${index} below snapshot ${this.snapIndex}`);
    if (index <= this.lastIndex()) {
      raftAssert(this.term(index) === term, `log: compact to ${index}: term ${this.term(index)} != ${term}`);
      this.entries = this.entries.slice(index - this.snapIndex);
    } else {
      this.entries = [];
    }
    this.snapIndex = index;
    this.snapTerm = term;
    if (this.stableIndex < index) this.stableIndex = index;
  }

  /** Replaces the whole log by a snapshot at (index, term). */
  restore(index: number, term: number): void {
    this.entries = [];
    this.snapIndex = index;
    this.snapTerm = term;
    this.stableIndex = index;
  }
}
