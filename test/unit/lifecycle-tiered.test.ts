import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBatch, encodeBatch, verifyBatchCrc } from "../../src/codec/index.ts";
import {
  SEGMENT_HEADER_BYTES,
  SegmentObjectError,
  applySegmentCommand,
  completeRemoteDelete,
  completeUpload,
  decodeSegmentHeader,
  decodeSegmentIndex,
  decodeSegmentObject,
  encodeSegmentObject,
  localStartOffset,
  lookupSegmentRange,
  planRetention,
  planSegmentAppend,
  planTiering,
  planTruncateSlice,
  readSource,
  segmentIndexRange,
  segmentObjectKey,
  partitionObjectPrefix,
  topicIdOfPrefix,
  type SegmentRow,
  type TieringConfig,
} from "../../src/lifecycle/index.ts";
import type { LogBounds } from "../../src/partition/core.ts";

const enc = new TextEncoder();

/** A stored batch as the log keeps it: baseOffset assigned, records with keys and values. */
function storedBatch(baseOffset: number, values: string[], timestamp = 1000): Uint8Array {
  return encodeBatch(
    { baseOffset },
    values.map((v, i) => ({ key: enc.encode(`k${i}`), value: enc.encode(v), headers: [], timestamp: timestamp + i })),
  );
}

function batchesOf(sizes: readonly number[]): Uint8Array[] {
  let offset = 0;
  return sizes.map((n) => {
    const b = storedBatch(
      offset,
      Array.from({ length: n }, (_, i) => `v${offset + i}`),
      1000 + offset,
    );
    offset += n;
    return b;
  });
}

