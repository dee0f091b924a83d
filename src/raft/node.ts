/**
 * The pure Raft core (docs/RAFT.md): one member of one group, driven by its shell.
 *
 * No I/O, no clocks, no randomness except the injected `random`. The shell (a Raft member
 * Durable Object, or the deterministic simulator in test/sim/) feeds it `tick()` (one logical
 * clock tick), `step(message)` (a message from another member), `propose(data)`,
 * `proposeConfChange(change)`, `readIndex(ctx)`, `transferLeadership(to)` and
 * `compact(index, data)`, and drains its output with `ready()`.
 *
 * ## Persistence contract (asserted)
 *
 *     const rd = node.ready();
 *     storage.write(rd.snapshot, rd.entries, rd.hardState);  // durable, in this order
 *     node.persisted(rd);                                       // now rd.messages may be read
 *     send(rd.messages);
 *     apply(rd.snapshot, rd.committedEntries); serve(rd.readStates);
 *     node.advance(rd);
 *
 * 1. Everything a Ready asks to persist is durable before any of its messages leaves: a vote
 *    reply after the vote, an append answer after the entries, a leader's appends after its own
 *    copy (Raft §5.1: a member that crashes and forgets its vote could vote twice in a term).
 *    `rd.messages` throws {@link RaftContractError} until `persisted(rd)` was called when the
 *    Ready holds a hard state, entries or a snapshot.
 * 2. Entries: delete every stored entry with index >= `rd.entries[0].index`, then append
 *    `rd.entries`. Snapshot: replace the stored log by it (and restore the state machine from
 *    its data) before writing `rd.entries`, which then follow it.
 * 3. `committedEntries` are applied in order after the persist; they are durable by then.
 * 4. Between `ready()` and `advance(rd)` the node takes no input (tick, step, propose, ...
 *    throw): the shell queues input while its storage write is in flight (a slow disk delays
 *    the member, never reorders its durable state).
 * 5. `compact(index, data)` is called by the shell after it applied `index`; the shell stores
 *    the returned snapshot and drops stored entries <= index itself (no Ready involved).
 * 6. On restart, construct the node from what was durable: hard state, latest snapshot,
 *    entries after it, and the index the state machine has applied (>= the snapshot's).
 *
 * ## Choices (see docs/RAFT.md for why)
 * - PreVote (dissertation §9.6) and CheckQuorum with leader stickiness (§4.2.3): a member that
 *   heard from a leader within the election timeout ignores (pre-)vote requests.
 * - Fast backtracking with (hintIndex, hintTerm), as etcd-raft's findConflictByTerm.
 * - Commit only entries of the current term (§5.4.2); a new leader appends a no-op.
 * - Single-server membership changes (dissertation §4.1), each taking effect when appended,
 *   with the fix for the known single-server bug (raft-dev, 2015): a leader appends a change
 *   only after an entry of its own term is committed, and one change at a time.
 * - Learners receive the log, never vote and never count for a quorum.
 * - Linearizable reads via ReadIndex confirmed by a quorum of heartbeat answers; no leases.
 * - Quiescence (optional, `quiesce`; after CockroachDB's range quiescence): an idle leader sends
 *   a quiesce heartbeat and stops its heartbeats and CheckQuorum rounds; its followers stop
 *   their election timers. While `quiesced`, each `tick()` is a slow tick (the shell's quiesced
 *   period): a leader repeats its quiesce heartbeat, a follower that heard none for
 *   {@link QUIESCED_MISSED_TICKS} slow ticks wakes. A proposal, a read, a transfer, a campaign,
 *   a message from a higher term or a `wake` message wakes the group (docs/RAFT.md "Quiescence").
 */
import { RaftContractError, raftAssert } from "./errors.ts";
import { RaftLog } from "./log.ts";
import { Progress } from "./progress.ts";
import type { ConfChange, ConfState, Entry, HardState, Message, NodeId, ProposeResult, ReadState, Role, Snapshot, SoftState } from "./types.ts";

/** Tunables of a member. Times are in ticks (the shell decides how long a tick is). */
export interface RaftConfig {
  id: NodeId;
  /**
   * Base election timeout; each follower waits a random count in [electionTicks, 2*electionTicks).
   * A leader runs its CheckQuorum round every electionTicks.
   * @default 10
   */
  electionTicks?: number;
  /** Heartbeat interval; must be < electionTicks. @default 1 */
  heartbeatTicks?: number;
  /** Run PreVote before a real election (dissertation §9.6). @default true */
  preVote?: boolean;
  /** Leader steps down without a quorum heard from in an election timeout; followers keep leader stickiness. @default true */
  checkQuorum?: boolean;
  /** Most entries in one append message. @default 256 */
  maxMsgEntries?: number;
  /**
   * Most entry data bytes in one append message (one entry larger than this is still sent
   * alone; a proposal larger than this is refused with `tooLarge`).
   * Cloudflare's RPC limit is 32 MiB per call; we stay far below. @default 1 MiB
   */
  maxMsgBytes?: number;
  /** Appends in flight per follower while replicating. @default 16 */
  maxInflightMsgs?: number;
  /** Bytes of snapshot data per InstallSnapshot message. @default 1 MiB */
  maxSnapshotChunkBytes?: number;
  /**
   * Quiescence (docs/RAFT.md "Quiescence"): an idle leader (everything committed, applied and
   * durable, every member's match index at the last index, no pending read, transfer or
   * configuration change, a quorum heard from in this CheckQuorum round) sends a quiesce
   * heartbeat at its next heartbeat and reports {@link RaftNode.quiesced}; a follower whose log
   * ends where the leader's does quiesces on it (and answers it, as a heartbeat). A quiesced
   * member's `tick()` is a slow tick. Every member of a group must agree on it. @default false
   */
  quiesce?: boolean;
  /** Injected randomness: an integer in [0, n). The only source of nondeterminism. */
  random: (n: number) => number;
}

/**
 * Slow ticks a quiesced follower waits without hearing its leader's quiesce heartbeat before it
 * wakes (asks the leader to wake and runs its election timer again). The leader repeats its
 * quiesce heartbeat at each of its slow ticks; two misses in a row tolerate one late or lost one.
 */
export const QUIESCED_MISSED_TICKS = 2;

/** What was durable when the member (re)starts. */
export interface RaftStorageState {
  hardState: HardState;
  /** Latest snapshot; index 0 with the initial configuration to bootstrap a new group (see {@link bootstrapStorage}). */
  snapshot: Snapshot;
  /** Entries after the snapshot, in order. */
  entries: Entry[];
  /** Last index the state machine has applied (>= snapshot.meta.index, <= hardState.commit). */
  applied: number;
}

/** Durable state of a member that starts a new group with `conf` (voters may be empty for a joiner). */
export function bootstrapStorage(conf: ConfState): RaftStorageState {
  return {
    hardState: { term: 0, vote: null, commit: 0 },
    snapshot: { meta: { index: 0, term: 0, conf: { voters: [...conf.voters].sort(), learners: [...conf.learners].sort() } }, data: new Uint8Array(0) },
    entries: [],
    applied: 0,
  };
}

