/**
 * The web console's pure parts (src/ui/app/): value display, the metrics digest (rates as
 * Prometheus' rate() computes them), config lines; and the committed bundle is what a fresh
 * build of src/ui/app/ makes (src/ui/build.ts). The console itself is tested in Chromium by
 * test/e2e/console.test.ts.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GENERATED_PATH, buildConsole, renderModule } from "../../src/ui/build.ts";
import { showValue } from "../../src/ui/app/format.ts";
import { digest } from "../../src/ui/app/metrics.ts";
import { UI_ASSETS } from "../../src/ui/assets.generated.ts";

const b64 = (s: string | Uint8Array) => Buffer.from(s).toString("base64");

describe("the committed console bundle", () => {
  it("is byte for byte a fresh build of src/ui/app/ (else: npm run build:ui, and commit)", async () => {
    expect(readFileSync(GENERATED_PATH, "utf8") === renderModule(await buildConsole())).toBe(true);
  });

  it("has the page, its script and its style, each with the ETag of its body", async () => {
    const { createHash } = await import("node:crypto");
    expect(Object.keys(UI_ASSETS)).toEqual(["app.css", "app.js", "index.html"]);
    for (const a of Object.values(UI_ASSETS)) expect(a.etag).toBe(`"${createHash("sha256").update(a.body).digest("hex").slice(0, 16)}"`);
    expect(UI_ASSETS["index.html"]!.body).toContain('<script type="module" src="app.js"></script>');
  });
});

describe("showValue", () => {
  it("shows null, JSON pretty-printed, text and hex", () => {
    expect(showValue(null, "auto")).toEqual({ text: "null", as: "null" });
    expect(showValue(b64('{"a":[1,2]}'), "auto")).toEqual({ text: '{\n  "a": [\n    1,\n    2\n  ]\n}', as: "json" });
    expect(showValue(b64("42"), "auto")).toEqual({ text: "42", as: "text" });
    expect(showValue(b64("42"), "json")).toEqual({ text: "42", as: "json" });
    expect(showValue(b64("{not json"), "json")).toEqual({ text: "{not json", as: "text" });
    expect(showValue(b64("héllo"), "text")).toEqual({ text: "héllo", as: "text" });
    expect(showValue(b64("hi"), "hex")).toEqual({ text: "68 69", as: "hex" });
    expect(showValue(b64(""), "auto")).toEqual({ text: "", as: "text" });
    // Not UTF-8: hex whatever was asked.
    expect(showValue(b64(new Uint8Array([0xff, 0x00, 0x80])), "text")).toEqual({ text: "ff 00 80", as: "hex" });
  });
});

describe("the metrics digest", () => {
  const exposition = (inT0: number, inT1: number, outT0: number) =>
    [
      "# TYPE edgelog_partition_size_bytes gauge",
      'edgelog_partition_size_bytes{topic="public/default/a",partition="0"} 100',
      'edgelog_partition_size_bytes{topic="public/default/a",partition="1"} 50',
      "# TYPE edgelog_partition_records_in_total counter",
      `edgelog_partition_records_in_total{topic="public/default/a",partition="0"} ${inT0}`,
      `edgelog_partition_records_in_total{topic="public/default/a",partition="1"} ${inT1}`,
      "# TYPE edgelog_partition_records_out_total counter",
      `edgelog_partition_records_out_total{topic="public/default/a",partition="0"} ${outT0}`,
      "# TYPE edgelog_consumergroup_lag_sum gauge",
      'edgelog_consumergroup_lag_sum{group="g"} 7',
      "# TYPE edgelog_scrape_partitions gauge",
      'edgelog_scrape_partitions{result="ok"} 2',
      'edgelog_scrape_partitions{result="error"} 0',
      "",
    ].join("\n");

  it("sums sizes per topic, reads lag and coverage, and has no rate on the first scrape", () => {
    const { point } = digest(exposition(10, 5, 0), 1000, null);
    expect(point.topics.get("public/default/a")).toEqual({ sizeBytes: 150, rates: undefined });
    expect([...point.groupLag]).toEqual([["g", 7]]);
    expect([...point.coverage]).toEqual([
      ["ok", 2],
      ["error", 0],
    ]);
  });

  it("computes per-second rates per partition, summed per topic; a counter that went down restarted from 0", () => {
    const first = digest(exposition(10, 5, 4), 1000, null);
    // 10 s later: partition 0 +20, partition 1 restarted (5 -> 3: counts 3), out +6.
    const { point } = digest(exposition(30, 3, 10), 11_000, { at: 1000, counters: first.counters });
    expect(point.topics.get("public/default/a")!.rates).toEqual({ recordsIn: 2.3, recordsOut: 0.6, bytesIn: 0, bytesOut: 0 });
  });
});
