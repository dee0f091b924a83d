/**
 * Output formats: record lines (raw or JSON) and the text tables of the admin commands. Pure.
 */
import {
  type GroupDescription,
  type ListGroupsResponse,
  type ResetOffsetsResponse,
  type TopicDescription,
  type TopicSummary,
  encodeBase64,
  parseTopicName,
} from "../../../src/protocol/index.ts";
import type { ConsumerRecord } from "../consumer.ts";
import { toText } from "../text.ts";
import { UsageError, unescapeBytes } from "./args.ts";
import { concat } from "./io.ts";

const encoder = new TextEncoder();
const NEWLINE = encoder.encode("\n");

/** Options of {@link formatRecord}. */
export interface FormatOptions {
  json: boolean;
  encoding: "string" | "base64";
  printKey: boolean;
  /** kcat -K: printed between key and value, with the escapes of -D (kcat's -K takes them too). */
  keySeparator: string;
  /** A compiled `-f` format string: replaces the plain layout (and the delimiter). */
  format?: CompiledFormat | undefined;
  /** What follows each plain record. @default "\n" */
  delimiter?: Uint8Array | undefined;
  /** kcat -Z: print a null key or value as `NULL` (plain and `-f` output). @default false: as nothing */
  printNull?: boolean | undefined;
}

const NULL_TEXT = encoder.encode("NULL");

/** The topic name shown: short for `public/default`, else full. */
export function shownTopic(name: string): string {
  try {
    const t = parseTopicName(name);
    return t.tenant === "public" && t.namespace === "default" ? t.topic : t.full;
  } catch {
    return name;
  }
}

/**
 * One record's output. JSON: `{topic, partition, offset, timestamp, key, value, headers}` (the
 * server's JsonFetchedRecord shape plus the topic), bytes as UTF-8 text or base64, null as
 * null, then the delimiter (a newline by default, as kcat -J). `-f`: the format string alone. Plain: `[key SEP] value` as raw bytes, then the
 * delimiter (a newline by default); null as nothing, or `NULL` with printNull. A message of a
 * subscription (`subscribe`) adds `messageId` and `redeliveryCount` to the JSON object.
 */
export function formatRecord(r: ConsumerRecord & { messageId?: string; redeliveryCount?: number }, o: FormatOptions): Uint8Array {
  if (o.json) {
    const enc = (b: Uint8Array | null): string | null => (b === null ? null : o.encoding === "base64" ? encodeBase64(b) : toText(b));
    const line = JSON.stringify({
      topic: shownTopic(r.topic),
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      key: enc(r.key),
      value: enc(r.value),
      headers: r.headers.map((h) => ({ key: h.key, value: enc(h.value) })),
      ...(r.messageId === undefined ? {} : { messageId: r.messageId, redeliveryCount: r.redeliveryCount ?? 0 }),
    });
    return o.delimiter === undefined ? encoder.encode(`${line}\n`) : concat([encoder.encode(line), o.delimiter]);
  }
  if (o.format !== undefined) return o.format(r, o.printNull === true);
  const bytes = (b: Uint8Array | null): Uint8Array => b ?? (o.printNull === true ? NULL_TEXT : new Uint8Array(0));
  const parts: Uint8Array[] = [];
  if (o.printKey) parts.push(bytes(r.key), unescapeBytes(o.keySeparator));
  parts.push(bytes(r.value), o.delimiter ?? NEWLINE);
  return concat(parts);
}

/** A compiled `-f` format: the bytes of one record (printNull: null as `NULL`). */
export type CompiledFormat = (r: ConsumerRecord, printNull: boolean) => Uint8Array;

/**
 * Compiles a kcat `-f` format string. Tokens: `%t` topic, `%p` partition, `%o` offset, `%T`
 * timestamp (ms), `%k` key, `%K` key length, `%s` value, `%S` value length (-1 for null), `%R`
 * value length as a big-endian 32-bit integer, `%h` headers as `k=v,k=v` (a null header value
 * as `k`), `%%` a percent sign; escapes `\n \r \t \0 \\ \xHH`. Nothing is added after a
 * record: end the format with `\n` for lines.
 * @throws UsageError for an unknown `%` token.
 */
