/**
 * RaftMemberDO: one member of a Raft group (docs/RAFT.md, "Raft member Durable Objects"), the
 * shell around the pure core of src/raft/. A group id names its members: member `m1` of group
 * `g` is the object `g/m1` of the `RAFT_MEMBER` namespace (src/raft/group.ts).
 *
 * - **Storage**: the Raft journal (room `raft`: hard state, log, latest snapshot, the group
 *   configuration; durable-objects/raft/journal.ts) and the state machine's own room, in this
 *   object's SQLite storage.
 * - **The Ready loop** (`#drain`), run after every input (a tick, delivered messages, a
 *   proposal, a read): each Ready's snapshot, entries and hard state are written, and its
 *   committed entries applied with the new applied index, in ONE `transactionSync`; only then
 *   `persisted(rd)` and the messages are sent (the core refuses to hand them out earlier), so
 *   nothing leaves before the state it depends on is written. The platform's output gate adds
 *   to that: outgoing calls wait until the write is durable. The loop never awaits, so no input
 *   arrives between `ready()` and `advance()`.
 * - **Ticks** come from the alarm, through the base's one schedule: room `raft`, key `tick`,
 *   every `tickMs` while the member runs, every `quiescedTickMs` while it is quiesced (an idle
 *   group: docs/RAFT.md "Quiescence"); the timer moves at once when the node quiesces or wakes.
 * - **Messages** are RPC calls `deliver(messages)` to the peer objects: one call per peer per
 *   Ready (batched), not awaited by the sender (pipelined: Raft's messages are one-way, and its
 *   answers come back as messages). A failed call is a lost message, which Raft tolerates.
 * - **Proposals** (`propose`) wait until the entry at their (index, term) is applied here and
 *   answer the state machine's result; another entry applied at that index means it was lost
 *   with a leader change (NOT_LEADER: safe to retry). A proposal that waits longer than
 *   `requestTimeoutMs` answers REQUEST_TIMED_OUT: its outcome is unknown.
 * - **Reads** (`read`) are linearizable through ReadIndex: served once this member has applied
 *   the read's index.
 * - **Sweeps**: a state machine with side effects driven by committed state (`sweep`, the
 *   metadata machine's partition lifecycle) has them run by the leader every
 *   {@link SWEEP_EVERY_TICKS} ticks, one sweep at a time.
 * - **Fault injection** (dev and test builds only: durable-objects/raft/faults.ts).
 *
 * Start-up (the base's guarded start-up): a bootstrapped member rebuilds its node from the
 * journal (persistence contract rule 6) and sets its tick timer if it is missing.
 */
import type { Env } from "../src/env.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../src/protocol/errors.ts";
import {
  type ApplyResult,
  type JsonValue,
  type LocationHint,
  type RaftFaults,
  type RaftGroupConfig,
  type RaftMemberRpc,
  type RaftMemberStatus,
  type ResolvedRaftGroupConfig,
  raftMemberName,
  resolveGroupConfig,
} from "../src/raft/group.ts";
import { RaftContractError, RaftNode, type ConfChange, type ConfState, type Entry, type Message, type NodeId, type ProposeError } from "../src/raft/index.ts";
import { SqliteDurableObject, lazyTimers } from "./base.ts";
import { ApplyWaiters } from "./raft/apply-waiters.ts";
import { checkFaults, faultsEnabled, linkDropped } from "./raft/faults.ts";
import { RAFT_ROOM, RaftJournal } from "./raft/journal.ts";
import { randomBelow } from "./raft/random.ts";
import { sendMessages } from "./raft/send.ts";
import { STATE_MACHINES, type ReplicatedStateMachine } from "./raft/state-machine.ts";

/** A linearizable read waiting for its ReadState (index undefined) or for the apply of its index. */
interface ReadWaiter {
  query: JsonValue;
  /** Whether the answer is the state machine's `query` (false: `serve` answers after, with null here). */
  evaluate: boolean;
  index: number | undefined;
  settle: (r: RpcResult<{ index: number; result: JsonValue }>) => void;
  fail: (err: Error) => void;
}

