/**
 * Pulsar-style subscriptions (docs/PROTOCOL.md "Subscriptions"): `subscriptions list | create |
 * delete | reset | skip | clear-backlog | stats` (pulsar-admin topics subscriptions,
 * create-subscription, unsubscribe, reset-cursor, skip, clear-backlog, stats) and `subscribe`
 * (pulsar-client consume: prints each message, then acks it).
 */
import { EdgelogError } from "../../../../src/protocol/index.ts";
import type { SubscriptionPosition, SubscriptionStats } from "../../admin.ts";
import { type SubscriptionMessage, type SubscriptionType, subscribe as openSubscription } from "../../subscription.ts";
import { flag, intOption, JSON_OPTION, PARTITION_OPTION, str, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { formatRecord, formatTable, shownTopic } from "../format.ts";
import { untilSignal } from "../io.ts";
import { formatOptions, parseRecordOutput, RECORD_OUTPUT_OPTIONS, type RecordOutput } from "./consume.ts";

export interface SubscribeCommand extends RecordOutput {
  kind: "subscribe";
  url: string;
  topic: string;
  subscription: string;
  /** @default "exclusive" (Pulsar's default) */
  type: SubscriptionType;
  /** Where a new subscription starts (an existing one keeps its cursor). @default "latest" */
  position: "earliest" | "latest" | { timestamp: number };
  /** Stop after this many messages; undefined: until Ctrl-C. */
  count: number | undefined;
}

export type SubscriptionsCommand =
  | { kind: "subscriptions list"; url: string; topic: string; json: boolean }
  | { kind: "subscriptions create"; url: string; topic: string; subscription: string; position: SubscriptionPosition | undefined; type: SubscriptionType | undefined; json: boolean }
  | { kind: "subscriptions delete"; url: string; topic: string; subscription: string; force: boolean }
  | { kind: "subscriptions reset"; url: string; topic: string; subscription: string; target: SubscriptionPosition; json: boolean }
  | { kind: "subscriptions skip"; url: string; topic: string; subscription: string; count: number; partition: number | undefined; json: boolean }
  | { kind: "subscriptions clear-backlog"; url: string; topic: string; subscription: string; json: boolean }
  | { kind: "subscriptions stats"; url: string; topic: string; subscription: string; json: boolean }
  | SubscribeCommand;

const SUBSCRIPTION_TYPES: readonly SubscriptionType[] = ["exclusive", "shared", "failover", "key_shared"];

/** `--type`: Edgelog's spelling or Pulsar's (`Shared`, `Key_Shared`), any case. @throws UsageError otherwise. */
export function subscriptionTypeArg(raw: string): SubscriptionType {
  const t = raw.toLowerCase().replace("-", "_") as SubscriptionType;
  if (!SUBSCRIPTION_TYPES.includes(t)) throw new UsageError(`--type must be one of ${SUBSCRIPTION_TYPES.join(", ")}, got ${JSON.stringify(raw)}`);
  return t;
}

/**
 * A position: `earliest`, `latest` (any case, as Pulsar's Earliest / Latest), a timestamp in ms,
 * an ISO 8601 date-time (`2026-01-31T12:00:00Z`; no zone: local time), or a message id
 * (`PPPP:OOOOOOOOOOOOOOOO`, as the server prints them). @throws UsageError for anything else.
 */
export function positionArg(option: string, raw: string): SubscriptionPosition {
  const lower = raw.toLowerCase();
  if (lower === "earliest" || lower === "latest") return lower;
  if (/^\d+$/.test(raw)) return { timestamp: intOption(option, raw)! };
  if (/^\d+:\d+$/.test(raw)) return { messageId: raw };
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isFinite(ms) && ms >= 0) return { timestamp: ms };
  throw new UsageError(`${option} expects earliest, latest, a timestamp in ms, an ISO 8601 date-time or a message id, got ${JSON.stringify(raw)}`);
}

/** How a position reads in messages. */
function shownPosition(p: SubscriptionPosition): string {
  if (typeof p === "string") return p;
  return "timestamp" in p ? `timestamp ${p.timestamp} (${new Date(p.timestamp).toISOString()})` : `message ${p.messageId}`;
}

/** A rate as printed: at most two decimals. */
function rate(x: number): string {
  return String(Number(x.toFixed(2)));
}

/** `[[4,5],[7,7]]` as `4-5,7`; none as `-`. */
function ranges(rs: readonly (readonly [number, number])[]): string {
  return rs.length === 0 ? "-" : rs.map(([a, b]) => (a === b ? String(a) : `${a}-${b}`)).join(",");
}

