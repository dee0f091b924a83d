/**
 * The subscriptions room of a partition (Pulsar's subscriptions; docs/SUBSCRIPTIONS.md for the
 * pure core in src/subscriptions/, docs/PROTOCOL.md for the WebSocket protocol).
 *
 * A subscription is a durable cursor plus live consumers. The room keeps, per subscription, the
 * core's {@link Subscription} (consumers, permits, in-flight messages, replay queue, the dispatch
 * policy of its type) and its last committed durable state; it
 * - accepts consumers over WebSocket through the base's sealed entry points (hibernation API;
 *   per-socket state in the attachment, at most a few hundred bytes);
 * - dispatches as a listener of the log's appends, and on acks, nacks, permits and timers;
 * - batches acks: the core collects the durable part of acks, nacks and redeliveries, and the
 *   room commits ONE command for all subscriptions per flush interval
 *   ({@link ACK_FLUSH_INTERVAL_MS}); ack receipts are sent after that commit;
 * - sets timers on the object's one schedule: `redeliver:<sub>` (ack timeouts, nack delays,
 *   delayed delivery: the core's `nextDueMs`) and `deadletter:<sub>` (dead-letter copies to
 *   produce, retried with the base's backoff when a copy fails);
 * - reports {@link SubscriptionsRoom.retainFrom}: the slowest committed mark-delete position + 1.
 *
 * What a crash between two flushes can redeliver: acks (and nacks, ack timeouts) applied in
 * memory since the last flush are lost with the memory; their receipts were never sent, so the
 * client saw no confirmation, and those messages are delivered again. Dead-letter decisions are
 * acted on only after the command recording them commits, so there is never a second copy.
 *
 * After a restart or a hibernation wake, the consumers are rebuilt from the sockets' attachments
 * (in join order); nothing is in flight then, so messages that were in flight before are
 * delivered again with their stored redelivery count (as Pulsar redelivers a reconnecting
 * consumer's unacked messages).
 *
 * Replicated partitions (`replication.factor` 3; docs/RAFT.md "Subscriptions are replicated"):
 * `ctx.commit` proposes each change as a Raft entry and answers after this replica (the leader)
 * applied it; every replica applies it through {@link SubscriptionsRoom.decide} and `apply`. Only
 * the serving leader dispatches, accepts sockets and runs the room's timers
 * ({@link SubscriptionsRoom.serving}); `stepDown` closes its sockets with 1012 and rebuilds the
 * subscriptions from their committed cursors, as `becomeLeader` does on the new leader.
 *
 * Storage (room "subs", schema/subscriptions.ts): `sub_subscriptions(name, meta, mark_delete,
 * cursor, updated_ms)`. Writes only in {@link SubscriptionsRoom.apply}, inside the
 * switchboard's commit transaction. Reads the log through the log room's read API only.
 */
import { log } from "../../src/log/logger.ts";
import { decodeBatch, encodeBatch, type LogRecord, type RecordHeader } from "../../src/codec/index.ts";
import type { Peers } from "../../src/partition/peers.ts";
import { ERRORS, errorResult, type ErrorResult, type RpcResult } from "../../src/protocol/errors.ts";
import {
  applyCommand,
  decodeDurable,
  type DeliveryPolicy,
  type DurableSubscription,
  emptyDurable,
  encodeDurable,
  formatMessageId,
  initialOffset,
  type MessageMeta,
  type MessageSource,
  readerStartOffset,
  retentionFloor,
  type StoredSubscription,
  Subscription,
  type SubscriptionCommand,
  type SubscriptionType,
  RateMeter,
  ReaderWindow,
  type StoredReaderWindow,
} from "../../src/subscriptions/index.ts";
import { admitConsumer } from "../../src/subscriptions/dispatch.ts";
import { RecordCache } from "../../src/subscriptions/record-cache.ts";
import { FrameMemo, MessageJsonCache, wireMessage } from "../../src/subscriptions/message-json.ts";
import { DEFAULT_POLICIES, policiesOf, type TopicPolicies } from "../../src/protocol/policies.ts";
import { type RateLimiter, backlogVerdict, checkCountLimit, evictionTarget, limiterFor, ttlCheckIntervalMs, ttlCutoffMs } from "../../src/policies/enforce.ts";
import type { CursorTarget, SubscriptionInfo, SubscriptionMetrics } from "../../src/subscriptions/rpc.ts";
import type { SubscriptionRow } from "../../src/partition/catch-up.ts";
import {
  type ClientFrame,
  DELIVER_AT_HEADER,
  MAX_SERVER_FRAME_BYTES,
  parseClientFrame,
  parseReaderQuery,
  parseSubscribeQuery,
  SUB_CLOSE,
  type SubscribeOptions,
  type ServerFrame,
  type WireMessage,
} from "../../src/subscriptions/wire.ts";
import type { RoomTimers, SocketAccept, SocketAttachment, SocketEvent, Sql } from "../base.ts";
import type { LogRoom } from "./log.ts";

/** The room's name in `_rooms`, `_schedule` and socket attachments. */
export const SUBS_ROOM = "subs";
/** Hibernation tag of every subscription socket. */
const SUBS_TAG = "subs";
/**
 * Ack flush interval, ms: acks are committed in one command at most this long after they
 * arrive (Pulsar's client groups acks for 100 ms; the broker persists mark-delete lazily).
 */
export const ACK_FLUSH_INTERVAL_MS = 100;
/** Dead-letter copy properties (Pulsar's `REAL_TOPIC`, `ORIGIN_MESSAGE_ID`, plus the subscription). */
export const DLQ_PROPERTIES = { topic: "REAL_TOPIC", messageId: "ORIGIN_MESSAGE_ID", subscription: "REAL_SUBSCRIPTION" } as const;
/** Producer epochs used by one dead-letter producer id before a new id is taken (epochs are int16). */
const DLQ_EPOCHS_PER_PRODUCER = 30_000;
/** Decoded record batches kept in memory for dispatch (a redelivery reads one message again). */
const RECORD_CACHE_BATCHES = 64;
/** Dispatch slices per event before yielding to the next event (each slice examines <= 1000 messages). */
const SLICES_PER_EVENT = 4;
/** Errors answered on one socket before it is closed with 4004. */
const MAX_FRAME_ERRORS = 100;
/** Timers of the namespace policies (docs/TENANTS.md): message TTL, backlog eviction, dispatch rate. */
export const TTL_TIMER = "ttl";
export const EVICTION_TIMER = "backlog-eviction";
export const DISPATCH_RATE_TIMER = "dispatch-rate";
/** Produce requests held at once by `producer_request_hold`; one more is refused at once (retriable). */
export const MAX_HELD_PRODUCE_REQUESTS = 1000;
/** Default hold time of `producer_request_hold` (ms): Pulsar's client send timeout, 30 s. */
export const DEFAULT_BACKLOG_HOLD_TIMEOUT_MS = 30_000;
/** Batches one eviction slice plans over. */
const EVICTION_BATCHES_PER_SLICE = 1000;

/** A subscription's configuration, stored as JSON in `meta`. */
export interface SubMeta {
  v: 1;
  type: SubscriptionType;
  policy: DeliveryPolicy;
  /** null: `<topic>-<subscription>-DLQ` (Pulsar's default name) when maxRedeliverCount > 0. */
  deadLetterTopic: string | null;
  /** The idempotent producer of the dead-letter copies: copy `seq` uses epoch `seq - baseSeq`, sequence 0. */
  dlq: { producerId: number; baseSeq: number } | null;
  /** Whether the topic has more than one partition (failover's active-consumer rule differs). */
  partitioned: boolean;
  createdMs: number;
}

/** A change of the room's tables; the switchboard's command carries it as `subs`. */
export type SubsChange =
  | { op: "create"; name: string; meta: SubMeta; cursor: StoredSubscription; nowMs: number }
  | { op: "cursors"; cmds: SubscriptionCommand[]; nowMs: number }
  | { op: "meta"; name: string; meta: SubMeta }
  | { op: "delete"; name: string }
  /** Snapshot catch-up of a replicated partition: every subscription replaced by a peer's rows (docs/RAFT.md "Snapshot catch-up"). */
  | { op: "install"; rows: SubscriptionRow[] };

/** The room's part of a partition command (optional: only subscription writes carry it). */
export interface SubsCommand {
  subs?: SubsChange | null;
}

/** What the switchboard lends the room (design/partition-rooms.md: no transaction, never the DO). */
export interface SubsContext {
  sql: Sql;
  timers: RoomTimers;
  peers: Peers;
  /**
   * Commits a change in the switchboard's one transaction (apply, then publish): synchronously
   * at `replication.factor` 1 (null); on a replicated partition it is proposed as a Raft entry and
   * the promise settles once this replica (the leader) has applied it (null) or with the refusal
   * (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...: the change may be lost; docs/RAFT.md
   * "Subscriptions are replicated").
   */
  commit(change: SubsChange): Promise<ErrorResult | null> | null;
  /** The object's subscription sockets (`ctx.getWebSockets(tag)`). */
  sockets(tag: string): WebSocket[];
  /** Replaces a socket's attachment state. */
  saveAttachment(ws: WebSocket, state: Record<string, unknown>): void;
  /** How long `producer_request_hold` holds a produce (ms). @default DEFAULT_BACKLOG_HOLD_TIMEOUT_MS */
  holdTimeoutMs?: number;
}

/** A consumer socket's attachment state (version 1). Small: well under the 2 KiB limit. */
interface ConsumerAttachment {
  k: "c";
  /** Subscription. */
  s: string;
  /** Consumer id (unique per connection). */
  c: string;
  /** Consumer name. */
  n: string;
  /** Priority level. */
  p: number;
  /** Requested type. */
  t: SubscriptionType;
  /** Receiver queue size; 0 = pull mode. */
  q: number;
  /** Pull mode: credits left (kept here so they survive hibernation). */
  cr: number;
  /** Join time, ms, and a random tiebreak: restores the join order (failover's first-joined rule). */
  j: number;
  jr: string;
  /** Whether the topic is partitioned (failover's rule). */
  pt: boolean;
  /** base64 (true) or string encoding of payloads. */
  b: boolean;
}

/**
 * A reader socket's attachment state (version 1): its window (src/subscriptions/reader-window.ts:
 * next offset `o`, unacked count `f`, receiverQueueSize `q`, the span's lowest offset `l` and the
 * span `u`, null when too fragmented to keep; `l` and `u` are absent in attachments written
 * before acks were checked) and its encoding `b`.
 */
