import { describe, expect, it } from "vitest";
import { DEFAULT_URL, LineSplitter, UsageError, formatDescription, formatRecord, lineToMessage, main, parseCli } from "../../sdk/src/cli/index.ts";
import type { ConsumerRecord } from "../../sdk/src/consumer.ts";
import type { TopicDescription } from "../../src/protocol/index.ts";
import { cliIo, FakeServer, text, utf8 } from "./sdk-fake-server.ts";

const usage = (argv: string[]) => () => parseCli(argv, {});

describe("parseCli", () => {
  it("parses topics commands with the default URL, EDGELOG_URL and --url in that order of precedence", () => {
    expect(parseCli(["topics", "list"])).toEqual({ kind: "topics list", url: DEFAULT_URL, json: false });
    expect(parseCli(["topics", "list", "--json"], { EDGELOG_URL: "http://e:1" })).toEqual({ kind: "topics list", url: "http://e:1", json: true });
    expect(parseCli(["--url", "http://u:2", "topics", "describe", "acme/prod/t"], { EDGELOG_URL: "http://e:1" })).toEqual({
      kind: "topics describe",
      url: "http://u:2",
      name: "acme/prod/t",
      json: false,
    });
    expect(parseCli(["topics", "create", "t", "--partitions", "12", "--config", "retention.ms=1000", "--config", "cleanup.policy=compact,delete"])).toEqual({
      kind: "topics create",
      url: DEFAULT_URL,
      name: "t",
      partitions: 12,
      configs: { "retention.ms": "1000", "cleanup.policy": "compact,delete" },
    });
    expect(parseCli(["topics", "alter", "t", "--partitions", "3"])).toEqual({ kind: "topics alter", url: DEFAULT_URL, name: "t", partitions: 3, configs: {} });
    expect(parseCli(["topics", "delete", "t", "--url=http://u:3"])).toEqual({ kind: "topics delete", url: "http://u:3", name: "t" });
    expect(parseCli(["topics", "delete-records", "t", "-p", "2", "--before", "-1"])).toEqual({ kind: "topics delete-records", url: DEFAULT_URL, name: "t", partition: 2, offset: -1 });
    expect(() => parseCli(["topics", "delete-records", "t", "--before", "3"])).toThrow("give --partition and --before");
    expect(() => parseCli(["topics", "delete-records", "t", "-p", "0", "--before", "1e3"])).toThrow("--before must be an integer");
    expect(parseCli(["topics", "elect-leader", "t", "-p", "1", "--replica", "r2"])).toEqual({ kind: "topics elect-leader", url: DEFAULT_URL, name: "t", partition: 1, replica: "r2" });
    expect(() => parseCli(["topics", "elect-leader", "t", "--replica", "r2"])).toThrow("give --partition and --replica");
    expect(() => parseCli(["topics", "elect-leader", "t", "-p", "0", "--replica", "2"])).toThrow("--replica must be a replica id");
    expect(parseCli(["topics", "reassign", "t", "-p", "0", "--replace", "r2", "--location", "weur"])).toEqual({
      kind: "topics reassign",
      url: DEFAULT_URL,
      name: "t",
      partition: 0,
      replace: "r2",
      location: "weur",
    });
    expect(parseCli(["topics", "reassign", "t", "-p", "0", "--replace", "r3"])).toEqual({ kind: "topics reassign", url: DEFAULT_URL, name: "t", partition: 0, replace: "r3" });
    expect(() => parseCli(["topics", "reassign", "t", "--replace", "r2"])).toThrow("give --partition and --replace");
    expect(() => parseCli(["topics", "reassign", "t", "-p", "0", "--replace", "x"])).toThrow("--replace must be a replica id");
  });

  it("parses produce with ordered, duplicate headers whose values may contain '='", () => {
    expect(parseCli(["produce", "t", "--key-separator", ":", "--header", "a=1", "--header", "a=x=y", "--partition", "2"])).toEqual({
      kind: "produce",
      url: DEFAULT_URL,
      topic: "t",
      keySeparator: ":",
      headers: [
        ["a", "1"],
        ["a", "x=y"],
      ],
      partition: 2,
    });
    expect(parseCli(["produce", "t"])).toEqual({ kind: "produce", url: DEFAULT_URL, topic: "t", keySeparator: undefined, headers: [], partition: undefined });
  });

  it("parses consume start positions, -n, --follow and output options", () => {
    const base = {
      kind: "consume",
      url: DEFAULT_URL,
      topic: "t",
      partition: undefined,
      count: undefined,
      follow: false,
      json: false,
      encoding: "string",
      printKey: false,
      keySeparator: "\t",
    };
    expect(parseCli(["consume", "t"])).toEqual({ ...base, start: { kind: "latest" } });
    expect(parseCli(["consume", "t", "--from-beginning", "-n", "10"])).toEqual({ ...base, start: { kind: "earliest" }, count: 10 });
    expect(parseCli(["consume", "t", "--offset", "5", "--partition", "1", "--follow"])).toEqual({ ...base, start: { kind: "offset", offset: 5 }, partition: 1, follow: true });
    expect(parseCli(["consume", "t", "--timestamp", "1767225600000", "--json", "--encoding", "base64"])).toEqual({
      ...base,
      start: { kind: "timestamp", timestampMs: 1767225600000 },
      json: true,
      encoding: "base64",
    });
    expect(parseCli(["consume", "t", "--print-key", "--key-separator", "=>"])).toEqual({ ...base, start: { kind: "latest" }, printKey: true, keySeparator: "=>" });
  });

  it("--help and -h give help", () => {
    expect(parseCli(["--help"])).toEqual({ kind: "help" });
    expect(parseCli(["consume", "-h"])).toEqual({ kind: "help" });
  });

  it("throws UsageError for malformed command lines", () => {
    const cases: Array<[string[], string]> = [
      [[], "Missing command."],
      [["nope"], "Unknown command: nope"],
      [["topics"], "topics: missing subcommand (list, create, describe, alter, delete, delete-records, elect-leader, reassign)"],
      [["topics", "create"], "topics create: missing NAME"],
      [["topics", "delete", "a", "b"], 'topics delete: unexpected argument "b"'],
      [["topics", "create", "t", "--partitions=-1"], "--partitions must be a non-negative integer"],
      [["topics", "create", "t", "--partitions", "1.5"], "--partitions must be a non-negative integer"],
      [["topics", "create", "t", "--config", "novalue"], '--config expects k=v, got "novalue"'],
      [["topics", "create", "t", "--config", "a=1", "--config", "a=2"], "--config a given twice"],
      [["topics", "alter", "t"], "topics alter: give --partitions and/or --config"],
      [["topics", "list", "--follow"], "topics list: unknown option --follow"],
      [["produce", "t", "--from-beginning"], "produce: unknown option --from-beginning"],
      [["produce", "t", "--key-separator", ""], "--key-separator must not be empty"],
      [["consume", "t", "--from-beginning", "--offset", "3"], "consume: use only one of --from-beginning, --offset, --timestamp"],
      [["consume", "t", "-n", "0"], "-n must be at least 1"],
      [["consume", "t", "--encoding", "hex", "--json"], "--encoding must be string or base64"],
      [["consume", "t", "--encoding", "base64"], "--encoding applies to --json output only"],
      [["consume", "t", "--bogus"], "Unknown option '--bogus'"],
      [["--url", "not a url", "topics", "list"], 'Invalid --url "not a url"'],
    ];
    for (const [argv, message] of cases) {
      expect(usage(argv), argv.join(" ")).toThrow(UsageError);
      expect(usage(argv), argv.join(" ")).toThrow(message);
    }
  });
});

