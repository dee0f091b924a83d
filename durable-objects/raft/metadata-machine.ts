/**
 * `metadata`: the cluster metadata as a replicated state machine (the KRaft-style metadata
 * quorum; docs/RAFT.md). Topics (name, id, partitions, configs, own policies, creation time),
 * the producer-id block counter, and tenants, namespaces, their policies and the ACLs
 * (./metadata-namespaces.ts), SCRAM users and client quotas (./metadata-users.ts), and the
 * one-time import of MetadataDO's state (`importMetadata`, `importDone`; src/metadata/import.ts,
 * run by the sweep of the group `metadata`). Commands and answers: src/metadata/commands.ts. The applied
 * index of an answer is the metadata offset it reflects. Topic answers are MetadataDO's views
 * (src/metadata/topic-view.ts): effective configs and policies with their sources.
 *
 * Room `raft-metadata`: `rsm_topics` (the columns of MetadataDO's `topics`),
 * `rsm_counters(name PK, value)` (`next_producer_id`) and `rsm_lifecycle(topic_id PK, task,
 * record_index)`: the partition work committed records left to do (a {@link LifecycleTask} as
 * JSON; docs/RAFT.md, "Partition lifecycle"), the tables of ./metadata-namespaces.ts
 * (migration 3), of ./metadata-users.ts (migration 4) and `rsm_placements`
 * (./metadata-placements.ts, migration 5: each replicated partition's replicas, locations and
 * leader). The leader's sweep (`sweep`) completes what the proposer did not.
 */
import { configSources, type PolicyOverrides } from "../../src/protocol/policies.ts";
import { encodeMetadataCommand, METADATA_COMMAND_TYPES, type LifecycleTask, type MetadataAnswer, type MetadataCommand, type MetadataQuery } from "../../src/metadata/commands.ts";
import { completeLifecycleTask } from "../../src/metadata/lifecycle.ts";
import { patchTopicSettings, planNamespacePolicies, settingsOf, topicView, type TopicSettings } from "../../src/metadata/topic-view.ts";
import type { PartitionPlacement, TopicConfigs, TopicSummary } from "../../src/protocol/types.ts";
import type { JsonValue } from "../../src/raft/group.ts";
import type { Migration, Sql } from "../base.ts";
import { failOf, malformedRecord, namespacesMigrationUp, QuorumNamespaces, type RequestRow } from "./metadata-namespaces.ts";
import { unknownNamespace, type AclRow, type NamespaceRow, type TenantRow } from "../../src/metadata/tenant-security.ts";
import type { CommittedCommand, ReplicatedStateMachine, SweepContext } from "./state-machine.ts";
import { QuorumUsers, usersMigrationUp, wellFormedCredential } from "./metadata-users.ts";
import { malformedPlacementRecord, placementsMigrationUp, QuorumPlacements, type PlacementRow } from "./metadata-placements.ts";
import { malformedImport, runMetadataImport } from "../../src/metadata/import.ts";
import { METADATA_GROUP_ID } from "../../src/metadata/raft-store.ts";
import { METADATA_OBJECT_NAME } from "../../src/metadata/store.ts";
import type { MetadataExport, MetadataServeQuery, TopicRow } from "../../src/metadata/commands.ts";
import type { RpcResult } from "../../src/protocol/errors.ts";
import { QUOTA_KEYS } from "../../src/auth/store.ts";

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
  // Tenants, namespaces, topic policies, ACLs, request ids (./metadata-namespaces.ts).
  { version: 3, name: "tenants", up: namespacesMigrationUp },
  // SCRAM users and client quotas (./metadata-users.ts).
  { version: 4, name: "users", up: usersMigrationUp },
  // Partition placement: replicas, locations, leader (./metadata-placements.ts).
  { version: 5, name: "placements", up: placementsMigrationUp },
];

/** The marker of the finished import from MetadataDO (a row of `rsm_counters`, its value the record index). */
export const IMPORT_MARKER = "metadata_import";

type LifecycleRow = { topic_id: string; task: string; record_index: number };

const dec = new TextDecoder();
const enc = new TextEncoder();

