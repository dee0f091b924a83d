/**
 * The consumer group coordinator state machine (pure: no I/O, no clock, no randomness).
 *
 * Modelled on Kafka's KIP-848 group coordinator ("next generation" rebalance protocol):
 * - The **group epoch** bumps whenever membership, a subscription or the metadata of a
 *   subscribed topic changes. The **target assignment** is recomputed by the group's assignor
 *   at once and stamped with the group epoch (the target assignment epoch).
 * - Each member converges to its target on its own heartbeats. Its **member epoch** moves to
 *   the target epoch only once it has revoked every partition it must give up; until then it
 *   keeps its old epoch (and may still commit the partitions it is revoking).
 * - A partition is given to a member only when no other member holds it, i.e. when the
 *   previous owner's heartbeat showed it released the partition, or that owner left or its
 *   session (or rebalance) timeout expired. So a partition never has two owners.
 * - Eager assignors (range, roundrobin, sticky) make a member revoke all its partitions before
 *   it moves to a new target; cooperative-sticky revokes only the moved ones (KIP-429).
 *
 * Everything that varies comes in through the arguments: the time (`nowMs`), the topic
 * metadata snapshot and a fresh member id. States are immutable; an operation returns a new
 * state in which unchanged members, targets and offsets keep their object identity, so the
 * Durable Object shell can persist only what changed by comparing references.
 *
 * Expected failures come back as {@link ErrorResult}s with the shared error codes.
 */
import { type ErrorResult, errorResult } from "../protocol/errors.ts";
import {
  type AssignorName,
  type GroupConfigs,
  type OffsetFetchPartition,
  type GroupStateName,
  type MemberReconcileState,
  DEFAULT_ASSIGNOR,
  DEFAULT_GROUP_CONFIGS,
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  LEAVE_MEMBER_EPOCH,
  LEAVE_STATIC_MEMBER_EPOCH,
  MAX_GROUP_MEMBERS,
  rebalanceProtocolOf,
} from "../protocol/groups.ts";
import { type Assignment, EMPTY_ASSIGNMENT, assignmentOf, contains, equals, intersect, isEmpty, keysOf, minus, partitionsOf, tpKey, union } from "./assignment.ts";
import { ASSIGNORS } from "./assignors.ts";
import { type SubscriptionRegex, compileSubscriptionRegex } from "./subscription-regex.ts";

// ---------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------

/** What the coordinator knows of a topic: its id (a recreated topic gets a new one) and partition count. */
export interface TopicMeta {
  topicId: string;
  partitions: number;
}

/** Every existing topic by full name `tenant/namespace/topic`. */
export type TopicsSnapshot = Readonly<Record<string, TopicMeta>>;

export interface MemberState {
  readonly memberId: string;
  readonly instanceId: string | null;
  readonly clientId: string;
  /** The member's epoch; it equals the target epoch once the member has reconciled. */
  readonly memberEpoch: number;
  /** The epoch before the last bump: a member whose response was lost may still send it. */
  readonly previousMemberEpoch: number;
  readonly state: MemberReconcileState;
  /** Full topic names, sorted. */
  readonly subscribedTopicNames: readonly string[];
  readonly subscribedTopicRegex: string | null;
  /** Partitions the member may own now. */
  readonly assigned: Assignment;
  /** Partitions the member must revoke; still its own (nobody else gets them) until released. */
  readonly pendingRevocation: Assignment;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly lastHeartbeatMs: number;
  /** When the member was asked to revoke partitions (rebalance timeout base); null when none pending. */
  readonly revocationStartedMs: number | null;
  /** A static member that left temporarily (Kafka epoch -2): its partitions stay reserved. */
  readonly leftTemporarily: boolean;
  readonly joinedMs: number;
  /**
   * The authenticated principal of the member's last heartbeat, whose topic `describe`
   * permission filters its subscription; null when unfiltered (auth off, or a superuser).
   * Members stored before this field existed load as null until their next heartbeat.
   */
  readonly principal: string | null;
  /**
   * The topics the subscription resolved to at the last target computation (names and regex,
   * existing and describable), sorted; null before the first one. A change bumps the group
   * epoch even when the group's subscription metadata does not change (an ACL granted or
   * revoked for one member of a mixed group).
   */
  readonly resolvedTopics: readonly string[] | null;
}

/** A committed offset: the next offset the group will read. */
export interface CommittedOffset {
  readonly offset: number;
  readonly metadata: string;
  readonly commitTimestampMs: number;
  /** Id of the topic when committed: offsets of a deleted-and-recreated topic do not apply. */
  readonly topicId: string;
}

