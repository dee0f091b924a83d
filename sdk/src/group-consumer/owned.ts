/**
 * The partitions a group member owns, is taking, and is told to own: pure state (no I/O, no
 * clock), driven by the runner and unit-tested on its own.
 *
 * - the *target* is the latest assignment the coordinator answered;
 * - *owned* partitions have a position (or wait for `seek()`), a processed and a committed offset;
 * - partitions being *added* are in the target, their offsets being fetched: heartbeats report
 *   them as owned already (KIP-848: a member owns a partition from the moment it accepts it,
 *   before its position is known), so the coordinator does not consider them released;
 * - *paused* partitions are owned and not fetched.
 *
 * Partitions are keyed by full topic name and partition ({@link partitionKey}).
 */
import { type OffsetFetchPartition, type TopicPartitions, parseTopicName } from "../../../src/protocol/index.ts";
import type { TopicPartition, TopicPartitionOffset } from "../consumer.ts";

/** One owned partition. */
export interface Owned {
  /** Full topic name. */
  topic: string;
  partition: number;
  /** Next offset to commit: one past the last processed message. */
  processed: number | undefined;
  committed: number | undefined;
  /** No start position (autoOffsetReset "none" without a valid committed offset): waits for seek(). */
  needsSeek: boolean;
  /**
   * Bumped by seek, pause, revocation, a handler failure: a delivery in progress of this
   * partition stops after the message being processed (which still counts as processed).
   */
  generation: number;
  /**
   * Bumped whenever `processed` is set other than by delivery (seek, a handler failure): the
   * message in progress then does not move `processed` when it finishes.
   */
  position: number;
  /** Being revoked or lost: nothing more of it is delivered. */
  revoking: boolean;
}

/** A partition as the state was when a delivery started (see {@link OwnedPartitions.snapshot}). */
export interface DeliveryStart {
  readonly owned: Owned;
  readonly generation: number;
  readonly position: number;
}

/** Topics with partition lists, as pause / resume take them (kafkajs). */
export interface TopicPartitionsSelection {
  topic: string;
  /** @default every owned partition of the topic */
  partitions?: number[];
}

/** Map key of a partition: full topic name and partition number. */
export const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

const DEFAULT_PREFIX = "public/default/";

/** The name shown to the application: short for `public/default`, else full. */
export function displayTopic(full: string): string {
  return full.startsWith(DEFAULT_PREFIX) ? full.slice(DEFAULT_PREFIX.length) : full;
}

/** The full name of a short or full topic name. @throws EdgelogError INVALID_TOPIC_NAME */
export function fullTopic(name: string): string {
  return parseTopicName(name).full;
}

/** Keys back to partitions, with display topic names. */
export function partitionsOf(keys: readonly string[]): TopicPartition[] {
  return keys.map((k) => {
    const i = k.lastIndexOf("\u0000");
    return { topic: displayTopic(k.slice(0, i)), partition: Number(k.slice(i + 1)) };
  });
}

export class OwnedPartitions {
  #target = new Map<string, TopicPartition>();
  #owned = new Map<string, Owned>();
  #adding = new Map<string, TopicPartition>();
  #paused = new Set<string>();

  /** Replaces the target with a heartbeat answer's assignment (full topic names). */
  setTarget(assignment: readonly TopicPartitions[]): void {
    this.#target = new Map();
    for (const tp of assignment) for (const p of tp.partitions) this.#target.set(partitionKey(tp.topic, p), { topic: tp.topic, partition: p });
  }

