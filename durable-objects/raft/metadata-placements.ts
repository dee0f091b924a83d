/**
 * Partition placement in the metadata quorum (docs/RAFT.md "Partition placement"; KRaft's
 * PartitionRecord and PartitionChangeRecord): for every partition of a replicated topic, its
 * replica ids (the objects' names, src/partition/rpc.ts) with their location hints, and the
 * leader and leader epoch its Raft group last reported. Part of the `metadata` state machine
 * (./metadata-machine.ts), written only at apply, so every member holds the same rows.
 *
 * Table `rsm_placements(topic_id, partition, replicas, leader, leader_epoch)` (migration 5):
 * `replicas` is JSON `[{id, location}]` in id order. Rows exist for topics at
 * `replication.factor` > 1 only; a replicated topic recorded before the table existed gets its
 * rows (r1..rf with the `replica.locations` hints, leader unknown) from its next record that
 * touches it (an alter, a placement change, an import), so no member adds rows on its own.
 */
import { replicaIndexOf } from "../../src/partition/rpc.ts";
import { LOCATION_HINTS, replicaLocation, replicationFactorOf } from "../../src/protocol/config.ts";
import type { MetadataAnswer, MetadataCommand } from "../../src/metadata/commands.ts";
import type { PartitionPlacement, TopicConfigs } from "../../src/protocol/types.ts";
import type { Sql } from "../base.ts";

export function placementsMigrationUp(sql: Sql): void {
  sql.run(`
    CREATE TABLE rsm_placements (
      topic_id TEXT NOT NULL, partition INTEGER NOT NULL, replicas TEXT NOT NULL,
      leader TEXT, leader_epoch INTEGER NOT NULL,
      PRIMARY KEY (topic_id, partition)
    ) WITHOUT ROWID
  `);
}

export type PlacementRow = { topic_id: string; partition: number; replicas: string; leader: string | null; leader_epoch: number };

type Replica = PartitionPlacement["replicas"][number];

const byId = (a: Replica, b: Replica) => replicaIndexOf(a.id)! - replicaIndexOf(b.id)!;

function toPlacement(r: PlacementRow): PartitionPlacement {
  return { partition: r.partition, replicas: JSON.parse(r.replicas) as Replica[], leader: r.leader, leaderEpoch: r.leader_epoch };
}

/** The placement a replicated partition gets at creation: r1..rf with the topic's `replica.locations` hints. */
export function initialReplicas(configs: Partial<TopicConfigs>): Replica[] {
  return Array.from({ length: replicationFactorOf(configs) }, (_, i) => ({ id: `r${i + 1}`, location: replicaLocation(configs, i) ?? null }));
}

export class QuorumPlacements {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** Adds the initial placement of partitions [0, partitions) that have none (replicated topics only). */
  ensure(topicId: string, partitions: number, configs: Partial<TopicConfigs>): void {
    if (replicationFactorOf(configs) <= 1) return;
    const replicas = JSON.stringify(initialReplicas(configs));
    for (let p = 0; p < partitions; p++) {
      this.#sql.run("INSERT OR IGNORE INTO rsm_placements (topic_id, partition, replicas, leader, leader_epoch) VALUES (?, ?, ?, NULL, -1)", topicId, p, replicas);
    }
  }

  /** The topic's placements in partition order; undefined when it has none (factor 1, or not recorded yet). */
  of(topicId: string): PartitionPlacement[] | undefined {
    const rows = this.#sql.all<PlacementRow>("SELECT * FROM rsm_placements WHERE topic_id = ? ORDER BY partition", topicId);
    return rows.length === 0 ? undefined : rows.map(toPlacement);
  }

  /** Every partition's replica ids, for a lifecycle task (undefined: none recorded). */
  ids(topicId: string): string[][] | undefined {
    return this.of(topicId)?.map((p) => p.replicas.map((r) => r.id));
  }

