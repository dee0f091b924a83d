import { EdgelogError } from "./errors.ts";

/**
 * Topic naming. Kafka's rule for the topic part: 1-249 characters of `[a-zA-Z0-9._-]`,
 * and not "." or ".." (kafka/common/internals/Topic.java). Pulsar's convention for the
 * prefix: `tenant/namespace/topic`, with `public/default` when omitted.
 */
export const DEFAULT_TENANT = "public";
export const DEFAULT_NAMESPACE = "default";

const TOPIC_PART = /^[a-zA-Z0-9._-]{1,249}$/;
const SEGMENT = /^[a-zA-Z0-9._-]{1,64}$/;

export interface TopicName {
  tenant: string;
  namespace: string;
  topic: string;
  /** `tenant/namespace/topic` */
  full: string;
}

/**
 * Parses `topic` or `tenant/namespace/topic`.
 * @throws EdgelogError INVALID_TOPIC_NAME
 */
export function parseTopicName(name: unknown): TopicName {
  if (typeof name !== "string") throw new EdgelogError("INVALID_TOPIC_NAME", "Topic name must be a string.");
  const parts = name.split("/");
  let tenant = DEFAULT_TENANT;
  let namespace = DEFAULT_NAMESPACE;
  let topic: string;
  if (parts.length === 1) {
    topic = parts[0] ?? "";
  } else if (parts.length === 3) {
    [tenant, namespace, topic] = parts as [string, string, string];
    if (!SEGMENT.test(tenant) || !SEGMENT.test(namespace) || tenant === "." || tenant === ".." || namespace === "." || namespace === "..") {
      throw new EdgelogError("INVALID_TOPIC_NAME", `Invalid tenant/namespace in topic name ${JSON.stringify(name)}: each is 1-64 characters of [a-zA-Z0-9._-].`);
    }
  } else {
    throw new EdgelogError("INVALID_TOPIC_NAME", `Invalid topic name ${JSON.stringify(name)}: use "topic" or "tenant/namespace/topic".`);
  }
  if (!TOPIC_PART.test(topic) || topic === "." || topic === "..") {
    throw new EdgelogError("INVALID_TOPIC_NAME", `Invalid topic name ${JSON.stringify(topic)}: 1-249 characters of [a-zA-Z0-9._-], not "." or "..".`);
  }
  return { tenant, namespace, topic, full: `${tenant}/${namespace}/${topic}` };
}