export interface GroupState {
  readonly groupId: string;
  readonly createdMs: number;
  readonly assignor: AssignorName;
  readonly configs: GroupConfigs;
  readonly groupEpoch: number;
  readonly targetAssignmentEpoch: number;
  readonly members: Readonly<Record<string, MemberState>>;
  /** memberId -> target assignment at the target assignment epoch. */
  readonly targetAssignment: Readonly<Record<string, Assignment>>;
  /** Metadata of the subscribed topics the current target was computed from. */
  readonly subscriptionMetadata: Readonly<Record<string, TopicMeta>>;
  /** tpKey(topic, partition) -> committed offset. */
  readonly offsets: Readonly<Record<string, CommittedOffset>>;
  /** When the group last became empty (null while it has members). */
  readonly emptySinceMs: number | null;
}

/** A fresh group with no members and no offsets. */
export function newGroup(groupId: string, nowMs: number): GroupState {
  return {
    groupId,
    createdMs: nowMs,
    assignor: DEFAULT_ASSIGNOR,
    configs: { ...DEFAULT_GROUP_CONFIGS },
    groupEpoch: 0,
    targetAssignmentEpoch: 0,
    members: {},
    targetAssignment: {},
    subscriptionMetadata: {},
    offsets: {},
    emptySinceMs: nowMs,
  };
}

/**
 * Whether `principal` may DESCRIBE `topic` (the shell evaluates the ACL snapshot). Kafka
 * (KIP-848) resolves a member's subscription only against the topics its principal may
 * describe, so a member is never assigned, nor told the partition count of, a topic it cannot see.
 */
export type MayDescribe = (principal: string, topic: string) => boolean;

/** Inputs that vary per call. */
export interface CoreContext {
  nowMs: number;
  /** Metadata of every existing topic (for regex subscriptions and partition counts). */
  topics: TopicsSnapshot;
  /** A fresh unique member id, used if this call creates a member. */
  newMemberId?: string;
  /**
   * The topic filter of members with a principal. Absent: such members resolve to no topic
   * (fail closed); members without a principal are never filtered.
   */
  mayDescribe?: MayDescribe;
  /** Heartbeat only: the caller's principal (null or absent = unfiltered: auth off or a superuser). */
  principal?: string | null;
}

export type CoreResult<T> = { ok: true; state: GroupState; value: T } | ErrorResult;

// ---------------------------------------------------------------------------------------
// Heartbeat
// ---------------------------------------------------------------------------------------

/** A validated heartbeat (src/groups/requests.ts builds it from the wire form). */
export interface HeartbeatInput {
  memberId: string | null;
  /** 0 = join / rejoin; > 0 = the epoch last answered. */
  memberEpoch: number;
  instanceId: string | null;
  /** Full topic names; null = unchanged. */
  subscribedTopicNames: readonly string[] | null;
  /** null = unchanged; "" = no regex. */
  subscribedTopicRegex: string | null;
  /** null = unchanged. */
  ownedPartitions: Assignment | null;
  sessionTimeoutMs: number | null;
  rebalanceTimeoutMs: number | null;
  assignor: AssignorName | null;
  clientId: string | null;
}

export interface HeartbeatOutput {
  memberId: string;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  assignment: Assignment;
  assignor: AssignorName;
  state: MemberReconcileState;
}

