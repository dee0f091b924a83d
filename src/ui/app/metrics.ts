/**
 * Samples `GET /v1/metrics` (docs/OBSERVABILITY.md) while a page shows metrics, and turns the
 * Prometheus text exposition into what the pages chart: per topic the stored size and the
 * record and byte rates in and out, per group the total lag. Parsed with
 * parse-prometheus-text-format (the parser the metrics tests use), not by hand.
 *
 * Rates are computed as Prometheus' `rate()` computes them, per partition from two successive
 * scrapes: a counter that went down restarted with its partition object (docs/OBSERVABILITY.md
 * "What is exact and what is sampled") and counts from 0, then summed per topic.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { type ApiError, request, toApiError } from "./api.ts";

/** Milliseconds between scrapes while some page listens. */
export const SCRAPE_INTERVAL_MS = 5000;
/** Points kept per series (10 minutes at the default interval). */
export const HISTORY_POINTS = 120;

const COUNTERS = {
  recordsIn: "edgelog_partition_records_in_total",
  recordsOut: "edgelog_partition_records_out_total",
  bytesIn: "edgelog_partition_bytes_in_total",
  bytesOut: "edgelog_partition_bytes_out_total",
} as const;
type CounterName = keyof typeof COUNTERS;

export interface TopicRates {
  recordsIn: number;
  recordsOut: number;
  bytesIn: number;
  bytesOut: number;
}

export interface TopicStats {
  /** Sum of `edgelog_partition_size_bytes`. */
  sizeBytes: number;
  /** Per-second rates since the previous scrape; undefined on the first. */
  rates: TopicRates | undefined;
}

/** One scrape, digested. */
export interface MetricsPoint {
  /** When the answer arrived (ms since the epoch). */
  at: number;
  topics: Map<string, TopicStats>;
  /** `edgelog_consumergroup_lag_sum` per group. */
  groupLag: Map<string, number>;
  /** `edgelog_scrape_partitions` per result (ok, error, omitted). */
  coverage: Map<string, number>;
}

export interface MetricsState {
  history: MetricsPoint[];
  /** The last scrape's failure, cleared by the next success. */
  error: ApiError | null;
}

type Labels = Record<string, string>;
interface Sample {
  labels: Labels;
  value: number;
}

/** Every plain sample (counters, gauges) of the exposition, by family name. */
export function parseExposition(text: string): Map<string, Sample[]> {
  const out = new Map<string, Sample[]>();
  for (const family of parsePrometheusTextFormat(text)) {
    const samples: Sample[] = [];
    for (const m of family.metrics) {
      if ("value" in m) samples.push({ labels: m.labels ?? {}, value: Number(m.value) });
    }
    out.set(family.name, samples);
  }
  return out;
}

const partitionKey = (l: Labels) => `${l.topic ?? ""}\u0000${l.partition ?? ""}`;

/**
 * Digests one exposition into a point, given the previous scrape's counters per partition
 * (updated in place for the next call).
 */
export function digest(
  text: string,
  at: number,
  previous: { at: number; counters: Map<string, Record<CounterName, number>> } | null,
): {
  point: MetricsPoint;
  counters: Map<string, Record<CounterName, number>>;
} {
  const families = parseExposition(text);
  const topics = new Map<string, TopicStats>();
  const topicOf = (name: string): TopicStats => {
    let t = topics.get(name);
    if (t === undefined) topics.set(name, (t = { sizeBytes: 0, rates: previous === null ? undefined : { recordsIn: 0, recordsOut: 0, bytesIn: 0, bytesOut: 0 } }));
    return t;
  };
  for (const s of families.get("edgelog_partition_size_bytes") ?? []) topicOf(s.labels.topic ?? "").sizeBytes += s.value;

  const counters = new Map<string, Record<CounterName, number>>();
  for (const [name, family] of Object.entries(COUNTERS) as [CounterName, string][]) {
    for (const s of families.get(family) ?? []) {
      const key = partitionKey(s.labels);
      let c = counters.get(key);
      if (c === undefined) counters.set(key, (c = { recordsIn: 0, recordsOut: 0, bytesIn: 0, bytesOut: 0 }));
      c[name] = s.value;
    }
  }
  if (previous !== null) {
    const seconds = Math.max((at - previous.at) / 1000, 0.001);
    for (const [key, now] of counters) {
      const topic = key.slice(0, key.indexOf("\u0000"));
      const rates = topicOf(topic).rates!;
      const before = previous.counters.get(key);
      for (const name of Object.keys(COUNTERS) as CounterName[]) {
        const was = before?.[name];
        // No earlier sample: the partition appeared (its count so far is not this interval's).
        if (was === undefined) continue;
        const delta = now[name] >= was ? now[name] - was : now[name];
        rates[name] += delta / seconds;
      }
    }
  }
  const groupLag = new Map<string, number>();
  for (const s of families.get("edgelog_consumergroup_lag_sum") ?? []) groupLag.set(s.labels.group ?? "", s.value);
  const coverage = new Map<string, number>();
  for (const s of families.get("edgelog_scrape_partitions") ?? []) coverage.set(s.labels.result ?? "", s.value);
  return { point: { at, topics, groupLag, coverage }, counters };
}

type Listener = (s: MetricsState) => void;

/** The page's one sampler: scrapes every {@link SCRAPE_INTERVAL_MS} while anyone listens. */
class Sampler {
  #state: MetricsState = { history: [], error: null };
  #listeners = new Set<Listener>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #previous: { at: number; counters: Map<string, Record<CounterName, number>> } | null = null;
  #running = false;

  subscribe(l: Listener): () => void {
    this.#listeners.add(l);
    l(this.#state);
    if (this.#listeners.size === 1) void this.#tick();
    return () => {
      this.#listeners.delete(l);
      if (this.#listeners.size === 0 && this.#timer !== undefined) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  /** Scrapes now (the pages' "refresh"). */
  refresh(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    void this.#tick();
  }

  /** Forgets the history (a new token sees other topics). */
  reset(): void {
    this.#previous = null;
    this.#publish({ history: [], error: null });
  }

  async #tick(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      const res = await request("/v1/metrics", { headers: { Accept: "text/plain" } });
      const text = await res.text();
      const at = Date.now();
      const { point, counters } = digest(text, at, this.#previous);
      this.#previous = { at, counters };
      this.#publish({ history: [...this.#state.history, point].slice(-HISTORY_POINTS), error: null });
    } catch (e) {
      this.#publish({ history: this.#state.history, error: toApiError(e) });
    } finally {
      this.#running = false;
      if (this.#listeners.size > 0) this.#timer = setTimeout(() => void this.#tick(), SCRAPE_INTERVAL_MS);
    }
  }

  #publish(s: MetricsState): void {
    this.#state = s;
    for (const l of this.#listeners) l(s);
  }
}

export const sampler = new Sampler();