describe("LineSplitter", () => {
  const split = (chunks: string[]) => {
    const s = new LineSplitter();
    const lines = chunks.flatMap((c) => s.push(utf8(c)).map((l) => text(l)));
    const last = s.end();
    return last === undefined ? lines : [...lines, text(last)];
  };

  it("splits at \\n only, keeps \\r and empty lines, joins lines across chunks", () => {
    expect(split(["a\nb", "c\n\nd\r\n", "e"])).toEqual(["a", "bc", "", "d\r", "e"]);
  });

  it("a final newline adds no empty line; no input gives no line", () => {
    expect(split(["x\n"])).toEqual(["x"]);
    expect(split(["x", "y", "\n"])).toEqual(["xy"]);
    expect(split([])).toEqual([]);
    expect(split(["\n"])).toEqual([""]);
  });

  it("returns copies that later chunks do not change", () => {
    const s = new LineSplitter();
    const chunk = utf8("ab\ncd");
    const [line] = s.push(chunk);
    chunk.fill(0x7a);
    expect(text(line!)).toBe("ab");
  });
});

describe("lineToMessage", () => {
  const sep = utf8("::");
  it("splits at the first separator; no separator means a null key", () => {
    const m = lineToMessage(utf8("k::v::w"), sep);
    expect([text(m.key), text(m.value)]).toEqual(["k", "v::w"]);
    const empty = lineToMessage(utf8("::v"), sep);
    expect([text(empty.key), text(empty.value)]).toEqual(["", "v"]);
    const none = lineToMessage(utf8("k:v"), sep);
    expect([none.key, text(none.value)]).toEqual([null, "k:v"]);
    const noSep = lineToMessage(utf8("k::v"), undefined);
    expect([noSep.key, text(noSep.value)]).toEqual([null, "k::v"]);
  });
});

