// Types for parse-prometheus-text-format 1.1.1 (the package ships none): the shapes its
// parser returns, as its README documents them.
declare module "parse-prometheus-text-format" {
  interface PromSample {
    value: string;
    labels?: Record<string, string>;
  }
  interface PromHistogramSample {
    buckets: Record<string, string>;
    count: string;
    sum: string;
    labels?: Record<string, string>;
  }
  interface PromFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: (PromSample | PromHistogramSample)[];
  }
  export default function parsePrometheusTextFormat(text: string): PromFamily[];
}
