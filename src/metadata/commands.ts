/**
 * The metadata quorum's records (docs/RAFT.md, "The metadata quorum"): the commands the
 * gateway proposes to the `metadata` Raft group and the reads it asks, as KRaft's metadata log
 * records (TopicRecord, PartitionChangeRecord, RemoveTopicRecord, ProducerIdsRecord; KIP-500,
 * KIP-730). Pure: shared by the store client (src/metadata/raft-store.ts) and the state
 * machine (durable-objects/raft/metadata-machine.ts).
 *
 * Everything a command needs is in it (the topic id, the creation time, the validated
 * configs), so applying it is deterministic on every member. The conditions that depend on
 * the state (exists, id matches, partitions only grow) are checked at apply, in log order, and
 * answered as {@link MetadataAnswer} errors; value checks (names, configs, counts) are done by
 * the proposer before it proposes.
 */
import type { AclBinding, AclFilter } from "../protocol/acl.ts";
import type { ScramMechanism } from "../auth/scram.ts";
import type { QuotaEntity, QuotaEntry, QuotaKey, ScramUserSummary } from "../auth/store.ts";
import type { ErrorCode } from "../protocol/errors.ts";
import type { NamespaceDescription, PolicyOverrides, TenantInfo } from "../protocol/policies.ts";
import type { PartitionPlacement, TopicConfigs, TopicSummary } from "../protocol/types.ts";

export type MetadataCommand =
  /**
   * A new topic. Applied again with the same topicId (a retry), it answers the topic as it is.
   * `topic.configs` are the topic's stored configs (defaults merged in), `policies` its own
   * policy overrides and `configKeys` the configs it set itself. With `requireNamespace` (every
   * record proposed since tenants moved into the quorum) its namespace must exist
   * (NAMESPACE_NOT_FOUND), and the effective configs and policies are validated against the
   * namespace's policies at apply (INVALID_CONFIG, INVALID_POLICY). Records from before carry
   * none of the three and apply as they did.
   */
  | { type: "createTopic"; topic: TopicSummary; policies?: PolicyOverrides; configKeys?: string[]; requireNamespace?: boolean }
  /**
   * Alters the topic of this id: `partitions` (absolute; absent keeps the count; only grows)
   * and either `patch` (a PATCH's configs and policies, null removing one, applied to the
   * topic as the log has it at this record, so concurrent alters never lose each other's
   * change; validated at apply: INVALID_CONFIG, INVALID_POLICY) or, in records from before
   * topic policies moved here, absolute `configs`. A patch that names configs or policies
   * pushes them to the partitions even when nothing changed (the repair of a push that failed).
   */
  | { type: "alterTopic"; name: string; topicId: string; partitions?: number; configs?: TopicConfigs; patch?: { configs?: unknown; policies?: unknown } }
  /** Removes the topic (of this id, when given). */
  | { type: "deleteTopic"; name: string; topicId: string | null }
  /** Hands out the next block of `count` producer ids (KIP-730's ProducerIdsRecord). */
  | { type: "allocateProducerIds"; count: number }
  /**
   * The partitions of topic `topicId` were brought to the state of record `throughIndex`
   * (the {@link LifecycleTask} of that record or an earlier one): removes the topic's task if
   * no later record replaced it.
   */
  | { type: "lifecycleDone"; topicId: string; throughIndex: number }
  /**
   * A replicated partition's placement changed (KRaft's PartitionChangeRecord; docs/RAFT.md
   * "Partition placement"): `replicas` (absolute: the voters after a replica reassignment, with
   * their location hints) and/or the leader its Raft group elected with its `leaderEpoch` (the
   * Raft term). The leader is taken only when its epoch is at least the recorded one (a late
   * report never moves it back). Applied again, it changes nothing (idempotent). Errors:
   * UNKNOWN_TOPIC_OR_PARTITION (no such topic id, or no placement: not replicated).
   */
  | { type: "partitionChange"; topicId: string; partition: number; replicas?: { id: string; location: string | null }[]; leader?: string; leaderEpoch?: number }
  // ---- tenants, namespaces, ACLs (docs/TENANTS.md, docs/SECURITY.md). Each carries a
  // `requestId` (a random id per request): applied again with the same id (the client's retry
  // after an unknown outcome), a record answers what it answered the first time and changes
  // nothing (the Raft thesis' client sessions, section 6.3).
  /** A tenant and its admin roles (`all` allow ACLs on the tenant, in the same apply). Errors: TENANT_ALREADY_EXISTS. */
  | { type: "createTenant"; requestId: string; name: string; adminRoles: string[]; createdAt: number }
  /** Errors: INVALID_REQUEST (built in), TENANT_NOT_FOUND, TENANT_NOT_EMPTY. Removes the literal ACLs on the tenant. */
  | { type: "deleteTenant"; requestId: string; name: string }
  /** `policies` already validated. Errors: TENANT_NOT_FOUND, NAMESPACE_ALREADY_EXISTS. */
  | { type: "createNamespace"; requestId: string; tenant: string; namespace: string; policies: PolicyOverrides; createdAt: number }
  /** Errors: INVALID_REQUEST (built in), NAMESPACE_NOT_FOUND, NAMESPACE_NOT_EMPTY. Removes the literal ACLs on the namespace. */
  | { type: "deleteNamespace"; requestId: string; name: string }
  /**
   * Sets (value) or removes (null) policies of a namespace (values already parsed). Checked at
   * apply against the namespace and every topic in it (INVALID_POLICY, INVALID_CONFIG: nothing
   * changes); leaves a `sync` task with `pushConfigs` for every topic whose effective view changed.
   * Errors: NAMESPACE_NOT_FOUND, INVALID_POLICY, INVALID_CONFIG.
   */
  | { type: "setNamespacePolicies"; requestId: string; name: string; changes: { [name: string]: unknown } }
  /** Adds ACL bindings (already validated); existing ones are kept once. */
  | { type: "createAcls"; requestId: string; bindings: AclBinding[] }
  /** Removes the bindings matching the filter. */
  | { type: "deleteAcls"; requestId: string; filter: AclFilter }
  /** Records a tenant and namespace for every topic whose namespace has none (topics created before tenants moved into the quorum). */
  | { type: "adoptNamespaces" }
  // ---- SCRAM users and client quotas (KRaft's UserScramCredentialRecord, ClientQuotaRecord) ----
  /**
   * Creates the user or replaces its credential for this mechanism (the gateway ran PBKDF2:
   * salt, StoredKey and ServerKey in hex, never the password); `generation` is the new random
   * id the gateway drew (tokens carry it). Answers `user`.
   */
  | { type: "upsertScramUser"; requestId: string; name: string; credential: ScramCredentialRecord; generation: string }
  /** Removes one mechanism's credential, or every one (null). Errors: USER_NOT_FOUND. */
  | { type: "deleteScramUser"; requestId: string; name: string; mechanism: ScramMechanism | null }
  /** Sets (number) or removes (null) quota values of one entity (values already validated). Answers `quota`. */
  | { type: "alterQuotas"; requestId: string; entity: QuotaEntity; values: Partial<Record<QuotaKey, number | null>> }
  // ---- the one-time import from MetadataDO (docs/RAFT.md, "Migration from MetadataDO") ----
  /**
   * A part of MetadataDO's state: each row is added only when the log has nothing by that key
   * (a topic by name or topic id, a tenant, a namespace, an ACL binding, a user's mechanism, a
   * quota key), so a part applied twice (an import that crashed half-way and ran again) adds
   * nothing the second time. Imported topics leave a `sync` task (their partitions exist: the
   * init is a no-op with the same topic id, and proves it). Answers `imported` (rows added).
   */
  | { type: "importMetadata"; part: Partial<MetadataExport> }
  /** The import is complete: it never runs again (the marker `metadata_import` in rsm_counters). */
  | { type: "importDone" };

