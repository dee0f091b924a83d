/** `consume`: records to stdout, assign-based or as a group member (kafka-console-consumer, kcat -C). */
import process from "node:process";
import { EdgelogError, type PartitionDescription } from "../../../../src/protocol/index.ts";
import type { Admin } from "../../admin.ts";
import type { EdgelogClient } from "../../client.ts";
import { Consumer, type ConsumerRecord, type OffsetResetPolicy, type TopicPartition } from "../../consumer.ts";
import { GroupConsumer } from "../../group-consumer.ts";
import {
  DELIMITER_OPTION,
  flag,
  intOption,
  JSON_OPTION,
  KEY_SEPARATOR_OPTION,
  list,
  NULL_OPTION,
  type OffsetArg,
  PARTITION_OPTION,
  parseOffsetArg,
  separator,
  str,
  UsageError,
  unescapeBytes,
} from "../args.ts";
import { defineCommand, type ParsedLine } from "../command.ts";
import { compileFormat, type FormatOptions, formatRecord, shownTopic } from "../format.ts";
import { concat, type Output, OutputClosed } from "../io.ts";
import { isTerminal, Progress } from "../progress.ts";

/** Where consume starts (kcat -o without e@). */
export type StartPosition = Exclude<OffsetArg, { kind: "endTimestamp" }>;

/** How records are printed (consume and subscribe): `-J`, `--encoding`, `-f`, `--print-key`, `-K`, `-D`, `-Z`. */
export interface RecordOutput {
  json: boolean;
  encoding: "string" | "base64";
  printKey: boolean;
  keySeparator: string;
  /** kcat -f format string (validated). */
  format?: string | undefined;
  /** kcat -D: what follows each plain record or JSON object (ignored with -f), with escapes. @default "\n" */
  delimiter?: string | undefined;
  /** kcat -Z: print null keys and values as NULL. */
  printNull?: boolean | undefined;
}

export interface ConsumeCommand extends RecordOutput {
  kind: "consume";
  url: string;
  topic: string;
  start: StartPosition;
  /** kcat -o e@TS: a partition ends before its first record with a timestamp >= this (ms). */
  endTimestampMs?: number | undefined;
  partition: number | undefined;
  count: number | undefined;
  follow: boolean;
  /** consume -g: join this consumer group instead of reading every partition. */
  group?: string | undefined;
}

/** The options of {@link RecordOutput}, as a command declares them. */
export const RECORD_OUTPUT_OPTIONS = {
  json: JSON_OPTION,
  encoding: { type: "string" },
  "print-key": { type: "boolean" },
  "key-separator": KEY_SEPARATOR_OPTION,
  format: { type: "string", short: "f" },
  delimiter: DELIMITER_OPTION,
  null: NULL_OPTION,
} as const;

/** Parses the {@link RECORD_OUTPUT_OPTIONS} of `command`. @throws UsageError for a bad or conflicting value. */
export function parseRecordOutput(command: string, values: ParsedLine["values"]): RecordOutput {
  const encoding = str(values, "encoding") ?? "string";
  if (encoding !== "string" && encoding !== "base64") throw new UsageError("--encoding must be string or base64");
  if (str(values, "encoding") !== undefined && !flag(values, "json")) throw new UsageError("--encoding applies to --json output only");
  const format = str(values, "format");
  if (format !== undefined) {
    if (flag(values, "json")) throw new UsageError(`${command}: use only one of -f and -J`);
    compileFormat(format); // validates
  }
  // kcat: -D ends each plain record or JSON object; a -f format carries its own delimiters,
  // so -D is ignored there; an empty -D runs the records together (refused only by produce).
  const delimiter = str(values, "delimiter");
  const keySeparator = separator(str(values, "key-separator"));
  return {
    json: flag(values, "json"),
    encoding,
    printKey: flag(values, "print-key") || keySeparator !== undefined,
    keySeparator: keySeparator ?? "\t",
    format,
    delimiter,
    printNull: flag(values, "null") || undefined,
  };
}

