/**
 * BenchDO: bench-only, reached only through /bench/* routes when EDGELOG_BENCH_ROUTES=1.
 *
 * Room `bench`: `insert` writes the bytes it is given as ONE SQLite row, nothing else: the
 * ceiling a produce (decode, validate, rewrite, insert, meta update) is measured against in
 * the same run (/bench/raw-insert/:name).
 *
 * Room `echo` (no tables): the proving ground of the base's machinery (durable-objects/base.ts)
 * for the workers tests: its timers, and hibernatable WebSockets (GET /bench/echo/:name?label=…
 * with `Upgrade: websocket`). A text message is answered with JSON
 * `{echo, label, connectedMs, messages, instance}` (the socket's attachment after counting the
 * message, and this instance's id, new after every eviction); a binary message is echoed as is.
 *
 * Room `broadcast` (no tables): the ceiling of subscription fan-out (bench/subscriptions.ts).
 * Sockets join with `GET /bench/broadcast/:name` (`Upgrade: websocket`); `broadcast(frame)`
 * (`POST /bench/broadcast/:name`, the frame as the body) sends that text frame to every one of
 * them, reading no storage: what sending the same `messages` frames to N sockets costs the
 * object, without the log read, the cursor and the per-subscriber serialisation.
 */
import type { BenchRpc, Env } from "../src/env.ts";
import { errorResult, type ErrorResult, type RpcResult } from "../src/protocol/errors.ts";
import { SqliteDurableObject, blob, type Migration, type SocketAccept, type SocketAttachment, type SocketEvent } from "./base.ts";

/** The echo room's per-socket state (attachment version 1). */
interface EchoState {
  label: string;
  connectedMs: number;
  messages: number;
}
/** Hibernation tag of the broadcast room's sockets. */
const BROADCAST_TAG = "broadcast";
/** Largest broadcast frame, bytes of UTF-8 (a subscription's `messages` frame is at most about 512 KiB). */
const MAX_BROADCAST_FRAME_BYTES = 1024 * 1024;
/** Echo socket labels: long enough that the attachment limit can be reached on purpose. */
const ECHO_LABEL = /^[A-Za-z0-9._-]{1,4096}$/;

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "blobs",
    up(sql) {
      sql.run("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)");
    },
  },
];

export class BenchDO extends SqliteDurableObject<Env> implements BenchRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp(
      [
        { room: "bench", migrations: MIGRATIONS },
        { room: "echo", migrations: [] },
        { room: "broadcast", migrations: [] },
      ],
      { adoptLegacy: (v) => ({ bench: v }) },
    );
  }

  /** This instance's id: a new one after every eviction (hibernation wakes a new instance). */
  readonly #instance = crypto.randomUUID();

  protected override onStart(): void {}

  protected override onUpgrade(request: Request): SocketAccept | ErrorResult {
    if (new URL(request.url).pathname.startsWith("/bench/broadcast/")) return { room: "broadcast", state: { connectedMs: Date.now() }, tags: [BROADCAST_TAG] };
    const label = new URL(request.url).searchParams.get("label") ?? "";
    if (!ECHO_LABEL.test(label)) return errorResult("INVALID_REQUEST", "label must be 1-4096 characters of [A-Za-z0-9._-].");
    const state: EchoState = { label, connectedMs: Date.now(), messages: 0 };
    return { room: "echo", state: { ...state } };
  }

  protected override onSocket(room: string, ws: WebSocket, attachment: SocketAttachment, event: SocketEvent): void {
    // Broadcast sockets only listen; what they send is ignored (the base answers their close).
    if (room === "broadcast") return;
    if (room !== "echo" || attachment.v !== 1) throw new Error(`bench: socket of room ${room} v${attachment.v}`);
    if (event.type !== "message") return;
    const { label, connectedMs, messages } = attachment;
    if (typeof label !== "string" || typeof connectedMs !== "number" || typeof messages !== "number") throw new Error("bench: malformed echo attachment");
    const next: EchoState = { label, connectedMs, messages: messages + 1 };
    this.saveAttachment(ws, { room: "echo", state: { ...next } });
    if (typeof event.data === "string") ws.send(JSON.stringify({ echo: event.data, ...next, instance: this.#instance }));
    else ws.send(event.data);
  }

  /**
   * Sends `frame` as one text frame to every socket of the broadcast room.
   * @returns the number of sockets it went to. Errors: INVALID_REQUEST when the frame is empty
   *   or larger than 1 MiB.
   */
  async broadcast(frame: string): Promise<RpcResult<{ sockets: number }>> {
    const bytes = new TextEncoder().encode(frame).length;
    if (bytes === 0 || bytes > MAX_BROADCAST_FRAME_BYTES) return errorResult("INVALID_REQUEST", `A broadcast frame is 1..${MAX_BROADCAST_FRAME_BYTES} bytes.`, { bytes });
    let sockets = 0;
    for (const ws of this.ctx.getWebSockets(BROADCAST_TAG)) {
      try {
        ws.send(frame);
        sockets++;
      } catch {
        // Closing meanwhile: not counted.
      }
    }
    return { ok: true, sockets };
  }

  /** Inserts `data` as one row. @returns the row id and the byte count. */
  async insert(data: Uint8Array): Promise<RpcResult<{ id: number; bytes: number }>> {
    const row = this.sql.first<{ id: number }>("INSERT INTO blobs (data) VALUES (?) RETURNING id", blob(data));
    if (row === undefined) throw new Error("insert returned no row");
    return { ok: true, id: row.id, bytes: data.length };
  }
}
