/** `produce`: stdin lines to records (kafka-console-producer, kcat -P). */
import type { Readable } from "node:stream";
import { Producer, type Message } from "../../producer.ts";
import { headerPairs, intOption, list, separator, str } from "../args.ts";
import { defineCommand } from "../command.ts";
import { LineSplitter, lineToMessage } from "../io.ts";

export interface ProduceCommand {
  kind: "produce";
  url: string;
  topic: string;
  keySeparator: string | undefined;
  headers: Array<[string, string]>;
  partition: number | undefined;
}

/** Producer sends awaited at once at most; bounds the memory of `produce` for any input size. */
const PRODUCE_WINDOW_SENDS = 32;

const encoder = new TextEncoder();

export const produce = defineCommand<ProduceCommand>({
  name: "produce",
  usage:
    "  produce TOPIC [--key-separator SEP] [--header k=v ...] [--partition N]\n" +
    "      Sends each stdin line (its exact bytes, without the newline) as one record.\n" +
    "      With --key-separator, the part before the first SEP is the key (no SEP: null key).\n" +
    "      Without a key or --partition, lines spread over partitions in batches (sticky);\n" +
    "      order is kept per partition only.\n",
  options: {
    "key-separator": { type: "string" },
    header: { type: "string", multiple: true },
    partition: { type: "string" },
  },
  args: ["TOPIC"],
  parse: ({ url, args, values }) => ({
    kind: "produce",
    url,
    topic: args[0]!,
    keySeparator: separator(str(values, "key-separator")),
    headers: headerPairs(list(values, "header")),
    partition: intOption("--partition", str(values, "partition")),
  }),
  async run(cmd, { client, io }) {
    const stdin = io.stdin;
    // Like kafka-console-producer: a missing topic fails at once, also when stdin is empty.
    await client.describeTopic(cmd.topic);
    const producer = new Producer(client);
    const keySeparator = cmd.keySeparator === undefined ? undefined : encoder.encode(cmd.keySeparator);
    const headers = cmd.headers.map(([key, value]) => ({ key, value }));
    const splitter = new LineSplitter();
    const window: Promise<void>[] = [];
    let failure: unknown;
    const submit = async (lines: Uint8Array[]): Promise<void> => {
      const messages: Message[] = lines.map((line) => ({ ...lineToMessage(line, keySeparator), headers, partition: cmd.partition }));
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
  },
});
