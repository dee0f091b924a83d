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
 */
import { replicaStubAt } from "../partition/rpc.ts";
import { destroyPartition, pushPartitionConfigs } from "../partition/replica-admin.ts";
import type { Env } from "../env.ts";
import type { LifecycleTask, MetadataAnswer, MetadataCommand } from "./commands.ts";

/** Proposes one metadata command and answers its result (an error result when it did not commit). */
export type ProposeMetadata = (c: MetadataCommand) => Promise<MetadataAnswer>;

/**
 * Runs `task` against the partition objects, then proposes `lifecycleDone` for it.
 * A `sync` whose topic was deleted meanwhile (`topicExists: false` in the answer) destroys
 * the partitions again: a slow runner's init after the delete's destroy must not leave
 * objects behind (partition objects are named by topic id, which is never reused).
 * @throws Error when a partition call fails or the done record does not commit: the task
 *   stays pending and is run again (by the sweep).
 */
export async function completeLifecycleTask(ns: Env["PARTITION"], task: LifecycleTask, propose: ProposeMetadata): Promise<void> {
  await runLifecycleTask(ns, task);
  const done = await propose({ type: "lifecycleDone", topicId: task.topicId, throughIndex: task.recordIndex });
  if (!done.ok) throw new Error(`recording lifecycleDone for topic id ${task.topicId} failed: ${done.code}`);
  if (task.action === "sync" && done.topicExists === false) {
    await runLifecycleTask(ns, { action: "destroy", topicId: task.topicId, name: task.name, partitions: task.partitions, recordIndex: task.recordIndex });
  }
}

/**
 * The partition calls of a task, all idempotent. `sync`: init [initFrom, partitions) with the
 * task's configs and (pushConfigs) `updateConfigs` on [0, initFrom); a partition already
 * destroyed is skipped. `destroy`: destroy [0, partitions).
 * @throws Error naming the first partition call that failed.
 */
export async function runLifecycleTask(ns: Env["PARTITION"], task: LifecycleTask): Promise<void> {
  const all = Array.from({ length: task.partitions }, (_, i) => i);
  if (task.action === "destroy") {
    const results = await Promise.all(all.map((p) => destroyPartition(ns, task.topicId, p)));
    const failed = results.find((r) => !r.ok);
    if (failed !== undefined && !failed.ok) throw new Error(`destroying a partition of ${task.name} failed: ${failed.code}`);
    return;
  }
  // Init may create the object: with the topic's replica.locations hint for r1 (docs/RAFT.md).
  const inits = all
    .slice(task.initFrom)
    .map((partition) => replicaStubAt(ns, task.topicId, partition, 0, task.configs).init({ topic: task.name, topicId: task.topicId, partition, configs: task.configs }));
  const pushes = task.pushConfigs ? all.slice(0, task.initFrom).map((p) => pushPartitionConfigs(ns, task.topicId, p, task.configs, task.recordIndex)) : [];
  const results = await Promise.all([...inits, ...pushes]);
  // UNKNOWN_TOPIC_OR_PARTITION: the partition was destroyed (the topic was deleted after this
  // task was read). Not a failure: the done record answers `topicExists: false` and the caller
  // destroys again.
  const failed = results.find((r) => !r.ok && r.code !== "UNKNOWN_TOPIC_OR_PARTITION");
  if (failed !== undefined && !failed.ok) throw new Error(`initialising or configuring a partition of ${task.name} failed: ${failed.code}`);
}