export function heartbeat(state: GroupState, req: HeartbeatInput, ctx: CoreContext): CoreResult<HeartbeatOutput> {
  const now = ctx.nowMs;
  let s = state;
  let bump = false;
  let member: MemberState;

  if (req.memberEpoch === 0) {
    const existing = req.memberId !== null ? s.members[req.memberId] : undefined;
    // The group's assignor can only change while nobody else is in the group.
    if (req.assignor !== null && req.assignor !== s.assignor) {
      const others = Object.keys(s.members).filter((id) => id !== existing?.memberId).length;
      if (others > 0) {
        return errorResult("INCONSISTENT_GROUP_PROTOCOL", `Group ${s.groupId} uses the ${s.assignor} assignor, not ${req.assignor}.`, {
          assignor: s.assignor,
        });
      }
      s = { ...s, assignor: req.assignor };
      bump = true;
    }
    const staticPredecessor = req.instanceId === null ? undefined : Object.values(s.members).find((m) => m.instanceId === req.instanceId && m.memberId !== req.memberId);

    if (existing !== undefined) {
      // Rejoin after FENCED_MEMBER_EPOCH (or a retried join): the member has released
      // everything it owned (KIP-848), so it starts from an empty current assignment.
      if (existing.instanceId !== req.instanceId) {
        return errorResult("INVALID_REQUEST", "A member cannot change its instanceId; join with a new member id.");
      }
      member = {
        ...existing,
        memberEpoch: 0,
        previousMemberEpoch: existing.memberEpoch,
        assigned: EMPTY_ASSIGNMENT,
        pendingRevocation: EMPTY_ASSIGNMENT,
        state: "stable",
        revocationStartedMs: null,
        leftTemporarily: false,
      };
    } else if (staticPredecessor !== undefined) {
      // Static membership: a restarted instance replaces its predecessor and inherits its
      // epoch and assignment, without a rebalance. Kafka's KIP-848 coordinator answers
      // UNRELEASED_INSTANCE_ID unless the predecessor left with epoch -2; like the classic
      // protocol (KIP-345) we also let a crashed instance be replaced within its session
      // timeout, which is what a quick restart after a crash needs. The predecessor is fenced
      // (its member id becomes unknown) and its partitions pass to the new member id.
      const memberId = req.memberId ?? ctx.newMemberId;
      if (memberId === undefined) throw new Error("heartbeat: ctx.newMemberId is required to create a member");
      member = {
        ...staticPredecessor,
        memberId,
        // The new process owns nothing yet: partitions being revoked are released now.
        pendingRevocation: EMPTY_ASSIGNMENT,
        revocationStartedMs: null,
        leftTemporarily: false,
        previousMemberEpoch: staticPredecessor.memberEpoch,
      };
      const members = { ...s.members };
      delete members[staticPredecessor.memberId];
      const targetAssignment = { ...s.targetAssignment };
      const target = targetAssignment[staticPredecessor.memberId];
      delete targetAssignment[staticPredecessor.memberId];
      if (target !== undefined) targetAssignment[memberId] = target;
      s = { ...s, members, targetAssignment };
    } else {
      if (Object.keys(s.members).length >= MAX_GROUP_MEMBERS) {
        return errorResult("GROUP_MAX_SIZE_REACHED", `Group ${s.groupId} already has ${MAX_GROUP_MEMBERS} members.`);
      }
      const memberId = req.memberId ?? ctx.newMemberId;
      if (memberId === undefined) throw new Error("heartbeat: ctx.newMemberId is required to create a member");
      if (req.subscribedTopicNames === null && (req.subscribedTopicRegex === null || req.subscribedTopicRegex === "")) {
        return errorResult("INVALID_REQUEST", "A joining member must send subscribedTopicNames or subscribedTopicRegex.");
      }
      member = {
        memberId,
        instanceId: req.instanceId,
        clientId: req.clientId ?? "",
        memberEpoch: 0,
        previousMemberEpoch: -1,
        state: "stable",
        subscribedTopicNames: [],
        subscribedTopicRegex: null,
        assigned: EMPTY_ASSIGNMENT,
        pendingRevocation: EMPTY_ASSIGNMENT,
        sessionTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS,
        rebalanceTimeoutMs: DEFAULT_REBALANCE_TIMEOUT_MS,
        lastHeartbeatMs: now,
        revocationStartedMs: null,
        leftTemporarily: false,
        joinedMs: now,
        principal: null,
        resolvedTopics: null,
      };
      bump = true;
    }
  } else if (req.memberEpoch > 0) {
    const existing = req.memberId !== null ? s.members[req.memberId] : undefined;
    if (existing === undefined) {
      return errorResult("UNKNOWN_MEMBER_ID", `Member ${req.memberId ?? "(none)"} is not in group ${s.groupId}: rejoin with memberEpoch 0.`);
    }
    const fenced = checkMemberEpoch(existing, req.memberEpoch, req.ownedPartitions);
    if (fenced) return fenced;
    member = existing;
  } else {
    return errorResult("INVALID_REQUEST", "memberEpoch must be 0 (join) or the member's current epoch; leave with POST .../leave.");
  }

  // Subscription and settings.
  let m: MemberState = { ...member, lastHeartbeatMs: now };
  if (req.subscribedTopicNames !== null) {
    const names = [...new Set(req.subscribedTopicNames)].sort();
    if (!sameStrings(names, m.subscribedTopicNames)) {
      m = { ...m, subscribedTopicNames: names };
      bump = true;
    }
  }
  if (req.subscribedTopicRegex !== null) {
    const regex = req.subscribedTopicRegex === "" ? null : req.subscribedTopicRegex;
    if (regex !== m.subscribedTopicRegex) {
      m = { ...m, subscribedTopicRegex: regex };
      bump = true;
    }
  }
  if (req.sessionTimeoutMs !== null) m = { ...m, sessionTimeoutMs: req.sessionTimeoutMs };
  if (req.rebalanceTimeoutMs !== null) m = { ...m, rebalanceTimeoutMs: req.rebalanceTimeoutMs };
  if (req.clientId !== null) m = { ...m, clientId: req.clientId };
  // The principal follows the member's latest heartbeat; what it may see is re-resolved below.
  // A new principal (a superuser's token, auth turned on or off) changes the filter: bump, so
  // the target follows even for a member stored before resolvedTopics existed.
  const principal = ctx.principal ?? null;
  if (principal !== (m.principal ?? null)) {
    m = { ...m, principal };
    bump = true;
  }
  s = { ...s, members: { ...s.members, [m.memberId]: m }, emptySinceMs: null };

  s = refreshTarget(s, ctx, bump);
  m = reconcile(s, s.members[m.memberId] as MemberState, req.ownedPartitions, now);
  s = { ...s, members: { ...s.members, [m.memberId]: m } };

  return {
    ok: true,
    state: s,
    value: {
      memberId: m.memberId,
      memberEpoch: m.memberEpoch,
      heartbeatIntervalMs: heartbeatIntervalMs(s, m),
      assignment: m.assigned,
      assignor: s.assignor,
      state: m.state,
    },
  };
}

