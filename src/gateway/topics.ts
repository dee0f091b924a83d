/**
 * Topic metadata as the data path sees it: an isolate-local cache in front of the
 * {@link TopicMetadataStore}, and the retry rule that bounds its staleness.
 *
 * Staleness bound (docs/ARCHITECTURE.md "Metadata caching", docs/RAFT.md "The gateway's topic
 * cache"):
 * - An entry lives at most TOPIC_METADATA_TTL_MS; admin routes in the same isolate invalidate
 *   it at once.
 * - With the metadata quorum on, every entry is tagged with the metadata offset its answer
 *   reflects, and the isolate keeps the highest metadata offset it has seen in any answer
 *   (src/metadata/offsets.ts: every read and write through this isolate, the offsets a
 *   partition's answer may carry). An entry older than that offset is refreshed before use.
 *   So within an isolate metadata reads are monotonic and read-your-writes: no lookup uses
 *   metadata older than anything the isolate has already seen; changes made through other
 *   isolates are seen within the TTL, or at once when this isolate sees a newer offset.
 * - A partition answering NOT_LEADER or NOT_LEADER_OR_FOLLOWER drops the topic's entry (its
 *   placement may have moved): the next lookup asks the store. The error itself is returned
 *   (it is retriable), nothing is retried here.
 * - A cached entry that turns out wrong (the topic was deleted/re-created, or grew partitions,
 *   in another isolate) shows up as UNKNOWN_TOPIC_OR_PARTITION from a partition, or as a
 *   partition number beyond the cached count: the gateway then refreshes once and retries, if
 *   nothing was written. Unknown topics are not cached, so a topic is usable as soon as it is
 *   created.
 */
import { latestMetadataOffset } from "../metadata/offsets.ts";
import { METADATA_GROUP_ID } from "../metadata/raft-store.ts";
import { metadataStore } from "../metadata/store.ts";
import { EdgelogError, toEdgelogError, type ErrorResult } from "../protocol/errors.ts";
import { parseTopicName } from "../protocol/names.ts";
import type { TopicSummary } from "../protocol/types.ts";
import type { Env } from "../env.ts";
import { ErrorWithHeaders } from "./errors.ts";
import { notePlacements } from "./replicas.ts";

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
  /** The metadata offset the answer reflected; null when the store gives none (MetadataDO). */
  metadataOffset: number | null;
  expiresAtMs: number;
}

/**
 * Errors from a partition that mean the topic's placement may have changed (the leader of a
 * replicated partition moved): the entry is dropped. NOT_LEADER_OR_FOLLOWER is Kafka's name
 * (replicated partitions); NOT_LEADER is the Raft member's.
 */
const PLACEMENT_CHANGED = new Set<string>(["NOT_LEADER", "NOT_LEADER_OR_FOLLOWER"]);

/**
 * The isolate's topic cache. Pure (no I/O, no clock): time comes in as `nowMs` and the
 * isolate's metadata offset watermark from `knownOffset`.
 */
export class TopicCache {
  readonly #entries = new Map<string, Entry>();
  readonly #ttlMs: number;
  readonly #knownOffset: () => number;
  /** The highest offset handed to {@link observe} or {@link put}. */
  #observed = 0;
  /** Lookups answered from the cache, since the isolate started (GET /v1/metrics). */
  hits = 0;
  /** Lookups that found no fresh entry. */
  misses = 0;
  /** Of the misses, entries dropped because a newer metadata offset was seen. */
  offsetRefreshes = 0;

  /**
   * @param ttlMs longest an entry is used (ms)
   * @param knownOffset the highest metadata offset seen elsewhere in the isolate (@default none: 0)
   */
  constructor(ttlMs: number, knownOffset: () => number = () => 0) {
    this.#ttlMs = ttlMs;
    this.#knownOffset = knownOffset;
  }

  /** The newest metadata offset this cache knows of (0: none). */
  get knownOffset(): number {
    return Math.max(this.#observed, this.#knownOffset());
  }

  /** A fresh-enough entry (not expired, not older than {@link knownOffset}), or undefined. */
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
    const known = this.knownOffset;
    if (known > 0 && (e.metadataOffset ?? 0) < known) {
      this.#entries.delete(fullName);
      this.misses++;
      this.offsetRefreshes++;
      return undefined;
    }
    this.hits++;
    return e.topic;
  }

  /** Caches `topic` as an answer reflecting `metadataOffset` (absent: untagged, TTL only while no offset is known). */
  put(topic: TopicSummary, nowMs: number, metadataOffset?: number): void {
    if (metadataOffset !== undefined) this.observe(metadataOffset);
    this.#entries.delete(topic.name);
    if (this.#entries.size >= TOPIC_CACHE_MAX_ENTRIES) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(topic.name, { topic, metadataOffset: metadataOffset ?? null, expiresAtMs: nowMs + this.#ttlMs });
  }

  /** Notes a metadata offset seen in some answer: entries older than it are refreshed before their next use. */
  observe(metadataOffset: number): void {
    if (Number.isSafeInteger(metadataOffset) && metadataOffset > this.#observed) this.#observed = metadataOffset;
  }

  invalidate(fullName: string): void {
    this.#entries.delete(fullName);
  }

  /** Drops the entry when `err` says the topic's placement changed (NOT_LEADER, NOT_LEADER_OR_FOLLOWER). @returns whether it did */
  invalidateOnPlacementError(fullName: string, err: unknown): boolean {
    if (!(err instanceof EdgelogError) || !PLACEMENT_CHANGED.has(err.code)) return false;
    this.#entries.delete(fullName);
    return true;
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }
}

/** The isolate's cache (module state lives as long as the isolate). */
export const topicCache = new TopicCache(TOPIC_METADATA_TTL_MS, () => latestMetadataOffset(METADATA_GROUP_ID));

async function loadTopic(env: Env, fullName: string): Promise<TopicSummary> {
  const r = await metadataStore(env).getTopic(fullName);
  if (!r.ok) throw toEdgelogError(r);
  topicCache.put(r.topic, Date.now(), r.metadataOffset);
  // The placement of a replicated topic (the metadata quorum): its replica ids and recorded leader route the calls.
  notePlacements(r.topic.topicId, r.topic.placements);
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
  try {
    if (cached === undefined) return await op(await loadTopic(env, fullName));
    try {
      return await op(cached);
    } catch (err) {
      if (!(err instanceof StaleTopicError)) throw err;
      topicCache.invalidate(fullName);
      return await op(await loadTopic(env, fullName));
    }
  } catch (err) {
    topicCache.invalidateOnPlacementError(fullName, err);
    throw err;
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
 * {@link StaleTopicError} (the partition object is gone: the cached topic id may be old). A
 * `details.metadataOffset` in the answer is observed by the cache.
 */
export function partitionError(r: ErrorResult): EdgelogError {
  // A partition answer may say which metadata offset it reflects (details.metadataOffset):
  // a newer one than the cache knows makes its older entries refresh.
  const offset = r.details?.metadataOffset;
  if (typeof offset === "number") topicCache.observe(offset);
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
