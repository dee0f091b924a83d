/**
 * Deterministic simulator of a Raft group (TigerBeetle VOPR style; docs/RAFT.md).
 *
 * One seed fixes everything: cluster size (1, 3 or 5), fault rates, per-member clock rate
 * (skew) and disk latency, the network's delays, drops, duplicates and reorderings, partitions
 * (symmetric and one-way) and heals, crashes and restarts (also between persisting a Ready and
 * sending its messages), membership churn, compaction, and the clients' operations on a
 * replicated key-value store. Simulated time only: no timers, no Math.random.
 *
 * Members are real {@link RaftNode}s driven by a shell that follows the persistence contract:
 * a Ready is written to the member's simulated disk (taking `disk` ms, the member queuing its
 * input meanwhile), then its messages are sent, then committed entries are applied.
 *
 * Checked after every step (each delivered message, tick, client request, disk write):
 * - election safety: at most one leader per term, ever;
 * - log matching: two durable logs holding an entry with the same index and term hold the same
 *   entries up to it (each durable entry carries a hash chained over its prefix);
 * - leader completeness: a new leader's log holds every entry applied anywhere so far;
 * - state machine safety: no two members apply different entries at one index, and snapshots
 *   of one index are the same bytes;
 * and at the end: the key-value history is linearizable (test/sim/linearizability.ts), and after
 * the faults stop a leader is elected and every member of its configuration applies its commit.
 */
import { RaftContractError, type ConfChange, type Entry, type HardState, type Message, type NodeId, type RaftStorageState, type Snapshot } from "../../src/raft/index.ts";
import { bootstrapStorage, type RaftNode } from "../../src/raft/node.ts";
import { checkKv, type KvInput, type KvOutput, type Operation } from "./linearizability.ts";
import { makeNode, type Mutation } from "./mutants.ts";
import { Rng } from "./rng.ts";

export interface SimOptions {
  seed: number;
  /** A deliberate bug to switch on (mutation check). */
  mutation?: Mutation;
  /** Force the cluster size (else drawn from the seed). */
  nodes?: 1 | 3 | 5;
  /** Simulated milliseconds of faults and client load. @default 2000 */
  faultMs?: number;
  /** Simulated milliseconds of quiet at the end (liveness). @default 1500 */
  quietMs?: number;
  /** Quiescence of idle groups (docs/RAFT.md "Quiescence"). @default true */
  quiesce?: boolean;
}

export type ViolationKind = "electionSafety" | "ackedEntryLost" | "logMatching" | "leaderCompleteness" | "stateMachineSafety" | "linearizability" | "assertion" | "liveness";

export interface SimResult {
  seed: number;
  nodes: number;
  violation: { kind: ViolationKind; message: string; atMs: number } | null;
  stats: SimStats;
}

export interface SimStats {
  events: number;
  leadersElected: number;
  maxTerm: number;
  committed: number;
  opsOk: number;
  opsUnknown: number;
  reads: number;
  snapshotsInstalled: number;
  /** InstallSnapshot chunks sent. */
  snapshotChunks: number;
  /** TimeoutNow messages sent (leadership transfers reaching their last step). */
  timeoutNows: number;
  confChanges: number;
  crashes: number;
  crashesAfterPersist: number;
  partitions: number;
  /** Members that quiesced (each time), and woke. */
  quiesces: number;
  wakes: number;
}

class Violation extends Error {
  readonly kind: ViolationKind;
  constructor(kind: ViolationKind, message: string) {
    super(message);
    this.kind = kind;
  }
}

// ---- small helpers ----

const enc = new TextEncoder();
const dec = new TextDecoder();

function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const contentKeys = new WeakMap<Entry, string>();
function contentKey(e: Entry): string {
  let k = contentKeys.get(e);
  if (k === undefined) {
    k = e.type === "normal" ? dec.decode(e.data) : e.type === "noop" ? "noop" : `conf:${JSON.stringify(e.conf)}`;
    contentKeys.set(e, k);
  }
  return k;
}

function chain(prev: number, e: Entry): number {
  return fnv(`${prev}|${e.term}|${contentKey(e)}`);
}

interface KvCommand {
  op: string;
  key: string;
  value: string;
}

class Heap<T extends { t: number; seq: number }> {
  #a: T[] = [];
  get size(): number {
    return this.#a.length;
  }
  push(x: T): void {
    const a = this.#a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.#less(a[i]!, a[p]!)) {
        [a[i], a[p]] = [a[p]!, a[i]!];
        i = p;
      } else break;
    }
  }
  pop(): T | undefined {
    const a = this.#a;
    if (a.length === 0) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.#less(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.#less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
  #less(x: T, y: T): boolean {
    return x.t < y.t || (x.t === y.t && x.seq < y.seq);
  }
}

