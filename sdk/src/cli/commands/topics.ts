/**
 * `topics list | create | describe | alter | delete | delete-records | elect-leader | reassign`
 * (kafka-topics, kafka-delete-records, kafka-leader-election, kafka-reassign-partitions).
 */
import { EdgelogError } from "../../../../src/protocol/index.ts";
import type { TopicConfigInput } from "../../admin.ts";
import { flag, intOption, JSON_OPTION, keyValues, list, PARTITION_OPTION, str, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { displayName, formatDescription } from "../format.ts";

const JSON_OPTIONS = { json: JSON_OPTION } as const;
const CHANGE_OPTIONS = { partitions: { type: "string" }, config: { type: "string", multiple: true } } as const;

export type TopicsCommand =
  | { kind: "topics list"; url: string; json: boolean }
  | { kind: "topics create"; url: string; name: string; partitions: number | undefined; configs: Record<string, string>; ifNotExists?: boolean | undefined }
  | { kind: "topics describe"; url: string; name: string; json: boolean }
  | { kind: "topics alter"; url: string; name: string; partitions: number | undefined; configs: Record<string, string> }
  | { kind: "topics delete"; url: string; name: string }
  | { kind: "topics delete-records"; url: string; name: string; partition: number; offset: number }
  | { kind: "topics elect-leader"; url: string; name: string; partition: number; replica: string }
  | { kind: "topics reassign"; url: string; name: string; partition: number; replace: string; location?: string };

const plural = (n: number): string => `${n} partition${n === 1 ? "" : "s"}`;

export const topicsList = defineCommand<Extract<TopicsCommand, { kind: "topics list" }>>({
  name: "topics list",
  usage: "  topics list [--json]\n",
  options: JSON_OPTIONS,
  args: [],
  parse: ({ url, values }) => ({ kind: "topics list", url, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const topics = await admin.listTopics();
    await out.write(cmd.json ? `${JSON.stringify(topics, null, 2)}\n` : topics.map((t) => `${displayName(t)}\n`).join(""));
  },
});

export const topicsCreate = defineCommand<Extract<TopicsCommand, { kind: "topics create" }>>({
  name: "topics create",
  usage: "  topics create NAME [--partitions N] [--config k=v ...] [--if-not-exists]\n      --if-not-exists: an existing topic is success (kafka-topics), left as it is.\n",
  options: { ...CHANGE_OPTIONS, "if-not-exists": { type: "boolean" } },
  args: ["NAME"],
  parse: ({ url, args, values }) => ({
    kind: "topics create",
    url,
    name: args[0]!,
    partitions: intOption("--partitions", str(values, "partitions")),
    configs: keyValues("--config", list(values, "config")),
    ifNotExists: flag(values, "if-not-exists") || undefined,
  }),
  async run(cmd, { admin, out }) {
    try {
      const d = await admin.createTopic({ name: cmd.name, partitions: cmd.partitions, configs: cmd.configs as TopicConfigInput });
      await out.write(`Created topic ${displayName(d)} with ${plural(d.partitions)}.\n`);
    } catch (e) {
      if (!(cmd.ifNotExists === true && e instanceof EdgelogError && e.code === "TOPIC_ALREADY_EXISTS")) throw e;
      await out.write(`Topic ${cmd.name} already exists.\n`);
    }
  },
});

export const topicsDescribe = defineCommand<Extract<TopicsCommand, { kind: "topics describe" }>>({
  name: "topics describe",
  usage: "  topics describe NAME [--json]\n",
  options: JSON_OPTIONS,
  args: ["NAME"],
  parse: ({ url, args, values }) => ({ kind: "topics describe", url, name: args[0]!, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const d = await admin.describeTopic(cmd.name);
    await out.write(cmd.json ? `${JSON.stringify(d, null, 2)}\n` : formatDescription(d));
  },
});

export const topicsAlter = defineCommand<Extract<TopicsCommand, { kind: "topics alter" }>>({
  name: "topics alter",
  usage: "  topics alter NAME [--partitions N] [--config k=v ...]\n",
  options: CHANGE_OPTIONS,
  args: ["NAME"],
  parse({ url, args, values }) {
    const partitions = intOption("--partitions", str(values, "partitions"));
    const configs = keyValues("--config", list(values, "config"));
    if (partitions === undefined && Object.keys(configs).length === 0) throw new UsageError("topics alter: give --partitions and/or --config");
    return { kind: "topics alter", url, name: args[0]!, partitions, configs };
  },
  async run(cmd, { admin, out }) {
    const changes = {
      ...(cmd.partitions === undefined ? {} : { partitions: cmd.partitions }),
      ...(Object.keys(cmd.configs).length === 0 ? {} : { configs: cmd.configs as TopicConfigInput }),
    };
    const d = await admin.alterTopic(cmd.name, changes);
    await out.write(`Altered topic ${displayName(d)}: ${plural(d.partitions)}.\n`);
  },
});

export const topicsDeleteRecords = defineCommand<Extract<TopicsCommand, { kind: "topics delete-records" }>>({
  name: "topics delete-records",
  usage: "  topics delete-records NAME --partition P --before O\n      Deletes the records before offset O (-1 = the high watermark) of partition P (KIP-107).\n",
  options: { partition: PARTITION_OPTION, before: { type: "string" } },
  args: ["NAME"],
  parse({ url, args, values }) {
    const partition = intOption("--partition", str(values, "partition"));
    const raw = str(values, "before");
    if (partition === undefined || raw === undefined) throw new UsageError("topics delete-records: give --partition and --before");
    // -1 is allowed (the high watermark), so not intOption (non-negative).
    if (!/^-?(0|[1-9][0-9]*)$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new UsageError(`--before must be an integer, got ${JSON.stringify(raw)}`);
    return { kind: "topics delete-records", url, name: args[0]!, partition, offset: Number(raw) };
  },
  async run(cmd, { admin, out }) {
    const low = await admin.deleteRecords(cmd.name, { [cmd.partition]: cmd.offset });
    await out.write(`Partition ${cmd.partition} of ${cmd.name}: log start offset ${low[cmd.partition]}.\n`);
  },
});

export const topicsElectLeader = defineCommand<Extract<TopicsCommand, { kind: "topics elect-leader" }>>({
  name: "topics elect-leader",
  usage: "  topics elect-leader NAME --partition P --replica rN\n      Makes replica rN the leader of partition P of a replicated topic (leadership transfer; kafka-leader-election).\n",
  options: { partition: PARTITION_OPTION, replica: { type: "string" } },
  args: ["NAME"],
  parse({ url, args, values }) {
    const partition = intOption("--partition", str(values, "partition"));
    const replica = str(values, "replica");
    if (partition === undefined || replica === undefined) throw new UsageError("topics elect-leader: give --partition and --replica");
    if (!/^r[1-9][0-9]{0,3}$/.test(replica)) throw new UsageError(`--replica must be a replica id such as r2, got ${JSON.stringify(replica)}`);
    return { kind: "topics elect-leader", url, name: args[0]!, partition, replica };
  },
  async run(cmd, { admin, out }) {
    const r = await admin.transferLeadership(cmd.name, cmd.partition, cmd.replica);
    const what = r.transferred ? "is now led by" : "was already led by";
    await out.write(`Partition ${cmd.partition} of ${cmd.name} ${what} ${r.leaderReplica} (leader epoch ${r.leaderEpoch}).\n`);
  },
});

export const topicsReassign = defineCommand<Extract<TopicsCommand, { kind: "topics reassign" }>>({
  name: "topics reassign",
  usage:
    "  topics reassign NAME --partition P --replace rN [--location HINT]\n      Replaces replica rN of partition P of a replicated topic by a new replica (at location hint HINT) (kafka-reassign-partitions).\n",
  options: { partition: PARTITION_OPTION, replace: { type: "string" }, location: { type: "string" } },
  args: ["NAME"],
  parse({ url, args, values }) {
    const partition = intOption("--partition", str(values, "partition"));
    const replace = str(values, "replace");
    const location = str(values, "location");
    if (partition === undefined || replace === undefined) throw new UsageError("topics reassign: give --partition and --replace");
    if (!/^r[1-9][0-9]{0,3}$/.test(replace)) throw new UsageError(`--replace must be a replica id such as r2, got ${JSON.stringify(replace)}`);
    return { kind: "topics reassign", url, name: args[0]!, partition, replace, ...(location === undefined ? {} : { location }) };
  },
  async run(cmd, { admin, out }) {
    const r = await admin.reassignReplica(cmd.name, cmd.partition, cmd.replace, cmd.location);
    await out.write(
      `Partition ${cmd.partition} of ${cmd.name}: ${r.added} replaced ${r.removed}; replicas ${r.replicas.join(", ")}, led by ${r.leaderReplica} (leader epoch ${r.leaderEpoch}).\n`,
    );
  },
});

export const topicsDelete = defineCommand<Extract<TopicsCommand, { kind: "topics delete" }>>({
  name: "topics delete",
  usage: "  topics delete NAME\n",
  options: {},
  args: ["NAME"],
  parse: ({ url, args }) => ({ kind: "topics delete", url, name: args[0]! }),
  async run(cmd, { admin, out }) {
    await admin.deleteTopic(cmd.name);
    await out.write(`Deleted topic ${cmd.name}.\n`);
  },
});
