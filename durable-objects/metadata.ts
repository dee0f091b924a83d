/**
 * MetadataDO: the cluster's topics and producer-id counter, one instance named "cluster".
 * Implements {@link TopicMetadataStore}; the gateway sees only that interface.
 *
 * Storage (SQLite, migration 1):
 * - topics(name PK = `tenant/namespace/topic`, tenant, namespace, topic, topic_id (random
 *   UUID), partitions, configs JSON, created_at ms);
 * - counters(name PK, value): `producer_id`, the last producer id handed out.
 * - acls, scram_users, quotas (migration 2): durable-objects/metadata-security.ts.
 * - tenants, namespaces, and the topics columns `policies` and `config_keys` (migration 3):
 *   durable-objects/metadata-tenants.ts.
 *
 * Topics live in namespaces: a create in a namespace that does not exist is refused
 * (NAMESPACE_NOT_FOUND; `public/default` always exists). Each topic's effective configs and
 * policies (topic override > namespace policy > default; the namespace's retention policy feeds
 * `retention.ms` / `retention.bytes`) are what partitions receive through init/updateConfigs
 * (the policies as `configs.policies`), and what describe shows with their sources.
 *
 * Mutations (create/alter/delete) run one at a time (`#serial`): they await partition RPCs,
 * during which the input gate would otherwise let another mutation of the same topic in.
 *
 * Fan-out: create, alter, delete and describe call each partition once, at most
 * {@link PARTITION_FANOUT} at a time, so one request makes at most MAX_PARTITIONS (1,024) + 1
 * subrequests: under the 10,000 a Workers Paid invocation may make (a partition's own R2 calls
 * count against its own invocation). docs/LIFECYCLE.md "Orphans".
 *
 * Crash safety of create: partitions are initialised BEFORE the topic row is inserted, so a
 * failure half-way leaves only unreachable partition objects (their topic id is referenced by
 * nothing), never a visible topic with missing partitions.
 */
import type { Env } from "../src/env.ts";
import type { MetadataExport, TopicRow } from "../src/metadata/commands.ts";
import { METADATA_OBJECT_NAME, type AlterTopicInput, type CreateTopicInput, type TenantStore, type TopicMetadataStore } from "../src/metadata/store.ts";
import { replicaStubAt } from "../src/partition/rpc.ts";
import { describePartition, destroyPartition, pushPartitionConfigs } from "../src/partition/replica-admin.ts";
import { mergeTopicConfigs, DEFAULT_TOPIC_CONFIGS } from "../src/protocol/config.ts";
import {
  TOPIC_POLICY_NAMES,
  checkPolicyRules,
  configSources,
  parsePolicyMap,
  policyValues,
  resolvePolicies,
  type EffectivePolicies,
  type NamespaceDescription,
  type PolicyOverrides,
  type TenantInfo,
} from "../src/protocol/policies.ts";
import { TenantTables, tenantsMigration } from "./metadata-tenants.ts";
import { configKeysOf, explicitKeys, splitRemovals, storedConfigs, topicView } from "../src/metadata/topic-view.ts";
import { unknownNamespace } from "../src/metadata/tenant-security.ts";
import { EdgelogError, errorResult, type ErrorResult, type RpcResult } from "../src/protocol/errors.ts";
import { MAX_PARTITIONS } from "../src/protocol/limits.ts";
import { parseTopicName } from "../src/protocol/names.ts";
import type { InitProducerResponse, PartitionDescription, TopicConfigs, TopicDescription, TopicSummary } from "../src/protocol/types.ts";
import { SqliteDurableObject, expected, type Migration } from "./base.ts";
import { mapBounded } from "../src/metrics/scrape.ts";
import { SecurityTables, securityMigration } from "./metadata-security.ts";
import type { QuotaEntity, QuotaEntry, QuotaKey, ScramCredentialInput, ScramUserSummary, SecurityStore, SecuritySnapshot } from "../src/auth/store.ts";
import type { ScramMechanism } from "../src/auth/scram.ts";
import type { AclBinding, AclFilter } from "../src/protocol/acl.ts";

