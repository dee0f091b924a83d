/**
 * Shared base of Edgelog's SQLite-backed Durable Objects (shared/STYLE.md "SQLite discipline"):
 *
 * - one guarded start-up: schema migrations then `onStart()` (load in-memory caches), run once
 *   inside `blockConcurrencyWhile`, so no RPC sees a half-migrated object. If start-up throws,
 *   the error is rethrown from blockConcurrencyWhile, which resets the object (the platform
 *   retries the constructor on the next call) instead of leaving it running half-initialised;
 * - a schema-version row and numbered migrations, each applied in its own transaction;
 * - a small `sql` helper whose parameters are always bound, never interpolated.
 */
import { DurableObject } from "cloudflare:workers";
import { EdgelogError, errorResult, type ErrorResult } from "../src/protocol/errors.ts";

/** A numbered schema migration. Versions start at 1 and increase by 1; never edit one that has shipped. */
export interface Migration {
  version: number;
  name: string;
  up(sql: Sql): void;
}

/** Thin typed wrapper over `ctx.storage.sql`: bound parameters only. */
export class Sql {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** Runs a statement (or a script, when called without params) and discards rows. */
  run(query: string, ...params: SqlStorageValue[]): void {
    this.#sql.exec(query, ...params);
  }

  /** All rows. */
  all<T extends Record<string, SqlStorageValue>>(query: string, ...params: SqlStorageValue[]): T[] {
    return this.#sql.exec<T>(query, ...params).toArray();
  }

  /** Rows read lazily: stop iterating early to read no more. */
  iterate<T extends Record<string, SqlStorageValue>>(query: string, ...params: SqlStorageValue[]): IterableIterator<T> {
    return this.#sql.exec<T>(query, ...params)[Symbol.iterator]();
  }

  /**
   * Rows read lazily as arrays of column values, in the query's column order: no object per
   * row, for loops over many rows (a cursor row as an object costs several microseconds).
   */
  iterateRaw<T extends SqlStorageValue[]>(query: string, ...params: SqlStorageValue[]): IterableIterator<T> {
    return this.#sql.exec(query, ...params).raw<T>();
  }

  /** The first row, or undefined. */
  first<T extends Record<string, SqlStorageValue>>(query: string, ...params: SqlStorageValue[]): T | undefined {
    const r = this.#sql.exec<T>(query, ...params).next();
    return r.done === true ? undefined : r.value;
  }
}

/**
 * Bytes as a SQLite BLOB parameter: the underlying ArrayBuffer when the view covers all of
 * it (no copy, the usual case for RPC-received and freshly encoded bytes), else a copy.
 */
export function blob(bytes: Uint8Array): ArrayBuffer {
  const buf = bytes.buffer;
  if (buf instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buf.byteLength) return buf;
  return bytes.slice().buffer as ArrayBuffer;
}

/** Applies the migrations newer than the stored schema version, each in one transaction. */
export function migrate(storage: DurableObjectStorage, sql: Sql, migrations: readonly Migration[]): number {
  sql.run("CREATE TABLE IF NOT EXISTS _schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)");
  let version = sql.first<{ version: number }>("SELECT version FROM _schema WHERE id = 1")?.version ?? 0;
  for (const m of migrations) {
    if (m.version <= version) continue;
    if (m.version !== version + 1) throw new Error(`schema migration ${m.version} (${m.name}) follows version ${version}: migrations must be numbered without gaps`);
    storage.transactionSync(() => {
      m.up(sql);
      sql.run("INSERT INTO _schema (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version", m.version);
    });
    version = m.version;
  }
  return version;
}

/**
 * Base class: holds the `sql` helper and runs the guarded start-up.
 *
 * Subclasses call `this.startUp(migrations)` as the LAST statement of their constructor:
 * not from this constructor, because a subclass's class fields are initialised only after
 * `super()` returns and would overwrite what `onStart()` loaded.
 */
export abstract class SqliteDurableObject<E = unknown> extends DurableObject<E> {
  protected readonly sql: Sql;

  constructor(ctx: DurableObjectState, env: E) {
    super(ctx, env);
    this.sql = new Sql(ctx.storage.sql);
  }

  /**
   * Migrates the schema and runs `onStart()` before any call is delivered. A throw resets
   * the object (blockConcurrencyWhile's contract); the call that was waiting sees the error
   * and the next call starts a fresh instance.
   */
  protected startUp(migrations: readonly Migration[]): void {
    void this.ctx.blockConcurrencyWhile(async () => {
      try {
        migrate(this.ctx.storage, this.sql, migrations);
        this.onStart();
      } catch (err) {
        console.error(`${this.constructor.name} start-up failed`, err);
        throw err;
      }
    });
  }

  /** Loads in-memory state from SQLite after migrations. Synchronous: SQLite calls are. */
  protected abstract onStart(): void;
}

/**
 * Runs an RPC body, turning an {@link EdgelogError} (an expected failure thrown by a shared
 * validator such as parseTopicName or mergeTopicConfigs) into a typed {@link ErrorResult}:
 * thrown errors lose their class across the RPC boundary. Anything else is a bug and is rethrown.
 */
export async function expected<T extends { ok: true }>(body: () => T | ErrorResult | Promise<T | ErrorResult>): Promise<T | ErrorResult> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof EdgelogError) return errorResult(err.code, err.message, err.details);
    throw err;
  }
}
