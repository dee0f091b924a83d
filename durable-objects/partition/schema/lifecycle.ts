/**
 * The lifecycle room's tables (durable-objects/partition/lifecycle.ts; docs/LIFECYCLE.md): its own
 * migrations, numbered from 1.
 * - `seg_segments`: the segment index, one row per segment keyed by its offset range (no column is
 *   added to `batches`, so existing partitions migrate without rewriting a batch: the room builds
 *   the rows of already stored batches in bounded slices after this migration, on its `index` timer);
 * - `seg_clean_state`: the compaction checkpoint (zero or one row, JSON);
 * - `seg_clean_keys` (migration 1; dropped by migration 2): the compaction key map as one row per
 *   key, upserted by every map step;
 * - `seg_clean_map` (migration 2): the compaction key map of the running pass as blob rows, one per
 *   map step (that step's changes) or a snapshot of the whole map, so that a restart rebuilds the
 *   map the pass keeps in memory (src/lifecycle/compaction.ts `encodeKeyRows`). A pass in progress
 *   when migration 2 runs maps its dirty range again (its checkpoint names no rows).
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
  {
    version: 2,
    name: "compaction key map as blob rows",
    up(sql) {
      sql.run(`
        DROP TABLE seg_clean_keys;
        CREATE TABLE seg_clean_map (seq INTEGER PRIMARY KEY, entries INTEGER NOT NULL, data BLOB NOT NULL);
      `);
    },
  },
];
