/**
 * The Durable Streams state of a partition (docs/DURABLE-STREAMS.md): a stream is a
 * one-partition topic, and this class is the part of its PartitionDO that knows about the
 * stream. It owns two tables (migration 2, {@link STREAM_MIGRATION}) and reaches the log only
 * through {@link PartitionHost}, so the log's storage format and append path stay the
 * partition's own: stream records are ordinary record batches.
 *
 * - `ds_stream`: zero or one row, the stream's configuration and state (content type, expiry,
 *   closed flag, last Stream-Seq, fork source, reference count, soft-deleted flag).
 * - `ds_producers`: idempotent-producer state per string Producer-Id.
 *
 * Decisions are the pure functions of src/streams/; this shell loads state, calls them, and
 * writes the records and the state they describe in one transaction (via the host's append).
 */
import { encodeBatch, splitRecords, type ProducerRecord } from "../src/codec/index.ts";
import type { Env } from "../src/env.ts";
import { metadataStore } from "../src/metadata/store.ts";
import { partitionStub, type AppendOk } from "../src/partition/rpc.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../src/protocol/errors.ts";
import { MAX_STORED_BATCH_BYTES } from "../src/protocol/limits.ts";
import { decideAppend, type ClosedBy, type ProducerState } from "../src/streams/append.ts";
import { createMatches } from "../src/streams/create.ts";
import { expiryDeadlineMs, forkExpiry, isExpired, remainingLifetimeMs, touchPersistIntervalMs } from "../src/streams/expiry.ts";
import { contentTypesMatch, DEFAULT_CONTENT_TYPE, isJsonContentType } from "../src/streams/headers.ts";
import { answerPieces, cacheSeparator, chunkPieces, concatPieces, piecesLength, type AnswerPart } from "../src/streams/body.ts";
import { ByteCache, RECORD_OVERHEAD_BYTES as CACHE_RECORD_OVERHEAD_BYTES } from "../src/streams/byte-cache.ts";
import { resolveSubOffset, splitBody } from "../src/streams/records.ts";
import { forEachValue } from "../src/streams/values.ts";
import type {
  AppendStreamOk,
  AppendStreamRequest,
  BoundaryValuesRequest,
  CreateStreamOk,
  CreateStreamRequest,
  DeleteStreamOk,
  ForkSourceOk,
  ForkSourceRequest,
  HeadStreamOk,
  ReadRangeOk,
  ReadRangeRequest,
  ReadStreamOk,
  ReadStreamRequest,
  StreamFacts,
  StreamRpc,
} from "../src/streams/rpc.ts";
import type { Migration, Sql } from "./base.ts";

/** Migration 2 of PartitionDO: the stream tables. */
export const STREAM_MIGRATION: Migration = {
  version: 2,
  name: "durable-streams",
  up(sql) {
    sql.run(`
      CREATE TABLE ds_stream (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        path TEXT NOT NULL,
        content_type TEXT NOT NULL,
        ttl_seconds INTEGER,
        expires_at_ms INTEGER,
        expiry_inherited INTEGER NOT NULL,
        last_access_ms INTEGER NOT NULL,
        closed INTEGER NOT NULL,
        closed_by_id TEXT,
        closed_by_epoch INTEGER,
        closed_by_seq INTEGER,
        stream_seq TEXT,
        fork_source_path TEXT,
        fork_source_topic TEXT,
        fork_source_topic_id TEXT,
        fork_anchor INTEGER,
        fork_sub_offset INTEGER NOT NULL,
        fork_offset INTEGER,
        visible_start INTEGER NOT NULL,
        ref_count INTEGER NOT NULL,
        soft_deleted INTEGER NOT NULL,
        created_at_ms INTEGER NOT NULL
      );
      CREATE TABLE ds_producers (
        producer_id TEXT PRIMARY KEY,
        epoch INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        updated_at_ms INTEGER NOT NULL
      ) WITHOUT ROWID;
    `);
  },
};

/** What the stream layer sees of the partition's log. */
export interface LogView {
  topic: string;
  topicId: string;
  logStartOffset: number;
  logEndOffset: number;
  maxMessageBytes: number;
}

/** What PartitionDO lends the stream layer (closures over its private members). */
export interface PartitionHost {
  /** The log, or null when the partition is not initialised or was destroyed. */
  log(): LogView | null;
  /** The partition's append path; `inTransaction` runs inside its SQLite transaction. Synchronous. */
  appendBatches(batches: Uint8Array[], inTransaction: () => void): RpcResult<AppendOk>;
  /** Stored batches from the one holding `offset` on, in offset order. */
  batchesFrom(offset: number): Iterable<{ baseOffset: number; lastOffset: number; data: Uint8Array }>;
  /** Resolves at the next append (or wake), or after `ms`. */
  nextAppend(ms: number): Promise<void>;
  /** Wakes every waiting long-poll (a close, a delete). */
  wake(): void;
  /** Moves an empty log to start (and end) at `offset`: a fork's own log starts at its fork offset. */
  startLogAt(offset: number): void;
  transaction(fn: () => void): void;
  setAlarm(atMs: number): void;
}

