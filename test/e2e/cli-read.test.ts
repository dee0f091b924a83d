/**
 * `edgelog read` against a real dev server: a reader from earliest, a message id (exclusive and
 * --inclusive), a timestamp, and latest (which waits for new messages, here stopped by -n); -e
 * exits once nothing is left to read; -J adds the message id. The reader stores nothing: no
 * subscription appears on the topic.
 */
import { spawn } from "node:child_process";
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

function cli(args: string[], stdin = ""): Promise<Ran> {
  const child = spawn(NODE, [CLI, "--url", server.baseUrl, ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
  return new Promise<Ran>((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: out, stderr: err }));
    child.stdin!.end(stdin);
  });
}

describe("edgelog read", () => {
  it("reads from earliest, a message id (exclusive, --inclusive), a timestamp and latest; -e stops at the end", async () => {
    const topic = randomTopic("cli-read");
    expect((await cli(["topics", "create", topic, "--partitions", "1"])).code).toBe(0);
    expect(await cli(["produce", topic], "a\nb\nc\nd\n")).toMatchObject({ code: 0, stderr: "" });
    const id1 = "0000:0000000000000001";

    expect(await cli(["read", topic, "--start", "earliest", "-e"])).toEqual({ code: 0, stdout: "a\nb\nc\nd\n", stderr: "" });
    expect(await cli(["read", topic, "--start", "earliest", "-n", "2"])).toEqual({ code: 0, stdout: "a\nb\n", stderr: "" });
    expect(await cli(["read", topic, "--start", id1, "-e"])).toEqual({ code: 0, stdout: "c\nd\n", stderr: "" });
    expect(await cli(["read", topic, "--start", id1, "--inclusive", "-n", "1"])).toEqual({ code: 0, stdout: "b\n", stderr: "" });
    expect(await cli(["read", topic, "--start", "latest", "--inclusive", "-n", "1"])).toEqual({ code: 0, stdout: "d\n", stderr: "" });
    expect(await cli(["read", topic, "--start", "latest", "-e"])).toEqual({ code: 0, stdout: "", stderr: "" });

    const json = await cli(["read", topic, "--start", "earliest", "-n", "1", "-J"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ topic, partition: 0, offset: 0, value: "a", messageId: "0000:0000000000000000" });

    // timestamp:0 reads everything; a timestamp after every record, nothing (-e: nothing left).
    expect(await cli(["read", topic, "--start", "timestamp:0", "-e"])).toEqual({ code: 0, stdout: "a\nb\nc\nd\n", stderr: "" });
    expect(await cli(["read", topic, "--start", `timestamp:${Date.now() + 60_000}`, "-e"])).toEqual({ code: 0, stdout: "", stderr: "" });

    // latest waits for a new message; -n 1 stops after it. The produce is repeated each second
    // until the reader (connected at some moment) prints: it prints only the first it sees.
    let result: Ran | undefined;
    const latest = cli(["read", topic, "-n", "1"]).then((r) => (result = r));
    const deadline = Date.now() + 60_000;
    while (result === undefined && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      if (result === undefined) expect((await cli(["produce", topic], "e\n")).code).toBe(0);
    }
    expect(await latest).toEqual({ code: 0, stdout: "e\n", stderr: "" });

    // A reader stores nothing on the server.
    expect(JSON.parse((await cli(["subscriptions", "list", topic, "--json"])).stdout)).toEqual([]);
  });
});
