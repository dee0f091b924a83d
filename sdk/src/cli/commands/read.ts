/**
 * `edgelog read` (pulsar-client read): a Pulsar-style reader (docs/PROTOCOL.md "Readers over
 * WebSocket"), a non-durable cursor over every partition of the topic that stores nothing on
 * the server; prints each message as `consume` does.
 */
import { parseMessageId } from "../../../../src/subscriptions/message-id.ts";
import { createReader, type ReaderMessage, type ReaderStart } from "../../reader.ts";
import { flag, intOption, str, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { formatRecord } from "../format.ts";
import { untilSignal } from "../io.ts";
import { formatOptions, parseRecordOutput, RECORD_OUTPUT_OPTIONS, type RecordOutput } from "./consume.ts";

export interface ReadCommand extends RecordOutput {
  kind: "read";
  url: string;
  topic: string;
  /** @default "latest" */
  start: ReaderStart;
  /** A message id: start at it (not after it); latest: at the last message. */
  inclusive: boolean;
  /** Stop after this many messages; undefined: until Ctrl-C (or the end with `exitAtEnd`). */
  count: number | undefined;
  /** Stop once nothing is left to read (the reader's hasMessageAvailable). */
  exitAtEnd: boolean;
}

/** Most permits `read -n N` asks for per partition: no more messages pushed than it will print. */
const MAX_RECEIVER_QUEUE = 1000;

/**
 * `--start`: `earliest`, `latest` (any case), a message id (`PPPP:OOOOOOOOOOOOOOOO`) or
 * `timestamp:MS` (the first message whose timestamp is >= MS). @throws UsageError otherwise.
 */
export function readerStartArg(raw: string): ReaderStart {
  const lower = raw.toLowerCase();
  if (lower === "earliest" || lower === "latest") return lower;
  if (parseMessageId(raw) !== null) return raw;
  const ts = /^timestamp:(\d+)$/.exec(raw);
  if (ts !== null) return { timestamp: intOption("--start", ts[1]!)! };
  throw new UsageError(`--start expects earliest, latest, a message id (PPPP:OOOOOOOOOOOOOOOO) or timestamp:MS, got ${JSON.stringify(raw)}`);
}

export const read = defineCommand<ReadCommand>({
  name: "read",
  usage:
    "  read TOPIC [--start earliest|latest|MESSAGE_ID|timestamp:MS] [--inclusive] [-n COUNT] [-e]\n" +
    "       [-J [--encoding string|base64] | -f FORMAT] [--print-key] [-K SEP] [-D DELIM] [-Z]\n" +
    "      Reads the topic with a reader (pulsar-client read): a cursor that stores nothing, over\n" +
    "      every partition (a message id: its partition only). Prints each message as consume\n" +
    "      does (-J adds messageId). --start: default latest (only new messages); --inclusive: a\n" +
    "      message id's own message first, latest's last message first. Runs until COUNT\n" +
    "      messages, -e (nothing left to read) or Ctrl-C.\n",
  options: {
    start: { type: "string" },
    inclusive: { type: "boolean" },
    n: { type: "string", short: "n" },
    exit: { type: "boolean", short: "e" },
    ...RECORD_OUTPUT_OPTIONS,
  },
  args: ["TOPIC"],
  parse({ url, args, values }) {
    const count = intOption("-n", str(values, "n"));
    if (count === 0) throw new UsageError("-n must be at least 1");
    const start = str(values, "start");
    return {
      kind: "read",
      url,
      topic: args[0]!,
      start: start === undefined ? "latest" : readerStartArg(start),
      inclusive: flag(values, "inclusive"),
      count,
      exitAtEnd: flag(values, "exit"),
      ...parseRecordOutput("read", values),
    };
  },
  async run(cmd, { client, out }) {
    const reader = await createReader(client, {
      topic: cmd.topic,
      start: cmd.start,
      startMessageIdInclusive: cmd.inclusive,
      ...(cmd.count === undefined ? {} : { receiverQueueSize: Math.min(cmd.count, MAX_RECEIVER_QUEUE) }),
    });
    const { stopped, dispose } = untilSignal();
    const format = formatOptions(cmd);
    let printed = 0;
    try {
      while (cmd.count === undefined || printed < cmd.count) {
        if (cmd.exitAtEnd && !(await reader.hasMessageAvailable())) break;
        const m: ReaderMessage | null = await Promise.race([reader.readNext(), stopped]);
        if (m === null) break;
        await out.write(formatRecord({ ...m, topic: cmd.topic }, format));
        printed++;
      }
    } finally {
      reader.close();
      dispose();
    }
  },
});
