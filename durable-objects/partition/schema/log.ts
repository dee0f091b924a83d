/**
 * The log room's tables (durable-objects/partition/log.ts): its own migrations, numbered from 1.
 * `meta` holds the partition's state as key/value rows; `batches` one row per stored record
 * batch, indexed by running max timestamp for the timestamp lookup (docs/ARCHITECTURE.md).
 * Migration 2: `batches_staged`, the batches a replica of a replicated partition pulls during a
 * snapshot catch-up (docs/RAFT.md "Snapshot catch-up"): invisible to every read, moved into
 * `batches` in the install's one transaction.
 */
import type { Migration } from "../../base.ts";

/** The log room's migrations (its own list, numbered from 1). */
export const LOG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "meta and batches",
    up(sql) {
      sql.run(`
        CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
        CREATE TABLE batches (
          base_offset INTEGER PRIMARY KEY,
          last_offset INTEGER NOT NULL,
          record_count INTEGER NOT NULL,
          producer_id INTEGER NOT NULL,
          producer_epoch INTEGER NOT NULL,
          base_sequence INTEGER NOT NULL,
          partition_leader_epoch INTEGER NOT NULL,
          attributes INTEGER NOT NULL,
          base_timestamp INTEGER NOT NULL,
          max_timestamp INTEGER NOT NULL,
          running_max_timestamp INTEGER NOT NULL,
          size_bytes INTEGER NOT NULL,
          data BLOB NOT NULL
        );
        CREATE INDEX batches_by_running_max_timestamp ON batches (running_max_timestamp, base_offset);
      `);
    },
  },
  {
    version: 2,
    name: "staged batches (snapshot catch-up)",
    up(sql) {
      sql.run(`
        CREATE TABLE batches_staged (
          base_offset INTEGER PRIMARY KEY,
          last_offset INTEGER NOT NULL,
          record_count INTEGER NOT NULL,
          producer_id INTEGER NOT NULL,
          producer_epoch INTEGER NOT NULL,
          base_sequence INTEGER NOT NULL,
          partition_leader_epoch INTEGER NOT NULL,
          attributes INTEGER NOT NULL,
          base_timestamp INTEGER NOT NULL,
          max_timestamp INTEGER NOT NULL,
          running_max_timestamp INTEGER NOT NULL,
          size_bytes INTEGER NOT NULL,
          data BLOB NOT NULL
        );
      `);
    },
  },
];