/**
 * KIP-848's epoch check: the epoch must be the member's current one, or its previous one
 * when the member evidently missed the last answer (it owns nothing beyond its current
 * assignment).
 */
function checkMemberEpoch(m: MemberState, epoch: number, owned: Assignment | null): ErrorResult | undefined {
  if (m.leftTemporarily) {
    return errorResult("FENCED_MEMBER_EPOCH", `Member ${m.memberId} left the group: rejoin with memberEpoch 0.`, { memberEpoch: LEAVE_STATIC_MEMBER_EPOCH });
  }
  if (epoch === m.memberEpoch) return undefined;
  if (epoch === m.previousMemberEpoch && owned !== null && isEmpty(minus(owned, m.assigned))) return undefined;
  return errorResult("FENCED_MEMBER_EPOCH", `Member epoch ${epoch} is not member ${m.memberId}'s current epoch ${m.memberEpoch}: release all partitions and rejoin with memberEpoch 0.`, {
    memberEpoch: m.memberEpoch,
  });
}

export function heartbeatIntervalMs(s: GroupState, m: MemberState): number {
  return Math.max(10, Math.min(s.configs["heartbeat.interval.ms"], Math.floor(m.sessionTimeoutMs / 3)));
}

// ---------------------------------------------------------------------------------------
// Target assignment
// ---------------------------------------------------------------------------------------

const DEFAULT_PREFIX = "public/default/";

/**
 * The existing topics a member subscribes to, by name or regex, sorted. A member with a
 * principal gets only the topics `mayDescribe` allows it (none without a predicate), as
 * Kafka resolves a KIP-848 regex against the topics the member may describe; names are
 * filtered too, so a revoked `describe` also takes a named topic away.
 */
export function resolveSubscription(m: MemberState, topics: TopicsSnapshot, mayDescribe?: MayDescribe): string[] {
  const principal = m.principal ?? null;
  const visible = (t: string) => principal === null || (mayDescribe?.(principal, t) ?? false);
  const out = new Set<string>();
  for (const t of m.subscribedTopicNames) if (topics[t] !== undefined && visible(t)) out.add(t);
  if (m.subscribedTopicRegex !== null) {
    // Validated at the gateway; a stored pattern that no longer compiles (a limit lowered since)
    // subscribes to nothing rather than failing every heartbeat of the group.
    let re: SubscriptionRegex | null = null;
    try {
      re = compileSubscriptionRegex(m.subscribedTopicRegex);
    } catch {
      re = null;
    }
    if (re !== null) {
      for (const t of Object.keys(topics)) {
        if ((re.matches(t) || (t.startsWith(DEFAULT_PREFIX) && re.matches(t.slice(DEFAULT_PREFIX.length)))) && visible(t)) out.add(t);
      }
    }
  }
  return [...out].sort();
}

/**
 * A `describe` filter from the state alone, for when the ACLs cannot be read (the shell's
 * timers): a principal keeps the topics its members last resolved to, and gains none.
 */
export function lastResolvedFilter(s: GroupState | null): MayDescribe {
  const seen = new Map<string, Set<string>>();
  for (const m of Object.values(s?.members ?? {})) {
    if (m.principal === null) continue;
    let set = seen.get(m.principal);
    if (set === undefined) seen.set(m.principal, (set = new Set()));
    for (const t of m.resolvedTopics ?? []) set.add(t);
  }
  return (principal, topic) => seen.get(principal)?.has(topic) ?? false;
}

function sameMeta(a: Readonly<Record<string, TopicMeta>>, b: Readonly<Record<string, TopicMeta>>): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  if (!sameStrings(ka, kb)) return false;
  return ka.every((k) => a[k]?.topicId === b[k]?.topicId && a[k]?.partitions === b[k]?.partitions);
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Bumps the group epoch when asked to, when the metadata of the subscribed topics changed
 * (more partitions, a new topic matching a regex, a deleted or recreated topic) or when a
 * member's resolved topics changed (its principal was granted or refused `describe`), and
 * then recomputes the target assignment.
 */
