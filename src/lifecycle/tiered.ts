/**
 * Tiered storage (KIP-405 names), pure: the R2 object format of an offloaded segment, and the
 * offload / local-retention / remote-delete decisions as a crash-safe state machine.
 *
 * Per segment (`SegmentRow.location` / `.remote`, src/lifecycle/segments.ts):
 *
 *   local,none --commit: copy decided, key fixed--> local,copying --upload (effect)-->
 *   --commit: copied--> both,none --commit: local retention--> remote,none (+ local rows truncated)
 *   any row with an r2Key --commit: retention--> *,deleting --delete object (effect)--> --commit--> row gone
 *
 * Each side effect (an R2 put or delete) runs only after the commit that recorded it as owed, and
 * is recorded done by a later commit. A crash between the two leaves the row `copying` or
 * `deleting`, and {@link planTiering} hands the same effect out again: the key is a function of the
 * segment, so a second put writes the same bytes to the same key and a second delete is a no-op.
 * Local rows are dropped only for segments already recorded `both`, so nothing is lost; a segment
 * has one key, so nothing is duplicated. The room runs one effect per segment at a time.
 */
import { BATCH_HEADER_BYTES, decodeBatchHeader } from "../codec/index.ts";
import { crc32c } from "../codec/index.ts";
import type { LogBounds } from "../partition/core.ts";
import { partitionObjectPrefix } from "./owner.ts";
import { segmentEnd, type SegmentCommand, type SegmentRow } from "./segments.ts";

// ---------------------------------------------------------------------------------------------
// The R2 object format, v1 (docs/LIFECYCLE.md "Remote segment object")
// ---------------------------------------------------------------------------------------------

/** "ELSG": Edgelog segment. */
export const SEGMENT_OBJECT_MAGIC = 0x454c5347;
export const SEGMENT_OBJECT_VERSION = 1;
/** Bytes of the fixed header; the data section starts here. */
export const SEGMENT_HEADER_BYTES = 64;
/** Bytes of one offset-index entry. */
export const SEGMENT_INDEX_ENTRY_BYTES = 24;

/** The fixed header of a segment object. */
export interface SegmentObjectHeader {
  version: number;
  baseOffset: number;
  lastOffset: number;
  maxTimestamp: number;
  batchCount: number;
  recordCount: number;
  /** Bytes of the data section (the batches as stored, concatenated). */
  dataBytes: number;
  /** CRC-32C of the index section. */
  indexCrc: number;
}

/** One offset-index entry: a batch's offsets and where its bytes start in the object. */
export interface SegmentIndexEntry {
  baseOffset: number;
  lastOffset: number;
  /** Byte position of the batch in the object (from the object's first byte). */
  position: number;
  /** Bytes of the batch. */
  size: number;
}

/** Thrown for bytes that are not a well-formed segment object (a corrupt or foreign R2 object). */
export class SegmentObjectError extends Error {
  override name = "SegmentObjectError";
}

function putI64(v: DataView, at: number, n: number): void {
  v.setBigInt64(at, BigInt(n));
}
function getI64(v: DataView, at: number): number {
  const n = v.getBigInt64(at);
  if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(-Number.MAX_SAFE_INTEGER)) throw new SegmentObjectError(`i64 at ${at} is beyond the safe integers`);
  return Number(n);
}

/**
 * Encodes a segment's stored batches (each a `batches.data` blob, offset order) into one object:
 * header, the batches byte for byte, then the offset index (one entry per batch). The batch
 * headers are read with the codec, so the index cannot disagree with the bytes.
 * @throws SegmentObjectError for no batches, or batches not in increasing offset order.
 */
