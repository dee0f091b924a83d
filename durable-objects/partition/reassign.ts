/**
 * Replica reassignment of a replicated partition (docs/RAFT.md "Replica reassignment"; Kafka's
 * kafka-reassign-partitions / AlterPartitionReassignments, KIP-455, done as Raft single-server
 * membership changes), run at the leader, one step at a time:
 *
 * 1. **Add**: a new replica object (id `rN`, the next after every id in the configuration) is
 *    created with its location hint and initialised to join: an empty log and the current
 *    configuration with itself as a learner; then the leader proposes `addLearner`.
 * 2. **Catch up**: the learner gets the journal's entries, or, when the leader's journal no
 *    longer holds them, InstallSnapshot and pulls the partition's state (snapshot catch-up,
 *    partition/catch-up.ts). Learners never count for a quorum, so produce goes on meanwhile.
 *    Caught up = its match index has reached the leader's commit index.
 * 3. **Promote** the learner to voter (4 voters: a quorum of 3).
 * 4. **Remove** the replaced voter. When it is the leader itself, leadership is handed to another
 *    voter first (TimeoutNow) and the call answers NOT_LEADER_OR_FOLLOWER naming it: the gateway
 *    resends the request there, which resumes at this step.
 * 5. **Destroy** the removed object's data (its `destroy`, as a topic deletion does).
 *
 * The state of a reassignment is the Raft configuration itself (durable in every replica's
 * journal): a retry after any failure (a leader change, a crash of the new replica, a timeout)
 * resumes from what it finds: a learner present = resume at 2; more voters than the replication
 * factor = resume at 4.
 */
import type { ReassignOk, ReassignRequest, PartitionInit, PartitionRpc } from "../../src/partition/rpc.ts";
import { nextReplicaId, replicaIndexOf } from "../../src/partition/rpc.ts";
import { LOCATION_HINTS, replicationFactorOf, type LocationHint } from "../../src/protocol/config.ts";
import { errorResult, type RpcResult } from "../../src/protocol/errors.ts";
import { log } from "../../src/log/logger.ts";
import type { LogRoom } from "./log.ts";
import { REPLICA_TICK_MS, type PartitionReplica } from "./replica.ts";

/** How long the leader waits for a new replica to catch up before answering REQUEST_TIMED_OUT (ms); a retry resumes. */
export const REASSIGN_CATCH_UP_WAIT_MS = 30_000;

export interface ReassignHost {
  log: LogRoom;
  replica: PartitionReplica;
  /** A peer replica's object by id (with a location hint when it may be created by this call). */
  peer: (id: string, hint?: LocationHint) => PartitionRpc;
  /**
   * Whether r1 may be replaced: true when the partition's placement is in the metadata quorum's
   * records (EDGELOG_METADATA_QUORUM on), so nothing addresses r1 by name any more (docs/RAFT.md
   * "Partition placement"). With MetadataDO, r1 is the object it initialises, configures,
   * describes and destroys.
   */
  r1Replaceable: () => boolean;
}

export class ReplicaReassignment {
  readonly #h: ReassignHost;
  #running = false;
  /** How long {@link run} waits for the new replica to catch up (test builds shorten it through `setReplicaTestKnobs`). */
  catchUpWaitMs = REASSIGN_CATCH_UP_WAIT_MS;

  constructor(host: ReassignHost) {
    this.#h = host;
  }

