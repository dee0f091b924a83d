/**
 * MetadataDO: the cluster's topics and producer-id counter, one instance named "cluster".
 * Implements {@link TopicMetadataStore}; the gateway sees only that interface.
 *
 * Storage (SQLite, migration 1):
 * - topics(name PK = `tenant/namespace/topic`, tenant, namespace, topic, topic_id (random
 *   UUID), partitions, configs JSON, created_at ms);
 * - counters(name PK, value): `producer_id`, the last producer id handed out.
 * - acls, scram_users, quotas (migration 2): durable-objects/metadata-security.ts.
 *
 * Mutations (create/alter/delete) run one at a time (`#serial`): they await partition RPCs,
 * during which the input gate would otherwise let another mutation of the same topic in.
 *
 * Crash safety of create: partitions are initialised BEFORE the topic row is inserted, so a
 * failure half-way leaves only unreachable partition objects (their topic id is referenced by
 * nothing), never a visible topic with missing partitions.
 */
import type { Env } from "../src/env.ts";
import { METADATA_OBJECT_NAME, type AlterTopicInput, type CreateTopicInput, type TopicMetadataStore } from "../src/metadata/store.ts";
import { partitionStub } from "../src/partition/rpc.ts";
import { mergeTopicConfigs, DEFAULT_TOPIC_CONFIGS } from "../src/protocol/config.ts";
import { EdgelogError, errorResult, type ErrorResult, type RpcResult } from "../src/protocol/errors.ts";
import { MAX_PARTITIONS } from "../src/protocol/limits.ts";
import { parseTopicName } from "../src/protocol/names.ts";
import type { InitProducerResponse, PartitionDescription, TopicConfigs, TopicDescription, TopicSummary } from "../src/protocol/types.ts";
import { SqliteDurableObject, expected, type Migration } from "./base.ts";
import { SecurityTables, securityMigration } from "./metadata-security.ts";
import type { QuotaEntity, QuotaEntry, QuotaKey, ScramCredentialInput, ScramUserSummary, SecurityStore, SecuritySnapshot } from "../src/auth/store.ts";
import type { ScramMechanism } from "../src/auth/scram.ts";
import type { AclBinding, AclFilter } from "../src/protocol/acl.ts";

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
];

type TopicRow = {
  name: string;
  tenant: string;
  namespace: string;
  topic: string;
  topic_id: string;
  partitions: number;
  configs: string;
  created_at: number;
};

export { METADATA_OBJECT_NAME };

