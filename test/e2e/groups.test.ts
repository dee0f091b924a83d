/**
 * Consumer groups end to end: a real `wrangler dev` server, a 6-partition topic loaded with the
 * real GitHub webhook example payloads (@octokit/webhooks-examples), and three SDK group
 * consumers, each its own process (test/e2e/group-member.ts). One is SIGKILLed midway.
 *
 * Checked: every record is processed at least once; every record processed twice was processed
 * first by the killed member at or after its last committed offset (the uncommitted window),
 * and a survivor resumed that partition exactly at that committed offset; in the end the group
 * has no lag.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GroupDescription } from "../../src/protocol/index.ts";
import { ROOT, randomTopic, startDevServer, type DevServer } from "./dev-server.ts";

interface WebhookExample {
  name: string;
  examples: unknown[];
}

const PARTITIONS = 6;
/** How many times the example set is produced (329 examples each). */
const ROUNDS = 3;
const MESSAGE_DELAY_MS = 8;
const SESSION_TIMEOUT_MS = 2500;
const AUTO_COMMIT_MS = 500;

let server: DevServer;

beforeAll(async () => {
  server = await startDevServer();
});

afterAll(async () => {
  await server?.dispose();
});

function webhookExamples(): { event: string; payload: unknown }[] {
  const require = createRequire(import.meta.url);
  const path = require.resolve("@octokit/webhooks-examples/api.github.com/index.json");
  const all = JSON.parse(readFileSync(path, "utf8")) as WebhookExample[];
  return all.flatMap((w) => w.examples.map((payload) => ({ event: w.name, payload })));
}

async function http(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text === "" ? null : JSON.parse(text);
}

interface Line {
  name: string;
  t: number;
  ev: string;
  p?: number;
  o?: number;
  memberId?: string;
  offsets?: { topic: string; partition: number; offset: number }[];
  message?: string;
}