/** Bytes of a record's framing kept free when a body is cut into values (recordSizeBytes of a bare record is < 32). */
const RECORD_OVERHEAD_BYTES = 64;

/**
 * Budget of the tail cache of recently appended values (src/streams/byte-cache.ts). Modest,
 * because several objects may share an isolate's 128 MB (developers.cloudflare.com/workers/platform/limits).
 */
export const STREAM_CACHE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Largest answer sent as one buffer in the RPC result (a Durable Object RPC answer is
 * limited to 32 MiB); readers that accept a streamed body get larger ones.
 */
export const RPC_BODY_MAX_BYTES = 16 * 1024 * 1024;
/** Answers from this size on go as a stream when the reader accepts one (`ReadStreamRequest.stream`). */
export const STREAM_BODY_MIN_BYTES = 256 * 1024;
/** Chunks of a streamed answer: runs of small values are copied into chunks of about this size... */
const BODY_CHUNK_BYTES = 1024 * 1024;
/** ...and views of at least this size (ranges of the tail cache, large values) go as they are. */
const BODY_DIRECT_BYTES = 64 * 1024;
/** Chunks of a streamed answer prepared ahead of its reader (memory held: about this many MiB). */
const BODY_READ_AHEAD_CHUNKS = 2;
/**
 * Value bytes one answer reads from storage at most (its first record always): held, as views
 * of the stored rows, until the answer is sent. Cached bytes cost nothing extra (the answer
 * passes views of the cache on), so they count only against the request's maxBytes.
 */
export const STORAGE_READ_MAX_BYTES = 16 * 1024 * 1024;

/**
 * The stored batches from the one holding `?` on, in offset order: PartitionDO's batchesFrom
 * (durable-objects/partition.ts, the owner of the `batches` table), read-only, reduced to the
 * one column a stream read needs, and read with a raw cursor: rows as objects with four
 * columns cost ~7 us each, most of a read from storage (one row per stream append).
 */
const BATCH_DATA_FROM = `SELECT data FROM batches
  WHERE base_offset >= COALESCE((SELECT base_offset FROM batches WHERE base_offset <= ? ORDER BY base_offset DESC LIMIT 1), 0)
  ORDER BY base_offset`;

/** A run of a read's own records: views of the tail cache, or values read from storage (views of the rows). */
type OwnPart = { kind: "cache"; from: number; to: number; pieces: Uint8Array[] } | { kind: "storage"; values: (Uint8Array | null)[] };

/** What a read takes: its parts in order, how many records and bytes. */
interface ReadPlan {
  parts: OwnPart[];
  count: number;
  bytes: number;
}

interface ForkState {
  sourcePath: string;
  sourceTopic: string;
  sourceTopicId: string;
  anchor: number;
  subOffset: number;
  /** First offset of this stream's own log; reads below it go to the source. */
  forkOffset: number;
}

/** In-memory copy of the ds_stream row. */
interface StreamMeta {
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
  createdAtMs: number;
}

type StreamRow = {
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
  soft_deleted: number;
  created_at_ms: number;
};

type Gate = { ok: true; meta: StreamMeta; log: LogView } | ErrorResult;

export class PartitionStreams implements StreamRpc {
  readonly #host: PartitionHost;
  readonly #sql: Sql;
  readonly #env: Env;
  #meta: StreamMeta | null = null;
  /** Bytes of the latest records appended through the stream API, served to readers without SQLite. */
  readonly #cache = new ByteCache(STREAM_CACHE_MAX_BYTES);
  /** last_access_ms as stored (the in-memory value may be newer, see touchPersistIntervalMs). */
  #storedAccessMs = 0;

  constructor(host: PartitionHost, sql: Sql, env: Env) {
    this.#host = host;
    this.#sql = sql;
    this.#env = env;
  }

  /** Loads the stream row (start-up). */
  load(): void {
    const r = this.#sql.first<StreamRow>("SELECT * FROM ds_stream WHERE id = 1");
    this.#meta = r === undefined ? null : fromRow(r);
    this.#storedAccessMs = r?.last_access_ms ?? 0;
  }

  /** Forgets the in-memory state (the partition's storage was deleted). */
  reset(): void {
    this.#meta = null;
    this.#cache.reset();
  }