function refreshTarget(s: GroupState, ctx: CoreContext, bump: boolean): GroupState {
  const { topics } = ctx;
  const resolved = new Map<string, string[]>();
  const meta: Record<string, TopicMeta> = {};
  let members: Record<string, MemberState> | null = null;
  for (const m of Object.values(s.members)) {
    const ts = resolveSubscription(m, topics, ctx.mayDescribe);
    resolved.set(m.memberId, ts);
    for (const t of ts) meta[t] = { ...(topics[t] as TopicMeta) };
    const before = m.resolvedTopics ?? null;
    if (before === null || !sameStrings(before, ts)) {
      // The first resolution (a new member, or one stored before this field) bumps only if
      // something else does; a later change is a subscription change.
      if (before !== null) bump = true;
      members ??= { ...s.members };
      members[m.memberId] = { ...m, resolvedTopics: ts };
    }
  }
  let next = members === null ? s : { ...s, members };
  if (!sameMeta(meta, s.subscriptionMetadata)) {
    next = { ...next, subscriptionMetadata: meta };
    bump = true;
  }
  if (bump) next = { ...next, groupEpoch: next.groupEpoch + 1 };
  if (next.groupEpoch === next.targetAssignmentEpoch) return next;

  const partitionCounts: Record<string, number> = {};
  for (const [t, tm] of Object.entries(next.subscriptionMetadata)) partitionCounts[t] = tm.partitions;
  const computed = ASSIGNORS[next.assignor].assign({
    members: Object.values(next.members).map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      topics: resolved.get(m.memberId) ?? [],
      current: next.targetAssignment[m.memberId] ?? EMPTY_ASSIGNMENT,
    })),
    partitionCounts,
  });
  const targetAssignment: Record<string, Assignment> = {};
  for (const [memberId, a] of Object.entries(computed)) {
    const prev = next.targetAssignment[memberId];
    targetAssignment[memberId] = prev !== undefined && equals(prev, a) ? prev : a;
  }
  return { ...next, targetAssignment, targetAssignmentEpoch: next.groupEpoch };
}

// ---------------------------------------------------------------------------------------
// Reconciliation (Kafka's CurrentAssignmentBuilder)
// ---------------------------------------------------------------------------------------

/** Partitions held (assigned or pending revocation) by members other than `except`. */
function heldByOthers(s: GroupState, except: string): Set<string> {
  const held = new Set<string>();
  for (const m of Object.values(s.members)) {
    if (m.memberId === except) continue;
    for (const k of keysOf(m.assigned)) held.add(k);
    for (const k of keysOf(m.pendingRevocation)) held.add(k);
  }
  return held;
}

/**
 * Moves one member towards its target.
 * @param owned what the member reports it owns (null = unchanged): partitions pending
 *   revocation that it no longer reports are released.
 */
function reconcile(s: GroupState, m: MemberState, owned: Assignment | null, now: number): MemberState {
  const target = s.targetAssignment[m.memberId] ?? EMPTY_ASSIGNMENT;
  let assigned = m.assigned;
  let pending = owned !== null ? intersect(m.pendingRevocation, owned) : m.pendingRevocation;
  let epoch = m.memberEpoch;
  let previous = m.previousMemberEpoch;
  let revocationStartedMs = m.revocationStartedMs;

  if (epoch !== s.targetAssignmentEpoch) {
    const held = union(assigned, pending);
    // Eager protocol: every partition is revoked before the new assignment (Kafka's classic
    // eager rebalance). Cooperative: only the partitions that move away (KIP-429).
    const revoke = rebalanceProtocolOf(s.assignor) === "eager" ? held : minus(held, target);
    assigned = minus(held, revoke);
    // A partition the member does not report owning is already released.
    pending = owned !== null ? intersect(revoke, owned) : revoke;
    if (!isEmpty(pending)) {
      return finishMember(m, { assigned, pending, epoch, previous, state: "unrevoked_partitions", revocationStartedMs: revocationStartedMs ?? now });
    }
    previous = epoch;
    epoch = s.targetAssignmentEpoch;
    revocationStartedMs = null;
  } else if (!isEmpty(pending)) {
    return finishMember(m, { assigned, pending, epoch, previous, state: "unrevoked_partitions", revocationStartedMs: revocationStartedMs ?? now });
  }

  // At the target epoch: take the target partitions that nobody else holds any more.
  const others = heldByOthers(s, m.memberId);
  const free = [...partitionsOf(minus(target, assigned))].filter((p) => !others.has(tpKey(p.topic, p.partition)));
  if (free.length > 0) assigned = union(assigned, assignmentOf(free));
  const state: MemberReconcileState = equals(assigned, target) ? "stable" : "unreleased_partitions";
  return finishMember(m, { assigned, pending: EMPTY_ASSIGNMENT, epoch, previous, state, revocationStartedMs: null });
}

function finishMember(
  m: MemberState,
  n: { assigned: Assignment; pending: Assignment; epoch: number; previous: number; state: MemberReconcileState; revocationStartedMs: number | null },
): MemberState {
  const same =
    m.memberEpoch === n.epoch &&
    m.previousMemberEpoch === n.previous &&
    m.state === n.state &&
    m.revocationStartedMs === n.revocationStartedMs &&
    equals(m.assigned, n.assigned) &&
    equals(m.pendingRevocation, n.pending);
  if (same) return m;
  return {
    ...m,
    assigned: equals(m.assigned, n.assigned) ? m.assigned : n.assigned,
    pendingRevocation: equals(m.pendingRevocation, n.pending) ? m.pendingRevocation : n.pending,
    memberEpoch: n.epoch,
    previousMemberEpoch: n.previous,
    state: n.state,
    revocationStartedMs: n.revocationStartedMs,
  };
}

// ---------------------------------------------------------------------------------------
// Leave, expiry, timers
// ---------------------------------------------------------------------------------------

