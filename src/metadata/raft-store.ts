/**
 * The metadata quorum (KRaft-style; docs/RAFT.md, "The metadata quorum"): a
 * {@link TopicMetadataStore} and {@link TenantStore} whose topics, producer-id blocks,
 * tenants, namespaces (with their policies), ACLs, SCRAM users and client quotas (it is also
 * the {@link SecurityStore} with the switch on) are the replicated state machine
 * (`metadata`, durable-objects/raft/metadata-machine.ts) of the Raft group `metadata`, one
 * RaftMemberDO per member. Behind the switch EDGELOG_METADATA_QUORUM (unset: today's
 * MetadataDO; {@link metadataQuorumMembers}). Tenant, namespace and ACL records carry a random
 * `requestId`, so this client's retry of a proposal whose outcome it does not know is applied
 * once.
 *
 * This class is the client side, run by the gateway (and by Durable Objects that read topic
 * metadata): it proposes commands at the leader it knows of, follows NOT_LEADER's `leaderId`,
 * tries the next member when one is down or no leader is known, and bootstraps the group's
 * members the first time one answers that it is not (the configuration is derived from the
 * same variable everywhere, so every bootstrap is the same one). Reads are linearizable
 * (ReadIndex at the leader). Every answer carries `metadataOffset`: the Raft index of the
 * metadata log it reflects.
 *
 * Partition lifecycle is driven from committed records (src/metadata/lifecycle.ts): a create,
 * alter or delete record leaves a durable task in the metadata state (initialise, push configs
 * to, or destroy the topic's partition objects); this client runs it right after the commit
 * and records `lifecycleDone`; `getTopic` runs a pending `sync` task it meets before answering
 * (so no caller routes to a partition before its init); and the metadata leader's sweep runs
 * whatever a crashed proposer left. Every answer is noted in the isolate's metadata offset
 * watermark (src/metadata/offsets.ts), which the gateway's topic cache follows.
 */
import type { AclBinding, AclFilter } from "../protocol/acl.ts";
import {
  checkPolicyRules,
  parsePolicyMap,
  policyValues,
  resolvePolicies,
  TOPIC_POLICY_NAMES,
  type NamespaceDescription,
  type PolicyOverrides,
  type TenantInfo,
} from "../protocol/policies.ts";
import type { Env } from "../env.ts";
import { describePartition, replicaIdsOf } from "../partition/replica-admin.ts";
import { completeLifecycleTask, LifecyclePartialError } from "./lifecycle.ts";
import { noteMetadataOffset } from "./offsets.ts";
import { configKeysOf } from "./topic-view.ts";
import { DEFAULT_TOPIC_CONFIGS, mergeTopicConfigs } from "../protocol/config.ts";
import { EdgelogError, errorResult, type ErrorResult, type RpcResult } from "../protocol/errors.ts";
import { MAX_PARTITIONS } from "../protocol/limits.ts";
import { parseTopicName } from "../protocol/names.ts";
import type { InitProducerResponse, PartitionDescription, PartitionPlacement, TopicDescription, TopicSummary } from "../protocol/types.ts";
import { LOCATION_HINTS, type LocationHint, type RaftGroupConfig, type RaftMemberRpc, type RaftMemberSpec, raftMemberName } from "../raft/group.ts";
import {
  encodeMetadataCommand,
  PRODUCER_ID_BLOCK,
  type LifecycleTask,
  type MetadataAnswer,
  type MetadataCommand,
  type MetadataExport,
  type MetadataQuery,
  type MetadataServeQuery,
} from "./commands.ts";
import { runMetadataImport } from "./import.ts";
import { toHex } from "../auth/hex.ts";
import type { ScramMechanism } from "../auth/scram.ts";
import type { QuotaEntity, QuotaEntry, QuotaKey, ScramCredentialInput, ScramUserSummary, SecurityStore, SecuritySnapshot } from "../auth/store.ts";
import type { AlterTopicInput, CreateTopicInput, TenantStore, TopicMetadataStore } from "./store.ts";

