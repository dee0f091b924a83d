/**
 * GroupCoordinatorDO: one consumer group's coordinator, addressed by the group id.
 *
 * A thin shell over the pure state machine in src/groups/coordinator-core.ts: each call
 * awaits what it needs from other objects first (topic metadata from the MetadataDO, log
 * bounds from PartitionDOs), then reads the in-memory group state, runs the core, persists
 * the difference in ONE SQLite transaction and answers. There is no await between reading the
 * state and writing it, so calls that interleave at their awaits never lose an update.
 *
 * Timers, on the base's one schedule (durable-objects/base.ts), in two rooms:
 * - `group`: the core derives every deadline from the state (`session:<member>`,
 *   `rebalance:<member>`, `offsets` retention of an empty group); they are written with the
 *   state, in its transaction. A due one runs the core's `expire`, which settles every
 *   deadline due by then (the others of the same wake then find their timer gone or moved);
 * - `directory`: key = the group id, the retry of a failed push to the group directory (the
 *   group id survives the group's deletion and an eviction in the key).
 *
 * Storage (SQLite, room `group`; migration 1, migration 2 moved the legacy `schedule(key,
 * due_ms)` rows into the base's `_schedule`):
 * - grp (one row): group id, assignor, configs JSON, group epoch, target epoch, subscription
 *   metadata JSON, empty-since;
 * - members(member_id PK, data JSON of MemberState);
 * - targets(member_id PK, assignment JSON);
 * - offsets((topic, partition) PK, committed_offset, metadata, commit_ms, topic_id).
 */
import {
  checkInvariants,
  commitOffsets as coreCommit,
  committedOffset,
  expire,
  resolvePosition,
  groupStateName,
  heartbeat as coreHeartbeat,
  lastResolvedFilter,
  leave as coreLeave,
  newGroup,
  partitionOwners,
  resetOffsets as coreReset,
  timers,
  alterConfigs as coreAlterConfigs,
  canDelete,
  type CommitInput,
  type CommittedOffset,
  type GroupState,
  type HeartbeatInput,
  type LeaveInput,
  type MayDescribe,
  type MemberState,
  type TopicMeta,
  type TopicsSnapshot,
} from "../src/groups/coordinator-core.ts";
import { type Assignment, parseTpKey, toWire, tpKey } from "../src/groups/assignment.ts";
import type { OffsetFetchInput, ResetOffsetsInput, TopicSelection } from "../src/groups/requests.ts";
import { MAX_PARTITIONS_PER_OFFSET_REQUEST } from "../src/groups/requests.ts";
import type { Env } from "../src/env.ts";
import { type GroupCoordinatorRpc, groupDirectoryStub } from "../src/groups/rpc.ts";
import { metadataStore } from "../src/metadata/store.ts";
import { partitionStub } from "../src/partition/rpc.ts";
import { type ErrorResult, errorResult, type RpcResult } from "../src/protocol/errors.ts";
import {
  type AssignorName,
  type ConsumerGroupHeartbeatResponse,
  type GroupConfigs,
  type GroupDescription,
  type GroupListing,
  type GroupPartitionOffset,
  type LeaveGroupResponse,
  type OffsetCommitResponse,
  type OffsetFetchPartition,
  type OffsetFetchResponse,
  type ResetOffsetsResponse,
  isValidGroupId,
  rebalanceProtocolOf,
} from "../src/protocol/groups.ts";
import type { PartitionDescription } from "../src/protocol/types.ts";
import { SqliteDurableObject, expected, type Migration } from "./base.ts";
import { log } from "../src/log/logger.ts";
import type { AclIndex } from "../src/auth/authorizer.ts";
import { securitySnapshot } from "../src/auth/cache.ts";

/** Longest the coordinator uses a topic list without asking the metadata store again (ms). */
export const TOPICS_SNAPSHOT_TTL_MS = 1000;
/** A call naming a topic the snapshot lacks refreshes it, but not more often than this (ms). */
const TOPICS_MIN_REFRESH_MS = 100;
/** Retry delay of a failed push to the group directory (ms). */
const DIRECTORY_RETRY_MS = 1000;
/** Room of the group's own timers (keys from the core's `timers`) and its tables. */
const GROUP_ROOM = "group";
/** Room of the directory push retry (key: the group id). */
const DIRECTORY_ROOM = "directory";
/** Most partitions whose log bounds describe reads (each is one partition RPC). */
const MAX_DESCRIBE_PARTITIONS = 2048;
/**
 * Superusers are never stored as a member's principal (the gateway passes null for them, with
 * the EDGELOG_SUPERUSERS it authenticated with), so the ACL decisions here need none.
 */
