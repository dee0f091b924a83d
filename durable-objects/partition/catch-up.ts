/**
 * Snapshot catch-up of a replicated partition's replica (docs/RAFT.md "Snapshot catch-up"): the
 * shell of src/partition/catch-up.ts, both sides.
 *
 * - **The peer** (the leader that sent InstallSnapshot, or any replica that has applied far
 *   enough) answers `replicaSnapshotRead`: `begin` gives the manifest of its state at its applied
 *   index M, read in one synchronous step (so the log bounds, the leader epoch and the producer
 *   state all belong to M); `batches` gives the stored rows of a range, every column as stored
 *   (offsets, leader epochs, bytes), at most {@link CATCH_UP_CHUNK_BYTES} per answer.
 * - **The follower** ({@link ReplicaCatchUp.start}, called by the replica when InstallSnapshot
 *   arrives) pulls: the manifest, then the batches after its own log end (or the peer's whole
 *   log when the peer's retention moved past it) into `batches_staged` (the log room's staging
 *   table, invisible to every read), one commit per chunk; then, synchronously, the install: ONE
 *   transaction holding the staged batches moved into the log, the log meta (bounds, leader
 *   epoch, stored bytes), the producer state, the subscriptions and the Durable Streams state
 *   (ds_stream, ds_producers) replaced by M's, the segment index rows of a
 *   replaced log deleted, and the Raft journal (snapshot meta at (M, term), commit and applied
 *   index = M, its log emptied). The rooms' memory follows only after that commit.
 *
 * Crash semantics: before the install's commit the replica's visible state is its old committed
 * prefix and its journal is untouched (a restart rebuilds exactly that, and the next
 * InstallSnapshot chunk starts a new pull, which first drops whatever was staged); after it the
 * whole pulled state is there. Any await that returns to a replica whose node was rebuilt,
 * crashed or reset (its `generation` changed) stops the pull.
 */
import {
  checkChunk,
  installDecision,
  planCatchUp,
  producerRowsBytes,
  subscriptionRowsBytes,
  type CatchUpChunk,
  type CatchUpManifest,
  type CatchUpRead,
  type SubscriptionRow,
} from "../../src/partition/catch-up.ts";
import type { SubsCommand } from "./subscriptions.ts";
import type { PartitionRpc } from "../../src/partition/rpc.ts";
import { errorResult, type RpcResult } from "../../src/protocol/errors.ts";
import { log } from "../../src/log/logger.ts";
import type { NodeId } from "../../src/raft/index.ts";
import type { SnapshotMeta } from "../../src/raft/types.ts";
import type { LifecycleRoom } from "./lifecycle.ts";
import type { LogRoom } from "./log.ts";
import type { ProducersRoom } from "./producers.ts";
import type { ReplicatedWrite } from "./replicated.ts";
import type { PartitionReplica } from "./replica.ts";
import type { StreamsCommand } from "../../src/streams/state.ts";
import type { StreamsState } from "./streams/state.ts";

/** Most batch bytes in one answer (a Durable Object RPC value must stay well below 32 MiB; a row is at most ~2 MB). */
export const CATCH_UP_CHUNK_BYTES = 8 << 20;
/** Most producer state bytes in a manifest (estimated, {@link producerRowsBytes}). */
export const CATCH_UP_MAX_PRODUCER_BYTES = 16 << 20;

/** Test-only knobs of a pull (set through the partition's `setReplicaTestKnobs`, fault-injection builds only). */
export interface CatchUpKnobs {
  /** Bytes per chunk asked of the peer (at most {@link CATCH_UP_CHUNK_BYTES}). */
  chunkBytes?: number;
  /** The pull waits after staging this many chunks until the knob is cleared (a crash can be injected meanwhile). */
  holdAfterChunks?: number;
}

/** What the catch-up needs of its partition object. */
export interface CatchUpHost {
  log: LogRoom;
  producers: ProducersRoom;
  lifecycle: LifecycleRoom;
  /** The Durable Streams state (ds_stream, ds_producers): in the manifest, replaced by the install. */
  streams: StreamsState;
  replica: PartitionReplica;
  /** The switchboard's commit: the rooms' apply and `alsoWrite` in ONE transaction, then publish. */
  commit: (cmd: CatchUpWrite, alsoWrite?: () => void) => void;
  /** A peer replica's object. */
  peer: (id: NodeId) => PartitionRpc;
  /** The subscriptions as stored (the manifest carries them: cursors are replicated state). */
  subscriptionRows: () => SubscriptionRow[];
  /** After an install: rooms that keep derived state in memory reload it (the lifecycle room's segment index). */
  installed: () => void;
}

const NONE = { append: null, producer: null, stream: null } as const;

