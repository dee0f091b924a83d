/**
 * RPC contract between the Durable Streams routes (src/routes/compat/durable-streams.ts)
 * and the stream rooms of a partition object (durable-objects/partition/streams/).
 * Offsets are Edgelog offsets; times are the partition object's clock (expiry, TTL, record
 * timestamps); expected failures are {@link ErrorResult}s whose `details` carry what the
 * answer's headers need (see each method).
 *
 * Pure module: types only.
 */
import type { ErrorCode, RpcResult } from "../protocol/errors.ts";
import type { ExpiryConfig, ProducerHeaders } from "./headers.ts";
import type { OffsetSpec } from "./offsets.ts";

/** Facts every answer about a stream carries. */
export interface StreamFacts {
  /** Topic id: identifies this incarnation of the stream (ETags). */
  topicId: string;
  contentType: string;
  /** Tail: the offset the next appended record gets. */
  tail: number;
  closed: boolean;
}

/** `dsCreate`: create (or adopt, or confirm) the stream this partition backs. */
export interface CreateStreamRequest extends ExpiryConfig {
  path: string;
  /** As sent; null = default (or the source's, for a fork). */
  contentType: string | null;
  closed: boolean;
  /** Byte streams: the initial body (may be empty). */
  body: Uint8Array | null;
  /** JSON streams: the initial messages (route-validated). */
  messages: Uint8Array[] | null;
  fork: ForkCreate | null;
}

/** What the fork's partition needs, as resolved (and referenced) by the source's `dsForkSource`. */
export interface ForkCreate {
  sourcePath: string;
  sourceTopic: string;
  sourceTopicId: string;
  /** Requested anchor (null: the source's tail at fork time) and sub-offset, for idempotent re-creation. */
  anchorRequested: number | null;
  anchor: number;
  subOffset: number;
  source: ForkSourceOk;
}

export type CreateStreamOk = StreamFacts & {
  /** created: 201; exists: 200 (same configuration). */
  status: "created" | "exists";
  ttlSeconds: number | null;
  expiresAtMs: number | null;
};

/** `dsForkSource`: validate a fork point on the source and take a reference on it. */
export interface ForkSourceRequest {
  path: string;
  /** Null = the tail. */
  anchor: number | null;
  subOffset: number;
  /** The fork request's Content-Type (null = inherit); a mismatch is refused before any reference is taken. */
  contentType: string | null;
}

export interface ForkSourceOk {
  contentType: string;
  expiry: ExpiryConfig;
  /** The requested anchor, resolved. */
  anchor: number;
  /** Where the fork's own log starts. */
  forkOffset: number;
  /** First bytes of the source record at forkOffset, for a byte sub-offset inside a record. */
  prefix: Uint8Array | null;
  /** First offset readable through the fork (the chain's log start). */
  visibleStart: number;
}

/** `dsAppend`. */
export interface AppendStreamRequest {
  path: string;
  contentType: string | null;
  /** Byte streams (or when the request's type is not JSON): the body. */
  body: Uint8Array;
  /** When the request's Content-Type is JSON: the validated messages, else null. */
  messages: Uint8Array[] | null;
  /** Why the body cannot be stored (invalid JSON, empty array), judged after closure and content type. */
  bodyError: { code: ErrorCode; message: string } | null;
  close: boolean;
  streamSeq: string | null;
  producer: ProducerHeaders | null;
}

/**
 * Error details of a rejected append: `tail` and `closed` always; `currentEpoch` for
 * STALE_PRODUCER_EPOCH; `expectedSeq`/`receivedSeq` for OUT_OF_ORDER_SEQUENCE_NUMBER.
 */
export type AppendStreamOk = StreamFacts & {
  /** 200: accepted with producer headers; 204: accepted without, duplicates, closes. */
  status: 200 | 204;
  /** Echoed epoch and highest accepted seq, when producer headers were sent. */
  producerEpoch: number | null;
  producerSeq: number | null;
};

/** `dsRead`. */
export interface ReadStreamRequest {
  path: string;
  from: OffsetSpec;
  /** Stop adding records once this many value bytes are collected (the first record always). */
  maxBytes: number;
  /** And at this many records. */
  maxRecords: number;
  /** Wait up to this long (ms) for data when at the tail of an open stream; 0 = catch-up. */
  waitMs: number;
  /**
   * The caller accepts the body as a stream: large answers (from 256 KiB) then come as a
   * `ReadableStream` of chunks, which may exceed the 16 MiB a one-buffer answer is held to.
   * Default false: the body is one buffer.
   */
  stream?: boolean;
}

export type ReadStreamOk = StreamFacts & {
  startOffset: number;
  nextOffset: number;
  /** Records returned. */
  count: number;
  /**
   * Formatted body: concatenated values, or a JSON array for JSON streams. A stream only when
   * the request set `stream` (then consume or cancel it).
   */
  body: Uint8Array | ReadableStream<Uint8Array>;
  /** Length of `body` in bytes. */
  bodyBytes: number;
  upToDate: boolean;
  remainingLifetimeMs: number | null;
  /** True when the read waited and nothing came (long-poll 204). */
  timedOut: boolean;
};

/** `dsReadRange`: a fork reading its inherited range from its source (no stream checks, no TTL touch). */
export interface ReadRangeRequest {
  from: number;
  /** Exclusive bound (the reader's fork offset). */
  end: number;
  maxBytes: number;
  maxRecords: number;
}

export interface ReadRangeOk {
  values: (Uint8Array | null)[];
  nextOffset: number;
}

/** `dsBoundaryValues`: values from `anchor` to the end of its record batch, capped at `end`. */
export interface BoundaryValuesRequest {
  anchor: number;
  end: number;
}

export type HeadStreamOk = StreamFacts & ExpiryConfig;

/** `dsDelete` answers: deleted, or soft-deleted (kept for its forks); both are 204. */
export interface DeleteStreamOk {
  soft: boolean;
}

/** The stream RPC methods of PartitionDO. */
export interface StreamRpc {
  dsCreate(req: CreateStreamRequest): Promise<RpcResult<CreateStreamOk>>;
  dsHead(path: string): Promise<RpcResult<HeadStreamOk>>;
  dsAppend(req: AppendStreamRequest): Promise<RpcResult<AppendStreamOk>>;
  dsRead(req: ReadStreamRequest): Promise<RpcResult<ReadStreamOk>>;
  dsDelete(path: string): Promise<RpcResult<DeleteStreamOk>>;
  dsForkSource(req: ForkSourceRequest): Promise<RpcResult<ForkSourceOk>>;
  dsRelease(path: string): Promise<RpcResult<object>>;
  dsReadRange(req: ReadRangeRequest): Promise<RpcResult<ReadRangeOk>>;
  dsBoundaryValues(req: BoundaryValuesRequest): Promise<RpcResult<{ values: (Uint8Array | null)[] }>>;
}
