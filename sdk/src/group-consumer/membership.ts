/**
 * Group membership: the member id and epoch, the heartbeat loop, and the coordinator calls
 * that carry the epoch (heartbeat, commit, leave), one at a time so each uses the epoch of the
 * latest answer (KIP-848 ConsumerGroupHeartbeat; docs/PROTOCOL.md, "Consumer groups").
 *
 * It knows nothing of partitions: the runner registers {@link MembershipHooks} at construction
 * (what to report owned, what to do with an answer's assignment, what to do when fenced) and
 * calls in; news goes back only through those hooks.
 */
import type { ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, OffsetCommitResponse, TopicPartitions } from "../../../src/protocol/index.ts";
import type { TopicPartitionOffset } from "../consumer.ts";
import { EdgelogClientError } from "../errors.ts";
import { backoffMs } from "../retry.ts";
import type { GroupsApi, MembershipSettings } from "./types.ts";

/** While the group is reconciling, heartbeat at least this often (ms) so partitions move quickly. */
export const RECONCILING_HEARTBEAT_MS = 200;

/** How membership reports upward; registered once, by the runner. */
export interface MembershipHooks {
  /** What the next heartbeat reports owned (built when it is sent). */
  ownedPartitions(): TopicPartitions[];
  /** A heartbeat answer arrived with this assignment. @returns whether the member owns exactly it now */
  onAssignment(assignment: readonly TopicPartitions[]): boolean;
  /** Fenced, removed, or a whole session without an answer: the partitions are gone. Calls {@link Membership.reset}. */
  onLost(): Promise<void>;
  onError(error: unknown): void;
}

/** The subscription a joining heartbeat sends (full topic names; a regex source or null). */
export interface Subscription {
  topics: readonly string[];
  pattern: string | null;
}

/** Refused because this member's epoch is stale or the coordinator removed it. */
export function isFencing(e: unknown): boolean {
  return e instanceof EdgelogClientError && (e.code === "FENCED_MEMBER_EPOCH" || e.code === "UNKNOWN_MEMBER_ID");
}

export class Membership {
  readonly #api: GroupsApi;
  readonly #settings: MembershipSettings;
  readonly #hooks: MembershipHooks;
  #memberId: string;
  #epoch = 0;
  #heartbeatIntervalMs = 3000;
  #lastHeartbeatOkMs = 0;
  #stable = false;
  #subscription: Subscription = { topics: [], pattern: null };
  #running = false;
  #queue: Promise<unknown> = Promise.resolve();
  #loop: Promise<void> | null = null;
  /** The heartbeat queued or in flight, until its answer is applied. */
  #pending: Promise<void> | null = null;
  #wake: (() => void) | null = null;

  constructor(api: GroupsApi, settings: MembershipSettings, memberId: string, hooks: MembershipHooks) {
    this.#api = api;
    this.#settings = settings;
    this.#memberId = memberId;
    this.#hooks = hooks;
  }

  get memberId(): string {
    return this.#memberId;
  }

  get epoch(): number {
    return this.#epoch;
  }

  /** The heartbeat queued or in flight, if any: its answer may revoke what is being taken. */
  get pendingHeartbeat(): Promise<void> | null {
    return this.#pending;
  }

  /** Starts the heartbeat loop (the first heartbeat joins, with epoch 0). */
  start(subscription: Subscription): void {
    this.#subscription = subscription;
    this.#running = true;
    this.#loop = this.#heartbeats();
  }

  /** Stops the heartbeat loop; resolves once it has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
  }

  /** Sends the next heartbeat now (to report a release at once, or find out about fencing). */
  wake(): void {
    this.#wake?.();
  }

  /** Back to joining: epoch 0, same member id (the partitions were lost). */
  reset(): void {
    this.#epoch = 0;
    this.#stable = false;
  }

  /** Commits offsets (full topic names) with the current epoch. @throws EdgelogClientError */
  commit(offsets: readonly TopicPartitionOffset[]): Promise<OffsetCommitResponse> {
    return this.#serial(() =>
      this.#api.commitOffsets(this.#settings.groupId, {
        memberId: this.#memberId,
        memberEpoch: this.#epoch,
        offsets: offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset })),
      }),
    );
  }

  /**
   * Leaves the group if joined (a static member leaves temporarily), then forgets the epoch.
   * Fencing is not an error here: the coordinator has already removed the member.
   */
  async leave(): Promise<void> {
    if (this.#epoch > 0) {
      try {
        await this.#serial(() => this.#api.leaveGroup(this.#settings.groupId, { memberId: this.#memberId, memberEpoch: this.#epoch, temporary: this.#settings.instanceId !== undefined }));
      } catch (e) {
        if (!isFencing(e)) this.#hooks.onError(e);
      }
    }
    this.#epoch = 0;
  }

  async #heartbeats(): Promise<void> {
    let failures = 0;
    while (this.#running) {
      let waitMs: number;
      try {
        this.#pending = this.#heartbeat();
        await this.#pending;
        failures = 0;
        waitMs = this.#stable ? this.#heartbeatIntervalMs : Math.min(this.#heartbeatIntervalMs, RECONCILING_HEARTBEAT_MS);
      } catch (e) {
        if (isFencing(e)) {
          await this.#hooks.onLost();
          waitMs = 0;
        } else {
          this.#hooks.onError(e);
          waitMs = backoffMs(failures++, this.#settings.retryBackoffMs, this.#settings.maxRetryBackoffMs);
          // No answer for a whole session: the coordinator has removed us (Kafka's client does the same).
          if (this.#epoch > 0 && Date.now() - this.#lastHeartbeatOkMs > this.#settings.sessionTimeoutMs) await this.#hooks.onLost();
        }
      }
      if (!this.#running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#wake = null;
          resolve();
        }, waitMs);
        this.#wake = () => {
          clearTimeout(timer);
          this.#wake = null;
          resolve();
        };
      });
    }
  }

  async #heartbeat(): Promise<void> {
    // Built when sent (after the calls queued before it), so it reports what is owned then.
    const res: ConsumerGroupHeartbeatResponse = await this.#serial(() => this.#api.heartbeat(this.#settings.groupId, this.#request()));
    this.#memberId = res.memberId;
    this.#epoch = res.memberEpoch;
    this.#heartbeatIntervalMs = res.heartbeatIntervalMs;
    this.#lastHeartbeatOkMs = Date.now();
    const reconciled = this.#hooks.onAssignment(res.assignment);
    this.#stable = res.state === "stable" && reconciled;
  }

  #request(): ConsumerGroupHeartbeatRequest {
    const req: ConsumerGroupHeartbeatRequest = {
      memberId: this.#memberId,
      memberEpoch: this.#epoch,
      ownedPartitions: this.#hooks.ownedPartitions(),
      sessionTimeoutMs: this.#settings.sessionTimeoutMs,
    };
    if (this.#epoch === 0) {
      req.instanceId = this.#settings.instanceId ?? null;
      req.subscribedTopicNames = [...this.#subscription.topics];
      req.subscribedTopicRegex = this.#subscription.pattern;
      req.rebalanceTimeoutMs = this.#settings.rebalanceTimeoutMs;
      req.assignor = this.#settings.assignor ?? null;
      req.clientId = this.#settings.clientId;
    }
    return req;
  }

  /** Runs coordinator calls one at a time, so each uses the member epoch of the latest answer. */
  #serial<T>(call: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(call, call);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}
