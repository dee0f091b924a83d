/**
 * The Durable Streams state room of a partition (docs/DURABLE-STREAMS.md): a stream is a
 * one-partition topic, and this room is the part of its PartitionDO that knows about the
 * stream: its configuration and state, its writes (create, append, close, delete, expiry,
 * fork references). Reads, and the tail cache of appended values they serve, are the room
 * above it, streams/read.ts, which hears of appended values through a listener. Stream records are ordinary record batches appended through the log room.
 *
 * Storage (room "streams", migration 1 in schema/streams.ts):
 * - `ds_stream`: zero or one row, the stream's configuration and state (content type, expiry,
 *   closed flag, last Stream-Seq, fork source, reference count, soft-deleted flag).
 * - `ds_producers`: idempotent-producer state per string Producer-Id.
 * Timers (room "streams"): "expiry" (the stream's TTL / Expires-At deadline) and "producers"
 * (Producer-Id state idle for the topic's `producer.id.expiration.ms` is forgotten, KIP-854
 * semantics: `ds_producers.updated_at_ms` is the last accepted write; a producer that comes
 * back after it is unknown, so its next request must start at Producer-Seq 0, PROTOCOL.md 5.2.1).
 *
 * Decisions are the pure functions of src/streams/; this room decides and hands each write to
 * the switchboard's commit as a command (records for the log, state for this room), applied in
 * one transaction: SQL is written only in {@link StreamsState.apply}.
 *
 * Replicated (`replication.factor` 3; docs/DURABLE-STREAMS.md "Replicated streams"): every write
 * is instead proposed by the leader as a Raft entry (src/streams/replicated.ts) and decided by
 * every replica when it commits ({@link StreamsState.applyEntry}), with the same synchronous
 * decisions (`#create`, `#append`) and the applied index in the same transaction; calls are
 * served by the leader only, and the timers' decisions are the leader's.
 */
import { NO_PRODUCER_ID } from "../../../src/codec/index.ts";
import type { Peers } from "../../../src/partition/peers.ts";
import type { AppendOk } from "../../../src/partition/rpc.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../../../src/protocol/errors.ts";
import { createMatches } from "../../../src/streams/create.ts";
import { expiryDeadlineMs, isExpired, touchPersistIntervalMs } from "../../../src/streams/expiry.ts";
import type { AppendStreamOk, AppendStreamRequest, CreateStreamOk, CreateStreamRequest, DeleteStreamOk, StreamFacts } from "../../../src/streams/rpc.ts";
import {
  createConfig,
  createValues,
  encodeValues,
  newStream,
  planStreamAppend,
  streamConfig,
  streamFromRow,
  streamRowValues,
  type SelfDestroy,
  type StreamChange,
  type StreamMeta,
  type StreamRow,
  type StreamProducerRow,
  type StreamsCommand,
} from "../../../src/streams/state.ts";
import { packAppend, packCreate, unpackAppend, unpackCreate, type LeaderFacts, type RemoveOutcome, type StreamEntry } from "../../../src/streams/replicated.ts";
import { producerIdExpirationMs, replicationFactorOf } from "../../../src/protocol/config.ts";
import type { RoomTimers, Sql } from "../../base.ts";
import { unknownPartition, type LogCommand, type LogRoom, type PartitionState } from "../log.ts";
import type { ProducersCommand } from "../producers.ts";
import type { WaitersRoom } from "../waiters.ts";

/** The stream's expiry timer key (room "streams"). */
export const EXPIRY_TIMER = "expiry";
/** The Producer-Id expiry timer key (room "streams"). */
export const PRODUCERS_TIMER = "producers";
/** Most Producer-Ids one expiry slice forgets; more set the timer again at once. */
const PRODUCERS_EXPIRY_SLICE = 1000;
/**
 * A replicated stream's follower looks at its timers again this often (ms): expiry is the
 * leader's decision (a follower's timer only matters once it leads), as producer expiry.
 */
const FOLLOWER_TIMER_RECHECK_MS = 60_000;
/** A replicated stream marked deleted: every replica looks this soon whether it leads and the topic's destroy is still to do (ms). */
const DELETED_DESTROY_RETRY_MS = 10_000;

/** Where a decision runs: null at the request (factor 1), or at the apply of a committed entry (its term, and the applied index to write in the same transaction). */
type AtApply = { term: number; writeApplied: () => void } | null;

/** A whole command as the streams room builds it (the switchboard's `Command`). */
export type StreamsRoomCommand = LogCommand & ProducersCommand & StreamsCommand;

/** What the switchboard gives the streams room. */
export interface StreamsContext {
  sql: Sql;
  peers: Peers;
  timers: RoomTimers;
  /** The switchboard's commit: one transaction, every room's apply (and `alsoWrite`: a replica's applied index), then publish. */
  commit(cmd: StreamsRoomCommand, alsoWrite?: () => void): void;
  /** The switchboard's destroy path: this object's storage first, then the peers (rule 6). */
  destroySelf(d: SelfDestroy): Promise<void>;
  /** The partition's replication (`replication.factor` 3; inactive at 1). */
  replication: StreamsReplication;
}

