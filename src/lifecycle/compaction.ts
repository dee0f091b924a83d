/**
 * Log compaction (`cleanup.policy` compact or compact,delete), pure: keep the latest record of
 * each key, offsets unchanged (the log gets gaps), tombstones kept for delete.retention.ms, the
 * active segment never touched. Kafka's LogCleaner / LogCleanerManager, as a restartable state
 * machine that runs in bounded alarm slices.
 *
 * A pass, as Kafka's cleaner:
 * 1. decide ({@link planCompactionPass}): the cleanable range ends at the first uncleanable
 *    offset (the active segment, the high watermark / last stable offset, a segment younger than
 *    min.compaction.lag.ms); the dirty part starts at the clean offset left by the last pass. Run
 *    when dirty / (clean + dirty) >= min.cleanable.dirty.ratio, when the oldest dirty segment is
 *    older than max.compaction.lag.ms (KIP-354), or when a kept tombstone has expired;
 * 2. map: read the dirty batches and record each key's latest offset (the "offset map"),
 *    at most `maxMapKeys` keys (a full map ends the pass early, as Kafka's dedupe buffer does);
 * 3. rewrite: read every batch from the log start to the end of the pass and keep a record iff it
 *    is the latest of its key and not an expired tombstone; emit `rewriteBatch` / `dropBatch`.
 *
 * The key map lives in memory for the whole pass ({@link CompactionState} `latest`): a map step
 * adds its slice's keys to it in place (no copy per step) and persists only what it changed, as
 * blob rows (the slice's mapped keys and offsets, encoded by {@link encodeKeyRows}), or, once the
 * rows would hold more than twice the map's entries, one snapshot of the whole map that replaces
 * them. The rows are there for a restart only; the running pass never reads them.
 *
 * Crash safety: every step returns its commands and a checkpoint, committed in one transaction by
 * the room (the batch rewrites, the key-map rows of `seg_clean_map`, the checkpoint row). A crash
 * between steps restarts from the last checkpoint ({@link restoreCompaction}: the checkpoint names
 * the rows that hold its key map) and redoes at most one slice, and ends in the same log as a run
 * without the crash. Every command is also idempotent (a rewrite keeps a subset of what is there;
 * a key row is written under a fixed sequence number), so even a slice whose writes landed
 * without its checkpoint loses and duplicates nothing when replayed. When the rows a checkpoint
 * names are not all there (that case, or a checkpoint from before the rows existed), the pass
 * maps its dirty range again from its start, as Kafka's cleaner rebuilds its offset map after a
 * restart; the pass keeps its end and its start time, so it cleans exactly as before.
 */
import type { LogBounds } from "../partition/core.ts";
import { segmentEnd, type SegmentRow } from "./segments.ts";

/** Compaction settings of a topic (Kafka's names). */
export interface CompactionConfig {
  /** `cleanup.policy` includes `compact`. */
  compact: boolean;
  /** `delete.retention.ms`: a tombstone stays readable this long after its segment's last append. */
  deleteRetentionMs: number;
  /** `min.compaction.lag.ms`: a segment whose max timestamp is younger is not cleaned. */
  minCompactionLagMs: number;
  /** `max.compaction.lag.ms`: a dirty segment older than this (first append) forces a pass. */
  maxCompactionLagMs: number;
  /** `min.cleanable.dirty.ratio` in [0, 1]. */
  minCleanableDirtyRatio: number;
}

/** A record as the cleaner sees it; the shell decodes batches into these. */
export interface CompactionRecord {
  offset: number;
  /** Key identity (bytes mapped 1:1 to a string by {@link keyId}), or null for no key. */
  key: string | null;
  /** Value is null: a tombstone. An empty value is not a tombstone. */
  tombstone: boolean;
}

/** A stored batch with its records (offset order, offsets within [baseOffset, lastOffset]). */
export interface CompactionBatch {
  baseOffset: number;
  lastOffset: number;
  records: readonly CompactionRecord[];
}