const persistedReadies = new WeakSet<Ready>();

/** One batch of work for the shell; see the persistence contract in {@link RaftNode}. */
export class Ready {
  /** Changed leader/role/term, when it changed since the last Ready. */
  readonly softState: SoftState | undefined;
  /** Hard state to persist, when changed. */
  readonly hardState: HardState | undefined;
  /** Entries to persist (after deleting stored entries >= entries[0].index). */
  readonly entries: Entry[];
  /** Snapshot received from the leader: persist it and restore the state machine from it. */
  readonly snapshot: Snapshot | undefined;
  /** Entries to apply, in order, after the persist. */
  readonly committedEntries: Entry[];
  /** Linearizable reads now confirmed. */
  readonly readStates: ReadState[];
  /** Read contexts dropped because leadership was lost: answer them NOT_LEADER. */
  readonly droppedReads: string[];
  readonly #messages: Message[];

  constructor(p: {
    softState: SoftState | undefined;
    hardState: HardState | undefined;
    entries: Entry[];
    snapshot: Snapshot | undefined;
    committedEntries: Entry[];
    readStates: ReadState[];
    droppedReads: string[];
    messages: Message[];
  }) {
    this.softState = p.softState;
    this.hardState = p.hardState;
    this.entries = p.entries;
    this.snapshot = p.snapshot;
    this.committedEntries = p.committedEntries;
    this.readStates = p.readStates;
    this.droppedReads = p.droppedReads;
    this.#messages = p.messages;
  }

  /** True when this Ready holds state to make durable before its messages may leave. */
  get mustPersist(): boolean {
    return this.hardState !== undefined || this.entries.length > 0 || this.snapshot !== undefined;
  }

  /** Messages to send. Throws {@link RaftContractError} when read before `node.persisted(this)`. */
  get messages(): Message[] {
    if (this.mustPersist && !persistedReadies.has(this)) {
      throw new RaftContractError("Ready.messages read before its hard state, entries and snapshot were persisted");
    }
    return this.#messages;
  }

  get isEmpty(): boolean {
    return (
      this.softState === undefined && !this.mustPersist && this.committedEntries.length === 0 && this.readStates.length === 0 && this.droppedReads.length === 0 && this.#messages.length === 0
    );
  }
}

interface PendingRead {
  ctx: string;
  index: number;
  seq: number;
}

interface IncomingSnapshot {
  index: number;
  term: number;
  chunks: Uint8Array[];
  bytes: number;
}

/** Configuration in effect at the end of `entries` (append-time semantics), else `fallback`. */
function latestConf(entries: readonly Entry[], fallback: ConfState, fallbackIndex: number): [ConfState, number] {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.type === "conf") return [e.conf, e.index];
  }
  return [fallback, fallbackIndex];
}

function quorum(n: number): number {
  return Math.floor(n / 2) + 1;
}

function entryBytes(e: Entry): number {
  return e.type === "normal" ? e.data.byteLength : 64;
}

export class RaftNode {
  readonly id: NodeId;
  readonly #electionTicks: number;
  readonly #heartbeatTicks: number;
  readonly #preVote: boolean;
  readonly #checkQuorum: boolean;
  readonly #maxMsgEntries: number;
  readonly #maxMsgBytes: number;
  readonly #maxInflight: number;
  readonly #maxChunkBytes: number;
  readonly #quiesceEnabled: boolean;
  readonly #random: (n: number) => number;

  // ---- persistent (mirrored in storage through Ready) ----
  #term: number;
  #vote: NodeId | null;
  #commit: number;
  protected readonly log: RaftLog;
  #snapshot: Snapshot;

  // ---- volatile ----
  #applied: number;
  #role: Role = "follower";
  #leaderId: NodeId | null = null;
  #conf: ConfState;
  #confIndex: number;
  #electionElapsed = 0;
  #heartbeatElapsed = 0;
  #randomizedElectionTimeout = 0;
  #votes = new Map<NodeId, boolean>();
  #progress = new Map<NodeId, Progress>();
  #leadTransferee: NodeId | null = null;
  #pendingReads: PendingRead[] = [];
  /** Reads asked before this leader committed an entry of its term (answered after). */
  #readsAwaitingCommit: string[] = [];
  #readSeq = 0;
  #readAcks = new Map<NodeId, number>();
  #incoming: IncomingSnapshot | null = null;
  /** Quiescence: this member is quiesced; a quiesced follower heard its leader since its last slow tick; slow ticks missed in a row. */
  #quiesced = false;
  #quiescedHeard = false;
  #quiescedMisses = 0;
  /** Follower: the read sequence of the quiesce heartbeat it quiesced on (a later ReadIndex round wakes it). */
  #quiescedReadSeq = 0;

  // ---- output ----
  #msgs: Message[] = [];
  #readStates: ReadState[] = [];
  #droppedReads: string[] = [];
  #pendingSnapshot: Snapshot | undefined;
  #prevHardState: HardState;
  #prevSoftState: SoftState;
  #outstanding: Ready | null = null;

