/**
 * The Raft replica of a replicated partition (`replication.factor` 3; docs/RAFT.md "Replicated
 * partitions"): the member shell of durable-objects/raft-member.ts as a piece the partition
 * object holds. It knows nothing of the rooms: the switchboard hands it a `host` that applies
 * one committed entry (the rooms' `apply` calls, in one transaction with the applied index).
 *
 * - **Members**: replica `r1` is the partition object itself (`${topicId}/${partition}`, the
 *   object the metadata store creates and destroys); `r2` and `r3` are the objects
 *   `${topicId}/${partition}/r2` and `/r3` of the same namespace (`replicaObjectNameAt` in src/partition/rpc.ts).
 * - **Storage**: the Raft journal (room `raft`, durable-objects/raft/journal.ts) beside the
 *   partition's rooms, in the same SQLite storage.
 * - **The Ready loop** as RaftMemberDO's: snapshot, entries and hard state in one transaction;
 *   `persisted(rd)`; the messages sent (one `replicaDeliver` call per peer, not awaited); each
 *   committed normal entry applied by the host in ONE transaction with the applied index;
 *   no-ops and configuration entries only move the applied index (they take no Kafka offset:
 *   offsets stay dense, field case C2). A throw resets the object (`ctx.abort`): memory may be
 *   ahead of storage, the restart rebuilds both from SQLite.
 * - **Ticks**: the partition's schedule, room `raft`, key `tick`, every {@link REPLICA_TICK_MS};
 *   every {@link REPLICA_QUIESCED_TICK_MS} while the node is quiesced (an idle partition:
 *   docs/RAFT.md "Quiescence"), moved at once when it quiesces or wakes. The partition's other
 *   timers (retention, producer expiry, subscriptions) are unaffected.
 * - **Proposals** wait until their entry is applied here (the host's answer), or answer
 *   NOT_LEADER_OR_FOLLOWER when another entry took their index (lost with a leader change:
 *   nothing of it was applied, safe to resend), or REQUEST_TIMED_OUT after
 *   {@link REPLICA_REQUEST_TIMEOUT_MS} (outcome unknown).
 * - **Compaction**: the journal is compacted with an empty Raft snapshot image: the partition's
 *   state (its whole log) is not copied into the journal. A leader drops entries every voter has
 *   matched, but keeps at most {@link REPLICA_LEADER_KEEP_ENTRIES} behind its applied index;
 *   a follower drops what is {@link REPLICA_KEEP_ENTRIES} behind its applied index.
 * - **Snapshot catch-up** (docs/RAFT.md "Snapshot catch-up"): a replica that needs entries no
 *   peer keeps gets InstallSnapshot; its chunks are not stepped into the node (the core would
 *   install an empty image at once; the leader's heartbeats keep the replica following, and the
 *   leader sends the chunk again on each heartbeat answer). The shell asks the host to pull the
 *   partition's state from the sender
 *   (`ReplicaHost.catchUp`, durable-objects/partition/catch-up.ts), which ends in
 *   {@link PartitionReplica.install}: one transaction with the rooms' state, the snapshot meta,
 *   commit and applied index; then the node is rebuilt from the journal. The leader's next chunk
 *   is then old news to the core (at or below the commit): it answers done, and the leader
 *   resumes appends after the snapshot's index.
 * - **Fault injection** (dev and test builds only, durable-objects/raft/faults.ts): as a Raft
 *   member's, link faults included (`dropTo` at the send, `dropFrom` in `deliver`).
 */
import { ApplyWaiters } from "../raft/apply-waiters.ts";
import { linkDropped } from "../raft/faults.ts";
import { sendMessages } from "../raft/send.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../../src/protocol/errors.ts";
import { resolveGroupConfig, type LocationHint, type RaftFaults } from "../../src/raft/group.ts";
import { RaftContractError, RaftNode, type ConfChange, type ConfState, type Entry, type Message, type NodeId, type ProposeError } from "../../src/raft/index.ts";
import type { SnapshotMeta } from "../../src/raft/types.ts";
import type { TopicConfigs } from "../../src/protocol/types.ts";
import type { StreamEntry } from "../../src/streams/replicated.ts";
import type { RoomTimers, Sql } from "../base.ts";
import { RaftJournal } from "../raft/journal.ts";
import { randomBelow } from "../raft/random.ts";
import type { SubsChange } from "./subscriptions.ts";

