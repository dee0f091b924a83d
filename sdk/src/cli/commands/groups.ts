/** `groups list | describe | reset-offsets | delete` (kafka-consumer-groups). */
import type { ResetOffsetsSpec } from "../../../../src/protocol/index.ts";
import { flag, intOption, str, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { formatGroupDescription, formatGroupList, formatResetOffsets } from "../format.ts";

export type GroupsCommand =
  | { kind: "groups list"; url: string; json: boolean }
  | { kind: "groups describe"; url: string; group: string; json: boolean }
  | { kind: "groups delete"; url: string; group: string }
  | { kind: "groups reset-offsets"; url: string; group: string; topic: string; partition: number | undefined; spec: ResetOffsetsSpec; execute: boolean };

export const groupsList = defineCommand<Extract<GroupsCommand, { kind: "groups list" }>>({
  name: "groups list",
  usage: "  groups list [--json]\n",
  options: { json: { type: "boolean" } },
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
  options: { json: { type: "boolean" } },
  args: ["GROUP"],
  parse: ({ url, args, values }) => ({ kind: "groups describe", url, group: args[0]!, json: flag(values, "json") }),
  async run(cmd, { client, out }) {
    const d = await client.describeGroup(cmd.group);
    await out.write(cmd.json ? `${JSON.stringify(d, null, 2)}\n` : formatGroupDescription(d));
  },
});

export const groupsResetOffsets = defineCommand<Extract<GroupsCommand, { kind: "groups reset-offsets" }>>({
  name: "groups reset-offsets",
  usage:
    "  groups reset-offsets GROUP --topic TOPIC [--partition N]\n" +
    "                (--to-earliest | --to-latest | --to-offset N | --to-timestamp MS) [--execute]\n" +
    "      Only while the group has no members. Shows the new offsets; writes them with --execute.\n",
  options: {
    topic: { type: "string" },
    partition: { type: "string" },
    "to-earliest": { type: "boolean" },
    "to-latest": { type: "boolean" },
    "to-offset": { type: "string" },
    "to-timestamp": { type: "string" },
    execute: { type: "boolean" },
  },
  args: ["GROUP"],
  parse({ url, args, values }) {
    const topic = str(values, "topic");
    if (topic === undefined) throw new UsageError("groups reset-offsets: --topic is required");
    const specs: ResetOffsetsSpec[] = [];
    if (flag(values, "to-earliest")) specs.push({ to: "earliest" });
    if (flag(values, "to-latest")) specs.push({ to: "latest" });
    const toOffset = intOption("--to-offset", str(values, "to-offset"));
    if (toOffset !== undefined) specs.push({ to: "offset", offset: toOffset });
    const toTimestamp = intOption("--to-timestamp", str(values, "to-timestamp"));
    if (toTimestamp !== undefined) specs.push({ to: "timestamp", timestamp: toTimestamp });
    if (specs.length !== 1) throw new UsageError("groups reset-offsets: give exactly one of --to-earliest, --to-latest, --to-offset, --to-timestamp");
    return { kind: "groups reset-offsets", url, group: args[0]!, topic, partition: intOption("--partition", str(values, "partition")), spec: specs[0]!, execute: flag(values, "execute") };
  },
  async run(cmd, { client, out }) {
    const r = await client.resetOffsets(cmd.group, {
      topics: [{ topic: cmd.topic, partitions: cmd.partition === undefined ? null : [cmd.partition] }],
      spec: cmd.spec,
      dryRun: !cmd.execute,
    });
    await out.write(formatResetOffsets(r));
  },
});

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