  /** True when the owned set is exactly the target. */
  sameAsTarget(): boolean {
    if (this.#target.size !== this.#owned.size) return false;
    for (const k of this.#target.keys()) if (!this.#owned.has(k)) return false;
    return true;
  }

  get(k: string): Owned | undefined {
    return this.#owned.get(k);
  }

  /** Keys of the owned partitions. */
  keys(): string[] {
    return [...this.#owned.keys()];
  }

  /** The owned partitions, display names. */
  assignment(): TopicPartition[] {
    return [...this.#owned.values()].map((o) => ({ topic: displayTopic(o.topic), partition: o.partition }));
  }

  /** Owned partitions no longer in the target, marked revoking (nothing more of them is delivered). */
  beginRevoke(): string[] {
    const revoked = [...this.#owned.keys()].filter((k) => !this.#target.has(k));
    for (const k of revoked) {
      const o = this.#owned.get(k) as Owned;
      o.generation++;
      o.revoking = true;
    }
    return revoked;
  }

  /** Forgets partitions given up. */
  release(keys: readonly string[]): void {
    for (const k of keys) {
      this.#owned.delete(k);
      this.#paused.delete(k);
    }
  }

  /** Target partitions not owned yet; they count as being added (reported owned) until {@link endAdd}. */
  beginAdd(): Array<[string, TopicPartition]> {
    const added = [...this.#target.entries()].filter(([k]) => !this.#owned.has(k));
    for (const [k, tp] of added) this.#adding.set(k, tp);
    return added;
  }

  /** False when a partition being added moved again meanwhile (left the target) or was lost. */
  canTake(p: Pick<OffsetFetchPartition, "topic" | "partition">): boolean {
    const k = partitionKey(p.topic, p.partition);
    return this.#adding.has(k) && this.#target.has(k) && !this.#owned.has(k);
  }

  /** Owns a partition being added, at its fetched position (null: waits for seek()). @returns its key */
  take(p: Pick<OffsetFetchPartition, "topic" | "partition" | "offset" | "committedOffset">): string {
    const k = partitionKey(p.topic, p.partition);
    this.#owned.set(k, {
      topic: p.topic,
      partition: p.partition,
      processed: p.offset ?? undefined,
      committed: p.committedOffset ?? undefined,
      needsSeek: p.offset === null,
      generation: 0,
      position: 0,
      revoking: false,
    });
    return k;
  }

  endAdd(keys: readonly string[]): void {
    for (const k of keys) this.#adding.delete(k);
  }

  /** Marks every owned partition revoking (fenced or removed). @returns their keys */
  beginLose(): string[] {
    for (const o of this.#owned.values()) {
      o.generation++;
      o.revoking = true;
    }
    return [...this.#owned.keys()];
  }

  /** Forgets everything: owned, being added, paused, and the target. */
  clear(): void {
    this.#owned.clear();
    this.#adding.clear();
    this.#paused.clear();
    this.#target.clear();
  }

  /** Forgets the owned partitions (after leaving the group). */
  clearOwned(): void {
    this.#owned.clear();
  }

  /** What to fetch: owned, unpaused, positioned. */
  active(): TopicPartition[] {
    return [...this.#owned.entries()].filter(([k, o]) => !this.#paused.has(k) && !o.needsSeek && o.processed !== undefined).map(([, o]) => ({ topic: o.topic, partition: o.partition }));
  }

  /** Where the fetcher must continue a partition, if it is active. */
  fetchPosition(k: string): TopicPartitionOffset | undefined {
    const o = this.#owned.get(k);
    if (o === undefined || this.#paused.has(k) || o.needsSeek || o.processed === undefined) return undefined;
    return { topic: o.topic, partition: o.partition, offset: o.processed };
  }

  pause(keys: readonly string[]): void {
    for (const k of keys) {
      this.#paused.add(k);
      const o = this.#owned.get(k);
      if (o) o.generation++;
    }
  }

  /** @returns the keys that were paused */
  resume(keys: readonly string[]): string[] {
    return keys.filter((k) => this.#paused.delete(k));
  }

  isPaused(k: string): boolean {
    return this.#paused.has(k);
  }

  paused(): TopicPartition[] {
    return [...this.#paused]
      .map((k) => {
        const o = this.#owned.get(k);
        return o ? { topic: displayTopic(o.topic), partition: o.partition } : null;
      })
      .filter((x): x is TopicPartition => x !== null);
  }

  /** Sets an owned partition's position (seek, or back to a failed message). @returns false if not owned */
  reposition(k: string, offset: number): boolean {
    const o = this.#owned.get(k);
    if (o === undefined) return false;
    o.processed = offset;
    o.needsSeek = false;
    o.generation++;
    o.position++;
    return true;
  }

  /** The state of a partition when a delivery starts. */
  snapshot(k: string): DeliveryStart | undefined {
    const o = this.#owned.get(k);
    return o === undefined ? undefined : { owned: o, generation: o.generation, position: o.position };
  }

  /** Stale: revoked, lost, paused or seeked since the delivery started (eachBatch's isStale()). */
  isStale(k: string, start: DeliveryStart | undefined): boolean {
    const o = this.#owned.get(k);
    return o === undefined || o.revoking || o.generation !== start?.generation || this.#paused.has(k);
  }

  /**
   * A finished handler moves `processed` even when the partition was paused or is being revoked
   * meanwhile: that message was processed, and a revocation commits it before the partition
   * goes to another member. Not when the position was set meanwhile (seek, a failure).
   */
  markProcessed(k: string, start: DeliveryStart | undefined, next: number): void {
    const o = this.#owned.get(k);
    if (o !== undefined && o === start?.owned && o.position === start.position) o.processed = next;
  }

  /** Processed but not committed offsets (next offset to read) of owned partitions, optionally only of `keys`. */
  uncommitted(keys: readonly string[] | null = null): TopicPartitionOffset[] {
    const out: TopicPartitionOffset[] = [];
    for (const [k, o] of this.#owned) {
      if (keys !== null && !keys.includes(k)) continue;
      if (o.processed !== undefined && o.processed !== o.committed) out.push({ topic: o.topic, partition: o.partition, offset: o.processed });
    }
    return out;
  }

  markCommitted(offsets: readonly TopicPartitionOffset[]): void {
    for (const o of offsets) {
      const owned = this.#owned.get(partitionKey(o.topic, o.partition));
      if (owned) owned.committed = Number(o.offset);
    }
  }

  /** What heartbeats report owned: the owned partitions and those being added, sorted. */
  wire(): TopicPartitions[] {
    const all = new Map<string, TopicPartition>(this.#adding);
    for (const [k, o] of this.#owned) all.set(k, o);
    const byTopic = new Map<string, number[]>();
    for (const o of all.values()) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), o.partition]);
    return [...byTopic].sort(([a], [b]) => (a < b ? -1 : 1)).map(([topic, ps]) => ({ topic, partitions: ps.sort((a, b) => a - b) }));
  }

  /** Keys of the owned partitions a selection names. @throws EdgelogError INVALID_TOPIC_NAME */
  select(selection: readonly TopicPartitionsSelection[]): string[] {
    const out: string[] = [];
    for (const s of selection) {
      const topic = fullTopic(s.topic);
      for (const o of this.#owned.values()) {
        if (o.topic === topic && (s.partitions === undefined || s.partitions.includes(o.partition))) out.push(partitionKey(o.topic, o.partition));
      }
    }
    return out;
  }
}
