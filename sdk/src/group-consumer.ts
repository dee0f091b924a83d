/**
 * The group consumer: kafkajs's consumer shape (`subscribe`, `run({eachMessage | eachBatch})`,
 * `commitOffsets`, `pause` / `resume`, `seek`, `disconnect`) over Edgelog's KIP-848-style
 * consumer-group protocol (docs/PROTOCOL.md, "Consumer groups").
 *
 * Three loops run while the consumer is running:
 * - the heartbeat loop sends a heartbeat every `heartbeatIntervalMs` the coordinator asks for
 *   (sooner while the group is reconciling) reporting the partitions owned; each answer carries
 *   the assignment the member may own now;
 * - reconciliation makes the owned set follow that assignment: for partitions to give up it
 *   waits for the message being processed (which counts as processed), commits their
 *   processed offsets, calls the `revoked` listeners and only then reports them released (so
 *   no partition has two consumers); new partitions it reports owned at once, fetches their
 *   committed offsets (`autoOffsetReset` when none), takes those still assigned once every
 *   earlier heartbeat is answered, and calls the `assigned` listeners;
 * - the fetch loop long-polls the owned, unpaused partitions (the assign-based
 *   {@link Consumer}) and hands records to `eachMessage` / `eachBatch`, one batch at a time.
 *
 * Delivery is at-least-once: an offset is committed (auto-commit every `autoCommitIntervalMs`,
 * on revocation and on `disconnect`, or by `commitOffsets`) only after its message was
 * processed; after a crash the records processed since the last commit are delivered again.
 * A failing handler is retried from the failed message after a backoff.
 *
 * Topic names handed to the application are short (`orders`) for topics in `public/default`,
 * else full (`tenant/namespace/topic`); every method accepts either form.
 */
import {
  type AssignorName,
  type AutoOffsetReset,
  type ConsumerGroupHeartbeatRequest,
  type ConsumerGroupHeartbeatResponse,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type OffsetCommitRequest,
  type OffsetCommitResponse,
  type OffsetFetchRequest,
  type OffsetFetchResponse,
  type TopicPartitions,
  AUTO_OFFSET_RESETS,
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  parseTopicName,
} from "../../src/protocol/index.ts";
import type { CallOptions, EdgelogClient } from "./client.ts";
import { Consumer, type ConsumerRecord, type TopicPartition, type TopicPartitionOffset } from "./consumer.ts";
import { EdgelogClientError } from "./errors.ts";
import { backoffMs, sleep } from "./retry.ts";

/** The consumer-group routes the group consumer needs (implemented by {@link EdgelogClient}). */
export interface GroupsApi {
  heartbeat(groupId: string, request: ConsumerGroupHeartbeatRequest, options?: CallOptions): Promise<ConsumerGroupHeartbeatResponse>;
  leaveGroup(groupId: string, request: LeaveGroupRequest, options?: CallOptions): Promise<LeaveGroupResponse>;
  commitOffsets(groupId: string, request: OffsetCommitRequest, options?: CallOptions): Promise<OffsetCommitResponse>;
  fetchOffsets(groupId: string, request: OffsetFetchRequest, options?: CallOptions): Promise<OffsetFetchResponse>;
}

/** Settings of {@link GroupConsumer} (Kafka consumer config names in parentheses). */
export interface GroupConsumerOptions {
  /** (group.id) */
  groupId: string;
  /** Static membership (group.instance.id): a restart within the session timeout keeps the partitions. */
  instanceId?: string;
  /** (session.timeout.ms) @default 45000 */
  sessionTimeoutMs?: number;
  /** How long a revocation may take before the coordinator removes the member (max.poll.interval.ms). @default 300000 */
  rebalanceTimeoutMs?: number;
  /** Server-side assignor, used if this member creates the group. @default the group's, else "cooperative-sticky" */
  assignor?: AssignorName;
  /** (auto.offset.reset) Where to start without a committed offset; `subscribe({fromBeginning: true})` sets "earliest". @default "latest" */
  autoOffsetReset?: AutoOffsetReset;
  /** Long-poll of each fetch, in ms (fetch.max.wait.ms). @default 500 */
  maxWaitMs?: number;
  /** Most records per fetch round (max.poll.records). @default 500 */
  maxRecords?: number;
  /** (client.id) shown by describe. @default "" */
  clientId?: string;
  /** Member id to propose (KIP-1082): makes join retries idempotent. @default a random UUID */
  memberId?: string;
  /** First backoff after a failed call or handler, in ms; doubles up to maxRetryBackoffMs, ±20% jitter. @default 100 */
  retryBackoffMs?: number;
  /** @default 5000 */
  maxRetryBackoffMs?: number;
}

