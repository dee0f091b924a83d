/**
 * `top`: a live terminal view of the topics (per-partition rates from /v1/metrics deltas,
 * sizes) or of one consumer group (lag per partition, total lag, commit rate), redrawn in
 * place like top(1). The rendering is pure (../top.ts); this file samples, sleeps and draws.
 *
 * On a terminal it uses the alternate screen (restored on exit, Ctrl-C or SIGTERM); piped,
 * it writes one frame after another (one JSON object per line with --json). `--once` takes
 * two samples one interval apart (rates need two) and prints one frame.
 */
import process from "node:process";
import { EdgelogError } from "../../../../src/protocol/index.ts";
import { flag, JSON_OPTION, str, TOPIC_OPTION, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { isTerminal } from "../progress.ts";
import { type FrameInfo, type GroupSample, groupJson, groupRows, partitionRows, renderGroupFrame, renderTopicsFrame, type TopicsSample, topicsJson, topicsSample } from "../top.ts";

export interface TopCommand {
  kind: "top";
  url: string;
  group: string | undefined;
  topic: string | undefined;
  intervalMs: number;
  once: boolean;
  json: boolean;
}

/** @default 2 s between frames, as `watch`; at least 0.1 s, at most an hour. */
export const TOP_DEFAULT_INTERVAL_MS = 2000;

/** Alternate screen on/off, cursor hide/show, home + clear (xterm control sequences). */
const ENTER = "\x1b[?1049h\x1b[?25l";
const LEAVE = "\x1b[?25h\x1b[?1049l";
const HOME_CLEAR = "\x1b[H\x1b[2J";

export const top = defineCommand<TopCommand>({
  name: "top",
  usage:
    "  top [--group GROUP | --topic TOPIC] [--interval SECONDS] [--once] [--json]\n" +
    "      A live view, redrawn every interval (default 2 s) until Ctrl-C: per partition the\n" +
    "      log end offset, records, size and the rates in and out (from /v1/metrics); or, with\n" +
    "      --group, per partition the committed offset, lag and commit rate, and the total lag.\n" +
    "      --once: one frame (two samples one interval apart, for the rates); --json: JSON.\n",
  options: { group: { type: "string", short: "g" }, topic: TOPIC_OPTION, interval: { type: "string" }, once: { type: "boolean" }, json: JSON_OPTION },
  args: [],
  parse({ url, values }) {
    const group = str(values, "group");
    const topic = str(values, "topic");
    if (group !== undefined && topic !== undefined) throw new UsageError("top: use only one of --group and --topic");
    if (group === "") throw new UsageError("--group must not be empty");
    const raw = str(values, "interval");
    const seconds = raw === undefined ? TOP_DEFAULT_INTERVAL_MS / 1000 : Number(raw);
    if (!Number.isFinite(seconds) || seconds < 0.1 || seconds > 3600) throw new UsageError("--interval must be a number of seconds from 0.1 to 3600");
    return { kind: "top", url, group, topic, intervalMs: Math.round(seconds * 1000), once: flag(values, "once"), json: flag(values, "json") };
  },
  async run(cmd, { client, out, io }) {
    // One sample and the frame it makes with the one before.
    let prev: TopicsSample | GroupSample | null = null;
    const frame = async (): Promise<string> => {
      const info: FrameInfo = { url: cmd.url, atMs: Date.now(), intervalMs: cmd.intervalMs, maxLines: (io.stdout as { rows?: number }).rows ?? 0 };
      if (cmd.group !== undefined) {
        const cur: GroupSample = { atMs: Date.now(), group: await client.describeGroup(cmd.group) };
        const rows = groupRows(prev as GroupSample | null, cur);
        prev = cur;
        return cmd.json ? `${JSON.stringify(groupJson(rows, cur, cmd.intervalMs))}\n` : renderGroupFrame(rows, cur, info);
      }
      const text = await client.metrics();
      const cur = topicsSample(text, Date.now(), cmd.topic);
      const rows = partitionRows(prev as TopicsSample | null, cur);
      prev = cur;
      return cmd.json ? `${JSON.stringify(topicsJson(rows, cur, cmd.intervalMs))}\n` : renderTopicsFrame(rows, cur, info);
    };

    if (cmd.once) {
      await frame();
      await sleep(cmd.intervalMs);
      await out.write(await frame());
      return;
    }

    const screen = isTerminal(io.stdout) && !cmd.json;
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    if (screen) io.stdout.write(ENTER);
    try {
      for (let first = true; ; first = false) {
        let text: string;
        try {
          text = await frame();
        } catch (e) {
          // A failed sample is shown and retried next interval; the first one fails the command.
          if (first) throw e;
          text = `edgelog top: ${e instanceof EdgelogError ? `${e.code}: ` : ""}${e instanceof Error ? e.message : String(e)} (retrying every ${cmd.intervalMs / 1000} s)\n`;
          prev = null;
        }
        await out.write(screen ? HOME_CLEAR + text : cmd.json ? text : `${text}\n`);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const woke = await Promise.race([new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), cmd.intervalMs))), stopped.then(() => true)]);
        clearTimeout(timer);
        if (woke) return;
      }
    } finally {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      if (screen) io.stdout.write(LEAVE);
    }
  },
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
