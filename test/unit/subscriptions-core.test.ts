/**
 * The Subscription core end to end at core level: the exact expectations (ack timeout,
 * nack and dead letter, permits, key_shared join, failover takeover, refusals, ack holes across a
 * restore), field cases A3, A4 (see subscriptions-ack-ranges), A6, A7 and A8, delayed delivery,
 * TTL, batched commands, and model runs with fast-check.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  applyCommand,
  type DurableSubscription,
  type Delivery,
  emptyDurable,
  encodeDurable,
  keyHash,
  type MessageMeta,
  type MessageSource,
  offsetForTimestamp,
  Subscription,
  type SubscriptionOptions,
} from "../../src/subscriptions/index.ts";

interface Msg extends MessageMeta {
  timestampMs: number;
}

/** An in-memory partition log. */
class Log implements MessageSource {
  msgs: Msg[] = [];
  logStartOffset = 0;
  get logEndOffset(): number {
    return this.msgs.length;
  }
  produce(n = 1, extra: Partial<Msg> = {}): number[] {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const offset = this.msgs.length;
      this.msgs.push({ offset, timestampMs: offset * 100, ...extra });
      out.push(offset);
    }
    return out;
  }
  read(from: number, max: number): readonly MessageMeta[] {
    return this.msgs.slice(Math.max(from, this.logStartOffset), Math.max(from, this.logStartOffset) + max);
  }
}

function newSub(log: Log, opts: Partial<SubscriptionOptions> & { type: SubscriptionOptions["type"] }, startOffset = 0): Subscription {
  return new Subscription({ name: "s", ...opts }, emptyDurable(startOffset - 1), log);
}

const offsets = (ds: Delivery[]) => ds.map((d) => d.offset);
const counts = (ds: Delivery[]) => ds.map((d) => d.redeliveryCount);
const ok = <T extends object>(r: T) => {
  expect("code" in r ? r : null).toBeNull();
  return r;
};

describe("ack timeout (shared, 1 s)", () => {
  it("m0 at t=0 and m1 at t=600 are redelivered at 1000 and 1600; an acked message never", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared", ackTimeoutMs: 1000 });
    expect(sub.addConsumer({ id: "c" })).toBeNull();
    log.produce();
    expect(offsets(sub.dispatch(0, log).deliveries)).toEqual([0]);
    log.produce();
    expect(offsets(sub.dispatch(600, log).deliveries)).toEqual([1]);
    log.produce();
    expect(offsets(sub.dispatch(700, log).deliveries)).toEqual([2]);
    ok(sub.ack([2]));
    expect(sub.nextDueMs(700)).toBe(1000);
    expect(sub.tick(999)).toEqual([]);
    expect(sub.tick(1000)).toEqual([0]);
    const r1 = sub.dispatch(1000, log).deliveries;
    expect([offsets(r1), counts(r1)]).toEqual([[0], [1]]);
    expect(sub.nextDueMs(1000)).toBe(1600);
    expect(sub.tick(1600)).toEqual([1]);
    expect(offsets(sub.dispatch(1600, log).deliveries)).toEqual([1]);
    expect(sub.tick(10_000)).toEqual([0, 1]); // 2 was acked: never again
  });
});