/** The bindings the store needs. */
export type MetadataQuorumEnv = Pick<Env, "RAFT_MEMBER" | "PARTITION">;

/** Group id of the metadata quorum. */
export const METADATA_GROUP_ID = "metadata";

/**
 * Members of the metadata quorum from EDGELOG_METADATA_QUORUM: unset, "", "off" or "0": none
 * (MetadataDO serves metadata); "1", "3", "5": that many members `m1`, `m2`, ...; or a list
 * `m1@wnam,m2@enam,m3@weur` (member ids with optional location hints).
 * @throws Error on a malformed value (a deployment mistake: every request would fail alike).
 */
export function metadataQuorumMembers(value: string | undefined): RaftMemberSpec[] | null {
  const v = (value ?? "").trim();
  if (v === "" || v === "off" || v === "0") return null;
  if (/^[1-7]$/.test(v)) return Array.from({ length: Number(v) }, (_, i) => ({ id: `m${i + 1}` }));
  const out: RaftMemberSpec[] = [];
  for (const part of v.split(",")) {
    const [id, hint] = part.trim().split("@") as [string, string | undefined];
    if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(id)) throw new Error(`EDGELOG_METADATA_QUORUM: bad member id ${JSON.stringify(id)}`);
    if (hint !== undefined && !(LOCATION_HINTS as readonly string[]).includes(hint)) throw new Error(`EDGELOG_METADATA_QUORUM: unknown location hint ${JSON.stringify(hint)}`);
    out.push(hint === undefined ? { id } : { id, locationHint: hint as LocationHint });
  }
  return out;
}

/** Tunables of the client and of the group it bootstraps (tests shorten the clock). */
export interface RaftMetadataStoreOptions {
  /** @default "metadata" */
  groupId?: string;
  /** Group clock (see RaftGroupConfig). @default 100 ms ticks, 10-tick election timeout */
  tickMs?: number;
  electionTicks?: number;
  /** Snapshot every this many applied records (see RaftGroupConfig). @default 1000 */
  compactEveryEntries?: number;
  /** How long one call keeps looking for a leader before answering UNAVAILABLE (ms). @default 15000 */
  deadlineMs?: number;
}

/** The leader each group was last answered by, per isolate. */
const knownLeaders = new Map<string, string>();
/**
 * Groups this isolate has seen the one-time import from MetadataDO finished in (docs/RAFT.md,
 * "Migration from MetadataDO"): once seen, it stays done (its marker is never removed).
 */
const importedGroups = new Set<string>();
/** Pause between two looks at an unfinished import (ms): one Raft tick. */
const IMPORT_POLL_MS = 100;
/** Commands and queries that run while the import is unfinished: the import's own. */
const IMPORT_OWN = new Set(["importMetadata", "importDone", "importStatus"]);

