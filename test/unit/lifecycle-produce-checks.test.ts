import { describe, expect, it } from "vitest";
import { checkCompactedKeys, checkTimestampBounds } from "../../src/lifecycle/index.ts";

const NOW = 1_700_000_000_000;
const HOUR = 3_600_000;

describe("KIP-937 timestamp bounds at produce", () => {
  const bounds = { timestampType: "CreateTime" as const, beforeMaxMs: 2 * HOUR, afterMaxMs: HOUR };

  it("accepts timestamps within [now - before.max, now + after.max], bounds included", () => {
    expect(checkTimestampBounds([NOW, NOW - 2 * HOUR, NOW + HOUR], NOW, bounds)).toBeNull();
  });

  it("refuses one too far in the past or the future with INVALID_TIMESTAMP naming the record and the config", () => {
    expect(checkTimestampBounds([NOW, NOW - 2 * HOUR - 1], NOW, bounds)).toEqual({
      ok: false,
      code: "INVALID_TIMESTAMP",
      message: `Record 1 has timestamp ${NOW - 2 * HOUR - 1}, more than message.timestamp.before.max.ms (${2 * HOUR}) before the broker's time ${NOW}.`,
      details: { index: 1, timestamp: NOW - 2 * HOUR - 1, nowMs: NOW, config: "message.timestamp.before.max.ms", maxMs: 2 * HOUR },
    });
    expect(checkTimestampBounds([NOW + HOUR + 1], NOW, bounds)).toMatchObject({ code: "INVALID_TIMESTAMP", details: { index: 0, config: "message.timestamp.after.max.ms" } });
  });

  it("the defaults (before: max, after: 1 hour) accept old timestamps such as field case B6's and refuse a far-future one", () => {
    const defaults = { timestampType: "CreateTime" as const, beforeMaxMs: Number.MAX_SAFE_INTEGER, afterMaxMs: HOUR };
    expect(checkTimestampBounds([0, NOW - 2 * 24 * HOUR], NOW, defaults)).toBeNull();
    expect(checkTimestampBounds([NOW + 365 * 24 * HOUR], NOW, defaults)).toMatchObject({ code: "INVALID_TIMESTAMP" });
  });

  it("LogAppendTime replaces the timestamps, so nothing is checked", () => {
    expect(checkTimestampBounds([0, NOW * 2], NOW, { ...bounds, timestampType: "LogAppendTime" })).toBeNull();
  });
});

describe("keys on a compacted topic", () => {
  it("a null key is INVALID_RECORD with its index; an empty key is a key; other policies accept null keys", () => {
    const k = new Uint8Array([1]);
    expect(checkCompactedKeys([k, new Uint8Array(0), null], true)).toEqual({
      ok: false,
      code: "INVALID_RECORD",
      message: "Record 2 has no key: a compacted topic needs a key on every record.",
      details: { index: 2, reason: "null-key" },
    });
    expect(checkCompactedKeys([k, new Uint8Array(0)], true)).toBeNull();
    expect(checkCompactedKeys([null], false)).toBeNull();
  });
});
