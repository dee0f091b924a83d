/**
 * The group consumer's runner: reconciliation, the fetch loop, delivery to the handlers, and
 * commits. It owns the pure {@link OwnedPartitions} state and a {@link Membership}, whose hooks
 * it registers at construction; the {@link GroupConsumer} facade calls in.
 *
 * - reconciliation makes the owned set follow the assignment: for partitions to give up it
 *   waits for the message being processed (which counts as processed), commits their
 *   processed offsets, calls the `revoked` listeners and only then reports them released (so
 *   no partition has two consumers); new partitions it reports owned at once, fetches their
 *   committed offsets (`autoOffsetReset` when none), takes those still assigned once every
 *   earlier heartbeat is answered, and calls the `assigned` listeners;
 * - the fetch loop long-polls the owned, unpaused partitions (the assign-based
 *   {@link Consumer}) and hands records to `eachMessage` / `eachBatch`, one batch at a time.
 */
import type { AutoOffsetReset, TopicPartitions } from "../../../src/protocol/index.ts";
import type { EdgelogClient } from "../client.ts";
import { Consumer, type ConsumerRecord, type TopicPartition, type TopicPartitionOffset } from "../consumer.ts";
import { EdgelogClientError } from "../errors.ts";
import { backoffMs, sleep } from "../retry.ts";
import { isFencing, Membership, type Subscription } from "./membership.ts";
import { type DeliveryStart, displayTopic, OwnedPartitions, partitionKey, partitionsOf, type TopicPartitionsSelection } from "./owned.ts";
import type { Batch, GroupConsumerEvents, GroupsApi, MembershipSettings, RunOptions } from "./types.ts";

type RunSettings = Required<Omit<RunOptions, "eachMessage" | "eachBatch">> & Pick<RunOptions, "eachMessage" | "eachBatch">;

export class GroupRunner {
  readonly #api: GroupsApi;
  readonly #settings: MembershipSettings;
  readonly #inner: Consumer;
  readonly #owned = new OwnedPartitions();
  readonly #membership: Membership;
  #autoOffsetReset: AutoOffsetReset = "latest";

  #running = false;
  #run: RunSettings = { autoCommit: true, autoCommitIntervalMs: 5000, eachBatchAutoResolve: true };
  #fetchLoop: Promise<void> | null = null;
  #reconciling: Promise<void> | null = null;
  #reconcileAgain = false;
  #delivering: Promise<void> | null = null;
  #wakeFetch: (() => void) | null = null;
  #lastCommitMs = 0;
  #commitTimer: ReturnType<typeof setInterval> | null = null;
  #listeners: { [E in keyof GroupConsumerEvents]: GroupConsumerEvents[E][] } = { assigned: [], revoked: [], lost: [], commit: [], error: [] };