export const GROUP_CONSUMER_DEFAULTS = {
  sessionTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS,
  rebalanceTimeoutMs: DEFAULT_REBALANCE_TIMEOUT_MS,
  autoOffsetReset: "latest",
  maxWaitMs: 500,
  maxRecords: 500,
  clientId: "",
  retryBackoffMs: 100,
  maxRetryBackoffMs: 5000,
} as const;

/** While the group is reconciling, heartbeat at least this often (ms) so partitions move quickly. */
export const RECONCILING_HEARTBEAT_MS = 200;

/** Argument of {@link GroupConsumer.subscribe} (kafkajs: `{topics, fromBeginning}`). */
export interface SubscribeOptions {
  /**
   * Topic names; a RegExp element is a pattern subscription (kafkajs style). The coordinator
   * matches its `source` with RE2 syntax (no backreferences or lookaround; flags are ignored:
   * write `(?i)` inside the pattern instead).
   */
  topics?: readonly (string | RegExp)[];
  topic?: string | RegExp;
  /**
   * Regular expression matched against whole topic names (short for `public/default`, or full),
   * in RE2 syntax (docs/PROTOCOL.md); a string is sent as is. A pattern the coordinator cannot
   * compile fails the first heartbeat with INVALID_REGULAR_EXPRESSION.
   */
  pattern?: string | RegExp;
  /** Start at the log start when the group has no committed offset (autoOffsetReset "earliest"). */
  fromBeginning?: boolean;
}

/** Argument of `eachMessage`. */
export interface EachMessagePayload {
  topic: string;
  partition: number;
  message: ConsumerRecord;
  /** Heartbeats run on their own loop; kept for kafkajs compatibility. */
  heartbeat(): Promise<void>;
  /** Pauses this partition (the rest of the current batch of it is not delivered). */
  pause(): () => void;
}

export interface Batch {
  topic: string;
  partition: number;
  /** In offset order. */
  messages: ConsumerRecord[];
  highWatermark: number | undefined;
  firstOffset(): number | null;
  lastOffset(): number;
  /** highWatermark - 1 - last offset of the batch (kafkajs offsetLag). */
  offsetLag(): number;
}

/** Argument of `eachBatch`. */
export interface EachBatchPayload {
  batch: Batch;
  /** Marks `offset` processed: it is committed (as `offset + 1`) by the next commit. */
  resolveOffset(offset: number): void;
  heartbeat(): Promise<void>;
  /** Commits processed offsets now if the auto-commit interval has elapsed. */
  commitOffsetsIfNecessary(): Promise<void>;
  /** Processed but not yet committed offsets (next offset to read) of owned partitions. */
  uncommittedOffsets(): TopicPartitionOffset[];
  isRunning(): boolean;
  /** True once the partition was revoked, lost, paused or seeked: stop processing this batch. */
  isStale(): boolean;
  pause(): () => void;
}

export interface RunOptions {
  eachMessage?: (payload: EachMessagePayload) => Promise<void>;
  eachBatch?: (payload: EachBatchPayload) => Promise<void>;
  /** @default true */
  autoCommit?: boolean;
  /** (auto.commit.interval.ms) @default 5000 */
  autoCommitIntervalMs?: number;
  /**
   * Resolve every message of a batch when eachBatch resolves, unless the batch went stale
   * meanwhile (then only what the handler resolved counts). A handler that stops early on
   * `!isRunning()` must resolve what it processed itself (kafkajs's contract). @default true
   */
  eachBatchAutoResolve?: boolean;
}

/** Topics with partition lists, as pause / resume take them (kafkajs). */
export interface TopicPartitionsSelection {
  topic: string;
  /** @default every owned partition of the topic */
  partitions?: number[];
}

/**
 * Events. Listeners of `assigned`, `revoked` and `lost` (Kafka's ConsumerRebalanceListener) are
 * awaited: a `revoked` listener runs before the partitions are released (commit there), a
 * `lost` listener after they were taken away (do not commit: the commit would be refused).
 */
