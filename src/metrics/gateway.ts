/**
 * The gateway's own metrics, of THIS isolate only (docs/OBSERVABILITY.md): a Worker runs as
 * many isolates, each with its own memory, and a scrape reaches one of them, so these are a
 * sample of the gateway, not its total. Counters start at 0 when the isolate starts
 * (`edgelog_gateway_isolate_start_time_seconds` says when).
 *
 * Durations are measured with Date.now(), which in Workers advances only across I/O: a
 * request's duration is the time spent awaiting (Durable Object calls, the body), which is
 * what dominates; pure CPU time between two awaits reads as 0.
 */
import { type ExpositionWriter, FixedHistogram, type HistogramSample, type Sample } from "./exposition.ts";

/** Upper bounds (ms) of the gateway's duration histograms: 1 ms to 30 s (a long-poll fetch waits up to FETCH_MAX_WAIT_MS_LIMIT). */
export const DURATION_BUCKETS_MS: readonly number[] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000];

/** Upper bounds of the coalesced append group size histogram (requests per appendMany RPC). */
export const GROUP_SIZE_BUCKETS: readonly number[] = [1, 2, 4, 8, 16, 32, 64];

/** The isolate's topic metadata cache, as the metrics see it (src/gateway/topics.ts). */
export interface CacheCounts {
  hits: number;
  misses: number;
  size: number;
}

interface RouteKey {
  method: string;
  route: string;
}

export class GatewayMetrics {
  readonly startTimeMs = Date.now();
  /** `${method} ${route} ${status}` → requests. */
  readonly #requests = new Map<string, { key: RouteKey; status: number; count: number }>();
  /** `${method} ${route}` → duration histogram. */
  readonly #durations = new Map<string, { key: RouteKey; histogram: FixedHistogram }>();
  /** Partition append RPCs (one per coalesced group): round trip in ms, durable commit included. */
  readonly appendDuration = new FixedHistogram(DURATION_BUCKETS_MS);
  /** Produce requests carried per append RPC. */
  readonly appendGroupSize = new FixedHistogram(GROUP_SIZE_BUCKETS);

  /** One answered request: `route` is the registered pattern (bounded cardinality), never the raw path. */
  request(method: string, route: string, status: number, durationMs: number): void {
    const rk = `${method} ${route}`;
    const sk = `${rk} ${status}`;
    const r = this.#requests.get(sk);
    if (r !== undefined) r.count++;
    else this.#requests.set(sk, { key: { method, route }, status, count: 1 });
    let d = this.#durations.get(rk);
    if (d === undefined) {
      d = { key: { method, route }, histogram: new FixedHistogram(DURATION_BUCKETS_MS) };
      this.#durations.set(rk, d);
    }
    d.histogram.observe(durationMs);
  }

  /** Writes this isolate's families; `topicCache` is its topic metadata cache. */
  write(w: ExpositionWriter, topicCache: CacheCounts): void {
    const requests: Sample[] = [];
    for (const r of this.#requests.values()) requests.push({ labels: { method: r.key.method, route: r.key.route, status: String(r.status) }, value: r.count });
    const durations: HistogramSample[] = [];
    for (const d of this.#durations.values()) durations.push({ labels: { method: d.key.method, route: d.key.route }, counts: d.histogram.counts, sum: d.histogram.sum });
    w.gauge("edgelog_gateway_isolate_start_time_seconds", "When this gateway isolate started (its counters count from then), Unix seconds.", [{ value: this.startTimeMs / 1000 }]);
    w.counter("edgelog_gateway_requests_total", "HTTP requests answered by this gateway isolate, by method, route pattern and status.", requests);
    w.histogram("edgelog_gateway_request_duration_ms", "HTTP request duration in this gateway isolate, milliseconds (time awaiting I/O; see docs).", DURATION_BUCKETS_MS, durations);
    w.histogram("edgelog_gateway_append_duration_ms", "Partition append RPC round trip from this isolate, durable commit included, milliseconds.", DURATION_BUCKETS_MS, [
      { counts: this.appendDuration.counts, sum: this.appendDuration.sum },
    ]);
    w.counter("edgelog_gateway_topic_cache_lookups_total", "Topic metadata lookups in this isolate's cache, by result (hit or miss: a miss asks the metadata store).", [
      { labels: { result: "hit" }, value: topicCache.hits },
      { labels: { result: "miss" }, value: topicCache.misses },
    ]);
    w.gauge("edgelog_gateway_topic_cache_entries", "Topics held in this isolate's metadata cache.", [{ value: topicCache.size }]);
    w.histogram("edgelog_gateway_append_group_size", "Produce requests carried per partition append RPC (coalescing) from this isolate.", GROUP_SIZE_BUCKETS, [
      { counts: this.appendGroupSize.counts, sum: this.appendGroupSize.sum },
    ]);
  }
}

/** This isolate's gateway metrics (module state lives as long as the isolate). */
export const gatewayMetrics = new GatewayMetrics();
