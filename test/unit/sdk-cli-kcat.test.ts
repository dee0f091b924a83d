/**
 * The kcat and kafka-consumer-groups habits the CLI supports, each with its exact output,
 * against the in-memory fake server (the e2e twin, test/e2e/cli.test.ts, runs the binary
 * against a real dev server).
 */
import { describe, expect, it } from "vitest";
import { main, parseCli, UsageError } from "../../sdk/src/cli/index.ts";
import { mergeOptions, parseOffsetArg, unescapeBytes } from "../../sdk/src/cli/args.ts";
import { type CliCommand, COMMANDS } from "../../sdk/src/cli/index.ts";
import { compileFormat } from "../../sdk/src/cli/format.ts";
import { DelimiterSplitter } from "../../sdk/src/cli/io.ts";
import type { ConsumerRecord } from "../../sdk/src/consumer.ts";
import { cliIo, FakeServer, text, utf8 } from "./sdk-fake-server.ts";

/** A topic `t` with 2 partitions: p0 offsets 0-2 at timestamps 1000, 2000, 3000; p1 one record at 1500. */
function server(): FakeServer {
  const s = new FakeServer();
  s.addTopic("t", 2);
  s.append("t", 0, [
    { key: utf8("k0"), value: utf8("a"), headers: [{ key: "h", value: utf8("1") }], timestamp: 1000 },
    { key: null, value: utf8("b"), headers: [], timestamp: 2000 },
    {
      key: utf8("k2"),
      value: null,
      headers: [
        { key: "x", value: null },
        { key: "y", value: utf8("2") },
      ],
      timestamp: 3000,
    },
  ]);
  s.append("t", 1, [{ key: utf8("k"), value: utf8("c"), headers: [], timestamp: 1500 }]);
  return s;
}

async function run(s: FakeServer, argv: string[], stdin: Array<string | Uint8Array> = [], options: { stderrIsTTY?: boolean } = {}) {
  const io = cliIo(s, stdin, options);
  const code = await main(argv, io.value);
  return { code, stdout: io.stdout(), stdoutBytes: io.stdoutBytes(), stderr: io.stderr() };
}

