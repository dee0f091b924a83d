/**
 * `edgelog`: the command-line client (Node only), modelled on kafka-topics,
 * kafka-console-producer / kafka-console-consumer and kcat.
 *
 * Exit codes: 0 success; 1 the server answered an error (`edgelog: CODE: message` on stderr)
 * or the request failed; 2 usage error (usage on stderr).
 *
 * The pure parts (argument parsing, line splitting, formatting) are exported for tests;
 * `run()` wires them to process.stdin/stdout.
 */
import process from "node:process";
import type { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { EdgelogError, encodeBase64, type GroupDescription, type ListGroupsResponse, type ResetOffsetsResponse, type ResetOffsetsSpec, type TopicDescription, type TopicSummary } from "../../src/protocol/index.ts";
import { Admin, type TopicConfigInput } from "./admin.ts";
import { EdgelogClient } from "./client.ts";
import { Consumer, type ConsumerRecord, type OffsetResetPolicy, type TopicPartition } from "./consumer.ts";
import { GroupConsumer } from "./group-consumer.ts";
import { Producer, type Message } from "./producer.ts";
import { toText } from "./text.ts";

/** Where the CLI connects when neither --url nor EDGELOG_URL is given (wrangler dev's default). */
export const DEFAULT_URL = "http://127.0.0.1:8787";

export const USAGE = `Usage: edgelog [--url URL] COMMAND ...

Commands:
  topics list [--json]
  topics create NAME [--partitions N] [--config k=v ...]
  topics describe NAME [--json]
  topics alter NAME [--partitions N] [--config k=v ...]
  topics delete NAME
  produce TOPIC [--key-separator SEP] [--header k=v ...] [--partition N]
      Sends each stdin line (its exact bytes, without the newline) as one record.
      With --key-separator, the part before the first SEP is the key (no SEP: null key).
      Without a key or --partition, lines spread over partitions in batches (sticky);
      order is kept per partition only.
  consume TOPIC [--from-beginning | --offset N | --timestamp MS] [--partition N]
                [-n COUNT] [--follow] [--json [--encoding string|base64]]
                [--print-key] [--key-separator SEP]
      Prints record values, one per line (raw bytes; a null value prints as an empty line).
      Starts at the end unless told otherwise; reads every partition unless --partition.
      Without --follow, exits once every partition is read to its end (or after COUNT records).
  consume TOPIC -g GROUP [--from-beginning] [-n COUNT] [--json [--encoding string|base64]]
                [--print-key] [--key-separator SEP]
      Joins consumer group GROUP: its members share the partitions, and what is printed is
      committed. Starts at the committed offsets (else the end, or the start with
      --from-beginning). Runs until COUNT records or Ctrl-C, then commits and leaves.
  groups list [--json]
  groups describe GROUP [--json]
      State, members and, per partition, committed offset, log end offset and lag.
  groups reset-offsets GROUP --topic TOPIC [--partition N]
                (--to-earliest | --to-latest | --to-offset N | --to-timestamp MS) [--execute]
      Only while the group has no members. Shows the new offsets; writes them with --execute.
  groups delete GROUP

Options:
  --url URL   gateway URL (default: $EDGELOG_URL or ${DEFAULT_URL})
  -h, --help  this text

Exit codes: 0 ok, 1 server or network error, 2 usage error.
`;

/** A malformed command line (exit code 2). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Where consume starts. */
export type StartPosition = { kind: "latest" } | { kind: "earliest" } | { kind: "offset"; offset: number } | { kind: "timestamp"; timestampMs: number };

/** A parsed command line. */
export type Command =
  | { kind: "help" }
  | { kind: "topics list"; url: string; json: boolean }
  | { kind: "topics create"; url: string; name: string; partitions: number | undefined; configs: Record<string, string> }
  | { kind: "topics describe"; url: string; name: string; json: boolean }
  | { kind: "topics alter"; url: string; name: string; partitions: number | undefined; configs: Record<string, string> }
  | { kind: "topics delete"; url: string; name: string }
  | { kind: "produce"; url: string; topic: string; keySeparator: string | undefined; headers: Array<[string, string]>; partition: number | undefined }
  | {
      kind: "consume";
      url: string;
      topic: string;
      start: StartPosition;
      partition: number | undefined;
      count: number | undefined;
      follow: boolean;
      json: boolean;
      encoding: "string" | "base64";
      printKey: boolean;
      keySeparator: string;
      /** consume -g: join this consumer group instead of reading every partition. */
      group?: string | undefined;
    }
  | { kind: "groups list"; url: string; json: boolean }
  | { kind: "groups describe"; url: string; group: string; json: boolean }
  | { kind: "groups delete"; url: string; group: string }
  | { kind: "groups reset-offsets"; url: string; group: string; topic: string; partition: number | undefined; spec: ResetOffsetsSpec; execute: boolean };

const OPTIONS = {
  url: { type: "string" },
  help: { type: "boolean", short: "h" },
  json: { type: "boolean" },
  partitions: { type: "string" },
  config: { type: "string", multiple: true },
  "key-separator": { type: "string" },
  header: { type: "string", multiple: true },
  partition: { type: "string" },
  "from-beginning": { type: "boolean" },
  offset: { type: "string" },
  timestamp: { type: "string" },
  n: { type: "string", short: "n" },
  follow: { type: "boolean", short: "f" },
  encoding: { type: "string" },
  "print-key": { type: "boolean" },
  group: { type: "string", short: "g" },
  topic: { type: "string" },
  "to-earliest": { type: "boolean" },
  "to-latest": { type: "boolean" },
  "to-offset": { type: "string" },
  "to-timestamp": { type: "string" },
  execute: { type: "boolean" },
} as const;

type OptionName = keyof typeof OPTIONS;

/** Options each command accepts (besides --url and --help), and its positional arguments. */
const COMMANDS: Record<string, { options: readonly OptionName[]; args: readonly string[] }> = {
  "topics list": { options: ["json"], args: [] },
  "topics create": { options: ["partitions", "config"], args: ["NAME"] },
  "topics describe": { options: ["json"], args: ["NAME"] },
  "topics alter": { options: ["partitions", "config"], args: ["NAME"] },
  "topics delete": { options: [], args: ["NAME"] },
  produce: { options: ["key-separator", "header", "partition"], args: ["TOPIC"] },
  consume: {
    options: ["from-beginning", "offset", "timestamp", "partition", "n", "follow", "json", "encoding", "print-key", "key-separator", "group"],
    args: ["TOPIC"],
  },
  "groups list": { options: ["json"], args: [] },
  "groups describe": { options: ["json"], args: ["GROUP"] },
  "groups delete": { options: [], args: ["GROUP"] },
  "groups reset-offsets": { options: ["topic", "partition", "to-earliest", "to-latest", "to-offset", "to-timestamp", "execute"], args: ["GROUP"] },
};

/**
 * Parses `argv` (without `node` and the script). Pure.
 * @param env environment, for EDGELOG_URL
 * @throws UsageError for an unknown command or option, a missing or extra argument, a bad number.
 */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): Command {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  const { values, positionals } = parsed;
  if (values.help === true || positionals.length === 0) {
    if (positionals.length === 0 && values.help !== true) throw new UsageError("Missing command.");
    return { kind: "help" };
  }
  const grouped = positionals[0] === "topics" || positionals[0] === "groups";
  const name = grouped ? `${positionals[0]} ${positionals[1] ?? ""}` : positionals[0]!;
  const spec = COMMANDS[name];
  if (spec === undefined) {
    if (name === "topics ") throw new UsageError("topics: missing subcommand (list, create, describe, alter, delete)");
    if (name === "groups ") throw new UsageError("groups: missing subcommand (list, describe, reset-offsets, delete)");
    throw new UsageError(`Unknown command: ${positionals.slice(0, grouped ? 2 : 1).join(" ")}`);
  }
  const args = positionals.slice(name.split(" ").length);
  if (args.length < spec.args.length) throw new UsageError(`${name}: missing ${spec.args.slice(args.length).join(" ")}`);
  if (args.length > spec.args.length) throw new UsageError(`${name}: unexpected argument ${JSON.stringify(args[spec.args.length])}`);
  for (const key of Object.keys(values) as OptionName[]) {
    if (key !== "url" && key !== "help" && !spec.options.includes(key)) throw new UsageError(`${name}: unknown option --${key === "n" ? "n (-n)" : key}`);
  }

  const url = values.url ?? env["EDGELOG_URL"] ?? DEFAULT_URL;
  if (!URL.canParse(url)) throw new UsageError(`Invalid --url ${JSON.stringify(url)}`);
  const arg = args[0] ?? "";
  switch (name) {
    case "topics list":
      return { kind: name, url, json: values.json === true };
    case "topics describe":
      return { kind: name, url, name: arg, json: values.json === true };
    case "topics delete":
      return { kind: name, url, name: arg };
    case "topics create":
    case "topics alter": {
      const partitions = intOption("--partitions", values.partitions);
      const configs = keyValues("--config", values.config);
      if (name === "topics alter" && partitions === undefined && Object.keys(configs).length === 0) {
        throw new UsageError("topics alter: give --partitions and/or --config");
      }
      return { kind: name, url, name: arg, partitions, configs };
    }
    case "groups list":
      return { kind: name, url, json: values.json === true };
    case "groups describe":
      return { kind: name, url, group: arg, json: values.json === true };
    case "groups delete":
      return { kind: name, url, group: arg };
    case "groups reset-offsets": {
      if (values.topic === undefined) throw new UsageError("groups reset-offsets: --topic is required");
      const specs: ResetOffsetsSpec[] = [];
      if (values["to-earliest"] === true) specs.push({ to: "earliest" });
      if (values["to-latest"] === true) specs.push({ to: "latest" });
      const toOffset = intOption("--to-offset", values["to-offset"]);
      if (toOffset !== undefined) specs.push({ to: "offset", offset: toOffset });
      const toTimestamp = intOption("--to-timestamp", values["to-timestamp"]);
      if (toTimestamp !== undefined) specs.push({ to: "timestamp", timestamp: toTimestamp });
      if (specs.length !== 1) throw new UsageError("groups reset-offsets: give exactly one of --to-earliest, --to-latest, --to-offset, --to-timestamp");
      return { kind: name, url, group: arg, topic: values.topic, partition: intOption("--partition", values.partition), spec: specs[0]!, execute: values.execute === true };
    }
    case "produce": {
      return {
        kind: name,
        url,
        topic: arg,
        keySeparator: separator(values["key-separator"]),
        headers: headerPairs(values.header),
        partition: intOption("--partition", values.partition),
      };
    }
    default: {
      const starts = [values["from-beginning"] === true, values.offset !== undefined, values.timestamp !== undefined].filter(Boolean).length;
      if (starts > 1) throw new UsageError("consume: use only one of --from-beginning, --offset, --timestamp");
      let start: StartPosition = { kind: "latest" };
      if (values["from-beginning"] === true) start = { kind: "earliest" };
      const offset = intOption("--offset", values.offset);
      if (offset !== undefined) start = { kind: "offset", offset };
      const timestampMs = intOption("--timestamp", values.timestamp);
      if (timestampMs !== undefined) start = { kind: "timestamp", timestampMs };
      const count = intOption("-n", values.n);
      if (count === 0) throw new UsageError("-n must be at least 1");
      const encoding = values.encoding ?? "string";
      if (encoding !== "string" && encoding !== "base64") throw new UsageError("--encoding must be string or base64");
      if (values.encoding !== undefined && values.json !== true) throw new UsageError("--encoding applies to --json output only");
      if (values.group !== undefined) {
        if (values.group === "") throw new UsageError("-g must not be empty");
        if (values.offset !== undefined || values.timestamp !== undefined || values.partition !== undefined || values.follow === true) {
          throw new UsageError("consume -g: the group assigns partitions and positions; --offset, --timestamp, --partition and --follow do not apply");
        }
      }
      return {
        kind: "consume",
        url,
        topic: arg,
        start,
        partition: intOption("--partition", values.partition),
        count,
        follow: values.follow === true,
        json: values.json === true,
        encoding,
        printKey: values["print-key"] === true,
        keySeparator: separator(values["key-separator"]) ?? "\t",
        group: values.group,
      };
    }
  }
}