/** Record types the state machine knows. */
export const METADATA_COMMAND_TYPES: readonly MetadataCommand["type"][] = [
  "createTopic",
  "alterTopic",
  "deleteTopic",
  "allocateProducerIds",
  "lifecycleDone",
  "partitionChange",
  "createTenant",
  "deleteTenant",
  "createNamespace",
  "deleteNamespace",
  "setNamespacePolicies",
  "createAcls",
  "deleteAcls",
  "adoptNamespaces",
  "upsertScramUser",
  "deleteScramUser",
  "alterQuotas",
  "importMetadata",
  "importDone",
];

export type MetadataQuery =
  | { type: "getTopic"; name: string }
  | { type: "listTopics" }
  | { type: "pendingLifecycle" }
  | { type: "listTenants" }
  | { type: "describeTenant"; name: string }
  | { type: "listNamespaces"; tenant: string }
  | { type: "describeNamespace"; name: string }
  | { type: "listAcls" }
  | { type: "listScramUsers" }
  /** The gateway's security snapshot (ACLs, user generations, quotas). */
  | { type: "securitySnapshot" }
  /** Whether the import from MetadataDO is done. */
  | { type: "importStatus" };

/**
 * A read that needs work beyond SQL (`serve` of the state machine, at the leader after a
 * ReadIndex): a SCRAM password check, PBKDF2 at the member, counted in its lock-out.
 */