describe("nack and the dead-letter topic", () => {
  it("nacked on every delivery with maxRedeliverCount 2: counts 0, 1, 2, then exactly one dead-letter copy", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared", maxRedeliverCount: 2, negativeAckRedeliveryDelayMs: 100 });
    sub.addConsumer({ id: "c" });
    log.produce();
    const seen: number[] = [];
    let t = 0;
    for (let i = 0; i < 5; i++) {
      const ds = sub.dispatch(t, log).deliveries;
      if (ds.length === 0) break;
      seen.push(...counts(ds));
      expect(sub.nack("c", 0, t)).toEqual({ applied: true });
      expect(sub.nack("c", 0, t)).toEqual({ applied: false }); // the same delivery counts once
      expect(sub.dispatch(t + 99, log).deliveries).toEqual([]); // never before the nack delay
      t += 100;
    }
    expect(seen).toEqual([0, 1, 2]);
    expect(sub.pendingDeadLetters()).toEqual([{ offset: 0, seq: 0 }]);
    const cmd = sub.takeCommand()!;
    expect(cmd.deadLetters).toEqual([[0, 0]]);
    // the room produces the copy after the commit, then confirms it: the original is acked
    expect(sub.confirmDeadLetter(0)).toBe(true);
    expect(sub.confirmDeadLetter(0)).toBe(false);
    expect(sub.pendingDeadLetters()).toEqual([]);
    expect(sub.dispatch(t + 10_000, log).deliveries).toEqual([]);
    expect(sub.stats().backlog).toBe(0);
    expect(sub.stats().deadLetteredTotal).toBe(1);
    const cmd2 = sub.takeCommand()!;
    expect([cmd2.markDelete, cmd2.deadLettered, cmd2.deadLetters]).toEqual([0, 1, []]);
  });

  it("an ack timeout then a late nack of the same delivery count once", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared", ackTimeoutMs: 1000, negativeAckRedeliveryDelayMs: 0 });
    sub.addConsumer({ id: "c" });
    log.produce();
    sub.dispatch(0, log);
    sub.tick(1000);
    expect(sub.nack("c", 0, 1001, 0)).toEqual({ applied: false });
    const d = sub.dispatch(1001, log).deliveries;
    expect(counts(d)).toEqual([1]);
    expect(sub.nack("c", 0, 1002, 0)).toEqual({ applied: false }); // stale count
    expect(sub.nack("c", 0, 1002, 1)).toEqual({ applied: true });
    expect(sub.redeliveryCount(0)).toBe(2);
  });

  it("A6: a nack delay of 200 ms applies without a dead-letter topic", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared", negativeAckRedeliveryDelayMs: 200 });
    sub.addConsumer({ id: "c" });
    log.produce();
    sub.dispatch(0, log);
    sub.nack("c", 0, 50);
    expect(sub.nextDueMs(50)).toBe(250);
    expect(sub.dispatch(249, log).deliveries).toEqual([]);
    expect(sub.dispatch(250, log).deliveries).toEqual([{ consumerId: "c", offset: 0, redeliveryCount: 1 }]);
  });

  it("exponential backoff: min * multiplier^count, capped", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared", negativeAckBackoff: { minDelayMs: 100, maxDelayMs: 350, multiplier: 2 } });
    sub.addConsumer({ id: "c" });
    log.produce();
    let t = 0;
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      sub.dispatch(t, log);
      sub.nack("c", 0, t);
      const due = sub.nextDueMs(t)!;
      delays.push(due - t);
      t = due;
    }
    expect(delays).toEqual([100, 200, 350, 350]);
  });
});