/** The producer-id block this isolate hands out from, per group (KIP-730: a lost block only wastes ids). */
const producerIdBlocks = new Map<string, { next: number; end: number }>();

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class RaftMetadataStore implements TopicMetadataStore, TenantStore, SecurityStore {
  readonly #env: MetadataQuorumEnv;
  readonly #config: RaftGroupConfig;
  readonly #ids: string[];
  readonly #deadlineMs: number;

  constructor(env: MetadataQuorumEnv, members: RaftMemberSpec[], options: RaftMetadataStoreOptions = {}) {
    this.#env = env;
    this.#ids = members.map((m) => m.id);
    this.#deadlineMs = options.deadlineMs ?? 15_000;
    this.#config = {
      groupId: options.groupId ?? METADATA_GROUP_ID,
      members,
      stateMachine: "metadata",
      ...(options.tickMs === undefined ? {} : { tickMs: options.tickMs }),
      ...(options.electionTicks === undefined ? {} : { electionTicks: options.electionTicks }),
      ...(options.compactEveryEntries === undefined ? {} : { compactEveryEntries: options.compactEveryEntries }),
    };
  }

  async createTopic(req: CreateTopicInput): Promise<RpcResult<{ topic: TopicDescription; metadataOffset?: number }>> {
    return guarded(async () => {
      const name = parseTopicName(req.name);
      const partitions = checkPartitions(req.partitions ?? 1);
      const configs = mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, req.configs);
      const own = (req.policies === undefined ? {} : parsePolicyMap(req.policies, TOPIC_POLICY_NAMES)) as PolicyOverrides;
      // Known already? Answer before creating partition objects for nothing.
      const seen = await this.#query({ type: "getTopic", name: name.full });
      if (!seen.ok) return seen;
      if ((seen.result as MetadataAnswer).ok) return errorResult("TOPIC_ALREADY_EXISTS", `Topic ${name.full} already exists.`, { topic: name.full });
      const topicId = crypto.randomUUID();
      const topic: TopicSummary = {
        name: name.full,
        tenant: name.tenant,
        namespace: name.namespace,
        topic: name.topic,
        topicId,
        partitions,
        configs,
        createdAt: Date.now(),
        policies: resolvePolicies({}, own),
      };
      // The namespace check and the validation against its policies happen at apply.
      const r = await this.#propose({ type: "createTopic", topic, policies: own, configKeys: [...configKeysOf(req.configs)], requireNamespace: true });
      if (!r.ok) return r;
      // The record is committed: the topic exists. Its partitions are initialised now; if that
      // fails (or this isolate dies first), the first getTopic or the leader's sweep does it.
      await this.#completeQuietly(r.answer.task);
      return { ok: true, topic: { ...r.answer.topic!, partitionDetails: emptyPartitions(partitions) }, metadataOffset: r.index };
    });
  }

  async listTopics(): Promise<RpcResult<{ topics: TopicSummary[]; metadataOffset?: number }>> {
    const r = await this.#query({ type: "listTopics" });
    if (!r.ok) return r;
    return { ok: true, topics: (r.result as { topics: TopicSummary[] }).topics, metadataOffset: r.index };
  }

  async getTopic(name: string): Promise<RpcResult<{ topic: TopicSummary; metadataOffset?: number }>> {
    return guarded(async () => {
      const full = parseTopicName(name).full;
      // A pending `sync` task: partitions a committed record created or re-configured and
      // nobody finished yet. Completed here, then read again (the done record is a newer
      // offset: the answer is tagged with an offset after it). Bounded: a topic altered
      // faster than this loop answers UNAVAILABLE (retriable).
      for (let attempt = 0; attempt < 3; attempt++) {
        const r = await this.#query({ type: "getTopic", name: full });
        if (!r.ok) return r;
        const a = r.result as MetadataAnswer;
        if (!a.ok) return toError(a);
        if (a.task?.action !== "sync") return { ok: true, topic: a.topic!, metadataOffset: r.index };
        try {
          await this.completeLifecycle(a.task);
        } catch (err) {
          // Every replicated partition has a majority of its replicas initialised (one is down):
          // they serve; the leader's sweep initialises the last one when it is back.
          if (err instanceof LifecyclePartialError && err.routable) return { ok: true, topic: a.topic!, metadataOffset: r.index };
          return errorResult("UNAVAILABLE", `The partitions of ${full} are not initialised yet: ${String(err)}`, { topic: full });
        }
      }
      return errorResult("UNAVAILABLE", `The partitions of ${full} are still being updated; retry.`, { topic: full });
    });
  }

  async describeTopic(name: string): Promise<RpcResult<{ topic: TopicDescription; metadataOffset?: number }>> {
    const r = await this.getTopic(name);
    if (!r.ok) return r;
    return this.#describe(r.topic, r.metadataOffset);
  }

  async alterTopic(name: string, req: AlterTopicInput): Promise<RpcResult<{ topic: TopicDescription; metadataOffset?: number }>> {
    return guarded(async () => {
      // Value checks before a record is written; the PATCH itself is applied at apply, to the
      // topic as the log has it there (src/metadata/commands.ts, alterTopic).
      if (req.policies !== undefined) parsePolicyMap(req.policies, TOPIC_POLICY_NAMES, true);
      const partitions = req.partitions === undefined ? undefined : checkPartitions(req.partitions);
      const cur = await this.getTopic(name);
      if (!cur.ok) return cur;
      const current = cur.topic;
      if (partitions !== undefined && partitions < current.partitions) {
        return errorResult("PARTITION_DECREASE_NOT_ALLOWED", `Topic ${current.name} has ${current.partitions} partitions; the count can only grow.`, { partitions: current.partitions });
      }
      const patch: { configs?: unknown; policies?: unknown } = {};
      if (req.configs !== undefined) patch.configs = req.configs;
      if (req.policies !== undefined) patch.policies = req.policies;
      const r = await this.#propose({ type: "alterTopic", name: current.name, topicId: current.topicId, ...(partitions === undefined ? {} : { partitions }), patch });
      if (!r.ok) return r;
      // New partitions and new configs reach the partition objects from the record's task.
      if (r.answer.task !== undefined) {
        try {
          await this.completeLifecycle(r.answer.task);
        } catch (err) {
          return errorResult("UNAVAILABLE", `The change of ${current.name} is committed; its partitions are not all updated yet (the metadata leader completes it): ${String(err)}`, {
            topic: current.name,
            metadataOffset: r.index,
          });
        }
      }
      return this.#describe(r.answer.topic!, r.index);
    });
  }

  async deleteTopic(name: string, topicId?: string): Promise<RpcResult<{ metadataOffset?: number }>> {
    return guarded(async () => {
      const full = parseTopicName(name).full;
      const r = await this.#propose({ type: "deleteTopic", name: full, topicId: topicId ?? null });
      if (!r.ok) return r;
      // The topic is gone from the metadata; its partitions' data goes now, or by the sweep.
      await this.#completeQuietly(r.answer.task);
      return { ok: true, metadataOffset: r.index };
    });
  }

  /**
   * Records a replicated partition's placement change (KRaft's PartitionChangeRecord; docs/RAFT.md
   * "Partition placement"): the replicas after a reassignment (absolute, with their location
   * hints) and/or the leader and its epoch as the partition's Raft group elected it (taken only
   * when not older than the recorded one). Idempotent: a retry records the same placement.
   * Errors: UNKNOWN_TOPIC_OR_PARTITION (no such topic id or partition, or not replicated), UNAVAILABLE.
   */
  async recordPlacement(change: Omit<Extract<MetadataCommand, { type: "partitionChange" }>, "type">): Promise<RpcResult<{ placement: PartitionPlacement; metadataOffset: number }>> {
    const r = await this.#propose({ type: "partitionChange", ...change });
    return r.ok ? { ok: true, placement: r.answer.placement!, metadataOffset: r.index } : r;
  }

  async initProducerId(): Promise<RpcResult<InitProducerResponse>> {
    const key = this.#config.groupId;
    let block = producerIdBlocks.get(key);
    if (block === undefined || block.next >= block.end) {
      const r = await this.#propose({ type: "allocateProducerIds", count: PRODUCER_ID_BLOCK });
      if (!r.ok) return r;
      block = { next: r.answer.firstProducerId!, end: r.answer.firstProducerId! + r.answer.count! };
      producerIdBlocks.set(key, block);
    }
    return { ok: true, producerId: block.next++, producerEpoch: 0 };
  }

  // ---- tenants and namespaces (docs/TENANTS.md): records of the same log as the topics ----

  async createTenant(name: string, adminRoles: string[]): Promise<RpcResult<{ tenant: TenantInfo }>> {
    const r = await this.#propose({ type: "createTenant", requestId: crypto.randomUUID(), name, adminRoles, createdAt: Date.now() });
    return r.ok ? { ok: true, tenant: r.answer.tenant! } : r;
  }

  async listTenants(): Promise<RpcResult<{ tenants: string[] }>> {
    const r = await this.#read<{ tenants: string[] }>({ type: "listTenants" });
    return r.ok ? { ok: true, tenants: r.tenants } : r;
  }

  async describeTenant(name: string): Promise<RpcResult<{ tenant: TenantInfo }>> {
    const r = await this.#read<{ tenant: TenantInfo }>({ type: "describeTenant", name });
    return r.ok ? { ok: true, tenant: r.tenant } : r;
  }

  async deleteTenant(name: string): Promise<RpcResult<object>> {
    const r = await this.#propose({ type: "deleteTenant", requestId: crypto.randomUUID(), name });
    return r.ok ? { ok: true } : r;
  }

  async createNamespace(tenant: string, namespace: string, policies: unknown): Promise<RpcResult<{ namespace: NamespaceDescription }>> {
    return guarded(async () => {
      const own = (policies === undefined || policies === null ? {} : parsePolicyMap(policies)) as PolicyOverrides;
      checkPolicyRules(policyValues(resolvePolicies(own, {})));
      const r = await this.#propose({ type: "createNamespace", requestId: crypto.randomUUID(), tenant, namespace, policies: own, createdAt: Date.now() });
      return r.ok ? { ok: true as const, namespace: r.answer.namespace! } : r;
    });
  }

  async listNamespaces(tenant: string): Promise<RpcResult<{ namespaces: string[] }>> {
    const r = await this.#read<{ namespaces: string[] }>({ type: "listNamespaces", tenant });
    return r.ok ? { ok: true, namespaces: r.namespaces } : r;
  }

  async describeNamespace(full: string): Promise<RpcResult<{ namespace: NamespaceDescription }>> {
    const r = await this.#read<{ namespace: NamespaceDescription }>({ type: "describeNamespace", name: full });
    return r.ok ? { ok: true, namespace: r.namespace } : r;
  }

  async deleteNamespace(full: string): Promise<RpcResult<object>> {
    const r = await this.#propose({ type: "deleteNamespace", requestId: crypto.randomUUID(), name: full });
    return r.ok ? { ok: true } : r;
  }

  /**
   * The change is checked and written at apply (against the namespace and every topic in it);
   * the record leaves a `sync` task per topic whose effective view changed, run here right
   * after the commit (or by the leader's sweep). A failed push answers UNAVAILABLE: the change
   * is committed and the leader completes it. Errors: NAMESPACE_NOT_FOUND, INVALID_POLICY, INVALID_CONFIG.
   */
  async setNamespacePolicies(full: string, changes: unknown): Promise<RpcResult<{ namespace: NamespaceDescription }>> {
    return guarded(async () => {
      const patch = parsePolicyMap(changes, undefined, true);
      const r = await this.#propose({ type: "setNamespacePolicies", requestId: crypto.randomUUID(), name: full, changes: patch });
      if (!r.ok) return r;
      const results = await Promise.allSettled((r.answer.tasks ?? []).map((t) => this.completeLifecycle(t)));
      const failed = results.find((x) => x.status === "rejected");
      if (failed !== undefined) {
        return errorResult(
          "UNAVAILABLE",
          `The policies of ${full} are committed; not every partition of its topics has them yet (the metadata leader completes it): ${String(failed.reason)}`,
          {
            namespace: full,
            metadataOffset: r.index,
          },
        );
      }
      return { ok: true as const, namespace: r.answer.namespace! };
    });
  }

  // ---- ACLs (the SecurityStore of src/auth/store.ts): records of the same log ----

  /** Every ACL binding, at a linearizable read. */
  async listAcls(): Promise<RpcResult<{ acls: AclBinding[] }>> {
    const r = await this.#read<{ acls: AclBinding[] }>({ type: "listAcls" });
    return r.ok ? { ok: true, acls: r.acls } : r;
  }

  async createAcls(bindings: AclBinding[]): Promise<RpcResult<{ created: number }>> {
    const r = await this.#propose({ type: "createAcls", requestId: crypto.randomUUID(), bindings });
    return r.ok ? { ok: true, created: r.answer.created! } : r;
  }

  async deleteAcls(filter: AclFilter): Promise<RpcResult<{ deleted: AclBinding[] }>> {
    const r = await this.#propose({ type: "deleteAcls", requestId: crypto.randomUUID(), filter });
    return r.ok ? { ok: true, deleted: r.answer.deleted! } : r;
  }

  // ---- SCRAM users and client quotas (KRaft's UserScramCredentialRecord, ClientQuotaRecord): records of the same log ----

  /** The gateway's security snapshot (ACLs, users' generations, quotas), at a linearizable read. */
  async securitySnapshot(): Promise<RpcResult<{ snapshot: SecuritySnapshot }>> {
    const r = await this.#read<{ snapshot: SecuritySnapshot }>({ type: "securitySnapshot" });
    return r.ok ? { ok: true, snapshot: r.snapshot } : r;
  }

  /** The credential goes into the record salted (StoredKey/ServerKey as hex), never the password. */
  async upsertScramUser(name: string, c: ScramCredentialInput): Promise<RpcResult<{ user: ScramUserSummary }>> {
    const credential = { mechanism: c.mechanism, salt: toHex(c.salt), iterations: c.iterations, storedKey: toHex(c.storedKey), serverKey: toHex(c.serverKey) };
    const generation = toHex(crypto.getRandomValues(new Uint8Array(16)));
    const r = await this.#propose({ type: "upsertScramUser", requestId: crypto.randomUUID(), name, credential, generation });
    return r.ok ? { ok: true, user: r.answer.user! } : r;
  }

  /** Errors: USER_NOT_FOUND. */
  async deleteScramUser(name: string, mechanism: ScramMechanism | null): Promise<RpcResult<object>> {
    const r = await this.#propose({ type: "deleteScramUser", requestId: crypto.randomUUID(), name, mechanism });
    return r.ok ? { ok: true } : r;
  }

  async listScramUsers(): Promise<RpcResult<{ users: ScramUserSummary[] }>> {
    const r = await this.#read<{ users: ScramUserSummary[] }>({ type: "listScramUsers" });
    return r.ok ? { ok: true, users: r.users } : r;
  }

  /**
   * Checks a password at the metadata leader (PBKDF2 there; its failed-attempt lock-out is in
   * that member's memory). Errors: UNAUTHENTICATED, THROTTLED (details.throttleTimeMs).
   */
  async authenticateScram(name: string, password: string): Promise<RpcResult<{ generation: string }>> {
    const q: MetadataServeQuery = { type: "authenticateScram", name, password };
    const r = await this.#call((m) => m.serve(q));
    if (!r.ok) return r;
    const a = r.result as { ok: true; generation: string } | (MetadataAnswer & { ok: false });
    return a.ok ? { ok: true, generation: a.generation } : toError(a);
  }

  async alterQuotas(entity: QuotaEntity, values: Partial<Record<QuotaKey, number | null>>): Promise<RpcResult<{ quota: QuotaEntry | null }>> {
    const r = await this.#propose({ type: "alterQuotas", requestId: crypto.randomUUID(), entity, values });
    return r.ok ? { ok: true, quota: r.answer.quota ?? null } : r;
  }

  /** Whether the one-time import from MetadataDO is done (docs/RAFT.md, "Migration from MetadataDO"). */
  async importStatus(): Promise<RpcResult<{ done: boolean }>> {
    return this.#read<{ done: boolean }>({ type: "importStatus" });
  }

  /**
   * Runs the import from MetadataDO into this group now (what the leader's sweep of the group
   * `metadata` does by itself; tests use it on groups of their own). Idempotent.
   */
  async importFrom(exported: MetadataExport, options: { stopAfterParts?: number } = {}): Promise<{ parts: number; imported: number }> {
    return runMetadataImport(
      exported,
      async (c) => {
        const r = await this.#propose(c);
        return r.ok ? r.answer : { ok: false, code: r.code, message: r.message ?? r.code };
      },
      options,
    );
  }

  // ---- partition lifecycle ----

  /**
   * Runs a committed record's partition task and records it done (src/metadata/lifecycle.ts).
   * Protected so a test can inject a crash between the record's commit and the partitions'
   * init or destroy (test/workers/metadata-quorum.test.ts).
   * @throws Error when a partition call or the done record fails: the task stays pending.
   */
  protected async completeLifecycle(task: LifecycleTask): Promise<void> {
    await completeLifecycleTask(this.#env.PARTITION, task, async (c) => {
      const r = await this.#propose(c);
      return r.ok ? r.answer : { ok: false, code: r.code, message: r.message ?? r.code };
    });
  }

  /** {@link completeLifecycle} where the record's answer does not depend on it: a failure is left to the sweep. */
  async #completeQuietly(task: LifecycleTask | undefined): Promise<void> {
    if (task === undefined) return;
    try {
      await this.completeLifecycle(task);
    } catch (err) {
      console.warn(`metadata quorum: the partition task of ${task.name} (record ${task.recordIndex}) is left to the leader's sweep`, err);
    }
  }

  // ---- the Raft client ----

  async #propose(c: MetadataCommand): Promise<RpcResult<{ index: number; answer: MetadataAnswer & { ok: true } }>> {
    if (!IMPORT_OWN.has(c.type)) {
      const waited = await this.#awaitImport();
      if (waited !== null) return waited;
    }
    const r = await this.#call((m) => m.propose(encodeMetadataCommand(c)));
    if (!r.ok) return r;
    const answer = r.result as MetadataAnswer;
    return answer.ok ? { ok: true, index: r.index, answer } : toError(answer);
  }

  async #query(q: MetadataQuery): Promise<RpcResult<{ index: number; result: unknown }>> {
    if (!IMPORT_OWN.has(q.type)) {
      const waited = await this.#awaitImport();
      if (waited !== null) return waited;
    }
    return this.#call((m) => m.read(q));
  }

  /**
   * The group `metadata` answers nothing until its one-time import from MetadataDO is done
   * (docs/RAFT.md, "Migration from MetadataDO"): a deployment switched to the quorum (or upgraded
   * to a version where it is the default) would otherwise answer "no such topic" for its topics
   * for the seconds until the first leader's sweep has imported them. Waits, looking every
   * {@link IMPORT_POLL_MS}, for the marker; once seen, never again in this isolate. Other group
   * ids (tests' own groups) never import and never wait.
   * @returns null when the import is done, else UNAVAILABLE (retriable) after deadlineMs.
   */
  async #awaitImport(): Promise<ErrorResult | null> {
    const group = this.#config.groupId;
    if (group !== METADATA_GROUP_ID || importedGroups.has(group)) return null;
    const deadline = Date.now() + this.#deadlineMs;
    for (;;) {
      const r = await this.#call((m) => m.read({ type: "importStatus" }));
      if (!r.ok) return r;
      if ((r.result as { ok?: boolean; done?: boolean }).done === true) {
        importedGroups.add(group);
        return null;
      }
      if (Date.now() > deadline) {
        return errorResult("UNAVAILABLE", `The metadata quorum (group ${group}) is still importing MetadataDO's state (docs/RAFT.md, "Migration from MetadataDO"): retry.`, {
          groupId: group,
        });
      }
      await sleep(IMPORT_POLL_MS);
    }
  }

  /** A query whose answer is a {@link MetadataAnswer}-shaped result or a typed error. */
  async #read<T extends object>(q: MetadataQuery): Promise<RpcResult<T>> {
    const r = await this.#query(q);
    if (!r.ok) return r;
    const a = r.result as ({ ok: true } & T) | (MetadataAnswer & { ok: false });
    return a.ok ? a : toError(a);
  }

  /** Runs `op` at the leader (see the file comment). UNAVAILABLE when no leader answers within deadlineMs. */
  async #call<T extends object>(op: (m: RaftMemberRpc) => Promise<RpcResult<T>>): Promise<RpcResult<T>> {
    const deadline = Date.now() + this.#deadlineMs;
    const group = this.#config.groupId;
    let target = knownLeaders.get(group) ?? this.#ids[0]!;
    let tried = 0;
    let last = "no member answered";
    for (;;) {
      let r: RpcResult<T> | null;
      try {
        r = await op(this.#member(target));
      } catch (err) {
        r = null;
        last = `${target}: ${String(err)}`;
      }
      if (r?.ok) {
        knownLeaders.set(group, target);
        const index = (r as { index?: unknown }).index;
        if (typeof index === "number") noteMetadataOffset(group, index);
        return r;
      }
      const notBootstrapped = r !== null && r.code === "INVALID_REQUEST" && r.details?.bootstrapped === false;
      if (notBootstrapped) await this.#bootstrap();
      else if (r !== null && r.code !== "NOT_LEADER" && r.code !== "REQUEST_TIMED_OUT") return r;
      if (r !== null) last = `${target}: ${notBootstrapped ? "not bootstrapped" : r.code}`;
      const hinted = notBootstrapped ? undefined : r?.details?.leaderId;
      if (typeof hinted === "string" && hinted !== target && this.#ids.includes(hinted)) target = hinted;
      else {
        tried++;
        target = this.#ids[tried % this.#ids.length]!;
        if (tried % this.#ids.length === 0) await sleep(50);
      }
      if (Date.now() > deadline) {
        knownLeaders.delete(group);
        return errorResult("UNAVAILABLE", `The metadata quorum (group ${group}) did not answer within ${this.#deadlineMs} ms: ${last}.`, { groupId: group });
      }
    }
  }

  /** Bootstraps every member (idempotent; a member that is down is skipped: the next call retries). */
  async #bootstrap(): Promise<void> {
    await Promise.all(
      this.#ids.map((id) =>
        this.#member(id)
          .bootstrap(this.#config, id)
          .catch(() => undefined),
      ),
    );
  }

  #member(id: string): RaftMemberRpc {
    const ns = this.#env.RAFT_MEMBER;
    const hint = this.#config.members.find((m) => m.id === id)?.locationHint;
    const oid = ns.idFromName(raftMemberName(this.#config.groupId, id));
    return (hint === undefined ? ns.get(oid) : ns.get(oid, { locationHint: hint })) as unknown as RaftMemberRpc;
  }

  async #describe(summary: TopicSummary, metadataOffset: number | undefined): Promise<RpcResult<{ topic: TopicDescription; metadataOffset?: number }>> {
    const results = await Promise.all(
      range(0, summary.partitions).map((p) => describePartition(this.#env.PARTITION, summary.topicId, p, summary.configs, replicaIdsOf(summary.placements, p, summary.configs))),
    );
    const partitionDetails: PartitionDescription[] = [];
    for (const r of results) {
      if (!r.ok) return r;
      partitionDetails.push(r.partition);
    }
    return metadataOffset === undefined ? { ok: true, topic: { ...summary, partitionDetails } } : { ok: true, topic: { ...summary, partitionDetails }, metadataOffset };
  }
}

/** An EdgelogError thrown by a shared validator, as a typed result (as MetadataDO's `expected`). */
async function guarded<T extends { ok: true }>(body: () => Promise<T | ErrorResult>): Promise<T | ErrorResult> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof EdgelogError) return errorResult(err.code, err.message, err.details);
    throw err;
  }
}

function toError(a: MetadataAnswer & { ok: false }): ErrorResult {
  return errorResult(a.code, a.message, a.details);
}

function checkPartitions(n: unknown): number {
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_PARTITIONS) {
    throw new EdgelogError("INVALID_PARTITIONS", `partitions must be an integer in [1, ${MAX_PARTITIONS}], got ${JSON.stringify(n)}.`, { partitions: n });
  }
  return n;
}

function emptyPartitions(n: number): PartitionDescription[] {
  return range(0, n).map((partition) => ({ partition, logStartOffset: 0, highWatermark: 0, logEndOffset: 0, recordCount: 0, bytes: 0 }));
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
