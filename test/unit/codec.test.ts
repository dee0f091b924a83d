import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ATTR_CONTROL,
  ATTR_LOG_APPEND_TIME,
  ATTR_TRANSACTIONAL,
  BATCH_HEADER_BYTES,
  BatchBuilder,
  CodecError,
  crc32c,
  decodeBatch,
  decodeBatches,
  decodeBatchHeader,
  encodeBatch,
  recordPayloadBytes,
  recordSizeBytes,
  rewriteBatchHeader,
  scanBatch,
  splitRecords,
  verifyBatchCrc,
  type BatchHeader,
  type LogRecord,
  type ProducerRecord,
} from "../../src/codec/index.ts";
import { ByteReader, ByteWriter, utf8Length, varintSize, varlongSize } from "../../src/codec/varint.ts";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

// Header field offsets of format v1 (mirrors the layout table in src/codec/batch.ts).
const OFF_BASE_OFFSET = 3;
const OFF_RECORD_COUNT = 49;
const OFF_CRC = 53;
const OFF_RECORDS_LENGTH = 57;

function rec(key: string | null, value: string | null, timestamp: number, headers: [string, string | null][] = []): ProducerRecord {
  return {
    key: key === null ? null : utf8(key),
    value: value === null ? null : utf8(value),
    headers: headers.map(([k, v]) => ({ key: k, value: v === null ? null : utf8(v) })),
    timestamp,
  };
}

/** The records decodeBatch must return for `records` encoded at `baseOffset` (CreateTime). */
function expectedLogRecords(records: ProducerRecord[], baseOffset: number): LogRecord[] {
  return records.map((r, i) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp, offset: baseOffset + i }));
}

/** Re-frames `records` bytes as a batch with a consistent recordsLength and CRC. */
function reframe(batch: Uint8Array, records: Uint8Array, patch: { recordCount?: number } = {}): Uint8Array {
  const out = new Uint8Array(BATCH_HEADER_BYTES + records.length);
  out.set(batch.subarray(0, BATCH_HEADER_BYTES));
  out.set(records, BATCH_HEADER_BYTES);
  const view = new DataView(out.buffer);
  view.setUint32(OFF_RECORDS_LENGTH, records.length);
  view.setUint32(OFF_CRC, crc32c(records));
  if (patch.recordCount !== undefined) view.setInt32(OFF_RECORD_COUNT, patch.recordCount);
  return out;
}

// ---- arbitraries ----

const bytesArb = fc.oneof(
  { weight: 6, arbitrary: fc.uint8Array({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constant(new Uint8Array(0)) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1000, maxLength: 20_000 }) },
);
const nullableBytesArb = fc.option(bytesArb, { nil: null, freq: 4 });
// Well-formed strings only ("binary" never yields lone surrogates, which UTF-8 cannot carry),
// plus a few fixed keys so duplicates are common.
const headerKeyArb = fc.oneof(fc.string({ unit: "binary", maxLength: 12 }), fc.constantFrom("a", "trace-id", "ü", "\uFEFFbom", "😀", ""));
const headerArb = fc.record({ key: headerKeyArb, value: fc.option(fc.uint8Array({ maxLength: 16 }), { nil: null, freq: 3 }) });
// Non-negative timestamps up to MAX_SAFE: every delta stays a safe integer; the wide ones
// exercise the BigInt varlong path.
const timestampArb = fc.oneof(fc.integer({ min: 1_700_000_000_000, max: 1_700_000_100_000 }), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: MAX_SAFE }));
const recordArb: fc.Arbitrary<ProducerRecord> = fc.record({
  key: nullableBytesArb,
  value: nullableBytesArb,
  headers: fc.array(headerArb, { maxLength: 5 }),
  timestamp: timestampArb,
});
const recordsArb = fc.array(recordArb, { minLength: 1, maxLength: 12 });
const headerFieldsArb = fc.record({
  baseOffset: fc.oneof(fc.nat(1000), fc.integer({ min: 0, max: MAX_SAFE - 1000 })),
  producerId: fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: MAX_SAFE })),
  producerEpoch: fc.integer({ min: -0x8000, max: 0x7fff }),
  baseSequence: fc.integer({ min: -0x80000000, max: 0x7fffffff }),
  partitionLeaderEpoch: fc.integer({ min: -0x80000000, max: 0x7fffffff }),
  attributes: fc.constantFrom(0, ATTR_TRANSACTIONAL, ATTR_CONTROL, ATTR_TRANSACTIONAL | ATTR_CONTROL),
});

// ---------------------------------------------------------------------------------------------

