/**
 * The Kafka APIs the bridge answers, with the version ranges it implements, and the request /
 * response headers (https://kafka.apache.org/protocol#protocol_messages).
 *
 * A version is "flexible" (KIP-482: compact strings/arrays/bytes and tagged fields, request
 * header v2, response header v1) from `flexibleFrom` on. ApiVersions is the exception for the
 * response header: it always uses header v0, so a client that sent a version the broker does
 * not know can still read the answer (KIP-511).
 *
 * Only APIs listed here are advertised in ApiVersions; any other key, or a version outside the
 * range, is answered with UNSUPPORTED_VERSION (see server.ts), never a dropped connection.
 *
 * Pure module.
 */
import { KafkaDecodeError, type Reader, type Writer } from "./wire.ts";

export const ApiKey = {
  Produce: 0,
  Fetch: 1,
  ListOffsets: 2,
  Metadata: 3,
  OffsetCommit: 8,
  OffsetFetch: 9,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  DescribeGroups: 15,
  ListGroups: 16,
  ApiVersions: 18,
  CreateTopics: 19,
  DeleteTopics: 20,
  InitProducerId: 22,
  DescribeConfigs: 32,
  CreatePartitions: 37,
  DeleteGroups: 42,
  IncrementalAlterConfigs: 44,
  ConsumerGroupHeartbeat: 68,
  ConsumerGroupDescribe: 69,
} as const;
export type ApiKeyName = keyof typeof ApiKey;

/** Versions implemented per API: [min, max], and the first flexible version (Kafka's schema; may be above max). */
export interface ApiRange {
  readonly key: number;
  readonly minVersion: number;
  readonly maxVersion: number;
  readonly flexibleFrom: number;
}

/**
 * The implemented versions. The ranges cover what kcat (librdkafka 2.x), kafkajs 2.x and the
 * Java client >= 2.1 negotiate; `flexibleFrom` is Kafka's for that API (so a version at or above
 * it is coded with compact types and tagged fields).
 */
export const SUPPORTED_APIS: Record<ApiKeyName, ApiRange> = {
  // v0-v2 are advertised because librdkafka enables gzip/snappy/lz4 only when the broker's
  // Produce range includes v0; their magic 0/1 message sets are refused (records.ts).
  Produce: { key: ApiKey.Produce, minVersion: 0, maxVersion: 8, flexibleFrom: 9 },
  Fetch: { key: ApiKey.Fetch, minVersion: 4, maxVersion: 11, flexibleFrom: 12 },
  ListOffsets: { key: ApiKey.ListOffsets, minVersion: 1, maxVersion: 7, flexibleFrom: 6 },
  Metadata: { key: ApiKey.Metadata, minVersion: 0, maxVersion: 12, flexibleFrom: 9 },
  OffsetCommit: { key: ApiKey.OffsetCommit, minVersion: 2, maxVersion: 7, flexibleFrom: 8 },
  OffsetFetch: { key: ApiKey.OffsetFetch, minVersion: 1, maxVersion: 5, flexibleFrom: 6 },
  FindCoordinator: { key: ApiKey.FindCoordinator, minVersion: 0, maxVersion: 2, flexibleFrom: 3 },
  JoinGroup: { key: ApiKey.JoinGroup, minVersion: 0, maxVersion: 5, flexibleFrom: 6 },
  Heartbeat: { key: ApiKey.Heartbeat, minVersion: 0, maxVersion: 3, flexibleFrom: 4 },
  LeaveGroup: { key: ApiKey.LeaveGroup, minVersion: 0, maxVersion: 3, flexibleFrom: 4 },
  SyncGroup: { key: ApiKey.SyncGroup, minVersion: 0, maxVersion: 3, flexibleFrom: 4 },
  DescribeGroups: { key: ApiKey.DescribeGroups, minVersion: 0, maxVersion: 4, flexibleFrom: 5 },
  ListGroups: { key: ApiKey.ListGroups, minVersion: 0, maxVersion: 2, flexibleFrom: 3 },
  ApiVersions: { key: ApiKey.ApiVersions, minVersion: 0, maxVersion: 3, flexibleFrom: 3 },
  CreateTopics: { key: ApiKey.CreateTopics, minVersion: 0, maxVersion: 4, flexibleFrom: 5 },
  DeleteTopics: { key: ApiKey.DeleteTopics, minVersion: 0, maxVersion: 3, flexibleFrom: 4 },
  InitProducerId: { key: ApiKey.InitProducerId, minVersion: 0, maxVersion: 1, flexibleFrom: 2 },
  DescribeConfigs: { key: ApiKey.DescribeConfigs, minVersion: 0, maxVersion: 3, flexibleFrom: 4 },
  CreatePartitions: { key: ApiKey.CreatePartitions, minVersion: 0, maxVersion: 1, flexibleFrom: 2 },
  DeleteGroups: { key: ApiKey.DeleteGroups, minVersion: 0, maxVersion: 1, flexibleFrom: 2 },
  IncrementalAlterConfigs: { key: ApiKey.IncrementalAlterConfigs, minVersion: 0, maxVersion: 0, flexibleFrom: 1 },
  // KIP-848 (consumer-groups.ts): flexible from v0; v1 of the heartbeat adds the topic regex.
  ConsumerGroupHeartbeat: { key: ApiKey.ConsumerGroupHeartbeat, minVersion: 0, maxVersion: 1, flexibleFrom: 0 },
  ConsumerGroupDescribe: { key: ApiKey.ConsumerGroupDescribe, minVersion: 0, maxVersion: 0, flexibleFrom: 0 },
};

const BY_KEY = new Map<number, ApiRange>(Object.values(SUPPORTED_APIS).map((r) => [r.key, r]));

/** The implemented range of `apiKey`, or undefined when the bridge does not implement it. */
export function apiRange(apiKey: number): ApiRange | undefined {
  return BY_KEY.get(apiKey);
}

/** True when `version` of `apiKey` is implemented. */
export function isSupported(apiKey: number, version: number): boolean {
  const r = BY_KEY.get(apiKey);
  return r !== undefined && version >= r.minVersion && version <= r.maxVersion;
}

/** True when `version` of `apiKey` uses Kafka's flexible encoding. Unknown keys: false. */
export function isFlexible(apiKey: number, version: number): boolean {
  const r = BY_KEY.get(apiKey);
  return r !== undefined && version >= r.flexibleFrom;
}

/** Request header v1 (non-flexible) or v2 (flexible). */
export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/**
 * Reads the request header. The first three fields are fixed for every version, so a request
 * for an unknown API or version still yields its correlation id (for the UNSUPPORTED_VERSION
 * answer). `client_id` is a classic nullable string even in header v2.
 * @throws KafkaDecodeError on a truncated header.
 */
export function readRequestHeader(r: Reader): RequestHeader {
  if (r.remaining < 8) throw new KafkaDecodeError(`request header needs 8 bytes, frame has ${r.remaining}`);
  const apiKey = r.int16();
  const apiVersion = r.int16();
  const correlationId = r.int32();
  const clientId = r.nullableString(false);
  if (isSupported(apiKey, apiVersion) && isFlexible(apiKey, apiVersion)) r.taggedFields();
  return { apiKey, apiVersion, correlationId, clientId };
}

/** Writes the response header: v0 (correlation id) or v1 (plus tagged fields); ApiVersions always v0. */
export function writeResponseHeader(w: Writer, header: RequestHeader): void {
  w.int32(header.correlationId);
  if (header.apiKey !== ApiKey.ApiVersions && isSupported(header.apiKey, header.apiVersion) && isFlexible(header.apiKey, header.apiVersion)) w.taggedFields();
}
