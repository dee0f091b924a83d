/**
 * The pure logic behind two WebSocket rules (test/workers/ws-acks-and-sizes.test.ts runs them
 * through the gateway and the partition objects):
 *
 * - a reader's window (src/subscriptions/reader-window.ts) gives a permit back only for an
 *   offset it delivered and that is not acked yet, once; against a Set model, with its stored
 *   form restored after a "hibernation", and within the 2,048-byte attachment;
 * - frame sizes are UTF-8 bytes: `utf8ByteLength` against TextEncoder, and every frame limit
 *   (consumer and reader frames, Pulsar frames, native produce frames, server `messages` frames)
 *   refuses a frame of multi-byte text whose code units are under the limit but bytes over it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_NATIVE_PRODUCE_FRAME_BYTES, NATIVE_PRODUCER } from "../../src/gateway/ws-produce.ts";
import { PULSAR_PRODUCER } from "../../src/gateway/pulsar-ws.ts";
import { utf8ByteLength, utf8LongerThan } from "../../src/protocol/encoding.ts";
import { AckRangeSet, MAX_ATTACHED_READER_RANGES, ReaderWindow } from "../../src/subscriptions/index.ts";
import { messagesFrames } from "../../src/subscriptions/message-json.ts";
import { MAX_PULSAR_FRAME_BYTES, parsePulsarConsumerFrame, parsePulsarProducerFrame } from "../../src/subscriptions/pulsar-ws.ts";
import { MAX_CLIENT_FRAME_BYTES, parseClientFrame } from "../../src/subscriptions/wire.ts";

const encoder = new TextEncoder();
const bytesOf = (s: string) => encoder.encode(s).length;
const id = (offset: number) => `0000:${String(offset).padStart(16, "0")}`;

/** A JSON frame `base` padded with `pad` repeated until its length in code units is `units`. */
function padded(base: Record<string, unknown>, pad: string, units: number): string {
  const empty = JSON.stringify({ ...base, pad: "" });
  const n = Math.floor((units - empty.length) / pad.length);
  return JSON.stringify({ ...base, pad: pad.repeat(n) });
}

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("ReaderWindow", { timeout: 30_000 }, () => {
  it("an ack of an offset never delivered, acked already, or named twice gives nothing back and changes nothing", () => {
    const w = new ReaderWindow(3, 0);
    w.deliver([0, 1, 2]);
    expect(w.available).toBe(0);
    expect(w.checkAck([7])).toBe(7); // never delivered
    expect(w.checkAck([3])).toBe(3); // the next one, not delivered yet
    expect(w.checkAck([1, 1])).toBe(1); // twice in one frame
    expect(w.checkAck([0, 9])).toBe(9); // one good, one bad: refused whole
    expect([w.available, w.unacked, w.holds(0)]).toEqual([0, 3, true]);
    expect(w.checkAck([0])).toBe(null);
    expect(w.ack([0])).toBe(1);
    expect(w.checkAck([0])).toBe(0); // acked already
    expect(() => w.ack([0])).toThrow(/not in flight/);
    expect([w.available, w.unacked, w.next]).toEqual([1, 2, 3]);
  });

  it("deliveries beyond the permits, or not after the last, are bugs (throw)", () => {
    const w = new ReaderWindow(2, 5);
    expect(() => w.deliver([5, 6, 7])).toThrow(/permits/);
    expect(() => w.deliver([4])).toThrow(/after/);
    w.deliver([5, 9]); // gaps (compaction) are fine
    expect(() => w.deliver([])).not.toThrow();
    expect([w.next, w.unacked]).toEqual([10, 2]);
  });

  it("behaves as a Set model of delivered-and-unacked offsets; available + unacked = receiverQueueSize; restores exactly, or restarts at the lowest unacked (property)", () => {
    const op = fc.oneof(
      // Deliver up to n of the log's next records (the log has gaps: each step is 1..3 offsets).
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant("deliver" as const),
          n: fc.integer({ min: 0, max: 80 }),
          steps: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 80, maxLength: 80 }),
        }),
      },
      // Ack ids near the delivered range: some delivered, some not, some twice.
      { weight: 2, arbitrary: fc.record({ kind: fc.constant("ack" as const), ids: fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 6 }) }) },
      // Ack in order, or every other message (out of order: the span splits).
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("ackSome" as const), every: fc.constantFrom(1, 2), n: fc.integer({ min: 1, max: 100 }) }) },
      // Compaction removes the record of an unacked delivery.
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("compact" as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("hibernate" as const) }) },
    );
    let restores = 0;
    fc.assert(
      // Up to 200 permits: acks out of order can split a window past the 48 ranges an attachment keeps.
      fc.property(fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 100, max: 200 })), fc.array(op, { maxLength: 60 }), (q, ops) => {
        let w = new ReaderWindow(q, 0);
        let model = new Set<number>();
        /** The partition's records (offsets); each delivery appends, compaction removes. */
        let log = new Set<number>();
        let next = 0;
        const ack = (ids: number[]) => {
          expect(w.checkAck(ids)).toBe(null);
          expect(w.ack(ids)).toBe(ids.length);
          for (const x of ids) model.delete(x);
        };
        for (const o of ops) {
          if (o.kind === "deliver") {
            const offsets: number[] = [];
            let at = next;
            for (let i = 0; i < Math.min(o.n, w.available); i++) {
              offsets.push(at);
              at += o.steps[i]!;
            }
            w.deliver(offsets);
            for (const x of offsets) {
              model.add(x);
              log.add(x);
            }
            if (offsets.length > 0) next = offsets.at(-1)! + 1;
          } else if (o.kind === "ack") {
            const before = [w.available, w.unacked, w.next];
            const ok = o.ids.every((x) => model.has(x)) && new Set(o.ids).size === o.ids.length;
            if (ok) {
              ack(o.ids);
              continue;
            }
            // Refused: the first offending id is named and nothing changes.
            const bad = w.checkAck(o.ids);
            expect(bad).not.toBe(null);
            expect(!model.has(bad!) || o.ids.filter((x) => x === bad).length > 1).toBe(true);
            expect([w.available, w.unacked, w.next]).toEqual(before);
          } else if (o.kind === "ackSome") {
            const held = [...model].sort((a, b) => a - b);
            const ids = held.filter((_, i) => i % o.every === 0).slice(0, o.n);
            if (ids.length > 0) ack(ids);
          } else if (o.kind === "compact") {
            const held = [...model];
            if (held.length > 0) log.delete(held[o.pick % held.length]!);
          } else {
            // A hibernation: memory is lost, the attachment and the log restore the window.
            const stored = JSON.parse(JSON.stringify(w.store())) as ReturnType<ReaderWindow["store"]>;
            expect(bytesOf(JSON.stringify({ r: "subs", v: 1, k: "r", ...stored, b: true }))).toBeLessThan(2048 - 16);
            const records = [...log].sort((a, b) => a - b);
            w = ReaderWindow.restore(stored, (lo, hi) => records.filter((x) => x >= lo && x <= hi));
            if (stored.u === null) {
              // Too fragmented to keep: restart at the lowest unacked, nothing in flight.
              expect(stored.l).toBe(Math.min(...model));
              next = stored.l!;
              model = new Set();
              log = new Set([...log].filter((x) => x < next));
            } else {
              // Exact: the deliveries whose records compaction removed are no longer counted.
              restores++;
              model = new Set([...model].filter((x) => log.has(x)));
            }
          }
          expect(w.available + w.unacked).toBe(q);
          expect(w.unacked).toBe(model.size);
          expect(w.next).toBe(next);
          for (const x of model) expect(w.holds(x)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
    // The runs reached the exact restore (the restart of a too fragmented window is reached by
    // some seeds only; the next test reaches it every time).
    expect(restores).toBeGreaterThan(0);
  });

  it("in-order acks over a log with gaps keep one span range: a window of 1,000 sparse deliveries is stored whole and restored exactly", () => {
    const w = new ReaderWindow(1000, 7);
    const offsets = Array.from({ length: 1000 }, (_, i) => 10 + i * 3); // compacted: every third offset
    w.deliver(offsets);
    w.ack(offsets.slice(0, 400));
    const s = w.store();
    expect([s.l, s.u, s.o, s.f]).toEqual([1210, "1.1dx", 3008, 600]);
    const back = ReaderWindow.restore(s, (lo, hi) => offsets.filter((x) => x >= lo && x <= hi));
    expect([back.unacked, back.next, back.holds(1210), back.holds(1209), back.checkAck([1207])]).toEqual([600, 3008, true, false, 1207]);
  });

  it("the stored form fits the 2,048-byte attachment at any fragmentation: kept up to 48 ranges, else only the restart point", () => {
    const far = 2 ** 52;
    const everything = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
    // 48 ranges as long as base 36 writes them (offsets near 2^52, far apart): kept.
    const kept = new ReaderWindow(10_000, far);
    const sparse = Array.from({ length: 96 }, (_, i) => far + i * 2 ** 40);
    kept.deliver(sparse);
    kept.ack(sparse.filter((_, i) => i % 2 === 0));
    const s1 = kept.store();
    expect(s1.u).not.toBe(null);
    expect(bytesOf(JSON.stringify({ r: "subs", v: 1, k: "r", ...s1, b: true }))).toBeLessThan(2048 - 16);
    expect(ReaderWindow.restore(s1, (lo, hi) => sparse.filter((x) => x >= lo && x <= hi)).unacked).toBe(48);
    // 5,000 ranges (every other message acked): not kept; restore restarts at the lowest unacked.
    const frag = new ReaderWindow(10_000, 0);
    frag.deliver(everything(0, 9_999));
    frag.ack(Array.from({ length: 5_000 }, (_, i) => 2 * i + 1));
    const s2 = frag.store();
    expect([s2.u, s2.l, s2.o, s2.f]).toEqual([null, 0, 10_000, 5_000]);
    const back = ReaderWindow.restore(s2, everything);
    expect([back.next, back.unacked, back.available]).toEqual([0, 0, 10_000]);
    expect(MAX_ATTACHED_READER_RANGES).toBe(48);
  });

  it("an attachment written before acks were checked (no l, no u) resumes at its next offset with nothing in flight", () => {
    const w = ReaderWindow.restore({ o: 42, f: 3, q: 10 }, () => [41]);
    expect([w.next, w.unacked, w.available, w.checkAck([41])]).toEqual([42, 0, 10, 41]);
  });
});

