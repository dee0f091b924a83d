/**
 * The narrow interface the gateway uses for security metadata (ACLs, SCRAM users, quotas),
 * implemented by MetadataDO (durable-objects/metadata-security.ts) next to the topics. With
 * the metadata quorum on (EDGELOG_METADATA_QUORUM), by the quorum's client
 * (src/metadata/raft-store.ts): ACLs, SCRAM users and quotas are records of the quorum's log
 * (docs/RAFT.md); password checks run at the metadata leader, whose memory holds the lock-out.
 * Expected failures are typed results.
 */
import type { RpcResult } from "../protocol/errors.ts";
import type { AclBinding, AclFilter } from "../protocol/acl.ts";
import type { ScramMechanism } from "./scram.ts";
import { METADATA_OBJECT_NAME, type MetadataStoreEnv } from "../metadata/store.ts";
import { metadataQuorumMembers, RaftMetadataStore } from "../metadata/raft-store.ts";

/** Kafka's client quota keys (KIP-55/KIP-124), Edgelog's units: bytes/s, bytes/s, requests/s. */
export const QUOTA_KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_rate"] as const;
export type QuotaKey = (typeof QUOTA_KEYS)[number];
/** The default entity name (Kafka's `<default>`). */
export const DEFAULT_ENTITY = "<default>";

/** One quota config entity: user and/or client id (each a name, `<default>`, or absent). */
export interface QuotaEntity {
  user: string | null;
  clientId: string | null;
}

export interface QuotaEntry extends QuotaEntity {
  values: Partial<Record<QuotaKey, number>>;
}

/** Everything the gateway caches per isolate (src/auth/cache.ts). */
export interface SecuritySnapshot {
  acls: AclBinding[];
  /** SCRAM user name -> generations of its current credentials (one per mechanism). */
  users: Record<string, string[]>;
  quotas: QuotaEntry[];
}

/** A credential computed by the gateway (PBKDF2 runs there, not in the metadata object). */
export interface ScramCredentialInput {
  mechanism: ScramMechanism;
  salt: Uint8Array;
  iterations: number;
  storedKey: Uint8Array;
  serverKey: Uint8Array;
}

export interface ScramUserSummary {
  name: string;
  mechanisms: { mechanism: ScramMechanism; iterations: number }[];
}

export interface SecurityStore {
  securitySnapshot(): Promise<RpcResult<{ snapshot: SecuritySnapshot }>>;
  /** Adds bindings (already validated); existing ones are kept once. */
  createAcls(bindings: AclBinding[]): Promise<RpcResult<{ created: number }>>;
  /** Removes the bindings matching the filter; returns them. */
  deleteAcls(filter: AclFilter): Promise<RpcResult<{ deleted: AclBinding[] }>>;
  /** Creates the user or replaces its credential for this mechanism (Kafka's AlterUserScramCredentials upsert). */
  upsertScramUser(name: string, credential: ScramCredentialInput): Promise<RpcResult<{ user: ScramUserSummary }>>;
  /** Errors: USER_NOT_FOUND. */
  deleteScramUser(name: string, mechanism: ScramMechanism | null): Promise<RpcResult<object>>;
  listScramUsers(): Promise<RpcResult<{ users: ScramUserSummary[] }>>;
  /**
   * Checks a password (PBKDF2 in the metadata object, so failed attempts are counted in one
   * place for every isolate). Errors: UNAUTHENTICATED, THROTTLED (details.throttleTimeMs).
   */
  authenticateScram(name: string, password: string): Promise<RpcResult<{ generation: string }>>;
  /** Sets (number) or removes (null) quota values of one entity. */
  alterQuotas(entity: QuotaEntity, values: Partial<Record<QuotaKey, number | null>>): Promise<RpcResult<{ quota: QuotaEntry | null }>>;
}

/**
 * The store, typed by its interface: MetadataDO "cluster", or with the metadata quorum on the
 * quorum's client ({@link RaftMetadataStore}: ACLs, SCRAM users and quotas are records of its
 * log, KRaft's AccessControlEntryRecord, UserScramCredentialRecord and ClientQuotaRecord;
 * docs/RAFT.md).
 * @throws Error when EDGELOG_METADATA_QUORUM is malformed.
 */
export function securityStore(env: MetadataStoreEnv): SecurityStore {
  const members = metadataQuorumMembers(env.EDGELOG_METADATA_QUORUM);
  return members === null ? (env.METADATA.getByName(METADATA_OBJECT_NAME) as unknown as SecurityStore) : new RaftMetadataStore(env, members);
}
