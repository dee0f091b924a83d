import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { describe, expect, it } from "vitest";
import { ExpositionWriter, FixedHistogram, escapeHelp, escapeLabelValue, formatValue } from "../../src/metrics/exposition.ts";

describe("Prometheus text exposition writer", () => {
  it("writes HELP and TYPE lines, then one line per sample, with a final newline", () => {
    const text = new ExpositionWriter()
      .counter("edgelog_records_in_total", "Records appended.", [
        { labels: { topic: "t/ns/a", partition: "0" }, value: 3 },
        { labels: { topic: "t/ns/a", partition: "1" }, value: 0 },
      ])
      .gauge("edgelog_up", "Always 1.", [{ value: 1 }])
      .text();
    expect(text).toBe(
      [
        "# HELP edgelog_records_in_total Records appended.",
        "# TYPE edgelog_records_in_total counter",
        'edgelog_records_in_total{topic="t/ns/a",partition="0"} 3',
        'edgelog_records_in_total{topic="t/ns/a",partition="1"} 0',
        "# HELP edgelog_up Always 1.",
        "# TYPE edgelog_up gauge",
        "edgelog_up 1",
        "",
      ].join("\n"),
    );
  });

  it("escapes label values (backslash, quote, newline) and HELP text (backslash, newline)", () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    expect(escapeHelp('a\\b"c\nd')).toBe('a\\\\b"c\\nd');
    const text = new ExpositionWriter().gauge("g", 'Help with \\ and\nnewline "quoted".', [{ labels: { k: 'v "1"\\\n' }, value: 2 }]).text();
    expect(text).toBe('# HELP g Help with \\\\ and\\nnewline "quoted".\n# TYPE g gauge\ng{k="v \\"1\\"\\\\\\n"} 2\n');
    // A real parser reads the escaped value back as written.
    const [family] = parsePrometheusTextFormat(text);
    expect(family?.metrics[0]).toEqual({ value: "2", labels: { k: 'v "1"\\\n' } });
  });

  it("formats the special values as the format spells them", () => {
    expect([NaN, Infinity, -Infinity, 0, 1.5, 12345678901].map(formatValue)).toEqual(["NaN", "+Inf", "-Inf", "0", "1.5", "12345678901"]);
  });

  it("writes a histogram as cumulative buckets ending at +Inf, then _sum and _count", () => {
    const h = new FixedHistogram([1, 5, 10]);
    for (const v of [0.5, 1, 3, 7, 7, 100]) h.observe(v);
    expect([...h.counts]).toEqual([2, 1, 2, 1]);
    const text = new ExpositionWriter().histogram("lat_ms", "Latency.", h.bounds, [{ labels: { route: "r" }, counts: h.counts, sum: h.sum }]).text();
    expect(text).toBe(
      [
        "# HELP lat_ms Latency.",
        "# TYPE lat_ms histogram",
        'lat_ms_bucket{route="r",le="1"} 2',
        'lat_ms_bucket{route="r",le="5"} 3',
        'lat_ms_bucket{route="r",le="10"} 5',
        'lat_ms_bucket{route="r",le="+Inf"} 6',
        'lat_ms_sum{route="r"} 118.5',
        'lat_ms_count{route="r"} 6',
        "",
      ].join("\n"),
    );
    // parse-prometheus-text-format 1.1.1 folds the samples of a histogram into one and keeps
    // the labels of none (its flattenMetrics), so the parser check uses an unlabelled one.
    const plain = new ExpositionWriter().histogram("lat_ms", "Latency.", h.bounds, [{ counts: h.counts, sum: h.sum }]).text();
    expect(parsePrometheusTextFormat(plain)).toEqual([
      { name: "lat_ms", help: "Latency.", type: "HISTOGRAM", metrics: [{ buckets: { "1": "2", "5": "3", "10": "5", "+Inf": "6" }, sum: "118.5", count: "6" }] },
    ]);
  });

  it("refuses bad metric and label names, reserved labels, a family written twice, and mismatched histogram counts", () => {
    expect(() => new ExpositionWriter().gauge("1bad", "x", [])).toThrow(/invalid metric name/);
    expect(() => new ExpositionWriter().gauge("ok", "x", [{ labels: { "bad-name": "v" }, value: 1 }])).toThrow(/invalid label name/);
    expect(() => new ExpositionWriter().gauge("ok", "x", [{ labels: { __name__: "v" }, value: 1 }])).toThrow(/invalid label name/);
    expect(() => new ExpositionWriter().gauge("ok", "x", [{ labels: { le: "1" }, value: 1 }])).toThrow(/invalid label name/);
    expect(() => new ExpositionWriter().gauge("ok", "x", []).counter("ok", "y", [])).toThrow(/written twice/);
    expect(() => new ExpositionWriter().histogram("h", "x", [1], [{ counts: [1], sum: 1 }])).toThrow(/counts/);
    expect(() => new FixedHistogram([5, 1])).toThrow(/ascend/);
  });

  it("writes nothing for an empty exposition, and HELP/TYPE for a family without samples", () => {
    expect(new ExpositionWriter().text()).toBe("");
    expect(new ExpositionWriter().counter("c_total", "C.", []).text()).toBe("# HELP c_total C.\n# TYPE c_total counter\n");
  });
});