interface Ev {
  t: number;
  seq: number;
  fn: () => void;
}

/** A client request in flight at a member. */
interface Req {
  client: Client;
  opIndex: number;
  cmd: KvCommand;
  isRead: boolean;
}

interface Client {
  id: number;
  busy: boolean;
  /** History index of the outstanding op, or -1. */
  current: number;
  leaderHint: NodeId | null;
}

/** One member: the durable disk, the volatile RaftNode and state machine, and the shell loop. */
class SimNode {
  readonly id: NodeId;
  tickMs: number;
  diskLo: number;
  diskHi: number;
  raft: RaftNode | null = null;
  incarnation = 0;
  busy = false;
  inbox: (() => void)[] = [];
  // durable
  hard: HardState;
  snap: Snapshot;
  snapHash = 0;
  entries: Entry[] = [];
  hashes: number[] = [];
  // volatile state machine
  kv = new Map<string, string>();
  applied = 0;
  proposals = new Map<string, Req>();
  reads = new Map<string, { req: Req; index: number }>();
  readsWaiting = new Map<string, Req>();
  // the shell's clock: the pending tick is the slow (quiesced) one; set the next tick (bumps the generation)
  slowClock = false;
  setClock: (delayMs: number) => void = () => {};

  constructor(id: NodeId, storage: RaftStorageState, tickMs: number, diskLo: number, diskHi: number) {
    this.id = id;
    this.hard = storage.hardState;
    this.snap = storage.snapshot;
    this.tickMs = tickMs;
    this.diskLo = diskLo;
    this.diskHi = diskHi;
  }
}

const NODE_IDS = ["n1", "n2", "n3", "n4", "n5"];

export function runSeed(opts: SimOptions): SimResult {
  const sim = new Simulation(opts);
  return sim.run();
}

class Simulation {
  readonly rng: Rng;
  readonly opts: SimOptions;
  readonly mutation: Mutation | undefined;
  now = 0;
  seq = 0;
  readonly queue = new Heap<Ev>();
  readonly nodes = new Map<NodeId, SimNode>();
  readonly blocked = new Set<string>();
  readonly stats: SimStats = {
    events: 0,
    leadersElected: 0,
    maxTerm: 0,
    committed: 0,
    opsOk: 0,
    opsUnknown: 0,
    reads: 0,
    snapshotsInstalled: 0,
    snapshotChunks: 0,
    timeoutNows: 0,
    confChanges: 0,
    crashes: 0,
    crashesAfterPersist: 0,
    partitions: 0,
    quiesces: 0,
    wakes: 0,
  };
  // fault parameters
  readonly n: number;
  readonly pDrop: number;
  readonly pDup: number;
  readonly delayBase: number;
  readonly delayJitter: number;
  readonly crashPerSec: number;
  readonly pCrashAfterPersist: number;
  readonly pCrashLeaderAfterPropose: number;
  readonly pCrashNewLeader: number;
  readonly partitionPerSec: number;
  readonly compactEvery: number;
  readonly churn: boolean;
  readonly raftKnobs: { heartbeatTicks: number; maxMsgEntries: number; maxInflightMsgs: number; maxSnapshotChunkBytes: number; maxMsgBytes: number };
  readonly faultMs: number;
  readonly quietMs: number;
  readonly quiesce: boolean;
  /** The shells' quiesced tick period (ms of simulated time). */
  readonly quiescedTickMs: number;
  quiet = false;
  livenessTarget = 0;
  // checker state
  readonly leaderOfTerm = new Map<number, NodeId>();
  readonly chainAt = new Map<string, number>();
  readonly appliedAt: string[] = [];
  readonly snapshotAt = new Map<number, string>();
  maxApplied = 0;
  readonly committedTerm: number[] = [];
  maxCommitted = 0;
  readonly commitChecked = new Map<string, number>();
  // clients
  readonly history: (Operation<KvInput, KvOutput> & { done: boolean })[] = [];
  readonly clients: Client[] = [];
  nextValue = 0;