describe("varint / varlong", () => {
  const encodeVarint = (n: number): string => {
    const w = new ByteWriter(1);
    w.varint(n);
    return hex(w.finish());
  };
  const encodeVarlong = (n: number): string => {
    const w = new ByteWriter(1);
    w.varlong(n);
    return hex(w.finish());
  };

  it("zigzag-encodes varints as Kafka does", () => {
    expect(encodeVarint(0)).toBe("00");
    expect(encodeVarint(-1)).toBe("01");
    expect(encodeVarint(1)).toBe("02");
    expect(encodeVarint(63)).toBe("7e");
    expect(encodeVarint(-64)).toBe("7f");
    expect(encodeVarint(64)).toBe("8001");
    expect(encodeVarint(300)).toBe("d804");
    expect(encodeVarint(0x7fffffff)).toBe("feffffff0f");
    expect(encodeVarint(-0x80000000)).toBe("ffffffff0f");
  });

  it("zigzag-encodes varlongs beyond 32 bits", () => {
    expect(encodeVarlong(2 ** 31)).toBe("8080808010");
    expect(encodeVarlong(-(2 ** 31) - 1)).toBe("8180808010");
    expect(encodeVarlong(MAX_SAFE)).toBe("feffffffffffff1f");
    expect(encodeVarlong(-MAX_SAFE)).toBe("fdffffffffffff1f");
  });

  it("refuses values the encoding cannot carry", () => {
    const w = new ByteWriter();
    expect(() => w.varint(2 ** 31)).toThrow(CodecError);
    expect(() => w.varint(1.5)).toThrow(CodecError);
    expect(() => w.varlong(MAX_SAFE + 1)).toThrow(CodecError);
    expect(() => w.varlong(Number.NaN)).toThrow(CodecError);
    expect(() => w.i64(2 ** 60)).toThrow(CodecError);
  });

  it("round-trips any int32 varint and any safe varlong, with the predicted size", () => {
    fc.assert(
      fc.property(fc.integer({ min: -0x80000000, max: 0x7fffffff }), fc.maxSafeInteger(), (a, b) => {
        const w = new ByteWriter(2);
        w.varint(a);
        const aBytes = w.pos;
        w.varlong(b);
        const buf = w.finish();
        expect(aBytes).toBe(varintSize(a));
        expect(buf.length - aBytes).toBe(varlongSize(b));
        const r = new ByteReader(buf);
        expect(r.varint()).toBe(a);
        expect(r.varlong()).toBe(b);
        expect(r.remaining()).toBe(0);
      }),
    );
  });

  it("throws CodecError on truncated, overlong and over-wide input", () => {
    expect(() => new ByteReader(Uint8Array.of(0x80)).varint()).toThrow(CodecError);
    expect(() => new ByteReader(Uint8Array.of()).varint()).toThrow(CodecError);
    expect(() => new ByteReader(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x1f)).varint()).toThrow(CodecError);
    expect(() => new ByteReader(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x00)).varint()).toThrow(CodecError);
    expect(() => new ByteReader(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80)).varlong()).toThrow(CodecError);
    // 2^54 zigzag-decodes to 2^53: one past MAX_SAFE_INTEGER.
    expect(() => new ByteReader(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20)).varlong()).toThrow(CodecError);
    expect(() => new ByteReader(new Uint8Array(11).fill(0x80)).varlong()).toThrow(CodecError);
    expect(() => new ByteReader(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02)).varlong()).toThrow(CodecError);
  });

  it("counts UTF-8 bytes as TextEncoder does", () => {
    expect(utf8Length("abc")).toBe(3);
    expect(utf8Length("ü")).toBe(2);
    expect(utf8Length("€")).toBe(3);
    expect(utf8Length("😀")).toBe(4);
    expect(utf8Length("\uD800")).toBe(3); // lone surrogate -> U+FFFD
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        expect(utf8Length(s)).toBe(utf8(s).length);
      }),
    );
  });
});

