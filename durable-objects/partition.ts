/**
 * PartitionDO: one topic-partition, as rooms behind a switchboard (docs/ARCHITECTURE.md "The
 * partition"). This file is the switchboard: the wiring in order, the RPC surface in one section
 * per room, the append guards, and `#commit`. Rooms (durable-objects/partition/): log (meta,
 * batches, reads, bounds), producers (KIP-98 state, timer "expiry"), waiters (bounded long-polls),
 * streams/state (ds_* tables, timers "expiry", "producers"), streams/read, lifecycle (seg_*
 * tables, timers "index", "retention", "compact", "tier", "owner"; docs/LIFECYCLE.md); beside them
 * metrics.ts counts in memory what the switchboard sees (docs/OBSERVABILITY.md).
 *
 * Every write is a command `{log, append, producer, stream, lifecycle?}`: a room decides, `#commit`
 * opens ONE transaction, calls each room's deterministic `apply` (log, producers, streams,
 * lifecycle), then `publish` after the commit. `append` never awaits, so appends run one at a time
 * without locks; the output gate holds each answer until its write is durable. Hot-path cost: one
 * scan per batch, then 3 SQL statements (non-idempotent) or 5-6 (idempotent), pinned by
 * test/workers/partition-rooms.test.ts.
 *
 * Replication (`replication.factor` 3, docs/RAFT.md "Replicated partitions"): this object is one
 * of three replicas (partition/replica.ts). A produce request at the leader is checked, proposed
 * as a Raft entry, and decided and committed on every replica when the entry commits
 * (partition/replicated.ts: the same rooms' apply, with the applied index in the transaction); a
 * Durable Streams write likewise (the streams room's `applyEntry`). At factor 1 the replica is
 * inactive and every path above is unchanged. Subscription writes are Raft entries too, and
 * consumers are served by the leader (partition/replicated-subs.ts). A replica is replaced by
 * a reassignment at the leader (partition/reassign.ts: learner, catch-up, promote, remove).
 */
import type { Env } from "../src/env.ts";
import type { ListOffsetsSpec, ProducerState } from "../src/partition/core.ts";
import { peersOf, type Peers } from "../src/partition/peers.ts";
import type {
  AppendOk,
  AppendRequest,
  FetchOk,
  FetchRequest,
  LeaderTransferOk,
  ListOffsetsOk,
  PartitionInit,
  PartitionMetrics,
  PartitionRpc,
  ReplicaStatus,
  ReplicaTestKnobs,
} from "../src/partition/rpc.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../src/protocol/errors.ts";
import { FETCH_MAX_WAIT_MS_LIMIT, MAX_APPEND_GROUP_REQUESTS } from "../src/protocol/limits.ts";
import type { PartitionDescription, TopicConfigs } from "../src/protocol/types.ts";
import type * as Ds from "../src/streams/rpc.ts";
import { atSourceLeader } from "../src/streams/source.ts";
import { SqliteDurableObject, lazyTimers, type SocketAccept, type SocketAttachment, type SocketEvent } from "./base.ts";
import { LifecycleRoom, compactionPace, type LifecycleCommandPart, type LifecycleWrite } from "./partition/lifecycle.ts";
import { LogRoom, unknownPartition, type LogCommand } from "./partition/log.ts";
import { PartitionCounters } from "./partition/metrics.ts";
import { PRODUCER_EXPIRY_TIMER, ProducersRoom, type ProducersCommand } from "./partition/producers.ts";
import { PARTITION_ROOMS, adoptLegacy } from "./partition/schema/index.ts";
import { StreamsRead } from "./partition/streams/read.ts";
import type { SelfDestroy, StreamsCommand } from "../src/streams/state.ts";
import { StreamsState } from "./partition/streams/state.ts";
import { WaitersRoom } from "./partition/waiters.ts";
import { SUBS_ROOM, SubscriptionsRoom, type SubsCommand } from "./partition/subscriptions.ts";
import type { CursorTarget, SubscriptionInfo, SubscriptionRpc } from "../src/subscriptions/rpc.ts";
import type { SubscriptionType } from "../src/subscriptions/dispatch.ts";
import { PING_FRAME, PONG_FRAME } from "../src/subscriptions/wire.ts";
import { log } from "../src/log/logger.ts";
import { policyValues } from "../src/protocol/policies.ts";
import { checkCountLimit } from "../src/policies/enforce.ts";

/** How long a leader waits before reporting itself to the metadata quorum again after a failed report (ms). */
const LEADER_REPORT_RETRY_MS = 2_000;
/** A replica without a leader this long (ms; 5-10 election timeouts) runs its owner check. */
const LEADERLESS_OWNER_CHECK_MS = 10_000;

/**
 * Longest a running partition enforces topic configs and policies without comparing them with the
 * metadata store's (ms), counted at its next produce or subscription socket: bounds the staleness
 * a missed push leaves (docs/TENANTS.md "How partitions see them").
 */
export const CONFIGS_REFRESH_INTERVAL_MS = 60_000;
import { replicationFactorOf } from "../src/protocol/config.ts";
import type { RaftFaults } from "../src/raft/group.ts";
import type { Message } from "../src/raft/index.ts";
import { replicaIndexOf, replicaStubAt, type DestroyScope, type ReassignOk, type ReassignRequest } from "../src/partition/rpc.ts";
import type { LocationHint } from "../src/protocol/config.ts";
import { REASSIGN_CATCH_UP_WAIT_MS, ReplicaReassignment } from "./partition/reassign.ts";
import { checkFaults, faultsEnabled } from "./raft/faults.ts";
import { RAFT_ROOM } from "./raft/journal.ts";
import { ReplicatedAppends } from "./partition/replicated.ts";
import { PartitionReplica, REPLICA_IDS, REPLICA_KEEP_ENTRIES, REPLICA_LEADER_KEEP_ENTRIES, REPLICA_QUIESCED_TICK_MS } from "./partition/replica.ts";
import { ReplicaCatchUp } from "./partition/catch-up.ts";
import { ReplicatedSubscriptions } from "./partition/replicated-subs.ts";
import type { CatchUpChunk, CatchUpManifest, CatchUpRead } from "../src/partition/catch-up.ts";
import { isStaleConfigsPush } from "../src/partition/configs-order.ts";