/** Maps key bytes to a string 1:1 (one char per byte), for the key map. */
export function keyId(key: Uint8Array): string {
  let s = "";
  for (let i = 0; i < key.length; i += 8192) s += String.fromCharCode(...key.subarray(i, i + 8192));
  return s;
}

/** What a pass remembers of a segment it cleans: its range and the tombstone anchor. */
export interface PassSegment {
  baseOffset: number;
  /** Exclusive end of the segment's range. */
  end: number;
  lastAppendMs: number;
}

/**
 * The rows of `seg_clean_map` that hold a running pass's key map: sequence numbers
 * [from, to), `entries` (key, offset) pairs in all (replayed in order, a later one wins).
 */
export interface KeyRows {
  from: number;
  to: number;
  entries: number;
}

/** One row of `seg_clean_map`: a slice's key-map delta, or part of a snapshot. */
export interface KeyRow {
  seq: number;
  entries: number;
  /** {@link encodeKeyRows}' format. */
  data: Uint8Array;
}

/** One pass, fixed when it starts. */
export interface CompactionPass {
  /** nowMs when the pass started: tombstone expiry is judged at this time for the whole pass. */
  startedMs: number;
  /** First dirty offset: records from here on are mapped. */
  dirtyFrom: number;
  /** First uncleanable offset (exclusive end of the pass); may shrink when the key map fills up. */
  end: number;
  /** The closed segments the pass covers, offset order. */
  segments: PassSegment[];
  /** Earliest expiry (ms) of the tombstones this pass kept so far, or null. */
  tombstoneExpiryMs: number | null;
}

/**
 * The persisted part of the cleaner's state (the checkpoint row): everything but the key map,
 * which is persisted as rows (`seg_clean_map`, named by `keyRows`) through
 * {@link CompactionCommand} `keyRows`.
 */
export type CompactionCheckpoint =
  /** Between passes. Below `cleanOffset` the log was compacted by a finished pass. */
  | { phase: "idle"; cleanOffset: number; tombstoneExpiryMs: number | null }
  /** Mapping: the batches with lastOffset >= cursor and baseOffset < pass.end are still to read. */
  | { phase: "map"; cleanOffset: number; pass: CompactionPass; cursor: number; keyRows: KeyRows }
  /** Rewriting: the batches with lastOffset >= cursor and baseOffset < pass.end are still to rewrite. */
  | { phase: "rewrite"; cleanOffset: number; pass: CompactionPass; cursor: number; keyRows: KeyRows };

/**
 * The cleaner's state in memory: the checkpoint plus the key map (key -> latest dirty offset) and
 * its estimated size in bytes (see {@link KEY_MAP_ENTRY_BYTES}). The map is owned by the state:
 * {@link compactionStep} in phase `map` adds to it in place and hands it to the next state, so a
 * state that was stepped must not be used again (after a failed commit, restore from the rows).
 */
export type CompactionState = CompactionCheckpoint & { latest: Map<string, number>; mapBytes: number };

export const INITIAL_COMPACTION_STATE: CompactionState = { phase: "idle", cleanOffset: 0, tombstoneExpiryMs: null, latest: new Map(), mapBytes: 0 };

/**
 * Estimated memory of one key-map entry besides its key's bytes (a V8 Map entry, the string
 * header, the hash table's share, a heap number for an offset past 2^31). The map's byte bound
 * counts this plus the key length. Measured in Node 24 (V8): about 69 bytes per entry for keys of
 * 7 bytes and 129 for keys of 100 bytes, so the estimate errs high for longer keys.
 */
export const KEY_MAP_ENTRY_BYTES = 64;

/** A key-map row is cut at about this many bytes (a Durable Object SQLite row holds at most 2 MB). */
export const KEY_ROW_BYTES = 1024 * 1024;

const NO_KEY_ROWS: KeyRows = { from: 0, to: 0, entries: 0 };

/**
 * A write the room applies inside one transaction with the step's other commands. A batch command
 * naming a batch that is no longer stored (retention or deleteRecords removed it since the slice
 * was read) is a no-op.
 */
