/**
 * A Durable Streams write as a Raft entry (src/streams/replicated.ts; docs/DURABLE-STREAMS.md
 * "Replicated streams"): the request packed into the entry's JSON header and binary parts and
 * back, so that every replica decides the same request. The header goes through JSON as the
 * replicated command's encoding sends it (durable-objects/partition/replica.ts, exercised end to
 * end by test/workers/replicated-streams.test.ts).
 */
import { describe, expect, it } from "vitest";
import { packAppend, packCreate, unpackAppend, unpackCreate, type StreamEntry } from "../../src/streams/replicated.ts";
import type { AppendStreamRequest, CreateStreamRequest } from "../../src/streams/rpc.ts";

const utf8 = (s: string) => new TextEncoder().encode(s);
const facts = { nowMs: 1_700_000_000_123, maxMessageBytes: 1_048_588, logAppendTime: null };

/** The entry as a replica decodes it: the header through JSON, the parts copied. */
function roundTrip(stream: StreamEntry, blobs: Uint8Array[]): { stream: StreamEntry; blobs: Uint8Array[] } {
  return { stream: JSON.parse(JSON.stringify(stream)) as StreamEntry, blobs: blobs.map((b) => b.slice()) };
}

describe("stream entries", () => {
  const append: AppendStreamRequest = {
    path: "a/b",
    contentType: "text/plain",
    body: utf8("héllo"),
    messages: null,
    bodyError: null,
    close: true,
    streamSeq: "0007",
    producer: { id: "p-1", epoch: 3, seq: 9 },
  };

  it("carries an append's body as one binary part and everything else in the header", () => {
    const packed = packAppend(append);
    expect(packed.blobs).toEqual([utf8("héllo")]);
    const back = roundTrip({ op: "append", req: packed.req, ...facts }, packed.blobs);
    expect(back.stream).toEqual({ op: "append", req: packed.req, ...facts });
    if (back.stream.op !== "append") throw new Error("not an append");
    expect(unpackAppend(back.stream.req, back.blobs)).toEqual(append);
  });

  it("carries JSON messages one per part; an empty or refused body keeps its emptiness and its error", () => {
    const json: AppendStreamRequest = { ...append, contentType: "application/json", body: utf8('[1,"x"]'), messages: [utf8("1"), utf8('"x"')], close: false };
    const packed = packAppend(json);
    expect(packed.blobs).toEqual([utf8("1"), utf8('"x"')]);
    const back = unpackAppend(packed.req, roundTrip({ op: "append", req: packed.req, ...facts }, packed.blobs).blobs);
    expect(back.messages).toEqual(json.messages);
    // The decision reads only whether the body is empty (messages are what is stored).
    expect(back.body.length > 0).toBe(true);
    const empty = packAppend({ ...append, body: new Uint8Array(0), close: true });
    expect(empty.blobs).toEqual([]);
    expect(unpackAppend(empty.req, []).body.length).toBe(0);
    const refused = packAppend({ ...append, contentType: "application/json", body: utf8("[]"), bodyError: { code: "EMPTY_BATCH", message: "empty" } });
    expect(unpackAppend(refused.req, refused.blobs)).toMatchObject({ body: utf8("[]"), messages: null, bodyError: { code: "EMPTY_BATCH", message: "empty" } });
  });

  it("carries a fork's create: the source record's prefix as the first part, before the body", () => {
    const fork = {
      sourcePath: "src",
      sourceTopic: "streams/default/src",
      sourceTopicId: "t1",
      anchorRequested: 0,
      anchor: 0,
      subOffset: 2,
      source: { contentType: "text/plain", expiry: { ttlSeconds: null, expiresAtMs: null }, anchor: 0, forkOffset: 0, prefix: utf8("ab"), visibleStart: 0 },
    };
    const create: CreateStreamRequest = { path: "f", contentType: null, ttlSeconds: null, expiresAtMs: null, closed: false, body: utf8("body"), messages: null, fork };
    const packed = packCreate(create);
    expect(packed.blobs).toEqual([utf8("ab"), utf8("body")]);
    const back = roundTrip({ op: "create", req: packed.req, ...facts }, packed.blobs);
    if (back.stream.op !== "create") throw new Error("not a create");
    expect(unpackCreate(back.stream.req, back.blobs)).toEqual(create);
    const noPrefix = { ...create, body: null, fork: { ...fork, source: { ...fork.source, prefix: null } } };
    const p2 = packCreate(noPrefix);
    expect(p2.blobs).toEqual([]);
    expect(unpackCreate(p2.req, p2.blobs)).toEqual(noPrefix);
  });

  it("carries a create's initial body or messages", () => {
    const create: CreateStreamRequest = {
      path: "s",
      contentType: "application/octet-stream",
      ttlSeconds: 60,
      expiresAtMs: null,
      closed: false,
      body: new Uint8Array([0, 255, 7]),
      messages: null,
      fork: null,
    };
    const packed = packCreate(create);
    const back = roundTrip({ op: "create", req: packed.req, ...facts }, packed.blobs);
    if (back.stream.op !== "create") throw new Error("not a create");
    expect(unpackCreate(back.stream.req, back.blobs)).toEqual(create);
    const none = packCreate({ ...create, body: null });
    expect(none.blobs).toEqual([]);
    expect(unpackCreate(none.req, [])).toEqual({ ...create, body: null });
  });

  it("round-trips the entries without a body", () => {
    for (const e of [
      { op: "delete", path: "x" },
      { op: "expire", path: "x" },
      { op: "touch", path: "x", lastAccessMs: 5 },
      { op: "expireProducers", beforeMs: 9 },
    ] satisfies StreamEntry[]) {
      expect(roundTrip(e, [])).toEqual({ stream: e, blobs: [] });
    }
  });
});
