/**
 * Wire and storage shapes of the pure Raft core (docs/RAFT.md). No I/O, no Workers imports:
 * a Raft member Durable Object persists {@link HardState}, {@link Entry} and
 * {@link SnapshotMeta} in SQLite and carries {@link Message} over RPC.
 *
 * Indexes and terms are non-negative integers (JS numbers, exact below 2^53). Index 0 / term 0
 * is the empty-log sentinel: the first entry has index 1.
 */

/** A member's id, unique in its group (e.g. the Durable Object name of the member). */
export type NodeId = string;

/** What a member must persist before it sends anything that depends on it (Raft §5.1, Fig. 2). */
export interface HardState {
  /** Latest term this member has seen. */
  term: number;
  /** Member voted for in `term`, or null. */
  vote: NodeId | null;
  /** Highest index known committed. Persisting it is an optimisation (restart applies sooner), not a safety need. */
  commit: number;
}

/**
 * The group's configuration: voters elect and commit, learners only receive the log.
 * Sorted arrays (not sets) so it serialises as it is.
 */
export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
}

/**
 * One single-server membership change (Ongaro's dissertation §4.1). Each changes the voter set
 * by at most one member, so any majority of the old voters meets any majority of the new ones.
 * - `addLearner`: a new non-voting member starts catching up.
 * - `promote`: a learner becomes a voter (the way a new voter should join: caught up first).
 * - `addVoter`: a new member joins as a voter directly (allowed; `addLearner` + `promote` is kinder to availability).
 * - `remove`: a voter or learner leaves.
 */
export interface ConfChange {
  type: "addLearner" | "promote" | "addVoter" | "remove";
  node: NodeId;
}

/**
 * A log entry. `normal` carries application data; `noop` is the entry a new leader appends in
 * its term (so it can commit, serve reads and change the configuration); `conf` carries the
 * whole configuration that takes effect when the entry is appended (not when committed).
 */
export type Entry =
  | { index: number; term: number; type: "normal"; data: Uint8Array }
  | { index: number; term: number; type: "noop" }
  | { index: number; term: number; type: "conf"; conf: ConfState; change: ConfChange };

/** Identifies a snapshot: the last log entry it covers and the configuration at that entry. */
export interface SnapshotMeta {
  index: number;
  term: number;
  conf: ConfState;
}

/** A snapshot: its meta and the application's state machine image at `meta.index` (opaque bytes). */
export interface Snapshot {
  meta: SnapshotMeta;
  data: Uint8Array;
}

/** A confirmed linearizable read: serve `ctx` once the state machine has applied `index`. */
export interface ReadState {
  index: number;
  ctx: string;
}

interface MessageBase {
  from: NodeId;
  to: NodeId;
  /** Sender's term, except vote replies to a pre-vote (see `preVoteResp`). */
  term: number;
}

/**
 * Every message between members. Shapes follow Raft's RPCs (Fig. 2, §7, §9.6 of Ongaro's
 * dissertation for PreVote and TimeoutNow); names follow etcd-raft where there is one.
 */
export type Message =
  | (MessageBase & { type: "preVote" | "vote"; lastLogIndex: number; lastLogTerm: number; transfer: boolean })
  | (MessageBase & { type: "preVoteResp" | "voteResp"; granted: boolean })
  | (MessageBase & { type: "append"; prevLogIndex: number; prevLogTerm: number; entries: Entry[]; commit: number })
  | (MessageBase & {
      type: "appendResp";
      /** On success: last index known to match the leader. On reject: the rejected prevLogIndex. */
      index: number;
      reject: boolean;
      /** Fast backtracking hint on reject: the largest index <= `index` whose term <= the leader's prevLogTerm ... */
      hintIndex: number;
      /** ... and that term (0 when unknown). */
      hintTerm: number;
    })
  | (MessageBase & {
      type: "heartbeat";
      commit: number;
      readSeq: number;
      /**
       * Quiescence (docs/RAFT.md "Quiescence"): present on a leader's quiesce heartbeat, with the
       * leader's last log index and term. A follower whose log ends at the same (index, term) and
       * whose commit reaches `commit` stops its election timer; its answer (as to a heartbeat)
       * keeps the leader quiesced.
       */
      quiesce?: { lastIndex: number; lastTerm: number };
    })
  | (MessageBase & { type: "heartbeatResp"; readSeq: number })
  | (MessageBase & {
      type: "snapshot";
      meta: SnapshotMeta;
      /** Byte offset of this chunk in the snapshot data. */
      offset: number;
      chunk: Uint8Array;
      /** True on the last chunk. */
      done: boolean;
      /** Total snapshot bytes. */
      totalBytes: number;
    })
  | (MessageBase & {
      type: "snapshotResp";
      /** Index of the snapshot this answers. */
      snapshotIndex: number;
      /** Next byte offset the follower expects (when not done). */
      nextOffset: number;
      /** True when the follower installed it (or already had it committed): `matchIndex` is then valid. */
      done: boolean;
      matchIndex: number;
    })
  | (MessageBase & { type: "timeoutNow" })
  /**
   * Quiescence: a quiesced follower woken by something other than its leader (a client request,
   * a vote request, missed quiesce heartbeats) asks its leader to wake; a leader answers any
   * message by waking and heartbeating at once.
   */
  | (MessageBase & { type: "wake" });

export type MessageType = Message["type"];

/** Member roles. `preCandidate` runs PreVote before touching its term. */
export type Role = "follower" | "preCandidate" | "candidate" | "leader";

/** Volatile state worth reporting (leader changes, for routing and NOT_LEADER answers). */
export interface SoftState {
  leaderId: NodeId | null;
  role: Role;
  term: number;
}

/** Why a proposal was refused. The caller maps `notLeader` to NOT_LEADER (src/protocol/errors.ts). */
export type ProposeError =
  | { ok: false; code: "notLeader"; leaderId: NodeId | null }
  | { ok: false; code: "transferInProgress"; leaderId: NodeId }
  | { ok: false; code: "confChangePending" | "noCommitInTerm" | "invalidConfChange"; reason: string }
  | { ok: false; code: "tooLarge"; reason: string };

/** A proposal's place in the log: it is committed iff an entry with this index AND term is applied. */
export type ProposeResult = { ok: true; index: number; term: number } | ProposeError;