  constructor(opts: SimOptions) {
    this.opts = opts;
    this.mutation = opts.mutation;
    const rng = new Rng(opts.seed);
    this.rng = rng;
    this.n = opts.nodes ?? rng.pick([1, 3, 3, 5, 5]);
    this.pDrop = rng.pick([0, 0.01, 0.05, 0.15, 0.3]);
    this.pDup = rng.pick([0, 0.02, 0.1]);
    this.delayBase = rng.range(1, 3);
    this.delayJitter = rng.pick([2, 10, 40]);
    this.crashPerSec = this.n === 1 ? rng.pick([0, 1]) : rng.pick([0, 1, 3, 6]);
    this.pCrashAfterPersist = rng.pick([0, 0.002, 0.01]);
    this.pCrashLeaderAfterPropose = this.n === 1 ? 0 : rng.pick([0, 0, 0.05, 0.2]);
    this.pCrashNewLeader = this.n === 1 ? 0 : rng.pick([0, 0, 0.2, 0.5]);
    this.partitionPerSec = this.n === 1 ? 0 : rng.pick([0, 1, 3]);
    this.compactEvery = rng.pick([4, 10, 30, 1_000_000]);
    this.churn = this.n === 5 && rng.chance(0.4);
    this.raftKnobs = {
      heartbeatTicks: rng.pick([1, 2, 3]),
      maxMsgEntries: rng.pick([1, 1, 2, 8, 64]),
      maxInflightMsgs: rng.pick([1, 1, 4, 16]),
      maxSnapshotChunkBytes: rng.pick([16, 64, 4096]),
      maxMsgBytes: 1 << 20,
    };
    this.faultMs = opts.faultMs ?? 2000;
    this.quietMs = opts.quietMs ?? 1500;
    const ids = NODE_IDS.slice(0, this.n);
    const initialVoters = this.churn ? ids.slice(0, 3) : ids;
    const skew = rng.chance(0.5);
    // Slow disks stay below the shortest election timeout (80 ms here): a member whose every
    // write outlasts the election timeout campaigns forever (etcd's "disk too slow" warning
    // is the same operational assumption; docs/RAFT.md).
    const disk = rng.pick([
      [0, 1],
      [1, 5],
      [5, 25],
    ] as const);
    for (const id of ids) {
      const member = initialVoters.includes(id);
      const storage = bootstrapStorage(member ? { voters: initialVoters, learners: [] } : { voters: [], learners: [] });
      const slowDisk = rng.chance(0.3);
      const node = new SimNode(id, storage, skew ? rng.range(8, 16) : 10, slowDisk ? disk[0] * 2 : disk[0], slowDisk ? disk[1] * 2 : disk[1]);
      this.nodes.set(id, node);
    }
    const nClients = rng.range(1, 4);
    for (let i = 0; i < nClients; i++) this.clients.push({ id: i, busy: false, current: -1, leaderHint: null });
    this.quiesce = opts.quiesce ?? true;
    this.quiescedTickMs = rng.pick([40, 100, 200]);
  }

  // ---- event loop ----

  at(delay: number, fn: () => void): void {
    this.queue.push({ t: this.now + delay, seq: this.seq++, fn });
  }

  run(): SimResult {
    let violation: SimResult["violation"] = null;
    try {
      for (const node of this.nodes.values()) this.start(node);
      this.scheduleFaults();
      for (const c of this.clients) this.at(this.rng.range(0, 50), () => this.clientNext(c));
      const end = this.faultMs + this.quietMs;
      this.at(this.faultMs, () => this.beginQuiet());
      // Liveness target: what was committed somewhere 500 ms before the end must be applied by
      // every member of the final leader's configuration (commits in the last moments may still be travelling).
      this.at(end - 500, () => {
        for (const x of this.nodes.values()) if (x.raft !== null) this.livenessTarget = Math.max(this.livenessTarget, x.raft.commitIndex);
      });
      while (this.queue.size > 0) {
        const ev = this.queue.pop()!;
        if (ev.t > end) break;
        this.now = ev.t;
        this.stats.events++;
        ev.fn();
      }
      this.checkLiveness();
      this.checkHistory();
    } catch (e) {
      if (e instanceof Violation) violation = { kind: e.kind, message: e.message, atMs: this.now };
      else if (e instanceof RaftContractError) violation = { kind: "assertion", message: e.message, atMs: this.now };
      else throw e;
    }
    return { seed: this.opts.seed, nodes: this.n, violation, stats: this.stats };
  }

  // ---- members ----

  start(node: SimNode): void {
    node.incarnation++;
    const inc = node.incarnation;
    const storage: RaftStorageState = {
      hardState: { ...node.hard },
      snapshot: node.snap,
      entries: [...node.entries],
      applied: node.snap.meta.index,
    };
    node.raft = makeNode(
      {
        id: node.id,
        electionTicks: 10,
        ...this.raftKnobs,
        quiesce: this.quiesce,
        random: (k) => this.rng.int(k),
      },
      storage,
      this.mutation,
    );
    node.busy = false;
    node.inbox = [];
    node.kv = node.snap.meta.index === 0 ? new Map() : new Map(JSON.parse(dec.decode(node.snap.data)) as [string, string][]);
    node.applied = node.snap.meta.index;
    node.proposals.clear();
    node.reads.clear();
    node.readsWaiting.clear();
    // The clock as a Durable Object shell runs it: one pending tick, at the tick period or, while
    // the member is quiesced, at the quiesced period; moved at once when the member quiesces or
    // wakes (afterStep).
    let gen = 0;
    const tick = (g: number) => {
      if (node.incarnation !== inc || node.raft === null || g !== gen) return;
      node.setClock(node.slowClock ? this.quiescedTickMs : node.tickMs);
      this.input(node, () => node.raft!.tick());
    };
    node.slowClock = false;
    node.setClock = (delayMs) => {
      const g = ++gen;
      this.at(delayMs, () => tick(g));
    };
    node.setClock(this.rng.range(1, node.tickMs));
  }

