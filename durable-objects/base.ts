/**
 * Shared base of Edgelog's SQLite-backed Durable Objects (shared/STYLE.md "SQLite discipline",
 * shared/design/partition-rooms.md rules 3-5).
 *
 * Start-up: one guarded start-up, run once inside `blockConcurrencyWhile` so that no call sees
 * a half-migrated object: per-room migrations, then the schedule is loaded, then `onStart()`.
 * If start-up throws, the error is rethrown from blockConcurrencyWhile, which resets the object
 * (the platform retries the constructor on the next call) instead of leaving it running
 * half-initialised.
 *
 * Rooms: an object's state is split into rooms (a single-room class has one room named after
 * itself). Each room owns its tables, its numbered migrations (1, 2, … without gaps, each in
 * its own transaction) and its timer keys. Tables of the base, prefixed `_`:
 * - `_rooms(room TEXT PK, version INTEGER)`: the migration version of each room. Objects
 *   created before rooms kept one `_schema(id = 1, version)` row; start-up adopts it once
 *   (`startUp(rooms, {adoptLegacy})`) and drops it;
 * - `_schedule(room TEXT, key TEXT, due_ms INTEGER, PK(room, key))`: every timer of every room,
 *   mirrored in memory ({@link TimerSchedule}).
 *
 * One alarm, many timers: a Durable Object has a single alarm, so the base owns it. Rooms set
 * timers through `timers(room)`; the alarm is always armed at the earliest `due_ms` (deleted
 * when there is none). The sealed `alarm()` dispatches at most {@link TIMERS_PER_WAKE} due
 * timers per wake to `onTimer(room, key, dueMs)`, earliest first, catches a failure per timer
 * (logged with room and key, that key retried after 1 s, 2 s, 4 s, … capped at 5 min:
 * {@link timerRetryDelayMs}) and re-arms. Timers fire at or after their due time, never
 * before, at least once (a wake that crashes before removing a row runs it again): handlers
 * re-check their state and are idempotent. Slow work does a bounded slice per call and sets
 * its timer again for the next slice. Platform facts: one alarm per object, `setAlarm` replaces
 * it; a throwing `alarm()` is retried by the platform with backoff (up to 6 times), which the
 * per-timer catch avoids (developers.cloudflare.com/durable-objects/api/alarms/);
 * `deleteAll()` also deletes the alarm from compatibility date 2026-02-24
 * (developers.cloudflare.com/changelog/2026-02-24-deleteall-deletes-alarms).
 *
 * Sealed entry points: `alarm`, `fetch` and `webSocketMessage/Close/Error` are the base's;
 * TypeScript has no `final`, so the constructor throws if a subclass defines one, and
 * `noImplicitOverride` (tsconfig.json) makes an accidental override a compile error.
 *
 * SQL: a small `sql` helper whose parameters are always bound, never interpolated.
 */
import { DurableObject } from "cloudflare:workers";
import { EdgelogError, errorResult, type ErrorResult } from "../src/protocol/errors.ts";
import { TimerSchedule, checkDueMs, timerRetryDelayMs } from "./schedule.ts";

/** A numbered migration of one room. Versions start at 1 and increase by 1; never edit one that has shipped. */
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

/** A room's schema: its name and its own migrations (versions 1, 2, … without gaps). */
export interface RoomSchema {
  room: string;
  migrations: readonly Migration[];
}

/**
 * Maps the legacy single `_schema` version of an object created before per-room versions
 * (every Edgelog object before issue 9) to per-room versions, e.g. PartitionDO's
 * `2 -> {log: 1, streams: 1}`. A room it leaves out starts at version 0 (all its migrations run).
 */
export type LegacyAdoption = (legacyVersion: number) => Readonly<Record<string, number>>;

/**
 * One room's timers, on the object's one schedule. Keys are the room's own (any non-empty
 * string); times are epoch milliseconds (integers). Each call writes the `_schedule` row at
 * once, so inside a `transactionSync` it commits or rolls back with the rest; the in-memory
 * mirror is updated at once too (a rolled-back `set` can at worst cause one spurious
 * `onTimer` call, see {@link SqliteDurableObject.alarm}).
 */
export interface RoomTimers {
  /** Adds or moves the timer `key` to `dueMs`; re-arms the alarm if it is now the earliest. */
  set(key: string, dueMs: number): void;
  /** Removes the timer `key` (no-op when absent). */
  clear(key: string): void;
  /** Removes every timer of this room (after a room's reset or destroy). */
  clearAll(): void;
  /** When the timer `key` is due (epoch ms), or undefined when it is not set. */
  dueMs(key: string): number | undefined;
}

