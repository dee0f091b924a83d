/**
 * Message JSON shared across subscriptions (src/subscriptions/message-json.ts): a `messages`
 * frame concatenated from cached per-record heads is exactly the text the per-subscriber
 * serialiser wrote (`JSON.stringify({ type: "messages", messages })` of WireMessage objects),
 * for any records, redelivery counts and encoding; frames cut at a limit carry the same
 * messages in order.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/codec/types.ts";
import { FrameMemo, MessageJsonCache, messageJson, messageJsonHead, messagesFrames, wireMessage, type WireEncoding } from "../../src/subscriptions/message-json.ts";
import type { WireMessage } from "../../src/subscriptions/wire.ts";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Bytes: any (invalid UTF-8 included) or the UTF-8 of any text (quotes, controls, astral). */
const arbBytes = fc.option(fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.string({ unit: "binary", maxLength: 30 }).map(utf8)), { nil: null });

const arbRecord = (offset: number) =>
  fc
    .record({
      timestamp: fc.integer({ min: 0, max: 2 ** 45 }),
      key: arbBytes,
      value: arbBytes,
      headers: fc.array(fc.record({ key: fc.string({ unit: "binary", maxLength: 12 }), value: arbBytes }), { maxLength: 3 }),
    })
    .map((r) => ({ ...r, offset }) as LogRecord);

const arbDeliveries = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 2 ** 40 }), fc.nat({ max: 1000 })), { minLength: 1, maxLength: 12 })
  .chain((xs) => fc.tuple(...xs.map(([offset, count]) => arbRecord(offset).map((r) => ({ r, count })))));

const arbEncoding = fc.constantFrom<WireEncoding>("string", "base64");

/** The serialiser the room used before: one WireMessage object per delivery, stringified per frame. */
const oldFrame = (messages: WireMessage[]): string => JSON.stringify({ type: "messages", messages });

describe("message JSON", () => {
  it("a frame of cached heads plus counts is byte-identical to the per-subscriber serialiser's frame", () => {
    fc.assert(
      fc.property(arbDeliveries, arbEncoding, fc.nat({ max: 1023 }), (ds, encoding, partition) => {
        const cache = new MessageJsonCache();
        const parts = ds.map(({ r, count }) => cache.json(partition, r, count, encoding));
        const frames = messagesFrames(parts, Number.POSITIVE_INFINITY);
        const old = oldFrame(ds.map(({ r, count }) => wireMessage(partition, r, count, encoding)));
        expect(frames).toEqual([old]);
        expect(JSON.parse(frames[0]!)).toEqual(JSON.parse(old));
      }),
    );
  });

  it("one cached head serves every redelivery count of a record", () => {
    fc.assert(
      fc.property(arbRecord(7), arbEncoding, fc.array(fc.nat({ max: 100_000 }), { minLength: 1, maxLength: 5 }), (r, encoding, counts) => {
        const cache = new MessageJsonCache();
        const head = cache.head(0, r, encoding);
        expect(head).toBe(messageJsonHead(0, r, encoding));
        for (const c of counts) {
          expect(cache.json(0, r, c, encoding)).toBe(JSON.stringify(wireMessage(0, r, c, encoding)));
          expect(cache.head(0, r, encoding)).toBe(head);
        }
      }),
    );
  });

  it("frames cut at a limit of UTF-8 bytes carry the same messages in order, each within the limit unless it holds one message", () => {
    fc.assert(
      fc.property(arbDeliveries, arbEncoding, fc.integer({ min: 1, max: 2000 }), (ds, encoding, limit) => {
        const parts = ds.map(({ r, count }) => messageJson(messageJsonHead(3, r, encoding), count));
        const frames = messagesFrames(parts, limit);
        const carried = frames.flatMap((f) => {
          const parsed = JSON.parse(f) as { type: string; messages: unknown[] };
          expect(parsed.type).toBe("messages");
          expect(parsed.messages.length).toBeGreaterThan(0);
          // The limit is UTF-8 bytes, as the socket sends the frame (not UTF-16 code units).
          if (parsed.messages.length > 1) expect(utf8(f).length).toBeLessThanOrEqual(limit);
          return parsed.messages;
        });
        expect(carried).toEqual(ds.map(({ r, count }) => JSON.parse(JSON.stringify(wireMessage(3, r, count, encoding)))));
        // Each frame is what the old serialiser wrote for the same messages.
        let i = 0;
        for (const f of frames) {
          const n = (JSON.parse(f) as { messages: unknown[] }).messages.length;
          expect(f).toBe(oldFrame(ds.slice(i, i + n).map(({ r, count }) => wireMessage(3, r, count, encoding))));
          i += n;
        }
      }),
    );
  });

  it("the frame memo always answers what messagesFrames answers (repeated, changed and re-cut lists)", () => {
    const arbList = fc.array(fc.constantFrom("a", "bb", '{"x":1}', "ccc"), { maxLength: 6 });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), arbList, fc.constantFrom(5, 20, 1000)), { minLength: 1, maxLength: 20 }), (steps) => {
        const memo = new FrameMemo();
        let last: string[] = [];
        for (const [repeat, list, limit] of steps) {
          const messages = repeat ? [...last] : list;
          expect(memo.frames(messages, limit)).toEqual(messagesFrames(messages, limit));
          last = messages;
        }
        memo.clear();
        expect(memo.frames(last, 1000)).toEqual(messagesFrames(last, 1000));
      }),
    );
  });

  it("a first delivery's JSON is one shared string per record and encoding", () => {
    const r = { offset: 9, timestamp: 1, key: null, value: utf8("v"), headers: [] } as unknown as LogRecord;
    const cache = new MessageJsonCache();
    const a = cache.json(0, r, 0, "string");
    expect(cache.json(0, r, 0, "string")).toBe(a);
    expect(a).toBe(JSON.stringify(wireMessage(0, r, 0, "string")));
    expect(cache.json(0, r, 3, "string")).toBe(JSON.stringify(wireMessage(0, r, 3, "string")));
  });

  it("no messages, no frames", () => {
    expect(messagesFrames([], 100)).toEqual([]);
  });

  it("encodings are cached apart, and clear() drops the heads", () => {
    const r = { offset: 5, timestamp: 1, key: utf8("k"), value: utf8("héllo"), headers: [{ key: "h", value: null }] } as unknown as LogRecord;
    const cache = new MessageJsonCache();
    const s = cache.head(0, r, "string");
    const b = cache.head(0, r, "base64");
    expect(s).toBe('{"messageId":"0000:0000000000000005","partition":0,"offset":5,"timestamp":1,"key":"k","value":"héllo","headers":[{"key":"h","value":null}],"redeliveryCount":');
    expect(b).toContain('"value":"aMOpbGxv"');
    expect(cache.head(0, r, "string")).toBe(s);
    cache.clear();
    // A record object mutated in place (never done by the room) shows that clear() rebuilt the head.
    (r as { timestamp: number }).timestamp = 2;
    expect(cache.head(0, r, "string")).toContain('"timestamp":2');
  });

  it("a different partition is not answered from another partition's heads", () => {
    const r = { offset: 1, timestamp: 1, key: null, value: null, headers: [] } as unknown as LogRecord;
    const cache = new MessageJsonCache();
    expect(cache.head(0, r, "string")).toContain('"partition":0');
    expect(cache.head(2, r, "string")).toContain('"partition":2');
  });
});
