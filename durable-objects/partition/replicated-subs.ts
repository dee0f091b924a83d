/**
 * Subscriptions of a replicated partition (`replication.factor` 3; docs/RAFT.md "Subscriptions
 * are replicated"), beside the switchboard that holds it:
 *
 * - **Cursors are replicated state.** Every durable write of the subscriptions room (create,
 *   delete, a configuration change, a flush of batched cursor updates: acks moving the
 *   mark-delete position, individual acks, nacks' redelivery counts and delays, resets) is
 *   proposed as the Raft entry `{kind: "subs", change}` and applied by EVERY replica's room when
 *   it commits, in one transaction with the applied index; the room decides it again there on its
 *   committed state (`SubscriptionsRoom.decide`), as produce is decided at apply.
 * - **The leader serves.** Consumers, readers and the subscription RPCs are served by the leader
 *   only, once it has applied an entry of its own term (so every entry of earlier terms is in its
 *   cursors); other replicas answer NOT_LEADER_OR_FOLLOWER. The in-memory dispatch state
 *   (consumers, permits, in-flight messages, ack timeouts, nack delays, leases, delayed
 *   delivery) lives at the leader and is rebuilt from the replicated cursors when a replica
 *   starts serving; a replica that stops leading closes its sockets with 1012 (reconnect), and
 *   what was in flight is redelivered by the next leader.
 * - **Policies at the leader.** The backlog quota, the publish rate and the producer-count limit
 *   of a produce are checked by the leader against its replicated cursors and producer state.
 */
import { checkCountLimit } from "../../src/policies/enforce.ts";
import type { ScannedAppend } from "../../src/partition/core.ts";
import { errorResult, type ErrorResult } from "../../src/protocol/errors.ts";
import type { ProducersRoom } from "./producers.ts";
import { encodeReplicated, REPLICA_TICK_MS, type PartitionReplica } from "./replica.ts";
import type { SubsChange, SubscriptionsRoom } from "./subscriptions.ts";

/** How long a subscription call at a new leader waits for it to apply an entry of its term (ms); then NOT_LEADER_OR_FOLLOWER (retriable). */
export const SUBS_SERVE_WAIT_MS = 3_000;

/** What the replicated subscriptions need of their partition object. */
export interface ReplicatedSubsHost {
  subs: SubscriptionsRoom;
  producers: ProducersRoom;
  replica: PartitionReplica;
  /** The switchboard's commit of a subscription change: the rooms' apply and `alsoWrite` in ONE transaction, then publish. */
  commit: (change: SubsChange, alsoWrite: () => void) => void;
  transaction: (fn: () => void) => void;
}

export class ReplicatedSubscriptions {
  readonly #h: ReplicatedSubsHost;
  /** The Raft term in which this replica serves subscriptions (null: it does not). */
  #servingTerm: number | null = null;

  constructor(host: ReplicatedSubsHost) {
    this.#h = host;
  }

  /**
   * At the leader: proposes a subscription change. @returns a promise settled once the entry is
   * applied here (null: committed by a majority) or with the refusal: NOT_LEADER_OR_FOLLOWER (not
   * the leader, or the entry was lost with a leader change), REQUEST_TIMED_OUT (not committed in
   * time: it may still commit), REQUEST_TOO_LARGE, UNAVAILABLE (the replica crashed meanwhile).
   */
  propose(change: SubsChange): Promise<ErrorResult | null> {
    const [proposed] = this.#h.replica.proposeAll([encodeReplicated({ kind: "subs", change })]);
    return proposed!.answer.then(
      (r) => (typeof r === "object" && r !== null && (r as ErrorResult).ok === false ? (r as ErrorResult) : null),
      (err: unknown) => errorResult("UNAVAILABLE", `The subscription change was not confirmed: ${err instanceof Error ? err.message : String(err)}`),
    );
  }

  /**
   * Applies a committed subscription entry on this replica (leader and followers alike): the
   * room decides it on its committed state, and the change (or nothing) is committed with the
   * applied index in one transaction. @returns the leader's answer.
   */
  apply(change: SubsChange, writeApplied: () => void): { ok: true } {
    const decided = this.#h.subs.decide(change);
    if (decided === null) this.#h.transaction(writeApplied);
    else this.#h.commit(decided, writeApplied);
    return { ok: true };
  }

  /**
   * Before a subscription call or a consumer/reader socket: null when this replica serves
   * (it leads and has applied an entry of its term; the first call of a term rebuilds the
   * dispatch state from the cursors), else the refusal NOT_LEADER_OR_FOLLOWER naming the leader
   * (waits up to {@link SUBS_SERVE_WAIT_MS} for a new leader's first commit).
   */
  async serve(): Promise<ErrorResult | null> {
    const deadline = Date.now() + SUBS_SERVE_WAIT_MS;
    for (;;) {
      const refused = this.#h.replica.notLeader();
      if (refused !== null) {
        this.watch();
        return refused;
      }
      this.watch();
      if (this.#servingTerm !== null) return null;
      if (Date.now() >= deadline) {
        return errorResult("NOT_LEADER_OR_FOLLOWER", `Replica ${this.#h.replica.memberId} leads but has not committed an entry of its term yet: retry.`, {
          replica: this.#h.replica.memberId,
          leaderReplica: null,
          leaderEpoch: this.#h.replica.node?.term ?? null,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, REPLICA_TICK_MS / 4));
    }
  }

  /**
   * Follows the replica's role (after each tick, delivery, fault change and start-up): a
   * replica that serves and no longer leads in the term it served in steps down (its sockets
   * closed with 1012); a leader that has applied an entry of its term starts serving; a replica
   * that does not serve has its room not serving (the room serves by default at start-up).
   */
  watch(): void {
    const replica = this.#h.replica;
    if (!replica.active) return;
    const node = replica.node;
    const leading = node !== null && node.role === "leader" && !replica.crashed;
    if (this.#servingTerm !== null && (!leading || node.term !== this.#servingTerm)) {
      this.#servingTerm = null;
      this.#h.subs.stepDown(replica.crashed ? "replica down" : "not the leader any more");
    }
    if (this.#servingTerm === null && leading && (node.termAt(node.appliedIndex) ?? node.snapshotMeta.term) === node.term) {
      this.#servingTerm = node.term;
      this.#h.subs.becomeLeader();
      return;
    }
    if (this.#servingTerm === null && this.#h.subs.serving) this.#h.subs.stepDown("not the leader");
  }

  /**
   * The leader's namespace-policy checks of a produce (docs/TENANTS.md), on the replicated
   * state: `maxProducersPerTopic` for a producer id it holds no state for, then the backlog
   * quota (`producer_exception`) and the publish rate (which charges its bucket: checked last).
   * A producer id proposed and not yet applied is not counted (the limit may be passed by the
   * requests of one commit interval).
   */
  produceRefusal(scanned: ScannedAppend, nowMs: number): ErrorResult | null {
    const subs = this.#h.subs;
    const p = scanned.validated.producer;
    const max = subs.policies().maxProducersPerTopic;
    if (p !== null && max > 0 && this.#h.producers.decide(p).previous === undefined) {
      const over = checkCountLimit("producers", max, this.#h.producers.count());
      if (over !== null) return over;
    }
    return subs.checkProduce(
      scanned.validated.recordCount,
      scanned.scans.reduce((n, d) => n + d.totalBytes, 0),
      nowMs,
    );
  }
}
