/**
 * A Durable Streams write as a Raft entry of a replicated partition (`replication.factor` 3;
 * docs/RAFT.md "Replicated partitions", docs/DURABLE-STREAMS.md "Replicated streams"): what the
 * leader proposes, and what every replica decides again at apply on its committed state, as the
 * replicated produce path does (decide at apply). Everything a decision reads that is not
 * replicated state is in the entry: the leader's clock (`nowMs`), the topic's max.message.bytes
 * and LogAppendTime stamp as the leader saw them. Request bodies travel as the entry's binary
 * parts (`blobs`), not in its JSON header.
 *
 * Pure module: types and the packing of a request into header + blobs, no Workers imports.
 */
import type { ErrorCode } from "../protocol/errors.ts";
import type { AppendStreamRequest, CreateStreamRequest, ForkCreate, ForkSourceOk } from "./rpc.ts";

/** How a request's body is carried: nothing, the body as one blob, or one blob per JSON message. */
type BodyShape = "none" | "body" | "messages";

/** A fork's create without the source record's prefix bytes (`prefix` true: they are the entry's first blob). */
export type ForkEntry = Omit<ForkCreate, "source"> & { source: Omit<ForkSourceOk, "prefix"> & { prefix: boolean } };

/** A create request without its body (the body's parts are the entry's blobs, after a fork's prefix). */
export type CreateEntryRequest = Omit<CreateStreamRequest, "body" | "messages" | "fork"> & { shape: BodyShape; fork: ForkEntry | null };

/** An append request without its body (the body's parts are the entry's blobs). */
export type AppendEntryRequest = Omit<AppendStreamRequest, "body" | "messages" | "bodyError"> & {
  shape: BodyShape;
  bodyError: { code: ErrorCode; message: string } | null;
};

/** The leader's view of what a decision reads beyond the replicated state. */
export interface LeaderFacts {
  /** The leader's clock at the decision (epoch ms): record timestamps, Producer-Id write time, a new stream's creation and last access. */
  nowMs: number;
  /** The topic's max.message.bytes as the leader had it: how a body is cut into records. */
  maxMessageBytes: number;
  /** LogAppendTime stamp (the topic's message.timestamp.type), or null under CreateTime. */
  logAppendTime: number | null;
}

/** One stream write, the JSON header of a `{kind: "stream"}` entry. */
export type StreamEntry =
  | ({ op: "create"; req: CreateEntryRequest } & LeaderFacts)
  | ({ op: "append"; req: AppendEntryRequest } & LeaderFacts)
  /** DELETE: soft when forks reference the stream, else the stream is marked deleted and the leader destroys the topic. */
  | { op: "delete"; path: string }
  /** Expiry (TTL / Expires-At), decided by the leader's clock: as a delete. */
  | { op: "expire"; path: string }
  /** A sliding TTL's last access, written at most every min(1 s, TTL/10) (src/streams/expiry.ts). */
  | { op: "touch"; path: string; lastAccessMs: number }
  /** Producer-Ids last written before `beforeMs` are forgotten (the leader's clock and configs). */
  | { op: "expireProducers"; beforeMs: number }
  /** A new fork takes a reference on this stream (its source). */
  | { op: "retain"; path: string }
  /** A fork deleted for good releases its reference; the last one of a soft-deleted stream deletes it. */
  | { op: "release"; path: string };

/** The answer of an applied delete or expiry: soft-deleted (kept for forks), deleted (the topic is to be destroyed), or nothing to do. */
export type RemoveOutcome = { ok: true; removed: "soft" | "deleted" | "none" };

function packBody(body: Uint8Array | null, messages: Uint8Array[] | null): { shape: BodyShape; blobs: Uint8Array[] } {
  if (messages !== null) return { shape: "messages", blobs: messages };
  if (body !== null && body.length > 0) return { shape: "body", blobs: [body] };
  return { shape: "none", blobs: [] };
}

function unpackBody(shape: BodyShape, blobs: Uint8Array[]): { body: Uint8Array | null; messages: Uint8Array[] | null } {
  if (shape === "messages") return { body: null, messages: blobs };
  if (shape === "body") return { body: blobs[0] ?? new Uint8Array(0), messages: null };
  return { body: null, messages: null };
}

/** A create request as an entry's header part and blobs. */
export function packCreate(req: CreateStreamRequest): { req: CreateEntryRequest; blobs: Uint8Array[] } {
  const { body, messages, fork, ...rest } = req;
  const { shape, blobs } = packBody(body, messages);
  if (fork === null) return { req: { ...rest, shape, fork: null }, blobs };
  const { prefix, ...source } = fork.source;
  const entryFork: ForkEntry = { ...fork, source: { ...source, prefix: prefix !== null } };
  return { req: { ...rest, shape, fork: entryFork }, blobs: prefix !== null ? [prefix, ...blobs] : blobs };
}

/** {@link packCreate} reversed. */
export function unpackCreate(req: CreateEntryRequest, blobs: Uint8Array[]): CreateStreamRequest {
  const { shape, fork, ...rest } = req;
  if (fork === null || fork === undefined) return { ...rest, ...unpackBody(shape, blobs), fork: null };
  const prefix = fork.source.prefix ? (blobs[0] ?? new Uint8Array(0)) : null;
  return { ...rest, ...unpackBody(shape, fork.source.prefix ? blobs.slice(1) : blobs), fork: { ...fork, source: { ...fork.source, prefix } } };
}

/** An append request as an entry's header part and blobs. */
export function packAppend(req: AppendStreamRequest): { req: AppendEntryRequest; blobs: Uint8Array[] } {
  const { body, messages, ...rest } = req;
  const { shape, blobs } = packBody(body, messages);
  return { req: { ...rest, shape }, blobs };
}

/** {@link packAppend} reversed (an append always has a body, maybe empty). */
export function unpackAppend(req: AppendEntryRequest, blobs: Uint8Array[]): AppendStreamRequest {
  const { shape, ...rest } = req;
  const u = unpackBody(shape, blobs);
  return { ...rest, body: u.body ?? (u.messages !== null ? joinedLength(u.messages) : new Uint8Array(0)), messages: u.messages };
}

/**
 * The append's `body` when it came as JSON messages: the decision only asks whether the body
 * is empty (messages are stored, never the body), so a placeholder of the right emptiness does.
 */
function joinedLength(messages: Uint8Array[]): Uint8Array {
  return new Uint8Array(messages.length > 0 ? 1 : 0);
}
