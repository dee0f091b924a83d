/**
 * A hand-driven Raft group for scripted scenarios (the field cases in test/unit/raft-*.test.ts):
 * no clock, no randomness; the test says who ticks, which links are cut, who crashes. Every
 * member follows the persistence contract: each Ready is persisted to its in-memory disk before
 * its messages are queued, then applied.
 */
import { type RaftNode, bootstrapStorage, type RaftConfig, type RaftStorageState } from "../../src/raft/node.ts";
import { makeNode, type Mutation } from "./mutants.ts";
import type { ConfState, Entry, HardState, Message, NodeId, ReadState, Snapshot } from "../../src/raft/types.ts";

export interface Disk {
  hardState: HardState;
  snapshot: Snapshot;
  entries: Entry[];
}

export interface HarnessOptions {
  preVote?: boolean;
  checkQuorum?: boolean;
  electionTicks?: number;
  maxMsgEntries?: number;
  maxSnapshotChunkBytes?: number;
  /** Per-member durable state to start from (default: a new group of all ids at term 0). */
  disks?: Record<NodeId, Disk>;
  /** A deliberate bug (test/sim/mutants.ts) for every member, to show a scenario catches it. */
  mutation?: Mutation;
  /** Election timeout randomness, an integer in [0, n) (default 0: every timeout is exactly electionTicks). */
  random?: (n: number) => number;
  /** Applied index per member at start (default: its snapshot's index). */
  applied?: Record<NodeId, number>;
  /** Quiescence of idle groups (docs/RAFT.md "Quiescence"). @default false */
  quiesce?: boolean;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export const bytes = (s: string): Uint8Array => enc.encode(s);
export const text = (e: Entry): string => (e.type === "normal" ? dec.decode(e.data) : `<${e.type}>`);

export class Harness {
  readonly ids: NodeId[];
  readonly opts: HarnessOptions;
  readonly nodes = new Map<NodeId, RaftNode>();
  readonly disks = new Map<NodeId, Disk>();
  /** Entries applied by each member, in order (across restarts: the state machine is durable here). */
  readonly appliedLog = new Map<NodeId, Entry[]>();
  readonly readStates = new Map<NodeId, ReadState[]>();
  /** Every message that left a member (after its Ready was persisted). */
  readonly sent: Message[] = [];
  readonly blocked = new Set<string>();
  readonly down = new Set<NodeId>();
  /** Drops a message when it returns true (scripted losses, checked at delivery). */
  drop: ((m: Message) => boolean) | null = null;
  #queue: Message[] = [];

  constructor(ids: NodeId[], opts: HarnessOptions = {}) {
    this.ids = ids;
    this.opts = opts;
    for (const id of ids) {
      const init = opts.disks?.[id] ?? toDisk(bootstrapStorage({ voters: ids, learners: [] }));
      this.disks.set(id, { hardState: { ...init.hardState }, snapshot: init.snapshot, entries: [...init.entries] });
      this.appliedLog.set(id, []);
      this.readStates.set(id, []);
      this.#start(id, opts.applied?.[id]);
    }
  }

  #start(id: NodeId, applied?: number): void {
    const d = this.disks.get(id)!;
    const cfg: RaftConfig = {
      id,
      electionTicks: this.opts.electionTicks ?? 10,
      preVote: this.opts.preVote ?? true,
      checkQuorum: this.opts.checkQuorum ?? true,
      maxMsgEntries: this.opts.maxMsgEntries ?? 256,
      maxSnapshotChunkBytes: this.opts.maxSnapshotChunkBytes ?? 1 << 20,
      quiesce: this.opts.quiesce ?? false,
      // By default election timeouts are exactly electionTicks: the test decides who times out first.
      random: this.opts.random ?? (() => 0),
    };
    const storage: RaftStorageState = { hardState: { ...d.hardState }, snapshot: d.snapshot, entries: [...d.entries], applied: applied ?? d.snapshot.meta.index };
    this.nodes.set(id, makeNode(cfg, storage, this.opts.mutation));
  }

  node(id: NodeId): RaftNode {
    const n = this.nodes.get(id);
    if (n === undefined || this.down.has(id)) throw new Error(`${id} is down`);
    return n;
  }

  /** Normal entries applied by `id`, as text (the replicated log as a consumer sees it). */
  records(id: NodeId): string[] {
    return this.appliedLog
      .get(id)!
      .filter((e) => e.type === "normal")
      .map(text);
  }

  /** Normal entries of `id`'s log (committed or not) with their terms. */
  logRecords(id: NodeId): { text: string; term: number }[] {
    const n = this.node(id);
    if (n.lastIndex < n.firstIndex) return [];
    return n
      .entries(n.firstIndex, n.lastIndex)
      .filter((e) => e.type === "normal")
      .map((e) => ({ text: text(e), term: e.term }));
  }

  cut(a: NodeId, b: NodeId, oneWay = false): void {
    this.blocked.add(`${a}>${b}`);
    if (!oneWay) this.blocked.add(`${b}>${a}`);
  }

  isolate(id: NodeId): void {
    for (const o of this.ids) if (o !== id) this.cut(id, o);
  }

  heal(): void {
    this.blocked.clear();
  }

