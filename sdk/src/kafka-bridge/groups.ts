/**
 * The classic consumer group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) mapped
 * onto Edgelog's KIP-848-style coordinator (docs/PROTOCOL.md, Consumer groups), much as Kafka 4
 * lets classic members join a consumer group (KIP-848, "upgrade path"): the coordinator
 * assigns partitions server-side, so no client ever acts as the group leader.
 *
 * - JoinGroup: the bridge sends an Edgelog heartbeat for the member (epoch 0 to join, or its
 *   current epoch with the owned partitions of its subscription when it rejoins). The answer
 *   names a leader that is no member (every client follows and runs no assignor), an empty
 *   member list, the member epoch as the generation, and the first of the client's protocols
 *   that is an Edgelog assignor.
 * - SyncGroup: answers the assignment Edgelog gave at the join (assignments a client sends are
 *   ignored).
 * - Heartbeat: an Edgelog heartbeat with the partitions given at the last SyncGroup as
 *   `ownedPartitions`. When Edgelog's answer differs from them (a partition to revoke, or a new
 *   one released by another member) the client is answered REBALANCE_IN_PROGRESS, so it
 *   rejoins (eager clients revoke everything first, cooperative ones what they lose).
 * - LeaveGroup: an Edgelog leave. OffsetCommit with a member: at the member's current Edgelog
 *   epoch, when the client's generation is the one the bridge answered.
 *
 * KIP-848 error codes mean nothing to a classic client; they are answered as Kafka answers
 * classic members of a consumer group: FENCED_MEMBER_EPOCH -> UNKNOWN_MEMBER_ID (rejoin with a
 * new id), STALE_MEMBER_EPOCH -> ILLEGAL_GENERATION.
 *
 * Session state (member epoch, what the client was given) lives in this bridge: a member stays
 * connected to one bridge. A bridge that lost it (restart) answers UNKNOWN_MEMBER_ID and the
 * client rejoins. Entries of members that stopped heartbeating are dropped after their session
 * timeout (Edgelog's coordinator removes the member itself).
 */
import { randomUUID } from "node:crypto";
import type { AssignorName, ConsumerGroupHeartbeatResponse, GroupDescription, TopicPartitions } from "../../../src/protocol/index.ts";
import { EdgelogClientError } from "../errors.ts";
import { KafkaError, kafkaErrorOf } from "./errors.ts";
import type { BridgeContext } from "./handlers.ts";
import {
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
  type DescribedGroup,
  type HeartbeatRequest,
  type JoinGroupRequest,
  type JoinGroupResponse,
  type KafkaTopicPartitions,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type OffsetCommitRequest,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  type PartitionErrors,
  type SyncGroupRequest,
} from "./messages/groups.ts";

/** The leader id answered in JoinGroup: no member has it, so every client follows. */
export const SERVER_ASSIGNOR_LEADER = "edgelog-server-side-assignor";

/** Consumer protocol names clients use -> Edgelog assignors. */
const PROTOCOL_ASSIGNORS: Record<string, AssignorName> = {
  range: "range",
  roundrobin: "roundrobin",
  sticky: "sticky",
  "cooperative-sticky": "cooperative-sticky",
  // kafkajs's names for its built-in assigner
  RoundRobinAssigner: "roundrobin",
};

/** How long a JoinGroup waits for partitions that other members still hold, ms. */
const JOIN_SETTLE_MS = 3000;
const JOIN_SETTLE_STEP_MS = 300;
/** How often dead sessions are swept, ms. */
const SWEEP_INTERVAL_MS = 10_000;

interface ClassicMember {
  groupId: string;
  memberId: string;
  instanceId: string | null;
  clientId: string;
  /** The member's current Edgelog member epoch. */
  epoch: number;
  /** The generation answered at the last JoinGroup. */
  generation: number;
  /** Edgelog's assignment at the last JoinGroup, handed out by SyncGroup (full topic names). */
  pending: TopicPartitions[];
  /** What the client was given at its last SyncGroup (full topic names). */
  owned: TopicPartitions[];
  protocolName: string;
  topics: string[];
  sessionTimeoutMs: number;
  lastSeenMs: number;
}

function key(groupId: string, memberId: string): string {
  return `${groupId}\u0000${memberId}`;
}

function sameAssignment(a: TopicPartitions[], b: TopicPartitions[]): boolean {
  const flat = (x: TopicPartitions[]): string =>
    x
      .flatMap((tp) => tp.partitions.map((p) => `${tp.topic}:${p}`))
      .sort()
      .join(",");
  return flat(a) === flat(b);
}