export interface LeaveInput {
  memberId: string;
  memberEpoch: number;
  /** Static members only: keep the partitions reserved until the session expires. */
  temporary: boolean;
}

export interface LeaveOutput {
  memberId: string;
  memberEpoch: number;
}

export function leave(state: GroupState, req: LeaveInput, ctx: CoreContext): CoreResult<LeaveOutput> {
  const m = state.members[req.memberId];
  if (m === undefined) return errorResult("UNKNOWN_MEMBER_ID", `Member ${req.memberId} is not in group ${state.groupId}.`);
  if (m.leftTemporarily) {
    // Already gone for now: a repeated temporary leave is a no-op; a permanent one removes it.
    if (req.temporary) return { ok: true, state, value: { memberId: m.memberId, memberEpoch: LEAVE_STATIC_MEMBER_EPOCH } };
  } else {
    const fenced = checkMemberEpoch(m, req.memberEpoch, null);
    if (fenced && !(req.memberEpoch === m.previousMemberEpoch)) return fenced;
  }
  if (req.temporary) {
    if (m.instanceId === null) return errorResult("INVALID_REQUEST", "Only static members (with an instanceId) can leave temporarily.");
    // The process stopped, so what it was revoking is released; its assignment stays reserved.
    const left: MemberState = { ...m, leftTemporarily: true, pendingRevocation: EMPTY_ASSIGNMENT, revocationStartedMs: null, lastHeartbeatMs: ctx.nowMs };
    return { ok: true, state: { ...state, members: { ...state.members, [m.memberId]: left } }, value: { memberId: m.memberId, memberEpoch: LEAVE_STATIC_MEMBER_EPOCH } };
  }
  const s = removeMembers(state, [m.memberId], ctx);
  return { ok: true, state: s, value: { memberId: m.memberId, memberEpoch: LEAVE_MEMBER_EPOCH } };
}

function removeMembers(state: GroupState, ids: readonly string[], ctx: CoreContext): GroupState {
  if (ids.length === 0) return state;
  const members = { ...state.members };
  const targetAssignment = { ...state.targetAssignment };
  for (const id of ids) {
    delete members[id];
    delete targetAssignment[id];
  }
  let s: GroupState = { ...state, members, targetAssignment };
  s = refreshTarget(s, ctx, true);
  if (Object.keys(s.members).length === 0) s = { ...s, emptySinceMs: ctx.nowMs };
  return s;
}

/** Why a member was removed by {@link expire}. */
export interface Expiry {
  memberId: string;
  reason: "session" | "rebalance";
}

/**
 * Applies every deadline due at `ctx.nowMs`: members whose session expired (no heartbeat
 * within sessionTimeoutMs) or that did not revoke within rebalanceTimeoutMs are removed and
 * their partitions released; committed offsets of an empty group past their retention are
 * deleted. `value.dead` is true when the group is left with no members and no offsets: the
 * shell may then delete it.
 */
export function expire(state: GroupState, ctx: CoreContext): { state: GroupState; expired: Expiry[]; expiredOffsets: number; dead: boolean } {
  const now = ctx.nowMs;
  const expired: Expiry[] = [];
  for (const m of Object.values(state.members)) {
    if (now >= m.lastHeartbeatMs + m.sessionTimeoutMs) expired.push({ memberId: m.memberId, reason: "session" });
    else if (m.revocationStartedMs !== null && now >= m.revocationStartedMs + m.rebalanceTimeoutMs) {
      expired.push({ memberId: m.memberId, reason: "rebalance" });
    }
  }
  let s = removeMembers(
    state,
    expired.map((e) => e.memberId),
    ctx,
  );
  let expiredOffsets = 0;
  if (Object.keys(s.members).length === 0) {
    const offsets: Record<string, CommittedOffset> = {};
    for (const [k, o] of Object.entries(s.offsets)) {
      if (now >= offsetExpiryMs(s, o)) expiredOffsets++;
      else offsets[k] = o;
    }
    if (expiredOffsets > 0) s = { ...s, offsets };
  }
  const dead = Object.keys(s.members).length === 0 && Object.keys(s.offsets).length === 0;
  return { state: s, expired, expiredOffsets, dead };
}

/**
 * KIP-211: offsets of an empty group expire `offsets.retention.ms` after the group became
 * empty, or after their commit if they were committed later (by an admin or a simple consumer).
 */
function offsetExpiryMs(s: GroupState, o: CommittedOffset): number {
  return Math.max(s.emptySinceMs ?? o.commitTimestampMs, o.commitTimestampMs) + s.configs["offsets.retention.ms"];
}

/** A deadline for the shell's schedule table (one alarm over all of them). */
export interface Timer {
  /** `session:<memberId>`, `rebalance:<memberId>` or `offsets`. */
  key: string;
  dueMs: number;
}

