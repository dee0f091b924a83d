/**
 * The decision core of an append (PROTOCOL.md 5.2, 5.2.1, 5.3): which answer a POST gets,
 * given the stream's state. The partition Durable Object loads the state, calls
 * {@link decideAppend}, and on `append`/`close` writes records, producer state, Stream-Seq
 * and the closed flag in one SQLite transaction.
 *
 * Idempotent producers are keyed by the client's string `Producer-Id`, per stream. Their
 * sequence numbers count requests (not records, unlike Kafka's KIP-98) and their epochs
 * are declared by the client, so this state is kept beside the log (table
 * `ds_producers`), not in Edgelog's numeric producer-id table.
 *
 * Pure module: no Workers imports.
 */

import type { ErrorCode } from "../protocol/errors.ts";
import { compareStreamSeq, contentTypesMatch, type ProducerHeaders } from "./headers.ts";

/** What a stream remembers about one producer id. */
export interface ProducerState {
  epoch: number;
  /** Highest accepted Producer-Seq in `epoch`. */
  lastSeq: number;
}

/** The producer tuple that closed the stream (a retry of it is a duplicate, not a conflict). */
export type ClosedBy = ProducerHeaders;

/** Outcome of validating producer headers (PROTOCOL.md 5.2.1 "Validation Logic"). */
export type ProducerDecision =
  | { kind: "accept"; state: ProducerState }
  | { kind: "duplicate"; lastSeq: number }
  | { kind: "stale-epoch"; currentEpoch: number }
  | { kind: "epoch-seq-not-zero" }
  | { kind: "gap"; expectedSeq: number; receivedSeq: number };

/**
 * Kafka-style fencing and deduplication for one request.
 * - unknown producer: seq 0 starts it (any epoch); any other seq is a gap (expected 0);
 * - lower epoch: fenced; higher epoch: must start at seq 0;
 * - same epoch: seq <= last is a duplicate, last + 1 is accepted, higher is a gap.
 */
export function decideProducer(state: ProducerState | null, epoch: number, seq: number): ProducerDecision {
  if (state === null) {
    return seq === 0 ? { kind: "accept", state: { epoch, lastSeq: 0 } } : { kind: "gap", expectedSeq: 0, receivedSeq: seq };
  }
  if (epoch < state.epoch) return { kind: "stale-epoch", currentEpoch: state.epoch };
  if (epoch > state.epoch) {
    return seq === 0 ? { kind: "accept", state: { epoch, lastSeq: 0 } } : { kind: "epoch-seq-not-zero" };
  }
  if (seq <= state.lastSeq) return { kind: "duplicate", lastSeq: state.lastSeq };
  if (seq === state.lastSeq + 1) return { kind: "accept", state: { epoch, lastSeq: seq } };
  return { kind: "gap", expectedSeq: state.lastSeq + 1, receivedSeq: seq };
}

/** The stream state an append is decided against. */
export interface AppendStreamState {
  contentType: string;
  closed: boolean;
  closedBy: ClosedBy | null;
  /** Last Stream-Seq appended, null if none yet (scope: per stream). */
  streamSeq: string | null;
  /** State of the request's producer id, null when unknown or when no producer headers. */
  producer: ProducerState | null;
}

/** The request, as the route parsed it. */
export interface AppendRequest {
  /** Request Content-Type; null allowed only for an empty body. */
  contentType: string | null;
  /** True when the body has at least one byte. */
  hasBody: boolean;
  /** Why the body cannot be stored (JSON streams), checked after content type and closure. */
  bodyError: { code: ErrorCode; message: string } | null;
  close: boolean;
  streamSeq: string | null;
  producer: ProducerHeaders | null;
}

/** What to do. `reject` carries the error code and the producer facts the answer's headers need. */
export type AppendDecision =
  | {
      kind: "reject";
      code: ErrorCode;
      message: string;
      /** STREAM_CLOSED: answer with Stream-Closed and the final Stream-Next-Offset. */
      closed?: boolean;
      currentEpoch?: number;
      expectedSeq?: number;
      receivedSeq?: number;
    }
  /** Nothing to write; 204 (producer duplicates, or closing an already-closed stream). */
  | { kind: "noop"; closed: boolean; producerSeq: number | null }
  /** Write (records when the body is non-empty) and/or close. */
  | { kind: "write"; close: boolean; producer: ProducerState | null; streamSeq: string | null };