/** Partition RPCs of one mutation or describe in flight at once (the rest queue). */
export const PARTITION_FANOUT = 32;

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "topics",
    up(sql) {
      sql.run(`
        CREATE TABLE topics (
          name TEXT PRIMARY KEY,
          tenant TEXT NOT NULL,
          namespace TEXT NOT NULL,
          topic TEXT NOT NULL,
          topic_id TEXT NOT NULL UNIQUE,
          partitions INTEGER NOT NULL,
          configs TEXT NOT NULL,
          created_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      `);
    },
  },
  // ACLs, SCRAM users, quotas (durable-objects/metadata-security.ts).
  securityMigration(2),
  // Tenants, namespaces, topic policies (durable-objects/metadata-tenants.ts).
  tenantsMigration(3),
];

export { METADATA_OBJECT_NAME };

export class MetadataDO extends SqliteDurableObject<Env> implements TopicMetadataStore, TenantStore, SecurityStore {
  /** Tail of the mutation queue (see the file comment). */
  #tail: Promise<unknown> = Promise.resolve();
  /** ACLs, SCRAM users and quotas (src/auth/store.ts). */
  readonly #security = new SecurityTables(this.sql, this.ctx.storage);
  /** Tenants and namespaces (durable-objects/metadata-tenants.ts). */
  readonly #tenants = new TenantTables(this.sql, this.ctx.storage);

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp([{ room: "metadata", migrations: MIGRATIONS }], { adoptLegacy: (v) => ({ metadata: v }) });
  }

  protected override onStart(): void {
    // Nothing cached: reads are single-row SQLite lookups in this object's own thread.
  }

  createTopic(req: CreateTopicInput): Promise<RpcResult<{ topic: TopicDescription }>> {
    return expected(() => {
      const name = parseTopicName(req.name);
      const partitions = checkPartitions(req.partitions ?? 1);
      const configs = mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, req.configs);
      const explicit = configKeysOf(req.configs);
      const own = (req.policies === undefined ? {} : parsePolicyMap(req.policies, TOPIC_POLICY_NAMES)) as PolicyOverrides;
      const namespace = `${name.tenant}/${name.namespace}`;
      return this.#serial(async () => {
        if (this.#row(name.full) !== undefined) return errorResult("TOPIC_ALREADY_EXISTS", `Topic ${name.full} already exists.`, { topic: name.full });
        const nsPolicies = this.#tenants.namespacePolicies(namespace);
        if (nsPolicies === undefined) return unknownNamespace(namespace);
        const view = topicView(configs, explicit, nsPolicies, own, { validate: true });
        const topicId = crypto.randomUUID();
        await this.#initPartitions(name.full, topicId, 0, partitions, view.partitionConfigs);
        // The namespace may have been deleted while the partitions were initialised: deletes
        // run through #serial too, so it cannot; checked again all the same (cheap).
        if (this.#tenants.namespaceRow(namespace) === undefined) return unknownNamespace(namespace);
        const createdAt = Date.now();
        this.sql.run(
          `INSERT INTO topics (name, tenant, namespace, topic, topic_id, partitions, configs, created_at, policies, config_keys)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          name.full,
          name.tenant,
          name.namespace,
          name.topic,
          topicId,
          partitions,
          JSON.stringify(configs),
          createdAt,
          JSON.stringify(own),
          JSON.stringify([...explicit].sort()),
        );
        const summary = this.#summary(this.#row(name.full)!);
        return { ok: true as const, topic: { ...summary, partitionDetails: emptyPartitions(partitions) } };
      });
    });
  }

  async listTopics(): Promise<RpcResult<{ topics: TopicSummary[] }>> {
    const byNamespace = new Map<string, PolicyOverrides>();
    return {
      ok: true,
      topics: this.sql.all<TopicRow>("SELECT * FROM topics ORDER BY name").map((row) => {
        const ns = `${row.tenant}/${row.namespace}`;
        let p = byNamespace.get(ns);
        if (p === undefined) byNamespace.set(ns, (p = this.#tenants.namespacePolicies(ns) ?? {}));
        return this.#summary(row, p);
      }),
    };
  }

  getTopic(name: string): Promise<RpcResult<{ topic: TopicSummary }>> {
    return expected(() => {
      const full = parseTopicName(name).full;
      const row = this.#row(full);
      return row === undefined ? unknownTopic(full) : { ok: true as const, topic: this.#summary(row) };
    });
  }

  describeTopic(name: string): Promise<RpcResult<{ topic: TopicDescription }>> {
    return expected(async () => {
      const full = parseTopicName(name).full;
      const row = this.#row(full);
      if (row === undefined) return unknownTopic(full);
      return this.#describe(this.#summary(row));
    });
  }

  alterTopic(name: string, req: AlterTopicInput): Promise<RpcResult<{ topic: TopicDescription }>> {
    return expected(() => {
      const full = parseTopicName(name).full;
      return this.#serial(async () => {
        const row = this.#row(full);
        if (row === undefined) return unknownTopic(full);
        const current = this.#summary(row);
        // A null config removes the topic's own value: it follows its namespace (retention) or its default again.
        const { set, removed } = splitRemovals(req.configs);
        // A removed config takes its default value in the row (validated like any other change:
        // an unknown name is refused, remote.storage.enable cannot go back to false).
        const patch =
          set === undefined ? undefined : { ...(set as object), ...Object.fromEntries(removed.map((k) => [k, (DEFAULT_TOPIC_CONFIGS as unknown as Record<string, unknown>)[k] ?? null])) };
        const configs = mergeTopicConfigs(storedConfigs(row), patch);
        const explicit = new Set(explicitKeys(row));
        for (const k of removed) explicit.delete(k);
        for (const k of configKeysOf(set)) explicit.add(k);
        const own = { ...(JSON.parse(row.policies) as PolicyOverrides) } as Record<string, unknown>;
        if (req.policies !== undefined) {
          for (const [k, v] of Object.entries(parsePolicyMap(req.policies, TOPIC_POLICY_NAMES, true))) {
            if (v === null) delete own[k];
            else own[k] = v;
          }
        }
        const nsPolicies = this.#tenants.namespacePolicies(`${row.tenant}/${row.namespace}`) ?? {};
        const view = topicView(configs, explicit, nsPolicies, own as PolicyOverrides, { validate: true });
        const partitions = req.partitions === undefined ? current.partitions : checkPartitions(req.partitions);
        if (partitions < current.partitions) {
          return errorResult("PARTITION_DECREASE_NOT_ALLOWED", `Topic ${full} has ${current.partitions} partitions; the count can only grow.`, {
            partitions: current.partitions,
          });
        }
        // A PATCH that names configs pushes them even when the row already holds them: after a
        // push that failed (below, once the row was written) the same PATCH again is the repair.
        const pushConfigs = req.configs !== undefined || req.policies !== undefined || JSON.stringify(view.summaryConfigs) !== JSON.stringify(current.configs);
        // New partitions first (unreachable until the row says they exist), then the row, then
        // the configs of the existing partitions. A failure in the last step is answered as an
        // error; repeating the same PATCH pushes again (updateConfigs is idempotent).
        await this.#initPartitions(full, current.topicId, current.partitions, partitions, view.partitionConfigs);
        this.sql.run(
          "UPDATE topics SET partitions = ?, configs = ?, policies = ?, config_keys = ? WHERE name = ?",
          partitions,
          JSON.stringify(configs),
          JSON.stringify(own),
          JSON.stringify([...explicit].sort()),
          full,
        );
        if (pushConfigs) {
          const failed = await this.#pushConfigs(current.topicId, current.partitions, view.partitionConfigs);
          if (failed !== undefined) return failed;
        }
        return this.#describe({ ...current, partitions, configs: view.summaryConfigs, policies: view.policies, configSources: configSources(explicit, nsPolicies) });
      });
    });
  }

  deleteTopic(name: string, topicId?: string): Promise<RpcResult<object>> {
    return expected(() => {
      const full = parseTopicName(name).full;
      return this.#serial(async () => {
        const row = this.#row(full);
        if (row === undefined || (topicId !== undefined && row.topic_id !== topicId)) return unknownTopic(full);
        // Row first: from here on no gateway can resolve the topic (beyond its cache bound),
        // then each partition deletes its storage and refuses later calls.
        this.sql.run("DELETE FROM topics WHERE name = ?", full);
        await mapBounded(range(0, row.partitions), PARTITION_FANOUT, (p) => destroyPartition(this.env.PARTITION, row.topic_id, p, JSON.parse(row.configs) as Partial<TopicConfigs>));
        return { ok: true as const };
      });
    });
  }

  async initProducerId(): Promise<RpcResult<InitProducerResponse>> {
    const row = this.sql.first<{ value: number }>(
      `INSERT INTO counters (name, value) VALUES ('producer_id', 0)
       ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value`,
    );
    if (row === undefined) throw new Error("producer id counter returned no row");
    return { ok: true, producerId: row.value, producerEpoch: 0 };
  }

  // ---- security (src/auth/store.ts; SecurityTables does the work) ----

  async securitySnapshot(): Promise<RpcResult<{ snapshot: SecuritySnapshot }>> {
    return this.#security.snapshot();
  }

  async createAcls(bindings: AclBinding[]): Promise<RpcResult<{ created: number }>> {
    return this.#security.createAcls(bindings);
  }

  async deleteAcls(filter: AclFilter): Promise<RpcResult<{ deleted: AclBinding[] }>> {
    return this.#security.deleteAcls(filter);
  }

  async upsertScramUser(name: string, credential: ScramCredentialInput): Promise<RpcResult<{ user: ScramUserSummary }>> {
    return this.#security.upsertScramUser(name, credential);
  }

  async deleteScramUser(name: string, mechanism: ScramMechanism | null): Promise<RpcResult<object>> {
    return this.#security.deleteScramUser(name, mechanism);
  }

  async listScramUsers(): Promise<RpcResult<{ users: ScramUserSummary[] }>> {
    return this.#security.listScramUsers();
  }

  authenticateScram(name: string, password: string): Promise<RpcResult<{ generation: string }>> {
    return this.#security.authenticateScram(name, password);
  }

  async alterQuotas(entity: QuotaEntity, values: Partial<Record<QuotaKey, number | null>>): Promise<RpcResult<{ quota: QuotaEntry | null }>> {
    return this.#security.alterQuotas(entity, values);
  }

  /**
   * Everything this object holds, for the one-time import into the metadata quorum (docs/RAFT.md,
   * "Migration from MetadataDO"): its rows as they are (SCRAM credentials as stored: salt,
   * StoredKey, ServerKey in hex, never a password). Read-only; served between mutations.
   */
  exportMetadata(): Promise<RpcResult<{ export: MetadataExport }>> {
    return this.#serial(async () => {
      const security = this.#security.exportRows();
      return {
        ok: true as const,
        export: {
          topics: this.sql.all<TopicRow>("SELECT * FROM topics ORDER BY name"),
          tenants: this.sql.all<MetadataExport["tenants"][number]>("SELECT * FROM tenants ORDER BY name"),
          namespaces: this.sql.all<MetadataExport["namespaces"][number]>("SELECT * FROM namespaces ORDER BY name"),
          ...security,
          lastProducerId: this.sql.first<{ value: number }>("SELECT value FROM counters WHERE name = 'producer_id'")?.value ?? null,
        },
      };
    });
  }

  // ---- tenants and namespaces (durable-objects/metadata-tenants.ts) ----

  async createTenant(name: string, adminRoles: string[]): Promise<RpcResult<{ tenant: TenantInfo }>> {
    return this.#tenants.createTenant(name, adminRoles);
  }

  async listTenants(): Promise<RpcResult<{ tenants: string[] }>> {
    return { ok: true, tenants: this.#tenants.listTenants() };
  }

  async describeTenant(name: string): Promise<RpcResult<{ tenant: TenantInfo }>> {
    return this.#tenants.describeTenant(name);
  }

  /** Serialised with topic creates, so no topic lands in a namespace deleted meanwhile. */
  deleteTenant(name: string): Promise<RpcResult<object>> {
    return this.#serial(async () => this.#tenants.deleteTenant(name));
  }

  createNamespace(tenant: string, namespace: string, policies: unknown): Promise<RpcResult<{ namespace: NamespaceDescription }>> {
    return expected(async () => {
      const own = (policies === undefined || policies === null ? {} : parsePolicyMap(policies)) as PolicyOverrides;
      checkPolicyRules(policyValues(resolvePolicies(own, {})));
      return this.#tenants.createNamespace(tenant, namespace, own);
    });
  }

  async listNamespaces(tenant: string): Promise<RpcResult<{ namespaces: string[] }>> {
    return this.#tenants.listNamespaces(tenant);
  }

  async describeNamespace(full: string): Promise<RpcResult<{ namespace: NamespaceDescription }>> {
    const row = this.#tenants.namespaceRow(full);
    return row === undefined ? unknownNamespace(full) : { ok: true, namespace: this.#tenants.describeRow(row) };
  }

  deleteNamespace(full: string): Promise<RpcResult<object>> {
    return this.#serial(async () => this.#tenants.deleteNamespace(full));
  }

  /**
   * Sets (value) or removes (null) policies of a namespace, then pushes the new effective
   * configs and policies to every partition of its topics that the change affects. Everything
   * is validated first, against the namespace and against every topic (a retention that breaks
   * a topic's local.retention rule, a backlog quota above a retention size): a refused change
   * writes nothing. A failed push answers its error after the row was written; repeating the
   * same request pushes again. Errors: NAMESPACE_NOT_FOUND, INVALID_POLICY, INVALID_CONFIG.
   */
  setNamespacePolicies(full: string, changes: unknown): Promise<RpcResult<{ namespace: NamespaceDescription }>> {
    return expected(() => {
      const patch = parsePolicyMap(changes, undefined, true);
      return this.#serial(async () => {
        const current = this.#tenants.namespacePolicies(full);
        if (current === undefined) return unknownNamespace(full);
        const next = { ...current } as Record<string, unknown>;
        for (const [k, v] of Object.entries(patch)) {
          if (v === null) delete next[k];
          else next[k] = v;
        }
        const policies = next as PolicyOverrides;
        checkPolicyRules(policyValues(resolvePolicies(policies, {})));
        const [tenant, namespace] = full.split("/") as [string, string];
        const pushes: { topicId: string; partitions: number; configs: TopicConfigs }[] = [];
        for (const row of this.sql.all<TopicRow>("SELECT * FROM topics WHERE tenant = ? AND namespace = ? ORDER BY name", tenant, namespace)) {
          const before = this.#summary(row, current);
          const after = topicView(storedConfigs(row), new Set(explicitKeys(row)), policies, JSON.parse(row.policies) as PolicyOverrides, { validate: true, topic: row.name });
          if (JSON.stringify(before.policies) !== JSON.stringify(after.policies) || JSON.stringify(before.configs) !== JSON.stringify(after.summaryConfigs)) {
            pushes.push({ topicId: row.topic_id, partitions: row.partitions, configs: after.partitionConfigs });
          }
        }
        this.#tenants.writeNamespacePolicies(full, policies);
        for (const p of pushes) {
          const failed = await this.#pushConfigs(p.topicId, p.partitions, p.configs);
          if (failed !== undefined) return failed;
        }
        return { ok: true as const, namespace: this.#tenants.describeRow(this.#tenants.namespaceRow(full)!) };
      });
    });
  }

  // ---- helpers ----

  /** A topic row as the gateway sees it: effective configs and policies (namespace policies read unless given). */
  #summary(row: TopicRow, namespacePolicies?: PolicyOverrides): TopicSummary {
    const ns = namespacePolicies ?? this.#tenants.namespacePolicies(`${row.tenant}/${row.namespace}`) ?? {};
    const explicit = new Set(explicitKeys(row));
    const view = topicView(storedConfigs(row), explicit, ns, JSON.parse(row.policies) as PolicyOverrides);
    return { ...toSummary(row, view.summaryConfigs, view.policies), configSources: configSources(explicit, ns) };
  }

  /** Sends configs to partitions [0, partitions); the first failure, if any. */
  async #pushConfigs(topicId: string, partitions: number, configs: TopicConfigs): Promise<ErrorResult | undefined> {
    const results = await mapBounded(range(0, partitions), PARTITION_FANOUT, (p) => pushPartitionConfigs(this.env.PARTITION, topicId, p, configs));
    const failed = results.find((r) => !r.ok);
    return failed === undefined || failed.ok ? undefined : failed;
  }

  #row(full: string): TopicRow | undefined {
    return this.sql.first<TopicRow>("SELECT * FROM topics WHERE name = ?", full);
  }

  /** Runs mutations one after another. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(fn, fn);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async #initPartitions(topic: string, topicId: string, from: number, to: number, configs: TopicConfigs): Promise<void> {
    // Init may create the object: with the topic's replica.locations hint for r1 (docs/RAFT.md).
    const results = await mapBounded(range(from, to), PARTITION_FANOUT, (partition) =>
      replicaStubAt(this.env.PARTITION, topicId, partition, 0, configs).init({ topic, topicId, partition, configs }),
    );
    const failed = results.find((r) => !r.ok);
    if (failed !== undefined && !failed.ok) throw new EdgelogError("UNAVAILABLE", `Initialising a partition of ${topic} failed: ${failed.code}.`);
  }

  async #describe(summary: TopicSummary): Promise<RpcResult<{ topic: TopicDescription }>> {
    const results = await mapBounded(range(0, summary.partitions), PARTITION_FANOUT, (p) => describePartition(this.env.PARTITION, summary.topicId, p, summary.configs));
    const partitionDetails: PartitionDescription[] = [];
    for (const r of results) {
      if (!r.ok) return r;
      partitionDetails.push(r.partition);
    }
    return { ok: true, topic: { ...summary, partitionDetails } };
  }
}

function checkPartitions(n: unknown): number {
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_PARTITIONS) {
    throw new EdgelogError("INVALID_PARTITIONS", `partitions must be an integer in [1, ${MAX_PARTITIONS}], got ${JSON.stringify(n)}.`, { partitions: n });
  }
  return n;
}

function unknownTopic(name: string): ErrorResult {
  return errorResult("UNKNOWN_TOPIC_OR_PARTITION", `Topic ${name} does not exist.`, { topic: name });
}

function toSummary(row: TopicRow, configs: TopicConfigs, policies: EffectivePolicies): TopicSummary {
  return {
    name: row.name,
    tenant: row.tenant,
    namespace: row.namespace,
    topic: row.topic,
    topicId: row.topic_id,
    partitions: row.partitions,
    configs,
    policies,
    createdAt: row.created_at,
  };
}

function emptyPartitions(n: number): PartitionDescription[] {
  return range(0, n).map((partition) => ({ partition, logStartOffset: 0, highWatermark: 0, logEndOffset: 0, recordCount: 0, bytes: 0 }));
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
