/**
 * CLI progress (sdk/src/cli/progress.ts): the pure core (rates, formatting), and the real
 * `edgelog` binary under a pseudo-terminal (util-linux `script`, in Debian's essential
 * bsdutils) against the in-memory fake server behind a loopback HTTP server: progress appears
 * on a terminal, and nothing appears on stderr when it is piped.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatBytes, formatCount, formatDuration, formatProgressLine, Progress, RateWindow } from "../../sdk/src/cli/progress.ts";
import { FakeServer } from "./sdk-fake-server.ts";

const ROOT = join(import.meta.dirname, "../..");
const NODE = join(ROOT, "node_modules/.bin/node");
const CLI = join(ROOT, "sdk/bin/edgelog.js");
const CLEAR = "\r\x1b[2K";
const HOME_CLEAR = "\x1b[H\x1b[2J";

describe("progress core", () => {
  it("formats counts, bytes and durations", () => {
    expect([formatCount(0), formatCount(999), formatCount(1000), formatCount(1234567.4)]).toEqual(["0", "999", "1,000", "1,234,567"]);
    expect([formatBytes(0), formatBytes(1023), formatBytes(1536), formatBytes(5 * 1024 ** 3)]).toEqual(["0 B", "1023 B", "1.5 KiB", "5.0 GiB"]);
    expect([formatDuration(850), formatDuration(4200), formatDuration(185_000), formatDuration(7_800_000)]).toEqual(["850 ms", "4.2 s", "3m05s", "2h10m"]);
  });

  it("measures rates over the last window only", () => {
    const w = new RateWindow(1000);
    expect(w.rate()).toBeNull();
    w.sample(0, 0, 0);
    w.sample(500, 100, 1000);
    expect(w.rate()).toEqual({ recordsPerSec: 200, bytesPerSec: 2000 });
    // A stall: the early samples fall out of the window and the rate drops to 0.
    w.sample(2000, 100, 1000);
    w.sample(3000, 100, 1000);
    expect(w.rate()).toEqual({ recordsPerSec: 0, bytesPerSec: 0 });
  });

  it("writes one line with rate and lag (and the time left), cut to the terminal width", () => {
    const s = { verb: "Consumed", records: 12345, bytes: 1_258_291, elapsedMs: 4200, rate: { recordsPerSec: 2000, bytesPerSec: 204_800 }, lag: 8000 };
    expect(formatProgressLine(s)).toBe("Consumed 12,345 records, 1.2 MiB in 4.2 s | 2,000 rec/s, 200.0 KiB/s | lag 8,000 (~4.0 s)");
    expect(formatProgressLine({ ...s, records: 1, rate: null, lag: null })).toBe("Consumed 1 record, 1.2 MiB in 4.2 s");
    expect(formatProgressLine(s, 20)).toBe("Consumed 12,345 rec");
  });

  it("a disabled Progress writes nothing; an enabled one redraws in place and keeps or clears its line", () => {
    const written: string[] = [];
    const stream = { write: (x: string) => written.push(x), isTTY: true };
    const off = new Progress(stream, "Produced", false);
    off.add(5, 50);
    off.stop(true);
    expect(written).toEqual([]);
    let now = 1000;
    const on = new Progress(stream, "Produced", true, () => now);
    on.add(3, 30);
    now = 2000;
    on.stop(true);
    expect(written).toEqual([`${CLEAR}Produced 0 records, 0 B in 0 ms`, `${CLEAR}Produced 3 records, 30 B in 1.0 s | 3 rec/s, 30 B/s`, "\n"]);
    const cleared = new Progress(stream, "Produced", true, () => now);
    cleared.stop(false);
    expect(written.at(-1)).toBe(CLEAR);
  });
});

/** A scrape of one partition whose records-in counter rises by 10 per scrape. */
let scrapes = 0;
function metricsText(): string {
  scrapes++;
  return [
    "# TYPE edgelog_partition_log_end_offset gauge",
    `edgelog_partition_log_end_offset{topic="public/default/t",partition="0"} ${10 * scrapes}`,
    "# TYPE edgelog_partition_records_in_total counter",
    `edgelog_partition_records_in_total{topic="public/default/t",partition="0"} ${10 * scrapes}`,
    "",
  ].join("\n");
}