/** Translates an error for a classic member (see the module comment). */
function classicError(e: unknown): number {
  const code = e instanceof EdgelogClientError ? e.code : undefined;
  if (code === "FENCED_MEMBER_EPOCH" || code === "UNKNOWN_MEMBER_ID") return KafkaError.UNKNOWN_MEMBER_ID;
  if (code === "STALE_MEMBER_EPOCH") return KafkaError.ILLEGAL_GENERATION;
  return kafkaErrorOf(e, "group");
}

/** Kafka's classic group states for Edgelog's (as Kafka reports consumer groups to DescribeGroups v0-v5). */
const CLASSIC_STATES: Record<string, string> = {
  Empty: "Empty",
  Assigning: "PreparingRebalance",
  Reconciling: "CompletingRebalance",
  Stable: "Stable",
  Dead: "Dead",
};

/** Classic group sessions of one bridge. */
export class ClassicGroups {
  readonly #ctx: BridgeContext;
  readonly #members = new Map<string, ClassicMember>();
  readonly #sweep: ReturnType<typeof setInterval>;

  constructor(ctx: BridgeContext) {
    this.#ctx = ctx;
    this.#sweep = setInterval(() => this.#sweepDead(), SWEEP_INTERVAL_MS);
    this.#sweep.unref?.();
  }