/** Most due timers one alarm wake dispatches; the rest run at the next wake, armed at once. */
export const TIMERS_PER_WAKE = 32;

/** Platform entry points the base owns: a subclass that defines one is refused at construction. */
const SEALED = ["fetch", "alarm", "webSocketMessage", "webSocketClose", "webSocketError"] as const;

/** Room names: lower-case words joined by '-' (they appear in `_rooms`, `_schedule`, attachments and logs). */
const ROOM_NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/**
 * Base class: holds the `sql` helper, runs the guarded start-up with per-room migrations,
 * owns the one schedule and the sealed platform entry points.
 *
 * Subclasses call `this.startUp(rooms)` as the LAST statement of their constructor:
 * not from this constructor, because a subclass's class fields are initialised only after
 * `super()` returns and would overwrite what `onStart()` loaded.
 */
export abstract class SqliteDurableObject<E = unknown> extends DurableObject<E> {
  protected readonly sql: Sql;
  /** Mirror of `_schedule`. */
  readonly #schedule = new TimerSchedule();
  /** Rooms declared by startUp, in order; timers of other rooms are refused. */
  #rooms: ReadonlySet<string> | null = null;
  /** When the platform alarm is armed (epoch ms): null = none; undefined = unknown (at start). */
  #armedMs: number | null | undefined = undefined;
  /** Consecutive failures of a timer (`room\u0000key`), for its backoff. In memory: eviction forgets it. */
  readonly #failures = new Map<string, number>();
  /** Bumped when storage is wiped, so an alarm wake in progress stops dispatching. */
  #storageEpoch = 0;

  constructor(ctx: DurableObjectState, env: E) {
    super(ctx, env);
    this.sql = new Sql(ctx.storage.sql);
    // TypeScript has no `final`: refuse a subclass that defines a sealed entry point.
    for (let proto = Object.getPrototypeOf(this) as object | null; proto !== null && proto !== SqliteDurableObject.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
      for (const name of SEALED) {
        if (Object.prototype.hasOwnProperty.call(proto, name)) throw new Error(`${this.constructor.name} defines ${name}(): platform entry points are sealed in SqliteDurableObject (durable-objects/base.ts); use onTimer/onUpgrade/onSocket`);
      }
    }
  }

  /**
   * Migrates every room, loads the schedule and runs `onStart()` before any call is
   * delivered. In order, inside `blockConcurrencyWhile`:
   * 1. creates `_rooms(room PK, version)` and `_schedule(room, key, due_ms)`;
   * 2. adoption: if a legacy `_schema` row exists and `_rooms` is empty, writes
   *    `options.adoptLegacy(version)` into `_rooms` and drops `_schema`, in one transaction;
   * 3. runs each room's migrations newer than its version, each in its own transaction
   *    (together with its `_rooms` row), rooms in the given order;
   * 4. loads `_schedule` into memory and arms the alarm at the earliest timer;
   * 5. `onStart()`.
   *
   * A throw (a failed migration, a legacy object without `adoptLegacy`, a room stored at a
   * version this code does not know, i.e. a rollback across a migration) resets the object
   * (blockConcurrencyWhile's contract): the call that was waiting sees the error and the next
   * call starts a fresh instance, which retries from the last committed migration.
   * @throws Error (synchronously) on a bad room list: duplicate or malformed room names,
   *   migrations not numbered 1, 2, … without gaps.
   */
  protected startUp(rooms: readonly RoomSchema[], options: { adoptLegacy?: LegacyAdoption } = {}): void {
    checkRooms(rooms);
    this.#rooms = new Set(rooms.map((r) => r.room));
    void this.ctx.blockConcurrencyWhile(async () => {
      try {
        migrateRooms(this.ctx.storage, this.sql, rooms, options.adoptLegacy);
        this.#loadSchedule();
        this.onStart();
      } catch (err) {
        console.error(`${this.constructor.name} start-up failed`, err);
        throw err;
      }
    });
  }

  /** Loads in-memory state from SQLite after migrations. Synchronous: SQLite calls are. */
  protected abstract onStart(): void;

