/**
 * The consumer group protocol of KIP-848: ConsumerGroupHeartbeat (68, v0-v1) and
 * ConsumerGroupDescribe (69, v0), field by field as in Kafka's message schemas
 * (ConsumerGroupHeartbeatRequest/Response.json, ConsumerGroupDescribeRequest/Response.json).
 * Every version of both is flexible (compact types + tagged fields). Topics are named by topic
 * id (UUID) in heartbeats, by id and name in describe. Pure module.
 */
import type { Reader, Writer } from "../wire.ts";

/** Partitions of one topic, by topic id (UUID text). */
export interface TopicIdPartitions {
  topicId: string;
  partitions: number[];
}

// ---- ConsumerGroupHeartbeat (68) ----

export interface ConsumerGroupHeartbeatRequest {
  groupId: string;
  /** "" on a v0 join (the coordinator picks one); v1 clients pick their own. */
  memberId: string;
  /** 0 joins, -1 leaves, -2 leaves temporarily (static member), else the current epoch. */
  memberEpoch: number;
  /** null = not provided / unchanged. */
  instanceId: string | null;
  rackId: string | null;
  /** -1 = unchanged. */
  rebalanceTimeoutMs: number;
  /** null = unchanged. */
  subscribedTopicNames: string[] | null;
  /** v1+; null = unchanged. */
  subscribedTopicRegex: string | null;
  /** null = not used / unchanged. */
  serverAssignor: string | null;
  /** Partitions the member owns; null = unchanged. */
  topicPartitions: TopicIdPartitions[] | null;
}

function readTopicIdPartitions(r: Reader): TopicIdPartitions {
  const topicId = r.uuid();
  const partitions = r.array(true, (r) => r.int32());
  r.taggedFields();
  return { topicId, partitions };
}

export function decodeConsumerGroupHeartbeatRequest(r: Reader, version: number): ConsumerGroupHeartbeatRequest {
  const groupId = r.string(true);
  const memberId = r.string(true);
  const memberEpoch = r.int32();
  const instanceId = r.nullableString(true);
  const rackId = r.nullableString(true);
  const rebalanceTimeoutMs = r.int32();
  const subscribedTopicNames = r.nullableArray(true, (r) => r.string(true));
  const subscribedTopicRegex = version >= 1 ? r.nullableString(true) : null;
  const serverAssignor = r.nullableString(true);
  const topicPartitions = r.nullableArray(true, readTopicIdPartitions);
  r.taggedFields();
  return { groupId, memberId, memberEpoch, instanceId, rackId, rebalanceTimeoutMs, subscribedTopicNames, subscribedTopicRegex, serverAssignor, topicPartitions };
}

export interface ConsumerGroupHeartbeatResponse {
  throttleTimeMs: number;
  errorCode: number;
  errorMessage: string | null;
  memberId: string | null;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  /** null = not provided (unchanged). */
  assignment: TopicIdPartitions[] | null;
}

export function encodeConsumerGroupHeartbeatResponse(w: Writer, _version: number, res: ConsumerGroupHeartbeatResponse): void {
  w.int32(res.throttleTimeMs).int16(res.errorCode).nullableString(res.errorMessage, true).nullableString(res.memberId, true);
  w.int32(res.memberEpoch).int32(res.heartbeatIntervalMs);
  // Assignment: a nullable struct, coded as a signed int8 presence marker (-1 = null, 1 = present).
  if (res.assignment === null) w.int8(-1);
  else {
    w.int8(1);
    w.array(res.assignment, true, (w, tp) => {
      w.uuid(tp.topicId).array(tp.partitions, true, (w, p) => w.int32(p));
      w.taggedFields();
    });
    w.taggedFields();
  }
  w.taggedFields();
}

// ---- ConsumerGroupDescribe (69) ----

export interface ConsumerGroupDescribeRequest {
  groupIds: string[];
  includeAuthorizedOperations: boolean;
}

export function decodeConsumerGroupDescribeRequest(r: Reader, _version: number): ConsumerGroupDescribeRequest {
  const groupIds = r.array(true, (r) => r.string(true));
  const includeAuthorizedOperations = r.bool();
  r.taggedFields();
  return { groupIds, includeAuthorizedOperations };
}

/** Partitions of one topic, by id and name (describe's TopicPartitions). */
export interface NamedTopicPartitions {
  topicId: string;
  topicName: string;
  partitions: number[];
}

export interface ConsumerGroupDescribeMember {
  memberId: string;
  instanceId: string | null;
  rackId: string | null;
  memberEpoch: number;
  clientId: string;
  clientHost: string;
  subscribedTopicNames: string[];
  subscribedTopicRegex: string | null;
  assignment: NamedTopicPartitions[];
  targetAssignment: NamedTopicPartitions[];
}

export interface ConsumerGroupDescribedGroup {
  errorCode: number;
  errorMessage: string | null;
  groupId: string;
  /** "Empty", "Assigning", "Reconciling", "Stable", "Dead", or "" on error. */
  groupState: string;
  groupEpoch: number;
  assignmentEpoch: number;
  assignorName: string;
  members: ConsumerGroupDescribeMember[];
  /** INT32_MIN when not requested (or not known). */
  authorizedOperations: number;
}

export interface ConsumerGroupDescribeResponse {
  throttleTimeMs: number;
  groups: ConsumerGroupDescribedGroup[];
}

function writeAssignment(w: Writer, assignment: NamedTopicPartitions[]): void {
  w.array(assignment, true, (w, tp) => {
    w.uuid(tp.topicId)
      .string(tp.topicName, true)
      .array(tp.partitions, true, (w, p) => w.int32(p));
    w.taggedFields();
  });
  w.taggedFields();
}

export function encodeConsumerGroupDescribeResponse(w: Writer, _version: number, res: ConsumerGroupDescribeResponse): void {
  w.int32(res.throttleTimeMs);
  w.array(res.groups, true, (w, g) => {
    w.int16(g.errorCode).nullableString(g.errorMessage, true).string(g.groupId, true).string(g.groupState, true);
    w.int32(g.groupEpoch).int32(g.assignmentEpoch).string(g.assignorName, true);
    w.array(g.members, true, (w, m) => {
      w.string(m.memberId, true).nullableString(m.instanceId, true).nullableString(m.rackId, true).int32(m.memberEpoch);
      w.string(m.clientId, true).string(m.clientHost, true);
      w.array(m.subscribedTopicNames, true, (w, t) => w.string(t, true));
      w.nullableString(m.subscribedTopicRegex, true);
      writeAssignment(w, m.assignment);
      writeAssignment(w, m.targetAssignment);
      w.taggedFields();
    });
    w.int32(g.authorizedOperations);
    w.taggedFields();
  });
  w.taggedFields();
}
