/**
 * `edgelog subscriptions …` and `edgelog subscribe` against a real dev server (issue 17): a
 * subscription created at the earliest position of a 2-partition topic, `subscribe -n 3`
 * printing the 3 records (fanned in over both partitions) and acking them, so that stats show
 * a backlog of 0; reset and clear-backlog; and delete refused while a `subscribe` is connected,
 * then accepted once it was stopped with Ctrl-C (SIGINT).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, randomTopic, type DevServer, startDevServer } from "./dev-server.ts";

const NODE = join(ROOT, "node_modules/.bin/node");
const CLI = join(ROOT, "sdk/bin/edgelog.js");

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer();
});
afterAll(async () => {
  await server?.dispose();
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function start(args: string[], stdin = ""): { child: ChildProcess; done: Promise<Ran>; stdout(): string } {
  const child = spawn(NODE, [CLI, "--url", server.baseUrl, ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  const done = new Promise<Ran>((resolve, reject) => {
    let err = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: out, stderr: err }));
  });
  child.stdin!.end(stdin);
  return { child, done, stdout: () => out };
}

function cli(args: string[], stdin = ""): Promise<Ran> {
  return start(args, stdin).done;
}

async function statsOf(topic: string, sub: string): Promise<{ backlog: number; unacked: number; consumers: number; type: string }> {
  const r = await cli(["subscriptions", "stats", topic, sub, "--json"]);
  expect(r).toMatchObject({ code: 0, stderr: "" });
  return JSON.parse(r.stdout);
}

describe("edgelog subscriptions and subscribe", () => {
  it("subscribe -n 3 prints and acks 3 records; stats show backlog 0; reset and clear-backlog move the cursor", async () => {
    const topic = randomTopic("cli-sub");
    expect((await cli(["topics", "create", topic, "--partitions", "2"])).code).toBe(0);
    expect(await cli(["produce", topic], "a\nb\nc\n")).toMatchObject({ code: 0, stderr: "" });
    expect(await cli(["subscriptions", "create", topic, "billing", "--position", "earliest"])).toEqual({
      code: 0,
      stdout: `Created subscription billing (exclusive) of ${topic} at earliest: backlog 3.\n`,
      stderr: "",
    });
    expect((await cli(["subscriptions", "list", topic])).stdout.split("\n")[1]?.split(/\s+/)).toEqual(["billing", "exclusive", "3", expect.any(String), "0", "0"]);

    const got = await cli(["subscribe", topic, "-s", "billing", "-n", "3"]);
    expect([got.code, got.stderr]).toEqual([0, ""]);
    expect(got.stdout.split("\n").sort()).toEqual(["", "a", "b", "c"]);
    expect(await statsOf(topic, "billing")).toMatchObject({ backlog: 0, unacked: 0, consumers: 0, type: "exclusive" });

    expect((await cli(["subscriptions", "reset", topic, "billing", "--to", "earliest"])).stdout).toBe(`Reset subscription billing of ${topic} to earliest: backlog 3.\n`);
    // JSON output carries the message id and redelivery count (cleared by the reset).
    const again = await cli(["subscribe", topic, "-s", "billing", "-n", "1", "-J"]);
    const m = JSON.parse(again.stdout) as { topic: string; value: string; messageId: string; redeliveryCount: number };
    expect([m.topic, ["a", "b", "c"].includes(m.value), /^\d{4}:\d{16}$/.test(m.messageId), m.redeliveryCount]).toEqual([topic, true, true, 0]);
    expect((await statsOf(topic, "billing")).backlog).toBe(2);
    expect((await cli(["subscriptions", "clear-backlog", topic, "billing"])).stdout).toBe("Cleared 2 message(s) of subscription billing: backlog 0.\n");
  });

  it("delete is refused while a subscribe is connected, and accepted after Ctrl-C stops it", async () => {
    const topic = randomTopic("cli-sub");
    expect((await cli(["topics", "create", topic, "--partitions", "1"])).code).toBe(0);
    const running = start(["subscribe", topic, "-s", "work", "-t", "shared"]);
    // Wait until its socket is admitted (the subscription then exists with one consumer).
    for (let i = 0; ; i++) {
      const r = await cli(["subscriptions", "stats", topic, "work", "--json"]);
      if (r.code === 0 && (JSON.parse(r.stdout) as { consumers: number }).consumers === 1) break;
      if (i >= 100) throw new Error(`the subscribe never connected: ${r.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect((await statsOf(topic, "work")).type).toBe("shared");
    const refused = await cli(["subscriptions", "delete", topic, "work"]);
    expect([refused.code, refused.stdout, refused.stderr.split(":")[1]?.trim()]).toEqual([1, "", "SUBSCRIPTION_HAS_CONSUMERS"]);
    // A produced record reaches the running subscribe, which prints it.
    expect((await cli(["produce", topic], "live\n")).code).toBe(0);
    for (let i = 0; running.stdout() === ""; i++) {
      if (i >= 300) throw new Error("the subscribe printed nothing");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    running.child.kill("SIGINT");
    expect(await running.done).toEqual({ code: 0, stdout: "live\n", stderr: "" });
    expect(await statsOf(topic, "work")).toMatchObject({ backlog: 0, consumers: 0 });
    expect(await cli(["subscriptions", "delete", topic, "work"])).toEqual({ code: 0, stdout: `Deleted subscription work of ${topic}.\n`, stderr: "" });
    const gone = await cli(["subscriptions", "stats", topic, "work"]);
    expect([gone.code, gone.stderr.split(":")[1]?.trim()]).toEqual([1, "SUBSCRIPTION_NOT_FOUND"]);
  });
});
