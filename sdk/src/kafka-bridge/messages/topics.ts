/**
 * Topic administration: CreateTopics (19, v0-v4), DeleteTopics (20, v0-v3), CreatePartitions
 * (37, v0-v1), DescribeConfigs (32, v0-v3), IncrementalAlterConfigs (44, v0). Field order per
 * Kafka's message schemas. Pure module.
 */
import type { Reader, Writer } from "../wire.ts";

// ---- CreateTopics ----

export interface CreatableTopic {
  name: string;
  /** -1 = the broker default. */
  numPartitions: number;
  replicationFactor: number;
  assignments: { partitionIndex: number; brokerIds: number[] }[];
  configs: { name: string; value: string | null }[];
}

export interface CreateTopicsRequest {
  topics: CreatableTopic[];
  timeoutMs: number;
  validateOnly: boolean;
}

export function decodeCreateTopicsRequest(r: Reader, version: number, flex: boolean): CreateTopicsRequest {
  const topics = r.array(flex, (r): CreatableTopic => {
    const name = r.string(flex);
    const numPartitions = r.int32();
    const replicationFactor = r.int16();
    const assignments = r.array(flex, (r) => {
      const partitionIndex = r.int32();
      const brokerIds = r.array(flex, (r) => r.int32());
      if (flex) r.taggedFields();
      return { partitionIndex, brokerIds };
    });
    const configs = r.array(flex, (r) => {
      const name = r.string(flex);
      const value = r.nullableString(flex);
      if (flex) r.taggedFields();
      return { name, value };
    });
    if (flex) r.taggedFields();
    return { name, numPartitions, replicationFactor, assignments, configs };
  });
  const timeoutMs = r.int32();
  const validateOnly = version >= 1 ? r.bool() : false;
  if (flex) r.taggedFields();
  return { topics, timeoutMs, validateOnly };
}

export interface TopicResult {
  name: string;
  errorCode: number;
  errorMessage: string | null;
}