export interface GroupConsumerEvents {
  assigned: (partitions: TopicPartition[]) => void | Promise<void>;
  revoked: (partitions: TopicPartition[]) => void | Promise<void>;
  lost: (partitions: TopicPartition[]) => void | Promise<void>;
  commit: (offsets: TopicPartitionOffset[]) => void;
  error: (error: unknown) => void;
}

interface Owned {
  /** Full topic name. */
  topic: string;
  partition: number;
  /** Next offset to commit: one past the last processed message. */
  processed: number | undefined;
  committed: number | undefined;
  /** No start position (autoOffsetReset "none" without a valid committed offset): waits for seek(). */
  needsSeek: boolean;
  /**
   * Bumped by seek, pause, revocation, a handler failure: a delivery in progress of this
   * partition stops after the message being processed (which still counts as processed).
   */
  generation: number;
  /**
   * Bumped whenever `processed` is set other than by delivery (seek, a handler failure): the
   * message in progress then does not move `processed` when it finishes.
   */
  position: number;
  /** Being revoked or lost: nothing more of it is delivered. */
  revoking: boolean;
}

const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

const DEFAULT_PREFIX = "public/default/";

/** The name shown to the application: short for `public/default`, else full. */
export function displayTopic(full: string): string {
  return full.startsWith(DEFAULT_PREFIX) ? full.slice(DEFAULT_PREFIX.length) : full;
}

function fullTopic(name: string): string {
  return parseTopicName(name).full;
}

/**
 * A consumer-group member. Create it with an {@link EdgelogClient}, `subscribe`, then `run`.
 * `disconnect()` commits what was processed, calls the `revoked` listeners and leaves the group.
 */
export class GroupConsumer {
  readonly #client: EdgelogClient;
  readonly #api: GroupsApi;
  readonly #opts: Required<Omit<GroupConsumerOptions, "instanceId" | "assignor" | "memberId">> & Pick<GroupConsumerOptions, "instanceId" | "assignor">;
  readonly #inner: Consumer;
  #topics: string[] = [];
  #pattern: string | null = null;
  #autoOffsetReset: AutoOffsetReset;

  // membership
  #memberId: string;
  #epoch = 0;
  #heartbeatIntervalMs = 3000;
  #lastHeartbeatOkMs = 0;
  #stable = false;
  /** Latest assignment answered by the coordinator (keys). */
  #target = new Map<string, TopicPartition>();
  #owned = new Map<string, Owned>();
  /**
   * Partitions of the target being taken (their offsets are being fetched). Heartbeats report
   * them as owned: records of them may be delivered as soon as the fetch answers, so until
   * they are dropped the coordinator must not consider them released (KIP-848: a member owns a
   * partition from the moment it accepts it, before its position is known).
   */
  #adding = new Map<string, TopicPartition>();
  #paused = new Set<string>();

