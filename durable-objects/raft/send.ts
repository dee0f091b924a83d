/**
 * Sends a Ready's messages (etcd-raft's `Ready.Messages`) for a Raft member Durable Object
 * (RaftMemberDO, and a replicated partition's replica): one `deliver` call per peer, not
 * awaited. The persistence contract is checked once more at the door (docs/RAFT.md "The
 * persistence contract"): an append never carries entries the member has not written, and a
 * message never carries a term it has not written (a pre-vote and its answer carry the term a
 * pre-candidate would take: never written). Fault injection (dev and test builds only,
 * ./faults.ts) drops or delays messages, drops every message to a peer named in `dropTo` (a
 * link fault; `dropFrom` is applied by the receiver), and a crashed member sends nothing.
 */
import type { RaftFaults } from "../../src/raft/group.ts";
import type { Message, NodeId } from "../../src/raft/index.ts";
import { linkDropped } from "./faults.ts";

export interface RaftSender {
  /** The member's durable log end index and hard-state term. */
  durable(): { lastIndex: number; term: number };
  /** Asserts the contract (throws, the member's own way, when `cond` is false). */
  check(cond: boolean, message: string): void;
  /** The faults in force now (read again when a delayed send goes). */
  faults(): RaftFaults;
  deliver(to: NodeId, messages: Message[]): Promise<unknown>;
  /** A delivery failed: the message is lost (Raft resends). */
  lost?(to: NodeId): void;
}

export function sendMessages(messages: readonly Message[], s: RaftSender): void {
  if (messages.length === 0) return;
  const { lastIndex, term } = s.durable();
  const byPeer = new Map<NodeId, Message[]>();
  for (const m of messages) {
    if (m.type === "append" && m.entries.length > 0) s.check(m.entries[m.entries.length - 1]!.index <= lastIndex, `append to ${m.to} carries entries beyond the durable log`);
    if (m.type !== "preVote" && m.type !== "preVoteResp") s.check(m.term <= term, `message ${m.type} to ${m.to} in term ${m.term} before that term was written`);
    let batch = byPeer.get(m.to);
    if (batch === undefined) byPeer.set(m.to, (batch = []));
    batch.push(m);
  }
  const { dropRate = 0, delayMs = 0 } = s.faults();
  for (const [to, batch] of byPeer) {
    if (linkDropped(s.faults(), "to", to)) continue;
    const kept = dropRate > 0 ? batch.filter(() => Math.random() >= dropRate) : batch;
    if (kept.length === 0) continue;
    const go = async (): Promise<void> => {
      if (s.faults().crashed === true || linkDropped(s.faults(), "to", to)) return;
      try {
        await s.deliver(to, kept);
      } catch {
        s.lost?.(to);
      }
    };
    if (delayMs > 0) setTimeout(() => void go(), delayMs);
    else void go();
  }
}
