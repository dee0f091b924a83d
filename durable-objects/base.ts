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
 * re-check their state and are idempotent. A crash during the call, after the row was
 * removed, loses the timer: rooms set the timers their state needs at start-up (`onStart`). Slow work does a bounded slice per call and sets
 * its timer again for the next slice. Platform facts: one alarm per object, `setAlarm` replaces
 * it; a throwing `alarm()` is retried by the platform with backoff (up to 6 times), which the
 * per-timer catch avoids (developers.cloudflare.com/durable-objects/api/alarms/);
 * `deleteAll()` also deletes the alarm from compatibility date 2026-02-24
 * (developers.cloudflare.com/changelog/2026-02-24-deleteall-deletes-alarms).
 *
 * WebSockets (hibernation API): the sealed `fetch` serves upgrades only (STYLE.md: RPC for
 * everything else) and asks `onUpgrade(request)` for the room, its attachment version, the
 * socket's state and tags; it accepts with `ctx.acceptWebSocket` and stores the attachment
 * `{r: room, v: version, ...state}` as ASCII JSON text, checked against the platform's
 * 2,048-byte limit on `serializeAttachment` ({@link ATTACHMENT_MAX_BYTES}). The sealed
 * `webSocketMessage/Close/Error` read and validate it (a socket without a valid one is closed
 * with 1008, policy violation), dispatch to `onSocket(room, ws, attachment, event)` (a throw
 * closes the socket with 1011) and always answer a close frame. After hibernation the object
 * is constructed again (start-up runs) before the event is delivered; only the attachment and
 * SQLite survive.
 *
 * Sealed entry points: `alarm`, `fetch` and `webSocketMessage/Close/Error` are the base's;
 * TypeScript has no `final`, so the constructor throws if a subclass defines one, and
 * `noImplicitOverride` (tsconfig.json) makes an accidental override a compile error. Rooms
 * plug in through `onTimer`, `onUpgrade` and `onSocket`.
 *
 * SQL: a small `sql` helper whose parameters are always bound, never interpolated.
 */
