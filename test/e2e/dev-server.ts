/**
 * Starts the real local dev server (`wrangler dev`, workerd) on a free loopback port for
 * e2e tests, with its Durable Object state persisted in a directory the caller owns, so a
 * test can stop and restart the server over the same data.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Consumer, EdgelogClient, type ConsumerRecord } from "../../sdk/src/index.ts";

export const ROOT = resolve(import.meta.dirname, "../..");
const WRANGLER = join(ROOT, "node_modules/.bin/wrangler");

/** A free TCP port on 127.0.0.1 (the OS picks it; tiny race until wrangler binds it). */
export async function freePort(): Promise<number> {
  return await new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

export interface DevServer {
  baseUrl: string;
  port: number;
  persistDir: string;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Kills the server abruptly (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and state directory. */
  restart(): Promise<void>;
  /** Stops it and removes the state directory if this harness created it. */
  dispose(): Promise<void>;
  /** Everything the server printed so far (for failure messages). */
  output(): string;
}

export interface DevServerOptions {
  persistDir?: string;
  vars?: Record<string, string>;
  startTimeoutMs?: number;
  /** The project folder wrangler dev runs in (its wrangler.toml and code). @default this repository */
  cwd?: string;
}

export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const ownsDir = opts.persistDir === undefined;
  const persistDir = opts.persistDir ?? mkdtempSync(join(tmpdir(), "edgelog-e2e-"));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let out = "";

  const launch = async () => {
    const inspectorPort = await freePort();
    const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspectorPort), "--persist-to", persistDir, "--log-level", "warn"];
    // Auth off unless a test sets it (wrangler.toml leaves EDGELOG_AUTH unset: docs/SECURITY.md);
    // a one-member metadata quorum, as `npm start` runs (wrangler.toml deploys three).
    for (const [k, v] of Object.entries({ EDGELOG_AUTH: "none", EDGELOG_METADATA_QUORUM: "1", ...opts.vars })) args.push("--var", `${k}:${v}`);
    child = spawn(WRANGLER, args, {
      cwd: opts.cwd ?? ROOT,
      // The project's own Node (npm package `node`) first on PATH: wrangler needs Node >= 22.
      env: {
        ...process.env,
        PATH: `${join(ROOT, "node_modules/.bin")}:${process.env.PATH ?? ""}`,
        WRANGLER_SEND_METRICS: "false",
        CLOUDFLARE_CF_FETCH_ENABLED: "false",
        CI: "true",
        NO_COLOR: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const deadline = Date.now() + (opts.startTimeoutMs ?? 90_000);
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${out}`);
      try {
        const r = await fetch(`${baseUrl}/v1/health`);
        if (r.ok) return;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`wrangler dev did not become healthy on ${baseUrl}:\n${out}`);
  };

  const signal = async (sig: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null || c.pid === undefined) return;
    const exited = new Promise<void>((r) => c.once("exit", () => r()));
    try {
      process.kill(-c.pid, sig);
    } catch {
      /* already gone */
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-(c.pid as number), "SIGKILL");
      } catch {
        /* gone */
      }
    }, 5000);
    await exited;
    clearTimeout(timer);
  };

  await launch();
  return {
    baseUrl,
    port,
    persistDir,
    stop: () => signal("SIGTERM"),
    kill: () => signal("SIGKILL"),
    restart: async () => {
      await signal("SIGTERM");
      await launch();
    },
    dispose: async () => {
      await signal("SIGTERM");
      if (ownsDir) rmSync(persistDir, { recursive: true, force: true });
    },
    output: () => out,
  };
}

/** A random topic name for one test. */
export function randomTopic(prefix = "t"): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Reads every record of `topic`'s partitions 0..partitions-1 from the log start to the log end
 * through the SDK's assign-based consumer, in partition-then-offset order of the polls.
 */
export async function readAll(client: EdgelogClient, topic: string, partitions: number): Promise<ConsumerRecord[]> {
  const consumer = new Consumer(client, { maxRecords: 10_000 });
  consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition })));
  await consumer.seekToBeginning();
  const out: ConsumerRecord[] = [];
  for (;;) {
    const batch = await consumer.poll({ maxWaitMs: 0 });
    if (batch.length === 0) break;
    out.push(...batch);
  }
  consumer.close();
  return out;
}

/** A dev server started with `opts` and an SDK client for it (for a test file's beforeAll). */
export async function startWithClient(opts: DevServerOptions = {}): Promise<{ server: DevServer; client: EdgelogClient }> {
  const server = await startDevServer(opts);
  return { server, client: new EdgelogClient({ baseUrl: server.baseUrl }) };
}
