/**
 * Live progress of long CLI work (produce, consume) on a terminal: records, bytes, rate and,
 * when known, the lag left, on one line of stderr rewritten in place. Silent unless stderr is
 * a terminal (so pipes, files and scripts see nothing, and `--json` output on stdout is never
 * touched), as curl's and rsync's progress meters.
 *
 * Pure core ({@link RateWindow}, {@link formatProgressLine}, {@link formatBytes}) and a thin
 * shell ({@link Progress}) that owns the timer and the terminal escapes.
 */
import process from "node:process";

/** How often the line is redrawn, ms. */
export const PROGRESS_REFRESH_MS = 250;
/** The rate is measured over the samples of this last span, ms. */
export const RATE_WINDOW_MS = 5000;

/** `n` with thousands separators (`12,345`), locale-independent. */
export function formatCount(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Bytes in binary units, as `ls -h` and `du -h`: `512 B`, `1.5 KiB`, `12.0 MiB`. */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** A duration: `850 ms`, `4.2 s`, `3m05s`, `2h10m`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/**
 * Rates over a sliding window of cumulative samples: `(last - first) / (time between)` over
 * the samples of the last `windowMs`, so a stall shows as a falling rate within the window.
 */
export class RateWindow {
  readonly #windowMs: number;
  readonly #samples: Array<{ atMs: number; records: number; bytes: number }> = [];

  constructor(windowMs: number = RATE_WINDOW_MS) {
    this.#windowMs = windowMs;
  }

  /** Records the cumulative totals at `atMs` (non-decreasing). */
  sample(atMs: number, records: number, bytes: number): void {
    this.#samples.push({ atMs, records, bytes });
    while (this.#samples.length > 2 && this.#samples[1]!.atMs <= atMs - this.#windowMs) this.#samples.shift();
  }

  /** Records/s and bytes/s over the window; null until two samples span some time. */
  rate(): { recordsPerSec: number; bytesPerSec: number } | null {
    const first = this.#samples[0];
    const last = this.#samples[this.#samples.length - 1];
    if (first === undefined || last === undefined || last.atMs <= first.atMs) return null;
    const sec = (last.atMs - first.atMs) / 1000;
    return { recordsPerSec: (last.records - first.records) / sec, bytesPerSec: (last.bytes - first.bytes) / sec };
  }
}

/** What one progress line shows. */
export interface ProgressState {
  /** `Produced`, `Consumed`. */
  verb: string;
  records: number;
  bytes: number;
  elapsedMs: number;
  rate: { recordsPerSec: number; bytesPerSec: number } | null;
  /** Records left to read, when known (consume). */
  lag: number | null;
}

/**
 * One line, e.g. `Consumed 12,345 records, 1.2 MiB in 4.2 s | 2,940 rec/s, 290.1 KiB/s | lag 8,000 (~3 s)`.
 * Cut to `columns` characters (the terminal width) so it never wraps, which would break the
 * in-place redraw.
 */
export function formatProgressLine(s: ProgressState, columns = 0): string {
  const parts = [`${s.verb} ${formatCount(s.records)} record${s.records === 1 ? "" : "s"}, ${formatBytes(s.bytes)} in ${formatDuration(s.elapsedMs)}`];
  if (s.rate !== null) parts.push(`${formatCount(s.rate.recordsPerSec)} rec/s, ${formatBytes(s.rate.bytesPerSec)}/s`);
  if (s.lag !== null) {
    const eta = s.rate !== null && s.rate.recordsPerSec > 0 && s.lag > 0 ? ` (~${formatDuration((s.lag / s.rate.recordsPerSec) * 1000)})` : "";
    parts.push(`lag ${formatCount(s.lag)}${eta}`);
  }
  const line = parts.join(" | ");
  return columns > 1 && line.length > columns - 1 ? line.slice(0, columns - 1) : line;
}

/** The stream facts {@link Progress} needs (a tty.WriteStream has them). */
export interface ProgressStream {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** ESC [2K clears the line, CR returns to its start: the line is redrawn in place. */
const CLEAR_LINE = "\r\x1b[2K";

/**
 * The shell: counts, redraws every {@link PROGRESS_REFRESH_MS} while running (timer unref'd, so
 * it never keeps the process alive), and on `stop()` either leaves a final line or clears it.
 * Disabled (every method a no-op) when `enabled` is false.
 */
export class Progress {
  readonly enabled: boolean;
  readonly #stream: ProgressStream;
  readonly #verb: string;
  readonly #startMs: number;
  readonly #now: () => number;
  readonly #rates = new RateWindow();
  #records = 0;
  #bytes = 0;
  #lag: number | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;
  /**
   * Ctrl-C: the last line is kept with its newline, so the shell's prompt starts on a line of
   * its own; then, when nothing else listens (consume -g commits and leaves on SIGINT), the
   * signal is raised again for Node's default exit.
   */
  readonly #onSigint = (): void => {
    this.stop(true);
    if (process.listenerCount("SIGINT") === 0) process.kill(process.pid, "SIGINT");
  };

  /** @param enabled show anything at all (the caller decides: stderr is a TTY, ...) */
  constructor(stream: ProgressStream, verb: string, enabled: boolean, now: () => number = Date.now) {
    this.#stream = stream;
    this.#verb = verb;
    this.enabled = enabled;
    this.#now = now;
    this.#startMs = now();
    if (!enabled) return;
    this.#rates.sample(this.#startMs, 0, 0);
    this.#draw();
    this.#timer = setInterval(() => this.#draw(), PROGRESS_REFRESH_MS);
    (this.#timer as { unref?: () => void }).unref?.();
    process.once("SIGINT", this.#onSigint);
  }

  add(records: number, bytes: number): void {
    this.#records += records;
    this.#bytes += bytes;
  }

  /** Records left to read (null: unknown). */
  setLag(lag: number | null): void {
    this.#lag = lag;
  }

  get records(): number {
    return this.#records;
  }

  /** Stops the redraws; `keep` leaves the final line (with a newline), else the line is cleared. */
  stop(keep: boolean): void {
    if (!this.enabled || this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    process.off("SIGINT", this.#onSigint);
    if (keep) {
      this.#draw();
      this.#stream.write("\n");
    } else this.#stream.write(CLEAR_LINE);
  }

  #draw(): void {
    const now = this.#now();
    this.#rates.sample(now, this.#records, this.#bytes);
    const line = formatProgressLine(
      { verb: this.#verb, records: this.#records, bytes: this.#bytes, elapsedMs: now - this.#startMs, rate: this.#rates.rate(), lag: this.#lag },
      this.#stream.columns ?? 0,
    );
    this.#stream.write(CLEAR_LINE + line);
  }
}

/** True when `stream` is a terminal. */
export function isTerminal(stream: unknown): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}
