/**
 * Kafka topic names <-> Edgelog topic names. Kafka names have no `/`; Edgelog names are
 * `tenant/namespace/topic`. A bridge serves one namespace (default `public/default`, Pulsar's
 * convention and Edgelog's default): Kafka topic `orders` is Edgelog's `{namespace}/orders`,
 * and the bridge lists only that namespace's topics. Pure module.
 */

/** Kafka's topic name rule (Topic.java): 1-249 characters of [a-zA-Z0-9._-], not "." or "..". */
const KAFKA_TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;

export function isValidKafkaTopic(name: string): boolean {
  return KAFKA_TOPIC.test(name) && name !== "." && name !== "..";
}

/** Maps names of one Edgelog namespace. */
export class TopicNames {
  readonly namespace: string;
  readonly #prefix: string;

  /**
   * @param namespace `tenant/namespace` @default "public/default"
   * @throws TypeError when `namespace` is not two segments of [a-zA-Z0-9._-].
   */
  constructor(namespace = "public/default") {
    if (!/^[a-zA-Z0-9._-]{1,64}\/[a-zA-Z0-9._-]{1,64}$/.test(namespace)) throw new TypeError(`namespace must be "tenant/namespace", got ${JSON.stringify(namespace)}`);
    this.namespace = namespace;
    this.#prefix = `${namespace}/`;
  }

  /** The Edgelog full name of Kafka topic `name` (not validated: Edgelog answers INVALID_TOPIC_NAME). */
  toEdgelog(name: string): string {
    return this.#prefix + name;
  }

  /** The Kafka name of an Edgelog full name, or null when it lies outside this namespace. */
  toKafka(fullName: string): string | null {
    if (!fullName.startsWith(this.#prefix)) return null;
    const short = fullName.slice(this.#prefix.length);
    return short.includes("/") ? null : short;
  }
}