describe("encodeBatch: exact bytes", () => {
  it("encodes one record with default header fields", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1000)]);
    expect(hex(buf)).toBe(
      "01" + // magic
        "0000" + // attributes
        "0000000000000000" + // baseOffset 0
        "00000000" + // lastOffsetDelta 0
        "00000000000003e8" + // baseTimestamp 1000
        "00000000000003e8" + // maxTimestamp 1000
        "ffffffffffffffff" + // producerId -1
        "ffff" + // producerEpoch -1
        "ffffffff" + // baseSequence -1
        "00000000" + // partitionLeaderEpoch 0
        "00000001" + // recordCount 1
        "cfd0522f" + // crc32c of the records section
        "00000009" + // recordsLength 9
        "10" + // record length 8
        "00" + // attributes
        "00" + // timestampDelta 0
        "00" + // offsetDelta 0
        "02" +
        "6b" + // key "k"
        "02" +
        "76" + // value "v"
        "00", // 0 headers
    );
    expect(buf.length).toBe(BATCH_HEADER_BYTES + 9);
    expect(BATCH_HEADER_BYTES).toBe(61);
  });

  it("encodes null vs empty, header values, negative deltas and offset deltas", () => {
    const buf = encodeBatch({ baseOffset: 5 }, [rec(null, "v", 1000, [["h", null]]), rec("", null, 999)]);
    expect(hex(buf.subarray(BATCH_HEADER_BYTES))).toBe(
      "14" +
        "00" +
        "00" +
        "00" +
        "01" +
        "0276" +
        "02" +
        "0268" +
        "01" + // key null, 1 header h=null
        "0c" +
        "00" +
        "01" +
        "02" +
        "00" +
        "01" +
        "00", // ts delta -1, offsetDelta 1, key empty, value null
    );
    expect(decodeBatchHeader(buf)).toEqual({
      baseOffset: 5,
      lastOffsetDelta: 1,
      baseTimestamp: 1000,
      maxTimestamp: 1000,
      producerId: -1,
      producerEpoch: -1,
      baseSequence: -1,
      partitionLeaderEpoch: 0,
      attributes: 0,
      recordCount: 2,
      crc: crc32c(buf, BATCH_HEADER_BYTES),
      recordsLength: 18,
      totalBytes: BATCH_HEADER_BYTES + 18,
    });
  });

  it("encodes an empty batch with NO_TIMESTAMP and lastOffsetDelta -1", () => {
    const buf = encodeBatch({ baseOffset: 7 }, []);
    expect(buf.length).toBe(BATCH_HEADER_BYTES);
    const d = decodeBatch(buf);
    expect(d.records).toEqual([]);
    expect(d.header).toEqual({
      baseOffset: 7,
      lastOffsetDelta: -1,
      baseTimestamp: -1,
      maxTimestamp: -1,
      producerId: -1,
      producerEpoch: -1,
      baseSequence: -1,
      partitionLeaderEpoch: 0,
      attributes: 0,
      recordCount: 0,
    });
  });

  it("refuses header and record values the format cannot carry", () => {
    const r = [rec("k", "v", 1)];
    expect(() => encodeBatch({ baseOffset: MAX_SAFE + 1 }, r)).toThrow(CodecError);
    expect(() => encodeBatch({ baseOffset: -1 }, r)).toThrow(CodecError);
    expect(() => encodeBatch({ baseOffset: MAX_SAFE }, [rec("a", "b", 1), rec("a", "b", 1)])).toThrow(CodecError);
    expect(() => encodeBatch({ producerEpoch: 0x8000 }, r)).toThrow(CodecError);
    expect(() => encodeBatch({ baseSequence: 2 ** 31 }, r)).toThrow(CodecError);
    expect(() => encodeBatch({ attributes: 0x10000 }, r)).toThrow(CodecError);
    expect(() => encodeBatch({ attributes: 1 }, r)).toThrow(/compressed/);
    expect(() => encodeBatch({}, [rec("k", "v", Number.NaN)])).toThrow(CodecError);
    expect(() => encodeBatch({}, [rec("k", "v", 2 ** 53)])).toThrow(CodecError);
    // Both timestamps safe, but the delta is not.
    expect(() => encodeBatch({}, [rec("k", "v", MAX_SAFE), rec("k", "v", -MAX_SAFE)])).toThrow(CodecError);
  });
});

