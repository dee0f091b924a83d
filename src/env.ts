/**
 * Bindings of the Worker (wrangler.toml). Each Durable Object namespace is typed by the RPC
 * interface its class implements (the class checks it with `implements`), not by the class:
 * the gateway depends on the interfaces in src/ and never imports durable-objects/ (only
 * src/index.ts does, to export the classes to the runtime; test/unit/layering.test.ts).
 */
import type { MetadataExporter } from "./metadata/import.ts";
import type { AuthSettingsEnv } from "./auth/config.ts";
import type { QuotaRpc } from "./auth/quota-rpc.ts";
import type { SecurityStore } from "./auth/store.ts";
import type { GroupCoordinatorRpc, GroupDirectoryRpc } from "./groups/rpc.ts";
import type { TopicMetadataStore } from "./metadata/store.ts";
import type { PartitionRpc } from "./partition/rpc.ts";
import type { RaftMemberRpc } from "./raft/group.ts";
import type { RpcResult } from "./protocol/errors.ts";
import type { StreamRpc } from "./streams/rpc.ts";
import type { SubscriptionRpc } from "./subscriptions/rpc.ts";

/** A namespace whose stubs expose the methods of `T`. */
export type RpcNamespace<T> = DurableObjectNamespace<Rpc.DurableObjectBranded & T>;

/** BenchDO (durable-objects/bench.ts), bench-only: too small for a file of its own. */
export interface BenchRpc {
  /** Inserts `data` as one SQLite row. @returns the row id and the byte count. */
  insert(data: Uint8Array): Promise<RpcResult<{ id: number; bytes: number }>>;
  /** Sends `frame` to every socket of the broadcast room. @returns how many sockets it went to. */
  broadcast(frame: string): Promise<RpcResult<{ sockets: number }>>;
}

/** Auth vars and secrets (EDGELOG_AUTH, EDGELOG_JWT_SECRET, ...): src/auth/config.ts, docs/SECURITY.md. */
export interface Env extends AuthSettingsEnv {
  /** One object per topic-partition, named `${topicId}/${partition}`: the log, and the Durable Stream it may back. */
  PARTITION: RpcNamespace<PartitionRpc & StreamRpc & SubscriptionRpc>;
  /** One object, named "cluster": topics, producer ids, and the security tables (ACLs, SCRAM users, quotas). */
  METADATA: RpcNamespace<TopicMetadataStore & SecurityStore & MetadataExporter>;
  /** One object per client quota entity (durable-objects/quota.ts). */
  QUOTA: RpcNamespace<QuotaRpc>;
  /** Bench-only: raw single-row inserts, the ceiling a produce is measured against. */
  BENCH: RpcNamespace<BenchRpc>;
  /** One object per consumer group, named by the group id. */
  GROUP_COORDINATOR: RpcNamespace<GroupCoordinatorRpc>;
  /** One object, named "groups": the list of groups. */
  GROUP_DIRECTORY: RpcNamespace<GroupDirectoryRpc>;
  /** One object per member of a Raft group, named `${groupId}/${memberId}` (src/raft/group.ts, docs/RAFT.md). */
  RAFT_MEMBER: RpcNamespace<RaftMemberRpc>;
  /**
   * "1" allows Raft fault injection (`setFaults`) in dev and test builds; a production bundle
   * cannot enable it (durable-objects/raft/faults.ts). Not set in wrangler.toml. @default unset
   */
  EDGELOG_RAFT_FAULTS?: string;
  /**
   * The metadata quorum (docs/RAFT.md): unset, "off" or "0" keeps topics in MetadataDO; "1",
   * "3", ... or `m1@wnam,m2@enam,m3@weur` moves them to a Raft group of that many RaftMemberDO
   * objects (src/metadata/raft-store.ts). @default unset
   */
  EDGELOG_METADATA_QUORUM?: string;
  /**
   * R2 bucket of tiered storage (docs/LIFECYCLE.md "Tiered storage"): closed segments of topics
   * with `remote.storage.enable` are offloaded here. Optional: without it nothing is offloaded.
   */
  SEGMENTS?: R2Bucket;
  /** "1" exposes /bench/* routes. @default "0" */
  EDGELOG_BENCH_ROUTES?: string;
  /**
   * "off" sends every produce request as its own partition RPC instead of coalescing
   * concurrent requests for one partition (src/gateway/append-coalescer.ts). @default "on"
   */
  EDGELOG_APPEND_COALESCING?: string;
  /**
   * How long a produce is held by a backlog quota with action `producer_request_hold` before it
   * fails with BACKLOG_QUOTA_HOLD_TIMEOUT, in ms (docs/TENANTS.md). @default "30000" (Pulsar's client send timeout)
   */
  EDGELOG_BACKLOG_HOLD_TIMEOUT_MS?: string;
  /**
   * Largest share of wall time a partition's compaction steps take while appends flow, in (0, 1]
   * (src/lifecycle/pace.ts, docs/LIFECYCLE.md "Compaction"). @default "0.1"
   */
  EDGELOG_COMPACTION_DUTY_CYCLE?: string;
  /**
   * Bytes a partition's compaction reads per second at most, or "-1" for no limit: Kafka's
   * broker config `log.cleaner.io.max.bytes.per.second`. @default unset (no limit)
   */
  EDGELOG_COMPACTION_MAX_BYTES_PER_SECOND?: string;
  /** Durable Streams long-poll timeout in ms (docs/DURABLE-STREAMS.md). @default "20000" */
  STREAMS_LONG_POLL_TIMEOUT_MS?: string;
  /** Origins allowed to call /v1 from a browser, comma-separated, or "*" (docs/PROTOCOL.md, CORS). @default "*" */
  EDGELOG_CORS_ORIGINS?: string;
  /** Request headers allowed cross-origin besides Content-Type, Accept, Authorization, comma-separated. @default "" */
  EDGELOG_CORS_ALLOW_HEADERS?: string;
}
