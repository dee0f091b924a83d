/**
 * The Durable Streams read room of a partition (docs/DURABLE-STREAMS.md): HEAD and reads of a
 * stream (long-poll included), range and boundary reads that a fork asks of its source, and the fork
 * point a new fork asks for. It writes nothing itself: a read's touch and a fork's reference
 * go through the state room below it (streams/state.ts), which commits them.
 *
 * Reads come from this room's tail cache (values of the stream appends the state room
 * committed, heard through its listener, and refilled by reads from storage) while it holds the records, else from the
 * stored batches through the log room's `rawDataFrom`; a fork's records below its fork offset
 * come from its source, through the peers door.
 */
import { errorResult, type RpcResult } from "../../../src/protocol/errors.ts";
import { answerPieces, cacheSeparator, chunkPieces, concatPieces, piecesLength, type AnswerPart } from "../../../src/streams/body.ts";
import { ByteCache, RECORD_OVERHEAD_BYTES as CACHE_RECORD_OVERHEAD_BYTES } from "../../../src/streams/byte-cache.ts";
import { remainingLifetimeMs } from "../../../src/streams/expiry.ts";
import { contentTypesMatch } from "../../../src/streams/headers.ts";
import { resolveSubOffset } from "../../../src/streams/records.ts";
import type {
  BoundaryValuesRequest,
  ForkSourceOk,
  HeadStreamOk,
  ForkSourceRequest,
  ReadRangeOk,
  ReadRangeRequest,
  ReadStreamOk,
  ReadStreamRequest,
  StreamRpc,
} from "../../../src/streams/rpc.ts";
import { forEachValue } from "../../../src/streams/values.ts";
import { atSourceLeader } from "../../../src/streams/source.ts";
import { unknownPartition, type LogRoom } from "../log.ts";
import type { WaitersRoom } from "../waiters.ts";
import type { ForkState } from "../../../src/streams/state.ts";
import type { StreamsState } from "./state.ts";

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

/** A run of a read's own records: views of the tail cache, or values read from storage (views of the rows). */
type OwnPart = { kind: "cache"; from: number; to: number; pieces: Uint8Array[] } | { kind: "storage"; values: (Uint8Array | null)[] };

/** What a read takes: its parts in order, how many records and bytes. */
interface ReadPlan {
  parts: OwnPart[];
  count: number;
  bytes: number;
}

export class StreamsRead {
  readonly name = "streams/read";
  readonly #state: StreamsState;
  readonly #log: LogRoom;
  readonly #waiters: WaitersRoom;
  /** Bytes of the latest records appended through the stream API, served to readers without SQLite. */
  readonly #cache = new ByteCache(STREAM_CACHE_MAX_BYTES);
  /** Listener of the state room's appended values (wired in the switchboard's constructor). */
  readonly remember = (baseOffset: number, values: readonly Uint8Array[], json: boolean): void => {
    this.#cache.append(baseOffset, values, cacheSeparator(json));
  };

  constructor(state: StreamsState, log: LogRoom, waiters: WaitersRoom) {
    this.#state = state;
    this.#log = log;
    this.#waiters = waiters;
  }

  /** Forgets the tail cache (the partition's storage was deleted). */
  reset(): void {
    this.#cache.reset();
  }