describe("AckRangeSet.delete", { timeout: 30_000 }, () => {
  it("removes one offset, splitting its range, as a Set model (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 60 })), { maxLength: 120 }), (ops) => {
        const s = new AckRangeSet();
        const model = new Set<number>();
        for (const [add, o] of ops) {
          if (add) {
            s.add(o);
            model.add(o);
          } else {
            expect(s.delete(o)).toBe(model.delete(o));
          }
          s.assertValid();
          expect(s.size).toBe(model.size);
        }
        for (let o = 0; o <= 60; o++) expect(s.has(o)).toBe(model.has(o));
      }),
    );
  });
});

describe("UTF-8 byte counts", { timeout: 30_000 }, () => {
  it("utf8ByteLength is TextEncoder's length for any string, lone surrogates included (property)", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), fc.string({ unit: fc.integer({ min: 0xd7f0, max: 0xe010 }).map((c) => String.fromCharCode(c)) })),
        (s) => {
          expect(utf8ByteLength(s)).toBe(bytesOf(s));
          for (const max of [0, 1, s.length, Math.floor(s.length * 1.5), s.length * 3, bytesOf(s), bytesOf(s) - 1]) expect(utf8LongerThan(s, max)).toBe(bytesOf(s) > max);
        },
      ),
    );
  });

  it("1, 2, 3 and 4 bytes per character", () => {
    expect(["a", "é", "€", "😀"].map(utf8ByteLength)).toEqual([1, 2, 3, 4]);
    expect("😀".length).toBe(2);
  });
});