export type CompactionCommand =
  /** Keep only the records at `keep` in batch `baseOffset`; its base and last offsets stay. */
  | { kind: "rewriteBatch"; baseOffset: number; keep: number[] }
  /** Delete batch `baseOffset`: none of its records is kept. */
  | { kind: "dropBatch"; baseOffset: number }
  /** Write key-map rows (insert or replace by `seq`), then delete the rows below `dropBelow` (a snapshot replaced them). */
  | { kind: "keyRows"; put: KeyRow[]; dropBelow: number | null }
  /** Delete every row of the key map (a pass starts, ended or was abandoned). */
  | { kind: "keysClear" }
  /** Replace the checkpoint row. Always the last command of a step. */
  | { kind: "checkpoint"; checkpoint: CompactionCheckpoint };

export interface CompactionStepResult {
  state: CompactionState;
  commands: CompactionCommand[];
}

/**
 * Rebuilds the in-memory state after a restart from the checkpoint row and the key-map rows
 * (`rows`: at least those the checkpoint's `keyRows` names; others are ignored). When a row it
 * names is missing, or the checkpoint predates `keyRows`, a running pass starts its map phase
 * again from its first dirty offset, with the same end and start time (module comment).
 * @throws Error when a named row's data is corrupt or truncated (a broken invariant).
 */
export function restoreCompaction(checkpoint: CompactionCheckpoint, rows: Iterable<KeyRow>): CompactionState {
  const cp = structuredClone(checkpoint);
  if (cp.phase === "idle") return { ...cp, latest: new Map(), mapBytes: 0 };
  const named = cp.keyRows as KeyRows | undefined;
  if (named !== undefined) {
    const found = new Map<number, KeyRow>();
    for (const r of rows) if (r.seq >= named.from && r.seq < named.to) found.set(r.seq, r);
    if (found.size === named.to - named.from) {
      const latest = new Map<string, number>();
      let mapBytes = 0;
      for (let seq = named.from; seq < named.to; seq++) mapBytes = decodeKeyRow(found.get(seq)!.data, latest, mapBytes);
      return { ...cp, latest, mapBytes };
    }
  }
  return { phase: "map", cleanOffset: cp.cleanOffset, pass: cp.pass, cursor: cp.pass.dirtyFrom, keyRows: NO_KEY_ROWS, latest: new Map(), mapBytes: 0 };
}

/** The persisted part of `state`. */
export function checkpointOf(state: CompactionState): CompactionCheckpoint {
  const { latest: _latest, mapBytes: _mapBytes, ...checkpoint } = state;
  return structuredClone(checkpoint);
}

/**
 * Encodes key-map entries as rows from sequence number `seq` on, each of about
 * {@link KEY_ROW_BYTES} (an entry is never split). Per entry: the key length (unsigned LEB128),
 * the key's bytes (the key is a {@link keyId} string, one char per byte), the offset (8 bytes,
 * big-endian). Replaying the rows in order into a map rebuilds it, a later entry of a key winning
 * ({@link restoreCompaction}).
 * @throws Error when a key has a char above 0xff (not a keyId string).
 */
export function encodeKeyRows(entries: Iterable<readonly [string, number]>, seq: number): KeyRow[] {
  const w = new KeyRowWriter(seq);
  for (const [key, offset] of entries) w.add(key, offset);
  return w.finish();
}

/** Builds the rows of {@link encodeKeyRows} one entry at a time (no tuple per entry). */
class KeyRowWriter {
  readonly #rows: KeyRow[] = [];
  readonly #seq: number;
  #buf = new Uint8Array(64 * 1024);
  #view = new DataView(this.#buf.buffer);
  #pos = 0;
  #count = 0;

  constructor(seq: number) {
    this.#seq = seq;
  }

