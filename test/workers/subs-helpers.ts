/**
 * Helpers for the subscription tests: a consumer socket through the real gateway, with a
 * frame queue, and waits that assert order and counts (never timing thresholds).
 */
import { expect } from "vitest";
import type { ServerFrame, WireMessage } from "../../src/subscriptions/wire.ts";
import { call, json } from "./helpers.ts";

export interface Consumer {
  ws: WebSocket;
  /** Every frame received so far, in order. */
  frames: ServerFrame[];
  /** Every message received so far, in order (flattened from `messages` frames). */
  messages: WireMessage[];
  /** Resolves when `pred` holds over the frames received (checked on every frame). */
  until(pred: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** Waits for `n` messages in total. */
  waitMessages(n: number, timeoutMs?: number): Promise<WireMessage[]>;
  send(frame: unknown): void;
  /** Sends an ack with a request id and waits for its receipt (the durable commit). */
  ack(ids: string[]): Promise<number>;
  ackCumulative(id: string): Promise<void>;
  /** Sends a nack with a request id and waits for its receipt (the durable commit). */
  nack(ids: string[]): Promise<number>;
  closed: Promise<CloseEvent>;
  close(): Promise<CloseEvent>;
}

let requestSeq = 0;

export async function connect(topic: string, sub: string, query: Record<string, string | number | boolean> = {}, partition = 0): Promise<Consumer> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  const res = await call(`/v1/topics/${topic}/partitions/${partition}/subscriptions/${sub}/ws${qs ? `?${qs}` : ""}`, { headers: { upgrade: "websocket" } });
  if (res.status !== 101) throw new Error(`upgrade refused ${res.status}: ${await res.text()}`);
  return wrap(res.webSocket as WebSocket);
}

export async function connectReader(topic: string, query: Record<string, string | number | boolean> = {}, partition = 0): Promise<Consumer> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  const res = await call(`/v1/topics/${topic}/partitions/${partition}/readers/ws${qs ? `?${qs}` : ""}`, { headers: { upgrade: "websocket" } });
  if (res.status !== 101) throw new Error(`upgrade refused ${res.status}: ${await res.text()}`);
  return wrap(res.webSocket as WebSocket);
}

/**
 * Accepts `ws` and records its JSON frames: `until(pred)` resolves once `pred` holds over what
 * arrived (checked on every frame and at the close), or rejects after `timeoutMs` naming the
 * frames seen. `onFrame` sees each frame as it is recorded.
 */
export function watchSocket<F>(
  ws: WebSocket,
  onFrame?: (f: F) => void,
): { frames: F[]; closed: Promise<CloseEvent>; until(pred: () => boolean, what: string, timeoutMs?: number): Promise<void> } {
  const frames: F[] = [];
  const checks = new Set<() => void>();
  ws.addEventListener("message", (e) => {
    const f = JSON.parse(e.data as string) as F;
    frames.push(f);
    onFrame?.(f);
    for (const c of [...checks]) c();
  });
  let closedResolve: (e: CloseEvent) => void = () => {};
  const closed = new Promise<CloseEvent>((r) => (closedResolve = r));
  ws.addEventListener("close", (e) => {
    closedResolve(e);
    for (const c of [...checks]) c();
  });
  ws.accept();
  const until = (pred: () => boolean, what: string, timeoutMs = 8000): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        checks.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        checks.delete(check);
        reject(new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames).slice(0, 2000)}`));
      }, timeoutMs);
      checks.add(check);
      check();
    });
  return { frames, closed, until };
}

function wrap(ws: WebSocket): Consumer {
  const messages: WireMessage[] = [];
  const { frames, closed, until } = watchSocket<ServerFrame>(ws, (f) => {
    if (f.type === "messages") messages.push(...f.messages);
  });
  const c: Consumer = {
    ws,
    frames,
    messages,
    until,
    async waitMessages(n, timeoutMs) {
      await until(() => messages.length >= n, `${n} messages`, timeoutMs);
      return messages.slice(0, n);
    },
    send: (f) => ws.send(JSON.stringify(f)),
    async ack(ids) {
      const requestId = `r${++requestSeq}`;
      ws.send(JSON.stringify({ type: "ack", messageIds: ids, requestId }));
      await until(() => frames.some((f) => (f.type === "acked" || f.type === "error") && f.requestId === requestId), `receipt ${requestId}`);
      const f = frames.find((x) => (x.type === "acked" || x.type === "error") && x.requestId === requestId)!;
      if (f.type === "error") throw new Error(`ack refused: ${f.code}`);
      return (f as { acked: number }).acked;
    },
    async nack(ids) {
      const requestId = `n${++requestSeq}`;
      ws.send(JSON.stringify({ type: "nack", messageIds: ids, requestId }));
      await until(() => frames.some((f) => (f.type === "nacked" || f.type === "error") && f.requestId === requestId), `receipt ${requestId}`);
      const f = frames.find((x) => (x.type === "nacked" || x.type === "error") && x.requestId === requestId)!;
      if (f.type === "error") throw new Error(`nack refused: ${f.code}`);
      return (f as { nacked: number }).nacked;
    },
    async ackCumulative(id) {
      const requestId = `r${++requestSeq}`;
      ws.send(JSON.stringify({ type: "ackCumulative", messageId: id, requestId }));
      await until(() => frames.some((f) => (f.type === "acked" || f.type === "error") && f.requestId === requestId), `receipt ${requestId}`);
    },
    closed,
    async close() {
      ws.close(1000, "done");
      return closed;
    },
  };
  return c;
}

export async function produceValues(topic: string, values: string[], extra: Record<string, unknown>[] = [], partition?: number): Promise<number[]> {
  const path = partition === undefined ? `/v1/topics/${topic}/records` : `/v1/topics/${topic}/partitions/${partition}/records`;
  const res = await json("POST", path, { records: values.map((value, i) => ({ value, ...(extra[i] ?? {}) })) });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return (JSON.parse(text) as { records: { offset: number }[] }).records.map((r) => r.offset);
}

export async function subStats(
  topic: string,
  sub: string,
): Promise<{
  backlog: number;
  unacked: number;
  deadLetteredTotal: number;
  partitions: { markDeletePosition: number; ackedRanges: [number, number][]; backlog: number; consumers: { permits: number; unacked: number; active: boolean }[] }[];
}> {
  const res = await call(`/v1/topics/${topic}/subscriptions/${sub}`);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const values = (ms: readonly WireMessage[]) => ms.map((m) => m.value);