  crash(node: SimNode): void {
    if (node.raft === null) return;
    this.stats.crashes++;
    node.raft = null;
    node.incarnation++;
    node.busy = false;
    node.inbox = [];
    // Requests at a crashed member never get an answer: their clients time out.
    node.proposals.clear();
    node.reads.clear();
    node.readsWaiting.clear();
  }

  /** Runs `fn` on the member now, or queues it while its Ready is being persisted. */
  input(node: SimNode, fn: () => void): void {
    if (node.raft === null) return;
    if (node.busy) {
      node.inbox.push(fn);
      return;
    }
    fn();
    this.afterStep(node);
    this.pump(node);
  }

  afterStep(node: SimNode): void {
    const r = node.raft;
    if (r === null) return;
    if (r.quiesced !== node.slowClock) {
      node.slowClock = r.quiesced;
      if (r.quiesced) this.stats.quiesces++;
      else this.stats.wakes++;
      node.setClock(r.quiesced ? this.quiescedTickMs : node.tickMs);
    }
    if (r.term > this.stats.maxTerm) this.stats.maxTerm = r.term;
    if (r.role === "leader") {
      const prev = this.leaderOfTerm.get(r.term);
      if (prev === undefined) {
        this.leaderOfTerm.set(r.term, node.id);
        this.stats.leadersElected++;
        this.checkLeaderCompleteness(node);
        if (!this.quiet && this.rng.chance(this.pCrashNewLeader)) {
          // A new leader dies while it is still bringing followers up to date (Raft paper, Fig. 8).
          const inc = node.incarnation;
          this.at(this.rng.range(0, 30), () => {
            if (node.incarnation !== inc) return;
            this.crash(node);
            this.at(this.rng.range(10, 150), () => {
              if (node.raft === null) this.start(node);
            });
          });
        }
      } else if (prev !== node.id) {
        throw new Violation("electionSafety", `two leaders in term ${r.term}: ${prev} and ${node.id}`);
      }
      this.checkAcks(node);
      this.recordLeaderCommit(node);
    }
  }

  /** What a leader declares committed is committed: no index is ever committed with two terms. */
  recordLeaderCommit(node: SimNode): void {
    const r = node.raft!;
    const key = `${node.id}:${r.term}`;
    const from = Math.max(this.commitChecked.get(key) ?? 0, r.firstIndex - 1) + 1;
    for (let i = from; i <= r.commitIndex; i++) this.recordCommitted(node, i, r.termAt(i)!);
    if (from <= r.commitIndex && !this.churn) this.checkCommitDurable(node, r.commitIndex, r.termAt(r.commitIndex)!);
    this.commitChecked.set(key, r.commitIndex);
  }

  /**
   * Leader completeness looking forward: when a leader declares (index, term) committed, no
   * member lacking it may still be electable, i.e. have a durable log at least as up to date
   * as the durable logs of a majority of voters (§5.4.1's vote rule). This is the property the
   * "commit only entries of the current term" rule protects (Raft paper, Fig. 8); checking it
   * at commit time finds the bug without waiting for the rival to win. Static configurations
   * only (with membership churn, members may count different voter sets).
   */
  checkCommitDurable(leader: SimNode, index: number, term: number): void {
    const durable = (x: SimNode): [number, number] => {
      const n = x.entries.length;
      return n === 0 ? [x.snap.meta.index, x.snap.meta.term] : [x.entries[n - 1]!.index, x.entries[n - 1]!.term];
    };
    const holds = (x: SimNode) => index <= x.snap.meta.index || x.entries[index - x.snap.meta.index - 1]?.term === term;
    const all = [...this.nodes.values()];
    for (const m of all) {
      if (holds(m)) continue;
      const [mi, mt] = durable(m);
      let votes = 0;
      for (const v of all) {
        const [vi, vt] = durable(v);
        if (mt > vt || (mt === vt && mi >= vi)) votes++;
      }
      if (votes >= Math.floor(all.length / 2) + 1) {
        throw new Violation(
          "leaderCompleteness",
          `${leader.id} (term ${leader.raft!.term}) commits ${index}:${term}, but ${m.id} lacks it and could still win an election (${votes} of ${all.length} durable logs are no more up to date than its own)`,
        );
      }
    }
  }

