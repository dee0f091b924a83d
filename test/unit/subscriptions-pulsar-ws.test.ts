/**
 * The pure translation of Pulsar's WebSocket API (src/subscriptions/pulsar-ws.ts): message ids,
 * consumer and reader options, client frames, pushed messages and receipts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatMessageId } from "../../src/subscriptions/message-id.ts";
import {
  isoTime,
  isPulsarFrameError,
  parsePulsarConsumerFrame,
  parsePulsarConsumerQuery,
  parsePulsarMessageId,
  parsePulsarProducerFrame,
  parsePulsarReaderQuery,
  pulsarErrorFrame,
  pulsarMessageIdOf,
  pulsarSendError,
  pulsarSendOk,
  toPulsarMessage,
} from "../../src/subscriptions/pulsar-ws.ts";

describe("message ids", () => {
  it("round-trip: base64 of the native id, 28 characters", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1023 }), fc.maxSafeNat(), (p, o) => {
        const id = pulsarMessageIdOf(p, o);
        expect(id).toBe(btoa(formatMessageId(p, o)));
        // 21 bytes of digits and ':' encode to letters and digits only: safe in a URL query unescaped.
        expect(id).toMatch(/^[A-Za-z0-9]{28}$/);
        expect(parsePulsarMessageId(id)).toEqual({ partition: p, offset: o });
      }),
    );
  });

  it("refuses what is not base64 of a native id (Pulsar's own ids included)", () => {
    for (const bad of ["CAAQAw==", "", "!!!!", btoa("0000:00000000000001"), 42, null, "a".repeat(100)]) expect(parsePulsarMessageId(bad)).toBeNull();
  });
});

describe("consumer options", () => {
  const q = (s: string) => new URLSearchParams(s);

  it("maps Pulsar's names onto the native ones", () => {
    const o = parsePulsarConsumerQuery(
      "sub",
      q(
        "subscriptionType=Key_Shared&ackTimeoutMillis=1500&negativeAckRedeliveryDelay=200&receiverQueueSize=7&maxRedeliverCount=3&deadLetterTopic=dlq&pullMode=true&consumerName=c1&priorityLevel=2&token=x",
      ),
      "dflt",
    );
    if ("ok" in o) throw new Error(o.message);
    expect(o.options).toMatchObject({
      subscription: "sub",
      type: "key_shared",
      policy: { ackTimeoutMs: 1500, negativeAckRedeliveryDelayMs: 200, maxRedeliverCount: 3 },
      deadLetterTopic: "dlq",
      pullMode: true,
      receiverQueueSize: 7,
      consumerName: "c1",
      priorityLevel: 2,
      encoding: "base64",
      initialPosition: { kind: "latest" },
    });
    expect(o.nativeQuery.has("token")).toBe(false);
  });

  it("defaults as Pulsar's WebSocket consumer: Exclusive, latest, push mode of 1000; one consumer name for every partition", () => {
    const o = parsePulsarConsumerQuery("s", q(""), "gen-name");
    if ("ok" in o) throw new Error(o.message);
    expect(o.options).toMatchObject({
      type: "exclusive",
      pullMode: false,
      receiverQueueSize: 1000,
      consumerName: "gen-name",
      policy: { ackTimeoutMs: 0, negativeAckRedeliveryDelayMs: 60_000 },
    });
    const e = parsePulsarConsumerQuery("s", q("subscriptionInitialPosition=Earliest"), "n");
    expect("ok" in e ? null : e.options.initialPosition).toEqual({ kind: "earliest" });
  });

  it("takes the dead-letter topic's persistent:// name", () => {
    const o = parsePulsarConsumerQuery("s", q("deadLetterTopic=persistent://t1/ns1/dlq"), "n");
    expect("ok" in o ? null : o.options.deadLetterTopic).toBe("t1/ns1/dlq");
    expect(parsePulsarConsumerQuery("s", q("deadLetterTopic=non-persistent://t1/ns1/dlq"), "n")).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { field: "deadLetterTopic" } });
  });

  it("refusals name Pulsar's parameter", () => {
    for (const [query, field] of [
      ["subscriptionType=Bogus", "subscriptionType"],
      ["ackTimeoutMillis=abc", "ackTimeoutMillis"],
      ["negativeAckRedeliveryDelay=-5", "negativeAckRedeliveryDelay"],
      ["receiverQueueSize=0", "receiverQueueSize"],
      ["pullMode=yes", "pullMode"],
      ["priorityLevel=x", "priorityLevel"],
      ["subscriptionInitialPosition=Middle", "subscriptionInitialPosition"],
    ] as const) {
      const o = parsePulsarConsumerQuery("s", q(query), "n");
      expect("ok" in o ? [o.code, o.details?.field] : null, query).toEqual(["INVALID_REQUEST", field]);
    }
  });
});

describe("reader options", () => {
  it("messageId: latest (default), earliest, or an id; receiverQueueSize bounds", () => {
    expect(parsePulsarReaderQuery(new URLSearchParams(""), 10_000)).toEqual({ start: { kind: "latest" }, receiverQueueSize: 1000 });
    expect(parsePulsarReaderQuery(new URLSearchParams("messageId=earliest&receiverQueueSize=5&readerName=r"), 10_000)).toEqual({ start: { kind: "earliest" }, receiverQueueSize: 5 });
    const id = pulsarMessageIdOf(0, 2);
    expect(parsePulsarReaderQuery(new URLSearchParams({ messageId: id }), 10_000)).toEqual({ start: { kind: "id", position: { partition: 0, offset: 2 } }, receiverQueueSize: 1000 });
    expect(parsePulsarReaderQuery(new URLSearchParams("messageId=CAAQAw=="), 10_000)).toMatchObject({ ok: false, code: "INVALID_MESSAGE_ID" });
    expect(parsePulsarReaderQuery(new URLSearchParams("receiverQueueSize=10001"), 10_000)).toMatchObject({ ok: false, code: "INVALID_REQUEST", details: { field: "receiverQueueSize" } });
  });
});

describe("consumer frames", () => {
  const id = pulsarMessageIdOf(3, 9);
  it("parses Pulsar's documented frames", () => {
    expect(parsePulsarConsumerFrame(JSON.stringify({ messageId: id }))).toEqual({ type: "ack", position: { partition: 3, offset: 9 } });
    expect(parsePulsarConsumerFrame(JSON.stringify({ type: "negativeAcknowledge", messageId: id }))).toEqual({ type: "negativeAcknowledge", position: { partition: 3, offset: 9 } });
    expect(parsePulsarConsumerFrame(JSON.stringify({ type: "permit", permitMessages: 100 }))).toEqual({ type: "permit", permits: 100 });
    expect(parsePulsarConsumerFrame(JSON.stringify({ type: "isEndOfTopic" }))).toEqual({ type: "isEndOfTopic" });
    expect(parsePulsarConsumerFrame(JSON.stringify({ type: "unsubscribe" }))).toEqual({ type: "unsubscribe" });
  });

  it("refuses the rest with a code", () => {
    for (const [frame, code] of [
      ["{", "INVALID_JSON"],
      ["[]", "INVALID_REQUEST"],
      [JSON.stringify({ messageId: "CAAQAw==" }), "INVALID_MESSAGE_ID"],
      [JSON.stringify({ type: "permit", permitMessages: 0 }), "INVALID_REQUEST"],
      [JSON.stringify({ type: "permit", permitMessages: "5" }), "INVALID_REQUEST"],
      [JSON.stringify({ type: "close" }), "INVALID_REQUEST"],
    ] as const) {
      const f = parsePulsarConsumerFrame(frame);
      expect(isPulsarFrameError(f) ? f.code : null, frame).toBe(code);
    }
    expect(pulsarErrorFrame({ code: "INVALID_JSON", message: "m" })).toEqual({ result: "error:3", errorCode: "INVALID_JSON", errorMsg: "m" });
    expect(pulsarErrorFrame({ code: "INVALID_MESSAGE_ID", message: "m" }).result).toBe("error:7");
  });
});

describe("producer frames and receipts", () => {
  it("the documented message becomes a base64 record with its properties as headers", () => {
    const f = parsePulsarProducerFrame(JSON.stringify({ payload: "SGVsbG8gV29ybGQ=", properties: { key1: "value1", key2: "value2" }, context: "1" }));
    expect(f).toEqual({
      context: "1",
      record: {
        key: null,
        value: "SGVsbG8gV29ybGQ=",
        headers: [
          { key: "key1", value: btoa("value1") },
          { key: "key2", value: btoa("value2") },
        ],
      },
    });
    expect(parsePulsarProducerFrame(JSON.stringify({ payload: "", key: "k", context: 5, deliverAfterMs: 100, eventTime: 0 }))).toEqual({
      context: "5",
      record: { key: "k", value: "", headers: [], deliverAfterMs: 100 },
    });
  });

  it("bad frames keep their context for the send-error receipt", () => {
    for (const [frame, code, context] of [
      ["nope", "INVALID_JSON", null],
      [JSON.stringify({ payload: "%%%", context: "c" }), "INVALID_ENCODING", "c"],
      [JSON.stringify({ context: "c" }), "INVALID_REQUEST", "c"],
      [JSON.stringify({ payload: "", properties: { a: 1 }, context: "c" }), "INVALID_REQUEST", "c"],
      [JSON.stringify({ payload: "", properties: { "edgelog-deliver-at": "1" } }), "INVALID_REQUEST", null],
      [JSON.stringify({ payload: "", deliverAt: -1 }), "INVALID_REQUEST", null],
      [JSON.stringify({ payload: "", deliverAt: 5, deliverAfterMs: 5 }), "INVALID_REQUEST", null],
      [JSON.stringify({ payload: "", paylod: "" }), "INVALID_REQUEST", null],
    ] as const) {
      const f = parsePulsarProducerFrame(frame);
      expect(isPulsarFrameError(f) ? [f.code, f.context] : null, frame).toEqual([code, context]);
    }
    expect(pulsarSendError({ code: "INVALID_ENCODING", message: "m" }, "c")).toEqual({ result: "send-error:7", errorMsg: "m", errorCode: "INVALID_ENCODING", context: "c" });
    expect(pulsarSendError({ code: "UNAVAILABLE", message: "m" }, null)).toEqual({ result: "send-error:8", errorMsg: "m", errorCode: "UNAVAILABLE" });
    expect(pulsarSendOk("id", "1")).toEqual({ result: "ok", messageId: "id", context: "1" });
    expect(pulsarSendOk("id", null)).toEqual({ result: "ok", messageId: "id" });
  });
});

describe("pushed messages", () => {
  it("publishTime is ISO 8601 UTC, as Date's for every time up to year 9999", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253_402_300_799_999 }), (ms) => {
        expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }),
    );
  });

  it("native message -> Pulsar's shape; the deliver-at header is not a property; the key only when set", () => {
    const m = toPulsarMessage({
      messageId: formatMessageId(1, 4),
      partition: 1,
      offset: 4,
      timestamp: Date.UTC(2026, 0, 2, 3, 4, 5, 6),
      key: btoa("k"),
      value: "SGVsbG8gV29ybGQ=",
      headers: [
        { key: "a", value: btoa("1") },
        { key: "edgelog-deliver-at", value: btoa("99") },
        { key: "a", value: btoa("2") },
        { key: "n", value: null },
      ],
      redeliveryCount: 2,
    });
    expect(m).toEqual({
      messageId: pulsarMessageIdOf(1, 4),
      payload: "SGVsbG8gV29ybGQ=",
      properties: { a: "2", n: "" },
      publishTime: "2026-01-02T03:04:05.006Z",
      redeliveryCount: 2,
      key: "k",
    });
    const noKey = toPulsarMessage({ messageId: formatMessageId(0, 0), partition: 0, offset: 0, timestamp: 0, key: null, value: null, headers: [], redeliveryCount: 0 });
    expect(noKey).toEqual({ messageId: pulsarMessageIdOf(0, 0), payload: "", properties: {}, publishTime: "1970-01-01T00:00:00.000Z", redeliveryCount: 0 });
  });
});
