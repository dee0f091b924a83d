/**
 * Server-side partition assignors (pure). Each one maps the members of a group (their
 * resolved subscriptions and current target assignments) and the partition counts of the
 * subscribed topics to a new target assignment.
 *
 * Semantics follow Kafka's client assignors (org.apache.kafka.clients.consumer.*Assignor):
 * - `range` (RangeAssignor): per topic, the members subscribed to it, sorted, get consecutive
 *   ranges; the first `partitions % members` get one more. Partition i of co-partitioned
 *   topics lands on the same member. Balanced per topic, not across topics (Kafka's
 *   documented behaviour: with several topics the first members get the extra partitions of
 *   each topic). Not sticky.
 * - `roundrobin` (RoundRobinAssignor): all partitions sorted by (topic, partition) dealt in
 *   turn to the sorted members, skipping members not subscribed to the topic. Not sticky.
 * - `sticky` (StickyAssignor) and `cooperative-sticky` (CooperativeStickyAssignor): the same
 *   balanced-and-sticky target. They differ only in how the coordinator moves partitions
 *   (eager: everything revoked first; cooperative, KIP-429: only the moved partitions).
 *
 * Members are ordered as Kafka orders them: static members (with an instance id) first by
 * instance id, then dynamic members by member id, so a restarted static member keeps its place.
 * Every assignor is deterministic: the output depends only on the input sets, not their order.
 */
import type { AssignorName, RebalanceProtocol } from "../protocol/groups.ts";
import { rebalanceProtocolOf } from "../protocol/groups.ts";
import { type Assignment, assignmentOf, partitionsOf, tpKey } from "./assignment.ts";

export interface AssignorMember {
  memberId: string;
  /** Static membership id (group.instance.id), if any. */
  instanceId?: string | null;
  /** Resolved subscribed topics (names; topics missing from `partitionCounts` are skipped). */
  topics: readonly string[];
  /** The member's current target assignment: the base that sticky assignors keep. */
  current: Assignment;
}

export interface AssignorInput {
  members: readonly AssignorMember[];
  /** Partition count of every topic that exists (at least the subscribed ones). */
  partitionCounts: Readonly<Record<string, number>>;
}

/** memberId -> target assignment. Every input member is present (possibly with `{}`). */
export type GroupAssignment = Record<string, Assignment>;

export interface Assignor {
  readonly name: AssignorName;
  readonly rebalanceProtocol: RebalanceProtocol;
  assign(input: AssignorInput): GroupAssignment;
}