describe("permits", () => {
  it("permits = 2: m0, m1 unacked stop the flow; after the ack timeout both come again; acking them lets m2 flow", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared", ackTimeoutMs: 1000 });
    sub.addConsumer({ id: "c", flow: { kind: "window", receiverQueueSize: 2 } });
    log.produce(3);
    expect(offsets(sub.dispatch(0, log).deliveries)).toEqual([0, 1]);
    expect(sub.dispatch(10, log).deliveries).toEqual([]);
    expect(sub.tick(1000)).toEqual([0, 1]);
    const again = sub.dispatch(1000, log).deliveries;
    expect([offsets(again), counts(again)]).toEqual([
      [0, 1],
      [1, 1],
    ]);
    ok(sub.ack([0, 1]));
    expect(offsets(sub.dispatch(1001, log).deliveries)).toEqual([2]);
    sub.checkInvariants();
  });

  it("A7 pull mode: permits 1 then 2; acks on another connection; closing delivers nothing again", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared" });
    sub.addConsumer({ id: "c1", flow: { kind: "credit" } });
    log.produce(5);
    expect(sub.dispatch(0, log).deliveries).toEqual([]);
    expect(sub.grantPermits("c1", 1)).toBeNull();
    expect(offsets(sub.dispatch(1, log).deliveries)).toEqual([0]);
    sub.grantPermits("c1", 2);
    expect(offsets(sub.dispatch(2, log).deliveries)).toEqual([1, 2]);
    expect(sub.dispatch(3, log).deliveries).toEqual([]);
    sub.addConsumer({ id: "c2", flow: { kind: "credit" } });
    ok(sub.ack([0, 1, 2]));
    expect(sub.stats().backlog).toBe(2);
    expect(sub.dispatch(4, log).deliveries).toEqual([]); // acks give no permits in pull mode
    sub.removeConsumer("c1");
    expect(sub.dispatch(5, log).deliveries).toEqual([]);
    expect(sub.stats().backlog).toBe(2);
    expect(sub.grantPermits("c2", 0)?.code).toBe("INVALID_REQUEST");
  });

  it("pull mode: unused permits past 1,000,000 are refused with a message naming the frame's field", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared" });
    sub.addConsumer({ id: "c", flow: { kind: "credit" } });
    expect(sub.grantPermits("c", 1_000_000)).toBeNull();
    expect(sub.grantPermits("c", 1)).toEqual({
      ok: false,
      code: "INVALID_REQUEST",
      message: "permits must be a positive integer, and the consumer's unused permits at most 1000000.",
      details: { field: "permits" },
    });
  });

  it("A7 push mode: receiverQueueSize 3 gives m0..m2; acking m0 gives exactly m3", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared" });
    sub.addConsumer({ id: "c", flow: { kind: "window", receiverQueueSize: 3 } });
    log.produce(5);
    expect(offsets(sub.dispatch(0, log).deliveries)).toEqual([0, 1, 2]);
    expect(sub.grantPermits("c", 5)?.code).toBe("INVALID_REQUEST");
    ok(sub.ack([0]));
    expect(offsets(sub.dispatch(1, log).deliveries)).toEqual([3]);
  });
});

/** A key whose hash lies in [lo, hi]. */
function keyIn(lo: number, hi: number): string {
  for (let i = 0; ; i++) {
    const h = keyHash(`k${i}`);
    if (h >= lo && h <= hi) return `k${i}`;
  }
}

describe("key_shared", () => {
  it("B joins while A holds K: B gets nothing for K until A acks, then K's later messages in order", () => {
    const log = new Log();
    const sub = newSub(log, { type: "key_shared" });
    const K = keyIn(32768, 65535); // moves to B when B joins
    const L = keyIn(0, 32767); // stays with A
    sub.addConsumer({ id: "A" });
    log.produce(2, { key: K });
    expect(offsets(sub.dispatch(0, log).deliveries)).toEqual([0, 1]);
    sub.addConsumer({ id: "B" });
    expect(sub.hashRangesView().map((r) => r.consumerId)).toEqual(["A", "B"]);
    log.produce(1, { key: K }); // 2
    log.produce(1, { key: L }); // 3
    log.produce(1, { key: K }); // 4
    expect(sub.dispatch(1, log).deliveries).toEqual([{ consumerId: "A", offset: 3, redeliveryCount: 0 }]);
    ok(sub.ack([0]));
    expect(sub.dispatch(2, log).deliveries).toEqual([]);
    ok(sub.ack([1]));
    const ds = sub.dispatch(3, log).deliveries;
    expect(ds.map((d) => [d.consumerId, d.offset])).toEqual([
      ["B", 2],
      ["B", 4],
    ]);
    sub.checkInvariants();
  });

  it("cumulative ack is refused on shared and key_shared with NOT_ALLOWED, changing nothing", () => {
    for (const type of ["shared", "key_shared"] as const) {
      const log = new Log();
      const sub = newSub(log, { type });
      sub.addConsumer({ id: "c" });
      log.produce(3);
      sub.dispatch(0, log);
      expect(sub.ackCumulative(2)).toMatchObject({ code: "NOT_ALLOWED" });
      expect(sub.markDelete).toBe(-1);
      expect(sub.takeCommand()).toBeNull();
    }
  });
});