/** The fake server behind a real loopback HTTP server, for the binary (plus a /v1/metrics). */
function serve(fake: FakeServer): Promise<Server> {
  const server = createServer(async (req, res) => {
    if (req.url === "/v1/metrics") {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      res.end(metricsText());
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const answer = await fake.fetch(`http://fake${req.url}`, { method: req.method, headers, ...(body.length > 0 ? { body } : {}) });
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** Runs `sh -c line` with stdout and stderr captured (no terminal anywhere). */
function piped(line: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", line], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Runs `line` on a pseudo-terminal (script -q -e -c), answering what the terminal showed.
 * `interruptWhen`: once it holds for what the terminal showed, Ctrl-C is typed (the terminal
 * sends SIGINT to the program, as a user's Ctrl-C does). The line runs as `exec line` under
 * /bin/sh: `script` starts `$SHELL -c`, and a shell left waiting in the terminal's process group
 * would take the same SIGINT and die of it (dash does; CI has no $SHELL), hiding the program's code.
 */
function onTerminal(line: string, interruptWhen?: (terminal: string) => boolean): Promise<{ code: number | null; terminal: string }> {
  return new Promise((resolve) => {
    const child = spawn("script", ["-q", "-e", "-c", `exec ${line}`, "/dev/null"], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, SHELL: "/bin/sh" },
    });
    let terminal = "";
    let interrupted = false;
    child.stdout.on("data", (d: Buffer) => {
      terminal += d.toString();
      if (interruptWhen !== undefined && !interrupted && interruptWhen(terminal)) {
        interrupted = true;
        child.stdin.write("\x03");
      }
    });
    if (interruptWhen === undefined) child.stdin.end();
    child.on("close", (code) => resolve({ code, terminal }));
  });
}

describe("edgelog on a terminal and piped", () => {
  let http: Server;
  let url: string;
  let dir: string;
  const fake = new FakeServer();

  beforeAll(async () => {
    // util-linux `script` comes with Debian's essential bsdutils: fail clearly if it is gone.
    execFileSync("script", ["--version"]);
    fake.addTopic("t", 2);
    // Topic c: 1,000 records for the consume tests (500 per partition), whatever ran before.
    fake.addTopic("c", 2);
    const enc = new TextEncoder();
    for (const p of [0, 1])
      fake.append(
        "c",
        p,
        Array.from({ length: 500 }, (_, i) => ({ key: null, value: enc.encode(`v${p}-${i}`), headers: [], timestamp: 1 })),
      );
    http = await serve(fake);
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), "edgelog-progress-"));
    writeFileSync(join(dir, "in.txt"), Array.from({ length: 500 }, (_, i) => `k${i % 7}:value-${i}`).join("\n"));
  });

  afterAll(() => {
    http?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cli = (args: string) => `'${NODE}' '${CLI}' --url ${url} ${args}`;

  it("produce: progress and the summary on a terminal; nothing on a piped stderr", { timeout: 60_000 }, async () => {
    const tty = await onTerminal(`${cli("produce t -K :")} < '${join(dir, "in.txt")}'`);
    expect(tty.code).toBe(0);
    expect(tty.terminal).toContain(`${CLEAR}Produced 0 records, 0 B in `);
    expect(tty.terminal).toMatch(/Produced 500 records to t: partition 0 offsets 0\.\.\d+, partition 1 offsets 0\.\.\d+\.\r?\n/);
    const before = fake.log("t", 0).records.length + fake.log("t", 1).records.length;
    const pipe = await piped(`${cli("produce t -K :")} < '${join(dir, "in.txt")}'`);
    expect(pipe).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(fake.log("t", 0).records.length + fake.log("t", 1).records.length).toBe(before + 500);
  });

  it("consume to a file: progress with the lag on the terminal, the records untouched in the file", { timeout: 60_000 }, async () => {
    const out = join(dir, "out.jsonl");
    const tty = await onTerminal(`${cli("consume c -o beginning -e -J")} > '${out}'`);
    expect(tty.code).toBe(0);
    expect(tty.terminal).toContain(`${CLEAR}Consumed 0 records, 0 B in `);
    // The last frame is kept: every record, and nothing left to read.
    expect(tty.terminal).toMatch(/Consumed 1,000 records, [\d.]+ KiB in [^|]+\| [\d,]+ rec\/s, [^|]+\| lag 0\r?\n/);
    const lines = readFileSync(out, "utf8").trimEnd().split("\n");
    expect(lines.length).toBe(1000);
    for (const l of lines) expect(JSON.parse(l)).toHaveProperty("offset");
    const pipe = await piped(cli("consume c -o beginning -e -J"));
    expect(pipe.code).toBe(0);
    expect(pipe.stderr).toBe("");
    expect(pipe.stdout.trimEnd().split("\n").length).toBe(1000);
  });

  it("top: frames redrawn in place on the terminal's alternate screen, restored on Ctrl-C", { timeout: 60_000 }, async () => {
    const tty = await onTerminal(cli("top --interval 0.2"), (t) => t.split(HOME_CLEAR).length > 3);
    expect(tty.code).toBe(0);
    expect(tty.terminal.startsWith("\x1b[?1049h\x1b[?25l")).toBe(true);
    const frames = tty.terminal.split(HOME_CLEAR).slice(1);
    expect(frames.length).toBeGreaterThanOrEqual(2);
    expect(frames[0]).toContain("edgelog top: topics");
    expect(frames.at(-1)).toMatch(/\nt {6}0 {10}\d+ /);
    expect(tty.terminal.endsWith("\x1b[?25h\x1b[?1049l")).toBe(true);
  });

  it("consume --follow: Ctrl-C keeps the last progress line, ended by a newline", { timeout: 60_000 }, async () => {
    const out = join(dir, "follow.jsonl");
    const tty = await onTerminal(`${cli("consume c -o beginning --follow -J")} > '${out}'`, (t) => /Consumed 1,000 records/.test(t));
    const last = tty.terminal.slice(tty.terminal.lastIndexOf(CLEAR) + CLEAR.length);
    expect(last).toMatch(/^Consumed 1,000 records, .*\r?\n$/);
    expect(readFileSync(out, "utf8").trimEnd().split("\n").length).toBe(1000);
  });
});
