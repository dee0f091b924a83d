/**
 * The classic consumer group APIs: JoinGroup (11, v0-v5), SyncGroup (14, v0-v3), Heartbeat (12,
 * v0-v3), LeaveGroup (13, v0-v3), OffsetCommit (8, v2-v7), OffsetFetch (9, v1-v5), ListGroups
 * (16, v0-v2), DescribeGroups (15, v0-v4), DeleteGroups (42, v0-v1); and the consumer
 * protocol's embedded Subscription / Assignment (ConsumerProtocolSubscription.json,
 * ConsumerProtocolAssignment.json), always non-flexible. Pure module.
 */
import { Reader, type Writer, Writer as W } from "../wire.ts";

// ---- JoinGroup ----

export interface JoinGroupRequest {
  groupId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  memberId: string;
  groupInstanceId: string | null;
  protocolType: string;
  protocols: { name: string; metadata: Uint8Array }[];
}

export function decodeJoinGroupRequest(r: Reader, version: number, flex: boolean): JoinGroupRequest {
  const groupId = r.string(flex);
  const sessionTimeoutMs = r.int32();
  const rebalanceTimeoutMs = version >= 1 ? r.int32() : sessionTimeoutMs;
  const memberId = r.string(flex);
  const groupInstanceId = version >= 5 ? r.nullableString(flex) : null;
  const protocolType = r.string(flex);
  const protocols = r.array(flex, (r) => {
    const name = r.string(flex);
    const metadata = r.bytes(flex);
    if (flex) r.taggedFields();
    return { name, metadata };
  });
  if (flex) r.taggedFields();
  return { groupId, sessionTimeoutMs, rebalanceTimeoutMs, memberId, groupInstanceId, protocolType, protocols };
}

export interface JoinGroupResponse {
  throttleTimeMs: number;
  errorCode: number;
  generationId: number;
  protocolName: string;
  leader: string;
  memberId: string;
  members: { memberId: string; groupInstanceId: string | null; metadata: Uint8Array }[];
}

export function encodeJoinGroupResponse(w: Writer, version: number, flex: boolean, res: JoinGroupResponse): void {
  if (version >= 2) w.int32(res.throttleTimeMs);
  w.int16(res.errorCode).int32(res.generationId).string(res.protocolName, flex).string(res.leader, flex).string(res.memberId, flex);
  w.array(res.members, flex, (w, m) => {
    w.string(m.memberId, flex);
    if (version >= 5) w.nullableString(m.groupInstanceId, flex);
    w.bytes(m.metadata, flex);
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- SyncGroup ----

export interface SyncGroupRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  assignments: { memberId: string; assignment: Uint8Array }[];
}

export function decodeSyncGroupRequest(r: Reader, version: number, flex: boolean): SyncGroupRequest {
  const groupId = r.string(flex);
  const generationId = r.int32();
  const memberId = r.string(flex);
  const groupInstanceId = version >= 3 ? r.nullableString(flex) : null;
  const assignments = r.array(flex, (r) => {
    const memberId = r.string(flex);
    const assignment = r.bytes(flex);
    if (flex) r.taggedFields();
    return { memberId, assignment };
  });
  if (flex) r.taggedFields();
  return { groupId, generationId, memberId, groupInstanceId, assignments };
}

export function encodeSyncGroupResponse(w: Writer, version: number, flex: boolean, res: { throttleTimeMs: number; errorCode: number; assignment: Uint8Array }): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  w.int16(res.errorCode).bytes(res.assignment, flex);
  if (flex) w.taggedFields();
}

// ---- Heartbeat ----

export interface HeartbeatRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
}

export function decodeHeartbeatRequest(r: Reader, version: number, flex: boolean): HeartbeatRequest {
  const groupId = r.string(flex);
  const generationId = r.int32();
  const memberId = r.string(flex);
  const groupInstanceId = version >= 3 ? r.nullableString(flex) : null;
  if (flex) r.taggedFields();
  return { groupId, generationId, memberId, groupInstanceId };
}

export function encodeHeartbeatResponse(w: Writer, version: number, flex: boolean, res: { throttleTimeMs: number; errorCode: number }): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  w.int16(res.errorCode);
  if (flex) w.taggedFields();
}

// ---- LeaveGroup ----

export interface LeaveGroupRequest {
  groupId: string;
  /** v0-v2 carry one member id; v3+ a list (KIP-345 batch leave). */
  members: { memberId: string; groupInstanceId: string | null }[];
}

export function decodeLeaveGroupRequest(r: Reader, version: number, flex: boolean): LeaveGroupRequest {
  const groupId = r.string(flex);
  if (version < 3) {
    const memberId = r.string(flex);
    return { groupId, members: [{ memberId, groupInstanceId: null }] };
  }
  const members = r.array(flex, (r) => {
    const memberId = r.string(flex);
    const groupInstanceId = r.nullableString(flex);
    if (flex) r.taggedFields();
    return { memberId, groupInstanceId };
  });
  if (flex) r.taggedFields();
  return { groupId, members };
}

