/**
 * The producers room's tables (durable-objects/partition/producers.ts): its own migrations,
 * numbered from 1. Migration 2 adds the last append time that `producer.id.expiration.ms`
 * expiry reads (KIP-854).
 */
import type { Migration } from "../../base.ts";

/** The producers room's migrations (its own list, numbered from 1). */
export const PRODUCERS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "producer state",
    up(sql) {
      sql.run(`
        CREATE TABLE producers (
          producer_id INTEGER PRIMARY KEY,
          producer_epoch INTEGER NOT NULL,
          last_sequence INTEGER NOT NULL
        );
        CREATE TABLE producer_batches (
          producer_id INTEGER NOT NULL,
          producer_epoch INTEGER NOT NULL,
          base_sequence INTEGER NOT NULL,
          last_sequence INTEGER NOT NULL,
          first_offset INTEGER NOT NULL,
          last_offset INTEGER NOT NULL,
          PRIMARY KEY (producer_id, first_offset)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 2,
    name: "producer last append time",
    up(sql) {
      // Producers stored before this migration get a whole expiration window from now.
      sql.run("ALTER TABLE producers ADD COLUMN last_append_ms INTEGER NOT NULL DEFAULT 0");
      sql.run("UPDATE producers SET last_append_ms = ?", Date.now());
    },
  },
];
