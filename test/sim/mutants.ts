/**
 * Deliberate bugs for the mutation check (test/sim/mutation.test.ts): the simulator must find
 * each within its default seed count. TEST CODE ONLY.
 *
 * How they stay out of production: the core's three rules below are `protected` methods of
 * RaftNode with the correct behaviour; a mutant is a subclass that lives here, under test/,
 * which no file under src/ or durable-objects/ imports (test/unit/raft-core.test.ts checks
 * that no production file names this module or subclasses RaftNode). There is no `bugs`
 * option in RaftConfig. The two shell-level mutants (skipping the persist before send,
 * answering reads without ReadIndex) are switches of the simulator itself.
 */
import { RaftNode, type RaftConfig, type RaftStorageState } from "../../src/raft/index.ts";
import type { Entry } from "../../src/raft/types.ts";

export type Mutation =
  /** Leader commits an entry of an older term by counting replicas (Raft paper Fig. 8). */
  | "commitOldTerm"
  /** Vote granted without the §5.4.1 up-to-date log check. */
  | "voteWithoutLogCheck"
  /** Follower cuts its log after prevLogIndex on every append, even a stale or duplicated one. */
  | "truncateOnStaleAppend"
  /** Shell sends a Ready's messages before its hard state and entries are durable. */
  | "skipPersistBeforeSend"
  /** Leader answers reads from its state machine without a ReadIndex quorum round. */
  | "readWithoutReadIndex";

export const MUTATIONS: readonly Mutation[] = ["commitOldTerm", "voteWithoutLogCheck", "truncateOnStaleAppend", "skipPersistBeforeSend", "readWithoutReadIndex"];

class CommitOldTerm extends RaftNode {
  protected override canCommitAt(_index: number): boolean {
    return true;
  }
}

class VoteWithoutLogCheck extends RaftNode {
  protected override candidateLogOk(_lastLogIndex: number, _lastLogTerm: number): boolean {
    return true;
  }
}

class TruncateOnStaleAppend extends RaftNode {
  protected override findConflict(entries: readonly Entry[]): number {
    return entries.length > 0 ? entries[0]!.index : 0;
  }
}

/** A RaftNode, or the mutant for `mutation` when it is one of the core's rules. */
export function makeNode(config: RaftConfig, storage: RaftStorageState, mutation: Mutation | undefined): RaftNode {
  switch (mutation) {
    case "commitOldTerm":
      return new CommitOldTerm(config, storage);
    case "voteWithoutLogCheck":
      return new VoteWithoutLogCheck(config, storage);
    case "truncateOnStaleAppend":
      return new TruncateOnStaleAppend(config, storage);
    default:
      return new RaftNode(config, storage);
  }
}
