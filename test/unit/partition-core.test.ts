import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ATTR_LOG_APPEND_TIME, decodeBatch, encodeBatch, scanBatch, type LogRecord, type ProducerRecord } from "../../src/codec/index.ts";
import {
  PRODUCER_BATCHES_KEPT,
  applyProducerAppend,
  checkFetchOffset,
  checkLogInvariants,
  planAppend,
  scanAppend,
  checkSequence,
  firstAtOrAfterTimestamp,
  nextRunningMaxTimestamp,
  planFetch,
  validateAppend,
  type ProducerAppend,
  type ScannedAppend,
  type ProducerState,
} from "../../src/partition/core.ts";

const rec = (timestamp: number, value = "v"): ProducerRecord => ({ key: null, value: new TextEncoder().encode(value), headers: [], timestamp });

function decoded(header: Parameters<typeof encodeBatch>[0], records: ProducerRecord[]) {
  return scanBatch(encodeBatch(header, records));
}

describe("checkFetchOffset", () => {
  const b = { logStartOffset: 2, logEndOffset: 5, highWatermark: 5 };
  it("accepts [logStartOffset, logEndOffset]", () => {
    for (const o of [2, 3, 5]) expect(checkFetchOffset(o, b)).toBeNull();
  });
  it("rejects outside with the bounds", () => {
    for (const offset of [0, 1, 6]) {
      expect(checkFetchOffset(offset, b)).toEqual({
        ok: false,
        code: "OFFSET_OUT_OF_RANGE",
        message: `Offset ${offset} is outside [2, 5].`,
        details: { offset, logStartOffset: 2, logEndOffset: 5, highWatermark: 5 },
      });
    }
  });
});

describe("validateAppend", () => {
  it("summarises a valid request", () => {
    const v = validateAppend([decoded({}, [rec(5), rec(9), rec(1)]), decoded({}, [rec(3)])], 1000);
    expect(v).toEqual({ producer: null, recordCount: 4, maxTimestamp: 9 });
  });
  it("counts records across batches against MAX_RECORDS_PER_REQUEST (100 000)", () => {
    const half = Array.from({ length: 50_000 }, () => rec(1));
    expect(validateAppend([decoded({}, half), decoded({}, half)], 1000)).toEqual({ producer: null, recordCount: 100_000, maxTimestamp: 1 });
    expect(validateAppend([decoded({}, half), decoded({}, [...half, rec(1)])], 1000)).toEqual({
      ok: false,
      code: "INVALID_REQUEST",
      message: "At most 100000 records per request, got 100001.",
      details: { field: "recordCount", recordCount: 100_001, maxRecords: 100_000 },
    });
  });
  it("reports RECORD_TOO_LARGE with the index across batches", () => {
    const v = validateAppend([decoded({}, [rec(1)]), decoded({}, [rec(1), rec(1, "x".repeat(100))])], 50);
    expect(v).toMatchObject({ ok: false, code: "RECORD_TOO_LARGE", details: { index: 2, maxMessageBytes: 50 } });
  });
  it("rejects negative timestamps, empty batches, forbidden attributes, mixed producers", () => {
    expect(validateAppend([decoded({}, [rec(-1)])], 1000)).toMatchObject({ code: "INVALID_TIMESTAMP", details: { index: 0, timestamp: -1 } });
    expect(validateAppend([], 1000)).toMatchObject({ code: "EMPTY_BATCH" });
    expect(validateAppend([decoded({}, [])], 1000)).toMatchObject({ code: "EMPTY_BATCH" });
    expect(validateAppend([decoded({ attributes: 0x08 }, [rec(1)])], 1000)).toMatchObject({ code: "INVALID_BATCH" });
    expect(validateAppend([decoded({ attributes: 0x20 }, [rec(1)])], 1000)).toMatchObject({ code: "INVALID_BATCH" });
    expect(
      validateAppend([decoded({ producerId: 1, producerEpoch: 0, baseSequence: 0 }, [rec(1)]), decoded({ producerId: 2, producerEpoch: 0, baseSequence: 1 }, [rec(1)])], 1000),
    ).toMatchObject({ code: "INVALID_PRODUCER_ID" });
    expect(
      validateAppend([decoded({ producerId: 1, producerEpoch: 0, baseSequence: 0 }, [rec(1)]), decoded({ producerId: 1, producerEpoch: 0, baseSequence: 5 }, [rec(1)])], 1000),
    ).toMatchObject({ code: "INVALID_PRODUCER_ID" });
  });
  it("carries the producer fields of a request split into contiguous batches", () => {
    const v = validateAppend(
      [decoded({ producerId: 7, producerEpoch: 2, baseSequence: 10 }, [rec(1), rec(2)]), decoded({ producerId: 7, producerEpoch: 2, baseSequence: 12 }, [rec(3)])],
      1000,
    );
    expect(v).toEqual({ producer: { producerId: 7, producerEpoch: 2, baseSequence: 10, recordCount: 3 }, recordCount: 3, maxTimestamp: 3 });
  });
});

