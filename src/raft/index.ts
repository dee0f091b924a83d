/**
 * Public API of the pure Raft core (docs/RAFT.md). Import from here, not from the files behind it.
 */

// ---- the member ----
export { RaftNode, Ready, bootstrapStorage } from "./node.ts";
export type { RaftConfig, RaftStorageState } from "./node.ts";

// ---- shapes ----
export type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  MessageType,
  NodeId,
  ProposeError,
  ProposeResult,
  ReadState,
  Role,
  Snapshot,
  SnapshotMeta,
  SoftState,
} from "./types.ts";

// ---- errors ----
export { RaftContractError } from "./errors.ts";
