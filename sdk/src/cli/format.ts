/**
 * Output formats: record lines (raw or JSON) and the text tables of the admin commands. Pure.
 */
import { type GroupDescription, type ListGroupsResponse, type ResetOffsetsResponse, type TopicDescription, type TopicSummary, encodeBase64 } from "../../../src/protocol/index.ts";
import type { ConsumerRecord } from "../consumer.ts";
import { toText } from "../text.ts";
import { concat } from "./io.ts";

const encoder = new TextEncoder();
const NEWLINE = encoder.encode("\n");

/** Options of {@link formatRecord}. */
export interface FormatOptions {
  json: boolean;
  encoding: "string" | "base64";
  printKey: boolean;
  keySeparator: string;
}

/**
 * One output line (newline included). Plain: `[key SEP] value` as raw bytes, null printed as
 * nothing. JSON: `{partition, offset, timestamp, key, value, headers}` (the server's
 * JsonFetchedRecord shape), bytes as UTF-8 text or base64, null as null.
 */
export function formatRecord(r: ConsumerRecord, o: FormatOptions): Uint8Array {
  if (o.json) {
    const enc = (b: Uint8Array | null): string | null => (b === null ? null : o.encoding === "base64" ? encodeBase64(b) : toText(b));
    const line = JSON.stringify({
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      key: enc(r.key),
      value: enc(r.value),
      headers: r.headers.map((h) => ({ key: h.key, value: enc(h.value) })),
    });
    return encoder.encode(`${line}\n`);
  }
  const parts: Uint8Array[] = [];
  if (o.printKey) parts.push(r.key ?? new Uint8Array(0), encoder.encode(o.keySeparator));
  parts.push(r.value ?? new Uint8Array(0), NEWLINE);
  return concat(parts);
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
  const configs = `Configs: ${Object.entries(d.configs).map(([k, v]) => `${k}=${v}`).join(", ")}\n`;
  const table = formatTable(
    ["PARTITION", "LOG_START_OFFSET", "HIGH_WATERMARK", "LOG_END_OFFSET", "RECORDS", "BYTES"],
    d.partitionDetails.map((p) => [p.partition, p.logStartOffset, p.highWatermark, p.logEndOffset, p.recordCount, p.bytes]),
  );
  return head + configs + table;
}

/** `groups list` text. */
export function formatGroupList(r: ListGroupsResponse): string {
  return formatTable(["GROUP", "STATE", "ASSIGNOR", "MEMBERS"], r.groups.map((g) => [g.groupId, g.state, g.assignor, g.members]));
}

/** `groups describe` text, in the spirit of kafka-consumer-groups --describe. */
export function formatGroupDescription(d: GroupDescription): string {
  const head = `Group: ${d.groupId}\tState: ${d.state}\tAssignor: ${d.assignor} (${d.rebalanceProtocol})\tEpoch: ${d.groupEpoch}\tMembers: ${d.members.length}\tTotal lag: ${d.totalLag}\n`;
  const clientOf = new Map(d.members.map((m) => [m.memberId, m.clientId]));
  const dash = (v: number | string | null): string | number => (v === null || v === "" ? "-" : v);
  const offsets = formatTable(
    ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "CLIENT-ID"],
    d.offsets.map((o) => [displayTopicName(o.topic), o.partition, dash(o.committedOffset), dash(o.logEndOffset), dash(o.lag), dash(o.memberId), dash(o.memberId === null ? null : (clientOf.get(o.memberId) ?? null))]),
  );
  const members = formatTable(
    ["CONSUMER-ID", "INSTANCE-ID", "CLIENT-ID", "EPOCH", "STATE", "ASSIGNMENT"],
    d.members.map((m) => [m.memberId, dash(m.instanceId), dash(m.clientId), m.memberEpoch, m.state, m.assignment.map((a) => `${displayTopicName(a.topic)}:${a.partitions.join(",")}`).join(" ") || "-"]),
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

function displayTopicName(full: string): string {
  return full.startsWith("public/default/") ? full.slice("public/default/".length) : full;
}