  recordCommitted(node: SimNode, index: number, term: number): void {
    const seen = this.committedTerm[index];
    if (seen === undefined) {
      this.committedTerm[index] = term;
      if (index > this.maxCommitted) this.maxCommitted = index;
    } else if (seen !== term) {
      throw new Violation("stateMachineSafety", `${node.id} takes index ${index} of term ${term} as committed; it was committed with term ${seen}`);
    }
  }

  /**
   * The leader counts a follower's match index towards commit: the follower must hold that
   * entry durably (same index and term), unless a later term has since overwritten it there.
   */
  checkAcks(node: SimNode): void {
    const r = node.raft!;
    for (const f of this.nodes.values()) {
      if (f === node) continue;
      const m = r.matchOf(f.id);
      if (m === undefined || m === 0 || f.hard.term > r.term || m <= f.snap.meta.index) continue;
      const want = r.termAt(m);
      if (want === undefined) continue; // compacted on the leader: committed long ago
      const held = f.entries[m - f.snap.meta.index - 1];
      if (held === undefined || held.term !== want) {
        throw new Violation(
          "ackedEntryLost",
          `${node.id} (term ${r.term}) counts ${f.id} as holding ${m}, which ${f.id}'s disk does not hold (${held === undefined ? "missing" : `term ${held.term}`})`,
        );
      }
    }
  }

  pump(node: SimNode): void {
    const r = node.raft;
    if (r === null || node.busy || !r.hasReady()) return;
    const rd = r.ready();
    const inc = node.incarnation;
    const diskMs = rd.mustPersist ? this.rng.range(node.diskLo, node.diskHi) : 0;
    if (this.mutation === "skipPersistBeforeSend" && rd.mustPersist) {
      // MUTANT: claim durability now, send now, write the disk later.
      r.persisted(rd);
      for (const m of rd.messages) this.send(m);
    }
    const finish = () => {
      if (node.incarnation !== inc || node.raft !== r) return; // crashed meanwhile: the write never happened
      this.persist(node, rd.hardState, rd.snapshot, rd.entries);
      if (this.mutation !== "skipPersistBeforeSend" || !rd.mustPersist) {
        r.persisted(rd);
        if (rd.mustPersist && !this.quiet && this.rng.chance(this.pCrashAfterPersist)) {
          // Crash between persisting and sending: the messages are lost, the state is durable.
          this.stats.crashesAfterPersist++;
          this.crash(node);
          this.at(this.rng.range(20, 300), () => this.start(node));
          return;
        }
        for (const m of rd.messages) this.send(m);
      }
      if (rd.snapshot !== undefined) this.restoreSnapshot(node, rd.snapshot);
      for (const e of rd.committedEntries) this.apply(node, e);
      for (const rs of rd.readStates) {
        const req = node.readsWaiting.get(rs.ctx);
        if (req === undefined) continue;
        node.readsWaiting.delete(rs.ctx);
        node.reads.set(rs.ctx, { req, index: rs.index });
      }
      for (const ctx of rd.droppedReads) {
        const req = node.readsWaiting.get(ctx);
        if (req !== undefined) {
          node.readsWaiting.delete(ctx);
          this.reply(req, false, null, r.leaderId);
        }
      }
      this.serveReads(node);
      r.advance(rd);
      node.busy = false;
      this.afterStep(node);
      this.maybeCompact(node);
      // Everything that arrived during the write is stepped now and batched into one Ready
      // (as a Durable Object's input gate would let it in).
      const queued = node.inbox;
      node.inbox = [];
      for (const fn of queued) {
        fn();
        this.afterStep(node);
      }
      this.pump(node);
    };
    node.busy = true;
    if (diskMs === 0) finish();
    else this.at(diskMs, finish);
  }