class Member {
  readonly lines: Line[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  #buf = "";
  stderr = "";

  readonly name: string;

  constructor(name: string, group: string, topic: string) {
    this.name = name;
    this.child = spawn(
      process.execPath,
      [join(ROOT, "test/e2e/group-member.ts"), server.baseUrl, group, topic, name, String(MESSAGE_DELAY_MS), String(SESSION_TIMEOUT_MS), String(AUTO_COMMIT_MS)],
      {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.child.stdout?.on("data", (d: Buffer) => {
      this.#buf += d.toString();
      let nl: number;
      while ((nl = this.#buf.indexOf("\n")) >= 0) {
        const line = this.#buf.slice(0, nl);
        this.#buf = this.#buf.slice(nl + 1);
        if (line.trim() !== "") this.lines.push(JSON.parse(line) as Line);
      }
    });
    this.child.stderr?.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((r) => this.child.once("exit", (code) => r(code)));
  }

  messages(): Line[] {
    return this.lines.filter((l) => l.ev === "msg");
  }

  memberId(): string | undefined {
    return this.lines.find((l) => l.ev === "member")?.memberId;
  }
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("consumer groups e2e", () => {
  it("three members share the webhook topic; one is killed midway; at-least-once with duplicates only in the uncommitted window", async () => {
    const topic = randomTopic("webhooks");
    const group = `e2e-${topic}`;
    await http("POST", "/v1/topics", { name: topic, partitions: PARTITIONS });
    await http("PATCH", `/v1/groups/${group}`, { configs: { "heartbeat.interval.ms": 250 } });

    // Load the topic: the real payloads, keyed by event name (the server partitions by key).
    const examples = webhookExamples();
    expect(examples.length).toBeGreaterThan(300);
    const records = Array.from({ length: ROUNDS }, (_, round) =>
      examples.map((e, i) => ({
        key: e.event,
        value: e.payload,
        headers: [
          { key: "x-github-event", value: e.event },
          { key: "seq", value: round * examples.length + i },
        ],
      })),
    ).flat();
    const ends = new Array<number>(PARTITIONS).fill(0);
    for (let i = 0; i < records.length; i += 100) {
      const r = (await http("POST", `/v1/topics/${topic}/records`, { keyEncoding: "string", valueEncoding: "json", records: records.slice(i, i + 100) })) as {
        records: { partition: number; offset: number }[];
      };
      for (const x of r.records) ends[x.partition] = Math.max(ends[x.partition] as number, x.offset + 1);
    }
    expect(ends.reduce((a, b) => a + b, 0)).toBe(records.length);

    const [a, b, c] = ["A", "B", "C"].map((n) => new Member(n, group, topic)) as [Member, Member, Member];
    try {
      // Midway: the group is Stable with partitions on every member, and B has processed part
      // of its share and committed at least once since.
      await waitFor("a Stable group with partitions on every member", async () => {
        const d = (await http("GET", `/v1/groups/${group}`)) as GroupDescription;
        return d.state === "Stable" && d.members.length === 3 && d.members.every((m) => m.assignment.length > 0);
      });
      const stableAt = Date.now();
      await waitFor("B to process and commit", () => {
        const commits = b.lines.filter((l) => l.ev === "commit" && l.t > stableAt);
        return commits.length >= 1 && b.messages().filter((l) => l.t > stableAt).length >= 40;
      });
      const victimId = b.memberId() as string;
      b.child.kill("SIGKILL");
      const killedAt = Date.now();
      await b.exited;
      // B is dead but still a member until its session expires: its committed offsets are final.
      const atKill = (await http("GET", `/v1/groups/${group}`)) as GroupDescription;
      const victim = atKill.members.find((m) => m.memberId === victimId);
      expect(victim, `B (${victimId}) is still a member right after the kill`).toBeDefined();
      const victimPartitions = [...(victim?.assignment ?? []), ...(victim?.pendingRevocation ?? [])].flatMap((tp) => tp.partitions);
      expect(victimPartitions.length).toBeGreaterThan(0);
      const committedAtKill = new Map(atKill.offsets.map((o) => [o.partition, o.committedOffset ?? 0]));

      // The survivors take over after B's session timeout and finish the topic.
      const processed = (): Map<string, string[]> => {
        const seen = new Map<string, string[]>();
        for (const m of [a, b, c]) for (const l of m.messages()) seen.set(`${l.p}:${l.o}`, [...(seen.get(`${l.p}:${l.o}`) ?? []), m.name]);
        return seen;
      };
      await waitFor("every record processed", () => ends.every((end, p) => Array.from({ length: end }, (_, o) => processed().has(`${p}:${o}`)).every(Boolean)), 90_000);
      // B may have processed the last records of its partitions without committing them: those
      // are finished only once a survivor has taken them over (after B's session expired) and
      // committed them. Stopping the survivors before that would leave lag nobody owns.
      await waitFor(
        "every partition committed to its end",
        async () => {
          const d = (await http("GET", `/v1/groups/${group}`)) as GroupDescription;
          return ends.every((end, p) => d.offsets.find((o) => o.partition === p)?.committedOffset === end);
        },
        90_000,
      );

      // Graceful stop of the survivors: they commit and leave.
      for (const m of [a, c]) m.child.kill("SIGTERM");
      expect(await a.exited).toBe(0);
      expect(await c.exited).toBe(0);

      // At least once: every offset of every partition was processed.
      const seen = processed();
      for (let p = 0; p < PARTITIONS; p++) for (let o = 0; o < (ends[p] as number); o++) expect(seen.has(`${p}:${o}`), `${p}:${o}`).toBe(true);

      // Duplicates only in the uncommitted window of the killed member.
      // B committed only what it had processed (its lines are in the order it emitted them).
      const bProcessed = new Map<number, number>();
      for (const l of b.lines) {
        if (l.ev === "msg") bProcessed.set(l.p as number, Math.max(bProcessed.get(l.p as number) ?? -1, l.o as number));
        if (l.ev !== "commit") continue;
        for (const o of l.offsets ?? []) expect(o.offset, `B's commit of partition ${o.partition}`).toBeLessThanOrEqual((bProcessed.get(o.partition) ?? -1) + 1);
      }
      let duplicates = 0;
      for (const [k, names] of seen) {
        if (names.length === 1) continue;
        duplicates++;
        const [p, o] = k.split(":").map(Number) as [number, number];
        expect(names.sort(), `duplicate ${k}`).toHaveLength(2);
        expect(names, `duplicate ${k} involves the killed member`).toContain("B");
        expect(victimPartitions, `duplicate ${k} is on a partition B owned at the kill`).toContain(p);
        expect(o, `duplicate ${k} is at or after B's last commit`).toBeGreaterThanOrEqual(committedAtKill.get(p) ?? 0);
        const when = b.messages().find((l) => l.p === p && l.o === o)?.t as number;
        expect(killedAt - when, `duplicate ${k} was processed by B within the auto-commit window before the kill`).toBeLessThan(AUTO_COMMIT_MS + 1500);
      }
      // Each of B's partitions was resumed by a survivor exactly at B's committed offset.
      for (const p of victimPartitions) {
        const after = [a, c].flatMap((m) => m.messages().filter((l) => l.p === p && l.t > killedAt)).sort((x, y) => x.t - y.t || (x.o as number) - (y.o as number));
        const committed = committedAtKill.get(p) ?? 0;
        if (committed < (ends[p] as number)) expect(after[0]?.o, `partition ${p} resumed at the committed offset`).toBe(committed);
        // Committed by B, or by the member B took the partition from if B had not committed it
        // since (B may be killed before it reaches a partition it took): never ahead of processing.
        const last = Math.max(
          -1,
          ...[a, b, c].flatMap((m) =>
            m
              .messages()
              .filter((l) => l.p === p && l.t <= killedAt)
              .map((l) => l.o as number),
          ),
        );
        expect(committed, `partition ${p} committed at the kill`).toBeLessThanOrEqual(last + 1);
      }
      expect(duplicates).toBeLessThanOrEqual(records.length / 3);

      // Survivors committed everything and left: no lag.
      await waitFor(
        "group empty with no lag",
        async () => {
          const d = (await http("GET", `/v1/groups/${group}`)) as GroupDescription;
          return d.state === "Empty" && d.totalLag === 0;
        },
        15_000,
      );
      const final = (await http("GET", `/v1/groups/${group}`)) as GroupDescription;
      expect(final.offsets.map((o) => o.committedOffset)).toEqual(ends);
    } finally {
      for (const m of [a, b, c]) if (m.child.exitCode === null) m.child.kill("SIGKILL");
      for (const m of [a, b, c]) if (m.stderr !== "") console.warn(`${m.name} stderr:\n${m.stderr}`);
    }
  });
});

/** Runs the `edgelog` CLI; resolves with its exit code and output. */
function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, "sdk/bin/edgelog.js"), "--url", server.baseUrl, ...args], { cwd: ROOT }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, stdout, stderr });
    });
  });
}

