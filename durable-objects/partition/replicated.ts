/**
 * The produce path of a replicated partition (`replication.factor` 3; docs/RAFT.md "Replicated
 * partitions"), beside the switchboard that holds it: the leader's checks and proposal, the
 * acks=1 prediction (replica-tail.ts), and the apply of a committed entry on every replica, which
 * decides the request on the committed state and hands the switchboard the same command a single
 * object's append commits (`host.commit`, with the applied index in its transaction).
 */
import type { AppendOk, AppendRequest, PartitionRpc } from "../../src/partition/rpc.ts";
import type { TopicConfigs } from "../../src/protocol/types.ts";
import type { ProducerState, ScannedAppend } from "../../src/partition/core.ts";
import { errorResult, type ErrorResult, type Ok, type RpcResult } from "../../src/protocol/errors.ts";
import { log } from "../../src/log/logger.ts";
import type { RoomTimers } from "../base.ts";
import type { LifecycleCommandPart, LifecycleRoom } from "./lifecycle.ts";
import { unknownPartition, type LogCommand, type LogRoom } from "./log.ts";
import { PRODUCER_EXPIRY_TIMER, type ProducersCommand, type ProducersRoom } from "./producers.ts";
import { decodeReplicated, encodeReplicated, type PartitionReplica, type ReplicatedCommand } from "./replica.ts";
import { ReplicaTail } from "./replica-tail.ts";
import { isStaleConfigsPush } from "../../src/partition/configs-order.ts";
import type { SubsChange } from "./subscriptions.ts";
import type { StreamEntry } from "../../src/streams/replicated.ts";

/** What a committed entry writes: the rooms' parts of a native append (no stream, no subscription part). */
export type ReplicatedWrite = LogCommand & ProducersCommand & LifecycleCommandPart & { stream: null };

/** What the replicated produce path needs of its partition object. */
export interface ReplicatedHost {
  log: LogRoom;
  producers: ProducersRoom;
  lifecycle: LifecycleRoom;
  replica: PartitionReplica;
  producerTimers: RoomTimers;
  /** The switchboard's commit: the rooms' apply and `alsoWrite` in ONE transaction, then publish. */
  commit: (cmd: ReplicatedWrite, alsoWrite: () => void) => void;
  transaction: (fn: () => void) => void;
  /** The switchboard's append guards (a closed stream binds native producers too). */
  appendBlocked: () => ErrorResult | null;
  /** Counts one produce outcome (metrics). */
  produced: (r: RpcResult<AppendOk>) => void;
  /** Throws while the replica acts crashed (fault injection). */
  aliveReplica: () => void;
  /** Another replica of this partition (a config change is forwarded to the leader). */
  peer: (replicaId: string) => PartitionRpc;
  /** After a config change was applied: the timers and policies that follow the configs. */
  configsApplied: () => void;
  /** Applies a committed subscription entry (partition/replicated-subs.ts), the applied index in its transaction. @returns the leader's answer. */
  applySubs: (change: SubsChange, writeApplied: () => void) => unknown;
  /** The leader's policy checks of a produce that depend on subscriptions and producers (backlog quota, publish rate, producer count), checked last. */
  produceRefusal: (scanned: ScannedAppend, nowMs: number) => ErrorResult | null;
  /**
   * Applies a committed Durable Streams entry (the streams room decides it on the committed
   * state and commits with `writeApplied` in the same transaction). @returns the leader's answer.
   */
  applyStream: (term: number, entry: StreamEntry, blobs: Uint8Array[], writeApplied: () => void) => unknown;
}

/** How long a config change waits for a leader to be found or elected (ms): as the gateway's LEADER_WAIT_MS. */
const CONFIGS_LEADER_WAIT_MS = 5_000;
/** Pause before asking again while no leader is known or the named one failed (ms): one Raft tick. */
const CONFIGS_RETRY_MS = 100;

export class ReplicatedAppends {
  readonly #h: ReplicatedHost;
  /** The leader's prediction of its uncommitted appends' offsets: acks=1 answers (replica-tail.ts). */
  readonly #tail = new ReplicaTail();

  constructor(host: ReplicatedHost) {
    this.#h = host;
  }

