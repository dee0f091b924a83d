/**
 * Snapshot catch-up of a replicated partition's replica (docs/RAFT.md "Snapshot catch-up"): the
 * pure rules the shell (durable-objects/partition/catch-up.ts) follows. No I/O.
 *
 * A replica whose Raft log lies behind every peer's compacted journal gets a Raft snapshot that
 * *describes* the state (its index and term; no image): it pulls the partition's state at a
 * peer's applied index M >= that index. The peer answers a manifest (M, its term, the log start
 * and end offsets at M, the leader epoch, the producer state, the configs and the subscriptions'
 * cursors), then the follower pulls the
 * committed batches in chunks (offsets, leader epochs and bytes as stored there) into a staging
 * table, and installs everything (batches, log meta, producer state, the Raft snapshot meta,
 * commit and applied index) in ONE transaction.
 */
import type { TopicConfigs } from "../protocol/types.ts";
import type { StreamProducerRow, StreamRow } from "../streams/state.ts";

/** A stored batch row as a replica ships it to another: every column of the log's `batches` table. */
export interface StoredBatch {
  baseOffset: number;
  lastOffset: number;
  recordCount: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  partitionLeaderEpoch: number;
  attributes: number;
  baseTimestamp: number;
  maxTimestamp: number;
  runningMaxTimestamp: number;
  sizeBytes: number;
  data: Uint8Array;
}

/**
 * The idempotent-producer state (KIP-98) as rows: `producers` as
 * [producerId, producerEpoch, lastSequence, lastAppendMs] and `batches` (the last requests kept
 * per producer for duplicate detection) as [producerId, producerEpoch, baseSequence,
 * lastSequence, firstOffset, lastOffset].
 */
export interface ProducerRows {
  producers: [number, number, number, number][];
  batches: [number, number, number, number, number, number][];
}

/**
 * A subscription as stored (the subscriptions room's `sub_subscriptions` row): its name, its
 * configuration and its durable cursor as JSON text (mark-delete position, acknowledged ranges,
 * redelivery counts, nack delays, pending dead-letter copies; docs/SUBSCRIPTIONS.md "Stored
 * form"), and when it last changed (ms).
 */
export interface SubscriptionRow {
  name: string;
  meta: string;
  cursor: string;
  updatedMs: number;
}

/** Estimated serialised size of subscription rows (bytes). */
export function subscriptionRowsBytes(rows: readonly SubscriptionRow[]): number {
  let n = 0;
  for (const r of rows) n += r.name.length + r.meta.length + r.cursor.length + 64;
  return n;
}

/** The first answer of a peer to a catch-up: the partition's replicated state at its applied Raft index, without the batches. */
export interface CatchUpManifest {
  /** The peer's applied Raft index M (>= the snapshot's index) and its term. */
  index: number;
  term: number;
  /** The group configuration (a partition's group is static: r1, r2, r3). */
  conf: { voters: string[]; learners: string[] };
  logStartOffset: number;
  /** The peer's log end offset (= high watermark) at M. */
  logEndOffset: number;
  leaderEpoch: number;
  producers: ProducerRows;
  /**
   * The Durable Streams state at M (docs/DURABLE-STREAMS.md "Replicated streams"): the ds_stream
   * row (null: no stream) and every Producer-Id. Optional: a peer of an older version sends none.
   */
  streams?: { row: StreamRow | null; producers: StreamProducerRow[] };
  /**
   * The partition's configs at M (config changes are replicated commands: a replica that missed
   * them takes them with the snapshot). Optional: a peer of an older version sends none.
   */
  configs?: TopicConfigs;
  /** The metadata offset of `configs` (docs/RAFT.md "Config pushes carry their record index"); absent when unknown. */
  configsOffset?: number;
  /**
   * Every subscription's cursor at M (subscription writes are replicated commands; a replica that
   * caught up by snapshot must have the cursors). Optional: a peer of an older version sends none.
   */
  subscriptions?: SubscriptionRow[];
}

/** A catch-up read (the partition RPC `replicaSnapshotRead`). */
export type CatchUpRead = { op: "begin"; minIndex: number } | { op: "batches"; from: number; end: number; maxBytes: number };

/** A chunk of batches: rows with `last_offset >= from`, and where the next chunk starts (`next` >= end: done). */
export interface CatchUpChunk {
  rows: StoredBatch[];
  next: number;
}

/**
 * Estimated serialised size of producer rows (bytes; ~9 per number): a manifest must stay well
 * below the 32 MiB of a Durable Object RPC value.
 */
