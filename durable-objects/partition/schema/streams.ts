/**
 * The streams room's tables (durable-objects/partition/streams/state.ts; Durable Streams,
 * docs/DURABLE-STREAMS.md): its own migrations, numbered from 1. `ds_stream` holds zero or one
 * row, the stream; `ds_producers` the idempotent-producer state per string Producer-Id.
 */
import type { Migration } from "../../base.ts";

/** The streams room's migrations (its own list, numbered from 1). */
export const STREAMS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "durable-streams",
    up(sql) {
      sql.run(`
        CREATE TABLE ds_stream (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          path TEXT NOT NULL,
          content_type TEXT NOT NULL,
          ttl_seconds INTEGER,
          expires_at_ms INTEGER,
          expiry_inherited INTEGER NOT NULL,
          last_access_ms INTEGER NOT NULL,
          closed INTEGER NOT NULL,
          closed_by_id TEXT,
          closed_by_epoch INTEGER,
          closed_by_seq INTEGER,
          stream_seq TEXT,
          fork_source_path TEXT,
          fork_source_topic TEXT,
          fork_source_topic_id TEXT,
          fork_anchor INTEGER,
          fork_sub_offset INTEGER NOT NULL,
          fork_offset INTEGER,
          visible_start INTEGER NOT NULL,
          ref_count INTEGER NOT NULL,
          soft_deleted INTEGER NOT NULL,
          created_at_ms INTEGER NOT NULL
        );
        CREATE TABLE ds_producers (
          producer_id TEXT PRIMARY KEY,
          epoch INTEGER NOT NULL,
          last_seq INTEGER NOT NULL,
          updated_at_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
      `);
    },
  },
];
