/**
 * Bench-only routes (gated by the benchGate middleware, see src/app.ts):
 * - `GET /bench/noop`: the gateway's floor, no Durable Object; `POST /bench/noop` the same
 *   with a request body read;
 * - `POST /bench/raw-insert/{name}`: the body inserted as one SQLite row by BenchDO `name`,
 *   the ceiling a produce is compared against in the same run;
 * - `GET /bench/echo/{name}` (WebSocket upgrade): BenchDO `name`'s echo room, the proof of the
 *   Durable Object base's sealed WebSocket entry points and hibernation (test/workers/base.test.ts);
 * - `GET /bench/broadcast/{name}` (WebSocket upgrade) and `POST /bench/broadcast/{name}` (the body,
 *   UTF-8, sent as one text frame to every socket of BenchDO `name`'s broadcast room, answered
 *   `{sockets}`): the ceiling of subscription fan-out (bench/subscriptions.ts).
 */
import type { Hono } from "hono";
import type { BenchRpc } from "../env.ts";
import type { AppEnv } from "../gateway/context.ts";
import { toEdgelogError } from "../protocol/errors.ts";

export function benchRoutes(app: Hono<AppEnv>): void {
  app.get("/bench/noop", (c) => c.text("ok"));
  // The same with a request body (read by the body middleware, as a produce's is), so a
  // POST-shaped request can be compared with a POST-shaped ceiling.
  app.post("/bench/noop", (c) => c.text("ok"));

  // The one use of a Durable Object's fetch: a WebSocket upgrade, answered by the object.
  app.get("/bench/echo/:name", (c) => c.env.BENCH.getByName(c.req.param("name")).fetch(c.req.raw));

  app.get("/bench/broadcast/:name", (c) => c.env.BENCH.getByName(c.req.param("name")).fetch(c.req.raw));
  app.post("/bench/broadcast/:name", async (c) => {
    const bench = c.env.BENCH.getByName(c.req.param("name")) as unknown as BenchRpc;
    const r = await bench.broadcast(new TextDecoder().decode(c.get("body")));
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ sockets: r.sockets });
  });

  app.post("/bench/raw-insert/:name", async (c) => {
    // The namespace's own stub type wraps results in Rpc.Result<>; BenchRpc is what the class implements.
    const bench = c.env.BENCH.getByName(c.req.param("name")) as unknown as BenchRpc;
    const r = await bench.insert(c.get("body"));
    if (!r.ok) throw toEdgelogError(r);
    return c.json({ id: r.id, bytes: r.bytes });
  });
}