describe("exclusive and failover", () => {
  it("exclusive refuses a second consumer with CONSUMER_BUSY and keeps the first", () => {
    const log = new Log();
    const sub = newSub(log, { type: "exclusive" });
    expect(sub.addConsumer({ id: "a" })).toBeNull();
    expect(sub.addConsumer({ id: "b" })).toMatchObject({ code: "CONSUMER_BUSY" });
    expect(sub.addConsumer({ id: "b", type: "shared" })).toMatchObject({ code: "CONSUMER_BUSY" });
    log.produce(2);
    expect(sub.dispatch(0, log).deliveries.map((d) => d.consumerId)).toEqual(["a", "a"]);
    sub.removeConsumer("a");
    expect(sub.addConsumer({ id: "b" })).toBeNull();
  });

  it("failover: the active consumer leaves mid-stream; the standby continues from the first unacked", () => {
    const log = new Log();
    const sub = newSub(log, { type: "failover" });
    sub.addConsumer({ id: "a", name: "zz" });
    sub.addConsumer({ id: "b", name: "aa" }); // sorts first but joined later: a stays active
    expect(sub.activeConsumer).toBe("a");
    log.produce(5);
    expect(sub.dispatch(0, log).deliveries.map((d) => [d.consumerId, d.offset])).toEqual([0, 1, 2, 3, 4].map((o) => ["a", o]));
    ok(sub.ackCumulative(1));
    sub.removeConsumer("a");
    expect(sub.activeConsumer).toBe("b");
    log.produce(1);
    const ds = sub.dispatch(1, log).deliveries;
    expect(ds.map((d) => [d.consumerId, d.offset])).toEqual([2, 3, 4, 5].map((o) => ["b", o]));
  });

  it("failover on a partitioned topic: a better-sorted joiner takes the partition and gets the unacked messages", () => {
    const log = new Log();
    const sub = newSub(log, { type: "failover", partitioned: true, partitionIndex: 0 });
    sub.addConsumer({ id: "a", name: "c2" });
    log.produce(2);
    sub.dispatch(0, log);
    sub.addConsumer({ id: "b", name: "c1" });
    expect(sub.activeConsumer).toBe("b");
    expect(sub.dispatch(1, log).deliveries.map((d) => [d.consumerId, d.offset])).toEqual([
      ["b", 0],
      ["b", 1],
    ]);
    expect(sub.stats().consumers.find((c) => c.id === "a")).toMatchObject({ unacked: 0 });
  });
});

