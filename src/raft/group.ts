/**
 * A Raft group of member Durable Objects (docs/RAFT.md, "Raft member Durable Objects"): its
 * configuration, the names of its members' objects, and the RPC interface of a member
 * (`RaftMemberDO`, durable-objects/raft-member.ts). Pure: no Workers imports, so the gateway,
 * the tests and the metadata quorum share it.
 *
 * A group id names its members: member `m1` of group `metadata` is the Durable Object named
 * `metadata/m1` in the `RAFT_MEMBER` namespace ({@link raftMemberName}). The Raft node id is the
 * member id (`m1`), unique within the group.
 */
import type { RpcResult } from "../protocol/errors.ts";
import type { ConfChange, ConfState, Message, NodeId, Role } from "./types.ts";

// Location hints (one list for Raft groups and replicated partitions' `replica.locations`).
import { LOCATION_HINTS, type LocationHint } from "../protocol/config.ts";
export { LOCATION_HINTS, type LocationHint };

/** One member of a group: its id (the Raft node id) and where to create its object. */
export interface RaftMemberSpec {
  id: NodeId;
  /** Where the member's object is created (first access only); absent: near the first caller. */
  locationHint?: LocationHint;
}

/**
 * A group's configuration, given to every member at bootstrap (`bootstrap(config, memberId)`)
 * and stored in its SQLite storage.
 */
export interface RaftGroupConfig {
  /** Group id: lower-case letters, digits and '-' (1-64 characters). */
  groupId: string;
  /** The initial voters (1-7 members, ids unique: lower-case letters, digits and '-'). */
  members: RaftMemberSpec[];
  /** The replicated state machine every member runs (a name registered in durable-objects/raft/). */
  stateMachine: string;
  /** Length of one Raft tick in ms (the alarm's period while the member runs). @default 100 */
  tickMs?: number;
  /**
   * Election timeout in ticks: a follower waits a random `[electionTicks, 2*electionTicks)`
   * ticks. @default 10 (1 s at the default tick, Kafka KRaft's `controller.quorum.election.timeout.ms`)
   */
  electionTicks?: number;
  /** Heartbeat interval in ticks (< electionTicks). @default 1 */
  heartbeatTicks?: number;
  /** Take a snapshot (and drop the log before it) every this many applied entries. @default 1000 */
  compactEveryEntries?: number;
  /** How long a proposal or read waits for its entry to apply before answering REQUEST_TIMED_OUT (ms). @default 5000 */
  requestTimeoutMs?: number;
  /**
   * Quiescence (docs/RAFT.md "Quiescence"): an idle group stops ticking every `tickMs`; its
   * members tick every `quiescedTickMs` instead until something wakes the group. @default true
   */
  quiesce?: boolean;
  /**
   * The tick period of a quiesced member (ms, >= tickMs): the leader repeats its quiesce
   * heartbeat at it, and a follower that missed two in a row wakes and runs its election timer
   * (failure detection of an idle group: a dead leader is replaced within 2-3 of these plus an
   * election). @default 5000
   */
  quiescedTickMs?: number;
}

/** A configuration with every default filled in. */
export type ResolvedRaftGroupConfig = Required<Omit<RaftGroupConfig, "members">> & { members: RaftMemberSpec[] };

const ID = /^[a-z0-9][a-z0-9-]{0,63}$/;
const MAX_MEMBERS = 7;

/** Bounds of the timing and size settings: [min, max], integers. */
const LIMITS = {
  tickMs: [10, 10_000],
  electionTicks: [2, 1_000],
  heartbeatTicks: [1, 999],
  compactEveryEntries: [2, 1_000_000],
  requestTimeoutMs: [100, 120_000],
  quiescedTickMs: [10, 600_000],
} as const;

/**
 * Checks a group configuration and fills in the defaults.
 * @returns the resolved configuration, or a reason it is refused (answered INVALID_REQUEST).
 */
