import { describe, expect, it } from "vitest";
import { parseCommit, parseGroupConfigs, parseGroupId, parseHeartbeat, parseResetOffsets } from "../../src/groups/requests.ts";

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
}

describe("consumer-group request validation", () => {
  it("normalises topic names and owned partitions in a heartbeat", () => {
    const hb = parseHeartbeat({
      memberEpoch: 0,
      subscribedTopicNames: ["orders", "acme/prod/pay"],
      ownedPartitions: [{ topic: "orders", partitions: [2, 0, 2] }],
      sessionTimeoutMs: 1000,
    });
    expect(hb).toMatchObject({
      memberId: null,
      subscribedTopicNames: ["public/default/orders", "acme/prod/pay"],
      ownedPartitions: { "public/default/orders": [0, 2] },
      sessionTimeoutMs: 1000,
      rebalanceTimeoutMs: null,
      subscribedTopicRegex: null,
      assignor: null,
    });
  });

  it("answers the error table's codes", () => {
    expect(code(() => parseGroupId("a/b"))).toBe("INVALID_GROUP_ID");
    expect(code(() => parseGroupId(".."))).toBe("INVALID_GROUP_ID");
    expect(parseGroupId("orders-consumers_1.v2")).toBe("orders-consumers_1.v2");
    expect(code(() => parseHeartbeat({ memberEpoch: -1 }))).toBe("INVALID_REQUEST");
    expect(code(() => parseHeartbeat({ memberEpoch: 0, subscribedTopicRegex: "a(" }))).toBe("INVALID_REGULAR_EXPRESSION");
    expect(code(() => parseHeartbeat({ memberEpoch: 0, subscribedTopicRegex: "x".repeat(257) }))).toBe("INVALID_REQUEST");
    expect(code(() => parseHeartbeat({ memberEpoch: 0, assignor: "uniform" }))).toBe("UNSUPPORTED_ASSIGNOR");
    expect(code(() => parseHeartbeat({ memberEpoch: 0, rebalanceTimeoutMs: 99 }))).toBe("INVALID_SESSION_TIMEOUT");
    expect(code(() => parseHeartbeat({ memberEpoch: 0, memberId: "has space" }))).toBe("INVALID_REQUEST");
    expect(code(() => parseHeartbeat({ memberEpoch: 0, subscribedTopicNames: ["bad name"] }))).toBe("INVALID_TOPIC_NAME");
    expect(code(() => parseCommit({ memberId: "m", offsets: [{ topic: "t", partition: 0, offset: 1 }] }))).toBe("INVALID_REQUEST");
    expect(code(() => parseCommit({ offsets: [] }))).toBe("INVALID_REQUEST");
    expect(code(() => parseCommit({ offsets: [{ topic: "t", partition: 0, offset: 1.5 }] }))).toBe("INVALID_OFFSET");
    expect(
      code(() =>
        parseCommit({
          offsets: [
            { topic: "t", partition: 0, offset: 1 },
            { topic: "public/default/t", partition: 0, offset: 2 },
          ],
        }),
      ),
    ).toBe("INVALID_REQUEST");
    expect(code(() => parseCommit({ offsets: [{ topic: "t", partition: 0, offset: 1, metadata: "é".repeat(2049) }] }))).toBe("OFFSET_METADATA_TOO_LARGE");
    expect(code(() => parseResetOffsets({ topics: [{ topic: "t" }], spec: { to: "yesterday" } }))).toBe("INVALID_REQUEST");
    expect(code(() => parseGroupConfigs({ configs: { "session.timeout.ms": 1 } }))).toBe("INVALID_CONFIG");
    expect(parseGroupConfigs({ configs: { "heartbeat.interval.ms": "250" } })).toEqual({ "heartbeat.interval.ms": 250 });
  });

  it("parses commits and reset specs", () => {
    expect(parseCommit({ memberId: "m-1", memberEpoch: 3, offsets: [{ topic: "t", partition: 1, offset: 7, metadata: "x" }] })).toEqual({
      memberId: "m-1",
      memberEpoch: 3,
      offsets: [{ topic: "public/default/t", partition: 1, offset: 7, metadata: "x" }],
    });
    expect(parseResetOffsets({ topics: [{ topic: "t", partitions: [1, 0, 1] }], spec: { to: "timestamp", timestamp: 5 } })).toEqual({
      topics: [{ topic: "public/default/t", partitions: [0, 1] }],
      spec: { to: "timestamp", timestamp: 5 },
      dryRun: false,
    });
  });
});