function intOption(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return n;
}

function separator(raw: string | undefined): string | undefined {
  if (raw === "") throw new UsageError("--key-separator must not be empty");
  return raw;
}

function splitKeyValue(option: string, item: string): [string, string] {
  const eq = item.indexOf("=");
  if (eq <= 0) throw new UsageError(`${option} expects k=v, got ${JSON.stringify(item)}`);
  return [item.slice(0, eq), item.slice(eq + 1)];
}

function keyValues(option: string, items: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items ?? []) {
    const [k, v] = splitKeyValue(option, item);
    if (Object.hasOwn(out, k)) throw new UsageError(`${option} ${k} given twice`);
    out[k] = v;
  }
  return out;
}

/** Header pairs in command-line order, duplicates kept (KIP-82 headers are an ordered list). */
function headerPairs(items: readonly string[] | undefined): Array<[string, string]> {
  return (items ?? []).map((item) => splitKeyValue("--header", item));
}

// ---- produce: stdin lines -> messages ----

/**
 * Splits a byte stream into lines at `\n` (0x0A) only: a line is its exact bytes without the
 * newline (a `\r` stays), the last line needs no newline, and a final newline makes no extra
 * empty line. Lines are copies, independent of the input chunks.
 */
export class LineSplitter {
  /** Bytes of an unfinished line, from earlier chunks. */
  #rest: Uint8Array[] = [];

