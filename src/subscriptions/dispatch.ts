/**
 * The four subscription types' consumer pickers (Pulsar's dispatchers), as pure functions and
 * small classes. Sources: Pulsar's "Messaging concepts" (subscription types), issue #1267 and
 * PR #4604 (failover on non-partitioned topics), PR #2954 (priority level), PIP-379 (Key_Shared
 * draining hashes, replacing "recently joined consumers").
 */
import { type ErrorResult, errorResult } from "../protocol/errors.ts";

/** Pulsar's subscription types, in Edgelog's spelling. */
export type SubscriptionType = "exclusive" | "failover" | "shared" | "key_shared";

export const SUBSCRIPTION_TYPES: readonly SubscriptionType[] = ["exclusive", "failover", "shared", "key_shared"];

/** What a picker needs to know about a connected consumer. */
export interface ConsumerRef {
  /** Unique per connection (the room's consumer id). */
  readonly id: string;
  /** The client's consumer name (Pulsar's `consumerName`); ties are broken by id. */
  readonly name: string;
  /** Pulsar's `priorityLevel`: 0 is the highest priority. @default 0 */
  readonly priorityLevel: number;
  /** Order of joining the subscription (strictly increasing per subscription). */
  readonly joinSeq: number;
}

/**
 * Admission of a new consumer.
 * - exclusive: a second consumer is refused with CONSUMER_BUSY (Pulsar's `ConsumerBusy`);
 * - a consumer asking for another type than the subscription's existing consumers use is refused
 *   with CONSUMER_BUSY too (Pulsar: "Subscription is of different type").
 * The subscription's type is fixed while it has consumers; with none, the next consumer may
 * change it (as in Pulsar).
 */
export function admitConsumer(current: SubscriptionType, connected: number, requested: SubscriptionType): ErrorResult | null {
  if (connected === 0) return null;
  if (requested !== current) return errorResult("CONSUMER_BUSY", `The subscription is of type ${current}, not ${requested}.`, { subscriptionType: current });
  if (current === "exclusive") return errorResult("CONSUMER_BUSY", "The exclusive subscription already has a consumer.", { subscriptionType: current });
  return null;
}

/**
 * Failover: the active consumer of one partition.
 * - Non-partitioned topic: the consumer that joined first, whatever its name (apache/pulsar
 *   issue #1267, PR #4604, Pulsar 2.4.2). The earlier rule sorted by name, so a consumer whose
 *   name sorts first flapped the whole subscription each time it joined and left.
 * - Partitioned topic: consumers sorted by priority level then name (then id); only those of the
 *   highest priority level (lowest number) are candidates, and partition `i` goes to candidate
 *   `i % candidates` (PR #2954; docs "concepts-messaging", Failover), which spreads partitions
 *   evenly and is the same on every partition without coordination.
 * @returns the active consumer's id, or null with no consumers.
 */
export function failoverActive(consumers: readonly ConsumerRef[], partitionIndex: number, partitioned: boolean): string | null {
  if (consumers.length === 0) return null;
  if (!partitioned) {
    let first = consumers[0]!;
    for (const c of consumers) if (c.joinSeq < first.joinSeq) first = c;
    return first.id;
  }
  const sorted = [...consumers].sort(byPriorityThenName);
  const top = sorted[0]!.priorityLevel;
  const candidates = sorted.filter((c) => c.priorityLevel === top);
  return candidates[partitionIndex % candidates.length]!.id;
}

