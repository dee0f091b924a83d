/**
 * The leader's prediction of what its proposed, not yet committed produce requests will be
 * given at apply: what an acks=1 answer reports after the leader's own durable write of the
 * entry (docs/RAFT.md "acks"). Every replica decides a request at apply, on the committed state
 * (replicated.ts `apply`); while one leader leads, its entries commit
 * in its log's order, so running the same decisions over the entries between the applied index
 * and the log end, in order, gives the offsets they will get. The prediction follows the same
 * pure rules (src/partition/core.ts: checkSequence, applyProducerAppend).
 *
 * It is only a prediction, as Kafka's acks=1 promise is: an entry lost with its leader (never
 * committed) loses what was acknowledged, and its offsets go to other records. Where the
 * decision is not an append of new records (a duplicate, a refused sequence) or follows a
 * producer expiry not yet applied, nothing is predicted and the request waits for its commit.
 */
import { applyProducerAppend, checkSequence, type ProducerAppend, type ProducerState, type ScannedAppend } from "../../src/partition/core.ts";

/** What an acks=1 answer reports of a predicted append. */
export interface PredictedAppend {
  baseOffset: number;
  lastOffset: number;
}

interface Pending {
  index: number;
  /** The predicted base offset of an append (null: none predicted). */
  baseOffset: number | null;
  /** The log end offset after this entry. */
  nextOffset: number;
  /** Producer state after this entry, when it changed one. */
  producer: { id: number; state: ProducerState } | null;
  /** An entry whose outcome is not predicted (expiry): nothing after it is predicted until it applies. */
  opaque: boolean;
}

export class ReplicaTail {
  /** The Raft term the pending list was built in; -1: to rebuild. */
  #term = -1;
  #pending: Pending[] = [];

  /** The term it was built for (-1: none). */
  get term(): number {
    return this.#term;
  }

  /** Forgets the prediction (leadership lost or about to be rebuilt). */
  reset(term = -1): void {
    this.#term = term;
    this.#pending = [];
  }

  /** The base offset predicted for the pending entry at `index`, or null (none predicted, or not pending). */
  predictedAt(index: number): number | null {
    for (const e of this.#pending) if (e.index === index) return e.baseOffset;
    return null;
  }

  /** Entries up to `index` were applied: the committed state now holds them. */
  applied(index: number): void {
    let k = 0;
    while (k < this.#pending.length && this.#pending[k]!.index <= index) k++;
    if (k > 0) this.#pending.splice(0, k);
  }

  /** Adds an entry that appends nothing (a no-op, a configuration entry, a request refused at apply). */
  skip(index: number, committedEnd: number): void {
    const last = this.#pending[this.#pending.length - 1];
    this.#pending.push({ index, baseOffset: null, nextOffset: last?.nextOffset ?? committedEnd, producer: null, opaque: last?.opaque ?? false });
  }

  /**
   * Adds the entry at `index` (a produce request scanned, or null for an entry not predicted)
   * and answers its predicted offsets, or null.
   * @param committedEnd the log end offset of the committed state
   * @param committedProducer a producer's committed state
   */
  add(index: number, scanned: ScannedAppend | null, committedEnd: number, committedProducer: (p: ProducerAppend) => ProducerState | undefined): PredictedAppend | null {
    const last = this.#pending[this.#pending.length - 1];
    const opaque = scanned === null || (last?.opaque ?? false);
    const end = last?.nextOffset ?? committedEnd;
    if (opaque) {
      this.#pending.push({ index, baseOffset: null, nextOffset: end, producer: null, opaque: true });
      return null;
    }
    const count = scanned.validated.recordCount;
    const p = scanned.validated.producer;
    if (p === null) {
      this.#pending.push({ index, baseOffset: end, nextOffset: end + count, producer: null, opaque: false });
      return { baseOffset: end, lastOffset: end + count - 1 };
    }
    let previous: ProducerState | undefined;
    let found = false;
    for (let k = this.#pending.length - 1; k >= 0; k--) {
      const e = this.#pending[k]!.producer;
      if (e !== null && e.id === p.producerId) {
        previous = e.state;
        found = true;
        break;
      }
    }
    if (!found) previous = committedProducer(p);
    const decision = checkSequence(previous, p);
    if (decision.kind !== "append") {
      // A duplicate or a refusal appends nothing: the end does not move.
      this.#pending.push({ index, baseOffset: null, nextOffset: end, producer: null, opaque: false });
      return null;
    }
    const state = applyProducerAppend(previous, p, end, end + count - 1);
    this.#pending.push({ index, baseOffset: end, nextOffset: end + count, producer: { id: p.producerId, state }, opaque: false });
    return { baseOffset: end, lastOffset: end + count - 1 };
  }
}
