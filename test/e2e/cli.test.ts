/**
 * The `edgelog` binary against a real dev server: binary-safe round trips (a file per record,
 * delimiters inside values), kafka-consumer-groups' --reset-offsets forms, and -L.
 * Exact outputs; the kcat formats themselves are covered in test/unit/sdk-cli-kcat.test.ts.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, randomTopic, type DevServer, startDevServer } from "./dev-server.ts";

const NODE = join(ROOT, "node_modules/.bin/node");
const CLI = join(ROOT, "sdk/bin/edgelog.js");

let server: DevServer;
let dir: string;
beforeAll(async () => {
  server = await startDevServer();
  dir = mkdtempSync(join(tmpdir(), "edgelog-cli-"));
});
afterAll(async () => {
  await server?.dispose();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Runs the CLI with `stdin`; resolves with the exit code, stdout bytes and stderr text. */
function cli(args: string[], stdin: Uint8Array | string = ""): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [CLI, "--url", server.baseUrl, ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr: err }));
    child.stdin.end(stdin);
  });
}

describe("edgelog CLI, binary-safe", () => {
  it("a file per record round-trips any bytes, read back as raw bytes and as base64 JSON", async () => {
    const topic = randomTopic("cli-bin");
    expect((await cli(["topics", "create", topic, "--partitions", "1"])).code).toBe(0);
    const files = [Uint8Array.from({ length: 256 }, (_, i) => i), new Uint8Array(randomBytes(70_000)), new Uint8Array(0)];
    const paths = files.map((bytes, i) => {
      const path = join(dir, `${topic}-${i}.bin`);
      writeFileSync(path, bytes);
      return path;
    });
    const produced = await cli(["produce", topic, ...paths, "-k", "file"]);
    expect(produced).toMatchObject({ code: 0, stderr: "" });
    expect(produced.stdout.length).toBe(0);
    for (let i = 0; i < files.length; i++) {
      const one = await cli(["consume", topic, "-o", String(i), "-c", "1", "-f", "%s"]);
      expect(one.code).toBe(0);
      expect(Buffer.compare(one.stdout, Buffer.from(files[i]!))).toBe(0);
    }
    const json = await cli(["consume", topic, "-o", "beginning", "-J", "--encoding", "base64"]);
    const lines = json.stdout
      .toString()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { topic: string; key: string; value: string });
    expect(lines.map((l) => [l.topic, Buffer.from(l.key, "base64").toString(), l.value])).toEqual(files.map((f) => [topic, "file", Buffer.from(f).toString("base64")]));
  });

  it("-D round-trips values with newlines, tabs and empty values; -Z makes an empty value a tombstone", async () => {
    const topic = randomTopic("cli-delim");
    expect((await cli(["topics", "create", topic, "--partitions", "1"])).code).toBe(0);
    const input = "line one\nline two\0tab\there\r\n\0\0last";
    expect((await cli(["produce", topic, "-D", "\\0"], input)).code).toBe(0);
    const back = await cli(["consume", topic, "-o", "beginning", "-D", "\\0"]);
    expect(back.stdout.toString()).toBe(`${input}\0`);
    expect((await cli(["produce", topic, "-K", ":", "-Z"], "gone:\n")).code).toBe(0);
    const tail = await cli(["consume", topic, "-o", "-1", "-J"]);
    expect(JSON.parse(tail.stdout.toString())).toMatchObject({ topic, offset: 4, key: "gone", value: null });
  });
});