  add(key: string, offset: number): void {
    const need = key.length + 13;
    if (this.#pos > 0 && this.#pos + need > KEY_ROW_BYTES) this.#flush();
    if (this.#pos + need > this.#buf.length) {
      const grown = new Uint8Array(Math.max(this.#pos + need, Math.min(2 * this.#buf.length, KEY_ROW_BYTES)));
      grown.set(this.#buf.subarray(0, this.#pos));
      this.#buf = grown;
      this.#view = new DataView(grown.buffer);
    }
    const buf = this.#buf;
    let pos = this.#pos;
    let n = key.length;
    while (n >= 0x80) {
      buf[pos++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    buf[pos++] = n;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      if (c > 0xff) throw new Error(`key-map key has a char ${c} above 0xff`);
      buf[pos++] = c;
    }
    this.#view.setUint32(pos, Math.floor(offset / 0x1_0000_0000));
    this.#view.setUint32(pos + 4, offset >>> 0);
    this.#pos = pos + 8;
    this.#count++;
  }

  #flush(): void {
    this.#rows.push({ seq: this.#seq + this.#rows.length, entries: this.#count, data: this.#buf.slice(0, this.#pos) });
    this.#pos = 0;
    this.#count = 0;
  }

  finish(): KeyRow[] {
    if (this.#count > 0) this.#flush();
    return this.#rows;
  }
}

/** Replays one row of {@link encodeKeyRows} into `into`; answers the map's byte estimate after it. */
function decodeKeyRow(data: Uint8Array, into: Map<string, number>, mapBytes: number): number {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let pos = 0;
  while (pos < data.length) {
    let len = 0;
    let shift = 0;
    for (;;) {
      if (pos >= data.length || shift > 28) throw new Error(`key-map row is corrupt at byte ${pos}`);
      const b = data[pos++]!;
      len |= (b & 0x7f) << shift;
      if (b < 0x80) break;
      shift += 7;
    }
    if (pos + len + 8 > data.length) throw new Error(`key-map row is truncated at byte ${pos}`);
    const key = keyId(data.subarray(pos, pos + len));
    pos += len;
    const offset = view.getUint32(pos) * 0x1_0000_0000 + view.getUint32(pos + 4);
    pos += 8;
    const size = into.size;
    into.set(key, offset);
    if (into.size !== size) mapBytes += key.length + KEY_MAP_ENTRY_BYTES;
  }
  return mapBytes;
}

export type CompactionDecision =
  | { run: true; reason: "dirty-ratio" | "max-compaction-lag" | "tombstone-expiry"; pass: CompactionPass; dirtyRatio: number }
  | { run: false; reason: "not-compacted" | "busy" | "nothing-cleanable" | "below-ratio"; dirtyRatio: number };

export interface CompactionInput {
  segments: readonly SegmentRow[];
  bounds: LogBounds;
  /** Last stable offset when transactions exist (records at or above are not cleaned), else null. */
  lastStableOffset: number | null;
  nowMs: number;
}

/**
 * Decides whether a pass starts now and over what range (Kafka's LogCleanerManager
 * grabFilthiestCompactedLog and cleanableOffsets). Only closed segments that end at or below
 * min(highWatermark, lastStableOffset) and, when min.compaction.lag.ms > 0, whose max timestamp
 * is at least that old are cleanable (LogCleanerManager.cleanableOffsets checks the lag only when
 * it is > 0); the first that is not ends the range. Segments marked `deleting` are ignored.
 * Bytes are the segments' current sizes: clean = cleanable bytes below the clean offset, dirty =
 * cleanable bytes at or above it.
 */
export function planCompactionPass(state: CompactionState, input: CompactionInput, cfg: CompactionConfig): CompactionDecision {
  if (!cfg.compact) return { run: false, reason: "not-compacted", dirtyRatio: 0 };
  if (state.phase !== "idle") return { run: false, reason: "busy", dirtyRatio: 0 };
  const { segments, bounds, nowMs } = input;
  const limit = Math.min(bounds.highWatermark, input.lastStableOffset ?? Number.POSITIVE_INFINITY);
  const dirtyFrom = Math.max(state.cleanOffset, bounds.logStartOffset);
  const passSegments: PassSegment[] = [];
  let clean = 0;
  let dirty = 0;
  let firstDirty: SegmentRow | null = null;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.remote === "deleting") continue;
    const end = segmentEnd(segments, i, bounds.logEndOffset);
    if (end <= bounds.logStartOffset) continue;
    // Kafka applies the lag only when it is > 0: at 0 a record timestamped ahead of this clock
    // (a producer's clock, CreateTime) must not hold the segment, and every later one, back.
    if (!seg.closed || end > limit || (cfg.minCompactionLagMs > 0 && nowMs - seg.maxTimestamp < cfg.minCompactionLagMs)) break;
    passSegments.push({ baseOffset: seg.baseOffset, end, lastAppendMs: seg.lastAppendMs });
    if (end <= dirtyFrom) clean += seg.bytes;
    else {
      dirty += seg.bytes;
      firstDirty ??= seg;
    }
  }
  const dirtyRatio = clean + dirty === 0 ? 0 : dirty / (clean + dirty);
  const last = passSegments[passSegments.length - 1];
  if (last === undefined) return { run: false, reason: "nothing-cleanable", dirtyRatio };
  // The pass never reaches past the cleanable range, even when an earlier pass cleaned further
  // (min.compaction.lag.ms was raised since): then nothing is dirty and only expired tombstones go.
  const pass: CompactionPass = { startedMs: nowMs, dirtyFrom, end: last.end, segments: passSegments, tombstoneExpiryMs: null };
  if (firstDirty !== null && nowMs - firstDirty.firstAppendMs > cfg.maxCompactionLagMs) return { run: true, reason: "max-compaction-lag", pass, dirtyRatio };
  if (dirty > 0 && dirtyRatio >= cfg.minCleanableDirtyRatio) return { run: true, reason: "dirty-ratio", pass, dirtyRatio };
  if (state.tombstoneExpiryMs !== null && state.tombstoneExpiryMs <= nowMs) return { run: true, reason: "tombstone-expiry", pass, dirtyRatio };
  return { run: false, reason: "below-ratio", dirtyRatio };
}

/** Starts `pass` from an idle state: the map phase, reading from the first dirty offset. */
export function startCompaction(state: CompactionState, pass: CompactionPass): CompactionStepResult {
  if (state.phase !== "idle") throw new Error(`a compaction pass is already running (${state.phase})`);
  const next: CompactionState = { phase: "map", cleanOffset: state.cleanOffset, pass: structuredClone(pass), cursor: pass.dirtyFrom, keyRows: NO_KEY_ROWS, latest: new Map(), mapBytes: 0 };
  return { state: next, commands: [{ kind: "keysClear" }, { kind: "checkpoint", checkpoint: checkpointOf(next) }] };
}

/** Abandons a running pass (the topic stopped being compacted, or was truncated past it); nothing is lost. */
export function abortCompaction(state: CompactionState): CompactionStepResult {
  const next: CompactionState = { phase: "idle", cleanOffset: state.cleanOffset, tombstoneExpiryMs: state.phase === "idle" ? state.tombstoneExpiryMs : null, latest: new Map(), mapBytes: 0 };
  return { state: next, commands: [{ kind: "keysClear" }, { kind: "checkpoint", checkpoint: checkpointOf(next) }] };
}

/**
 * The batches the next step reads: those with lastOffset >= `from` and baseOffset < `end`, offset
 * order, at most what one slice may decode; null when idle.
 */
export function compactionReadRange(state: CompactionState): { from: number; end: number } | null {
  return state.phase === "idle" ? null : { from: state.cursor, end: state.pass.end };
}

/** Input of one step: the batches of {@link compactionReadRange}, and whether that was all of them. */
export interface CompactionSlice {
  batches: readonly CompactionBatch[];
  /** True when the shell read every batch left in the range (fewer than its slice limit). */
  exhausted: boolean;
}

export interface CompactionLimits {
  /**
   * Key map capacity in keys (Kafka: the dedupe buffer). A batch whose new keys would take the map
   * past it ends the pass before that batch (the first batch of a pass is always mapped).
   */
  maxMapKeys: number;
  /** Key map capacity in estimated bytes (key bytes + {@link KEY_MAP_ENTRY_BYTES} per key), the same way; unbounded when absent. */
  maxMapBytes?: number;
}

/**
 * One bounded step of a running pass: state + slice -> next state + commands (the last one is the
 * checkpoint). From idle it does nothing.
 * @throws Error when the slice is not in offset order after the cursor (a bug in the caller).
 */
export function compactionStep(state: CompactionState, slice: CompactionSlice, cfg: CompactionConfig, limits: CompactionLimits): CompactionStepResult {
  if (state.phase === "idle") return { state, commands: [] };
  let prev = state.cursor - 1;
  for (const b of slice.batches) {
    if (b.lastOffset <= prev || b.baseOffset >= state.pass.end || b.lastOffset < b.baseOffset) {
      throw new Error(`compaction slice out of order: batch [${b.baseOffset}, ${b.lastOffset}] after ${prev} (end ${state.pass.end})`);
    }
    prev = b.lastOffset;
  }
  return state.phase === "map" ? mapStep(state, slice, limits) : rewriteStep(state, slice, cfg);
}

function mapStep(state: CompactionState & { phase: "map" }, slice: CompactionSlice, limits: CompactionLimits): CompactionStepResult {
  // The pass's map, added to in place: the state that was stepped is spent (CompactionState).
  const latest = state.latest;
  const pass = { ...state.pass };
  const maxBytes = limits.maxMapBytes ?? Number.POSITIVE_INFINITY;
  let mapBytes = state.mapBytes;
  let cursor = state.cursor;
  let full = false;
  let mapped = 0;
  let batches = 0;
  for (const b of slice.batches) {
    if (cursor > pass.dirtyFrom && !batchFits(b, pass, latest, mapBytes, limits.maxMapKeys, maxBytes)) {
      // The map is full: this pass ends before this batch; the next pass starts here.
      pass.end = Math.max(b.baseOffset, pass.dirtyFrom);
      full = true;
      break;
    }
    for (const r of b.records) {
      if (r.offset < pass.dirtyFrom || r.offset >= pass.end || r.key === null) continue;
      const size = latest.size;
      latest.set(r.key, r.offset);
      if (latest.size !== size) mapBytes += r.key.length + KEY_MAP_ENTRY_BYTES;
      mapped++;
    }
    cursor = b.lastOffset + 1;
    batches++;
  }
  // Persist what changed: the slice's mapped records in offset order (a replay keeps the last of a
  // key), or a snapshot of the map once the rows would hold more than twice its entries. So the
  // rows stay within about twice the map plus one slice, no second map is built per step, and a
  // snapshot costs at most half the entries it replaces.
  const commands: CompactionCommand[] = [];
  let keyRows = state.keyRows;
  if (mapped > 0) {
    if (keyRows.entries + mapped > 2 * latest.size) {
      const put = encodeKeyRows(latest, keyRows.to);
      commands.push({ kind: "keyRows", put, dropBelow: keyRows.to });
      keyRows = { from: keyRows.to, to: keyRows.to + put.length, entries: latest.size };
    } else {
      const w = new KeyRowWriter(keyRows.to);
      for (let i = 0; i < batches; i++) {
        for (const r of slice.batches[i]!.records) if (r.offset >= pass.dirtyFrom && r.offset < pass.end && r.key !== null) w.add(r.key, r.offset);
      }
      const put = w.finish();
      commands.push({ kind: "keyRows", put, dropBelow: null });
      keyRows = { from: keyRows.from, to: keyRows.to + put.length, entries: keyRows.entries + mapped };
    }
  }
  const next: CompactionState =
    full || slice.exhausted
      ? { phase: "rewrite", cleanOffset: state.cleanOffset, pass, cursor: 0, keyRows, latest, mapBytes }
      : { phase: "map", cleanOffset: state.cleanOffset, pass, cursor, keyRows, latest, mapBytes };
  commands.push({ kind: "checkpoint", checkpoint: checkpointOf(next) });
  return { state: next, commands };
}

/**
 * True when mapping batch `b` keeps the map within `maxKeys` keys and `maxBytes` estimated bytes.
 * The new keys are counted only when the batch could overflow (the map's size plus all its records).
 */
function batchFits(b: CompactionBatch, pass: CompactionPass, latest: ReadonlyMap<string, number>, mapBytes: number, maxKeys: number, maxBytes: number): boolean {
  let upperBytes = 0;
  for (const r of b.records) if (r.key !== null) upperBytes += r.key.length + KEY_MAP_ENTRY_BYTES;
  if (latest.size + b.records.length <= maxKeys && mapBytes + upperBytes <= maxBytes) return true;
  const added = new Set<string>();
  let bytes = mapBytes;
  for (const r of b.records) {
    if (r.offset < pass.dirtyFrom || r.offset >= pass.end || r.key === null || latest.has(r.key) || added.has(r.key)) continue;
    added.add(r.key);
    bytes += r.key.length + KEY_MAP_ENTRY_BYTES;
  }
  return latest.size + added.size <= maxKeys && bytes <= maxBytes;
}

/** The segment of the pass holding `offset`, or undefined. */
function passSegmentAt(pass: CompactionPass, offset: number): PassSegment | undefined {
  for (const s of pass.segments) if (offset >= s.baseOffset && offset < s.end) return s;
  return undefined;
}

function rewriteStep(state: CompactionState & { phase: "rewrite" }, slice: CompactionSlice, cfg: CompactionConfig): CompactionStepResult {
  const pass = { ...state.pass };
  const commands: CompactionCommand[] = [];
  let cursor = state.cursor;
  for (const b of slice.batches) {
    const keep: number[] = [];
    for (const r of b.records) {
      if (keepRecord(r, pass, state.latest, cfg)) keep.push(r.offset);
    }
    if (keep.length === 0) commands.push({ kind: "dropBatch", baseOffset: b.baseOffset });
    else if (keep.length < b.records.length) commands.push({ kind: "rewriteBatch", baseOffset: b.baseOffset, keep });
    cursor = b.lastOffset + 1;
  }
  if (slice.exhausted) {
    const next: CompactionState = { phase: "idle", cleanOffset: Math.max(state.cleanOffset, pass.end), tombstoneExpiryMs: pass.tombstoneExpiryMs, latest: new Map(), mapBytes: 0 };
    commands.push({ kind: "keysClear" }, { kind: "checkpoint", checkpoint: checkpointOf(next) });
    return { state: next, commands };
  }
  const next: CompactionState = { phase: "rewrite", cleanOffset: state.cleanOffset, pass, cursor, keyRows: state.keyRows, latest: state.latest, mapBytes: state.mapBytes };
  commands.push({ kind: "checkpoint", checkpoint: checkpointOf(next) });
  return { state: next, commands };
}

/**
 * The cleaner's rule for one record of the pass range (Kafka's LogCleaner.shouldRetainRecord):
 * - past the pass end: kept (not this pass's business);
 * - no key: dropped (Kafka's cleaner discards keyless records of a compacted log);
 * - a later offset of the same key was mapped: dropped;
 * - a tombstone whose segment's last append is delete.retention.ms before the pass start: dropped;
 * - otherwise kept (a kept tombstone updates the pass's next expiry time).
 * Mutates `pass.tombstoneExpiryMs`.
 */
function keepRecord(r: CompactionRecord, pass: CompactionPass, latest: ReadonlyMap<string, number>, cfg: CompactionConfig): boolean {
  if (r.offset >= pass.end) return true;
  if (r.key === null) return false;
  const newest = latest.get(r.key);
  if (newest !== undefined && newest > r.offset) return false;
  if (!r.tombstone) return true;
  const seg = passSegmentAt(pass, r.offset);
  if (seg === undefined) return true;
  const expiryMs = seg.lastAppendMs + cfg.deleteRetentionMs;
  if (expiryMs <= pass.startedMs) return false;
  pass.tombstoneExpiryMs = pass.tombstoneExpiryMs === null ? expiryMs : Math.min(pass.tombstoneExpiryMs, expiryMs);
  return true;
}
