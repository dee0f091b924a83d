/**
 * The Kafka bridge's per-partition appender (sdk/src/kafka-bridge/appender.ts) with a scripted
 * send function and fake timers: the bridge-side linger (`produceLingerMs`) holds a batch
 * without a producer id until more batches of its partition arrive or its linger ran out,
 * never an idempotent one; each request gets its own base offset inside the merged append.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { decodeBatch, encodeBatch } from "../../src/codec/index.ts";
import { PartitionAppender, type Acks, type AppendOutcome } from "../../sdk/src/kafka-bridge/appender.ts";
import { parseProducedBatch, toKafkaBatches, type PreparedBatch } from "../../sdk/src/kafka-bridge/records.ts";

const te = new TextEncoder();

function prepared(values: string[], producer?: { producerId: number; producerEpoch: number; baseSequence: number }): Promise<PreparedBatch> {
  const kafka = toKafkaBatches(
    encodeBatch(
      producer ?? {},
      values.map((v, i) => ({ key: null, value: te.encode(v), headers: [], timestamp: 1000 + i })),
    ),
  );
  const batch = parseProducedBatch(kafka);
  return Promise.resolve({ batch, records: batch.payload });
}

interface Sent {
  partition: number;
  values: string[];
  acks: Acks;
}

function recorder(): { sent: Sent[]; send: (topic: string, partition: number, body: Uint8Array, acks: Acks) => Promise<AppendOutcome> } {
  const sent: Sent[] = [];
  let next = 0;
  return {
    sent,
    send: async (_topic, partition, body, acks) => {
      const values = decodeBatch(body).records.map((r) => new TextDecoder().decode(r.value!));
      sent.push({ partition, values, acks });
      const baseOffset = next;
      next += values.length;
      return { baseOffset, logAppendTime: null, logStartOffset: 0 };
    },
  };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("PartitionAppender linger", () => {
  it("holds a batch up to lingerMs and sends what arrived meanwhile as one append, each answered its own offset", async () => {
    const r = recorder();
    const appender = new PartitionAppender(r.send, undefined, 5);
    const a = appender.append("t", 0, "all", prepared(["a0", "a1"]));
    await vi.advanceTimersByTimeAsync(2);
    expect(r.sent).toEqual([]);
    const b = appender.append("t", 0, "all", prepared(["b0"]));
    const other = appender.append("t", 1, "all", prepared(["x0"]));
    await vi.advanceTimersByTimeAsync(2);
    expect(r.sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(2);
    // t=6: partition 0's head (queued at 0) lingered 5 ms; partition 1's (queued at 2) has not
    expect(r.sent).toEqual([{ partition: 0, values: ["a0", "a1", "b0"], acks: "all" }]);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.sent[1]).toEqual({ partition: 1, values: ["x0"], acks: "all" });
    expect((await a)!.baseOffset).toBe(0);
    expect((await b)!.baseOffset).toBe(2);
    expect((await other)!.baseOffset).toBe(3);
  });

  it("sends at once when the merged append is full, without waiting out the linger", async () => {
    const r = recorder();
    const big = "v".repeat(600);
    const appender = new PartitionAppender(r.send, 1000, 60_000);
    const a = appender.append("t", 0, "all", prepared([big]));
    const b = appender.append("t", 0, "all", prepared([big]));
    await vi.advanceTimersByTimeAsync(0);
    expect(r.sent.map((s) => s.values.length)).toEqual([1]);
    expect((await a)!.baseOffset).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await b)!.baseOffset).toBe(1);
  });

  it("never holds an idempotent batch, and never merges it", async () => {
    const r = recorder();
    const appender = new PartitionAppender(r.send, undefined, 60_000);
    const a = appender.append("t", 0, "all", prepared(["i0"], { producerId: 7, producerEpoch: 0, baseSequence: 0 }));
    const b = appender.append("t", 0, "all", prepared(["i1"], { producerId: 7, producerEpoch: 0, baseSequence: 1 }));
    await vi.advanceTimersByTimeAsync(0);
    expect(r.sent.map((s) => s.values)).toEqual([["i0"], ["i1"]]);
    expect([(await a)!.baseOffset, (await b)!.baseOffset]).toEqual([0, 1]);
  });

  it("with lingerMs 0 sends a lone batch at once", async () => {
    const r = recorder();
    const appender = new PartitionAppender(r.send);
    const a = appender.append("t", 0, 1, prepared(["a0"]));
    await vi.advanceTimersByTimeAsync(0);
    expect(r.sent).toEqual([{ partition: 0, values: ["a0"], acks: 1 }]);
    expect((await a)!.baseOffset).toBe(0);
  });
});