  async dsHead(path: string): Promise<RpcResult<HeadStreamOk>> {
    const g = await this.#state.gate(path, false);
    if (!g.ok) return g;
    return { ok: true, ...this.#state.facts(g.meta, g.log), ttlSeconds: g.meta.ttlSeconds, expiresAtMs: g.meta.expiresAtMs };
  }

  async dsRead(req: ReadStreamRequest): Promise<RpcResult<ReadStreamOk>> {
    const deadline = Date.now() + Math.max(0, req.waitMs);
    const maxBytes = req.stream === true ? req.maxBytes : Math.min(req.maxBytes, RPC_BODY_MAX_BYTES);
    let start: number | null = null;
    let waited = false;
    for (;;) {
      // Replicated: the leader takes the read; once it waits, it answers from its committed log
      // even if it stops leading meanwhile (nothing it holds is above the high watermark).
      const g = await this.#state.gate(req.path, true, start === null);
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
        const f = meta.fork;
        const r = await this.#atSource(f, (s) => s.dsReadRange({ from: next, end: f.forkOffset, maxBytes, maxRecords: req.maxRecords }));
        if (!r.ok) return r.code === "UNKNOWN_TOPIC_OR_PARTITION" ? errorResult("OFFSET_GONE", "The fork's source data is gone.") : r;
        answer.push({ kind: "values", values: r.values });
        count += r.values.length;
        for (const v of r.values) bytes += v?.length ?? 0;
        next = r.nextOffset;
      }
      // Re-read the state: the source read awaited.
      const m = this.#state.meta;
      const l = this.#log.state;
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
        await this.#waiters.next(remainingMs);
        continue;
      }
      // Views of the values and of the cache, formatted; large answers to readers that take a
      // stream go as one (copied into chunks as it is sent), the others as one buffer.
      const pieces = [...answerPieces(answer, m.json)];
      const bodyBytes = piecesLength(pieces);
      const body = req.stream === true && bodyBytes >= STREAM_BODY_MIN_BYTES ? bodyStream(pieces) : concatPieces(pieces);
      return {
        ok: true,
        ...this.#state.facts(m, l),
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

  async dsForkSource(req: ForkSourceRequest): Promise<RpcResult<ForkSourceOk>> {
    // A replicated source: its leader decides (the reference is an entry).
    const refused = this.#state.leaderRefusal();
    if (refused !== null) return refused;
    const log = this.#log.state;
    const m0 = this.#state.meta;
    if (log === null || m0 === null || m0.path !== req.path || m0.deleted) return errorResult("STREAM_NOT_FOUND", "The fork source does not exist.");
    if (!m0.softDeleted && this.#state.expired(m0, Date.now())) await this.#state.expire();
    const meta = this.#state.meta;
    if (meta === null || meta.deleted) return errorResult("STREAM_NOT_FOUND", "The fork source does not exist.");
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
    const now = this.#state.meta;
    if (now === null || now.softDeleted || now.deleted) return errorResult("STREAM_NOT_FOUND", "The fork source was deleted.");
    const retained = await this.#state.retain();
    if (!retained.ok) return retained;
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

  async dsReadRange(req: ReadRangeRequest): Promise<RpcResult<ReadRangeOk>> {
    // A replicated source serves its forks at the leader (src/streams/source.ts follows it).
    const refused = this.#state.leaderRefusal();
    if (refused !== null) return refused;
    const log = this.#log.state;
    const meta = this.#state.meta;
    if (log === null || meta === null) return unknownPartition();
    const end = Math.min(req.end, log.logEndOffset);
    if (req.from < meta.visibleStart) return errorResult("OFFSET_GONE", "The offset is before the earliest retained position.");
    const values: (Uint8Array | null)[] = [];
    let next = req.from;
    let bytes = 0;
    if (meta.fork !== null && next < meta.fork.forkOffset) {
      const f = meta.fork;
      const r = await this.#atSource(f, (s) => s.dsReadRange({ from: next, end: Math.min(end, f.forkOffset), maxBytes: req.maxBytes, maxRecords: req.maxRecords }));
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
      const cache = this.#cache;
      for (const part of plan.parts) {
        if (part.kind === "cache") {
          for (let o = part.from; o < part.to; o++) values.push(cache.value(o));
        } else {
          // An RPC answer carries a view's whole buffer: copy views into larger buffers (a stored row).
          for (const v of part.values) values.push(v === null || v.byteLength === v.buffer.byteLength ? v : v.slice());
        }
      }
    }
    return { ok: true, values, nextOffset: next };
  }

  async dsBoundaryValues(req: BoundaryValuesRequest): Promise<RpcResult<{ values: (Uint8Array | null)[] }>> {
    const refused = this.#state.leaderRefusal();
    if (refused !== null) return refused;
    return this.#boundaryValues(req.anchor, req.end);
  }

  // ---- helpers ----

  /** A call to the fork's source stream: its one object, or its leader when it is replicated (src/streams/source.ts). */
  #atSource<T>(f: ForkState, call: (s: StreamRpc) => Promise<RpcResult<T>>): Promise<RpcResult<T>> {
    return atSourceLeader(
      (index) => this.#state.peers.replica(f.sourceTopicId, 0, index),
      call,
      () => this.#state.sourceReplicated(f.sourceTopic, f.sourceTopicId),
    );
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
      for (const [data] of this.#log.rawDataFrom(next)) {
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
        if (cache.end === cache.start && next === runFrom + values.length && next === this.#log.state?.logEndOffset) this.#refillCache(runFrom, values);
      }
      // Full, or the stored batches end before `stop` (nothing more to read).
      if (next < stop) return next;
    }
    return next;
  }

  /**
   * Fills the empty tail cache with the last of `values` (records `from`, `from + 1`, ...,
   * up to the log's end) that fit its budget. Values of native records may be null, which the
   * cache cannot hold: then it starts after the last null. (The cache is memory, not state: no command.)
   */
  #refillCache(from: number, values: readonly (Uint8Array | null)[]): void {
    const meta = this.#state.meta;
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
    const meta = this.#state.meta;
    const log = this.#log.state;
    if (meta === null || log === null) return unknownPartition();
    const cap = Math.min(end, log.logEndOffset);
    if (meta.fork !== null && anchor < meta.fork.forkOffset) {
      const f = meta.fork;
      return this.#atSource(f, (s) => s.dsBoundaryValues({ anchor, end: Math.min(cap, f.forkOffset) }));
    }
    const values: (Uint8Array | null)[] = [];
    for (const b of this.#log.batchesFrom(anchor)) {
      forEachValue(b.data, (offset, value) => {
        // Copies: these cross an RPC boundary, and a view would drag its whole row along.
        if (offset >= anchor && offset < cap) values.push(value === null ? null : value.slice());
      });
      break;
    }
    return { ok: true, values };
  }
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