  /** Writes a Ready to the member's disk, checking log matching on every durable entry. */
  persist(node: SimNode, hs: HardState | undefined, snap: Snapshot | undefined, entries: Entry[]): void {
    if (snap !== undefined) {
      const h = this.chainAt.get(`${snap.meta.index}:${snap.meta.term}`);
      if (h === undefined) throw new Violation("logMatching", `${node.id} installs snapshot ${snap.meta.index}:${snap.meta.term} of an entry no log ever held`);
      node.snap = snap;
      node.snapHash = h;
      node.entries = [];
      node.hashes = [];
      this.stats.snapshotsInstalled++;
    }
    if (entries.length > 0) {
      const first = entries[0]!.index;
      const keep = first - node.snap.meta.index - 1;
      if (keep < 0) throw new Violation("assertion", `${node.id}: entries from ${first} inside snapshot ${node.snap.meta.index}`);
      node.entries.length = Math.min(node.entries.length, keep);
      node.hashes.length = node.entries.length;
      if (node.entries.length !== keep) throw new Violation("assertion", `${node.id}: gap before entry ${first}`);
      let prev = keep === 0 ? node.snapHash : node.hashes[keep - 1]!;
      for (const e of entries) {
        const h = chain(prev, e);
        const k = `${e.index}:${e.term}`;
        const seen = this.chainAt.get(k);
        if (seen === undefined) this.chainAt.set(k, h);
        else if (seen !== h) throw new Violation("logMatching", `${node.id} holds ${k} with a different prefix or content than another member`);
        node.entries.push(e);
        node.hashes.push(h);
        prev = h;
      }
    }
    if (hs !== undefined) node.hard = { ...hs };
  }

  restoreSnapshot(node: SimNode, snap: Snapshot): void {
    const text = dec.decode(snap.data);
    const seen = this.snapshotAt.get(snap.meta.index);
    if (seen !== undefined && seen !== text) throw new Violation("stateMachineSafety", `${node.id}: snapshot at ${snap.meta.index} differs from another member's`);
    node.kv = snap.meta.index === 0 ? new Map() : new Map(JSON.parse(text) as [string, string][]);
    node.applied = snap.meta.index;
  }

  apply(node: SimNode, e: Entry): void {
    if (e.index !== node.applied + 1) throw new Violation("assertion", `${node.id} applies ${e.index} after ${node.applied}`);
    const id = `${e.term}|${contentKey(e)}`;
    const seen = this.appliedAt[e.index];
    if (seen === undefined) {
      this.appliedAt[e.index] = id;
      if (e.index > this.maxApplied) {
        this.maxApplied = e.index;
        this.stats.committed = e.index;
      }
    } else if (seen !== id) {
      throw new Violation("stateMachineSafety", `${node.id} applies ${id} at ${e.index}, another member applied ${seen}`);
    }
    this.recordCommitted(node, e.index, e.term);
    node.applied = e.index;
    if (e.type === "conf") this.stats.confChanges++;
    if (e.type !== "normal") return;
    const cmd = JSON.parse(contentKey(e)) as KvCommand;
    node.kv.set(cmd.key, cmd.value);
    const req = node.proposals.get(cmd.op);
    if (req !== undefined) {
      node.proposals.delete(cmd.op);
      this.reply(req, true, null, node.id);
    }
  }

  serveReads(node: SimNode): void {
    for (const [ctx, { req, index }] of node.reads) {
      if (node.applied < index) continue;
      node.reads.delete(ctx);
      this.reply(req, true, node.kv.get(req.cmd.key) ?? null, node.id);
    }
  }

  maybeCompact(node: SimNode): void {
    const r = node.raft;
    if (r === null || node.busy) return;
    if (node.applied - node.snap.meta.index < this.compactEvery) return;
    const text = JSON.stringify([...node.kv].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
    const seen = this.snapshotAt.get(node.applied);
    if (seen !== undefined && seen !== text) throw new Violation("stateMachineSafety", `${node.id}: state at ${node.applied} differs from another member's`);
    this.snapshotAt.set(node.applied, text);
    const snap = r.compact(node.applied, enc.encode(text));
    const drop = snap.meta.index - node.snap.meta.index;
    node.snapHash = node.hashes[drop - 1]!;
    node.entries = node.entries.slice(drop);
    node.hashes = node.hashes.slice(drop);
    node.snap = snap;
  }

  checkLeaderCompleteness(node: SimNode): void {
    const r = node.raft!;
    const c = this.maxCommitted;
    if (c === 0) return;
    if (c < r.firstIndex - 1) return; // inside its snapshot, which only holds committed entries
    const t = r.termAt(c);
    const want = this.committedTerm[c]!;
    if (t !== want) throw new Violation("leaderCompleteness", `${node.id} leads term ${r.term} without committed entry ${c} (term ${want}; it has ${t ?? "nothing"})`);
  }

  // ---- network ----

  send(m: Message): void {
    if (m.type === "snapshot") this.stats.snapshotChunks++;
    else if (m.type === "timeoutNow") this.stats.timeoutNows++;
    if (this.blocked.has(`${m.from}>${m.to}`)) return;
    if (!this.quiet && this.rng.chance(this.pDrop)) return;
    const copies = !this.quiet && this.rng.chance(this.pDup) ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      let d = this.delayBase + this.rng.int(this.delayJitter);
      if (!this.quiet && this.rng.chance(0.02)) d += this.rng.range(20, 200);
      this.at(d, () => this.deliver(m));
    }
  }