describe("formatRecord", () => {
  const r: ConsumerRecord = { topic: "t", partition: 1, offset: 7, timestamp: 99, key: utf8("k"), value: new Uint8Array([0x68, 0x69, 0xff]), headers: [{ key: "h", value: null }] };
  const plain = { json: false, encoding: "string" as const, printKey: false, keySeparator: "\t" };

  it("prints raw value bytes plus a newline, optionally the key and separator first", () => {
    expect(formatRecord(r, plain)).toEqual(new Uint8Array([0x68, 0x69, 0xff, 0x0a]));
    expect(text(formatRecord(r, { ...plain, printKey: true, keySeparator: "=" }))).toBe("k=hi\ufffd\n");
    expect(text(formatRecord({ ...r, key: null, value: null }, { ...plain, printKey: true }))).toBe("\t\n");
  });

  it("prints JSON lines in the JsonFetchedRecord shape plus the topic, as text or base64", () => {
    expect(text(formatRecord(r, { ...plain, json: true }))).toBe('{"topic":"t","partition":1,"offset":7,"timestamp":99,"key":"k","value":"hi\ufffd","headers":[{"key":"h","value":null}]}\n');
    expect(text(formatRecord(r, { ...plain, json: true, encoding: "base64" }))).toBe(
      '{"topic":"t","partition":1,"offset":7,"timestamp":99,"key":"aw==","value":"aGn/","headers":[{"key":"h","value":null}]}\n',
    );
  });

  it("`consume --json` keeps a leading U+FEFF in key, value and header values (it is data, as in the server's JSON answers)", () => {
    const bytes = utf8("\uFEFFhello");
    const line = formatRecord(
      { topic: "t", partition: 0, offset: 7, timestamp: 1, key: utf8("\uFEFF"), value: bytes, headers: [{ key: "h", value: utf8("\uFEFFx") }] },
      { json: true, encoding: "string", printKey: false, keySeparator: "\t" },
    );
    expect(JSON.parse(new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(line))).toEqual({
      topic: "t",
      partition: 0,
      offset: 7,
      timestamp: 1,
      key: "\uFEFF",
      value: "\uFEFFhello",
      headers: [{ key: "h", value: "\uFEFFx" }],
    });
  });
});

describe("formatDescription", () => {
  it("prints the summary, configs and a per-partition table", () => {
    const d = {
      name: "public/default/t",
      tenant: "public",
      namespace: "default",
      topic: "t",
      topicId: "abc",
      partitions: 2,
      configs: { "max.message.bytes": 1047552, "cleanup.policy": "delete" },
      createdAt: 0,
      partitionDetails: [
        { partition: 0, logStartOffset: 0, highWatermark: 12, logEndOffset: 12, recordCount: 12, bytes: 1234 },
        { partition: 1, logStartOffset: 5, highWatermark: 5, logEndOffset: 5, recordCount: 0, bytes: 0 },
      ],
    } as unknown as TopicDescription;
    expect(formatDescription(d)).toBe(
      "Topic: t\tName: public/default/t\tTopicId: abc\tPartitions: 2\n" +
        "Configs: max.message.bytes=1047552, cleanup.policy=delete\n" +
        "PARTITION  LOG_START_OFFSET  HIGH_WATERMARK  LOG_END_OFFSET  RECORDS  BYTES\n" +
        "0          0                 12              12              12       1234\n" +
        "1          5                 5               5               0        0\n",
    );
  });
});

