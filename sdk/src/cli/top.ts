/**
 * The pure core of `edgelog top` (commands/top.ts is the shell): samples taken from the
 * gateway's `/v1/metrics` (docs/OBSERVABILITY.md) or a group's describe, rates from the deltas
 * of two samples, and one frame of text or JSON. No I/O and no clock: the shell passes times.
 *
 * Rates are counter deltas over the time between two samples. A partition's counters restart
 * at 0 when its object restarts (`edgelog_partition_start_time_seconds` changes); a rate across
 * such a restart is unknown (`null`, shown as `-`) rather than negative, as Prometheus' rate()
 * treats a counter reset. A group's rate is the rise of its committed offsets: records
 * consumed and committed per second.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import type { GroupDescription } from "../../../src/protocol/index.ts";
import { displayTopicName, formatTable } from "./format.ts";
import { formatBytes, formatCount } from "./progress.ts";

/** One partition as a scrape shows it (families `edgelog_partition_*`). */
export interface PartitionSample {
  /** Full topic name (`tenant/namespace/topic`). */
  topic: string;
  partition: number;
  logStartOffset: number;
  logEndOffset: number;
  /** Retained offsets: log end offset minus log start offset. */
  records: number;
  sizeBytes: number;
  recordsIn: number;
  bytesIn: number;
  recordsOut: number;
  bytesOut: number;
  waiters: number;
  /** When the partition object's counters started, Unix seconds. */
  startTimeSeconds: number;
}

/** The partitions of one scrape, in topic, partition order. */
export interface TopicsSample {
  atMs: number;
  partitions: PartitionSample[];
  /** Partitions the scrape failed to read or left out (`edgelog_scrape_partitions`). */
  missing: number;
}

const FIELDS: ReadonlyArray<[string, keyof Omit<PartitionSample, "topic" | "partition">]> = [
  ["edgelog_partition_log_start_offset", "logStartOffset"],
  ["edgelog_partition_log_end_offset", "logEndOffset"],
  ["edgelog_partition_records", "records"],
  ["edgelog_partition_size_bytes", "sizeBytes"],
  ["edgelog_partition_records_in_total", "recordsIn"],
  ["edgelog_partition_bytes_in_total", "bytesIn"],
  ["edgelog_partition_records_out_total", "recordsOut"],
  ["edgelog_partition_bytes_out_total", "bytesOut"],
  ["edgelog_partition_long_poll_waiters", "waiters"],
  ["edgelog_partition_start_time_seconds", "startTimeSeconds"],
];

/**
 * The partitions of a scrape (Prometheus text format 0.0.4, parsed by
 * parse-prometheus-text-format). `topic`: keep only this topic (full name, or a name in
 * public/default).
 */