import { DurableObject } from "cloudflare:workers";
import { ERRORS, EdgelogError, errorResult, toEdgelogError, type ErrorResult } from "../src/protocol/errors.ts";
import { TimerSchedule, normalizeDueMs, timerRetryDelayMs } from "./schedule.ts";
import { log } from "../src/log/logger.ts";

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
 * once, so inside a `transactionSync` it commits or rolls back with the rest. The in-memory
 * mirror is updated at once and does not roll back: a rolled-back `set` never runs (the alarm
 * checks each timer's row before its call), a rolled-back `clear` leaves a timer that runs
 * after the object is next loaded (handlers re-check their state, so a late call is harmless).
 * A due time in the past (even before the epoch) means at once; a fraction rounds up.
 * @throws Error (a bug) for an empty key; RangeError for NaN or an infinite due time.
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

/**
 * A room's timers, resolved on first use: the base's `timers(room)` answers only once
 * `startUp` declared the rooms, which comes after a class has built its rooms (in its
 * constructor, before `startUp`).
 */
export function lazyTimers(get: () => RoomTimers): RoomTimers {
  let t: RoomTimers | null = null;
  const of = (): RoomTimers => (t ??= get());
  return { set: (k, d) => of().set(k, d), clear: (k) => of().clear(k), clearAll: () => of().clearAll(), dueMs: (k) => of().dueMs(k) };
}

/** Most due timers one alarm wake dispatches; the rest run at the next wake, armed at once. */
export const TIMERS_PER_WAKE = 32;

/**
 * Largest serialized WebSocket attachment (bytes): the platform's limit on
 * `serializeAttachment`, which throws beyond it ("The serialized size of value is limited to
 * 2,048 bytes", developers.cloudflare.com/durable-objects/api/websockets/). The base stores
 * the attachment as ASCII-only JSON text, whose serialized size is its length plus a few
 * bytes of header, so it checks the text against this minus {@link ATTACHMENT_HEADER_BYTES}.
 */
export const ATTACHMENT_MAX_BYTES = 2_048;
/** Bytes kept for the structured-clone header of the attachment string (version, tag, length). */
export const ATTACHMENT_HEADER_BYTES = 16;

/**
 * A socket's attachment as the base stores it: namespaced by room (`r`), versioned by the
 * room's own attachment shape (`v`, an integer ≥ 1, so a room can read sockets accepted by an
 * older version of its code), and the room's per-socket state beside them.
 */
export type SocketAttachment = Readonly<{ r: string; v: number } & Record<string, unknown>>;

/** What a subclass's `onUpgrade` answers to accept a WebSocket. */
export interface SocketAccept {
  /** The room that handles the socket's events (one of the rooms given to startUp). */
  room: string;
  /** Version of this room's attachment shape. @default 1 */
  version?: number;
  /**
   * The socket's state: a JSON object (no keys `r` or `v`), small enough that the attachment
   * fits {@link ATTACHMENT_MAX_BYTES}. Larger state goes in the room's tables, keyed by a value
   * kept here.
   */
  state: Record<string, unknown>;
  /** Hibernation tags (`ctx.getWebSockets(tag)`); the platform limits their number and length. */
  tags?: string[];
}

/** A WebSocket event, as the base hands it to a room's `onSocket`. */
export type SocketEvent = { type: "message"; data: string | ArrayBuffer } | { type: "close"; code: number; reason: string; wasClean: boolean } | { type: "error"; error: unknown };

/** Close codes (RFC 6455 section 7.4.1). */
export const CLOSE_NORMAL = 1000;
/** Policy violation: the base closes a socket without a valid attachment with it. */
export const CLOSE_POLICY_VIOLATION = 1008;
/** Internal error: the base closes a socket whose room handler threw with it. */
export const CLOSE_INTERNAL_ERROR = 1011;

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
        if (Object.hasOwn(proto, name))
          throw new Error(`${this.constructor.name} defines ${name}(): platform entry points are sealed in SqliteDurableObject (durable-objects/base.ts); use onTimer/onUpgrade/onSocket`);
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
        log.error("edgelog.object.startup_failed", { object: this.constructor.name, error: err });
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
        log.error("edgelog.object.timer_failed", { object: this.constructor.name, room: t.room, key: t.key, failures, retryMs, error: err });
        this.#setTimer(t.room, t.key, Date.now() + retryMs);
      }
    }
    this.#arm();
  }

  /**
   * Answers a WebSocket upgrade for a room (called by the sealed `fetch`). Return a
   * {@link SocketAccept} to accept the socket, or an {@link ErrorResult} to refuse it (the
   * base answers its JSON error). It must not keep the request: the socket's state goes in
   * `state`, which survives hibernation.
   * @default refuses with NOT_FOUND: the class serves no WebSocket room.
   */
  protected onUpgrade(_request: Request): SocketAccept | ErrorResult | Promise<SocketAccept | ErrorResult> {
    return errorResult("NOT_FOUND", `${this.constructor.name} serves no WebSocket room.`);
  }

  /**
   * An event of a socket whose attachment is valid and names `room` (called by the sealed
   * webSocket handlers, also after the object hibernated: in-memory state is gone then, the
   * attachment and SQLite are not). A throw is logged and the socket closed with 1011. For
   * `close`, the base answers the close frame after this returns, whatever it does.
   * @default throws: a class that accepts sockets must override it.
   */
  protected onSocket(room: string, _ws: WebSocket, _attachment: SocketAttachment, event: SocketEvent): void | Promise<void> {
    throw new Error(`${this.constructor.name} has no socket handler (room ${room}, event ${event.type})`);
  }

  /**
   * Replaces a socket's attachment (e.g. after the room's per-socket state changed).
   * @throws Error when the room is unknown, the state malformed or the attachment too large
   *   (a bug of the room: its state must stay bounded).
   */
  protected saveAttachment(ws: WebSocket, accept: Omit<SocketAccept, "tags">): void {
    const r = this.#encodeAttachment(accept);
    if (typeof r !== "string") throw new Error(`${this.constructor.name}: attachment refused: ${r.message}`);
    ws.serializeAttachment(r);
  }

  /**
   * WebSocket upgrades only (sealed; STYLE.md: "RPC between Worker and DO; fetch only for
   * WebSocket upgrades"). A GET with `Upgrade: websocket` goes to `onUpgrade`; an accepted
   * socket uses the hibernation API (`ctx.acceptWebSocket`) with its attachment. Errors (JSON
   * bodies from the one table): METHOD_NOT_ALLOWED (405, `Allow: GET`) for another method,
   * UPGRADE_REQUIRED (426, `Upgrade: websocket`, RFC 9110 section 15.5.22) without the
   * upgrade header, INVALID_REQUEST (400) when the socket's state would not fit the
   * attachment limit, and whatever `onUpgrade` refuses with.
   */
  override async fetch(request: Request): Promise<Response> {
    if (request.method !== "GET") return errorResponse(errorResult("METHOD_NOT_ALLOWED", "WebSocket upgrades are GET requests.", { allowed: ["GET"] }), { allow: "GET" });
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return errorResponse(errorResult("UPGRADE_REQUIRED", "This endpoint serves WebSocket upgrades only: send Upgrade: websocket."), { upgrade: "websocket" });
    }
    const accept = await this.onUpgrade(request);
    if ("ok" in accept) return errorResponse(accept);
    const attachment = this.#encodeAttachment(accept);
    if (typeof attachment !== "string") return errorResponse(attachment);
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server, accept.tags);
    server.serializeAttachment(attachment);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Sealed: validates the attachment (else closes with 1008) and hands the message to its room. */
  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const att = this.#attachmentOf(ws);
    if (att === null) return closeQuietly(ws, CLOSE_POLICY_VIOLATION, "no valid attachment");
    await this.#dispatchSocket(ws, att, { type: "message", data: message });
  }

  /**
   * Sealed: hands the close to the socket's room, then always answers the close frame
   * (RFC 6455 section 5.5.1: echoing the peer's code; 1000 for a code that must not be sent).
   */
  override async webSocketClose(ws: WebSocket, code: number, reason: string, wasClean: boolean): Promise<void> {
    try {
      const att = this.#attachmentOf(ws);
      if (att !== null) await this.#dispatchSocket(ws, att, { type: "close", code, reason, wasClean });
    } finally {
      closeQuietly(ws, sendableCloseCode(code), reason);
    }
  }

  /** Sealed: hands the error to the socket's room (the platform closes the socket). */
  override async webSocketError(ws: WebSocket, error: unknown): Promise<void> {
    const att = this.#attachmentOf(ws);
    if (att === null) return closeQuietly(ws, CLOSE_POLICY_VIOLATION, "no valid attachment");
    await this.#dispatchSocket(ws, att, { type: "error", error });
  }

  async #dispatchSocket(ws: WebSocket, att: SocketAttachment, event: SocketEvent): Promise<void> {
    try {
      await this.onSocket(att.r, ws, att, event);
    } catch (err) {
      log.error("edgelog.object.socket_failed", { object: this.constructor.name, room: att.r, on: event.type, error: err });
      if (event.type !== "close") closeQuietly(ws, CLOSE_INTERNAL_ERROR, "internal error");
    }
  }

  /** The socket's attachment, or null when it is absent, not ours, or names an unknown room. */
  #attachmentOf(ws: WebSocket): SocketAttachment | null {
    let raw: unknown;
    try {
      raw = ws.deserializeAttachment();
    } catch {
      return null;
    }
    if (typeof raw !== "string") return null;
    let att: unknown;
    try {
      att = JSON.parse(raw);
    } catch {
      return null;
    }
    if (typeof att !== "object" || att === null || Array.isArray(att)) return null;
    const { r, v } = att as { r?: unknown; v?: unknown };
    if (typeof r !== "string" || this.#rooms?.has(r) !== true) return null;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) return null;
    return att as SocketAttachment;
  }

  /** The attachment text of an accepted socket, or the error that refuses it. */
  #encodeAttachment(accept: Omit<SocketAccept, "tags">): string | ErrorResult {
    const version = accept.version ?? 1;
    if (this.#rooms?.has(accept.room) !== true) throw new Error(`${this.constructor.name}: socket of unknown room ${JSON.stringify(accept.room)}`);
    if (!Number.isSafeInteger(version) || version < 1) throw new Error(`${this.constructor.name}: attachment version must be an integer >= 1, got ${version}`);
    if ("r" in accept.state || "v" in accept.state) throw new Error(`${this.constructor.name}: socket state must not use the keys r and v`);
    const text = asciiJson({ r: accept.room, v: version, ...accept.state });
    const budget = ATTACHMENT_MAX_BYTES - ATTACHMENT_HEADER_BYTES;
    if (text.length > budget) {
      return errorResult("INVALID_REQUEST", `The socket's state is too large: ${text.length} bytes of attachment, at most ${budget}.`, { attachmentBytes: text.length, maxBytes: budget });
    }
    return text;
  }

  #setTimer(room: string, key: string, requestedMs: number): void {
    if (typeof key !== "string" || key.length === 0) throw new Error(`timer key must be a non-empty string (room ${room})`);
    const dueMs = normalizeDueMs(requestedMs);
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
      if (this.#rooms?.has(room) !== true) log.warn("edgelog.object.timer_unknown_room", { object: this.constructor.name, room, key });
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
    // The platform refuses an alarm time <= 0 ("setAlarm() cannot be called with an alarm time
    // <= 0"); a timer due at or before the epoch (normalizeDueMs keeps it at 0) is due now.
    else void this.ctx.storage.setAlarm(Math.max(1, earliest));
  }
}

/** JSON text with every non-ASCII character escaped: one byte per character once serialized. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * The close code to answer with: the peer's, unless it is one an endpoint must not send
 * (1005 no status, 1006 abnormal closure, 1015 TLS failure; RFC 6455 section 7.4.1) or outside
 * the sendable ranges (1000-1014 minus those, 3000-4999).
 */
export function sendableCloseCode(code: number): number {
  if (code === 1005 || code === 1006 || code === 1015) return CLOSE_NORMAL;
  if ((code >= 1000 && code <= 1014) || (code >= 3000 && code <= 4999)) return code;
  return CLOSE_NORMAL;
}

/** Closes a socket, ignoring a socket that is already closed. */
function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed (or the platform already answered the close frame): nothing to answer.
  }
}

/** A JSON error response from an {@link ErrorResult} (the gateway's body shape, src/protocol/errors.ts). */
function errorResponse(e: ErrorResult, headers: Record<string, string> = {}): Response {
  return Response.json(toEdgelogError(e).toBody(), { status: ERRORS[e.code].httpStatus, headers });
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
    if (version > r.migrations.length)
      throw new Error(`room ${r.room} is at version ${version}, newer than this code's ${r.migrations.length}: refusing to start (a rollback across a migration)`);
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