  deliver(m: Message): void {
    if (this.blocked.has(`${m.from}>${m.to}`)) return;
    const node = this.nodes.get(m.to)!;
    this.input(node, () => node.raft!.step(m));
  }

  // ---- faults ----

  scheduleFaults(): void {
    const ids = [...this.nodes.keys()];
    const poisson = (perSec: number, fn: () => void) => {
      if (perSec <= 0) return;
      const next = () => {
        if (this.quiet) return;
        fn();
        this.at(this.rng.range(1, Math.round(2000 / perSec)), next);
      };
      this.at(this.rng.range(1, Math.round(2000 / perSec)), next);
    };
    poisson(this.crashPerSec, () => {
      // Half the crashes hit the leader: leader changes with uncommitted entries of old terms
      // in flight are where commit rules break (Raft paper, Fig. 8).
      const leader = [...this.nodes.values()].find((x) => x.raft?.role === "leader");
      const node = leader !== undefined && this.rng.chance(0.5) ? leader : this.nodes.get(this.rng.pick(ids))!;
      if (node.raft === null) return;
      this.crash(node);
      this.at(this.rng.range(10, 400), () => {
        if (node.raft === null) this.start(node);
      });
    });
    poisson(this.partitionPerSec, () => {
      this.stats.partitions++;
      const links: string[] = [];
      if (this.rng.chance(0.5)) {
        // Symmetric: a random side against the rest.
        const side = new Set(ids.filter(() => this.rng.chance(0.5)));
        for (const a of ids) for (const b of ids) if (a !== b && side.has(a) !== side.has(b)) links.push(`${a}>${b}`);
      } else {
        // One-way: a member hears nothing from (or can say nothing to) some others.
        const a = this.rng.pick(ids);
        const out = this.rng.chance(0.5);
        for (const b of ids) if (b !== a && this.rng.chance(0.7)) links.push(out ? `${a}>${b}` : `${b}>${a}`);
      }
      for (const l of links) this.blocked.add(l);
      this.at(this.rng.range(50, 600), () => {
        for (const l of links) this.blocked.delete(l);
      });
    });
    if (this.churn) {
      const change = () => {
        if (this.quiet) return;
        const leader = [...this.nodes.values()].find((x) => x.raft?.role === "leader" && !x.busy);
        if (leader !== undefined) {
          const conf = leader.raft!.conf;
          const outside = ids.filter((i) => !conf.voters.includes(i) && !conf.learners.includes(i));
          const options: ConfChange[] = [];
          for (const i of outside) options.push({ type: "addLearner", node: i }, { type: "addVoter", node: i });
          for (const i of conf.learners) options.push({ type: "promote", node: i }, { type: "remove", node: i });
          if (conf.voters.length > 3) for (const i of conf.voters) options.push({ type: "remove", node: i });
          if (options.length > 0) {
            const ch = this.rng.pick(options);
            this.input(leader, () => void leader.raft!.proposeConfChange(ch));
          }
        }
        this.at(this.rng.range(50, 300), change);
      };
      this.at(this.rng.range(50, 300), change);
    }
    // Occasional leadership transfer.
    if (this.n > 1) {
      const transfer = () => {
        if (this.quiet) return;
        const leader = [...this.nodes.values()].find((x) => x.raft?.role === "leader" && !x.busy);
        if (leader !== undefined) {
          const voters = leader.raft!.conf.voters.filter((v) => v !== leader.id);
          if (voters.length > 0) {
            const to = this.rng.pick(voters);
            this.input(leader, () => void leader.raft!.transferLeadership(to));
          }
        }
        this.at(this.rng.range(200, 1000), transfer);
      };
      this.at(this.rng.range(200, 1000), transfer);
    }
  }

  beginQuiet(): void {
    this.quiet = true;
    this.blocked.clear();
    for (const node of this.nodes.values()) if (node.raft === null) this.start(node);
  }

  checkLiveness(): void {
    const leaders = [...this.nodes.values()].filter((x) => x.raft?.role === "leader");
    if (leaders.length === 0) throw new Violation("liveness", `no leader ${this.quietMs} ms after the faults stopped`);
    const top = leaders.reduce((a, b) => (a.raft!.term >= b.raft!.term ? a : b));
    const r = top.raft!;
    const members = [...r.conf.voters, ...r.conf.learners];
    for (const id of members) {
      const x = this.nodes.get(id)!;
      if (x.raft === null || x.applied < this.livenessTarget) {
        throw new Violation("liveness", `${id} applied ${x.applied} < ${this.livenessTarget}, committed 500 ms before the end of ${this.quietMs} ms of quiet`);
      }
    }
    // Quiescence: with no client load, no faults and a healed network, the group goes quiet:
    // the leader and every member of its configuration are quiesced at the end.
    if (this.quiesce) {
      for (const id of [top.id, ...members]) {
        const x = this.nodes.get(id)!;
        if (!x.raft!.quiesced) throw new Violation("liveness", `${id} (${x.raft!.role}, term ${x.raft!.term}) is not quiesced after ${this.quietMs} ms of quiet`);
      }
    }
  }

