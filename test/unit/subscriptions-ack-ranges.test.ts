/**
 * The subscription core's data structures: the ack-range set against a naive Set model, its
 * compact stored form and the persisted-range cap, the cursor (mark-delete position, backlog,
 * positions), message ids, and the Key_Shared hash.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AckRangeSet,
  Cursor,
  decodeAckRanges,
  encodeAckRanges,
  formatMessageId,
  initialOffset,
  keyHash,
  murmur3_32,
  offsetForTimestamp,
  parseMessageId,
  readerStartOffset,
  retentionFloor,
} from "../../src/subscriptions/index.ts";

const offsetArb = fc.integer({ min: 0, max: 200 });
const opArb = fc.oneof(
  fc.record({ kind: fc.constant("add" as const), o: offsetArb }),
  fc.record({ kind: fc.constant("range" as const), lo: offsetArb, len: fc.integer({ min: 0, max: 20 }) }),
  fc.record({ kind: fc.constant("trim" as const), o: offsetArb }),
);

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("AckRangeSet", { timeout: 30_000 }, () => {
  it("behaves as a Set of offsets and stays normalised (property)", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const s = new AckRangeSet();
        const model = new Set<number>();
        for (const op of ops) {
          if (op.kind === "add") {
            expect(s.add(op.o)).toBe(!model.has(op.o));
            model.add(op.o);
          } else if (op.kind === "range") {
            s.addRange(op.lo, op.lo + op.len);
            for (let o = op.lo; o <= op.lo + op.len; o++) model.add(o);
          } else {
            s.removeThrough(op.o);
            for (const o of [...model]) if (o <= op.o) model.delete(o);
          }
          s.assertValid();
        }
        for (let o = 0; o <= 230; o++) expect(s.has(o)).toBe(model.has(o));
        expect(s.size).toBe(model.size);
        expect(s.countIn(10, 100)).toBe([...model].filter((o) => o >= 10 && o <= 100).length);
        const from = 50;
        let next = from;
        while (model.has(next)) next++;
        expect(s.nextAbsent(from)).toBe(next);
        const gaps = s.gaps(0, 230).flatMap(([lo, hi]) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i));
        expect(gaps).toEqual(Array.from({ length: 230 }, (_, i) => i).filter((o) => !model.has(o)));
      }),
    );
  });

  it("merges adjacent ranges into one", () => {
    const s = AckRangeSet.of([
      [5, 6],
      [1, 2],
      [3, 4],
      [9, 9],
    ]);
    expect(s.ranges()).toEqual([
      [1, 6],
      [9, 9],
    ]);
  });

  it("encodes compactly and decodes to the same set (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1, max: 50 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 30 })), { maxLength: 60 }), (md, rs) => {
        const s = AckRangeSet.of(rs.map(([lo, len]) => [lo, lo + len] as const));
        s.removeThrough(md + 1); // keep a hole at md + 1, as a normalised cursor has
        const enc = encodeAckRanges(s, md);
        expect(enc.droppedRanges).toBe(0);
        expect(decodeAckRanges(enc.text, md).ranges()).toEqual(s.ranges());
      }),
    );
  });

  it("writes the documented form: mark-delete 1, ranges [3..4], [7] -> '1.1,2.0'", () => {
    const s = AckRangeSet.of([
      [3, 4],
      [7, 7],
    ]);
    expect(encodeAckRanges(s, 1).text).toBe("1.1,2.0");
  });

  it("keeps the lowest ranges past the cap and reports the dropped ones", () => {
    const s = AckRangeSet.of(Array.from({ length: 10 }, (_, i) => [2 * i + 1, 2 * i + 1] as const));
    const enc = encodeAckRanges(s, -1, 3);
    expect(enc.droppedRanges).toBe(7);
    expect(decodeAckRanges(enc.text, -1).ranges()).toEqual([
      [1, 1],
      [3, 3],
      [5, 5],
    ]);
  });

  it("refuses malformed stored text", () => {
    expect(() => decodeAckRanges("1.1,x", 0)).toThrow(RangeError);
    expect(() => decodeAckRanges("0.1", 0)).toThrow(RangeError);
  });
});

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("Cursor", { timeout: 30_000 }, () => {
  it("mark-delete never moves backwards under acks and equals the model (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 60 })), { maxLength: 100 }), (acks) => {
        const c = new Cursor(-1);
        const model = new Set<number>();
        let prev = c.markDelete;
        for (const [cumulative, o] of acks) {
          if (cumulative) {
            c.ackCumulative(o);
            for (let i = 0; i <= o; i++) model.add(i);
          } else {
            c.ackIndividual(o);
            model.add(o);
          }
          expect(c.markDelete).toBeGreaterThanOrEqual(prev);
          prev = c.markDelete;
          let md = -1;
          while (model.has(md + 1)) md++;
          expect(c.markDelete).toBe(md);
          expect(c.ackSet.has(md + 1)).toBe(false);
          for (let i = 0; i <= 61; i++) expect(c.isAcked(i)).toBe(model.has(i));
          expect(c.backlog(0, 62)).toBe(62 - [...model].filter((x) => x < 62).length);
        }
      }),
    );
  });

  it("A3 part 1 at core level: acks 0, 1, 3, 4, 7 of 0..9", () => {
    const c = new Cursor(-1);
    for (const o of [0, 1, 3, 4, 7]) c.ackIndividual(o);
    expect(c.markDelete).toBe(1);
    expect(c.ackedRanges).toEqual([
      [3, 4],
      [7, 7],
    ]);
    expect(c.backlog(0, 10)).toBe(5);
    c.ackIndividual(2);
    expect([c.markDelete, c.ackedRanges, c.backlog(0, 10)]).toEqual([4, [[7, 7]], 4]);
    c.ackIndividual(5);
    c.ackIndividual(6);
    expect([c.markDelete, c.ackedRanges, c.backlog(0, 10)]).toEqual([7, [], 2]);
  });

  it("backlog bytes sums the sizes of the unacked ranges only", () => {
    const c = new Cursor(1, AckRangeSet.of([[4, 5]]));
    const calls: [number, number][] = [];
    const bytes = c.backlogBytes(0, 8, (lo, hi) => {
      calls.push([lo, hi]);
      return (hi - lo + 1) * 10;
    });
    expect(calls).toEqual([
      [2, 3],
      [6, 7],
    ]);
    expect(bytes).toBe(40);
    // retention removed 0..2: only 3, 6, 7 remain unacked
    expect(c.backlog(3, 8)).toBe(3);
  });

  it("reset clears the ranges and may move back (A8 scenario 3: seek(350) with acks 0 and 2)", () => {
    const c = new Cursor(0, AckRangeSet.of([[2, 2]]));
    const ts = [100, 200, 300, 400, 500].map((t, offset) => ({ offset, timestampMs: t }));
    c.reset(offsetForTimestamp(ts, 350, 5));
    expect(c.markDelete).toBe(2);
    expect(c.backlog(0, 5)).toBe(2);
  });
});

describe("positions", () => {
  const log = { logStartOffset: 0, logEndOffset: 5 };

  it("initial positions: earliest, latest, timestamp (first >= T), offset clamped", () => {
    const ts = [100, 200, 300, 400, 500].map((t, offset) => ({ offset, timestampMs: t }));
    const withTs = { ...log, offsetForTimestamp: (t: number) => offsetForTimestamp(ts, t, 5) };
    expect(initialOffset({ kind: "earliest" }, log)).toBe(0);
    expect(initialOffset({ kind: "latest" }, log)).toBe(5);
    expect(initialOffset({ kind: "timestamp", timestampMs: 250 }, withTs)).toBe(2);
    expect(initialOffset({ kind: "timestamp", timestampMs: 300 }, withTs)).toBe(2);
    expect(initialOffset({ kind: "timestamp", timestampMs: 600 }, withTs)).toBe(5);
    expect(initialOffset({ kind: "offset", offset: 99 }, log)).toBe(5);
    expect(() => initialOffset({ kind: "timestamp", timestampMs: 1 }, log)).toThrow(RangeError);
  });

  it("A8 scenario 2: non-monotonic timestamps 2, 1, 3, 5, 4, 6 and seek(4) give offset 3", () => {
    const ts = [2, 1, 3, 5, 4, 6].map((t, offset) => ({ offset, timestampMs: t }));
    expect(offsetForTimestamp(ts, 4, 6)).toBe(3);
  });

  it("A4: reader start positions follow the Java and Go clients", () => {
    expect(readerStartOffset({ kind: "latest" }, false, log)).toBe(5);
    expect(readerStartOffset({ kind: "latest" }, true, log)).toBe(4);
    expect(readerStartOffset({ kind: "offset", offset: 2 }, false, log)).toBe(3);
    expect(readerStartOffset({ kind: "offset", offset: 2 }, true, log)).toBe(2);
    expect(readerStartOffset({ kind: "earliest" }, false, log)).toBe(0);
    expect(readerStartOffset({ kind: "earliest" }, true, log)).toBe(0);
    const empty = { logStartOffset: 0, logEndOffset: 0 };
    expect(readerStartOffset({ kind: "latest" }, true, empty)).toBe(0);
  });
});

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("message ids", { timeout: 30_000 }, () => {
  it("round-trip and sort like offsets within a partition (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1023 }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (p, a, b) => {
        const ia = formatMessageId(p, a);
        const ib = formatMessageId(p, b);
        expect(parseMessageId(ia)).toEqual({ partition: p, offset: a });
        expect(Math.sign(ia < ib ? -1 : ia > ib ? 1 : 0)).toBe(Math.sign(a - b));
      }),
    );
    expect(formatMessageId(3, 42)).toBe("0003:0000000000000042");
  });

  it("rejects what is not an id", () => {
    for (const bad of ["", "3:42", "0003:42", "1024:0000000000000000", "0003:9999999999999999", 42, null]) expect(parseMessageId(bad)).toBeNull();
    expect(() => formatMessageId(1024, 0)).toThrow(RangeError);
    expect(() => formatMessageId(0, -1)).toThrow(RangeError);
  });
});

describe("key hash", () => {
  it("is MurmurHash3 x86 32 (reference vectors)", () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    expect(murmur3_32(enc(""), 0)).toBe(0);
    expect(murmur3_32(enc(""), 1)).toBe(0x514e28b7);
    expect(murmur3_32(enc("hello"), 0)).toBe(0x248bfa47);
    expect(murmur3_32(enc("Hello, world!"), 1234)).toBe(0xfaf6cdb3);
    expect(murmur3_32(enc("The quick brown fox jumps over the lazy dog"), 0)).toBe(0x2e4ff723);
  });

  it("maps keys into [0, 65536); no key is the empty key", () => {
    expect(keyHash(null)).toBe(keyHash(""));
    fc.assert(fc.property(fc.string(), (k) => keyHash(k) >= 0 && keyHash(k) < 65_536));
  });
});

describe("retention floor", () => {
  it("is the slowest mark-delete position + 1", () => {
    expect(retentionFloor([4, -1, 9])).toBe(0);
    expect(retentionFloor([4, 9])).toBe(5);
    expect(retentionFloor([])).toBeNull();
  });
});