export function resolveGroupConfig(c: RaftGroupConfig): ResolvedRaftGroupConfig | string {
  if (typeof c !== "object" || c === null) return "the group configuration must be an object";
  if (typeof c.groupId !== "string" || !ID.test(c.groupId)) return `groupId ${JSON.stringify(c.groupId)} must be 1-64 lower-case letters, digits and '-'`;
  if (!Array.isArray(c.members) || c.members.length < 1 || c.members.length > MAX_MEMBERS) return `a group has 1 to ${MAX_MEMBERS} members`;
  const seen = new Set<string>();
  for (const m of c.members) {
    if (typeof m?.id !== "string" || !ID.test(m.id)) return `member id ${JSON.stringify(m?.id)} must be 1-64 lower-case letters, digits and '-'`;
    if (seen.has(m.id)) return `member ${m.id} is listed twice`;
    seen.add(m.id);
    if (m.locationHint !== undefined && !(LOCATION_HINTS as readonly string[]).includes(m.locationHint)) return `member ${m.id}: unknown location hint ${JSON.stringify(m.locationHint)}`;
  }
  if (typeof c.stateMachine !== "string" || c.stateMachine === "") return "stateMachine must name a registered state machine";
  const r: ResolvedRaftGroupConfig = {
    groupId: c.groupId,
    members: c.members.map((m) => (m.locationHint === undefined ? { id: m.id } : { id: m.id, locationHint: m.locationHint })),
    stateMachine: c.stateMachine,
    tickMs: c.tickMs ?? 100,
    electionTicks: c.electionTicks ?? 10,
    heartbeatTicks: c.heartbeatTicks ?? 1,
    compactEveryEntries: c.compactEveryEntries ?? 1000,
    requestTimeoutMs: c.requestTimeoutMs ?? 5000,
    quiesce: c.quiesce ?? true,
    quiescedTickMs: c.quiescedTickMs ?? 5000,
  };
  if (typeof r.quiesce !== "boolean") return `quiesce must be a boolean, got ${JSON.stringify(r.quiesce)}`;
  for (const [key, [lo, hi]] of Object.entries(LIMITS) as [keyof typeof LIMITS, readonly [number, number]][]) {
    const v = r[key];
    if (!Number.isInteger(v) || v < lo || v > hi) return `${key} must be an integer in [${lo}, ${hi}], got ${v}`;
  }
  if (r.heartbeatTicks >= r.electionTicks) return `heartbeatTicks (${r.heartbeatTicks}) must be < electionTicks (${r.electionTicks})`;
  if (r.quiescedTickMs < r.tickMs) return `quiescedTickMs (${r.quiescedTickMs}) must be >= tickMs (${r.tickMs})`;
  return r;
}

/** The Durable Object name of member `memberId` of group `groupId`. */
export function raftMemberName(groupId: string, memberId: NodeId): string {
  return `${groupId}/${memberId}`;
}

/** What a member reports about itself (`status()`). */
export interface RaftMemberStatus {
  groupId: string;
  memberId: NodeId;
  role: Role;
  term: number;
  /** The leader this member knows of, or null during an election. */
  leaderId: NodeId | null;
  commitIndex: number;
  appliedIndex: number;
  lastIndex: number;
  /** Index of the latest snapshot (0: none). */
  snapshotIndex: number;
  conf: ConfState;
  /** Quiesced (docs/RAFT.md "Quiescence"): the member ticks at its quiesced period. */
  quiesced: boolean;
  /** Milliseconds until this member's next tick (its pending tick timer; negative: due), or null when none is set. */
  nextTickInMs: number | null;
  /** Ticks this member's node has taken since it (re)started (its clock's activity). */
  ticks: number;
}

