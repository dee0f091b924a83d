/**
 * The replicated state machine a Raft member runs (docs/RAFT.md, "Raft member Durable
 * Objects"): the application side of etcd's CommittedEntries. The member calls `apply` for each
 * committed normal entry, in log order, inside the same SQLite transaction that records the
 * applied index, so after a crash the state machine and the applied index agree: an entry is
 * applied exactly once per member.
 *
 * Rules for an implementation (they make every member reach the same state):
 * - `apply` and `restore` are the only places it writes SQL (its own tables, in its own room).
 * - `apply` is deterministic: no clock, no randomness, no reads of anything but its own tables
 *   and the entry; whatever a command needs (a time, an id) is in the command.
 * - A malformed command is still applied (deterministically: e.g. answered with an error
 *   result and no change), never thrown on: a throw would stop every member at that entry.
 * - `snapshot()` is the image at the applied index; `restore(image)` replaces all state with it.
 */
import type { Env } from "../../src/env.ts";
import type { RpcResult } from "../../src/protocol/errors.ts";
import type { ApplyResult, JsonValue } from "../../src/raft/group.ts";
import type { RoomSchema, Sql } from "../base.ts";
import { metadataStateMachine } from "./metadata-machine.ts";
import { sequenceStateMachine } from "./sequence.ts";

/** A committed normal entry as the state machine sees it. */
export interface CommittedCommand {
  /** Raft log index (>= 1). */
  index: number;
  /** Raft term of the entry (the leader epoch). */
  term: number;
  data: Uint8Array;
}

export interface ReplicatedStateMachine {
  /** The name a group configuration selects it by (`stateMachine`). */
  readonly name: string;
  /** Its room: its tables (prefix `rsm_`) and their migrations. */
  readonly schema: RoomSchema;
  /** Applies one committed command (inside the member's transaction) and answers the proposer. */
  apply(cmd: CommittedCommand): ApplyResult;
  /** The state machine image at the applied index (opaque bytes, carried by InstallSnapshot). */
  snapshot(): Uint8Array;
  /** Replaces all state with `image` (inside the member's transaction). */
  restore(image: Uint8Array): void;
  /** Answers a read from the applied state; writes nothing. */
  query(q: JsonValue): JsonValue;
  /**
   * Optional: answers a read that needs asynchronous work (the metadata machine's SCRAM
   * password check, PBKDF2), at the leader after a ReadIndex (`RaftMemberDO.serve`). Writes no
   * SQL; may keep memory of its own (the metadata machine's lock-out).
   */
  serve?(q: JsonValue): Promise<JsonValue>;
  /**
   * Optional side effects driven by committed state (the metadata machine's partition
   * lifecycle; docs/RAFT.md): run by the leader every `SWEEP_EVERY_TICKS` ticks, never two at
   * once, outside any transaction. It may call other objects and propose commands; it writes
   * no SQL itself (its effects on this state machine are commands). Must be idempotent: a new
   * leader runs it again.
   */
  sweep?(ctx: SweepContext): Promise<void>;
}

/** What a sweep gets from its member. */
export interface SweepContext {
  env: Env;
  /** The group this member belongs to. */
  groupId: string;
  /**
   * The first sweep since this member became the leader (or restarted as one): it runs at once,
   * so work that was pending when it took over may still be in its proposer's hands; a machine
   * should only note such work and do it at the next sweep, one period later.
   */
  firstOfTerm: boolean;
  /** Proposes a command at this member (NOT_LEADER if it lost leadership meanwhile). */
  propose(data: Uint8Array): Promise<RpcResult<{ index: number; term: number; result: ApplyResult }>>;
}

/** Builds a state machine over a member's SQLite storage. */
export type StateMachineFactory = (sql: Sql) => ReplicatedStateMachine;

/**
 * Every state machine a member can run. Each one's room is migrated in every member (a
 * Durable Object declares its rooms before it has read its group configuration), so its
 * tables exist, empty, in members of groups that run another one.
 */
export const STATE_MACHINES: readonly StateMachineFactory[] = [sequenceStateMachine, metadataStateMachine];