export class MetadataDO extends SqliteDurableObject<Env> implements TopicMetadataStore, SecurityStore {
  /** Tail of the mutation queue (see the file comment). */
  #tail: Promise<unknown> = Promise.resolve();
  /** ACLs, SCRAM users and quotas (src/auth/store.ts). */
  readonly #security = new SecurityTables(this.sql, this.ctx.storage);

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
      return this.#serial(async () => {
        if (this.#row(name.full) !== undefined) return errorResult("TOPIC_ALREADY_EXISTS", `Topic ${name.full} already exists.`, { topic: name.full });
        const topicId = crypto.randomUUID();
        await this.#initPartitions(name.full, topicId, 0, partitions, configs);
        const createdAt = Date.now();
        this.sql.run(
          `INSERT INTO topics (name, tenant, namespace, topic, topic_id, partitions, configs, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          name.full,
          name.tenant,
          name.namespace,
          name.topic,
          topicId,
          partitions,
          JSON.stringify(configs),
          createdAt,
        );
        const summary = toSummary(this.#row(name.full)!);
        return { ok: true as const, topic: { ...summary, partitionDetails: emptyPartitions(partitions) } };
      });
    });
  }

  async listTopics(): Promise<RpcResult<{ topics: TopicSummary[] }>> {
    return { ok: true, topics: this.sql.all<TopicRow>("SELECT * FROM topics ORDER BY name").map(toSummary) };
  }

  getTopic(name: string): Promise<RpcResult<{ topic: TopicSummary }>> {
    return expected(() => {
      const full = parseTopicName(name).full;
      const row = this.#row(full);
      return row === undefined ? unknownTopic(full) : { ok: true as const, topic: toSummary(row) };
    });
  }

  describeTopic(name: string): Promise<RpcResult<{ topic: TopicDescription }>> {
    return expected(async () => {
      const full = parseTopicName(name).full;
      const row = this.#row(full);
      if (row === undefined) return unknownTopic(full);
      return this.#describe(toSummary(row));
    });
  }

  alterTopic(name: string, req: AlterTopicInput): Promise<RpcResult<{ topic: TopicDescription }>> {
    return expected(() => {
      const full = parseTopicName(name).full;
      return this.#serial(async () => {
        const row = this.#row(full);
        if (row === undefined) return unknownTopic(full);
        const current = toSummary(row);
        const configs = mergeTopicConfigs(current.configs, req.configs);
        const partitions = req.partitions === undefined ? current.partitions : checkPartitions(req.partitions);
        if (partitions < current.partitions) {
          return errorResult("PARTITION_DECREASE_NOT_ALLOWED", `Topic ${full} has ${current.partitions} partitions; the count can only grow.`, {
            partitions: current.partitions,
          });
        }
        // A PATCH that names configs pushes them even when the row already holds them: after a
        // push that failed (below, once the row was written) the same PATCH again is the repair.
        const pushConfigs = req.configs !== undefined || JSON.stringify(configs) !== JSON.stringify(current.configs);
        // New partitions first (unreachable until the row says they exist), then the row, then
        // the configs of the existing partitions. A failure in the last step is answered as an
        // error; repeating the same PATCH pushes again (updateConfigs is idempotent).
        await this.#initPartitions(full, current.topicId, current.partitions, partitions, configs);
        this.sql.run("UPDATE topics SET partitions = ?, configs = ? WHERE name = ?", partitions, JSON.stringify(configs), full);
        if (pushConfigs) {
          const results = await Promise.all(range(0, current.partitions).map((p) => partitionStub(this.env.PARTITION, current.topicId, p).updateConfigs(configs)));
          const failed = results.find((r) => !r.ok);
          if (failed !== undefined) return failed;
        }
        return this.#describe({ ...current, partitions, configs });
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
        await Promise.all(range(0, row.partitions).map((p) => partitionStub(this.env.PARTITION, row.topic_id, p).destroy()));
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

  // ---- helpers ----

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
    const results = await Promise.all(range(from, to).map((partition) => partitionStub(this.env.PARTITION, topicId, partition).init({ topic, topicId, partition, configs })));
    const failed = results.find((r) => !r.ok);
    if (failed !== undefined && !failed.ok) throw new EdgelogError("UNAVAILABLE", `Initialising a partition of ${topic} failed: ${failed.code}.`);
  }

  async #describe(summary: TopicSummary): Promise<RpcResult<{ topic: TopicDescription }>> {
    const results = await Promise.all(range(0, summary.partitions).map((p) => partitionStub(this.env.PARTITION, summary.topicId, p).describe()));
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

function toSummary(row: TopicRow): TopicSummary {
  return {
    name: row.name,
    tenant: row.tenant,
    namespace: row.namespace,
    topic: row.topic,
    topicId: row.topic_id,
    partitions: row.partitions,
    // Defaults first: configs stored before a key existed (producer.id.expiration.ms) show its default.
    configs: { ...DEFAULT_TOPIC_CONFIGS, ...(JSON.parse(row.configs) as Partial<TopicConfigs>) },
    createdAt: row.created_at,
  };
}

function emptyPartitions(n: number): PartitionDescription[] {
  return range(0, n).map((partition) => ({ partition, logStartOffset: 0, highWatermark: 0, logEndOffset: 0, recordCount: 0, bytes: 0 }));
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