describe("main (against the fake server)", () => {
  const io = (server: FakeServer, stdin: string[] = []) => cliIo(server, stdin);

  it("produce then consume --from-beginning prints the input back, line for line (1 partition)", async () => {
    const server = new FakeServer();
    server.addTopic("logs", 1);
    const input = ["2024-01-01 status installed a\n2024-01-01 st", "atus half-configured b\n\n\u00e9\r\n", "last line without newline"];
    const p = io(server, input);
    expect(await main(["produce", "logs"], p.value)).toBe(0);
    expect(server.log("logs", 0).records.map((r) => text(r.value))).toEqual([
      "2024-01-01 status installed a",
      "2024-01-01 status half-configured b",
      "",
      "\u00e9\r",
      "last line without newline",
    ]);
    const c = io(server);
    expect(await main(["consume", "logs", "--from-beginning"], c.value)).toBe(0);
    expect(c.stdout()).toBe(`${input.join("")}\n`);
    const n = io(server);
    expect(await main(["consume", "logs", "--offset", "1", "-n", "2"], n.value)).toBe(0);
    expect(n.stdout()).toBe("2024-01-01 status half-configured b\n\n");
  });

  it("produce with --key-separator and --header sends keys and headers", async () => {
    const server = new FakeServer();
    server.addTopic("k", 1);
    const p = io(server, ["a:1\nb:2\n"]);
    expect(await main(["produce", "k", "--key-separator", ":", "--header", "src=cli"], p.value)).toBe(0);
    const c = io(server);
    expect(await main(["consume", "k", "--from-beginning", "--json"], c.value)).toBe(0);
    expect(
      c
        .stdout()
        .trim()
        .split("\n")
        .map((l: string) => JSON.parse(l) as unknown),
    ).toEqual([
      { topic: "k", partition: 0, offset: 0, timestamp: server.log("k", 0).records[0]!.timestamp, key: "a", value: "1", headers: [{ key: "src", value: "cli" }] },
      { topic: "k", partition: 0, offset: 1, timestamp: server.log("k", 0).records[1]!.timestamp, key: "b", value: "2", headers: [{ key: "src", value: "cli" }] },
    ]);
  });

  it("consume reads every partition and exits at the end of all of them", async () => {
    const server = new FakeServer();
    server.addTopic("m", 3);
    server.append("m", 0, [{ key: null, value: utf8("p0"), headers: [], timestamp: 1 }]);
    server.append("m", 2, [
      { key: null, value: utf8("p2a"), headers: [], timestamp: 1 },
      { key: null, value: utf8("p2b"), headers: [], timestamp: 2 },
    ]);
    const c = io(server);
    expect(await main(["consume", "m", "--from-beginning"], c.value)).toBe(0);
    expect(c.stdout().split("\n").sort()).toEqual(["", "p0", "p2a", "p2b"]);
  });

  it("topics create/list/describe/delete print and exit 0", async () => {
    const server = new FakeServer();
    const a = io(server);
    expect(await main(["topics", "create", "new", "--partitions", "2"], a.value)).toBe(0);
    expect(a.stdout()).toBe("Created topic new with 2 partitions.\n");
    const l = io(server);
    expect(await main(["topics", "list"], l.value)).toBe(0);
    expect(l.stdout()).toBe("new\n");
    const d = io(server);
    expect(await main(["topics", "describe", "new", "--json"], d.value)).toBe(0);
    expect((JSON.parse(d.stdout()) as TopicDescription).partitionDetails.length).toBe(2);
    const del = io(server);
    expect(await main(["topics", "delete", "new"], del.value)).toBe(0);
    expect(del.stdout()).toBe("Deleted topic new.\n");
  });

  it("exit 1 with `edgelog: CODE: message` for a server error, exit 2 with one line and a pointer to --help for a usage error", async () => {
    const server = new FakeServer();
    server.addTopic("x", 1);
    const e = io(server);
    expect(await main(["topics", "create", "x"], e.value)).toBe(1);
    expect(e.stderr()).toBe("edgelog: TOPIC_ALREADY_EXISTS: A topic with this name already exists.\n");
    const m = io(server);
    expect(await main(["consume", "missing", "--from-beginning"], m.value)).toBe(1);
    expect(m.stderr()).toBe("edgelog: UNKNOWN_TOPIC_OR_PARTITION: The topic or partition does not exist.\n");
    const o = io(server);
    expect(await main(["consume", "x", "--offset", "5", "--partition", "0"], o.value)).toBe(1);
    expect(o.stderr()).toBe("edgelog: OFFSET_OUT_OF_RANGE: Offset 5 is out of range for partition 0 of x: log start offset 0, high watermark 0.\n");
    const u = io(server);
    expect(await main(["topics", "frob"], u.value)).toBe(2);
    expect(u.stderr()).toBe("edgelog: Unknown command: topics frob\nTry 'edgelog --help' for the commands and options.\n");
  });

  it("produce to a missing topic exits 1 with UNKNOWN_TOPIC_OR_PARTITION even when stdin is empty", async () => {
    const server = new FakeServer();
    const p = io(server, []);
    expect(await main(["produce", "missing"], p.value)).toBe(1);
    expect(p.stderr()).toBe("edgelog: UNKNOWN_TOPIC_OR_PARTITION: The topic or partition does not exist.\n");
  });

  it("produce with nothing missing still produces every line to an existing topic", async () => {
    const server = new FakeServer();
    server.addTopic("logs", 1);
    const p = io(server, ["a\nb\n"]);
    expect(await main(["produce", "logs"], p.value)).toBe(0);
    expect(server.log("logs", 0).records.map((r) => text(r.value))).toEqual(["a", "b"]);
  });
});