export type MetadataServeQuery = { type: "authenticateScram"; name: string; password: string };

/** A SCRAM credential as a record carries it (RFC 5802 StoredKey/ServerKey; bytes as hex). */
export interface ScramCredentialRecord {
  mechanism: ScramMechanism;
  salt: string;
  iterations: number;
  storedKey: string;
  serverKey: string;
}

/** A stored SCRAM credential of one user and mechanism (export and snapshot form). */
export interface ScramUserExport extends ScramCredentialRecord {
  name: string;
  generation: string;
}

/** A row of the topics table, the same columns in MetadataDO and in the quorum's state machine. */
export type TopicRow = {
  name: string;
  tenant: string;
  namespace: string;
  topic: string;
  topic_id: string;
  partitions: number;
  /** The merged topic configs (JSON). */
  configs: string;
  created_at: number;
  /** The topic's own policy overrides (JSON; `{}` for topics from before their table's migration 3). */
  policies: string;
  /** JSON array of the configs the topic set itself; null for topics from before (read as "those that differ from their defaults"). */
  config_keys: string | null;
};

/** Rows of MetadataDO's tables, as `MetadataDO.exportMetadata` answers them (the columns of its tables). */
export interface MetadataExport {
  topics: TopicRow[];
  tenants: { name: string; allowed_clusters: string; created_at: number }[];
  namespaces: { name: string; tenant: string; namespace: string; policies: string; created_at: number }[];
  acls: AclBinding[];
  users: ScramUserExport[];
  quotas: { user: string; client_id: string; key: string; value: number }[];
  /** The last producer id MetadataDO handed out (null: none). */
  lastProducerId: number | null;
}

/**
 * The partition work a committed record leaves to do (docs/RAFT.md, "Partition lifecycle"):
 * the durable "pending" marker of the metadata log, one per topic id, replaced by each later
 * record of the topic and removed by {@link MetadataCommand} `lifecycleDone`. Every step is
 * idempotent (a partition's `init` of the same topic id is a no-op, `updateConfigs` sets
 * absolute values, `destroy` of a destroyed partition is a no-op), so whoever runs the task
 * (the proposer right after the commit, a reader that meets it, the leader's sweep) may run
 * it again after a crash half-way.
 */
export type LifecycleTask =
  | {
      /** Initialise partitions [initFrom, partitions) and, when pushConfigs, set `configs` on [0, initFrom). */
      action: "sync";
      topicId: string;
      name: string;
      initFrom: number;
      pushConfigs: boolean;
      partitions: number;
      configs: TopicConfigs;
      /** Index of the last record that set this task (the metadata offset). */
      recordIndex: number;
      /**
       * Per partition, the replica ids of its placement when the task was set (replicated topics
       * with a placement): configs go to these, not to r1..r3 fixed. Absent: r1..rf.
       */
      replicas?: string[][];
    }
  | {
      /** Destroy partitions [0, partitions) of the removed topic. */
      action: "destroy";
      topicId: string;
      name: string;
      partitions: number;
      recordIndex: number;
      /**
       * Per partition, the replica ids of its placement at the delete (replicated topics with a
       * placement): each is destroyed by itself, so replicas added by reassignments (r4, r5) go
       * too and a replica that is down keeps the task pending. Absent: through r1, as before.
       */
      replicas?: string[][];
    };

/**
 * A command's answer: the topic (create, alter), the removed topic (delete), the block
 * (allocate), the task the record left (create, alter, delete; getTopic too while one is
 * pending), `topicExists` (lifecycleDone), the tenant or namespace (their creates, describes
 * and policy changes), the ACL changes, or a typed error.
 */
export type MetadataAnswer =
  | {
      ok: true;
      topic?: TopicSummary;
      firstProducerId?: number;
      count?: number;
      task?: LifecycleTask;
      topicExists?: boolean;
      tenant?: TenantInfo;
      namespace?: NamespaceDescription;
      /** setNamespacePolicies: the partition tasks it left (one per affected topic). */
      tasks?: LifecycleTask[];
      created?: number;
      deleted?: AclBinding[];
      user?: ScramUserSummary;
      quota?: QuotaEntry | null;
      /** importMetadata: rows added. */
      imported?: number;
      /** partitionChange: the placement afterwards. */
      placement?: PartitionPlacement;
    }
  | { ok: false; code: ErrorCode; message: string; details?: Record<string, unknown> };

const enc = new TextEncoder();

export function encodeMetadataCommand(c: MetadataCommand): Uint8Array {
  return enc.encode(JSON.stringify(c));
}

/** Producer ids handed out per block (KIP-730 uses 1000 per broker). */
export const PRODUCER_ID_BLOCK = 1000;