describe("the remote segment object (docs/LIFECYCLE.md)", () => {
  it("round-trips: header fields, the offset index, and the batches byte for byte", () => {
    const batches = batchesOf([3, 1, 2]);
    const obj = encodeSegmentObject(batches);
    const { header, index, batches: out } = decodeSegmentObject(obj);
    expect(header).toMatchObject({ version: 1, baseOffset: 0, lastOffset: 5, batchCount: 3, recordCount: 6, maxTimestamp: 1005, dataBytes: batches.reduce((n, b) => n + b.length, 0) });
    expect(index.map((e) => [e.baseOffset, e.lastOffset, e.size])).toEqual([
      [0, 2, batches[0]!.length],
      [3, 3, batches[1]!.length],
      [4, 5, batches[2]!.length],
    ]);
    expect(index[0]!.position).toBe(SEGMENT_HEADER_BYTES);
    expect(out).toEqual(batches);
    expect(decodeBatch(out[2]!).records.map((r) => [r.offset, new TextDecoder().decode(r.value!)])).toEqual([
      [4, "v4"],
      [5, "v5"],
    ]);
  });

  it("a reader needs three range reads: the header, the index it names, and the batches it finds", () => {
    const batches = batchesOf([2, 2, 2, 2]);
    const obj = encodeSegmentObject(batches);
    const header = decodeSegmentHeader(obj.subarray(0, SEGMENT_HEADER_BYTES));
    const { start, end } = segmentIndexRange(header);
    expect(end).toBe(obj.length);
    const index = decodeSegmentIndex(header, obj.subarray(start, end));
    // Offset 3 is inside the second batch; with room for two batches.
    const range = lookupSegmentRange(index, 3, batches[1]!.length + batches[2]!.length);
    expect(range).toMatchObject({ first: 1, count: 2 });
    expect(obj.subarray(range!.start, range!.end)).toEqual(new Uint8Array([...batches[1]!, ...batches[2]!]));
    // The first batch always goes, even over maxBytes (KIP-74); past the end there is nothing.
    expect(lookupSegmentRange(index, 0, 1)).toMatchObject({ first: 0, count: 1 });
    expect(lookupSegmentRange(index, 8, 1 << 20)).toBeNull();
  });

  it("property: lookup returns the batch holding the offset (or the next one after a gap), then whole batches within maxBytes", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 12 }), fc.nat(), fc.integer({ min: 1, max: 2000 }), (sizes, at, maxBytes) => {
        const batches = batchesOf(sizes);
        const { index } = decodeSegmentObject(encodeSegmentObject(batches));
        const last = index[index.length - 1]!.lastOffset;
        const offset = at % (last + 1);
        const r = lookupSegmentRange(index, offset, maxBytes)!;
        const first = index[r.first]!;
        expect(first.baseOffset <= offset && offset <= first.lastOffset).toBe(true);
        expect(r.end - r.start === first.size || r.end - r.start <= maxBytes).toBe(true);
        const next = index[r.first + r.count];
        if (next !== undefined) expect(r.end - r.start + next.size).toBeGreaterThan(maxBytes);
      }),
    );
  });

  it("refuses corrupt or foreign bytes: magic, version, header checksum, index checksum, truncation", () => {
    const obj = encodeSegmentObject(batchesOf([2, 2]));
    const flip = (at: number) => {
      const c = obj.slice();
      c[at]! ^= 1;
      return c;
    };
    expect(() => decodeSegmentObject(flip(0))).toThrow(/magic/);
    expect(() => decodeSegmentObject(flip(5))).toThrow(/version/);
    expect(() => decodeSegmentObject(flip(20))).toThrow(/header checksum/);
    expect(() => decodeSegmentObject(flip(obj.length - 1))).toThrow(/index checksum/);
    expect(() => decodeSegmentObject(obj.subarray(0, obj.length - 1))).toThrow(SegmentObjectError);
    expect(() => decodeSegmentHeader(obj.subarray(0, 10))).toThrow(SegmentObjectError);
    // A flipped data byte is caught by the batch's own records CRC when the batch is read.
    const { batches } = decodeSegmentObject(flip(SEGMENT_HEADER_BYTES + 70));
    expect(() => verifyBatchCrc(batches[0]!)).toThrow(/crc/i);
  });

  it("refuses to encode no batches, or batches out of offset order", () => {
    expect(() => encodeSegmentObject([])).toThrow(SegmentObjectError);
    expect(() => encodeSegmentObject([storedBatch(5, ["a"]), storedBatch(5, ["b"])])).toThrow(/does not follow/);
  });

  it("object keys are a function of the segment", () => {
    expect(segmentObjectKey("t-1", 3, { id: 42, baseOffset: 42 })).toBe("segments/t-1/3/00000000000000000042-42.seg");
  });

  it("a replica of a replicated partition keys its copies under its own prefix; factor-1 keys are unchanged", () => {
    expect(segmentObjectKey("t-1", 3, { id: 42, baseOffset: 42 }, null)).toBe("segments/t-1/3/00000000000000000042-42.seg");
    expect(segmentObjectKey("t-1", 3, { id: 42, baseOffset: 42 }, "r2")).toBe("segments/t-1/3/r2/00000000000000000042-42.seg");
    expect(partitionObjectPrefix("t-1", 3)).toBe("segments/t-1/3/");
    expect(partitionObjectPrefix("t-1", 3, "r4")).toBe("segments/t-1/3/r4/");
    // No replica's prefix holds another's keys (r1 is not a prefix of r10's).
    const keys = ["r1", "r2", "r3", "r10"].map((r) => segmentObjectKey("t", 0, { id: 7, baseOffset: 7 }, r));
    for (const r of ["r1", "r2", "r3", "r10"]) expect(keys.filter((k) => k.startsWith(partitionObjectPrefix("t", 0, r)))).toEqual([segmentObjectKey("t", 0, { id: 7, baseOffset: 7 }, r)]);
    // The topic id of the scheduled sweep is read from the first level, whatever lies below.
    expect(topicIdOfPrefix("segments/t/")).toBe("t");
    expect(() => partitionObjectPrefix("t", 0, "../x")).toThrow(/not a Raft member id/);
    // planTiering gives the replica's keys.
    const seg: SegmentRow = {
      id: 0,
      baseOffset: 0,
      lastOffset: 1,
      bytes: 10,
      records: 2,
      maxTimestamp: 1,
      firstAppendMs: 1,
      lastAppendMs: 1,
      closed: true,
      location: "local",
      r2Key: null,
      remote: "none",
    };
    const plan = planTiering(
      { segments: [seg], bounds: { logStartOffset: 0, highWatermark: 2, logEndOffset: 2 }, nowMs: 1, topicId: "t", partition: 0, replica: "r3", maxConcurrentCopies: 1 },
      { remoteStorageEnable: true, localRetentionMs: -1, localRetentionBytes: -1 },
    );
    expect(plan.effects).toEqual([{ kind: "upload", id: 0, r2Key: "segments/t/0/r3/00000000000000000000-0.seg", baseOffset: 0, end: 2 }]);
  });
});

// ---------------------------------------------------------------------------------------------
// Offload: a crash anywhere neither loses nor duplicates
// ---------------------------------------------------------------------------------------------

class Crash extends Error {}