describe("consume, kcat style", () => {
  it("-o beginning -f with %t %p %o %k %s and escapes", async () => {
    const r = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-f", "Topic %t [%p] at offset %o: key %k: %s\\n"]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toBe("Topic t [0] at offset 0: key k0: a\nTopic t [0] at offset 1: key : b\nTopic t [0] at offset 2: key k2: \n");
  });

  it("-f with %T %h %S %K %R and %%, -Z prints NULL", async () => {
    const r = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-f", "%T|%h|%S|%K|100%%\\t%k=%s\\n", "-Z"]);
    expect(r.stdout).toBe("1000|h=1|1|2|100%\tk0=a\n2000||1|-1|100%\tNULL=b\n3000|x,y=2|-1|2|100%\tk2=NULL\n");
    const R = await run(server(), ["consume", "t", "-o", "1", "-p", "0", "-c", "1", "-f", "%R%s"]);
    expect([...R.stdoutBytes]).toEqual([0, 0, 0, 1, 0x62]);
  });

  it("-o -N starts N records before the end of each partition", async () => {
    const r = await run(server(), ["consume", "t", "-o", "-2", "-f", "%p:%o %s\\n"]);
    expect(r.stdout.split("\n").sort()).toEqual(["", "0:1 b", "0:2 ", "1:0 c"]);
  });

  it("-o N is an absolute offset in every partition; out of range names the partition and the bounds (exit 1)", async () => {
    const ok = await run(server(), ["consume", "t", "-p", "0", "-o", "2", "-f", "%o\\n"]);
    expect(ok).toMatchObject({ code: 0, stdout: "2\n" });
    const bad = await run(server(), ["consume", "t", "-o", "2", "-f", "%o\\n"]);
    expect(bad).toMatchObject({ code: 1, stdout: "", stderr: "edgelog: OFFSET_OUT_OF_RANGE: Offset 2 is out of range for partition 1 of t: log start offset 0, high watermark 1.\n" });
    const missing = await run(server(), ["consume", "t", "-p", "7", "-o", "beginning"]);
    expect(missing).toMatchObject({ code: 1, stderr: "edgelog: UNKNOWN_TOPIC_OR_PARTITION: Partition 7 does not exist: t has 2 (0..1).\n" });
  });

  it("-o s@TS starts at the first record at or after TS; -o e@TS stops before TS (alone: from the beginning)", async () => {
    const s = await run(server(), ["consume", "t", "-o", "s@1500", "-f", "%p:%o@%T\\n"]);
    expect(s.stdout.split("\n").sort()).toEqual(["", "0:1@2000", "0:2@3000", "1:0@1500"]);
    const e = await run(server(), ["consume", "t", "-o", "e@2000", "-f", "%p:%o@%T\\n"]);
    expect(e.stdout.split("\n").sort()).toEqual(["", "0:0@1000", "1:0@1500"]);
    const both = await run(server(), ["consume", "t", "-p", "0", "-o", "s@1001", "-o", "e@3000", "-f", "%o\\n"]);
    expect(both.stdout).toBe("1\n");
  });

  it("-J prints one JSON object per record, with the topic", async () => {
    const r = await run(server(), ["consume", "t", "-J", "-o", "beginning", "-p", "1"]);
    expect(r.stdout).toBe('{"topic":"t","partition":1,"offset":0,"timestamp":1500,"key":"k","value":"c","headers":[]}\n');
  });

  it("-K prints the key and the separator; -D replaces the newline after each record", async () => {
    const r = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-K", "=>", "-D", "\\0"]);
    expect(r.stdout).toBe("k0=>a\0=>b\0k2=>\0");
  });

  it("-D ends each JSON object with -J and is ignored with -f, as kcat; an empty -D runs plain records together", async () => {
    const j = await run(server(), ["consume", "t", "-J", "-o", "beginning", "-p", "1", "-D", "|\\n"]);
    expect(j.stdout).toBe('{"topic":"t","partition":1,"offset":0,"timestamp":1500,"key":"k","value":"c","headers":[]}|\n');
    const f = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-f", "%o;", "-D", "|"]);
    expect(f.stdout).toBe("0;1;2;");
    const empty = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-D", ""]);
    expect(empty.stdout).toBe("ab");
  });

  it("-K takes the escapes of -D, as kcat's -K does (\\t is a tab, \\xHH a byte)", async () => {
    const r = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-K", "\\t"]);
    expect(r.stdout).toBe("k0\ta\n\tb\nk2\t\n");
    const x = await run(server(), ["consume", "t", "-o", "beginning", "-p", "1", "-K", "\\x1f"]);
    expect([...x.stdoutBytes]).toEqual([0x6b, 0x1f, 0x63, 0x0a]);
  });
});