/** One Raft tick (ms). The election timeout is [10, 20) ticks: 1-2 s, as KRaft's default 1 s. */
export const REPLICA_TICK_MS = 100;
export const REPLICA_ELECTION_TICKS = 10;
/**
 * Tick period of a quiesced replica (ms): the leader repeats its quiesce heartbeat at it, and a
 * follower that missed two in a row wakes (a dead leader of an idle partition is replaced within
 * 2-3 of these plus an election; a request wakes the followers sooner). docs/RAFT.md "Quiescence".
 */
export const REPLICA_QUIESCED_TICK_MS = 5_000;
/** How long a proposal waits for its entry to be applied before REQUEST_TIMED_OUT (ms). */
export const REPLICA_REQUEST_TIMEOUT_MS = 5_000;
/** Entries a follower keeps behind its applied index (a leader keeps what a follower still lacks). */
export const REPLICA_KEEP_ENTRIES = 1_000;
/**
 * Most entries a leader keeps behind its applied index for a follower that lags (down, cut
 * off): beyond it the follower catches up by snapshot (docs/RAFT.md "Snapshot catch-up"), as an
 * etcd leader compacts by its snapshot count whatever its followers' progress. Each entry is one
 * produce request (up to 1 MiB).
 */
export const REPLICA_LEADER_KEEP_ENTRIES = 10_000;
/** Replica ids of a replication factor of 3. */
export const REPLICA_IDS: readonly NodeId[] = ["r1", "r2", "r3"];

/** What the replica needs of its partition object. */
export interface ReplicaHost {
  sql: Sql;
  transaction: (fn: () => void) => void;
  timers: RoomTimers;
  /** Sends messages to a peer replica's object (its `replicaDeliver`). */
  deliver: (to: NodeId, messages: Message[]) => Promise<void>;
  /**
   * Applies one committed normal entry: the rooms' apply and `writeApplied` in ONE transaction,
   * then their publish. Deterministic: the same entry on the same state gives the same writes on
   * every replica. @returns the answer for the proposer (the leader's waiting request).
   */
  apply: (e: { index: number; term: number; data: Uint8Array }, writeApplied: () => void) => unknown;
  /** Resets the object after a failed Ready loop. */
  abort: (reason: string) => void;
  /**
   * A peer sent InstallSnapshot (`meta`): this replica lacks entries no peer keeps. The host
   * pulls the partition's state from `from` and calls {@link PartitionReplica.install}; one pull
   * at a time (the host ignores the call while one runs).
   */
  catchUp: (from: NodeId, meta: SnapshotMeta) => void;
}

/** Journal retention of a replica (test builds may make it small; see the partition's `setReplicaTestKnobs`). */
export interface JournalRetention {
  /** Entries a follower keeps behind its applied index. */
  keepEntries: number;
  /** Most entries a leader keeps behind its applied index for lagging followers. */
  leaderKeepEntries: number;
}

export class PartitionReplica {
  readonly #host: ReplicaHost;
  readonly #journal: RaftJournal;
  #memberId: NodeId | null = null;
  #node: RaftNode | null = null;
  #faults: RaftFaults = {};
  readonly #waiters = new ApplyWaiters<unknown>();
  /** When each peer was last heard from (ms, this object's clock): min.insync.replicas. */
  readonly #heardMs = new Map<NodeId, number>();
  #retention: JournalRetention = { keepEntries: REPLICA_KEEP_ENTRIES, leaderKeepEntries: REPLICA_LEADER_KEEP_ENTRIES };
  /** Bumped whenever the node is rebuilt, crashed or dropped: a catch-up started under another generation stops. */
  #generation = 0;
  /** Quiescence: the pending tick timer is the quiesced one; when the node was last quiesced (ms); its period (a test knob); ticks since the node started. */
  #clockQuiesced = false;
  #quiescedMs = -Infinity;
  #quiescedTickMs = REPLICA_QUIESCED_TICK_MS;
  #ticks = 0;

  constructor(host: ReplicaHost) {
    this.#host = host;
    this.#journal = new RaftJournal(host.sql);
  }

  /** True when this partition is a replica of a Raft group (replication.factor > 1). */
  get active(): boolean {
    return this.#memberId !== null;
  }

