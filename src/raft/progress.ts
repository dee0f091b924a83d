/**
 * The leader's view of one follower's (or learner's) log, etcd-raft's Progress: what is known
 * to match (`match`), what to send next (`next`) and how to send it.
 * - `probe`: one append in flight until an answer (or a heartbeat answer) comes back, used
 *   while the match point is being found by backtracking;
 * - `replicate`: optimistic pipelining, at most `maxInflight` appends in flight;
 * - `snapshot`: an InstallSnapshot transfer is running (`snapOffset` is the next chunk's byte offset).
 */
import type { NodeId } from "./types.ts";

export type ProgressState = "probe" | "replicate" | "snapshot";

export class Progress {
  readonly id: NodeId;
  match = 0;
  next: number;
  state: ProgressState = "probe";
  /** probe: an append is in flight. */
  probeSent = false;
  /** replicate: last index of each append in flight. */
  inflights: number[] = [];
  /** snapshot: index of the snapshot being sent and the byte offset of the next chunk. */
  pendingSnapshot = 0;
  snapOffset = 0;
  /** Heard from since the last CheckQuorum round. */
  recentActive = false;

  constructor(id: NodeId, next: number) {
    this.id = id;
    this.next = next;
  }

  paused(maxInflight: number): boolean {
    switch (this.state) {
      case "probe":
        return this.probeSent;
      case "replicate":
        return this.inflights.length >= maxInflight;
      case "snapshot":
        return true;
    }
  }

  becomeProbe(): void {
    // After a snapshot, continue right after it (the follower now has it).
    if (this.state === "snapshot") this.next = Math.max(this.match + 1, this.pendingSnapshot + 1);
    else this.next = this.match + 1;
    this.state = "probe";
    this.probeSent = false;
    this.inflights = [];
    this.pendingSnapshot = 0;
    this.snapOffset = 0;
  }

  becomeReplicate(): void {
    this.state = "replicate";
    this.next = this.match + 1;
    this.probeSent = false;
    this.inflights = [];
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.state = "snapshot";
    this.pendingSnapshot = snapshotIndex;
    this.snapOffset = 0;
    this.inflights = [];
    this.probeSent = false;
  }

  /** A success answer up to `n`. Returns true when it moved `match`. */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    this.inflights = this.inflights.filter((i) => i > n);
    return updated;
  }

  /**
   * A rejection of the append whose prevLogIndex was `rejected`; `matchHint` is the largest
   * index the leader now believes may match. Returns false for a stale rejection (etcd-raft's MaybeDecrTo).
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === "replicate") {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }
}