/** Long-poll of `consume --follow`, in ms (server maximum 60000). */
const FOLLOW_MAX_WAIT_MS = 30_000;
const POLL_MAX_RECORDS = 1000;

export const consume = defineCommand<ConsumeCommand>({
  name: "consume",
  usage:
    "  consume TOPIC [--from-beginning | -o OFFSET ... | --timestamp MS] [-p PARTITION]\n" +
    "                [-n COUNT] [--follow | -e] [-J [--encoding string|base64] | -f FORMAT]\n" +
    "                [--print-key] [-K SEP] [-D DELIM] [-Z]\n" +
    "      Prints record values, one per line (raw bytes; a null value prints as an empty line).\n" +
    "      Starts at the end unless told otherwise; reads every partition unless --partition.\n" +
    "      Without --follow, exits once every partition is read to its end (or after COUNT records).\n" +
    "      When stderr is a terminal and stdout is not (> file, | cmd), shows progress on stderr:\n" +
    "      records, bytes, rate and the lag left; nothing when stderr is piped.\n" +
    "      -o, --offset   beginning | end | N | -N (N before the end) | s@MS (first record at or\n" +
    "                     after a timestamp) | e@MS (stop before a timestamp; alone, starts at\n" +
    "                     the beginning); stored needs -g. Per partition; out of range: exit 1.\n" +
    "      -p, --partition N      one partition only       -n, -c COUNT   stop after COUNT records\n" +
    "      -J, --json     one JSON object per record: topic, partition, offset, timestamp, key,\n" +
    "                     value, headers (--encoding base64 for binary data)\n" +
    "      -f, --format   kcat format: %t topic, %p partition, %o offset, %T timestamp, %k key,\n" +
    "                     %K key length, %s value, %S value length, %R value length (4 bytes),\n" +
    "                     %h headers k=v,..., %% and escapes \\n \\r \\t \\0 \\\\ \\xHH\n" +
    "      -K, --key-separator SEP   print the key, SEP, then the value (implies --print-key;\n" +
    "                                escapes as -D, like kcat's -K)\n" +
    "      -D, --delimiter DELIM     after each record (plain) or JSON object (-J) instead of a\n" +
    "                                newline (escapes as -f); ignored with -f, whose format\n" +
    "                                carries its own delimiters (as kcat)\n" +
    "      -Z, --null     print a null key or value as NULL       -e   exit at the end (default)\n" +
    "  consume TOPIC -g GROUP [--from-beginning | -o beginning|end|stored] [-n COUNT]\n" +
    "                [-J [--encoding string|base64] | -f FORMAT] [--print-key] [-K SEP] [-D DELIM] [-Z]\n" +
    "      Joins consumer group GROUP: its members share the partitions, and what is printed is\n" +
    "      committed. Starts at the committed offsets (else the end, or the start with\n" +
    "      --from-beginning). Runs until COUNT records or Ctrl-C, then commits and leaves.\n",
  options: {
    "from-beginning": { type: "boolean" },
    offset: { type: "string", short: "o", multiple: true },
    timestamp: { type: "string" },
    partition: PARTITION_OPTION,
    n: { type: "string", short: "n" },
    count: { type: "string", short: "c" },
    follow: { type: "boolean" },
    exit: { type: "boolean", short: "e" },
    ...RECORD_OUTPUT_OPTIONS,
    group: { type: "string", short: "g" },
  },
  args: ["TOPIC"],
  parse({ url, args, values }) {
    const offsets = (list(values, "offset") ?? []).map(parseOffsetArg);
    const ends = offsets.filter((o) => o.kind === "endTimestamp");
    const startOffsets = offsets.filter((o): o is StartPosition => o.kind !== "endTimestamp");
    if (ends.length > 1) throw new UsageError("consume: give -o e@TIMESTAMP at most once");
    const timestampRaw = str(values, "timestamp");
    const starts = [flag(values, "from-beginning"), timestampRaw !== undefined].filter(Boolean).length + startOffsets.length;
    if (starts > 1) throw new UsageError("consume: use only one of --from-beginning, --offset, --timestamp");
    const endTimestampMs = ends[0]?.timestampMs;
    let start: StartPosition = startOffsets[0] ?? (endTimestampMs !== undefined ? { kind: "earliest" } : { kind: "latest" });
    if (flag(values, "from-beginning")) start = { kind: "earliest" };
    const timestampMs = intOption("--timestamp", timestampRaw);
    if (timestampMs !== undefined) start = { kind: "timestamp", timestampMs };
    if (str(values, "n") !== undefined && str(values, "count") !== undefined) throw new UsageError("consume: use only one of -n and -c");
    const count = str(values, "n") !== undefined ? intOption("-n", str(values, "n")) : intOption("-c", str(values, "count"));
    if (count === 0) throw new UsageError("-n must be at least 1");
    if (flag(values, "follow") && flag(values, "exit")) throw new UsageError("consume: use only one of --follow and -e");
    const output = parseRecordOutput("consume", values);
    const group = str(values, "group");
    if (group !== undefined) {
      if (group === "") throw new UsageError("-g must not be empty");
      const groupStart = start.kind === "earliest" || start.kind === "latest" || start.kind === "stored";
      if (!groupStart || endTimestampMs !== undefined || timestampRaw !== undefined || str(values, "partition") !== undefined || flag(values, "follow")) {
        throw new UsageError("consume -g: the group assigns partitions and positions; --offset, --timestamp, --partition and --follow do not apply");
      }
    } else if (start.kind === "stored") {
      throw new UsageError("-o stored needs -g GROUP: stored offsets are a group's committed offsets");
    }
    return {
      kind: "consume",
      url,
      topic: args[0]!,
      start,
      endTimestampMs,
      partition: intOption("--partition", str(values, "partition")),
      count,
      follow: flag(values, "follow"),
      ...output,
      group,
    };
  },
  async run(cmd, { client, admin, out, io }) {
    // Live progress when stderr is a terminal and the records go elsewhere (a file, a pipe):
    // records printed to the same terminal are their own progress, and a redrawn line
    // between them would be torn.
    const progress = new Progress(io.stderr, "Consumed", isTerminal(io.stderr) && !isTerminal(io.stdout));
    const lags = new Map<number, number>();
    const off = client.on("fetch", (e) => {
      lags.set(e.partition, e.lag);
      let lag = 0;
      for (const l of lags.values()) lag += l;
      progress.setLag(lag);
    });
    const counted: Counted = (records) => {
      let bytes = 0;
      for (const r of records) bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0);
      progress.add(records.length, bytes);
    };
    let ok = false;
    try {
      if (cmd.group !== undefined) await consumeGroup(client, cmd, cmd.group, out, io.stderr, counted);
      else await consumeAssigned(admin, client, cmd, out, counted);
      ok = true;
    } catch (e) {
      if (e instanceof OutputClosed) ok = true;
      throw e;
    } finally {
      off();
      progress.stop(ok);
    }
  },
});