  remove(topicId: string): void {
    this.#sql.run("DELETE FROM rsm_placements WHERE topic_id = ?", topicId);
  }

  /**
   * Applies a `partitionChange` to a partition of topic `topicId` whose topic has `partitions`
   * partitions and `configs` (null: the topic does not exist).
   */
  change(c: Extract<MetadataCommand, { type: "partitionChange" }>, topic: { partitions: number; configs: Partial<TopicConfigs> } | null): MetadataAnswer {
    const unknown: MetadataAnswer = {
      ok: false,
      code: "UNKNOWN_TOPIC_OR_PARTITION",
      message: `No replicated partition ${c.partition} of topic id ${c.topicId}.`,
      details: { topicId: c.topicId, partition: c.partition },
    };
    if (topic === null || c.partition >= topic.partitions) return unknown;
    this.ensure(c.topicId, topic.partitions, topic.configs);
    const row = this.#sql.first<PlacementRow>("SELECT * FROM rsm_placements WHERE topic_id = ? AND partition = ?", c.topicId, c.partition);
    if (row === undefined) return unknown;
    const cur = toPlacement(row);
    const replicas = c.replicas === undefined ? cur.replicas : [...c.replicas].sort(byId);
    let { leader, leaderEpoch } = cur;
    if (c.leader !== undefined && c.leaderEpoch !== undefined && c.leaderEpoch >= cur.leaderEpoch) {
      leader = c.leader;
      leaderEpoch = c.leaderEpoch;
    }
    // A leader the new replica set no longer holds is no leader any more (its epoch stays: a
    // late report of an older term still cannot come back).
    if (leader !== null && !replicas.some((r) => r.id === leader)) leader = null;
    this.#sql.run(
      "UPDATE rsm_placements SET replicas = ?, leader = ?, leader_epoch = ? WHERE topic_id = ? AND partition = ?",
      JSON.stringify(replicas),
      leader,
      leaderEpoch,
      c.topicId,
      c.partition,
    );
    return { ok: true, placement: { partition: c.partition, replicas, leader, leaderEpoch } };
  }

  image(): { placements: PlacementRow[] } {
    return { placements: this.#sql.all<PlacementRow>("SELECT * FROM rsm_placements ORDER BY topic_id, partition") };
  }

  restore(img: { placements?: PlacementRow[] }): void {
    this.#sql.run("DELETE FROM rsm_placements");
    for (const r of img.placements ?? []) {
      this.#sql.run("INSERT INTO rsm_placements (topic_id, partition, replicas, leader, leader_epoch) VALUES (?, ?, ?, ?, ?)", r.topic_id, r.partition, r.replicas, r.leader, r.leader_epoch);
    }
  }
}

/** The shape of a `partitionChange` record (a malformed one changes nothing, on every member alike). */
export function malformedPlacementRecord(c: MetadataCommand): string | null {
  if (c.type !== "partitionChange") return null;
  const ok =
    typeof c.topicId === "string" &&
    Number.isSafeInteger(c.partition) &&
    c.partition >= 0 &&
    (c.replicas === undefined ||
      (Array.isArray(c.replicas) &&
        c.replicas.length > 0 &&
        new Set(c.replicas.map((r) => r?.id)).size === c.replicas.length &&
        c.replicas.every(
          (r) => typeof r === "object" && r !== null && replicaIndexOf(r.id) !== null && (r.location === null || (LOCATION_HINTS as readonly string[]).includes(r.location)),
        ))) &&
    (c.leader === undefined) === (c.leaderEpoch === undefined) &&
    (c.leader === undefined || (replicaIndexOf(c.leader) !== null && Number.isSafeInteger(c.leaderEpoch) && c.leaderEpoch! >= 0)) &&
    (c.replicas !== undefined || c.leader !== undefined);
  return ok ? null : "partitionChange needs {topicId, partition, replicas?: [{id, location}], leader? with leaderEpoch?}";
}
