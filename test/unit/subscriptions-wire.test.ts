/**
 * The native WebSocket protocol's parsing (src/subscriptions/wire.ts; docs/PROTOCOL.md
 * "Consumers over WebSocket"): defaults, bounds, and the error code of every refusal.
 */
import { describe, expect, it } from "vitest";
import { parseClientFrame, parseReaderQuery, parseSubscribeQuery } from "../../src/subscriptions/wire.ts";

const q = (s: string) => new URLSearchParams(s);
const code = (r: unknown) => (r as { code?: string }).code;

describe("subscribe options", () => {
  it("defaults as Pulsar's: exclusive, latest, no ack timeout, nack delay 60 s, receiver queue 1000", () => {
    expect(parseSubscribeQuery("s", q(""))).toEqual({
      subscription: "s",
      type: "exclusive",
      initialPosition: { kind: "latest" },
      policy: { ackTimeoutMs: 0, negativeAckRedeliveryDelayMs: 60_000, maxRedeliverCount: 0 },
      deadLetterTopic: null,
      pullMode: false,
      receiverQueueSize: 1000,
      consumerName: null,
      priorityLevel: 0,
      encoding: "string",
    });
  });

  it("reads every option, Pulsar's subscriptionType spelling included", () => {
    const o = parseSubscribeQuery(
      "s",
      q(
        "subscriptionType=Key_Shared&initialPosition=timestamp:250&ackTimeoutMs=1000&negativeAckRedeliveryDelayMs=200&maxRedeliverCount=2&deadLetterTopic=dlq&receiverQueueSize=3&pullMode=true&consumerName=c1&priorityLevel=1&encoding=base64&token=x",
      ),
    );
    expect(o).toMatchObject({
      type: "key_shared",
      initialPosition: { kind: "timestamp", timestampMs: 250 },
      policy: { ackTimeoutMs: 1000, negativeAckRedeliveryDelayMs: 200, maxRedeliverCount: 2 },
      deadLetterTopic: "dlq",
      pullMode: true,
      receiverQueueSize: 3,
      consumerName: "c1",
      priorityLevel: 1,
      encoding: "base64",
    });
  });

  it("refuses bad values with INVALID_REQUEST naming the field", () => {
    for (const [query, field] of [
      ["type=queue", "type"],
      ["initialPosition=yesterday", "initialPosition"],
      ["ackTimeoutMs=500", "ackTimeoutMs"],
      ["receiverQueueSize=0", "receiverQueueSize"],
      ["receiverQueueSize=10001", "receiverQueueSize"],
      ["pullMode=yes", "pullMode"],
      ["consumerName=a%20b", "consumerName"],
      ["maxRedeliverCount=-1", "maxRedeliverCount"],
    ] as const) {
      const r = parseSubscribeQuery("s", q(query)) as unknown as { code: string; details: { field: string } };
      expect([query, r.code, r.details.field]).toEqual([query, "INVALID_REQUEST", field]);
    }
    expect(code(parseSubscribeQuery("a/b", q("")))).toBe("INVALID_REQUEST");
  });

  it("refuses a dead-letter topic name the metadata object would refuse (its copies could never be produced)", () => {
    for (const dlq of ["a/b", "a/b/c/d", "x".repeat(250), "bad name", "t/ns/..", "."]) {
      const r = parseSubscribeQuery("s", q(`maxRedeliverCount=1&deadLetterTopic=${encodeURIComponent(dlq)}`)) as unknown as { code: string; details: { field: string } };
      expect([dlq, r.code, r.details.field]).toEqual([dlq, "INVALID_REQUEST", "deadLetterTopic"]);
    }
    expect(parseSubscribeQuery("s", q("deadLetterTopic=acme/orders/dlq"))).toMatchObject({ deadLetterTopic: "acme/orders/dlq" });
    expect(parseSubscribeQuery("s", q("deadLetterTopic=dlq"))).toMatchObject({ deadLetterTopic: "dlq" });
  });

  it("backoff refusals name the query parameter", () => {
    for (const [query, field] of [
      ["negativeAckRedeliveryDelayMs=100&negativeAckBackoffMaxMs=1000&negativeAckBackoffMultiplier=0", "negativeAckBackoffMultiplier"],
      ["negativeAckRedeliveryDelayMs=100&negativeAckBackoffMaxMs=1000&negativeAckBackoffMultiplier=NaN", "negativeAckBackoffMultiplier"],
      ["negativeAckBackoffMaxMs=1000", "negativeAckBackoffMaxMs"], // below the default nack delay 60 s
    ] as const) {
      const r = parseSubscribeQuery("s", q(query)) as unknown as { code: string; details: { field: string } };
      expect([query, r.code, r.details.field]).toEqual([query, "INVALID_REQUEST", field]);
    }
  });
});