/** The format options of parsed output options. */
export function formatOptions(cmd: RecordOutput): FormatOptions {
  return {
    json: cmd.json,
    encoding: cmd.encoding,
    printKey: cmd.printKey,
    keySeparator: cmd.keySeparator,
    format: cmd.format === undefined ? undefined : compileFormat(cmd.format),
    delimiter: cmd.delimiter === undefined ? undefined : unescapeBytes(cmd.delimiter),
    printNull: cmd.printNull,
  };
}

/** Told the records just written to stdout (for the progress line). */
type Counted = (records: readonly ConsumerRecord[]) => void;

async function consumeAssigned(admin: Admin, client: EdgelogClient, cmd: ConsumeCommand, out: Output, counted: Counted): Promise<void> {
  const description = await admin.describeTopic(cmd.topic);
  const partitions: TopicPartition[] =
    cmd.partition !== undefined ? [{ topic: cmd.topic, partition: cmd.partition }] : Array.from({ length: description.partitions }, (_, partition) => ({ topic: cmd.topic, partition }));
  const bounds = (partition: number): PartitionDescription => {
    const d = description.partitionDetails.find((p) => p.partition === partition);
    if (d === undefined)
      throw new EdgelogError(
        "UNKNOWN_TOPIC_OR_PARTITION",
        `Partition ${partition} does not exist: ${shownTopic(description.name)} has ${description.partitions} (0..${description.partitions - 1}).`,
      );
    return d;
  };
  if (cmd.partition !== undefined) bounds(cmd.partition);
  // An explicit offset out of range is an error (exit 1), not a silent jump.
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
      case "stored": // refused by parse without a group
        await consumer.seekToEnd();
        break;
      case "offset":
        for (const tp of partitions) {
          const b = bounds(tp.partition);
          if (start.offset < b.logStartOffset || start.offset > b.highWatermark) {
            throw new EdgelogError(
              "OFFSET_OUT_OF_RANGE",
              `Offset ${start.offset} is out of range for partition ${tp.partition} of ${shownTopic(description.name)}: log start offset ${b.logStartOffset}, high watermark ${b.highWatermark}.`,
            );
          }
          consumer.seek({ ...tp, offset: start.offset });
        }
        break;
      case "fromEnd":
        for (const tp of partitions) {
          const b = bounds(tp.partition);
          consumer.seek({ ...tp, offset: Math.max(b.logStartOffset, b.highWatermark - start.count) });
        }
        break;
      case "timestamp":
        await Promise.all(partitions.map((tp) => consumer.seekToTimestamp(tp.topic, tp.partition, start.timestampMs)));
        break;
    }
    const format = formatOptions(cmd);
    // e@TS: a partition is done at its first record at or after TS.
    let reading = partitions;
    let printed = 0;
    for (;;) {
      const left = cmd.count === undefined ? Number.POSITIVE_INFINITY : cmd.count - printed;
      let records = await consumer.poll({ maxWaitMs: cmd.follow ? FOLLOW_MAX_WAIT_MS : 0, maxRecords: Math.min(left, POLL_MAX_RECORDS) });
      if (cmd.endTimestampMs !== undefined) {
        const ended = new Set(records.filter((r) => r.timestamp >= cmd.endTimestampMs!).map((r) => r.partition));
        if (ended.size > 0) {
          const firstEnd = new Map<number, number>();
          for (const r of records) if (r.timestamp >= cmd.endTimestampMs && !firstEnd.has(r.partition)) firstEnd.set(r.partition, r.offset);
          records = records.filter((r) => !firstEnd.has(r.partition) || r.offset < firstEnd.get(r.partition)!);
          reading = reading.filter((tp) => !ended.has(tp.partition));
          consumer.assign(reading);
        }
      }
      if (records.length > 0) {
        await out.write(concat(records.map((r) => formatRecord(r, format))));
        counted(records);
        printed += records.length;
        if (cmd.count !== undefined && printed >= cmd.count) return;
      }
      if (reading.length === 0) return;
      if (records.length === 0 && !cmd.follow && (await atEnd(consumer, reading))) return;
    }
  } finally {
    consumer.close();
  }
}

async function atEnd(consumer: Consumer, partitions: readonly TopicPartition[]): Promise<boolean> {
  for (const tp of partitions) {
    const hw = consumer.highWatermark(tp);
    if (hw === undefined || (await consumer.position(tp)) < hw) return false;
  }
  return true;
}

/**
 * `consume -g`: a group member printing records; what is printed is committed (every second,
 * and on exit). Ends after `-n COUNT` records or on SIGINT / SIGTERM, then commits and leaves.
 */
async function consumeGroup(client: EdgelogClient, cmd: ConsumeCommand, group: string, out: Output, stderr: NodeJS.WritableStream, counted: Counted): Promise<void> {
  const consumer = new GroupConsumer(client, { groupId: group, autoOffsetReset: cmd.start.kind === "earliest" ? "earliest" : "latest", clientId: "edgelog-cli" });
  await consumer.subscribe({ topics: [cmd.topic] });
  consumer.on("error", (e) => stderr.write(`edgelog: ${e instanceof EdgelogError ? `${e.code}: ` : ""}${e instanceof Error ? e.message : String(e)}\n`));
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let closed = false;
  let printed = 0;
  const format = formatOptions(cmd);
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
        counted([m]);
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