interface ReaderAttachment extends StoredReaderWindow {
  k: "r";
  b: boolean;
}

interface Live {
  readonly name: string;
  /** Deliveries and redeliveries, for the stats' rates (memory only). */
  readonly out: RateMeter;
  readonly redelivered: RateMeter;
  meta: SubMeta;
  sub: Subscription;
  /** The last committed durable state (what `sub_subscriptions` holds). */
  committed: DurableSubscription;
}

/** An HTTP pull lease: a consumer without a socket holding the messages of one receive. */
interface Lease {
  readonly id: string;
  readonly sub: string;
  readonly base64: boolean;
  /** Messages dispatched to the lease during its receive call. */
  readonly collected: WireMessage[];
}

/** A produce request held by `producer_request_hold`. */
interface Held {
  resolve(refusal: ErrorResult | null): void;
  timer: ReturnType<typeof setTimeout>;
}

interface Receipt {
  kind: "acked" | "nacked";
  consumerId: string;
  requestId: string;
  count: number;
}

export class SubscriptionsRoom {
  readonly name = SUBS_ROOM;
  readonly #ctx: SubsContext;
  readonly #log: LogRoom;
  readonly #subs = new Map<string, Live>();
  /** consumer id -> socket. */
  readonly #sockets = new Map<string, WebSocket>();
  readonly #errors = new WeakMap<WebSocket, number>();
  /** Records appended, for msgRateIn (memory only), and the log end it last saw. */
  readonly #in = new RateMeter();
  #lastEnd = 0;
  /** Whether reader sockets may exist (set on accept and at load): spares appends a socket lookup. */
  #hasReaders = false;
  /** HTTP pull leases by id (= their consumer id). In memory: a restart ends them (their messages are redelivered). */
  readonly #leases = new Map<string, Lease>();
  /** Consumers admitted at their upgrade whose socket is not accepted yet, per subscription. */
  readonly #joining = new Map<string, number>();
  /** Ack receipts to send after the next flush commits. */
  #receipts: Receipt[] = [];
  #flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** States computed by apply, installed by publish (nothing changes in memory if the transaction rolls back). */
  #applied = new Map<string, DurableSubscription>();
  readonly #cache = new RecordCache(RECORD_CACHE_BATCHES);
  /**
   * Per decoded record of {@link #cache}: its message JSON head per encoding (serialised once for
   * every subscription, src/subscriptions/message-json.ts) and its dispatch metadata (key as
   * text, deliverAt). Weakly keyed by the cached record objects, so bounded by that cache;
   * cleared with it.
   */
  readonly #json = new MessageJsonCache();
  /** The last frames built, for the next subscription delivering the same messages (src/subscriptions/message-json.ts). */
  readonly #frames = new FrameMemo();
  #metas = new WeakMap<LogRecord, MessageMeta & { record: LogRecord }>();
  /** Per consumer socket: its payload encoding and whether it is in pull mode (fixed for the socket's life; spares a JSON.parse of its attachment per dispatch). */
  #socketModes = new WeakMap<WebSocket, { base64: boolean; pull: boolean }>();
  /** Per reader socket: its window, exact (memory only; after a wake it is restored from the attachment). */
  #readerWindows = new WeakMap<WebSocket, ReaderWindow>();
  /** The effective policies, parsed once per configs object. */
  #policyCache: { configs: object; policies: TopicPolicies } | null = null;
  /** Backlog size, valid while the slowest position and the log start are unchanged and only appends changed the stored bytes. */
  #backlog: { from: number; start: number; end: number; stored: number; bytes: number } | null = null;
  #dispatchRate: RateLimiter | null = null;
  #publishRate: RateLimiter | null = null;
  /** Produce requests held by `producer_request_hold`, in arrival order (released one per task). */
  #held: Held[] = [];
  #releasing = false;
  /** Whether this replica serves subscriptions (see {@link SubscriptionsRoom.serving}). */
  #serving = true;
  /** Replicated: the last cursor flush not yet applied (receipts of later flushes wait for it). Always null at factor 1. */
  #inflight: Promise<ErrorResult | null> | null = null;
  /** Bumped by every rebuild of the dispatch state: a refused flush from before it does not rebuild again. */
  #dispatchGeneration = 0;
  readonly #source: MessageSource & { record(offset: number): LogRecord | undefined };

