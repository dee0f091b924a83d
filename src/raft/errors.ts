/**
 * A broken invariant of the Raft core or of its persistence contract: always a bug (of the core
 * or of the shell driving it), never an expected outcome. Expected outcomes (not the leader, a
 * pending configuration change) are typed results ({@link ProposeResult}).
 */
export class RaftContractError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RaftContractError";
  }
}

/** Throws {@link RaftContractError} when `cond` is false (TigerBeetle-style assertion). */
export function raftAssert(cond: boolean, message: string): asserts cond {
  if (!cond) throw new RaftContractError(message);
}