type MemberStub = DurableObjectStub<Rpc.DurableObjectBranded & RaftMemberRpc>;

/** Ticks between two sweeps of the leader's state machine (2 s at the default 100 ms tick; counted in wall time, so a quiesced leader keeps the period). */
export const SWEEP_EVERY_TICKS = 20;

export class RaftMemberDO extends SqliteDurableObject<Env> implements RaftMemberRpc {
  readonly #journal = new RaftJournal(this.sql);
  readonly #machines = new Map<string, ReplicatedStateMachine>(STATE_MACHINES.map((f) => f(this.sql)).map((m) => [m.name, m]));
  readonly #timers = lazyTimers(() => this.timers("raft"));
  #memberId: NodeId | null = null;
  #config: ResolvedRaftGroupConfig | null = null;
  #node: RaftNode | null = null;
  #machine: ReplicatedStateMachine | null = null;
  #faults: RaftFaults = {};
  /** Resolved when a pause ends. */
  #unpause: { promise: Promise<void>; resolve: () => void } | null = null;
  /** Proposals waiting for their entry to apply. */
  readonly #proposals = new ApplyWaiters<RpcResult<{ index: number; term: number; result: ApplyResult }>>();
  readonly #reads = new Map<string, ReadWaiter>();
  readonly #stubs = new Map<NodeId, MemberStub>();
  /** When the last sweep started (or this member last was not the leader; ms); whether one is running. */
  #lastSweepMs = 0;
  /** Whether this member swept since it last became the leader (or restarted). */
  #sweptAsLeader = false;
  #sweeping = false;
  /** Whether the pending tick timer is the quiesced (slow) one; ticks taken since the node started. */
  #clockQuiesced = false;
  #ticks = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp([RAFT_ROOM, ...[...this.#machines.values()].map((m) => m.schema)]);
  }

  protected override onStart(): void {
    const g = this.#journal.group();
    if (g === null) return;
    this.#memberId = g.memberId;
    // Resolved again: a configuration stored before a setting existed gets its default.
    const resolved = resolveGroupConfig(g.config);
    this.#config = typeof resolved === "string" ? g.config : resolved;
    this.#startNode();
  }

  // =====================================================================================
  // RPC
  // =====================================================================================

  async bootstrap(config: RaftGroupConfig, memberId: NodeId): Promise<RpcResult<{ status: RaftMemberStatus }>> {
    this.#alive();
    const resolved = resolveGroupConfig(config);
    if (typeof resolved === "string") return errorResult("INVALID_REQUEST", `Invalid Raft group configuration: ${resolved}`);
    const machine = this.#machines.get(resolved.stateMachine);
    if (machine === undefined) return errorResult("INVALID_REQUEST", `Unknown state machine ${JSON.stringify(resolved.stateMachine)}: one of ${[...this.#machines.keys()].join(", ")}.`);
    if (typeof memberId !== "string" || memberId === "") return errorResult("INVALID_REQUEST", "memberId must be a member id.");
    const existing = this.#journal.group();
    if (existing !== null) {
      if (existing.memberId !== memberId || existing.config.groupId !== resolved.groupId) {
        return errorResult("INVALID_REQUEST", `This object is already member ${existing.memberId} of group ${existing.config.groupId}.`, {
          groupId: existing.config.groupId,
          memberId: existing.memberId,
        });
      }
      return { ok: true, status: this.#status() };
    }
    // A member listed in the configuration starts the group with every listed member as a
    // voter; a member not listed joins empty and learns the configuration from the leader's
    // log once a changeMembership adds it.
    const listed = resolved.members.some((m) => m.id === memberId);
    const conf: ConfState = listed ? { voters: resolved.members.map((m) => m.id).sort(), learners: [] } : { voters: [], learners: [] };
    this.ctx.storage.transactionSync(() => {
      this.#journal.saveGroup(memberId, resolved);
      this.#journal.bootstrap(conf);
    });
    this.#memberId = memberId;
    this.#config = resolved;
    this.#startNode();
    return { ok: true, status: this.#status() };
  }

  async deliver(messages: Message[]): Promise<void> {
    const node = this.#node;
    // Not bootstrapped yet, crashed or stopped: the messages are lost (as a crashed process's
    // connection would lose them; the sender does not wait for an answer either way).
    if (node === null || this.#faults.crashed === true || this.#faults.paused === true) return;
    for (const m of messages) {
      if (m.to !== node.id) continue; // meant for an earlier incarnation of the name: lost
      if (linkDropped(this.#faults, "from", m.from)) continue; // an injected link fault
      node.step(m);
    }
    this.#drain();
  }

  async propose(command: Uint8Array): Promise<RpcResult<{ index: number; term: number; result: ApplyResult }>> {
    this.#alive();
    if (!(command instanceof Uint8Array)) return errorResult("INVALID_REQUEST", "A command is bytes (Uint8Array).");
    const paused = await this.#waitWhilePaused();
    if (paused !== null) return paused;
    const node = this.#requireNode();
    if (!(node instanceof RaftNode)) return node;
    const r = node.propose(command);
    if (!r.ok) {
      this.#drain(); // a refusal may have woken a quiesced member: its wake requests go out, its clock speeds up
      return this.#refused(r);
    }
    const answer = this.#waitApplied(r.index, r.term);
    this.#drain();
    return await answer;
  }

  read(query: JsonValue): Promise<RpcResult<{ index: number; result: JsonValue }>> {
    return this.#linearizable(query, true);
  }

  async serve(query: JsonValue): Promise<RpcResult<{ index: number; result: JsonValue }>> {
    const r = await this.#linearizable(query, false);
    if (!r.ok) return r;
    const machine = this.#machine;
    if (machine?.serve === undefined) return errorResult("INVALID_REQUEST", `The state machine of group ${this.#config?.groupId} serves no such reads.`);
    // Applied state here is at or past the read's index: the answer is linearizable.
    return { ok: true, index: r.index, result: await machine.serve(query) };
  }

  async #linearizable(query: JsonValue, evaluate: boolean): Promise<RpcResult<{ index: number; result: JsonValue }>> {
    this.#alive();
    const paused = await this.#waitWhilePaused();
    if (paused !== null) return paused;
    const node = this.#requireNode();
    if (!(node instanceof RaftNode)) return node;
    const ctx = crypto.randomUUID();
    const r = node.readIndex(ctx);
    if (!r.ok) {
      this.#drain(); // as in propose
      return this.#notLeader(r.leaderId);
    }
    const answer = new Promise<RpcResult<{ index: number; result: JsonValue }>>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.#reads.delete(ctx)) resolve(errorResult("REQUEST_TIMED_OUT", `The read was not confirmed within ${this.#config?.requestTimeoutMs} ms.`));
      }, this.#config!.requestTimeoutMs);
      this.#reads.set(ctx, {
        query,
        evaluate,
        index: undefined,
        settle: (res) => {
          clearTimeout(timer);
          resolve(res);
        },
        fail: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
    });
    this.#drain();
    return await answer;
  }

  async localRead(query: JsonValue): Promise<RpcResult<{ index: number; result: JsonValue }>> {
    this.#alive();
    const node = this.#requireNode();
    if (!(node instanceof RaftNode)) return node;
    return { ok: true, index: node.appliedIndex, result: this.#machine!.query(query) };
  }

  async changeMembership(change: ConfChange, locationHint?: LocationHint): Promise<RpcResult<{ index: number; term: number; conf: ConfState }>> {
    this.#alive();
    const node = this.#requireNode();
    if (!(node instanceof RaftNode)) return node;
    if (typeof change !== "object" || change === null || !["addLearner", "promote", "addVoter", "remove"].includes(change.type) || typeof change.node !== "string") {
      return errorResult("INVALID_REQUEST", "A membership change is {type: addLearner | promote | addVoter | remove, node}.");
    }
    if (locationHint !== undefined) {
      // Only the caller that first reaches the new member's object places it: this leader
      // sends it the log, so the hint is recorded here.
      const members = this.#config!.members.filter((m) => m.id !== change.node);
      const config = resolveGroupConfig({ ...this.#config!, members: [...members, { id: change.node, locationHint }] });
      if (typeof config === "string") return errorResult("INVALID_REQUEST", config);
      this.#journal.saveGroup(this.#memberId!, config);
      this.#config = config;
      this.#stubs.delete(change.node);
    }
    const r = node.proposeConfChange({ type: change.type, node: change.node });
    if (!r.ok) {
      this.#drain(); // as in propose
      return this.#refused(r);
    }
    const answer = this.#waitApplied(r.index, r.term);
    this.#drain();
    const done = await answer;
    if (!done.ok) return done;
    return { ok: true, index: r.index, term: r.term, conf: node.conf };
  }

  async transferLeadership(to: NodeId): Promise<RpcResult<Record<never, never>>> {
    this.#alive();
    const node = this.#requireNode();
    if (!(node instanceof RaftNode)) return node;
    const r = node.transferLeadership(to);
    if (!r.ok) {
      this.#drain(); // as in propose
      return r.code === "notLeader" ? this.#notLeader(node.leaderId) : errorResult("INVALID_REQUEST", r.reason);
    }
    this.#drain();
    return { ok: true };
  }

  async status(): Promise<RpcResult<{ status: RaftMemberStatus }>> {
    this.#alive();
    const node = this.#requireNode();
    if (!(node instanceof RaftNode)) return node;
    return { ok: true, status: this.#status() };
  }

  async setFaults(faults: RaftFaults): Promise<RpcResult<{ faults: RaftFaults }>> {
    if (!faultsEnabled(this.env)) {
      return errorResult("INVALID_REQUEST", "Raft fault injection is not available: not in this build, or EDGELOG_RAFT_FAULTS is not '1' (docs/RAFT.md).", { faultInjection: false });
    }
    const f = checkFaults(faults);
    if (typeof f === "string") return errorResult("INVALID_REQUEST", `Invalid faults: ${f}`);
    const wasCrashed = this.#faults.crashed === true;
    this.#faults = f;
    if (f.crashed === true && !wasCrashed) this.#crash();
    if (f.crashed !== true && wasCrashed && this.#config !== null) this.#startNode();
    if (f.paused === true && this.#unpause === null) {
      let resolve = () => {};
      const promise = new Promise<void>((r) => (resolve = r));
      this.#unpause = { promise, resolve };
    } else if (this.#unpause !== null) {
      this.#unpause.resolve();
      this.#unpause = null;
    }
    return { ok: true, faults: f };
  }

  // =====================================================================================
  // The clock
  // =====================================================================================

  protected override onTimer(room: string, key: string, dueMs: number): void {
    // A crashed member has no clock: the tick stops until setFaults({}) restarts it.
    if (room !== "raft" || key !== "tick" || this.#config === null || this.#faults.crashed === true) return;
    // Keep the cadence: the next tick is one period after this one was due, so an alarm that
    // fires a little late does not stretch every later tick (and the election timeout) with it.
    const now = Date.now();
    this.#clockQuiesced = this.#node?.quiesced === true;
    const period = this.#periodMs();
    const next = dueMs + period;
    this.#timers.set("tick", next > now ? next : now + period);
    const node = this.#node;
    if (node === null || this.#faults.paused === true) return;
    this.#ticks++;
    node.tick();
    this.#drain();
    this.#maybeSweep(node);
  }

  /**
   * The period of the tick timer now: `tickMs`, or `quiescedTickMs` while the node is quiesced.
   * A group whose state machine sweeps (the metadata quorum) ticks at least every sweep period
   * while quiesced, on every member: the leader keeps sweeping on time, and a dead leader is
   * noticed (missed quiesce heartbeats) within 2-3 sweep periods, so pending sweep work resumes.
   */
  #periodMs(): number {
    const c = this.#config!;
    const node = this.#node;
    if (node === null || !node.quiesced) return c.tickMs;
    if (this.#machine?.sweep !== undefined) return Math.min(c.quiescedTickMs, SWEEP_EVERY_TICKS * c.tickMs);
    return c.quiescedTickMs;
  }

  /** Moves the tick timer when the node quiesced or woke since it was set (after every input). */
  #syncClock(): void {
    const node = this.#node;
    if (node === null || this.#config === null || this.#faults.crashed === true || node.quiesced === this.#clockQuiesced) return;
    this.#clockQuiesced = node.quiesced;
    this.#timers.set("tick", Date.now() + this.#periodMs());
  }

  /** Starts the state machine's sweep (if it has one) on the leader, every SWEEP_EVERY_TICKS ticks, one at a time. */
  #maybeSweep(node: RaftNode): void {
    const machine = this.#machine;
    const now = Date.now();
    if (node.role !== "leader") this.#sweptAsLeader = false;
    if (machine?.sweep === undefined || node.role !== "leader" || this.#sweeping) return;
    // A new leader sweeps at once (`firstOfTerm`: the machine only notes the work it finds
    // pending, whose proposer may still be doing it), then every period.
    const firstOfTerm = !this.#sweptAsLeader;
    if (!firstOfTerm && now - this.#lastSweepMs < SWEEP_EVERY_TICKS * this.#config!.tickMs) return;
    this.#sweptAsLeader = true;
    this.#lastSweepMs = now;
    this.#sweeping = true;
    // Not awaited by the alarm: a sweep calls other objects and proposes, which needs ticks.
    void machine
      .sweep({ env: this.env, groupId: this.#config!.groupId, firstOfTerm, propose: (data) => this.propose(data) })
      .catch((err: unknown) => console.warn(`Raft member ${this.#memberId} of group ${this.#config?.groupId}: the sweep failed`, err))
      .finally(() => {
        this.#sweeping = false;
      });
  }

  // =====================================================================================
  // The Ready loop
  // =====================================================================================

  /**
   * Persists, sends and applies every pending Ready (see the file comment). Never awaits.
   * A throw here (a broken contract, a failed write, a state machine bug) leaves the node
   * between ready() and advance() with memory ahead of storage: the object is reset
   * (`ctx.abort`) and the next call restarts it from its journal, as etcd panics on a failed
   * write rather than run on.
   */
  #drain(): void {
    try {
      this.#readyLoop();
      this.#syncClock();
    } catch (err) {
      console.error(`Raft member ${this.#memberId} of group ${this.#config?.groupId}: the Ready loop failed; resetting the object`, err);
      this.#node = null;
      this.ctx.abort(`Raft Ready loop failed: ${String(err)}`);
      throw err;
    }
  }

  #readyLoop(): void {
    const node = this.#node;
    const machine = this.#machine;
    if (node === null || machine === null) return;
    while (node.hasReady()) {
      const rd = node.ready();
      const results = new Map<number, ApplyResult>();
      this.ctx.storage.transactionSync(() => {
        if (rd.snapshot !== undefined) {
          this.#journal.writeSnapshot(rd.snapshot, true);
          machine.restore(rd.snapshot.data);
        }
        this.#journal.writeEntries(rd.entries);
        if (rd.hardState !== undefined) this.#journal.writeHardState(rd.hardState);
        for (const e of rd.committedEntries) if (e.type === "normal") results.set(e.index, machine.apply({ index: e.index, term: e.term, data: e.data }));
        if (rd.committedEntries.length > 0) this.#journal.writeApplied(rd.committedEntries[rd.committedEntries.length - 1]!.index);
      });
      node.persisted(rd);
      this.#send(rd.messages);
      for (const e of rd.committedEntries) this.#settleApplied(e, results.get(e.index) ?? null);
      for (const rs of rd.readStates) {
        const w = this.#reads.get(rs.ctx);
        if (w !== undefined) w.index = rs.index;
      }
      for (const ctx of rd.droppedReads) {
        const w = this.#reads.get(ctx);
        if (w === undefined) continue;
        this.#reads.delete(ctx);
        w.settle(this.#notLeader(node.leaderId));
      }
      node.advance(rd);
      this.#serveReads(node.appliedIndex);
    }
    this.#maybeCompact(node, machine);
  }

  /** Takes a snapshot every `compactEveryEntries` applied entries and drops the log before it (contract rule 7). */
  #maybeCompact(node: RaftNode, machine: ReplicatedStateMachine): void {
    if (node.appliedIndex - node.snapshotMeta.index < this.#config!.compactEveryEntries) return;
    const snap = node.compact(node.appliedIndex, machine.snapshot());
    this.ctx.storage.transactionSync(() => this.#journal.writeSnapshot(snap, false));
  }

  /** Sends a Ready's messages (./raft/send.ts): one `deliver` call per peer, not awaited. */
  #send(messages: readonly Message[]): void {
    sendMessages(messages, {
      durable: () => ({ lastIndex: this.#journal.lastIndex, term: this.#journal.hardState.term }),
      check: (cond, message) => this.#check(cond, message),
      faults: () => this.#faults,
      deliver: (to, kept) => this.#stub(to).deliver(kept),
      // A broken stub must not be reused: the next send makes a new one.
      lost: (to) => this.#stubs.delete(to),
    });
  }

  #stub(to: NodeId): MemberStub {
    let s = this.#stubs.get(to);
    if (s === undefined) {
      const hint = this.#config!.members.find((m) => m.id === to)?.locationHint;
      const ns = this.env.RAFT_MEMBER;
      const id = ns.idFromName(raftMemberName(this.#config!.groupId, to));
      s = hint === undefined ? ns.get(id) : ns.get(id, { locationHint: hint });
      this.#stubs.set(to, s);
    }
    return s;
  }

  #settleApplied(e: Entry, result: ApplyResult): void {
    // Another entry committed at a waiter's index: its proposal was lost with its leader and never commits.
    this.#proposals.settle(
      e.index,
      e.term,
      () => ({ ok: true, index: e.index, term: e.term, result }),
      (term) => this.#notLeader(this.#node?.leaderId ?? null, `The proposal at index ${e.index} (term ${term}) was lost with a leader change; nothing of it was applied.`),
    );
  }

  #serveReads(applied: number): void {
    for (const [ctx, w] of this.#reads) {
      if (w.index === undefined || w.index > applied) continue;
      this.#reads.delete(ctx);
      w.settle({ ok: true, index: applied, result: w.evaluate ? this.#machine!.query(w.query) : null });
    }
  }

  #waitApplied(index: number, term: number): Promise<RpcResult<{ index: number; term: number; result: ApplyResult }>> {
    const timeoutMs = this.#config!.requestTimeoutMs;
    return this.#proposals.wait(index, term, timeoutMs, () =>
      errorResult("REQUEST_TIMED_OUT", `The proposal at index ${index} (term ${term}) was not applied within ${timeoutMs} ms: it may still commit; retry idempotently.`, { index, term }),
    );
  }

  // =====================================================================================
  // Life cycle and faults
  // =====================================================================================

  /** Builds the node from the journal (contract rule 6) and makes sure the clock runs. */
  #startNode(): void {
    const config = this.#config!;
    const machine = this.#machines.get(config.stateMachine);
    if (machine === undefined) throw new Error(`Raft member ${this.#memberId}: unknown state machine ${config.stateMachine}`);
    const storage = this.#journal.load();
    this.#machine = machine;
    this.#node = new RaftNode(
      {
        id: this.#memberId!,
        electionTicks: config.electionTicks,
        heartbeatTicks: config.heartbeatTicks,
        quiesce: config.quiesce,
        random: randomBelow,
      },
      storage,
    );
    // A new node is awake: a quiesced (slow) timer left from before the restart is brought forward.
    this.#clockQuiesced = false;
    this.#ticks = 0;
    this.#lastSweepMs = Date.now();
    this.#sweptAsLeader = false;
    const due = this.#timers.dueMs("tick");
    if (due === undefined || due > Date.now() + config.tickMs) this.#timers.set("tick", Date.now() + config.tickMs);
  }

  /** Acts as a crash: the in-memory state is gone, waiting callers see the connection fail. */
  #crash(): void {
    this.#node = null;
    this.#stubs.clear();
    const crashed = new Error(this.#crashedMessage());
    this.#proposals.failAll(crashed);
    for (const w of this.#reads.values()) w.fail(crashed);
    this.#reads.clear();
  }

  #crashedMessage(): string {
    return `Raft member ${this.#memberId ?? "?"} of group ${this.#config?.groupId ?? "?"} is crashed (fault injection).`;
  }

  /** Throws while the member acts crashed: to its callers it is down. */
  #alive(): void {
    if (this.#faults.crashed === true) throw new Error(this.#crashedMessage());
  }

  /** Waits while the member is paused, at most requestTimeoutMs. @returns null to go on, or REQUEST_TIMED_OUT. */
  async #waitWhilePaused(): Promise<ErrorResult | null> {
    const p = this.#unpause;
    if (p === null) return null;
    const timeoutMs = this.#config?.requestTimeoutMs ?? 5000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([p.promise.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs)))]);
    clearTimeout(timer);
    this.#alive();
    return timedOut ? errorResult("REQUEST_TIMED_OUT", `The member did not answer within ${timeoutMs} ms.`) : null;
  }

  #requireNode(): RaftNode | ErrorResult {
    if (this.#node === null) return errorResult("INVALID_REQUEST", "This Raft member is not bootstrapped: call bootstrap(config, memberId) first.", { bootstrapped: false });
    return this.#node;
  }

  // =====================================================================================
  // Answers
  // =====================================================================================

  #status(): RaftMemberStatus {
    const n = this.#node!;
    return {
      groupId: this.#config!.groupId,
      memberId: n.id,
      role: n.role,
      term: n.term,
      leaderId: n.leaderId,
      commitIndex: n.commitIndex,
      appliedIndex: n.appliedIndex,
      lastIndex: n.lastIndex,
      snapshotIndex: n.snapshotMeta.index,
      conf: n.conf,
      quiesced: n.quiesced,
      nextTickInMs: ((due) => (due === undefined ? null : due - Date.now()))(this.#timers.dueMs("tick")),
      ticks: this.#ticks,
    };
  }

  /** NOT_LEADER with the leader's identity: its member id, its object's name and the term. */
  #notLeader(leaderId: NodeId | null, message?: string): ErrorResult {
    const groupId = this.#config!.groupId;
    return errorResult(
      "NOT_LEADER",
      message ??
        (leaderId === null
          ? `Member ${this.#memberId} is not the leader of group ${groupId}; an election is running.`
          : `Member ${this.#memberId} is not the leader of group ${groupId}: ${leaderId} is.`),
      {
        groupId,
        leaderId,
        leaderName: leaderId === null ? null : raftMemberName(groupId, leaderId),
        term: this.#node?.term ?? null,
      },
    );
  }

  #refused(r: ProposeError): ErrorResult {
    switch (r.code) {
      case "notLeader":
        return this.#notLeader(r.leaderId);
      case "transferInProgress":
        return this.#notLeader(r.leaderId, `Leadership of group ${this.#config!.groupId} is moving to ${r.leaderId}: retry there.`);
      case "tooLarge":
        return errorResult("REQUEST_TOO_LARGE", `The command is too large: ${r.reason}.`);
      default:
        return errorResult("INVALID_REQUEST", `The membership change is refused (${r.code}): ${r.reason}.`, { reason: r.code });
    }
  }

  #check(cond: boolean, message: string): asserts cond {
    if (!cond) throw new RaftContractError(`Raft member ${this.#memberId}: ${message}`);
  }
}
