/**
 * WebSocket endpoints for the SDK's unit tests, over a {@link FakeServer}'s partition logs: a
 * standard-`WebSocket`-shaped class to install with `vi.stubGlobal("WebSocket", sockets.WebSocket)`.
 *
 * - Readers (`.../partitions/{p}/readers/ws`, docs/PROTOCOL.md "Readers over WebSocket"): the
 *   start position rules of `readerStartOffset`, the `reader` frame, then messages within the
 *   `receiverQueueSize` window; an `ack` frame gives permits back; appends are pushed.
 * - Consumers (`.../subscriptions/{s}/ws`): just enough for the SDK's client-side logic: the
 *   `connected` frame, every record from `initialPosition` (no window, no delayed delivery, no
 *   redelivery), and `acked` / `nacked` receipts for frames with a `requestId`.
 *
 * Every client frame is recorded in `frames` with the number of HTTP requests the server had
 * seen when it arrived (so a test can check what happened before it); `drop()` closes every
 * open socket with 1006 as a network failure would; `refuseOpens` fails the next openings.
 */
import type { LogRecord } from "../../src/codec/index.ts";
import type { FakeServer } from "./sdk-fake-server.ts";

export interface ClientFrame {
  /** The socket's path, e.g. `/v1/topics/t/partitions/0/readers/ws`. */
  path: string;
  /** Which opening of that path (1 = the first). */
  connection: number;
  frame: Record<string, unknown>;
  /** `server.requests.length` when the frame arrived. */
  requestsBefore: number;
}

type Listener = (e: { data?: string; code?: number; reason?: string }) => void;

const b64 = (b: Uint8Array | null): string | null => (b === null ? null : Buffer.from(b).toString("base64"));
const pad = (p: number, o: number) => `${String(p).padStart(4, "0")}:${String(o).padStart(16, "0")}`;

export class FakeSockets {
  readonly frames: ClientFrame[] = [];
  /** Every URL opened, in order. */
  readonly opened: URL[] = [];
  /** Openings still to refuse (closed with 1006 before any frame). */
  refuseOpens = 0;
  /** Per reader socket path: the most messages it ever had in flight. */
  readonly maxInFlight = new Map<string, number>();
  readonly #live = new Set<{ close(code: number, reason: string): void }>();
  readonly #connections = new Map<string, number>();
  readonly WebSocket: new (
    url: string,
  ) => unknown;

  constructor(server: FakeServer) {
    const sockets = this;
    class FakeWebSocket {
      static readonly CONNECTING = 0;
      static readonly OPEN = 1;
      static readonly CLOSING = 2;
      static readonly CLOSED = 3;
      readyState = 0;
      readonly #listeners = new Map<string, Listener[]>();
      readonly #url: URL;
      #path = "";
      #connection = 0;
      /** Reader state: next offset, in flight, window. */
      #next = 0;
      #inFlight = 0;
      #window = 1000;
      #partition = 0;
      #topic = "";
      #kind: "reader" | "consumer" = "reader";

      constructor(url: string) {
        this.#url = new URL(url);
        sockets.opened.push(this.#url);
        setTimeout(() => this.#open(), 0);
      }

      addEventListener(type: string, fn: Listener): void {
        this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), fn]);
      }

      #emit(type: string, e: { data?: string; code?: number; reason?: string }): void {
        for (const fn of this.#listeners.get(type) ?? []) fn(e);
      }

      #send(frame: unknown): void {
        if (this.readyState !== 1) return;
        this.#emit("message", { data: JSON.stringify(frame) });
      }