const NO_SUPERUSERS: ReadonlySet<string> = new Set();

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "group",
    up(sql) {
      sql.run(`
        CREATE TABLE grp (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          group_id TEXT NOT NULL,
          created_ms INTEGER NOT NULL,
          assignor TEXT NOT NULL,
          configs TEXT NOT NULL,
          group_epoch INTEGER NOT NULL,
          target_epoch INTEGER NOT NULL,
          subscription_metadata TEXT NOT NULL,
          empty_since_ms INTEGER
        );
        CREATE TABLE members (member_id TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE targets (member_id TEXT PRIMARY KEY, assignment TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE offsets (
          topic TEXT NOT NULL,
          partition INTEGER NOT NULL,
          committed_offset INTEGER NOT NULL,
          metadata TEXT NOT NULL,
          commit_ms INTEGER NOT NULL,
          topic_id TEXT NOT NULL,
          PRIMARY KEY (topic, partition)
        ) WITHOUT ROWID;
        CREATE TABLE schedule (key TEXT PRIMARY KEY, due_ms INTEGER NOT NULL) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 2,
    name: "timers on the base schedule",
    up(sql) {
      // The one write outside the room's own tables: the legacy timers, moved once into the
      // base's schedule (`directory:<group>` -> room directory, key <group>).
      sql.run(`
        INSERT INTO _schedule (room, key, due_ms)
          SELECT CASE WHEN key LIKE 'directory:%' THEN '${DIRECTORY_ROOM}' ELSE '${GROUP_ROOM}' END,
                 CASE WHEN key LIKE 'directory:%' THEN substr(key, 11) ELSE key END,
                 due_ms
          FROM schedule
          WHERE true
        ON CONFLICT (room, key) DO UPDATE SET due_ms = excluded.due_ms;
        DROP TABLE schedule;
      `);
    },
  },
];

type GroupRow = {
  group_id: string;
  created_ms: number;
  assignor: string;
  configs: string;
  group_epoch: number;
  target_epoch: number;
  subscription_metadata: string;
  empty_since_ms: number | null;
};
type OffsetRow = { topic: string; partition: number; committed_offset: number; metadata: string; commit_ms: number; topic_id: string };

export class GroupCoordinatorDO extends SqliteDurableObject<Env> implements GroupCoordinatorRpc {
  /** The group, or null when it does not exist (never created, deleted, or expired). */
  #state: GroupState | null = null;
  #topicsCache: { snapshot: TopicsSnapshot; fetchedMs: number } | null = null;
  #topicsInflight: Promise<TopicsSnapshot> | null = null;
  /** Directory push state: what was last pushed, whether a push runs, the last version used. */
  #directoryPushed: string | null = null;
  #directoryPushing = false;
  #directoryVersion = 0;
  /** The group id after the group was deleted (for the directory's tombstone). */
  #lastGroupId: string | null = null;
  /** The last ACL snapshot read (src/auth/cache.ts), for the members' `describe` filter. */
  #acls: AclIndex | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp(
      [
        { room: GROUP_ROOM, migrations: MIGRATIONS },
        { room: DIRECTORY_ROOM, migrations: [] },
      ],
      { adoptLegacy: (v) => ({ [GROUP_ROOM]: v }) },
    );
  }

  protected override onStart(): void {
    this.#state = this.#load();
    if (this.#state !== null) {
      const bad = checkInvariants(this.#state);
      if (bad !== undefined) throw new Error(`group ${this.#state.groupId}: invariant violated after load: ${bad}`);
      // The timers follow from the state: set any that is missing (no write when all are set).
      // The base removes a timer's row before its call, and onTimer awaits the metadata store:
      // a crash there would otherwise leave, e.g., a dead member's session never expiring.
      const s = this.#state;
      this.ctx.storage.transactionSync(() => this.#writeTimers(null, s));
    }
  }

  // ---- RPC ----

  heartbeat(groupId: string, req: HeartbeatInput, principal: string | null = null): Promise<RpcResult<ConsumerGroupHeartbeatResponse>> {
    return expected(async () => {
      const topics = await this.#topics(req.subscribedTopicNames ?? []);
      const mayDescribe = await this.#mayDescribe(principal);
      const now = Date.now();
      const state = this.#stateFor(groupId, now);
      if (!state.ok) return state;
      const r = coreHeartbeat(state.state, req, { nowMs: now, topics, newMemberId: crypto.randomUUID(), principal, mayDescribe });
      if (!r.ok) return r;
      this.#persist(r.state);
      return { ok: true as const, ...r.value, assignment: toWire(r.value.assignment) };
    });
  }

  leave(groupId: string, req: LeaveInput): Promise<RpcResult<LeaveGroupResponse>> {
    return expected(async () => {
      const topics = await this.#topics();
      const mayDescribe = await this.#mayDescribe(null);
      const s = this.#existing(groupId);
      if (s === null) return errorResult("UNKNOWN_MEMBER_ID", `Member ${req.memberId} is not in group ${groupId}.`);
      const r = coreLeave(s, req, { nowMs: Date.now(), topics, mayDescribe });
      if (!r.ok) return r;
      this.#persist(r.state);
      return { ok: true as const, ...r.value };
    });
  }

  commitOffsets(groupId: string, req: CommitInput): Promise<RpcResult<OffsetCommitResponse>> {
    return expected(async () => {
      const topics = await this.#topics(
        req.offsets.map((o) => o.topic),
        req.offsets,
      );
      const now = Date.now();
      const state = this.#stateFor(groupId, now);
      if (!state.ok) return state;
      const r = coreCommit(state.state, req, { nowMs: now, topics });
      if (!r.ok) return r;
      this.#persist(r.state);
      return { ok: true as const, offsets: req.offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset })) };
    });
  }

  fetchOffsets(groupId: string, req: OffsetFetchInput): Promise<RpcResult<OffsetFetchResponse>> {
    return expected(async () => {
      if (!isValidGroupId(groupId)) return errorResult("INVALID_GROUP_ID");
      const topics = await this.#topics((req.topics ?? []).map((t) => t.topic));
      const selected = this.#select(req.topics, topics);
      if (!selected.ok) return selected;
      const bounds = await this.#bounds(selected.partitions, topics);
      // Resolve against the state as it is now (after the awaits).
      const partitions: OffsetFetchPartition[] = selected.partitions.map(({ topic, partition }) => {
        const b = bounds.get(tpKey(topic, partition));
        const committed = this.#state === null ? undefined : committedOffset(this.#state, topic, partition, topics);
        if (b === undefined) {
          return {
            topic,
            partition,
            offset: null,
            committedOffset: committed?.offset ?? null,
            metadata: committed?.metadata ?? null,
            logStartOffset: 0,
            logEndOffset: 0,
            error: { code: "UNKNOWN_TOPIC_OR_PARTITION", message: `Partition ${partition} of ${topic} is not available.` },
          };
        }
        return resolvePosition(topic, partition, committed, b, req.autoOffsetReset);
      });
      return { ok: true as const, groupId, partitions };
    });
  }

  describe(groupId: string): Promise<RpcResult<GroupDescription>> {
    return expected(async () => {
      if (this.#existing(groupId) === null) return errorResult("GROUP_ID_NOT_FOUND", `Group ${groupId} does not exist.`);
      const topics = await this.#topics();
      const before = this.#existing(groupId);
      if (before === null) return errorResult("GROUP_ID_NOT_FOUND", `Group ${groupId} does not exist.`);
      // Partitions to report: every committed one (of the topic's current incarnation) and
      // every partition of the subscribed topics.
      const keys = new Set<string>();
      for (const k of Object.keys(before.offsets)) {
        const { topic, partition } = parseTpKey(k);
        if (committedOffset(before, topic, partition, topics) !== undefined) keys.add(k);
      }
      for (const [topic, meta] of Object.entries(before.subscriptionMetadata)) {
        for (let p = 0; p < meta.partitions; p++) keys.add(tpKey(topic, p));
      }
      const list = [...keys].map(parseTpKey).sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
      const bounds = await this.#bounds(list.slice(0, MAX_DESCRIBE_PARTITIONS), topics);
      const s = this.#existing(groupId);
      if (s === null) return errorResult("GROUP_ID_NOT_FOUND", `Group ${groupId} does not exist.`);
      return { ok: true as const, ...describeGroup(s, list, bounds, topics) };
    });
  }

  resetOffsets(groupId: string, req: ResetOffsetsInput): Promise<RpcResult<ResetOffsetsResponse>> {
    return expected(async () => {
      if (!isValidGroupId(groupId)) return errorResult("INVALID_GROUP_ID");
      const nonEmpty = () => {
        const s = this.#existing(groupId);
        return s !== null && Object.keys(s.members).length > 0
          ? errorResult("NON_EMPTY_GROUP", `Group ${groupId} has members: stop them before resetting offsets.`, { state: groupStateName(s) })
          : null;
      };
      const early = nonEmpty();
      if (early) return early;
      const topics = await this.#topics(req.topics.map((t) => t.topic));
      const selected = this.#select(req.topics, topics);
      if (!selected.ok) return selected;
      const bounds = await this.#bounds(selected.partitions, topics);
      const targets: { topic: string; partition: number; offset: number }[] = [];
      for (const { topic, partition } of selected.partitions) {
        const b = bounds.get(tpKey(topic, partition));
        if (b === undefined) return errorResult("UNAVAILABLE", `Could not read the log bounds of ${topic} partition ${partition}.`);
        let offset: number;
        switch (req.spec.to) {
          case "earliest":
            offset = b.logStartOffset;
            break;
          case "latest":
            offset = b.logEndOffset;
            break;
          case "offset":
            offset = Math.min(Math.max(req.spec.offset, b.logStartOffset), b.logEndOffset);
            break;
          case "timestamp": {
            const meta = topics[topic] as TopicMeta;
            const r = await partitionStub(this.env.PARTITION, meta.topicId, partition).listOffsets({ spec: "timestamp", timestamp: req.spec.timestamp });
            if (!r.ok) return r;
            offset = r.offset ?? b.logEndOffset;
            break;
          }
        }
        targets.push({ topic, partition, offset });
      }
      const late = nonEmpty();
      if (late) return late;
      const now = Date.now();
      const state = this.#stateFor(groupId, now);
      if (!state.ok) return state;
      const offsets = targets.map((t) => ({ ...t, previousOffset: committedOffset(state.state, t.topic, t.partition, topics)?.offset ?? null }));
      if (!req.dryRun) {
        const r = coreReset(state.state, targets, { nowMs: now, topics });
        if (!r.ok) return r;
        this.#persist(r.state);
      }
      return { ok: true as const, groupId, dryRun: req.dryRun, offsets };
    });
  }

  deleteGroup(groupId: string): Promise<RpcResult<object>> {
    return expected(async () => {
      const s = this.#existing(groupId);
      if (s === null) return errorResult("GROUP_ID_NOT_FOUND", `Group ${groupId} does not exist.`);
      const refused = canDelete(s);
      if (refused) return refused;
      this.#destroy();
      return { ok: true as const };
    });
  }

  alterConfigs(groupId: string, configs: Partial<GroupConfigs>): Promise<RpcResult<{ configs: GroupConfigs }>> {
    return expected(async () => {
      const state = this.#stateFor(groupId, Date.now());
      if (!state.ok) return state;
      const next = coreAlterConfigs(state.state, configs);
      this.#persist(next);
      return { ok: true as const, configs: next.configs };
    });
  }

  /** A due timer (the base's sealed alarm calls this; see the header for the rooms). */
  protected override async onTimer(room: string, key: string): Promise<void> {
    if (room === DIRECTORY_ROOM) {
      // A directory push failed (perhaps before an eviction): push again for that group.
      if (this.#state === null) this.#lastGroupId = key;
      this.#directoryPushed = null;
      this.#syncDirectory();
      return;
    }
    if (room !== GROUP_ROOM) throw new Error(`group coordinator: timer of unknown room ${room}`);
    if (this.#state === null) return; // a timer left by a group deleted meanwhile
    let topics: TopicsSnapshot;
    try {
      topics = await this.#topics();
    } catch (err) {
      // Expiry must not wait for the metadata store: without it, targets are recomputed
      // from the metadata of the current subscriptions (no topic changes are seen).
      log.warn("edgelog.group.metadata_unavailable", { where: "timer", error: err });
      topics = this.#state?.subscriptionMetadata ?? {};
    }
    let mayDescribe: MayDescribe;
    try {
      mayDescribe = await this.#mayDescribe(null);
    } catch (err) {
      // Nor for the ACLs: the last snapshot read, else what each principal's members had.
      log.warn("edgelog.group.acls_unavailable", { where: "timer", error: err });
      mayDescribe = this.#acls !== null ? this.#aclPredicate() : lastResolvedFilter(this.#state);
    }
    const s = this.#state;
    if (s === null) return;
    const r = expire(s, { nowMs: Date.now(), topics, mayDescribe });
    if (r.dead) this.#destroy();
    else if (r.state !== s) this.#persist(r.state);
    else this.ctx.storage.transactionSync(() => this.#writeTimers(s, s)); // the fired timer was removed: set it again
  }

  // ---- state ----

  #existing(groupId: string): GroupState | null {
    if (this.#state === null) return null;
    if (this.#state.groupId !== groupId) throw new Error(`group coordinator for ${this.#state.groupId} called for ${groupId}`);
    return this.#state;
  }

  /** The group, created empty (not yet persisted) if it does not exist. */
  #stateFor(groupId: string, nowMs: number): { ok: true; state: GroupState } | ErrorResult {
    if (!isValidGroupId(groupId)) return errorResult("INVALID_GROUP_ID", `Invalid group id ${JSON.stringify(groupId)}.`);
    return { ok: true, state: this.#existing(groupId) ?? newGroup(groupId, nowMs) };
  }

  #load(): GroupState | null {
    const g = this.sql.first<GroupRow>("SELECT * FROM grp WHERE id = 1");
    if (g === undefined) return null;
    const members: Record<string, MemberState> = {};
    for (const r of this.sql.all<{ member_id: string; data: string }>("SELECT member_id, data FROM members")) {
      const m = JSON.parse(r.data) as MemberState;
      // Members stored before the principal filter: unfiltered until their next heartbeat.
      members[r.member_id] = { ...m, principal: m.principal ?? null, resolvedTopics: m.resolvedTopics ?? null };
    }
    const targetAssignment: Record<string, Assignment> = {};
    for (const r of this.sql.all<{ member_id: string; assignment: string }>("SELECT member_id, assignment FROM targets")) {
      targetAssignment[r.member_id] = JSON.parse(r.assignment) as Assignment;
    }
    const offsets: Record<string, CommittedOffset> = {};
    for (const r of this.sql.all<OffsetRow>("SELECT * FROM offsets")) {
      offsets[tpKey(r.topic, r.partition)] = { offset: r.committed_offset, metadata: r.metadata, commitTimestampMs: r.commit_ms, topicId: r.topic_id };
    }
    return {
      groupId: g.group_id,
      createdMs: g.created_ms,
      assignor: g.assignor as AssignorName,
      configs: JSON.parse(g.configs) as GroupConfigs,
      groupEpoch: g.group_epoch,
      targetAssignmentEpoch: g.target_epoch,
      members,
      targetAssignment,
      subscriptionMetadata: JSON.parse(g.subscription_metadata) as Record<string, TopicMeta>,
      offsets,
      emptySinceMs: g.empty_since_ms,
    };
  }

  /**
   * Writes what changed between the current state and `next` in one transaction (the core
   * keeps the identity of unchanged members, targets and offsets), timers included.
   */
  #persist(next: GroupState): void {
    const bad = checkInvariants(next);
    if (bad !== undefined) throw new Error(`group ${next.groupId}: invariant violated, not persisted: ${bad}`);
    const prev = this.#state;
    this.ctx.storage.transactionSync(() => {
      if (
        prev === null ||
        prev.assignor !== next.assignor ||
        prev.configs !== next.configs ||
        prev.groupEpoch !== next.groupEpoch ||
        prev.targetAssignmentEpoch !== next.targetAssignmentEpoch ||
        prev.subscriptionMetadata !== next.subscriptionMetadata ||
        prev.emptySinceMs !== next.emptySinceMs
      ) {
        this.sql.run(
          `INSERT INTO grp (id, group_id, created_ms, assignor, configs, group_epoch, target_epoch, subscription_metadata, empty_since_ms)
           VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET assignor = excluded.assignor, configs = excluded.configs, group_epoch = excluded.group_epoch,
             target_epoch = excluded.target_epoch, subscription_metadata = excluded.subscription_metadata, empty_since_ms = excluded.empty_since_ms`,
          next.groupId,
          next.createdMs,
          next.assignor,
          JSON.stringify(next.configs),
          next.groupEpoch,
          next.targetAssignmentEpoch,
          JSON.stringify(next.subscriptionMetadata),
          next.emptySinceMs,
        );
      }
      diff(prev?.members ?? {}, next.members, (id, m) => {
        if (m === undefined) this.sql.run("DELETE FROM members WHERE member_id = ?", id);
        else this.sql.run("INSERT INTO members (member_id, data) VALUES (?, ?) ON CONFLICT (member_id) DO UPDATE SET data = excluded.data", id, JSON.stringify(m));
      });
      diff(prev?.targetAssignment ?? {}, next.targetAssignment, (id, a) => {
        if (a === undefined) this.sql.run("DELETE FROM targets WHERE member_id = ?", id);
        else this.sql.run("INSERT INTO targets (member_id, assignment) VALUES (?, ?) ON CONFLICT (member_id) DO UPDATE SET assignment = excluded.assignment", id, JSON.stringify(a));
      });
      if (prev?.offsets !== next.offsets) {
        diff(prev?.offsets ?? {}, next.offsets, (k, o) => {
          const { topic, partition } = parseTpKey(k);
          if (o === undefined) this.sql.run("DELETE FROM offsets WHERE topic = ? AND partition = ?", topic, partition);
          else {
            this.sql.run(
              `INSERT INTO offsets (topic, partition, committed_offset, metadata, commit_ms, topic_id) VALUES (?, ?, ?, ?, ?, ?)
               ON CONFLICT (topic, partition) DO UPDATE SET committed_offset = excluded.committed_offset, metadata = excluded.metadata,
                 commit_ms = excluded.commit_ms, topic_id = excluded.topic_id`,
              topic,
              partition,
              o.offset,
              o.metadata,
              o.commitTimestampMs,
              o.topicId,
            );
          }
        });
      }
      this.#writeTimers(prev, next);
    });
    this.#state = next;
    this.#syncDirectory();
  }

  /** Removes the group: every row and every timer (the schema stays); pushes the tombstone. */
  #destroy(): void {
    this.#lastGroupId = this.#state?.groupId ?? this.#lastGroupId;
    this.ctx.storage.transactionSync(() => {
      for (const t of ["grp", "members", "targets", "offsets"]) this.sql.run(`DELETE FROM ${t}`);
      this.timers(GROUP_ROOM).clearAll();
      this.timers(DIRECTORY_ROOM).clearAll();
    });
    this.#state = null;
    this.#syncDirectory();
  }

  /**
   * Brings the group room's timers from the core's timers of `prev` to those of `next`: sets
   * each of `next` (a no-op when unchanged), clears those only `prev` had.
   */
  #writeTimers(prev: GroupState | null, next: GroupState): void {
    const t = this.timers(GROUP_ROOM);
    const want = new Set<string>();
    for (const { key, dueMs } of timers(next)) {
      want.add(key);
      t.set(key, dueMs);
    }
    if (prev !== null) for (const { key } of timers(prev)) if (!want.has(key)) t.clear(key);
  }

  // ---- directory ----

  #listing(): GroupListing | null {
    const s = this.#state;
    if (s === null) return null;
    return { groupId: s.groupId, state: groupStateName(s), assignor: s.assignor, members: Object.keys(s.members).length };
  }

  /**
   * Pushes the group's listing to the directory when it changed, in the background, one push
   * at a time (the latest listing wins). A failed push is retried from the `directory` timer.
   */
  #syncDirectory(): void {
    if (this.#directoryPushing) return;
    const groupId = this.#state?.groupId ?? this.#lastGroupId;
    if (this.#state !== null) this.#lastGroupId = this.#state.groupId;
    if (groupId === null) return;
    const listing = this.#listing();
    const key = JSON.stringify(listing);
    if (key === this.#directoryPushed) return;
    this.#directoryPushing = true;
    // Versions: strictly increasing per group, also across restarts and re-creation (µs clock).
    const version = (this.#directoryVersion = Math.max(this.#directoryVersion + 1, Date.now() * 1000));
    const dir = groupDirectoryStub(this.env);
    void (async () => {
      try {
        const r = listing === null ? await dir.remove(groupId, version) : await dir.upsert(listing, version);
        if (!r.ok) throw new Error(`directory answered ${r.code}`);
        this.#directoryPushed = key;
        this.#directoryPushing = false;
        this.timers(DIRECTORY_ROOM).clear(groupId);
        this.#syncDirectory(); // something may have changed meanwhile
      } catch (err) {
        log.warn("edgelog.group.directory_push_failed", { group: groupId, retryMs: DIRECTORY_RETRY_MS, error: err });
        this.#directoryPushing = false;
        this.timers(DIRECTORY_ROOM).set(groupId, Date.now() + DIRECTORY_RETRY_MS);
      }
    })();
  }

  // ---- other objects ----

  /**
   * The `describe` filter of members with a principal (KIP-848: a subscription resolves only
   * to topics the member may describe), over the same ACL snapshot the gateway uses: the
   * per-isolate cache of src/auth/cache.ts, read again at most every SECURITY_CACHE_TTL_MS
   * (5 s). It is read only when some member (or `caller`) has a principal, i.e. with auth on.
   * @throws EdgelogError (UNAVAILABLE) when the snapshot cannot be read: fail closed.
   */
  async #mayDescribe(caller: string | null): Promise<MayDescribe> {
    const s = this.#state;
    const needed = caller !== null || (s !== null && Object.values(s.members).some((m) => m.principal !== null));
    if (needed) this.#acls = (await securitySnapshot(this.env)).acls;
    // Reads #acls when called: a member with a principal that joined during the await was
    // joined by a call that read a snapshot first.
    return this.#aclPredicate();
  }

  #aclPredicate(): MayDescribe {
    return (principal, topic) => this.#acls?.decide(principal, { type: "topic", name: topic }, "describe", NO_SUPERUSERS) ?? false;
  }

  /**
   * Every existing topic (name -> id, partition count), cached for TOPICS_SNAPSHOT_TTL_MS.
   * Refreshed early when a call names a topic (or partition) the cached list lacks, since it
   * may have just been created.
   */
  async #topics(names: readonly string[] = [], partitions: readonly { topic: string; partition: number }[] = []): Promise<TopicsSnapshot> {
    const now = Date.now();
    const c = this.#topicsCache;
    if (c !== null) {
      const age = now - c.fetchedMs;
      const covers = names.every((n) => c.snapshot[n] !== undefined) && partitions.every((p) => (c.snapshot[p.topic]?.partitions ?? 0) > p.partition);
      if (age < TOPICS_MIN_REFRESH_MS || (age < TOPICS_SNAPSHOT_TTL_MS && covers)) return c.snapshot;
    }
    if (this.#topicsInflight === null) {
      this.#topicsInflight = (async () => {
        try {
          const r = await metadataStore(this.env).listTopics();
          if (!r.ok) throw new Error(`metadata store answered ${r.code}`);
          const snapshot: Record<string, TopicMeta> = {};
          for (const t of r.topics) snapshot[t.name] = { topicId: t.topicId, partitions: t.partitions };
          this.#topicsCache = { snapshot, fetchedMs: Date.now() };
          return snapshot;
        } finally {
          this.#topicsInflight = null;
        }
      })();
    }
    return this.#topicsInflight;
  }

  /** The partitions a selection names (null = every committed partition), checked against the topics. */
  #select(sel: TopicSelection | null, topics: TopicsSnapshot): { ok: true; partitions: { topic: string; partition: number }[] } | ErrorResult {
    const out: { topic: string; partition: number }[] = [];
    if (sel === null) {
      const s = this.#state;
      if (s !== null) {
        for (const k of Object.keys(s.offsets).sort()) {
          const { topic, partition } = parseTpKey(k);
          if (committedOffset(s, topic, partition, topics) !== undefined && topics[topic] !== undefined) out.push({ topic, partition });
        }
      }
    } else {
      for (const { topic, partitions } of sel) {
        const meta = topics[topic];
        if (meta === undefined) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", `Topic ${topic} does not exist.`, { topic });
        for (const partition of partitions ?? Array.from({ length: meta.partitions }, (_, i) => i)) {
          if (partition >= meta.partitions) return errorResult("UNKNOWN_TOPIC_OR_PARTITION", `Topic ${topic} has no partition ${partition}.`, { topic, partition });
          out.push({ topic, partition });
        }
      }
    }
    if (out.length > MAX_PARTITIONS_PER_OFFSET_REQUEST) {
      return errorResult("INVALID_REQUEST", `At most ${MAX_PARTITIONS_PER_OFFSET_REQUEST} partitions per request; name the topics and partitions wanted.`);
    }
    return { ok: true, partitions: out };
  }

  /** Log bounds of partitions (missing when the partition is gone or failed). */
  async #bounds(partitions: readonly { topic: string; partition: number }[], topics: TopicsSnapshot): Promise<Map<string, PartitionDescription>> {
    const out = new Map<string, PartitionDescription>();
    await Promise.all(
      partitions.map(async ({ topic, partition }) => {
        const meta = topics[topic];
        if (meta === undefined) return;
        try {
          const r = await partitionStub(this.env.PARTITION, meta.topicId, partition).describe();
          if (r.ok) out.set(tpKey(topic, partition), r.partition);
        } catch (err) {
          log.warn("edgelog.group.log_bounds_unavailable", { topic, partition, error: err });
        }
      }),
    );
    return out;
  }
}