describe("idempotent producer state machine", () => {
  const req = (producerEpoch: number, baseSequence: number, recordCount = 1): ProducerAppend => ({ producerId: 1, producerEpoch, baseSequence, recordCount });

  it("a new producer starts at 0", () => {
    expect(checkSequence(undefined, req(0, 0))).toEqual({ kind: "append" });
    expect(checkSequence(undefined, req(0, 1))).toMatchObject({ kind: "error", error: { code: "OUT_OF_ORDER_SEQUENCE_NUMBER", details: { expectedSequence: 0 } } });
  });

  it("duplicates, gaps, fencing and epoch bumps", () => {
    let s: ProducerState | undefined;
    s = applyProducerAppend(s, req(0, 0, 3), 10, 12);
    s = applyProducerAppend(s, req(0, 3, 2), 13, 14);
    expect(s).toEqual({
      producerEpoch: 0,
      lastSequence: 4,
      batches: [
        { producerEpoch: 0, baseSequence: 0, lastSequence: 2, firstOffset: 10, lastOffset: 12 },
        { producerEpoch: 0, baseSequence: 3, lastSequence: 4, firstOffset: 13, lastOffset: 14 },
      ],
    });
    expect(checkSequence(s, req(0, 0, 3))).toEqual({ kind: "duplicate", entry: s.batches[0] });
    expect(checkSequence(s, req(0, 5))).toEqual({ kind: "append" });
    expect(checkSequence(s, req(0, 6))).toMatchObject({ kind: "error", error: { code: "OUT_OF_ORDER_SEQUENCE_NUMBER", details: { expectedSequence: 5 } } });
    expect(checkSequence(s, req(0, 0, 2))).toMatchObject({ kind: "error", error: { code: "OUT_OF_ORDER_SEQUENCE_NUMBER" } });
    expect(checkSequence({ ...s, producerEpoch: 1 }, req(0, 5))).toMatchObject({ kind: "error", error: { code: "INVALID_PRODUCER_EPOCH" } });
    expect(checkSequence(s, req(1, 5))).toMatchObject({ kind: "error", error: { details: { expectedSequence: 0 } } });
    expect(checkSequence(s, req(1, 0))).toEqual({ kind: "append" });
    // A new epoch forgets the old epoch's requests.
    expect(applyProducerAppend(s, req(1, 0), 15, 15).batches).toEqual([{ producerEpoch: 1, baseSequence: 0, lastSequence: 0, firstOffset: 15, lastOffset: 15 }]);
  });

  it(`keeps the last ${PRODUCER_BATCHES_KEPT} requests`, () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 20 }), (counts) => {
        let s: ProducerState | undefined;
        let seq = 0;
        let offset = 0;
        for (const n of counts) {
          expect(checkSequence(s, req(0, seq, n))).toEqual({ kind: "append" });
          s = applyProducerAppend(s, req(0, seq, n), offset, offset + n - 1);
          seq += n;
          offset += n;
        }
        expect(s!.batches.length).toBe(Math.min(counts.length, PRODUCER_BATCHES_KEPT));
        expect(s!.lastSequence).toBe(seq - 1);
        for (const b of s!.batches) expect(checkSequence(s, req(0, b.baseSequence, b.lastSequence - b.baseSequence + 1))).toEqual({ kind: "duplicate", entry: b });
      }),
    );
  });
});

