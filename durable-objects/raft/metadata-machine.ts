/**
 * `metadata`: the cluster metadata as a replicated state machine (the KRaft-style metadata
 * quorum; docs/RAFT.md). Topics (name, id, partitions, configs, creation time) and the
 * producer-id block counter. Commands and answers: src/metadata/commands.ts. The applied index
 * of an answer is the metadata offset it reflects.
 *
 * Room `raft-metadata`: `rsm_topics` (the columns of MetadataDO's `topics`) and
 * `rsm_counters(name PK, value)` (`next_producer_id`).
 */
import { resolvePolicies } from "../../src/protocol/policies.ts";
import type { MetadataAnswer, MetadataCommand, MetadataQuery } from "../../src/metadata/commands.ts";
import { DEFAULT_TOPIC_CONFIGS } from "../../src/protocol/config.ts";
import type { TopicConfigs, TopicSummary } from "../../src/protocol/types.ts";
import type { JsonValue } from "../../src/raft/group.ts";
import type { Migration, Sql } from "../base.ts";
import type { CommittedCommand, ReplicatedStateMachine } from "./state-machine.ts";

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
];

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

  function apply(c: MetadataCommand): MetadataAnswer {
    switch (c.type) {
      case "createTopic": {
        const existing = row(c.topic.name);
        if (existing !== undefined) {
          // The same create again (a retry after an unknown outcome) is answered as it was.
          if (existing.topic_id === c.topic.topicId) return { ok: true, topic: toSummary(existing) };
          return { ok: false, code: "TOPIC_ALREADY_EXISTS", message: `Topic ${c.topic.name} already exists.`, details: { topic: c.topic.name } };
        }
        insert(c.topic);
        return { ok: true, topic: toSummary(row(c.topic.name)!) };
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
        sql.run("UPDATE rsm_topics SET partitions = ?, configs = ? WHERE name = ?", c.partitions, JSON.stringify(c.configs), c.name);
        return { ok: true, topic: toSummary(row(c.name)!) };
      }
      case "deleteTopic": {
        const r = row(c.name);
        if (r === undefined || (c.topicId !== null && r.topic_id !== c.topicId)) return unknownTopic(c.name);
        sql.run("DELETE FROM rsm_topics WHERE name = ?", c.name);
        return { ok: true, topic: toSummary(r) };
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
      const known = ["createTopic", "alterTopic", "deleteTopic", "allocateProducerIds"];
      if (typeof c !== "object" || c === null || !known.includes(c.type)) return { ok: false, code: "INVALID_REQUEST", message: "Unknown metadata record type." };
      return apply(c) as JsonValue;
    },
    snapshot(): Uint8Array {
      const topics = sql.all<TopicRow>("SELECT * FROM rsm_topics ORDER BY name");
      const counters = sql.all<{ name: string; value: number }>("SELECT name, value FROM rsm_counters ORDER BY name");
      return enc.encode(JSON.stringify({ topics, counters }));
    },
    restore(image: Uint8Array): void {
      sql.run("DELETE FROM rsm_topics");
      sql.run("DELETE FROM rsm_counters");
      if (image.byteLength === 0) return;
      const { topics, counters } = JSON.parse(dec.decode(image)) as { topics: TopicRow[]; counters: { name: string; value: number }[] };
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
        return (r === undefined ? unknownTopic(query.name) : { ok: true, topic: toSummary(r) }) as JsonValue;
      }
      return { ok: true, topics: sql.all<TopicRow>("SELECT * FROM rsm_topics ORDER BY name").map(toSummary) } as unknown as JsonValue;
    },
  };
}
