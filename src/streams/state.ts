/**
 * A Durable Streams partition's stream state, as data (docs/DURABLE-STREAMS.md): the
 * in-memory shape of the `ds_stream` row, its mapping from the row, and the pure decisions of
 * a create (the new state, the initial values) and of an append (what it writes). The streams room
 * (durable-objects/partition/streams/state.ts) loads, commits and publishes it.
 *
 * Pure module: no Workers imports.
 */
import { encodeBatch, splitRecords, type ProducerRecord } from "../codec/index.ts";
import { MAX_STORED_BATCH_BYTES } from "../protocol/limits.ts";
import type { ErrorCode } from "../protocol/errors.ts";
import { decideAppend, type ClosedBy, type ProducerState as AppendProducerState } from "./append.ts";
import type { CreateConfig, StreamConfig } from "./create.ts";
import { forkExpiry } from "./expiry.ts";
import { DEFAULT_CONTENT_TYPE, isJsonContentType } from "./headers.ts";
import { splitBody } from "./records.ts";
import type { AppendStreamRequest, CreateStreamRequest } from "./rpc.ts";

/** Bytes of a record's framing kept free when a body is cut into values (recordSizeBytes of a bare record is < 32). */
const RECORD_OVERHEAD_BYTES = 64;

export interface ForkState {
  sourcePath: string;
  sourceTopic: string;
  sourceTopicId: string;
  anchor: number;
  subOffset: number;
  /** First offset of this stream's own log; reads below it go to the source. */
  forkOffset: number;
}

/** In-memory copy of the ds_stream row. */
export interface StreamMeta {
  path: string;
  contentType: string;
  json: boolean;
  ttlSeconds: number | null;
  expiresAtMs: number | null;
  expiryInherited: boolean;
  lastAccessMs: number;
  closed: boolean;
  closedBy: ClosedBy | null;
  streamSeq: string | null;
  fork: ForkState | null;
  visibleStart: number;
  refCount: number;
  softDeleted: boolean;
  /**
   * Deleted for good on a replicated partition (`replication.factor` 3): the delete (or expiry)
   * committed, the topic's destroy is the leader's to finish; reads answer 404 meanwhile and a
   * PUT makes the create saga delete the topic and start afresh (docs/DURABLE-STREAMS.md).
   */
  deleted: boolean;
  createdAtMs: number;
}

/** The ds_stream row as SQLite returns it. */
export type StreamRow = {
  path: string;
  content_type: string;
  ttl_seconds: number | null;
  expires_at_ms: number | null;
  expiry_inherited: number;
  last_access_ms: number;
  closed: number;
  closed_by_id: string | null;
  closed_by_epoch: number | null;
  closed_by_seq: number | null;
  stream_seq: string | null;
  fork_source_path: string | null;
  fork_source_topic: string | null;
  fork_source_topic_id: string | null;
  fork_anchor: number | null;
  fork_sub_offset: number;
  fork_offset: number | null;
  visible_start: number;
  ref_count: number;
  /** 0 live, 1 soft-deleted (kept for its forks), 2 deleted for good on a replicated partition ({@link StreamMeta.deleted}). */
  soft_deleted: number;
  created_at_ms: number;
};

export function streamFromRow(r: StreamRow): StreamMeta {
  return {
    path: r.path,
    contentType: r.content_type,
    json: isJsonContentType(r.content_type),
    ttlSeconds: r.ttl_seconds,
    expiresAtMs: r.expires_at_ms,
    expiryInherited: r.expiry_inherited === 1,
    lastAccessMs: r.last_access_ms,
    closed: r.closed === 1,
    closedBy: r.closed_by_id === null ? null : { id: r.closed_by_id, epoch: Number(r.closed_by_epoch), seq: Number(r.closed_by_seq) },
    streamSeq: r.stream_seq,
    fork:
      r.fork_source_path === null
        ? null
        : {
            sourcePath: r.fork_source_path,
            sourceTopic: String(r.fork_source_topic),
            sourceTopicId: String(r.fork_source_topic_id),
            anchor: Number(r.fork_anchor),
            subOffset: r.fork_sub_offset,
            forkOffset: Number(r.fork_offset),
          },
    visibleStart: r.visible_start,
    refCount: r.ref_count,
    softDeleted: r.soft_deleted === 1,
    deleted: r.soft_deleted === 2,
    createdAtMs: r.created_at_ms,
  };
}

/**
 * The parameters of a new stream's ds_stream row, in the order of the streams room's INSERT:
 * path, content_type, ttl_seconds, expires_at_ms, expiry_inherited, last_access_ms, closed,
 * fork_source_path, fork_source_topic, fork_source_topic_id, fork_anchor, fork_sub_offset,
 * fork_offset, visible_start, created_at_ms.
 */