/** A topic row as the gateway sees it (MetadataDO's #summary): effective configs and policies, with sources. */
function toSummary(r: TopicRow, namespacePolicies: PolicyOverrides, placements: PartitionPlacement[] | undefined): TopicSummary {
  const settings = settingsOf(r);
  const view = topicView(settings.configs, settings.explicit, namespacePolicies, settings.own);
  return {
    ...(placements === undefined ? {} : { placements }),
    name: r.name,
    tenant: r.tenant,
    namespace: r.namespace,
    topic: r.topic,
    topicId: r.topic_id,
    partitions: r.partitions,
    configs: view.summaryConfigs,
    policies: view.policies,
    createdAt: r.created_at,
    configSources: configSources(settings.explicit, namespacePolicies),
  };
}

/** The configs a topic's partitions hold (the effective configs plus the policy values). */
function partitionConfigsOf(settings: TopicSettings, namespacePolicies: PolicyOverrides): TopicConfigs {
  return topicView(settings.configs, settings.explicit, namespacePolicies, settings.own).partitionConfigs;
}

const isText = (v: unknown): v is string => typeof v === "string" && v !== "";

const unknownTopic = (name: string): MetadataAnswer => ({ ok: false, code: "UNKNOWN_TOPIC_OR_PARTITION", message: `Topic ${name} does not exist.`, details: { topic: name } });

