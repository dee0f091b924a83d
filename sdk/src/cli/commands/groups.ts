/** `groups list | describe | reset-offsets | delete` (kafka-consumer-groups). */
import { parseTopicName, type ResetOffsetsSpec } from "../../../../src/protocol/index.ts";
import { flag, intOption, JSON_OPTION, PARTITION_OPTION, str, TOPIC_OPTION, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { displayTopicName, formatGroupDescription, formatGroupList, formatResetOffsets } from "../format.ts";

export type GroupsCommand =
  | { kind: "groups list"; url: string; json: boolean }
  | { kind: "groups describe"; url: string; group: string; json: boolean }
  | { kind: "groups delete"; url: string; group: string }
  | {
      kind: "groups reset-offsets";
      url: string;
      group: string;
      /** undefined: --all-topics */
      topic: string | undefined;
      partition: number | undefined;
      /** From --partition or --topic TOPIC:P,P; undefined: every partition. */
      partitions?: number[] | undefined;
      spec: ResetTarget;
      execute: boolean;
    };

export const groupsList = defineCommand<Extract<GroupsCommand, { kind: "groups list" }>>({
  name: "groups list",
  usage: "  groups list [--json]\n",
  options: { json: JSON_OPTION },
  args: [],
  parse: ({ url, values }) => ({ kind: "groups list", url, json: flag(values, "json") }),
  async run(cmd, { client, out }) {
    const r = await client.listGroups();
    await out.write(cmd.json ? `${JSON.stringify(r, null, 2)}\n` : formatGroupList(r));
  },
});

export const groupsDescribe = defineCommand<Extract<GroupsCommand, { kind: "groups describe" }>>({
  name: "groups describe",
  usage: "  groups describe GROUP [--json]\n      State, members and, per partition, committed offset, log end offset and lag.\n",
  options: { json: JSON_OPTION },
  args: ["GROUP"],
  parse: ({ url, args, values }) => ({ kind: "groups describe", url, group: args[0]!, json: flag(values, "json") }),
  async run(cmd, { client, out }) {
    const d = await client.describeGroup(cmd.group);
    await out.write(cmd.json ? `${JSON.stringify(d, null, 2)}\n` : formatGroupDescription(d));
  },
});

/** What `groups reset-offsets` moves the offsets to (kafka-consumer-groups --reset-offsets). */
export type ResetTarget =
  | ResetOffsetsSpec
  /** --shift-by N: committed offset + N (N may be negative), clamped by the server to the log. */
  | { to: "shift"; by: number }
  /** --to-current: the committed offsets again (a no-op Kafka offers for scripts). */
  | { to: "current" };

export const groupsResetOffsets = defineCommand<Extract<GroupsCommand, { kind: "groups reset-offsets" }>>({
  name: "groups reset-offsets",
  usage:
    "  groups reset-offsets GROUP (--topic TOPIC[:P,P...] | --all-topics) [--partition N]\n" +
    "                (--to-earliest | --to-latest | --to-offset N | --to-timestamp MS |\n" +
    "                 --to-datetime ISO-8601 | --by-duration PnDTnHnMnS | --shift-by [-]N |\n" +
    "                 --to-current) [--dry-run | --execute]\n" +
    "      Only while the group has no members. Shows the new offsets; writes them with --execute.\n" +
    "      Offsets are clamped to [log start offset, log end offset]. --shift-by and --to-current\n" +
    "      apply to partitions with a committed offset; --all-topics to the group's topics.\n",
  options: {
    topic: TOPIC_OPTION,
    "all-topics": { type: "boolean" },
    partition: PARTITION_OPTION,
    "to-earliest": { type: "boolean" },
    "to-latest": { type: "boolean" },
    "to-offset": { type: "string" },
    "to-timestamp": { type: "string" },
    "to-datetime": { type: "string" },
    "by-duration": { type: "string" },
    "shift-by": { type: "string" },
    "to-current": { type: "boolean" },
    "dry-run": { type: "boolean" },
    execute: { type: "boolean" },
  },
  args: ["GROUP"],
  parse({ url, args, values }) {
    const topicArg = str(values, "topic");
    if (topicArg === undefined && !flag(values, "all-topics")) throw new UsageError("groups reset-offsets: --topic is required");
    if (topicArg !== undefined && flag(values, "all-topics")) throw new UsageError("groups reset-offsets: use only one of --topic and --all-topics");
    let topic = topicArg;
    let partitions: number[] | undefined;
    if (topicArg?.includes(":")) {
      // Kafka's --topic t:0,1 form (':' cannot occur in a topic name).
      const [name, list] = [topicArg.slice(0, topicArg.indexOf(":")), topicArg.slice(topicArg.indexOf(":") + 1)];
      partitions = list.split(",").map((p) => intOption("--topic partition", p)!);
      topic = name;
    }
    const partition = intOption("--partition", str(values, "partition"));
    if (partition !== undefined) {
      if (partitions !== undefined) throw new UsageError("groups reset-offsets: use only one of --partition and --topic TOPIC:PARTITIONS");
      partitions = [partition];
    }
    if (partitions !== undefined && topic === undefined) throw new UsageError("groups reset-offsets: --partition needs --topic");
    const specs: ResetTarget[] = [];
    if (flag(values, "to-earliest")) specs.push({ to: "earliest" });
    if (flag(values, "to-latest")) specs.push({ to: "latest" });
    if (flag(values, "to-current")) specs.push({ to: "current" });
    const toOffset = intOption("--to-offset", str(values, "to-offset"));
    if (toOffset !== undefined) specs.push({ to: "offset", offset: toOffset });
    const toTimestamp = intOption("--to-timestamp", str(values, "to-timestamp"));
    if (toTimestamp !== undefined) specs.push({ to: "timestamp", timestamp: toTimestamp });
    const datetime = str(values, "to-datetime");
    if (datetime !== undefined) specs.push({ to: "timestamp", timestamp: parseDatetime(datetime) });
    const duration = str(values, "by-duration");
    if (duration !== undefined) specs.push({ to: "timestamp", timestamp: Date.now() - parseDurationMs(duration) });
    const shift = str(values, "shift-by");
    if (shift !== undefined) {
      if (!/^[-+]?\d+$/.test(shift) || !Number.isSafeInteger(Number(shift))) throw new UsageError(`--shift-by must be an integer, got ${JSON.stringify(shift)}`);
      specs.push({ to: "shift", by: Number(shift) });
    }
    if (specs.length !== 1)
      throw new UsageError("groups reset-offsets: give exactly one of --to-earliest, --to-latest, --to-offset, --to-timestamp, --to-datetime, --by-duration, --shift-by, --to-current");
    if (flag(values, "dry-run") && flag(values, "execute")) throw new UsageError("groups reset-offsets: use only one of --dry-run and --execute");
    return { kind: "groups reset-offsets", url, group: args[0]!, topic, partition, partitions, spec: specs[0]!, execute: flag(values, "execute") };
  },
  async run(cmd, { client, out, io }) {
    const dryRun = !cmd.execute;
    const spec = cmd.spec;
    if (spec.to !== "shift" && spec.to !== "current" && cmd.topic !== undefined) {
      const r = await client.resetOffsets(cmd.group, { topics: [{ topic: cmd.topic, partitions: cmd.partitions ?? null }], spec, dryRun });
      await out.write(formatResetOffsets(r));
      return;
    }
    // Per-partition targets (or every topic of the group): from the group's committed offsets.
    const d = await client.describeGroup(cmd.group);
    const wanted = cmd.topic === undefined ? null : parseTopicName(cmd.topic).full;
    const selected = d.offsets.filter((o) => (wanted === null || o.topic === wanted) && (cmd.partitions === undefined || cmd.partitions.includes(o.partition)));
    if (spec.to !== "shift" && spec.to !== "current") {
      const topics = [...new Set(selected.map((o) => o.topic))].map((topic) => ({ topic, partitions: null }));
      const r = topics.length === 0 ? { groupId: cmd.group, dryRun, offsets: [] } : await client.resetOffsets(cmd.group, { topics, spec, dryRun });
      await out.write(formatResetOffsets(r));
      return;
    }
    const byTarget = new Map<number, Map<string, number[]>>();
    for (const o of selected) {
      if (o.committedOffset === null) {
        io.stderr.write(`edgelog: ${displayTopicName(o.topic)} partition ${o.partition} has no committed offset: skipped\n`);
        continue;
      }
      const target = Math.max(0, o.committedOffset + (spec.to === "shift" ? spec.by : 0));
      const topics = byTarget.get(target) ?? new Map<string, number[]>();
      topics.set(o.topic, [...(topics.get(o.topic) ?? []), o.partition]);
      byTarget.set(target, topics);
    }
    const answers = await Promise.all(
      [...byTarget].map(([offset, topics]) =>
        client.resetOffsets(cmd.group, { topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })), spec: { to: "offset", offset }, dryRun }),
      ),
    );
    const offsets = answers.flatMap((a) => a.offsets).sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
    await out.write(formatResetOffsets({ groupId: cmd.group, dryRun, offsets }));
  },
});