  /**
   * Produce requests at the leader of a replicated partition: what does not depend on the log
   * (guards, the CRC and the record checks, the topic's limits, min.insync.replicas for acks=all,
   * then the namespace policies on the replicated cursors and producer state)
   * is checked here; each request then becomes one Raft entry, all proposed together (one
   * journal write), and is answered when the entry has been applied here (committed).
   */
  async appends(reqs: readonly AppendRequest[]): Promise<RpcResult<AppendOk>[]> {
    this.#h.aliveReplica();
    const out: RpcResult<AppendOk>[] = new Array(reqs.length);
    const s = this.#h.log.state;
    const refused = s === null ? unknownPartition() : this.#h.replica.notLeader();
    if (refused !== null) return reqs.map(() => refused);
    const nowMs = Date.now();
    const logAppendTime = s!.configs["message.timestamp.type"] === "LogAppendTime" ? nowMs : null;
    const commands: Uint8Array[] = [];
    const scans: ScannedAppend[] = [];
    const slots: number[] = [];
    for (let i = 0; i < reqs.length; i++) {
      const req = reqs[i]!;
      const scanned = this.#checkReplicatedAppend(req, nowMs);
      if ("code" in scanned) {
        out[i] = scanned;
        continue;
      }
      commands.push(encodeReplicated({ kind: "append", nowMs, logAppendTime, batches: req.batches }));
      scans.push(scanned);
      slots.push(i);
    }
    this.#buildTail();
    const proposed = this.#h.replica.proposeAll(commands);
    // Written to this replica's journal now: acks=1 answers with the predicted offsets.
    for (let k = 0; k < slots.length; k++) {
      const { index } = proposed[k]!;
      if (index === null) continue;
      const predicted = this.#tail.add(index, scans[k]!, this.#h.log.state!.logEndOffset, (p) => this.#h.producers.decide(p).previous);
      if (predicted !== null && reqs[slots[k]!]!.acks === "1") out[slots[k]!] = this.#predictedAnswer(predicted, scans[k]!, logAppendTime);
    }
    for (let k = 0; k < slots.length; k++) if (out[slots[k]!] === undefined) out[slots[k]!] = (await proposed[k]!.answer) as RpcResult<AppendOk>;
    for (const r of out) this.#h.produced(r);
    return out;
  }

  /** The leader's tail prediction for its current term: rebuilt from its log after a leader change. */
  #buildTail(): void {
    const node = this.#h.replica.node;
    if (node === null || node.role !== "leader" || this.#tail.term === node.term) return;
    this.#tail.reset(node.term);
    if (node.lastIndex <= node.appliedIndex) return;
    for (const e of node.entries(node.appliedIndex + 1, node.lastIndex)) {
      const end = this.#h.log.state!.logEndOffset;
      const cmd = e.type === "normal" ? decodeReplicated(e.data) : null;
      if (cmd === null || cmd.kind === "deleteRecords" || cmd.kind === "configs" || cmd.kind === "subs") this.#tail.skip(e.index, end);
      else if (cmd.kind === "expireProducers" || cmd.kind === "stream") this.#tail.add(e.index, null, end, () => undefined);
      else {
        const scanned = this.#h.log.scanCommitted(cmd.batches);
        if ("code" in scanned) this.#tail.skip(e.index, end);
        else this.#tail.add(e.index, scanned, end, (p) => this.#h.producers.decide(p).previous);
      }
    }
  }