describe("planFetch", () => {
  const rows = [
    { baseOffset: 0, lastOffset: 4, sizeBytes: 100 },
    { baseOffset: 5, lastOffset: 5, sizeBytes: 50 },
    { baseOffset: 6, lastOffset: 9, sizeBytes: 70 },
  ];
  it("always returns the first batch (KIP-74)", () => {
    expect(planFetch(rows, { offset: 0, maxRecords: 100, maxBytes: 1 })).toEqual({ batches: [rows[0]], bytes: 100, records: 5, nextOffset: 5, more: true });
  });
  it("says whether it stopped at a limit (more) or read every row (reads over gaps, src/lifecycle/reads.ts)", () => {
    expect(planFetch(rows, { offset: 0, maxRecords: 100, maxBytes: 1000 }).more).toBe(false);
    expect(planFetch(rows, { offset: 0, maxRecords: 9, maxBytes: 1000 }).more).toBe(true);
  });
  it("stops before the batch that would exceed maxBytes", () => {
    expect(planFetch(rows, { offset: 0, maxRecords: 100, maxBytes: 219 }).batches).toEqual([rows[0], rows[1]]);
    expect(planFetch(rows, { offset: 0, maxRecords: 100, maxBytes: 220 }).batches).toEqual(rows);
  });
  it("counts only records at or after offset toward maxRecords", () => {
    expect(planFetch(rows, { offset: 3, maxRecords: 2, maxBytes: 1000 })).toEqual({ batches: [rows[0]], bytes: 100, records: 2, nextOffset: 5, more: true });
    expect(planFetch(rows, { offset: 3, maxRecords: 3, maxBytes: 1000 })).toEqual({ batches: [rows[0], rows[1]], bytes: 150, records: 3, nextOffset: 6, more: true });
  });
  it("skips rows before the offset and reads no further than needed", () => {
    let read = 0;
    function* lazy() {
      for (const r of rows) {
        read++;
        yield r;
      }
    }
    expect(planFetch(lazy(), { offset: 5, maxRecords: 1, maxBytes: 1000 }).batches).toEqual([rows[1]]);
    expect(read).toBe(2);
    expect(planFetch([], { offset: 7, maxRecords: 1, maxBytes: 1 })).toEqual({ batches: [], bytes: 0, records: 0, nextOffset: 7, more: false });
  });
});

describe("timestamp lookup over the running max", () => {
  it("finds the first offset with timestamp >= T for any timestamps (model check)", () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 55 }), (batches, target) => {
        // Build the log as the partition does: running max per batch.
        let offset = 0;
        let running = -1;
        const log: { running: number; records: LogRecord[] }[] = [];
        for (const ts of batches) {
          const records = ts.map((timestamp) => ({ key: null, value: null, headers: [], timestamp, offset: offset++ }));
          running = nextRunningMaxTimestamp(running, Math.max(...ts));
          log.push({ running, records });
        }
        const all = log.flatMap((b) => b.records);
        const expected = all.find((r) => r.timestamp >= target);
        const batch = log.find((b) => b.running >= target);
        const got = batch === undefined ? null : firstAtOrAfterTimestamp(batch.records, target, 0);
        expect(got).toEqual(expected === undefined ? null : { offset: expected.offset, timestamp: expected.timestamp });
      }),
    );
  });
});

describe("scanAppend", () => {
  it("scans and validates a request without touching its bytes", () => {
    const bytes = encodeBatch({ producerId: 7, producerEpoch: 1, baseSequence: 0 }, [rec(5), rec(9)]);
    const before = bytes.slice();
    const s = scanAppend([bytes], true, 1000) as ScannedAppend;
    expect(s.validated).toEqual({ producer: { producerId: 7, producerEpoch: 1, baseSequence: 0, recordCount: 2 }, recordCount: 2, maxTimestamp: 9 });
    expect(s.scans.map((d) => d.timestamps)).toEqual([[5, 9]]);
    expect(bytes).toEqual(before);
  });
  it("answers INVALID_BATCH for trailing bytes and for a bad CRC (only when asked to check it)", () => {
    const bytes = encodeBatch({}, [rec(1)]);
    const padded = new Uint8Array(bytes.length + 3);
    padded.set(bytes);
    expect(scanAppend([padded], true, 1000)).toMatchObject({ ok: false, code: "INVALID_BATCH", message: "3 bytes after the record batch." });
    const corrupt = bytes.slice();
    corrupt[corrupt.length - 2]! ^= 0x01; // the value "v" becomes "w": framing and records stay valid
    expect(scanAppend([corrupt], true, 1000)).toMatchObject({ ok: false, code: "INVALID_BATCH" });
    expect("code" in (scanAppend([corrupt], false, 1000) as object)).toBe(false);
  });
  it("passes validateAppend's errors on", () => {
    expect(scanAppend([encodeBatch({}, [rec(1, "x".repeat(100))])], true, 50)).toMatchObject({ ok: false, code: "RECORD_TOO_LARGE" });
    expect(scanAppend([], true, 50)).toMatchObject({ ok: false, code: "EMPTY_BATCH" });
  });
});

const scanned = (...batches: Uint8Array[]) => scanAppend(batches, true, 1_000_000) as ScannedAppend;