  /** Feeds a chunk; returns the lines it completed (views of one copy of the chunk). */
  push(chunk: Uint8Array): Uint8Array[] {
    const lines: Uint8Array[] = [];
    let nl = chunk.indexOf(0x0a);
    if (nl === -1) {
      if (chunk.length > 0) this.#rest.push(chunk.slice());
      return lines;
    }
    // One copy per chunk, not per line: lines are views of it (cheap for many short lines).
    const own = chunk.slice();
    let start = 0;
    if (this.#rest.length > 0) {
      lines.push(concat([...this.#rest, own.subarray(0, nl)]));
      this.#rest = [];
      start = nl + 1;
      nl = own.indexOf(0x0a, start);
    }
    for (; nl !== -1; nl = own.indexOf(0x0a, start)) {
      lines.push(own.subarray(start, nl));
      start = nl + 1;
    }
    if (start < own.length) this.#rest.push(own.subarray(start));
    return lines;
  }

  /** Ends the stream; returns the last line if the input did not end with a newline. */
  end(): Uint8Array | undefined {
    if (this.#rest.length === 0) return undefined;
    const line = concat(this.#rest);
    this.#rest = [];
    return line;
  }
}

/**
 * One stdin line as a message: with a separator, the bytes before its first occurrence are the
 * key and the bytes after it the value; a line without it has a null key and is all value
 * (kcat -K). Without a separator: null key, the line is the value.
 */
export function lineToMessage(line: Uint8Array, keySeparator: Uint8Array | undefined): { key: Uint8Array | null; value: Uint8Array } {
  if (keySeparator === undefined) return { key: null, value: line };
  const at = indexOfBytes(line, keySeparator);
  if (at === -1) return { key: null, value: line };
  return { key: line.subarray(0, at), value: line.subarray(at + keySeparator.length) };
}

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  if (needle.length === 0) return -1;
  const first = needle[0]!;
  outer: for (let i = haystack.indexOf(first); i !== -1 && i + needle.length <= haystack.length; i = haystack.indexOf(first, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// ---- consume: records -> output ----

const encoder = new TextEncoder();
const NEWLINE = encoder.encode("\n");

/** Options of {@link formatRecord}. */
export interface FormatOptions {
  json: boolean;
  encoding: "string" | "base64";
  printKey: boolean;
  keySeparator: string;
}

/**
 * One output line (newline included). Plain: `[key SEP] value` as raw bytes, null printed as
 * nothing. JSON: `{partition, offset, timestamp, key, value, headers}` (the server's
 * JsonFetchedRecord shape), bytes as UTF-8 text or base64, null as null.
 */
export function formatRecord(r: ConsumerRecord, o: FormatOptions): Uint8Array {
  if (o.json) {
    const enc = (b: Uint8Array | null): string | null => (b === null ? null : o.encoding === "base64" ? encodeBase64(b) : toText(b));
    const line = JSON.stringify({
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      key: enc(r.key),
      value: enc(r.value),
      headers: r.headers.map((h) => ({ key: h.key, value: enc(h.value) })),
    });
    return encoder.encode(`${line}\n`);
  }
  const parts: Uint8Array[] = [];
  if (o.printKey) parts.push(r.key ?? new Uint8Array(0), encoder.encode(o.keySeparator));
  parts.push(r.value ?? new Uint8Array(0), NEWLINE);
  return concat(parts);
}

/** Display name: the short name in public/default, else tenant/namespace/name. */
export function displayName(t: TopicSummary): string {
  return t.tenant === "public" && t.namespace === "default" ? t.topic : t.name;
}

/** Left-aligned text table with two spaces between columns. */
export function formatTable(header: readonly string[], rows: ReadonlyArray<readonly (string | number)[]>): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n") + "\n";
}

/** `topics describe` text: a summary line, the configs, and one row per partition. */
export function formatDescription(d: TopicDescription): string {
  const head = `Topic: ${displayName(d)}\tName: ${d.name}\tTopicId: ${d.topicId}\tPartitions: ${d.partitions}\n`;
  const configs = `Configs: ${Object.entries(d.configs).map(([k, v]) => `${k}=${v}`).join(", ")}\n`;
  const table = formatTable(
    ["PARTITION", "LOG_START_OFFSET", "HIGH_WATERMARK", "LOG_END_OFFSET", "RECORDS", "BYTES"],
    d.partitionDetails.map((p) => [p.partition, p.logStartOffset, p.highWatermark, p.logEndOffset, p.recordCount, p.bytes]),
  );
  return head + configs + table;
}

// ---- running ----

/** The streams main() uses (process's by default). */
export interface CliIo {
  stdin: AsyncIterable<Uint8Array>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: Readonly<Record<string, string | undefined>>;
  /** fetch implementation (tests). @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** Producer sends awaited at once at most; bounds the memory of `produce` for any input size. */
const PRODUCE_WINDOW_SENDS = 32;

/**
 * Runs one command. @returns the exit code (0 ok, 1 server/network error, 2 usage error).
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let cmd: Command;
  try {
    cmd = parseCli(argv, io.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr.write(`edgelog: ${e.message}\n\n${USAGE}`);
    return 2;
  }
  if (cmd.kind === "help") {
    io.stdout.write(USAGE);
    return 0;
  }
  const client = new EdgelogClient(io.fetch === undefined ? { baseUrl: cmd.url } : { baseUrl: cmd.url, fetch: io.fetch });
  const admin = new Admin(client);
  const out = new Output(io.stdout);
  try {
    switch (cmd.kind) {
      case "topics list": {
        const topics = await admin.listTopics();
        await out.write(cmd.json ? `${JSON.stringify(topics, null, 2)}\n` : topics.map((t) => `${displayName(t)}\n`).join(""));
        break;
      }
      case "topics create": {
        const d = await admin.createTopic({ name: cmd.name, partitions: cmd.partitions, configs: cmd.configs as TopicConfigInput });
        await out.write(`Created topic ${displayName(d)} with ${d.partitions} partition${d.partitions === 1 ? "" : "s"}.\n`);
        break;
      }
      case "topics describe": {
        const d = await admin.describeTopic(cmd.name);
        await out.write(cmd.json ? `${JSON.stringify(d, null, 2)}\n` : formatDescription(d));
        break;
      }
      case "topics alter": {
        const changes = { ...(cmd.partitions === undefined ? {} : { partitions: cmd.partitions }), ...(Object.keys(cmd.configs).length === 0 ? {} : { configs: cmd.configs as TopicConfigInput }) };
        const d = await admin.alterTopic(cmd.name, changes);
        await out.write(`Altered topic ${displayName(d)}: ${d.partitions} partition${d.partitions === 1 ? "" : "s"}.\n`);
        break;
      }
      case "topics delete":
        await admin.deleteTopic(cmd.name);
        await out.write(`Deleted topic ${cmd.name}.\n`);
        break;
      case "produce":
        await produce(client, cmd, io.stdin);
        break;
      case "consume":
        if (cmd.group !== undefined) await consumeGroup(client, cmd, cmd.group, out, io.stderr);
        else await consume(client, admin, cmd, out);
        break;
      case "groups list": {
        const r = await client.listGroups();
        await out.write(cmd.json ? `${JSON.stringify(r, null, 2)}\n` : formatGroupList(r));
        break;
      }
      case "groups describe": {
        const d = await client.describeGroup(cmd.group);
        await out.write(cmd.json ? `${JSON.stringify(d, null, 2)}\n` : formatGroupDescription(d));
        break;
      }
      case "groups delete":
        await client.deleteGroup(cmd.group);
        await out.write(`Deleted group ${cmd.group}.\n`);
        break;
      case "groups reset-offsets": {
        const r = await client.resetOffsets(cmd.group, {
          topics: [{ topic: cmd.topic, partitions: cmd.partition === undefined ? null : [cmd.partition] }],
          spec: cmd.spec,
          dryRun: !cmd.execute,
        });
        await out.write(formatResetOffsets(r));
        break;
      }
    }
    return 0;
  } catch (e) {
    if (e instanceof OutputClosed) return 0;
    io.stderr.write(e instanceof EdgelogError ? `edgelog: ${e.code}: ${e.message}\n` : `edgelog: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

async function produce(client: EdgelogClient, cmd: Extract<Command, { kind: "produce" }>, stdin: AsyncIterable<Uint8Array>): Promise<void> {
  // Like kafka-console-producer: a missing topic fails at once, also when stdin is empty.
  await client.describeTopic(cmd.topic);
  const producer = new Producer(client);
  const separator = cmd.keySeparator === undefined ? undefined : encoder.encode(cmd.keySeparator);
  const headers = cmd.headers.map(([key, value]) => ({ key, value }));
  const splitter = new LineSplitter();
  const window: Promise<void>[] = [];
  let failure: unknown;
  const submit = async (lines: Uint8Array[]): Promise<void> => {
    const messages: Message[] = lines.map((line) => ({ ...lineToMessage(line, separator), headers, partition: cmd.partition }));
    window.push(
      producer.send({ topic: cmd.topic, messages }).then(
        () => undefined,
        (e: unknown) => {
          failure ??= e;
          // Stop reading at once, also when stdin is an idle terminal or pipe.
          (stdin as Partial<Readable>).destroy?.();
        },
      ),
    );
    while (window.length > PRODUCE_WINDOW_SENDS) await window.shift();
  };
  try {
    for await (const chunk of stdin) {
      const lines = splitter.push(chunk);
      if (lines.length > 0) await submit(lines);
      if (failure !== undefined) break;
    }
  } catch (e) {
    if (failure === undefined) throw e; // else: the premature close we caused
  }
  const last = splitter.end();
  if (last !== undefined && failure === undefined) await submit([last]);
  await Promise.all(window);
  await producer.close();
  if (failure !== undefined) throw failure;
}

async function consume(client: EdgelogClient, admin: Admin, cmd: Extract<Command, { kind: "consume" }>, out: Output): Promise<void> {
  const partitions: TopicPartition[] =
    cmd.partition !== undefined
      ? [{ topic: cmd.topic, partition: cmd.partition }]
      : Array.from({ length: (await admin.describeTopic(cmd.topic)).partitions }, (_, partition) => ({ topic: cmd.topic, partition }));
  // An explicit --offset out of range is an error (exit 1), not a silent jump.
  const reset: OffsetResetPolicy = cmd.start.kind === "offset" ? "none" : cmd.start.kind === "latest" ? "latest" : "earliest";
  const consumer = new Consumer(client, { autoOffsetReset: reset });
  consumer.assign(partitions);
  try {
    const start = cmd.start;
    switch (start.kind) {
      case "earliest":
        await consumer.seekToBeginning();
        break;
      case "latest":
        await consumer.seekToEnd();
        break;
      case "offset":
        for (const tp of partitions) consumer.seek({ ...tp, offset: start.offset });
        break;
      case "timestamp":
        await Promise.all(partitions.map((tp) => consumer.seekToTimestamp(tp.topic, tp.partition, start.timestampMs)));
        break;
    }
    const format: FormatOptions = cmd;
    let printed = 0;
    for (;;) {
      const left = cmd.count === undefined ? Number.POSITIVE_INFINITY : cmd.count - printed;
      const records = await consumer.poll({ maxWaitMs: cmd.follow ? FOLLOW_MAX_WAIT_MS : 0, maxRecords: Math.min(left, POLL_MAX_RECORDS) });
      if (records.length > 0) {
        await out.write(concat(records.map((r) => formatRecord(r, format))));
        printed += records.length;
        if (cmd.count !== undefined && printed >= cmd.count) return;
      } else if (!cmd.follow && (await atEnd(consumer, partitions))) {
        return;
      }
    }
  } finally {
    consumer.close();
  }
}

/**
 * `consume -g`: a group member printing records; what is printed is committed (every second,
 * and on exit). Ends after `-n COUNT` records or on SIGINT / SIGTERM, then commits and leaves.
 */
async function consumeGroup(client: EdgelogClient, cmd: Extract<Command, { kind: "consume" }>, group: string, out: Output, stderr: NodeJS.WritableStream): Promise<void> {
  const consumer = new GroupConsumer(client, { groupId: group, autoOffsetReset: cmd.start.kind === "earliest" ? "earliest" : "latest", clientId: "edgelog-cli" });
  await consumer.subscribe({ topics: [cmd.topic] });
  consumer.on("error", (e) => stderr.write(`edgelog: ${e instanceof EdgelogError ? `${e.code}: ` : ""}${e instanceof Error ? e.message : String(e)}\n`));
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let closed = false;
  let printed = 0;
  const format: FormatOptions = cmd;
  await consumer.run({
    autoCommitIntervalMs: 1000,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, isStale }) => {
      for (const m of batch.messages) {
        if (isStale() || closed || (cmd.count !== undefined && printed >= cmd.count)) break;
        try {
          await out.write(formatRecord(m, format));
        } catch (e) {
          if (!(e instanceof OutputClosed)) throw e;
          closed = true;
          stop();
          return;
        }
        resolveOffset(m.offset);
        printed++;
      }
      if (cmd.count !== undefined && printed >= cmd.count) stop();
    },
  });
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    await stopped;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await consumer.disconnect();
  }
}

/** `groups list` text. */
export function formatGroupList(r: ListGroupsResponse): string {
  return formatTable(["GROUP", "STATE", "ASSIGNOR", "MEMBERS"], r.groups.map((g) => [g.groupId, g.state, g.assignor, g.members]));
}

/** `groups describe` text, in the spirit of kafka-consumer-groups --describe. */
export function formatGroupDescription(d: GroupDescription): string {
  const head = `Group: ${d.groupId}\tState: ${d.state}\tAssignor: ${d.assignor} (${d.rebalanceProtocol})\tEpoch: ${d.groupEpoch}\tMembers: ${d.members.length}\tTotal lag: ${d.totalLag}\n`;
  const clientOf = new Map(d.members.map((m) => [m.memberId, m.clientId]));
  const dash = (v: number | string | null): string | number => (v === null || v === "" ? "-" : v);
  const offsets = formatTable(
    ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "CLIENT-ID"],
    d.offsets.map((o) => [displayTopicName(o.topic), o.partition, dash(o.committedOffset), dash(o.logEndOffset), dash(o.lag), dash(o.memberId), dash(o.memberId === null ? null : (clientOf.get(o.memberId) ?? null))]),
  );
  const members = formatTable(
    ["CONSUMER-ID", "INSTANCE-ID", "CLIENT-ID", "EPOCH", "STATE", "ASSIGNMENT"],
    d.members.map((m) => [m.memberId, dash(m.instanceId), dash(m.clientId), m.memberEpoch, m.state, m.assignment.map((a) => `${displayTopicName(a.topic)}:${a.partitions.join(",")}`).join(" ") || "-"]),
  );
  return `${head}\n${offsets}\n${members}`;
}

/** `groups reset-offsets` text. */
export function formatResetOffsets(r: ResetOffsetsResponse): string {
  const table = formatTable(
    ["TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"],
    r.offsets.map((o) => [displayTopicName(o.topic), o.partition, o.previousOffset ?? "-", o.offset]),
  );
  return table + (r.dryRun ? "Dry run: nothing written (use --execute).\n" : `Offsets of group ${r.groupId} reset.\n`);
}

function displayTopicName(full: string): string {
  return full.startsWith("public/default/") ? full.slice("public/default/".length) : full;
}

/** Long-poll of `consume --follow`, in ms (server maximum 60000). */
const FOLLOW_MAX_WAIT_MS = 30_000;
const POLL_MAX_RECORDS = 1000;

async function atEnd(consumer: Consumer, partitions: readonly TopicPartition[]): Promise<boolean> {
  for (const tp of partitions) {
    const hw = consumer.highWatermark(tp);
    if (hw === undefined || (await consumer.position(tp)) < hw) return false;
  }
  return true;
}

/** Thrown when stdout is closed by the reader (`| head`): a normal end. */
class OutputClosed extends Error {}

/** stdout with back-pressure and EPIPE handling. */
class Output {
  readonly #stream: NodeJS.WritableStream;
  #closed = false;

  constructor(stream: NodeJS.WritableStream) {
    this.#stream = stream;
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE") this.#closed = true;
    });
  }

  async write(data: string | Uint8Array): Promise<void> {
    if (this.#closed) throw new OutputClosed();
    if (!this.#stream.write(data)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.#stream.off("drain", done);
          this.#stream.off("error", done);
          this.#stream.off("close", done);
          resolve();
        };
        this.#stream.on("drain", done);
        this.#stream.on("error", done);
        this.#stream.on("close", done);
      });
    }
    if (this.#closed) throw new OutputClosed();
  }
}

/** Entry point of bin/edgelog.js: runs main() on the process's streams and sets the exit code. */
export async function run(): Promise<void> {
  process.exitCode = await main(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env });
}