  constructor(config: RaftConfig, storage: RaftStorageState) {
    this.id = config.id;
    this.#electionTicks = config.electionTicks ?? 10;
    this.#heartbeatTicks = config.heartbeatTicks ?? 1;
    this.#preVote = config.preVote ?? true;
    this.#checkQuorum = config.checkQuorum ?? true;
    this.#maxMsgEntries = config.maxMsgEntries ?? 256;
    this.#maxMsgBytes = config.maxMsgBytes ?? 1 << 20;
    this.#maxInflight = config.maxInflightMsgs ?? 16;
    this.#maxChunkBytes = config.maxSnapshotChunkBytes ?? 1 << 20;
    this.#quiesceEnabled = config.quiesce ?? false;
    this.#random = config.random;
    raftAssert(this.#heartbeatTicks < this.#electionTicks, "config: heartbeatTicks must be < electionTicks");
    raftAssert(this.#maxChunkBytes > 0 && this.#maxMsgEntries > 0 && this.#maxInflight > 0, "config: limits must be positive");

    const { hardState, snapshot, entries, applied } = storage;
    this.#term = hardState.term;
    this.#vote = hardState.vote;
    this.#snapshot = snapshot;
    this.log = new RaftLog(snapshot.meta.index, snapshot.meta.term, [...entries]);
    raftAssert(
      hardState.commit >= snapshot.meta.index && hardState.commit <= this.log.lastIndex(),
      `storage: commit ${hardState.commit} outside [${snapshot.meta.index}, ${this.log.lastIndex()}]`,
    );
    raftAssert(applied >= snapshot.meta.index && applied <= hardState.commit, `storage: applied ${applied} outside [${snapshot.meta.index}, ${hardState.commit}]`);
    this.#commit = hardState.commit;
    this.#applied = applied;
    [this.#conf, this.#confIndex] = latestConf(entries, snapshot.meta.conf, snapshot.meta.index);
    this.#prevHardState = { ...hardState };
    this.#resetRandomizedElectionTimeout();
    this.#prevSoftState = this.softState();
  }

  // =====================================================================================
  // Test seams. The simulator's mutation tests subclass RaftNode (test/sim/mutants.ts) and
  // override these to switch on one known bug at a time. Production code constructs RaftNode
  // itself and never subclasses it; these stay the correct rules.
  // =====================================================================================

  /** §5.4.2: a leader commits by counting replicas only entries of its current term. */
  protected canCommitAt(index: number): boolean {
    return this.log.term(index) === this.#term;
  }

  /** §5.4.1: grant a (pre-)vote only to a candidate whose log is at least as up to date. */
  protected candidateLogOk(lastLogIndex: number, lastLogTerm: number): boolean {
    return this.log.isUpToDate(lastLogIndex, lastLogTerm);
  }

  /**
   * Index of the first of `entries` (which follow a matching prevLogIndex) that conflicts with
   * the log or is new, or 0 when all are already held. Entries that match are kept: a stale
   * or duplicated append must never cut entries this member already acknowledged.
   */
  protected findConflict(entries: readonly Entry[]): number {
    for (const e of entries) {
      if (!this.log.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  // =====================================================================================
  // Inspection (tests, routing)
  // =====================================================================================

  get term(): number {
    return this.#term;
  }
  get vote(): NodeId | null {
    return this.#vote;
  }
  get role(): Role {
    return this.#role;
  }
  get leaderId(): NodeId | null {
    return this.#leaderId;
  }
  /** The voter a leadership transfer is handing over to (null: none running). */
  get leadTransferee(): NodeId | null {
    return this.#leadTransferee;
  }
  get commitIndex(): number {
    return this.#commit;
  }
  get appliedIndex(): number {
    return this.#applied;
  }
  get lastIndex(): number {
    return this.log.lastIndex();
  }
  get lastTerm(): number {
    return this.log.lastTerm();
  }
  get firstIndex(): number {
    return this.log.firstIndex();
  }
  get conf(): ConfState {
    return { voters: [...this.#conf.voters], learners: [...this.#conf.learners] };
  }
  get snapshotMeta(): Snapshot["meta"] {
    return this.#snapshot.meta;
  }
  /** Term of `index` in this member's log (undefined when compacted or beyond the end). */
  termAt(index: number): number | undefined {
    return this.log.term(index);
  }
  /** Entries lo..hi (inclusive) of this member's log. */
  entries(lo: number, hi: number): Entry[] {
    return this.log.slice(lo, hi);
  }
  /**
   * Quiescence (docs/RAFT.md "Quiescence"): true while this member is quiesced. The shell may
   * then tick at its slow, quiesced period instead of its tick period (a quiesced `tick()` is a
   * slow tick); it reads this after each input, since any input may wake the member.
   */
  get quiesced(): boolean {
    return this.#quiesced;
  }
  /** Leader only: a follower's match index (tests). */
  matchOf(id: NodeId): number | undefined {
    return this.#progress.get(id)?.match;
  }

  softState(): SoftState {
    return { leaderId: this.#leaderId, role: this.#role, term: this.#term };
  }

  #isVoter(id: NodeId = this.id): boolean {
    return this.#conf.voters.includes(id);
  }

  /** This member is the configuration's only voter (learners aside). */
  #soleVoter(): boolean {
    return this.#conf.voters.length === 1 && this.#conf.voters[0] === this.id;
  }

  // =====================================================================================
  // Inputs
  // =====================================================================================

  #assertIdle(what: string): void {
    if (this.#outstanding !== null) throw new RaftContractError(`${what} between ready() and advance(): queue it until the Ready is persisted`);
  }

  /** One logical clock tick. */
  tick(): void {
    this.#assertIdle("tick()");
    if (this.#quiesced) this.#tickQuiesced();
    else if (this.#role === "leader") this.#tickLeader();
    else this.#tickElection();
  }

  /**
   * A slow tick while quiesced: the leader repeats its quiesce heartbeat (so its followers know
   * it is alive); a follower that heard no quiesce heartbeat since its previous slow tick counts
   * a miss and wakes after {@link QUIESCED_MISSED_TICKS} in a row (failure detection while quiesced).
   */
  #tickQuiesced(): void {
    if (this.#role === "leader") {
      this.#bcastQuiesce();
      return;
    }
    if (this.#quiescedHeard) {
      this.#quiescedHeard = false;
      this.#quiescedMisses = 0;
      return;
    }
    if (++this.#quiescedMisses >= QUIESCED_MISSED_TICKS) this.#wake();
  }

  /**
   * Leaves quiescence. A leader starts a fresh CheckQuorum round and heartbeats at once; a
   * follower runs its election timer from zero and asks its leader to wake (when the leader is
   * alive it heartbeats back at once; when it is not, the election timer elects another). A
   * follower woken by a client request (`request`) wakes the other voters too, so that if the
   * leader is dead their election timers (and leader stickiness) start together and the first
   * to time out is elected within one election timeout of the request.
   */
  #wake(request = false): void {
    if (!this.#quiesced) return;
    this.#quiesced = false;
    this.#quiescedHeard = false;
    this.#quiescedMisses = 0;
    this.#electionElapsed = 0;
    this.#heartbeatElapsed = 0;
    if (this.#role === "leader") {
      for (const pr of this.#progress.values()) pr.recentActive = false;
      this.#bcastHeartbeat();
    } else if (request) {
      for (const v of this.#conf.voters) if (v !== this.id) this.#send({ type: "wake", to: v, from: this.id, term: this.#term });
    } else if (this.#leaderId !== null) {
      this.#send({ type: "wake", to: this.#leaderId, from: this.id, term: this.#term });
    }
  }

  /**
   * Leader: the group is idle (docs/RAFT.md "Quiescence"): everything is committed in this
   * term, applied and durable; every member (voters and learners) has acknowledged the last
   * index and is not being sent a snapshot; no read, transfer or configuration change is
   * pending; and a quorum was heard from in this CheckQuorum round.
   */
  #canQuiesce(): boolean {
    if (!this.#quiesceEnabled || this.#role !== "leader" || this.#leadTransferee !== null) return false;
    if (this.#pendingReads.length > 0 || this.#readsAwaitingCommit.length > 0) return false;
    const last = this.log.lastIndex();
    if (this.#commit !== last || this.#applied !== last || this.log.stableIndex !== last || this.log.term(last) !== this.#term) return false;
    for (const pr of this.#progress.values()) if (pr.match !== last || pr.state === "snapshot") return false;
    return this.#quorumActive();
  }

  /** Leader: the quiesce heartbeat to every member (carrying the commit, which equals the last index). */
  #bcastQuiesce(): void {
    const quiesce = { lastIndex: this.log.lastIndex(), lastTerm: this.log.lastTerm() };
    for (const pr of this.#progress.values()) {
      this.#send({ type: "heartbeat", to: pr.id, from: this.id, term: this.#term, commit: Math.min(pr.match, this.#commit), readSeq: this.#readSeq, quiesce: { ...quiesce } });
    }
  }

  #tickElection(): void {
    this.#electionElapsed++;
    if (!this.#isVoter()) return;
    // The only voter is its own quorum: no leader to hear from and no vote to split, so it
    // campaigns at its first tick instead of waiting an election timeout (a one-member group,
    // e.g. `npm start`'s metadata quorum, leads about one tick after start instead of 1-2 s).
    // Timeouts are liveness only; safety does not depend on them.
    if (this.#electionElapsed >= this.#randomizedElectionTimeout || this.#soleVoter()) {
      this.#electionElapsed = 0;
      this.#campaign(this.#preVote ? "pre" : "real");
    }
  }

  #tickLeader(): void {
    this.#heartbeatElapsed++;
    this.#electionElapsed++;
    if (this.#electionElapsed >= this.#electionTicks) {
      this.#electionElapsed = 0;
      if (this.#checkQuorum) {
        if (!this.#quorumActive()) {
          this.#becomeFollower(this.#term, null);
          return;
        }
        for (const pr of this.#progress.values()) pr.recentActive = false;
      }
      // A transfer that did not finish within an election timeout is abandoned (etcd-raft).
      this.#leadTransferee = null;
    }
    if (this.#heartbeatElapsed >= this.#heartbeatTicks) {
      this.#heartbeatElapsed = 0;
      // Quiesce instead of heartbeating when idle. Answers (to the quiesce heartbeat, or late
      // ones to earlier heartbeats) do not wake it: the group is still idle after them.
      if (this.#canQuiesce()) {
        this.#quiesced = true;
        this.#bcastQuiesce();
      } else {
        this.#bcastHeartbeat();
      }
    }
  }

  /**
   * Quiescence: a request for the group arrived that the shell refuses or answers without the
   * core (a follower's NOT_LEADER): a quiesced member wakes as a proposal would wake it (a
   * follower runs its election timer again and asks its leader and the other voters to wake).
   * No-op when awake or with quiescence off.
   */
  wake(): void {
    this.#assertIdle("wake()");
    this.#wake(true);
  }

  /**
   * Proposes application data. Returns where it will sit in the log: the proposal is committed
   * iff the entry applied at `index` has `term` (another entry there means it was lost with a
   * leader change; the caller retries, idempotently).
   */
  propose(data: Uint8Array): ProposeResult {
    this.#assertIdle("propose()");
    this.#wake(true);
    if (this.#role !== "leader") return { ok: false, code: "notLeader", leaderId: this.#leaderId };
    if (this.#leadTransferee !== null) return { ok: false, code: "transferInProgress", leaderId: this.#leadTransferee };
    if (data.byteLength > this.#maxMsgBytes) return { ok: false, code: "tooLarge", reason: `${data.byteLength} bytes > maxMsgBytes ${this.#maxMsgBytes}` };
    const e = this.#appendEntry({ type: "normal", data });
    return { ok: true, index: e.index, term: e.term };
  }

  /**
   * Proposes one single-server membership change. Refused (typed result, nothing appended)
   * unless this member leads, an entry of its term is committed, and no earlier change is
   * still uncommitted; and when the change does not fit the current configuration.
   */
  proposeConfChange(change: ConfChange): ProposeResult {
    this.#assertIdle("proposeConfChange()");
    this.#wake(true);
    if (this.#role !== "leader") return { ok: false, code: "notLeader", leaderId: this.#leaderId };
    if (this.#leadTransferee !== null) return { ok: false, code: "transferInProgress", leaderId: this.#leadTransferee };
    if (this.log.term(this.#commit) !== this.#term) return { ok: false, code: "noCommitInTerm", reason: "the leader has not committed an entry of its term yet" };
    if (this.#confIndex > this.#commit) return { ok: false, code: "confChangePending", reason: `configuration change at ${this.#confIndex} is not committed yet` };
    const conf = this.#applyChange(this.#conf, change);
    if (typeof conf === "string") return { ok: false, code: "invalidConfChange", reason: conf };
    const e = this.#appendEntry({ type: "conf", conf, change: { ...change } });
    return { ok: true, index: e.index, term: e.term };
  }

  #applyChange(c: ConfState, ch: ConfChange): ConfState | string {
    const isVoter = c.voters.includes(ch.node);
    const isLearner = c.learners.includes(ch.node);
    const voters = c.voters.filter((v) => v !== ch.node);
    const learners = c.learners.filter((v) => v !== ch.node);
    switch (ch.type) {
      case "addLearner":
        if (isVoter || isLearner) return `${ch.node} is already a member`;
        learners.push(ch.node);
        break;
      case "addVoter":
        if (isVoter || isLearner) return `${ch.node} is already a member`;
        voters.push(ch.node);
        break;
      case "promote":
        if (!isLearner) return `${ch.node} is not a learner`;
        voters.push(ch.node);
        break;
      case "remove":
        if (!isVoter && !isLearner) return `${ch.node} is not a member`;
        if (isVoter && c.voters.length === 1) return "cannot remove the last voter";
        break;
    }
    return { voters: voters.sort(), learners: learners.sort() };
  }

  /**
   * Asks for a linearizable read (ReadIndex, dissertation §6.4). When a quorum confirms this
   * member still leads, a {@link ReadState} `{index, ctx}` comes out in a Ready: serve the read
   * once the state machine has applied `index`. `ctx` must be unique among pending reads.
   * Reads pending when leadership is lost come out in `droppedReads`.
   */
  readIndex(ctx: string): { ok: true } | { ok: false; code: "notLeader"; leaderId: NodeId | null } {
    this.#assertIdle("readIndex()");
    this.#wake(true);
    if (this.#role !== "leader") return { ok: false, code: "notLeader", leaderId: this.#leaderId };
    // The commit index of a new leader may lag the true one until it commits in its term.
    if (this.log.term(this.#commit) !== this.#term) {
      this.#readsAwaitingCommit.push(ctx);
      return { ok: true };
    }
    this.#addRead(ctx);
    return { ok: true };
  }

  #addRead(ctx: string): void {
    this.#readSeq++;
    this.#pendingReads.push({ ctx, index: this.#commit, seq: this.#readSeq });
    this.#processReads();
    if (this.#pendingReads.length > 0) this.#bcastHeartbeat();
  }

  #processReads(): void {
    const q = quorum(this.#conf.voters.length);
    while (this.#pendingReads.length > 0) {
      const r = this.#pendingReads[0]!;
      let acks = 0;
      for (const v of this.#conf.voters) {
        if (v === this.id || (this.#readAcks.get(v) ?? 0) >= r.seq) acks++;
      }
      if (acks < q) return;
      this.#pendingReads.shift();
      this.#readStates.push({ index: r.index, ctx: r.ctx });
    }
  }

  /**
   * Hands leadership to voter `to` (dissertation §3.10): proposals are refused meanwhile; once
   * `to` has the whole log it gets TimeoutNow and campaigns at once. Abandoned after an
   * election timeout.
   */
  transferLeadership(to: NodeId): { ok: true } | { ok: false; code: "notLeader" | "invalid"; reason: string } {
    this.#assertIdle("transferLeadership()");
    this.#wake(true);
    if (this.#role !== "leader") return { ok: false, code: "notLeader", reason: "not the leader" };
    if (to === this.id) return { ok: true };
    if (!this.#isVoter(to)) return { ok: false, code: "invalid", reason: `${to} is not a voter` };
    this.#leadTransferee = to;
    this.#electionElapsed = 0;
    const pr = this.#progress.get(to)!;
    if (pr.match === this.log.lastIndex()) this.#send({ type: "timeoutNow", to, term: this.#term, from: this.id });
    else this.#sendAppend(to);
    return { ok: true };
  }

  /**
   * Compacts the log up to `index` (<= applied) with the state machine image `data` taken at
   * `index`. Returns the snapshot for the shell to persist (then it drops stored entries <= index).
   */
  compact(index: number, data: Uint8Array): Snapshot {
    this.#assertIdle("compact()");
    raftAssert(index <= this.#applied, `compact(${index}) beyond applied ${this.#applied}`);
    raftAssert(index > this.log.snapIndex, `compact(${index}) not after the snapshot at ${this.log.snapIndex}`);
    const term = this.log.term(index)!;
    const [conf] = latestConf(this.log.slice(this.log.firstIndex(), index), this.#snapshot.meta.conf, this.#snapshot.meta.index);
    this.log.compactTo(index, term);
    this.#snapshot = { meta: { index, term, conf }, data };
    return this.#snapshot;
  }

  /** Feeds one message from another member. Messages for another member are a shell bug. */
  step(m: Message): void {
    this.#assertIdle("step()");
    raftAssert(m.to === this.id, `step: message for ${m.to} given to ${this.id}`);
    // Quiescence: a campaign, a wake request or a sign of an awake leader wakes a quiesced
    // member (a message from a higher term resets it below; one from a lower term is stale).
    if (this.#quiesced && m.term >= this.#term && this.#wakesOn(m)) this.#wake();
    if (m.term > this.#term) {
      if (m.type === "preVote" || m.type === "vote") {
        const force = m.type === "vote" && m.transfer;
        const inLease = this.#checkQuorum && this.#leaderId !== null && this.#electionElapsed < this.#electionTicks;
        // Leader stickiness (§4.2.3): while a leader is heard from, ignore would-be disruptors.
        if (!force && inLease) return;
      }
      if (m.type === "preVote") {
        // A pre-vote never changes our term.
      } else if (m.type === "preVoteResp" && m.granted) {
        // Granted pre-votes carry the term of the request (term + 1).
      } else {
        const fromLeader = m.type === "append" || m.type === "heartbeat" || m.type === "snapshot";
        this.#becomeFollower(m.term, fromLeader ? m.from : null);
      }
    } else if (m.term < this.#term) {
      if ((this.#checkQuorum || this.#preVote) && (m.type === "append" || m.type === "heartbeat")) {
        // A deposed leader that cannot hear elections: tell it our term so it steps down.
        this.#send({ type: "heartbeatResp", to: m.from, from: this.id, term: this.#term, readSeq: 0 });
      } else if (m.type === "preVote") {
        // etcd-io/etcd#8243: reject with our term, so a candidate with a stale term catches up.
        this.#send({ type: "preVoteResp", to: m.from, from: this.id, term: this.#term, granted: false });
      }
      return;
    }

    if (m.type === "preVote" || m.type === "vote") {
      this.#handleVote(m);
      return;
    }

    switch (this.#role) {
      case "leader":
        this.#stepLeader(m);
        // Answers to earlier messages keep it quiesced; anything that needs work wakes it.
        if (this.#quiesced && !this.#canQuiesce()) this.#wake();
        break;
      case "candidate":
      case "preCandidate":
        this.#stepCandidate(m);
        break;
      case "follower":
        this.#stepFollower(m);
        break;
    }
  }

  /** Whether message `m` (of this term or a higher one) wakes this quiesced member before it is stepped. */
  #wakesOn(m: Message): boolean {
    switch (m.type) {
      case "preVote":
      case "vote":
        // A campaign by a voter of our configuration (a removed member that never learnt of its
        // removal campaigns forever: it must not keep the group awake).
        return this.#isVoter(m.from);
      case "timeoutNow":
      case "snapshot":
        return true;
      case "wake":
        // At a follower: a peer woken by a client request (see #wake).
        return this.#role === "leader" || this.#isVoter(m.from);
      case "heartbeat":
        // A ReadIndex round the follower has not seen: the leader is serving, awake. Another
        // heartbeat of its leader is answered but keeps it quiesced (a late one from before the
        // quiesce, or the leader was woken by someone else and quiesces again at its next heartbeat).
        return this.#role !== "leader" && m.quiesce === undefined && m.readSeq > this.#quiescedReadSeq;
      default:
        // Appends are judged after they are stepped (a duplicate that changes nothing keeps the
        // follower quiesced); answers to a leader's earlier messages are judged by #canQuiesce.
        return false;
    }
  }

  #handleVote(m: Extract<Message, { type: "preVote" | "vote" }>): void {
    const pre = m.type === "preVote";
    const canVote = this.#vote === m.from || (this.#vote === null && this.#leaderId === null) || (pre && m.term > this.#term);
    if (canVote && this.candidateLogOk(m.lastLogIndex, m.lastLogTerm)) {
      // A granted reply carries the request's term (for a pre-vote, the candidate's term + 1).
      this.#send({ type: pre ? "preVoteResp" : "voteResp", to: m.from, from: this.id, term: m.term, granted: true });
      if (!pre) {
        this.#electionElapsed = 0;
        this.#vote = m.from;
      }
    } else {
      this.#send({ type: pre ? "preVoteResp" : "voteResp", to: m.from, from: this.id, term: this.#term, granted: false });
    }
  }

  #stepFollower(m: Message): void {
    switch (m.type) {
      case "append": {
        this.#electionElapsed = 0;
        this.#leaderId = m.from;
        const before = [this.log.lastIndex(), this.log.lastTerm(), this.#commit];
        this.#handleAppend(m);
        if (this.#quiesced) {
          // A duplicate of an append from before the quiesce changes nothing: stay quiesced.
          if (this.log.lastIndex() !== before[0] || this.log.lastTerm() !== before[1] || this.#commit !== before[2]) this.#wake();
          else this.#quiescedHeard = true;
        }
        break;
      }
      case "heartbeat":
        this.#electionElapsed = 0;
        this.#leaderId = m.from;
        if (m.quiesce !== undefined && this.#quiesceEnabled) {
          // Quiesce only with a log that ends where the leader's does and the leader's commit.
          if (this.log.lastIndex() === m.quiesce.lastIndex && this.log.lastTerm() === m.quiesce.lastTerm && m.commit === m.quiesce.lastIndex) {
            this.#commitTo(m.commit);
            this.#quiesced = true;
            this.#quiescedHeard = true;
            this.#quiescedReadSeq = m.readSeq;
            // Answered, as a heartbeat: the leader keeps knowing which members are alive while
            // the group is quiet (a partition's in-sync replicas), and the answer keeps it quiet.
            this.#send({ type: "heartbeatResp", to: m.from, from: this.id, term: this.#term, readSeq: m.readSeq });
            return;
          }
          // A lagging or divergent log must not quiesce: answer, and ask the leader to wake.
          if (this.#quiesced) this.#wake();
          else this.#send({ type: "wake", to: m.from, from: this.id, term: this.#term });
        } else if (this.#quiesced) {
          this.#quiescedHeard = true;
        }
        this.#commitTo(Math.min(m.commit, this.log.lastIndex()));
        this.#send({ type: "heartbeatResp", to: m.from, from: this.id, term: this.#term, readSeq: m.readSeq });
        break;
      case "snapshot":
        this.#electionElapsed = 0;
        this.#leaderId = m.from;
        this.#handleSnapshot(m);
        break;
      case "timeoutNow":
        if (this.#isVoter()) this.#campaign("transfer");
        break;
      default:
        break;
    }
  }

  #stepCandidate(m: Message): void {
    switch (m.type) {
      case "append":
      case "heartbeat":
      case "snapshot":
        // Someone won this term (or, for a pre-candidate, holds it).
        this.#becomeFollower(this.#term, m.from);
        this.#stepFollower(m);
        break;
      case "preVoteResp":
      case "voteResp": {
        const wanted = this.#role === "preCandidate" ? "preVoteResp" : "voteResp";
        if (m.type !== wanted) return;
        if (this.#role === "preCandidate" && m.granted && m.term !== this.#term + 1) return;
        if (!this.#isVoter(m.from)) return;
        this.#votes.set(m.from, m.granted);
        this.#countVotes();
        break;
      }
      default:
        break;
    }
  }

  #countVotes(): void {
    const q = quorum(this.#conf.voters.length);
    let granted = 0;
    let rejected = 0;
    for (const v of this.#conf.voters) {
      const g = this.#votes.get(v);
      if (g === true) granted++;
      else if (g === false) rejected++;
    }
    if (granted >= q) {
      if (this.#role === "preCandidate") this.#campaign("real");
      else this.#becomeLeader();
    } else if (rejected >= q) {
      this.#becomeFollower(this.#term, null);
    }
  }

  #campaign(kind: "pre" | "real" | "transfer"): void {
    if (!this.#isVoter()) return;
    let voteTerm: number;
    if (kind === "pre") {
      this.#reset(this.#term);
      this.#role = "preCandidate";
      voteTerm = this.#term + 1;
    } else {
      this.#reset(this.#term + 1);
      this.#role = "candidate";
      this.#vote = this.id;
      voteTerm = this.#term;
    }
    this.#votes.set(this.id, true);
    const type = kind === "pre" ? "preVote" : "vote";
    for (const v of this.#conf.voters) {
      if (v === this.id) continue;
      this.#send({ type, to: v, from: this.id, term: voteTerm, lastLogIndex: this.log.lastIndex(), lastLogTerm: this.log.lastTerm(), transfer: kind === "transfer" });
    }
    this.#countVotes();
  }

  #reset(term: number): void {
    if (term !== this.#term) {
      this.#term = term;
      this.#vote = null;
    }
    this.#quiesced = false;
    this.#quiescedHeard = false;
    this.#quiescedMisses = 0;
    this.#leaderId = null;
    this.#electionElapsed = 0;
    this.#heartbeatElapsed = 0;
    this.#resetRandomizedElectionTimeout();
    this.#votes.clear();
    this.#progress.clear();
    this.#leadTransferee = null;
    for (const r of this.#pendingReads) this.#droppedReads.push(r.ctx);
    this.#droppedReads.push(...this.#readsAwaitingCommit);
    this.#pendingReads = [];
    this.#readsAwaitingCommit = [];
    this.#readAcks.clear();
  }

  #resetRandomizedElectionTimeout(): void {
    this.#randomizedElectionTimeout = this.#electionTicks + this.#random(this.#electionTicks);
  }

  #becomeFollower(term: number, leader: NodeId | null): void {
    this.#reset(term);
    this.#role = "follower";
    this.#leaderId = leader;
  }

  #becomeLeader(): void {
    raftAssert(this.#role === "candidate", `becomeLeader from ${this.#role}`);
    this.#reset(this.#term);
    this.#role = "leader";
    this.#leaderId = this.id;
    this.#syncProgress();
    // §5.4.2 / §8: an entry of the new term, so earlier entries commit and reads can be served.
    this.#appendEntry({ type: "noop" });
  }

  /** Leader: one Progress per member other than itself, for the configuration in effect. */
  #syncProgress(): void {
    const members = new Set([...this.#conf.voters, ...this.#conf.learners]);
    members.delete(this.id);
    for (const id of [...this.#progress.keys()]) if (!members.has(id)) this.#progress.delete(id);
    for (const id of members) {
      if (!this.#progress.has(id)) {
        const pr = new Progress(id, this.log.lastIndex() + 1);
        pr.recentActive = true;
        this.#progress.set(id, pr);
      }
    }
    if (this.#leadTransferee !== null && !members.has(this.#leadTransferee)) this.#leadTransferee = null;
  }

  #appendEntry(e: { type: "normal"; data: Uint8Array } | { type: "noop" } | { type: "conf"; conf: ConfState; change: ConfChange }): Entry {
    const entry = { ...e, index: this.log.lastIndex() + 1, term: this.#term } as Entry;
    this.log.append([entry]);
    if (entry.type === "conf") this.#setConf(entry.conf, entry.index);
    this.#bcastAppend();
    this.#maybeCommit();
    return entry;
  }

  #setConf(conf: ConfState, index: number): void {
    this.#conf = conf;
    this.#confIndex = index;
    if (this.#role === "leader") this.#syncProgress();
  }

  #quorumActive(): boolean {
    let active = 0;
    for (const v of this.#conf.voters) {
      if (v === this.id || this.#progress.get(v)?.recentActive) active++;
    }
    return active >= quorum(this.#conf.voters.length);
  }

  #send(m: Message): void {
    this.#msgs.push(m);
  }

  // ---- leader ----

  #stepLeader(m: Message): void {
    const pr = this.#progress.get(m.from);
    if (pr === undefined) return;
    switch (m.type) {
      case "appendResp":
        pr.recentActive = true;
        this.#handleAppendResp(pr, m);
        break;
      case "heartbeatResp":
        pr.recentActive = true;
        pr.probeSent = false;
        // A full window may be full of lost appends: free one so the flow resumes (the
        // follower then rejects the gap and the leader probes; etcd-raft does the same).
        if (pr.state === "replicate" && pr.inflights.length >= this.#maxInflight) pr.inflights.shift();
        if (pr.state === "snapshot") {
          if (pr.pendingSnapshot !== this.#snapshot.meta.index) this.#sendSnapshot(pr);
          else this.#sendSnapshotChunk(pr);
        } else if (pr.match < this.log.lastIndex()) {
          this.#sendAppend(pr.id);
        }
        if (m.readSeq > 0 && this.#isVoter(m.from)) {
          this.#readAcks.set(m.from, Math.max(this.#readAcks.get(m.from) ?? 0, m.readSeq));
          this.#processReads();
        }
        break;
      case "snapshotResp":
        pr.recentActive = true;
        if (m.done) {
          pr.maybeUpdate(m.matchIndex);
          if (pr.state === "snapshot") pr.becomeProbe();
          if (pr.match >= this.log.firstIndex() - 1) {
            if (this.#maybeCommit()) this.#bcastAppend();
            else this.#sendAppend(pr.id);
          }
        } else if (pr.state === "snapshot" && m.snapshotIndex === pr.pendingSnapshot && pr.pendingSnapshot === this.#snapshot.meta.index) {
          pr.snapOffset = m.nextOffset;
          this.#sendSnapshotChunk(pr);
        }
        break;
      default:
        break;
    }
  }

  #handleAppendResp(pr: Progress, m: Extract<Message, { type: "appendResp" }>): void {
    if (m.reject) {
      let nextProbe = m.hintIndex;
      if (m.hintTerm > 0) [nextProbe] = this.log.findConflictByTerm(m.hintIndex, m.hintTerm);
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === "replicate") pr.becomeProbe();
        this.#sendAppend(pr.id);
      }
      return;
    }
    const wasPaused = pr.paused(this.#maxInflight);
    if (!pr.maybeUpdate(m.index)) return;
    if (pr.state === "probe") pr.becomeReplicate();
    else if (pr.state === "snapshot" && pr.match >= pr.pendingSnapshot) pr.becomeProbe();
    if (this.#maybeCommit()) this.#bcastAppend();
    // A follower that was paused may have missed the latest commit index: tell it (even empty).
    else if (wasPaused) this.#sendAppend(pr.id);
    else if (pr.state === "replicate") this.#sendAppend(pr.id, false);
    if (pr.id === this.#leadTransferee && pr.match === this.log.lastIndex()) {
      this.#send({ type: "timeoutNow", to: pr.id, from: this.id, term: this.#term });
    }
  }

  /** Leader: advance commit to the highest index a quorum of voters holds durably (§5.3, §5.4.2). */
  #maybeCommit(): boolean {
    if (this.#role !== "leader") return false;
    const matches: number[] = [];
    for (const v of this.#conf.voters) matches.push(v === this.id ? this.log.stableIndex : (this.#progress.get(v)?.match ?? 0));
    matches.sort((a, b) => b - a);
    const mci = matches[quorum(matches.length) - 1]!;
    if (mci <= this.#commit || !this.canCommitAt(mci)) return false;
    this.#commit = mci;
    this.#onLeaderCommit();
    return true;
  }

  #onLeaderCommit(): void {
    if (this.log.term(this.#commit) === this.#term && this.#readsAwaitingCommit.length > 0) {
      const waiting = this.#readsAwaitingCommit;
      this.#readsAwaitingCommit = [];
      for (const ctx of waiting) this.#addRead(ctx);
    }
    // A leader removed by a committed change steps down (dissertation §4.2.2).
    if (!this.#isVoter() && this.#confIndex <= this.#commit) {
      this.#bcastAppend(); // let the others learn the commit before going quiet
      this.#becomeFollower(this.#term, null);
    }
  }

  #bcastAppend(): void {
    if (this.#role !== "leader") return;
    for (const id of this.#progress.keys()) this.#sendAppend(id);
  }

  #bcastHeartbeat(): void {
    for (const pr of this.#progress.values()) {
      this.#send({ type: "heartbeat", to: pr.id, from: this.id, term: this.#term, commit: Math.min(pr.match, this.#commit), readSeq: this.#readSeq });
    }
  }

  /** Sends the next append (or snapshot chunk) to `to` unless its flow is paused. */
  #sendAppend(to: NodeId, sendIfEmpty = true): boolean {
    const pr = this.#progress.get(to);
    if (pr === undefined || pr.paused(this.#maxInflight)) return false;
    const prevLogIndex = pr.next - 1;
    const prevLogTerm = this.log.term(prevLogIndex);
    if (prevLogTerm === undefined || pr.next < this.log.firstIndex()) {
      this.#sendSnapshot(pr);
      return true;
    }
    const last = this.log.lastIndex();
    const entries: Entry[] = [];
    let bytes = 0;
    for (let i = pr.next; i <= last && entries.length < this.#maxMsgEntries; i++) {
      const e = this.log.entry(i)!;
      const b = entryBytes(e);
      if (entries.length > 0 && bytes + b > this.#maxMsgBytes) break;
      entries.push(e);
      bytes += b;
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    this.#send({ type: "append", to, from: this.id, term: this.#term, prevLogIndex, prevLogTerm, entries, commit: this.#commit });
    if (pr.state === "replicate" && entries.length > 0) {
      const lastSent = entries[entries.length - 1]!.index;
      pr.next = lastSent + 1;
      pr.inflights.push(lastSent);
    } else if (pr.state === "probe") {
      pr.probeSent = true;
    }
    return true;
  }

  #sendSnapshot(pr: Progress): void {
    pr.becomeSnapshot(this.#snapshot.meta.index);
    this.#sendSnapshotChunk(pr);
  }

  #sendSnapshotChunk(pr: Progress): void {
    const data = this.#snapshot.data;
    const offset = Math.min(pr.snapOffset, data.byteLength);
    const chunk = data.subarray(offset, Math.min(offset + this.#maxChunkBytes, data.byteLength));
    this.#send({
      type: "snapshot",
      to: pr.id,
      from: this.id,
      term: this.#term,
      meta: this.#snapshot.meta,
      offset,
      chunk,
      done: offset + chunk.byteLength >= data.byteLength,
      totalBytes: data.byteLength,
    });
  }

  // ---- follower ----

  #handleAppend(m: Extract<Message, { type: "append" }>): void {
    if (m.prevLogIndex < this.#commit) {
      // Entries up to our commit already match (committed); tell the leader where we are.
      this.#send({ type: "appendResp", to: m.from, from: this.id, term: this.#term, index: this.#commit, reject: false, hintIndex: 0, hintTerm: 0 });
      return;
    }
    if (!this.log.matchTerm(m.prevLogIndex, m.prevLogTerm)) {
      const [hintIndex, hintTerm] = this.log.findConflictByTerm(m.prevLogIndex, m.prevLogTerm);
      this.#send({ type: "appendResp", to: m.from, from: this.id, term: this.#term, index: m.prevLogIndex, reject: true, hintIndex, hintTerm });
      return;
    }
    const lastNew = m.prevLogIndex + m.entries.length;
    const conflict = this.findConflict(m.entries);
    if (conflict > 0) {
      raftAssert(conflict > this.#commit, `append: conflict at ${conflict} <= commit ${this.#commit}`);
      const fresh = m.entries.slice(conflict - m.prevLogIndex - 1);
      if (conflict <= this.log.lastIndex()) {
        this.log.truncateFrom(conflict);
        if (this.#confIndex >= conflict) {
          [this.#conf, this.#confIndex] = latestConf(this.log.entries, this.#snapshot.meta.conf, this.#snapshot.meta.index);
        }
      }
      this.log.append(fresh);
      for (const e of fresh) if (e.type === "conf") this.#setConf(e.conf, e.index);
    }
    this.#commitTo(Math.min(m.commit, lastNew));
    this.#send({ type: "appendResp", to: m.from, from: this.id, term: this.#term, index: lastNew, reject: false, hintIndex: 0, hintTerm: 0 });
  }

  #commitTo(index: number): void {
    if (index > this.#commit) {
      raftAssert(index <= this.log.lastIndex(), `commit ${index} beyond last index ${this.log.lastIndex()}`);
      this.#commit = index;
    }
  }

  /**
   * InstallSnapshot (§7), chunked. A snapshot at or below our commit is old news: answer
   * success at our commit and keep everything (C7a). One whose last entry we hold with the same
   * term only moves the commit. Otherwise it replaces the whole log, whatever follows (C7b).
   */
  #handleSnapshot(m: Extract<Message, { type: "snapshot" }>): void {
    const { meta } = m;
    const reply = (done: boolean, nextOffset: number, matchIndex: number) =>
      this.#send({ type: "snapshotResp", to: m.from, from: this.id, term: this.#term, snapshotIndex: meta.index, nextOffset, done, matchIndex });
    if (meta.index <= this.#commit) {
      this.#incoming = null;
      reply(true, 0, this.#commit);
      return;
    }
    if (this.log.matchTerm(meta.index, meta.term)) {
      this.#incoming = null;
      this.#commitTo(meta.index);
      reply(true, 0, meta.index);
      return;
    }
    if (m.offset === 0) this.#incoming = { index: meta.index, term: meta.term, chunks: [], bytes: 0 };
    const inc = this.#incoming;
    if (inc === null || inc.index !== meta.index || inc.term !== meta.term || m.offset !== inc.bytes) {
      const same = inc !== null && inc.index === meta.index && inc.term === meta.term;
      reply(false, same ? inc.bytes : 0, 0);
      return;
    }
    inc.chunks.push(m.chunk.slice());
    inc.bytes += m.chunk.byteLength;
    if (!m.done) {
      reply(false, inc.bytes, 0);
      return;
    }
    raftAssert(inc.bytes === m.totalBytes, `snapshot ${meta.index}: got ${inc.bytes} bytes, expected ${m.totalBytes}`);
    const data = new Uint8Array(inc.bytes);
    let at = 0;
    for (const c of inc.chunks) {
      data.set(c, at);
      at += c.byteLength;
    }
    this.#incoming = null;
    this.log.restore(meta.index, meta.term);
    this.#commit = meta.index;
    this.#applied = meta.index;
    this.#snapshot = { meta: { index: meta.index, term: meta.term, conf: { voters: [...meta.conf.voters], learners: [...meta.conf.learners] } }, data };
    this.#conf = this.#snapshot.meta.conf;
    this.#confIndex = meta.index;
    this.#pendingSnapshot = this.#snapshot;
    reply(true, 0, meta.index);
  }

  // =====================================================================================
  // Output
  // =====================================================================================

  #hardState(): HardState {
    return { term: this.#term, vote: this.#vote, commit: this.#commit };
  }

  /** True when `ready()` would return a non-empty Ready. */
  hasReady(): boolean {
    if (this.#outstanding !== null) return false;
    const hs = this.#hardState();
    const p = this.#prevHardState;
    const ss = this.#prevSoftState;
    return (
      this.#msgs.length > 0 ||
      this.log.stableIndex < this.log.lastIndex() ||
      this.#pendingSnapshot !== undefined ||
      this.#commit > this.#applied ||
      this.#readStates.length > 0 ||
      this.#droppedReads.length > 0 ||
      hs.term !== p.term ||
      hs.vote !== p.vote ||
      hs.commit !== p.commit ||
      ss.leaderId !== this.#leaderId ||
      ss.role !== this.#role ||
      ss.term !== this.#term
    );
  }

  /** Takes the pending output. Until `advance(rd)`, the node accepts no input. */
  ready(): Ready {
    this.#assertIdle("ready()");
    const hs = this.#hardState();
    const p = this.#prevHardState;
    // The durable hard state only moves forward: a term never goes back, a vote never changes within a term.
    raftAssert(hs.term >= p.term, `hard state: term ${hs.term} < persisted ${p.term}`);
    raftAssert(hs.term !== p.term || p.vote === null || hs.vote === p.vote, `hard state: vote changed within term ${hs.term}`);
    raftAssert(hs.commit >= p.commit, `hard state: commit ${hs.commit} < persisted ${p.commit}`);
    const hardChanged = hs.term !== p.term || hs.vote !== p.vote || hs.commit !== p.commit;
    const ss = this.softState();
    const softChanged = ss.leaderId !== this.#prevSoftState.leaderId || ss.role !== this.#prevSoftState.role || ss.term !== this.#prevSoftState.term;
    const last = this.log.lastIndex();
    const entries = this.log.stableIndex < last ? this.log.slice(this.log.stableIndex + 1, last) : [];
    const committedEntries = this.#commit > this.#applied ? this.log.slice(this.#applied + 1, this.#commit) : [];
    const rd = new Ready({
      softState: softChanged ? ss : undefined,
      hardState: hardChanged ? hs : undefined,
      entries,
      snapshot: this.#pendingSnapshot,
      committedEntries,
      readStates: this.#readStates,
      droppedReads: this.#droppedReads,
      messages: this.#msgs,
    });
    this.#msgs = [];
    this.#readStates = [];
    this.#droppedReads = [];
    this.#pendingSnapshot = undefined;
    this.#prevSoftState = ss;
    this.#outstanding = rd;
    return rd;
  }

  /** The shell made `rd`'s hard state, entries and snapshot durable: its messages may now be sent. */
  persisted(rd: Ready): void {
    raftAssert(rd === this.#outstanding, "persisted(): not the outstanding Ready");
    persistedReadies.add(rd);
  }

  /** The shell persisted, sent and applied `rd`. */
  advance(rd: Ready): void {
    raftAssert(rd === this.#outstanding, "advance(): not the outstanding Ready");
    raftAssert(!rd.mustPersist || persistedReadies.has(rd), "advance(): the Ready was not persisted");
    this.#outstanding = null;
    if (rd.hardState !== undefined) this.#prevHardState = rd.hardState;
    this.log.stableIndex = this.log.lastIndex();
    if (rd.committedEntries.length > 0) this.#applied = rd.committedEntries[rd.committedEntries.length - 1]!.index;
    // The leader's own durable copy now counts towards commit.
    if (this.#maybeCommit()) this.#bcastAppend();
  }
}