/** A partition with local rows, a segment index and an R2 bucket; every field is what would be persisted. */
class TieredPartition {
  segments: SegmentRow[] = [];
  local = new Map<number, Uint8Array>();
  r2 = new Map<string, Uint8Array>();
  bounds: LogBounds = { logStartOffset: 0, logEndOffset: 0, highWatermark: 0 };
  /** Every batch ever produced, for checking that nothing was lost. */
  produced: Uint8Array[] = [];
  uploads = 0;
  budget = Number.POSITIVE_INFINITY;

  readonly cfg: TieringConfig;
  readonly segmentBytes: number;

  constructor(cfg: TieringConfig, segmentBytes: number) {
    this.cfg = cfg;
    this.segmentBytes = segmentBytes;
  }

  /** One persisted action (a commit, an R2 call); throws Crash when the budget runs out. */
  act(f: () => void): void {
    if (this.budget-- <= 0) throw new Crash();
    f();
  }

  produce(values: string[], nowMs: number): void {
    const data = storedBatch(this.bounds.logEndOffset, values, nowMs);
    const base = this.bounds.logEndOffset;
    const cmd = planSegmentAppend(
      this.segments[this.segments.length - 1] ?? null,
      { baseOffset: base, lastOffset: base + values.length - 1, bytes: data.length, records: values.length, maxTimestamp: nowMs + values.length - 1, appendMs: nowMs },
      { segmentBytes: this.segmentBytes, segmentMs: 1e12 },
    );
    this.segments = applySegmentCommand(this.segments, cmd);
    this.local.set(base, data);
    this.produced.push(data);
    const leo = base + values.length;
    this.bounds = { ...this.bounds, logEndOffset: leo, highWatermark: leo };
  }

  truncateLocal(before: number): void {
    for (;;) {
      const head = [...this.local.entries()]
        .sort((a, b) => a[0] - b[0])
        .slice(0, 3)
        .map(([base, d]) => ({ baseOffset: base, lastOffset: base + decodeBatch(d).records.length - 1, bytes: d.length }));
      const slice = planTruncateSlice(before, head, { maxRows: 2, maxBytes: 1 << 20 });
      if (slice.command !== null) {
        const off = slice.command.offset;
        this.act(() => {
          for (const [base, d] of [...this.local]) if (base + decodeBatch(d).records.length - 1 < off) this.local.delete(base);
        });
      }
      if (slice.done) return;
    }
  }

  /** The lifecycle:tier timer: plan, commit, truncate local rows, then the owed effects, each followed by its commit. */
  tier(nowMs: number): void {
    const plan = planTiering({ segments: this.segments, bounds: this.bounds, nowMs, topicId: "t", partition: 0, maxConcurrentCopies: 2 }, this.cfg);
    if (plan.commands.length > 0)
      this.act(() => {
        for (const c of plan.commands) this.segments = applySegmentCommand(this.segments, c);
      });
    this.truncateLocal(plan.localStartOffset);
    for (const e of plan.effects) {
      if (e.kind === "upload") {
        const blobs = [...this.local]
          .filter(([base]) => base >= e.baseOffset && base < e.end)
          .sort((a, b) => a[0] - b[0])
          .map(([, d]) => d);
        this.act(() => {
          this.r2.set(e.r2Key, encodeSegmentObject(blobs));
          this.uploads++;
        });
        const done = completeUpload(
          this.segments.find((s) => s.id === e.id),
          e.r2Key,
        );
        if (done !== null)
          this.act(() => {
            this.segments = applySegmentCommand(this.segments, done);
          });
      } else {
        this.act(() => this.r2.delete(e.r2Key));
        const done = completeRemoteDelete(this.segments.find((s) => s.id === e.id));
        if (done !== null)
          this.act(() => {
            this.segments = applySegmentCommand(this.segments, done);
          });
      }
    }
  }

  /** Retention: commit the new log start and segment rows, truncate local rows; the R2 deletes run on the next tier(). */
  retention(nowMs: number, retentionMs: number): void {
    const plan = planRetention({ segments: this.segments, bounds: this.bounds, floor: null, nowMs }, { delete: true, retentionMs, retentionBytes: -1 });
    this.act(() => {
      for (const c of plan.commands) this.segments = applySegmentCommand(this.segments, c);
      this.bounds = { ...this.bounds, logStartOffset: plan.logStartOffset };
    });
    this.truncateLocal(this.bounds.logStartOffset);
  }