describe("produce, kcat style", () => {
  it("-K splits keys, -H adds headers, -Z sends empty values as null (tombstones)", async () => {
    const s = new FakeServer();
    s.addTopic("p", 1);
    const r = await run(s, ["produce", "p", "-K", ":", "-H", "src=cli", "-H", "v=2", "-Z"], ["a:1\nb:\nc\n"]);
    expect(r).toMatchObject({ code: 0, stdout: "", stderr: "" });
    const out = await run(s, ["consume", "p", "-o", "beginning", "-f", "%k|%s|%h\\n", "-Z"]);
    expect(out.stdout).toBe("a|1|src=cli,v=2\nb|NULL|src=cli,v=2\nNULL|c|src=cli,v=2\n");
  });

  it("-D ends each JSON object with -J and is ignored with -f, as kcat; an empty -D runs plain records together", async () => {
    const j = await run(server(), ["consume", "t", "-J", "-o", "beginning", "-p", "1", "-D", "|\\n"]);
    expect(j.stdout).toBe('{"topic":"t","partition":1,"offset":0,"timestamp":1500,"key":"k","value":"c","headers":[]}|\n');
    const f = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-f", "%o;", "-D", "|"]);
    expect(f.stdout).toBe("0;1;2;");
    const empty = await run(server(), ["consume", "t", "-o", "beginning", "-p", "0", "-D", ""]);
    expect(empty.stdout).toBe("ab");
  });

  it("-K takes the escapes of -D, as kcat's -K does: -K '\\t' splits at a tab", async () => {
    const s = new FakeServer();
    s.addTopic("p", 1);
    const r = await run(s, ["produce", "p", "-K", "\\t"], ["a\t1\nb\\tc\n"]);
    expect(r).toMatchObject({ code: 0, stdout: "", stderr: "" });
    const out = await run(s, ["consume", "p", "-o", "beginning", "-f", "%k|%s\\n", "-Z"]);
    expect(out.stdout).toBe("a|1\nNULL|b\\tc\n");
  });

  it("-k sets every key; -D splits stdin at a delimiter of any bytes, also across chunks", async () => {
    const s = new FakeServer();
    s.addTopic("d", 1);
    const r = await run(s, ["produce", "d", "-k", "K", "-D", "||"], ["line 1\nstill 1|", "|two\n|", "|three"]);
    expect(r.code).toBe(0);
    const out = await run(s, ["consume", "d", "-o", "beginning", "-J"]);
    expect(
      out.stdout
        .trim()
        .split("\n")
        .map((l: string) => {
          const j = JSON.parse(l) as { key: string; value: string };
          return [j.key, j.value];
        }),
    ).toEqual([
      ["K", "line 1\nstill 1"],
      ["K", "two\n"],
      ["K", "three"],
    ]);
  });

  it("--line-headers takes each line's own headers, as consume -f %h prints them: a round trip", async () => {
    const s = new FakeServer();
    s.addTopic("h", 1);
    s.addTopic("h2", 1);
    const input = "trace=abc,tenant=t1|k1:v1\nflag|k2:v2\nno headers:v3\n";
    expect((await run(s, ["produce", "h", "-H", "src=cli", "--line-headers", "|", "-K", ":"], [input])).code).toBe(0);
    const out = await run(s, ["consume", "h", "-o", "beginning", "-f", "%h|%k:%s\n"]);
    expect(out.stdout).toBe("src=cli,trace=abc,tenant=t1|k1:v1\nsrc=cli,flag|k2:v2\nsrc=cli|no headers:v3\n");
    expect((await run(s, ["produce", "h2", "--line-headers", "|", "-K", ":"], [out.stdout])).code).toBe(0);
    expect((await run(s, ["consume", "h2", "-o", "beginning", "-f", "%h|%k:%s\n"])).stdout).toBe(out.stdout);
  });

  it("prints a summary when stderr is a terminal, nothing when piped", async () => {
    const s = new FakeServer();
    s.addTopic("s", 3);
    const tty = await run(s, ["produce", "s", "-K", ":"], ["a:1\na:2\nb:3\n"], { stderrIsTTY: true });
    const parts = [0, 1, 2]
      .map((p) => ({ p, n: s.log("s", p).records.length }))
      .filter((x) => x.n > 0)
      .map(({ p, n }) => `partition ${p} ${n === 1 ? "offset 0" : `offsets 0..${n - 1}`}`);
    // The progress line is redrawn in place (CR, erase line) and cleared before the summary.
    expect({ ...tty, stderr: tty.stderr.slice(tty.stderr.lastIndexOf("\r\x1b[2K") + 5) }).toMatchObject({ code: 0, stdout: "", stderr: `Produced 3 records to s: ${parts.join(", ")}.\n` });
    expect(tty.stderr.startsWith("\r\x1b[2KProduced 0 records, 0 B in ")).toBe(true);
    const piped = await run(s, ["produce", "s"], ["x\n"]);
    expect(piped).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });
});

describe("topics create --if-not-exists (kafka-topics)", () => {
  it("succeeds on an existing topic and leaves it as it is", async () => {
    const s = server();
    expect(await run(s, ["topics", "create", "t", "--partitions", "5", "--if-not-exists"])).toMatchObject({ code: 0, stdout: "Topic t already exists.\n", stderr: "" });
    expect(s.topics.get("t")!.partitions.length).toBe(2);
    expect(await run(s, ["topics", "create", "u", "--if-not-exists"])).toMatchObject({ code: 0, stdout: "Created topic u with 1 partition.\n" });
  });
});