  crash(id: NodeId): void {
    this.down.add(id);
    this.#queue = this.#queue.filter((m) => m.to !== id && m.from !== id);
  }

  restart(id: NodeId): void {
    this.down.delete(id);
    // The applied index survives (this harness's state machine is durable with the log).
    const applied = this.appliedLog.get(id)!;
    const last = applied.length > 0 ? applied[applied.length - 1]!.index : this.disks.get(id)!.snapshot.meta.index;
    this.#start(id, Math.max(last, this.disks.get(id)!.snapshot.meta.index));
  }

  tick(id: NodeId, n = 1): void {
    for (let i = 0; i < n; i++) {
      this.node(id).tick();
      this.settle();
    }
  }

  /** Ticks every live member once per round, settling the network after each round. */
  tickAll(rounds = 1, onRound?: () => void): void {
    for (let i = 0; i < rounds; i++) {
      for (const id of this.ids) if (!this.down.has(id)) this.node(id).tick();
      this.settle();
      onRound?.();
    }
  }

  /**
   * Ticks as the Durable Object shells do (docs/RAFT.md "Quiescence"): each round ticks every
   * live member that is awake, and a quiesced member only every `slowEvery` rounds (its slow,
   * quiesced period), settling after each round. Stops early when `until` holds.
   * @returns the rounds run.
   */
  tickShells(rounds: number, slowEvery: number, until?: () => boolean): number {
    for (let i = 1; i <= rounds; i++) {
      for (const id of this.ids) {
        if (this.down.has(id)) continue;
        const n = this.nodes.get(id)!;
        if (!n.quiesced || i % slowEvery === 0) n.tick();
      }
      this.settle();
      if (until?.()) return i;
    }
    return rounds;
  }

  /** Ticks `id` until it leads (at most 3 election timeouts). */
  elect(id: NodeId): void {
    const max = 3 * 2 * (this.opts.electionTicks ?? 10);
    for (let i = 0; i < max && this.node(id).role !== "leader"; i++) this.tick(id);
    if (this.node(id).role !== "leader") throw new Error(`${id} did not become leader`);
  }

  propose(id: NodeId, data: string): { index: number; term: number } {
    const r = this.node(id).propose(bytes(data));
    if (!r.ok) throw new Error(`propose at ${id}: ${r.code}`);
    this.settle();
    return r;
  }

  /** Runs Readies and delivers messages until nothing moves. */
  settle(maxRounds = 10_000): void {
    for (let round = 0; round < maxRounds; round++) {
      let moved = false;
      for (const id of this.ids) {
        if (this.down.has(id)) continue;
        const n = this.nodes.get(id)!;
        if (!n.hasReady()) continue;
        moved = true;
        const rd = n.ready();
        const d = this.disks.get(id)!;
        if (rd.snapshot) {
          d.snapshot = rd.snapshot;
          d.entries = [];
          // The state machine is replaced by the snapshot image.
          this.appliedLog.set(
            id,
            this.appliedLog.get(id)!.filter((e) => e.index <= rd.snapshot!.meta.index),
          );
        }
        if (rd.entries.length > 0) {
          const first = rd.entries[0]!.index;
          d.entries = d.entries.filter((e) => e.index < first).concat(rd.entries);
        }
        if (rd.hardState) d.hardState = { ...rd.hardState };
        n.persisted(rd);
        for (const m of rd.messages) {
          this.sent.push(m);
          this.#queue.push(m);
        }
        this.appliedLog.get(id)!.push(...rd.committedEntries);
        this.readStates.get(id)!.push(...rd.readStates);
        n.advance(rd);
      }
      const q = this.#queue;
      this.#queue = [];
      for (const m of q) {
        if (this.blocked.has(`${m.from}>${m.to}`) || this.down.has(m.to) || this.drop?.(m)) continue;
        moved = true;
        this.nodes.get(m.to)!.step(m);
      }
      if (!moved) return;
    }
    throw new Error("settle: the group did not quiesce");
  }

  /** Compacts `id`'s log up to its applied index (the snapshot data is the applied records as JSON). */
  compact(id: NodeId): Snapshot {
    const n = this.node(id);
    const snap = n.compact(n.appliedIndex, bytes(JSON.stringify(this.records(id))));
    const d = this.disks.get(id)!;
    d.snapshot = snap;
    d.entries = d.entries.filter((e) => e.index > snap.meta.index);
    return snap;
  }
}

export function toDisk(s: RaftStorageState): Disk {
  return { hardState: s.hardState, snapshot: s.snapshot, entries: s.entries };
}

/** A disk holding `entries` (index from 1) at `term` with `commit`, for a group `conf`. */
export function diskWith(conf: ConfState, term: number, commit: number, entries: Entry[], snapshot?: Snapshot): Disk {
  const base = bootstrapStorage(conf);
  return { hardState: { term, vote: null, commit }, snapshot: snapshot ?? base.snapshot, entries };
}

/** Normal entries `from..to` of `term`, with data "<prefix><index>". */
export function normalEntries(from: number, to: number, term: number, prefix = "e"): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push({ index: i, term, type: "normal", data: bytes(`${prefix}${i}`) });
  return out;
}