  /** Every produced batch at or above the log start is readable, locally or from its segment's object, byte for byte. */
  checkNothingLost(): void {
    for (const data of this.produced) {
      const h = decodeBatch(data).header;
      const last = h.baseOffset + h.lastOffsetDelta;
      if (last < this.bounds.logStartOffset) continue;
      const offset = Math.max(h.baseOffset, this.bounds.logStartOffset);
      const src = readSource(this.segments, this.bounds, offset);
      if (src.kind === "local") {
        expect(this.local.get(h.baseOffset), `batch ${h.baseOffset} local`).toEqual(data);
      } else {
        const obj = this.r2.get(src.r2Key);
        expect(obj, `object ${src.r2Key} for batch ${h.baseOffset}`).toBeDefined();
        const { batches, index } = decodeSegmentObject(obj!);
        expect(batches[index.findIndex((e) => e.baseOffset === h.baseOffset)]).toEqual(data);
      }
    }
  }
}

describe("offload is idempotent and crash-safe", () => {
  const CFG: TieringConfig = { remoteStorageEnable: true, localRetentionMs: 50, localRetentionBytes: -1 };

  it("a closed segment is copied, then recorded both, then leaves local storage; reads below the local start go to R2", () => {
    const p = new TieredPartition(CFG, 200);
    for (let i = 0; i < 6; i++) p.produce([`a${i}`, `b${i}`], i * 10);
    expect(p.segments.map((s) => [s.id, s.closed])).toEqual([
      [0, true],
      [4, true],
      [8, false],
    ]);
    p.tier(60);
    expect(p.segments.map((s) => [s.location, s.remote])).toEqual([
      ["both", "none"],
      ["both", "none"],
      ["local", "none"],
    ]);
    expect(p.uploads).toBe(2);
    p.tier(200);
    expect(p.segments.map((s) => s.location)).toEqual(["remote", "remote", "local"]);
    expect([...p.local.keys()]).toEqual([8, 10]);
    expect(localStartOffset(p.segments, p.bounds)).toBe(8);
    expect(readSource(p.segments, p.bounds, 5)).toEqual({ kind: "remote", id: 4, r2Key: "segments/t/0/00000000000000000004-4.seg", baseOffset: 4 });
    expect(readSource(p.segments, p.bounds, 8)).toEqual({ kind: "local" });
    p.checkNothingLost();
    // Planning again changes nothing and uploads nothing.
    p.tier(300);
    expect(p.uploads).toBe(2);
    // Retention deletes remote segments too: marked deleting, then the object, then the row.
    p.retention(10_000, 100);
    // The active segment is never dropped by retention: it stays until it rolls.
    expect(p.segments.map((s) => [s.id, s.remote])).toEqual([
      [0, "deleting"],
      [4, "deleting"],
      [8, "none"],
    ]);
    p.tier(10_000);
    expect([p.segments.map((s) => s.id), [...p.r2.keys()], p.bounds.logStartOffset]).toEqual([[8], [], 8]);
  });

  it("a crash between the copy commit and the upload: the segment stays local (copying) until a later run uploads it and records both", () => {
    const p = new TieredPartition(CFG, 100);
    for (let i = 0; i < 3; i++) p.produce([`v${i}`], 0);
    p.budget = 1; // the copy commit happens, the upload does not
    expect(() => p.tier(0)).toThrow(Crash);
    expect(p.segments.map((s) => s.remote)).toEqual(["copying", "copying", "none"]);
    expect([p.r2.size, p.local.size]).toEqual([0, 3]);
    p.budget = Number.POSITIVE_INFINITY;
    // Long past local.retention.ms: still nothing leaves local storage before its copy is recorded.
    p.tier(1e6);
    expect(p.segments.map((s) => [s.location, s.remote])).toEqual([
      ["both", "none"],
      ["both", "none"],
      ["local", "none"],
    ]);
    expect([p.uploads, p.local.size]).toEqual([2, 3]);
    p.checkNothingLost();
  });

  it("a crash between the upload and its commit: the next run puts the same object at the same key again, then records both", () => {
    const p = new TieredPartition({ ...CFG, localRetentionMs: -1 }, 100);
    for (let i = 0; i < 2; i++) p.produce([`v${i}`], 0);
    p.budget = 2; // the copy commit, the upload, then no completion commit
    expect(() => p.tier(0)).toThrow(Crash);
    expect([p.uploads, p.r2.size, p.segments[0]!.remote]).toEqual([1, 1, "copying"]);
    const first = p.r2.get(p.segments[0]!.r2Key!);
    p.budget = Number.POSITIVE_INFINITY;
    p.tier(0);
    expect([p.uploads, p.r2.size, p.segments[0]!.location, p.segments[0]!.remote]).toEqual([2, 1, "both", "none"]);
    expect(p.r2.get(p.segments[0]!.r2Key!)).toEqual(first);
    p.checkNothingLost();
  });

  it("planning is idempotent: the same plan twice without a commit between, and nothing new once everything is done", () => {
    const p = new TieredPartition(CFG, 100);
    for (let i = 0; i < 4; i++) p.produce([`v${i}`], 0);
    const input = { segments: p.segments, bounds: p.bounds, nowMs: 1000, topicId: "t", partition: 0, maxConcurrentCopies: 8 };
    const plan = planTiering(input, CFG);
    expect(plan.effects.map((e) => [e.kind, e.id])).toEqual([
      ["upload", 0],
      ["upload", 1],
      ["upload", 2],
    ]);
    expect(planTiering(input, CFG)).toEqual(plan);
    for (let i = 0; i < 3; i++) p.tier(1000);
    expect(planTiering({ ...input, segments: p.segments }, CFG)).toEqual({ commands: [], effects: [], localStartOffset: 3 });
    // Completions are no-ops once the row moved on.
    expect(completeUpload(p.segments[0], p.segments[0]!.r2Key!)).toBeNull();
    expect(completeUpload(undefined, "x")).toBeNull();
    expect(completeRemoteDelete(p.segments[0])).toBeNull();
  });

  it("remote storage off: nothing is copied and nothing leaves local storage", () => {
    const p = new TieredPartition({ ...CFG, remoteStorageEnable: false }, 100);
    for (let i = 0; i < 4; i++) p.produce([`v${i}`], 0);
    p.tier(1e9);
    expect([p.uploads, p.local.size, p.segments.every((s) => s.location === "local")]).toEqual([0, 4, true]);
  });

  it("local.retention.bytes keeps the newest copied segments local", () => {
    const p = new TieredPartition({ remoteStorageEnable: true, localRetentionMs: -1, localRetentionBytes: 1 }, 100);
    for (let i = 0; i < 4; i++) p.produce([`v${i}`], 0);
    // Two copies at a time: a segment copied by one run leaves local storage on the next.
    for (let i = 0; i < 3; i++) p.tier(0);
    // Each segment is one batch; everything copied leaves, except that the active one is never copied.
    expect(p.segments.map((s) => s.location)).toEqual(["remote", "remote", "remote", "local"]);
  });

  it("property: a crash at any action of any run (commit, upload, delete, truncation) loses nothing, and a quiet run afterwards leaves exactly one object per remote segment", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("produce" as const), n: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant("tier" as const), crashAfter: fc.option(fc.integer({ min: 0, max: 12 })) }),
      fc.record({ kind: fc.constant("retention" as const), crashAfter: fc.option(fc.integer({ min: 0, max: 6 })) }),
      fc.record({ kind: fc.constant("tick" as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), fc.integer({ min: 100, max: 400 }), (ops, segmentBytes) => {
        const p = new TieredPartition(CFG, segmentBytes);
        let now = 0;
        for (const o of ops) {
          if (o.kind === "produce")
            p.produce(
              Array.from({ length: o.n }, (_, i) => `v${now}-${i}`),
              now,
            );
          else if (o.kind === "tick") now += 40;
          else {
            p.budget = o.crashAfter ?? Number.POSITIVE_INFINITY;
            try {
              if (o.kind === "tier") p.tier(now);
              else p.retention(now, 400);
            } catch (e) {
              if (!(e instanceof Crash)) throw e;
            }
            p.budget = Number.POSITIVE_INFINITY;
          }
          p.checkNothingLost();
          expect(p.bounds.logStartOffset).toBeLessThanOrEqual(p.bounds.highWatermark);
        }
        // Quiet runs until nothing is owed.
        for (let i = 0; i < 5; i++) p.tier(now);
        p.checkNothingLost();
        expect(p.segments.filter((s) => s.remote !== "none")).toEqual([]);
        const keys = p.segments.filter((s) => s.location !== "local").map((s) => s.r2Key);
        expect([...p.r2.keys()].sort()).toEqual([...keys].sort());
        for (const s of p.segments.filter((x) => x.location !== "local")) {
          const { header } = decodeSegmentObject(p.r2.get(s.r2Key!)!);
          expect([header.baseOffset, header.lastOffset]).toEqual([s.baseOffset, s.lastOffset]);
        }
        // Local rows are exactly the batches of segments still local or both, at or above the log start.
        const localSegs = p.segments.filter((s) => s.location !== "remote");
        for (const base of p.local.keys()) expect(localSegs.some((s) => base >= s.baseOffset && base <= s.lastOffset) || base < p.bounds.logStartOffset).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