export interface LeaveGroupResponse {
  throttleTimeMs: number;
  errorCode: number;
  members: { memberId: string; groupInstanceId: string | null; errorCode: number }[];
}

export function encodeLeaveGroupResponse(w: Writer, version: number, flex: boolean, res: LeaveGroupResponse): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  w.int16(res.errorCode);
  if (version >= 3) {
    w.array(res.members, flex, (w, m) => {
      w.string(m.memberId, flex).nullableString(m.groupInstanceId, flex).int16(m.errorCode);
      if (flex) w.taggedFields();
    });
  }
  if (flex) w.taggedFields();
}

// ---- OffsetCommit ----

export interface OffsetCommitRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  topics: { name: string; partitions: { partitionIndex: number; committedOffset: number; committedMetadata: string | null }[] }[];
}

export function decodeOffsetCommitRequest(r: Reader, version: number, flex: boolean): OffsetCommitRequest {
  const groupId = r.string(flex);
  const generationId = version >= 1 ? r.int32() : -1;
  const memberId = version >= 1 ? r.string(flex) : "";
  const groupInstanceId = version >= 7 ? r.nullableString(flex) : null;
  if (version >= 2 && version <= 4) r.int64(); // retention_time_ms: Edgelog's offsets.retention.ms group config applies
  const topics = r.array(flex, (r) => {
    const name = r.string(flex);
    const partitions = r.array(flex, (r) => {
      const partitionIndex = r.int32();
      const committedOffset = r.int64();
      if (version >= 6) r.int32(); // committed_leader_epoch
      if (version === 1) r.int64(); // commit_timestamp
      const committedMetadata = r.nullableString(flex);
      if (flex) r.taggedFields();
      return { partitionIndex, committedOffset, committedMetadata };
    });
    if (flex) r.taggedFields();
    return { name, partitions };
  });
  if (flex) r.taggedFields();
  return { groupId, generationId, memberId, groupInstanceId, topics };
}

export interface PartitionErrors {
  throttleTimeMs: number;
  topics: { name: string; partitions: { partitionIndex: number; errorCode: number }[] }[];
}