  /**
   * Native produce into a stream's topic: refused while the stream is closed (closure is
   * monotonic for every writer) or soft-deleted. @returns the error, or null to proceed.
   */
  nativeAppendBlocked(): ErrorResult | null {
    const m = this.#meta;
    if (m === null) return null;
    if (m.softDeleted) return errorResult("STREAM_GONE", "This topic backs a deleted stream kept for its forks.");
    if (m.closed) return errorResult("STREAM_CLOSED", "This topic backs a closed stream.", { tail: this.#host.log()?.logEndOffset ?? null, closed: true });
    return null;
  }

  // ---- RPC ----

  async dsCreate(req: CreateStreamRequest): Promise<RpcResult<CreateStreamOk>> {
    const log = this.#host.log();
    if (log === null) return unknownPartition();
    const nowMs = Date.now();
    const existing = this.#meta;
    if (existing !== null) {
      if (existing.path !== req.path) return errorResult("STREAM_CONFLICT", "This topic backs another stream path.");
      if (existing.softDeleted) return errorResult("STREAM_CONFLICT", "The stream at this path was deleted but forks still reference it.");
      if (this.#expired(existing, nowMs)) {
        await this.#expire();
        // The caller re-creates the topic and asks again.
        return unknownPartition();
      }
      const same = createMatches(
        {
          contentType: existing.contentType,
          ttlSeconds: existing.ttlSeconds,
          expiresAtMs: existing.expiresAtMs,
          expiryInherited: existing.expiryInherited,
          closed: existing.closed,
          forkSource: existing.fork?.sourcePath ?? null,
          forkAnchor: existing.fork?.anchor ?? null,
          forkSubOffset: existing.fork?.subOffset ?? 0,
        },
        {
          contentType: req.contentType,
          ttlSeconds: req.ttlSeconds,
          expiresAtMs: req.expiresAtMs,
          closed: req.closed,
          fork: req.fork === null ? null : { source: req.fork.sourcePath, anchor: req.fork.anchorRequested, subOffset: req.fork.subOffset },
        },
      );
      if (!same) return errorResult("STREAM_CONFLICT", "A stream exists at this path with a different configuration.");
      return { ok: true, status: "exists", ...this.#facts(existing, log), ttlSeconds: existing.ttlSeconds, expiresAtMs: existing.expiresAtMs };
    }

    const fork = req.fork;
    const contentType = req.contentType ?? fork?.source.contentType ?? DEFAULT_CONTENT_TYPE;
    const requested = { ttlSeconds: req.ttlSeconds, expiresAtMs: req.expiresAtMs };
    const expiry = fork === null ? requested : forkExpiry(requested, fork.source.expiry);
    if (fork !== null) {
      if (log.logEndOffset !== log.logStartOffset || (log.logStartOffset !== 0 && log.logStartOffset !== fork.source.forkOffset)) {
        return errorResult("STREAM_CONFLICT", "A fork needs an empty topic.");
      }
      this.#host.startLogAt(fork.source.forkOffset);
    }
    const meta: StreamMeta = {
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
      visibleStart: fork === null ? log.logStartOffset : fork.source.visibleStart,
      refCount: 0,
      softDeleted: false,
      createdAtMs: nowMs,
    };
    const values: Uint8Array[] = [];
    const prefix = fork?.source.prefix ?? null;
    if (prefix !== null) values.push(prefix);
    if (meta.json) {
      if (req.messages === null && req.body !== null && req.body.length > 0) throw new Error("a JSON stream was created with an unparsed body");
      for (const m of req.messages ?? []) values.push(m);
    } else if (req.body !== null && req.body.length > 0) {
      for (const v of splitBody(req.body, maxValueBytes(log))) values.push(v);
    }
    const write = (): void => this.#writeRow(meta);
    if (values.length > 0) {
      const r = this.#host.appendBatches(encodeValues(values, nowMs), write);
      if (!r.ok) return r;
      this.#cache.append(r.baseOffset, values, cacheSeparator(meta.json));
    } else {
      this.#host.transaction(write);
    }
    this.#meta = meta;
    this.#storedAccessMs = meta.lastAccessMs;
    this.#armAlarm(meta);
    const after = this.#host.log() as LogView;
    return { ok: true, status: "created", ...this.#facts(meta, after), ttlSeconds: meta.ttlSeconds, expiresAtMs: meta.expiresAtMs };
  }

  async dsHead(path: string): Promise<RpcResult<HeadStreamOk>> {
    const g = await this.#gate(path, false);
    if (!g.ok) return g;
    return { ok: true, ...this.#facts(g.meta, g.log), ttlSeconds: g.meta.ttlSeconds, expiresAtMs: g.meta.expiresAtMs };
  }

  async dsAppend(req: AppendStreamRequest): Promise<RpcResult<AppendStreamOk>> {
    const g = await this.#gate(req.path, true);
    if (!g.ok) return g;
    const { meta, log } = g;
    const nowMs = Date.now();
    // From here on nothing awaits: decide and write in one turn of the object.
    const producer =
      req.producer === null
        ? null
        : (this.#sql.first<{ epoch: number; last_seq: number }>("SELECT epoch, last_seq FROM ds_producers WHERE producer_id = ?", req.producer.id) ?? null);
    const hasBody = req.body.length > 0;
    const d = decideAppend(
      {
        contentType: meta.contentType,
        closed: meta.closed,
        closedBy: meta.closedBy,
        streamSeq: meta.streamSeq,
        producer: producer === null ? null : { epoch: producer.epoch, lastSeq: producer.last_seq },
      },
      { contentType: req.contentType, hasBody, bodyError: req.bodyError, close: req.close, streamSeq: req.streamSeq, producer: req.producer },
    );
    if (d.kind === "reject") {
      return errorResult(d.code, d.message, {
        tail: log.logEndOffset,
        closed: meta.closed,
        ...(d.currentEpoch !== undefined ? { currentEpoch: d.currentEpoch } : {}),
        ...(d.expectedSeq !== undefined ? { expectedSeq: d.expectedSeq, receivedSeq: d.receivedSeq } : {}),
      });
    }
    if (d.kind === "noop") {
      return { ok: true, status: 204, ...this.#facts(meta, log), producerEpoch: req.producer?.epoch ?? null, producerSeq: d.producerSeq };
    }
    let values: Uint8Array[] = [];
    if (hasBody) {
      if (meta.json) {
        if (req.messages === null) throw new Error("a JSON stream accepted an append without parsed messages");
        values = req.messages;
      } else {
        values = splitBody(req.body, maxValueBytes(log));
      }
    }
    const next: StreamMeta = {
      ...meta,
      closed: meta.closed || d.close,
      closedBy: d.close && req.producer !== null ? req.producer : meta.closedBy,
      streamSeq: d.streamSeq ?? meta.streamSeq,
    };
    const write = (): void => {
      if (d.producer !== null && req.producer !== null) {
        this.#sql.run(
          `INSERT INTO ds_producers (producer_id, epoch, last_seq, updated_at_ms) VALUES (?, ?, ?, ?)
           ON CONFLICT (producer_id) DO UPDATE SET epoch = excluded.epoch, last_seq = excluded.last_seq, updated_at_ms = excluded.updated_at_ms`,
          req.producer.id,
          d.producer.epoch,
          d.producer.lastSeq,
          nowMs,
        );
      }
      if (next.closed !== meta.closed || next.streamSeq !== meta.streamSeq) {
        this.#sql.run(
          "UPDATE ds_stream SET closed = ?, closed_by_id = ?, closed_by_epoch = ?, closed_by_seq = ?, stream_seq = ? WHERE id = 1",
          next.closed ? 1 : 0,
          next.closedBy?.id ?? null,
          next.closedBy?.epoch ?? null,
          next.closedBy?.seq ?? null,
          next.streamSeq,
        );
      }
    };
    if (values.length > 0) {
      const r = this.#host.appendBatches(encodeValues(values, nowMs), write);
      if (!r.ok) return r;
      this.#cache.append(r.baseOffset, values, cacheSeparator(meta.json));
    } else {
      this.#host.transaction(write);
    }
    this.#meta = next;
    // The append path woke readers already; a close-only request must wake them too.
    if (next.closed && !meta.closed) this.#host.wake();
    const after = this.#host.log() as LogView;
    return {
      ok: true,
      status: req.producer !== null && hasBody ? 200 : 204,
      ...this.#facts(next, after),
      producerEpoch: req.producer?.epoch ?? null,
      producerSeq: d.producer?.lastSeq ?? null,
    };
  }

  async dsRead(req: ReadStreamRequest): Promise<RpcResult<ReadStreamOk>> {
    const deadline = Date.now() + Math.max(0, req.waitMs);
    const maxBytes = req.stream === true ? req.maxBytes : Math.min(req.maxBytes, RPC_BODY_MAX_BYTES);
    let start: number | null = null;
    let waited = false;
    for (;;) {
      const g = await this.#gate(req.path, true);
      if (!g.ok) return g;
      const { meta, log } = g;
      if (start === null) {
        // A fork's reads reach back into its source; otherwise the log's own start (retention moves it).
        const firstReadable = meta.fork !== null ? meta.visibleStart : log.logStartOffset;
        if (req.from.kind === "beginning") start = firstReadable;
        else if (req.from.kind === "now") start = log.logEndOffset;
        else start = req.from.offset;
        if (start > log.logEndOffset) {
          return errorResult("INVALID_OFFSET", "The offset is beyond the tail of the stream.", { tail: log.logEndOffset });
        }
        if (start < firstReadable || (meta.fork !== null && start >= meta.fork.forkOffset && start < log.logStartOffset)) {
          return errorResult("OFFSET_GONE", "The offset is before the earliest retained position.", { logStartOffset: firstReadable });
        }
      }
      const answer: AnswerPart[] = [];
      let count = 0;
      let bytes = 0;
      let next = start;
      if (meta.fork !== null && next < meta.fork.forkOffset) {
        const r = await this.#sourceOf(meta.fork).dsReadRange({ from: next, end: meta.fork.forkOffset, maxBytes, maxRecords: req.maxRecords });
        if (!r.ok) return r.code === "UNKNOWN_TOPIC_OR_PARTITION" ? errorResult("OFFSET_GONE", "The fork's source data is gone.") : r;
        answer.push({ kind: "values", values: r.values });
        count += r.values.length;
        for (const v of r.values) bytes += v?.length ?? 0;
        next = r.nextOffset;
      }
      // Re-read the state: the source read awaited.
      const m = this.#meta;
      const l = this.#host.log();
      if (m === null || l === null || m.path !== meta.path) return errorResult("STREAM_NOT_FOUND", "The stream was deleted.");
      if ((meta.fork === null || next >= meta.fork.forkOffset) && count < req.maxRecords) {
        const plan: ReadPlan = { parts: [], count, bytes };
        next = this.#planOwn(next, l.logEndOffset, maxBytes, req.maxRecords, plan);
        count = plan.count;
        bytes = plan.bytes;
        for (const part of plan.parts) answer.push(part.kind === "cache" ? { kind: "stored", pieces: part.pieces } : { kind: "values", values: part.values });
      }
      const remainingMs = deadline - Date.now();
      if (count === 0 && next === l.logEndOffset && !m.closed && remainingMs > 0) {
        waited = true;
        await this.#host.nextAppend(remainingMs);
        continue;
      }
      // Views of the values and of the cache, formatted; large answers to readers that take a
      // stream go as one (copied into chunks as it is sent), the others as one buffer.
      const pieces = [...answerPieces(answer, m.json)];
      const bodyBytes = piecesLength(pieces);
      const body = req.stream === true && bodyBytes >= STREAM_BODY_MIN_BYTES ? bodyStream(pieces) : concatPieces(pieces);
      return {
        ok: true,
        ...this.#facts(m, l),
        startOffset: start,
        nextOffset: next,
        count,
        body,
        bodyBytes,
        upToDate: next === l.logEndOffset,
        remainingLifetimeMs: remainingLifetimeMs(m, m.lastAccessMs, Date.now()),
        timedOut: waited && count === 0,
      };
    }
  }

  async dsDelete(path: string): Promise<RpcResult<DeleteStreamOk>> {
    const g = await this.#gate(path, false);
    if (!g.ok) return g;
    if (g.meta.refCount > 0) {
      this.#setSoftDeleted();
      return { ok: true, soft: true };
    }
    await this.#deleteSelf();
    return { ok: true, soft: false };
  }

  async dsForkSource(req: ForkSourceRequest): Promise<RpcResult<ForkSourceOk>> {
    const log = this.#host.log();
    const m0 = this.#meta;
    if (log === null || m0 === null || m0.path !== req.path) return errorResult("STREAM_NOT_FOUND", "The fork source does not exist.");
    if (!m0.softDeleted && this.#expired(m0, Date.now())) await this.#expire();
    const meta = this.#meta;
    if (meta === null) return errorResult("STREAM_NOT_FOUND", "The fork source does not exist.");
    if (meta.softDeleted) return errorResult("STREAM_CONFLICT", "The fork source was deleted (it is kept only for its existing forks).");
    if (req.contentType !== null && !contentTypesMatch(req.contentType, meta.contentType)) {
      return errorResult("CONTENT_TYPE_MISMATCH", `The source stream's content type is ${meta.contentType}.`);
    }
    const tail = log.logEndOffset;
    const anchor = req.anchor ?? tail;
    if (anchor > tail || anchor < meta.visibleStart) {
      return errorResult("INVALID_OFFSET", "Stream-Fork-Offset is beyond the source's tail or before its start.", { tail });
    }
    let forkOffset = anchor;
    let prefix: Uint8Array | null = null;
    if (req.subOffset > 0) {
      const values = await this.#boundaryValues(anchor, tail);
      if (!values.ok) return values;
      const point = resolveSubOffset(anchor, values.values, req.subOffset, meta.json);
      if (point === null) return errorResult("INVALID_OFFSET", "Stream-Fork-Sub-Offset goes past the next data boundary.");
      forkOffset = point.forkOffset;
      prefix = point.prefix;
    }
    const now = this.#meta;
    if (now === null || now.softDeleted) return errorResult("STREAM_NOT_FOUND", "The fork source was deleted.");
    now.refCount += 1;
    this.#sql.run("UPDATE ds_stream SET ref_count = ? WHERE id = 1", now.refCount);
    return {
      ok: true,
      contentType: now.contentType,
      expiry: { ttlSeconds: now.ttlSeconds, expiresAtMs: now.expiresAtMs },
      anchor,
      forkOffset,
      prefix,
      visibleStart: now.visibleStart,
    };
  }

  async dsRelease(path: string): Promise<RpcResult<object>> {
    const m = this.#meta;
    if (m === null || m.path !== path) return { ok: true };
    m.refCount = Math.max(0, m.refCount - 1);
    this.#sql.run("UPDATE ds_stream SET ref_count = ? WHERE id = 1", m.refCount);
    if (m.refCount === 0 && m.softDeleted) await this.#deleteSelf();
    return { ok: true };
  }

  async dsReadRange(req: ReadRangeRequest): Promise<RpcResult<ReadRangeOk>> {
    const log = this.#host.log();
    const meta = this.#meta;
    if (log === null || meta === null) return unknownPartition();
    const end = Math.min(req.end, log.logEndOffset);
    if (req.from < meta.visibleStart) return errorResult("OFFSET_GONE", "The offset is before the earliest retained position.");
    const values: (Uint8Array | null)[] = [];
    let next = req.from;
    let bytes = 0;
    if (meta.fork !== null && next < meta.fork.forkOffset) {
      const r = await this.#sourceOf(meta.fork).dsReadRange({ from: next, end: Math.min(end, meta.fork.forkOffset), maxBytes: req.maxBytes, maxRecords: req.maxRecords });
      if (!r.ok) return r;
      for (const v of r.values) {
        values.push(v);
        bytes += v?.length ?? 0;
      }
      next = r.nextOffset;
    }
    if ((meta.fork === null || next >= meta.fork.forkOffset) && values.length < req.maxRecords) {
      const plan: ReadPlan = { parts: [], count: values.length, bytes };
      next = this.#planOwn(next, end, Math.min(req.maxBytes, RPC_BODY_MAX_BYTES), req.maxRecords, plan);
      for (const part of plan.parts) {
        if (part.kind === "cache") {
          for (let o = part.from; o < part.to; o++) values.push(this.#cache.value(o));
        } else {
          // An RPC answer carries a view's whole buffer: copy views into larger buffers (a stored row).
          for (const v of part.values) values.push(v === null || v.byteLength === v.buffer.byteLength ? v : v.slice());
        }
      }
    }
    return { ok: true, values, nextOffset: next };
  }

  async dsBoundaryValues(req: BoundaryValuesRequest): Promise<RpcResult<{ values: (Uint8Array | null)[] }>> {
    return this.#boundaryValues(req.anchor, req.end);
  }

  /** The alarm: expire an idle stream at its deadline, or re-arm for a deadline that moved. */
  async onAlarm(): Promise<void> {
    const m = this.#meta;
    if (m === null || m.softDeleted) return;
    if (this.#expired(m, Date.now())) await this.#expire();
    else this.#armAlarm(m);
  }

  // ---- helpers ----

  /**
   * Every client-facing call starts here: the stream must exist at this path, not be
   * expired (expiring it now if it is) and not be soft-deleted. Reads and writes reset a
   * sliding TTL (`touch`); HEAD and DELETE do not.
   */
  async #gate(path: string, touch: boolean): Promise<Gate> {
    const nowMs = Date.now();
    const log = this.#host.log();
    if (log === null) return unknownPartition();
    let meta = this.#meta;
    if (meta === null || meta.path !== path) return errorResult("STREAM_NOT_FOUND", "No stream exists at this path.");
    if (!meta.softDeleted && this.#expired(meta, nowMs)) {
      await this.#expire();
      meta = this.#meta;
      if (meta === null) return errorResult("STREAM_NOT_FOUND", "The stream expired.");
    }
    if (meta.softDeleted) return errorResult("STREAM_GONE", "The stream was deleted; it is kept only for the forks that reference it.");
    if (touch) this.#touch(meta, nowMs);
    return { ok: true, meta, log };
  }

  #expired(m: StreamMeta, nowMs: number): boolean {
    return isExpired(m, m.lastAccessMs, nowMs);
  }

  #touch(m: StreamMeta, nowMs: number): void {
    if (m.ttlSeconds === null || nowMs <= m.lastAccessMs) return;
    m.lastAccessMs = nowMs;
    if (nowMs - this.#storedAccessMs >= touchPersistIntervalMs(m.ttlSeconds)) {
      this.#sql.run("UPDATE ds_stream SET last_access_ms = ? WHERE id = 1", nowMs);
      this.#storedAccessMs = nowMs;
    }
  }

  /** Expiry: like DELETE (protocol 4): soft when forks reference the stream, else for good. */
  async #expire(): Promise<void> {
    const m = this.#meta;
    if (m === null) return;
    if (m.refCount > 0) this.#setSoftDeleted();
    else await this.#deleteSelf();
  }

  #setSoftDeleted(): void {
    const m = this.#meta;
    if (m === null) return;
    m.softDeleted = true;
    this.#sql.run("UPDATE ds_stream SET soft_deleted = 1 WHERE id = 1");
    this.#host.wake();
  }

  /**
   * Deletes the stream for good: its row first (so nothing answers for it any more), then
   * its topic (the metadata store destroys this partition's storage), then the reference
   * it holds on its fork source, which may cascade up the chain (protocol 4.2).
   */
  async #deleteSelf(): Promise<void> {
    const m = this.#meta;
    const log = this.#host.log();
    if (m === null) return;
    this.#meta = null;
    this.#sql.run("DELETE FROM ds_stream");
    this.#host.wake();
    if (log !== null) {
      const r = await metadataStore(this.#env.METADATA).deleteTopic(log.topic);
      if (!r.ok && r.code !== "UNKNOWN_TOPIC_OR_PARTITION") throw new Error(`deleting topic ${log.topic} failed: ${r.code}`);
    }
    if (m.fork !== null) {
      const r = await this.#sourceOf(m.fork).dsRelease(m.fork.sourcePath);
      if (!r.ok && r.code !== "UNKNOWN_TOPIC_OR_PARTITION") throw new Error(`releasing fork source ${m.fork.sourcePath} failed: ${r.code}`);
    }
  }

  #writeRow(m: StreamMeta): void {
    this.#sql.run(
      `INSERT INTO ds_stream (id, path, content_type, ttl_seconds, expires_at_ms, expiry_inherited, last_access_ms, closed,
         closed_by_id, closed_by_epoch, closed_by_seq, stream_seq, fork_source_path, fork_source_topic, fork_source_topic_id,
         fork_anchor, fork_sub_offset, fork_offset, visible_start, ref_count, soft_deleted, created_at_ms)
       VALUES (1, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?)`,
      m.path,
      m.contentType,
      m.ttlSeconds,
      m.expiresAtMs,
      m.expiryInherited ? 1 : 0,
      m.lastAccessMs,
      m.closed ? 1 : 0,
      m.fork?.sourcePath ?? null,
      m.fork?.sourceTopic ?? null,
      m.fork?.sourceTopicId ?? null,
      m.fork?.anchor ?? null,
      m.fork?.subOffset ?? 0,
      m.fork?.forkOffset ?? null,
      m.visibleStart,
      m.createdAtMs,
    );
  }

  #armAlarm(m: StreamMeta): void {
    const d = expiryDeadlineMs(m, m.lastAccessMs);
    if (d !== null) this.#host.setAlarm(d);
  }

