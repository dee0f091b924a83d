/**
 * BenchDO's broadcast room (the fan-out ceiling of bench/subscriptions.ts): every socket of the
 * room receives each posted frame unchanged, also after the object was evicted (hibernation);
 * an echo socket of the same object receives nothing; an empty frame is refused.
 */
import { env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, expectError } from "./helpers.ts";

async function listen(path: string): Promise<{ ws: WebSocket; got: string[] }> {
  const res = await call(path, { headers: { upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket as WebSocket;
  const got: string[] = [];
  ws.addEventListener("message", (e) => {
    got.push(e.data as string);
  });
  ws.accept();
  return { ws, got };
}

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 5));
}

describe("bench broadcast room", () => {
  it("sends each posted frame to every broadcast socket, before and after an eviction; refuses an empty frame", async () => {
    const name = `bc-${crypto.randomUUID()}`;
    const sockets = [await listen(`/bench/broadcast/${name}`), await listen(`/bench/broadcast/${name}`), await listen(`/bench/broadcast/${name}`)];
    const echo = await listen(`/bench/echo/${name}?label=quiet`);
    const frame = JSON.stringify({ type: "messages", messages: [{ messageId: "0000:0000000000000000", value: "é" }] });
    const r1 = await call(`/bench/broadcast/${name}`, { method: "POST", body: frame });
    expect(await r1.json()).toEqual({ sockets: 3 });
    await until(() => sockets.every((s) => s.got.length === 1));
    expect(sockets.map((s) => s.got)).toEqual([[frame], [frame], [frame]]);

    await evictDurableObject(env.BENCH.getByName(name));
    const r2 = await call(`/bench/broadcast/${name}`, { method: "POST", body: "second" });
    expect(await r2.json()).toEqual({ sockets: 3 });
    await until(() => sockets.every((s) => s.got.length === 2));
    expect(sockets.map((s) => s.got[1])).toEqual(["second", "second", "second"]);
    expect(echo.got).toEqual([]);

    await expectError(await call(`/bench/broadcast/${name}`, { method: "POST", body: "" }), "INVALID_REQUEST", 400);
    for (const s of [...sockets, echo]) s.ws.close(1000, "done");
  });
});