describe("planAppend", () => {
  const tail = { logEndOffset: 10, runningMaxTimestamp: 7, leaderEpoch: 3 };

  it("assigns offsets from the log end, rewrites headers in place, and keeps the running max monotone", () => {
    const a = encodeBatch({}, [rec(5), rec(4)]);
    const b = encodeBatch({}, [rec(9)]);
    const p = planAppend(scanned(a, b), tail, null);
    expect({ base: p.baseOffset, last: p.lastOffset, next: p.nextOffset, running: p.runningMaxTimestamp, ts: p.timestamps, lat: p.logAppendTime }).toEqual({
      base: 10,
      last: 12,
      next: 13,
      running: 9,
      ts: [5, 4, 9],
      lat: null,
    });
    expect(p.rows.map((r) => [r.header.baseOffset, r.maxTimestamp, r.runningMaxTimestamp, r.header.partitionLeaderEpoch])).toEqual(
      [
        [10, 5, 7],
        [12, 9, 9],
      ].map(([o, m, rm]) => [o, m, rm, 3]),
    );
    expect(p.addedBytes).toBe(a.length + b.length);
    // The stored bytes are the request's bytes, rewritten: they decode at the assigned offsets.
    expect(p.rows[0]!.bytes).toBe(a);
    expect(decodeBatch(a, 0).records.map((r) => r.offset)).toEqual([10, 11]);
    expect(decodeBatch(b, 0).header.partitionLeaderEpoch).toBe(3);
  });

  it("stamps the broker time on every record under LogAppendTime", () => {
    const a = encodeBatch({}, [rec(5), rec(4)]);
    const p = planAppend(scanned(a), tail, 1000);
    expect(p.timestamps).toEqual([1000, 1000]);
    expect(p.rows[0]!.header.attributes & ATTR_LOG_APPEND_TIME).toBe(ATTR_LOG_APPEND_TIME);
    expect(decodeBatch(a, 0).records.map((r) => r.timestamp)).toEqual([1000, 1000]);
    expect(p.runningMaxTimestamp).toBe(1000);
  });

  it("splits a batch over a stored row's limit into pieces with contiguous offsets and sequences", () => {
    const big = Array.from({ length: 3 }, (_, i) => rec(i, "x".repeat(700 * 1024)));
    const p = planAppend(scanned(encodeBatch({ producerId: 1, producerEpoch: 0, baseSequence: 4 }, big)), tail, null);
    expect(p.rows.length).toBeGreaterThan(1);
    let offset = 10;
    let sequence = 4;
    for (const r of p.rows) {
      expect([r.header.baseOffset, r.header.baseSequence]).toEqual([offset, sequence]);
      offset += r.header.recordCount;
      sequence += r.header.recordCount;
    }
    expect(p.nextOffset).toBe(13);
  });
});

describe("checkLogInvariants", () => {
  it("holds for ordered bounds", () => {
    expect(checkLogInvariants(0, 0, 0, 0, -1, -1)).toBeUndefined();
    expect(checkLogInvariants(2, 5, 7, 10, 9, 9)).toBeUndefined();
  });
  it("names the violated invariant", () => {
    expect(checkLogInvariants(3, 2, 5, 0, 1, 1)).toBe("expected 0 <= logStartOffset 3 <= highWatermark 2 <= logEndOffset 5");
    expect(checkLogInvariants(0, 6, 5, 0, 1, 1)).toBe("expected 0 <= logStartOffset 0 <= highWatermark 6 <= logEndOffset 5");
    expect(checkLogInvariants(0, 1.5, 5, 0, 1, 1)).toMatch(/^log bounds must be integers/);
    expect(checkLogInvariants(0, 0, 0, -1, 1, 1)).toBe("storedBytes -1 < 0");
    expect(checkLogInvariants(0, 0, 0, 0, 4, 5)).toBe("running max timestamp went down from 5 to 4");
  });
  it("holds after every plan of a random sequence of appends (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 }), (requests) => {
        let t = { logEndOffset: 0, runningMaxTimestamp: -1, leaderEpoch: 0 };
        let bytes = 0;
        for (const timestamps of requests) {
          const p = planAppend(
            scanned(
              encodeBatch(
                {},
                timestamps.map((ts) => rec(ts)),
              ),
            ),
            t,
            null,
          );
          expect(p.baseOffset).toBe(t.logEndOffset);
          expect(checkLogInvariants(0, p.nextOffset, p.nextOffset, bytes + p.addedBytes, p.runningMaxTimestamp, t.runningMaxTimestamp)).toBeUndefined();
          bytes += p.addedBytes;
          t = { logEndOffset: p.nextOffset, runningMaxTimestamp: p.runningMaxTimestamp, leaderEpoch: 0 };
        }
      }),
    );
  });
});
