/**
 * The leader's acks=1 prediction of a replicated partition (durable-objects/partition/replica-tail.ts):
 * offsets of proposed, uncommitted produce requests, by the same KIP-98 rules apply uses.
 */
import { describe, expect, it } from "vitest";
import { encodeBatch } from "../../src/codec/index.ts";
import { scanAppend, type ProducerState, type ScannedAppend } from "../../src/partition/core.ts";
import { ReplicaTail } from "../../durable-objects/partition/replica-tail.ts";

function scanned(records: number, producer?: { id: number; seq: number }): ScannedAppend {
  const batch = encodeBatch(
    producer === undefined ? {} : { producerId: producer.id, producerEpoch: 0, baseSequence: producer.seq },
    Array.from({ length: records }, (_, i) => ({ key: null, value: new TextEncoder().encode(`v${i}`), headers: [], timestamp: 1 })),
  );
  const s = scanAppend([batch], true, 1 << 20);
  if ("code" in s) throw new Error(s.code);
  return s;
}

const none = (): ProducerState | undefined => undefined;

describe("ReplicaTail (acks=1 prediction)", () => {
  it("plain appends follow the committed end and each other; applied entries leave the prediction", () => {
    const t = new ReplicaTail();
    t.reset(3);
    expect(t.term).toBe(3);
    expect(t.add(10, scanned(2), 5, none)).toEqual({ baseOffset: 5, lastOffset: 6 });
    expect(t.add(11, scanned(3), 5, none)).toEqual({ baseOffset: 7, lastOffset: 9 });
    expect(t.predictedAt(11)).toBe(7);
    // Entry 10 applied: the committed end is now 7; the pending entry 11 still ends at 10.
    t.applied(10);
    expect(t.predictedAt(10)).toBeNull();
    expect(t.add(12, scanned(1), 7, none)).toEqual({ baseOffset: 10, lastOffset: 10 });
    // A no-op takes no offset.
    t.skip(13, 7);
    expect(t.add(14, scanned(1), 7, none)).toEqual({ baseOffset: 11, lastOffset: 11 });
  });

  it("an idempotent producer's pipelined requests chain on the predicted state; a duplicate or a gap is not predicted and moves nothing", () => {
    const t = new ReplicaTail();
    t.reset(1);
    expect(t.add(1, scanned(2, { id: 7, seq: 0 }), 0, none)).toEqual({ baseOffset: 0, lastOffset: 1 });
    expect(t.add(2, scanned(1, { id: 7, seq: 2 }), 0, none)).toEqual({ baseOffset: 2, lastOffset: 2 });
    expect(t.add(3, scanned(2, { id: 7, seq: 0 }), 0, none)).toBeNull(); // duplicate of entry 1
    expect(t.add(4, scanned(1, { id: 7, seq: 9 }), 0, none)).toBeNull(); // out of order
    expect(t.add(5, scanned(1, { id: 7, seq: 3 }), 0, none)).toEqual({ baseOffset: 3, lastOffset: 3 });
    // Another producer starts at the predicted end too.
    expect(t.add(6, scanned(1, { id: 8, seq: 0 }), 0, none)).toEqual({ baseOffset: 4, lastOffset: 4 });
  });

  it("nothing after an unpredicted entry (a producer expiry) is predicted until it is applied", () => {
    const t = new ReplicaTail();
    t.reset(2);
    expect(t.add(1, scanned(1), 0, none)).toEqual({ baseOffset: 0, lastOffset: 0 });
    expect(t.add(2, null, 0, none)).toBeNull();
    expect(t.add(3, scanned(1), 0, none)).toBeNull();
    t.applied(3);
    expect(t.add(4, scanned(1), 2, none)).toEqual({ baseOffset: 2, lastOffset: 2 });
    t.reset();
    expect(t.term).toBe(-1);
  });
});