/** One write of the partition: each room's part, null when it has none. */
export type Command = LogCommand & ProducersCommand & StreamsCommand & SubsCommand & LifecycleCommandPart;

export class PartitionDO extends SqliteDurableObject<Env> implements PartitionRpc, Ds.StreamRpc, SubscriptionRpc {
  /** Set by destroy(): later calls answer UNKNOWN_TOPIC_OR_PARTITION. */
  #destroyed = false;
  readonly #peers: Peers;
  readonly #log: LogRoom;
  readonly #producers: ProducersRoom;
  readonly #waiters: WaitersRoom;
  readonly #streams: StreamsState;
  readonly #streamsRead: StreamsRead;
  readonly #subs: SubscriptionsRoom;
  readonly #lifecycle: LifecycleRoom;
  readonly #counters = new PartitionCounters();
  /** When the configs were last compared with the metadata store's (0: not since the object started), and pushes received. */
  #configsCheckedMs = 0;
  #configsPushes = 0;
  /** When this replica last knew a leader, and last ran its owner check for want of one (ms; {@link #ownerCheckIfLeaderless}). */
  #leaderSeenMs = Date.now();
  #leaderlessCheckMs = -Infinity;
  /** The highest term this replica has reported itself leader in to the metadata quorum, and when it may try again (ms). */
  #leaderReported = -1;
  #leaderReportAfterMs = 0;
  /** Raft replica of a replicated partition (replication.factor 3); inactive at 1. */
  readonly #replica: PartitionReplica;
  /** The produce path of a replicated partition (partition/replicated.ts). */
  readonly #replicated: ReplicatedAppends;
  /** Replica reassignment at the leader (partition/reassign.ts). */
  readonly #reassign: ReplicaReassignment;
  /** Snapshot catch-up of a replica, both sides (partition/catch-up.ts). */
  readonly #catchUp: ReplicaCatchUp;
  /** Subscriptions of a replicated partition: cursors as Raft entries, served by the leader (partition/replicated-subs.ts). */
  readonly #replicatedSubs: ReplicatedSubscriptions;
  /** The command `#commit` is applying: read by `#applyPending`, bound once (no closure per commit). */
  #pending: Command | null = null;
  /** A replicated partition's applied-index write, in the same transaction (null at rf 1). */
  #pendingAlso: (() => void) | null = null;
  readonly #applyPending = (): void => {
    const cmd = this.#pending!;
    if (this.#pendingAlso !== null) this.#pendingAlso();
    // The fixed order: the log first.
    this.#log.apply(cmd);
    this.#producers.apply(cmd);
    this.#streams.apply(cmd);
    this.#subs.apply(cmd);
    this.#lifecycle.apply(cmd);
  };
  /** `#commit` for the lifecycle room's slices (it writes the log's part and its own only). */
  readonly #commitLifecycle = (cmd: LifecycleWrite): void => this.#commit({ producer: null, stream: null, ...cmd });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#peers = peersOf(env);
    // The rooms, lowest first.
    this.#log = new LogRoom(this.sql);
    this.#producers = new ProducersRoom(
      this.sql,
      this.#log,
      lazyTimers(() => this.timers("producers")),
    );
    this.#waiters = new WaitersRoom();
    this.#streams = new StreamsState(
      {
        sql: this.sql,
        peers: this.#peers,
        timers: lazyTimers(() => this.timers("streams")),
        commit: (cmd, alsoWrite) => this.#commit(cmd, alsoWrite ?? null),
        destroySelf: (d) => this.#destroySelf(d),
        replication: {
          active: () => this.#replica.active,
          notLeader: () => this.#replica.notLeader(),
          propose: (entry, blobs) => this.#replicated.proposeStream(entry, blobs),
        },
      },
      this.#log,
      this.#waiters,
    );
    this.#streamsRead = new StreamsRead(this.#streams, this.#log, this.#waiters);
    this.#subs = new SubscriptionsRoom(
      {
        sql: this.sql,
        peers: this.#peers,
        timers: lazyTimers(() => this.timers(SUBS_ROOM)),
        commit: (subs) => {
          // Replicated: a Raft entry every replica's room applies at commit (partition/replicated-subs.ts).
          if (this.#replica.active) return this.#replicatedSubs.propose(subs);
          this.#commit({ log: null, append: null, producer: null, stream: null, subs });
          return null;
        },
        sockets: (tag) => this.ctx.getWebSockets(tag),
        saveAttachment: (ws, state) => this.saveAttachment(ws, { room: SUBS_ROOM, state }),
        holdTimeoutMs: env.EDGELOG_BACKLOG_HOLD_TIMEOUT_MS === undefined ? undefined : Number(env.EDGELOG_BACKLOG_HOLD_TIMEOUT_MS),
      },
      this.#log,
    );
    this.#lifecycle = new LifecycleRoom(
      this.sql,
      this.#log,
      lazyTimers(() => this.timers("lifecycle")),
      () => this.#retainFloor(),
      env.SEGMENTS,
      { getTopic: (name) => this.#peers.metadata.getTopic(name), destroySelf: () => this.#destroyLocal(), replicaId: () => this.#replica.memberId },
      compactionPace(env),
    );
    // Who hears what, in order.
    this.#log.onAppended(this.#waiters.wake);
    this.#streams.onValuesAppended(this.#streamsRead.remember);
    this.#log.onAppended(this.#subs.dispatchAll);
    this.#log.onRewritten(this.#subs.forgetRecords);
    this.#replica = new PartitionReplica({
      sql: this.sql,
      transaction: (fn) => this.ctx.storage.transactionSync(fn),
      timers: lazyTimers(() => this.timers(RAFT_ROOM.room)),
      deliver: (to, messages) => this.#replicaStub(to).replicaDeliver(messages),
      apply: (e, writeApplied) => this.#replicated.apply(e.index, e.term, e.data, writeApplied),
      abort: (reason) => this.ctx.abort(reason),
      catchUp: (from, meta) => this.#catchUp.start(from, meta),
    });
    this.#replicated = new ReplicatedAppends({
      log: this.#log,
      producers: this.#producers,
      lifecycle: this.#lifecycle,
      replica: this.#replica,
      producerTimers: lazyTimers(() => this.timers("producers")),
      commit: (cmd, alsoWrite) => this.#commit(cmd, alsoWrite),
      transaction: (fn) => this.ctx.storage.transactionSync(fn),
      appendBlocked: () => this.#appendBlocked(),
      produced: (r) => this.#counters.produced(r),
      aliveReplica: () => this.#aliveReplica(),
      peer: (id) => this.#peerReplica(id),
      configsApplied: () => this.#configsApplied(),
      applyStream: (term, entry, blobs, writeApplied) => this.#streams.applyEntry(term, entry, blobs, writeApplied),
      applySubs: (change, writeApplied) => this.#replicatedSubs.apply(change, writeApplied),
      produceRefusal: (scanned, nowMs) => this.#replicatedSubs.produceRefusal(scanned, nowMs),
    });
    this.#replicatedSubs = new ReplicatedSubscriptions({
      subs: this.#subs,
      producers: this.#producers,
      replica: this.#replica,
      commit: (subs, alsoWrite) => this.#commit({ log: null, append: null, producer: null, stream: null, subs }, alsoWrite),
      transaction: (fn) => this.ctx.storage.transactionSync(fn),
    });
    this.#catchUp = new ReplicaCatchUp({
      log: this.#log,
      producers: this.#producers,
      lifecycle: this.#lifecycle,
      streams: this.#streams,
      replica: this.#replica,
      commit: (cmd, alsoWrite) => this.#commit(cmd, alsoWrite ?? null),
      peer: (id) => this.#peerReplica(id),
      subscriptionRows: () => this.#subs.rows(),
      installed: () => {
        // The stream tail cache may hold values of a replaced log.
        this.#streamsRead.reset();
        this.#lifecycle.reset();
        this.#lifecycle.load(Date.now());
        // A replaced log dropped segment rows that held this replica's own R2 keys: orphans now.
        this.#lifecycle.sweepSoon(Date.now());
        // The install may carry configs changed while this replica was away.
        this.#configsApplied();
      },
    });
    this.#reassign = new ReplicaReassignment({
      log: this.#log,
      replica: this.#replica,
      peer: (id, hint) => this.#peerReplica(id, hint),
      r1Replaceable: () => this.#peers.placement !== null,
    });
    // Pings are answered by the platform without waking a hibernated object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_FRAME, PONG_FRAME));
    this.startUp([...PARTITION_ROOMS, RAFT_ROOM], { adoptLegacy });
  }

  protected override onStart(): void {
    this.#log.load();
    this.#producers.load();
    this.#streams.load();
    this.#subs.load();
    this.#lifecycle.load(Date.now());
    this.#replica.load();
    // A replica starts as a follower: sockets that survived a restart are closed (reconnect).
    this.#replicatedSubs.watch();
  }

  /**
   * Applies one command: invariants first (a violation is a bug: thrown, nothing written), then
   * ONE transaction with each room's `apply` in the fixed order, then each room's `publish`.
   * A throw inside rolls the whole transaction back, and memory is untouched.
   */
  #commit(cmd: Command, alsoWrite: (() => void) | null = null): void {
    const bad = this.#log.checkCommand(cmd);
    if (bad !== undefined) throw new Error(`partition invariant violated, nothing written: ${bad}`);
    this.#pending = cmd;
    this.#pendingAlso = alsoWrite;
    try {
      this.ctx.storage.transactionSync(this.#applyPending);
    } finally {
      this.#pending = null;
      this.#pendingAlso = null;
    }
    this.#log.publish(cmd);
    this.#producers.publish(cmd);
    this.#streams.publish(cmd);
    this.#subs.publish(cmd);
    this.#lifecycle.publish(cmd);
    if (cmd.append !== null) this.#counters.appended(cmd.append);
  }

  // ---- log: lifecycle (called by the metadata store) ----

  /**
   * Initialises the partition. Idempotent for the same topic id. With `replication.factor` 3
   * the object reached (r1) first initialises r2 and r3 (`req.replica`), then each bootstraps
   * its Raft replica (docs/RAFT.md "Replicated partitions").
   */
  async init(req: PartitionInit): Promise<RpcResult<object>> {
    // A replica acting crashed is down to its callers, the metadata store's init too.
    this.#aliveReplica();
    if (this.#destroyed && req.join === undefined) return unknownPartition();
    const { replica, join, placed, ...init } = req;
    const replicated = replicationFactorOf(init.configs) > 1;
    const me = replica ?? "r1";
    if (replicated && !REPLICA_IDS.includes(me) && (req.join === undefined || replicaIndexOf(me) === null)) {
      return errorResult("INVALID_REQUEST", `Unknown replica ${JSON.stringify(me)}: one of ${REPLICA_IDS.join(", ")}.`);
    }
    // A replica joining by reassignment may reuse the name of an object destroyed in this isolate.
    if (req.join !== undefined) this.#destroyed = false;
    if (replicated && me === "r1" && join === undefined && placed !== true) {
      for (let i = 1; i < REPLICA_IDS.length; i++) {
        // This call creates r2 and r3: with their replica.locations hints.
        const out = await replicaStubAt(this.env.PARTITION, init.topicId, init.partition, i, init.configs).init({ ...init, replica: REPLICA_IDS[i]! });
        if (!out.ok) return out;
      }
    }
    const change = this.#log.initChange(init);
    if (change !== null) this.#commit({ log: change, append: null, producer: null, stream: null });
    if (replicated) {
      this.#replica.bootstrap(me, join);
      this.#replicatedSubs.watch();
    }
    return { ok: true };
  }

  /**
   * Sets the configs (absolute values). Replicated: a Raft command (partition/replicated.ts),
   * proposed at the leader (a follower forwards it), applied by every replica at commit.
   * `configsOffset`: the metadata offset the configs reflect; older than the held one: ignored,
   * answered `{ok: true, stale: true}` (src/partition/configs-order.ts).
   */
  async updateConfigs(configs: TopicConfigs, forwarded = false, configsOffset?: number): Promise<RpcResult<{ stale?: boolean }>> {
    const s = this.#log.state;
    if (s === null) return unknownPartition();
    this.#configsPushes++;
    if (this.#replica.active) return this.#replicated.updateConfigs(configs, forwarded, configsOffset);
    if (isStaleConfigsPush(s.configsOffset, configsOffset)) return { ok: true, stale: true };
    this.#commit({ log: { op: "configs", configs, ...(configsOffset !== undefined ? { configsOffset } : {}) }, append: null, producer: null, stream: null });
    this.#configsApplied();
    return { ok: true };
  }

  /** After the configs changed (a push, or a replicated config change applied): the timers and policies that follow them. */
  #configsApplied(): void {
    // producer.id.expiration.ms may have changed: the expiry timers follow.
    const nowMs = Date.now();
    this.#producers.rearm(nowMs);
    this.#streams.rearmProducers(nowMs);
    // configs.policies may have changed (docs/TENANTS.md): the subscriptions room enforces them.
    this.#subs.policiesChanged();
  }

  /**
   * Bounded staleness of the pushed configs: on activity, at most every
   * {@link CONFIGS_REFRESH_INTERVAL_MS} (and first after the object starts), the topic's
   * effective configs and policies are read from the metadata store in the background and, when
   * they differ, applied as a push would. A push that arrives meanwhile wins (the read is dropped).
   */
  #refreshConfigs(): void {
    const s = this.#log.state;
    const nowMs = Date.now();
    if (s === null || nowMs - this.#configsCheckedMs < CONFIGS_REFRESH_INTERVAL_MS) return;
    this.#configsCheckedMs = nowMs;
    const pushes = this.#configsPushes;
    this.#peers.metadata.getTopic(s.topic).then(
      async (r) => {
        const now = this.#log.state;
        if (!r.ok || now === null || now.topicId !== r.topic.topicId || this.#configsPushes !== pushes) return;
        const configs: TopicConfigs = { ...r.topic.configs, policies: policyValues(r.topic.policies) };
        if (canonicalJson(configs) === canonicalJson(now.configs)) return;
        log.warn("edgelog.partition.configs_refreshed", { topic: now.topic, partition: now.partition });
        await this.updateConfigs(configs, false, r.metadataOffset);
      },
      (err: unknown) => log.warn("edgelog.partition.configs_refresh_failed", { error: err }),
    );
  }

  /**
   * Deletes every row of this partition; later calls answer UNKNOWN_TOPIC_OR_PARTITION.
   * Replicated: r1 destroys r2 and r3 first; one that does not answer (down) does not block the
   * delete: it is named in `unreachable` and destroys itself by its owner check when it is back
   * (docs/RAFT.md "Topic deletion with a replica down").
   */
  async destroy(scope: DestroyScope = "group"): Promise<RpcResult<{ unreachable?: string[] }>> {
    this.#aliveReplica();
    const unreachable = scope === "group" && this.#replica.memberId === "r1" ? await this.#destroyPeers() : [];
    await this.#destroyLocal();
    return unreachable.length > 0 ? { ok: true, unreachable } : { ok: true };
  }

  /** r1's destroy of the other members of its group: those that did not answer (left to their owner check). */
  async #destroyPeers(): Promise<string[]> {
    const unreachable: string[] = [];
    for (const r of this.#otherReplicas()) {
      try {
        const out = await this.#peerReplica(r).destroy();
        if (out.ok || out.code === "UNKNOWN_TOPIC_OR_PARTITION") continue;
        log.warn("edgelog.partition.replica_destroy_refused", { replica: r, code: out.code });
      } catch (err) {
        log.warn("edgelog.partition.replica_destroy_failed", { replica: r, error: String(err) });
      }
      unreachable.push(r);
    }
    return unreachable;
  }

  /**
   * A new leader reports itself to the metadata quorum (a `partitionChange` with its id and term,
   * docs/RAFT.md "Partition placement"), once per term, best effort: a failure is retried after
   * {@link LEADER_REPORT_RETRY_MS}, and the metadata tolerates a stale leader (the gateway follows
   * NOT_LEADER_OR_FOLLOWER anyway). Nothing with the quorum off (MetadataDO records no placement).
   */
  #reportLeader(nowMs: number): void {
    const node = this.#replica.node;
    const s = this.#log.state;
    if (node === null || s === null || node.role !== "leader" || node.term <= this.#leaderReported || nowMs < this.#leaderReportAfterMs) return;
    const placement = this.#peers.placement;
    if (placement === null) return;
    const term = node.term;
    this.#leaderReportAfterMs = nowMs + LEADER_REPORT_RETRY_MS;
    placement.reportLeader(s.topicId, s.partition, node.id, term).then(
      (r) => {
        // UNKNOWN_TOPIC_OR_PARTITION: no placement to report to (deleted, or not recorded): not retried.
        if (r.ok || r.code === "UNKNOWN_TOPIC_OR_PARTITION") this.#leaderReported = Math.max(this.#leaderReported, term);
        else log.warn("edgelog.partition.leader_report_failed", { topic: s.topic, partition: s.partition, term, code: r.code });
      },
      (err: unknown) => log.warn("edgelog.partition.leader_report_failed", { topic: s.topic, partition: s.partition, term, error: err }),
    );
  }

  /**
   * A replica that has had no leader for {@link LEADERLESS_OWNER_CHECK_MS} (its peers may be
   * destroyed: its topic was deleted while it was down) runs its owner check now, at most once
   * per {@link LEADERLESS_OWNER_CHECK_MS} x 30 (docs/LIFECYCLE.md "Orphans"): an orphan destroys itself.
   */
  #ownerCheckIfLeaderless(nowMs: number): void {
    const node = this.#replica.node;
    if (node === null || node.leaderId !== null) {
      this.#leaderSeenMs = nowMs;
      return;
    }
    if (nowMs - this.#leaderSeenMs < LEADERLESS_OWNER_CHECK_MS || nowMs - this.#leaderlessCheckMs < LEADERLESS_OWNER_CHECK_MS * 30) return;
    this.#leaderlessCheckMs = nowMs;
    this.#lifecycle.checkOwnerSoon(nowMs);
  }

  // ---- log: data path ----

  /**
   * Appends one produce request (see {@link AppendRequest}) in one transaction, or nothing.
   * Never awaits (appends are serialised by the object's single thread), except while a backlog
   * quota with `producer_request_hold` holds it, before anything is checked or written.
   */
  async append(req: AppendRequest): Promise<RpcResult<AppendOk>> {
    this.#refreshConfigs();
    const hold = this.#backlogHold(1);
    const refused = hold === null ? null : await hold;
    if (refused !== null) return this.#withMetadataOffset(refused);
    if (this.#replica.active) {
      this.#replica.request(); // wakes a quiesced replica (docs/RAFT.md "Quiescence")
      return this.#withMetadataOffset((await this.#replicated.appends([req]))[0]!);
    }
    return this.#withMetadataOffset(this.#append(req));
  }

  /**
   * An error answer carries the metadata offset of the configs this partition holds
   * (`details.metadataOffset`, set by the metadata quorum's pushes; docs/RAFT.md "The gateway's
   * topic cache"): the metadata log has reached at least that offset, so a gateway whose cached
   * topic is older refreshes it. Unchanged when the partition holds none (MetadataDO) or the
   * answer names one already.
   */
  #withMetadataOffset<T extends object>(r: RpcResult<T>): RpcResult<T> {
    const offset = this.#log.state?.configsOffset ?? null;
    if (r.ok || offset === null || r.details?.metadataOffset !== undefined) return r;
    return { ...r, details: { ...r.details, metadataOffset: offset } };
  }

  /** See {@link PartitionRpc.appendMany}. Never awaits between requests: one event, one commit. */
  async appendMany(reqs: AppendRequest[]): Promise<RpcResult<AppendOk>[]> {
    if (!Array.isArray(reqs) || reqs.length > MAX_APPEND_GROUP_REQUESTS) throw new Error(`appendMany takes at most ${MAX_APPEND_GROUP_REQUESTS} requests`);
    this.#refreshConfigs();
    const hold = this.#backlogHold(reqs.length);
    const refused = hold === null ? null : await hold;
    if (refused !== null) return reqs.map(() => this.#withMetadataOffset(refused));
    if (this.#replica.active) {
      this.#replica.request(); // wakes a quiesced replica (docs/RAFT.md "Quiescence")
      return (await this.#replicated.appends(reqs)).map((r) => this.#withMetadataOffset(r));
    }
    const out: RpcResult<AppendOk>[] = [];
    for (const req of reqs) {
      try {
        out.push(this.#append(req));
      } catch (err) {
        // A bug or a storage failure in this request only: its transaction rolled back (a
        // throw inside transactionSync undoes it), the others keep their own outcomes, as
        // separate RPCs would. It is reported as INTERNAL rather than thrown, because
        // throwing would fail the requests already written in this call too.
        log.error("edgelog.partition.append_failed", { in: "appendMany", error: err });
        const failed = errorResult("INTERNAL", `The partition failed to append this request: ${err instanceof Error ? err.message : String(err)}`);
        this.#counters.produced(failed);
        out.push(failed);
      }
    }
    return out.map((r) => this.#withMetadataOffset(r));
  }

  /**
   * Returns stored batches from `offset` on. When fewer than minBytes are available, waits
   * (up to maxWaitMs) for an append to wake it, then reads again.
   */
  async fetchRecords(req: FetchRequest): Promise<RpcResult<FetchOk>> {
    this.#aliveReplica();
    const answer = await this.#fetchRecords(req);
    this.#counters.fetched(req, answer);
    return this.#withMetadataOffset(answer);
  }

  async #fetchRecords(req: FetchRequest): Promise<RpcResult<FetchOk>> {
    const maxWaitMs = Math.min(Math.max(0, req.maxWaitMs), FETCH_MAX_WAIT_MS_LIMIT);
    const deadline = Date.now() + maxWaitMs;
    // Below the local start: a read-through from the segment's R2 object (tiered storage).
    if (this.#lifecycle.readsRemote(req.offset)) return this.#lifecycle.readRemote(req);
    for (;;) {
      const remainingMs = deadline - Date.now();
      const answer = this.#log.fetch(req, remainingMs <= 0);
      if (answer !== null) return answer;
      await this.#waiters.next(remainingMs);
    }
  }

  async listOffsets(spec: ListOffsetsSpec): Promise<RpcResult<ListOffsetsOk>> {
    this.#aliveReplica();
    return this.#log.listOffsets(spec);
  }

  async describe(): Promise<RpcResult<{ partition: PartitionDescription }>> {
    return this.#log.describe();
  }

  // ---- metrics (in memory, docs/OBSERVABILITY.md) ----

  /** See {@link PartitionRpc.metrics}: bounds now, counters since the object started. */
  async metrics(): Promise<RpcResult<{ metrics: PartitionMetrics }>> {
    const s = this.#log.state;
    if (s === null) return unknownPartition();
    return { ok: true, metrics: this.#counters.snapshot(s, this.#waiters.size, this.#lifecycle.segments.length, this.#subs.metrics()) };
  }

  // ---- streams (docs/DURABLE-STREAMS.md; a replica acting crashed throws, as for produce) ----

  dsCreate(req: Ds.CreateStreamRequest): Promise<RpcResult<Ds.CreateStreamOk>> {
    this.#aliveReplica();
    return this.#streams.dsCreate(req);
  }
  dsHead(path: string): Promise<RpcResult<Ds.HeadStreamOk>> {
    this.#aliveReplica();
    return this.#streamsRead.dsHead(path);
  }
  dsAppend(req: Ds.AppendStreamRequest): Promise<RpcResult<Ds.AppendStreamOk>> {
    this.#aliveReplica();
    return this.#streams.dsAppend(req);
  }
  dsDelete(path: string): Promise<RpcResult<Ds.DeleteStreamOk>> {
    this.#aliveReplica();
    return this.#streams.dsDelete(path);
  }
  dsRelease(path: string): Promise<RpcResult<object>> {
    this.#aliveReplica();
    return this.#streams.dsRelease(path);
  }
  dsRead(req: Ds.ReadStreamRequest): Promise<RpcResult<Ds.ReadStreamOk>> {
    this.#aliveReplica();
    return this.#streamsRead.dsRead(req);
  }
  dsForkSource(req: Ds.ForkSourceRequest): Promise<RpcResult<Ds.ForkSourceOk>> {
    this.#aliveReplica();
    return this.#streamsRead.dsForkSource(req);
  }
  dsReadRange(req: Ds.ReadRangeRequest): Promise<RpcResult<Ds.ReadRangeOk>> {
    this.#aliveReplica();
    return this.#streamsRead.dsReadRange(req);
  }
  dsBoundaryValues(req: Ds.BoundaryValuesRequest): Promise<RpcResult<{ values: (Uint8Array | null)[] }>> {
    this.#aliveReplica();
    return this.#streamsRead.dsBoundaryValues(req);
  }

  // ---- lifecycle (docs/LIFECYCLE.md: segments, retention, deleteRecords, compaction) ----

  /**
   * deleteRecords (KIP-107): moves the log start to `offset` (-1 = the high watermark); rows go
   * on the lifecycle's timer. Field case B1: above the high watermark or negative other than -1
   * is OFFSET_OUT_OF_RANGE with the bounds; at or below the log start a no-op. Replicated
   * (factor 3): a Raft command proposed by the leader, applied by every replica
   * (partition/replicated.ts); other replicas answer NOT_LEADER_OR_FOLLOWER.
   */
  async deleteRecords(offset: number): Promise<RpcResult<{ logStartOffset: number }>> {
    if (this.#replica.active) return this.#replicated.deleteRecords(offset);
    if (this.#log.state === null) return unknownPartition();
    const plan = this.#lifecycle.planDeleteRecords(offset);
    if ("code" in plan) return plan;
    if (plan.change !== null) this.#commit({ log: plan.change, append: null, producer: null, stream: null });
    return { ok: true, logStartOffset: plan.logStartOffset };
  }

  /** The lowest offset any room still needs (min over the rooms' `retainFrom()`), or null: bounds what the lifecycle deletes. */
  #retainFloor(): number | null {
    let floor: number | null = null;
    for (const f of [this.#streams.retainFrom(), this.#subs.retainFrom()]) if (f !== null && (floor === null || f < floor)) floor = f;
    return floor;
  }

  // ---- subscriptions (docs/SUBSCRIPTIONS.md; consumers and readers arrive over WebSocket) ----

  protected override onUpgrade(request: Request): SocketAccept | ErrorResult | Promise<SocketAccept | ErrorResult> {
    this.#refreshConfigs();
    const gate = this.#subsGate();
    if (gate === null) return this.#subs.upgrade(request);
    return gate.then((refused) => refused ?? this.#subs.upgrade(request));
  }
  /**
   * Replicated: subscriptions are served by the leader only (partition/replicated-subs.ts); null
   * at factor 1 (no await on its path). @throws while this replica acts crashed (it is down).
   */
  #subsGate(): Promise<ErrorResult | null> | null {
    if (!this.#replica.active) return null;
    this.#aliveReplica();
    return this.#replicatedSubs.serve();
  }
  async #subsAtLeader<T>(call: () => T | Promise<T>): Promise<T | ErrorResult> {
    const gate = this.#subsGate();
    const refused = gate === null ? null : await gate;
    return refused ?? call();
  }
  protected override onSocket(room: string, ws: WebSocket, attachment: SocketAttachment, event: SocketEvent): void {
    if (room !== SUBS_ROOM) throw new Error(`partition has no socket room ${room}`);
    this.#subs.onSocket(ws, attachment, event);
  }
  async subCreate(req: { subscription: string; type: SubscriptionType; position: CursorTarget; partitioned?: boolean }): Promise<RpcResult<{ created: boolean; info: SubscriptionInfo }>> {
    return this.#subsAtLeader(() => this.#subs.create(req.subscription, req.type, req.position, req.partitioned === true));
  }
  async subList(): Promise<RpcResult<{ subscriptions: SubscriptionInfo[] }>> {
    return this.#subsAtLeader(() => this.#subs.list());
  }
  async subStats(subscription: string): Promise<RpcResult<{ info: SubscriptionInfo }>> {
    return this.#subsAtLeader(() => this.#subs.stats(subscription));
  }
  async subSeek(subscription: string, target: CursorTarget): Promise<RpcResult<{ info: SubscriptionInfo }>> {
    return this.#subsAtLeader(() => this.#subs.seek(subscription, target));
  }
  async subSkip(subscription: string, count: number): Promise<RpcResult<{ skipped: number; info: SubscriptionInfo }>> {
    return this.#subsAtLeader(() => this.#subs.skip(subscription, count));
  }
  async subClearBacklog(subscription: string): Promise<RpcResult<{ cleared: number; info: SubscriptionInfo }>> {
    return this.#subsAtLeader(() => this.#subs.clearBacklog(subscription));
  }
  async subDelete(subscription: string, force: boolean): Promise<RpcResult<object>> {
    return this.#subsAtLeader(() => this.#subs.delete(subscription, force));
  }
  async subReceive(req: Parameters<SubscriptionRpc["subReceive"]>[0]): ReturnType<SubscriptionRpc["subReceive"]> {
    return this.#subsAtLeader(() => this.#subs.receive(req));
  }
  async subSettleLease(subscription: string, leaseId: string, how: "ack" | "nack", offsets: number[] | null): ReturnType<SubscriptionRpc["subSettleLease"]> {
    return this.#subsAtLeader(() => this.#subs.settleLease(subscription, leaseId, how, offsets));
  }

  // ---- timers (the base's one schedule dispatches each due timer here) ----

  protected override async onTimer(room: string, key: string, dueMs: number): Promise<void> {
    if (room === RAFT_ROOM.room && key === "tick") {
      this.#ownerCheckIfLeaderless(Date.now());
      this.#replica.onTick(dueMs);
      this.#replicatedSubs.watch();
      return this.#reportLeader(Date.now());
    }
    if (room === "lifecycle") return this.#lifecycle.onTimer(key, Date.now(), this.#commitLifecycle);
    if (room === "streams") return this.#streams.onTimer(key);
    if (room === SUBS_ROOM) return this.#subs.onTimer(key);
    if (room === "producers" && key === PRODUCER_EXPIRY_TIMER) {
      const nowMs = Date.now();
      if (this.#replica.active) return this.#replicated.expireProducers(nowMs);
      const producer = this.#producers.expiryChange(nowMs);
      if (producer !== null) this.#commit({ log: null, append: null, producer, stream: null });
      return this.#producers.rearm(nowMs);
    }
    throw new Error(`partition has no timer ${room}/${key}`);
  }

  // ---- append guards and the append ----

  /** Guards of a native append, in order: the first refusal wins. */
  #appendBlocked(): ErrorResult | null {
    // A stream's closure binds native producers too (docs/DURABLE-STREAMS.md "Closing").
    return this.#streams.blocksNativeAppend();
  }

  /**
   * The backlog quota's `producer_request_hold` (docs/TENANTS.md): resolves at once (no await
   * unless held) to null, or, after the hold, to null or BACKLOG_QUOTA_HOLD_TIMEOUT (counted
   * once per request of the held group).
   */
  #backlogHold(requests: number): Promise<ErrorResult | null> | null {
    // Replicated: only the leader takes produce (a follower answers NOT_LEADER_OR_FOLLOWER at once).
    if (this.#replica.active && this.#replica.notLeader() !== null) return null;
    const hold = this.#subs.produceHold();
    if (hold === null) return null;
    return hold.then((r) => {
      if (r !== null) for (let i = 0; i < requests; i++) this.#counters.produced(r);
      return r;
    });
  }

  /** A native append, counted (metrics.ts). */
  #append(req: AppendRequest): RpcResult<AppendOk> {
    const r = this.#appendOnce(req);
    this.#counters.produced(r);
    return r;
  }

  /** A native append: guards, scan, the producer's KIP-98 decision, plan, one commit. */
  #appendOnce(req: AppendRequest): RpcResult<AppendOk> {
    if (this.#log.state === null) return unknownPartition();
    const blocked = this.#appendBlocked();
    if (blocked !== null) return blocked;
    const scanned = this.#log.scan(req.batches, req.crcVerified === true);
    if ("code" in scanned) return scanned;
    const nowMs = Date.now();
    const refused = this.#lifecycle.checkProduce(scanned, nowMs);
    if (refused !== null) return refused;
    const p = scanned.validated.producer;
    let previous: ProducerState | undefined;
    if (p !== null) {
      const { decision, previous: state } = this.#producers.decide(p);
      if (decision.kind === "error") return decision.error;
      if (decision.kind === "duplicate") return this.#log.duplicateAnswer(decision.entry);
      previous = state;
      // maxProducersPerTopic counts the producer ids this partition holds state for.
      const max = this.#subs.policies().maxProducersPerTopic;
      const over = previous === undefined && max > 0 ? checkCountLimit("producers", max, this.#producers.count()) : null;
      if (over !== null) return over;
    }
    // Last: the backlog quota (producer_exception) and the publish rate, which charges its bucket.
    const policyRefusal = this.#subs.checkProduce(
      scanned.validated.recordCount,
      scanned.scans.reduce((n, d) => n + d.totalBytes, 0),
      nowMs,
    );
    if (policyRefusal !== null) return policyRefusal;
    const append = this.#log.plan(scanned);
    const producer = p === null ? null : this.#producers.change(p, previous, append.baseOffset, append.lastOffset, nowMs);
    this.#commit({ log: null, append, producer, stream: null, lifecycle: this.#lifecycle.planAppend(append, nowMs) });
    return this.#log.appended(append);
  }

  // ---- replication (docs/RAFT.md "Replicated partitions"; durable-objects/partition/replica.ts) ----

  /** Raft messages from a peer replica (one-way; the sender does not wait for an answer). */
  async replicaDeliver(messages: Message[]): Promise<void> {
    this.#replica.deliver(messages);
    this.#replicatedSubs.watch();
  }

  /** This replica's Raft view: null at replication.factor 1. */
  async replicaStatus(): Promise<RpcResult<{ replica: ReplicaStatus | null }>> {
    this.#aliveReplica();
    const node = this.#replica.node;
    if (node === null) return { ok: true, replica: null };
    const s = this.#log.state;
    return {
      ok: true,
      replica: {
        replica: node.id,
        role: node.role,
        leaderEpoch: node.term,
        leaderReplica: node.leaderId,
        commitIndex: node.commitIndex,
        appliedIndex: node.appliedIndex,
        lastIndex: node.lastIndex,
        highWatermark: s?.highWatermark ?? 0,
        logStartOffset: s?.logStartOffset ?? 0,
        logEndOffset: s?.logEndOffset ?? 0,
        inSyncReplicas: node.role === "leader" ? this.#replica.inSyncReplicas(Date.now()) : null,
        snapshotIndex: node.snapshotMeta.index,
        voters: node.conf.voters,
        learners: node.conf.learners,
        catchUpInstalls: this.#catchUp.installs,
        catchUpRunning: this.#catchUp.running,
        ...this.#replica.clock(),
      },
    };
  }

  /** See {@link PartitionRpc.transferLeadership}; at replication.factor 1 only "r1", which leads. */
  async transferLeadership(replica: string): Promise<RpcResult<LeaderTransferOk>> {
    this.#aliveReplica();
    const s = this.#log.state;
    if (s === null) return unknownPartition();
    if (this.#replica.active) return this.#replica.transferLeadership(replica);
    if (replica === "r1") return { ok: true, leaderReplica: "r1", leaderEpoch: s.leaderEpoch, transferred: false };
    return errorResult("INVALID_REQUEST", `${JSON.stringify(replica)} is not a replica of this partition (replication.factor 1: r1 only).`, { field: "replica" });
  }

  /** Fault injection of this replica (dev and test builds only; docs/RAFT.md "Fault injection"). */
  async setFaults(faults: RaftFaults): Promise<RpcResult<{ faults: RaftFaults }>> {
    if (!faultsEnabled(this.env)) {
      return errorResult("INVALID_REQUEST", "Raft fault injection is not available: not in this build, or EDGELOG_RAFT_FAULTS is not '1' (docs/RAFT.md).", { faultInjection: false });
    }
    const f = checkFaults(faults);
    if (typeof f === "string") return errorResult("INVALID_REQUEST", `Invalid faults: ${f}`);
    this.#replica.setFaults(f);
    this.#replicatedSubs.watch();
    return { ok: true, faults: f };
  }

  /** A peer's snapshot catch-up reads this replica's state (partition/catch-up.ts). */
  async replicaSnapshotRead(req: CatchUpRead): Promise<RpcResult<{ manifest: CatchUpManifest } | { chunk: CatchUpChunk }>> {
    this.#aliveReplica();
    return this.#catchUp.read(req);
  }

  /** Test-only knobs of this replica (the gates of fault injection). */
  async setReplicaTestKnobs(knobs: ReplicaTestKnobs): Promise<RpcResult<{ knobs: ReplicaTestKnobs }>> {
    if (!faultsEnabled(this.env)) {
      return errorResult("INVALID_REQUEST", "Replica test knobs are not available: not in this build, or EDGELOG_RAFT_FAULTS is not '1' (docs/RAFT.md).", { faultInjection: false });
    }
    for (const [k, v] of Object.entries(knobs)) {
      if (!["keepEntries", "leaderKeepEntries", "chunkBytes", "holdAfterChunks", "reassignWaitMs", "quiescedTickMs"].includes(k) || typeof v !== "number" || !Number.isInteger(v) || v < 1) {
        return errorResult("INVALID_REQUEST", `Invalid replica test knob ${k}: a positive integer.`);
      }
    }
    this.#replica.setRetention({ keepEntries: knobs.keepEntries ?? REPLICA_KEEP_ENTRIES, leaderKeepEntries: knobs.leaderKeepEntries ?? REPLICA_LEADER_KEEP_ENTRIES });
    this.#catchUp.setKnobs({ chunkBytes: knobs.chunkBytes, holdAfterChunks: knobs.holdAfterChunks });
    this.#reassign.catchUpWaitMs = knobs.reassignWaitMs ?? REASSIGN_CATCH_UP_WAIT_MS;
    this.#replica.setQuiescedTickMs(knobs.quiescedTickMs ?? REPLICA_QUIESCED_TICK_MS);
    return { ok: true, knobs };
  }

  /** Throws while this replica acts crashed (fault injection): to its callers it is down. */
  #aliveReplica(): void {
    if (this.#replica.crashed) throw new Error(this.#replica.crashedMessage());
  }

  #peerReplica(replicaId: string, hint?: LocationHint): PartitionRpc {
    const s = this.#log.state!;
    return replicaStubAt(this.env.PARTITION, s.topicId, s.partition, replicaIndexOf(replicaId)!, s.configs, hint);
  }

  /** The other members of this replica's group (its Raft configuration; r2 and r3 before it is known). */
  #otherReplicas(): string[] {
    const conf = this.#replica.node?.conf;
    const all = conf === undefined ? [...REPLICA_IDS] : [...conf.voters, ...conf.learners];
    return all.filter((id) => id !== this.#replica.memberId);
  }

  /** See {@link PartitionRpc.reassignReplica} (partition/reassign.ts). */
  async reassignReplica(req: ReassignRequest): Promise<RpcResult<ReassignOk>> {
    this.#aliveReplica();
    if (this.#log.state === null) return unknownPartition();
    if (!this.#replica.active) return errorResult("INVALID_REQUEST", "Replica reassignment needs a replicated partition (replication.factor 3).", { replicationFactor: 1 });
    return this.#reassign.run(req);
  }

  #replicaStub(replicaId: string): PartitionRpc {
    return this.#peerReplica(replicaId);
  }

  // ---- destroy paths ----

  async #destroyLocal(): Promise<void> {
    // The partition's R2 segment objects first: after the rows are gone nothing would own them.
    if (!this.#destroyed) await this.#lifecycle.deleteRemoteObjects();
    this.#destroyed = true;
    this.#replica.reset();
    this.#log.reset();
    this.#producers.reset();
    this.#streams.reset();
    this.#streamsRead.reset();
    this.#lifecycle.reset();
    this.#subs.reset();
    await this.deleteAllStorage();
    this.#waiters.wake();
  }

  /**
   * A room's "destroy this object" (a stream deleted or expired for good; design rule 6): this
   * object's storage first, so it answers for nothing any more, then the peers: the metadata
   * store deletes the topic (its call back into destroy() finds this object destroyed
   * already, with no room awaiting it), then the fork source's reference is released.
   */
  async #destroySelf(d: SelfDestroy): Promise<void> {
    // A replicated stream (marked deleted on every replica by a committed entry): the topic's
    // delete destroys all the replicas through r1 (this one included), so r1 still knows its peers.
    const replicated = this.#replica.active;
    if (!replicated) await this.#destroyLocal();
    const r = await this.#peers.metadata.deleteTopic(d.topic);
    if (!r.ok && r.code !== "UNKNOWN_TOPIC_OR_PARTITION") throw new Error(`deleting topic ${d.topic} failed: ${r.code}`);
    if (replicated && !this.#destroyed) await this.#destroyLocal();
    const f = d.releaseFork;
    if (f === null) return;
    const rr = await atSourceLeader(
      (index) => this.#peers.replica(f.sourceTopicId, 0, index),
      (s) => s.dsRelease(f.sourcePath),
      () => this.#streams.sourceReplicated(f.sourceTopic, f.sourceTopicId),
    );
    if (!rr.ok && rr.code !== "UNKNOWN_TOPIC_OR_PARTITION") throw new Error(`releasing fork source ${f.sourcePath} failed: ${rr.code}`);
  }
}

/** JSON with object keys sorted (a comparison that ignores key order). */
function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x !== null && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
}
