/**
 * Sets of topic partitions (pure). An {@link Assignment} maps a topic name to its sorted,
 * duplicate-free partition numbers; topics with no partitions are absent, so two equal sets
 * have equal shapes. Values are treated as immutable.
 */
import type { TopicPartitions } from "../protocol/groups.ts";

export type Assignment = Readonly<Record<string, readonly number[]>>;

export const EMPTY_ASSIGNMENT: Assignment = Object.freeze({});

/** A stable string key of one partition (topic names never contain NUL). */
export function tpKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export function parseTpKey(key: string): { topic: string; partition: number } {
  const i = key.lastIndexOf("\u0000");
  return { topic: key.slice(0, i), partition: Number(key.slice(i + 1)) };
}

/** Builds an assignment from (topic, partition) pairs in any order, dropping duplicates. */
export function assignmentOf(pairs: Iterable<{ topic: string; partition: number }>): Assignment {
  const sets = new Map<string, Set<number>>();
  for (const { topic, partition } of pairs) {
    let s = sets.get(topic);
    if (!s) sets.set(topic, (s = new Set()));
    s.add(partition);
  }
  const out: Record<string, number[]> = {};
  for (const topic of [...sets.keys()].sort()) {
    out[topic] = [...(sets.get(topic) as Set<number>)].sort((a, b) => a - b);
  }
  return out;
}

export function assignmentFromKeys(keys: Iterable<string>): Assignment {
  const pairs: { topic: string; partition: number }[] = [];
  for (const k of keys) pairs.push(parseTpKey(k));
  return assignmentOf(pairs);
}

/** Every (topic, partition) of an assignment, topics sorted, partitions ascending. */
export function* partitionsOf(a: Assignment): Generator<{ topic: string; partition: number }> {
  for (const topic of Object.keys(a).sort()) {
    for (const partition of a[topic] ?? []) yield { topic, partition };
  }
}

export function keysOf(a: Assignment): Set<string> {
  const s = new Set<string>();
  for (const { topic, partition } of partitionsOf(a)) s.add(tpKey(topic, partition));
  return s;
}

export function countOf(a: Assignment): number {
  let n = 0;
  for (const ps of Object.values(a)) n += ps.length;
  return n;
}

export function isEmpty(a: Assignment): boolean {
  return countOf(a) === 0;
}

export function contains(a: Assignment, topic: string, partition: number): boolean {
  return a[topic]?.includes(partition) ?? false;
}

export function union(a: Assignment, b: Assignment): Assignment {
  return assignmentOf([...partitionsOf(a), ...partitionsOf(b)]);
}

/** Partitions of `a` that are not in `b`. */
export function minus(a: Assignment, b: Assignment): Assignment {
  return assignmentOf([...partitionsOf(a)].filter((p) => !contains(b, p.topic, p.partition)));
}

export function intersect(a: Assignment, b: Assignment): Assignment {
  return assignmentOf([...partitionsOf(a)].filter((p) => contains(b, p.topic, p.partition)));
}

export function equals(a: Assignment, b: Assignment): boolean {
  const ta = Object.keys(a)
    .filter((t) => (a[t]?.length ?? 0) > 0)
    .sort();
  const tb = Object.keys(b)
    .filter((t) => (b[t]?.length ?? 0) > 0)
    .sort();
  if (ta.length !== tb.length) return false;
  for (let i = 0; i < ta.length; i++) {
    const t = ta[i] as string;
    if (t !== tb[i]) return false;
    const pa = a[t] as readonly number[];
    const pb = b[t] as readonly number[];
    if (pa.length !== pb.length || pa.some((p, j) => p !== pb[j])) return false;
  }
  return true;
}

/** Wire form: topics sorted, partitions ascending. */
export function toWire(a: Assignment): TopicPartitions[] {
  return Object.keys(a)
    .sort()
    .filter((topic) => (a[topic]?.length ?? 0) > 0)
    .map((topic) => ({ topic, partitions: [...(a[topic] as readonly number[])] }));
}

/** From the wire form (validated by the caller); duplicates are dropped. */
export function fromWire(tps: readonly TopicPartitions[]): Assignment {
  const pairs: { topic: string; partition: number }[] = [];
  for (const { topic, partitions } of tps) for (const partition of partitions) pairs.push({ topic, partition });
  return assignmentOf(pairs);
}