/**
 * Fault injection (dev and test builds only; docs/RAFT.md): what a member does wrong on
 * purpose. Every field is optional; `setFaults({})` heals.
 * - `crashed`: acts as a crashed process: every call throws, ticks and incoming messages are
 *   ignored, nothing is sent, and the in-memory Raft state is dropped; clearing it restarts the
 *   member from its durable state, as a restart after a crash does.
 * - `paused`: acts as a stopped process (SIGSTOP): no ticks, incoming messages dropped, calls
 *   wait; in-memory state is kept and it resumes where it stopped.
 * - `dropRate`: the fraction (0..1) of outgoing messages dropped.
 * - `delayMs`: every outgoing message is delayed by this many ms (0..60 000).
 */
export interface RaftFaults {
  crashed?: boolean;
  paused?: boolean;
  dropRate?: number;
  delayMs?: number;
  /**
   * Link faults (test builds only): every message to one of these members is dropped at the
   * sender. With {@link dropFrom} the same names on one member, that member is cut off
   * symmetrically; one of the two alone is a one-way partition.
   */
  dropTo?: string[];
  /** Every message from one of these members is dropped on arrival, before it is stepped. */
  dropFrom?: string[];
}

/** A JSON value: what state machines answer (it crosses RPC as it is). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A committed command's answer from the state machine. */
export type ApplyResult = JsonValue;

/**
 * The RPC interface of a Raft member object. Expected failures are typed results
 * (`NOT_LEADER` with `details.leaderId` and `details.leaderName`, `REQUEST_TIMED_OUT`,
 * `INVALID_REQUEST`); a thrown error is a bug, a platform failure or an injected crash.
 */
export interface RaftMemberRpc {
  /**
   * Makes this object member `memberId` of the group and starts its clock. Idempotent: once
   * bootstrapped, a call with the same group id and member id answers the status and changes
   * nothing (the stored configuration stays: later membership changes live in the log); another
   * group id or member id is refused with INVALID_REQUEST. A malformed configuration is refused
   * with INVALID_REQUEST.
   */
  bootstrap(config: RaftGroupConfig, memberId: NodeId): Promise<RpcResult<{ status: RaftMemberStatus }>>;
  /** Messages from another member of the group, batched (Raft's RPCs as one-way messages). */
  deliver(messages: Message[]): Promise<void>;
  /**
   * Proposes a command at the leader and answers once it is committed and applied here, with
   * the state machine's answer. NOT_LEADER (retriable, nothing appended) names the leader;
   * REQUEST_TIMED_OUT means the outcome is unknown (the command may still commit: retry
   * idempotently).
   */
  propose(command: Uint8Array): Promise<RpcResult<{ index: number; term: number; result: ApplyResult }>>;
  /** A linearizable read of the state machine (ReadIndex at the leader; NOT_LEADER elsewhere). */
  read(query: JsonValue): Promise<RpcResult<{ index: number; result: JsonValue }>>;
  /**
   * A linearizable read answered by the state machine's asynchronous `serve` at the leader
   * (the metadata quorum's SCRAM password check). NOT_LEADER elsewhere.
   */
  serve(query: JsonValue): Promise<RpcResult<{ index: number; result: JsonValue }>>;
  /** A read of this member's own applied state (any member; may be stale). */
  localRead(query: JsonValue): Promise<RpcResult<{ index: number; result: JsonValue }>>;
  /** One single-server membership change, at the leader (docs/RAFT.md, "Membership"). */
  changeMembership(change: ConfChange, locationHint?: LocationHint): Promise<RpcResult<{ index: number; term: number; conf: ConfState }>>;
  /** Hands leadership to voter `to` (TimeoutNow). */
  transferLeadership(to: NodeId): Promise<RpcResult<Record<never, never>>>;
  status(): Promise<RpcResult<{ status: RaftMemberStatus }>>;
  /**
   * Dev and test builds only: sets this member's faults. Refused with INVALID_REQUEST
   * (`details.faultInjection: false`) in a production build or without EDGELOG_RAFT_FAULTS = "1".
   */
  setFaults(faults: RaftFaults): Promise<RpcResult<{ faults: RaftFaults }>>;
}
