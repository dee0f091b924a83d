/**
 * Topic metadata as the data path sees it: an isolate-local cache in front of the
 * {@link TopicMetadataStore}, and the retry rule that bounds its staleness.
 *
 * Staleness bound (docs/ARCHITECTURE.md "Metadata caching"): an entry lives at most
 * TOPIC_METADATA_TTL_MS; admin routes in the same isolate invalidate it at once. A cached
 * entry that turns out wrong (the topic was deleted/re-created, or grew partitions, in
 * another isolate) shows up as UNKNOWN_TOPIC_OR_PARTITION from a partition, or as a partition
 * number beyond the cached count: the gateway then refreshes once and retries, if nothing
 * was written. Unknown topics are not cached, so a topic is usable as soon as it is created.
 */
import { metadataStore } from "../metadata/store.ts";
import { EdgelogError, toEdgelogError, type ErrorResult } from "../protocol/errors.ts";
import { parseTopicName } from "../protocol/names.ts";
import type { TopicSummary } from "../protocol/types.ts";
import type { Env } from "../env.ts";
import { ErrorWithHeaders } from "./errors.ts";

/** Longest a cached topic entry is used without asking the metadata store (ms). */
export const TOPIC_METADATA_TTL_MS = 2000;
/** Most topics cached per isolate; the oldest entry is dropped beyond it. */
export const TOPIC_CACHE_MAX_ENTRIES = 10_000;

/**
 * UNKNOWN_TOPIC_OR_PARTITION that may come from stale cached metadata and is safe to retry
 * (nothing was written). Still a normal EdgelogError if it escapes the retry.
 */
export class StaleTopicError extends EdgelogError {
  constructor(message: string, details?: Record<string, unknown>) {
    super("UNKNOWN_TOPIC_OR_PARTITION", message, details);
  }
}

interface Entry {
  topic: TopicSummary;
  expiresAtMs: number;
}

export class TopicCache {
  readonly #entries = new Map<string, Entry>();
  readonly #ttlMs: number;
  /** Lookups answered from the cache, since the isolate started (GET /v1/metrics). */
  hits = 0;
  /** Lookups that found no fresh entry. */
  misses = 0;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  /** A fresh-enough entry, or undefined. */
  peek(fullName: string, nowMs: number): TopicSummary | undefined {
    const e = this.#entries.get(fullName);
    if (e === undefined) {
      this.misses++;
      return undefined;
    }
    if (e.expiresAtMs <= nowMs) {
      this.#entries.delete(fullName);
      this.misses++;
      return undefined;
    }
    this.hits++;
    return e.topic;
  }

  put(topic: TopicSummary, nowMs: number): void {
    this.#entries.delete(topic.name);
    if (this.#entries.size >= TOPIC_CACHE_MAX_ENTRIES) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(topic.name, { topic, expiresAtMs: nowMs + this.#ttlMs });
  }

  invalidate(fullName: string): void {
    this.#entries.delete(fullName);
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }
}

/** The isolate's cache (module state lives as long as the isolate). */
export const topicCache = new TopicCache(TOPIC_METADATA_TTL_MS);

async function loadTopic(env: Env, fullName: string): Promise<TopicSummary> {
  const r = await metadataStore(env).getTopic(fullName);
  if (!r.ok) throw toEdgelogError(r);
  topicCache.put(r.topic, Date.now());
  return r.topic;
}

/**
 * Runs `op` with the topic's metadata. If the metadata came from the cache and `op` throws
 * {@link StaleTopicError}, refreshes from the store once and runs `op` again.
 * @throws EdgelogError INVALID_TOPIC_NAME, UNKNOWN_TOPIC_OR_PARTITION, or whatever `op` throws.
 */
export async function withTopic<T>(env: Env, name: string, op: (topic: TopicSummary) => Promise<T>): Promise<T> {
  const fullName = parseTopicName(name).full;
  const cached = topicCache.peek(fullName, Date.now());
  if (cached === undefined) return op(await loadTopic(env, fullName));
  try {
    return await op(cached);
  } catch (err) {
    if (!(err instanceof StaleTopicError)) throw err;
    topicCache.invalidate(fullName);
    return op(await loadTopic(env, fullName));
  }
}

/** @throws StaleTopicError when `partition` is not below the topic's partition count. */
export function checkPartition(topic: TopicSummary, partition: number): void {
  if (partition >= topic.partitions) {
    throw new StaleTopicError(`Topic ${topic.name} has no partition ${partition} (it has ${topic.partitions}).`, {
      topic: topic.name,
      partition,
      partitions: topic.partitions,
    });
  }
}

/**
 * Turns a partition's error result into a throwable; UNKNOWN_TOPIC_OR_PARTITION becomes a
 * {@link StaleTopicError} (the partition object is gone: the cached topic id may be old).
 */
export function partitionError(r: ErrorResult): EdgelogError {
  if (r.code === "UNKNOWN_TOPIC_OR_PARTITION") return new StaleTopicError(r.message ?? "The topic or partition does not exist.", r.details);
  return partitionFailure(r);
}

/**
 * A partition's error result as a throwable, as it is (no stale-metadata retry). THROTTLED from a
 * topic's publishRate policy (docs/TENANTS.md) carries `Retry-After`, as the client quotas' does.
 */
export function partitionFailure(r: ErrorResult): EdgelogError {
  const ms = r.details?.throttleTimeMs;
  if (r.code === "THROTTLED" && typeof ms === "number") return new ErrorWithHeaders(r.code, r.message, r.details, { "Retry-After": String(Math.max(1, Math.ceil(ms / 1000))) });
  return toEdgelogError(r);
}
