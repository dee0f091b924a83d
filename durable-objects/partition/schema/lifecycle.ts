/**
 * The lifecycle room's tables (durable-objects/partition/lifecycle.ts; docs/LIFECYCLE.md): its own
 * migrations, numbered from 1.
 * - `seg_segments`: the segment index, one row per segment keyed by its offset range (no column is
 *   added to `batches`, so existing partitions migrate without rewriting a batch: the room builds
 *   the rows of already stored batches in bounded slices after this migration, on its `index` timer);
 * - `seg_clean_state`: the compaction checkpoint (zero or one row, JSON);
 * - `seg_clean_keys`: the compaction key map (key bytes as a one-char-per-byte string -> latest
 *   dirty offset), so that memory stays bounded and a crash resumes the pass.
 */
import type { Migration } from "../../base.ts";

/** The lifecycle room's migrations (its own list, numbered from 1). */
export const LIFECYCLE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "segment index and compaction state",
    up(sql) {
      sql.run(`
        CREATE TABLE seg_segments (
          id INTEGER PRIMARY KEY,
          base_offset INTEGER NOT NULL,
          last_offset INTEGER NOT NULL,
          bytes INTEGER NOT NULL,
          records INTEGER NOT NULL,
          max_timestamp INTEGER NOT NULL,
          first_append_ms INTEGER NOT NULL,
          last_append_ms INTEGER NOT NULL,
          closed INTEGER NOT NULL,
          location TEXT NOT NULL,
          r2_key TEXT,
          remote TEXT NOT NULL
        );
        CREATE TABLE seg_clean_state (id INTEGER PRIMARY KEY CHECK (id = 1), checkpoint TEXT NOT NULL);
        CREATE TABLE seg_clean_keys (key BLOB PRIMARY KEY, offset INTEGER NOT NULL) WITHOUT ROWID;
      `);
    },
  },
];