describe("restart (restore from the stored form)", () => {
  const restart = (sub: Subscription, log: Log, opts: SubscriptionOptions) => Subscription.restore(opts, JSON.parse(JSON.stringify(sub.snapshot().stored)), log);

  it("acks of 0, 2, 3, 5 of 0..5 survive: only 1, 4 and everything after 5 come again", () => {
    const log = new Log();
    const opts: SubscriptionOptions = { name: "s", type: "exclusive" };
    const sub = new Subscription(opts, emptyDurable(-1), log);
    sub.addConsumer({ id: "a" });
    log.produce(6);
    sub.dispatch(0, log);
    ok(sub.ack([0, 2, 3, 5]));
    const back = restart(sub, log, opts);
    back.addConsumer({ id: "a2" });
    log.produce(2);
    expect(offsets(back.dispatch(1, log).deliveries)).toEqual([1, 4, 6, 7]);
  });

  it("A3 part 1: acks 0, 1, 3, 4, 7; restart delivers 2, 5, 6, 8, 9; then the mark-delete moves", () => {
    const log = new Log();
    const opts: SubscriptionOptions = { name: "s", type: "exclusive" };
    const sub = new Subscription(opts, emptyDurable(-1), log);
    sub.addConsumer({ id: "a" });
    log.produce(10);
    expect(sub.dispatch(0, log).deliveries).toHaveLength(10);
    ok(sub.ack([0, 1, 3, 4, 7]));
    expect([sub.markDelete, sub.ackedRanges, sub.stats().backlog]).toEqual([
      1,
      [
        [3, 4],
        [7, 7],
      ],
      5,
    ]);
    const back = restart(sub, log, opts);
    back.addConsumer({ id: "a" });
    expect(offsets(back.dispatch(1, log).deliveries)).toEqual([2, 5, 6, 8, 9]);
    ok(back.ack([2]));
    expect([back.markDelete, back.ackedRanges, back.stats().backlog]).toEqual([4, [[7, 7]], 4]);
    ok(back.ack([5, 6]));
    expect([back.markDelete, back.ackedRanges, back.stats().backlog]).toEqual([7, [], 2]);
  });

  it("A3 part 2: the redelivery count and the nack delay survive a restart; one dead-letter copy", () => {
    const log = new Log();
    const opts: SubscriptionOptions = { name: "s", type: "shared", maxRedeliverCount: 2, negativeAckRedeliveryDelayMs: 500 };
    const sub = new Subscription(opts, emptyDurable(-1), log);
    sub.addConsumer({ id: "c" });
    log.produce();
    const seen: number[] = [];
    seen.push(...counts(sub.dispatch(0, log).deliveries));
    sub.nack("c", 0, 10);
    seen.push(...counts(sub.dispatch(510, log).deliveries));
    sub.nack("c", 0, 520);
    sub.removeConsumer("c"); // no consumer holds m0
    const back = restart(sub, log, opts); // at t=600, within the 500 ms
    back.addConsumer({ id: "c" });
    expect(back.dispatch(600, log).deliveries).toEqual([]);
    expect(back.nextDueMs(600)).toBe(1020);
    seen.push(...counts(back.dispatch(1020, log).deliveries));
    back.nack("c", 0, 1030);
    expect(seen).toEqual([0, 1, 2]);
    expect(back.pendingDeadLetters()).toEqual([{ offset: 0, seq: 0 }]);
    // a restart before the copy is confirmed keeps the same copy (same sequence: deduplicated)
    const again = restart(back, log, opts);
    expect(again.pendingDeadLetters()).toEqual([{ offset: 0, seq: 0 }]);
    again.addConsumer({ id: "c" });
    expect(again.dispatch(5000, log).deliveries).toEqual([]);
  });

  it("a crash between flushes redelivers exactly the acks after the last committed command", () => {
    const log = new Log();
    const opts: SubscriptionOptions = { name: "s", type: "shared" };
    const sub = new Subscription(opts, emptyDurable(-1), log);
    sub.addConsumer({ id: "c" });
    log.produce(6);
    sub.dispatch(0, log);
    let committed: DurableSubscription = emptyDurable(-1);
    ok(sub.ack([0, 2]));
    committed = applyCommand(committed, sub.takeCommand()!);
    ok(sub.ack([1, 4])); // not flushed
    const back = new Subscription(opts, committed, log);
    back.addConsumer({ id: "c" });
    expect(offsets(back.dispatch(1, log).deliveries)).toEqual([1, 3, 4, 5]);
  });
});

describe("A8: seek by timestamp", () => {
  const seekTs = (sub: Subscription, log: Log, t: number) => sub.seek(offsetForTimestamp(log.msgs, t, log.logEndOffset));

  it("scenario 1: all acked; seek(250) gives m2..m4 with backlog 3; seek(300) m2 first; seek(600) nothing until m5", () => {
    const log = new Log();
    const sub = newSub(log, { type: "exclusive" });
    sub.addConsumer({ id: "a" });
    log.produce(5); // timestamps 0, 100, ..., 400: shift by 100
    for (const [i, m] of log.msgs.entries()) m.timestampMs = (i + 1) * 100;
    sub.dispatch(0, log);
    ok(sub.ack([0, 1, 2, 3, 4]));
    seekTs(sub, log, 250);
    expect(sub.stats().backlog).toBe(3);
    expect(offsets(sub.dispatch(1, log).deliveries)).toEqual([2, 3, 4]);
    seekTs(sub, log, 300);
    expect(offsets(sub.dispatch(2, log).deliveries)[0]).toBe(2);
    seekTs(sub, log, 600);
    expect(sub.stats().backlog).toBe(0);
    expect(sub.dispatch(3, log).deliveries).toEqual([]);
    log.produce();
    expect(offsets(sub.dispatch(4, log).deliveries)).toEqual([5]);
    expect(sub.takeCommand()!.reset).toEqual({ nextOffset: 5 });
  });

  it("scenario 3: acks 0 and 2, seek(350) delivers 3 and 4 only, backlog 2", () => {
    const log = new Log();
    const sub = newSub(log, { type: "exclusive" });
    sub.addConsumer({ id: "a" });
    log.produce(5);
    for (const [i, m] of log.msgs.entries()) m.timestampMs = (i + 1) * 100;
    sub.dispatch(0, log);
    ok(sub.ack([0, 2]));
    seekTs(sub, log, 350);
    expect(sub.stats().backlog).toBe(2);
    expect(offsets(sub.dispatch(1, log).deliveries)).toEqual([3, 4]);
  });
});