export function streamRowValues(m: StreamMeta): (string | number | null)[] {
  const f = m.fork;
  return [
    m.path,
    m.contentType,
    m.ttlSeconds,
    m.expiresAtMs,
    m.expiryInherited ? 1 : 0,
    m.lastAccessMs,
    m.closed ? 1 : 0,
    f?.sourcePath ?? null,
    f?.sourceTopic ?? null,
    f?.sourceTopicId ?? null,
    f?.anchor ?? null,
    f?.subOffset ?? 0,
    f?.forkOffset ?? null,
    m.visibleStart,
    m.createdAtMs,
  ];
}

/** The part of a stream's state a repeated PUT is compared with (src/streams/create.ts). */
export function streamConfig(m: StreamMeta): StreamConfig {
  return {
    contentType: m.contentType,
    ttlSeconds: m.ttlSeconds,
    expiresAtMs: m.expiresAtMs,
    expiryInherited: m.expiryInherited,
    closed: m.closed,
    forkSource: m.fork?.sourcePath ?? null,
    forkAnchor: m.fork?.anchor ?? null,
    forkSubOffset: m.fork?.subOffset ?? 0,
  };
}

/**
 * The state of a stream created by `req` at `nowMs` on a log starting at `logStartOffset`: the
 * content type (requested, else the fork source's, else the default), the expiry (a fork
 * inherits its source's when it names none), the fork point.
 */
export function newStream(req: CreateStreamRequest, logStartOffset: number, nowMs: number): StreamMeta {
  const fork = req.fork;
  const contentType = req.contentType ?? fork?.source.contentType ?? DEFAULT_CONTENT_TYPE;
  const requested = { ttlSeconds: req.ttlSeconds, expiresAtMs: req.expiresAtMs };
  const expiry = fork === null ? requested : forkExpiry(requested, fork.source.expiry);
  return {
    path: req.path,
    contentType,
    json: isJsonContentType(contentType),
    ttlSeconds: expiry.ttlSeconds,
    expiresAtMs: expiry.expiresAtMs,
    expiryInherited: fork !== null && requested.ttlSeconds === null && requested.expiresAtMs === null && (expiry.ttlSeconds !== null || expiry.expiresAtMs !== null),
    lastAccessMs: nowMs,
    closed: req.closed,
    closedBy: null,
    streamSeq: null,
    fork:
      fork === null
        ? null
        : {
            sourcePath: fork.sourcePath,
            sourceTopic: fork.sourceTopic,
            sourceTopicId: fork.sourceTopicId,
            anchor: fork.anchor,
            subOffset: fork.subOffset,
            forkOffset: fork.source.forkOffset,
          },
    visibleStart: fork === null ? logStartOffset : fork.source.visibleStart,
    refCount: 0,
    softDeleted: false,
    deleted: false,
    createdAtMs: nowMs,
  };
}

/**
 * The values a create appends: a sub-offset fork's prefix, then the JSON messages or the
 * body cut into values of at most {@link maxValueBytes}.
 * @throws Error when a JSON stream's body came unparsed (a route bug)
 */
export function createValues(req: CreateStreamRequest, meta: StreamMeta, maxMessageBytes: number): Uint8Array[] {
  const values: Uint8Array[] = [];
  const prefix = req.fork?.source.prefix ?? null;
  if (prefix !== null) values.push(prefix);
  if (meta.json) {
    if (req.messages === null && req.body !== null && req.body.length > 0) throw new Error("a JSON stream was created with an unparsed body");
    for (const m of req.messages ?? []) values.push(m);
  } else if (req.body !== null && req.body.length > 0) {
    for (const v of splitBody(req.body, maxValueBytes(maxMessageBytes))) values.push(v);
  }
  return values;
}

/** Largest value of one record: the topic's max.message.bytes minus the record's own framing. */
export function maxValueBytes(maxMessageBytes: number): number {
  return Math.max(4, maxMessageBytes - RECORD_OVERHEAD_BYTES);
}

/**
 * Record batches of bare records (no key, no headers, the broker's time), each small enough
 * to be one stored row, so the partition stores them as they are instead of re-encoding.
 */
export function encodeValues(values: readonly Uint8Array[], nowMs: number): Uint8Array[] {
  const records: ProducerRecord[] = values.map((value) => ({ key: null, value, headers: [], timestamp: nowMs }));
  return splitRecords(records, MAX_STORED_BATCH_BYTES).map((group) => encodeBatch({}, group));
}

/** A Producer-Id's new state after an accepted append, stamped with the decision's time (epoch ms). */
export interface StreamProducerWrite {
  id: string;
  epoch: number;
  lastSeq: number;
  atMs: number;
}

/**
 * What an append does ({@link planStreamAppend}): a rejection with its answer's details, a
 * no-op (204: a duplicate, or closing a closed stream), or a write of `values` (maybe none)
 * and the stream's next state.
 */