/** `subscriptions list` text: one row per subscription. */
export function formatSubscriptionList(subs: readonly SubscriptionStats[]): string {
  return formatTable(
    ["SUBSCRIPTION", "TYPE", "BACKLOG", "BACKLOG-BYTES", "UNACKED", "CONSUMERS"],
    subs.map((s) => [s.subscription, s.type ?? "-", s.backlog, s.backlogBytes, s.unacked, s.consumers]),
  );
}

/** `subscriptions stats` text: totals, one row per partition, and the connected consumers. */
export function formatSubscriptionStats(s: SubscriptionStats): string {
  const head =
    `Subscription: ${s.subscription}\tTopic: ${shownTopic(s.topic)}\tType: ${s.type ?? "-"}\tConsumers: ${s.consumers}\n` +
    `Backlog: ${s.backlog} (${s.backlogBytes} bytes)\tUnacked: ${s.unacked}\tDead-lettered: ${s.deadLetteredTotal}\n` +
    `Rates (msg/s, last 10 s): in ${rate(s.msgRateIn)}\tout ${rate(s.msgRateOut)}\tredelivered ${rate(s.msgRateRedeliver)}\n`;
  const partitions = formatTable(
    ["PARTITION", "MARK-DELETE", "ACKED-RANGES", "BACKLOG", "BACKLOG-BYTES", "UNACKED", "CONSUMERS"],
    s.partitions.map((p) => [p.partition, p.markDeletePosition, ranges(p.ackedRanges), p.backlog, p.backlogBytes, p.unacked, p.consumers.length]),
  );
  const consumers = s.partitions.flatMap((p) => p.consumers.map((c) => [p.partition, c.consumerId, c.consumerName, c.active ? "yes" : "no", c.permits, c.unacked]));
  const consumerTable = consumers.length === 0 ? "" : `\n${formatTable(["PARTITION", "CONSUMER-ID", "NAME", "ACTIVE", "PERMITS", "UNACKED"], consumers)}`;
  return head + partitions + consumerTable;
}