/** Calls `write` for every key whose value changed by identity (undefined = removed). */
function diff<T>(prev: Readonly<Record<string, T>>, next: Readonly<Record<string, T>>, write: (key: string, value: T | undefined) => void): void {
  if (prev === next) return;
  for (const [k, v] of Object.entries(next)) if (prev[k] !== v) write(k, v);
  for (const k of Object.keys(prev)) if (!(k in next)) write(k, undefined);
}

function describeGroup(
  s: GroupState,
  partitions: readonly { topic: string; partition: number }[],
  bounds: ReadonlyMap<string, PartitionDescription>,
  topics: TopicsSnapshot,
): GroupDescription {
  const owners = partitionOwners(s);
  let totalLag = 0;
  const offsets: GroupPartitionOffset[] = partitions.map(({ topic, partition }) => {
    const k = tpKey(topic, partition);
    const c = committedOffset(s, topic, partition, topics);
    const b = bounds.get(k);
    const lag = c !== undefined && b !== undefined ? Math.max(0, b.logEndOffset - c.offset) : null;
    if (lag !== null) totalLag += lag;
    return {
      topic,
      partition,
      committedOffset: c?.offset ?? null,
      metadata: c?.metadata ?? null,
      memberId: owners.get(k) ?? null,
      logStartOffset: b?.logStartOffset ?? null,
      logEndOffset: b?.logEndOffset ?? null,
      lag,
    };
  });
  const members = Object.values(s.members)
    .sort((a, b) => a.joinedMs - b.joinedMs || (a.memberId < b.memberId ? -1 : 1))
    .map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      clientId: m.clientId,
      memberEpoch: m.memberEpoch,
      state: m.state,
      leftTemporarily: m.leftTemporarily,
      subscribedTopicNames: [...m.subscribedTopicNames],
      subscribedTopicRegex: m.subscribedTopicRegex,
      assignment: toWire(m.assigned),
      pendingRevocation: toWire(m.pendingRevocation),
      targetAssignment: toWire(s.targetAssignment[m.memberId] ?? {}),
      sessionTimeoutMs: m.sessionTimeoutMs,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      lastHeartbeatMs: m.lastHeartbeatMs,
    }));
  return {
    groupId: s.groupId,
    state: groupStateName(s),
    assignor: s.assignor,
    rebalanceProtocol: rebalanceProtocolOf(s.assignor),
    groupEpoch: s.groupEpoch,
    targetAssignmentEpoch: s.targetAssignmentEpoch,
    configs: s.configs,
    members,
    offsets,
    totalLag,
  };
}
