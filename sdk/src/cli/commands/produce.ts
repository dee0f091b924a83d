/** `produce`: stdin lines (or files) to records (kafka-console-producer, kcat -P). */
import { readFile } from "node:fs/promises";
import type { Readable } from "node:stream";
import { type Message, Producer, type RecordMetadata } from "../../producer.ts";
import { DELIMITER_OPTION, headerPairs, intOption, KEY_SEPARATOR_OPTION, flag, list, NULL_OPTION, PARTITION_OPTION, separator, str, UsageError, unescapeBytes } from "../args.ts";
import { defineCommand } from "../command.ts";
import { shownTopic } from "../format.ts";
import { DelimiterSplitter, indexOfBytes, LineSplitter, lineToMessage } from "../io.ts";
import { isTerminal, Progress } from "../progress.ts";

export interface ProduceCommand {
  kind: "produce";
  url: string;
  topic: string;
  keySeparator: string | undefined;
  headers: Array<[string, string]>;
  partition: number | undefined;
  /** kcat -k: the key of every record. */
  key?: string | undefined;
  /** kcat -D: the message delimiter of stdin, with escapes. @default "\n" */
  delimiter?: string | undefined;
  /** kcat -Z: an empty value is sent as null (a tombstone). */
  emptyAsNull?: boolean | undefined;
  /**
   * Per-line headers: a line is `HEADERS SEP REST`, HEADERS as consume's `%h` prints them
   * (`k=v,k2=v2`; a name without `=` is a null value), REST split by -K as usual.
   */
  lineHeaders?: string | undefined;
  /** Files to send, each as one record (stdin is not read then). */
  files?: string[] | undefined;
}

/** Producer sends awaited at once at most; bounds the memory of `produce` for any input size. */
const PRODUCE_WINDOW_SENDS = 32;

const encoder = new TextEncoder();

export const produce = defineCommand<ProduceCommand>({
  name: "produce",
  usage:
    "  produce TOPIC [FILE ...] [-K SEP | -k KEY] [-H k=v ...] [--line-headers SEP] [-p N]\n" +
    "                [-D DELIM] [-Z]\n" +
    "      Sends each stdin line (its exact bytes, without the newline) as one record, or each\n" +
    "      FILE as one record (binary-safe). When stderr is a terminal, shows progress (records,\n" +
    "      bytes, rate) while it works and a summary at the end; nothing when piped.\n" +
    "      -K, --key-separator SEP  the part before the first SEP is the key (no SEP: null key)\n" +
    "                               (escapes as -D, like kcat's -K)\n" +
    "      -k, --key KEY            the key of every record\n" +
    "      -H, --header k=v         a header on every record (repeat for more; order kept)\n" +
    "      --line-headers SEP       each line starts with its own headers, then SEP: k=v,k2=v2\n" +
    "                               (as consume -f %h prints them; after the -H headers)\n" +
    "      -p, --partition N        this partition; else by key, or null keys spread over\n" +
    "                               partitions in batches (sticky); order is per partition only\n" +
    "      -D, --delimiter DELIM    records are separated by DELIM instead of a newline\n" +
    "                               (escapes \\n \\r \\t \\0 \\\\ \\xHH)\n" +
    "      -Z, --null               an empty value is sent as null (a tombstone)\n",
  options: {
    "key-separator": KEY_SEPARATOR_OPTION,
    key: { type: "string", short: "k" },
    header: { type: "string", short: "H", multiple: true },
    "line-headers": { type: "string" },
    partition: PARTITION_OPTION,
    delimiter: DELIMITER_OPTION,
    null: NULL_OPTION,
  },
  args: ["TOPIC"],
  rest: "FILE",
  parse({ url, args, values }) {
    const keySeparator = separator(str(values, "key-separator"));
    const key = str(values, "key");
    if (key !== undefined && keySeparator !== undefined) throw new UsageError("produce: use only one of -K and -k");
    const delimiter = str(values, "delimiter");
    if (delimiter === "") throw new UsageError("-D must not be empty");
    const lineHeaders = str(values, "line-headers");
    if (lineHeaders === "") throw new UsageError("--line-headers must not be empty");
    const files = args.slice(1);
    if (files.length > 0 && (delimiter !== undefined || keySeparator !== undefined || lineHeaders !== undefined))
      throw new UsageError("produce: -D, -K and --line-headers split stdin; a FILE is one record");
    return {
      kind: "produce",
      url,
      topic: args[0]!,
      keySeparator,
      headers: headerPairs(list(values, "header")),
      partition: intOption("--partition", str(values, "partition")),
      key,
      delimiter,
      emptyAsNull: flag(values, "null") || undefined,
      lineHeaders,
      files: files.length > 0 ? files : undefined,
    };
  },
  async run(cmd, { client, io }) {
    // Like kafka-console-producer: a missing topic fails at once, also when stdin is empty.
    await client.describeTopic(cmd.topic);
    const producer = new Producer(client);
    // Live progress on a terminal (acknowledged records, batch bytes): stderr only, never stdout.
    const progress = new Progress(io.stderr, "Produced", isTerminal(io.stderr));
    producer.on("batch", (e) => progress.add(e.records, e.bytes));
    const summary = new Summary();
    let failure: unknown;
    try {
      const keySeparator = cmd.keySeparator === undefined ? undefined : unescapeBytes(cmd.keySeparator);
      const fixedKey = cmd.key === undefined ? undefined : encoder.encode(cmd.key);
      const headers = cmd.headers.map(([key, value]) => ({ key, value }));
      const lineHeaders = cmd.lineHeaders === undefined ? undefined : encoder.encode(cmd.lineHeaders);
      const toMessage = (piece: Uint8Array, split: boolean): Message => {
        let own: Array<{ key: string; value: Uint8Array | null }> = [];
        if (split && lineHeaders !== undefined) [own, piece] = splitLineHeaders(piece, lineHeaders);
        const m = split ? lineToMessage(piece, keySeparator) : { key: null, value: piece };
        return {
          key: fixedKey ?? m.key,
          value: cmd.emptyAsNull === true && m.value.length === 0 ? null : m.value,
          headers: own.length === 0 ? headers : [...headers, ...own],
          partition: cmd.partition,
        };
      };
      const window: Promise<void>[] = [];
      const stdin = io.stdin;
      const submit = async (messages: Message[]): Promise<void> => {
        window.push(
          producer.send({ topic: cmd.topic, messages }).then(
            (metadata) => summary.add(metadata),
            (e: unknown) => {
              failure ??= e;
              // Stop reading at once, also when stdin is an idle terminal or pipe.
              (stdin as Partial<Readable>).destroy?.();
            },
          ),
        );
        while (window.length > PRODUCE_WINDOW_SENDS) await window.shift();
      };
      if (cmd.files !== undefined) {
        for (const file of cmd.files) {
          await submit([toMessage(new Uint8Array(await readFile(file)), false)]);
          if (failure !== undefined) break;
        }
      } else {
        const splitter = cmd.delimiter === undefined ? new LineSplitter() : new DelimiterSplitter(unescapeBytes(cmd.delimiter));
        try {
          for await (const chunk of stdin) {
            const pieces = splitter.push(chunk);
            if (pieces.length > 0) await submit(pieces.map((p) => toMessage(p, true)));
            if (failure !== undefined) break;
          }
        } catch (e) {
          if (failure === undefined) throw e; // else: the premature close we caused
        }
        const last = splitter.end();
        if (last !== undefined && failure === undefined) await submit([toMessage(last, true)]);
      }
      await Promise.all(window);
      await producer.close();
    } finally {
      progress.stop(false);
    }
    if (failure !== undefined) throw failure;
    if (isTerminal(io.stderr)) io.stderr.write(summary.text(shownTopic(cmd.topic)));
  },
});