const JSON_OPTIONS = { json: JSON_OPTION } as const;

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export const subscriptionsList = defineCommand<Extract<SubscriptionsCommand, { kind: "subscriptions list" }>>({
  name: "subscriptions list",
  usage: "  subscriptions list TOPIC [--json]\n      Every subscription of the topic: type, backlog, unacked, consumers.\n",
  options: JSON_OPTIONS,
  args: ["TOPIC"],
  parse: ({ url, args, values }) => ({ kind: "subscriptions list", url, topic: args[0]!, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const subs = await admin.listSubscriptions(cmd.topic);
    await out.write(cmd.json ? json(subs) : formatSubscriptionList(subs));
  },
});

export const subscriptionsCreate = defineCommand<Extract<SubscriptionsCommand, { kind: "subscriptions create" }>>({
  name: "subscriptions create",
  usage:
    "  subscriptions create TOPIC SUB [--position earliest|latest|MS|ISO-8601|MESSAGE_ID]\n" +
    "                [--type exclusive|shared|failover|key_shared] [--json]\n" +
    "      A durable subscription on every partition, at the position (default latest). One that\n" +
    "      exists is left as it is (cursor and type).\n",
  options: { position: { type: "string" }, type: { type: "string" }, ...JSON_OPTIONS },
  args: ["TOPIC", "SUB"],
  parse({ url, args, values }) {
    const position = str(values, "position");
    const type = str(values, "type");
    return {
      kind: "subscriptions create",
      url,
      topic: args[0]!,
      subscription: args[1]!,
      position: position === undefined ? undefined : positionArg("--position", position),
      type: type === undefined ? undefined : subscriptionTypeArg(type),
      json: flag(values, "json"),
    };
  },
  async run(cmd, { admin, out }) {
    // The server answers 200 (unchanged) for an existing subscription; the Admin call does not
    // show the status, so ask first, to say which it was.
    let existed = true;
    try {
      await admin.getSubscriptionStats(cmd.topic, cmd.subscription);
    } catch (e) {
      if (!(e instanceof EdgelogError && e.code === "SUBSCRIPTION_NOT_FOUND")) throw e;
      existed = false;
    }
    const s = await admin.createSubscription(cmd.topic, cmd.subscription, {
      ...(cmd.type === undefined ? {} : { type: cmd.type }),
      ...(cmd.position === undefined ? {} : { initialPosition: cmd.position }),
    });
    if (cmd.json) return void (await out.write(json(s)));
    await out.write(
      existed
        ? `Subscription ${s.subscription} of ${shownTopic(s.topic)} exists: unchanged (backlog ${s.backlog}).\n`
        : `Created subscription ${s.subscription} (${s.type ?? "-"}) of ${shownTopic(s.topic)} at ${shownPosition(cmd.position ?? "latest")}: backlog ${s.backlog}.\n`,
    );
  },
});

export const subscriptionsDelete = defineCommand<Extract<SubscriptionsCommand, { kind: "subscriptions delete" }>>({
  name: "subscriptions delete",
  usage: "  subscriptions delete TOPIC SUB [--force]\n" + "      Refused (SUBSCRIPTION_HAS_CONSUMERS) while consumers are connected, unless --force,\n" + "      which disconnects them.\n",
  options: { force: { type: "boolean" } },
  args: ["TOPIC", "SUB"],
  parse: ({ url, args, values }) => ({ kind: "subscriptions delete", url, topic: args[0]!, subscription: args[1]!, force: flag(values, "force") }),
  async run(cmd, { admin, out }) {
    await admin.deleteSubscription(cmd.topic, cmd.subscription, { force: cmd.force });
    await out.write(`Deleted subscription ${cmd.subscription} of ${shownTopic(cmd.topic)}.\n`);
  },
});

export const subscriptionsReset = defineCommand<Extract<SubscriptionsCommand, { kind: "subscriptions reset" }>>({
  name: "subscriptions reset",
  usage:
    "  subscriptions reset TOPIC SUB --to earliest|latest|MS|ISO-8601|MESSAGE_ID [--json]\n" +
    "      Moves the cursor (Pulsar's reset-cursor): a timestamp on every partition, a message id\n" +
    "      on its partition (that message comes next). Connected consumers resume there.\n",
  options: { to: { type: "string" }, ...JSON_OPTIONS },
  args: ["TOPIC", "SUB"],
  parse({ url, args, values }) {
    const to = str(values, "to");
    if (to === undefined) throw new UsageError("subscriptions reset: --to is required (earliest, latest, a timestamp or a message id)");
    return { kind: "subscriptions reset", url, topic: args[0]!, subscription: args[1]!, target: positionArg("--to", to), json: flag(values, "json") };
  },
  async run(cmd, { admin, out }) {
    const s = await admin.resetCursor(cmd.topic, cmd.subscription, cmd.target);
    await out.write(cmd.json ? json(s) : `Reset subscription ${s.subscription} of ${shownTopic(s.topic)} to ${shownPosition(cmd.target)}: backlog ${s.backlog}.\n`);
  },
});

export const subscriptionsSkip = defineCommand<Extract<SubscriptionsCommand, { kind: "subscriptions skip" }>>({
  name: "subscriptions skip",
  usage: "  subscriptions skip TOPIC SUB N [-p PARTITION] [--json]\n      Acks the next N unacked messages of one partition (default 0).\n",
  options: { partition: PARTITION_OPTION, ...JSON_OPTIONS },
  args: ["TOPIC", "SUB", "N"],
  parse({ url, args, values }) {
    const count = intOption("N", args[2]!)!;
    if (count === 0) throw new UsageError("subscriptions skip: N must be at least 1");
    return {
      kind: "subscriptions skip",
      url,
      topic: args[0]!,
      subscription: args[1]!,
      count,
      partition: intOption("--partition", str(values, "partition")),
      json: flag(values, "json"),
    };
  },
  async run(cmd, { admin, out }) {
    const s = await admin.skipMessages(cmd.topic, cmd.subscription, cmd.count, cmd.partition === undefined ? {} : { partition: cmd.partition });
    await out.write(cmd.json ? json(s) : `Skipped ${s.skipped} message(s) of subscription ${s.subscription} on partition ${cmd.partition ?? 0}: backlog ${s.backlog}.\n`);
  },
});

export const subscriptionsClearBacklog = defineCommand<Extract<SubscriptionsCommand, { kind: "subscriptions clear-backlog" }>>({
  name: "subscriptions clear-backlog",
  usage: "  subscriptions clear-backlog TOPIC SUB [--json]\n      Acks everything up to the log end on every partition.\n",
  options: JSON_OPTIONS,
  args: ["TOPIC", "SUB"],
  parse: ({ url, args, values }) => ({ kind: "subscriptions clear-backlog", url, topic: args[0]!, subscription: args[1]!, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const s = await admin.clearBacklog(cmd.topic, cmd.subscription);
    await out.write(cmd.json ? json(s) : `Cleared ${s.cleared} message(s) of subscription ${s.subscription}: backlog ${s.backlog}.\n`);
  },
});

export const subscriptionsStats = defineCommand<Extract<SubscriptionsCommand, { kind: "subscriptions stats" }>>({
  name: "subscriptions stats",
  usage:
    "  subscriptions stats TOPIC SUB [--json]\n" +
    "      Backlog (messages, bytes), unacked, rates, and per partition the mark-delete position,\n" +
    "      the acked ranges above it and the consumers with their permits.\n",
  options: JSON_OPTIONS,
  args: ["TOPIC", "SUB"],
  parse: ({ url, args, values }) => ({ kind: "subscriptions stats", url, topic: args[0]!, subscription: args[1]!, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const s = await admin.getSubscriptionStats(cmd.topic, cmd.subscription);
    await out.write(cmd.json ? json(s) : formatSubscriptionStats(s));
  },
});

/** Most permits `subscribe -n N` asks for per partition: no more messages in flight than it will print. */
const MAX_RECEIVER_QUEUE = 1000;

export const subscribe = defineCommand<SubscribeCommand>({
  name: "subscribe",
  usage:
    "  subscribe TOPIC -s SUB [-t exclusive|shared|failover|key_shared] [-n COUNT]\n" +
    "            [--position earliest|latest|MS|ISO-8601] [-J [--encoding string|base64] | -f FORMAT]\n" +
    "            [--print-key] [-K SEP] [-D DELIM] [-Z]\n" +
    "      Consumes subscription SUB (pulsar-client consume): prints each message as consume does\n" +
    "      (-J adds messageId and redeliveryCount), then acks it. Runs until COUNT messages or\n" +
    "      Ctrl-C, then waits for the acks' durable commit. -t, --type: the subscription type\n" +
    "      (default exclusive); --position: where a new subscription starts (default latest).\n" +
    "      Exit 1 if an ack was not confirmed (that message is delivered again).\n",
  options: {
    subscription: { type: "string", short: "s" },
    type: { type: "string" },
    n: { type: "string", short: "n" },
    position: { type: "string" },
    ...RECORD_OUTPUT_OPTIONS,
  },
  args: ["TOPIC"],
  parse({ url, args, values }) {
    const subscription = str(values, "subscription");
    if (subscription === undefined || subscription === "") throw new UsageError("subscribe: -s SUB is required");
    const type = str(values, "type");
    const count = intOption("-n", str(values, "n"));
    if (count === 0) throw new UsageError("-n must be at least 1");
    const positionRaw = str(values, "position");
    const position = positionRaw === undefined ? "latest" : positionArg("--position", positionRaw);
    if (typeof position === "object" && "messageId" in position)
      throw new UsageError("subscribe: --position takes earliest, latest or a timestamp (use subscriptions reset for a message id)");
    return {
      kind: "subscribe",
      url,
      topic: args[0]!,
      subscription,
      type: type === undefined ? "exclusive" : subscriptionTypeArg(type),
      position,
      count,
      ...parseRecordOutput("subscribe", values),
    };
  },
  async run(cmd, { client, out, io }) {
    const consumer = await openSubscription(client, {
      topic: cmd.topic,
      subscription: cmd.subscription,
      type: cmd.type,
      initialPosition: cmd.position,
      ...(cmd.count === undefined ? {} : { receiverQueueSize: Math.min(cmd.count, MAX_RECEIVER_QUEUE) }),
    });
    const { stopped, dispose } = untilSignal();
    const format = formatOptions(cmd);
    const acks = new Set<Promise<void>>();
    let unconfirmed = 0;
    let printed = 0;
    try {
      while (cmd.count === undefined || printed < cmd.count) {
        const m: SubscriptionMessage | null = await Promise.race([consumer.receive(), stopped]);
        if (m === null) break;
        // Printed first, acked after: a message that could not be printed is delivered again.
        await out.write(formatRecord({ ...m, topic: cmd.topic }, format));
        printed++;
        const ack: Promise<void> = consumer.acknowledge(m).then(
          () => void acks.delete(ack),
          (e: unknown) => {
            acks.delete(ack);
            unconfirmed++;
            io.stderr.write(`edgelog: the ack of ${m.messageId} failed (${e instanceof EdgelogError ? e.code : String(e)}): it will be delivered again\n`);
          },
        );
        acks.add(ack);
      }
    } finally {
      // Acks resolve after the server's durable commit (one per flush interval): wait for them
      // before closing, else a closed socket would hand the messages to the next consumer.
      await Promise.all(acks);
      consumer.close();
      dispose();
    }
    if (unconfirmed > 0) throw new Error(`${unconfirmed} ack(s) not confirmed: those messages will be delivered again`);
  },
});
