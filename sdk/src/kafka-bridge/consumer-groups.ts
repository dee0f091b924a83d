/**
 * KIP-848's consumer group protocol (ConsumerGroupHeartbeat 68, ConsumerGroupDescribe 69)
 * mapped onto Edgelog's coordinator, which is itself KIP-848-style (docs/PROTOCOL.md, Consumer
 * groups): one Kafka heartbeat is one Edgelog heartbeat (`POST /v1/groups/{group}/heartbeat`),
 * with no state kept in the bridge, so a member may reach Edgelog through any bridge.
 *
 * Mapping (docs/KAFKA-BRIDGE.md):
 * - member id "" (a v0 join) -> none (Edgelog picks one and it is answered); a v1 client's own id
 *   is kept.
 * - member epoch 0 joins, > 0 heartbeats; -1 leaves and -2 leaves temporarily (static members):
 *   Edgelog's leave takes the member's current epoch, which the bridge reads from describe.
 * - rebalance timeout -1, and null subscription / regex / assignor / owned partitions mean
 *   "unchanged" in both protocols. A Kafka regex (RE2 syntax, a whole-name match, as Edgelog's)
 *   over Kafka topic names is sent as `{namespace}/(?:regex)` over Edgelog's full names, and
 *   describe strips that wrapper again.
 * - server assignor: Kafka's "uniform" is Edgelog's "cooperative-sticky" (both incremental and
 *   sticky); "range" and Edgelog's own assignor names are passed through; any other name is
 *   UNSUPPORTED_ASSIGNOR.
 * - topics are named by topic id: Edgelog's topic ids are UUIDs, answered as they are; ids are
 *   resolved through the topic list (cached {@link TOPIC_ID_CACHE_MS}, refreshed on a miss).
 *   Owned partitions of an unknown id (a deleted topic) are dropped.
 * - the answer always carries the member's whole assignment (Kafka may leave it null when it did
 *   not change; a full assignment equal to the current one reconciles to nothing).
 * - rack id: Edgelog has no racks; it is ignored (describe answers null).
 */
import { ASSIGNOR_NAMES, type AssignorName, type GroupDescription, type TopicPartitions } from "../../../src/protocol/index.ts";
import { EdgelogClientError } from "../errors.ts";
import { KafkaError, errorMessageOf, kafkaErrorOf } from "./errors.ts";
import type { BridgeContext } from "./handlers.ts";
import type {
  ConsumerGroupDescribeRequest,
  ConsumerGroupDescribeResponse,
  ConsumerGroupDescribedGroup,
  ConsumerGroupHeartbeatRequest,
  ConsumerGroupHeartbeatResponse,
  NamedTopicPartitions,
  TopicIdPartitions,
} from "./messages/consumer-groups.ts";

/** How long topic id <-> name pairs are trusted before a lookup lists the topics again, ms. */
export const TOPIC_ID_CACHE_MS = 10_000;

/** Kafka's "authorized operations not requested / unknown" marker (INT32_MIN). */
const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

/** Kafka server-side assignor names (KIP-848) -> Edgelog assignors. */
function edgelogAssignor(name: string): AssignorName | undefined {
  if (name === "uniform") return "cooperative-sticky";
  return (ASSIGNOR_NAMES as readonly string[]).includes(name) ? (name as AssignorName) : undefined;
}

/** RE2 source matching the literal namespace (its characters are [a-zA-Z0-9._-]: only "." is special). */
function namespaceRegex(namespace: string): string {
  return namespace.replaceAll(".", "\\.");
}

/** Edgelog full topic names <-> topic ids (UUIDs), from the topic list. */
class TopicIds {
  readonly #ctx: BridgeContext;
  #byName = new Map<string, string>();
  #byId = new Map<string, string>();
  #loadedAt = Number.NEGATIVE_INFINITY;

  constructor(ctx: BridgeContext) {
    this.#ctx = ctx;
  }