  // loops
  #running = false;
  #run: Required<Omit<RunOptions, "eachMessage" | "eachBatch">> & Pick<RunOptions, "eachMessage" | "eachBatch"> = {
    autoCommit: true,
    autoCommitIntervalMs: 5000,
    eachBatchAutoResolve: true,
  };
  #queue: Promise<unknown> = Promise.resolve();
  #heartbeatLoop: Promise<void> | null = null;
  /** The heartbeat queued or in flight, until its answer is applied. */
  #pendingHeartbeat: Promise<void> | null = null;
  #fetchLoop: Promise<void> | null = null;
  #reconciling: Promise<void> | null = null;
  #reconcileAgain = false;
  #delivering: Promise<void> | null = null;
  #wakeHeartbeat: (() => void) | null = null;
  #wakeFetch: (() => void) | null = null;
  #lastCommitMs = 0;
  #commitTimer: ReturnType<typeof setInterval> | null = null;
  #listeners: { [E in keyof GroupConsumerEvents]: GroupConsumerEvents[E][] } = { assigned: [], revoked: [], lost: [], commit: [], error: [] };

  /**
   * @param client the HTTP client (records are fetched through it)
   * @param api the consumer-group routes @default client
   * @throws RangeError for an invalid option
   */
  constructor(client: EdgelogClient, options: GroupConsumerOptions, api?: GroupsApi) {
    this.#client = client;
    this.#api = api ?? client;
    if (typeof options.groupId !== "string" || options.groupId === "") throw new RangeError("groupId is required");
    const o = { ...GROUP_CONSUMER_DEFAULTS, ...stripUndefined(options), groupId: options.groupId };
    if (!AUTO_OFFSET_RESETS.includes(o.autoOffsetReset)) throw new RangeError("autoOffsetReset must be earliest | latest | none");
    this.#opts = o;
    this.#autoOffsetReset = o.autoOffsetReset;
    this.#memberId = options.memberId ?? crypto.randomUUID();
    this.#inner = new Consumer(client, { autoOffsetReset: o.autoOffsetReset, maxWaitMs: o.maxWaitMs, maxRecords: o.maxRecords });
  }

  /** kafkajs compatibility: nothing to open (HTTP). */
  async connect(): Promise<void> {}

  /**
   * Adds topics or a pattern to the subscription. Call before `run()`.
   * @throws Error when already running; EdgelogError INVALID_TOPIC_NAME for a bad name.
   */
  async subscribe(s: SubscribeOptions): Promise<void> {
    if (this.#running) throw new Error("subscribe() must be called before run()");
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

  on<E extends keyof GroupConsumerEvents>(event: E, listener: GroupConsumerEvents[E]): () => void {
    const list = this.#listeners[event] as GroupConsumerEvents[E][];
    list.push(listener);
    return () => {
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
    };
  }

  /** Joins the group and starts consuming. Resolves once started (kafkajs). */
  async run(options: RunOptions): Promise<void> {
    if (this.#running) throw new Error("already running");
    if ((options.eachMessage === undefined) === (options.eachBatch === undefined)) throw new Error("run() needs exactly one of eachMessage or eachBatch");
    if (this.#topics.length === 0 && this.#pattern === null) throw new Error("subscribe() first");
    this.#run = { ...this.#run, ...stripUndefined(options) };
    this.#running = true;
    this.#lastCommitMs = Date.now();
    this.#heartbeatLoop = this.#heartbeats();
    this.#fetchLoop = this.#fetches();
    if (this.#run.autoCommit) {
      this.#commitTimer = setInterval(() => void this.#autoCommit(), this.#run.autoCommitIntervalMs);
    }
  }

  /** The member id and epoch (for logs and tests). */
  membership(): { memberId: string; memberEpoch: number } {
    return { memberId: this.#memberId, memberEpoch: this.#epoch };
  }

  /** The partitions owned now. */
  assignment(): TopicPartition[] {
    return [...this.#owned.values()].map((o) => ({ topic: displayTopic(o.topic), partition: o.partition }));
  }

  /**
   * Commits offsets now (the next offset to read, kafkajs semantics), for owned partitions.
   * Without an argument, commits every processed offset not yet committed.
   * Errors: STALE_MEMBER_EPOCH / UNASSIGNED_PARTITION when the partition moved meanwhile.
   */
  async commitOffsets(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets === undefined) return this.#commitProcessed(null);
    const list = offsets.map((o) => ({ topic: fullTopic(o.topic), partition: o.partition, offset: Number(o.offset) }));
    await this.#commit(list);
  }

  /** Stops fetching these partitions until resume(); positions are kept. */
  pause(selection: readonly TopicPartitionsSelection[]): void {
    for (const k of this.#select(selection)) {
      this.#paused.add(k);
      const o = this.#owned.get(k);
      if (o) o.generation++;
    }
    this.#applyAssignment();
  }

  resume(selection: readonly TopicPartitionsSelection[]): void {
    const resumed = this.#select(selection).filter((k) => this.#paused.delete(k));
    this.#applyAssignment(resumed);
    this.#wakeFetch?.();
  }

  paused(): TopicPartition[] {
    return [...this.#paused].map((k) => {
      const o = this.#owned.get(k);
      return o ? { topic: displayTopic(o.topic), partition: o.partition } : null;
    }).filter((x): x is TopicPartition => x !== null);
  }

  /**
   * Continues an owned partition from `offset` (also committed by the next commit).
   * @throws Error if the partition is not owned.
   */
  seek(target: TopicPartitionOffset): void {
    const k = key(fullTopic(target.topic), target.partition);
    const o = this.#owned.get(k);
    if (o === undefined) throw new Error(`Partition ${target.topic}[${target.partition}] is not assigned to this consumer.`);
    const offset = Number(target.offset);
    if (!(Number.isSafeInteger(offset) && offset >= 0)) throw new RangeError(`offset must be a non-negative integer, got ${target.offset}`);
    o.processed = offset;
    o.needsSeek = false;
    o.generation++;
    o.position++;
    this.#applyAssignment([k]);
    this.#wakeFetch?.();
  }

  /**
   * Stops consuming: waits for the message being processed, commits processed offsets
   * (auto-commit), calls the `revoked` listeners and leaves the group (a static member leaves
   * temporarily, keeping its partitions for a restart within its session timeout).
   */
  async disconnect(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    if (this.#commitTimer !== null) clearInterval(this.#commitTimer);
    this.#wakeHeartbeat?.();
    this.#wakeFetch?.();
    await this.#fetchLoop;
    await this.#heartbeatLoop;
    await this.#reconciling;
    const owned = [...this.#owned.keys()];
    if (owned.length > 0) {
      if (this.#run.autoCommit) await this.#commitProcessed(owned).catch((e) => this.#emitError(e));
      await this.#emit("revoked", this.#partitionsOf(owned));
    }
    if (this.#epoch > 0) {
      try {
        await this.#serial(() =>
          this.#api.leaveGroup(this.#opts.groupId, { memberId: this.#memberId, memberEpoch: this.#epoch, temporary: this.#opts.instanceId !== undefined }),
        );
      } catch (e) {
        if (!isFencing(e)) this.#emitError(e);
      }
    }
    this.#owned.clear();
    this.#inner.close();
    this.#epoch = 0;
  }

  // ---- heartbeats and reconciliation ----

  async #heartbeats(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      let waitMs: number;
      try {
        this.#pendingHeartbeat = this.#heartbeat();
        await this.#pendingHeartbeat;
        failures = 0;
        waitMs = this.#stable ? this.#heartbeatIntervalMs : Math.min(this.#heartbeatIntervalMs, RECONCILING_HEARTBEAT_MS);
      } catch (e) {
        if (isFencing(e)) {
          await this.#lose();
          waitMs = 0;
        } else {
          this.#emitError(e);
          waitMs = backoffMs(failures++, this.#opts.retryBackoffMs, this.#opts.maxRetryBackoffMs);
          // No answer for a whole session: the coordinator has removed us (Kafka's client does the same).
          if (this.#epoch > 0 && Date.now() - this.#lastHeartbeatOkMs > this.#opts.sessionTimeoutMs) await this.#lose();
        }
      }
      if (!this.#running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#wakeHeartbeat = null;
          resolve();
        }, waitMs);
        this.#wakeHeartbeat = () => {
          clearTimeout(timer);
          this.#wakeHeartbeat = null;
          resolve();
        };
      });
    }
  }

  async #heartbeat(): Promise<void> {
    // Built when sent (after the calls queued before it), so it reports what is owned then.
    const res = await this.#serial(() => this.#api.heartbeat(this.#opts.groupId, this.#heartbeatRequest()));
    this.#memberId = res.memberId;
    this.#epoch = res.memberEpoch;
    this.#heartbeatIntervalMs = res.heartbeatIntervalMs;
    this.#lastHeartbeatOkMs = Date.now();
    this.#target = new Map();
    for (const tp of res.assignment) for (const p of tp.partitions) this.#target.set(key(tp.topic, p), { topic: tp.topic, partition: p });
    this.#stable = res.state === "stable" && this.#sameAsTarget();
    if (!this.#sameAsTarget()) this.#kickReconcile();
  }

  #heartbeatRequest(): ConsumerGroupHeartbeatRequest {
    const joining = this.#epoch === 0;
    const req: ConsumerGroupHeartbeatRequest = {
      memberId: this.#memberId,
      memberEpoch: this.#epoch,
      ownedPartitions: this.#ownedWire(),
      sessionTimeoutMs: this.#opts.sessionTimeoutMs,
    };
    if (joining) {
      req.instanceId = this.#opts.instanceId ?? null;
      req.subscribedTopicNames = this.#topics;
      req.subscribedTopicRegex = this.#pattern;
      req.rebalanceTimeoutMs = this.#opts.rebalanceTimeoutMs;
      req.assignor = this.#opts.assignor ?? null;
      req.clientId = this.#opts.clientId;
    }
    return req;
  }

  #sameAsTarget(): boolean {
    if (this.#target.size !== this.#owned.size) return false;
    for (const k of this.#target.keys()) if (!this.#owned.has(k)) return false;
    return true;
  }

  #kickReconcile(): void {
    if (this.#reconciling !== null) {
      this.#reconcileAgain = true;
      return;
    }
    this.#reconciling = (async () => {
      try {
        do {
          this.#reconcileAgain = false;
          await this.#reconcileOnce();
        } while (this.#reconcileAgain && this.#running);
      } catch (e) {
        this.#emitError(e);
      } finally {
        this.#reconciling = null;
      }
    })();
  }

  async #reconcileOnce(): Promise<void> {
    const revoked = [...this.#owned.keys()].filter((k) => !this.#target.has(k));
    if (revoked.length > 0) {
      for (const k of revoked) {
        const o = this.#owned.get(k) as Owned;
        o.generation++;
        o.revoking = true;
      }
      await this.#delivering; // the message in progress finishes first
      if (this.#run.autoCommit) await this.#commitProcessed(revoked).catch((e) => this.#emitError(e));
      await this.#emit("revoked", this.#partitionsOf(revoked));
      for (const k of revoked) {
        this.#owned.delete(k);
        this.#paused.delete(k);
      }
      this.#applyAssignment();
      this.#wakeHeartbeat?.(); // report the release at once
    }
    if (!this.#running) return;
    const added = [...this.#target.entries()].filter(([k]) => !this.#owned.has(k));
    if (added.length === 0) return;
    const byTopic = new Map<string, number[]>();
    for (const [, tp] of added) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
    // From now on heartbeats report them as owned, so the coordinator keeps them ours (pending
    // revocation if they move) until we release them. A heartbeat already sent may not list
    // them: its answer (which may revoke them, and then the coordinator considers them
    // released) is awaited before any is taken. HTTP calls are not ordered, so without that
    // wait the offsets could answer first and records of a partition already given to
    // another member would be processed.
    for (const [k, tp] of added) this.#adding.set(k, tp);
    const earlier = this.#pendingHeartbeat?.catch(() => undefined);
    const addedKeys: string[] = [];
    let dropped = false;
    try {
      const [positions] = await Promise.all([
        this.#api.fetchOffsets(this.#opts.groupId, {
          topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
          autoOffsetReset: this.#autoOffsetReset,
        }),
        earlier,
      ]);
      for (const p of positions.partitions) {
        const k = key(p.topic, p.partition);
        if (!this.#adding.has(k) || !this.#target.has(k) || this.#owned.has(k)) {
          dropped = true; // moved again meanwhile, or lost
          continue;
        }
        const needsSeek = p.offset === null;
        if (p.error !== undefined) this.#emitError(new EdgelogClientError(p.error.code as "OFFSET_OUT_OF_RANGE", p.error.message, { httpStatus: 200, details: { topic: displayTopic(p.topic), partition: p.partition } }));
        this.#owned.set(k, { topic: p.topic, partition: p.partition, processed: p.offset ?? undefined, committed: p.committedOffset ?? undefined, needsSeek, generation: 0, position: 0, revoking: false });
        addedKeys.push(k);
      }
    } finally {
      for (const [k] of added) this.#adding.delete(k);
    }
    if (dropped) this.#wakeHeartbeat?.(); // report the release at once
    this.#applyAssignment(addedKeys);
    this.#wakeFetch?.();
    await this.#emit("assigned", this.#partitionsOf(addedKeys));
  }

  /** Fenced or removed: the partitions are gone; rejoin with epoch 0 (same member id). */
  async #lose(): Promise<void> {
    const lost = [...this.#owned.keys()];
    for (const o of this.#owned.values()) {
      o.generation++;
      o.revoking = true;
    }
    await this.#delivering;
    this.#owned.clear();
    this.#adding.clear();
    this.#paused.clear();
    this.#target.clear();
    this.#applyAssignment();
    this.#epoch = 0;
    this.#stable = false;
    if (lost.length > 0) await this.#emit("lost", this.#partitionsOf(lost));
  }

  /** Points the fetcher at the owned, unpaused, positioned partitions; `reposition` keys get their processed offset. */
  #applyAssignment(reposition: readonly string[] = []): void {
    const active = [...this.#owned.entries()].filter(([k, o]) => !this.#paused.has(k) && !o.needsSeek && o.processed !== undefined);
    this.#inner.assign(active.map(([, o]) => ({ topic: o.topic, partition: o.partition })));
    for (const k of reposition) {
      const o = this.#owned.get(k);
      if (o !== undefined && !this.#paused.has(k) && !o.needsSeek && o.processed !== undefined) {
        this.#inner.seek({ topic: o.topic, partition: o.partition, offset: o.processed });
      }
    }
  }

  // ---- fetching and delivery ----

  async #fetches(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      if (this.#inner.assignment().length === 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.#opts.maxWaitMs);
          this.#wakeFetch = () => {
            clearTimeout(timer);
            this.#wakeFetch = null;
            resolve();
          };
        });
        continue;
      }
      let records: ConsumerRecord[];
      try {
        records = await this.#inner.poll();
        failures = 0;
      } catch (e) {
        this.#emitError(e);
        await sleep(backoffMs(failures++, this.#opts.retryBackoffMs, this.#opts.maxRetryBackoffMs));
        continue;
      }
      if (records.length === 0 || !this.#running) continue;
      this.#delivering = this.#deliver(records);
      await this.#delivering;
      this.#delivering = null;
    }
  }

  async #deliver(records: ConsumerRecord[]): Promise<void> {
    // Per partition, in offset order; the generation each partition had when the batch started.
    const groups = new Map<string, ConsumerRecord[]>();
    for (const r of records) {
      const k = key(r.topic, r.partition);
      const list = groups.get(k);
      if (list) list.push(r);
      else groups.set(k, [r]);
    }
    const gens = new Map<string, number>();
    const starts = new Map<string, { owned: Owned; position: number }>();
    for (const k of groups.keys()) {
      const o = this.#owned.get(k);
      if (o) {
        gens.set(k, o.generation);
        starts.set(k, { owned: o, position: o.position });
      }
    }
    // Stale: revoked, lost, paused or seeked since the batch started (what eachBatch's
    // isStale() reports). Live: not stale and the consumer still running.
    const stale = (k: string): boolean => {
      const o = this.#owned.get(k);
      return o === undefined || o.revoking || o.generation !== gens.get(k) || this.#paused.has(k);
    };
    const live = (k: string): boolean => !stale(k) && this.#running;
    // A finished handler moves `processed` even when the partition was paused or is being
    // revoked meanwhile: that message was processed, and a revocation commits it before the
    // partition goes to another member. Not when the position was set meanwhile (seek).
    const record = (k: string, next: number): void => {
      const start = starts.get(k);
      const o = this.#owned.get(k);
      if (o !== undefined && o === start?.owned && o.position === start.position) o.processed = next;
    };
    const pauseFn = (topic: string, partition: number) => () => {
      this.pause([{ topic, partitions: [partition] }]);
      return () => this.resume([{ topic, partitions: [partition] }]);
    };

    if (this.#run.eachMessage !== undefined) {
      const each = this.#run.eachMessage;
      for (const r of records) {
        const k = key(r.topic, r.partition);
        if (!live(k)) continue;
        const message: ConsumerRecord = { ...r, topic: displayTopic(r.topic) };
        try {
          await each({ topic: message.topic, partition: r.partition, message, heartbeat: async () => {}, pause: pauseFn(r.topic, r.partition) });
          record(k, r.offset + 1);
        } catch (e) {
          await this.#handlerFailed(k, r.offset, e);
        }
      }
      return;
    }

    const eachBatch = this.#run.eachBatch as NonNullable<RunOptions["eachBatch"]>;
    for (const [k, list] of groups) {
      if (!live(k)) continue;
      const first = list[0] as ConsumerRecord;
      const last = list[list.length - 1] as ConsumerRecord;
      let resolved: number | undefined;
      const hw = this.#inner.highWatermark({ topic: first.topic, partition: first.partition });
      const batch: Batch = {
        topic: displayTopic(first.topic),
        partition: first.partition,
        messages: list.map((r) => ({ ...r, topic: displayTopic(r.topic) })),
        highWatermark: hw,
        firstOffset: () => first.offset,
        lastOffset: () => last.offset,
        offsetLag: () => (hw === undefined ? 0 : Math.max(0, hw - 1 - last.offset)),
      };
      try {
        await eachBatch({
          batch,
          resolveOffset: (offset) => {
            resolved = Number(offset) + 1;
          },
          heartbeat: async () => {},
          commitOffsetsIfNecessary: () => this.#autoCommit(),
          uncommittedOffsets: () => this.#uncommitted(),
          isRunning: () => this.#running,
          isStale: () => stale(k),
          pause: pauseFn(first.topic, first.partition),
        });
        // The whole batch only if it did not go stale meanwhile (a handler told by isStale()
        // may have stopped early, and resolving its unprocessed records would lose them); what
        // it resolved counts either way. A stale batch's rest is redelivered: at-least-once.
        if (this.#run.eachBatchAutoResolve && !stale(k)) resolved = last.offset + 1;
        if (resolved !== undefined) record(k, resolved);
      } catch (e) {
        if (resolved !== undefined) record(k, resolved);
        await this.#handlerFailed(k, resolved ?? first.offset, e);
      }
    }
  }

  /** At-least-once: the partition goes back to the failed offset and is retried after a backoff. */
  async #handlerFailed(k: string, offset: number, e: unknown): Promise<void> {
    this.#emitError(e);
    const o = this.#owned.get(k);
    if (o === undefined) return;
    o.generation++;
    o.position++;
    o.processed = offset;
    this.#applyAssignment([k]);
    await sleep(this.#opts.retryBackoffMs);
  }

  // ---- commits ----

  async #autoCommit(): Promise<void> {
    if (!this.#run.autoCommit || Date.now() - this.#lastCommitMs < this.#run.autoCommitIntervalMs - 5) return;
    await this.#commitProcessed(null).catch((e) => this.#emitError(e));
  }

  #uncommitted(keys: readonly string[] | null = null): TopicPartitionOffset[] {
    const out: TopicPartitionOffset[] = [];
    for (const [k, o] of this.#owned) {
      if (keys !== null && !keys.includes(k)) continue;
      if (o.processed !== undefined && o.processed !== o.committed) out.push({ topic: o.topic, partition: o.partition, offset: o.processed });
    }
    return out;
  }

  async #commitProcessed(keys: readonly string[] | null): Promise<void> {
    this.#lastCommitMs = Date.now();
    const offsets = this.#uncommitted(keys);
    if (offsets.length > 0) await this.#commit(offsets);
  }

  async #commit(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    try {
      await this.#serial(() =>
        this.#api.commitOffsets(this.#opts.groupId, {
          memberId: this.#memberId,
          memberEpoch: this.#epoch,
          offsets: offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset })),
        }),
      );
    } catch (e) {
      if (isFencing(e)) this.#wakeHeartbeat?.(); // the next heartbeat finds out and rejoins
      throw e;
    }
    for (const o of offsets) {
      const owned = this.#owned.get(key(o.topic, o.partition));
      if (owned) owned.committed = o.offset;
    }
    const shown = offsets.map((o) => ({ topic: displayTopic(o.topic), partition: o.partition, offset: o.offset }));
    for (const l of this.#listeners.commit) l(shown);
  }

  // ---- helpers ----

  /** Runs coordinator calls one at a time, so each uses the member epoch of the latest answer. */
  #serial<T>(call: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(call, call);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** What heartbeats report owned: the owned partitions and those being taken. */
  #ownedWire(): TopicPartitions[] {
    const all = new Map<string, TopicPartition>(this.#adding);
    for (const [k, o] of this.#owned) all.set(k, o);
    const byTopic = new Map<string, number[]>();
    for (const o of all.values()) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), o.partition]);
    return [...byTopic].sort(([a], [b]) => (a < b ? -1 : 1)).map(([topic, ps]) => ({ topic, partitions: ps.sort((a, b) => a - b) }));
  }

  #select(selection: readonly TopicPartitionsSelection[]): string[] {
    const out: string[] = [];
    for (const s of selection) {
      const topic = fullTopic(s.topic);
      for (const o of this.#owned.values()) {
        if (o.topic === topic && (s.partitions === undefined || s.partitions.includes(o.partition))) out.push(key(o.topic, o.partition));
      }
    }
    return out;
  }

  #partitionsOf(keys: readonly string[]): TopicPartition[] {
    return keys.map((k) => {
      const i = k.lastIndexOf("\u0000");
      return { topic: displayTopic(k.slice(0, i)), partition: Number(k.slice(i + 1)) };
    });
  }

  async #emit(event: "assigned" | "revoked" | "lost", partitions: TopicPartition[]): Promise<void> {
    for (const l of this.#listeners[event]) {
      try {
        await l(partitions);
      } catch (e) {
        this.#emitError(e);
      }
    }
  }

  #emitError(e: unknown): void {
    if (this.#listeners.error.length === 0) {
      console.error(`edgelog group consumer ${this.#opts.groupId}:`, e);
      return;
    }
    for (const l of this.#listeners.error) l(e);
  }
}

function isFencing(e: unknown): boolean {
  return e instanceof EdgelogClientError && (e.code === "FENCED_MEMBER_EPOCH" || e.code === "UNKNOWN_MEMBER_ID");
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