describe("delayed delivery and TTL", () => {
  it("deliverAt is never early; a past deliverAt is immediate; the timer is the deliverAt", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared" });
    sub.addConsumer({ id: "c" });
    log.produce(1, { deliverAtMs: 5000 });
    log.produce(1, { deliverAtMs: 10 });
    expect(offsets(sub.dispatch(100, log).deliveries)).toEqual([1]);
    expect(sub.nextDueMs(100)).toBe(5000);
    expect(sub.dispatch(4999, log).deliveries).toEqual([]);
    expect(offsets(sub.dispatch(5000, log).deliveries)).toEqual([0]);
  });

  it("TTL acks on behalf of the subscription and returns permits of expired messages in flight", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared" });
    sub.addConsumer({ id: "c", flow: { kind: "window", receiverQueueSize: 2 } });
    log.produce(5);
    sub.dispatch(0, log);
    expect(sub.expireBefore(3)).toBe(3);
    expect(sub.markDelete).toBe(2);
    expect(offsets(sub.dispatch(1, log).deliveries)).toEqual([3, 4]);
    sub.checkInvariants();
    expect(sub.expireBefore(99)).toBe(2);
    expect(sub.stats().backlog).toBe(0);
  });

  it("skip and invalid message ids", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared" });
    log.produce(4);
    sub.observeLog(log); // the room reports appends
    ok(sub.ack([1]));
    expect(sub.skip(2)).toBe(2);
    expect([sub.markDelete, sub.stats().backlog]).toEqual([2, 1]);
    expect(sub.ack([2, 9])).toMatchObject({ code: "INVALID_MESSAGE_ID", details: { offset: 9, logEndOffset: 4 } });
    expect(sub.ack([3, -1])).toMatchObject({ code: "INVALID_MESSAGE_ID" });
    expect(sub.isAcked(3)).toBe(false); // a refused batch changes nothing
  });
});

describe("bounded dispatch slices", () => {
  it("a slice used up by redeliveries skips no new message", () => {
    const log = new Log();
    const sub = newSub(log, { type: "shared", negativeAckRedeliveryDelayMs: 0, maxExaminePerDispatch: 2 });
    sub.addConsumer({ id: "c" });
    log.produce(2);
    expect(offsets(sub.dispatch(0, log).deliveries)).toEqual([0, 1]);
    sub.nack("c", 0, 1);
    sub.nack("c", 1, 1);
    log.produce(2);
    const all: number[] = [];
    for (let i = 0; i < 5; i++) all.push(...offsets(sub.dispatch(2, log).deliveries));
    expect(all).toEqual([0, 1, 2, 3]);
  });
});

describe("commands and the stored form", () => {
  it("applyCommand refuses to move the mark-delete position back without a reset", () => {
    const s = applyCommand(emptyDurable(-1), { v: 1, sub: "s", markDelete: 5, ackRanges: [], redeliveryCounts: [], notBefore: [], deadLetters: [], deadLettered: 0, nextDeadLetterSeq: 0 });
    expect(s.cursor.markDelete).toBe(5);
    expect(() => applyCommand(s, { v: 1, sub: "s", markDelete: 3, ackRanges: [], redeliveryCounts: [], notBefore: [], deadLetters: [], deadLettered: 0, nextDeadLetterSeq: 0 })).toThrow(
      /back/,
    );
    const r = applyCommand(s, {
      v: 1,
      sub: "s",
      reset: { nextOffset: 2 },
      markDelete: 1,
      ackRanges: [[3, 3]],
      redeliveryCounts: [[2, 1]],
      notBefore: [],
      deadLetters: [],
      deadLettered: 0,
      nextDeadLetterSeq: 0,
    });
    expect([r.cursor.markDelete, r.cursor.ackedRanges, [...r.redeliveryCounts]]).toEqual([1, [[3, 3]], [[2, 1]]]);
  });

  it("a corrupt stored value is refused loudly", () => {
    const log = new Log();
    const good = newSub(log, { type: "shared" }).snapshot().stored;
    for (const bad of [
      null,
      { ...good, v: 2 },
      { ...good, markDelete: -2 },
      { ...good, ackRanges: "zz" },
      { ...good, redeliveryCounts: [[1]] },
      { ...good, deadLetters: [[1, 5]], nextDeadLetterSeq: 0 },
    ]) {
      expect(() => Subscription.restore({ name: "s", type: "shared" }, bad, log)).toThrow(RangeError);
    }
  });
});

