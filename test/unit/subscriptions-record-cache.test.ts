/**
 * RecordCache (src/subscriptions/record-cache.ts): whatever subset of a log's batches is cached
 * (with evictions), a cached read answers exactly what a read of the whole log answers, or
 * null; on a dense log with every batch cached it always answers.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LogRecord } from "../../src/codec/types.ts";
import { RecordCache } from "../../src/subscriptions/record-cache.ts";

const rec = (offset: number): LogRecord => ({ offset, timestamp: 0, key: null, value: null, headers: [] }) as unknown as LogRecord;

/** A log: batches in offset order, each [base, last] with the records kept (a subset when `gaps`). */
function logOf(sizes: number[], keep: boolean[][], gaps: boolean): { base: number; records: LogRecord[] }[] {
  let base = 0;
  return sizes.map((n, i) => {
    const records: LogRecord[] = [];
    for (let k = 0; k < n; k++) if (!gaps || keep[i]?.[k] !== false) records.push(rec(base + k));
    const b = { base, records };
    base += n;
    return b;
  });
}

function reference(log: { records: LogRecord[] }[], from: number, end: number, max: number): number[] {
  return log
    .flatMap((b) => b.records.map((r) => r.offset))
    .filter((o) => o >= from && o < end)
    .slice(0, max);
}

const arbLog = fc.record({
  sizes: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 12 }),
  keep: fc.array(fc.array(fc.boolean(), { maxLength: 8 }), { maxLength: 12 }),
  gaps: fc.boolean(),
});

describe("RecordCache", () => {
  it("a cached read equals a read of the whole log, or is null (any subset cached, with evictions)", () => {
    fc.assert(
      fc.property(
        arbLog,
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.array(fc.tuple(fc.nat(100), fc.nat(100), fc.integer({ min: 1, max: 20 })), { minLength: 1, maxLength: 10 }),
        ({ sizes, keep, gaps }, maxBatches, inserts, reads) => {
          const log = logOf(sizes, keep, gaps);
          const cache = new RecordCache(maxBatches);
          for (const i of inserts) {
            const b = log[i % log.length]!;
            expect(cache.batch(b.base, () => b.records)).toBe(b.records);
          }
          expect(cache.size).toBeLessThanOrEqual(maxBatches);
          for (const [from, span, max] of reads) {
            const got = cache.read(from, from + span, max);
            if (got !== null)
              expect(
                got.map((r) => r.offset),
                `read(${from}, ${from + span}, ${max})`,
              ).toEqual(reference(log, from, from + span, max));
          }
        },
      ),
    );
  });

  it("record(offset) is the cached record at that offset, or undefined (gaps, uncached batches)", () => {
    fc.assert(
      fc.property(
        arbLog,
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.array(fc.nat(100), { maxLength: 20 }),
        ({ sizes, keep, gaps }, maxBatches, inserts, offsets) => {
          const log = logOf(sizes, keep, gaps);
          const cache = new RecordCache(maxBatches);
          for (const i of inserts) {
            const b = log[i % log.length]!;
            cache.batch(b.base, () => b.records);
          }
          for (const o of offsets) {
            const got = cache.record(o);
            const held = cache.holding(o);
            expect(got).toBe(held?.find((r) => r.offset === o));
            if (got !== undefined) expect(got.offset).toBe(o);
          }
        },
      ),
    );
  });

  it("on a dense log with every batch cached, every read answers", () => {
    fc.assert(
      fc.property(arbLog, fc.nat(60), fc.nat(60), fc.integer({ min: 1, max: 50 }), ({ sizes }, from, span, max) => {
        const log = logOf(sizes, [], false);
        const cache = new RecordCache(log.length);
        for (const b of [...log].reverse()) cache.batch(b.base, () => b.records);
        const end = log.at(-1)!.base + log.at(-1)!.records.length;
        const got = cache.read(Math.min(from, end), Math.min(from + span, end), max);
        expect(got?.map((r) => r.offset)).toEqual(reference(log, Math.min(from, end), Math.min(from + span, end), max));
      }),
    );
  });

  it("decodes a batch once, evicts the oldest inserted, and holds an offset only inside a batch's records", () => {
    const cache = new RecordCache(2);
    let decodes = 0;
    const counted = (records: LogRecord[]) => () => {
      decodes++;
      return records;
    };
    const a = [rec(0), rec(1)];
    const b = [rec(2), rec(4)];
    const c = [rec(5)];
    cache.batch(0, counted(a));
    cache.batch(0, counted(a));
    cache.batch(2, counted(b));
    expect(decodes).toBe(2);
    expect([cache.holding(1), cache.holding(3), cache.holding(4)]).toEqual([a, b, b]);
    cache.batch(5, counted(c));
    expect([cache.size, cache.holding(0), cache.holding(5)]).toEqual([2, undefined, c]);
    expect(cache.read(2, 6, 10)?.map((r) => r.offset)).toEqual([2, 4, 5]);
    expect(cache.read(0, 6, 10)).toBeNull();
    cache.clear();
    expect(cache.size).toBe(0);
    expect(() => new RecordCache(0)).toThrow(RangeError);
  });
});