  /** See {@link PartitionRpc.reassignReplica}. One at a time per leader. */
  async run(req: ReassignRequest): Promise<RpcResult<ReassignOk>> {
    const checked = checkRequest(req, this.#h.r1Replaceable());
    if (typeof checked === "object") return checked;
    if (this.#running) return errorResult("REASSIGNMENT_IN_PROGRESS", "A replica reassignment of this partition is running: retry when it has finished.", {});
    this.#running = true;
    try {
      return await this.#run(req.replace, checked === "" ? undefined : (checked as LocationHint));
    } finally {
      this.#running = false;
    }
  }

  async #run(replace: string, hint: LocationHint | undefined): Promise<RpcResult<ReassignOk>> {
    const h = this.#h;
    const s = h.log.state;
    const node = h.replica.node;
    const refused = h.replica.notLeader();
    if (refused !== null || node === null || s === null) return refused ?? errorResult("NOT_LEADER_OR_FOLLOWER", "No replica here.", {});
    const rf = replicationFactorOf(s.configs);
    const conf = node.conf;
    if (!conf.voters.includes(replace)) {
      return errorResult("INVALID_REQUEST", `${replace} is not a replica of this partition: one of ${conf.voters.join(", ")}.`, { field: "replace", replicas: conf.voters });
    }
    let added: string;
    if (conf.learners.length > 0) {
      // An earlier reassignment's learner: resume with it (the configuration is the state).
      added = conf.learners[0]!;
    } else if (conf.voters.length > rf) {
      // Promoted already; the removal is what is left.
      added = [...conf.voters].sort((a, b) => replicaIndexOf(b)! - replicaIndexOf(a)!)[0]!;
      if (added === replace) return errorResult("INVALID_REQUEST", `${replace} was just added by a reassignment: replace another replica.`, { field: "replace" });
      return this.#remove(replace, added);
    } else {
      added = nextReplicaId([...conf.voters, ...conf.learners]);
      const init: PartitionInit = {
        topic: s.topic,
        topicId: s.topicId,
        partition: s.partition,
        configs: s.configs,
        replica: added,
        join: { voters: conf.voters, learners: [added], ...(hint === undefined ? {} : { location: hint }) },
      };
      // This call creates the object: with its location hint.
      const out = await h.peer(added, hint).init(init);
      if (!out.ok) return out;
      const r = await h.replica.changeMembership({ type: "addLearner", node: added });
      if (!r.ok) return r;
      log.info("edgelog.partition.reassign_learner_added", { topic: s.topic, partition: s.partition, added, replace, location: hint ?? null });
    }
    const caughtUp = await this.#waitCaughtUp(added);
    if (caughtUp !== null) return caughtUp as RpcResult<never>;
    const p = await h.replica.changeMembership({ type: "promote", node: added });
    if (!p.ok) return p;
    return this.#remove(replace, added);
  }

  /** Waits until learner `id` has matched the leader's commit index (see the file comment). */
  async #waitCaughtUp(id: string): Promise<RpcResult<never> | null> {
    const deadline = Date.now() + this.catchUpWaitMs;
    for (;;) {
      const refused = this.#h.replica.notLeader();
      if (refused !== null) return refused as RpcResult<never>;
      const node = this.#h.replica.node!;
      if ((node.matchOf(id) ?? 0) >= node.commitIndex) return null;
      if (Date.now() >= deadline) {
        return errorResult("REQUEST_TIMED_OUT", `The new replica ${id} has not caught up within ${this.catchUpWaitMs} ms (it stays a learner): retry the reassignment to resume.`, {
          replica: id,
          match: node.matchOf(id) ?? 0,
          commitIndex: node.commitIndex,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, REPLICA_TICK_MS));
    }
  }

  /** Steps 4 and 5: leadership away from `replace` if it leads, its removal, its data destroyed. */
  async #remove(replace: string, added: string): Promise<RpcResult<ReassignOk>> {
    const h = this.#h;
    const node = h.replica.node!;
    if (node.id === replace) {
      const to = node.conf.voters.includes(added) ? added : node.conf.voters.find((v) => v !== replace)!;
      const t = await h.replica.transferLeadership(to);
      if (!t.ok) return t;
      // The new leader finishes: the gateway resends this request to the replica named here.
      return errorResult("NOT_LEADER_OR_FOLLOWER", `Replica ${replace} handed the leadership to ${t.leaderReplica} before its removal: the reassignment continues there.`, {
        replica: replace,
        leaderReplica: t.leaderReplica,
        leaderEpoch: t.leaderEpoch,
        replicas: node.conf.voters,
      });
    }
    const r = await h.replica.changeMembership({ type: "remove", node: replace });
    if (!r.ok) return r;
    const s = h.log.state!;
    // The removed replica gets no more messages; its data goes. A failure here leaves an orphan
    // object (logged), never a member: the configuration no longer names it.
    try {
      // Its own data only: a removed r1 would otherwise pass the destroy on to its old peers.
      const d = await h.peer(replace).destroy("replica");
      if (!d.ok && d.code !== "UNKNOWN_TOPIC_OR_PARTITION") log.warn("edgelog.partition.reassign_destroy_failed", { topic: s.topic, partition: s.partition, replica: replace, code: d.code });
    } catch (err) {
      log.warn("edgelog.partition.reassign_destroy_failed", { topic: s.topic, partition: s.partition, replica: replace, error: err });
    }
    log.info("edgelog.partition.reassign_done", { topic: s.topic, partition: s.partition, added, removed: replace });
    const now = h.replica.node!;
    return { ok: true, added, removed: replace, replicas: now.conf.voters, leaderReplica: now.leaderId ?? now.id, leaderEpoch: now.term };
  }
}

/** The request's shape: the location ("" when absent) or the refusal. */
function checkRequest(req: ReassignRequest, r1Replaceable: boolean): string | RpcResult<never> {
  if (typeof req !== "object" || req === null || replicaIndexOf(req.replace) === null) {
    return errorResult("INVALID_REQUEST", `replace must be a replica id such as "r2", got ${JSON.stringify(req?.replace ?? null)}.`, { field: "replace" });
  }
  if (req.replace === "r1" && !r1Replaceable) {
    return errorResult(
      "INVALID_REQUEST",
      "r1 is the partition object the metadata store addresses (init, configs, describe, destroy): replacing it needs the metadata quorum (EDGELOG_METADATA_QUORUM).",
      {
        field: "replace",
      },
    );
  }
  if (req.location === undefined) return "";
  if (!(LOCATION_HINTS as readonly string[]).includes(req.location)) {
    return errorResult("INVALID_REQUEST", `location must be one of ${LOCATION_HINTS.join(", ")}, got ${JSON.stringify(req.location)}.`, { field: "location" });
  }
  return req.location;
}