  close(): void {
    clearInterval(this.#sweep);
  }

  #sweepDead(): void {
    const now = Date.now();
    for (const [k, m] of this.#members) if (now - m.lastSeenMs > m.sessionTimeoutMs) this.#members.delete(k);
  }

  #toKafka(assigned: TopicPartitions[]): KafkaTopicPartitions[] {
    const out: KafkaTopicPartitions[] = [];
    for (const tp of assigned) {
      const topic = this.#ctx.names.toKafka(tp.topic);
      if (topic !== null) out.push({ topic, partitions: [...tp.partitions].sort((a, b) => a - b) });
    }
    return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0));
  }

  #toEdgelog(owned: KafkaTopicPartitions[]): TopicPartitions[] {
    return owned.map((tp) => ({ topic: this.#ctx.names.toEdgelog(tp.topic), partitions: [...tp.partitions].sort((a, b) => a - b) }));
  }

  async join(req: JoinGroupRequest, clientId: string | null): Promise<JoinGroupResponse> {
    const fail = (errorCode: number, memberId = req.memberId): JoinGroupResponse => ({ throttleTimeMs: 0, errorCode, generationId: -1, protocolName: "", leader: "", memberId, members: [] });
    if (req.protocolType !== "consumer") return fail(KafkaError.INCONSISTENT_GROUP_PROTOCOL);
    const protocol = req.protocols.find((p) => Object.hasOwn(PROTOCOL_ASSIGNORS, p.name));
    if (protocol === undefined) return fail(KafkaError.INCONSISTENT_GROUP_PROTOCOL);
    let subscription;
    try {
      subscription = decodeSubscription(protocol.metadata);
    } catch {
      return fail(KafkaError.INVALID_REQUEST);
    }
    const existing = req.memberId === "" ? undefined : this.#members.get(key(req.groupId, req.memberId));
    if (req.memberId !== "" && existing === undefined) return fail(KafkaError.UNKNOWN_MEMBER_ID);
    const memberId = existing?.memberId ?? `kafka-${randomUUID()}`;
    const topics = subscription.topics.map((t) => this.#ctx.names.toEdgelog(t));
    let answer: ConsumerGroupHeartbeatResponse;
    try {
      answer = await this.#ctx.client.heartbeat(req.groupId, {
        memberId,
        memberEpoch: existing?.epoch ?? 0,
        instanceId: req.groupInstanceId,
        subscribedTopicNames: topics,
        ownedPartitions: existing === undefined ? [] : this.#toEdgelog(subscription.ownedPartitions),
        sessionTimeoutMs: req.sessionTimeoutMs,
        rebalanceTimeoutMs: req.rebalanceTimeoutMs,
        assignor: PROTOCOL_ASSIGNORS[protocol.name],
        clientId: clientId ?? undefined,
      });
      // Partitions of our target that other members have not released yet: wait a little for
      // them (they release on their next heartbeat) rather than make this member rejoin later.
      const deadline = Date.now() + Math.min(JOIN_SETTLE_MS, req.rebalanceTimeoutMs);
      while (answer.state === "unreleased_partitions" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, JOIN_SETTLE_STEP_MS));
        answer = await this.#ctx.client.heartbeat(req.groupId, { memberId, memberEpoch: answer.memberEpoch, ownedPartitions: answer.assignment });
      }
    } catch (e) {
      if (existing !== undefined) this.#members.delete(key(req.groupId, memberId));
      return fail(classicError(e), existing === undefined ? "" : req.memberId);
    }
    const member: ClassicMember = {
      groupId: req.groupId,
      memberId,
      instanceId: req.groupInstanceId,
      clientId: clientId ?? "",
      epoch: answer.memberEpoch,
      generation: answer.memberEpoch,
      pending: answer.assignment,
      owned: existing?.owned ?? [],
      protocolName: protocol.name,
      topics: subscription.topics,
      sessionTimeoutMs: req.sessionTimeoutMs,
      lastSeenMs: Date.now(),
    };
    this.#members.set(key(req.groupId, memberId), member);
    return { throttleTimeMs: 0, errorCode: 0, generationId: member.generation, protocolName: protocol.name, leader: SERVER_ASSIGNOR_LEADER, memberId, members: [] };
  }

  async sync(req: SyncGroupRequest): Promise<{ throttleTimeMs: number; errorCode: number; assignment: Uint8Array }> {
    const m = this.#members.get(key(req.groupId, req.memberId));
    if (m === undefined) return { throttleTimeMs: 0, errorCode: KafkaError.UNKNOWN_MEMBER_ID, assignment: new Uint8Array(0) };
    if (req.generationId !== m.generation) return { throttleTimeMs: 0, errorCode: KafkaError.ILLEGAL_GENERATION, assignment: new Uint8Array(0) };
    m.owned = m.pending;
    m.lastSeenMs = Date.now();
    return { throttleTimeMs: 0, errorCode: 0, assignment: encodeAssignment(this.#toKafka(m.owned)) };
  }

  async heartbeat(req: HeartbeatRequest): Promise<{ throttleTimeMs: number; errorCode: number }> {
    const k = key(req.groupId, req.memberId);
    const m = this.#members.get(k);
    if (m === undefined) return { throttleTimeMs: 0, errorCode: KafkaError.UNKNOWN_MEMBER_ID };
    if (req.generationId !== m.generation) return { throttleTimeMs: 0, errorCode: KafkaError.ILLEGAL_GENERATION };
    m.lastSeenMs = Date.now();
    try {
      const answer = await this.#ctx.client.heartbeat(req.groupId, { memberId: m.memberId, memberEpoch: m.epoch, ownedPartitions: m.owned });
      m.epoch = answer.memberEpoch;
      if (!sameAssignment(answer.assignment, m.owned)) return { throttleTimeMs: 0, errorCode: KafkaError.REBALANCE_IN_PROGRESS };
      return { throttleTimeMs: 0, errorCode: 0 };
    } catch (e) {
      const errorCode = classicError(e);
      if (errorCode === KafkaError.UNKNOWN_MEMBER_ID) this.#members.delete(k);
      return { throttleTimeMs: 0, errorCode };
    }
  }

  async leave(req: LeaveGroupRequest): Promise<LeaveGroupResponse> {
    const members = await Promise.all(
      req.members.map(async (lm) => {
        const k = key(req.groupId, lm.memberId);
        const m = this.#members.get(k);
        if (m === undefined) return { ...lm, errorCode: KafkaError.UNKNOWN_MEMBER_ID };
        this.#members.delete(k);
        try {
          await this.#ctx.client.leaveGroup(req.groupId, { memberId: m.memberId, memberEpoch: m.epoch });
          return { ...lm, errorCode: 0 };
        } catch (e) {
          return { ...lm, errorCode: classicError(e) };
        }
      }),
    );
    // v0-v2 carry one member: its error is the top-level one.
    const errorCode = members.length === 1 ? members[0]!.errorCode : 0;
    return { throttleTimeMs: 0, errorCode, members };
  }

  async commit(req: OffsetCommitRequest): Promise<PartitionErrors> {
    const answer = (errorCode: (topic: string, partition: number) => number): PartitionErrors => ({
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: errorCode(t.name, p.partitionIndex) })) })),
    });
    let memberId: string | undefined;
    let memberEpoch: number | undefined;
    // generation -1 with no member id: a commit from outside the group (admin tools,
    // assign()-based consumers), accepted by Edgelog while the group has no members.
    if (!(req.generationId === -1 && req.memberId === "")) {
      const m = this.#members.get(key(req.groupId, req.memberId));
      if (m === undefined) {
        // Not a classic session of this bridge: a KIP-848 member (its member epoch is the
        // generation, KIP-848) or a session another bridge holds; Edgelog checks both.
        memberId = req.memberId;
        memberEpoch = req.generationId;
      } else {
        if (req.generationId !== m.generation) return answer(() => KafkaError.ILLEGAL_GENERATION);
        memberId = m.memberId;
        memberEpoch = m.epoch;
        m.lastSeenMs = Date.now();
      }
    }
    const offsets = req.topics.flatMap((t) =>
      t.partitions.map((p) => ({ topic: this.#ctx.names.toEdgelog(t.name), partition: p.partitionIndex, offset: p.committedOffset, metadata: p.committedMetadata })),
    );
    if (offsets.length === 0) return answer(() => 0);
    try {
      await this.#ctx.client.commitOffsets(req.groupId, memberId === undefined ? { offsets } : { memberId, memberEpoch, offsets });
      return answer(() => 0);
    } catch (e) {
      const errorCode = classicError(e);
      return answer(() => errorCode);
    }
  }

  async fetchOffsets(req: OffsetFetchRequest): Promise<OffsetFetchResponse> {
    try {
      const r = await this.#ctx.client.fetchOffsets(req.groupId, {
        topics: req.topics === null ? null : req.topics.map((t) => ({ topic: this.#ctx.names.toEdgelog(t.name), partitions: t.partitionIndexes })),
      });
      const byTopic = new Map<string, OffsetFetchResponse["topics"][number]["partitions"]>();
      // Requested partitions the answer lacks (unknown topic) read as "nothing committed", as Kafka answers.
      for (const t of req.topics ?? [])
        byTopic.set(
          t.name,
          t.partitionIndexes.map((p) => ({ partitionIndex: p, committedOffset: -1, metadata: null, errorCode: 0 })),
        );
      for (const p of r.partitions) {
        const name = this.#ctx.names.toKafka(p.topic);
        if (name === null) continue;
        const list = byTopic.get(name) ?? [];
        byTopic.set(name, list);
        const entry = { partitionIndex: p.partition, committedOffset: p.committedOffset ?? -1, metadata: p.metadata ?? "", errorCode: 0 };
        const i = list.findIndex((x) => x.partitionIndex === p.partition);
        if (i >= 0) list[i] = entry;
        else list.push(entry);
      }
      return { throttleTimeMs: 0, errorCode: 0, topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })) };
    } catch (e) {
      const errorCode = classicError(e);
      return {
        throttleTimeMs: 0,
        errorCode,
        topics: (req.topics ?? []).map((t) => ({ name: t.name, partitions: t.partitionIndexes.map((p) => ({ partitionIndex: p, committedOffset: -1, metadata: null, errorCode })) })),
      };
    }
  }

  async list(): Promise<{ throttleTimeMs: number; errorCode: number; groups: { groupId: string; protocolType: string }[] }> {
    try {
      const { groups } = await this.#ctx.client.listGroups();
      return { throttleTimeMs: 0, errorCode: 0, groups: groups.map((g) => ({ groupId: g.groupId, protocolType: "consumer" })) };
    } catch (e) {
      return { throttleTimeMs: 0, errorCode: kafkaErrorOf(e, "group"), groups: [] };
    }
  }

  async describe(req: { groups: string[] }): Promise<{ throttleTimeMs: number; groups: DescribedGroup[] }> {
    const groups = await Promise.all(
      req.groups.map(async (groupId): Promise<DescribedGroup> => {
        const base: DescribedGroup = { errorCode: 0, groupId, groupState: "Dead", protocolType: "", protocolData: "", members: [] };
        let d: GroupDescription;
        try {
          d = await this.#ctx.client.describeGroup(groupId);
        } catch (e) {
          // Kafka describes an unknown group as Dead, without an error.
          if (e instanceof EdgelogClientError && e.code === "GROUP_ID_NOT_FOUND") return base;
          return { ...base, errorCode: kafkaErrorOf(e, "group") };
        }
        return {
          errorCode: 0,
          groupId,
          groupState: CLASSIC_STATES[d.state] ?? d.state,
          protocolType: "consumer",
          protocolData: d.members.length === 0 ? "" : d.assignor,
          members: d.members.map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.instanceId,
            clientId: m.clientId,
            clientHost: "",
            memberMetadata: encodeSubscription(m.subscribedTopicNames.map((t) => this.#ctx.names.toKafka(t) ?? t)),
            memberAssignment: encodeAssignment(this.#toKafka(m.assignment)),
          })),
        };
      }),
    );
    return { throttleTimeMs: 0, groups };
  }

  async delete(req: { groupNames: string[] }): Promise<{ throttleTimeMs: number; results: { groupId: string; errorCode: number }[] }> {
    const results = await Promise.all(
      req.groupNames.map(async (groupId) => {
        try {
          await this.#ctx.client.deleteGroup(groupId);
          return { groupId, errorCode: 0 };
        } catch (e) {
          return { groupId, errorCode: kafkaErrorOf(e, "group") };
        }
      }),
    );
    return { throttleTimeMs: 0, results };
  }
}