  constructor(client: EdgelogClient, api: GroupsApi, settings: MembershipSettings, memberId: string) {
    this.#api = api;
    this.#settings = settings;
    this.#inner = new Consumer(client, { autoOffsetReset: settings.autoOffsetReset, maxWaitMs: settings.maxWaitMs, maxRecords: settings.maxRecords });
    this.#membership = new Membership(api, settings, memberId, {
      ownedPartitions: () => this.#owned.wire(),
      onAssignment: (assignment) => this.#onAssignment(assignment),
      onLost: () => this.#lose(),
      onError: (e) => this.#emitError(e),
    });
  }

  get running(): boolean {
    return this.#running;
  }

  membership(): { memberId: string; memberEpoch: number } {
    return { memberId: this.#membership.memberId, memberEpoch: this.#membership.epoch };
  }

  assignment(): TopicPartition[] {
    return this.#owned.assignment();
  }

  paused(): TopicPartition[] {
    return this.#owned.paused();
  }

  on<E extends keyof GroupConsumerEvents>(event: E, listener: GroupConsumerEvents[E]): () => void {
    const list = this.#listeners[event] as GroupConsumerEvents[E][];
    list.push(listener);
    return () => {
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
    };
  }

  /** Joins and starts the loops. */
  start(run: RunOptions, subscription: Subscription, autoOffsetReset: AutoOffsetReset): void {
    this.#run = { ...this.#run, ...stripUndefined(run) };
    this.#autoOffsetReset = autoOffsetReset;
    this.#running = true;
    this.#lastCommitMs = Date.now();
    this.#membership.start(subscription);
    this.#fetchLoop = this.#fetches();
    if (this.#run.autoCommit) {
      this.#commitTimer = setInterval(() => void this.#autoCommit(), this.#run.autoCommitIntervalMs);
    }
  }

  /** Offsets with full topic names; none: every processed offset not yet committed. */
  async commitOffsets(offsets: readonly TopicPartitionOffset[] | undefined): Promise<void> {
    if (offsets === undefined) return this.#commitProcessed(null);
    await this.#commit(offsets);
  }

  pause(selection: readonly TopicPartitionsSelection[]): void {
    this.#owned.pause(this.#owned.select(selection));
    this.#applyAssignment();
  }

  resume(selection: readonly TopicPartitionsSelection[]): void {
    const resumed = this.#owned.resume(this.#owned.select(selection));
    this.#applyAssignment(resumed);
    this.#wakeFetch?.();
  }

  /**
   * Continues an owned partition (full topic name) from `offset`.
   * @throws Error if the partition is not owned; RangeError for a bad offset.
   */
  seek(target: TopicPartitionOffset, shownTopic: string): void {
    const k = partitionKey(target.topic, target.partition);
    if (this.#owned.get(k) === undefined) throw new Error(`Partition ${shownTopic}[${target.partition}] is not assigned to this consumer.`);
    const offset = Number(target.offset);
    if (!(Number.isSafeInteger(offset) && offset >= 0)) throw new RangeError(`offset must be a non-negative integer, got ${target.offset}`);
    this.#owned.reposition(k, offset);
    this.#applyAssignment([k]);
    this.#wakeFetch?.();
  }

  async disconnect(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    if (this.#commitTimer !== null) clearInterval(this.#commitTimer);
    const heartbeats = this.#membership.stop();
    this.#wakeFetch?.();
    await this.#fetchLoop;
    await heartbeats;
    await this.#reconciling;
    const owned = this.#owned.keys();
    if (owned.length > 0) {
      if (this.#run.autoCommit) await this.#commitProcessed(owned).catch((e) => this.#emitError(e));
      await this.#emit("revoked", partitionsOf(owned));
    }
    await this.#membership.leave();
    this.#owned.clearOwned();
    this.#inner.close();
  }

  // ---- reconciliation ----

  /** A heartbeat answer: the target changes; reconcile unless the owned set is already it. */
  #onAssignment(assignment: readonly TopicPartitions[]): boolean {
    this.#owned.setTarget(assignment);
    const same = this.#owned.sameAsTarget();
    if (!same) this.#kickReconcile();
    return same;
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
    const revoked = this.#owned.beginRevoke();
    if (revoked.length > 0) {
      await this.#delivering; // the message in progress finishes first
      if (this.#run.autoCommit) await this.#commitProcessed(revoked).catch((e) => this.#emitError(e));
      await this.#emit("revoked", partitionsOf(revoked));
      this.#owned.release(revoked);
      this.#applyAssignment();
      this.#membership.wake(); // report the release at once
    }
    if (!this.#running) return;
    // From now on heartbeats report them as owned, so the coordinator keeps them ours (pending
    // revocation if they move) until we release them. A heartbeat already sent may not list
    // them: its answer (which may revoke them, and then the coordinator considers them
    // released) is awaited before any is taken. HTTP calls are not ordered, so without that
    // wait the offsets could answer first and records of a partition already given to
    // another member would be processed.
    const added = this.#owned.beginAdd();
    if (added.length === 0) return;
    const byTopic = new Map<string, number[]>();
    for (const [, tp] of added) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
    const earlier = this.#membership.pendingHeartbeat?.catch(() => undefined);
    const addedKeys: string[] = [];
    let dropped = false;
    try {
      const [positions] = await Promise.all([
        this.#api.fetchOffsets(this.#settings.groupId, {
          topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
          autoOffsetReset: this.#autoOffsetReset,
        }),
        earlier,
      ]);
      for (const p of positions.partitions) {
        if (!this.#owned.canTake(p)) {
          dropped = true; // moved again meanwhile, or lost
          continue;
        }
        if (p.error !== undefined)
          this.#emitError(
            new EdgelogClientError(p.error.code as "OFFSET_OUT_OF_RANGE", p.error.message, { httpStatus: 200, details: { topic: displayTopic(p.topic), partition: p.partition } }),
          );
        addedKeys.push(this.#owned.take(p));
      }
    } finally {
      this.#owned.endAdd(added.map(([k]) => k));
    }
    if (dropped) this.#membership.wake(); // report the release at once
    this.#applyAssignment(addedKeys);
    this.#wakeFetch?.();
    await this.#emit("assigned", partitionsOf(addedKeys));
  }

  /** Fenced or removed: the partitions are gone; rejoin with epoch 0 (same member id). */
  async #lose(): Promise<void> {
    const lost = this.#owned.beginLose();
    await this.#delivering;
    this.#owned.clear();
    this.#applyAssignment();
    this.#membership.reset();
    if (lost.length > 0) await this.#emit("lost", partitionsOf(lost));
  }

  /** Points the fetcher at the owned, unpaused, positioned partitions; `reposition` keys get their processed offset. */
  #applyAssignment(reposition: readonly string[] = []): void {
    this.#inner.assign(this.#owned.active());
    for (const k of reposition) {
      const at = this.#owned.fetchPosition(k);
      if (at !== undefined) this.#inner.seek(at);
    }
  }

  // ---- fetching and delivery ----

  async #fetches(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      if (this.#inner.assignment().length === 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.#settings.maxWaitMs);
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
        await sleep(backoffMs(failures++, this.#settings.retryBackoffMs, this.#settings.maxRetryBackoffMs));
        continue;
      }
      if (records.length === 0 || !this.#running) continue;
      this.#delivering = this.#deliver(records);
      await this.#delivering;
      this.#delivering = null;
    }
  }

  async #deliver(records: ConsumerRecord[]): Promise<void> {
    // Per partition, in offset order; the state each partition had when the batch started.
    const groups = new Map<string, ConsumerRecord[]>();
    for (const r of records) {
      const k = partitionKey(r.topic, r.partition);
      const list = groups.get(k);
      if (list) list.push(r);
      else groups.set(k, [r]);
    }
    const starts = new Map<string, DeliveryStart | undefined>();
    for (const k of groups.keys()) starts.set(k, this.#owned.snapshot(k));
    const stale = (k: string): boolean => this.#owned.isStale(k, starts.get(k));
    const live = (k: string): boolean => !stale(k) && this.#running;
    const record = (k: string, next: number): void => this.#owned.markProcessed(k, starts.get(k), next);
    const pauseFn = (topic: string, partition: number) => () => {
      this.pause([{ topic, partitions: [partition] }]);
      return () => this.resume([{ topic, partitions: [partition] }]);
    };

    if (this.#run.eachMessage !== undefined) {
      const each = this.#run.eachMessage;
      for (const r of records) {
        const k = partitionKey(r.topic, r.partition);
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
          uncommittedOffsets: () => this.#owned.uncommitted(),
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
    if (!this.#owned.reposition(k, offset)) return;
    this.#applyAssignment([k]);
    await sleep(this.#settings.retryBackoffMs);
  }

  // ---- commits ----

  async #autoCommit(): Promise<void> {
    if (!this.#run.autoCommit || Date.now() - this.#lastCommitMs < this.#run.autoCommitIntervalMs - 5) return;
    await this.#commitProcessed(null).catch((e) => this.#emitError(e));
  }

  async #commitProcessed(keys: readonly string[] | null): Promise<void> {
    this.#lastCommitMs = Date.now();
    const offsets = this.#owned.uncommitted(keys);
    if (offsets.length > 0) await this.#commit(offsets);
  }

  async #commit(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    try {
      await this.#membership.commit(offsets);
    } catch (e) {
      if (isFencing(e)) this.#membership.wake(); // the next heartbeat finds out and rejoins
      throw e;
    }
    this.#owned.markCommitted(offsets);
    const shown = offsets.map((o) => ({ topic: displayTopic(o.topic), partition: o.partition, offset: o.offset }));
    for (const l of this.#listeners.commit) l(shown);
  }

  // ---- events ----

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
      console.error(`edgelog group consumer ${this.#settings.groupId}:`, e);
      return;
    }
    for (const l of this.#listeners.error) l(e);
  }
}

/** The defined properties of `o`. */
export function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