export function encodeOffsetCommitResponse(w: Writer, version: number, flex: boolean, res: PartitionErrors): void {
  if (version >= 3) w.int32(res.throttleTimeMs);
  w.array(res.topics, flex, (w, t) => {
    w.string(t.name, flex);
    w.array(t.partitions, flex, (w, p) => {
      w.int32(p.partitionIndex).int16(p.errorCode);
      if (flex) w.taggedFields();
    });
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- OffsetFetch ----

export interface OffsetFetchRequest {
  groupId: string;
  /** null = every committed partition (v2+). */
  topics: { name: string; partitionIndexes: number[] }[] | null;
}

export function decodeOffsetFetchRequest(r: Reader, _version: number, flex: boolean): OffsetFetchRequest {
  const groupId = r.string(flex);
  const topics = r.nullableArray(flex, (r) => {
    const name = r.string(flex);
    const partitionIndexes = r.array(flex, (r) => r.int32());
    if (flex) r.taggedFields();
    return { name, partitionIndexes };
  });
  if (flex) r.taggedFields();
  return { groupId, topics };
}

export interface OffsetFetchResponse {
  throttleTimeMs: number;
  errorCode: number;
  topics: { name: string; partitions: { partitionIndex: number; committedOffset: number; metadata: string | null; errorCode: number }[] }[];
}

export function encodeOffsetFetchResponse(w: Writer, version: number, flex: boolean, res: OffsetFetchResponse): void {
  if (version >= 3) w.int32(res.throttleTimeMs);
  w.array(res.topics, flex, (w, t) => {
    w.string(t.name, flex);
    w.array(t.partitions, flex, (w, p) => {
      w.int32(p.partitionIndex).int64(p.committedOffset);
      if (version >= 5) w.int32(-1); // committed_leader_epoch: unknown
      w.nullableString(p.metadata, flex).int16(p.errorCode);
      if (flex) w.taggedFields();
    });
    if (flex) w.taggedFields();
  });
  if (version >= 2) w.int16(res.errorCode);
  if (flex) w.taggedFields();
}

// ---- ListGroups ----

export function decodeListGroupsRequest(r: Reader, version: number, flex: boolean): void {
  if (version >= 4) r.array(flex, (r) => r.string(flex)); // states_filter
  if (flex) r.taggedFields();
}

export function encodeListGroupsResponse(
  w: Writer,
  version: number,
  flex: boolean,
  res: { throttleTimeMs: number; errorCode: number; groups: { groupId: string; protocolType: string }[] },
): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  w.int16(res.errorCode);
  w.array(res.groups, flex, (w, g) => {
    w.string(g.groupId, flex).string(g.protocolType, flex);
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- DescribeGroups ----

export function decodeDescribeGroupsRequest(r: Reader, version: number, flex: boolean): { groups: string[] } {
  const groups = r.array(flex, (r) => r.string(flex));
  if (version >= 3) r.bool(); // include_authorized_operations
  if (flex) r.taggedFields();
  return { groups };
}

export interface DescribedGroup {
  errorCode: number;
  groupId: string;
  groupState: string;
  protocolType: string;
  protocolData: string;
  members: { memberId: string; groupInstanceId: string | null; clientId: string; clientHost: string; memberMetadata: Uint8Array; memberAssignment: Uint8Array }[];
}

export function encodeDescribeGroupsResponse(w: Writer, version: number, flex: boolean, res: { throttleTimeMs: number; groups: DescribedGroup[] }): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  w.array(res.groups, flex, (w, g) => {
    w.int16(g.errorCode).string(g.groupId, flex).string(g.groupState, flex).string(g.protocolType, flex).string(g.protocolData, flex);
    w.array(g.members, flex, (w, m) => {
      w.string(m.memberId, flex);
      if (version >= 4) w.nullableString(m.groupInstanceId, flex);
      w.string(m.clientId, flex).string(m.clientHost, flex).bytes(m.memberMetadata, flex).bytes(m.memberAssignment, flex);
      if (flex) w.taggedFields();
    });
    if (version >= 3) w.int32(-2147483648); // authorized_operations: not requested / unknown
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- DeleteGroups ----

export function decodeDeleteGroupsRequest(r: Reader, _version: number, flex: boolean): { groupNames: string[] } {
  const groupNames = r.array(flex, (r) => r.string(flex));
  if (flex) r.taggedFields();
  return { groupNames };
}

export function encodeDeleteGroupsResponse(w: Writer, _version: number, flex: boolean, res: { throttleTimeMs: number; results: { groupId: string; errorCode: number }[] }): void {
  w.int32(res.throttleTimeMs);
  w.array(res.results, flex, (w, g) => {
    w.string(g.groupId, flex).int16(g.errorCode);
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- Consumer protocol: Subscription / Assignment (embedded in JoinGroup / SyncGroup bytes) ----

/** Partitions of one topic, Kafka names. */
export interface KafkaTopicPartitions {
  topic: string;
  partitions: number[];
}

export interface ConsumerSubscription {
  version: number;
  topics: string[];
  userData: Uint8Array | null;
  /** v1+ (KIP-429): what the member owns when it rejoins. */
  ownedPartitions: KafkaTopicPartitions[];
}

/**
 * Decodes a member's subscription metadata. Fields of versions newer than the bridge knows
 * come after the known ones and are ignored (the consumer protocol's forward compatibility).
 * @throws KafkaDecodeError when it does not decode.
 */
export function decodeSubscription(bytes: Uint8Array): ConsumerSubscription {
  const r = new Reader(bytes);
  const version = r.int16();
  const topics = r.array(false, (r) => r.string(false));
  const userData = r.remaining > 0 ? r.nullableBytes(false) : null;
  let ownedPartitions: KafkaTopicPartitions[] = [];
  if (version >= 1 && r.remaining > 0) {
    ownedPartitions = r.array(false, (r) => ({ topic: r.string(false), partitions: r.array(false, (r) => r.int32()) }));
  }
  return { version, topics, userData, ownedPartitions };
}

/** Encodes a subscription v0 (topics only), for DescribeGroups. */
export function encodeSubscription(topics: string[]): Uint8Array {
  const w = new W(64);
  w.int16(0)
    .array(topics, false, (w, t) => w.string(t, false))
    .nullableBytes(null, false);
  return w.finish().slice();
}

/** Encodes an assignment v0 (partitions, empty user data): what SyncGroup answers. */
export function encodeAssignment(assigned: KafkaTopicPartitions[]): Uint8Array {
  const w = new W(64);
  w.int16(0);
  w.array(assigned, false, (w, tp) => {
    w.string(tp.topic, false).array(tp.partitions, false, (w, p) => w.int32(p));
  });
  w.bytes(new Uint8Array(0), false);
  return w.finish().slice();
}

/** Decodes an assignment (tests, diagnostics). */
export function decodeAssignment(bytes: Uint8Array): { version: number; assigned: KafkaTopicPartitions[] } {
  const r = new Reader(bytes);
  const version = r.int16();
  const assigned = r.array(false, (r) => ({ topic: r.string(false), partitions: r.array(false, (r) => r.int32()) }));
  return { version, assigned };
}