describe("reader options (field case A4)", () => {
  it("start positions and inclusive", () => {
    expect(parseReaderQuery(q(""), 0)).toMatchObject({ start: { kind: "latest" }, inclusive: false });
    expect(parseReaderQuery(q("start=0000:0000000000000002&inclusive=true"), 0)).toMatchObject({ start: { kind: "offset", offset: 2 }, inclusive: true });
    expect(parseReaderQuery(q("start=timestamp:5"), 0)).toMatchObject({ start: { kind: "timestamp", timestampMs: 5 } });
    expect(code(parseReaderQuery(q("start=m2"), 0))).toBe("INVALID_MESSAGE_ID");
  });

  it("a start message id of another partition is refused (INVALID_MESSAGE_ID), not read as an offset of this one", () => {
    expect(parseReaderQuery(q("start=0001:0000000000000002"), 0)).toEqual({
      ok: false,
      code: "INVALID_MESSAGE_ID",
      message: "start 0001:0000000000000002 is a message id of partition 1, this reader is on partition 0.",
      details: { field: "start" },
    });
    expect(parseReaderQuery(q("start=0001:0000000000000002"), 1)).toMatchObject({ start: { kind: "offset", offset: 2 } });
  });
});

describe("client frames", () => {
  const id = (o: number, p = 0) => `${String(p).padStart(4, "0")}:${String(o).padStart(16, "0")}`;
  it("parses acks, cumulative acks, nacks, permits and pings", () => {
    expect(parseClientFrame(JSON.stringify({ type: "ack", messageIds: [id(1), id(3)], requestId: "r" }), 0)).toEqual({ type: "ack", offsets: [1, 3], requestId: "r" });
    expect(parseClientFrame(JSON.stringify({ type: "ack", messageId: id(4) }), 0)).toEqual({ type: "ack", offsets: [4], requestId: null });
    expect(parseClientFrame(JSON.stringify({ type: "ackCumulative", messageId: id(9) }), 0)).toEqual({ type: "ackCumulative", offset: 9, requestId: null });
    expect(parseClientFrame(JSON.stringify({ type: "nack", messageIds: [id(2)], redeliveryCount: 1 }), 0)).toEqual({ type: "nack", offsets: [2], redeliveryCount: 1, requestId: null });
    expect(parseClientFrame(JSON.stringify({ type: "permit", permits: 5 }), 0)).toEqual({ type: "permit", permits: 5 });
    expect(parseClientFrame('{"type":"ping"}', 0)).toEqual({ type: "ping" });
  });

  it("refuses what is not the protocol, with the table's codes", () => {
    expect(code(parseClientFrame("not json", 0))).toBe("INVALID_JSON");
    expect(code(parseClientFrame(new ArrayBuffer(2), 0))).toBe("INVALID_REQUEST");
    expect(code(parseClientFrame("[]", 0))).toBe("INVALID_REQUEST");
    expect(code(parseClientFrame('{"type":"flow"}', 0))).toBe("INVALID_REQUEST");
    expect(code(parseClientFrame(JSON.stringify({ type: "ack", messageIds: [] }), 0))).toBe("INVALID_REQUEST");
    expect(code(parseClientFrame(JSON.stringify({ type: "ack", messageIds: ["x"] }), 0))).toBe("INVALID_MESSAGE_ID");
    expect(code(parseClientFrame(JSON.stringify({ type: "ack", messageIds: [id(1, 3)] }), 0))).toBe("INVALID_MESSAGE_ID");
    expect(code(parseClientFrame(JSON.stringify({ type: "permit", permits: 0 }), 0))).toBe("INVALID_REQUEST");
    expect(code(parseClientFrame(JSON.stringify({ type: "ack", messageId: id(1), requestId: "" }), 0))).toBe("INVALID_REQUEST");
  });

  it("a refused frame keeps its valid requestId, so the client can match the refusal (an SDK ack would wait forever otherwise)", () => {
    expect(parseClientFrame(JSON.stringify({ type: "ack", messageIds: [id(1), "garbage"], requestId: "r1" }), 0)).toEqual({
      ok: false,
      code: "INVALID_MESSAGE_ID",
      message: '"garbage" is not a message id.',
      details: { messageId: "garbage" },
      requestId: "r1",
    });
    expect(parseClientFrame(JSON.stringify({ type: "nack", messageIds: [id(1, 2)], requestId: "r2" }), 0)).toMatchObject({ code: "INVALID_MESSAGE_ID", requestId: "r2" });
    expect(parseClientFrame(JSON.stringify({ type: "flow", requestId: "r3" }), 0)).toMatchObject({ code: "INVALID_REQUEST", requestId: "r3" });
    // No valid request id to echo: null.
    expect(parseClientFrame("not json", 0)).toMatchObject({ code: "INVALID_JSON", requestId: null });
    expect(parseClientFrame(JSON.stringify({ type: "ack", messageId: id(1), requestId: 7 }), 0)).toMatchObject({ code: "INVALID_REQUEST", requestId: null });
  });
});