  #facts(m: StreamMeta, log: LogView): StreamFacts {
    return { topicId: log.topicId, contentType: m.contentType, tail: log.logEndOffset, closed: m.closed };
  }

  #sourceOf(f: ForkState): StreamRpc {
    return partitionStub(this.#env.PARTITION, f.sourceTopicId, 0) as unknown as StreamRpc;
  }

  /**
   * Plans the read of this partition's own records from `from` on, below `end`, into `plan`:
   * from the tail cache while it holds them (views of it), else from the stored batches (views
   * of the rows; up to where the cache starts, then from the cache again). Stops before
   * `maxBytes` would be exceeded (counting what `plan` holds already; its first record always
   * goes in), at `maxRecords` records, or before more than {@link STORAGE_READ_MAX_BYTES}
   * were read from storage. While the cache is empty (the object just started, or a native
   * append reset it), what a read takes from storage up to the log's end refills it, so the
   * readers that follow are served from memory.
   * @returns the offset after the last record planned
   */
  #planOwn(from: number, end: number, maxBytes: number, maxRecords: number, plan: ReadPlan): number {
    const cache = this.#cache;
    let next = from;
    let storageBytes = 0;
    while (next < end && plan.count < maxRecords) {
      const cached = cache.span(next, Math.min(end, next + maxRecords - plan.count), maxBytes - plan.bytes, plan.count === 0);
      if (cached > next) {
        const pieces: Uint8Array[] = [];
        plan.bytes += cache.views(next, cached, pieces);
        plan.parts.push({ kind: "cache", from: next, to: cached, pieces });
        plan.count += cached - next;
        next = cached;
        // Stopped inside the cache by maxBytes or maxRecords: the answer is full.
        if (next < end && next < cache.end) return next;
        continue;
      }
      // The cache holds `next` but none of it fits: full.
      if (next >= cache.start && next < cache.end) return next;
      // From storage, up to where the cache takes over.
      const stop = cache.start > next && cache.end > cache.start ? Math.min(end, cache.start) : end;
      const runFrom = next;
      const values: (Uint8Array | null)[] = [];
      let done = false;
      for (const [data] of this.#sql.iterateRaw<[ArrayBuffer]>(BATCH_DATA_FROM, next)) {
        forEachValue(new Uint8Array(data), (offset, value) => {
          if (offset < next) return true;
          const len = value?.length ?? 0;
          if (offset >= stop || plan.count >= maxRecords || (plan.count > 0 && (plan.bytes + len > maxBytes || storageBytes + len > STORAGE_READ_MAX_BYTES))) {
            done = true;
            return false;
          }
          values.push(value);
          plan.count++;
          plan.bytes += len;
          storageBytes += len;
          next = offset + 1;
          return true;
        });
        if (done) break;
      }
      if (values.length > 0) {
        plan.parts.push({ kind: "storage", values });
        // Stream appends number their records without gaps: values read = offsets covered.
        if (cache.end === cache.start && next === runFrom + values.length && next === this.#host.log()?.logEndOffset) this.#refillCache(runFrom, values);
      }
      // Full, or the stored batches end before `stop` (nothing more to read).
      if (next < stop) return next;
    }
    return next;
  }

  /**
   * Fills the empty tail cache with the last of `values` (records `from`, `from + 1`, ...,
   * up to the log's end) that fit its budget. Values of native records may be null, which the
   * cache cannot hold: then it starts after the last null.
   */
  #refillCache(from: number, values: readonly (Uint8Array | null)[]): void {
    const meta = this.#meta;
    if (meta === null) return;
    const separator = cacheSeparator(meta.json);
    let k = values.length;
    let bytes = 0;
    while (k > 0) {
      const v = values[k - 1];
      if (v === null || v === undefined) break;
      bytes += v.length + separator.length + CACHE_RECORD_OVERHEAD_BYTES;
      if (bytes > STREAM_CACHE_MAX_BYTES) break;
      k--;
    }
    if (k < values.length) this.#cache.append(from + k, values.slice(k) as Uint8Array[], separator);
  }

  /** Values from `anchor` to the end of the record batch holding it, capped at `end` (sub-offset forks). */
  async #boundaryValues(anchor: number, end: number): Promise<RpcResult<{ values: (Uint8Array | null)[] }>> {
    const meta = this.#meta;
    const log = this.#host.log();
    if (meta === null || log === null) return unknownPartition();
    const cap = Math.min(end, log.logEndOffset);
    if (meta.fork !== null && anchor < meta.fork.forkOffset) {
      return this.#sourceOf(meta.fork).dsBoundaryValues({ anchor, end: Math.min(cap, meta.fork.forkOffset) });
    }
    const values: (Uint8Array | null)[] = [];
    for (const b of this.#host.batchesFrom(anchor)) {
      forEachValue(b.data, (offset, value) => {
        // Copies: these cross an RPC boundary, and a view would drag its whole row along.
        if (offset >= anchor && offset < cap) values.push(value === null ? null : value.slice());
      });
      break;
    }
    return { ok: true, values };
  }
}