/**
 * A line's own headers and the rest of it: the bytes before the first `separator` are
 * `k=v,k2=v2` (a name without `=` is a null value; values are bytes, and cannot hold a `,`);
 * a line without the separator has none.
 */
export function splitLineHeaders(line: Uint8Array, separator: Uint8Array): [Array<{ key: string; value: Uint8Array | null }>, Uint8Array] {
  const at = indexOfBytes(line, separator);
  if (at === -1) return [[], line];
  const headers: Array<{ key: string; value: Uint8Array | null }> = [];
  const part = line.subarray(0, at);
  for (let start = 0; start < part.length; ) {
    let end = part.indexOf(0x2c, start); // ,
    if (end === -1) end = part.length;
    const pair = part.subarray(start, end);
    const eq = pair.indexOf(0x3d); // =
    headers.push(eq === -1 ? { key: decoder.decode(pair), value: null } : { key: decoder.decode(pair.subarray(0, eq)), value: pair.slice(eq + 1) });
    start = end + 1;
  }
  return [headers, line.subarray(at + separator.length)];
}

const decoder = new TextDecoder();

/** Records produced, per partition: count and offset range. */
class Summary {
  readonly #partitions = new Map<number, { count: number; first: number; last: number }>();
  #count = 0;

  add(metadata: readonly RecordMetadata[]): void {
    for (const m of metadata) {
      this.#count++;
      const p = this.#partitions.get(m.partition);
      if (p === undefined) this.#partitions.set(m.partition, { count: 1, first: m.offset, last: m.offset });
      else {
        p.count++;
        p.first = Math.min(p.first, m.offset);
        p.last = Math.max(p.last, m.offset);
      }
    }
  }

  /** E.g. `Produced 3 records to logs: partition 0 offsets 0..1, partition 2 offset 7.` */
  text(topic: string): string {
    const parts = [...this.#partitions]
      .sort(([a], [b]) => a - b)
      .map(([partition, p]) => `partition ${partition} ${p.first === p.last ? `offset ${p.first}` : `offsets ${p.first}..${p.last}`}`);
    return `Produced ${this.#count} record${this.#count === 1 ? "" : "s"} to ${topic}${parts.length === 0 ? "" : `: ${parts.join(", ")}`}.\n`;
  }
}