  constructor(ctx: SubsContext, log: LogRoom) {
    this.#ctx = ctx;
    this.#log = log;
    this.#source = {
      get logStartOffset() {
        return log.state?.logStartOffset ?? 0;
      },
      get logEndOffset() {
        return log.state?.highWatermark ?? 0;
      },
      read: (from, max) => this.#read(from, max),
      // A delivered record is looked up in the cached batches (binary search), else read as
      // before; the same answers as the read: nothing at or past the high watermark, and below
      // the log start only what the stored batches still hold.
      record: (offset) => {
        const s = log.state;
        if (s === null || offset >= s.highWatermark) return undefined;
        const cached = offset >= s.logStartOffset ? this.#cache.record(offset) : undefined;
        return cached ?? this.#read(offset, 1).find((m) => m.offset === offset)?.record;
      },
    };
  }

  // ---- load / reset ----

  load(): void {
    this.#lastEnd = this.#log.state?.logEndOffset ?? 0;
    this.#clearRecords();
    this.#loadSubscriptions();
    // Consumers of sockets that survived a hibernation or a restart of the object, in join order.
    const consumers: { ws: WebSocket; a: ConsumerAttachment }[] = [];
    for (const ws of this.#ctx.sockets(SUBS_TAG)) {
      const a = attachmentOf(ws);
      if (a?.k === "c") consumers.push({ ws, a });
    }
    this.#hasReaders = this.#ctx.sockets("reader").length > 0;
    // Objects from before the policies were enforced, or whose TTL was set while idle: arm it.
    if (this.#subs.size > 0 && this.policies().messageTtlSeconds > 0 && this.#ctx.timers.dueMs(TTL_TIMER) === undefined) this.#armTtl(Date.now());
    consumers.sort((x, y) => x.a.j - y.a.j || (x.a.jr < y.a.jr ? -1 : 1));
    for (const { ws, a } of consumers) {
      const live = this.#subs.get(a.s);
      const refused = live === undefined ? errorResult("SUBSCRIPTION_NOT_FOUND", "The subscription was deleted.") : this.#addConsumer(live, a);
      if (refused !== null) {
        closeQuietly(ws, live === undefined ? SUB_CLOSE.subscriptionDeleted : SUB_CLOSE.internalError, (refused.message ?? refused.code).slice(0, 120));
        continue;
      }
      this.#sockets.set(a.c, ws);
    }
  }

  /** Every subscription from `sub_subscriptions`, with no consumers (start-up, snapshot install). */
  #loadSubscriptions(): void {
    this.#subs.clear();
    this.#backlog = null;
    const bounds = this.#bounds();
    for (const row of this.#ctx.sql.all<{ name: string; meta: string; cursor: string }>("SELECT name, meta, cursor FROM sub_subscriptions")) {
      const meta = JSON.parse(row.meta) as SubMeta;
      const committed = decodeDurable(JSON.parse(row.cursor));
      const sub = this.#newSub(row.name, meta, decodeDurable(JSON.parse(row.cursor)), bounds);
      sub.checkInvariants(); // assert after reading: a broken stored cursor fails the start-up loudly
      this.#subs.set(row.name, { name: row.name, meta, committed, sub, out: new RateMeter(), redelivered: new RateMeter() });
    }
  }

  /**
   * Compaction rewrote batches (log.onRewritten): the cached decoded batches may hold records it
   * removed, so they are dropped and read again from the log.
   */
  readonly forgetRecords = (): void => {
    this.#clearRecords();
  };

  /** Drops the decoded batches and everything derived from their records (message JSON, metadata). */
  #clearRecords(): void {
    this.#cache.clear();
    this.#json.clear();
    this.#frames.clear();
    this.#metas = new WeakMap();
  }

  /** The object's storage was deleted (topic deleted): every socket is closed with 4003. */
  reset(): void {
    for (const ws of this.#ctx.sockets(SUBS_TAG)) closeQuietly(ws, SUB_CLOSE.topicDeleted, "topic deleted");
    this.#subs.clear();
    this.#sockets.clear();
    this.#receipts = [];
    this.#clearRecords();
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    this.#backlog = null;
    // Held produce requests go on: they find the partition gone (UNKNOWN_TOPIC_OR_PARTITION).
    for (const h of this.#held.splice(0)) {
      clearTimeout(h.timer);
      h.resolve(null);
    }
  }

  // ---- apply / publish (the switchboard's commit) ----

  apply(cmd: SubsCommand): void {
    const c = cmd.subs;
    if (c === undefined || c === null) return;
    const sql = this.#ctx.sql;
    this.#applied = new Map();
    switch (c.op) {
      case "create":
        sql.run(
          "INSERT INTO sub_subscriptions (name, meta, mark_delete, cursor, updated_ms) VALUES (?, ?, ?, ?, ?)",
          c.name,
          JSON.stringify(c.meta),
          c.cursor.markDelete,
          JSON.stringify(c.cursor),
          c.nowMs,
        );
        return;
      case "cursors":
        for (const sc of c.cmds) {
          const live = this.#subs.get(sc.sub);
          if (live === undefined) throw new Error(`cursor command for unknown subscription ${sc.sub}`);
          const next = applyCommand(this.#applied.get(sc.sub) ?? live.committed, sc);
          const { stored } = encodeDurable(next);
          sql.run("UPDATE sub_subscriptions SET mark_delete = ?, cursor = ?, updated_ms = ? WHERE name = ?", stored.markDelete, JSON.stringify(stored), c.nowMs, sc.sub);
          this.#applied.set(sc.sub, next);
        }
        return;
      case "meta":
        sql.run("UPDATE sub_subscriptions SET meta = ? WHERE name = ?", JSON.stringify(c.meta), c.name);
        return;
      case "delete":
        sql.run("DELETE FROM sub_subscriptions WHERE name = ?", c.name);
        return;
      case "install":
        sql.run("DELETE FROM sub_subscriptions");
        for (const r of c.rows)
          sql.run(
            "INSERT INTO sub_subscriptions (name, meta, mark_delete, cursor, updated_ms) VALUES (?, ?, ?, ?, ?)",
            r.name,
            r.meta,
            (JSON.parse(r.cursor) as StoredSubscription).markDelete,
            r.cursor,
            r.updatedMs,
          );
        return;
    }
  }

  publish(cmd: SubsCommand): void {
    const c = cmd.subs;
    if (c === undefined || c === null) return;
    switch (c.op) {
      case "create": {
        const committed = decodeDurable(c.cursor);
        this.#subs.set(c.name, {
          name: c.name,
          meta: c.meta,
          committed,
          sub: this.#newSub(c.name, c.meta, decodeDurable(c.cursor), this.#bounds()),
          out: new RateMeter(),
          redelivered: new RateMeter(),
        });
        // A new subscription may start with a backlog: the TTL and the eviction look at it.
        this.#afterAppend();
        return;
      }
      case "cursors":
        for (const [name, next] of this.#applied) {
          const live = this.#subs.get(name);
          if (live !== undefined) live.committed = next;
        }
        this.#applied = new Map();
        this.#releaseHeld();
        return;
      case "meta": {
        const live = this.#subs.get(c.name);
        if (live !== undefined) live.meta = c.meta;
        return;
      }
      case "delete":
        this.#subs.delete(c.name);
        this.#ctx.timers.clear(`redeliver:${c.name}`);
        this.#ctx.timers.clear(`deadletter:${c.name}`);
        this.#releaseHeld();
        return;
      case "install":
        // Only a replica that is not serving installs a snapshot (a follower): no consumers to keep.
        this.#loadSubscriptions();
        return;
    }
  }

  // ---- replication (docs/RAFT.md "Subscriptions are replicated") ----

  /**
   * Decide at apply: a committed subscription entry of a replicated partition, as every replica
   * applies it, on its committed state. The leader decided it on its own view, which may be
   * older than the entries before it in the log (two creates of one name, a cursor update of a
   * subscription deleted meanwhile), so a create of an existing subscription, or a meta change
   * or delete of a missing one, is a no-op (null), cursor updates of missing subscriptions are
   * dropped, a mark-delete position below the committed one is raised to it (acks never move it
   * back; only a reset does), and a cursor update the pure core refuses is dropped (logged)
   * rather than fail the entry on every replica. Depends only on the entry and the replicated
   * state: every replica decides alike.
   */
  decide(change: SubsChange): SubsChange | null {
    switch (change.op) {
      case "create":
        return this.#subs.has(change.name) ? null : change;
      case "meta":
      case "delete":
        return this.#subs.has(change.name) ? change : null;
      case "install":
        return change;
      case "cursors": {
        const cmds: SubscriptionCommand[] = [];
        const states = new Map<string, DurableSubscription>();
        for (const sc of change.cmds) {
          const live = this.#subs.get(sc.sub);
          if (live === undefined) continue;
          const base = states.get(sc.sub) ?? live.committed;
          const cmd = sc.reset === undefined && sc.markDelete < base.cursor.markDelete ? { ...sc, markDelete: base.cursor.markDelete } : sc;
          try {
            states.set(sc.sub, applyCommand(base, cmd));
          } catch (err) {
            log.error("edgelog.subscriptions.replicated_cursor_refused", { subscription: sc.sub, error: err });
            continue;
          }
          cmds.push(cmd);
        }
        return cmds.length === 0 ? null : { ...change, cmds };
      }
    }
  }

  /** The stored subscriptions, for a peer's snapshot catch-up manifest (partition/catch-up.ts). */
  rows(): SubscriptionRow[] {
    return this.#ctx.sql
      .all<{ name: string; meta: string; cursor: string; updated_ms: number }>("SELECT name, meta, cursor, updated_ms FROM sub_subscriptions ORDER BY name")
      .map((r) => ({ name: r.name, meta: r.meta, cursor: r.cursor, updatedMs: r.updated_ms }));
  }

  /** Whether this replica serves consumers, readers and the subscription RPCs (always at factor 1; the leader's only when replicated). */
  get serving(): boolean {
    return this.#serving;
  }

  /**
   * A replicated partition's replica stops serving (it lost the leadership, crashed, or has just
   * started as a follower): every consumer and reader socket is closed with 1012 (service
   * restart: the client reconnects through the gateway, which finds the new leader), and the
   * in-memory dispatch state (consumers, permits, in-flight messages, ack timeouts, nack delays,
   * leases, held receipts) is dropped: each subscription is rebuilt from its committed cursor,
   * so what was in flight and not committed as acked is redelivered by the next leader.
   */
  stepDown(reason: string): void {
    this.#serving = false;
    this.#resetDispatch(SUB_CLOSE.leaderChanged, reason);
  }

  /**
   * A replicated partition's replica becomes the serving leader (it has applied every entry of
   * earlier terms): the subscriptions are rebuilt from the replicated cursors, and the timers
   * that act at the leader only are armed again (TTL, eviction, pending dead-letter copies).
   */
  becomeLeader(): void {
    this.#resetDispatch(SUB_CLOSE.leaderChanged, "leadership changed");
    this.#serving = true;
    const nowMs = Date.now();
    for (const live of this.#subs.values()) if (live.committed.deadLetters.size > 0) this.#ctx.timers.set(`deadletter:${live.name}`, nowMs);
    this.policiesChanged();
  }

  /**
   * Closes every consumer and reader socket with `code`, ends the leases, drops the receipts not
   * sent (their acks were not confirmed: the client sees the socket close first) and rebuilds
   * each subscription from its committed cursor.
   */
  #resetDispatch(code: number, reason: string): void {
    this.#dispatchGeneration++;
    for (const ws of this.#ctx.sockets(SUBS_TAG)) closeQuietly(ws, code, reason);
    this.#sockets.clear();
    this.#leases.clear();
    this.#joining.clear();
    this.#receipts = [];
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    this.#hasReaders = false;
    const bounds = this.#bounds();
    for (const live of this.#subs.values()) {
      live.sub = this.#newSub(live.name, live.meta, cloneDurable(live.committed), bounds);
      this.#ctx.timers.clear(`redeliver:${live.name}`);
    }
  }

  /**
   * The lowest offset the subscriptions still need: the slowest committed mark-delete position
   * + 1 (null without subscriptions). The lifecycle room asks it, so retention never deletes
   * unconsumed messages unless a policy moves the cursor first.
   */
  retainFrom(): number | null {
    return retentionFloor([...this.#subs.values()].map((l) => l.committed.cursor.markDelete));
  }

  // ---- the log's listener ----

  /** Bound once: the listener the switchboard registers with the log's appends. */
  readonly dispatchAll = (): void => {
    const end = this.#log.state?.logEndOffset ?? 0;
    if (end > this.#lastEnd) this.#in.add(end - this.#lastEnd, Date.now());
    this.#lastEnd = end;
    // A replica that does not lead its replicated partition has no consumers and runs no policy.
    if (!this.#serving) return;
    // After the append's commit: a failure here must not fail the append, whose records are
    // durable; the next event (ack, timer, append) dispatches again.
    try {
      for (const live of this.#subs.values()) this.#dispatch(live);
      if (this.#hasReaders) for (const ws of this.#ctx.sockets("reader")) this.#pushReader(ws);
      if (this.#subs.size > 0) this.#afterAppend();
    } catch (err) {
      log.error("edgelog.subscriptions.dispatch_failed", { error: err });
    }
  };

  // ---- namespace policies (docs/TENANTS.md "What each policy promises"; pure core src/policies/enforce.ts) ----

  /** The topic's effective policies as the metadata store pushed them (`configs.policies`), defaults filled in. */
  policies(): TopicPolicies {
    const configs = this.#log.state?.configs;
    if (configs === undefined) return DEFAULT_POLICIES;
    if (this.#policyCache?.configs !== configs) this.#policyCache = { configs, policies: policiesOf(configs) };
    return this.#policyCache.policies;
  }

  /** The slowest committed mark-delete position + 1 (the backlog's start), or null without subscriptions. */
  #slowest(): number | null {
    let from: number | null = null;
    for (const live of this.#subs.values()) {
      const p = live.committed.cursor.markDelete + 1;
      if (from === null || p < from) from = p;
    }
    return from;
  }

  /**
   * The backlog in bytes, Pulsar's definition: the stored bytes from the slowest subscription's
   * committed mark-delete position to the log end (acknowledged holes above it included), in
   * whole record batches; 0 without subscriptions. Cached: the log end only adds the new
   * batches' bytes, and a moved slowest position or log start costs one SUM over the backlog's rows.
   */
  backlogBytes(): number {
    const s = this.#log.state;
    const slowest = this.#slowest();
    if (s === null || slowest === null) return 0;
    const from = Math.max(slowest, s.logStartOffset);
    const end = s.logEndOffset;
    if (from >= end) {
      this.#backlog = null;
      return 0;
    }
    const c = this.#backlog;
    if (c !== null && c.from === from && c.start === s.logStartOffset && end >= c.end) {
      // Only appends since: their bytes are the stored bytes' growth (a compaction rewrite or a
      // truncation changes the stored bytes otherwise, and the backlog is summed again).
      const added = end > c.end ? this.#log.bytesFrom(c.end) : 0;
      if (s.storedBytes - c.stored === added) {
        c.bytes += added;
        c.end = end;
        c.stored = s.storedBytes;
        return c.bytes;
      }
    }
    const bytes = this.#log.bytesFrom(from);
    this.#backlog = { from, start: s.logStartOffset, end, stored: s.storedBytes, bytes };
    return bytes;
  }

  /**
   * `producer_request_hold`: null when a produce may go now; else a promise that settles with
   * null once the backlog is at or below the quota (held requests are released one per task, in
   * arrival order, so each sees the backlog its predecessors left), or with
   * BACKLOG_QUOTA_HOLD_TIMEOUT after the hold time (or at once beyond
   * {@link MAX_HELD_PRODUCE_REQUESTS}). A held request has written nothing.
   */
  produceHold(): Promise<ErrorResult | null> | null {
    const q = this.policies().backlogQuota;
    if (q.action !== "producer_request_hold" || q.limitBytes === -1) return null;
    const backlog = this.backlogBytes();
    if (this.#held.length === 0 && backlogVerdict(q, backlog) === "ok") return null;
    const t = this.#ctx.holdTimeoutMs;
    const holdTimeoutMs = t !== undefined && Number.isFinite(t) && t > 0 ? t : DEFAULT_BACKLOG_HOLD_TIMEOUT_MS;
    const timedOut = (): ErrorResult =>
      errorResult("BACKLOG_QUOTA_HOLD_TIMEOUT", `The backlog (${backlog} bytes) stayed above the backlog quota (${q.limitBytes} bytes) for ${holdTimeoutMs} ms: nothing was written.`, {
        backlogBytes: this.backlogBytes(),
        limitBytes: q.limitBytes,
        holdTimeoutMs,
      });
    if (this.#held.length >= MAX_HELD_PRODUCE_REQUESTS) return Promise.resolve(timedOut());
    return new Promise((resolve) => {
      const h: Held = {
        resolve,
        timer: setTimeout(() => {
          const i = this.#held.indexOf(h);
          if (i === -1) return;
          this.#held.splice(i, 1);
          resolve(timedOut());
        }, holdTimeoutMs),
      };
      this.#held.push(h);
      // Requests queue behind held ones (arrival order); if the backlog fits already, release.
      if (backlogVerdict(q, this.backlogBytes()) === "ok") this.#releaseHeld();
    });
  }

  /** Releases the first held produce once the backlog fits, then the next one in the next task (after the first appended). */
  #releaseHeld(): void {
    if (this.#held.length === 0 || this.#releasing) return;
    const q = this.policies().backlogQuota;
    if (q.action === "producer_request_hold" && backlogVerdict(q, this.backlogBytes()) !== "ok") return;
    const h = this.#held.shift()!;
    clearTimeout(h.timer);
    h.resolve(null);
    if (this.#held.length === 0) return;
    this.#releasing = true;
    setTimeout(() => {
      this.#releasing = false;
      this.#releaseHeld();
    }, 0);
  }

  /**
   * The subscriptions' policies on a produce of `records` records and `bytes` stored bytes,
   * checked last before the append (nothing is written on a refusal):
   * - backlog quota `producer_exception`: BACKLOG_QUOTA_EXCEEDED while the backlog is above the limit;
   * - publish rate: THROTTLED with `details.throttleTimeMs` while its bucket is below zero (an
   *   admitted request is charged; it may take the bucket below zero, KIP-599's rule).
   */
  checkProduce(records: number, bytes: number, nowMs: number): ErrorResult | null {
    const p = this.policies();
    if (p.backlogQuota.action === "producer_exception" && p.backlogQuota.limitBytes !== -1) {
      const backlog = this.backlogBytes();
      if (backlogVerdict(p.backlogQuota, backlog) !== "ok") {
        return errorResult(
          "BACKLOG_QUOTA_EXCEEDED",
          `The backlog (${backlog} bytes from the slowest subscription's mark-delete position) is above the backlog quota (${p.backlogQuota.limitBytes} bytes): produce is refused until subscriptions acknowledge.`,
          { backlogBytes: backlog, limitBytes: p.backlogQuota.limitBytes },
        );
      }
    }
    this.#publishRate = limiterFor(this.#publishRate, p.publishRate, nowMs);
    if (this.#publishRate !== null) {
      const a = this.#publishRate.tryAcquire(nowMs, records, bytes);
      if (!a.admitted) {
        return errorResult("THROTTLED", `The topic's publishRate policy is exceeded: retry in ${a.throttleTimeMs} ms.`, { throttleTimeMs: a.throttleTimeMs, policy: "publishRate" });
      }
    }
    return null;
  }

  /**
   * The topic's policies changed (the metadata store pushed new configs): held produce requests
   * may go, the TTL timer follows the new TTL, an eviction runs if the new quota asks for one,
   * and dispatch resumes under the new rate.
   */
  policiesChanged(): void {
    const nowMs = Date.now();
    this.#releaseHeld();
    if (!this.#serving) return;
    this.#armTtl(nowMs);
    this.#checkEviction(nowMs);
    for (const live of this.#subs.values()) this.#dispatch(live);
  }

  /** After an append (subscriptions exist) or a new subscription: the TTL timer is armed, and an eviction is scheduled when the backlog passed a `consumer_backlog_eviction` quota. */
  #afterAppend(): void {
    const nowMs = Date.now();
    if (this.policies().messageTtlSeconds > 0 && this.#ctx.timers.dueMs(TTL_TIMER) === undefined) this.#armTtl(nowMs);
    this.#checkEviction(nowMs);
  }

  #checkEviction(nowMs: number): void {
    const q = this.policies().backlogQuota;
    if (q.action !== "consumer_backlog_eviction" || q.limitBytes === -1) return;
    if (backlogVerdict(q, this.backlogBytes()) === "ok" || this.#ctx.timers.dueMs(EVICTION_TIMER) !== undefined) return;
    this.#ctx.timers.set(EVICTION_TIMER, nowMs);
  }

  /**
   * `consumer_backlog_eviction` (timer): drops the oldest messages of the slowest subscriptions,
   * whole batches from the backlog's start, until the backlog fits: every subscription whose
   * mark-delete position is below the first batch kept is moved up to it (its messages there are
   * acknowledged on its behalf, as Pulsar's eviction skips the slowest cursor's entries), in one
   * committed command. A backlog larger than one slice schedules the next slice.
   */
  #evict(): void {
    const q = this.policies().backlogQuota;
    const from = this.#slowest();
    if (q.action !== "consumer_backlog_eviction" || q.limitBytes === -1 || from === null) return;
    const backlog = this.backlogBytes();
    const target = evictionTarget(this.#log.batchSpansFrom(Math.max(from, this.#log.state?.logStartOffset ?? 0), EVICTION_BATCHES_PER_SLICE), backlog, q.limitBytes);
    if (target === null) return;
    let evicted = 0;
    for (const live of this.#subs.values()) if (live.committed.cursor.markDelete + 1 < target) evicted += live.sub.expireBefore(target);
    const flushed = this.#flush();
    log.info("edgelog.subscriptions.backlog_evicted", { messages: evicted, keepFrom: target, backlogBytes: backlog, limitBytes: q.limitBytes });
    // The backlog is measured on the committed cursors: replicated, once the eviction is committed.
    const next = (): void => {
      if (this.#serving && backlogVerdict(q, this.backlogBytes()) !== "ok") this.#ctx.timers.set(EVICTION_TIMER, Date.now());
    };
    if (flushed === null) next();
    else void flushed.then(next);
    for (const live of this.#subs.values()) this.#dispatch(live);
  }

  /**
   * The TTL timer: due when the oldest message of the backlog (at the slowest committed position)
   * passes the TTL, and no sooner than one check interval from now ({@link ttlCheckIntervalMs});
   * not set without a TTL, without subscriptions, or with an empty backlog (an idle partition
   * is not woken: the next append arms it).
   */
  #armTtl(nowMs: number): void {
    const ttl = this.policies().messageTtlSeconds;
    const s = this.#log.state;
    const slowest = this.#slowest();
    if (ttl === 0 || s === null || slowest === null || Math.max(slowest, s.logStartOffset) >= s.logEndOffset) {
      this.#ctx.timers.clear(TTL_TIMER);
      return;
    }
    const oldest = this.#source.record(Math.max(slowest, s.logStartOffset));
    const due = Math.max(oldest === undefined ? nowMs : oldest.timestamp + ttl * 1000, nowMs + ttlCheckIntervalMs(ttl));
    this.#ctx.timers.set(TTL_TIMER, due);
  }

  /**
   * Message TTL (timer): every subscription's messages older than the TTL (timestamp below
   * now - TTL, found through the log's timestamp index: everything before the first message at or
   * after that time) are acknowledged on its behalf, as Pulsar's expiry monitor moves the
   * mark-delete position; in one committed command.
   */
  #expireTtl(nowMs: number): void {
    const cutoff = ttlCutoffMs(nowMs, this.policies().messageTtlSeconds);
    if (cutoff !== null && this.#subs.size > 0) {
      const firstKept = this.#offsetForTimestamp(cutoff);
      let expired = 0;
      for (const live of this.#subs.values()) if (live.committed.cursor.markDelete + 1 < firstKept) expired += live.sub.expireBefore(firstKept);
      if (expired > 0) {
        this.#flush();
        for (const live of this.#subs.values()) this.#dispatch(live);
      }
    }
    this.#armTtl(nowMs);
  }

  #throttleDispatch(nowMs: number): void {
    const due = nowMs + Math.max(1, this.#dispatchRate?.waitMs(nowMs) ?? 1);
    const at = this.#ctx.timers.dueMs(DISPATCH_RATE_TIMER);
    if (at === undefined || at > due) this.#ctx.timers.set(DISPATCH_RATE_TIMER, due);
  }

  // ---- WebSocket: consumers and readers ----

  /**
   * Accepts a consumer (`kind` "consumer", with the subscription name) or a reader. The
   * consumer joins its subscription here (created at its initial position when new); a
   * refusal (CONSUMER_BUSY, INVALID_REQUEST) is answered as an HTTP error and changes nothing.
   */
  upgrade(request: Request): SocketAccept | ErrorResult | Promise<SocketAccept | ErrorResult> {
    const s = this.#log.state;
    if (s === null) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist.");
    const url = new URL(request.url);
    const q = url.searchParams;
    const partitioned = request.headers.get("edgelog-partitioned") === "1";
    const base64 = q.get("encoding") === "base64";
    if (request.headers.get("edgelog-socket") === "reader") {
      const o = parseReaderQuery(q, s.partition);
      if ("ok" in o) return o;
      const start = readerStartOffset(o.start, o.inclusive, { ...this.#bounds(), offsetForTimestamp: (t) => this.#offsetForTimestamp(t) });
      const state: ReaderAttachment = { k: "r", ...new ReaderWindow(o.receiverQueueSize, start).store(), b: base64 };
      const readerId = crypto.randomUUID();
      this.#hasReaders = true;
      setTimeout(() => this.#afterReaderAccept(readerId, start), 0);
      return { room: SUBS_ROOM, state: { ...state }, tags: [SUBS_TAG, "reader", `r:${readerId}`] };
    }
    const name = request.headers.get("edgelog-subscription") ?? "";
    const o = parseSubscribeQuery(name, q);
    if ("ok" in o) return o;
    const live = this.#subs.get(name);
    const nowMs = Date.now();
    const policies = this.policies();
    if (live === undefined) {
      const over = checkCountLimit("subscriptions", policies.maxSubscriptionsPerTopic, this.#subs.size);
      if (over !== null) return over;
      const start = initialOffset(o.initialPosition, { ...this.#bounds(), offsetForTimestamp: (t) => this.#offsetForTimestamp(t) });
      const meta: SubMeta = { v: 1, type: o.type, policy: o.policy, deadLetterTopic: o.deadLetterTopic, dlq: null, partitioned, createdMs: nowMs };
      return this.#then(this.#ctx.commit({ op: "create", name, meta, cursor: encodeDurable(emptyDurable(start - 1)).stored, nowMs }), () => this.#admit(name, o, partitioned, base64, nowMs));
    }
    if (
      live.sub.stats().consumers.length === 0 &&
      !this.#joining.has(name) &&
      (live.meta.type !== o.type || !samePolicy(live.meta.policy, o.policy) || live.meta.deadLetterTopic !== o.deadLetterTopic || live.meta.partitioned !== partitioned)
    ) {
      // The first consumer of an idle subscription sets its type and delivery policy (Pulsar's
      // are per consumer; Edgelog's are the subscription's, tracked on the server).
      this.#flush();
      const meta: SubMeta = { ...live.meta, type: o.type, policy: o.policy, deadLetterTopic: o.deadLetterTopic, partitioned };
      return this.#then(this.#ctx.commit({ op: "meta", name, meta }), () => {
        // Replicated: the commit awaited, a consumer may have joined meanwhile (it keeps the sub it joined).
        if (this.#subs.get(name) === live && live.sub.stats().consumers.length === 0) live.sub = this.#newSub(name, meta, cloneDurable(live.committed), this.#bounds());
        return this.#admit(name, o, partitioned, base64, nowMs);
      });
    }
    return this.#admit(name, o, partitioned, base64, nowMs);
  }

  /** A consumer's admission to subscription `name` (created or updated already): the socket's state, or the refusal. */
  #admit(name: string, o: SubscribeOptions, partitioned: boolean, base64: boolean, nowMs: number): SocketAccept | ErrorResult {
    const live = this.#subs.get(name);
    if (live === undefined) return errorResult("SUBSCRIPTION_NOT_FOUND", `No subscription ${JSON.stringify(name)} on this partition (deleted meanwhile).`, { subscription: name });
    const policies = this.policies();
    const a: ConsumerAttachment = {
      k: "c",
      s: name,
      c: crypto.randomUUID().replaceAll("-", "").slice(0, 16),
      n: o.consumerName ?? "",
      p: o.priorityLevel,
      t: o.type,
      q: o.pullMode ? 0 : o.receiverQueueSize,
      cr: 0,
      j: nowMs,
      jr: crypto.randomUUID().slice(0, 8),
      pt: partitioned,
      b: base64,
    };
    if (a.n === "") a.n = a.c;
    // Admission now, so that a refusal is the upgrade's HTTP answer (409 CONSUMER_BUSY); the
    // consumer joins once the socket is accepted (next task), so that nothing is dispatched to
    // a socket that does not exist yet. Joins still pending count as consumers.
    const pending = this.#joining.get(name) ?? 0;
    const refused =
      admitConsumer(live.sub.type, live.sub.stats().consumers.length + pending, o.type) ??
      checkCountLimit("consumers", policies.maxConsumersPerSubscription, live.sub.stats().consumers.length + pending);
    if (refused !== null) return refused;
    this.#joining.set(name, pending + 1);
    setTimeout(() => this.#afterAccept(name, a), 0);
    return { room: SUBS_ROOM, state: { ...a }, tags: [SUBS_TAG, `c:${a.c}`] };
  }

  /** After the base accepted the socket (next task): the consumer joins, is greeted, and dispatch runs. */
  #afterAccept(name: string, a: ConsumerAttachment): void {
    const pending = (this.#joining.get(name) ?? 1) - 1;
    if (pending > 0) this.#joining.set(name, pending);
    else this.#joining.delete(name);
    const live = this.#subs.get(name);
    const ws = this.#ctx.sockets(`c:${a.c}`)[0];
    if (ws === undefined) return; // the base refused the socket after all
    if (!this.#serving) {
      // Replicated: this replica stopped leading between the upgrade and the accept.
      closeQuietly(ws, SUB_CLOSE.leaderChanged, "not the leader");
      return;
    }
    if (live === undefined) {
      closeQuietly(ws, SUB_CLOSE.subscriptionDeleted, "subscription deleted");
      return;
    }
    const before = live.sub.activeConsumer;
    const refused = this.#addConsumer(live, a);
    if (refused !== null) {
      send(ws, { type: "error", code: refused.code, message: refused.message ?? ERRORS[refused.code].message, requestId: null });
      closeQuietly(ws, SUB_CLOSE.consumerBusy, "consumer busy");
      return;
    }
    this.#sockets.set(a.c, ws);
    send(ws, {
      type: "connected",
      consumerId: a.c,
      subscription: name,
      subscriptionType: live.sub.type,
      partition: this.#log.state?.partition ?? 0,
      active: live.sub.type !== "failover" || live.sub.activeConsumer === a.c,
    });
    this.#activeChanged(live, before);
    this.#dispatch(live);
  }

  #afterReaderAccept(readerId: string, start: number): void {
    const ws = this.#ctx.sockets(`r:${readerId}`)[0];
    if (ws === undefined) return;
    if (!this.#serving) {
      closeQuietly(ws, SUB_CLOSE.leaderChanged, "not the leader");
      return;
    }
    send(ws, { type: "reader", partition: this.#log.state?.partition ?? 0, startOffset: start });
    this.#pushReader(ws);
  }

  /** An event of one of the room's sockets (after a hibernation too: load rebuilt the consumers). */
  onSocket(ws: WebSocket, attachment: SocketAttachment, event: SocketEvent): void {
    if (attachment.v !== 1) throw new Error(`subs: attachment version ${attachment.v}`);
    const { r: _r, v: _v, ...state } = attachment;
    const a = state as unknown as ConsumerAttachment | ReaderAttachment;
    if (!this.#serving) {
      // A replica that stopped leading closed its sockets (stepDown); a frame that crossed the close is not served.
      if (event.type === "message") closeQuietly(ws, SUB_CLOSE.leaderChanged, "not the leader");
      return;
    }
    if (a.k === "r") {
      this.#onReader(ws, a, event);
      return;
    }
    const live = this.#subs.get(a.s);
    if (event.type !== "message") {
      if (live !== undefined) this.#removeConsumer(live, a.c);
      this.#sockets.delete(a.c);
      // What the consumer did before it left is committed now, not at the next interval.
      this.#flush();
      return;
    }
    if (live === undefined) {
      closeQuietly(ws, SUB_CLOSE.subscriptionDeleted, "subscription deleted");
      return;
    }
    const partition = this.#log.state?.partition ?? 0;
    const f = parseClientFrame(event.data, partition);
    if ("ok" in f) {
      this.#frameError(ws, f, f.requestId);
      return;
    }
    this.#onFrame(ws, live, a, f);
  }

  #onFrame(ws: WebSocket, live: Live, a: ConsumerAttachment, f: ClientFrame): void {
    const nowMs = Date.now();
    switch (f.type) {
      case "ping": {
        send(ws, { type: "pong" });
        return;
      }
      case "ack": {
        const r = live.sub.ack(f.offsets);
        if ("ok" in r) {
          this.#frameError(ws, r, f.requestId);
          return;
        }
        if (f.requestId !== null) this.#receipts.push({ kind: "acked", consumerId: a.c, requestId: f.requestId, count: r.acked });
        break;
      }
      case "ackCumulative": {
        const r = live.sub.ackCumulative(f.offset);
        if ("ok" in r) {
          this.#frameError(ws, r, f.requestId);
          return;
        }
        if (f.requestId !== null) this.#receipts.push({ kind: "acked", consumerId: a.c, requestId: f.requestId, count: r.acked });
        break;
      }
      case "nack": {
        // Checked as a whole first: a refused frame changes nothing.
        const end = this.#bounds().logEndOffset;
        const bad = f.offsets.find((o) => o >= end);
        if (bad !== undefined) {
          this.#frameError(ws, errorResult("INVALID_MESSAGE_ID", `No message at offset ${bad}.`, { offset: bad, logEndOffset: end }), f.requestId);
          return;
        }
        let nacked = 0;
        for (const o of f.offsets) {
          const r = live.sub.nack(a.c, o, nowMs, f.redeliveryCount ?? undefined);
          if (!("ok" in r) && r.applied) nacked++;
        }
        if (f.requestId !== null) this.#receipts.push({ kind: "nacked", consumerId: a.c, requestId: f.requestId, count: nacked });
        break;
      }
      case "permit": {
        const r = live.sub.grantPermits(a.c, f.permits);
        if (r !== null) {
          this.#frameError(ws, r, null);
          return;
        }
        break;
      }
    }
    this.#scheduleFlush();
    this.#dispatch(live);
  }

  #frameError(ws: WebSocket, e: ErrorResult, requestId: string | null): void {
    const n = (this.#errors.get(ws) ?? 0) + 1;
    this.#errors.set(ws, n);
    send(ws, { type: "error", code: e.code, message: e.message ?? ERRORS[e.code].message, requestId, ...(e.details !== undefined ? { details: e.details } : {}) });
    if (n > MAX_FRAME_ERRORS) closeQuietly(ws, SUB_CLOSE.tooManyErrors, "too many protocol errors");
  }

  #addConsumer(live: Live, a: ConsumerAttachment): ErrorResult | null {
    return (
      live.sub.addConsumer({
        id: a.c,
        name: a.n,
        priorityLevel: a.p,
        type: a.t,
        flow: a.q === 0 ? { kind: "credit" } : { kind: "window", receiverQueueSize: a.q },
      }) ?? (a.q === 0 && a.cr > 0 ? live.sub.grantPermits(a.c, a.cr) : null)
    );
  }

  #removeConsumer(live: Live, consumerId: string): void {
    const before = live.sub.activeConsumer;
    live.sub.removeConsumer(consumerId);
    this.#activeChanged(live, before);
    this.#dispatch(live);
  }

  /** Failover: tells the consumers whose active role changed. */
  #activeChanged(live: Live, before: string | null): void {
    const now = live.sub.activeConsumer;
    if (live.sub.type !== "failover" || now === before) return;
    const prev = before === null ? undefined : this.#sockets.get(before);
    if (prev !== undefined) send(prev, { type: "active", active: false });
    const next = now === null ? undefined : this.#sockets.get(now);
    if (next !== undefined) send(next, { type: "active", active: true });
  }

  // ---- dispatch ----

  /** Delivers what the subscription may deliver now, in bounded slices; arms its timer. */
  #dispatch(live: Live): void {
    if (this.#subs.get(live.name) !== live) return;
    const partition = this.#log.state?.partition;
    if (partition === undefined) return;
    for (let slice = 0; slice < SLICES_PER_EVENT; slice++) {
      const nowMs = Date.now();
      // The dispatch rate (per partition, over all its subscriptions): messages beyond the
      // allowance wait for the rate timer; nothing is lost.
      this.#dispatchRate = limiterFor(this.#dispatchRate, this.policies().dispatchRate, nowMs);
      const allowance = this.#dispatchRate?.allowance(nowMs) ?? Number.POSITIVE_INFINITY;
      if (allowance === 0) {
        this.#throttleDispatch(nowMs);
        break;
      }
      const { deliveries, more } = live.sub.dispatch(nowMs, this.#source, allowance);
      let bytes = 0;
      if (deliveries.length > 0) {
        live.out.add(deliveries.length, nowMs);
        const re = deliveries.filter((d) => d.redeliveryCount > 0).length;
        if (re > 0) live.redelivered.add(re, nowMs);
      }
      // Each consumer's frame is concatenated from message JSON serialised once per record and
      // encoding for all subscriptions (src/subscriptions/message-json.ts); only the redelivery
      // count is written per delivery.
      const byConsumer = new Map<string, { ws: WebSocket; mode: { base64: boolean; pull: boolean }; messages: string[] }>();
      for (const d of deliveries) {
        const rec = this.#source.record(d.offset);
        if (rec === undefined) continue;
        bytes += recordBytes(rec);
        if (this.#leases.size > 0) {
          const lease = this.#leases.get(d.consumerId);
          if (lease !== undefined) {
            lease.collected.push(wireMessage(partition, rec, d.redeliveryCount, lease.base64 ? "base64" : "string"));
            continue;
          }
        }
        let to = byConsumer.get(d.consumerId);
        if (to === undefined) {
          const ws = this.#sockets.get(d.consumerId);
          if (ws === undefined) continue;
          byConsumer.set(d.consumerId, (to = { ws, mode: this.#socketMode(ws), messages: [] }));
        }
        to.messages.push(this.#json.json(partition, rec, d.redeliveryCount, to.mode.base64 ? "base64" : "string"));
      }
      for (const to of byConsumer.values()) {
        sendFrames(to.ws, this.#frames.frames(to.messages, MAX_SERVER_FRAME_BYTES));
        if (to.mode.pull) this.#saveCredits(live, to.ws);
      }
      if (deliveries.length > 0) this.#dispatchRate?.charge(nowMs, deliveries.length, bytes);
      if (!more) break;
      if (slice === SLICES_PER_EVENT - 1) setTimeout(() => this.#dispatch(live), 0);
    }
    this.#armTimer(live);
    if (live.sub.hasPendingCommand) this.#scheduleFlush();
  }

  /** A consumer socket's encoding and flow mode, read from its attachment once per socket. */
  #socketMode(ws: WebSocket): { base64: boolean; pull: boolean } {
    let mode = this.#socketModes.get(ws);
    if (mode === undefined) {
      const a = attachmentOf(ws);
      mode = { base64: a?.k === "c" && a.b, pull: a?.k === "c" && a.q === 0 };
      this.#socketModes.set(ws, mode);
    }
    return mode;
  }

  /** Pull mode: the credits left go in the attachment, so a hibernation keeps them. */
  #saveCredits(live: Live, ws: WebSocket): void {
    const a = attachmentOf(ws);
    if (a?.k !== "c" || a.q !== 0) return;
    const c = live.sub.stats().consumers.find((x) => x.id === a.c);
    if (c === undefined || c.permits === a.cr) return;
    this.#ctx.saveAttachment(ws, { ...a, cr: c.permits });
  }

  #armTimer(live: Live): void {
    const key = `redeliver:${live.name}`;
    const due = live.sub.nextDueMs(Date.now());
    if (due === null) this.#ctx.timers.clear(key);
    else if (this.#ctx.timers.dueMs(key) !== due) this.#ctx.timers.set(key, due);
  }

  /** Reads up to `max` messages from `from` (decoded batches cached). */
  #read(from: number, max: number): (MessageMeta & { record: LogRecord })[] {
    const out: (MessageMeta & { record: LogRecord })[] = [];
    const end = this.#log.state?.highWatermark ?? 0;
    if (from >= end) return out;
    // The cached batches first: one SQL read per batch, not per subscription and delivery (src/subscriptions/record-cache.ts).
    const cached = from >= (this.#log.state?.logStartOffset ?? 0) ? this.#cache.read(from, end, max) : null;
    for (const records of cached !== null ? [cached] : this.#storedBatches(from)) {
      for (const r of records) {
        if (r.offset < from || r.offset >= end) continue;
        let meta = this.#metas.get(r);
        if (meta === undefined) {
          meta = { offset: r.offset, key: r.key === null ? null : fromUtf8(r.key), deliverAtMs: deliverAtOf(r.headers), record: r };
          this.#metas.set(r, meta);
        }
        out.push(meta);
        if (out.length >= max) return out;
      }
    }
    return out;
  }

  *#storedBatches(from: number): Generator<LogRecord[]> {
    for (const b of this.#log.batchesFrom(from)) yield this.#cache.batch(b.baseOffset, () => decodeBatch(b.data, 0, { verifyCrc: false }).records);
  }

  #bounds(): { logStartOffset: number; logEndOffset: number } {
    const s = this.#log.state;
    return { logStartOffset: s?.logStartOffset ?? 0, logEndOffset: s?.highWatermark ?? 0 };
  }

  #offsetForTimestamp(t: number): number {
    const r = this.#log.listOffsets({ spec: "timestamp", timestamp: t });
    return r.ok && r.offset !== null ? r.offset : this.#bounds().logEndOffset;
  }

  #newSub(name: string, meta: SubMeta, durable: DurableSubscription, bounds: { logStartOffset: number; logEndOffset: number }): Subscription {
    return new Subscription({ name, type: meta.type, ...meta.policy, partitionIndex: this.#log.state?.partition ?? 0, partitioned: meta.partitioned }, durable, bounds);
  }

  // ---- readers (non-durable: the position lives in the socket's attachment only) ----

  #onReader(ws: WebSocket, a: ReaderAttachment, event: SocketEvent): void {
    if (event.type !== "message") return;
    const f = parseClientFrame(event.data, this.#log.state?.partition ?? 0);
    if ("ok" in f) {
      this.#frameError(ws, f, f.requestId);
      return;
    }
    if (f.type === "ping") {
      send(ws, { type: "pong" });
      return;
    }
    if (f.type !== "ack") {
      this.#frameError(ws, errorResult("NOT_ALLOWED", "A reader only acks (to give permits back) and pings."), "requestId" in f ? f.requestId : null);
      return;
    }
    // Only a message sent to this reader and not acked yet gives a permit back, once; a frame
    // naming any other id is refused whole and changes nothing (as a lease's ack of an offset it
    // does not hold). Pulsar's reader handler counts any frame as an ack (docs/PROTOCOL.md).
    const w = this.#readerWindow(ws, a);
    const bad = w.checkAck(f.offsets);
    if (bad !== null) {
      const messageId = formatMessageId(this.#log.state?.partition ?? 0, bad);
      this.#frameError(
        ws,
        errorResult("INVALID_MESSAGE_ID", `Message ${messageId} was not delivered to this reader, or is acked already: it gives no permit back.`, { messageId, offset: bad }),
        f.requestId,
      );
      return;
    }
    w.ack(f.offsets);
    this.#ctx.saveAttachment(ws, { ...a, ...w.store() });
    this.#pushReader(ws);
  }

  /** A reader socket's window: in memory, else restored from its attachment (after a wake or restart). */
  #readerWindow(ws: WebSocket, a: ReaderAttachment): ReaderWindow {
    let w = this.#readerWindows.get(ws);
    if (w === undefined) {
      // The records still in the stored span are the reader's unacked deliveries.
      w = ReaderWindow.restore(a, (lo, hi) =>
        this.#read(lo, Math.min(a.q, hi - lo + 1))
          .filter((m) => m.offset <= hi)
          .map((m) => m.offset),
      );
      this.#readerWindows.set(ws, w);
    }
    return w;
  }

  /** Sends a reader what its window allows from its position. */
  #pushReader(ws: WebSocket): void {
    const a = attachmentOf(ws);
    const partition = this.#log.state?.partition;
    if (a?.k !== "r" || partition === undefined) return;
    const w = this.#readerWindow(ws, a);
    if (w.available <= 0) return;
    w.skipTo(this.#bounds().logStartOffset);
    const read = this.#read(w.next, w.available);
    if (read.length === 0) return;
    sendFrames(
      ws,
      this.#frames.frames(
        read.map((m) => this.#json.json(partition, m.record, 0, a.b ? "base64" : "string")),
        MAX_SERVER_FRAME_BYTES,
      ),
    );
    w.deliver(read.map((m) => m.offset));
    this.#ctx.saveAttachment(ws, { ...a, ...w.store() });
  }

  // ---- flush: one command for every subscription's batched changes ----

  #scheduleFlush(): void {
    if (this.#flushTimer !== null) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = null;
      this.#flush();
    }, ACK_FLUSH_INTERVAL_MS);
  }

  /**
   * Commits the pending changes of every subscription as ONE command, then sends the receipts and
   * starts dead-letter copies. At factor 1 the commit is synchronous (null). Replicated, the
   * command is a Raft entry: the receipts wait until it is applied here, i.e. committed by a
   * majority (and until every earlier flush is: a receipt of an ack already in an earlier entry
   * follows that entry); a refusal answers each receipt with an `error` frame and rebuilds the
   * dispatch state from the committed cursors (what was acked since is redelivered).
   * @returns null when done, else the promise of the replicated commit (null, or the refusal).
   */
  #flush(): Promise<ErrorResult | null> | null {
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    const cmds: SubscriptionCommand[] = [];
    for (const live of this.#subs.values()) {
      const c = live.sub.takeCommand();
      if (c !== null) cmds.push(c);
    }
    const receipts = this.#receipts;
    this.#receipts = [];
    const proposed = cmds.length > 0 ? this.#ctx.commit({ op: "cursors", cmds, nowMs: Date.now() }) : null;
    if (proposed === null && this.#inflight === null) {
      this.#afterFlush(cmds, receipts, null);
      return null;
    }
    const generation = this.#dispatchGeneration;
    const done = (proposed ?? this.#inflight!.then(() => null)).then((refused) => {
      this.#afterFlush(cmds, receipts, refused, generation);
      return refused;
    });
    this.#inflight = done;
    void done.finally(() => {
      if (this.#inflight === done) this.#inflight = null;
    });
    return done;
  }

  #afterFlush(cmds: readonly SubscriptionCommand[], receipts: readonly Receipt[], refused: ErrorResult | null, generation = this.#dispatchGeneration): void {
    // An ack follows the durable commit: the output gate holds these frames until it is durable.
    for (const r of receipts) {
      const ws = this.#sockets.get(r.consumerId);
      if (ws === undefined) continue;
      if (refused !== null) send(ws, { type: "error", code: refused.code, message: refused.message ?? ERRORS[refused.code].message, requestId: r.requestId });
      else if (r.kind === "acked") send(ws, { type: "acked", requestId: r.requestId, acked: r.count });
      else send(ws, { type: "nacked", requestId: r.requestId, nacked: r.count });
    }
    if (refused !== null) {
      // The command may never apply: memory is rebuilt from what is committed.
      if (cmds.length > 0 && this.#serving && generation === this.#dispatchGeneration) {
        log.warn("edgelog.subscriptions.flush_refused", { code: refused.code });
        this.#resetDispatch(SUB_CLOSE.leaderChanged, `cursor update not committed: ${refused.code}`);
      }
      return;
    }
    for (const c of cmds) if (c.deadLetters.length > 0) this.#ctx.timers.set(`deadletter:${c.sub}`, Date.now());
  }

  /** Runs `next` after `pending` (a replicated commit) settles without a refusal; at once when null. */
  #then<T>(pending: Promise<ErrorResult | null> | null, next: () => T | ErrorResult): T | ErrorResult | Promise<T | ErrorResult> {
    if (pending === null) return next();
    return pending.then((refused) => refused ?? next());
  }

  // ---- timers ----

  async onTimer(key: string): Promise<void> {
    // The room's timers act at the serving leader only (becomeLeader arms them again there).
    if (!this.#serving) return;
    if (key === TTL_TIMER) return this.#expireTtl(Date.now());
    if (key === EVICTION_TIMER) return this.#evict();
    if (key === DISPATCH_RATE_TIMER) {
      for (const live of this.#subs.values()) this.#dispatch(live);
      return;
    }
    const i = key.indexOf(":");
    const kind = key.slice(0, i);
    // Keys: redeliver:<sub>, deadletter:<sub>, lease:<sub>:<lease id> (names have no ':').
    const live = this.#subs.get(kind === "lease" ? key.slice(i + 1, key.lastIndexOf(":")) : key.slice(i + 1));
    if (live === undefined) return;
    if (kind === "redeliver") {
      live.sub.tick(Date.now());
      this.#dispatch(live);
      if (live.sub.hasPendingCommand) this.#flush();
      return;
    }
    if (kind === "deadletter") return this.#deadLetters(live);
    if (kind === "lease") {
      const lease = this.#leases.get(key.slice(key.lastIndexOf(":") + 1));
      if (lease === undefined || lease.sub !== live.name) return;
      // An expired lease is an ack timeout of what it still holds: count + 1, redelivered at once.
      live.sub.timeoutConsumer(lease.id, Date.now());
      this.#endLease(live, lease);
      this.#flush();
      this.#dispatch(live);
      return;
    }
    throw new Error(`subs: unknown timer ${key}`);
  }

  /**
   * Produces the subscription's pending dead-letter copies, in offset order, then acks the
   * originals. Exactly one copy: copy `seq` is sent by the subscription's idempotent producer
   * with epoch `seq - baseSeq` and sequence 0, so a retry (after a crash or a failed answer) is
   * recognised by the dead-letter partition as a duplicate (KIP-98). A throw is retried by the
   * base with backoff.
   */
  async #deadLetters(live: Live): Promise<void> {
    const s = this.#log.state;
    if (s === null || live.sub.pendingDeadLetters().length === 0) return;
    const topicName = live.meta.deadLetterTopic ?? `${s.topic}-${live.name}-DLQ`;
    const peers = this.#ctx.peers;
    let t = await peers.metadata.getTopic(topicName);
    if (!t.ok && t.code === "UNKNOWN_TOPIC_OR_PARTITION") {
      const created = await peers.metadata.createTopic({ name: topicName, partitions: 1 });
      if (!created.ok && created.code !== "TOPIC_ALREADY_EXISTS") throw new Error(`creating dead-letter topic ${topicName}: ${created.code} ${created.message}`);
      t = await peers.metadata.getTopic(topicName);
    }
    if (!t.ok) throw new Error(`dead-letter topic ${topicName}: ${t.code} ${t.message}`);
    const topicId = t.topic.topicId;
    for (const copy of live.sub.pendingDeadLetters()) {
      if (this.#subs.get(live.name) !== live) return;
      let dlq = live.meta.dlq;
      if (dlq === null || copy.seq - dlq.baseSeq >= DLQ_EPOCHS_PER_PRODUCER || copy.seq < dlq.baseSeq) {
        const p = await peers.metadata.initProducerId();
        if (!p.ok) throw new Error(`dead-letter producer id: ${p.code}`);
        if (this.#subs.get(live.name) !== live) return;
        dlq = { producerId: p.producerId, baseSeq: copy.seq };
        const pending = this.#ctx.commit({ op: "meta", name: live.name, meta: { ...live.meta, dlq } });
        const refused = pending === null ? null : await pending;
        if (refused !== null) throw new Error(`recording the dead-letter producer of ${live.name}: ${refused.code}`);
        if (this.#subs.get(live.name) !== live) return;
      }
      const rec = this.#source.record(copy.offset);
      if (rec !== undefined) {
        const headers: RecordHeader[] = [
          ...rec.headers.filter((h) => h.key !== DELIVER_AT_HEADER),
          { key: DLQ_PROPERTIES.topic, value: utf8(s.topic) },
          { key: DLQ_PROPERTIES.messageId, value: utf8(formatMessageId(s.partition, copy.offset)) },
          { key: DLQ_PROPERTIES.subscription, value: utf8(live.name) },
        ];
        const batch = encodeBatch({ producerId: dlq.producerId, producerEpoch: copy.seq - dlq.baseSeq, baseSequence: 0 }, [
          { key: rec.key, value: rec.value, headers, timestamp: rec.timestamp },
        ]);
        // At the dead-letter topic's leader (r1 at factor 1; whichever replica leads at 3).
        const r = await peers.appendAtLeader(topicId, 0, t.topic.configs, { batches: [batch], crcVerified: true });
        if (!r.ok) throw new Error(`dead-letter copy of offset ${copy.offset} to ${topicName}: ${r.code} ${r.message}`);
      }
      // A message gone from the log (retention) has nothing to copy: it is acked all the same.
      if (this.#subs.get(live.name) !== live) return;
      live.sub.confirmDeadLetter(copy.offset);
      const flushed = this.#flush();
      if (flushed !== null && (await flushed) !== null) return;
    }
    this.#dispatch(live);
  }

  // ---- HTTP pull: leases (a consumer without a socket; shared subscriptions) ----

  /**
   * Receives up to `max` messages under a lease of `visibilityTimeoutMs`: they are in flight at
   * the lease until it acks or nacks them, or until it expires (then they are redelivered, as
   * after an ack timeout). The subscription is created (shared, at `position`) when missing.
   * Errors: CONSUMER_BUSY (the subscription is not shared and has consumers, or is exclusive).
   * @returns the lease id (null when nothing was delivered) and the messages.
   */
  async receive(req: {
    subscription: string;
    max: number;
    visibilityTimeoutMs: number;
    position: CursorTarget;
    partitioned: boolean;
    base64: boolean;
  }): Promise<RpcResult<{ leaseId: string | null; expiresAtMs: number | null; messages: WireMessage[] }>> {
    if (this.#log.state === null) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist.");
    let live = this.#subs.get(req.subscription);
    if (live === undefined) {
      const created = this.create(req.subscription, "shared", req.position, req.partitioned);
      const r = "then" in created ? await created : created;
      if (!r.ok) return r;
      live = this.#subs.get(req.subscription);
      if (live === undefined) return errorResult("SUBSCRIPTION_NOT_FOUND", "The subscription was deleted meanwhile.", { subscription: req.subscription });
    }
    // Shared only: a lease joining an idle subscription of another type would turn it shared
    // in memory while its stored type stays (docs/PROTOCOL.md "HTTP pull (leases)").
    if (live.sub.type !== "shared")
      return errorResult("CONSUMER_BUSY", `The subscription is of type ${live.sub.type}; HTTP pull serves shared subscriptions only.`, { subscriptionType: live.sub.type });
    const consumers = live.sub.stats().consumers.length + (this.#joining.get(req.subscription) ?? 0);
    const refused = admitConsumer(live.sub.type, consumers, "shared") ?? checkCountLimit("consumers", this.policies().maxConsumersPerSubscription, consumers);
    if (refused !== null) return refused;
    const id = `L${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
    const added = live.sub.addConsumer({ id, name: "http-pull", type: "shared", flow: { kind: "credit" } });
    if (added !== null) return added;
    const lease: Lease = { id, sub: live.name, base64: req.base64, collected: [] };
    this.#leases.set(id, lease);
    live.sub.grantPermits(id, req.max);
    this.#dispatch(live);
    live.sub.revokePermits(id);
    if (lease.collected.length === 0) {
      this.#endLease(live, lease);
      return { ok: true, leaseId: null, expiresAtMs: null, messages: [] };
    }
    const expiresAtMs = Date.now() + req.visibilityTimeoutMs;
    this.#ctx.timers.set(`lease:${live.name}:${id}`, expiresAtMs);
    return { ok: true, leaseId: id, expiresAtMs, messages: lease.collected.splice(0) };
  }

  /**
   * Settles messages of a lease: `ack` acks them, `nack` redelivers them after the nack delay
   * (count + 1). `offsets` null = every message the lease still holds. Answers after the commit;
   * the lease ends when it holds nothing more. Errors: LEASE_NOT_FOUND (unknown, settled or
   * expired), INVALID_MESSAGE_ID.
   */
  async settleLease(subscription: string, leaseId: string, how: "ack" | "nack", offsets: number[] | null): Promise<RpcResult<{ settled: number; remaining: number }>> {
    const live = this.#find(subscription);
    if ("ok" in live) return live;
    const lease = this.#leases.get(leaseId);
    if (lease === undefined || lease.sub !== subscription)
      return errorResult("LEASE_NOT_FOUND", "The lease does not exist, is settled, or has expired (its messages were redelivered).", { leaseId });
    const held = live.sub.inFlightOf(leaseId);
    const list = offsets ?? held;
    const foreign = list.find((o) => !held.includes(o));
    if (foreign !== undefined) return errorResult("INVALID_MESSAGE_ID", `Offset ${foreign} is not held by this lease.`, { offset: foreign, leaseId });
    let settled = 0;
    if (how === "ack") {
      const r = live.sub.ack(list);
      if ("ok" in r) return r;
      settled = r.acked;
    } else {
      const nowMs = Date.now();
      for (const o of list) {
        const r = live.sub.nack(leaseId, o, nowMs);
        if (!("ok" in r) && r.applied) settled++;
      }
    }
    const remaining = live.sub.inFlightOf(leaseId).length;
    if (remaining === 0) this.#endLease(live, lease);
    const flushed = this.#flush();
    this.#dispatch(live);
    const refused = flushed === null ? null : await flushed;
    return refused ?? { ok: true, settled, remaining };
  }

  #endLease(live: Live, lease: Lease): void {
    live.sub.removeConsumer(lease.id);
    this.#leases.delete(lease.id);
    this.#ctx.timers.clear(`lease:${live.name}:${lease.id}`);
  }

  // ---- admin (RPC) ----

  #info(live: Live): SubscriptionInfo {
    const st = live.sub.stats((lo, hi) => this.#bytesIn(lo, hi));
    const nowMs = Date.now();
    const active = live.sub.activeConsumer;
    return {
      subscription: live.name,
      partition: this.#log.state?.partition ?? 0,
      type: live.sub.type,
      markDeletePosition: st.markDelete,
      ackedRanges: live.sub.ackedRanges.map(([lo, hi]) => [lo, hi]),
      backlog: st.backlog,
      backlogBytes: st.backlogBytes ?? 0,
      unacked: st.unacked,
      deadLetteredTotal: st.deadLetteredTotal,
      msgRateIn: this.#in.rate(nowMs),
      msgRateOut: live.out.rate(nowMs),
      msgRateRedeliver: live.redelivered.rate(nowMs),
      consumers: st.consumers.map((c) => ({ consumerId: c.id, consumerName: c.name, permits: c.permits, unacked: c.unacked, active: live.sub.type !== "failover" || c.id === active })),
    };
  }

  /** Stored bytes of offsets [lo, hi], pro rata over their batches. */
  #bytesIn(lo: number, hi: number): number {
    let bytes = 0;
    for (const b of this.#log.batchesFrom(lo)) {
      if (b.baseOffset > hi) break;
      const n = b.lastOffset - b.baseOffset + 1;
      const covered = Math.min(hi, b.lastOffset) - Math.max(lo, b.baseOffset) + 1;
      if (covered > 0) bytes += Math.round((b.sizeBytes * covered) / n);
    }
    return bytes;
  }

  #find(name: string): Live | ErrorResult {
    if (this.#log.state === null) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist.");
    return this.#subs.get(name) ?? errorResult("SUBSCRIPTION_NOT_FOUND", `No subscription ${JSON.stringify(name)} on this partition.`, { subscription: name });
  }

  create(
    name: string,
    type: SubscriptionType,
    position: CursorTarget,
    partitioned: boolean,
  ): RpcResult<{ created: boolean; info: SubscriptionInfo }> | Promise<RpcResult<{ created: boolean; info: SubscriptionInfo }>> {
    if (this.#log.state === null) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist.");
    const existing = this.#subs.get(name);
    if (existing !== undefined) return { ok: true, created: false, info: this.#info(existing) };
    const over = checkCountLimit("subscriptions", this.policies().maxSubscriptionsPerTopic, this.#subs.size);
    if (over !== null) return over;
    const start = initialOffset(position, { ...this.#bounds(), offsetForTimestamp: (t) => this.#offsetForTimestamp(t) });
    const nowMs = Date.now();
    const meta: SubMeta = {
      v: 1,
      type,
      policy: { ackTimeoutMs: 0, negativeAckRedeliveryDelayMs: 60_000, maxRedeliverCount: 0 },
      deadLetterTopic: null,
      dlq: null,
      partitioned,
      createdMs: nowMs,
    };
    return this.#then(this.#ctx.commit({ op: "create", name, meta, cursor: encodeDurable(emptyDurable(start - 1)).stored, nowMs }), () => {
      const live = this.#subs.get(name);
      if (live === undefined) return errorResult("SUBSCRIPTION_NOT_FOUND", `Subscription ${JSON.stringify(name)} was deleted meanwhile.`, { subscription: name });
      return { ok: true as const, created: true, info: this.#info(live) };
    });
  }

  list(): RpcResult<{ subscriptions: SubscriptionInfo[] }> {
    if (this.#log.state === null) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist.");
    return { ok: true, subscriptions: [...this.#subs.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map((l) => this.#info(l)) };
  }

  /** Every subscription's numbers for the partition's `metrics()`, in name order (see {@link SubscriptionMetrics}). */
  metrics(): SubscriptionMetrics[] {
    return [...this.#subs.values()]
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((live) => {
        const st = live.sub.stats((lo, hi) => this.#bytesIn(lo, hi));
        return {
          subscription: live.name,
          type: live.sub.type,
          backlog: st.backlog,
          backlogBytes: st.backlogBytes ?? 0,
          unacked: st.unacked,
          consumers: st.consumers.length,
          deliveredTotal: live.out.total,
          redeliveredTotal: live.redelivered.total,
          deadLetteredTotal: st.deadLetteredTotal,
        };
      });
  }

  stats(name: string): RpcResult<{ info: SubscriptionInfo }> {
    const live = this.#find(name);
    return "ok" in live ? live : { ok: true, info: this.#info(live) };
  }

  /** Seek: consumers are closed with 4002 (an ack of a pre-seek delivery would still apply), then the reset commits. */
  seek(name: string, target: CursorTarget): RpcResult<{ info: SubscriptionInfo }> | Promise<RpcResult<{ info: SubscriptionInfo }>> {
    const live = this.#find(name);
    if ("ok" in live) return live;
    const offset = initialOffset(target, { ...this.#bounds(), offsetForTimestamp: (t) => this.#offsetForTimestamp(t) });
    this.#closeConsumers(live, SUB_CLOSE.cursorReset, "cursor reset");
    live.sub.seek(offset);
    return this.#then(this.#flush(), () => ({ ok: true as const, info: this.#info(live) }));
  }

  skip(name: string, count: number): RpcResult<{ skipped: number; info: SubscriptionInfo }> | Promise<RpcResult<{ skipped: number; info: SubscriptionInfo }>> {
    const live = this.#find(name);
    if ("ok" in live) return live;
    const skipped = live.sub.skip(count);
    const flushed = this.#flush();
    this.#dispatch(live);
    return this.#then(flushed, () => ({ ok: true as const, skipped, info: this.#info(live) }));
  }

  clearBacklog(name: string): RpcResult<{ cleared: number; info: SubscriptionInfo }> | Promise<RpcResult<{ cleared: number; info: SubscriptionInfo }>> {
    const live = this.#find(name);
    if ("ok" in live) return live;
    const cleared = live.sub.expireBefore(this.#bounds().logEndOffset);
    return this.#then(this.#flush(), () => ({ ok: true as const, cleared, info: this.#info(live) }));
  }

  delete(name: string, force: boolean): RpcResult<object> | Promise<RpcResult<object>> {
    const live = this.#find(name);
    if ("ok" in live) return live;
    const n = live.sub.stats().consumers.length;
    if (n > 0 && !force) return errorResult("SUBSCRIPTION_HAS_CONSUMERS", `The subscription has ${n} connected consumer(s): close them or delete with force=true.`, { consumers: n });
    // Replicated: the delete entry follows the flush's entry in the log, so it is proposed at once.
    void this.#flush();
    this.#closeConsumers(live, SUB_CLOSE.subscriptionDeleted, "subscription deleted");
    return this.#then(this.#ctx.commit({ op: "delete", name }), () => ({ ok: true as const }));
  }

  #closeConsumers(live: Live, code: number, reason: string): void {
    for (const c of live.sub.stats().consumers) {
      const ws = this.#sockets.get(c.id);
      live.sub.removeConsumer(c.id);
      this.#sockets.delete(c.id);
      this.#leases.delete(c.id);
      if (ws !== undefined) closeQuietly(ws, code, reason);
    }
  }
}

// ---- helpers ----

const decoder = new TextDecoder();
const encoder = new TextEncoder();
const fromUtf8 = (b: Uint8Array): string => decoder.decode(b);
const utf8 = (s: string): Uint8Array => encoder.encode(s);

/** A record's size for the dispatch rate's bytes: key, value and headers (bytes). */
function recordBytes(r: LogRecord): number {
  let n = (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const h of r.headers) n += h.key.length + (h.value?.length ?? 0);
  return n;
}

function deliverAtOf(headers: readonly RecordHeader[]): number | null {
  for (const h of headers) {
    if (h.key !== DELIVER_AT_HEADER || h.value === null) continue;
    const n = Number(fromUtf8(h.value));
    return Number.isSafeInteger(n) ? n : null;
  }
  return null;
}

function send(ws: WebSocket, frame: ServerFrame): void {
  try {
    ws.send(JSON.stringify(frame));
  } catch {
    // The socket closed meanwhile: its close event removes the consumer.
  }
}

/** Sends `messages` frames (src/subscriptions/message-json.ts `messagesFrames`), in order, until the socket refuses one. */
function sendFrames(ws: WebSocket, frames: readonly string[]): void {
  for (const frame of frames) {
    try {
      ws.send(frame);
    } catch {
      // The socket closed meanwhile: its close event removes the consumer.
      return;
    }
  }
}

function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed.
  }
}

/** The room's view of a socket's attachment (the base validated `r` and `v` on events). */
function attachmentOf(ws: WebSocket): ConsumerAttachment | ReaderAttachment | null {
  try {
    const raw = ws.deserializeAttachment() as unknown;
    if (typeof raw !== "string") return null;
    const { r, v: _v, ...a } = JSON.parse(raw) as { r?: unknown; v?: unknown; k?: unknown };
    if (r !== SUBS_ROOM || (a.k !== "c" && a.k !== "r")) return null;
    return a as unknown as ConsumerAttachment | ReaderAttachment;
  } catch {
    return null;
  }
}

function samePolicy(a: DeliveryPolicy, b: DeliveryPolicy): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function cloneDurable(d: DurableSubscription): DurableSubscription {
  return decodeDurable(encodeDurable(d).stored);
}
