/**
 * `edgelog subscriptions …` and `edgelog subscribe` command lines (pulsar-admin's and
 * pulsar-client consume's), parsed exactly; the admin commands run against a stub gateway that
 * records each request (method, path, query, body) and answers as docs/PROTOCOL.md
 * "Subscription admin" says.
 */
import { Readable, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { SubscriptionStats } from "../../sdk/src/admin.ts";
import { type CliIo, DEFAULT_URL, main, parseCli, UsageError } from "../../sdk/src/cli/index.ts";

const output = { json: false, encoding: "string", printKey: false, keySeparator: "\t", format: undefined, delimiter: undefined, printNull: undefined };

describe("parseCli: subscriptions", () => {
  it("parses every admin command", () => {
    const base = { url: DEFAULT_URL, topic: "t", subscription: "s" };
    expect(parseCli(["subscriptions", "list", "t", "--json"])).toEqual({ kind: "subscriptions list", url: DEFAULT_URL, topic: "t", json: true });
    expect(parseCli(["subscriptions", "create", "t", "s"])).toEqual({ kind: "subscriptions create", ...base, position: undefined, type: undefined, json: false });
    expect(parseCli(["subscriptions", "create", "t", "s", "--position", "Earliest", "--type", "Key_Shared"])).toEqual({
      kind: "subscriptions create",
      ...base,
      position: "earliest",
      type: "key_shared",
      json: false,
    });
    expect(parseCli(["subscriptions", "create", "t", "s", "--position", "1700000000000"])).toMatchObject({ position: { timestamp: 1700000000000 } });
    expect(parseCli(["subscriptions", "create", "t", "s", "--position", "2026-01-31T12:00:00Z"])).toMatchObject({ position: { timestamp: Date.UTC(2026, 0, 31, 12) } });
    expect(parseCli(["subscriptions", "delete", "t", "s"])).toEqual({ kind: "subscriptions delete", ...base, force: false });
    expect(parseCli(["subscriptions", "delete", "t", "s", "--force"])).toEqual({ kind: "subscriptions delete", ...base, force: true });
    expect(parseCli(["subscriptions", "reset", "t", "s", "--to", "latest"])).toEqual({ kind: "subscriptions reset", ...base, target: "latest", json: false });
    expect(parseCli(["subscriptions", "reset", "t", "s", "--to", "0000:0000000000000042"])).toMatchObject({ target: { messageId: "0000:0000000000000042" } });
    expect(parseCli(["subscriptions", "reset", "t", "s", "--to", "1000", "-J"])).toMatchObject({ target: { timestamp: 1000 }, json: true });
    expect(parseCli(["subscriptions", "skip", "t", "s", "5"])).toEqual({ kind: "subscriptions skip", ...base, count: 5, partition: undefined, json: false });
    expect(parseCli(["subscriptions", "skip", "t", "s", "5", "-p", "2"])).toMatchObject({ count: 5, partition: 2 });
    expect(parseCli(["subscriptions", "clear-backlog", "t", "s"])).toEqual({ kind: "subscriptions clear-backlog", ...base, json: false });
    expect(parseCli(["subscriptions", "stats", "t", "s", "--json"])).toEqual({ kind: "subscriptions stats", ...base, json: true });
  });

  it("parses subscribe: -s, pulsar-client's -t TYPE (not kcat's topic here), -n, --position and consume's output options", () => {
    expect(parseCli(["subscribe", "t", "-s", "s"])).toEqual({
      kind: "subscribe",
      url: DEFAULT_URL,
      topic: "t",
      subscription: "s",
      type: "exclusive",
      position: "latest",
      count: undefined,
      ...output,
    });
    expect(parseCli(["--url", "http://h:1", "subscribe", "t", "-s", "s", "-t", "Shared", "-n", "3", "--position", "earliest"])).toEqual({
      kind: "subscribe",
      url: "http://h:1",
      topic: "t",
      subscription: "s",
      type: "shared",
      position: "earliest",
      count: 3,
      ...output,
    });
    expect(parseCli(["subscribe", "t", "--subscription", "s", "--type", "failover", "-J", "--encoding", "base64"])).toMatchObject({ type: "failover", json: true, encoding: "base64" });
    expect(parseCli(["subscribe", "t", "-s", "s", "-K", ":", "-Z", "-f", "%o %s\\n"])).toMatchObject({ printKey: true, keySeparator: ":", printNull: true, format: "%o %s\\n" });
    // -t stays kcat's topic on consume.
    expect(parseCli(["consume", "-t", "logs", "-e"])).toMatchObject({ kind: "consume", topic: "logs" });
  });

  it("refuses malformed lines with a UsageError naming the problem", () => {
    for (const [argv, message] of [
      [["subscribe", "t"], "subscribe: -s SUB is required"],
      [["subscribe", "t", "-s", "s", "-t", "round_robin"], '--type must be one of exclusive, shared, failover, key_shared, got "round_robin"'],
      [["subscribe", "t", "-s", "s", "-n", "0"], "-n must be at least 1"],
      [["subscribe", "t", "-s", "s", "--position", "0000:0000000000000001"], "subscribe: --position takes earliest, latest or a timestamp (use subscriptions reset for a message id)"],
      [["subscribe", "t", "-s", "s", "-f", "%s", "-J"], "subscribe: use only one of -f and -J"],
      [["subscriptions", "reset", "t", "s"], "subscriptions reset: --to is required (earliest, latest, a timestamp or a message id)"],
      [["subscriptions", "reset", "t", "s", "--to", "yesterday"], '--to expects earliest, latest, a timestamp in ms, an ISO 8601 date-time or a message id, got "yesterday"'],
      [["subscriptions", "skip", "t", "s", "0"], "subscriptions skip: N must be at least 1"],
      [["subscriptions", "skip", "t", "s", "x"], 'N must be a non-negative integer, got "x"'],
      [["subscriptions", "skip", "t", "s"], "subscriptions skip: missing N"],
      [["subscriptions", "create", "t"], "subscriptions create: missing SUB"],
      [["subscriptions", "delete", "t", "s", "--json"], "subscriptions delete: unknown option --json"],
      [["subscriptions", "frob", "t"], "Unknown command: subscriptions frob"],
    ] as const) {
      expect(() => parseCli(argv, {}), argv.join(" ")).toThrow(new UsageError(message));
    }
  });
});

/** A subscription's stats as the gateway answers them: one partition, offsets 0-4, 0-1 and 3 acked. */
function stats(over: Partial<SubscriptionStats> = {}): SubscriptionStats {
  return {
    topic: "public/default/t",
    subscription: "s",
    type: "shared",
    backlog: 2,
    backlogBytes: 40,
    unacked: 1,
    deadLetteredTotal: 0,
    msgRateIn: 0.5,
    msgRateOut: 1 / 3,
    msgRateRedeliver: 0,
    consumers: 1,
    partitions: [
      {
        subscription: "s",
        partition: 0,
        type: "shared",
        markDeletePosition: 1,
        ackedRanges: [[3, 3]],
        backlog: 2,
        backlogBytes: 40,
        unacked: 1,
        deadLetteredTotal: 0,
        msgRateIn: 0.5,
        msgRateOut: 1 / 3,
        msgRateRedeliver: 0,
        consumers: [{ consumerId: "c1", consumerName: "cli", permits: 999, unacked: 1, active: true }],
      },
    ],
    ...over,
  };
}

interface Seen {
  method: string;
  path: string;
  query: string;
  body: unknown;
}

/** Runs the CLI against a stub gateway answering `answer(request)` ([status, JSON body]). */
async function run(argv: string[], answer: (r: Seen) => [number, unknown]): Promise<{ code: number; stdout: string; stderr: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  let stdout = "";
  let stderr = "";
  const fetchStub = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = new URL(String(input));
    const text = typeof init?.body === "string" ? init.body : "";
    const r: Seen = { method: init?.method ?? "GET", path: decodeURIComponent(url.pathname), query: url.search, body: text === "" ? undefined : JSON.parse(text) };
    seen.push(r);
    const [status, body] = answer(r);
    return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  };
  const io: CliIo = {
    stdin: Readable.from([]),
    stdout: new Writable({ write: (c: Buffer, _e, cb) => cb(void (stdout += c.toString())) }),
    stderr: new Writable({ write: (c: Buffer, _e, cb) => cb(void (stderr += c.toString())) }),
    env: {},
    fetch: fetchStub as typeof fetch,
  };
  const code = await main(argv, io);
  return { code, stdout, stderr, seen };
}

