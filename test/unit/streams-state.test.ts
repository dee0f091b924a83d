import { describe, expect, it } from "vitest";
import type { AppendStreamRequest, CreateStreamRequest } from "../../src/streams/rpc.ts";
import { createValues, maxValueBytes, newStream, planStreamAppend, streamFromRow, streamRowValues, type StreamRow } from "../../src/streams/state.ts";

const utf8 = (s: string) => new TextEncoder().encode(s);

const createReq = (over: Partial<CreateStreamRequest> = {}): CreateStreamRequest => ({
  path: "p",
  contentType: null,
  closed: false,
  body: null,
  messages: null,
  fork: null,
  ttlSeconds: null,
  expiresAtMs: null,
  ...over,
});

const appendReq = (over: Partial<AppendStreamRequest> = {}): AppendStreamRequest => ({
  path: "p",
  contentType: "text/plain",
  body: utf8("hello"),
  messages: null,
  bodyError: null,
  close: false,
  streamSeq: null,
  producer: null,
  ...over,
});

describe("newStream and its ds_stream row", () => {
  it("round-trips through the row's parameters and columns", () => {
    const m = newStream(createReq({ contentType: "application/json", ttlSeconds: 60 }), 3, 1000);
    expect(m).toMatchObject({ path: "p", contentType: "application/json", json: true, ttlSeconds: 60, lastAccessMs: 1000, visibleStart: 3, fork: null, refCount: 0 });
    const [path, contentType, ttl, expires, inherited, lastAccess, closed, forkPath, forkTopic, forkTopicId, anchor, subOffset, forkOffset, visibleStart, createdAt] = streamRowValues(m);
    const row = {
      path,
      content_type: contentType,
      ttl_seconds: ttl,
      expires_at_ms: expires,
      expiry_inherited: inherited,
      last_access_ms: lastAccess,
      closed,
      closed_by_id: null,
      closed_by_epoch: null,
      closed_by_seq: null,
      stream_seq: null,
      fork_source_path: forkPath,
      fork_source_topic: forkTopic,
      fork_source_topic_id: forkTopicId,
      fork_anchor: anchor,
      fork_sub_offset: subOffset,
      fork_offset: forkOffset,
      visible_start: visibleStart,
      ref_count: 0,
      soft_deleted: 0,
      created_at_ms: createdAt,
    } as StreamRow;
    expect(streamFromRow(row)).toEqual(m);
  });

  it("cuts a byte body into values that fit max.message.bytes", () => {
    const m = newStream(createReq({ contentType: "text/plain" }), 0, 1);
    const values = createValues(createReq({ contentType: "text/plain", body: new Uint8Array(300) }), m, 164);
    expect(maxValueBytes(164)).toBe(100);
    expect(values.map((v) => v.length)).toEqual([100, 100, 100]);
  });
});

describe("planStreamAppend", () => {
  const meta = newStream(createReq({ contentType: "text/plain" }), 0, 1);

  it("writes the body and the producer's next state, stamped with the decision's time", () => {
    const plan = planStreamAppend(meta, null, appendReq({ producer: { id: "a", epoch: 0, seq: 0 } }), 7, 1_000_000, 42);
    expect(plan).toMatchObject({ kind: "write", values: [utf8("hello")], producer: { id: "a", epoch: 0, lastSeq: 0, atMs: 42 } });
  });

  it("closes, and rejects with the tail and closure in the details", () => {
    const close = planStreamAppend(meta, null, appendReq({ body: new Uint8Array(0), contentType: null, close: true }), 7, 1_000_000, 42);
    expect(close).toMatchObject({ kind: "write", values: [], producer: null, next: { closed: true } });
    const gap = planStreamAppend(meta, { epoch: 0, lastSeq: 1 }, appendReq({ producer: { id: "a", epoch: 0, seq: 5 } }), 7, 1_000_000, 42);
    expect(gap).toEqual({
      kind: "reject",
      code: "OUT_OF_ORDER_SEQUENCE_NUMBER",
      message: expect.any(String),
      details: { tail: 7, closed: false, expectedSeq: 2, receivedSeq: 5 },
    });
  });

  it("is a no-op for a producer duplicate", () => {
    expect(planStreamAppend(meta, { epoch: 0, lastSeq: 3 }, appendReq({ producer: { id: "a", epoch: 0, seq: 2 } }), 7, 1_000_000, 42)).toEqual({ kind: "noop", producerSeq: 3 });
  });
});