export function producerRowsBytes(rows: ProducerRows): number {
  return (rows.producers.length * 4 + rows.batches.length * 6) * 9;
}

/** The bounds of a replica's log (the committed prefix of the partition). */
export interface LogBounds {
  logStartOffset: number;
  logEndOffset: number;
}

/**
 * Which batches the follower must pull: from its own log end when the peer still stores it
 * (the follower's log is a prefix of the peer's committed log, so what it has stays: `replace`
 * false), else the peer's whole log from its log start (the peer's retention moved past the
 * follower's end: the follower's log is replaced, as Kafka's follower truncates fully and
 * restarts at the leader's log start offset).
 * @returns the range [from, end) and whether the follower's log is replaced, or why not.
 */
export function planCatchUp(follower: LogBounds, peer: LogBounds): { from: number; end: number; replace: boolean } | { error: string } {
  if (peer.logStartOffset > peer.logEndOffset) return { error: `peer log start ${peer.logStartOffset} beyond its end ${peer.logEndOffset}` };
  if (follower.logEndOffset > peer.logEndOffset) {
    // The follower applied past the peer's manifest: the manifest is older than its state.
    return { error: `follower log end ${follower.logEndOffset} beyond the peer's ${peer.logEndOffset}` };
  }
  if (peer.logStartOffset > follower.logEndOffset) return { from: peer.logStartOffset, end: peer.logEndOffset, replace: true };
  return { from: follower.logEndOffset, end: peer.logEndOffset, replace: false };
}

/** A stored batch's range and size, as staged. */
export interface StagedSpan {
  baseOffset: number;
  lastOffset: number;
  sizeBytes: number;
}

/**
 * Checks a chunk of rows against the range being pulled and the last staged row: ascending,
 * non-overlapping, each inside [from, end) (a batch holding `from` may start before it only when
 * the log is replaced: the peer's log start may fall inside a batch). Gaps are allowed (log
 * compaction removes whole batches on the peer). An empty chunk is an error (the peer answers at
 * least one row while the range is not done: `next` is where the following chunk starts).
 * @returns undefined, or what is wrong.
 */
export function checkChunk(rows: readonly StagedSpan[], next: number, range: { from: number; end: number; replace: boolean }, lastStaged: number | null): string | undefined {
  if (rows.length === 0 && next < range.end) return "an empty chunk before the end of the range";
  const last = rows[rows.length - 1];
  if (last !== undefined && next !== last.lastOffset + 1 && next < range.end) return `next ${next} is not after the last row's ${last.lastOffset}`;
  let prev = lastStaged;
  for (const r of rows) {
    if (r.lastOffset < r.baseOffset || r.sizeBytes < 0) return `batch [${r.baseOffset}, ${r.lastOffset}] is malformed`;
    if (prev !== null && r.baseOffset <= prev) return `batch at ${r.baseOffset} overlaps the staged rows up to ${prev}`;
    if (prev === null && (range.replace ? r.lastOffset < range.from : r.baseOffset < range.from)) return `first batch [${r.baseOffset}, ${r.lastOffset}] before ${range.from}`;
    if (r.lastOffset >= range.end) return `batch [${r.baseOffset}, ${r.lastOffset}] beyond the end ${range.end}`;
    prev = r.lastOffset;
  }
  return undefined;
}

/**
 * What to do with a pulled state at Raft index `index` (term `term`) when the pull is done,
 * given the follower's Raft state now (it kept following meanwhile):
 * - `obsolete`: its commit reached `index`, or its log holds (index, term): the entries replay
 *   normally, the staged state is dropped;
 * - `restart`: its rooms moved (it applied entries meanwhile) so the staged range no longer
 *   starts at its log end: pull again;
 * - `install`: replace its Raft log by a snapshot at (index, term) and its state by the pulled one.
 * Safety: an entry the follower holds after `index` cannot be one any leader counted (a log
 * holding a committed entry after `index` holds (index, term) too, by log matching), so
 * dropping its log is what Raft's InstallSnapshot does (§7).
 */
export function installDecision(
  follower: { commitIndex: number; termAtIndex: number | undefined; logEndOffset: number },
  pulled: { index: number; term: number; from: number; replace: boolean; followerEndAtStart: number },
): "install" | "obsolete" | "restart" {
  if (follower.commitIndex >= pulled.index || follower.termAtIndex === pulled.term) return "obsolete";
  if (follower.logEndOffset !== pulled.followerEndAtStart) return "restart";
  return "install";
}