function sameTuple(a: ClosedBy | null, b: ProducerHeaders | null): boolean {
  return a !== null && b !== null && a.id === b.id && a.epoch === b.epoch && a.seq === b.seq;
}

/**
 * Decides an append in the protocol's precedence order (PROTOCOL.md 5.2 "Error Precedence";
 * producer deduplication before Stream-Seq, 5.2.1):
 *  1. closed stream: a retry of the closing producer tuple is a duplicate (204); a close-only
 *     request without producer headers is idempotent (204); anything else is STREAM_CLOSED;
 *  2. empty body without `Stream-Closed`: EMPTY_BATCH (400);
 *  3. Content-Type (only when there is a body): CONTENT_TYPE_MISMATCH (409);
 *  4. the body itself (invalid JSON, empty JSON array): 400;
 *  5. producer fencing / deduplication / gaps;
 *  6. Stream-Seq regression: STREAM_SEQ_CONFLICT (409).
 */
export function decideAppend(s: AppendStreamState, r: AppendRequest): AppendDecision {
  if (s.closed) {
    if (r.producer !== null && sameTuple(s.closedBy, r.producer)) {
      return { kind: "noop", closed: true, producerSeq: r.producer.seq };
    }
    if (!r.hasBody && r.close && r.producer === null) return { kind: "noop", closed: true, producerSeq: null };
    return { kind: "reject", code: "STREAM_CLOSED", message: "The stream is closed.", closed: true };
  }
  if (!r.hasBody && !r.close) {
    return { kind: "reject", code: "EMPTY_BATCH", message: "An append needs a non-empty body (or Stream-Closed: true to close)." };
  }
  if (r.hasBody) {
    if (r.contentType === null) {
      return { kind: "reject", code: "INVALID_REQUEST", message: "An append with a body needs a Content-Type." };
    }
    if (!contentTypesMatch(r.contentType, s.contentType)) {
      return { kind: "reject", code: "CONTENT_TYPE_MISMATCH", message: `This stream's content type is ${s.contentType}.` };
    }
    if (r.bodyError !== null) return { kind: "reject", code: r.bodyError.code, message: r.bodyError.message };
  }
  let producer: ProducerState | null = null;
  if (r.producer !== null) {
    const d = decideProducer(s.producer, r.producer.epoch, r.producer.seq);
    switch (d.kind) {
      case "duplicate":
        return { kind: "noop", closed: false, producerSeq: d.lastSeq };
      case "stale-epoch":
        return { kind: "reject", code: "STALE_PRODUCER_EPOCH", message: `Producer epoch ${r.producer.epoch} is fenced by epoch ${d.currentEpoch}.`, currentEpoch: d.currentEpoch };
      case "epoch-seq-not-zero":
        return { kind: "reject", code: "INVALID_PRODUCER_SEQUENCE", message: `A new producer epoch must start at Producer-Seq 0, got ${r.producer.seq}.` };
      case "gap":
        return {
          kind: "reject",
          code: "OUT_OF_ORDER_SEQUENCE_NUMBER",
          message: `Expected Producer-Seq ${d.expectedSeq}, got ${d.receivedSeq}.`,
          expectedSeq: d.expectedSeq,
          receivedSeq: d.receivedSeq,
        };
      case "accept":
        producer = d.state;
        break;
    }
  }
  let streamSeq: string | null = null;
  if (r.hasBody && r.streamSeq !== null) {
    if (s.streamSeq !== null && compareStreamSeq(r.streamSeq, s.streamSeq) <= 0) {
      return { kind: "reject", code: "STREAM_SEQ_CONFLICT", message: `Stream-Seq must be greater than ${JSON.stringify(s.streamSeq)}.` };
    }
    streamSeq = r.streamSeq;
  }
  return { kind: "write", close: r.close, producer, streamSeq };
}
