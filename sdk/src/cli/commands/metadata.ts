/** `metadata` (also `-L`): topics, partitions, bounds and configs, like kcat -L. */
import type { TopicDescription } from "../../../../src/protocol/index.ts";
import { flag, JSON_OPTION, str, TOPIC_OPTION, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { displayName } from "../format.ts";

export interface MetadataCommand {
  kind: "metadata";
  url: string;
  /** Only this topic; all when absent. */
  topic: string | undefined;
  json: boolean;
}

export const metadata = defineCommand<MetadataCommand>({
  name: "metadata",
  usage:
    "  metadata [TOPIC | -t TOPIC] [-J]      (also: edgelog -L [-t TOPIC] [-J])\n" +
    "      Lists topics with, per partition, log start offset, high watermark, log end offset,\n" +
    "      record count and bytes, and the topic configs.\n",
  options: { topic: TOPIC_OPTION, json: JSON_OPTION },
  args: [],
  rest: "TOPIC",
  parse({ url, args, values }) {
    if (args.length > 1 || (args.length === 1 && str(values, "topic") !== undefined)) throw new UsageError("metadata: give one topic at most");
    return { kind: "metadata", url, topic: args[0] ?? str(values, "topic"), json: flag(values, "json") };
  },
  async run(cmd, { admin, out }) {
    const names = cmd.topic !== undefined ? [cmd.topic] : (await admin.listTopics()).map((t) => t.name);
    const topics = await Promise.all(names.map((name) => admin.describeTopic(name)));
    await out.write(cmd.json ? `${JSON.stringify({ topics }, null, 2)}\n` : formatMetadata(cmd.url, topics));
  },
});

/** kcat -L style text. */
export function formatMetadata(url: string, topics: readonly TopicDescription[]): string {
  const lines = [`Metadata from ${url}:`, ` ${topics.length} topic${topics.length === 1 ? "" : "s"}:`];
  for (const t of topics) {
    lines.push(`  topic "${displayName(t)}" with ${t.partitions} partition${t.partitions === 1 ? "" : "s"}:`);
    for (const p of t.partitionDetails) {
      lines.push(
        `    partition ${p.partition}, log start offset ${p.logStartOffset}, high watermark ${p.highWatermark}, log end offset ${p.logEndOffset}, ${p.recordCount} records, ${p.bytes} bytes`,
      );
    }
    lines.push(
      `    configs: ${Object.entries(t.configs)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}`,
    );
  }
  return `${lines.join("\n")}\n`;
}
