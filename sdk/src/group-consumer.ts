/**
 * The group consumer: kafkajs's consumer shape (`subscribe`, `run({eachMessage | eachBatch})`,
 * `commitOffsets`, `pause` / `resume`, `seek`, `disconnect`) over Edgelog's KIP-848-style
 * consumer-group protocol (docs/PROTOCOL.md, "Consumer groups").
 *
 * This file is the facade; the parts are in `group-consumer/`:
 * - `owned.ts`: the partitions owned, being added, paused and assigned: pure state;
 * - `membership.ts`: member id and epoch, the heartbeat loop (a heartbeat every
 *   `heartbeatIntervalMs` the coordinator asks for, sooner while the group is reconciling,
 *   reporting the partitions owned; each answer carries the assignment the member may own now),
 *   and the calls that carry the epoch;
 * - `runner.ts`: reconciliation (the owned set follows the assignment, revoking before
 *   releasing), the fetch loop and delivery to `eachMessage` / `eachBatch`, and commits.
 *
 * Delivery is at-least-once: an offset is committed (auto-commit every `autoCommitIntervalMs`,
 * on revocation and on `disconnect`, or by `commitOffsets`) only after its message was
 * processed; after a crash the records processed since the last commit are delivered again.
 * A failing handler is retried from the failed message after a backoff.
 *
 * Topic names handed to the application are short (`orders`) for topics in `public/default`,
 * else full (`tenant/namespace/topic`); every method accepts either form.
 */
import { type AutoOffsetReset, AUTO_OFFSET_RESETS } from "../../src/protocol/index.ts";
import type { EdgelogClient } from "./client.ts";
import type { TopicPartition, TopicPartitionOffset } from "./consumer.ts";
import { fullTopic, type TopicPartitionsSelection } from "./group-consumer/owned.ts";
import { GroupRunner, stripUndefined } from "./group-consumer/runner.ts";
import { GROUP_CONSUMER_DEFAULTS, type GroupConsumerEvents, type GroupConsumerOptions, type GroupsApi, type RunOptions, type SubscribeOptions } from "./group-consumer/types.ts";

export { RECONCILING_HEARTBEAT_MS } from "./group-consumer/membership.ts";
export { displayTopic, type TopicPartitionsSelection } from "./group-consumer/owned.ts";
export {
  type Batch,
  type EachBatchPayload,
  type EachMessagePayload,
  GROUP_CONSUMER_DEFAULTS,
  type GroupConsumerEvents,
  type GroupConsumerOptions,
  type GroupsApi,
  type RunOptions,
  type SubscribeOptions,
} from "./group-consumer/types.ts";

/**
 * A consumer-group member. Create it with an {@link EdgelogClient}, `subscribe`, then `run`.
 * `disconnect()` commits what was processed, calls the `revoked` listeners and leaves the group.
 */
export class GroupConsumer {
  readonly #runner: GroupRunner;
  #topics: string[] = [];
  #pattern: string | null = null;
  #autoOffsetReset: AutoOffsetReset;

  /**
   * @param client the HTTP client (records are fetched through it)
   * @param api the consumer-group routes @default client
   * @throws RangeError for an invalid option
   */
  constructor(client: EdgelogClient, options: GroupConsumerOptions, api?: GroupsApi) {
    if (typeof options.groupId !== "string" || options.groupId === "") throw new RangeError("groupId is required");
    const o = { ...GROUP_CONSUMER_DEFAULTS, ...stripUndefined(options), groupId: options.groupId };
    if (!AUTO_OFFSET_RESETS.includes(o.autoOffsetReset)) throw new RangeError("autoOffsetReset must be earliest | latest | none");
    this.#autoOffsetReset = o.autoOffsetReset;
    // crypto.randomUUID needs a secure context in browsers (https or localhost).
    this.#runner = new GroupRunner(client, api ?? client, o, options.memberId ?? crypto.randomUUID());
  }