describe("encodeBatch -> decodeBatch round trip", () => {
  it("preserves every record and header field", () => {
    fc.assert(
      fc.property(headerFieldsArb, recordsArb, (fields, records) => {
        const buf = encodeBatch(fields, records);
        const d = decodeBatch(buf);
        const expectedHeader: BatchHeader = {
          ...fields,
          lastOffsetDelta: records.length - 1,
          baseTimestamp: records[0]!.timestamp,
          maxTimestamp: Math.max(...records.map((r) => r.timestamp)),
          recordCount: records.length,
        };
        expect(d.header).toEqual(expectedHeader);
        expect(d.records).toEqual(expectedLogRecords(records, fields.baseOffset));
        expect(d.totalBytes).toBe(buf.length);
        // toEqual treats null and an empty Uint8Array as different; check explicitly anyway.
        d.records.forEach((r, i) => {
          expect(r.key === null).toBe(records[i]!.key === null);
          expect(r.value === null).toBe(records[i]!.value === null);
        });
      }),
      { numRuns: 200 },
    );
  });

  it("keeps duplicate header keys, null header values and their order", () => {
    const r = rec("k", "v", 10, [
      ["a", "1"],
      ["a", null],
      ["ü-key", ""],
      ["a", "3"],
      ["\uFEFFbom", "4"],
    ]);
    expect(decodeBatch(encodeBatch({}, [r])).records[0]!.headers).toEqual([
      { key: "a", value: utf8("1") },
      { key: "a", value: null },
      { key: "ü-key", value: new Uint8Array(0) },
      { key: "a", value: utf8("3") },
      { key: "\uFEFFbom", value: utf8("4") },
    ]);
  });

  it("returns copies that do not alias the input buffer", () => {
    const buf = encodeBatch({}, [rec("key", "value", 1, [["h", "hv"]])]);
    const r = decodeBatch(buf).records[0]!;
    buf.fill(0, BATCH_HEADER_BYTES);
    expect(r.key).toEqual(utf8("key"));
    expect(r.value).toEqual(utf8("value"));
    expect(r.headers[0]!.value).toEqual(utf8("hv"));
    expect(r.value!.buffer).not.toBe(buf.buffer);
  });

  it("decodes a batch at a non-zero position and ignores bytes after it", () => {
    const batch = encodeBatch({ baseOffset: 3 }, [rec("k", "v", 5)]);
    const buf = new Uint8Array(10 + batch.length + 4);
    buf.set(batch, 10);
    const d = decodeBatch(buf, 10);
    expect(d.totalBytes).toBe(batch.length);
    expect(d.records).toEqual([{ key: utf8("k"), value: utf8("v"), headers: [], timestamp: 5, offset: 3 }]);
  });

  it("decodes from a Uint8Array view with a non-zero byteOffset", () => {
    const batch = encodeBatch({}, [rec("k", "v", 5)]);
    const backing = new Uint8Array(batch.length + 7);
    backing.set(batch, 7);
    expect(decodeBatch(backing.subarray(7)).records[0]!.value).toEqual(utf8("v"));
  });
});

describe("rewriteBatchHeader", () => {
  it("assigns new offsets and leader epoch without invalidating the CRC", () => {
    fc.assert(
      fc.property(recordsArb, fc.integer({ min: 0, max: MAX_SAFE - 1000 }), fc.integer({ min: 0, max: 0x7fffffff }), (records, baseOffset, epoch) => {
        const buf = encodeBatch({}, records);
        rewriteBatchHeader(buf, { baseOffset, partitionLeaderEpoch: epoch });
        const d = decodeBatch(buf);
        expect(d.header.baseOffset).toBe(baseOffset);
        expect(d.header.partitionLeaderEpoch).toBe(epoch);
        expect(d.records.map((r) => r.offset)).toEqual(records.map((_, i) => baseOffset + i));
        expect(d.records.map((r) => r.timestamp)).toEqual(records.map((r) => r.timestamp));
      }),
    );
  });

  it("rewrites a batch at a non-zero position only", () => {
    const a = encodeBatch({}, [rec("a", "1", 1)]);
    const b = encodeBatch({}, [rec("b", "2", 2), rec("b", "3", 3)]);
    const buf = new Uint8Array(a.length + b.length);
    buf.set(a);
    buf.set(b, a.length);
    rewriteBatchHeader(buf, { baseOffset: 100 }, a.length);
    expect(decodeBatches(buf).map((x) => x.records.map((r) => r.offset))).toEqual([[0], [100, 101]]);
  });

  it("leaves the batch untouched when any patched value is invalid", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    const before = buf.slice();
    expect(() => rewriteBatchHeader(buf, { baseOffset: 9, partitionLeaderEpoch: 2 ** 31 })).toThrow(CodecError);
    expect(() => rewriteBatchHeader(buf, { baseOffset: 9, maxTimestamp: 2 ** 53 })).toThrow(CodecError);
    expect(() => rewriteBatchHeader(buf, { baseOffset: -1 })).toThrow(CodecError);
    expect(() => rewriteBatchHeader(buf, { attributes: 2 })).toThrow(CodecError);
    expect(buf).toEqual(before);
  });

  it("throws CodecError on a truncated header or bad magic", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    expect(() => rewriteBatchHeader(buf.subarray(0, BATCH_HEADER_BYTES - 1), { baseOffset: 1 })).toThrow(CodecError);
    const bad = buf.slice();
    bad[0] = 2;
    expect(() => rewriteBatchHeader(bad, { baseOffset: 1 })).toThrow(/magic/);
  });
});