describe("consumer groups from the CLI", () => {
  it("consume -g resumes from the committed offsets; groups list, describe, reset-offsets, delete", async () => {
    const topic = randomTopic("cli");
    const group = `cli-${topic}`;
    await http("POST", "/v1/topics", { name: topic, partitions: 1 });
    await http("POST", `/v1/topics/${topic}/records`, { records: ["a", "b", "c", "d", "e"].map((value) => ({ value })) });

    const first = await cli(["consume", topic, "-g", group, "--from-beginning", "-n", "3"]);
    expect(first).toMatchObject({ code: 0, stdout: "a\nb\nc\n" });
    const second = await cli(["consume", topic, "-g", group, "-n", "2"]);
    expect(second).toMatchObject({ code: 0, stdout: "d\ne\n" });

    const described = await cli(["groups", "describe", group]);
    expect(described.code).toBe(0);
    expect(described.stdout).toContain("State: Empty");
    expect(described.stdout).toMatch(new RegExp(`${topic}\\s+0\\s+5\\s+5\\s+0`));
    const listed = await cli(["groups", "list"]);
    expect(listed.stdout).toMatch(new RegExp(`${group}\\s+Empty`));

    const dry = await cli(["groups", "reset-offsets", group, "--topic", topic, "--to-offset", "1"]);
    expect(dry.stdout).toContain("Dry run");
    expect(((await http("GET", `/v1/groups/${group}`)) as GroupDescription).offsets[0]?.committedOffset).toBe(5);
    const reset = await cli(["groups", "reset-offsets", group, "--topic", topic, "--to-offset", "1", "--execute"]);
    expect(reset.code).toBe(0);
    const third = await cli(["consume", topic, "-g", group, "-n", "4"]);
    expect(third.stdout).toBe("b\nc\nd\ne\n");

    expect((await cli(["groups", "delete", group])).code).toBe(0);
    const gone = await cli(["groups", "describe", group]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("GROUP_ID_NOT_FOUND");
  });
});