const notFound: [number, unknown] = [404, { error: { code: "SUBSCRIPTION_NOT_FOUND", message: "No subscription s." } }];

describe("subscriptions commands against a stub gateway", () => {
  it("stats: totals, one row per partition (mark-delete position, acked ranges), the consumers", async () => {
    const r = await run(["subscriptions", "stats", "t", "s"], () => [200, stats()]);
    expect(r.seen.map((s) => `${s.method} ${s.path}`)).toEqual(["GET /v1/topics/t/subscriptions/s"]);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toBe(
      "Subscription: s\tTopic: t\tType: shared\tConsumers: 1\n" +
        "Backlog: 2 (40 bytes)\tUnacked: 1\tDead-lettered: 0\n" +
        "Rates (msg/s, last 10 s): in 0.5\tout 0.33\tredelivered 0\n" +
        "PARTITION  MARK-DELETE  ACKED-RANGES  BACKLOG  BACKLOG-BYTES  UNACKED  CONSUMERS\n" +
        "0          1            3             2        40             1        1\n" +
        "\n" +
        "PARTITION  CONSUMER-ID  NAME  ACTIVE  PERMITS  UNACKED\n" +
        "0          c1           cli   yes     999      1\n",
    );
    const j = await run(["subscriptions", "stats", "t", "s", "--json"], () => [200, stats()]);
    expect(JSON.parse(j.stdout)).toEqual(stats());
  });

  it("list: one row per subscription", async () => {
    const r = await run(["subscriptions", "list", "acme/orders/t"], () => [
      200,
      { topic: "acme/orders/t", subscriptions: [stats(), stats({ subscription: "b", type: "exclusive", backlog: 0, consumers: 0 })] },
    ]);
    expect(r.seen.map((s) => `${s.method} ${s.path}`)).toEqual(["GET /v1/topics/acme/orders/t/subscriptions"]);
    expect(r.stdout).toBe(
      "SUBSCRIPTION  TYPE       BACKLOG  BACKLOG-BYTES  UNACKED  CONSUMERS\ns             shared     2        40             1        1\nb             exclusive  0        40             1        0\n",
    );
  });

  it("create: the position and type as the route's body; says whether it was created or existed", async () => {
    const created = await run(["subscriptions", "create", "t", "s", "--position", "earliest", "--type", "shared"], (req) => (req.method === "GET" ? notFound : [201, stats()]));
    expect(created.seen.map((s) => [s.method, s.path, s.body])).toEqual([
      ["GET", "/v1/topics/t/subscriptions/s", undefined],
      ["PUT", "/v1/topics/t/subscriptions/s", { type: "shared", position: "earliest" }],
    ]);
    expect(created.stdout).toBe("Created subscription s (shared) of t at earliest: backlog 2.\n");
    const at = await run(["subscriptions", "create", "t", "s", "--position", "0000:0000000000000007"], (req) => (req.method === "GET" ? notFound : [201, stats()]));
    expect(at.seen[1]?.body).toEqual({ messageId: "0000:0000000000000007" });
    const existed = await run(["subscriptions", "create", "t", "s", "--position", "1000"], () => [200, stats()]);
    expect(existed.seen[1]?.body).toEqual({ timestamp: 1000 });
    expect(existed.stdout).toBe("Subscription s of t exists: unchanged (backlog 2).\n");
  });

  it("reset, skip, clear-backlog: their routes and bodies", async () => {
    const reset = await run(["subscriptions", "reset", "t", "s", "--to", "1000"], () => [200, stats({ backlog: 4 })]);
    expect(reset.seen.map((s) => [s.method, s.path, s.body])).toEqual([["POST", "/v1/topics/t/subscriptions/s/seek", { timestamp: 1000 }]]);
    expect(reset.stdout).toBe("Reset subscription s of t to timestamp 1000 (1970-01-01T00:00:01.000Z): backlog 4.\n");
    const earliest = await run(["subscriptions", "reset", "t", "s", "--to", "earliest"], () => [200, stats()]);
    expect(earliest.seen[0]?.body).toEqual({ position: "earliest" });
    const skip = await run(["subscriptions", "skip", "t", "s", "2", "-p", "1"], () => [200, { skipped: 2, ...stats({ backlog: 0 }) }]);
    expect(skip.seen.map((s) => [s.method, s.path, s.body])).toEqual([["POST", "/v1/topics/t/subscriptions/s/skip", { count: 2, partition: 1 }]]);
    expect(skip.stdout).toBe("Skipped 2 message(s) of subscription s on partition 1: backlog 0.\n");
    const clear = await run(["subscriptions", "clear-backlog", "t", "s"], () => [200, { cleared: 2, ...stats({ backlog: 0 }) }]);
    expect(clear.seen.map((s) => [s.method, s.path, s.body])).toEqual([["POST", "/v1/topics/t/subscriptions/s/clear-backlog", {}]]);
    expect(clear.stdout).toBe("Cleared 2 message(s) of subscription s: backlog 0.\n");
  });

  it("delete: force only with --force; a refusal exits 1 with its code", async () => {
    const refused = await run(["subscriptions", "delete", "t", "s"], () => [
      409,
      { error: { code: "SUBSCRIPTION_HAS_CONSUMERS", message: "The subscription has 1 connected consumer(s).", details: { consumers: 1 } } },
    ]);
    expect(refused.seen.map((s) => [s.method, s.path, s.query])).toEqual([["DELETE", "/v1/topics/t/subscriptions/s", ""]]);
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([1, "", "edgelog: SUBSCRIPTION_HAS_CONSUMERS: The subscription has 1 connected consumer(s).\n"]);
    const forced = await run(["subscriptions", "delete", "t", "s", "--force"], () => [200, { topic: "public/default/t", subscription: "s", deleted: true }]);
    expect(forced.seen.map((s) => [s.method, s.path, s.query])).toEqual([["DELETE", "/v1/topics/t/subscriptions/s", "?force=true"]]);
    expect([forced.code, forced.stdout]).toEqual([0, "Deleted subscription s of t.\n"]);
  });
});