/** Kafka's --to-datetime: ISO 8601 (`2026-01-31T12:00:00.000`, optionally with a zone; none: local time). */
export function parseDatetime(raw: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms)) throw new UsageError(`--to-datetime expects YYYY-MM-DDTHH:mm:SS[.sss][zone], got ${JSON.stringify(raw)}`);
  return ms;
}

/** Kafka's --by-duration: ISO 8601 `PnDTnHnMnS` (seconds may have a fraction), in ms. */
export function parseDurationMs(raw: string): number {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(raw);
  if (m === null || raw === "P" || raw.endsWith("T")) throw new UsageError(`--by-duration expects PnDTnHnMnS, got ${JSON.stringify(raw)}`);
  const [d, h, min, s] = [m[1], m[2], m[3], m[4]].map((x) => Number(x ?? 0));
  return Math.round((((d! * 24 + h!) * 60 + min!) * 60 + s!) * 1000);
}

export const groupsDelete = defineCommand<Extract<GroupsCommand, { kind: "groups delete" }>>({
  name: "groups delete",
  usage: "  groups delete GROUP\n",
  options: {},
  args: ["GROUP"],
  parse: ({ url, args }) => ({ kind: "groups delete", url, group: args[0]! }),
  async run(cmd, { client, out }) {
    await client.deleteGroup(cmd.group);
    await out.write(`Deleted group ${cmd.group}.\n`);
  },
});
