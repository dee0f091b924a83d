/**
 * The lifecycle room of a partition (docs/LIFECYCLE.md): the segment index (`seg_segments`),
 * retention, deleteRecords, compaction and the produce-time checks, as the thin shell of the pure
 * core in src/lifecycle/. It is the highest room: it reads the log (bounds, batch spans, batch
 * data) and decides; the log executes its bounded `logStart`, `truncate` and `rewrite` changes
 * inside the switchboard's one transaction. It writes its own tables only in
 * {@link LifecycleRoom.apply}.
 *
 * Timers (room "lifecycle" on the base's one schedule):
 * - `index`: builds the segment index of batches stored before this room existed, in slices of
 *   {@link INDEX_SLICE_ROWS} rows (the migration creates the tables only; no batch is rewritten);
 * - `retention`: idle roll (`segment.ms`), retention by `retention.ms` / `retention.bytes`, the log
 *   start's advance, then the row deletion in slices of {@link TRUNCATE_LIMITS};
 * - `compact`: one compaction step per wake, restartable from the `seg_clean_state` checkpoint,
 *   paced (src/lifecycle/pace.ts): with no appends since the previous step it reads at most
 *   {@link COMPACT_SLICE_BATCHES} batches / {@link COMPACT_SLICE_BYTES} bytes and the next step
 *   follows at once; while appends flow, a smaller step (sized from the last one's measured
 *   duration) and a pause after it keep compaction under the duty cycle of wall time;
 * - `tier`: offload to R2 and remote deletes (below);
 * - `owner`: what nothing owns (src/lifecycle/owner.ts): asks the metadata store whether a topic
 *   record still names this object; if none does, the object destroys itself (rows, timers, R2
 *   objects); if one does, deletes the R2 objects under its prefix that no segment row holds;
 * - `sweep`: that last step alone, without asking the metadata store (after a snapshot install
 *   replaced the log: the objects of the dropped segment rows are orphans now).
 * A replica of a replicated partition tiers its own copy under its own prefix
 * (`segments/<topicId>/<partition>/<replica>/`, docs/RAFT.md "Tiered storage of a replicated
 * partition"): its sweeps, deletes and destroy see only its own objects.
 * Each wake does one bounded slice and sets its timer again when more is owed, so a partition of
 * a million batches is cleaned "at its own pace" within the CPU limit of one event.
 *
 * What may be deleted is bounded by `floor()`: the lowest offset another room still needs (the
 * switchboard gives the min over the rooms' `retainFrom()`: Durable Streams, subscriptions, later
 * Raft followers and the LSO).
 */
import { log } from "../../src/log/logger.ts";
import { decodeBatch, decodeBatchHeader } from "../../src/codec/index.ts";
import {
  INITIAL_COMPACTION_STATE,
  checkCompactedKeys,
  checkTimestampBounds,
  checkSegmentIndex,
  compactionReadRange,
  compactionStep,
  lifecycleConfig,
  migrateSlice,
  planCompactionPass,
  planDeleteRecords,
  planIdleRoll,
  planRetention,
  planSegmentAppend,
  planTruncateSlice,
  restoreCompaction,
  rewriteStoredBatch,
  scanRecordKeys,
  segmentAt,
  segmentEnd,
  startCompaction,
  abortCompaction,
  appendsFlowing,
  compactionPaceFromVars,
  compactionPauseMs,
  compactionStepBudget,
  DEFAULT_COMPACTION_PACE,
  FULL_STEP_BUDGET,
  completeRemoteDelete,
  completeUpload,
  decodeSegmentHeader,
  decodeSegmentIndex,
  encodeSegmentObject,
  localStartOffset,
  planTiering,
  readSource,
  segmentIndexRange,
  truncationTarget,
  SegmentObjectWriter,
  OWNER_CHECK_GRACE_MS,
  OWNER_CHECK_INTERVAL_MS,
  OWNER_RETRY_MS,
  ownerVerdict,
  partitionObjectPrefix,
  unownedObjectKeys,
  type SegmentIndexEntry,
  type BatchMeta,
  type CompactionCheckpoint,
  type CompactionPace,
  type CompactionPaceVars,
  type StepBudget,
  type StepCost,
  type CompactionCommand,
  type CompactionState,
  type KeyRow,
  type LifecycleConfig,
  type SegmentCommand,
  type SegmentRow,
} from "../../src/lifecycle/index.ts";
import type { StoredBatch } from "../../src/partition/catch-up.ts";
import type { AppendPlan, ScannedAppend } from "../../src/partition/core.ts";
import type { FetchOk, FetchRequest } from "../../src/partition/rpc.ts";
import type { ErrorResult, Ok, RpcResult } from "../../src/protocol/errors.ts";
import { replicationFactorOf } from "../../src/protocol/config.ts";
import type { TopicConfigs, TopicSummary } from "../../src/protocol/types.ts";
import { blob, type RoomTimers, type Sql } from "../base.ts";
import type { BatchRewrite, LogChange, LogCommand, LogRoom } from "./log.ts";

/** The lifecycle's part of a command: segment index changes, then compaction state (key map, checkpoint). */
export interface LifecycleCommand {
  segments: readonly SegmentCommand[];
  clean: readonly CompactionCommand[];
}

/** What a command carries for this room; optional so that other rooms' commands need not name it. */
export interface LifecycleCommandPart {
  lifecycle?: LifecycleCommand | null;
}

/** The command type the room builds: the log's part and its own. */
export type LifecycleWrite = LogCommand & LifecycleCommandPart;

/** Timer keys of the room. */
export const LIFECYCLE_TIMERS = { index: "index", retention: "retention", compact: "compact", tier: "tier", owner: "owner", sweep: "sweep" } as const;

/**
 * What the owner check needs from outside the room (design rule 6: outbound calls through the
 * switchboard's door): the metadata store's answer for a topic name, and the object's own
 * destroy path (R2 objects first, then every row and timer).
 */
export interface OwnerDoor {
  getTopic(name: string): Promise<RpcResult<{ topic: TopicSummary }>>;
  destroySelf(): Promise<void>;
  /**
   * The Raft member id of this replica (`r1`, `r2`, ...) when the partition is replicated, else
   * null: the replica part of its R2 keys ({@link partitionObjectPrefix}).
   */
  replicaId(): string | null;
}

/** Segments being uploaded at once (one upload per `tier` wake: a segment is read whole into memory). */
export const MAX_CONCURRENT_COPIES = 1;
/** Segments of more stored bytes than this are uploaded in parts (R2 multipart), read in slices. */
export const MULTIPART_THRESHOLD_BYTES = 16 * 1024 * 1024;
/** The part size of a multipart upload: R2's minimum is 5 MiB; 8 MiB parts make at most 129 parts for a 1 GiB segment (R2 allows 10,000). */
export const PART_BYTES = 8 * 1024 * 1024;
/** Remote object deletes per `tier` wake. */
export const DELETES_PER_WAKE = 16;
/** Offset indexes of remote segments kept in memory for read-through (one R2 read less per fetch). */
export const REMOTE_INDEX_CACHE = 16;

