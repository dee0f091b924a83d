/**
 * `metadata`: the cluster metadata as a replicated state machine (the KRaft-style metadata
 * quorum; docs/RAFT.md). Topics (name, id, partitions, configs, creation time) and the
 * producer-id block counter. Commands and answers: src/metadata/commands.ts. The applied index
 * of an answer is the metadata offset it reflects.
 *
 * Room `raft-metadata`: `rsm_topics` (the columns of MetadataDO's `topics`),
 * `rsm_counters(name PK, value)` (`next_producer_id`) and `rsm_lifecycle(topic_id PK, task,
 * record_index)`: the partition work committed records left to do (a {@link LifecycleTask} as
 * JSON; docs/RAFT.md, "Partition lifecycle"). The leader's sweep (`sweep`) completes what the
 * proposer did not.
 */
import { resolvePolicies } from "../../src/protocol/policies.ts";
import { encodeMetadataCommand, type LifecycleTask, type MetadataAnswer, type MetadataCommand, type MetadataQuery } from "../../src/metadata/commands.ts";
import { completeLifecycleTask } from "../../src/metadata/lifecycle.ts";
import { DEFAULT_TOPIC_CONFIGS } from "../../src/protocol/config.ts";
import type { TopicConfigs, TopicSummary } from "../../src/protocol/types.ts";
import type { JsonValue } from "../../src/raft/group.ts";
import type { Migration, Sql } from "../base.ts";
import type { CommittedCommand, ReplicatedStateMachine, SweepContext } from "./state-machine.ts";

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "metadata",
    up(sql) {
      sql.run(`
        CREATE TABLE rsm_topics (
          name TEXT PRIMARY KEY, tenant TEXT NOT NULL, namespace TEXT NOT NULL, topic TEXT NOT NULL,
          topic_id TEXT NOT NULL UNIQUE, partitions INTEGER NOT NULL, configs TEXT NOT NULL, created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE rsm_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 2,
    name: "lifecycle",
    up(sql) {
      sql.run("CREATE TABLE rsm_lifecycle (topic_id TEXT PRIMARY KEY, task TEXT NOT NULL, record_index INTEGER NOT NULL) WITHOUT ROWID");
    },
  },
];

type LifecycleRow = { topic_id: string; task: string; record_index: number };

type TopicRow = { name: string; tenant: string; namespace: string; topic: string; topic_id: string; partitions: number; configs: string; created_at: number };

const dec = new TextDecoder();
const enc = new TextEncoder();

function toSummary(r: TopicRow): TopicSummary {
  return {
    name: r.name,
    tenant: r.tenant,
    namespace: r.namespace,
    topic: r.topic,
    topicId: r.topic_id,
    partitions: r.partitions,
    configs: { ...DEFAULT_TOPIC_CONFIGS, ...(JSON.parse(r.configs) as Partial<TopicConfigs>) },
    createdAt: r.created_at,
    // The quorum does not carry tenants, namespaces or topic policies yet (docs/RAFT.md): defaults.
    policies: resolvePolicies({}, {}),
  };
}

const unknownTopic = (name: string): MetadataAnswer => ({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION", message: `Topic ${name} does not exist.`, details: { topic: name } });

export function metadataStateMachine(sql: Sql): ReplicatedStateMachine {
  /** Tasks pending at the last sweep (`${topicId}@${recordIndex}`), in memory: a new leader waits one sweep period first. */
  let sweepSeen = new Set<string>();
  const pendingTasks = (): LifecycleTask[] => sql.all<LifecycleRow>("SELECT * FROM rsm_lifecycle ORDER BY record_index").map((r) => JSON.parse(r.task) as LifecycleTask);
  const row = (name: string) => sql.first<TopicRow>("SELECT * FROM rsm_topics WHERE name = ?", name);
  const insert = (t: TopicSummary) =>
    sql.run(
      "INSERT INTO rsm_topics (name, tenant, namespace, topic, topic_id, partitions, configs, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      t.name,
      t.tenant,
      t.namespace,
      t.topic,
      t.topicId,
      t.partitions,
      JSON.stringify(t.configs),
      t.createdAt,
    );

  const taskOf = (topicId: string): LifecycleTask | undefined => {
    const r = sql.first<LifecycleRow>("SELECT * FROM rsm_lifecycle WHERE topic_id = ?", topicId);
    return r === undefined ? undefined : (JSON.parse(r.task) as LifecycleTask);
  };
  const setTask = (t: LifecycleTask): LifecycleTask => {
    sql.run(
      "INSERT INTO rsm_lifecycle (topic_id, task, record_index) VALUES (?, ?, ?) ON CONFLICT (topic_id) DO UPDATE SET task = excluded.task, record_index = excluded.record_index",
      t.topicId,
      JSON.stringify(t),
      t.recordIndex,
    );
    return t;
  };
  /** The topic's answer with its pending task, if any. */
  const withTask = (r: TopicRow): MetadataAnswer => {
    const task = taskOf(r.topic_id);
    return task === undefined ? { ok: true, topic: toSummary(r) } : { ok: true, topic: toSummary(r), task };
  };

  function apply(c: MetadataCommand, index: number): MetadataAnswer {
    switch (c.type) {
      case "createTopic": {
        const existing = row(c.topic.name);
        if (existing !== undefined) {
          // The same create again (a retry after an unknown outcome) is answered as it was.
          if (existing.topic_id === c.topic.topicId) return withTask(existing);
          return { ok: false, code: "TOPIC_ALREADY_EXISTS", message: `Topic ${c.topic.name} already exists.`, details: { topic: c.topic.name } };
        }
        insert(c.topic);
        // The record leaves its partitions to initialise: the durable marker, in the same apply.
        const t = c.topic;
        const task = setTask({ action: "sync", topicId: t.topicId, name: t.name, initFrom: 0, pushConfigs: false, partitions: t.partitions, configs: t.configs, recordIndex: index });
        return { ok: true, topic: toSummary(row(t.name)!), task };
      }
      case "alterTopic": {
        const r = row(c.name);
        if (r === undefined || r.topic_id !== c.topicId) return unknownTopic(c.name);
        if (c.partitions < r.partitions) {
          return {
            ok: false,
            code: "PARTITION_DECREASE_NOT_ALLOWED",
            message: `Topic ${c.name} has ${r.partitions} partitions; the count can only grow.`,
            details: { partitions: r.partitions },
          };
        }
        const configs = JSON.stringify(c.configs);
        sql.run("UPDATE rsm_topics SET partitions = ?, configs = ? WHERE name = ?", c.partitions, configs, c.name);
        // New partitions to initialise and/or new configs to push; merged with a task an
        // earlier record left unfinished (the union of both, at the newest values).
        const prev = taskOf(r.topic_id);
        const pending = prev?.action === "sync" ? prev : undefined;
        const initFrom = Math.min(pending?.initFrom ?? r.partitions, r.partitions);
        const pushConfigs = (pending?.pushConfigs ?? false) || configs !== r.configs;
        if (pending === undefined && initFrom === c.partitions && !pushConfigs) return { ok: true, topic: toSummary(row(c.name)!) };
        const task = setTask({ action: "sync", topicId: r.topic_id, name: c.name, initFrom, pushConfigs, partitions: c.partitions, configs: c.configs, recordIndex: index });
        return { ok: true, topic: toSummary(row(c.name)!), task };
      }
      case "deleteTopic": {
        const r = row(c.name);
        if (r === undefined || (c.topicId !== null && r.topic_id !== c.topicId)) return unknownTopic(c.name);
        sql.run("DELETE FROM rsm_topics WHERE name = ?", c.name);
        // Replaces an unfinished sync of the topic: destroying every partition covers it.
        const task = setTask({ action: "destroy", topicId: r.topic_id, name: r.name, partitions: r.partitions, recordIndex: index });
        return { ok: true, topic: toSummary(r), task };
      }
      case "lifecycleDone": {
        if (typeof c.topicId !== "string" || !Number.isSafeInteger(c.throughIndex)) return { ok: false, code: "INVALID_REQUEST", message: "lifecycleDone needs {topicId, throughIndex}." };
        sql.run("DELETE FROM rsm_lifecycle WHERE topic_id = ? AND record_index <= ?", c.topicId, c.throughIndex);
        const exists = sql.first<{ n: number }>("SELECT count(*) AS n FROM rsm_topics WHERE topic_id = ?", c.topicId)!.n > 0;
        return { ok: true, topicExists: exists };
      }
      case "allocateProducerIds": {
        const first = sql.first<{ value: number }>("SELECT value FROM rsm_counters WHERE name = 'next_producer_id'")?.value ?? 0;
        sql.run("INSERT INTO rsm_counters (name, value) VALUES ('next_producer_id', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", first + c.count);
        return { ok: true, firstProducerId: first, count: c.count };
      }
    }
  }

  return {
    name: "metadata",
    schema: { room: "raft-metadata", migrations: MIGRATIONS },
    apply(cmd: CommittedCommand): JsonValue {
      let c: MetadataCommand;
      try {
        c = JSON.parse(dec.decode(cmd.data)) as MetadataCommand;
      } catch {
        return { ok: false, code: "INVALID_REQUEST", message: "The metadata record is not JSON." };
      }
      const known = ["createTopic", "alterTopic", "deleteTopic", "allocateProducerIds", "lifecycleDone"];
      if (typeof c !== "object" || c === null || !known.includes(c.type)) return { ok: false, code: "INVALID_REQUEST", message: "Unknown metadata record type." };
      return apply(c, cmd.index) as JsonValue;
    },
    snapshot(): Uint8Array {
      const topics = sql.all<TopicRow>("SELECT * FROM rsm_topics ORDER BY name");
      const counters = sql.all<{ name: string; value: number }>("SELECT name, value FROM rsm_counters ORDER BY name");
      const lifecycle = sql.all<LifecycleRow>("SELECT * FROM rsm_lifecycle ORDER BY topic_id");
      return enc.encode(JSON.stringify({ topics, counters, lifecycle }));
    },
    restore(image: Uint8Array): void {
      sql.run("DELETE FROM rsm_topics");
      sql.run("DELETE FROM rsm_counters");
      sql.run("DELETE FROM rsm_lifecycle");
      if (image.byteLength === 0) return;
      const { topics, counters, lifecycle } = JSON.parse(dec.decode(image)) as { topics: TopicRow[]; counters: { name: string; value: number }[]; lifecycle?: LifecycleRow[] };
      // (An image from before the lifecycle table has none.)
      for (const l of lifecycle ?? []) sql.run("INSERT INTO rsm_lifecycle (topic_id, task, record_index) VALUES (?, ?, ?)", l.topic_id, l.task, l.record_index);
      for (const t of topics) {
        sql.run(
          "INSERT INTO rsm_topics (name, tenant, namespace, topic, topic_id, partitions, configs, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
          t.name,
          t.tenant,
          t.namespace,
          t.topic,
          t.topic_id,
          t.partitions,
          t.configs,
          t.created_at,
        );
      }
      for (const c of counters) sql.run("INSERT INTO rsm_counters (name, value) VALUES (?, ?)", c.name, c.value);
    },
    query(q: JsonValue): JsonValue {
      const query = q as MetadataQuery;
      if (query?.type === "getTopic") {
        const r = row(query.name);
        return (r === undefined ? unknownTopic(query.name) : withTask(r)) as JsonValue;
      }
      if (query?.type === "pendingLifecycle") return { ok: true, tasks: pendingTasks() } as unknown as JsonValue;
      return { ok: true, topics: sql.all<TopicRow>("SELECT * FROM rsm_topics ORDER BY name").map(toSummary) } as unknown as JsonValue;
    },
    /**
     * The leader's sweep: completes every task that was already pending at the previous sweep
     * (so the proposer, which runs its task right after the commit, normally gets there first;
     * a task is still run twice at worst, which its idempotence allows). One task at a time:
     * a sweep is a background slice, not a burst of RPCs. A failure leaves the task for the next sweep.
     */
    async sweep(ctx: SweepContext): Promise<void> {
      const seen = sweepSeen;
      sweepSeen = new Set();
      for (const task of pendingTasks()) {
        const key = `${task.topicId}@${task.recordIndex}`;
        sweepSeen.add(key);
        if (!seen.has(key)) continue;
        try {
          await completeLifecycleTask(ctx.env.PARTITION, task, async (c) => {
            const r = await ctx.propose(encodeMetadataCommand(c));
            return r.ok ? (r.result as MetadataAnswer) : { ok: false, code: r.code, message: r.message ?? r.code };
          });
          sweepSeen.delete(key);
        } catch (err) {
          console.warn(`metadata sweep: the partition task of ${task.name} (topic id ${task.topicId}, record ${task.recordIndex}) failed; retried at the next sweep`, err);
        }
      }
    },
  };
}