export function encodeSegmentObject(batches: readonly Uint8Array[]): Uint8Array {
  if (batches.length === 0) throw new SegmentObjectError("a segment object holds at least one batch");
  const entries: SegmentIndexEntry[] = [];
  let position = SEGMENT_HEADER_BYTES;
  let recordCount = 0;
  let maxTimestamp = -1;
  for (const data of batches) {
    const h = decodeBatchHeader(data);
    if (h.totalBytes !== data.length) throw new SegmentObjectError(`a batch blob of ${data.length} bytes announces ${h.totalBytes}`);
    const lastOffset = h.baseOffset + h.lastOffsetDelta;
    const prev = entries[entries.length - 1];
    if (prev !== undefined && h.baseOffset <= prev.lastOffset) throw new SegmentObjectError(`batch ${h.baseOffset} does not follow batch ending at ${prev.lastOffset}`);
    entries.push({ baseOffset: h.baseOffset, lastOffset, position, size: data.length });
    position += data.length;
    recordCount += h.recordCount;
    maxTimestamp = Math.max(maxTimestamp, h.maxTimestamp);
  }
  const dataBytes = position - SEGMENT_HEADER_BYTES;
  const out = new Uint8Array(position + entries.length * SEGMENT_INDEX_ENTRY_BYTES);
  const view = new DataView(out.buffer);
  let p = SEGMENT_HEADER_BYTES;
  for (const data of batches) {
    out.set(data, p);
    p += data.length;
  }
  for (const e of entries) {
    putI64(view, p, e.baseOffset);
    putI64(view, p + 8, e.lastOffset);
    view.setUint32(p + 16, e.position);
    view.setUint32(p + 20, e.size);
    p += SEGMENT_INDEX_ENTRY_BYTES;
  }
  const indexStart = SEGMENT_HEADER_BYTES + dataBytes;
  view.setUint32(0, SEGMENT_OBJECT_MAGIC);
  view.setUint16(4, SEGMENT_OBJECT_VERSION);
  view.setUint16(6, 0);
  putI64(view, 8, entries[0]!.baseOffset);
  putI64(view, 16, entries[entries.length - 1]!.lastOffset);
  putI64(view, 24, maxTimestamp);
  view.setUint32(32, entries.length);
  view.setUint32(36, recordCount);
  putI64(view, 40, dataBytes);
  view.setUint32(48, crc32c(out, indexStart, out.length));
  view.setUint32(52, SEGMENT_INDEX_ENTRY_BYTES);
  // 56..60 reserved (0); 60..64 CRC-32C of bytes 0..60.
  view.setUint32(60, crc32c(out, 0, 60));
  return out;
}

/**
 * R2's multipart rules (developers.cloudflare.com/r2/objects/multipart-objects): a part is at
 * least 5 MiB and at most 5 GiB, every part but the last has the same size, the last is not
 * larger, and an upload has at most 10,000 parts.
 */
export const R2_MIN_PART_BYTES = 5 * 1024 * 1024;
export const R2_MAX_PARTS = 10_000;

/**
 * The same object as {@link encodeSegmentObject}, written in parts of exactly `partBytes` (the
 * last one smaller) for an R2 multipart upload, holding one part and one batch in memory
 * instead of the whole segment. The header (first bytes of part 1) is known only at the end, so
 * part 1 is held back: `add` answers parts 2, 3, ... as they fill, `finish` answers part 1 with
 * its header and the parts that remain (the end of the data and the offset index). The parts'
 * concatenation in part-number order is byte for byte `encodeSegmentObject(batches)`.
 * @throws SegmentObjectError for a part size below R2's 5 MiB (a bug), batches out of order, no
 *   batch at `finish`, or more than {@link R2_MAX_PARTS} parts.
 */
export class SegmentObjectWriter {
  readonly #partBytes: number;
  readonly #first: Uint8Array;
  #current: Uint8Array;
  /** Bytes written to the object so far (header included). */
  #written = SEGMENT_HEADER_BYTES;
  #parts = 1;
  readonly #entries: SegmentIndexEntry[] = [];
  #recordCount = 0;
  #maxTimestamp = -1;

  constructor(partBytes: number) {
    if (!Number.isInteger(partBytes) || partBytes < R2_MIN_PART_BYTES) throw new SegmentObjectError(`a part is at least ${R2_MIN_PART_BYTES} bytes, got ${partBytes}`);
    this.#partBytes = partBytes;
    this.#first = new Uint8Array(partBytes);
    this.#current = this.#first;
  }