/** Batch rows one `index` wake reads (spans only, no data). */
export const INDEX_SLICE_ROWS = 2_000;
/** One truncate slice: at most this many batch rows / bytes deleted per wake. */
export const TRUNCATE_LIMITS = { maxRows: 1_000, maxBytes: 256 * 1024 * 1024 } as const;
/** One compaction step reads at most this many batches ... */
export const COMPACT_SLICE_BATCHES = FULL_STEP_BUDGET.maxBatches;
/** ... and this many stored bytes (the first batch always); less while appends flow (src/lifecycle/pace.ts). */
export const COMPACT_SLICE_BYTES = FULL_STEP_BUDGET.maxBytes;
/**
 * Key map capacity of one pass, in keys and in estimated bytes (key bytes + 64 per key): a batch
 * whose new keys would pass either ends the pass early (Kafka: log.cleaner.dedupe.buffer.size,
 * 128 MiB shared by the cleaner threads). The map is in memory for the whole pass; 16 MiB keeps
 * it well inside the isolate's 128 MB with the slice being read.
 */
export const COMPACT_MAX_MAP_KEYS = 250_000;
export const COMPACT_MAX_MAP_BYTES = 16 * 1024 * 1024;
/**
 * When retention is due but the floor holds it (a Durable Stream keeps its whole log, a slow
 * subscription its backlog), look again after this long: Kafka's log.retention.check.interval.ms.
 */
export const BLOCKED_RETRY_MS = 5 * 60_000;
/** Timers further away than this are set at this horizon and re-planned then (the platform's alarm takes a Date). */
export const TIMER_HORIZON_MS = 30 * 24 * 60 * 60 * 1000;

const SEGMENT_COLUMNS: Record<string, string> = {
  lastOffset: "last_offset",
  bytes: "bytes",
  records: "records",
  maxTimestamp: "max_timestamp",
  firstAppendMs: "first_append_ms",
  lastAppendMs: "last_append_ms",
  closed: "closed",
  location: "location",
  r2Key: "r2_key",
  remote: "remote",
};

type SegmentDbRow = {
  id: number;
  base_offset: number;
  last_offset: number;
  bytes: number;
  records: number;
  max_timestamp: number;
  first_append_ms: number;
  last_append_ms: number;
  closed: number;
  location: string;
  r2_key: string | null;
  remote: string;
};

/**
 * The compaction pace of this Worker's partitions from its wrangler vars
 * (`EDGELOG_COMPACTION_DUTY_CYCLE`, `EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND`; docs/LIFECYCLE.md
 * "Compaction"). A bad value is logged and its default kept.
 */
export function compactionPace(vars: CompactionPaceVars): CompactionPace {
  const { pace, errors } = compactionPaceFromVars(vars);
  for (const message of errors) log.error("edgelog.lifecycle.bad_compaction_pace", { message });
  return pace;
}

export class LifecycleRoom {
  readonly name = "lifecycle";
  readonly #sql: Sql;
  readonly #log: LogRoom;
  readonly #timers: RoomTimers;
  readonly #floor: () => number | null;
  readonly #bucket: R2Bucket | undefined;
  readonly #owner: OwnerDoor;
  /** Set once a replicated partition without a member id has been logged ({@link LifecycleRoom.#objectScope}). */
  #noReplicaLogged = false;
  /** Offset indexes of remote segment objects, by key (bounded, oldest first out). */
  readonly #remoteIndex = new Map<string, SegmentIndexEntry[]>();
  /** The segment index, offset order (a mirror of seg_segments). */
  #segments: SegmentRow[] = [];
  /** True while batches stored before the index existed are still being indexed (`index` timer). */
  #catchingUp = false;
  /** True while rows lie wholly below the truncation target. */
  #truncating = false;
  #clean: CompactionState = INITIAL_COMPACTION_STATE;
  /**
   * True while `#clean` was handed to a compaction step whose commit has not succeeded: the step
   * added to its key map in place, so a failed commit leaves the map ahead of the rows, and the
   * next step restores from the rows first.
   */
  #cleanSpent = false;
  #cfgOf: TopicConfigs | null = null;
  #cfg: LifecycleConfig | null = null;
  /** Compaction pacing (wrangler vars, src/lifecycle/pace.ts). */
  readonly #pace: CompactionPace;
  /** Appends since the last compaction step (in memory: pacing is advisory, a restart forgets it). */
  #appendsSinceStep = 0;
  /** When the last append was planned (ms), or null since the object started. */
  #lastAppendMs: number | null = null;
  /** The last compaction step's bytes read and measured duration, or null. */
  #lastStep: StepCost | null = null;

  constructor(sql: Sql, log: LogRoom, timers: RoomTimers, floor: () => number | null, bucket: R2Bucket | undefined, owner: OwnerDoor, pace: CompactionPace = DEFAULT_COMPACTION_PACE) {
    this.#pace = pace;
    this.#bucket = bucket;
    this.#owner = owner;
    this.#sql = sql;
    this.#log = log;
    this.#timers = timers;
    this.#floor = floor;
  }

  /** The segment index (read-only). */
  get segments(): readonly Readonly<SegmentRow>[] {
    return this.#segments;
  }

  /** The compaction checkpoint in force (for describe and tests). */
  get compaction(): Readonly<CompactionState> {
    return this.#clean;
  }

  load(nowMs: number): void {
    this.#segments = this.#sql.all<SegmentDbRow>("SELECT * FROM seg_segments ORDER BY id").map(fromRow);
    const bad = checkSegmentIndex(this.#segments);
    if (bad !== undefined) throw new Error(`partition segment index loaded with a broken invariant: ${bad}`);
    this.#restoreCompaction();
    const s = this.#log.state;
    if (s === null) return;
    const last = this.#segments[this.#segments.length - 1];
    this.#catchingUp = this.#log.batchSpansAfter(last?.lastOffset ?? -1, 1).length > 0;
    this.#truncating = this.#log.hasBatchesBelow(this.#truncationTarget());
    this.rearm(nowMs, true);
    if (this.#segments.some((r) => r.remote !== "none" || r.location === "both")) this.#setEarlier(LIFECYCLE_TIMERS.tier, nowMs);
    // Partitions initialised before the owner check existed get their first check now.
    if (this.#timers.dueMs(LIFECYCLE_TIMERS.owner) === undefined) this.#timers.set(LIFECYCLE_TIMERS.owner, nowMs + OWNER_CHECK_GRACE_MS);
  }

  /**
   * Rebuilds the compaction state from its committed rows: the checkpoint, and the key-map rows
   * it names (src/lifecycle/compaction.ts restoreCompaction). Also after a failed step, whose
   * map changes were made in memory before the commit that failed.
   */
  #restoreCompaction(): void {
    this.#cleanSpent = false;
    const cp = this.#sql.first<{ checkpoint: string }>("SELECT checkpoint FROM seg_clean_state WHERE id = 1");
    if (cp === undefined) {
      this.#clean = INITIAL_COMPACTION_STATE;
      return;
    }
    const checkpoint = JSON.parse(cp.checkpoint) as CompactionCheckpoint;
    const rows: KeyRow[] = [];
    if (checkpoint.phase !== "idle" && checkpoint.keyRows !== undefined) {
      const { from, to } = checkpoint.keyRows;
      for (const [seq, entries, data] of this.#sql.iterateRaw<[number, number, ArrayBuffer]>(
        "SELECT seq, entries, data FROM seg_clean_map WHERE seq >= ? AND seq < ? ORDER BY seq",
        from,
        to,
      ))
        rows.push({ seq, entries, data: new Uint8Array(data) });
    }
    this.#clean = restoreCompaction(checkpoint, rows);
  }

  reset(): void {
    this.#cleanSpent = false;
    this.#segments = [];
    // A replaced log (snapshot install) may key a new segment as an old one was: no stale index.
    this.#remoteIndex.clear();
    this.#catchingUp = false;
    this.#truncating = false;
    this.#clean = INITIAL_COMPACTION_STATE;
    this.#cfg = null;
    this.#cfgOf = null;
  }

  #config(): LifecycleConfig {
    const configs = this.#log.state!.configs;
    if (this.#cfgOf !== configs) {
      this.#cfg = lifecycleConfig(configs);
      this.#cfgOf = configs;
    }
    return this.#cfg!;
  }