/** What a catch-up commits: a replicated write's parts, and the streams room's install. */
type CatchUpWrite = Omit<ReplicatedWrite, "stream"> & StreamsCommand & SubsCommand;

export class ReplicaCatchUp {
  readonly #h: CatchUpHost;
  #running = false;
  #knobs: CatchUpKnobs = {};
  /** Installs done by this object since it started (replicaStatus reports it). */
  #installs = 0;

  constructor(host: CatchUpHost) {
    this.#h = host;
  }

  get installs(): number {
    return this.#installs;
  }

  get running(): boolean {
    return this.#running;
  }

  setKnobs(k: CatchUpKnobs): void {
    this.#knobs = { ...k };
  }

  // ---- the peer ----

  /**
   * A peer's answer to `replicaSnapshotRead` (see the file comment). Writes nothing. `begin`
   * answers without awaiting (one synchronous step); a `batches` range below this replica's local
   * start (tiered storage) is read from its own remote segment objects.
   */
  async read(req: CatchUpRead): Promise<RpcResult<{ manifest: CatchUpManifest } | { chunk: CatchUpChunk }>> {
    const node = this.#h.replica.node;
    const s = this.#h.log.state;
    if (node === null || s === null) return errorResult("NOT_LEADER_OR_FOLLOWER", "This replica has no Raft state to serve a catch-up from.", { replica: this.#h.replica.memberId });
    if (req.op === "begin") {
      if (node.appliedIndex < req.minIndex) {
        return errorResult("NOT_LEADER_OR_FOLLOWER", `Replica ${node.id} has applied up to ${node.appliedIndex}, not yet ${req.minIndex}.`, {
          replica: node.id,
          appliedIndex: node.appliedIndex,
        });
      }
      const index = node.appliedIndex;
      const producers = this.#h.producers.rows();
      const streams = this.#h.streams.rows();
      // Durable Streams Producer-Ids count too (~ their id's bytes and three numbers each).
      if (producerRowsBytes(producers) + streams.producers.reduce((n, p) => n + p[0].length + 36, 0) > CATCH_UP_MAX_PRODUCER_BYTES) {
        return errorResult("REQUEST_TOO_LARGE", `The producer state (${producers.producers.length} producer ids) is too large to ship in one catch-up manifest.`, {
          producers: producers.producers.length,
        });
      }
      const subscriptions = this.#h.subscriptionRows();
      if (producerRowsBytes(producers) + subscriptionRowsBytes(subscriptions) > CATCH_UP_MAX_PRODUCER_BYTES) {
        return errorResult("REQUEST_TOO_LARGE", `The subscriptions' cursors (${subscriptions.length} subscriptions) are too large to ship in one catch-up manifest.`, {
          subscriptions: subscriptions.length,
        });
      }
      const manifest: CatchUpManifest = {
        index,
        term: node.termAt(index) ?? node.snapshotMeta.term,
        conf: { voters: [...node.conf.voters], learners: [...node.conf.learners] },
        logStartOffset: s.logStartOffset,
        logEndOffset: s.logEndOffset,
        leaderEpoch: s.leaderEpoch,
        producers,
        streams,
        configs: s.configs,
        ...(s.configsOffset !== null ? { configsOffset: s.configsOffset } : {}),
        subscriptions,
      };
      return { ok: true, manifest };
    }
    if (req.from < s.logStartOffset) {
      return errorResult("OFFSET_OUT_OF_RANGE", `Offset ${req.from} is below this replica's log start ${s.logStartOffset} (retention moved it meanwhile).`, {
        offset: req.from,
        logStartOffset: s.logStartOffset,
      });
    }
    const end = Math.min(req.end, s.logEndOffset);
    const maxBytes = Math.min(req.maxBytes, CATCH_UP_CHUNK_BYTES);
    // Tiered away: the local rows start above `from`, and reading them would leave a gap in the
    // follower's log. The committed batches are in this replica's own R2 objects.
    const rows = this.#h.lifecycle.readsRemote(req.from) ? await this.#h.lifecycle.remoteBatchRows(req.from, end, maxBytes) : this.#h.log.batchRowsInRange(req.from, end, maxBytes);
    const last = rows[rows.length - 1];
    return { ok: true, chunk: { rows, next: last === undefined ? req.end : last.lastOffset + 1 } };
  }

  // ---- the follower ----

  /** InstallSnapshot arrived from `from` (see the file comment). One pull at a time; never throws. */
  start(from: NodeId, meta: SnapshotMeta): void {
    if (this.#running) return;
    this.#running = true;
    this.#pull(from, meta)
      .catch((err: unknown) => log.warn("edgelog.partition.catch_up_failed", { replica: this.#h.replica.memberId, from, error: String(err) }))
      .finally(() => {
        this.#running = false;
      });
  }

  async #pull(peerId: NodeId, meta: SnapshotMeta): Promise<void> {
    const h = this.#h;
    const replica = h.replica;
    const generation = replica.generation;
    const alive = (): boolean => replica.generation === generation && !replica.crashed && replica.node !== null && h.log.state !== null;
    const stop = (why: string, details: Record<string, unknown> = {}): void => log.warn("edgelog.partition.catch_up_stopped", { replica: replica.memberId, from: peerId, why, ...details });
    const peer = h.peer(peerId);
    const begun = await peer.replicaSnapshotRead({ op: "begin", minIndex: meta.index });
    if (!alive()) return;
    if (!begun.ok || !("manifest" in begun)) return stop("begin refused", { answer: begun.ok ? "no manifest" : begun.code });
    const m = begun.manifest;
    const endAtStart = h.log.state!.logEndOffset;
    const plan = planCatchUp(h.log.state!, m);
    if ("error" in plan) return stop(plan.error);
    h.commit({ log: { op: "unstage" }, ...NONE });
    let from = plan.from;
    let lastStaged: number | null = null;
    let chunks = 0;
    while (from < plan.end) {
      const r = await peer.replicaSnapshotRead({ op: "batches", from, end: plan.end, maxBytes: this.#knobs.chunkBytes ?? CATCH_UP_CHUNK_BYTES });
      if (!alive()) return;
      if (!r.ok || !("chunk" in r)) return stop("batches refused", { answer: r.ok ? "no chunk" : r.code });
      const { rows, next } = r.chunk;
      const bad = checkChunk(rows, next, plan, lastStaged);
      if (bad !== undefined) return stop(bad);
      if (rows.length > 0) {
        h.commit({ log: { op: "stage", rows }, ...NONE });
        lastStaged = rows[rows.length - 1]!.lastOffset;
      }
      from = next;
      chunks++;
      while (this.#knobs.holdAfterChunks !== undefined && chunks >= this.#knobs.holdAfterChunks && alive()) await new Promise((r) => setTimeout(r, 20));
      if (!alive()) return;
    }
    // The install: synchronous from here on (no input interleaves with the decision).
    const node = replica.node!;
    const s = h.log.state!;
    const decision = installDecision(
      { commitIndex: node.commitIndex, termAtIndex: node.termAt(m.index), logEndOffset: s.logEndOffset },
      { index: m.index, term: m.term, from: plan.from, replace: plan.replace, followerEndAtStart: endAtStart },
    );
    if (decision !== "install") {
      h.commit({ log: { op: "unstage" }, ...NONE });
      return stop(decision, { index: m.index });
    }
    const staged = h.log.stagedSummary();
    const cmd: CatchUpWrite = {
      log: {
        op: "install",
        replace: plan.replace,
        // Kept log: the peer's log start may be past ours (a replicated deleteRecords inside the
        // snapshot, never applied here); its rows go on the lifecycle's timer, as after deleteRecords.
        logStartOffset: plan.replace ? m.logStartOffset : Math.max(s.logStartOffset, m.logStartOffset),
        logEndOffset: m.logEndOffset,
        leaderEpoch: Math.max(s.leaderEpoch, m.leaderEpoch),
        storedBytes: (plan.replace ? 0 : s.storedBytes) + staged.bytes,
        runningMaxTimestamp: staged.rows > 0 ? staged.runningMaxTimestamp : plan.replace ? -1 : s.runningMaxTimestamp,
        ...(m.configs !== undefined ? { configs: m.configs } : {}),
        ...(m.configsOffset !== undefined ? { configsOffset: m.configsOffset } : {}),
      },
      append: null,
      producer: { op: "install", rows: m.producers },
      // The stream's state at M (a peer of an older version sends none: this room is left as it is).
      stream: m.streams === undefined ? null : { op: "install", row: m.streams.row, producers: m.streams.producers },
      // A replaced log's segment rows describe batches that are gone; the lifecycle room indexes the new ones (its `index` timer).
      lifecycle: plan.replace ? { segments: h.lifecycle.segments.map((seg) => ({ kind: "segDelete" as const, id: seg.id })), clean: [] } : null,
      // The subscriptions' cursors at M replace this replica's (a peer of an older version sends none: kept).
      subs: m.subscriptions !== undefined ? { op: "install", rows: m.subscriptions } : null,
    };
    replica.install({ index: m.index, term: m.term, conf: m.conf }, (writeJournal) => h.commit(cmd, writeJournal));
    this.#installs++;
    h.installed();
    log.info("edgelog.partition.catch_up_installed", {
      replica: replica.memberId,
      from: peerId,
      index: m.index,
      replace: plan.replace,
      batches: staged.rows,
      bytes: staged.bytes,
      logEndOffset: m.logEndOffset,
    });
  }
}