export function compileFormat(fmt: string): CompiledFormat {
  type Part = Uint8Array | ((r: ConsumerRecord, nul: Uint8Array) => Uint8Array);
  const parts: Part[] = [];
  let literal = "";
  const flush = (): void => {
    if (literal !== "") parts.push(unescapeBytes(literal));
    literal = "";
  };
  const text = (f: (r: ConsumerRecord) => string) => (r: ConsumerRecord) => encoder.encode(f(r));
  for (let i = 0; i < fmt.length; i++) {
    if (fmt[i] !== "%") {
      literal += fmt[i];
      continue;
    }
    const token = fmt[++i];
    if (token === "%") {
      literal += "%";
      continue;
    }
    flush();
    switch (token) {
      case "t":
        parts.push(text((r) => shownTopic(r.topic)));
        break;
      case "p":
        parts.push(text((r) => String(r.partition)));
        break;
      case "o":
        parts.push(text((r) => String(r.offset)));
        break;
      case "T":
        parts.push(text((r) => String(r.timestamp)));
        break;
      case "k":
        parts.push((r, nul) => r.key ?? nul);
        break;
      case "K":
        parts.push(text((r) => String(r.key === null ? -1 : r.key.length)));
        break;
      case "s":
        parts.push((r, nul) => r.value ?? nul);
        break;
      case "S":
        parts.push(text((r) => String(r.value === null ? -1 : r.value.length)));
        break;
      case "R":
        parts.push((r) => {
          const out = new Uint8Array(4);
          new DataView(out.buffer).setInt32(0, r.value === null ? -1 : r.value.length);
          return out;
        });
        break;
      case "h":
        parts.push((r) => concat(r.headers.flatMap((h, j) => [encoder.encode(`${j === 0 ? "" : ","}${h.key}${h.value === null ? "" : "="}`), h.value ?? new Uint8Array(0)])));
        break;
      default:
        throw new UsageError(`-f: unknown token %${token ?? ""} (use %t %p %o %T %k %K %s %S %R %h %%)`);
    }
  }
  flush();
  const empty = new Uint8Array(0);
  return (r, printNull) => concat(parts.map((p) => (p instanceof Uint8Array ? p : p(r, printNull ? NULL_TEXT : empty))));
}

/** Display name: the short name in public/default, else tenant/namespace/name. */
export function displayName(t: TopicSummary): string {
  return t.tenant === "public" && t.namespace === "default" ? t.topic : t.name;
}

/** Left-aligned text table with two spaces between columns. */
export function formatTable(header: readonly string[], rows: ReadonlyArray<readonly (string | number)[]>): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return `${cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n")}\n`;
}

/** `topics describe` text: a summary line, the configs, and one row per partition. */
export function formatDescription(d: TopicDescription): string {
  const head = `Topic: ${displayName(d)}\tName: ${d.name}\tTopicId: ${d.topicId}\tPartitions: ${d.partitions}\n`;
  const configs = `Configs: ${Object.entries(d.configs)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ")}\n`;
  // Policies with their sources (docs/TENANTS.md); absent from servers before tenants.
  const policies =
    d.policies === undefined
      ? ""
      : `Policies: ${Object.entries(d.policies)
          .map(([k, p]) => `${k}=${typeof p.value === "object" ? JSON.stringify(p.value) : p.value} (${p.source})`)
          .join(", ")}\n`;
  const table = formatTable(
    ["PARTITION", "LOG_START_OFFSET", "HIGH_WATERMARK", "LOG_END_OFFSET", "RECORDS", "BYTES"],
    d.partitionDetails.map((p) => [p.partition, p.logStartOffset, p.highWatermark, p.logEndOffset, p.recordCount, p.bytes]),
  );
  return head + configs + policies + table;
}

/** `groups list` text. */
export function formatGroupList(r: ListGroupsResponse): string {
  return formatTable(
    ["GROUP", "STATE", "ASSIGNOR", "MEMBERS"],
    r.groups.map((g) => [g.groupId, g.state, g.assignor, g.members]),
  );
}

/** `groups describe` text, in the spirit of kafka-consumer-groups --describe. */
export function formatGroupDescription(d: GroupDescription): string {
  const head = `Group: ${d.groupId}\tState: ${d.state}\tAssignor: ${d.assignor} (${d.rebalanceProtocol})\tEpoch: ${d.groupEpoch}\tMembers: ${d.members.length}\tTotal lag: ${d.totalLag}\n`;
  const clientOf = new Map(d.members.map((m) => [m.memberId, m.clientId]));
  const dash = (v: number | string | null): string | number => (v === null || v === "" ? "-" : v);
  const offsets = formatTable(
    ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "CLIENT-ID"],
    d.offsets.map((o) => [
      displayTopicName(o.topic),
      o.partition,
      dash(o.committedOffset),
      dash(o.logEndOffset),
      dash(o.lag),
      dash(o.memberId),
      dash(o.memberId === null ? null : (clientOf.get(o.memberId) ?? null)),
    ]),
  );
  const members = formatTable(
    ["CONSUMER-ID", "INSTANCE-ID", "CLIENT-ID", "EPOCH", "STATE", "ASSIGNMENT"],
    d.members.map((m) => [
      m.memberId,
      dash(m.instanceId),
      dash(m.clientId),
      m.memberEpoch,
      m.state,
      m.assignment.map((a) => `${displayTopicName(a.topic)}:${a.partitions.join(",")}`).join(" ") || "-",
    ]),
  );
  return `${head}\n${offsets}\n${members}`;
}

/** `groups reset-offsets` text. */
export function formatResetOffsets(r: ResetOffsetsResponse): string {
  const table = formatTable(
    ["TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"],
    r.offsets.map((o) => [displayTopicName(o.topic), o.partition, o.previousOffset ?? "-", o.offset]),
  );
  return table + (r.dryRun ? "Dry run: nothing written (use --execute).\n" : `Offsets of group ${r.groupId} reset.\n`);
}

/** A full topic name as shown: short for `public/default`. */
export function displayTopicName(full: string): string {
  return full.startsWith("public/default/") ? full.slice("public/default/".length) : full;
}