describe("LogAppendTime", () => {
  it("reports every record at maxTimestamp after the append rewrite", () => {
    const buf = encodeBatch({}, [rec("a", "1", 500), rec("b", "2", 300), rec("c", "3", 900)]);
    const now = 1_700_000_000_123;
    rewriteBatchHeader(buf, { baseOffset: 40, baseTimestamp: now, maxTimestamp: now, attributes: ATTR_LOG_APPEND_TIME });
    const d = decodeBatch(buf);
    expect(d.header.attributes).toBe(ATTR_LOG_APPEND_TIME);
    expect(d.header.baseTimestamp).toBe(now);
    expect(d.header.maxTimestamp).toBe(now);
    expect(d.records.map((r) => [r.offset, r.timestamp])).toEqual([
      [40, now],
      [41, now],
      [42, now],
    ]);
  });

  it("uses maxTimestamp for all records when the attribute is set at encode time", () => {
    const d = decodeBatch(encodeBatch({ attributes: ATTR_LOG_APPEND_TIME }, [rec("a", "1", 500), rec("b", "2", 300), rec("c", "3", 900)]));
    expect(d.records.map((r) => r.timestamp)).toEqual([900, 900, 900]);
  });

  it("without the attribute, a header timestamp rewrite shifts CreateTime records by the delta", () => {
    const buf = encodeBatch({}, [rec("a", "1", 500), rec("b", "2", 300)]);
    rewriteBatchHeader(buf, { baseTimestamp: 1500 });
    expect(decodeBatch(buf).records.map((r) => r.timestamp)).toEqual([1500, 1300]);
  });
});

describe("corruption and truncation", () => {
  it("detects any flipped byte in the records section by CRC", () => {
    fc.assert(
      fc.property(recordsArb, fc.nat(), fc.integer({ min: 1, max: 255 }), (records, at, mask) => {
        const buf = encodeBatch({}, records);
        const i = BATCH_HEADER_BYTES + (at % (buf.length - BATCH_HEADER_BYTES));
        buf[i]! ^= mask;
        expect(() => decodeBatch(buf)).toThrow(/CRC mismatch/);
        expect(() => decodeBatch(buf)).toThrow(CodecError);
      }),
    );
  });

  it("decodes a value-byte corruption when verifyCrc is false (the option really skips the check)", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    buf[buf.length - 2] = 0x77; // the value byte "v" -> "w"
    expect(() => decodeBatch(buf)).toThrow(CodecError);
    expect(decodeBatch(buf, 0, { verifyCrc: false }).records[0]!.value).toEqual(utf8("w"));
  });

  it("rejects a wrong magic byte", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    buf[0] = 2;
    expect(() => decodeBatchHeader(buf)).toThrow(/magic 2/);
    expect(() => decodeBatch(buf)).toThrow(CodecError);
  });

  it("rejects a header i64 beyond the safe-integer range", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    new DataView(buf.buffer).setBigInt64(OFF_BASE_OFFSET, 2n ** 53n);
    expect(() => decodeBatch(buf)).toThrow(/baseOffset beyond safe-integer range/);
  });

  it("throws CodecError for a truncation at every position, never a partial decode", () => {
    fc.assert(
      fc.property(
        recordsArb.filter((rs) => rs.length <= 4),
        (records) => {
          const buf = encodeBatch({}, records);
          for (let len = 0; len < buf.length; len++) {
            const cut = buf.slice(0, len);
            expect(() => decodeBatch(cut)).toThrow(CodecError);
            expect(() => decodeBatch(cut, 0, { verifyCrc: false })).toThrow(CodecError);
            expect(() => decodeBatchHeader(cut)).toThrow(CodecError);
            // An empty buffer is a valid, empty concatenation (tested below); any other cut is not.
            if (len > 0) expect(() => decodeBatches(cut)).toThrow(CodecError);
          }
        },
      ),
      { numRuns: 40 },
    );
    // Thousands of cuts each run: a generous hang guard, not a timing target (seen over 5 s on a
    // loaded 2-core machine).
  }, 60_000);

  it("throws CodecError when the records section is cut at every position even with a consistent length and CRC", () => {
    const records = [
      rec("k1", "v1", 10, [
        ["h", "x"],
        ["h", null],
      ]),
      rec(null, "", 5),
      rec("", null, 20, [["ü", "y"]]),
    ];
    const buf = encodeBatch({}, records);
    const section = buf.subarray(BATCH_HEADER_BYTES);
    for (let len = 0; len < section.length; len++) {
      expect(() => decodeBatch(reframe(buf, section.subarray(0, len)))).toThrow(CodecError);
    }
    expect(decodeBatch(reframe(buf, section)).records).toEqual(expectedLogRecords(records, 0));
  });

  it("rejects trailing garbage inside the records section", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    const section = new Uint8Array(buf.length - BATCH_HEADER_BYTES + 1);
    section.set(buf.subarray(BATCH_HEADER_BYTES));
    expect(() => decodeBatch(reframe(buf, section))).toThrow(/1 bytes of trailing garbage after 1 records/);
  });

  it("rejects a record whose length prefix leaves unread bytes", () => {
    // Record length 9 instead of 8, with one extra byte appended: the record itself has garbage.
    const section = Uint8Array.of(0x12, 0x00, 0x00, 0x00, 0x02, 0x6b, 0x02, 0x76, 0x00, 0xaa);
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    expect(() => decodeBatch(reframe(buf, section))).toThrow(/record 0 has 1 bytes of trailing garbage/);
  });

  it("rejects a recordCount that does not match the records", () => {
    const buf = encodeBatch({}, [rec("a", "1", 1), rec("b", "2", 2)]);
    const section = buf.subarray(BATCH_HEADER_BYTES);
    expect(() => decodeBatch(reframe(buf, section, { recordCount: 1 }))).toThrow(/trailing garbage after 1 records/);
    expect(() => decodeBatch(reframe(buf, section, { recordCount: 3 }))).toThrow(CodecError);
    expect(() => decodeBatch(reframe(buf, section, { recordCount: -1 }))).toThrow(/negative recordCount/);
  });

  it("rejects compressed batches", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    new DataView(buf.buffer).setUint16(1, 1); // attributes: gzip
    expect(() => decodeBatch(buf)).toThrow(/unsupported compression 1/);
  });

  it("rejects invalid UTF-8 in a header key", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1, [["é", null]])]);
    const section = buf.slice(BATCH_HEADER_BYTES);
    const at = section.indexOf(0xc3); // first byte of "é"
    section[at] = 0xff;
    expect(() => decodeBatch(reframe(buf, section))).toThrow(/invalid UTF-8/);
  });
});