/** What the streams room needs of a replicated partition (docs/DURABLE-STREAMS.md "Replicated streams"). */
export interface StreamsReplication {
  /** True when this partition is a replica of a Raft group: every stream write is a Raft entry. */
  active(): boolean;
  /** NOT_LEADER_OR_FOLLOWER when this replica does not lead, else null. */
  notLeader(): ErrorResult | null;
  /** Proposes an entry at the leader; the answer of its apply here (or NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, REQUEST_TOO_LARGE). */
  propose(entry: StreamEntry, blobs: Uint8Array[]): Promise<unknown>;
}

export type Gate = { ok: true; meta: StreamMeta; log: Readonly<PartitionState> } | ErrorResult;

export class StreamsState {
  readonly name = "streams";
  readonly #ctx: StreamsContext;
  readonly #log: LogRoom;
  readonly #waiters: WaitersRoom;
  #meta: StreamMeta | null = null;
  readonly #appended: ((baseOffset: number, values: readonly Uint8Array[], json: boolean) => void)[] = [];
  /** last_access_ms as stored (the in-memory value may be newer, see touchPersistIntervalMs). */
  #storedAccessMs = 0;
  /** Whether the "producers" timer is set (undefined: not known yet, ask the schedule once). */
  #producersArmed: boolean | undefined = undefined;

  constructor(ctx: StreamsContext, log: LogRoom, waiters: WaitersRoom) {
    this.#ctx = ctx;
    this.#log = log;
    this.#waiters = waiters;
  }

  /**
   * Registers a listener of the values a stream append committed at `baseOffset` (the read
   * room's tail cache). Wired in the switchboard's constructor.
   */
  onValuesAppended(listener: (baseOffset: number, values: readonly Uint8Array[], json: boolean) => void): void {
    this.#appended.push(listener);
  }

  /** The stream's state, or null when this partition backs no stream. */
  get meta(): StreamMeta | null {
    return this.#meta;
  }

  /**
   * The lowest offset this room still needs (the lifecycle's floor): a stream's whole visible log
   * from its visible start, because a Durable Stream's lifetime is its TTL / expiry and its forks
   * read its rows (docs/DURABLE-STREAMS.md), not topic retention; null without a stream.
   */
  retainFrom(): number | null {
    const m = this.#meta;
    return m === null ? null : m.visibleStart;
  }

  get peers(): Peers {
    return this.#ctx.peers;
  }