export function metadataStateMachine(sql: Sql): ReplicatedStateMachine {
  const namespaces = new QuorumNamespaces(sql);
  const users = new QuorumUsers(sql);
  const placements = new QuorumPlacements(sql);
  /** Adds the initial placement of a replicated topic's partitions that have none (see ./metadata-placements.ts). */
  const ensurePlacements = (r: TopicRow) => placements.ensure(r.topic_id, r.partitions, JSON.parse(r.configs) as Partial<TopicConfigs>);
  const importDone = (): boolean => sql.first("SELECT 1 AS one FROM rsm_counters WHERE name = ?", IMPORT_MARKER) !== undefined;
  /** Tasks pending at the last sweep (`${topicId}@${recordIndex}`), in memory: a task runs at the sweep after the one that first saw it pending, so a new leader's first sweep (at once) runs none. */
  let sweepSeen = new Set<string>();
  const pendingTasks = (): LifecycleTask[] => sql.all<LifecycleRow>("SELECT * FROM rsm_lifecycle ORDER BY record_index").map((r) => JSON.parse(r.task) as LifecycleTask);
  const row = (name: string) => sql.first<TopicRow>("SELECT * FROM rsm_topics WHERE name = ?", name);
  /** The policies of a topic's namespace; {} for a topic whose namespace has no row (created before tenants moved here, until adopted). */
  const nsPoliciesOf = (r: Pick<TopicRow, "tenant" | "namespace">): PolicyOverrides => namespaces.namespacePolicies(`${r.tenant}/${r.namespace}`) ?? {};
  const summary = (r: TopicRow): TopicSummary => toSummary(r, nsPoliciesOf(r), placements.of(r.topic_id));
  /** Adds row `r` to the topics table as it is (no defaults: callers fill them). */
  const insertTopicRow = (r: TopicRow) =>
    sql.run(
      "INSERT INTO rsm_topics (name, tenant, namespace, topic, topic_id, partitions, configs, created_at, policies, config_keys) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      r.name,
      r.tenant,
      r.namespace,
      r.topic,
      r.topic_id,
      r.partitions,
      r.configs,
      r.created_at,
      r.policies,
      r.config_keys,
    );
  const insert = (t: TopicSummary, own: PolicyOverrides, configKeys: string | null) =>
    insertTopicRow({
      name: t.name,
      tenant: t.tenant,
      namespace: t.namespace,
      topic: t.topic,
      topic_id: t.topicId,
      partitions: t.partitions,
      configs: JSON.stringify(t.configs),
      created_at: t.createdAt,
      policies: JSON.stringify(own),
      config_keys: configKeys,
    });

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
  /**
   * Leaves a `sync` task for the topic of row `r` (its partition count and configs as now
   * stored), merged with a task an earlier record left unfinished: the union of both, at the
   * newest values. `pushConfigs` asks for the configs on the existing partitions.
   */
  const syncTask = (r: TopicRow, previousPartitions: number, pushConfigs: boolean, configs: TopicConfigs, index: number): LifecycleTask | undefined => {
    const prev = taskOf(r.topic_id);
    const pending = prev?.action === "sync" ? prev : undefined;
    const initFrom = Math.min(pending?.initFrom ?? previousPartitions, previousPartitions);
    const push = (pending?.pushConfigs ?? false) || pushConfigs;
    if (pending === undefined && initFrom === r.partitions && !push) return undefined;
    const replicas = placements.ids(r.topic_id);
    return setTask({
      action: "sync",
      topicId: r.topic_id,
      name: r.name,
      initFrom,
      pushConfigs: push,
      partitions: r.partitions,
      configs,
      recordIndex: index,
      ...(replicas === undefined ? {} : { replicas }),
    });
  };
  /** The topic's answer with its pending task, if any. */
  const withTask = (r: TopicRow): MetadataAnswer => {
    const task = taskOf(r.topic_id);
    return task === undefined ? { ok: true, topic: summary(r) } : { ok: true, topic: summary(r), task };
  };

  function createTopic(c: Extract<MetadataCommand, { type: "createTopic" }>, index: number): MetadataAnswer {
    const existing = row(c.topic.name);
    if (existing !== undefined) {
      // The same create again (a retry after an unknown outcome) is answered as it was.
      if (existing.topic_id === c.topic.topicId) return withTask(existing);
      return { ok: false, code: "TOPIC_ALREADY_EXISTS", message: `Topic ${c.topic.name} already exists.`, details: { topic: c.topic.name } };
    }
    const t = c.topic;
    const nsName = `${t.tenant}/${t.namespace}`;
    // The namespace check, in log order: a namespace deleted by an earlier record is gone here.
    const nsPolicies = namespaces.namespacePolicies(nsName);
    if (c.requireNamespace === true && nsPolicies === undefined) return unknownNamespace(nsName);
    const own = c.policies ?? {};
    const configKeys = c.configKeys === undefined ? null : JSON.stringify([...c.configKeys].sort());
    const settings = settingsOf({ configs: JSON.stringify(t.configs), config_keys: configKeys, policies: JSON.stringify(own) });
    let configs: TopicConfigs;
    try {
      // A record of this form validates the topic's effective view against its namespace's policies.
      configs = topicView(settings.configs, settings.explicit, nsPolicies ?? {}, own, { validate: c.requireNamespace === true }).partitionConfigs;
    } catch (e) {
      return failOf(e);
    }
    insert(t, own, configKeys);
    // Replicated: each partition's placement (r1..rf with their location hints), in the same apply.
    placements.ensure(t.topicId, t.partitions, t.configs);
    // The record leaves its partitions to initialise: the durable marker, in the same apply.
    const task = setTask({ action: "sync", topicId: t.topicId, name: t.name, initFrom: 0, pushConfigs: false, partitions: t.partitions, configs, recordIndex: index });
    return { ok: true, topic: summary(row(t.name)!), task };
  }

  function alterTopic(c: Extract<MetadataCommand, { type: "alterTopic" }>, index: number): MetadataAnswer {
    const r = row(c.name);
    if (r === undefined || r.topic_id !== c.topicId) return unknownTopic(c.name);
    const partitions = c.partitions ?? r.partitions;
    if (partitions < r.partitions) {
      return {
        ok: false,
        code: "PARTITION_DECREASE_NOT_ALLOWED",
        message: `Topic ${c.name} has ${r.partitions} partitions; the count can only grow.`,
        details: { partitions: r.partitions },
      };
    }
    const before = settingsOf(r);
    const nsPolicies = nsPoliciesOf(r);
    let after: TopicSettings;
    let forcePush = false;
    try {
      if (c.patch !== undefined) {
        // The PATCH applied to the topic as the log has it here: two alters never lose each other's change.
        after = patchTopicSettings(before, c.patch);
        topicView(after.configs, after.explicit, nsPolicies, after.own, { validate: true });
        forcePush = c.patch.configs !== undefined || c.patch.policies !== undefined;
      } else {
        // Absolute configs (records from before topic policies moved here).
        after = { configs: c.configs ?? before.configs, explicit: before.explicit, own: before.own };
      }
    } catch (e) {
      return failOf(e);
    }
    const configKeys = c.patch === undefined ? r.config_keys : JSON.stringify([...after.explicit].sort());
    sql.run(
      "UPDATE rsm_topics SET partitions = ?, configs = ?, policies = ?, config_keys = ? WHERE name = ?",
      partitions,
      JSON.stringify(after.configs),
      JSON.stringify(after.own),
      configKeys,
      c.name,
    );
    const now = row(c.name)!;
    // New partitions get their placement (and a topic from before placements, all of its own).
    ensurePlacements(now);
    const configs = partitionConfigsOf(settingsOf(now), nsPolicies);
    const changed = forcePush || JSON.stringify(configs) !== JSON.stringify(partitionConfigsOf(before, nsPolicies));
    const task = syncTask(now, r.partitions, changed, configs, index);
    return task === undefined ? { ok: true, topic: summary(now) } : { ok: true, topic: summary(now), task };
  }

  function setNamespacePolicies(c: Extract<MetadataCommand, { type: "setNamespacePolicies" }>, index: number): MetadataAnswer {
    const current = namespaces.namespacePolicies(c.name);
    if (current === undefined) return unknownNamespace(c.name);
    const [tenant, ns] = c.name.split("/") as [string, string];
    const topics = sql.all<TopicRow>("SELECT * FROM rsm_topics WHERE tenant = ? AND namespace = ? ORDER BY name", tenant, ns).map((r) => ({ name: r.name, row: r, settings: settingsOf(r) }));
    let plan: ReturnType<typeof planNamespacePolicies<(typeof topics)[number]>>;
    try {
      plan = planNamespacePolicies(current, c.changes, topics);
    } catch (e) {
      return failOf(e);
    }
    namespaces.writeNamespacePolicies(c.name, plan.policies);
    // Every topic whose effective view changed: its partitions get the new configs and policies.
    const tasks = plan.changed.flatMap(({ topic, partitionConfigs }) => syncTask(topic.row, topic.row.partitions, true, partitionConfigs, index) ?? []);
    return { ok: true, namespace: namespaces.describeRow(namespaces.namespaceRow(c.name)!), tasks };
  }

  function apply(c: MetadataCommand, index: number): MetadataAnswer {
    switch (c.type) {
      case "createTopic":
        return createTopic(c, index);
      case "alterTopic":
        return alterTopic(c, index);
      case "deleteTopic": {
        const r = row(c.name);
        if (r === undefined || (c.topicId !== null && r.topic_id !== c.topicId)) return unknownTopic(c.name);
        sql.run("DELETE FROM rsm_topics WHERE name = ?", c.name);
        // Every replica of the placement is destroyed by the task (r4, r5 after reassignments too).
        const replicas = placements.ids(r.topic_id);
        placements.remove(r.topic_id);
        // Replaces an unfinished sync of the topic: destroying every partition covers it.
        const task = setTask({
          action: "destroy",
          topicId: r.topic_id,
          name: r.name,
          partitions: r.partitions,
          recordIndex: index,
          ...(replicas === undefined ? {} : { replicas }),
        });
        return { ok: true, topic: summary(r), task };
      }
      case "lifecycleDone": {
        if (typeof c.topicId !== "string" || !Number.isSafeInteger(c.throughIndex)) return { ok: false, code: "INVALID_REQUEST", message: "lifecycleDone needs {topicId, throughIndex}." };
        sql.run("DELETE FROM rsm_lifecycle WHERE topic_id = ? AND record_index <= ?", c.topicId, c.throughIndex);
        const exists = sql.first<{ n: number }>("SELECT count(*) AS n FROM rsm_topics WHERE topic_id = ?", c.topicId)!.n > 0;
        return { ok: true, topicExists: exists };
      }
      case "partitionChange": {
        const r = sql.first<TopicRow>("SELECT * FROM rsm_topics WHERE topic_id = ?", c.topicId);
        return placements.change(c, r === undefined ? null : { partitions: r.partitions, configs: JSON.parse(r.configs) as Partial<TopicConfigs> });
      }
      case "allocateProducerIds": {
        const first = sql.first<{ value: number }>("SELECT value FROM rsm_counters WHERE name = 'next_producer_id'")?.value ?? 0;
        sql.run("INSERT INTO rsm_counters (name, value) VALUES ('next_producer_id', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", first + c.count);
        return { ok: true, firstProducerId: first, count: c.count };
      }
      case "createTenant":
        return namespaces.once(c.requestId, index, () => namespaces.createTenant(c.name, c.adminRoles, c.createdAt));
      case "deleteTenant":
        return namespaces.once(c.requestId, index, () => namespaces.deleteTenant(c.name));
      case "createNamespace":
        return namespaces.once(c.requestId, index, () => namespaces.createNamespace(c.tenant, c.namespace, c.policies, c.createdAt));
      case "deleteNamespace":
        return namespaces.once(c.requestId, index, () => namespaces.deleteNamespace(c.name));
      case "setNamespacePolicies":
        return namespaces.once(c.requestId, index, () => setNamespacePolicies(c, index));
      case "createAcls":
        return namespaces.once(c.requestId, index, () => namespaces.createAcls(c.bindings));
      case "deleteAcls":
        return namespaces.once(c.requestId, index, () => namespaces.deleteAcls(c.filter));
      case "adoptNamespaces":
        return namespaces.adoptNamespaces();
      case "upsertScramUser":
        return namespaces.once(c.requestId, index, () => users.upsert(c.name, c.credential, c.generation));
      case "deleteScramUser":
        return namespaces.once(c.requestId, index, () => users.delete(c.name, c.mechanism));
      case "alterQuotas":
        return namespaces.once(c.requestId, index, () => users.alterQuotas(c.entity, c.values));
      case "importMetadata":
        return importPart(c.part, index);
      case "importDone":
        sql.run("INSERT OR IGNORE INTO rsm_counters (name, value) VALUES (?, ?)", IMPORT_MARKER, index);
        return { ok: true };
    }
  }

  /**
   * Adds the rows of MetadataDO's state the log has nothing for (see the record's docstring):
   * tenants, namespaces, topics (each leaving a `sync` task), ACLs, SCRAM credentials, quota
   * values, and moves the producer-id counter past MetadataDO's last id.
   */
  function importPart(part: Extract<MetadataCommand, { type: "importMetadata" }>["part"], index: number): MetadataAnswer {
    let imported = 0;
    for (const t of part.tenants ?? []) {
      imported += sql.all("INSERT OR IGNORE INTO rsm_tenants (name, allowed_clusters, created_at) VALUES (?, ?, ?) RETURNING 1 AS one", t.name, t.allowed_clusters, t.created_at).length;
    }
    for (const n of part.namespaces ?? []) {
      imported += sql.all(
        "INSERT OR IGNORE INTO rsm_namespaces (name, tenant, namespace, policies, created_at) VALUES (?, ?, ?, ?, ?) RETURNING 1 AS one",
        n.name,
        n.tenant,
        n.namespace,
        n.policies,
        n.created_at,
      ).length;
    }
    for (const t of part.topics ?? []) {
      if (row(t.name) !== undefined || sql.first("SELECT 1 AS one FROM rsm_topics WHERE topic_id = ?", t.topic_id) !== undefined) continue;
      insertTopicRow(t);
      const r = row(t.name)!;
      ensurePlacements(r);
      // Its partitions exist (MetadataDO initialised them, same topic id): the task's init is a no-op that proves it.
      setTask({
        action: "sync",
        topicId: r.topic_id,
        name: r.name,
        initFrom: 0,
        pushConfigs: false,
        partitions: r.partitions,
        configs: partitionConfigsOf(settingsOf(r), nsPoliciesOf(r)),
        recordIndex: index,
      });
      imported++;
    }
    if (part.acls !== undefined) imported += (namespaces.createAcls(part.acls) as { created: number }).created;
    for (const u of part.users ?? []) imported += users.importUser(u);
    for (const q of part.quotas ?? []) imported += users.importQuota(q);
    if (typeof part.lastProducerId === "number") {
      const next = sql.first<{ value: number }>("SELECT value FROM rsm_counters WHERE name = 'next_producer_id'")?.value ?? 0;
      if (part.lastProducerId + 1 > next) {
        sql.run("INSERT INTO rsm_counters (name, value) VALUES ('next_producer_id', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", part.lastProducerId + 1);
      }
    }
    return { ok: true, imported };
  }

  /** The shape of a user or quota record (a malformed one changes nothing, on every member alike). */
  function malformedUserRecord(c: MetadataCommand): string | null {
    switch (c.type) {
      case "upsertScramUser":
        return isText(c.name) && isText(c.generation) && wellFormedCredential(c.credential) ? null : "upsertScramUser needs {name, credential, generation}";
      case "deleteScramUser":
        return isText(c.name) && (c.mechanism === null || c.mechanism === "SCRAM-SHA-256" || c.mechanism === "SCRAM-SHA-512") ? null : "deleteScramUser needs {name, mechanism}";
      case "alterQuotas":
        return typeof c.entity === "object" &&
          c.entity !== null &&
          (c.entity.user === null || typeof c.entity.user === "string") &&
          (c.entity.clientId === null || typeof c.entity.clientId === "string") &&
          typeof c.values === "object" &&
          c.values !== null &&
          Object.entries(c.values).every(([k, v]) => (QUOTA_KEYS as readonly string[]).includes(k) && (v === null || (typeof v === "number" && Number.isFinite(v))))
          ? null
          : "alterQuotas needs {entity: {user, clientId}, values}";
      case "importMetadata":
        return malformedImport(c.part);
      default:
        return null;
    }
  }

  function query(q: MetadataQuery): unknown {
    switch (q?.type) {
      case "getTopic": {
        const r = row(q.name);
        return r === undefined ? unknownTopic(q.name) : withTask(r);
      }
      case "pendingLifecycle":
        return { ok: true, tasks: pendingTasks() };
      case "listTenants":
        return { ok: true, tenants: namespaces.listTenants() };
      case "describeTenant":
        return namespaces.describeTenant(q.name);
      case "listNamespaces":
        return namespaces.listNamespaces(q.tenant);
      case "describeNamespace":
        return namespaces.describeNamespace(q.name);
      case "listAcls":
        return { ok: true, acls: namespaces.listAcls() };
      case "listScramUsers":
        return { ok: true, users: users.list() };
      case "securitySnapshot":
        return { ok: true, snapshot: users.snapshot(namespaces.listAcls()) };
      case "importStatus":
        return { ok: true, done: importDone() };
      default: {
        // listTopics: the namespaces' policies read once each.
        const byNamespace = new Map<string, PolicyOverrides>();
        const topics = sql.all<TopicRow>("SELECT * FROM rsm_topics ORDER BY name").map((r) => {
          const key = `${r.tenant}/${r.namespace}`;
          let p = byNamespace.get(key);
          if (p === undefined) byNamespace.set(key, (p = nsPoliciesOf(r)));
          return toSummary(r, p, placements.of(r.topic_id));
        });
        return { ok: true, topics };
      }
    }
  }

  const proposeWith =
    (ctx: SweepContext) =>
    async (c: MetadataCommand): Promise<MetadataAnswer> => {
      const r = await ctx.propose(encodeMetadataCommand(c));
      return r.ok ? (r.result as MetadataAnswer) : { ok: false, code: r.code, message: r.message ?? r.code };
    };

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
      if (typeof c !== "object" || c === null || !METADATA_COMMAND_TYPES.includes(c.type)) return { ok: false, code: "INVALID_REQUEST", message: "Unknown metadata record type." };
      const wrong = malformedRecord(c) ?? malformedUserRecord(c) ?? malformedPlacementRecord(c);
      if (wrong !== null) return { ok: false, code: "INVALID_REQUEST", message: `Malformed metadata record: ${wrong}.` };
      return apply(c, cmd.index) as JsonValue;
    },
    snapshot(): Uint8Array {
      const topics = sql.all<TopicRow>("SELECT * FROM rsm_topics ORDER BY name");
      const counters = sql.all<{ name: string; value: number }>("SELECT name, value FROM rsm_counters ORDER BY name");
      const lifecycle = sql.all<LifecycleRow>("SELECT * FROM rsm_lifecycle ORDER BY topic_id");
      return enc.encode(JSON.stringify({ topics, counters, lifecycle, ...namespaces.image(), ...users.image(), ...placements.image() }));
    },
    restore(image: Uint8Array): void {
      sql.run("DELETE FROM rsm_topics");
      sql.run("DELETE FROM rsm_counters");
      sql.run("DELETE FROM rsm_lifecycle");
      if (image.byteLength === 0) {
        namespaces.restore({});
        users.restore({});
        placements.restore({});
        return;
      }
      const img = JSON.parse(dec.decode(image)) as {
        /** (`policies` and `config_keys` are missing in an image from before migration 3.) */
        topics: (Omit<TopicRow, "policies" | "config_keys"> & Partial<Pick<TopicRow, "policies" | "config_keys">>)[];
        counters: { name: string; value: number }[];
        lifecycle?: LifecycleRow[];
        tenants?: TenantRow[];
        namespaces?: NamespaceRow[];
        acls?: AclRow[];
        requests?: RequestRow[];
        scramUsers?: ReturnType<QuorumUsers["image"]>["scramUsers"];
        quotas?: ReturnType<QuorumUsers["image"]>["quotas"];
        placements?: PlacementRow[];
      };
      // (An image from before the lifecycle table has none; from before migration 3, no tenants, policies or ACLs.)
      for (const l of img.lifecycle ?? []) sql.run("INSERT INTO rsm_lifecycle (topic_id, task, record_index) VALUES (?, ?, ?)", l.topic_id, l.task, l.record_index);
      for (const t of img.topics) insertTopicRow({ ...t, policies: t.policies ?? "{}", config_keys: t.config_keys ?? null });
      for (const c of img.counters) sql.run("INSERT INTO rsm_counters (name, value) VALUES (?, ?)", c.name, c.value);
      namespaces.restore(img);
      users.restore(img);
      // (An image from before placements has none: replicated topics get theirs from their next record.)
      placements.restore(img);
    },
    query(q: JsonValue): JsonValue {
      return query(q as MetadataQuery) as JsonValue;
    },
    /** A SCRAM password check at this member (PBKDF2; the lock-out in this member's memory). */
    async serve(q: JsonValue): Promise<JsonValue> {
      const s = q as MetadataServeQuery;
      if (s?.type !== "authenticateScram" || typeof s.name !== "string" || typeof s.password !== "string") {
        return { ok: false, code: "INVALID_REQUEST", message: "Unknown metadata serve query." };
      }
      return (await users.authenticate(s.name, s.password)) as JsonValue;
    },
    /**
     * The leader's sweep: completes every task that was already pending at the previous sweep
     * (so the proposer, which runs its task right after the commit, normally gets there first;
     * a task is still run twice at worst, which its idempotence allows). One task at a time:
     * a sweep is a background slice, not a burst of RPCs. A failure leaves the task for the next sweep.
     * It also proposes `adoptNamespaces` while a topic's namespace has no row (topics created
     * before tenants moved into the quorum).
     */
    async sweep(ctx: SweepContext): Promise<void> {
      const propose = proposeWith(ctx);
      // The one-time import from MetadataDO "cluster", the predecessor of the group `metadata`
      // (docs/RAFT.md, "Migration from MetadataDO"): until its `importDone` commits, every
      // leader's sweep runs it again from the start (each part adds only what is missing).
      if (ctx.groupId === METADATA_GROUP_ID && !importDone()) {
        try {
          const exported = (await ctx.env.METADATA.getByName(METADATA_OBJECT_NAME).exportMetadata()) as RpcResult<{ export: MetadataExport }>;
          if (!exported.ok) throw new Error(`${exported.code}: ${exported.message}`);
          await runMetadataImport(exported.export, propose);
        } catch (err) {
          // The partition tasks below still run: an unreachable MetadataDO must not stall them.
          console.warn("metadata sweep: the import from MetadataDO failed; retried at the next sweep", err);
        }
      }
      if (namespaces.hasOrphanTopics()) {
        const r = await propose({ type: "adoptNamespaces" });
        if (!r.ok) console.warn(`metadata sweep: adopting the namespaces of existing topics failed (${r.code}); retried at the next sweep`);
      }
      // A new leader's first sweep only notes the pending tasks (their proposers may be running
      // them); what it notes from an earlier leadership is stale.
      const seen = ctx.firstOfTerm ? new Set<string>() : sweepSeen;
      sweepSeen = new Set();
      for (const task of pendingTasks()) {
        const key = `${task.topicId}@${task.recordIndex}`;
        sweepSeen.add(key);
        if (!seen.has(key)) continue;
        try {
          await completeLifecycleTask(ctx.env.PARTITION, task, propose);
          sweepSeen.delete(key);
        } catch (err) {
          console.warn(`metadata sweep: the partition task of ${task.name} (topic id ${task.topicId}, record ${task.recordIndex}) failed; retried at the next sweep`, err);
        }
      }
    },
  };
}