describe("edgelog groups reset-offsets, kafka-consumer-groups style", () => {
  it("--shift-by (dry run, then --execute, clamped to the log), --to-current, --all-topics", async () => {
    const topic = randomTopic("cli-shift");
    const group = `g-${topic}`;
    expect((await cli(["topics", "create", topic, "--partitions", "1"])).code).toBe(0);
    expect((await cli(["produce", topic], Array.from({ length: 10 }, (_, i) => `r${i}\n`).join(""))).code).toBe(0);
    expect((await cli(["consume", topic, "-g", group, "-o", "beginning", "-n", "6"])).stdout.toString()).toBe("r0\nr1\nr2\nr3\nr4\nr5\n");

    const table = (previous: number, next: number) =>
      `${"TOPIC".padEnd(topic.length)}  PARTITION  PREVIOUS-OFFSET  NEW-OFFSET\n${topic}  0          ${String(previous).padEnd(15)}  ${next}\n`;
    const dry = await cli(["groups", "reset-offsets", group, "--topic", topic, "--shift-by", "-2"]);
    expect(dry).toMatchObject({ code: 0, stderr: "" });
    expect(dry.stdout.toString()).toBe(`${table(6, 4)}Dry run: nothing written (use --execute).\n`);
    const up = await cli(["groups", "reset-offsets", group, "--topic", `${topic}:0`, "--shift-by", "100", "--execute"]);
    expect(up.stdout.toString()).toBe(`${table(6, 10)}Offsets of group ${group} reset.\n`);
    const down = await cli(["groups", "reset-offsets", group, "--all-topics", "--shift-by", "-3", "--execute"]);
    expect(down.stdout.toString()).toBe(`${table(10, 7)}Offsets of group ${group} reset.\n`);
    const current = await cli(["groups", "reset-offsets", group, "--topic", topic, "--to-current"]);
    expect(current.stdout.toString()).toBe(`${table(7, 7)}Dry run: nothing written (use --execute).\n`);
    expect((await cli(["consume", topic, "-g", group, "-n", "3"])).stdout.toString()).toBe("r7\nr8\nr9\n");
  });
});

describe("edgelog -L", () => {
  it("lists a topic's partitions with their bounds and configs", async () => {
    const topic = randomTopic("cli-meta");
    expect((await cli(["topics", "create", topic, "--partitions", "2", "--config", "retention.ms=60000"])).code).toBe(0);
    expect((await cli(["produce", topic, "-p", "1"], "x\ny\n")).code).toBe(0);
    const meta = await cli(["-L", "-t", topic]);
    expect(meta.code).toBe(0);
    expect(meta.stdout.toString()).toMatch(
      new RegExp(
        `^Metadata from ${server.baseUrl}:\\n 1 topic:\\n  topic "${topic}" with 2 partitions:\\n` +
          "    partition 0, log start offset 0, high watermark 0, log end offset 0, 0 records, 0 bytes\\n" +
          "    partition 1, log start offset 0, high watermark 2, log end offset 2, 2 records, \\d+ bytes\\n" +
          "    configs: .*retention\\.ms=60000.*\\n$",
      ),
    );
  });
});

describe("edgelog top, against the real /v1/metrics and group describe", () => {
  it("--once --json: a topic's partitions with their offsets and sizes; --group: the group's lag", async () => {
    const topic = randomTopic("cli-top");
    const group = `g-${topic}`;
    expect((await cli(["topics", "create", topic, "--partitions", "2"])).code).toBe(0);
    expect((await cli(["produce", topic, "-p", "1"], Array.from({ length: 7 }, (_, i) => `r${i}\n`).join(""))).code).toBe(0);
    const topics = await cli(["top", "--topic", topic, "--once", "--json", "--interval", "0.2"]);
    expect(topics).toMatchObject({ code: 0, stderr: "" });
    const frame = JSON.parse(topics.stdout.toString()) as { view: string; partitions: Array<Record<string, unknown>> };
    expect(frame.view).toBe("topics");
    expect(frame.partitions.map((p) => [p.topic, p.partition, p.logEndOffset, p.records])).toEqual([
      [`public/default/${topic}`, 0, 0, 0],
      [`public/default/${topic}`, 1, 7, 7],
    ]);
    expect(frame.partitions[1]!.sizeBytes as number).toBeGreaterThan(0);
    expect(frame.partitions[1]!.recordsInPerSec).toBe(0); // nothing produced between the two scrapes

    expect((await cli(["consume", topic, "-g", group, "-o", "beginning", "-n", "3"])).code).toBe(0);
    const g = await cli(["top", "--group", group, "--once", "--json", "--interval", "0.2"]);
    expect(g).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(g.stdout.toString())).toMatchObject({ view: "group", group, totalLag: 4 });
  });
});
