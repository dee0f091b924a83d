/** The overview: rates per topic and lag per group, charted from GET /v1/metrics. */
import { ErrorBox, LineChart, type Series, useMetrics } from "./components.tsx";
import { type MetricsPoint, SCRAPE_INTERVAL_MS, sampler } from "./metrics.ts";

/** Series charted per chart at most (the busiest, by their latest value). */
const TOP = 6;

function top(history: MetricsPoint[], pick: (p: MetricsPoint) => Map<string, number>): Series[] {
  const last = history.at(-1);
  if (last === undefined) return [];
  const names = [...pick(last).entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, TOP)
    .map(([n]) => n);
  return names.map((name) => ({ name, points: history.flatMap((p) => (pick(p).has(name) ? [[p.at, pick(p).get(name)!] as [number, number]] : [])) }));
}

function rates(p: MetricsPoint, which: "recordsIn" | "recordsOut" | "bytesIn"): Map<string, number> {
  const out = new Map<string, number>();
  for (const [t, s] of p.topics) if (s.rates !== undefined) out.set(t, s.rates[which]);
  return out;
}

export function OverviewPage() {
  const m = useMetrics();
  const last = m.history.at(-1);
  const coverage = last?.coverage;
  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      <p class="muted small">
        From <code>GET /v1/metrics</code>, scraped every {SCRAPE_INTERVAL_MS / 1000} s while a page that shows metrics is open (docs/OBSERVABILITY.md). Rates need two scrapes.{" "}
        <button type="button" onClick={() => sampler.refresh()}>
          Scrape now
        </button>
      </p>
      <ErrorBox error={m.error} what="GET /v1/metrics" />
      {coverage !== undefined && (coverage.get("error") ?? 0) + (coverage.get("omitted") ?? 0) > 0 && (
        <p class="warn" role="status">
          The last scrape missed {coverage.get("error") ?? 0} partitions (errors) and left out {coverage.get("omitted") ?? 0}: their topics' figures are incomplete.
        </p>
      )}
      <div class="charts">
        <LineChart title="Records in per second, by topic" series={top(m.history, (p) => rates(p, "recordsIn"))} unit="rec/s" />
        <LineChart title="Records out per second, by topic" series={top(m.history, (p) => rates(p, "recordsOut"))} unit="rec/s" />
        <LineChart title="Bytes in per second, by topic" series={top(m.history, (p) => rates(p, "bytesIn"))} unit="B/s" />
        <LineChart title="Consumer lag, by group" series={top(m.history, (p) => p.groupLag)} unit="records" />
      </div>
    </>
  );
}
