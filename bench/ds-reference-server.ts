/**
 * The Durable Streams reference server (@durable-streams/server) in file-backed mode, in a
 * process of its own, for bench/durable-streams.ts: so it does not share the bench client's
 * thread and heap, as Edgelog (workerd) does not either.
 *
 * Usage: node bench/ds-reference-server.ts [--no-compression]. Prints `{"url": ...}` on one
 * line once listening; stops (and removes its data directory) when stdin closes or on SIGTERM.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DurableStreamTestServer } from "@durable-streams/server";

const compression = !process.argv.includes("--no-compression");
const dataDir = mkdtempSync(join(tmpdir(), "ds-reference-"));
// Defaults otherwise: 30 s long-poll; gzip for answers of 1 KiB or more when the client accepts it.
const server = new DurableStreamTestServer({ port: 0, host: "127.0.0.1", dataDir, compression });
const url = await server.start();
process.stdout.write(`${JSON.stringify({ url: url.replace(/\/$/, "") })}\n`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
}
process.stdin.on("end", () => void stop());
process.stdin.on("close", () => void stop());
process.stdin.resume();
process.on("SIGTERM", () => void stop());