// ---- model runs ----

type Op =
  | { k: "produce"; n: number; key: number; delayMs: number | null }
  | { k: "join"; c: number; q: number }
  | { k: "leave"; c: number }
  | { k: "ack"; pick: number }
  | { k: "nack"; pick: number }
  | { k: "time"; dt: number }
  | { k: "flush" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant("produce" as const),
      n: fc.integer({ min: 1, max: 4 }),
      key: fc.integer({ min: 0, max: 5 }),
      delayMs: fc.option(fc.integer({ min: -500, max: 1500 }), { freq: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("join" as const), c: fc.integer({ min: 0, max: 3 }), q: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("leave" as const), c: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant("ack" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("nack" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("time" as const), dt: fc.integer({ min: 0, max: 700 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("flush" as const) }) },
);

/**
 * Runs ops against a subscription and a model of who holds what. Checks after every step: the
 * core's invariants (permits never negative and conserved, one place per unacked message), no
 * message held by two consumers at once, and that folding the flushed commands with applyCommand
 * gives the live durable state. `onDeliver` adds type-specific checks.
 */
function modelRun(type: SubscriptionOptions["type"], ops: Op[], onDeliver?: (d: Delivery, held: Map<number, string>, log: Log, sub: Subscription) => void, withNacks = true) {
  const log = new Log();
  const sub = new Subscription(
    { name: "s", type, maxExaminePerDispatch: 3, maxHeldMessages: 4, ackTimeoutMs: withNacks ? 1000 : 0, negativeAckRedeliveryDelayMs: 300, maxRedeliverCount: withNacks ? 1 : 0 },
    emptyDurable(-1),
    log,
  );
  const held = new Map<number, string>(); // offset -> consumer, per the deliveries seen
  const firstSeen = new Set<number>();
  let lastMarkDelete = sub.markDelete;
  let folded = emptyDurable(-1);
  let now = 0;
  sub.addConsumer({ id: "c0", flow: { kind: "window", receiverQueueSize: 2 } });
  const pump = () => {
    for (const t of sub.tick(now)) held.delete(t);
    for (let slices = 0; ; slices++) {
      if (slices > 1000) throw new Error("dispatch keeps saying more without progress");
      const { deliveries, more } = sub.dispatch(now, log);
      for (const d of deliveries) {
        expect(held.has(d.offset)).toBe(false);
        expect(log.msgs[d.offset]!.deliverAtMs ?? 0).toBeLessThanOrEqual(now); // never early
        onDeliver?.(d, held, log, sub);
        held.set(d.offset, d.consumerId);
        if (!firstSeen.has(d.offset)) {
          // first deliveries follow offset order (Key_Shared may hold one key back for another)
          // (a message whose deliverAt is still ahead may wait)
          if (type !== "key_shared") for (let o = 0; o < d.offset; o++) expect(firstSeen.has(o) || sub.isAcked(o) || (log.msgs[o]!.deliverAtMs ?? 0) > now).toBe(true);
          firstSeen.add(d.offset);
        }
      }
      if (!more) break;
    }
    sub.checkInvariants();
    expect(sub.markDelete).toBeGreaterThanOrEqual(lastMarkDelete); // no seek in these runs
    lastMarkDelete = sub.markDelete;
  };
  for (const op of ops) {
    switch (op.k) {
      case "produce":
        // delayed delivery only in the runs with nacks: like a nack, it may reorder a key
        log.produce(op.n, { key: `key${op.key}`, ...(withNacks && op.delayMs !== null ? { deliverAtMs: now + op.delayMs } : {}) });
        break;
      case "join":
        sub.addConsumer({ id: `c${op.c}`, flow: { kind: "window", receiverQueueSize: op.q } });
        break;
      case "leave":
        sub.removeConsumer(`c${op.c}`);
        for (const [o, c] of [...held]) if (c === `c${op.c}`) held.delete(o);
        break;
      case "ack": {
        const hs = [...held.keys()];
        if (hs.length === 0) break;
        const o = hs[op.pick % hs.length]!;
        ok(sub.ack([o]));
        held.delete(o);
        break;
      }
      case "nack": {
        if (!withNacks) break;
        const hs = [...held.entries()];
        if (hs.length === 0) break;
        const [o, c] = hs[op.pick % hs.length]!;
        expect(sub.nack(c, o, now)).toEqual({ applied: true });
        held.delete(o);
        break;
      }
      case "time":
        now += op.dt;
        break;
      case "flush": {
        const cmd = sub.takeCommand();
        if (cmd !== null) {
          folded = applyCommand(folded, JSON.parse(JSON.stringify(cmd)));
          expect(encodeDurable(folded).stored).toEqual(sub.snapshot().stored);
          for (const dl of cmd.deadLetters) sub.confirmDeadLetter(dl[0]);
        }
        break;
      }
    }
    pump();
  }
  return { sub, log, held };
}

// Property runs: a generous timeout for a loaded machine (no timing assertion).
describe("model runs (property)", { timeout: 30_000 }, () => {
  for (const type of ["shared", "exclusive", "failover", "key_shared"] as const) {
    it(`${type}: invariants, no message at two consumers at once, commands fold to the live state`, () => {
      fc.assert(
        fc.property(fc.array(opArb, { minLength: 20, maxLength: 80 }), (ops) => void modelRun(type, ops)),
        { numRuns: 80 },
      );
    });
  }

  it("key_shared: per-key order holds across joins and leaves (every earlier message of the key is acked or at the same consumer)", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 20, maxLength: 100 }), (ops) => {
        modelRun(
          "key_shared",
          ops,
          (d, held, log, sub) => {
            const key = log.msgs[d.offset]!.key;
            for (let o = 0; o < d.offset; o++) {
              if (log.msgs[o]!.key !== key) continue;
              const ok = sub.isAcked(o) || held.get(o) === d.consumerId;
              if (!ok) throw new Error(`offset ${d.offset} (${key}) to ${d.consumerId} while ${o} is ${held.get(o) ?? "undelivered"}`);
            }
          },
          false,
        );
      }),
      { numRuns: 100 },
    );
  });

  it("restore after random acks delivers exactly the unacked offsets, in order", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.array(fc.nat(), { maxLength: 40 }), fc.integer({ min: 1, max: 6 }), (n, picks, cap) => {
        const log = new Log();
        log.produce(n);
        const opts: SubscriptionOptions = { name: "s", type: "exclusive" };
        const sub = new Subscription(opts, emptyDurable(-1), log);
        const acked = new Set(picks.map((p) => p % n));
        ok(sub.ack([...acked]));
        const { stored, droppedRanges } = sub.snapshot(cap);
        const back = Subscription.restore(opts, JSON.parse(JSON.stringify(stored)), log);
        back.addConsumer({ id: "a", flow: { kind: "window", receiverQueueSize: 100 } });
        const got = offsets(back.dispatch(0, log).deliveries);
        const unacked = Array.from({ length: n }, (_, i) => i).filter((o) => !acked.has(o));
        if (droppedRanges === 0) expect(got).toEqual(unacked);
        else {
          // past the cap: a superset (acked messages may come again), never a loss
          for (const o of unacked) expect(got).toContain(o);
          expect(got).toEqual([...got].sort((a, b) => a - b));
        }
      }),
    );
  });
});