export function topicsSample(text: string, atMs: number, topic?: string): TopicsSample {
  const byKey = new Map<string, PartitionSample>();
  let missing = 0;
  const want = topic === undefined ? undefined : topic.includes("/") ? topic : `public/default/${topic}`;
  for (const family of parsePrometheusTextFormat(text)) {
    if (family.name === "edgelog_scrape_partitions") {
      for (const m of family.metrics) if ("value" in m && m.labels?.result !== "ok") missing += Number(m.value);
      continue;
    }
    const field = FIELDS.find(([name]) => name === family.name)?.[1];
    if (field === undefined) continue;
    for (const m of family.metrics) {
      const t = m.labels?.topic;
      const p = Number(m.labels?.partition);
      if (t === undefined || !Number.isInteger(p) || !("value" in m)) continue;
      if (want !== undefined && t !== want) continue;
      const key = `${t}\u0000${p}`;
      let s = byKey.get(key);
      if (s === undefined) {
        s = { topic: t, partition: p, logStartOffset: 0, logEndOffset: 0, records: 0, sizeBytes: 0, recordsIn: 0, bytesIn: 0, recordsOut: 0, bytesOut: 0, waiters: 0, startTimeSeconds: 0 };
        byKey.set(key, s);
      }
      s[field] = Number(m.value);
    }
  }
  const partitions = [...byKey.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  return { atMs, partitions, missing };
}

/** A partition with its rates since the previous sample (null: unknown, see the module doc). */
export interface PartitionRow extends PartitionSample {
  recordsInPerSec: number | null;
  bytesInPerSec: number | null;
  recordsOutPerSec: number | null;
  bytesOutPerSec: number | null;
}

function perSec(prev: number | undefined, cur: number, sec: number): number | null {
  if (prev === undefined || sec <= 0 || cur < prev) return null;
  return (cur - prev) / sec;
}

/** Rates of each partition of `cur` against `prev` (null for all without a previous sample). */
export function partitionRows(prev: TopicsSample | null, cur: TopicsSample): PartitionRow[] {
  const before = new Map((prev?.partitions ?? []).map((p) => [`${p.topic}\u0000${p.partition}`, p]));
  const sec = prev === null ? 0 : (cur.atMs - prev.atMs) / 1000;
  return cur.partitions.map((p) => {
    const b = before.get(`${p.topic}\u0000${p.partition}`);
    const same = b !== undefined && b.startTimeSeconds === p.startTimeSeconds ? b : undefined;
    return {
      ...p,
      recordsInPerSec: perSec(same?.recordsIn, p.recordsIn, sec),
      bytesInPerSec: perSec(same?.bytesIn, p.bytesIn, sec),
      recordsOutPerSec: perSec(same?.recordsOut, p.recordsOut, sec),
      bytesOutPerSec: perSec(same?.bytesOut, p.bytesOut, sec),
    };
  });
}

/** Sum of the known values, null when none is known. */
function sumKnown(values: readonly (number | null)[]): number | null {
  let sum: number | null = null;
  for (const v of values) if (v !== null) sum = (sum ?? 0) + v;
  return sum;
}

const rate = (v: number | null): string => (v === null ? "-" : formatCount(v));
const byteRate = (v: number | null): string => (v === null ? "-" : `${formatBytes(v)}/s`);

/** What a frame's header says besides its rows. */
export interface FrameInfo {
  /** The gateway URL. */
  url: string;
  /** Wall-clock time of the frame, ms since the epoch. */
  atMs: number;
  intervalMs: number;
  /** Lines the frame may take (the terminal height); 0: no limit. */
  maxLines?: number;
}

function header(title: string, info: FrameInfo): string {
  return `edgelog top: ${title}   ${info.url}   ${new Date(info.atMs).toISOString().slice(11, 19)} UTC   every ${info.intervalMs / 1000} s\n`;
}

/** Keeps the table within `maxLines` (header lines included), saying how many rows were cut. */
function fit(head: string, table: string, maxLines: number | undefined): string {
  const lines = table.trimEnd().split("\n");
  const budget = maxLines === undefined || maxLines <= 0 ? Number.POSITIVE_INFINITY : maxLines - (head.split("\n").length - 1);
  if (lines.length <= budget) return head + table;
  const keep = Math.max(1, budget - 1);
  return `${head}${lines.slice(0, keep).join("\n")}\n... ${lines.length - keep} more rows (a taller terminal, or --topic, shows them)\n`;
}

/** One text frame of the topics view. */
export function renderTopicsFrame(rows: readonly PartitionRow[], sample: TopicsSample, info: FrameInfo): string {
  const topics = new Set(rows.map((r) => r.topic)).size;
  const inRec = sumKnown(rows.map((r) => r.recordsInPerSec));
  const outRec = sumKnown(rows.map((r) => r.recordsOutPerSec));
  const stored = rows.reduce((n, r) => n + r.sizeBytes, 0);
  const head =
    header("topics", info) +
    `${formatCount(topics)} topic${topics === 1 ? "" : "s"}, ${formatCount(rows.length)} partition${rows.length === 1 ? "" : "s"}   ` +
    `in ${rate(inRec)} rec/s (${byteRate(sumKnown(rows.map((r) => r.bytesInPerSec)))})   out ${rate(outRec)} rec/s (${byteRate(sumKnown(rows.map((r) => r.bytesOutPerSec)))})   ` +
    `stored ${formatBytes(stored)}${sample.missing > 0 ? `   ${sample.missing} partitions not read (edgelog_scrape_partitions)` : ""}\n\n`;
  const table = formatTable(
    ["TOPIC", "PARTITION", "LOG_END_OFFSET", "RECORDS", "SIZE", "IN_REC/S", "IN_BYTES/S", "OUT_REC/S", "OUT_BYTES/S", "WAITERS"],
    rows.map((r) => [
      displayTopicName(r.topic),
      r.partition,
      r.logEndOffset,
      r.records,
      formatBytes(r.sizeBytes),
      rate(r.recordsInPerSec),
      byteRate(r.bytesInPerSec),
      rate(r.recordsOutPerSec),
      byteRate(r.bytesOutPerSec),
      r.waiters,
    ]),
  );
  return fit(head, rows.length === 0 ? "(no partitions)\n" : table, info.maxLines);
}

/** The topics view as one JSON object (`--json`). */
export function topicsJson(rows: readonly PartitionRow[], sample: TopicsSample, intervalMs: number): object {
  return { view: "topics", at: new Date(sample.atMs).toISOString(), intervalMs, missingPartitions: sample.missing, partitions: rows };
}

/** A group as one describe shows it, with when. */
export interface GroupSample {
  atMs: number;
  group: GroupDescription;
}

/** One partition of a group's view. */
export interface GroupRow {
  topic: string;
  partition: number;
  memberId: string | null;
  clientId: string | null;
  committedOffset: number | null;
  logEndOffset: number | null;
  lag: number | null;
  /** Committed records per second since the previous sample. */
  committedPerSec: number | null;
}

/** The group's partitions with their commit rates since `prev`. */
export function groupRows(prev: GroupSample | null, cur: GroupSample): GroupRow[] {
  const before = new Map((prev?.group.offsets ?? []).map((o) => [`${o.topic}\u0000${o.partition}`, o.committedOffset]));
  const sec = prev === null ? 0 : (cur.atMs - prev.atMs) / 1000;
  const clientOf = new Map(cur.group.members.map((m) => [m.memberId, m.clientId]));
  return cur.group.offsets
    .map((o) => {
      const b = before.get(`${o.topic}\u0000${o.partition}`);
      return {
        topic: o.topic,
        partition: o.partition,
        memberId: o.memberId,
        clientId: o.memberId === null ? null : (clientOf.get(o.memberId) ?? null),
        committedOffset: o.committedOffset,
        logEndOffset: o.logEndOffset,
        lag: o.lag,
        committedPerSec: o.committedOffset === null || b === undefined || b === null ? null : perSec(b, o.committedOffset, sec),
      };
    })
    .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
}

/** One text frame of a group's view: state, members, total lag and rate, then a row per partition. */
export function renderGroupFrame(rows: readonly GroupRow[], sample: GroupSample, info: FrameInfo): string {
  const g = sample.group;
  const total = sumKnown(rows.map((r) => r.committedPerSec));
  const head =
    header(`group ${g.groupId}`, info) +
    `state ${g.state}   members ${g.members.length}   epoch ${g.groupEpoch}   total lag ${formatCount(g.totalLag)}   committed ${rate(total)} rec/s` +
    (total !== null && total > 0 && g.totalLag > 0 ? ` (lag gone in ~${Math.ceil(g.totalLag / total)} s at this rate)` : "") +
    "\n\n";
  const dash = (v: string | number | null): string | number => (v === null ? "-" : v);
  const table = formatTable(
    ["TOPIC", "PARTITION", "COMMITTED", "LOG_END_OFFSET", "LAG", "COMMITTED_REC/S", "CLIENT", "MEMBER"],
    rows.map((r) => [displayTopicName(r.topic), r.partition, dash(r.committedOffset), dash(r.logEndOffset), dash(r.lag), rate(r.committedPerSec), dash(r.clientId), dash(r.memberId)]),
  );
  return fit(head, rows.length === 0 ? "(no committed offsets or assignments)\n" : table, info.maxLines);
}

/** A group's view as one JSON object (`--json`). */
export function groupJson(rows: readonly GroupRow[], sample: GroupSample, intervalMs: number): object {
  const g = sample.group;
  return {
    view: "group",
    at: new Date(sample.atMs).toISOString(),
    intervalMs,
    group: g.groupId,
    state: g.state,
    members: g.members.length,
    groupEpoch: g.groupEpoch,
    totalLag: g.totalLag,
    committedPerSec: sumKnown(rows.map((r) => r.committedPerSec)),
    partitions: rows,
  };
}