  async #refresh(): Promise<void> {
    const { topics } = await this.#ctx.client.listTopics();
    this.#byName = new Map(topics.map((t) => [t.name, t.topicId.toLowerCase()]));
    this.#byId = new Map(topics.map((t) => [t.topicId.toLowerCase(), t.name]));
    this.#loadedAt = Date.now();
  }

  /** Makes sure every id and name given is known, listing the topics at most once. */
  async resolve(ids: Iterable<string>, names: Iterable<string>): Promise<void> {
    const stale = Date.now() - this.#loadedAt > TOPIC_ID_CACHE_MS;
    let miss = stale;
    for (const id of ids) if (!this.#byId.has(id)) miss = true;
    for (const n of names) if (!this.#byName.has(n)) miss = true;
    if (miss) await this.#refresh();
  }

  nameOf(id: string): string | undefined {
    return this.#byId.get(id);
  }

  idOf(fullName: string): string | undefined {
    return this.#byName.get(fullName);
  }
}

/** The KIP-848 group APIs of one bridge (stateless apart from the topic id cache). */
export class ConsumerGroups {
  readonly #ctx: BridgeContext;
  readonly #ids: TopicIds;

  constructor(ctx: BridgeContext) {
    this.#ctx = ctx;
    this.#ids = new TopicIds(ctx);
  }

  /** Edgelog partitions -> Kafka topic ids (topics outside the namespace or without a known id dropped), sorted. */
  #toIds(tps: TopicPartitions[]): TopicIdPartitions[] {
    const out: TopicIdPartitions[] = [];
    for (const tp of tps) {
      const id = this.#ids.idOf(tp.topic);
      if (id !== undefined && this.#ctx.names.toKafka(tp.topic) !== null) out.push({ topicId: id, partitions: [...tp.partitions].sort((a, b) => a - b) });
    }
    return out.sort((a, b) => (a.topicId < b.topicId ? -1 : a.topicId > b.topicId ? 1 : 0));
  }

  #named(tps: TopicPartitions[]): NamedTopicPartitions[] {
    const out: NamedTopicPartitions[] = [];
    for (const tp of tps) {
      const topicName = this.#ctx.names.toKafka(tp.topic);
      const topicId = this.#ids.idOf(tp.topic);
      if (topicName !== null && topicId !== undefined) out.push({ topicId, topicName, partitions: [...tp.partitions].sort((a, b) => a - b) });
    }
    return out.sort((a, b) => (a.topicName < b.topicName ? -1 : a.topicName > b.topicName ? 1 : 0));
  }

  /** An Edgelog subscription regex as the Kafka client sent it (the bridge's wrapper removed). */
  #kafkaRegex(regex: string | null): string | null {
    const prefix = `${namespaceRegex(this.#ctx.names.namespace)}/(?:`;
    return regex?.startsWith(prefix) && regex.endsWith(")") ? regex.slice(prefix.length, -1) : regex;
  }

  async heartbeat(req: ConsumerGroupHeartbeatRequest, clientId: string | null): Promise<ConsumerGroupHeartbeatResponse> {
    const fail = (errorCode: number, errorMessage: string): ConsumerGroupHeartbeatResponse => ({
      throttleTimeMs: 0,
      errorCode,
      errorMessage,
      memberId: null,
      memberEpoch: 0,
      heartbeatIntervalMs: 0,
      assignment: null,
    });
    if (req.groupId === "") return fail(KafkaError.INVALID_GROUP_ID, "group id must not be empty");
    if (req.memberEpoch === -1 || req.memberEpoch === -2) return this.#leave(req, fail);
    if (req.memberEpoch < -2) return fail(KafkaError.INVALID_REQUEST, `invalid member epoch ${req.memberEpoch}`);
    if (req.memberEpoch > 0 && req.memberId === "") return fail(KafkaError.UNKNOWN_MEMBER_ID, "member id is required with a member epoch above 0");
    let assignor: AssignorName | undefined;
    if (req.serverAssignor !== null) {
      assignor = edgelogAssignor(req.serverAssignor);
      if (assignor === undefined) return fail(KafkaError.UNSUPPORTED_ASSIGNOR, `assignor ${JSON.stringify(req.serverAssignor)} is not supported: uniform, ${ASSIGNOR_NAMES.join(", ")}`);
    }
    try {
      const ownedIds = (req.topicPartitions ?? []).map((tp) => tp.topicId);
      await this.#ids.resolve(ownedIds, []);
      const owned =
        req.topicPartitions === null
          ? null
          : req.topicPartitions.flatMap((tp) => {
              const topic = this.#ids.nameOf(tp.topicId);
              return topic === undefined ? [] : [{ topic, partitions: [...new Set(tp.partitions)].sort((a, b) => a - b) }];
            });
      const answer = await this.#ctx.client.heartbeat(req.groupId, {
        memberId: req.memberId === "" ? null : req.memberId,
        memberEpoch: req.memberEpoch,
        instanceId: req.instanceId,
        subscribedTopicNames: req.subscribedTopicNames === null ? null : req.subscribedTopicNames.map((t) => this.#ctx.names.toEdgelog(t)),
        subscribedTopicRegex: req.subscribedTopicRegex === null ? null : `${namespaceRegex(this.#ctx.names.namespace)}/(?:${req.subscribedTopicRegex})`,
        ownedPartitions: owned,
        rebalanceTimeoutMs: req.rebalanceTimeoutMs < 0 ? null : req.rebalanceTimeoutMs,
        assignor: assignor ?? null,
        clientId: clientId ?? undefined,
      });
      await this.#ids.resolve(
        [],
        answer.assignment.map((tp) => tp.topic),
      );
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        errorMessage: null,
        memberId: answer.memberId,
        memberEpoch: answer.memberEpoch,
        heartbeatIntervalMs: answer.heartbeatIntervalMs,
        assignment: this.#toIds(answer.assignment),
      };
    } catch (e) {
      return fail(kafkaErrorOf(e, "group"), errorMessageOf(e));
    }
  }

  async #leave(req: ConsumerGroupHeartbeatRequest, fail: (code: number, message: string) => ConsumerGroupHeartbeatResponse): Promise<ConsumerGroupHeartbeatResponse> {
    if (req.memberId === "") return fail(KafkaError.UNKNOWN_MEMBER_ID, "member id is required to leave");
    try {
      // Kafka's leave carries -1/-2 instead of the current epoch; Edgelog's leave checks it.
      let d: GroupDescription;
      try {
        d = await this.#ctx.client.describeGroup(req.groupId);
      } catch (e) {
        if (e instanceof EdgelogClientError && e.code === "GROUP_ID_NOT_FOUND") return fail(KafkaError.UNKNOWN_MEMBER_ID, `member ${req.memberId} is not in group ${req.groupId}`);
        throw e;
      }
      const m = d.members.find((x) => x.memberId === req.memberId);
      if (m === undefined) return fail(KafkaError.UNKNOWN_MEMBER_ID, `member ${req.memberId} is not in group ${req.groupId}`);
      const left = await this.#ctx.client.leaveGroup(req.groupId, { memberId: m.memberId, memberEpoch: m.memberEpoch, temporary: req.memberEpoch === -2 });
      return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, memberId: left.memberId, memberEpoch: left.memberEpoch, heartbeatIntervalMs: 0, assignment: null };
    } catch (e) {
      return fail(kafkaErrorOf(e, "group"), errorMessageOf(e));
    }
  }

  async describe(req: ConsumerGroupDescribeRequest): Promise<ConsumerGroupDescribeResponse> {
    const groups = await Promise.all(
      req.groupIds.map(async (groupId): Promise<ConsumerGroupDescribedGroup> => {
        const base: ConsumerGroupDescribedGroup = {
          errorCode: 0,
          errorMessage: null,
          groupId,
          groupState: "",
          groupEpoch: -1,
          assignmentEpoch: -1,
          assignorName: "",
          members: [],
          authorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
        };
        let d: GroupDescription;
        try {
          d = await this.#ctx.client.describeGroup(groupId);
          await this.#ids.resolve(
            [],
            d.members.flatMap((m) => [...m.assignment, ...m.targetAssignment].map((tp) => tp.topic)),
          );
        } catch (e) {
          // Unlike DescribeGroups, Kafka answers an unknown group here with GROUP_ID_NOT_FOUND.
          return { ...base, errorCode: kafkaErrorOf(e, "group"), errorMessage: errorMessageOf(e) };
        }
        return {
          ...base,
          groupState: d.state,
          groupEpoch: d.groupEpoch,
          assignmentEpoch: d.targetAssignmentEpoch,
          assignorName: d.assignor,
          members: d.members.map((m) => ({
            memberId: m.memberId,
            instanceId: m.instanceId,
            rackId: null,
            memberEpoch: m.memberEpoch,
            clientId: m.clientId,
            clientHost: "",
            subscribedTopicNames: m.subscribedTopicNames.flatMap((t) => this.#ctx.names.toKafka(t) ?? []),
            subscribedTopicRegex: this.#kafkaRegex(m.subscribedTopicRegex),
            assignment: this.#named(m.assignment),
            targetAssignment: this.#named(m.targetAssignment),
          })),
        };
      }),
    );
    return { throttleTimeMs: 0, groups };
  }
}