describe("kcat's own command-line forms", () => {
  it("-b HOST:PORT, -C / -P / -L for the command, -t for the topic read as kcat's lines do", async () => {
    expect(parseCli(["-b", "127.0.0.1:9000", "-C", "-t", "t", "-o", "beginning", "-e"])).toEqual(parseCli(["--url", "http://127.0.0.1:9000", "consume", "t", "-o", "beginning", "-e"]));
    expect(parseCli(["-P", "-t", "t", "-k", "x", "a.bin"])).toEqual(parseCli(["produce", "t", "a.bin", "-k", "x"]));
    expect(parseCli(["-b", "https://gw.example", "-L", "-t", "t"])).toEqual({ kind: "metadata", url: "https://gw.example", topic: "t", json: false });
    const s = server();
    const c = await run(s, ["-C", "-t", "t", "-p", "1", "-o", "beginning", "-e", "-f", "%t %p %o %s\n"]);
    expect(c).toMatchObject({ code: 0, stdout: "t 1 0 c\n", stderr: "" });
    expect((await run(s, ["-P", "-t", "t", "-p", "1", "-k", "kk"], ["d\n"])).code).toBe(0);
    expect((await run(s, ["-C", "-t", "t", "-p", "1", "-o", "-1", "-f", "%k=%s\n"])).stdout).toBe("kk=d\n");
  });
});