function byPriorityThenName(a: ConsumerRef, b: ConsumerRef): number {
  if (a.priorityLevel !== b.priorityLevel) return a.priorityLevel - b.priorityLevel;
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Shared: round-robin across consumers that have a permit. Consumers of a higher priority level
 * (lower number) are served first while any of them has a permit (Pulsar's priority level for
 * shared subscriptions); within a level, in join order, starting after the consumer served last.
 */
export class RoundRobin {
  private lastJoinSeq = -1;

  /**
   * @param consumers the connected consumers (any order).
   * @param hasPermit whether a consumer can take one more message now.
   * @returns the chosen consumer's id, or null when none has a permit.
   */
  pick(consumers: readonly ConsumerRef[], hasPermit: (id: string) => boolean): string | null {
    const ready = consumers.filter((c) => hasPermit(c.id));
    if (ready.length === 0) return null;
    const top = Math.min(...ready.map((c) => c.priorityLevel));
    const level = ready.filter((c) => c.priorityLevel === top).sort((a, b) => a.joinSeq - b.joinSeq);
    const next = level.find((c) => c.joinSeq > this.lastJoinSeq) ?? level[0]!;
    this.lastJoinSeq = next.joinSeq;
    return next.id;
  }
}

/** Key_Shared hash space, [0, 65536) as in Pulsar (`DEFAULT_RANGE_SIZE` 2^16). */
export const KEY_HASH_RANGE = 65_536;

/**
 * MurmurHash3 x86 32-bit (seed 0) of the key's UTF-8 bytes, the hash Pulsar uses for sticky keys
 * (`Murmur3_32Hash`), reduced to the hash space as Pulsar does: `(h & 0x7fffffff) % 65536`.
 * A message without a key is hashed as the empty key (all keyless messages go to one consumer).
 */
export function keyHash(key: string | null | undefined): number {
  const bytes = new TextEncoder().encode(key ?? "");
  return (murmur3_32(bytes, 0) & 0x7fffffff) % KEY_HASH_RANGE;
}

/** MurmurHash3_x86_32 (Austin Appleby's public-domain algorithm). @returns an unsigned 32-bit int. */
export function murmur3_32(data: Uint8Array, seed: number): number {
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  let h = seed >>> 0;
  const n = data.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  const tail = n & 3;
  if (tail === 3) k ^= data[blocks + 2]! << 16;
  if (tail >= 2) k ^= data[blocks + 1]! << 8;
  if (tail >= 1) {
    k ^= data[blocks]!;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** One consumer's slice of the hash space, `[start, end]` inclusive. */
export interface HashRange {
  readonly start: number;
  readonly end: number;
  readonly consumerId: string;
}

/**
 * Key_Shared AUTO_SPLIT hash ranges (after Pulsar's auto-split selector), sticky:
 * - the first consumer owns the whole space [0, 65535];
 * - a joining consumer takes the upper half of the largest range (ties: the lowest start); every
 *   other consumer keeps its range, so only the keys of the split half change owner;
 * - a leaving consumer's range goes to the consumer owning the range just after it (or just
 *   before it, for the last range), so again only its keys move.
 * Each consumer owns exactly one contiguous range; the ranges always cover the space.
 * Deterministic: the result depends only on the sequence of joins and leaves.
 */
export class AutoSplitHashRanges {
  private rs: HashRange[] = [];

  /** Current ranges in ascending order (a copy). */
  ranges(): HashRange[] {
    return this.rs.slice();
  }

  has(consumerId: string): boolean {
    return this.rs.some((r) => r.consumerId === consumerId);
  }

  /**
   * Adds a consumer. @returns false (nothing changes) when it is already present or when no range
   * can be split any more (65,536 consumers).
   */
  add(consumerId: string): boolean {
    if (this.has(consumerId)) return false;
    if (this.rs.length === 0) {
      this.rs = [{ start: 0, end: KEY_HASH_RANGE - 1, consumerId }];
      return true;
    }
    let best = 0;
    for (let i = 1; i < this.rs.length; i++) {
      const a = this.rs[i]!;
      const b = this.rs[best]!;
      if (a.end - a.start > b.end - b.start) best = i;
    }
    const r = this.rs[best]!;
    if (r.end === r.start) return false;
    const mid = r.start + Math.floor((r.end - r.start) / 2);
    this.rs.splice(best, 1, { start: r.start, end: mid, consumerId: r.consumerId }, { start: mid + 1, end: r.end, consumerId });
    return true;
  }

  /** Removes a consumer; its range goes to a neighbour (see the class docs). */
  remove(consumerId: string): void {
    const i = this.rs.findIndex((r) => r.consumerId === consumerId);
    if (i < 0) return;
    const r = this.rs[i]!;
    if (this.rs.length === 1) {
      this.rs = [];
      return;
    }
    if (i + 1 < this.rs.length) {
      const next = this.rs[i + 1]!;
      this.rs.splice(i, 2, { start: r.start, end: next.end, consumerId: next.consumerId });
    } else {
      const prev = this.rs[i - 1]!;
      this.rs.splice(i - 1, 2, { start: prev.start, end: r.end, consumerId: prev.consumerId });
    }
  }

  /** The consumer owning `hash`, or null with no consumers. */
  owner(hash: number): string | null {
    let a = 0;
    let b = this.rs.length - 1;
    while (a <= b) {
      const m = (a + b) >> 1;
      const r = this.rs[m]!;
      if (hash < r.start) b = m - 1;
      else if (hash > r.end) a = m + 1;
      else return r.consumerId;
    }
    return null;
  }
}

/**
 * Key_Shared draining hashes (PIP-379, Pulsar 4.0): per hash, which consumer holds messages of it
 * in flight and how many. A message of hash `h` may be dispatched to `h`'s current owner only when
 * no OTHER consumer holds messages of `h` in flight. So when `h` moves to a newly joined consumer,
 * it receives nothing for `h` until every message of `h` already dispatched to the previous owner
 * is acked or leaves flight otherwise (nack, ack timeout, disconnect), and those go back to the
 * replay queue ahead of later messages. This replaces Pulsar's older "recently joined consumers"
 * rule (a new consumer got no message past the read position at its join until the mark-delete
 * position caught up), which blocked every key, not only the moved ones.
 */
export class InFlightHashes {
  private readonly byHash = new Map<number, { consumerId: string; count: number }>();

  /** Whether a message of `hash` may go to `consumerId` now. */
  allows(hash: number, consumerId: string): boolean {
    const e = this.byHash.get(hash);
    return e === undefined || e.consumerId === consumerId;
  }

  /** A message of `hash` was dispatched to `consumerId`. @throws Error when another consumer holds the hash. */
  add(hash: number, consumerId: string): void {
    const e = this.byHash.get(hash);
    if (e === undefined) this.byHash.set(hash, { consumerId, count: 1 });
    else if (e.consumerId === consumerId) e.count += 1;
    else throw new Error(`hash ${hash} is held by ${e.consumerId}, not ${consumerId}`);
  }

  /** A message of `hash` left flight. */
  remove(hash: number): void {
    const e = this.byHash.get(hash);
    if (e === undefined) throw new Error(`hash ${hash} has no message in flight`);
    e.count -= 1;
    if (e.count === 0) this.byHash.delete(hash);
  }

  /** Number of hashes with messages in flight. */
  get size(): number {
    return this.byHash.size;
  }
}