  /** kafkajs compatibility: nothing to open (HTTP). */
  async connect(): Promise<void> {}

  /**
   * Adds topics or a pattern to the subscription. Call before `run()`.
   * @throws Error when already running; EdgelogError INVALID_TOPIC_NAME for a bad name.
   */
  async subscribe(s: SubscribeOptions): Promise<void> {
    if (this.#runner.running) throw new Error("subscribe() must be called before run()");
    const items: (string | RegExp)[] = [...(s.topics ?? []), ...(s.topic !== undefined ? [s.topic] : [])];
    const patterns: string[] = [];
    for (const item of items) {
      if (typeof item === "string") this.#topics.push(fullTopic(item));
      else patterns.push(item.source);
    }
    // A string pattern goes to the coordinator untouched: RE2 accepts syntax JavaScript rejects (`(?i)`).
    if (s.pattern !== undefined) patterns.push(s.pattern instanceof RegExp ? s.pattern.source : s.pattern);
    if (this.#pattern !== null) patterns.unshift(this.#pattern);
    // Several patterns: one alternation, each grouped so a flag like `(?i)` stays in its own branch.
    if (patterns.length > 0) this.#pattern = patterns.length === 1 ? patterns[0]! : patterns.map((p) => `(?:${p})`).join("|");
    if (s.fromBeginning === true) this.#autoOffsetReset = "earliest";
  }

  /** Adds a listener. @returns a function that removes it */
  on<E extends keyof GroupConsumerEvents>(event: E, listener: GroupConsumerEvents[E]): () => void {
    return this.#runner.on(event, listener);
  }

  /** Joins the group and starts consuming. Resolves once started (kafkajs). */
  async run(options: RunOptions): Promise<void> {
    if (this.#runner.running) throw new Error("already running");
    if ((options.eachMessage === undefined) === (options.eachBatch === undefined)) throw new Error("run() needs exactly one of eachMessage or eachBatch");
    if (this.#topics.length === 0 && this.#pattern === null) throw new Error("subscribe() first");
    this.#runner.start(options, { topics: this.#topics, pattern: this.#pattern }, this.#autoOffsetReset);
  }

  /** The member id and epoch (for logs and tests). */
  membership(): { memberId: string; memberEpoch: number } {
    return this.#runner.membership();
  }

  /** The partitions owned now. */
  assignment(): TopicPartition[] {
    return this.#runner.assignment();
  }

  /**
   * Commits offsets now (the next offset to read, kafkajs semantics), for owned partitions.
   * Without an argument, commits every processed offset not yet committed.
   * Errors: STALE_MEMBER_EPOCH / UNASSIGNED_PARTITION when the partition moved meanwhile.
   */
  async commitOffsets(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    await this.#runner.commitOffsets(offsets?.map((o) => ({ topic: fullTopic(o.topic), partition: o.partition, offset: Number(o.offset) })));
  }

  /** Stops fetching these partitions until resume(); positions are kept. */
  pause(selection: readonly TopicPartitionsSelection[]): void {
    this.#runner.pause(selection);
  }

  resume(selection: readonly TopicPartitionsSelection[]): void {
    this.#runner.resume(selection);
  }

  paused(): TopicPartition[] {
    return this.#runner.paused();
  }

  /**
   * Continues an owned partition from `offset` (also committed by the next commit).
   * @throws Error if the partition is not owned.
   */
  seek(target: TopicPartitionOffset): void {
    this.#runner.seek({ topic: fullTopic(target.topic), partition: target.partition, offset: target.offset }, target.topic);
  }

  /**
   * Stops consuming: waits for the message being processed, commits processed offsets
   * (auto-commit), calls the `revoked` listeners and leaves the group (a static member leaves
   * temporarily, keeping its partitions for a restart within its session timeout).
   */
  async disconnect(): Promise<void> {
    await this.#runner.disconnect();
  }
}