  /** Appends one stored batch; answers the parts (numbers 2, 3, ...) it completed, in order. */
  add(data: Uint8Array): Uint8Array[] {
    const h = decodeBatchHeader(data);
    if (h.totalBytes !== data.length) throw new SegmentObjectError(`a batch blob of ${data.length} bytes announces ${h.totalBytes}`);
    const prev = this.#entries[this.#entries.length - 1];
    if (prev !== undefined && h.baseOffset <= prev.lastOffset) throw new SegmentObjectError(`batch ${h.baseOffset} does not follow batch ending at ${prev.lastOffset}`);
    this.#entries.push({ baseOffset: h.baseOffset, lastOffset: h.baseOffset + h.lastOffsetDelta, position: this.#written, size: data.length });
    this.#recordCount += h.recordCount;
    this.#maxTimestamp = Math.max(this.#maxTimestamp, h.maxTimestamp);
    return this.#write(data);
  }

  /** Ends the object: answers part 1 (header filled in) and the remaining parts after those `add` answered. */
  finish(): { first: Uint8Array; rest: Uint8Array[] } {
    const entries = this.#entries;
    if (entries.length === 0) throw new SegmentObjectError("a segment object holds at least one batch");
    const dataBytes = this.#written - SEGMENT_HEADER_BYTES;
    const index = new Uint8Array(entries.length * SEGMENT_INDEX_ENTRY_BYTES);
    const iv = new DataView(index.buffer);
    entries.forEach((e, i) => {
      const p = i * SEGMENT_INDEX_ENTRY_BYTES;
      putI64(iv, p, e.baseOffset);
      putI64(iv, p + 8, e.lastOffset);
      iv.setUint32(p + 16, e.position);
      iv.setUint32(p + 20, e.size);
    });
    const rest = this.#write(index);
    const tail = this.#written % this.#partBytes;
    if (this.#current !== this.#first && tail > 0) rest.push(this.#current.subarray(0, tail));
    const first = this.#current === this.#first ? this.#first.subarray(0, this.#written) : this.#first;
    const header = new DataView(first.buffer, first.byteOffset, SEGMENT_HEADER_BYTES);
    header.setUint32(0, SEGMENT_OBJECT_MAGIC);
    header.setUint16(4, SEGMENT_OBJECT_VERSION);
    header.setUint16(6, 0);
    putI64(header, 8, entries[0]!.baseOffset);
    putI64(header, 16, entries[entries.length - 1]!.lastOffset);
    putI64(header, 24, this.#maxTimestamp);
    header.setUint32(32, entries.length);
    header.setUint32(36, this.#recordCount);
    putI64(header, 40, dataBytes);
    header.setUint32(48, crc32c(index, 0, index.length));
    header.setUint32(52, SEGMENT_INDEX_ENTRY_BYTES);
    header.setUint32(56, 0);
    header.setUint32(60, crc32c(first, 0, 60));
    return { first, rest };
  }

  #write(bytes: Uint8Array): Uint8Array[] {
    const done: Uint8Array[] = [];
    let at = 0;
    while (at < bytes.length) {
      const inPart = this.#written % this.#partBytes;
      const n = Math.min(bytes.length - at, this.#partBytes - inPart);
      this.#current.set(bytes.subarray(at, at + n), inPart);
      at += n;
      this.#written += n;
      if (this.#written % this.#partBytes === 0) {
        if (this.#current !== this.#first) done.push(this.#current);
        if (++this.#parts > R2_MAX_PARTS) throw new SegmentObjectError(`a segment object needs more than ${R2_MAX_PARTS} parts of ${this.#partBytes} bytes`);
        this.#current = new Uint8Array(this.#partBytes);
      }
    }
    return done;
  }
}

/**
 * Decodes the fixed header (the first {@link SEGMENT_HEADER_BYTES} bytes, e.g. from an R2 range read).
 * @throws SegmentObjectError for a short buffer, a bad magic, version, header CRC or range.
 */
export function decodeSegmentHeader(bytes: Uint8Array): SegmentObjectHeader {
  if (bytes.length < SEGMENT_HEADER_BYTES) throw new SegmentObjectError(`a segment header is ${SEGMENT_HEADER_BYTES} bytes, got ${bytes.length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, SEGMENT_HEADER_BYTES);
  if (view.getUint32(0) !== SEGMENT_OBJECT_MAGIC) throw new SegmentObjectError("not an Edgelog segment object (magic)");
  const version = view.getUint16(4);
  if (version !== SEGMENT_OBJECT_VERSION) throw new SegmentObjectError(`segment object version ${version} is not supported`);
  if (view.getUint32(60) !== crc32c(bytes, 0, 60)) throw new SegmentObjectError("segment header checksum mismatch");
  if (view.getUint32(52) !== SEGMENT_INDEX_ENTRY_BYTES) throw new SegmentObjectError(`index entries of ${view.getUint32(52)} bytes are not supported`);
  const h: SegmentObjectHeader = {
    version,
    baseOffset: getI64(view, 8),
    lastOffset: getI64(view, 16),
    maxTimestamp: getI64(view, 24),
    batchCount: view.getUint32(32),
    recordCount: view.getUint32(36),
    dataBytes: getI64(view, 40),
    indexCrc: view.getUint32(48),
  };
  if (h.batchCount === 0 || h.lastOffset < h.baseOffset || h.dataBytes < h.batchCount * BATCH_HEADER_BYTES) throw new SegmentObjectError("segment header fields out of range");
  return h;
}

/** Byte range of the offset index in the object: [start, end). */
export function segmentIndexRange(h: SegmentObjectHeader): { start: number; end: number } {
  const start = SEGMENT_HEADER_BYTES + h.dataBytes;
  return { start, end: start + h.batchCount * SEGMENT_INDEX_ENTRY_BYTES };
}

/**
 * Decodes the offset index (the bytes of {@link segmentIndexRange}).
 * @throws SegmentObjectError for a wrong length, a CRC mismatch or entries that do not tile the
 *   data section in offset order.
 */
export function decodeSegmentIndex(h: SegmentObjectHeader, bytes: Uint8Array): SegmentIndexEntry[] {
  if (bytes.length !== h.batchCount * SEGMENT_INDEX_ENTRY_BYTES)
    throw new SegmentObjectError(`index of ${h.batchCount} entries must be ${h.batchCount * SEGMENT_INDEX_ENTRY_BYTES} bytes, got ${bytes.length}`);
  if (crc32c(bytes) !== h.indexCrc) throw new SegmentObjectError("segment index checksum mismatch");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const out: SegmentIndexEntry[] = [];
  let expected = SEGMENT_HEADER_BYTES;
  for (let p = 0; p < bytes.length; p += SEGMENT_INDEX_ENTRY_BYTES) {
    const e = { baseOffset: getI64(view, p), lastOffset: getI64(view, p + 8), position: view.getUint32(p + 16), size: view.getUint32(p + 20) };
    const prev = out[out.length - 1];
    if (e.position !== expected || e.size < BATCH_HEADER_BYTES || e.lastOffset < e.baseOffset || (prev !== undefined && e.baseOffset <= prev.lastOffset)) {
      throw new SegmentObjectError(`index entry ${out.length} is inconsistent`);
    }
    expected += e.size;
    out.push(e);
  }
  if (expected !== SEGMENT_HEADER_BYTES + h.dataBytes || out[0]!.baseOffset !== h.baseOffset || out[out.length - 1]!.lastOffset !== h.lastOffset) {
    throw new SegmentObjectError("index does not cover the data section");
  }
  return out;
}

/** A whole object decoded: header, index and each batch's bytes (views into `bytes`). */
export function decodeSegmentObject(bytes: Uint8Array): { header: SegmentObjectHeader; index: SegmentIndexEntry[]; batches: Uint8Array[] } {
  const header = decodeSegmentHeader(bytes);
  const { start, end } = segmentIndexRange(header);
  if (end !== bytes.length) throw new SegmentObjectError(`object is ${bytes.length} bytes, its header says ${end}`);
  const index = decodeSegmentIndex(header, bytes.subarray(start, end));
  return { header, index, batches: index.map((e) => bytes.subarray(e.position, e.position + e.size)) };
}

/**
 * The byte range to read for a fetch at `offset` (one R2 range read): from the batch holding
 * `offset` (the first with lastOffset >= offset), adding following batches while the total stays
 * within `maxBytes` (the first batch always goes, as KIP-74). Null when `offset` is past the segment.
 */
export function lookupSegmentRange(index: readonly SegmentIndexEntry[], offset: number, maxBytes: number): { start: number; end: number; first: number; count: number } | null {
  let lo = 0;
  let hi = index.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (index[mid]!.lastOffset < offset) lo = mid + 1;
    else hi = mid;
  }
  if (lo === index.length) return null;
  const first = index[lo]!;
  let end = first.position + first.size;
  let count = 1;
  for (let i = lo + 1; i < index.length && end + index[i]!.size - first.position <= maxBytes; i++) {
    end += index[i]!.size;
    count++;
  }
  return { start: first.position, end, first: lo, count };
}

// ---------------------------------------------------------------------------------------------
// Offload decisions
// ---------------------------------------------------------------------------------------------

/** Tiering settings of a topic, with -2 already resolved ({@link resolveLocalRetention}). */
export interface TieringConfig {
  /** `remote.storage.enable`. */
  remoteStorageEnable: boolean;
  /** `local.retention.ms` (-1 = unlimited): local rows of a copied segment go once its max timestamp is this old. */
  localRetentionMs: number;
  /** `local.retention.bytes` (-1 = unlimited): copied head segments leave local storage while the local size stays above this. */
  localRetentionBytes: number;
}

/** KIP-405: a local.retention.* of -2 follows the matching retention.* value. */
export function resolveLocalRetention(local: number, total: number): number {
  return local === -2 ? total : local;
}

/**
 * The R2 key of a segment's object: a function of the segment (and of the replica that stores
 * it) alone, so a retried upload overwrites itself. `replica`: the Raft member id (`r1`, `r2`,
 * ...) of a replicated partition's replica, whose copies live under their own prefix
 * (`segments/<topicId>/<partition>/<replica>/...`, docs/RAFT.md "Tiered storage of a replicated
 * partition"); null (@default) at replication.factor 1, whose keys have no replica part.
 */
export function segmentObjectKey(topicId: string, partition: number, seg: Pick<SegmentRow, "id" | "baseOffset">, replica: string | null = null): string {
  return `${partitionObjectPrefix(topicId, partition, replica)}${String(seg.baseOffset).padStart(20, "0")}-${seg.id}.seg`;
}

/** A side effect on R2, to run after the commit of the plan that lists it. */
export type RemoteEffect =
  /** Read the segment's local batches [baseOffset, end), encode, put at r2Key; then commit {@link completeUpload}. */
  | { kind: "upload"; id: number; r2Key: string; baseOffset: number; end: number }
  /** Delete r2Key; then commit {@link completeRemoteDelete}. */
  | { kind: "deleteObject"; id: number; r2Key: string };

export interface TieringInput {
  segments: readonly SegmentRow[];
  bounds: LogBounds;
  nowMs: number;
  topicId: string;
  partition: number;
  /** The replica whose copies these are (a replicated partition's member id), or null/absent at replication.factor 1 ({@link segmentObjectKey}). */
  replica?: string | null;
  /** At most this many segments `copying` at once. */
  maxConcurrentCopies: number;
}

export interface TieringPlan {
  /** To commit first (in one transaction). */
  commands: SegmentCommand[];
  /** Then these, each followed by its completion commit. Includes effects owed since before a restart. */
  effects: RemoteEffect[];
  /** Local rows below this may be truncated ({@link localStartOffset} after the commands). */
  localStartOffset: number;
}

/**
 * One tiering decision over the index (the `lifecycle:tier` timer):
 * - effects owed by rows already `copying` / `deleting` are handed out again (after a crash);
 * - closed `local` segments wholly below the high watermark get a key and become `copying`, head
 *   first, while fewer than `maxConcurrentCopies` are copying (only when remote.storage.enable);
 * - head segments already `both` leave local storage (become `remote`) while local.retention.ms
 *   or local.retention.bytes says so; the walk stops at the first segment that stays or is not
 *   yet copied, so a local gap never opens and nothing uncopied is dropped.
 * Idempotent: planning twice without a commit in between gives the same plan.
 */
export function planTiering(input: TieringInput, cfg: TieringConfig): TieringPlan {
  const { segments, bounds, nowMs } = input;
  const commands: SegmentCommand[] = [];
  const effects: RemoteEffect[] = [];
  let copying = 0;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.remote === "copying" && seg.r2Key !== null) {
      copying++;
      effects.push({ kind: "upload", id: seg.id, r2Key: seg.r2Key, baseOffset: seg.baseOffset, end: segmentEnd(segments, i, bounds.logEndOffset) });
    } else if (seg.remote === "deleting" && seg.r2Key !== null) effects.push({ kind: "deleteObject", id: seg.id, r2Key: seg.r2Key });
  }
  if (cfg.remoteStorageEnable) {
    for (let i = 0; i < segments.length && copying < input.maxConcurrentCopies; i++) {
      const seg = segments[i]!;
      const end = segmentEnd(segments, i, bounds.logEndOffset);
      if (!seg.closed || end > bounds.highWatermark) break;
      if (seg.location !== "local" || seg.remote !== "none" || end <= bounds.logStartOffset) continue;
      const r2Key = segmentObjectKey(input.topicId, input.partition, seg, input.replica ?? null);
      commands.push({ kind: "segUpdate", id: seg.id, patch: { remote: "copying", r2Key } });
      effects.push({ kind: "upload", id: seg.id, r2Key, baseOffset: seg.baseOffset, end });
      copying++;
    }
  }
  // Local retention over the segments still stored locally, head first.
  let localBytes = segments.reduce((sum, s) => sum + (s.location === "remote" || s.remote === "deleting" ? 0 : s.bytes), 0);
  for (const seg of segments) {
    if (seg.location === "remote" || seg.remote === "deleting") continue;
    if (seg.location !== "both" || seg.remote !== "none") break;
    const byTime = cfg.localRetentionMs >= 0 && nowMs - seg.maxTimestamp > cfg.localRetentionMs;
    const bySize = cfg.localRetentionBytes >= 0 && localBytes - seg.bytes >= cfg.localRetentionBytes;
    if (!byTime && !bySize) break;
    commands.push({ kind: "segUpdate", id: seg.id, patch: { location: "remote" } });
    localBytes -= seg.bytes;
  }
  let after = segments.map((s) => ({ ...s }));
  for (const c of commands) if (c.kind === "segUpdate") after = after.map((s) => (s.id === c.id ? { ...s, ...c.patch } : s));
  return { commands, effects, localStartOffset: localStartOffset(after, bounds) };
}

/**
 * The first offset stored locally: the end of the head run of segments that are `remote` (or
 * being deleted), and never below the log start.
 */
export function localStartOffset(segments: readonly SegmentRow[], bounds: LogBounds): number {
  let start = bounds.logStartOffset;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]!;
    if (s.location !== "remote" && s.remote !== "deleting") break;
    start = Math.max(start, segmentEnd(segments, i, bounds.logEndOffset));
  }
  return start;
}

/** Commit after an upload succeeded: `both`. A no-op (null) if the row moved on meanwhile (idempotent). */
export function completeUpload(seg: SegmentRow | undefined, r2Key: string): SegmentCommand | null {
  if (seg === undefined || seg.remote !== "copying" || seg.r2Key !== r2Key) return null;
  return { kind: "segUpdate", id: seg.id, patch: { location: "both", remote: "none" } };
}

/** Commit after a remote delete succeeded: the row goes. A no-op (null) if it is gone or not deleting. */
export function completeRemoteDelete(seg: SegmentRow | undefined): SegmentCommand | null {
  if (seg === undefined || seg.remote !== "deleting") return null;
  return { kind: "segDelete", id: seg.id };
}

/** Where a fetch at `offset` reads: local rows, or a segment's R2 object (read-through). */
export type ReadSource = { kind: "local" } | { kind: "remote"; id: number; r2Key: string; baseOffset: number };

/**
 * The source of a read at `offset` (already checked >= the log start): local at or above the
 * local start, else the object of the segment holding `offset`.
 * @throws Error when a remote offset has no segment with a key (an index invariant is broken).
 */
export function readSource(segments: readonly SegmentRow[], bounds: LogBounds, offset: number): ReadSource {
  if (offset >= localStartOffset(segments, bounds)) return { kind: "local" };
  for (let i = segments.length - 1; i >= 0; i--) {
    const s = segments[i]!;
    if (s.baseOffset <= offset) {
      if (s.r2Key === null) throw new Error(`offset ${offset} is below the local start but segment ${s.id} has no r2 key`);
      return { kind: "remote", id: s.id, r2Key: s.r2Key, baseOffset: s.baseOffset };
    }
  }
  throw new Error(`offset ${offset} is below every segment`);
}