      #open(): void {
        if (this.readyState !== 0) return;
        if (sockets.refuseOpens > 0) {
          sockets.refuseOpens--;
          this.readyState = 3;
          this.#emit("close", { code: 1006, reason: "" });
          return;
        }
        this.readyState = 1;
        sockets.#live.add(this);
        const path = this.#url.pathname.split("/").map(decodeURIComponent).join("/");
        this.#path = path;
        this.#connection = (sockets.#connections.get(path) ?? 0) + 1;
        sockets.#connections.set(path, this.#connection);
        const m = /^\/v1\/topics\/(.+)\/partitions\/(\d+)\/(readers\/ws|subscriptions\/([^/]+)\/ws)$/.exec(path)!;
        this.#topic = m[1]!;
        this.#partition = Number(m[2]);
        const log = server.log(this.#topic.replace(/^public\/default\//, ""), this.#partition);
        const q = this.#url.searchParams;
        if (m[4] === undefined) {
          this.#kind = "reader";
          this.#window = Number(q.get("receiverQueueSize") ?? 1000);
          const start = q.get("start") ?? "latest";
          const inclusive = q.get("inclusive") === "true";
          const end = log.logEndOffset;
          if (start === "earliest") this.#next = log.logStartOffset;
          else if (start === "latest") this.#next = inclusive && end > log.logStartOffset ? end - 1 : end;
          else if (start.startsWith("timestamp:")) this.#next = log.records.find((r) => r.timestamp >= Number(start.slice(10)))?.offset ?? end;
          else {
            const off = Number(start.split(":")[1]);
            this.#next = Math.min(Math.max(inclusive ? off : off + 1, log.logStartOffset), end);
          }
          this.#send({ type: "reader", partition: this.#partition, startOffset: this.#next });
        } else {
          this.#kind = "consumer";
          this.#window = Number.MAX_SAFE_INTEGER;
          this.#next = q.get("initialPosition") === "earliest" ? log.logStartOffset : log.logEndOffset;
          this.#send({ type: "connected", consumerId: `c${this.#connection}`, subscription: m[4], subscriptionType: q.get("type"), partition: this.#partition, active: true });
        }
        const wake = (): void => {
          if (this.readyState !== 1) return;
          this.#pump();
          log.waiters.push(wake);
        };
        log.waiters.push(wake);
        this.#pump();
      }

      #pump(): void {
        const log = server.log(this.#topic.replace(/^public\/default\//, ""), this.#partition);
        const out: LogRecord[] = log.records.filter((r) => r.offset >= this.#next).slice(0, Math.max(0, this.#window - this.#inFlight));
        if (out.length === 0) return;
        this.#next = out[out.length - 1]!.offset + 1;
        this.#inFlight += out.length;
        if (this.#kind === "reader") sockets.maxInFlight.set(this.#path, Math.max(sockets.maxInFlight.get(this.#path) ?? 0, this.#inFlight));
        this.#send({
          type: "messages",
          messages: out.map((r) => ({
            messageId: pad(this.#partition, r.offset),
            partition: this.#partition,
            offset: r.offset,
            timestamp: r.timestamp,
            key: b64(r.key),
            value: b64(r.value),
            headers: r.headers.map((h) => ({ key: h.key, value: b64(h.value) })),
            redeliveryCount: 0,
          })),
        });
      }

      send(data: string): void {
        if (this.readyState !== 1) throw new Error("send on a socket that is not open");
        const frame = JSON.parse(data) as Record<string, unknown>;
        sockets.frames.push({ path: this.#path, connection: this.#connection, frame, requestsBefore: server.requests.length });
        const ids = (frame.messageIds as string[] | undefined) ?? (frame.messageId === undefined ? [] : [frame.messageId as string]);
        if (frame.type === "ack" || frame.type === "ackCumulative") {
          this.#inFlight = Math.max(0, this.#inFlight - ids.length);
          if (frame.requestId !== undefined) setTimeout(() => this.#send({ type: "acked", requestId: frame.requestId, acked: ids.length }), 0);
          this.#pump();
        } else if (frame.type === "nack" && frame.requestId !== undefined) {
          setTimeout(() => this.#send({ type: "nacked", requestId: frame.requestId, nacked: ids.length }), 0);
        }
      }

      close(code = 1000, reason = ""): void {
        if (this.readyState === 3) return;
        this.readyState = 3;
        sockets.#live.delete(this);
        setTimeout(() => this.#emit("close", { code, reason }), 0);
      }
    }
    this.WebSocket = FakeWebSocket;
  }

  /** Closes every open socket with `code` (1006 by default: the network dropped it). */
  drop(code = 1006): void {
    for (const s of [...this.#live]) s.close(code, "dropped by the test");
  }

  /** The client frames of sockets whose path ends with `suffix`. */
  framesTo(suffix: string): ClientFrame[] {
    return this.frames.filter((f) => f.path.endsWith(suffix));
  }
}