describe("frame limits count UTF-8 bytes", () => {
  it("a consumer's or reader's frame: under 64 Ki code units but over 64 KiB is INVALID_REQUEST; at 64 KiB of bytes it is read", () => {
    const over = padded({ type: "ack", messageIds: [id(0)], requestId: "r" }, "é", 40_000);
    expect([over.length < MAX_CLIENT_FRAME_BYTES, bytesOf(over) > MAX_CLIENT_FRAME_BYTES]).toEqual([true, true]);
    expect(parseClientFrame(over, 0)).toEqual({
      ok: false,
      code: "INVALID_REQUEST",
      message: "A frame is at most 65536 bytes of UTF-8 text.",
      details: { maxBytes: 65536 },
      requestId: null,
    });
    // Exactly at the limit: 2-byte padding fills it to the byte (the base is ASCII).
    const room = MAX_CLIENT_FRAME_BYTES - bytesOf(JSON.stringify({ type: "ack", messageIds: [id(0)], requestId: "r", pad: "" }));
    const at = JSON.stringify({ type: "ack", messageIds: [id(0)], requestId: "r", pad: `${"é".repeat(Math.floor(room / 2))}${room % 2 === 1 ? "a" : ""}` });
    expect(bytesOf(at)).toBe(MAX_CLIENT_FRAME_BYTES);
    expect(parseClientFrame(at, 0)).toEqual({ type: "ack", offsets: [0], requestId: "r" });
  });

  it("a Pulsar consumer's and producer's frame: under 1 Mi code units but over 1 MiB is INVALID_REQUEST", () => {
    const consumer = padded({ messageId: btoa(id(0)) }, "€", 400_000);
    expect([consumer.length < MAX_PULSAR_FRAME_BYTES, bytesOf(consumer) > MAX_PULSAR_FRAME_BYTES]).toEqual([true, true]);
    expect(parsePulsarConsumerFrame(consumer)).toEqual({ code: "INVALID_REQUEST", message: "A frame is at most 1048576 bytes of UTF-8 text." });
    const producer = JSON.stringify({ payload: "eA==", properties: { p: "€".repeat(400_000) }, context: "c" });
    expect(producer.length).toBeLessThan(MAX_PULSAR_FRAME_BYTES);
    expect(parsePulsarProducerFrame(producer)).toEqual({ code: "INVALID_REQUEST", message: "A frame is at most 1048576 bytes of UTF-8 text.", context: null });
    // Under the limit in bytes: accepted, and its batch size is its bytes.
    const small = JSON.stringify({ payload: "eA==", properties: { p: "€€" } });
    const parsed = PULSAR_PRODUCER.parse(small, 0);
    expect("parsed" in parsed && parsed.bytes).toBe(bytesOf(small));
  });

  it("a native produce frame: over 1 MiB of UTF-8 is REQUEST_TOO_LARGE; a frame's batch size is its bytes", () => {
    const over = JSON.stringify({ requestId: "r", records: [{ value: "€".repeat(400_000) }] });
    expect(over.length).toBeLessThan(MAX_NATIVE_PRODUCE_FRAME_BYTES);
    expect(NATIVE_PRODUCER.parse(over, 0)).toEqual({
      tag: null,
      error: { code: "REQUEST_TOO_LARGE", message: "A frame is at most 1048576 bytes of UTF-8 text.", details: { maxBytes: 1048576 } },
    });
    const ok = JSON.stringify({ requestId: "r", records: [{ value: "€uro" }] });
    const f = NATIVE_PRODUCER.parse(ok, 0);
    expect("parsed" in f && [f.tag, f.bytes]).toEqual(["r", bytesOf(ok)]);
  });

  it("server `messages` frames are cut at the byte limit: never over it with two or more messages, never cut early (property)", () => {
    const message = fc.tuple(fc.nat({ max: 60 }), fc.constantFrom("a", "é", "€", "😀")).map(([n, c]) => JSON.stringify({ v: c.repeat(n) }));
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 30 }), fc.integer({ min: 40, max: 600 }), (ms, limit) => {
        const frames = messagesFrames(ms, limit);
        const counts = frames.map((f) => (JSON.parse(f) as { messages: unknown[] }).messages.length);
        expect(counts.reduce((a, b) => a + b, 0)).toBe(ms.length);
        let i = 0;
        frames.forEach((f, k) => {
          if (counts[k]! > 1) expect(bytesOf(f)).toBeLessThanOrEqual(limit);
          i += counts[k]!;
          // The next frame's first message did not fit in this one (bytes counted exactly).
          if (k + 1 < frames.length) expect(bytesOf(f) + 1 + bytesOf(ms[i]!)).toBeGreaterThan(limit);
        });
      }),
    );
    // Three messages of 100 3-byte characters (108 code units, 308 bytes each): one frame each at
    // 512 bytes, where counting code units put all three in one frame of ~960 bytes.
    const three = Array.from({ length: 3 }, () => JSON.stringify({ v: "€".repeat(100) }));
    expect(messagesFrames(three, 512).length).toBe(3);
  });
});
