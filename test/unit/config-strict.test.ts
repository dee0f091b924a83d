// Topic config parsing (src/protocol/config.ts, issue 15): exact decimal strings for integers,
// documented minima, and a decimal parser that stays linear on hostile strings.
import { describe, expect, it } from "vitest";
import { DEFAULT_TOPIC_CONFIGS, mergeTopicConfigs } from "../../src/protocol/config.ts";
import { EdgelogError } from "../../src/protocol/errors.ts";

const code = (patch: unknown): string | null => {
  try {
    mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, patch);
    return null;
  } catch (e) {
    return e instanceof EdgelogError ? e.code : String(e);
  }
};

describe("mergeTopicConfigs", () => {
  it("integers: numbers or exact decimal strings, at least the documented minimum", () => {
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "max.message.bytes": "2048", "retention.ms": "-1" })).toMatchObject({ "max.message.bytes": 2048, "retention.ms": -1 });
    for (const v of ["1 ", " 2048", "02048", "+2048", "2e3", "2048.0", "-0", 1, 63]) expect(code({ "max.message.bytes": v }), String(v)).toBe("INVALID_CONFIG");
    expect(code({ "segment.bytes": 1048575 })).toBe("INVALID_CONFIG");
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "cleanup.policy": "compact, delete" })["cleanup.policy"]).toBe("compact,delete");
    expect(code({ "cleanup.policy": "del ete" })).toBe("INVALID_CONFIG");
  });

  it("a decimal config refuses 200,000 digits and a letter at once (the ambiguous pattern took minutes)", () => {
    expect(code({ "min.cleanable.dirty.ratio": `${"1".repeat(200_000)}x` })).toBe("INVALID_CONFIG");
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "min.cleanable.dirty.ratio": "5e-1" })["min.cleanable.dirty.ratio"]).toBe(0.5);
    expect(mergeTopicConfigs(DEFAULT_TOPIC_CONFIGS, { "min.cleanable.dirty.ratio": ".25" })["min.cleanable.dirty.ratio"]).toBe(0.25);
  });
});