export type StreamAppendPlan =
  | { kind: "reject"; code: ErrorCode; message: string; details: Record<string, unknown> }
  | { kind: "noop"; producerSeq: number | null }
  | { kind: "write"; next: StreamMeta; values: Uint8Array[]; producer: StreamProducerWrite | null };

/**
 * Decides an append ({@link decideAppend}, PROTOCOL.md 5.2) on the stream `meta` with the
 * request's stored producer state, at `nowMs`, on a log ending at `tail`: the values to store
 * (JSON messages, or the body cut into values that fit max.message.bytes), the next state
 * (closure, Stream-Seq) and the Producer-Id's next state.
 * @throws Error when a JSON stream's append came unparsed (a route bug)
 */
export function planStreamAppend(meta: StreamMeta, producer: AppendProducerState | null, req: AppendStreamRequest, tail: number, maxMessageBytes: number, nowMs: number): StreamAppendPlan {
  const hasBody = req.body.length > 0;
  const d = decideAppend(
    { contentType: meta.contentType, closed: meta.closed, closedBy: meta.closedBy, streamSeq: meta.streamSeq, producer },
    { contentType: req.contentType, hasBody, bodyError: req.bodyError, close: req.close, streamSeq: req.streamSeq, producer: req.producer },
  );
  if (d.kind === "reject") {
    const details = {
      tail,
      closed: meta.closed,
      ...(d.currentEpoch !== undefined ? { currentEpoch: d.currentEpoch } : {}),
      ...(d.expectedSeq !== undefined ? { expectedSeq: d.expectedSeq, receivedSeq: d.receivedSeq } : {}),
    };
    return { kind: "reject", code: d.code, message: d.message, details };
  }
  if (d.kind === "noop") return { kind: "noop", producerSeq: d.producerSeq };
  let values: Uint8Array[] = [];
  if (hasBody) {
    if (meta.json) {
      if (req.messages === null) throw new Error("a JSON stream accepted an append without parsed messages");
      values = req.messages;
    } else {
      values = splitBody(req.body, maxValueBytes(maxMessageBytes));
    }
  }
  const next: StreamMeta = {
    ...meta,
    closed: meta.closed || d.close,
    closedBy: d.close && req.producer !== null ? req.producer : meta.closedBy,
    streamSeq: d.streamSeq ?? meta.streamSeq,
  };
  const p = d.producer !== null && req.producer !== null ? { id: req.producer.id, epoch: d.producer.epoch, lastSeq: d.producer.lastSeq, atMs: nowMs } : null;
  return { kind: "write", next, values, producer: p };
}

/** What a repeated PUT asks for, in the shape {@link createMatches} compares. */
export function createConfig(req: CreateStreamRequest): CreateConfig {
  return {
    contentType: req.contentType,
    ttlSeconds: req.ttlSeconds,
    expiresAtMs: req.expiresAtMs,
    closed: req.closed,
    fork: req.fork === null ? null : { source: req.fork.sourcePath, anchor: req.fork.anchorRequested, subOffset: req.fork.subOffset },
  };
}

/** A change of the stream's state. `values`: the appended values, for the tail cache. */
export type StreamChange =
  | { op: "create"; meta: StreamMeta; values: Uint8Array[] }
  | {
      op: "append";
      previous: StreamMeta;
      next: StreamMeta;
      values: Uint8Array[];
      /** The Producer-Id's new state, stamped with the decision's time. */
      producer: StreamProducerWrite | null;
    }
  | { op: "touch"; lastAccessMs: number }
  | { op: "softDelete" }
  | { op: "refCount"; refCount: number }
  /** Forget the Producer-Ids last written before `beforeMs` (a bounded slice of them). */
  | { op: "expireProducers"; beforeMs: number }
  /** A replicated stream deleted for good, its topic's destroy pending (StreamMeta.deleted). */
  | { op: "markDeleted" }
  /**
   * A replica's snapshot catch-up (docs/RAFT.md "Snapshot catch-up"): the room's state replaced
   * by a peer's at its applied index: the ds_stream row (null: no stream) and every Producer-Id.
   */
  | { op: "install"; row: StreamRow | null; producers: StreamProducerRow[] };

/** A ds_producers row as a replica ships it: [producer_id, epoch, last_seq, updated_at_ms]. */
export type StreamProducerRow = [string, number, number, number];

/** The streams room's part of a partition's command (durable-objects/partition.ts `commit`). */
export interface StreamsCommand {
  stream: StreamChange | null;
}

/** A stream that must go for good: what the switchboard's destroy path does after destroying this object. */
export interface SelfDestroy {
  /** The stream's topic, deleted from the metadata store. */
  topic: string;
  /** The fork source whose reference this stream holds, released after (`sourceTopic`: its topic's name). */
  releaseFork: { sourceTopicId: string; sourcePath: string; sourceTopic: string } | null;
}