/** Kafka's member order: static members by instance id first, then dynamic members by member id. */
export function compareMembers(a: AssignorMember, b: AssignorMember): number {
  const ai = a.instanceId ?? null;
  const bi = b.instanceId ?? null;
  if (ai !== null && bi !== null) return cmp(ai, bi) || cmp(a.memberId, b.memberId);
  if (ai !== null) return -1;
  if (bi !== null) return 1;
  return cmp(a.memberId, b.memberId);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Topics at least one member subscribes to and that exist, sorted. */
function subscribedTopics(input: AssignorInput): string[] {
  const topics = new Set<string>();
  for (const m of input.members) {
    for (const t of m.topics) if ((input.partitionCounts[t] ?? 0) > 0) topics.add(t);
  }
  return [...topics].sort();
}

function emptyResult(members: readonly AssignorMember[]): Map<string, { topic: string; partition: number }[]> {
  const out = new Map<string, { topic: string; partition: number }[]>();
  for (const m of members) out.set(m.memberId, []);
  return out;
}

function finish(pairs: Map<string, { topic: string; partition: number }[]>): GroupAssignment {
  const out: GroupAssignment = {};
  for (const [memberId, ps] of pairs) out[memberId] = assignmentOf(ps);
  return out;
}

export function rangeAssign(input: AssignorInput): GroupAssignment {
  const members = [...input.members].sort(compareMembers);
  const out = emptyResult(members);
  for (const topic of subscribedTopics(input)) {
    const n = input.partitionCounts[topic] ?? 0;
    const consumers = members.filter((m) => m.topics.includes(topic));
    const per = Math.floor(n / consumers.length);
    const extra = n % consumers.length;
    consumers.forEach((m, i) => {
      const start = per * i + Math.min(i, extra);
      const len = per + (i < extra ? 1 : 0);
      const list = out.get(m.memberId) as { topic: string; partition: number }[];
      for (let p = start; p < start + len; p++) list.push({ topic, partition: p });
    });
  }
  return finish(out);
}

export function roundRobinAssign(input: AssignorInput): GroupAssignment {
  const members = [...input.members].sort(compareMembers);
  const out = emptyResult(members);
  if (members.length === 0) return {};
  let next = 0;
  for (const topic of subscribedTopics(input)) {
    const n = input.partitionCounts[topic] ?? 0;
    for (let partition = 0; partition < n; partition++) {
      // Advance the circular iterator to the next member subscribed to this topic (one exists:
      // the topic is in subscribedTopics).
      for (let tries = 0; tries < members.length; tries++) {
        const m = members[next % members.length] as AssignorMember;
        next++;
        if (m.topics.includes(topic)) {
          (out.get(m.memberId) as { topic: string; partition: number }[]).push({ topic, partition });
          break;
        }
      }
    }
  }
  return finish(out);
}

interface TP {
  topic: string;
  partition: number;
  key: string;
}

/**
 * The sticky target (Kafka's StickyAssignor goals, in order): (1) balance: no partition can
 * move to an eligible member that owns at least two fewer partitions; with equal
 * subscriptions the counts differ by at most one; (2) stickiness: a member keeps every
 * partition of its current target that is still valid, and partitions move only to restore
 * balance, each from a most-loaded member to a least-loaded one.
 *
 * Steps: keep valid current partitions (first claimant in member order wins a contested
 * partition); give each unowned partition, those with the fewest eligible members first, to
 * the least-loaded eligible member; then move partitions from the most-loaded members to
 * eligible members with at least two fewer until no such move exists. Each move lowers the
 * sum of squared counts, so the loop ends.
 */
export function stickyAssign(input: AssignorInput): GroupAssignment {
  const members = [...input.members].sort((a, b) => cmp(a.memberId, b.memberId));
  const order = new Map(members.map((m, i) => [m.memberId, i]));
  const topics = subscribedTopics(input);
  const eligible = new Map<string, AssignorMember[]>();
  for (const t of topics)
    eligible.set(
      t,
      members.filter((m) => m.topics.includes(t)),
    );

  const owned = new Map<string, Map<string, TP>>(); // memberId -> key -> tp
  for (const m of members) owned.set(m.memberId, new Map());
  const owner = new Map<string, string>(); // key -> memberId

  const give = (memberId: string, tp: TP) => {
    (owned.get(memberId) as Map<string, TP>).set(tp.key, tp);
    owner.set(tp.key, memberId);
  };
  const take = (memberId: string, tp: TP) => {
    (owned.get(memberId) as Map<string, TP>).delete(tp.key);
    owner.delete(tp.key);
  };
  const count = (memberId: string) => (owned.get(memberId) as Map<string, TP>).size;

  // 1. Keep current partitions that are still valid.
  for (const m of members) {
    for (const { topic, partition } of partitionsOf(m.current)) {
      const n = input.partitionCounts[topic] ?? 0;
      if (partition >= n || !m.topics.includes(topic)) continue;
      const key = tpKey(topic, partition);
      if (owner.has(key)) continue;
      give(m.memberId, { topic, partition, key });
    }
  }

  // 2. Place unowned partitions, the most constrained first.
  const unowned: TP[] = [];
  for (const topic of topics) {
    const n = input.partitionCounts[topic] ?? 0;
    for (let partition = 0; partition < n; partition++) {
      const key = tpKey(topic, partition);
      if (!owner.has(key)) unowned.push({ topic, partition, key });
    }
  }
  unowned.sort((a, b) => {
    const ea = (eligible.get(a.topic) as AssignorMember[]).length;
    const eb = (eligible.get(b.topic) as AssignorMember[]).length;
    return ea - eb || cmp(a.topic, b.topic) || a.partition - b.partition;
  });
  const leastLoaded = (candidates: readonly AssignorMember[], below: number): AssignorMember | undefined => {
    let best: AssignorMember | undefined;
    for (const c of candidates) {
      const n = count(c.memberId);
      if (n >= below) continue;
      if (best === undefined || n < count(best.memberId)) best = c; // candidates are in member-id order
    }
    return best;
  };
  for (const tp of unowned) {
    const m = leastLoaded(eligible.get(tp.topic) as AssignorMember[], Number.POSITIVE_INFINITY);
    if (m) give(m.memberId, tp);
  }

  // 3. Rebalance by single moves from most-loaded to least-loaded eligible members.
  for (;;) {
    const byLoad = [...members].sort((a, b) => count(b.memberId) - count(a.memberId) || (order.get(a.memberId) as number) - (order.get(b.memberId) as number));
    let moved = false;
    for (const from of byLoad) {
      const n = count(from.memberId);
      if (n < 2) break; // nobody can be two below this one
      // Give away the highest partitions first (deterministic; keeps low partitions stable).
      const candidates = [...(owned.get(from.memberId) as Map<string, TP>).values()].sort((a, b) => cmp(b.topic, a.topic) || b.partition - a.partition);
      for (const tp of candidates) {
        const to = leastLoaded(eligible.get(tp.topic) as AssignorMember[], n - 1);
        if (to === undefined) continue;
        take(from.memberId, tp);
        give(to.memberId, tp);
        moved = true;
        break;
      }
      if (moved) break;
    }
    if (!moved) break;
  }

  const out: GroupAssignment = {};
  for (const m of members) out[m.memberId] = assignmentOf((owned.get(m.memberId) as Map<string, TP>).values());
  return out;
}

export const ASSIGNORS: Readonly<Record<AssignorName, Assignor>> = {
  range: { name: "range", rebalanceProtocol: rebalanceProtocolOf("range"), assign: rangeAssign },
  roundrobin: { name: "roundrobin", rebalanceProtocol: rebalanceProtocolOf("roundrobin"), assign: roundRobinAssign },
  sticky: { name: "sticky", rebalanceProtocol: rebalanceProtocolOf("sticky"), assign: stickyAssign },
  "cooperative-sticky": {
    name: "cooperative-sticky",
    rebalanceProtocol: rebalanceProtocolOf("cooperative-sticky"),
    assign: stickyAssign,
  },
};