function fromRow(r: StreamRow): StreamMeta {
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
    createdAtMs: r.created_at_ms,
  };
}

/** Largest value of one record: the topic's max.message.bytes minus the record's own framing. */
function maxValueBytes(log: LogView): number {
  return Math.max(4, log.maxMessageBytes - RECORD_OVERHEAD_BYTES);
}

/**
 * Record batches of bare records (no key, no headers, the broker's time), each small enough
 * to be one stored row, so the partition stores them as they are instead of re-encoding.
 */
function encodeValues(values: readonly Uint8Array[], nowMs: number): Uint8Array[] {
  const records: ProducerRecord[] = values.map((value) => ({ key: null, value, headers: [], timestamp: nowMs }));
  return splitRecords(records, MAX_STORED_BATCH_BYTES).map((group) => encodeBatch({}, group));
}

function unknownPartition(): ErrorResult {
  return errorResult("UNKNOWN_TOPIC_OR_PARTITION", "This partition does not exist (never created, or its topic was deleted).");
}

/**
 * A streamed answer body: the pieces in chunks (src/streams/body.ts), produced as the reader
 * pulls them, so the first bytes leave before the last are copied, and large views of the
 * tail cache are never copied in this object. Up to {@link BODY_READ_AHEAD_CHUNKS} chunks
 * are prepared ahead of the reader, so the next is ready when the connection takes more.
 */
function bodyStream(pieces: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  const chunks = chunkPieces(pieces, BODY_CHUNK_BYTES, BODY_DIRECT_BYTES);
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const c = chunks.next();
        if (c.done === true) controller.close();
        else controller.enqueue(c.value);
      },
    },
    { highWaterMark: BODY_READ_AHEAD_CHUNKS },
  );
}