  /** The timers of `room` (one of the rooms given to startUp). @throws Error for an unknown room (a bug). */
  protected timers(room: string): RoomTimers {
    if (this.#rooms?.has(room) !== true) throw new Error(`${this.constructor.name}: timers of unknown room ${JSON.stringify(room)}`);
    return {
      set: (key, dueMs) => this.#setTimer(room, key, dueMs),
      clear: (key) => this.#clearTimer(room, key),
      clearAll: () => {
        this.sql.run("DELETE FROM _schedule WHERE room = ?", room);
        for (const key of this.#schedule.clearRoom(room)) this.#failures.delete(timerId(room, key));
        this.#arm();
      },
      dueMs: (key) => this.#schedule.get(room, key),
    };
  }

  /**
   * A due timer of `room`, called by the sealed alarm(). The timer's row is removed before
   * the call, so it runs once; the handler may set it again (the usual way to repeat). A throw
   * is logged and the same key is retried with backoff ({@link timerRetryDelayMs}); other
   * timers still run. The handler may await, but the alarm wake waits for it: slow work
   * (truncating a million rows, an R2 upload) must do a bounded slice and set its timer again
   * for the next slice, so that no room holds the others up.
   * @default throws: a class whose rooms set timers must override it.
   */
  protected onTimer(room: string, key: string, _dueMs: number): void | Promise<void> {
    throw new Error(`${this.constructor.name} has no timer handler (room ${room}, key ${key})`);
  }

  /**
   * Deletes all of the object's storage (`deleteAll`, which also deletes the alarm since
   * compatibility date 2026-02-24) and the schedule mirror, then re-creates the empty
   * `_rooms` and `_schedule` tables: the next start-up runs every room's migrations again, as
   * for a new object, and timers can still be set meanwhile. Subclasses reset their own
   * in-memory state.
   */
  protected async deleteAllStorage(): Promise<void> {
    this.#storageEpoch++;
    this.#schedule.clear();
    this.#failures.clear();
    this.#armedMs = null;
    await this.ctx.storage.deleteAll();
    createBaseTables(this.sql);
  }

  /**
   * The one alarm (sealed). Dispatches at most {@link TIMERS_PER_WAKE} due timers, earliest
   * first, each to `onTimer(room, key, dueMs)`, one after the other; a timer that throws is
   * logged with its room and key and retried with backoff, so one room cannot starve the
   * others. Then arms the alarm at the earliest remaining timer (at once when more are due).
   * Each timer's row is checked before the call: a mirror entry without a row (set in a
   * transaction that rolled back) is dropped, not run.
   */
  override async alarm(): Promise<void> {
    // The alarm that is running is consumed, but do not assume it: always arm (or delete) it
    // again at the end of the wake.
    this.#armedMs = undefined;
    const epoch = this.#storageEpoch;
    for (const t of this.#schedule.due(Date.now(), TIMERS_PER_WAKE)) {
      if (this.#storageEpoch !== epoch) break;
      const row = this.sql.first<{ due_ms: number }>("DELETE FROM _schedule WHERE room = ? AND key = ? RETURNING due_ms", t.room, t.key);
      this.#schedule.delete(t.room, t.key);
      if (row === undefined) continue;
      if (row.due_ms > Date.now()) {
        // The mirror was behind the table (a rolled-back change): the table wins.
        this.#setTimer(t.room, t.key, row.due_ms);
        continue;
      }
      const id = timerId(t.room, t.key);
      try {
        await this.onTimer(t.room, t.key, row.due_ms);
        this.#failures.delete(id);
      } catch (err) {
        if (this.#storageEpoch !== epoch) break;
        const failures = (this.#failures.get(id) ?? 0) + 1;
        this.#failures.set(id, failures);
        const retryMs = timerRetryDelayMs(failures);
        console.error(`${this.constructor.name}: timer ${t.room}/${t.key} failed (${failures} in a row), retrying in ${retryMs} ms`, err);
        this.#setTimer(t.room, t.key, Date.now() + retryMs);
      }
    }
    this.#arm();
  }

  #setTimer(room: string, key: string, dueMs: number): void {
    if (typeof key !== "string" || key.length === 0) throw new Error(`timer key must be a non-empty string (room ${room})`);
    checkDueMs(dueMs);
    if (this.#schedule.get(room, key) === dueMs) return;
    this.sql.run("INSERT INTO _schedule (room, key, due_ms) VALUES (?, ?, ?) ON CONFLICT (room, key) DO UPDATE SET due_ms = excluded.due_ms", room, key, dueMs);
    this.#schedule.set(room, key, dueMs);
    this.#arm();
  }

  #clearTimer(room: string, key: string): void {
    if (!this.#schedule.delete(room, key)) return;
    this.sql.run("DELETE FROM _schedule WHERE room = ? AND key = ?", room, key);
    this.#failures.delete(timerId(room, key));
    this.#arm();
  }

  #loadSchedule(): void {
    this.#schedule.clear();
    for (const [room, key, due] of this.sql.iterateRaw<[string, string, number]>("SELECT room, key, due_ms FROM _schedule")) {
      // A timer of a room this code no longer declares would never be handled: keep it
      // (a later version may know it again) but say so.
      if (this.#rooms?.has(room) !== true) console.warn(`${this.constructor.name}: timer ${room}/${key} belongs to no declared room; ignored`);
      else this.#schedule.set(room, key, due);
    }
    this.#arm();
  }

  /** Keeps the platform alarm at the earliest timer (deleted when there is none). */
  #arm(): void {
    const earliest = this.#schedule.earliest() ?? null;
    if (earliest === this.#armedMs) return;
    this.#armedMs = earliest;
    if (earliest === null) void this.ctx.storage.deleteAlarm();
    else void this.ctx.storage.setAlarm(earliest);
  }
}

function timerId(room: string, key: string): string {
  return `${room}\u0000${key}`;
}

function createBaseTables(sql: Sql): void {
  sql.run(`
    CREATE TABLE IF NOT EXISTS _rooms (room TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS _schedule (room TEXT NOT NULL, key TEXT NOT NULL, due_ms INTEGER NOT NULL, PRIMARY KEY (room, key)) WITHOUT ROWID;
  `);
}

/** Checks a room list: names well formed and unique, each room's migrations numbered 1, 2, … */
export function checkRooms(rooms: readonly RoomSchema[]): void {
  const seen = new Set<string>();
  for (const r of rooms) {
    if (!ROOM_NAME.test(r.room)) throw new Error(`room name ${JSON.stringify(r.room)} must be lower-case words joined by '-'`);
    if (seen.has(r.room)) throw new Error(`room ${r.room} is declared twice`);
    seen.add(r.room);
    r.migrations.forEach((m, i) => {
      if (m.version !== i + 1) throw new Error(`room ${r.room}: migration ${m.version} (${m.name}) is at position ${i + 1}: migrations must be numbered 1, 2, … without gaps`);
    });
  }
}

/**
 * Brings every room to its newest migration (steps 1-3 of {@link SqliteDurableObject.startUp}).
 * @returns the version of each given room afterwards, in the given order.
 */
export function migrateRooms(storage: DurableObjectStorage, sql: Sql, rooms: readonly RoomSchema[], adoptLegacy?: LegacyAdoption): Map<string, number> {
  createBaseTables(sql);
  const legacy = sql.first<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_schema'");
  if (legacy !== undefined) {
    storage.transactionSync(() => {
      const version = sql.first<{ version: number }>("SELECT version FROM _schema WHERE id = 1")?.version ?? 0;
      const adopted = sql.first<{ n: number }>("SELECT count(*) AS n FROM _rooms")?.n ?? 0;
      if (adopted === 0 && version > 0) {
        if (adoptLegacy === undefined) throw new Error(`legacy _schema version ${version} found and no adoptLegacy given`);
        for (const [room, v] of Object.entries(adoptLegacy(version))) {
          if (!rooms.some((r) => r.room === room)) throw new Error(`adoptLegacy(${version}) names unknown room ${room}`);
          if (!Number.isInteger(v) || v < 0) throw new Error(`adoptLegacy(${version}) gives room ${room} version ${v}`);
          sql.run("INSERT INTO _rooms (room, version) VALUES (?, ?)", room, v);
        }
      }
      sql.run("DROP TABLE _schema");
    });
  }
  const stored = new Map<string, number>();
  for (const row of sql.all<{ room: string; version: number }>("SELECT room, version FROM _rooms")) stored.set(row.room, row.version);
  const versions = new Map<string, number>();
  for (const r of rooms) {
    let version = stored.get(r.room) ?? 0;
    if (version > r.migrations.length) throw new Error(`room ${r.room} is at version ${version}, newer than this code's ${r.migrations.length}: refusing to start (a rollback across a migration)`);
    for (const m of r.migrations.slice(version)) {
      storage.transactionSync(() => {
        m.up(sql);
        sql.run("INSERT INTO _rooms (room, version) VALUES (?, ?) ON CONFLICT (room) DO UPDATE SET version = excluded.version", r.room, m.version);
      });
      version = m.version;
    }
    versions.set(r.room, version);
  }
  return versions;
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