export function encodeCreateTopicsResponse(w: Writer, version: number, flex: boolean, res: { throttleTimeMs: number; topics: TopicResult[] }): void {
  if (version >= 2) w.int32(res.throttleTimeMs);
  w.array(res.topics, flex, (w, t) => {
    w.string(t.name, flex).int16(t.errorCode);
    if (version >= 1) w.nullableString(t.errorMessage, flex);
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- DeleteTopics ----

export function decodeDeleteTopicsRequest(r: Reader, _version: number, flex: boolean): { topicNames: string[]; timeoutMs: number } {
  const topicNames = r.array(flex, (r) => r.string(flex));
  const timeoutMs = r.int32();
  if (flex) r.taggedFields();
  return { topicNames, timeoutMs };
}

export function encodeDeleteTopicsResponse(w: Writer, version: number, flex: boolean, res: { throttleTimeMs: number; topics: { name: string; errorCode: number }[] }): void {
  if (version >= 1) w.int32(res.throttleTimeMs);
  w.array(res.topics, flex, (w, t) => {
    w.string(t.name, flex).int16(t.errorCode);
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- CreatePartitions ----

export interface CreatePartitionsRequest {
  topics: { name: string; count: number; assignments: number[][] | null }[];
  timeoutMs: number;
  validateOnly: boolean;
}

export function decodeCreatePartitionsRequest(r: Reader, _version: number, flex: boolean): CreatePartitionsRequest {
  const topics = r.array(flex, (r) => {
    const name = r.string(flex);
    const count = r.int32();
    const assignments = r.nullableArray(flex, (r) => {
      const ids = r.array(flex, (r) => r.int32());
      if (flex) r.taggedFields();
      return ids;
    });
    if (flex) r.taggedFields();
    return { name, count, assignments };
  });
  const timeoutMs = r.int32();
  const validateOnly = r.bool();
  if (flex) r.taggedFields();
  return { topics, timeoutMs, validateOnly };
}

export function encodeCreatePartitionsResponse(w: Writer, _version: number, flex: boolean, res: { throttleTimeMs: number; results: TopicResult[] }): void {
  w.int32(res.throttleTimeMs);
  w.array(res.results, flex, (w, t) => {
    w.string(t.name, flex).int16(t.errorCode).nullableString(t.errorMessage, flex);
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- DescribeConfigs ----

/** Kafka's ConfigResource types. */
export const ResourceType = { TOPIC: 2, BROKER: 4, GROUP: 32 } as const;

/** Kafka's ConfigSource values (DescribeConfigs v1+). */
export const ConfigSource = { DYNAMIC_TOPIC_CONFIG: 1, DEFAULT_CONFIG: 5 } as const;

export interface DescribeConfigsRequest {
  resources: { resourceType: number; resourceName: string; configurationKeys: string[] | null }[];
  includeSynonyms: boolean;
  includeDocumentation: boolean;
}

export function decodeDescribeConfigsRequest(r: Reader, version: number, flex: boolean): DescribeConfigsRequest {
  const resources = r.array(flex, (r) => {
    const resourceType = r.int8();
    const resourceName = r.string(flex);
    const configurationKeys = r.nullableArray(flex, (r) => r.string(flex));
    if (flex) r.taggedFields();
    return { resourceType, resourceName, configurationKeys };
  });
  const includeSynonyms = version >= 1 ? r.bool() : false;
  const includeDocumentation = version >= 3 ? r.bool() : false;
  if (flex) r.taggedFields();
  return { resources, includeSynonyms, includeDocumentation };
}

export interface DescribedConfig {
  name: string;
  value: string | null;
  readOnly: boolean;
  isDefault: boolean;
  configSource: number;
  isSensitive: boolean;
  /** Kafka's ConfigType (v3+): 0 unknown, 2 string, 3 int, 5 long. */
  configType: number;
}

export interface DescribeConfigsResult {
  errorCode: number;
  errorMessage: string | null;
  resourceType: number;
  resourceName: string;
  configs: DescribedConfig[];
}

export function encodeDescribeConfigsResponse(w: Writer, version: number, flex: boolean, res: { throttleTimeMs: number; results: DescribeConfigsResult[] }): void {
  w.int32(res.throttleTimeMs);
  w.array(res.results, flex, (w, r) => {
    w.int16(r.errorCode).nullableString(r.errorMessage, flex).int8(r.resourceType).string(r.resourceName, flex);
    w.array(r.configs, flex, (w, c) => {
      w.string(c.name, flex).nullableString(c.value, flex).bool(c.readOnly);
      if (version === 0) w.bool(c.isDefault);
      else w.int8(c.configSource);
      w.bool(c.isSensitive);
      if (version >= 1) w.array([] as number[], flex, () => {}); // synonyms
      if (version >= 3) w.int8(c.configType).nullableString(null, flex);
      if (flex) w.taggedFields();
    });
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}

// ---- IncrementalAlterConfigs ----

/** Kafka's AlterConfigOp types. */
export const ConfigOperation = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

export interface IncrementalAlterConfigsRequest {
  resources: { resourceType: number; resourceName: string; configs: { name: string; operation: number; value: string | null }[] }[];
  validateOnly: boolean;
}

export function decodeIncrementalAlterConfigsRequest(r: Reader, _version: number, flex: boolean): IncrementalAlterConfigsRequest {
  const resources = r.array(flex, (r) => {
    const resourceType = r.int8();
    const resourceName = r.string(flex);
    const configs = r.array(flex, (r) => {
      const name = r.string(flex);
      const operation = r.int8();
      const value = r.nullableString(flex);
      if (flex) r.taggedFields();
      return { name, operation, value };
    });
    if (flex) r.taggedFields();
    return { resourceType, resourceName, configs };
  });
  const validateOnly = r.bool();
  if (flex) r.taggedFields();
  return { resources, validateOnly };
}

export function encodeIncrementalAlterConfigsResponse(
  w: Writer,
  _version: number,
  flex: boolean,
  res: { throttleTimeMs: number; responses: { errorCode: number; errorMessage: string | null; resourceType: number; resourceName: string }[] },
): void {
  w.int32(res.throttleTimeMs);
  w.array(res.responses, flex, (w, r) => {
    w.int16(r.errorCode).nullableString(r.errorMessage, flex).int8(r.resourceType).string(r.resourceName, flex);
    if (flex) w.taggedFields();
  });
  if (flex) w.taggedFields();
}
