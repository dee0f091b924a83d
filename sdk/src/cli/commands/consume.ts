/** `consume`: records to stdout, assign-based or as a group member (kafka-console-consumer, kcat -C). */
import process from "node:process";
import { EdgelogError } from "../../../../src/protocol/index.ts";
import type { Admin } from "../../admin.ts";
import type { EdgelogClient } from "../../client.ts";
import { Consumer, type OffsetResetPolicy, type TopicPartition } from "../../consumer.ts";
import { GroupConsumer } from "../../group-consumer.ts";
import { flag, intOption, separator, str, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { type FormatOptions, formatRecord } from "../format.ts";
import { concat, type Output, OutputClosed } from "../io.ts";

/** Where consume starts. */
export type StartPosition = { kind: "latest" } | { kind: "earliest" } | { kind: "offset"; offset: number } | { kind: "timestamp"; timestampMs: number };

export interface ConsumeCommand {
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

/** Long-poll of `consume --follow`, in ms (server maximum 60000). */
const FOLLOW_MAX_WAIT_MS = 30_000;
const POLL_MAX_RECORDS = 1000;

export const consume = defineCommand<ConsumeCommand>({
  name: "consume",
  usage:
    "  consume TOPIC [--from-beginning | --offset N | --timestamp MS] [--partition N]\n" +
    "                [-n COUNT] [--follow] [--json [--encoding string|base64]]\n" +
    "                [--print-key] [--key-separator SEP]\n" +
    "      Prints record values, one per line (raw bytes; a null value prints as an empty line).\n" +
    "      Starts at the end unless told otherwise; reads every partition unless --partition.\n" +
    "      Without --follow, exits once every partition is read to its end (or after COUNT records).\n" +
    "  consume TOPIC -g GROUP [--from-beginning] [-n COUNT] [--json [--encoding string|base64]]\n" +
    "                [--print-key] [--key-separator SEP]\n" +
    "      Joins consumer group GROUP: its members share the partitions, and what is printed is\n" +
    "      committed. Starts at the committed offsets (else the end, or the start with\n" +
    "      --from-beginning). Runs until COUNT records or Ctrl-C, then commits and leaves.\n",
  options: {
    "from-beginning": { type: "boolean" },
    offset: { type: "string" },
    timestamp: { type: "string" },
    partition: { type: "string" },
    n: { type: "string", short: "n" },
    follow: { type: "boolean", short: "f" },
    json: { type: "boolean" },
    encoding: { type: "string" },
    "print-key": { type: "boolean" },
    "key-separator": { type: "string" },
    group: { type: "string", short: "g" },
  },
  args: ["TOPIC"],
  parse({ url, args, values }) {
    const offsetRaw = str(values, "offset");
    const timestampRaw = str(values, "timestamp");
    const starts = [flag(values, "from-beginning"), offsetRaw !== undefined, timestampRaw !== undefined].filter(Boolean).length;
    if (starts > 1) throw new UsageError("consume: use only one of --from-beginning, --offset, --timestamp");
    let start: StartPosition = { kind: "latest" };
    if (flag(values, "from-beginning")) start = { kind: "earliest" };
    const offset = intOption("--offset", offsetRaw);
    if (offset !== undefined) start = { kind: "offset", offset };
    const timestampMs = intOption("--timestamp", timestampRaw);
    if (timestampMs !== undefined) start = { kind: "timestamp", timestampMs };
    const count = intOption("-n", str(values, "n"));
    if (count === 0) throw new UsageError("-n must be at least 1");
    const encoding = str(values, "encoding") ?? "string";
    if (encoding !== "string" && encoding !== "base64") throw new UsageError("--encoding must be string or base64");
    if (str(values, "encoding") !== undefined && !flag(values, "json")) throw new UsageError("--encoding applies to --json output only");
    const group = str(values, "group");
    if (group !== undefined) {
      if (group === "") throw new UsageError("-g must not be empty");
      if (offsetRaw !== undefined || timestampRaw !== undefined || str(values, "partition") !== undefined || flag(values, "follow")) {
        throw new UsageError("consume -g: the group assigns partitions and positions; --offset, --timestamp, --partition and --follow do not apply");
      }
    }
    return {
      kind: "consume",
      url,
      topic: args[0]!,
      start,
      partition: intOption("--partition", str(values, "partition")),
      count,
      follow: flag(values, "follow"),
      json: flag(values, "json"),
      encoding,
      printKey: flag(values, "print-key"),
      keySeparator: separator(str(values, "key-separator")) ?? "\t",
      group,
    };
  },
  async run(cmd, { client, admin, out, io }) {
    if (cmd.group !== undefined) await consumeGroup(client, cmd, cmd.group, out, io.stderr);
    else await consumeAssigned(client, admin, cmd, out);
  },
});

async function consumeAssigned(client: EdgelogClient, admin: Admin, cmd: ConsumeCommand, out: Output): Promise<void> {
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
async function consumeGroup(client: EdgelogClient, cmd: ConsumeCommand, group: string, out: Output, stderr: NodeJS.WritableStream): Promise<void> {
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