  /**
   * Loads the stream row (start-up), and sets this room's timers when state that needs them
   * has none: an object adopted from before the one schedule (issue 9) had its stream expiry
   * as the platform alarm, which the base's schedule replaces, and no Producer-Id timer.
   */
  load(): void {
    const r = this.#ctx.sql.first<StreamRow>("SELECT * FROM ds_stream WHERE id = 1");
    this.#meta = r === undefined ? null : streamFromRow(r);
    this.#storedAccessMs = r?.last_access_ms ?? 0;
    const timers = this.#ctx.timers;
    if (this.#meta !== null && timers.dueMs(EXPIRY_TIMER) === undefined) {
      if (this.#meta.deleted) timers.set(EXPIRY_TIMER, Date.now() + DELETED_DESTROY_RETRY_MS);
      else if (!this.#meta.softDeleted) this.#armExpiry(this.#meta);
    }
    if (timers.dueMs(PRODUCERS_TIMER) === undefined) this.rearmProducers(Date.now());
  }

  /** Forgets the in-memory state (the partition's storage was deleted). */
  reset(): void {
    this.#meta = null;
    this.#producersArmed = undefined;
  }

  /**
   * Append guard of native produce into a stream's topic: refused while the stream is closed
   * (closure is monotonic for every writer) or soft-deleted. @returns the error, or null to proceed.
   */
  blocksNativeAppend(): ErrorResult | null {
    const m = this.#meta;
    if (m === null) return null;
    if (m.deleted) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This topic backs a deleted stream: the topic is being deleted.");
    if (m.softDeleted) return errorResult("STREAM_GONE", "This topic backs a deleted stream kept for its forks.");
    if (m.closed) return errorResult("STREAM_CLOSED", "This topic backs a closed stream.", { tail: this.#log.state?.logEndOffset ?? null, closed: true });
    return null;
  }

  // ---- RPC ----

  /** True on a replicated partition (replication.factor 3): writes are Raft entries, reads are served by the leader. */
  get replicated(): boolean {
    return this.#ctx.replication.active();
  }

  async dsCreate(req: CreateStreamRequest): Promise<RpcResult<CreateStreamOk>> {
    const log = this.#log.state;
    if (log === null) return unknownPartition();
    const rep = this.#ctx.replication;
    if (rep.active()) {
      const refused = rep.notLeader();
      if (refused !== null) return refused;
    }
    const nowMs = Date.now();
    const existing = this.#meta;
    if (existing !== null && !existing.deleted && existing.path === req.path && !existing.softDeleted && this.expired(existing, nowMs)) {
      await this.expire();
      // The caller re-creates the topic and asks again.
      return unknownPartition();
    }
    if (!rep.active()) return this.#create(req, this.#facts(nowMs, log), null);
    if (existing?.deleted) {
      // Marked deleted, its topic's destroy not finished (a crash, a leader change): finish it;
      // the create saga then deletes the topic (by id) and creates the stream afresh.
      await this.#deleteSelf();
      return unknownPartition();
    }
    // Replicated: the create is an entry, decided by every replica at apply (existing or not).
    const packed = packCreate(req);
    return (await rep.propose({ op: "create", req: packed.req, ...this.#facts(nowMs, log) }, packed.blobs)) as RpcResult<CreateStreamOk>;
  }

  /**
   * The create's decision and commit on the state as it is (factor 1: the request's turn; a
   * replica: the apply of its entry). An existing stream is confirmed or refused; a stream
   * marked deleted answers UNKNOWN_TOPIC_OR_PARTITION (the create saga deletes the topic and
   * starts afresh). Synchronous.
   */
  #create(req: CreateStreamRequest, f: LeaderFacts, at: AtApply): RpcResult<CreateStreamOk> {
    const log = this.#log.state;
    if (log === null) return unknownPartition();
    const existing = this.#meta;
    if (existing !== null) {
      if (existing.deleted) return unknownPartition();
      if (existing.path !== req.path) return errorResult("STREAM_CONFLICT", "This topic backs another stream path.");
      if (existing.softDeleted) return errorResult("STREAM_CONFLICT", "The stream at this path was deleted but forks still reference it.");
      if (!createMatches(streamConfig(existing), createConfig(req))) return errorResult("STREAM_CONFLICT", "A stream exists at this path with a different configuration.");
      return { ok: true, status: "exists", ...this.facts(existing, log), ttlSeconds: existing.ttlSeconds, expiresAtMs: existing.expiresAtMs };
    }

    const fork = req.fork;
    if (fork !== null) {
      if (log.logEndOffset !== log.logStartOffset || (log.logStartOffset !== 0 && log.logStartOffset !== fork.source.forkOffset)) {
        return errorResult("STREAM_CONFLICT", "A fork needs an empty topic.");
      }
      // A fork's own log starts at its fork offset: its own commit, before the records are planned
      // there. Replicated, without the applied index: applied again after a crash before the next
      // commit, it finds the empty log at the fork offset and does the same.
      this.#ctx.commit({ log: { op: "startAt", offset: fork.source.forkOffset }, append: null, producer: null, stream: null });
    }
    const meta = newStream(req, log.logStartOffset, f.nowMs);
    const values = createValues(req, meta, f.maxMessageBytes);
    const r = this.#commitWithValues(values, f, { op: "create", meta, values }, at);
    if (r !== null && !r.ok) return r;
    const after = this.#log.state!;
    return { ok: true, status: "created", ...this.facts(meta, after), ttlSeconds: meta.ttlSeconds, expiresAtMs: meta.expiresAtMs };
  }

  async dsAppend(req: AppendStreamRequest): Promise<RpcResult<AppendStreamOk>> {
    const g = await this.gate(req.path, true);
    if (!g.ok) return g;
    const { meta, log } = g;
    const nowMs = Date.now();
    const rep = this.#ctx.replication;
    // From here on nothing awaits: decide and commit in one turn of the object.
    if (!rep.active()) return this.#append(req, meta, this.#facts(nowMs, log), null);
    // Replicated: the request is an entry; every replica decides it at apply, on the committed
    // stream and producer state (a retry after a failover is a duplicate there too).
    const packed = packAppend(req);
    return (await rep.propose({ op: "append", req: packed.req, ...this.#facts(nowMs, log) }, packed.blobs)) as RpcResult<AppendStreamOk>;
  }

  /** The append's decision (src/streams/state.ts planStreamAppend) and commit on the state as it is. Synchronous. */
  #append(req: AppendStreamRequest, meta: StreamMeta, f: LeaderFacts, at: AtApply): RpcResult<AppendStreamOk> {
    const log = this.#log.state!;
    const producer =
      req.producer === null ? null : (this.#ctx.sql.first<{ epoch: number; last_seq: number }>("SELECT epoch, last_seq FROM ds_producers WHERE producer_id = ?", req.producer.id) ?? null);
    const plan = planStreamAppend(meta, producer === null ? null : { epoch: producer.epoch, lastSeq: producer.last_seq }, req, log.logEndOffset, f.maxMessageBytes, f.nowMs);
    if (plan.kind === "reject") return errorResult(plan.code, plan.message, plan.details);
    const producerEpoch = req.producer?.epoch ?? null;
    if (plan.kind === "noop") return { ok: true, status: 204, ...this.facts(meta, log), producerEpoch, producerSeq: plan.producerSeq };
    const { next, values, producer: p } = plan;
    const r = this.#commitWithValues(values, f, { op: "append", previous: meta, next, values, producer: p }, at);
    if (r !== null && !r.ok) return r;
    const status = req.producer !== null && req.body.length > 0 ? 200 : 204;
    return { ok: true, status, ...this.facts(next, this.#log.state!), producerEpoch, producerSeq: p?.lastSeq ?? null };
  }

  async dsDelete(path: string): Promise<RpcResult<DeleteStreamOk>> {
    const g = await this.gate(path, false);
    if (!g.ok) return g;
    if (this.#ctx.replication.active()) {
      const r = (await this.#ctx.replication.propose({ op: "delete", path }, [])) as RpcResult<RemoveOutcome>;
      if (!r.ok) return r;
      if (r.removed === "deleted") await this.#deleteSelf();
      return { ok: true, soft: r.removed === "soft" };
    }
    if (g.meta.refCount > 0) {
      this.#commitStream({ op: "softDelete" });
      return { ok: true, soft: true };
    }
    await this.#deleteSelf();
    return { ok: true, soft: false };
  }

  async dsRelease(path: string): Promise<RpcResult<object>> {
    const rep = this.#ctx.replication;
    if (rep.active()) {
      // Replicated: an entry at the leader; the last reference of a soft-deleted stream deletes it.
      const refused = rep.notLeader();
      if (refused !== null) return refused;
      const r = (await rep.propose({ op: "release", path }, [])) as RpcResult<RemoveOutcome>;
      if (!r.ok) return r;
      if (r.removed === "deleted") await this.#deleteSelf();
      return { ok: true };
    }
    const m = this.#meta;
    if (m === null || m.path !== path) return { ok: true };
    this.#commitStream({ op: "refCount", refCount: Math.max(0, m.refCount - 1) });
    if (m.refCount === 0 && m.softDeleted) await this.#deleteSelf();
    return { ok: true };
  }

  /**
   * Takes a reference for a new fork (dsForkSource, in streams/read.ts). Factor 1: committed at
   * once (no await). Replicated: an entry, which re-checks the stream at apply.
   */
  async retain(): Promise<RpcResult<object>> {
    const m = this.#meta;
    if (m === null) throw new Error("retain without a stream");
    const rep = this.#ctx.replication;
    if (rep.active()) return (await rep.propose({ op: "retain", path: m.path }, [])) as RpcResult<object>;
    this.#commitStream({ op: "refCount", refCount: m.refCount + 1 });
    return { ok: true };
  }

  /**
   * Whether a fork's source is a replicated stream, from its topic's configs in the metadata
   * store (asked only when the source's r1 does not answer: src/streams/source.ts).
   */
  async sourceReplicated(sourceTopic: string, sourceTopicId: string): Promise<boolean> {
    const r = await this.#ctx.peers.metadata.getTopic(sourceTopic);
    return r.ok && r.topic.topicId === sourceTopicId && replicationFactorOf(r.topic.configs) > 1;
  }

  /** NOT_LEADER_OR_FOLLOWER at a replica that does not lead a replicated partition, else null (calls of a fork to its source). */
  leaderRefusal(): ErrorResult | null {
    return this.#ctx.replication.active() ? this.#ctx.replication.notLeader() : null;
  }

  /**
   * Timer "expiry": expire an idle stream at its deadline, or re-arm for a deadline that moved.
   * Timer "producers": forget idle Producer-Ids (a bounded slice), then follow the oldest left.
   * Replicated: both are the leader's decisions (proposed as entries); a follower looks again
   * later, and a leader finds here a stream marked deleted whose topic's destroy is still to do.
   */
  async onTimer(key: string): Promise<void> {
    if (key === PRODUCERS_TIMER) return this.#expireProducers(Date.now());
    if (key !== EXPIRY_TIMER) throw new Error(`streams room has no timer ${key}`);
    const m = this.#meta;
    if (m === null) return;
    const rep = this.#ctx.replication;
    if (rep.active() && rep.notLeader() !== null) {
      if (!m.softDeleted) this.#ctx.timers.set(EXPIRY_TIMER, Date.now() + (m.deleted ? DELETED_DESTROY_RETRY_MS : FOLLOWER_TIMER_RECHECK_MS));
      return;
    }
    if (m.deleted) return this.#deleteSelf();
    if (m.softDeleted) return;
    if (this.expired(m, Date.now())) await this.expire();
    else this.#armExpiry(m);
  }

  // ---- shared with streams/read.ts ----

  /**
   * Every client-facing call starts here: the stream must exist at this path, not be
   * expired (expiring it now if it is) and not be soft-deleted. Reads and writes reset a
   * sliding TTL (`touch`); HEAD and DELETE do not. Replicated: only the leader serves
   * (`leaderOnly`; a read that already waits goes on where it is: every replica's log holds the
   * committed records only, so nothing read is above the high watermark).
   */
  async gate(path: string, touch: boolean, leaderOnly = true): Promise<Gate> {
    const nowMs = Date.now();
    const log = this.#log.state;
    if (log === null) return unknownPartition();
    const refused = leaderOnly && this.#ctx.replication.active() ? this.#ctx.replication.notLeader() : null;
    if (refused !== null) return refused;
    let meta = this.#meta;
    if (meta === null || meta.path !== path || meta.deleted) return errorResult("STREAM_NOT_FOUND", "No stream exists at this path.");
    if (!meta.softDeleted && this.expired(meta, nowMs)) {
      await this.expire();
      meta = this.#meta;
      // Replicated, the expiry may not have committed (a leader change): an expired stream is never served.
      if (meta === null || meta.deleted || (!meta.softDeleted && this.expired(meta, Date.now()))) return errorResult("STREAM_NOT_FOUND", "The stream expired.");
    }
    if (meta.softDeleted) return errorResult("STREAM_GONE", "The stream was deleted; it is kept only for the forks that reference it.");
    if (touch) this.#touch(meta, nowMs);
    return { ok: true, meta, log };
  }

  expired(m: StreamMeta, nowMs: number): boolean {
    return isExpired(m, m.lastAccessMs, nowMs);
  }

  /**
   * Expiry: like DELETE (protocol 4): soft when forks reference the stream, else for good.
   * Replicated: an entry the leader proposes (its clock decided); a follower does nothing.
   */
  async expire(): Promise<void> {
    const m = this.#meta;
    if (m === null) return;
    const rep = this.#ctx.replication;
    if (rep.active()) {
      if (m.deleted || rep.notLeader() !== null) return;
      const r = (await rep.propose({ op: "expire", path: m.path }, [])) as RpcResult<RemoveOutcome>;
      if (r.ok && r.removed === "deleted") await this.#deleteSelf();
      return;
    }
    if (m.refCount > 0) this.#commitStream({ op: "softDelete" });
    else await this.#deleteSelf();
  }

  facts(m: StreamMeta, log: Readonly<PartitionState>): StreamFacts {
    return { topicId: log.topicId, contentType: m.contentType, tail: log.logEndOffset, closed: m.closed };
  }

  // ---- replicated entries (applied by every replica at commit) ----

  /**
   * Applies one committed stream entry of a replicated partition on this replica (the leader and
   * every follower alike): the same decision as a factor-1 request, on the committed state, with
   * the leader's facts from the entry; its writes and `writeApplied` in ONE transaction (only
   * `writeApplied` when the decision writes nothing). Deterministic: every replica writes the
   * same rows, offsets and bytes. @returns the answer for the leader's waiting request.
   */
  applyEntry(term: number, entry: StreamEntry, blobs: Uint8Array[], writeApplied: () => void): unknown {
    let written = false;
    const at: AtApply = {
      term,
      writeApplied: () => {
        written = true;
        writeApplied();
      },
    };
    const answer = this.#applyEntry(entry, blobs, at);
    if (!written) this.#ctx.commit({ log: null, append: null, producer: null, stream: null }, at.writeApplied);
    return answer;
  }

  #applyEntry(entry: StreamEntry, blobs: Uint8Array[], at: NonNullable<AtApply>): unknown {
    if (this.#log.state === null) return unknownPartition();
    const m = this.#meta;
    switch (entry.op) {
      case "create":
        return this.#create(unpackCreate(entry.req, blobs), entry, at);
      case "append": {
        const live = this.#liveAt(entry.req.path);
        if (!live.ok) return live;
        return this.#append(unpackAppend(entry.req, blobs), live.meta, entry, at);
      }
      case "delete": {
        const live = this.#liveAt(entry.path);
        if (!live.ok) return live;
        return this.#remove(live.meta, at);
      }
      case "expire": {
        if (m === null || m.path !== entry.path || m.deleted || m.softDeleted) return { ok: true, removed: "none" } satisfies RemoveOutcome;
        return this.#remove(m, at);
      }
      case "touch":
        if (m !== null && m.path === entry.path && !m.deleted) this.#commitStream({ op: "touch", lastAccessMs: entry.lastAccessMs }, at);
        return { ok: true };
      case "expireProducers":
        this.#commitStream({ op: "expireProducers", beforeMs: entry.beforeMs }, at);
        return { ok: true };
      case "retain": {
        const live = this.#liveAt(entry.path);
        if (!live.ok) return live.code === "STREAM_GONE" ? errorResult("STREAM_CONFLICT", "The fork source was deleted (it is kept only for its existing forks).") : live;
        this.#commitStream({ op: "refCount", refCount: live.meta.refCount + 1 }, at);
        return { ok: true };
      }
      case "release": {
        if (m === null || m.path !== entry.path || m.deleted) return { ok: true, removed: "none" } satisfies RemoveOutcome;
        const left = Math.max(0, m.refCount - 1);
        if (left === 0 && m.softDeleted) {
          // The last reference of a soft-deleted stream: deleted for good (its reference count with it).
          this.#commitStream({ op: "markDeleted" }, at);
          return { ok: true, removed: "deleted" } satisfies RemoveOutcome;
        }
        this.#commitStream({ op: "refCount", refCount: left }, at);
        return { ok: true, removed: "none" } satisfies RemoveOutcome;
      }
    }
  }

  /** The stream at `path` as an applied entry finds it: STREAM_NOT_FOUND, STREAM_GONE (soft-deleted), or the stream. */
  #liveAt(path: string): { ok: true; meta: StreamMeta } | ErrorResult {
    const m = this.#meta;
    if (m === null || m.path !== path || m.deleted) return errorResult("STREAM_NOT_FOUND", "No stream exists at this path.");
    if (m.softDeleted) return errorResult("STREAM_GONE", "The stream was deleted; it is kept only for the forks that reference it.");
    return { ok: true, meta: m };
  }

  /** A committed delete or expiry: soft when forks reference the stream, else marked deleted (the leader then destroys the topic). */
  #remove(m: StreamMeta, at: NonNullable<AtApply>): RemoveOutcome {
    if (m.refCount > 0) {
      this.#commitStream({ op: "softDelete" }, at);
      return { ok: true, removed: "soft" };
    }
    this.#commitStream({ op: "markDeleted" }, at);
    return { ok: true, removed: "deleted" };
  }

  /** The leader's facts a decision reads besides the replicated state (src/streams/replicated.ts). */
  #facts(nowMs: number, log: Readonly<PartitionState>): LeaderFacts {
    return { nowMs, maxMessageBytes: log.configs["max.message.bytes"], logAppendTime: log.configs["message.timestamp.type"] === "LogAppendTime" ? nowMs : null };
  }

  // ---- snapshot catch-up of a replica (docs/RAFT.md "Snapshot catch-up") ----

  /** This room's state for a peer's catch-up manifest: the ds_stream row and every Producer-Id. Writes nothing. */
  rows(): { row: StreamRow | null; producers: StreamProducerRow[] } {
    const row = this.#ctx.sql.first<StreamRow>("SELECT * FROM ds_stream WHERE id = 1") ?? null;
    const producers = this.#ctx.sql
      .all<{ producer_id: string; epoch: number; last_seq: number; updated_at_ms: number }>("SELECT producer_id, epoch, last_seq, updated_at_ms FROM ds_producers ORDER BY producer_id")
      .map((p): StreamProducerRow => [p.producer_id, p.epoch, p.last_seq, p.updated_at_ms]);
    return { row, producers };
  }

  // ---- applying (SQL, inside the commit's transaction; deterministic) ----

  apply(cmd: StreamsCommand): void {
    const c = cmd.stream;
    if (c === null) return;
    const sql = this.#ctx.sql;
    switch (c.op) {
      case "create":
        sql.run(INSERT_STREAM, ...streamRowValues(c.meta));
        return;
      case "append": {
        const { previous: meta, next } = c;
        if (c.producer !== null) {
          sql.run(
            `INSERT INTO ds_producers (producer_id, epoch, last_seq, updated_at_ms) VALUES (?, ?, ?, ?)
             ON CONFLICT (producer_id) DO UPDATE SET epoch = excluded.epoch, last_seq = excluded.last_seq, updated_at_ms = excluded.updated_at_ms`,
            c.producer.id,
            c.producer.epoch,
            c.producer.lastSeq,
            c.producer.atMs,
          );
        }
        if (next.closed !== meta.closed || next.streamSeq !== meta.streamSeq) {
          sql.run(
            "UPDATE ds_stream SET closed = ?, closed_by_id = ?, closed_by_epoch = ?, closed_by_seq = ?, stream_seq = ? WHERE id = 1",
            next.closed ? 1 : 0,
            next.closedBy?.id ?? null,
            next.closedBy?.epoch ?? null,
            next.closedBy?.seq ?? null,
            next.streamSeq,
          );
        }
        return;
      }
      case "touch":
        sql.run("UPDATE ds_stream SET last_access_ms = ? WHERE id = 1", c.lastAccessMs);
        return;
      case "softDelete":
        sql.run("UPDATE ds_stream SET soft_deleted = 1 WHERE id = 1");
        return;
      case "refCount":
        sql.run("UPDATE ds_stream SET ref_count = ? WHERE id = 1", c.refCount);
        return;
      case "markDeleted":
        sql.run("UPDATE ds_stream SET soft_deleted = 2, ref_count = 0 WHERE id = 1");
        return;
      case "install":
        sql.run("DELETE FROM ds_stream");
        sql.run("DELETE FROM ds_producers");
        if (c.row !== null) sql.run(INSTALL_STREAM, ...INSTALL_COLUMNS.map((k) => c.row![k] ?? null));
        for (const [id, epoch, lastSeq, atMs] of c.producers) {
          sql.run("INSERT INTO ds_producers (producer_id, epoch, last_seq, updated_at_ms) VALUES (?, ?, ?, ?)", id, epoch, lastSeq, atMs);
        }
        return;
      case "expireProducers":
        sql.run(
          "DELETE FROM ds_producers WHERE producer_id IN (SELECT producer_id FROM ds_producers WHERE updated_at_ms < ? ORDER BY updated_at_ms, producer_id LIMIT ?)",
          c.beforeMs,
          PRODUCERS_EXPIRY_SLICE,
        );
        return;
    }
  }

  /** After the commit: memory follows; the tail cache takes appended values; readers wake on a close or delete. */
  publish(cmd: StreamsCommand & LogCommand): void {
    const c = cmd.stream;
    if (c === null) return;
    switch (c.op) {
      case "create":
        this.#meta = c.meta;
        this.#storedAccessMs = c.meta.lastAccessMs;
        this.#cacheValues(cmd, c.values, c.meta.json);
        this.#armExpiry(c.meta);
        return;
      case "append":
        this.#meta = c.next;
        this.#cacheValues(cmd, c.values, c.next.json);
        // The log woke readers for records; a close-only request must wake them too.
        if (c.next.closed && !c.previous.closed) this.#waiters.wake();
        if (c.producer !== null && this.#producersArmed !== true) this.#armProducers(c.producer.atMs);
        return;
      case "touch":
        this.#storedAccessMs = c.lastAccessMs;
        // A replica's memory follows the leader's committed touches (the leader's is exact already).
        if (this.#meta !== null && this.#meta.lastAccessMs < c.lastAccessMs) this.#meta.lastAccessMs = c.lastAccessMs;
        return;
      case "softDelete":
        if (this.#meta !== null) this.#meta.softDeleted = true;
        this.#waiters.wake();
        return;
      case "refCount":
        if (this.#meta !== null) this.#meta.refCount = c.refCount;
        return;
      case "expireProducers":
        return;
      case "markDeleted":
        if (this.#meta !== null) {
          this.#meta.deleted = true;
          this.#meta.softDeleted = false;
          this.#meta.refCount = 0;
        }
        this.#waiters.wake();
        // The leader destroys the topic right after; should it not (a crash, a leader change), whoever leads then does.
        this.#ctx.timers.set(EXPIRY_TIMER, Date.now() + DELETED_DESTROY_RETRY_MS);
        return;
      case "install":
        this.#meta = c.row === null ? null : streamFromRow(c.row);
        this.#storedAccessMs = c.row?.last_access_ms ?? 0;
        this.#producersArmed = undefined;
        this.#ctx.timers.clear(EXPIRY_TIMER);
        if (this.#meta !== null && !this.#meta.softDeleted) {
          if (this.#meta.deleted) this.#ctx.timers.set(EXPIRY_TIMER, Date.now() + DELETED_DESTROY_RETRY_MS);
          else this.#armExpiry(this.#meta);
        }
        this.rearmProducers(Date.now());
        this.#waiters.wake();
        return;
    }
  }

  // ---- helpers ----

  #cacheValues(cmd: LogCommand, values: Uint8Array[], json: boolean): void {
    if (cmd.append === null || values.length === 0) return;
    for (const listener of this.#appended) listener(cmd.append.baseOffset, values, json);
  }

  /**
   * Commits a stream change together with the records of `values` (none: the change alone).
   * @returns the append's outcome (null when there were no values), an error changing nothing.
   */
  #commitWithValues(values: readonly Uint8Array[], f: LeaderFacts, stream: StreamChange, at: AtApply): RpcResult<AppendOk> | null {
    if (values.length === 0) {
      this.#commitStream(stream, at);
      return null;
    }
    // The stream room encodes these batches itself, in this object: no CRC to re-verify.
    const scanned = this.#log.scan(encodeValues(values, f.nowMs), true);
    if ("code" in scanned) return scanned;
    if (scanned.validated.producer !== null && scanned.validated.producer.producerId !== NO_PRODUCER_ID) throw new Error("stream batches carry no producer id");
    if (at === null) {
      const append = this.#log.plan(scanned);
      this.#ctx.commit({ log: null, append, producer: null, stream });
      return this.#log.appended(append);
    }
    // At apply: the entry's term is the batches' leader epoch (docs/RAFT.md), the leader's LogAppendTime stamp.
    const append = this.#log.planAt(scanned, at.term, f.logAppendTime);
    this.#ctx.commit({ log: this.#epochChange(at.term), append, producer: null, stream }, at.writeApplied);
    return this.#log.appended(append);
  }

  /** A replica's first append of a new term records the term as the log's leader epoch (as the produce path). */
  #epochChange(term: number): LogCommand["log"] {
    const s = this.#log.state!;
    return term > s.leaderEpoch ? { op: "leaderEpoch", epoch: term } : null;
  }

  #commitStream(stream: StreamChange, at: AtApply = null): void {
    this.#ctx.commit({ log: null, append: null, producer: null, stream }, at?.writeApplied);
  }

  #touch(m: StreamMeta, nowMs: number): void {
    if (m.ttlSeconds === null || nowMs <= m.lastAccessMs) return;
    m.lastAccessMs = nowMs;
    if (nowMs - this.#storedAccessMs < touchPersistIntervalMs(m.ttlSeconds)) return;
    const rep = this.#ctx.replication;
    if (!rep.active()) {
      this.#commitStream({ op: "touch", lastAccessMs: nowMs });
      return;
    }
    // Replicated: an entry, not awaited (the read or write goes on); the leader's memory is exact
    // meanwhile, and a new leader starts from the last committed touch, as a restarted object does.
    this.#storedAccessMs = nowMs;
    rep.propose({ op: "touch", path: m.path, lastAccessMs: nowMs }, []).catch(() => undefined);
  }

  /**
   * Deletes the stream for good through the switchboard's destroy path: this object's storage
   * first (so nothing answers for the stream any more), then its topic in the metadata store,
   * then the reference it holds on its fork source, which may cascade up the chain (protocol 4.2).
   */
  async #deleteSelf(): Promise<void> {
    const m = this.#meta;
    const log = this.#log.state;
    if (m === null || log === null) return;
    await this.#ctx.destroySelf({
      topic: log.topic,
      releaseFork: m.fork === null ? null : { sourceTopicId: m.fork.sourceTopicId, sourcePath: m.fork.sourcePath, sourceTopic: m.fork.sourceTopic },
    });
  }

  /** Sets the "producers" timer for a Producer-Id written at `atMs`, unless it is set already. */
  #armProducers(atMs: number): void {
    const timers = this.#ctx.timers;
    this.#producersArmed = timers.dueMs(PRODUCERS_TIMER) !== undefined;
    const log = this.#log.state;
    if (this.#producersArmed || log === null) return;
    timers.set(PRODUCERS_TIMER, atMs + producerIdExpirationMs(log.configs));
    this.#producersArmed = true;
  }

  async #expireProducers(nowMs: number): Promise<void> {
    const log = this.#log.state;
    if (log === null) return;
    const beforeMs = nowMs - producerIdExpirationMs(log.configs);
    const rep = this.#ctx.replication;
    if (!rep.active()) {
      this.#commitStream({ op: "expireProducers", beforeMs });
      return this.rearmProducers(nowMs);
    }
    // Replicated: the leader's clock and configs decide, as for native producers (docs/RAFT.md).
    if (rep.notLeader() !== null) return this.#ctx.timers.set(PRODUCERS_TIMER, nowMs + FOLLOWER_TIMER_RECHECK_MS);
    const oldest = this.#ctx.sql.first<{ m: number | null }>("SELECT MIN(updated_at_ms) AS m FROM ds_producers")?.m ?? null;
    if (oldest !== null && oldest < beforeMs) await rep.propose({ op: "expireProducers", beforeMs }, []);
    this.rearmProducers(Date.now());
  }

  /** The "producers" timer follows the least recently written Producer-Id (after an expiry slice, or a config change). */
  rearmProducers(nowMs: number): void {
    const log = this.#log.state;
    const timers = this.#ctx.timers;
    const oldest = this.#ctx.sql.first<{ m: number | null }>("SELECT MIN(updated_at_ms) AS m FROM ds_producers")?.m ?? null;
    this.#producersArmed = oldest !== null && log !== null;
    if (oldest === null || log === null) timers.clear(PRODUCERS_TIMER);
    else timers.set(PRODUCERS_TIMER, Math.max(nowMs, oldest + producerIdExpirationMs(log.configs)));
  }

  #armExpiry(m: StreamMeta): void {
    const d = expiryDeadlineMs(m, m.lastAccessMs);
    if (d !== null) this.#ctx.timers.set(EXPIRY_TIMER, d);
  }
}

/** The ds_stream columns a catch-up install writes, in order (a peer's row, every column). */
const INSTALL_COLUMNS = [
  "path",
  "content_type",
  "ttl_seconds",
  "expires_at_ms",
  "expiry_inherited",
  "last_access_ms",
  "closed",
  "closed_by_id",
  "closed_by_epoch",
  "closed_by_seq",
  "stream_seq",
  "fork_source_path",
  "fork_source_topic",
  "fork_source_topic_id",
  "fork_anchor",
  "fork_sub_offset",
  "fork_offset",
  "visible_start",
  "ref_count",
  "soft_deleted",
  "created_at_ms",
] as const satisfies readonly (keyof StreamRow)[];
const INSTALL_STREAM = `INSERT INTO ds_stream (id, ${INSTALL_COLUMNS.join(", ")}) VALUES (1, ${INSTALL_COLUMNS.map(() => "?").join(", ")})`;

/** The ds_stream row of a new stream ({@link streamRowValues} binds its parameters, in order). */
const INSERT_STREAM = `INSERT INTO ds_stream (id, path, content_type, ttl_seconds, expires_at_ms, expiry_inherited, last_access_ms, closed,
    closed_by_id, closed_by_epoch, closed_by_seq, stream_seq, fork_source_path, fork_source_topic, fork_source_topic_id,
    fork_anchor, fork_sub_offset, fork_offset, visible_start, ref_count, soft_deleted, created_at_ms)
  VALUES (1, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?)`;