/** Every pending deadline of the group, derived from its state. */
export function timers(s: GroupState): Timer[] {
  const out: Timer[] = [];
  for (const m of Object.values(s.members)) {
    out.push({ key: `session:${m.memberId}`, dueMs: m.lastHeartbeatMs + m.sessionTimeoutMs });
    if (m.revocationStartedMs !== null) out.push({ key: `rebalance:${m.memberId}`, dueMs: m.revocationStartedMs + m.rebalanceTimeoutMs });
  }
  if (Object.keys(s.members).length === 0) {
    let due = Number.POSITIVE_INFINITY;
    for (const o of Object.values(s.offsets)) due = Math.min(due, offsetExpiryMs(s, o));
    if (Number.isFinite(due)) out.push({ key: "offsets", dueMs: due });
  }
  return out.sort((a, b) => a.dueMs - b.dueMs || (a.key < b.key ? -1 : 1));
}

// ---------------------------------------------------------------------------------------
// Offsets
// ---------------------------------------------------------------------------------------

export interface CommitInput {
  /** null for a commit from outside the group (allowed only while the group has no members). */
  memberId: string | null;
  memberEpoch: number | null;
  /** Full topic names; validated shapes (non-negative integer offsets, metadata within limits). */
  offsets: readonly { topic: string; partition: number; offset: number; metadata: string }[];
}

/**
 * Commits offsets, all or none. From a member: only at its current epoch
 * (older: STALE_MEMBER_EPOCH, newer: FENCED_MEMBER_EPOCH, as KIP-848) and only for
 * partitions it owns, including those it is revoking (it commits before it releases them).
 */
export function commitOffsets(state: GroupState, req: CommitInput, ctx: CoreContext): CoreResult<number> {
  if (req.memberId !== null) {
    const m = state.members[req.memberId];
    if (m === undefined) return errorResult("UNKNOWN_MEMBER_ID", `Member ${req.memberId} is not in group ${state.groupId}.`);
    const epoch = req.memberEpoch ?? -1;
    if (m.leftTemporarily) return errorResult("FENCED_MEMBER_EPOCH", `Member ${m.memberId} left the group.`, { memberEpoch: LEAVE_STATIC_MEMBER_EPOCH });
    if (epoch < m.memberEpoch) {
      return errorResult("STALE_MEMBER_EPOCH", `Commit at member epoch ${epoch}, but member ${m.memberId} is at epoch ${m.memberEpoch}.`, { memberEpoch: m.memberEpoch });
    }
    if (epoch > m.memberEpoch) {
      return errorResult("FENCED_MEMBER_EPOCH", `Commit at member epoch ${epoch}, newer than member ${m.memberId}'s epoch ${m.memberEpoch}.`, { memberEpoch: m.memberEpoch });
    }
    for (const o of req.offsets) {
      if (!contains(m.assigned, o.topic, o.partition) && !contains(m.pendingRevocation, o.topic, o.partition)) {
        return errorResult("UNASSIGNED_PARTITION", `Member ${m.memberId} does not own ${o.topic} partition ${o.partition}.`, { topic: o.topic, partition: o.partition });
      }
    }
  } else if (Object.keys(state.members).length > 0) {
    return errorResult("UNKNOWN_MEMBER_ID", `Group ${state.groupId} has members: a commit must carry a member id and epoch.`);
  }
  const offsets: Record<string, CommittedOffset> = { ...state.offsets };
  for (const o of req.offsets) {
    const meta = ctx.topics[o.topic];
    if (meta === undefined || o.partition >= meta.partitions) {
      return errorResult("UNKNOWN_TOPIC_OR_PARTITION", `No partition ${o.partition} in topic ${o.topic}.`, { topic: o.topic, partition: o.partition });
    }
    offsets[tpKey(o.topic, o.partition)] = { offset: o.offset, metadata: o.metadata, commitTimestampMs: ctx.nowMs, topicId: meta.topicId };
  }
  return { ok: true, state: { ...state, offsets }, value: req.offsets.length };
}

/** The committed offset of a partition, if it was committed for the topic's current incarnation. */
export function committedOffset(s: GroupState, topic: string, partition: number, topics: TopicsSnapshot): CommittedOffset | undefined {
  const o = s.offsets[tpKey(topic, partition)];
  if (o === undefined) return undefined;
  const meta = topics[topic];
  if (meta !== undefined && meta.topicId !== o.topicId) return undefined;
  return o;
}

/**
 * Where a member starts reading a partition: the committed offset if it lies within
 * [logStartOffset, logEndOffset], else the `auto.offset.reset` policy: earliest / latest
 * (Kafka's consumer semantics), or OFFSET_OUT_OF_RANGE for `none`.
 * Log end offset = high watermark here (no replication lag yet), so "latest" is the log end.
 */