  // ---- deciding (no writes) ----

  /**
   * Produce-time checks (docs/LIFECYCLE.md "Produce-time checks"): KIP-937 timestamp bounds, and a
   * key on every record of a compacted topic. Runs before anything is written.
   */
  checkProduce(scanned: ScannedAppend, nowMs: number): ErrorResult | null {
    const cfg = this.#config();
    const scans = scanned.scans;
    const timestamps = scans.length === 1 ? scans[0]!.timestamps : scans.flatMap((d) => d.timestamps);
    const bad = checkTimestampBounds(timestamps, nowMs, cfg.timestamps);
    if (bad !== null || !cfg.compaction.compact) return bad;
    return checkCompactedKeys(
      scans.flatMap((d) => decodeBatch(d.bytes, 0, { verifyCrc: false }).records.map((r) => r.key)),
      true,
    );
  }

  /**
   * The segment index changes of an append (roll on segment.bytes / segment.ms, else extend the
   * active segment), or null while the index is catching up (the `index` timer covers the batch).
   */
  planAppend(p: AppendPlan, nowMs: number): LifecycleCommand | null {
    // Appends are flowing: the next compaction step is paced.
    this.#appendsSinceStep++;
    this.#lastAppendMs = nowMs;
    if (this.#catchingUp) return null;
    const cfg = this.#config();
    const out: SegmentCommand[] = [];
    let last: SegmentRow | null = this.#segments[this.#segments.length - 1] ?? null;
    for (const row of p.rows) {
      const h = row.header;
      const meta: BatchMeta = {
        baseOffset: h.baseOffset,
        lastOffset: h.baseOffset + h.recordCount - 1,
        bytes: row.bytes.length,
        records: h.recordCount,
        maxTimestamp: row.maxTimestamp,
        appendMs: nowMs,
      };
      const cmd = planSegmentAppend(last, meta, cfg.roll);
      // Consecutive extends of one segment: only the last one is written (it carries every field).
      const prev = out[out.length - 1];
      if (cmd.kind === "segExtend" && prev !== undefined && prev.kind === "segExtend" && prev.id === cmd.id) out[out.length - 1] = cmd;
      else out.push(cmd);
      last = cmd.kind === "segRoll" ? cmd.row : { ...last!, ...withoutKind(cmd as SegmentCommand & { kind: "segExtend" }) };
    }
    return { segments: out, clean: [] };
  }

  /** deleteRecords (KIP-107, field case B1): the log start change, or the answer of a no-op / a refusal. */
  planDeleteRecords(offset: number): { change: LogChange | null; logStartOffset: number } | ErrorResult {
    const s = this.#log.state!;
    const plan = planDeleteRecords(offset, s);
    if ("code" in plan) return plan;
    return { change: plan.changed ? { op: "logStart", offset: plan.logStartOffset } : null, logStartOffset: plan.logStartOffset };
  }

  // ---- applying (SQL, inside the commit's transaction; deterministic) ----

  apply(cmd: LifecycleCommandPart): void {
    const c = cmd.lifecycle;
    if (c === undefined || c === null) return;
    const sql = this.#sql;
    for (const seg of c.segments) {
      switch (seg.kind) {
        case "segRoll": {
          if (seg.closeId !== null) sql.run("UPDATE seg_segments SET closed = 1 WHERE id = ?", seg.closeId);
          const r = seg.row;
          sql.run(
            "INSERT INTO seg_segments (id, base_offset, last_offset, bytes, records, max_timestamp, first_append_ms, last_append_ms, closed, location, r2_key, remote) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            r.id,
            r.baseOffset,
            r.lastOffset,
            r.bytes,
            r.records,
            r.maxTimestamp,
            r.firstAppendMs,
            r.lastAppendMs,
            r.closed ? 1 : 0,
            r.location,
            r.r2Key,
            r.remote,
          );
          break;
        }
        case "segExtend":
          sql.run(
            "UPDATE seg_segments SET last_offset = ?, bytes = ?, records = ?, max_timestamp = ?, last_append_ms = ? WHERE id = ?",
            seg.lastOffset,
            seg.bytes,
            seg.records,
            seg.maxTimestamp,
            seg.lastAppendMs,
            seg.id,
          );
          break;
        case "segClose":
          sql.run("UPDATE seg_segments SET closed = 1 WHERE id = ?", seg.id);
          break;
        case "segUpdate":
          for (const [field, value] of Object.entries(seg.patch)) {
            const column = SEGMENT_COLUMNS[field];
            if (column === undefined) throw new Error(`segUpdate of unknown field ${field}`);
            // `column` comes from the fixed map above, never from input.
            sql.run(`UPDATE seg_segments SET ${column} = ? WHERE id = ?`, typeof value === "boolean" ? (value ? 1 : 0) : (value as SqlStorageValue), seg.id);
          }
          break;
        case "segDelete":
          sql.run("DELETE FROM seg_segments WHERE id = ?", seg.id);
          break;
      }
    }
    for (const k of c.clean) {
      switch (k.kind) {
        case "keyRows":
          for (const r of k.put) sql.run("INSERT OR REPLACE INTO seg_clean_map (seq, entries, data) VALUES (?, ?, ?)", r.seq, r.entries, blob(r.data));
          if (k.dropBelow !== null) sql.run("DELETE FROM seg_clean_map WHERE seq < ?", k.dropBelow);
          break;
        case "keysClear":
          sql.run("DELETE FROM seg_clean_map");
          break;
        case "checkpoint":
          sql.run("INSERT INTO seg_clean_state (id, checkpoint) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET checkpoint = excluded.checkpoint", JSON.stringify(k.checkpoint));
          break;
        case "rewriteBatch":
        case "dropBatch":
          throw new Error(`compaction command ${k.kind} belongs to the log's rewrite change`);
      }
    }
  }

  /** After the commit: the in-memory index follows; timers are re-planned for appends and log changes. */
  publish(cmd: LifecycleWrite): void {
    const c = cmd.lifecycle;
    if (c !== undefined && c !== null) {
      for (const seg of c.segments) this.#applyInMemory(seg);
    }
    const l = cmd.log;
    if (l !== null && l.op === "logStart") this.#truncating = true;
    // A new partition: its first owner check once a create in progress has surely written its record.
    if (l !== null && l.op === "init") this.#timers.set(LIFECYCLE_TIMERS.owner, Date.now() + OWNER_CHECK_GRACE_MS);
    if (l !== null && l.op === "configs") {
      // A changed config applies without a restart: the timers move earlier when it asks for
      // more (a lower retention triggers clean-up on the next alarm; compaction looks at once).
      // The kept tombstones' expiry was judged under the old delete.retention.ms: judge it again
      // (in memory only; after a restart the stored time is kept, which is only later).
      const clean = this.#clean;
      if (clean.phase === "idle" && clean.tombstoneExpiryMs !== null) this.#clean = { ...clean, tombstoneExpiryMs: Date.now() };
      this.rearm(Date.now(), true);
      // remote.storage.enable turned on, or local.retention.* lowered: the tier timer looks at once.
      if (this.#config().tiering.remoteStorageEnable) this.#setEarlier(LIFECYCLE_TIMERS.tier, Date.now());
      return;
    }
    if ((c !== undefined && c !== null && c.segments.length > 0) || (l !== null && l.op === "logStart")) this.rearm(Date.now(), false);
  }

  #applyInMemory(seg: SegmentCommand): void {
    const index = this.#segments;
    const find = (id: number): SegmentRow => {
      // Commands name the last segment most of the time.
      const last = index[index.length - 1];
      if (last !== undefined && last.id === id) return last;
      const row = index.find((r) => r.id === id);
      if (row === undefined) throw new Error(`no segment ${id}`);
      return row;
    };
    switch (seg.kind) {
      case "segRoll":
        if (seg.closeId !== null) find(seg.closeId).closed = true;
        index.push({ ...seg.row });
        if (seg.closeId !== null) this.#armCompactNow();
        return;
      case "segExtend":
        Object.assign(find(seg.id), withoutKind(seg));
        return;
      case "segClose":
        find(seg.id).closed = true;
        this.#armCompactNow();
        return;
      case "segUpdate":
        Object.assign(find(seg.id), seg.patch);
        return;
      case "segDelete": {
        const i = index.findIndex((r) => r.id === seg.id);
        if (i < 0) throw new Error(`no segment ${seg.id}`);
        index.splice(i, 1);
        return;
      }
    }
  }

  #armCompactNow(): void {
    if (this.#log.state === null) return;
    const cfg = this.#config();
    // A running pass always has its timer set, maybe paced later: a roll does not cut the pause short.
    if (cfg.compaction.compact && this.#clean.phase === "idle") this.#setEarlier(LIFECYCLE_TIMERS.compact, Date.now());
    // A closed segment may be offloaded.
    if (cfg.tiering.remoteStorageEnable) this.#setEarlier(LIFECYCLE_TIMERS.tier, Date.now());
  }

  // ---- timers ----

  /**
   * Sets the `index` and `retention` timers at the earliest time something is owed: an index
   * catch-up or a truncation (now), the active segment's idle roll (segment.ms, or
   * max.compaction.lag.ms on a compacted topic), the head segment's expiry (retention.ms on its max
   * timestamp), a size over retention.bytes (now). `blocked`: the last run could not make progress
   * (the floor holds it), so "now" becomes {@link BLOCKED_RETRY_MS} from now.
   */
  rearm(nowMs: number, compactToo: boolean, blocked = false): void {
    const s = this.#log.state;
    if (s === null) return;
    const cfg = this.#config();
    if (this.#catchingUp) {
      this.#setEarlier(LIFECYCLE_TIMERS.index, nowMs);
      return;
    }
    const soon = blocked ? nowMs + BLOCKED_RETRY_MS : nowMs;
    let due = Number.POSITIVE_INFINITY;
    if (this.#truncating) due = soon;
    const segs = this.#segments;
    const active = segs[segs.length - 1];
    if (active !== undefined && !active.closed) {
      due = Math.min(due, active.firstAppendMs + cfg.roll.segmentMs);
      if (cfg.compaction.compact) due = Math.min(due, active.firstAppendMs + cfg.compaction.maxCompactionLagMs);
    }
    const headIndex = segs.findIndex((r) => r.remote !== "deleting");
    const head = segs[headIndex];
    if (head !== undefined) {
      if (segmentEnd(segs, headIndex, s.logEndOffset) <= s.logStartOffset) due = soon;
      // Retention drops closed segments only: the active one first rolls (its idle roll is above).
      if (head.closed && cfg.retention.delete && cfg.retention.retentionMs >= 0) due = Math.min(due, Math.max(soon, head.maxTimestamp + cfg.retention.retentionMs + 1));
      if (head.closed && cfg.retention.delete && cfg.retention.retentionBytes >= 0) {
        let total = 0;
        for (const r of segs) if (r.remote !== "deleting") total += r.bytes;
        if (total - head.bytes >= cfg.retention.retentionBytes) due = soon;
      }
    }
    if (due !== Number.POSITIVE_INFINITY) this.#setEarlier(LIFECYCLE_TIMERS.retention, Math.min(due, nowMs + TIMER_HORIZON_MS));
    if (compactToo && (this.#clean.phase !== "idle" || cfg.compaction.compact)) this.#setEarlier(LIFECYCLE_TIMERS.compact, nowMs);
  }

  /**
   * Sets timer `key` at `dueMs` unless it is already due at or before then: an append never
   * rewrites a timer that will run anyway (the wake re-plans from the state it finds), so the hot
   * path writes `_schedule` only when something new became due earlier.
   */
  #setEarlier(key: string, dueMs: number): void {
    const current = this.#timers.dueMs(key);
    if (current !== undefined && current <= dueMs) return;
    this.#timers.set(key, dueMs);
  }

  /** A due timer. `commit` is the switchboard's (one transaction per command, then publish). */
  async onTimer(key: string, nowMs: number, commit: (cmd: LifecycleWrite) => void): Promise<void> {
    if (this.#log.state === null) return;
    switch (key) {
      case LIFECYCLE_TIMERS.index:
        this.#indexSlice(nowMs, commit);
        return;
      case LIFECYCLE_TIMERS.retention:
        this.#retention(nowMs, commit);
        return;
      case LIFECYCLE_TIMERS.compact:
        await this.#pacedCompactStep(nowMs, commit);
        return;
      case LIFECYCLE_TIMERS.tier:
        await this.#tier(nowMs, commit);
        return;
      case LIFECYCLE_TIMERS.owner:
        await this.#checkOwner();
        return;
      case LIFECYCLE_TIMERS.sweep:
        await this.#sweepUnowned();
        return;
      default:
        throw new Error(`lifecycle has no timer ${key}`);
    }
  }

  /**
   * Brings the `owner` check forward to `nowMs` (a replica that lost its group: its topic may be
   * gone; docs/RAFT.md "Topic deletion with a replica down"). No-op before init.
   */
  checkOwnerSoon(nowMs: number): void {
    if (this.#log.state === null) return;
    if ((this.#timers.dueMs(LIFECYCLE_TIMERS.owner) ?? Number.POSITIVE_INFINITY) > nowMs) this.#timers.set(LIFECYCLE_TIMERS.owner, nowMs);
  }

  /**
   * The `owner` timer (docs/LIFECYCLE.md "Orphans"): a partition that no topic record names (a
   * crash between a topic's partitions and its record, in create or delete) destroys itself; an
   * owned one deletes the R2 objects under its prefix that no segment row holds (an upload that
   * landed after its row was dropped). An inconclusive answer is retried after
   * {@link OWNER_RETRY_MS}; a definite one only decides.
   */
  async #checkOwner(): Promise<void> {
    const s = this.#log.state!;
    let answer: RpcResult<{ topic: TopicSummary }>;
    try {
      answer = await this.#owner.getTopic(s.topic);
    } catch (err) {
      log.warn("edgelog.lifecycle.owner_check_failed", { topic: s.topic, partition: s.partition, error: err });
      this.#timers.set(LIFECYCLE_TIMERS.owner, Date.now() + OWNER_RETRY_MS);
      return;
    }
    const verdict = ownerVerdict(s, answer);
    if (verdict.kind === "unknown") {
      this.#timers.set(LIFECYCLE_TIMERS.owner, Date.now() + OWNER_RETRY_MS);
      return;
    }
    if (verdict.kind === "orphan") {
      log.warn("edgelog.lifecycle.orphan_destroyed", { topic: s.topic, topicId: s.topicId, partition: s.partition, reason: verdict.reason });
      await this.#owner.destroySelf();
      return;
    }
    await this.#sweepUnowned();
    this.#timers.set(LIFECYCLE_TIMERS.owner, Date.now() + OWNER_CHECK_INTERVAL_MS);
  }

  /**
   * Sets the `sweep` timer to `nowMs` (no-op before init or without remote storage): after a
   * snapshot install that replaced the log, whose dropped segment rows held keys of objects no
   * read reaches any more (docs/RAFT.md "Tiered storage of a replicated partition").
   */
  sweepSoon(nowMs: number): void {
    if (this.#log.state === null || !this.#config().tiering.remoteStorageEnable) return;
    this.#setEarlier(LIFECYCLE_TIMERS.sweep, nowMs);
  }

  /**
   * Deletes the R2 objects under this partition's (this replica's) prefix that no segment row
   * holds. Safe because a row holds its key from the commit that fixed it, before any put, until
   * the commit after its delete; the rows are read after each list page, so a key recorded
   * meanwhile is held. Lists only this replica's prefix: another replica's objects are never seen.
   * @returns the keys deleted.
   */
  async #sweepUnowned(): Promise<number> {
    const s = this.#log.state!;
    const bucket = this.#bucket;
    if (bucket === undefined || !this.#config().tiering.remoteStorageEnable) return 0;
    const scope = this.#objectScope();
    if (scope === null) return 0;
    const prefix = partitionObjectPrefix(s.topicId, s.partition, scope.replica);
    let deleted = 0;
    let cursor: string | undefined;
    do {
      const page = await bucket.list({ prefix, limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
      // Compared with the rows as they are after the list: a key recorded meanwhile is held.
      const unowned = unownedObjectKeys(
        page.objects.map((o) => o.key),
        this.#segments,
      );
      if (unowned.length > 0) {
        log.warn("edgelog.lifecycle.orphan_objects_deleted", { topic: s.topic, partition: s.partition, replica: scope.replica, keys: unowned.length });
        await bucket.delete(unowned);
        for (const k of unowned) this.#remoteIndex.delete(k);
        deleted += unowned.length;
      }
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor !== undefined);
    return deleted;
  }

  /**
   * Whose objects this partition object writes, lists and deletes: `{replica: null}` at
   * replication.factor 1, `{replica: "r2"}` for replica r2 of a replicated partition. Null for a
   * replicated partition whose member id is not known (never after its bootstrap; logged once):
   * its R2 work waits rather than write or sweep under the factor-1 prefix.
   */
  #objectScope(): { replica: string | null } | null {
    const s = this.#log.state!;
    if (replicationFactorOf(s.configs) <= 1) return { replica: null };
    const replica = this.#owner.replicaId();
    if (replica !== null) return { replica };
    if (!this.#noReplicaLogged) {
      this.#noReplicaLogged = true;
      log.error("edgelog.lifecycle.no_replica_id", { topic: s.topic, partition: s.partition, message: "a replicated partition without a Raft member id: its R2 work waits" });
    }
    return null;
  }

  /** One slice of indexing batches stored before the index existed (`migrateSlice`). */
  #indexSlice(nowMs: number, commit: (cmd: LifecycleWrite) => void): void {
    const last = this.#segments[this.#segments.length - 1] ?? null;
    const spans = this.#log.batchSpansAfter(last?.lastOffset ?? -1, INDEX_SLICE_ROWS);
    const metas: BatchMeta[] = spans.map((b) => ({ ...b, appendMs: nowMs }));
    const segments = migrateSlice(last, metas, this.#config().roll);
    if (segments.length > 0) commit({ log: null, append: null, lifecycle: { segments, clean: [] } });
    this.#catchingUp = spans.length >= INDEX_SLICE_ROWS;
    this.rearm(nowMs, !this.#catchingUp);
  }

  /**
   * Idle roll, retention (whole closed segments from the head, log start to the first retained
   * offset, bounded by the floor), then one slice of row deletion. Each is its own commit.
   */
  #retention(nowMs: number, commit: (cmd: LifecycleWrite) => void): void {
    if (this.#catchingUp) {
      this.rearm(nowMs, false);
      return;
    }
    const cfg = this.#config();
    const segs = this.#segments;
    const roll = planIdleRoll(segs[segs.length - 1] ?? null, { ...cfg.roll, compact: cfg.compaction.compact, maxCompactionLagMs: cfg.compaction.maxCompactionLagMs }, nowMs);
    if (roll !== null) commit({ log: null, append: null, lifecycle: { segments: [roll], clean: [] } });
    const s = this.#log.state!;
    const floor = this.#floor();
    const plan = planRetention({ segments: this.#segments, bounds: s, floor, nowMs }, cfg.retention);
    let progressed = roll !== null;
    if (plan.commands.length > 0 || plan.logStartOffset > s.logStartOffset) {
      const log: LogChange | null = plan.logStartOffset > s.logStartOffset ? { op: "logStart", offset: plan.logStartOffset } : null;
      commit({ log, append: null, lifecycle: { segments: plan.commands, clean: [] } });
      progressed = true;
      // Dropped segments with an R2 copy owe an object delete.
      if (plan.commands.some((c) => c.kind === "segUpdate")) this.#setEarlier(LIFECYCLE_TIMERS.tier, nowMs);
    }
    const target = this.#truncationTarget();
    const slice = planTruncateSlice(target, this.#log.headBatches(TRUNCATE_LIMITS.maxRows + 1), TRUNCATE_LIMITS);
    if (slice.command !== null) {
      let freedBytes = 0;
      for (const b of this.#log.headBatches(TRUNCATE_LIMITS.maxRows)) if (b.lastOffset < slice.command.offset) freedBytes += b.bytes;
      commit({ log: { op: "truncate", before: slice.command.offset, freedBytes }, append: null });
      progressed = true;
    }
    this.#truncating = !slice.done || this.#log.hasBatchesBelow(target);
    this.rearm(Date.now(), false, !progressed);
  }

  /**
   * Below this offset batch rows may be deleted: the log start, or the local start of a tiered log
   * (segments whose R2 copy is recorded and that local retention moved to `remote`), held back by
   * the floor.
   */
  #truncationTarget(): number {
    const s = this.#log.state!;
    return truncationTarget(Math.max(s.logStartOffset, localStartOffset(this.#segments, s)), this.#floor());
  }

  // ---- tiered storage (KIP-405 names; src/lifecycle/tiered.ts) ----

  /**
   * One `tier` wake: commit the plan (keys for closed local segments, `remote` for segments local
   * retention lets go), then run at most one upload and {@link DELETES_PER_WAKE} object deletes,
   * each AFTER the commit that recorded it as owed and each followed by its completion commit, so
   * a crash between them repeats the effect (same key, same bytes) and loses nothing.
   */
  async #tier(nowMs: number, commit: (cmd: LifecycleWrite) => void): Promise<void> {
    const bucket = this.#bucket;
    const s = this.#log.state!;
    const cfg = this.#config();
    if (bucket === undefined) {
      if (cfg.tiering.remoteStorageEnable)
        log.error("edgelog.lifecycle.no_r2_binding", {
          topic: s.topic,
          partition: s.partition,
          message: "remote.storage.enable is set but the Worker has no SEGMENTS R2 binding; nothing is offloaded",
        });
      return;
    }
    const scope = this.#objectScope();
    if (scope === null) return;
    const plan = planTiering(
      { segments: this.#segments, bounds: s, nowMs, topicId: s.topicId, partition: s.partition, replica: scope.replica, maxConcurrentCopies: MAX_CONCURRENT_COPIES },
      cfg.tiering,
    );
    if (plan.commands.length > 0) commit({ log: null, append: null, lifecycle: { segments: plan.commands, clean: [] } });
    let uploads = 0;
    let deletes = 0;
    for (const effect of plan.effects) {
      if (effect.kind === "upload") {
        if (uploads >= MAX_CONCURRENT_COPIES) continue;
        uploads++;
        await this.#upload(bucket, effect);
        const done = completeUpload(
          this.#segments.find((r) => r.id === effect.id),
          effect.r2Key,
        );
        if (done !== null) commit({ log: null, append: null, lifecycle: { segments: [done], clean: [] } });
      } else {
        if (deletes >= DELETES_PER_WAKE) continue;
        deletes++;
        await bucket.delete(effect.r2Key);
        this.#remoteIndex.delete(effect.r2Key);
        const done = completeRemoteDelete(this.#segments.find((r) => r.id === effect.id));
        if (done !== null) commit({ log: null, append: null, lifecycle: { segments: [done], clean: [] } });
      }
    }
    // Rows below the new local start go by the retention slicer.
    if (this.#log.hasBatchesBelow(this.#truncationTarget())) {
      this.#truncating = true;
      this.#setEarlier(LIFECYCLE_TIMERS.retention, Date.now());
    }
    this.#armTier(Date.now(), plan.effects.length > 0 || plan.commands.length > 0);
  }

  /**
   * Writes one segment's object: one put from memory up to {@link MULTIPART_THRESHOLD_BYTES} of
   * stored bytes, else an R2 multipart upload in parts of {@link PART_BYTES}, reading the batches
   * in slices so that one part and one slice are in memory (a 1 GiB segment.bytes cannot be held
   * in a 128 MB isolate). Part 1 carries the header, known at the end, so it goes last. A failed
   * multipart upload is aborted; one a crash interrupts is aborted by R2's default lifecycle rule
   * after 7 days, and the retry starts a new one (the key, and so the object, are the same).
   */
  async #upload(bucket: R2Bucket, effect: { id: number; r2Key: string; baseOffset: number; end: number }): Promise<void> {
    const seg = this.#segments.find((r) => r.id === effect.id);
    if (seg === undefined || seg.bytes <= MULTIPART_THRESHOLD_BYTES) {
      const { rows } = this.#log.batchesInRange(effect.baseOffset, effect.end, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
      await bucket.put(effect.r2Key, encodeSegmentObject(rows.map((r) => r.data)));
      return;
    }
    const upload = await bucket.createMultipartUpload(effect.r2Key);
    try {
      const writer = new SegmentObjectWriter(PART_BYTES);
      const parts: R2UploadedPart[] = [];
      let partNumber = 2;
      for (let from = effect.baseOffset; from < effect.end; ) {
        const { rows, exhausted } = this.#log.batchesInRange(from, effect.end, COMPACT_SLICE_BATCHES, PART_BYTES);
        for (const r of rows) for (const part of writer.add(r.data)) parts.push(await upload.uploadPart(partNumber++, part));
        if (exhausted || rows.length === 0) break;
        from = rows[rows.length - 1]!.lastOffset + 1;
      }
      const { first, rest } = writer.finish();
      for (const part of rest) parts.push(await upload.uploadPart(partNumber++, part));
      parts.unshift(await upload.uploadPart(1, first));
      await upload.complete(parts);
    } catch (err) {
      await upload.abort().catch(() => undefined);
      throw err;
    }
  }

  /** The `tier` timer: at once while work is owed, else when the head `both` segment passes local.retention.ms. */
  #armTier(nowMs: number, busy: boolean): void {
    const cfg = this.#config().tiering;
    if (busy || this.#segments.some((r) => r.remote !== "none")) {
      this.#setEarlier(LIFECYCLE_TIMERS.tier, nowMs);
      return;
    }
    const head = this.#segments.find((r) => r.location === "both");
    if (head !== undefined && cfg.localRetentionMs >= 0) this.#setEarlier(LIFECYCLE_TIMERS.tier, Math.min(head.maxTimestamp + cfg.localRetentionMs + 1, nowMs + TIMER_HORIZON_MS));
  }

  /**
   * Before the partition's storage is deleted (topic deletion, a replica removed by a
   * reassignment, an orphan's destroy): deletes every R2 object under this partition's key
   * prefix (a replica's own prefix when replicated: the other replicas' copies stay), so that
   * nothing is left that no segment row owns. Only for topics that enabled remote storage (it
   * cannot be turned off, so no other topic has objects).
   */
  async deleteRemoteObjects(): Promise<void> {
    const s = this.#log.state;
    const bucket = this.#bucket;
    if (s === null || bucket === undefined || !this.#config().tiering.remoteStorageEnable) return;
    const scope = this.#objectScope();
    if (scope === null) return;
    const prefix = partitionObjectPrefix(s.topicId, s.partition, scope.replica);
    let cursor: string | undefined;
    do {
      const page = await bucket.list({ prefix, limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
      if (page.objects.length > 0) await bucket.delete(page.objects.map((o) => o.key));
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor !== undefined);
    this.#remoteIndex.clear();
  }

  /** True when a fetch at `offset` (within the log's bounds) reads a remote segment. */
  readsRemote(offset: number): boolean {
    const s = this.#log.state;
    return s !== null && offset >= s.logStartOffset && offset < localStartOffset(this.#segments, s);
  }

  /**
   * A fetch below the local start, read through from the segment's R2 object: the same answer
   * shape and the same batch bytes as a local read (the object holds the batches as stored). At
   * most three range reads: header, offset index (cached), the batches. Stops at the segment's
   * end; the next fetch continues in the next segment.
   * @throws Error when the object is missing or corrupt (SegmentObjectError): a broken invariant.
   */
  async readRemote(req: FetchRequest): Promise<Ok<FetchOk>> {
    const s = this.#log.state!;
    const src = readSource(this.#segments, s, req.offset);
    if (src.kind !== "remote") throw new Error(`offset ${req.offset} is not remote`);
    const i = this.#segments.findIndex((r) => r.id === src.id);
    const end = segmentEnd(this.#segments, i, s.logEndOffset);
    const index = await this.#indexOf(src.r2Key);
    let first = index.findIndex((e) => e.lastOffset >= req.offset);
    const batches: Uint8Array[] = [];
    let nextOffset = end;
    if (first >= 0) {
      let last = first;
      let bytes = index[first]!.size;
      let records = index[first]!.lastOffset - Math.max(index[first]!.baseOffset, req.offset) + 1;
      while (last + 1 < index.length && records < req.maxRecords && bytes + index[last + 1]!.size <= req.maxBytes) {
        last++;
        bytes += index[last]!.size;
        records += index[last]!.lastOffset - index[last]!.baseOffset + 1;
      }
      const start = index[first]!.position;
      const body = await this.#bucket!.get(src.r2Key, { range: { offset: start, length: bytes } });
      if (body === null) throw new Error(`segment object ${src.r2Key} is missing`);
      const data = new Uint8Array(await body.arrayBuffer());
      for (; first <= last; first++) {
        const e = index[first]!;
        batches.push(data.slice(e.position - start, e.position - start + e.size));
      }
      nextOffset = last + 1 < index.length ? index[last]!.lastOffset + 1 : end;
    }
    return { ok: true, batches, nextOffset, logStartOffset: s.logStartOffset, highWatermark: s.highWatermark, logEndOffset: s.logEndOffset };
  }

  /**
   * The stored rows of [from, end) (`from` below the local start) read from this replica's own
   * remote segment object, for a peer's snapshot catch-up (durable-objects/partition/catch-up.ts):
   * a replica whose local rows were tiered away still serves the committed log from its log
   * start. At most `maxBytes` of batches (the first always), within the one segment holding
   * `from` (the next request continues in the next one). Every column comes from the batch
   * header, as the log stored it, except `runningMaxTimestamp`, which is the max timestamp of
   * the segments up to this one (the segment index keeps no per-batch running max): at least the
   * batch's own max timestamp and non-decreasing along the log (a later local row's running max
   * covers these segments), so a timestamp lookup on the pulled rows answers the first batch
   * holding a timestamp at or above the one asked, or an earlier batch of the same segment,
   * never a later one.
   * @throws Error when `from` is not remote or the object is missing or corrupt.
   */
  async remoteBatchRows(from: number, end: number, maxBytes: number): Promise<StoredBatch[]> {
    const s = this.#log.state!;
    const src = readSource(this.#segments, s, from);
    if (src.kind !== "remote") throw new Error(`offset ${from} is not remote`);
    const i = this.#segments.findIndex((r) => r.id === src.id);
    let runningMax = -1;
    for (let j = 0; j <= i; j++) runningMax = Math.max(runningMax, this.#segments[j]!.maxTimestamp);
    const index = await this.#indexOf(src.r2Key);
    const first = index.findIndex((e) => e.lastOffset >= from);
    if (first < 0 || index[first]!.baseOffset >= end) return [];
    let last = first;
    let bytes = index[first]!.size;
    while (last + 1 < index.length && index[last + 1]!.lastOffset < end && bytes + index[last + 1]!.size <= maxBytes) bytes += index[++last]!.size;
    const start = index[first]!.position;
    const body = await this.#bucket!.get(src.r2Key, { range: { offset: start, length: bytes } });
    if (body === null) throw new Error(`segment object ${src.r2Key} is missing`);
    const data = new Uint8Array(await body.arrayBuffer());
    const rows: StoredBatch[] = [];
    for (let k = first; k <= last; k++) {
      const e = index[k]!;
      const batch = data.slice(e.position - start, e.position - start + e.size);
      const h = decodeBatchHeader(batch);
      rows.push({
        baseOffset: h.baseOffset,
        lastOffset: h.baseOffset + h.lastOffsetDelta,
        recordCount: h.recordCount,
        producerId: h.producerId,
        producerEpoch: h.producerEpoch,
        baseSequence: h.baseSequence,
        partitionLeaderEpoch: h.partitionLeaderEpoch,
        attributes: h.attributes,
        baseTimestamp: h.baseTimestamp,
        maxTimestamp: h.maxTimestamp,
        runningMaxTimestamp: Math.max(runningMax, h.maxTimestamp),
        sizeBytes: batch.length,
        data: batch,
      });
    }
    return rows;
  }

  async #indexOf(r2Key: string): Promise<SegmentIndexEntry[]> {
    const cached = this.#remoteIndex.get(r2Key);
    if (cached !== undefined) return cached;
    const bucket = this.#bucket;
    if (bucket === undefined) throw new Error(`segment ${r2Key} is remote but the Worker has no SEGMENTS R2 binding`);
    const head = await bucket.get(r2Key, { range: { offset: 0, length: 64 } });
    if (head === null) throw new Error(`segment object ${r2Key} is missing`);
    const header = decodeSegmentHeader(new Uint8Array(await head.arrayBuffer()));
    const range = segmentIndexRange(header);
    const body = await bucket.get(r2Key, { range: { offset: range.start, length: range.end - range.start } });
    if (body === null) throw new Error(`segment object ${r2Key} is missing`);
    const index = decodeSegmentIndex(header, new Uint8Array(await body.arrayBuffer()));
    if (this.#remoteIndex.size >= REMOTE_INDEX_CACHE) this.#remoteIndex.delete(this.#remoteIndex.keys().next().value!);
    this.#remoteIndex.set(r2Key, index);
    return index;
  }

  /**
   * One compaction step, paced (src/lifecycle/pace.ts): its budget follows whether appends
   * arrived since the previous step and what that step cost; its duration is measured around it
   * (on a clock that did not move, as in production Workers during synchronous work, after a
   * zero-delay timer), and the next step waits for the pause the pace asks for.
   */
  async #pacedCompactStep(nowMs: number, commit: (cmd: LifecycleWrite) => void): Promise<void> {
    const startMs = Date.now();
    const busy = appendsFlowing(this.#appendsSinceStep, this.#lastAppendMs, startMs);
    this.#appendsSinceStep = 0;
    const bytes = this.#compactStep(nowMs, commit, compactionStepBudget(busy, this.#lastStep, this.#pace));
    // Only a step that read a slice of a pass that goes on is paced: starting a pass reads nothing.
    const after = this.#clean;
    if (bytes === null || after.phase === "idle") return;
    let ms = Date.now() - startMs;
    if (ms <= 0 && (busy || this.#pace.maxBytesPerSecond !== null)) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      ms = Date.now() - startMs;
    }
    const step: StepCost = { bytes, ms };
    this.#lastStep = step;
    const pauseMs = compactionPauseMs(step, busy, this.#pace);
    // The pass may have been abandoned or the partition deleted during the await.
    if (pauseMs > 0 && this.#log.state !== null && this.#clean === after) this.#timers.set(LIFECYCLE_TIMERS.compact, Date.now() + pauseMs);
  }

  /**
   * One compaction step: decide a pass when idle, else map or rewrite one slice of at most
   * `budget` (checkpoint last). Answers the stored bytes read, or null when no slice was read.
   */
  #compactStep(nowMs: number, commit: (cmd: LifecycleWrite) => void, budget: StepBudget): number | null {
    if (this.#cleanSpent) this.#restoreCompaction();
    const cfg = this.#config();
    const s = this.#log.state!;
    let state = this.#clean;
    if (state.phase === "idle") {
      if (!cfg.compaction.compact) return null;
      const decision = planCompactionPass(state, { segments: this.#segments, bounds: s, lastStableOffset: null, nowMs }, cfg.compaction);
      if (!decision.run) {
        this.#armCompactLater(nowMs);
        return null;
      }
      const started = startCompaction(state, decision.pass);
      commit({ log: null, append: null, lifecycle: { segments: [], clean: started.commands } });
      this.#clean = state = started.state;
      this.#timers.set(LIFECYCLE_TIMERS.compact, nowMs);
      return null;
    }
    if (!cfg.compaction.compact) {
      // The topic stopped being compacted: abandon the pass (nothing is lost).
      const aborted = abortCompaction(state);
      commit({ log: null, append: null, lifecycle: { segments: [], clean: aborted.commands } });
      this.#clean = aborted.state;
      return null;
    }
    const range = compactionReadRange(state)!;
    const { rows, exhausted } = this.#log.batchesInRange(range.from, range.end, budget.maxBatches, budget.maxBytes);
    let bytesRead = 0;
    for (const r of rows) bytesRead += r.bytes;
    const batches = rows.map((b) => ({
      baseOffset: b.baseOffset,
      lastOffset: b.lastOffset,
      records: scanRecordKeys(b.data),
    }));
    // The step adds to the pass's key map in place: until its commit succeeds, the state is spent.
    this.#cleanSpent = true;
    const step = compactionStep(state, { batches, exhausted }, cfg.compaction, { maxMapKeys: COMPACT_MAX_MAP_KEYS, maxMapBytes: COMPACT_MAX_MAP_BYTES });
    const rewrites: BatchRewrite[] = [];
    const stats = new Map<number, { bytes: number; records: number }>();
    const clean: CompactionCommand[] = [];
    for (const c of step.commands) {
      if (c.kind !== "rewriteBatch" && c.kind !== "dropBatch") {
        clean.push(c);
        continue;
      }
      const row = rows.find((r) => r.baseOffset === c.baseOffset);
      if (row === undefined) continue;
      const data = c.kind === "dropBatch" ? null : rewriteStoredBatch(row.data, new Set(c.keep));
      const recordCount = data === null ? 0 : c.kind === "rewriteBatch" ? c.keep.length : row.records;
      rewrites.push({ baseOffset: row.baseOffset, data, recordCount, sizeBefore: row.bytes });
      const seg = segmentAt(this.#segments, row.baseOffset);
      if (seg !== null) {
        const st = stats.get(seg.id) ?? { bytes: seg.bytes, records: seg.records };
        st.bytes += (data === null ? 0 : data.length) - row.bytes;
        st.records += recordCount - row.records;
        stats.set(seg.id, st);
      }
    }
    const segments: SegmentCommand[] = [...stats].map(([id, st]) => ({ kind: "segUpdate", id, patch: { bytes: Math.max(0, st.bytes), records: Math.max(0, st.records) } }));
    commit({ log: rewrites.length > 0 ? { op: "rewrite", batches: rewrites } : null, append: null, lifecycle: { segments, clean } });
    this.#clean = step.state;
    this.#cleanSpent = false;
    // The next slice, or (a pass ended) a look at whether another is due (a full key map ends a pass early).
    this.#timers.set(LIFECYCLE_TIMERS.compact, nowMs);
    return bytesRead;
  }

  /**
   * No pass now: look again when a kept tombstone's window ends, a dirty segment passes
   * max.compaction.lag.ms, or a closed segment that min.compaction.lag.ms holds back (it ends the
   * cleanable range) becomes old enough (segment closes arm it too).
   */
  #armCompactLater(nowMs: number): void {
    const cfg = this.#config();
    let due = this.#clean.phase === "idle" && this.#clean.tombstoneExpiryMs !== null ? this.#clean.tombstoneExpiryMs : Number.POSITIVE_INFINITY;
    const dirtyFrom = this.#clean.cleanOffset;
    const firstDirty = this.#segments.find((r) => r.closed && r.lastOffset >= dirtyFrom);
    if (firstDirty !== undefined) due = Math.min(due, firstDirty.firstAppendMs + cfg.compaction.maxCompactionLagMs + 1);
    const lag = cfg.compaction.minCompactionLagMs;
    const held = firstDirty === undefined || lag <= 0 ? undefined : this.#segments.find((r) => r.closed && r.remote !== "deleting" && nowMs - r.maxTimestamp < lag);
    if (held !== undefined) due = Math.min(due, held.maxTimestamp + lag);
    if (due === Number.POSITIVE_INFINITY) return;
    this.#timers.set(LIFECYCLE_TIMERS.compact, Math.min(Math.max(due, nowMs + 1), nowMs + TIMER_HORIZON_MS));
  }
}

function withoutKind(c: SegmentCommand & { kind: "segExtend" }): Partial<SegmentRow> {
  const { kind: _k, id: _i, ...fields } = c;
  return fields;
}

function fromRow(r: SegmentDbRow): SegmentRow {
  return {
    id: r.id,
    baseOffset: r.base_offset,
    lastOffset: r.last_offset,
    bytes: r.bytes,
    records: r.records,
    maxTimestamp: r.max_timestamp,
    firstAppendMs: r.first_append_ms,
    lastAppendMs: r.last_append_ms,
    closed: r.closed !== 0,
    location: r.location as SegmentRow["location"],
    r2Key: r.r2_key,
    remote: r.remote as SegmentRow["remote"],
  };
}