  /** An acks=1 answer from a prediction: the offsets the entry gets when it commits; the high watermark as committed now. */
  #predictedAnswer(p: { baseOffset: number; lastOffset: number }, scanned: ScannedAppend, logAppendTime: number | null): Ok<AppendOk> {
    const s = this.#h.log.state!;
    const timestamps = logAppendTime !== null ? new Array<number>(p.lastOffset - p.baseOffset + 1).fill(logAppendTime) : scanned.scans.flatMap((d) => [...d.timestamps]);
    return { ok: true, baseOffset: p.baseOffset, lastOffset: p.lastOffset, timestamps, logAppendTime, duplicate: false, logStartOffset: s.logStartOffset, highWatermark: s.highWatermark };
  }

  /** The leader's checks of one produce request before it is proposed: the scan to propose it with, or the refusal. */
  #checkReplicatedAppend(req: AppendRequest, nowMs: number): ScannedAppend | ErrorResult {
    const blocked = this.#h.appendBlocked();
    if (blocked !== null) return blocked;
    const scanned = this.#h.log.scan(req.batches, req.crcVerified === true);
    if ("code" in scanned) return scanned;
    const refused = this.#h.lifecycle.checkProduce(scanned, nowMs);
    if (refused !== null) return refused;
    if (req.acks !== "1") {
      const few = this.#notEnoughReplicas(nowMs);
      if (few !== null) return few;
    }
    return this.#h.produceRefusal(scanned, nowMs) ?? scanned;
  }

  /** NOT_ENOUGH_REPLICAS when the leader's in-sync replicas are fewer than min.insync.replicas (an acks=all write), else null. */
  #notEnoughReplicas(nowMs: number): ErrorResult | null {
    const minIsr = this.#h.log.state!.configs["min.insync.replicas"] ?? 1;
    const inSync = this.#h.replica.inSyncReplicas(nowMs);
    if (inSync >= minIsr) return null;
    return errorResult("NOT_ENOUGH_REPLICAS", `${inSync} in-sync replicas, fewer than min.insync.replicas ${minIsr}: the produce is refused (acks=all).`, {
      inSync,
      minInsyncReplicas: minIsr,
    });
  }

  /**
   * Applies one committed entry of a replicated partition on this replica (the leader and every
   * follower alike): the produce request is decided here, on the committed state (the
   * producer's KIP-98 sequence check, offsets from the log end, the entry's term as the leader
   * epoch), and committed with the applied index in one transaction. What it decides depends
   * only on the entry and the replicated state, so every replica writes the same offsets.
   * @returns the answer for the leader's waiting request.
   */
  apply(index: number, term: number, data: Uint8Array, writeApplied: () => void): unknown {
    const cmd = decodeReplicated(data);
    if (cmd.kind === "deleteRecords") return this.#applyDeleteRecords(index, cmd.offset, writeApplied);
    if (cmd.kind === "configs") return this.#applyConfigs(index, cmd.configs, cmd.configsOffset, writeApplied);
    if (cmd.kind === "subs") {
      const answer = this.#h.applySubs(cmd.change, writeApplied);
      this.#checkPrediction(index, null);
      return answer;
    }
    if (cmd.kind === "stream") {
      const answer = this.#h.applyStream(term, cmd.stream, cmd.blobs, writeApplied);
      this.#checkPrediction(index, null);
      return answer;
    }
    const decided = this.#decideReplicated(cmd, term);
    let result: RpcResult<AppendOk> | null;
    if ("result" in decided) {
      this.#h.transaction(writeApplied);
      result = decided.result;
    } else {
      this.#h.commit(decided.command, writeApplied);
      result = decided.command.append === null ? null : this.#h.log.appended(decided.command.append);
    }
    this.#checkPrediction(index, result);
    return result;
  }

  /**
   * The leader's acks=1 prediction must be what apply decided (replica-tail.ts): a mismatch is a
   * bug (an acks=1 answer reported other offsets), logged loudly; the tail is dropped and rebuilt.
   */
  #checkPrediction(index: number, result: RpcResult<AppendOk> | null): void {
    if (this.#h.replica.node?.role !== "leader") {
      this.#tail.reset();
      return;
    }
    const predicted = this.#tail.predictedAt(index);
    this.#tail.applied(index);
    if (predicted === null) return;
    const got = result?.ok && !result.duplicate ? result.baseOffset : null;
    if (got === predicted) return;
    log.error("edgelog.partition.acks1_prediction_mismatch", { index, predicted, got });
    this.#tail.reset();
  }

  #decideReplicated(cmd: ReplicatedCommand, term: number): { command: ReplicatedWrite } | { result: RpcResult<AppendOk> | null } {
    const s = this.#h.log.state;
    if (s === null) return { result: unknownPartition() };
    if (cmd.kind === "expireProducers") return { command: { log: null, append: null, producer: { op: "expire", beforeMs: cmd.beforeMs }, stream: null } };
    if (cmd.kind !== "append") throw new Error(`replicated command ${cmd.kind} is not a produce`);
    const scanned = this.#h.log.scanCommitted(cmd.batches);
    if ("code" in scanned) return { result: scanned };
    const p = scanned.validated.producer;
    let previous: ProducerState | undefined;
    if (p !== null) {
      const { decision, previous: state } = this.#h.producers.decide(p);
      if (decision.kind === "error") return { result: decision.error };
      if (decision.kind === "duplicate") return { result: this.#h.log.duplicateAnswer(decision.entry) };
      previous = state;
    }
    const epoch = term > s.leaderEpoch ? { op: "leaderEpoch" as const, epoch: term } : null;
    const append = this.#h.log.planAt(scanned, term, cmd.logAppendTime);
    const producer = p === null ? null : this.#h.producers.change(p, previous, append.baseOffset, append.lastOffset, cmd.nowMs);
    return { command: { log: epoch, append, producer, stream: null, lifecycle: this.#h.lifecycle.planAppend(append, cmd.nowMs) } };
  }

  /**
   * The producer expiry timer of a replicated partition: producer state is replicated, so the
   * leader proposes the expiry (its clock and configs decide `beforeMs`) and every replica
   * applies it; a follower's timer waits a while and looks again.
   */
  async expireProducers(nowMs: number): Promise<void> {
    const change = this.#h.producers.expiryChange(nowMs);
    if (change === null || change.op !== "expire") return this.#h.producers.rearm(nowMs);
    if (this.#h.replica.notLeader() !== null) return this.#h.producerTimers.set(PRODUCER_EXPIRY_TIMER, nowMs + 60_000);
    this.#buildTail();
    const [proposed] = this.#h.replica.proposeAll([encodeReplicated({ kind: "expireProducers", beforeMs: change.beforeMs })]);
    if (proposed!.index !== null) this.#tail.add(proposed!.index, null, this.#h.log.state!.logEndOffset, () => undefined);
    await proposed!.answer;
    this.#h.producers.rearm(Date.now());
  }

  // ---- Durable Streams writes as replicated commands ----

  /**
   * Proposes one Durable Streams write at the leader (the streams room checked leadership) and
   * answers with its apply here, NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT. Its outcome (how
   * many records it appends, if any) is known only at apply: the acks=1 prediction stops at it.
   * A create or an append is answered after its commit, as an acks=all produce: below
   * min.insync.replicas it is refused NOT_ENOUGH_REPLICAS, nothing proposed.
   */
  async proposeStream(stream: StreamEntry, blobs: Uint8Array[]): Promise<unknown> {
    this.#h.aliveReplica();
    if (this.#h.log.state === null) return unknownPartition();
    if (stream.op === "create" || stream.op === "append") {
      const few = this.#notEnoughReplicas(Date.now());
      if (few !== null) return few;
    }
    this.#buildTail();
    const [proposed] = this.#h.replica.proposeAll([encodeReplicated({ kind: "stream", stream, blobs })]);
    if (proposed!.index !== null) this.#tail.add(proposed!.index, null, this.#h.log.state!.logEndOffset, () => undefined);
    return proposed!.answer;
  }

  // ---- deleteRecords (KIP-107) as a replicated command ----

  /**
   * deleteRecords at the leader of a replicated partition: checked against the leader's high
   * watermark (the commit: OFFSET_OUT_OF_RANGE above it, -1 resolved to it, field case B1),
   * proposed as one Raft entry, and answered when the entry is applied here, with the log start
   * offset every replica then has (Kafka's low watermark). An offset at or below the log start
   * is a no-op answered at once. A replica that is not the leader answers
   * NOT_LEADER_OR_FOLLOWER (nothing proposed).
   */
  async deleteRecords(offset: number): Promise<RpcResult<{ logStartOffset: number }>> {
    this.#h.aliveReplica();
    const refused = this.#h.log.state === null ? unknownPartition() : this.#h.replica.notLeader();
    if (refused !== null) return refused;
    const plan = this.#h.lifecycle.planDeleteRecords(offset);
    if ("code" in plan) return plan;
    if (plan.change === null) return { ok: true, logStartOffset: plan.logStartOffset };
    this.#buildTail();
    const [proposed] = this.#h.replica.proposeAll([encodeReplicated({ kind: "deleteRecords", offset: plan.logStartOffset })]);
    if (proposed!.index !== null) this.#tail.skip(proposed!.index, this.#h.log.state!.logEndOffset);
    return (await proposed!.answer) as RpcResult<{ logStartOffset: number }>;
  }

  /**
   * Applies a committed deleteRecords on this replica: the same plan on the committed state
   * (deterministic: the high watermark only grows, so an offset the leader accepted is still
   * valid; one at or below the log start by now is a no-op) and the log start change committed
   * with the applied index in one transaction. Rows go later, on each replica's lifecycle timer.
   * @returns the leader's answer: the log start offset after the entry.
   */
  #applyDeleteRecords(index: number, offset: number, writeApplied: () => void): RpcResult<{ logStartOffset: number }> {
    const plan = this.#h.log.state === null ? unknownPartition() : this.#h.lifecycle.planDeleteRecords(offset);
    if ("code" in plan || plan.change === null) this.#h.transaction(writeApplied);
    else this.#h.commit({ log: plan.change, append: null, producer: null, stream: null }, writeApplied);
    this.#checkPrediction(index, null);
    return "code" in plan ? plan : { ok: true, logStartOffset: plan.logStartOffset };
  }

  // ---- config changes as a replicated command ----

  /**
   * A config push (the metadata store's `updateConfigs`, absolute values) on a replicated
   * partition, at whichever replica it reached: the leader proposes `{kind: "configs"}` and
   * answers after the commit (a majority has it; every replica applies it at the same index, a
   * replica that was down on its return, from its journal or, past compaction, from the
   * catch-up manifest). A follower forwards it to the leader it knows (`forwarded`: one hop, the
   * leader does not forward again), trying again every {@link CONFIGS_RETRY_MS} during an
   * election or while the named leader fails, for up to {@link CONFIGS_LEADER_WAIT_MS}.
   * `configsOffset` (the metadata offset the configs reflect) travels in the command: each
   * replica ignores it at apply when it holds newer configs (src/partition/configs-order.ts).
   * @returns ok (`stale: true` when the change was older than the configs held at apply);
   *   NOT_LEADER_OR_FOLLOWER (retriable) when no leader took it in time, or when `forwarded`
   *   and this replica does not lead; UNAVAILABLE when the last leader asked failed.
   */
  async updateConfigs(configs: TopicConfigs, forwarded: boolean, configsOffset?: number): Promise<RpcResult<{ stale?: boolean }>> {
    this.#h.aliveReplica();
    const deadline = Date.now() + CONFIGS_LEADER_WAIT_MS;
    for (;;) {
      let r = await this.#proposeConfigs(configs, configsOffset);
      if (r.ok || r.code !== "NOT_LEADER_OR_FOLLOWER" || forwarded) return r;
      const leader = r.details?.leaderReplica;
      if (typeof leader === "string" && leader !== this.#h.replica.memberId) {
        try {
          r = await this.#h.peer(leader).updateConfigs(configs, true, configsOffset);
          if (r.ok || r.code !== "NOT_LEADER_OR_FOLLOWER") return r;
        } catch (err) {
          r = errorResult("UNAVAILABLE", `Replica ${leader}, the leader of this partition, did not take the config change (${err instanceof Error ? err.message : String(err)}): retry.`, {
            replica: leader,
          });
        }
      }
      if (Date.now() >= deadline) return r;
      await new Promise((resolve) => setTimeout(resolve, CONFIGS_RETRY_MS));
    }
  }

  /** At the leader: proposes the config change and waits for its apply here; NOT_LEADER_OR_FOLLOWER elsewhere. */
  async #proposeConfigs(configs: TopicConfigs, configsOffset: number | undefined): Promise<RpcResult<{ stale?: boolean }>> {
    const refused = this.#h.log.state === null ? unknownPartition() : this.#h.replica.notLeader();
    if (refused !== null) return refused;
    this.#buildTail();
    const [proposed] = this.#h.replica.proposeAll([encodeReplicated({ kind: "configs", configs, ...(configsOffset !== undefined ? { configsOffset } : {}) })]);
    if (proposed!.index !== null) this.#tail.skip(proposed!.index, this.#h.log.state!.logEndOffset);
    return (await proposed!.answer) as RpcResult<{ stale?: boolean }>;
  }

  /**
   * Applies a committed config change on this replica: the log meta's configs, their metadata
   * offset and the applied index in one transaction; only the applied index when the change is
   * older than the configs held (every replica decides alike: the same entries in the same order).
   */
  #applyConfigs(index: number, configs: TopicConfigs, configsOffset: number | undefined, writeApplied: () => void): RpcResult<{ stale?: boolean }> {
    const s = this.#h.log.state;
    const stale = s !== null && isStaleConfigsPush(s.configsOffset, configsOffset);
    if (s === null || stale) this.#h.transaction(writeApplied);
    else this.#h.commit({ log: { op: "configs", configs, ...(configsOffset !== undefined ? { configsOffset } : {}) }, append: null, producer: null, stream: null }, writeApplied);
    this.#checkPrediction(index, null);
    if (s === null) return unknownPartition();
    if (stale) return { ok: true, stale: true };
    this.#h.configsApplied();
    return { ok: true };
  }
}