describe("scanBatch", () => {
  /** The outcome of a check: the facts scanBatch reports, or the error message. */
  function viaDecode(buf: Uint8Array, verifyCrc: boolean): unknown {
    try {
      const d = decodeBatch(buf, 0, { verifyCrc });
      return { header: d.header, totalBytes: d.totalBytes, timestamps: d.records.map((r) => r.timestamp), recordBytes: d.records.map(recordSizeBytes) };
    } catch (e) {
      return { error: String(e), codec: e instanceof CodecError };
    }
  }
  function viaScan(buf: Uint8Array, verifyCrc: boolean): unknown {
    try {
      return scanBatch(buf, 0, { verifyCrc });
    } catch (e) {
      return { error: String(e), codec: e instanceof CodecError };
    }
  }

  it("reports the header, timestamps and recordSizeBytes that decodeBatch yields", () => {
    fc.assert(
      fc.property(headerFieldsArb, recordsArb, fc.boolean(), (fields, records, logAppendTime) => {
        const buf = encodeBatch(fields, records);
        if (logAppendTime) rewriteBatchHeader(buf, { attributes: fields.attributes | ATTR_LOG_APPEND_TIME, maxTimestamp: 1234 });
        expect(viaScan(buf, true)).toEqual(viaDecode(buf, true));
      }),
    );
  });

  it("throws exactly when decodeBatch throws, with the same error, for any corrupted or truncated byte", () => {
    fc.assert(
      fc.property(recordsArb, fc.nat(), fc.integer({ min: 1, max: 255 }), fc.nat(), (records, at, mask, cut) => {
        const good = encodeBatch({}, records);
        const flipped = good.slice();
        flipped[at % flipped.length]! ^= mask;
        const truncated = good.slice(0, cut % good.length);
        for (const buf of [flipped, truncated]) {
          // Without the CRC the structural checks are reached; with it the CRC check comes first.
          expect(viaScan(buf, false)).toEqual(viaDecode(buf, false));
          expect(viaScan(buf, true)).toEqual(viaDecode(buf, true));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("agrees with decodeBatch on hand-made malformed records sections", () => {
    const records = [
      rec("k1", "v1", 10, [
        ["h", "x"],
        ["h", null],
      ]),
      rec(null, "", 5),
      rec("", null, 20, [["é", "y"]]),
    ];
    const buf = encodeBatch({}, records);
    const section = buf.subarray(BATCH_HEADER_BYTES);
    for (let len = 0; len <= section.length; len++) {
      const framed = reframe(buf, section.subarray(0, len));
      expect(viaScan(framed, true)).toEqual(viaDecode(framed, true));
    }
    const badUtf8 = section.slice();
    badUtf8[badUtf8.indexOf(0xc3)] = 0xff;
    expect(viaScan(reframe(buf, badUtf8), true)).toMatchObject({ error: expect.stringMatching(/invalid UTF-8/) });
  });

  it("sizes records canonically even when lengths use non-minimal varints", () => {
    // One record, key "k" with its length 1 written as the 2-byte varint 0x82 0x00.
    const section = Uint8Array.of(0x12, 0x00, 0x00, 0x00, 0x82, 0x00, 0x6b, 0x02, 0x76, 0x00);
    const buf = reframe(encodeBatch({}, [rec("k", "v", 1)]), section);
    const scan = scanBatch(buf);
    expect(scan.recordBytes).toEqual([recordSizeBytes(rec("k", "v", 1))]);
    expect(scan.recordBytes).toEqual(decodeBatch(buf).records.map(recordSizeBytes));
  });
});

describe("verifyBatchCrc", () => {
  it("returns the header of an intact batch and rejects any flipped records byte", () => {
    fc.assert(
      fc.property(recordsArb, fc.nat(), fc.integer({ min: 1, max: 255 }), (records, at, mask) => {
        const buf = encodeBatch({}, records);
        expect(verifyBatchCrc(buf)).toEqual(decodeBatchHeader(buf));
        buf[BATCH_HEADER_BYTES + (at % (buf.length - BATCH_HEADER_BYTES))]! ^= mask;
        expect(() => verifyBatchCrc(buf)).toThrow(/CRC mismatch/);
      }),
    );
  });

  it("rejects a truncated batch as decodeBatchHeader does", () => {
    const buf = encodeBatch({}, [rec("k", "v", 1)]);
    expect(() => verifyBatchCrc(buf.subarray(0, buf.length - 1))).toThrow(/truncated batch/);
  });
});

describe("decodeBatches", () => {
  it("decodes a concatenation of batches in order", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(1_000_000), recordsArb), { maxLength: 5 }), (parts) => {
        const batches = parts.map(([base, records]) => encodeBatch({ baseOffset: base }, records));
        const buf = new Uint8Array(batches.reduce((n, b) => n + b.length, 0));
        let p = 0;
        for (const b of batches) {
          buf.set(b, p);
          p += b.length;
        }
        const out = decodeBatches(buf);
        expect(out.length).toBe(parts.length);
        out.forEach((d, i) => {
          const [base, records] = parts[i]!;
          expect(d.header.baseOffset).toBe(base);
          expect(d.header.recordCount).toBe(records.length);
          expect(d.records).toEqual(expectedLogRecords(records, base));
        });
      }),
      { numRuns: 50 },
    );
  });

  it("returns [] for an empty buffer", () => {
    expect(decodeBatches(new Uint8Array(0))).toEqual([]);
  });

  it("throws CodecError for a partial batch at the end", () => {
    const a = encodeBatch({}, [rec("a", "1", 1)]);
    const buf = new Uint8Array(a.length * 2 - 1);
    buf.set(a);
    buf.set(a.subarray(0, a.length - 1), a.length);
    expect(() => decodeBatches(buf)).toThrow(/truncated batch/);
  });
});

describe("recordSizeBytes", () => {
  it("is 9 for key k, value v, no headers", () => {
    expect(recordSizeBytes(rec("k", "v", 1000))).toBe(9);
  });

  it("equals the encoded size of a one-record batch minus the header", () => {
    fc.assert(
      fc.property(recordArb, (r) => {
        expect(recordSizeBytes(r)).toBe(encodeBatch({}, [r]).length - BATCH_HEADER_BYTES);
      }),
    );
  });
});

describe("splitRecords", () => {
  it("splits greedily into in-order groups whose encoded batch fits the bound", () => {
    fc.assert(
      fc.property(fc.array(recordArb, { maxLength: 30 }), fc.integer({ min: 1, max: 30_000 }), (records, maxBatchBytes) => {
        const groups = splitRecords(records, maxBatchBytes);
        // Order preserved, nothing lost or duplicated (same objects).
        expect(groups.flat()).toEqual(records);
        groups.flat().forEach((r, i) => {
          expect(r).toBe(records[i]);
        });
        groups.forEach((g, gi) => {
          expect(g.length).toBeGreaterThan(0);
          const size = encodeBatch({}, g).length;
          if (g.length > 1) expect(size).toBeLessThanOrEqual(maxBatchBytes);
          // A group exceeds the bound only as a lone oversized record.
          if (size > maxBatchBytes) expect(g.length).toBe(1);
          // Greedy: the next record would not have fit.
          const next = groups[gi + 1];
          if (next !== undefined) expect(encodeBatch({}, [...g, next[0]!]).length).toBeGreaterThan(maxBatchBytes);
        });
      }),
      { numRuns: 150 },
    );
  });

  it("cuts exactly at the bound", () => {
    // Each record of this shape takes 9 bytes; a batch of n takes 61 + 9n.
    const records = [rec("k", "v", 1), rec("k", "v", 1), rec("k", "v", 1), rec("k", "v", 1), rec("k", "v", 1)];
    expect(encodeBatch({}, records.slice(0, 2)).length).toBe(79);
    expect(splitRecords(records, 79).map((g) => g.length)).toEqual([2, 2, 1]);
    expect(splitRecords(records, 78).map((g) => g.length)).toEqual([1, 1, 1, 1, 1]);
    expect(splitRecords(records, 1).map((g) => g.length)).toEqual([1, 1, 1, 1, 1]);
    expect(splitRecords(records, 10_000).map((g) => g.length)).toEqual([5]);
  });

  it("returns [] for no records and rejects a non-positive bound", () => {
    expect(splitRecords([], 100)).toEqual([]);
    expect(() => splitRecords([rec("k", "v", 1)], 0)).toThrow(RangeError);
    expect(() => splitRecords([rec("k", "v", 1)], 1.5)).toThrow(RangeError);
  });
});

describe("BatchBuilder (incremental encoding, as the SDK producer uses it)", () => {
  /** Appends every record, growing a deliberately small, dirty buffer as needed. */
  function build(records: ProducerRecord[], start: number): BatchBuilder {
    const b = new BatchBuilder(new Uint8Array(start).fill(0xab));
    for (const r of records) {
      const payload = recordPayloadBytes(r);
      const needed = b.sizeBytes + b.appendedBytes(payload, r.timestamp);
      if (needed > b.buffer.length) b.moveTo(new Uint8Array(Math.max(needed, b.buffer.length * 2)).fill(0xcd));
      b.append(r, payload);
    }
    return b;
  }

  it("property: builds exactly encodeBatch's bytes, for any header, and again with another header", () => {
    fc.assert(
      fc.property(recordsArb, headerFieldsArb, headerFieldsArb, fc.integer({ min: BATCH_HEADER_BYTES, max: 400 }), (records, h1, h2, start) => {
        const b = build(records, start);
        expect(b.recordCount).toBe(records.length);
        expect(b.sizeBytes).toBe(encodeBatch({}, records).length);
        expect(hex(b.build(h1))).toBe(hex(encodeBatch(h1, records)));
        // A new header (e.g. a reset producer sequence) leaves the records and their CRC intact.
        expect(hex(b.build(h2))).toBe(hex(encodeBatch(h2, records)));
        const decoded = decodeBatch(b.build(h2));
        expect(decoded.records.map((r) => r.timestamp)).toEqual(records.map((r) => r.timestamp));
      }),
      { numRuns: 150 },
    );
  });

  it("appendedBytes is what append adds; a too-small buffer is refused, nothing written", () => {
    const r = rec("key", "value", 1_700_000_000_000);
    const b = new BatchBuilder(new Uint8Array(BATCH_HEADER_BYTES + 5));
    const add = b.appendedBytes(recordPayloadBytes(r), r.timestamp);
    expect(add).toBe(recordSizeBytes(r));
    expect(() => b.append(r, recordPayloadBytes(r))).toThrow(RangeError);
    expect([b.recordCount, b.sizeBytes]).toEqual([0, BATCH_HEADER_BYTES]);
    b.moveTo(new Uint8Array(BATCH_HEADER_BYTES + add));
    b.append(r, recordPayloadBytes(r));
    expect(b.sizeBytes).toBe(BATCH_HEADER_BYTES + add);
    expect(() => b.moveTo(new Uint8Array(10))).toThrow(RangeError);
    expect(() => new BatchBuilder(new Uint8Array(BATCH_HEADER_BYTES - 1))).toThrow(RangeError);
  });

  it("refuses an unsafe timestamp and out-of-range header fields with CodecError", () => {
    const b = new BatchBuilder(new Uint8Array(1024));
    const r = rec("k", "v", 5);
    expect(() => b.append({ ...r, timestamp: 2 ** 60 }, recordPayloadBytes(r))).toThrow(CodecError);
    b.append(r, recordPayloadBytes(r));
    expect(() => b.build({ producerEpoch: 0x8000 })).toThrow(CodecError);
    expect(() => b.build({ attributes: 1 })).toThrow(CodecError); // a compression codec
    expect(decodeBatch(b.build({})).records).toHaveLength(1);
  });
});