describe("metadata (-L)", () => {
  it("lists topics, partitions, bounds and configs", async () => {
    const r = await run(server(), ["-L"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      "Metadata from http://127.0.0.1:8787:\n" +
        " 1 topic:\n" +
        '  topic "t" with 2 partitions:\n' +
        `    partition 0, log start offset 0, high watermark 3, log end offset 3, 3 records, ${r.stdout.match(/3 records, (\d+) bytes/)![1]} bytes\n` +
        `    partition 1, log start offset 0, high watermark 1, log end offset 1, 1 records, ${r.stdout.match(/1 records, (\d+) bytes/)![1]} bytes\n` +
        `    configs: ${r.stdout.match(/configs: (.*)\n/)![1]}\n`,
    );
    expect(r.stdout).toMatch(/configs: .*max\.message\.bytes=\d+/);
    expect(parseCli(["--url", "http://x:1", "-L", "-t", "t", "-J"])).toEqual({ kind: "metadata", url: "http://x:1", topic: "t", json: true });
  });
});

describe("argument parsing", () => {
  it("merges the command table's options: a shared name agrees, a short letter names one option", () => {
    const merged = mergeOptions(COMMANDS);
    expect([merged["json"], merged["partition"], merged["offset"]]).toEqual([
      { type: "boolean", short: "J" },
      { type: "string", short: "p" },
      { type: "string", short: "o", multiple: true },
    ]);
    const command = (name: string, options: CliCommand["options"]): CliCommand => ({ name, usage: "", options, args: [], parse: () => ({ kind: name }), run: async () => {} });
    expect(mergeOptions([command("a", { json: { type: "boolean" } }), command("b", { json: { type: "boolean", short: "J" } })])["json"]).toEqual({ type: "boolean", short: "J" });
    expect(() => mergeOptions([command("a", { json: { type: "boolean" } }), command("b", { json: { type: "string" } })])).toThrow("CLI option --json of b has another type than elsewhere");
    expect(() => mergeOptions([command("a", { json: { type: "boolean", short: "J" } }), command("b", { jitter: { type: "string", short: "J" } })])).toThrow(
      "CLI option -J is used for --json and --jitter",
    );
  });

  it("parses every kcat -o form", () => {
    expect(["beginning", "end", "stored", "42", "-10", "s@1700000000000", "e@5"].map(parseOffsetArg)).toEqual([
      { kind: "earliest" },
      { kind: "latest" },
      { kind: "stored" },
      { kind: "offset", offset: 42 },
      { kind: "fromEnd", count: 10 },
      { kind: "timestamp", timestampMs: 1700000000000 },
      { kind: "endTimestamp", timestampMs: 5 },
    ]);
    expect(() => parseOffsetArg("latest")).toThrow('-o expects beginning, end, stored, N, -N, s@TIMESTAMP or e@TIMESTAMP, got "latest"');
  });

  it("takes negative values after -o and --shift-by as kcat and kafka-consumer-groups users type them", () => {
    expect(parseCli(["consume", "t", "-o", "-3"])).toMatchObject({ start: { kind: "fromEnd", count: 3 } });
    expect(parseCli(["groups", "reset-offsets", "g", "--topic", "t", "--shift-by", "-2"])).toMatchObject({ spec: { to: "shift", by: -2 }, topic: "t" });
    expect(parseCli(["groups", "reset-offsets", "g", "--topic", "t:0,2", "--by-duration", "PT1M"])).toMatchObject({ partitions: [0, 2], spec: { to: "timestamp" } });
    expect(parseCli(["groups", "reset-offsets", "g", "--all-topics", "--to-datetime", "2026-01-31T12:00:00Z", "--execute"])).toMatchObject({
      topic: undefined,
      spec: { to: "timestamp", timestamp: Date.UTC(2026, 0, 31, 12) },
      execute: true,
    });
  });

  it("escapes: \\n \\r \\t \\0 \\\\ \\xHH, anything else as UTF-8", () => {
    expect([...unescapeBytes("a\\n\\r\\t\\0\\\\\\xff\\q\u00e9")]).toEqual([0x61, 0x0a, 0x0d, 0x09, 0x00, 0x5c, 0xff, 0x5c, 0x71, 0xc3, 0xa9]);
  });

  it("a delimiter split keeps exact bytes and joins a delimiter cut between chunks", () => {
    const s = new DelimiterSplitter(utf8("\r\n"));
    const pieces = [...s.push(utf8("a\r")), ...s.push(utf8("\nb\n\r")), ...s.push(utf8("\n"))].map(text);
    expect([pieces, s.end()]).toEqual([["a", "b\n"], undefined]);
  });

  it("rejects malformed kcat options with one clear line", () => {
    const cases: Array<[string[], string]> = [
      [["consume", "t", "-o", "stored"], "-o stored needs -g GROUP: stored offsets are a group's committed offsets"],
      [["consume", "t", "-o", "1", "-o", "2"], "consume: use only one of --from-beginning, --offset, --timestamp"],
      [["consume", "t", "-f", "%x"], "-f: unknown token %x (use %t %p %o %T %k %K %s %S %R %h %%)"],
      [["consume", "t", "-f", "%s", "-J"], "consume: use only one of -f and -J"],
      [["consume", "t", "--follow", "-e"], "consume: use only one of --follow and -e"],
      [["consume", "t", "-g", "g", "-o", "-5"], "consume -g: the group assigns partitions and positions"],
      [["produce", "t", "-K", ":", "-k", "x"], "produce: use only one of -K and -k"],
      [["produce", "t", "f1", "-D", "|"], "produce: -D, -K and --line-headers split stdin; a FILE is one record"],
      [["groups", "reset-offsets", "g", "--topic", "t", "--shift-by", "x"], '--shift-by must be an integer, got "x"'],
      [["groups", "reset-offsets", "g", "--topic", "t", "--by-duration", "P1H"], '--by-duration expects PnDTnHnMnS, got "P1H"'],
      [["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-current"], "give exactly one of"],
    ];
    for (const [argv, message] of cases) {
      expect(() => parseCli(argv), argv.join(" ")).toThrow(UsageError);
      expect(() => parseCli(argv), argv.join(" ")).toThrow(message);
    }
  });
});

describe("compileFormat", () => {
  it("renders a record with binary values untouched", () => {
    const r: ConsumerRecord = { topic: "acme/prod/t", partition: 3, offset: 9, timestamp: 7, key: new Uint8Array([0, 255]), value: new Uint8Array([10]), headers: [] };
    expect([...compileFormat("%t%k%s")(r, false)]).toEqual([...utf8("acme/prod/t"), 0, 255, 10]);
  });
});