  get memberId(): NodeId | null {
    return this.#memberId;
  }

  get crashed(): boolean {
    return this.#faults.crashed === true;
  }

  /** Changes with every rebuild, crash or reset of the node (a catch-up checks it after each await). */
  get generation(): number {
    return this.#generation;
  }

  /** The quiesced tick period (ms; test builds shorten it through the partition's `setReplicaTestKnobs`). */
  setQuiescedTickMs(ms: number): void {
    this.#quiescedTickMs = ms;
    if (this.#clockQuiesced && this.#memberId !== null && !this.crashed) this.#host.timers.set("tick", Date.now() + ms);
  }

  /** The clock as `replicaStatus` reports it: quiesced, ms to the pending tick (null: none), ticks since the node started. */
  clock(): { quiesced: boolean; nextTickInMs: number | null; ticks: number } {
    const due = this.#host.timers.dueMs("tick");
    return { quiesced: this.#node?.quiesced === true, nextTickInMs: due === undefined ? null : due - Date.now(), ticks: this.#ticks };
  }

  /** Journal retention (test builds shrink it through the partition's `setReplicaTestKnobs`). */
  setRetention(r: JournalRetention): void {
    this.#retention = { ...r };
  }

  /** The Raft node (null before bootstrap or while crashed). */
  get node(): RaftNode | null {
    return this.#node;
  }

  /** At start-up: a bootstrapped replica rebuilds its node from the journal (persistence contract rule 6). */
  load(): void {
    const g = this.#journal.group();
    if (g === null) return;
    this.#memberId = g.memberId;
    this.#startNode();
  }

  /** Forgets everything in memory (the object's storage was deleted). */
  reset(): void {
    this.#fail(new Error("the partition was destroyed"));
    this.#memberId = null;
    this.#node = null;
    this.#generation++;
  }

  /**
   * Makes this object replica `memberId` of a group of {@link REPLICA_IDS}. Idempotent.
   * @throws Error when it is already another replica (a bug of the caller).
   */
  bootstrap(memberId: NodeId, join?: ConfState & { location?: LocationHint }): void {
    const existing = this.#journal.group();
    if (existing !== null) {
      if (existing.memberId !== memberId) throw new Error(`partition replica ${existing.memberId} asked to bootstrap as ${memberId}`);
      if (this.#node === null && !this.crashed) this.load();
      return;
    }
    const config = resolveGroupConfig({
      groupId: "partition",
      // A joining replica records where it was created (its reassignment's location hint).
      members: (join === undefined ? [...REPLICA_IDS] : [...join.voters, ...join.learners]).map((id) =>
        id === memberId && join?.location !== undefined ? { id, locationHint: join.location } : { id },
      ),
      stateMachine: "partition",
      tickMs: REPLICA_TICK_MS,
      electionTicks: REPLICA_ELECTION_TICKS,
      requestTimeoutMs: REPLICA_REQUEST_TIMEOUT_MS,
    });
    if (typeof config === "string") throw new Error(`partition replica group configuration refused: ${config}`);
    this.#host.transaction(() => {
      this.#journal.saveGroup(memberId, config);
      this.#journal.bootstrap(join === undefined ? { voters: [...REPLICA_IDS], learners: [] } : { voters: [...join.voters], learners: [...join.learners] });
    });
    this.#memberId = memberId;
    this.#startNode();
  }

  /** Messages from a peer replica. Lost while crashed, paused or not bootstrapped. */
  deliver(messages: Message[]): void {
    const node = this.#node;
    if (node === null || this.#faults.crashed === true || this.#faults.paused === true) return;
    const now = Date.now();
    for (const m of messages) {
      if (m.to !== node.id) continue;
      if (linkDropped(this.#faults, "from", m.from)) continue; // an injected link fault
      this.#heardMs.set(m.from, now);
      if (m.type === "snapshot" && m.term >= node.term && m.meta.index > node.commitIndex && node.termAt(m.meta.index) !== m.meta.term) {
        // A snapshot the core would install (an empty image): pull the partition's state
        // instead (see the file comment). The chunk is not stepped: the leader's heartbeats
        // keep this replica following, and each heartbeat answer brings the chunk again.
        this.#host.catchUp(m.from, m.meta);
        continue;
      }
      node.step(m);
    }
    this.drain();
  }

  /**
   * Installs a pulled partition state at Raft `meta` (docs/RAFT.md "Snapshot catch-up"):
   * `commit` runs the rooms' install in ONE transaction together with `writeJournal` (the
   * journal's log replaced by the snapshot meta, commit and applied index moved to its index);
   * then the node is rebuilt from the journal (persistence contract rule 6). The caller checked
   * `installDecision` synchronously before (src/partition/catch-up.ts).
   * A throw resets the object, as a failed Ready loop does.
   */
  install(meta: SnapshotMeta, commit: (writeJournal: () => void) => void): void {
    const node = this.#node;
    if (node === null) throw new Error(`partition replica ${this.#memberId}: install without a node`);
    const snap = { meta: { index: meta.index, term: meta.term, conf: { voters: [...meta.conf.voters], learners: [...meta.conf.learners] } }, data: new Uint8Array(0) };
    try {
      commit(() => this.#journal.writeSnapshot(snap, true));
    } catch (err) {
      console.error(`Partition replica ${this.#memberId}: the snapshot install failed; resetting the object`, err);
      this.#node = null;
      this.#host.abort(`partition replica snapshot install failed: ${String(err)}`);
      throw err;
    }
    this.#fail(new Error(`Partition replica ${this.#memberId} installed a snapshot at index ${meta.index}.`));
    this.#startNode();
  }

  /** The leader's refusal when this replica is not the leader, else null. */
  notLeader(): ErrorResult | null {
    const node = this.#node;
    if (node !== null && node.role === "leader") return null;
    const leader = node?.leaderId ?? null;
    return errorResult(
      "NOT_LEADER_OR_FOLLOWER",
      leader === null
        ? `Replica ${this.#memberId} is not the leader of this partition; an election is running.`
        : `Replica ${this.#memberId} is not the leader of this partition: ${leader} is.`,
      { replica: this.#memberId, leaderReplica: leader, leaderEpoch: node?.term ?? null, replicas: node?.conf.voters ?? null },
    );
  }

  /**
   * A request that needs the leader arrived (a produce): a quiesced replica wakes, as the core's
   * `wake()` says, before the request is answered (at a follower: NOT_LEADER_OR_FOLLOWER), so that
   * a dead leader of an idle partition is replaced from the first request (docs/RAFT.md "Quiescence").
   */
  request(): void {
    const node = this.#node;
    if (node === null || !node.quiesced || this.#faults.crashed === true || this.#faults.paused === true) return;
    node.wake();
    this.drain();
  }

  /**
   * In-sync replicas as the leader sees them: itself and each voter it heard from within one
   * election timeout (Kafka's ISR in Raft terms: replica.lag.time.max.ms ~ the election timeout).
   */
  inSyncReplicas(nowMs: number): number {
    const node = this.#node;
    if (node === null) return 0;
    // A quiesced leader hears its followers once per quiesced period (their answers to its
    // quiesce heartbeat): while quiesced, and for one election timeout after it wakes (until
    // the answers to its heartbeats come in), a voter heard within two quiesced periods counts
    // (docs/RAFT.md "Quiescence": the window of a follower lost while the partition is idle).
    const electionMs = REPLICA_TICK_MS * REPLICA_ELECTION_TICKS;
    const quietRecently = node.quiesced || nowMs - this.#quiescedMs <= electionMs;
    const windowMs = quietRecently ? 2 * this.#quiescedTickMs + electionMs : electionMs;
    let n = 0;
    for (const id of node.conf.voters) {
      if (id === node.id) n++;
      else if (nowMs - (this.#heardMs.get(id) ?? -Infinity) <= windowMs) n++;
    }
    return n;
  }

  /**
   * Proposes every command (one Ready writes them all) and answers each with the host's apply
   * result at this replica, NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT (see the file comment),
   * and the Raft index it was proposed at (null: refused, nothing proposed).
   */
  proposeAll(commands: readonly Uint8Array[]): { answer: Promise<unknown>; index: number | null }[] {
    const node = this.#node;
    const out: { answer: Promise<unknown>; index: number | null }[] = [];
    for (const data of commands) {
      const refused = this.notLeader();
      if (refused !== null || node === null) {
        out.push({ answer: Promise.resolve(refused), index: null });
        continue;
      }
      const r = node.propose(data);
      if (!r.ok) {
        out.push({
          answer: Promise.resolve(r.code === "tooLarge" ? errorResult("REQUEST_TOO_LARGE", `The produce request is too large to replicate: ${r.reason}.`) : this.#proposalRefused(r)),
          index: null,
        });
        continue;
      }
      out.push({ answer: this.#waitApplied(r.index, r.term), index: r.index });
    }
    // Synchronous: when this returns, every proposed entry is written to this replica's journal
    // (the output gate holds any answer until that write is durable).
    this.drain();
    return out;
  }

  /**
   * NOT_LEADER_OR_FOLLOWER for a proposal the core refused: not the leader, or a leadership
   * transfer is running (no leader named then, so that the gateway waits for the election
   * instead of going back and forth between the two replicas).
   */
  #proposalRefused(r: ProposeError): ErrorResult {
    if (r.code === "transferInProgress") {
      return errorResult("NOT_LEADER_OR_FOLLOWER", `Replica ${this.#memberId} is handing leadership of this partition to ${r.leaderId}.`, {
        replica: this.#memberId,
        leaderReplica: null,
        transferTo: r.leaderId,
        leaderEpoch: this.#node?.term ?? null,
      });
    }
    return this.notLeader() ?? errorResult("NOT_LEADER_OR_FOLLOWER", `Replica ${this.#memberId} refused the proposal (${r.code}).`, { replica: this.#memberId, leaderReplica: null });
  }

  // ---- leadership transfer (Raft's TimeoutNow; Kafka's preferred leader election, KIP-460) ----

  /**
   * At the leader: hands leadership to voter `to` (the core sends it TimeoutNow once its log is
   * complete; proposals are refused meanwhile) and waits, polling every tick, until `to` leads in
   * a later term, another replica wins, or the transfer is abandoned (the core gives up after an
   * election timeout; this waits {@link REPLICA_REQUEST_TIMEOUT_MS} at most).
   * @returns the new leader and its epoch; NOT_LEADER_OR_FOLLOWER when this replica does not
   *   lead; INVALID_REQUEST when `to` is no voter; PREFERRED_LEADER_NOT_AVAILABLE otherwise.
   */
  async transferLeadership(to: NodeId): Promise<RpcResult<{ leaderReplica: NodeId; leaderEpoch: number; transferred: boolean }>> {
    const node = this.#node;
    if (node === null || !node.conf.voters.includes(to)) {
      return errorResult("INVALID_REQUEST", `${JSON.stringify(to)} is not a replica of this partition: one of ${(node?.conf.voters ?? REPLICA_IDS).join(", ")}.`, { field: "replica" });
    }
    const refused = this.notLeader();
    if (refused !== null) return refused;
    if (to === node.id) return { ok: true, leaderReplica: to, leaderEpoch: node.term, transferred: false };
    const fromTerm = node.term;
    const r = node.transferLeadership(to);
    this.drain(); // also after a refusal: the call may have woken a quiesced leader
    if (!r.ok) return r.code === "notLeader" ? this.notLeader()! : errorResult("INVALID_REQUEST", r.reason, { field: "replica" });
    const deadline = Date.now() + REPLICA_REQUEST_TIMEOUT_MS;
    for (;;) {
      const n = this.#node;
      if (n !== null && n.term > fromTerm && n.leaderId === to) return { ok: true, leaderReplica: to, leaderEpoch: n.term, transferred: true };
      const settledElsewhere = n !== null && n.term > fromTerm && n.leaderId !== null;
      const abandoned = n !== null && n.role === "leader" && n.term === fromTerm && n.leadTransferee === null;
      if (n === null || settledElsewhere || abandoned || Date.now() >= deadline) {
        return errorResult("PREFERRED_LEADER_NOT_AVAILABLE", `Replica ${to} did not take over the leadership of this partition (it may be down or lagging): retry.`, {
          replica: to,
          leaderReplica: n?.leaderId ?? null,
          leaderEpoch: n?.term ?? null,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, REPLICA_TICK_MS));
    }
  }

  // ---- membership (replica reassignment: durable-objects/partition/reassign.ts) ----

  /**
   * At the leader: proposes one single-server membership change (src/raft: only after an entry of
   * the leader's term committed, one uncommitted change at a time) and waits until it is applied
   * here (committed). @returns the change's Raft index; NOT_LEADER_OR_FOLLOWER;
   * REASSIGNMENT_IN_PROGRESS while another change is uncommitted or the leader has not committed
   * in its term yet (retriable by the caller); INVALID_REQUEST when the change does not fit.
   */
  async changeMembership(change: ConfChange): Promise<RpcResult<{ index: number }>> {
    const node = this.#node;
    const refused = this.notLeader();
    if (refused !== null || node === null) return refused!;
    const r = node.proposeConfChange(change);
    if (!r.ok) {
      this.drain(); // the call may have woken a quiesced leader
      if (r.code === "notLeader" || r.code === "transferInProgress") return this.#proposalRefused(r);
      if (r.code === "invalidConfChange") return errorResult("INVALID_REQUEST", `Membership change refused: ${r.reason}.`, { change });
      return errorResult("REASSIGNMENT_IN_PROGRESS", `Membership change not possible now: ${r.reason}.`, { change });
    }
    this.drain();
    const answer = (await this.#waitApplied(r.index, r.term)) as ErrorResult | undefined;
    if (answer !== undefined && answer !== null && "code" in answer) return answer;
    return { ok: true, index: r.index };
  }

  // ---- the clock ----

  /** The `raft/tick` timer: one Raft tick, and the next one set. */
  onTick(dueMs: number): void {
    if (this.#memberId === null || this.#faults.crashed === true) return;
    const now = Date.now();
    this.#clockQuiesced = this.#node?.quiesced === true;
    const period = this.#clockQuiesced ? this.#quiescedTickMs : REPLICA_TICK_MS;
    const next = dueMs + period;
    this.#host.timers.set("tick", next > now ? next : now + period);
    const node = this.#node;
    if (node === null || this.#faults.paused === true) return;
    this.#ticks++;
    node.tick();
    this.drain();
  }

  /** Moves the tick timer when the node quiesced or woke since it was set (after every input). */
  #syncClock(): void {
    const node = this.#node;
    if (node === null || this.#faults.crashed === true || node.quiesced === this.#clockQuiesced) return;
    this.#clockQuiesced = node.quiesced;
    const now = Date.now();
    // Woken: it was quiesced until now (inSyncReplicas keeps the quiesced window one election timeout longer).
    if (!node.quiesced) this.#quiescedMs = now;
    this.#host.timers.set("tick", now + (node.quiesced ? this.#quiescedTickMs : REPLICA_TICK_MS));
  }

  // ---- the Ready loop ----

  /** Persists, sends and applies every pending Ready (see the file comment). Never awaits. */
  drain(): void {
    try {
      this.#readyLoop();
      this.#syncClock();
    } catch (err) {
      console.error(`Partition replica ${this.#memberId}: the Ready loop failed; resetting the object`, err);
      this.#node = null;
      this.#host.abort(`partition replica Ready loop failed: ${String(err)}`);
      throw err;
    }
  }

  #readyLoop(): void {
    const node = this.#node;
    if (node === null) return;
    const journal = this.#journal;
    while (node.hasReady()) {
      const rd = node.ready();
      // Snapshots are pulled, never installed by the core (see `deliver`): one here is a bug.
      if (rd.snapshot !== undefined) throw new RaftContractError(`partition replica ${this.#memberId}: the core installed a Raft snapshot; partitions pull theirs`);
      if (rd.entries.length > 0 || rd.hardState !== undefined) {
        this.#host.transaction(() => {
          journal.writeEntries(rd.entries);
          if (rd.hardState !== undefined) journal.writeHardState(rd.hardState);
        });
      }
      node.persisted(rd);
      this.#send(rd.messages);
      let pendingApplied = -1;
      const flushApplied = (): void => {
        if (pendingApplied < 0) return;
        const at = pendingApplied;
        this.#host.transaction(() => journal.writeApplied(at));
        pendingApplied = -1;
      };
      for (const e of rd.committedEntries) {
        if (e.type !== "normal") {
          // A no-op or a configuration entry: no Kafka offset, only the applied index moves.
          pendingApplied = e.index;
          this.#settle(e, undefined);
          continue;
        }
        pendingApplied = -1;
        const result = this.#host.apply({ index: e.index, term: e.term, data: e.data }, () => journal.writeApplied(e.index));
        this.#settle(e, result);
      }
      flushApplied();
      node.advance(rd);
    }
    this.#maybeCompact(node);
  }

  /** Drops journal entries no replica needs any more (see the file comment). */
  #maybeCompact(node: RaftNode): void {
    const { keepEntries, leaderKeepEntries } = this.#retention;
    let upTo = node.appliedIndex - keepEntries;
    if (node.role === "leader") {
      upTo = node.appliedIndex;
      // Learners too: a replica joining by reassignment is not compacted past while it catches up.
      for (const id of [...node.conf.voters, ...node.conf.learners]) if (id !== node.id) upTo = Math.min(upTo, node.matchOf(id) ?? 0);
      // A follower further behind than this catches up by snapshot.
      upTo = Math.max(upTo, node.appliedIndex - leaderKeepEntries);
    }
    if (upTo - node.snapshotMeta.index < keepEntries) return;
    const snap = node.compact(upTo, new Uint8Array(0));
    this.#host.transaction(() => this.#journal.writeSnapshot(snap, false));
  }

  #send(messages: readonly Message[]): void {
    sendMessages(messages, {
      durable: () => ({ lastIndex: this.#journal.lastIndex, term: this.#journal.hardState.term }),
      check: (cond, message) => this.#check(cond, message),
      faults: () => this.#faults,
      deliver: (to, kept) => this.#host.deliver(to, kept),
    });
  }

  #settle(e: Entry, result: unknown): void {
    this.#waiters.settle(
      e.index,
      e.term,
      () => result,
      (term) => {
        const refused = this.notLeader() ?? errorResult("NOT_LEADER_OR_FOLLOWER", "The leader changed while the request waited.", { replica: this.#memberId, leaderReplica: null });
        return { ...refused, message: `The request at index ${e.index} (term ${term}) was lost with a leader change; nothing of it was applied. ${refused.message}` };
      },
    );
  }

  #waitApplied(index: number, term: number): Promise<unknown> {
    return this.#waiters.wait(index, term, REPLICA_REQUEST_TIMEOUT_MS, () =>
      errorResult("REQUEST_TIMED_OUT", `The request at index ${index} (term ${term}) was not committed within ${REPLICA_REQUEST_TIMEOUT_MS} ms: it may still commit.`, { index, term }),
    );
  }

  // ---- life cycle and faults ----

  #startNode(): void {
    this.#generation++;
    const storage = this.#journal.load();
    this.#node = new RaftNode(
      {
        id: this.#memberId!,
        electionTicks: REPLICA_ELECTION_TICKS,
        heartbeatTicks: 1,
        quiesce: true,
        random: randomBelow,
      },
      storage,
    );
    // A new node is awake: a quiesced (slow) timer left from before the restart is brought forward.
    this.#clockQuiesced = false;
    this.#ticks = 0;
    const due = this.#host.timers.dueMs("tick");
    if (due === undefined || due > Date.now() + REPLICA_TICK_MS) this.#host.timers.set("tick", Date.now() + REPLICA_TICK_MS);
  }

  /** Fault injection (the caller checked the gates and the shape). */
  setFaults(f: RaftFaults): void {
    const wasCrashed = this.#faults.crashed === true;
    this.#faults = f;
    if (f.crashed === true && !wasCrashed) {
      this.#node = null;
      this.#generation++;
      this.#fail(new Error(this.crashedMessage()));
    }
    if (f.crashed !== true && wasCrashed && this.#memberId !== null) this.#startNode();
  }

  crashedMessage(): string {
    return `Partition replica ${this.#memberId ?? "?"} is crashed (fault injection).`;
  }

  #fail(err: Error): void {
    this.#waiters.failAll(err);
  }

  #check(cond: boolean, message: string): asserts cond {
    if (!cond) throw new RaftContractError(`partition replica ${this.#memberId}: ${message}`);
  }
}

// ---- the replicated command (a normal entry's data) ----

/**
 * A produce request as proposed by the leader and decided by every replica at apply: the batches
 * as received (CRC checked by the leader), the time it was decided (producer state, segment
 * roll) and the LogAppendTime stamp (null under CreateTime). Or the expiry of idle producers, or
 * a deleteRecords.
 */
export type ReplicatedCommand =
  | { kind: "append"; nowMs: number; logAppendTime: number | null; batches: Uint8Array[] }
  /** Producers idle since before `beforeMs` are forgotten (decided by the leader's clock and configs). */
  | { kind: "expireProducers"; beforeMs: number }
  /**
   * deleteRecords (KIP-107): the log start offset moves to `offset` (already resolved by the
   * leader: never -1, never above its high watermark) on every replica.
   */
  | { kind: "deleteRecords"; offset: number }
  /**
   * A config change (the metadata store's push, absolute values: the topic's effective configs
   * and policies), applied by every replica at the same Raft index. `configsOffset`: the
   * metadata offset the configs reflect (absent from MetadataDO pushes); every replica ignores
   * the entry when it holds newer configs (src/partition/configs-order.ts).
   */
  | { kind: "configs"; configs: TopicConfigs; configsOffset?: number }
  /**
   * A subscription write (create, delete, a configuration change, or a flush of cursor updates:
   * acks, nacks, redelivery counts, resets), decided again at apply by every replica's
   * subscriptions room (docs/RAFT.md "Subscriptions are replicated"; partition/replicated-subs.ts).
   */
  | { kind: "subs"; change: SubsChange }
  /**
   * A Durable Streams write (src/streams/replicated.ts), decided by every replica's streams room
   * at apply; `blobs`: the request's body parts.
   */
  | { kind: "stream"; stream: StreamEntry; blobs: Uint8Array[] };

/** Encodes: u32 header length, the JSON header, then per batch (or stream blob) u32 length and its bytes. */
export function encodeReplicated(cmd: ReplicatedCommand): Uint8Array {
  const batches = cmd.kind === "append" ? cmd.batches : cmd.kind === "stream" ? cmd.blobs : [];
  const header = new TextEncoder().encode(
    JSON.stringify(
      cmd.kind === "append"
        ? { kind: cmd.kind, nowMs: cmd.nowMs, logAppendTime: cmd.logAppendTime, n: batches.length }
        : cmd.kind === "stream"
          ? { kind: cmd.kind, stream: cmd.stream, n: batches.length }
          : cmd,
    ),
  );
  let size = 4 + header.length;
  for (const b of batches) size += 4 + b.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, header.length);
  out.set(header, 4);
  let at = 4 + header.length;
  for (const b of batches) {
    view.setUint32(at, b.length);
    out.set(b, at + 4);
    at += 4 + b.length;
  }
  return out;
}

/** Decodes {@link encodeReplicated}. @throws Error on malformed data (a bug: only the leader writes entries). */
export function decodeReplicated(data: Uint8Array): ReplicatedCommand {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const hl = view.getUint32(0);
  const header = JSON.parse(new TextDecoder().decode(data.subarray(4, 4 + hl))) as {
    kind: string;
    nowMs: number;
    beforeMs: number;
    offset: number;
    configs?: TopicConfigs;
    configsOffset?: number;
    change?: SubsChange;
    logAppendTime?: number | null;
    stream?: StreamEntry;
    n?: number;
  };
  if (header.kind === "expireProducers") return { kind: "expireProducers", beforeMs: header.beforeMs };
  if (header.kind === "deleteRecords") return { kind: "deleteRecords", offset: header.offset };
  if (header.kind === "configs") return { kind: "configs", configs: header.configs!, ...(header.configsOffset !== undefined ? { configsOffset: header.configsOffset } : {}) };
  if (header.kind === "subs") return { kind: "subs", change: header.change! };
  if (header.kind !== "append" && header.kind !== "stream") throw new Error(`unknown replicated command ${header.kind}`);
  const batches: Uint8Array[] = [];
  let at = 4 + hl;
  for (let i = 0; i < (header.n ?? 0); i++) {
    const len = view.getUint32(at);
    // A copy: planning rewrites headers in place, and the entry's bytes stay as proposed.
    batches.push(data.slice(at + 4, at + 4 + len));
    at += 4 + len;
  }
  if (at !== data.length) throw new Error(`replicated command has ${data.length - at} trailing bytes`);
  if (header.kind === "stream") return { kind: "stream", stream: header.stream!, blobs: batches };
  return { kind: "append", nowMs: header.nowMs, logAppendTime: header.logAppendTime ?? null, batches };
}
