/**
 * `kill -9` of the Kafka bridge (the CLI, its own process) under a stream of kafkajs produces
 * with acks=-1, then a bridge restarted on the same port: every record kafkajs was
 * acknowledged is in Edgelog afterwards (read with the SDK), because the bridge answers a
 * produce only after Edgelog acknowledged the append (docs/KAFKA-BRIDGE.md "Produce").
 *
 * kafkajs's idempotent producer is left out on purpose: after a failed send it reuses the
 * batch's sequence numbers, so it can lose acknowledged records against any broker
 * (docs/KAFKA-BRIDGE.md, "Other known differences").
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EdgelogClient } from "../../sdk/src/index.ts";
import { ROOT, freePort, randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";

process.env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1";

let server: DevServer;
let client: EdgelogClient;
let bridge: ChildProcess | undefined;
let port: number;

/** Starts `edgelog kafka-bridge` on `port` and resolves once it listens. */
async function startBridge(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, "sdk/bin/edgelog.js"), "kafka-bridge", "--listen", `127.0.0.1:${port}`, "--url", server.baseUrl], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      if (err.includes("listening on")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the bridge exited with ${code}: ${err}`)));
  });
  return child;
}

beforeAll(async () => {
  ({ server, client } = await startWithClient());
  port = await freePort();
  bridge = await startBridge();
});
afterAll(async () => {
  bridge?.kill("SIGKILL");
  await server?.dispose();
});

describe("Kafka bridge killed with SIGKILL mid-produce", () => {
  it("every record kafkajs was acknowledged (acks=-1) before and after the kill is in Edgelog", { timeout: 120_000 }, async () => {
    const topic = randomTopic("kb-kill");
    await client.createTopic({ name: topic, partitions: 3 });
    const kafka = new Kafka({ brokers: [`127.0.0.1:${port}`], clientId: "e2e-kill", logLevel: logLevel.NOTHING, retry: { retries: 2, initialRetryTime: 100 } });
    const producer = kafka.producer();
    await producer.connect();
    const acked = new Set<string>();
    let next = 0;
    let stop = false;
    // Four senders, so that appends are in flight when the bridge dies.
    const senders = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const values = Array.from({ length: 5 }, () => `r${next++}`);
        try {
          await producer.send({ topic, acks: -1, messages: values.map((v) => ({ key: v, value: v })) });
          for (const v of values) acked.add(v);
        } catch {
          await new Promise((r) => setTimeout(r, 50)); // the bridge is down: retry with new records
        }
      }
    });
    const until = async (n: number): Promise<void> => {
      while (acked.size < n) await new Promise((r) => setTimeout(r, 20));
    };
    await until(100);
    bridge!.kill("SIGKILL");
    await new Promise((r) => bridge!.once("exit", r));
    const beforeRestart = acked.size;
    bridge = await startBridge();
    await until(beforeRestart + 100);
    stop = true;
    await Promise.all(senders);
    await producer.disconnect();

    const stored = new Set((await readAll(client, topic, 3)).map((r) => Buffer.from(r.value!).toString()));
    expect([...acked].filter((v) => !stored.has(v))).toEqual([]);
    expect(acked.size).toBeGreaterThanOrEqual(beforeRestart + 100);
  });
});