export function resolvePosition(
  topic: string,
  partition: number,
  committed: CommittedOffset | undefined,
  b: { logStartOffset: number; logEndOffset: number },
  policy: "earliest" | "latest" | "none",
): OffsetFetchPartition {
  const base = {
    topic,
    partition,
    committedOffset: committed?.offset ?? null,
    metadata: committed?.metadata ?? null,
    logStartOffset: b.logStartOffset,
    logEndOffset: b.logEndOffset,
  };
  if (committed !== undefined && committed.offset >= b.logStartOffset && committed.offset <= b.logEndOffset) {
    return { ...base, offset: committed.offset };
  }
  if (policy === "none") {
    const why = committed === undefined ? "no committed offset" : `committed offset ${committed.offset} is outside [${b.logStartOffset}, ${b.logEndOffset}]`;
    return { ...base, offset: null, error: { code: "OFFSET_OUT_OF_RANGE", message: `Partition ${partition} of ${topic}: ${why} and autoOffsetReset is none.` } };
  }
  return { ...base, offset: policy === "earliest" ? b.logStartOffset : b.logEndOffset, reset: policy };
}

/** Overwrites committed offsets (admin reset-offsets); only while the group has no members. */
export function resetOffsets(state: GroupState, entries: readonly { topic: string; partition: number; offset: number }[], ctx: CoreContext): CoreResult<number> {
  if (Object.keys(state.members).length > 0) {
    return errorResult("NON_EMPTY_GROUP", `Group ${state.groupId} has members: stop them before resetting offsets.`, { state: groupStateName(state) });
  }
  const offsets: Record<string, CommittedOffset> = { ...state.offsets };
  for (const e of entries) {
    const meta = ctx.topics[e.topic];
    if (meta === undefined || e.partition >= meta.partitions) {
      return errorResult("UNKNOWN_TOPIC_OR_PARTITION", `No partition ${e.partition} in topic ${e.topic}.`, { topic: e.topic, partition: e.partition });
    }
    const prev = offsets[tpKey(e.topic, e.partition)];
    offsets[tpKey(e.topic, e.partition)] = { offset: e.offset, metadata: prev?.metadata ?? "", commitTimestampMs: ctx.nowMs, topicId: meta.topicId };
  }
  return { ok: true, state: { ...state, offsets }, value: entries.length };
}

/** Checks that a group may be deleted (Kafka DeleteGroups: only empty groups). */
export function canDelete(state: GroupState): ErrorResult | undefined {
  if (Object.keys(state.members).length > 0) {
    return errorResult("NON_EMPTY_GROUP", `Group ${state.groupId} has members: stop them before deleting it.`, { state: groupStateName(state) });
  }
  return undefined;
}

export function alterConfigs(state: GroupState, configs: Partial<GroupConfigs>): GroupState {
  return { ...state, configs: { ...state.configs, ...configs } };
}

// ---------------------------------------------------------------------------------------
// Queries and invariants
// ---------------------------------------------------------------------------------------

/** KIP-848 group states. */
export function groupStateName(s: GroupState): GroupStateName {
  const members = Object.values(s.members);
  if (members.length === 0) return "Empty";
  if (s.groupEpoch > s.targetAssignmentEpoch) return "Assigning";
  for (const m of members) if (m.memberEpoch !== s.targetAssignmentEpoch || m.state !== "stable") return "Reconciling";
  return "Stable";
}

/** tpKey -> the member holding the partition (assigned or revoking). */
export function partitionOwners(s: GroupState): Map<string, string> {
  const owners = new Map<string, string>();
  for (const m of Object.values(s.members)) {
    for (const k of keysOf(m.assigned)) owners.set(k, m.memberId);
    for (const k of keysOf(m.pendingRevocation)) owners.set(k, m.memberId);
  }
  return owners;
}

/**
 * Asserts the coordinator's invariants (TIGER_STYLE: before writing, after reading).
 * @returns a description of the first violation, or undefined.
 */
export function checkInvariants(s: GroupState): string | undefined {
  if (s.targetAssignmentEpoch > s.groupEpoch) return `target epoch ${s.targetAssignmentEpoch} > group epoch ${s.groupEpoch}`;
  const seen = new Map<string, string>();
  for (const m of Object.values(s.members)) {
    if (m.memberEpoch > s.targetAssignmentEpoch) return `member ${m.memberId} epoch ${m.memberEpoch} > target epoch ${s.targetAssignmentEpoch}`;
    if (!isEmpty(intersect(m.assigned, m.pendingRevocation))) return `member ${m.memberId} has a partition both assigned and pending revocation`;
    if (!isEmpty(m.pendingRevocation) && m.state !== "unrevoked_partitions") return `member ${m.memberId} has pending revocations in state ${m.state}`;
    for (const k of [...keysOf(m.assigned), ...keysOf(m.pendingRevocation)]) {
      const other = seen.get(k);
      if (other !== undefined) return `partition ${k.replace("\u0000", ":")} held by both ${other} and ${m.memberId}`;
      seen.set(k, m.memberId);
    }
  }
  for (const id of Object.keys(s.targetAssignment)) if (s.members[id] === undefined) return `target for unknown member ${id}`;
  for (const o of Object.values(s.offsets)) if (!Number.isSafeInteger(o.offset) || o.offset < 0) return `bad committed offset ${o.offset}`;
  return undefined;
}
