/**
 * Partition lifecycle driven from committed metadata records (docs/RAFT.md, "Partition
 * lifecycle"): runs a {@link LifecycleTask} (initialise, push configs to, or destroy a topic's
 * partition objects) and then records `lifecycleDone` in the metadata log.
 *
 * Who runs it: the proposer right after its record commits (src/metadata/raft-store.ts), a
 * reader that meets a pending `sync` task (getTopic: no gateway routes to a partition before
 * its init), and the metadata leader's sweep (durable-objects/raft/metadata-machine.ts), which
 * completes what a proposer that crashed half-way left. Every step is idempotent, so running a
 * task twice, or after a crash in the middle, is harmless; KRaft gets the same property by
 * having brokers replay the metadata log.
 *
 * Replicated partitions (docs/RAFT.md "Partition placement"): each replica is initialised by the
 * task itself (r1..rf, `placed`), so a replica that is down does not stop the others: a majority
 * initialised forms the group and serves, and the task stays pending until the last one is done
 * (by the sweep, once it is back). Configs go to the placement's replicas and a destroy destroys
 * each replica of the placement by itself (r4, r5 after reassignments included).
 */
import { replicaStubAt } from "../partition/rpc.ts";
import { destroyPartition, destroyReplicas, pushPartitionConfigs } from "../partition/replica-admin.ts";
import { replicationFactorOf } from "../protocol/config.ts";
import type { Env } from "../env.ts";
import type { LifecycleTask, MetadataAnswer, MetadataCommand } from "./commands.ts";

/** Proposes one metadata command and answers its result (an error result when it did not commit). */
export type ProposeMetadata = (c: MetadataCommand) => Promise<MetadataAnswer>;

/**
 * A `sync` task whose replicated partitions were each initialised on a majority of their
 * replicas but not on all (a replica is down): the partitions serve, the task stays pending
 * (the leader's sweep completes it once the replica is back).
 */
export class LifecyclePartialError extends Error {
  /** True when every partition has a majority of its replicas initialised: routing to it works. */
  readonly routable: boolean;

  constructor(message: string, routable: boolean) {
    super(message);
    this.routable = routable;
  }
}

/**
 * Runs `task` against the partition objects, then proposes `lifecycleDone` for it.
 * A `sync` whose topic was deleted meanwhile (`topicExists: false` in the answer) destroys
 * the partitions again: a slow runner's init after the delete's destroy must not leave
 * objects behind (partition objects are named by topic id, which is never reused).
 * @throws Error when a partition call fails or the done record does not commit: the task
 *   stays pending and is run again (by the sweep); {@link LifecyclePartialError} when only some
 *   replicas could be initialised.
 */
export async function completeLifecycleTask(ns: Env["PARTITION"], task: LifecycleTask, propose: ProposeMetadata): Promise<void> {
  await runLifecycleTask(ns, task);
  const done = await propose({ type: "lifecycleDone", topicId: task.topicId, throughIndex: task.recordIndex });
  if (!done.ok) throw new Error(`recording lifecycleDone for topic id ${task.topicId} failed: ${done.code}`);
  if (task.action === "sync" && done.topicExists === false) {
    await runLifecycleTask(ns, {
      action: "destroy",
      topicId: task.topicId,
      name: task.name,
      partitions: task.partitions,
      recordIndex: task.recordIndex,
      ...(task.replicas === undefined ? {} : { replicas: task.replicas }),
    });
  }
}

/**
 * The partition calls of a task, all idempotent. `sync`: init [initFrom, partitions) with the
 * task's configs (replicated: each replica r1..rf by itself) and (pushConfigs) `updateConfigs`
 * on [0, initFrom) at the placement's replicas; a partition already destroyed is skipped.
 * `destroy`: destroy [0, partitions), every replica of the placement when the task names them.
 * @throws Error naming the first partition call that failed; {@link LifecyclePartialError} when
 *   the only failures are replicas of replicated partitions that a majority initialised.
 */
export async function runLifecycleTask(ns: Env["PARTITION"], task: LifecycleTask): Promise<void> {
  const all = Array.from({ length: task.partitions }, (_, i) => i);
  if (task.action === "destroy") {
    const results = await Promise.all(
      all.map((p) => {
        const ids = task.replicas?.[p];
        return ids === undefined ? destroyPartition(ns, task.topicId, p) : destroyReplicas(ns, task.topicId, p, ids);
      }),
    );
    const failed = results.find((r) => !r.ok);
    if (failed !== undefined && !failed.ok) throw new Error(`destroying a partition of ${task.name} failed: ${failed.code} ${failed.message}`);
    return;
  }
  const rf = replicationFactorOf(task.configs);
  const initOne = (partition: number, index: number) =>
    // Init may create the object: with the topic's replica.locations hint (docs/RAFT.md).
    replicaStubAt(ns, task.topicId, partition, index, task.configs).init({
      topic: task.name,
      topicId: task.topicId,
      partition,
      configs: task.configs,
      ...(rf > 1 ? { replica: `r${index + 1}`, placed: true } : {}),
    });
  let partial = 0;
  let unroutable = false;
  const inits = all.slice(task.initFrom).map(async (partition) => {
    if (rf === 1) return initOne(partition, 0);
    // Each replica by itself: one that is down (throws) does not stop the others.
    const outcomes = await Promise.allSettled(Array.from({ length: rf }, (_, i) => initOne(partition, i)));
    const refused = outcomes.find((o) => o.status === "fulfilled" && !o.value.ok);
    if (refused !== undefined && refused.status === "fulfilled") return refused.value;
    const done = outcomes.filter((o) => o.status === "fulfilled").length;
    if (done < rf) {
      partial++;
      if (done <= rf / 2) unroutable = true;
    }
    return { ok: true as const };
  });
  const pushes = task.pushConfigs ? all.slice(0, task.initFrom).map((p) => pushPartitionConfigs(ns, task.topicId, p, task.configs, task.recordIndex, task.replicas?.[p])) : [];
  const results = await Promise.all([...inits, ...pushes]);
  // UNKNOWN_TOPIC_OR_PARTITION: the partition was destroyed (the topic was deleted after this
  // task was read). Not a failure: the done record answers `topicExists: false` and the caller
  // destroys again.
  const failed = results.find((r) => !r.ok && r.code !== "UNKNOWN_TOPIC_OR_PARTITION");
  if (failed !== undefined && !failed.ok) throw new Error(`initialising or configuring a partition of ${task.name} failed: ${failed.code}`);
  if (partial > 0) {
    throw new LifecyclePartialError(`${partial} partition(s) of ${task.name} have a replica that did not answer its init (left to the metadata leader's sweep)`, !unroutable);
  }
}