  // ---- clients: a replicated key-value store ----

  clientNext(c: Client): void {
    if (this.quiet) return;
    const isRead = this.rng.chance(0.4);
    const key = this.rng.pick(["x", "y"]);
    const value = isRead ? "" : `v${this.nextValue++}`;
    const input: KvInput = isRead ? { type: "get", key } : { type: "put", key, value };
    const opIndex = this.history.length;
    this.history.push({ input, output: null, call: this.seq++, ret: Infinity, done: false });
    c.busy = true;
    c.current = opIndex;
    const req: Req = { client: c, opIndex, cmd: { op: `c${c.id}.${opIndex}`, key, value }, isRead };
    const alive = [...this.nodes.values()].filter((x) => x.raft !== null);
    const target = (c.leaderHint !== null ? this.nodes.get(c.leaderHint) : undefined) ?? (alive.length > 0 ? this.rng.pick(alive) : undefined);
    // Client timeout: an unanswered write's outcome is unknown; an unanswered read is dropped.
    this.at(150, () => {
      if (c.current !== opIndex) return;
      const h = this.history[opIndex]!;
      if (!h.done) {
        if (!isRead) this.stats.opsUnknown++;
        h.done = true;
        if (isRead) h.ret = -1; // marks "drop"
        c.leaderHint = null;
        c.current = -1;
        this.at(this.rng.range(1, 20), () => this.clientNext(c));
      }
    });
    if (target === undefined) return;
    this.at(this.rng.range(1, 3), () => this.handleRequest(target, req));
  }

  handleRequest(node: SimNode, req: Req): void {
    this.input(node, () => {
      const r = node.raft!;
      if (req.isRead) {
        if (this.mutation === "readWithoutReadIndex" && r.role === "leader") {
          // MUTANT: a leader that believes it leads answers from its own state machine.
          this.reply(req, true, node.kv.get(req.cmd.key) ?? null, node.id);
          return;
        }
        const res = r.readIndex(req.cmd.op);
        if (!res.ok) this.reply(req, false, null, res.leaderId);
        else node.readsWaiting.set(req.cmd.op, req);
        return;
      }
      const res = r.propose(enc.encode(JSON.stringify(req.cmd)));
      if (!res.ok) this.reply(req, false, null, res.code === "notLeader" || res.code === "transferInProgress" ? res.leaderId : null);
      else {
        node.proposals.set(req.cmd.op, req);
        if (!this.quiet && this.rng.chance(this.pCrashLeaderAfterPropose)) {
          // Power loss at the leader just after a write: leaves entries of its term on a minority.
          const inc = node.incarnation;
          this.at(this.rng.range(0, 15), () => {
            if (node.incarnation !== inc) return;
            this.crash(node);
            this.at(this.rng.range(10, 150), () => {
              if (node.raft === null) this.start(node);
            });
          });
        }
      }
    });
  }

  /** Answers a client after a network delay. `ok=false` is a definite refusal (nothing was proposed). */
  reply(req: Req, ok: boolean, value: string | null, hint: NodeId | null): void {
    const ret = this.seq++;
    this.at(this.rng.range(1, 3), () => {
      const c = req.client;
      if (c.current !== req.opIndex) return; // timed out already
      const h = this.history[req.opIndex]!;
      h.done = true;
      if (ok) {
        // The answer left the member at `ret`; the client's view of time is the sequence order.
        h.ret = ret;
        h.output = value;
        this.stats.opsOk++;
        if (req.isRead) this.stats.reads++;
      } else {
        h.ret = -1; // refused: never happened
      }
      c.leaderHint = hint;
      c.current = -1;
      this.at(this.rng.range(0, 20), () => this.clientNext(c));
    });
  }

  checkHistory(): void {
    const ops: Operation<KvInput, KvOutput>[] = [];
    for (const h of this.history) {
      if (h.ret === -1) continue;
      ops.push({ input: h.input, output: h.output, call: h.call, ret: h.ret });
    }
    const bad = checkKv(ops);
    if (bad !== null) throw new Violation("linearizability", `the history of key ${bad} is not linearizable (${ops.length} operations)`);
  }
}
