/**
 * Fixtures of objects created before per-room schema versions (issue 9): the single
 * `_schema(id = 1, version)` row and the migration function of durable-objects/base.ts as it
 * was, with the migrations of PartitionDO (v1 log, v2 Durable Streams) and
 * GroupCoordinatorDO (v1) frozen as they shipped. Never edit them: they are what old objects
 * hold.
 *
 * `makeLegacy` rebuilds an object's storage the old way: it keeps the rows of the legacy
 * tables (written by today's code through the real gateway), drops every table, runs the
 * OLD migrate path, and puts the rows back. The object is then exactly what the old code
 * left: old schema, old version row, the same data.
 */

interface LegacyMigration {
  version: number;
  name: string;
  sql: string;
}

/** PartitionDO before issue 9: `_schema` version 2. */
export const LEGACY_PARTITION: readonly LegacyMigration[] = [
  {
    version: 1,
    name: "log",
    sql: `
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
      ) WITHOUT ROWID;`,
  },
  {
    version: 2,
    name: "durable-streams",
    sql: `
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
      ) WITHOUT ROWID;`,
  },
];

/** GroupCoordinatorDO before issue 9: `_schema` version 1, its timers in `schedule(key, due_ms)`. */
export const LEGACY_COORDINATOR: readonly LegacyMigration[] = [
  {
    version: 1,
    name: "group",
    sql: `
      CREATE TABLE grp (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        group_id TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        assignor TEXT NOT NULL,
        configs TEXT NOT NULL,
        group_epoch INTEGER NOT NULL,
        target_epoch INTEGER NOT NULL,
        subscription_metadata TEXT NOT NULL,
        empty_since_ms INTEGER
      );
      CREATE TABLE members (member_id TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE targets (member_id TEXT PRIMARY KEY, assignment TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE offsets (
        topic TEXT NOT NULL,
        partition INTEGER NOT NULL,
        committed_offset INTEGER NOT NULL,
        metadata TEXT NOT NULL,
        commit_ms INTEGER NOT NULL,
        topic_id TEXT NOT NULL,
        PRIMARY KEY (topic, partition)
      ) WITHOUT ROWID;
      CREATE TABLE schedule (key TEXT PRIMARY KEY, due_ms INTEGER NOT NULL) WITHOUT ROWID;`,
  },
];

/** The old migrate path of durable-objects/base.ts, verbatim in behaviour. */
export function legacyMigrate(storage: DurableObjectStorage, migrations: readonly LegacyMigration[]): number {
  const sql = storage.sql;
  sql.exec("CREATE TABLE IF NOT EXISTS _schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)");
  let version = sql.exec<{ version: number }>("SELECT version FROM _schema WHERE id = 1").toArray()[0]?.version ?? 0;
  for (const m of migrations) {
    if (m.version <= version) continue;
    if (m.version !== version + 1) throw new Error(`schema migration ${m.version} (${m.name}) follows version ${version}`);
    storage.transactionSync(() => {
      sql.exec(m.sql);
      sql.exec("INSERT INTO _schema (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version", m.version);
    });
    version = m.version;
  }
  return version;
}

/** Tables a legacy migration list creates, in order. */
function legacyTables(migrations: readonly LegacyMigration[]): string[] {
  return migrations.flatMap((m) => [...m.sql.matchAll(/CREATE TABLE (\w+)/g)].map((x) => x[1] as string));
}

/**
 * Turns the storage of a live object into what the old code would have left (see the file
 * header); `legacyRows` gives the rows of a legacy table that today's code no longer has. Deletes the alarm (the old objects' alarm is re-armed from their schedule).
 * Call inside `runInDurableObject`, then evict the object so that its constructor runs again.
 * @returns the rows kept, by table (for the test's own checks).
 */
export async function makeLegacy(
  storage: DurableObjectStorage,
  migrations: readonly LegacyMigration[],
  legacyRows: Record<string, Record<string, SqlStorageValue>[]> = {},
): Promise<Record<string, Record<string, SqlStorageValue>[]>> {
  const sql = storage.sql;
  const kept: Record<string, Record<string, SqlStorageValue>[]> = {};
  // A legacy table today's code no longer has takes its rows from `legacyRows`.
  for (const t of legacyTables(migrations)) kept[t] = legacyRows[t] ?? sql.exec(`SELECT * FROM ${t}`).toArray();
  const all = sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'").toArray();
  for (const { name } of all) sql.exec(`DROP TABLE ${name}`);
  await storage.deleteAlarm();
  expectEqual(legacyMigrate(storage, migrations), migrations.length);
  for (const [t, rows] of Object.entries(kept)) {
    for (const row of rows) {
      const cols = Object.keys(row);
      sql.exec(`INSERT INTO ${t} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`, ...Object.values(row));
    }
  }
  return kept;
}

/** Table names of an object's storage (not the platform's own). */
export function tableNames(storage: DurableObjectStorage): string[] {
  return storage.sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .toArray()
    .map((r) => r.name);
}

function expectEqual(a: unknown, b: unknown): void {
  if (a !== b) throw new Error(`expected ${String(b)}, got ${String(a)}`);
}
