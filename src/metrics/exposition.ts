/**
 * A writer of the Prometheus text exposition format, version 0.0.4 (the format every
 * Prometheus server scrapes; content type {@link EXPOSITION_CONTENT_TYPE}). Pure: no I/O, no
 * Workers imports.
 *
 * Per metric family: `# HELP name text` and `# TYPE name counter|gauge|histogram`, then one
 * line per sample `name{label="value",...} value`. A histogram family writes cumulative
 * `name_bucket{le="..."}` lines (ending with `le="+Inf"`), then `name_sum` and `name_count`.
 *
 * Escaping (exposition format spec): in a label value `\` → `\\`, `"` → `\"`, newline → `\n`;
 * in HELP text `\` → `\\` and newline → `\n`. Metric names must match
 * `[a-zA-Z_:][a-zA-Z0-9_:]*` and label names `[a-zA-Z_][a-zA-Z0-9_]*` (not starting `__`,
 * which Prometheus reserves): a bad name is a bug of the caller and throws.
 *
 * Values: integers print as integers, other numbers as JavaScript prints them, and the
 * specials as `NaN`, `+Inf`, `-Inf`. No timestamps are written: the scrape time applies.
 */

export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Readonly<Record<string, string>>;

export interface Sample {
  labels?: Labels;
  value: number;
}

export interface HistogramSample {
  labels?: Labels;
  /** Observations per bucket, NOT cumulative: `counts[i]` for bucket i of the family's bounds, plus one last entry for above the last bound. */
  counts: ArrayLike<number>;
  /** Sum of every observed value (same unit as the bounds). */
  sum: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function escapeLabelValue(v: string): string {
  return v.replace(/[\\"\n]/g, (ch) => (ch === "\\" ? "\\\\" : ch === '"' ? '\\"' : "\\n"));
}

export function escapeHelp(v: string): string {
  return v.replace(/[\\\n]/g, (ch) => (ch === "\\" ? "\\\\" : "\\n"));
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

function labelText(labels: Labels | undefined, extra?: [string, string]): string {
  const parts: string[] = [];
  if (labels !== undefined) {
    for (const [k, v] of Object.entries(labels)) {
      if (!LABEL_NAME.test(k) || k.startsWith("__") || k === "le") throw new Error(`invalid label name ${JSON.stringify(k)}`);
      parts.push(`${k}="${escapeLabelValue(v)}"`);
    }
  }
  if (extra !== undefined) parts.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

/** Accumulates metric families, in the order written, into one exposition text. */
export class ExpositionWriter {
  readonly #lines: string[] = [];
  readonly #names = new Set<string>();

  #header(name: string, type: "counter" | "gauge" | "histogram", help: string): void {
    if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name ${JSON.stringify(name)}`);
    // A family appears once per exposition (the format forbids repeating its HELP/TYPE).
    if (this.#names.has(name)) throw new Error(`metric family ${name} written twice`);
    this.#names.add(name);
    this.#lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
  }

  /** A counter family: a value that only rises while the process that counts it lives. */
  counter(name: string, help: string, samples: readonly Sample[]): this {
    return this.#simple(name, "counter", help, samples);
  }

  /** A gauge family: a value that may rise and fall. */
  gauge(name: string, help: string, samples: readonly Sample[]): this {
    return this.#simple(name, "gauge", help, samples);
  }

  /**
   * A histogram family over the fixed upper bounds `bounds` (ascending, finite); each
   * sample's `counts` has `bounds.length + 1` entries (the last for above the last bound).
   */
  histogram(name: string, help: string, bounds: readonly number[], samples: readonly HistogramSample[]): this {
    this.#header(name, "histogram", help);
    for (const s of samples) {
      if (s.counts.length !== bounds.length + 1) throw new Error(`histogram ${name}: ${s.counts.length} counts for ${bounds.length} bounds`);
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += s.counts[i]!;
        this.#lines.push(`${name}_bucket${labelText(s.labels, ["le", formatValue(bounds[i]!)])} ${formatValue(cumulative)}`);
      }
      cumulative += s.counts[bounds.length]!;
      this.#lines.push(`${name}_bucket${labelText(s.labels, ["le", "+Inf"])} ${formatValue(cumulative)}`);
      this.#lines.push(`${name}_sum${labelText(s.labels)} ${formatValue(s.sum)}`);
      this.#lines.push(`${name}_count${labelText(s.labels)} ${formatValue(cumulative)}`);
    }
    return this;
  }

  #simple(name: string, type: "counter" | "gauge", help: string, samples: readonly Sample[]): this {
    this.#header(name, type, help);
    for (const s of samples) this.#lines.push(`${name}${labelText(s.labels)} ${formatValue(s.value)}`);
    return this;
  }

  /** The exposition: every line ends with a newline (the format requires the last one too). */
  text(): string {
    return this.#lines.length === 0 ? "" : `${this.#lines.join("\n")}\n`;
  }
}

/**
 * A histogram over fixed upper bounds, kept as integer counts: `observe` is a short linear
 * scan and one increment, with no allocation (the hot path can afford it).
 */
export class FixedHistogram {
  readonly bounds: readonly number[];
  /** Non-cumulative counts, `bounds.length + 1` entries (the last is above the last bound). */
  readonly counts: Float64Array;
  sum = 0;

  constructor(bounds: readonly number[]) {
    for (let i = 1; i < bounds.length; i++) if (!(bounds[i]! > bounds[i - 1]!)) throw new Error("histogram bounds must ascend");
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Counts `v` in the first bucket whose upper bound is ≥ v (Prometheus' `le`). */
  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
  }
}
