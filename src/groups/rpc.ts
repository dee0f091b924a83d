/**
 * RPC interfaces of the consumer-group Durable Objects, as the gateway calls them:
 * - the group coordinator (durable-objects/group-coordinator.ts), one per group, addressed by
 *   the group id;
 * - the group directory (durable-objects/group-directory.ts), one instance, which lists groups.
 * Expected outcomes are typed results; a thrown error is a bug or a platform failure.
 * The bindings (GROUP_COORDINATOR, GROUP_DIRECTORY) are in src/env.ts, typed by these interfaces.
 */
import type { RpcResult } from "../protocol/errors.ts";
import type {
  ConsumerGroupHeartbeatResponse,
  GroupConfigs,
  GroupDescription,
  GroupListing,
  LeaveGroupResponse,
  OffsetCommitResponse,
  OffsetFetchResponse,
  ResetOffsetsResponse,
} from "../protocol/groups.ts";
import type { CommitInput, HeartbeatInput, LeaveInput } from "./coordinator-core.ts";
import type { OffsetFetchInput, ResetOffsetsInput } from "./requests.ts";

export interface GroupCoordinatorRpc {
  /**
   * `principal`: the authenticated caller, whose topic `describe` permission filters the
   * member's subscription (KIP-848); null when auth is off or the caller is a superuser.
   * Errors: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED, INVALID_REQUEST, UNAVAILABLE.
   */
  heartbeat(groupId: string, req: HeartbeatInput, principal?: string | null): Promise<RpcResult<ConsumerGroupHeartbeatResponse>>;
  /** Errors: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, INVALID_REQUEST. */
  leave(groupId: string, req: LeaveInput): Promise<RpcResult<LeaveGroupResponse>>;
  /** All or none. Errors: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH, UNASSIGNED_PARTITION, UNKNOWN_TOPIC_OR_PARTITION. */
  commitOffsets(groupId: string, req: CommitInput): Promise<RpcResult<OffsetCommitResponse>>;
  /** Committed offsets resolved against the log bounds with the reset policy (per-partition errors inside). */
  fetchOffsets(groupId: string, req: OffsetFetchInput): Promise<RpcResult<OffsetFetchResponse>>;
  /** Errors: GROUP_ID_NOT_FOUND. */
  describe(groupId: string): Promise<RpcResult<GroupDescription>>;
  /** Errors: NON_EMPTY_GROUP, UNKNOWN_TOPIC_OR_PARTITION. */
  resetOffsets(groupId: string, req: ResetOffsetsInput): Promise<RpcResult<ResetOffsetsResponse>>;
  /** Errors: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP. */
  deleteGroup(groupId: string): Promise<RpcResult<object>>;
  /** Creates the group (empty) if needed. */
  alterConfigs(groupId: string, configs: Partial<GroupConfigs>): Promise<RpcResult<{ configs: GroupConfigs }>>;
}

export interface GroupDirectoryRpc {
  /** Records the group's listing if `version` is newer than the stored one. */
  upsert(listing: GroupListing, version: number): Promise<RpcResult<object>>;
  /** Removes the group if `version` is newer than the stored one (a tombstone keeps the version). */
  remove(groupId: string, version: number): Promise<RpcResult<object>>;
  list(): Promise<RpcResult<{ groups: GroupListing[] }>>;
}

export const GROUP_DIRECTORY_OBJECT_NAME = "groups";

/** The coordinator of `groupId`. `env` is the Worker's Env (structurally: this module does not import src/env.ts, which imports it). */
export function groupCoordinatorStub(env: { GROUP_COORDINATOR: DurableObjectNamespace<Rpc.DurableObjectBranded & GroupCoordinatorRpc> }, groupId: string): GroupCoordinatorRpc {
  // The namespace's own stub type wraps results in Rpc.Result<>; the plain interface is what
  // callers need and what the class implements.
  return env.GROUP_COORDINATOR.getByName(groupId) as unknown as GroupCoordinatorRpc;
}

export function groupDirectoryStub(env: { GROUP_DIRECTORY: DurableObjectNamespace<Rpc.DurableObjectBranded & GroupDirectoryRpc> }): GroupDirectoryRpc {
  return env.GROUP_DIRECTORY.getByName(GROUP_DIRECTORY_OBJECT_NAME) as unknown as GroupDirectoryRpc;
}
