import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AppendCoalescer, type AppendOutcome, type SendGroup } from "../../src/gateway/append-coalescer.ts";
import type { AppendRequest } from "../../src/partition/rpc.ts";
import { EdgelogError } from "../../src/protocol/errors.ts";

/** A request whose first byte names it, `bytes` long. */
function req(id: number, bytes = 1): AppendRequest {
  const b = new Uint8Array(bytes);
  b[0] = id;
  return { batches: [b], crcVerified: true };
}
const idOf = (r: AppendRequest): number => r.batches[0]![0]!;

/** The outcome a fake partition gives request `id` at `offset`. */
function ok(id: number, offset: number): AppendOutcome {
  return { ok: true, baseOffset: offset, lastOffset: offset, timestamps: [id], logAppendTime: null, duplicate: false, logStartOffset: 0, highWatermark: offset + 1 };
}

/** A fake partition whose RPCs answer only when the test releases them. */
function manualPartition() {
  const calls: { ids: number[]; release: () => void; fail: (e: unknown) => void }[] = [];
  let next = 0;
  const send: SendGroup = (requests) =>
    new Promise((resolve, reject) => {
      const ids = requests.map(idOf);
      calls.push({
        ids,
        release: () => resolve(ids.map((id) => ok(id, next++))),
        fail: reject,
      });
    });
  return { calls, send };
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** Appends one request per id, each arriving after the previous one was handled (as separate HTTP requests do). */
async function arrive<T>(ids: number[], append: (id: number) => Promise<T>): Promise<Promise<T>[]> {
  const out: Promise<T>[] = [];
  for (const id of ids) {
    out.push(append(id));
    await flush();
  }
  return out;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("AppendCoalescer", () => {
  it("sends a request on an idle lane at once, alone", async () => {
    const c = new AppendCoalescer();
    const p = manualPartition();
    const r = c.append("t/0", req(7), p.send);
    await flush();
    expect(p.calls.map((x) => x.ids)).toEqual([[7]]);
    p.calls[0]!.release();
    expect(await r).toEqual(ok(7, 0));
    expect(c.stats()).toEqual({ lanes: 0, queued: 0, inFlight: 0 });
  });

  it("carries the requests queued behind a full lane in one RPC and answers each its own outcome", async () => {
    const c = new AppendCoalescer({ maxInFlight: 1 });
    const p = manualPartition();
    const results = await arrive([1, 2, 3, 4], (id) => c.append("t/0", req(id), p.send));
    await flush();
    expect(p.calls.map((x) => x.ids)).toEqual([[1]]);
    expect(c.stats()).toEqual({ lanes: 1, queued: 3, inFlight: 1 });
    p.calls[0]!.release();
    await flush();
    expect(p.calls.map((x) => x.ids)).toEqual([[1], [2, 3, 4]]);
    p.calls[1]!.release();
    expect(await Promise.all(results)).toEqual([ok(1, 0), ok(2, 1), ok(3, 2), ok(4, 3)]);
    expect(c.stats()).toEqual({ lanes: 0, queued: 0, inFlight: 0 });
  });

  it("keeps up to maxInFlight RPCs in flight per lane and lanes independent", async () => {
    const c = new AppendCoalescer({ maxInFlight: 2 });
    const p = manualPartition();
    const q = manualPartition();
    const a = await arrive([1, 2, 3, 4], (id) => c.append("t/0", req(id), p.send));
    const b = c.append("t/1", req(9), q.send);
    await flush();
    expect(p.calls.map((x) => x.ids)).toEqual([[1], [2]]);
    expect(q.calls.map((x) => x.ids)).toEqual([[9]]);
    p.calls[1]!.release(); // the second answers first: the queue goes out in one RPC
    await flush();
    expect(p.calls.map((x) => x.ids)).toEqual([[1], [2], [3, 4]]);
    p.calls[0]!.release();
    p.calls[2]!.release();
    q.calls[0]!.release();
    expect(await Promise.all(a)).toEqual([ok(1, 1), ok(2, 0), ok(3, 2), ok(4, 3)]);
    expect(await b).toEqual(ok(9, 0));
  });

  it("splits a queue by maxGroupRequests and maxGroupBytes; an oversized request goes alone", async () => {
    const c = new AppendCoalescer({ maxInFlight: 1, maxGroupRequests: 2, maxGroupBytes: 100 });
    const p = manualPartition();
    const sizes = [1, 10, 10, 10, 150, 60, 60];
    const results = await arrive([0, 1, 2, 3, 4, 5, 6], (id) => c.append("t/0", req(id, sizes[id]), p.send));
    for (let i = 0; i < 6; i++) {
      await flush();
      p.calls[i]?.release();
    }
    await Promise.all(results);
    expect(p.calls.map((x) => x.ids)).toEqual([[0], [1, 2], [3], [4], [5], [6]]);
  });

  it("a failed RPC rejects every request it carried, and the lane goes on", async () => {
    const c = new AppendCoalescer({ maxInFlight: 1 });
    const p = manualPartition();
    const results = await arrive([1, 2, 3], (id) => c.append("t/0", req(id), p.send).catch((e: unknown) => e));
    await flush();
    p.calls[0]!.release();
    await flush();
    const boom = new Error("rpc failed");
    p.calls[1]!.fail(boom);
    expect(await Promise.all(results)).toEqual([ok(1, 0), boom, boom]);
    const after = c.append("t/0", req(4), p.send);
    await flush();
    p.calls[2]!.release();
    expect(await after).toEqual(ok(4, 1));
  });

  it("an RPC answering the wrong number of outcomes fails its requests", async () => {
    const c = new AppendCoalescer({ maxInFlight: 1 });
    const send: SendGroup = async () => [];
    await expect(c.append("t/0", req(1), send)).rejects.toThrow(/answered 0 outcomes for 1 requests/);
  });

  it("a lane that makes no progress for stallMs is led by a queued request, past maxInFlight", async () => {
    vi.useFakeTimers();
    const c = new AppendCoalescer({ maxInFlight: 1, stallMs: 1000, carriedTimeoutMs: 60_000 });
    const p = manualPartition();
    const [stuck, ...later] = await arrive([1, 2, 3], (id) => c.append("t/0", req(id), p.send));
    await vi.advanceTimersByTimeAsync(999);
    expect(p.calls.map((x) => x.ids)).toEqual([[1]]);
    await vi.advanceTimersByTimeAsync(1);
    expect(p.calls.map((x) => x.ids)).toEqual([[1], [2, 3]]);
    p.calls[1]!.release();
    expect(await Promise.all(later)).toEqual([ok(2, 0), ok(3, 1)]);
    p.calls[0]!.release(); // the stalled RPC answers late: still its own request's answer
    expect(await stuck!).toEqual(ok(1, 2));
  });

  it("a carried request whose RPC never answers fails with REQUEST_TIMED_OUT after carriedTimeoutMs", async () => {
    vi.useFakeTimers();
    const c = new AppendCoalescer({ maxInFlight: 1, stallMs: 100_000, carriedTimeoutMs: 5000 });
    const p = manualPartition();
    const [first, leader, carried] = await arrive([1, 2, 3], (id) => c.append("t/0", req(id), p.send).catch((e: unknown) => e));
    await vi.advanceTimersByTimeAsync(0);
    p.calls[0]!.release();
    expect(await first).toEqual(ok(1, 0));
    await vi.advanceTimersByTimeAsync(0);
    expect(p.calls.map((x) => x.ids)).toEqual([[1], [2, 3]]); // this RPC never answers
    await vi.advanceTimersByTimeAsync(4999);
    expect(await Promise.race([carried, Promise.resolve("waiting")])).toBe("waiting");
    await vi.advanceTimersByTimeAsync(1);
    const err = await carried;
    expect(err).toBeInstanceOf(EdgelogError);
    expect((err as EdgelogError).code).toBe("REQUEST_TIMED_OUT");
    // The leader waits as long as its own RPC takes, as a request without coalescing would.
    expect(await Promise.race([leader, Promise.resolve("waiting")])).toBe("waiting");
  });

  it("property: every request is sent exactly once, answered its own outcome, within maxInFlight", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        // a schedule: arrivals (lane index) and releases of the oldest / newest pending RPC
        fc.array(fc.oneof(fc.record({ arrive: fc.integer({ min: 0, max: 2 }) }), fc.record({ release: fc.boolean() })), { maxLength: 60 }),
        async (maxInFlight, maxGroupRequests, schedule) => {
          const c = new AppendCoalescer({ maxInFlight, maxGroupRequests });
          const pending: { lane: number; ids: number[]; release: () => void }[] = [];
          const sent: number[] = [];
          const inFlight = [0, 0, 0];
          let maxSeen = 0;
          const sendFor =
            (lane: number): SendGroup =>
            (requests) =>
              new Promise((resolve) => {
                const ids = requests.map(idOf);
                sent.push(...ids);
                inFlight[lane]!++;
                maxSeen = Math.max(maxSeen, inFlight[lane]!);
                expect(ids.length).toBeLessThanOrEqual(maxGroupRequests);
                pending.push({
                  lane,
                  ids,
                  release: () => {
                    inFlight[lane]!--;
                    resolve(ids.map((id) => ok(id, id)));
                  },
                });
              });
          const results: Promise<void>[] = [];
          let id = 0;
          const step = async (s: { arrive: number } | { release: boolean }) => {
            if ("arrive" in s) {
              const mine = id++ % 250;
              results.push(c.append(`l${s.arrive}`, req(mine), sendFor(s.arrive)).then((o) => expect(o).toEqual(ok(mine, mine))));
            } else if (pending.length > 0) {
              pending.splice(s.release ? 0 : pending.length - 1, 1)[0]!.release();
            }
            await flush();
          };
          for (const s of schedule) await step(s);
          while (pending.length > 0) await step({ release: true });
          await Promise.all(results);
          expect([...sent].sort((a, b) => a - b)).toEqual(Array.from({ length: id }, (_, i) => i % 250).sort((a, b) => a - b));
          expect(maxSeen).toBeLessThanOrEqual(maxInFlight);
          expect(c.stats()).toEqual({ lanes: 0, queued: 0, inFlight: 0 });
        },
      ),
      { numRuns: 200 },
    );
  });
});

/** Lane with maxInFlight 1: request 1 in flight, 2 and 3 queued; when 1 answers, 2 leads [2, 3]. */
async function laneWithQueuedGroup(c: AppendCoalescer, send: SendGroup, keepAlive?: (p: Promise<unknown>) => void) {
  const outcomes: Promise<unknown>[] = [];
  for (const id of [1, 2, 3]) {
    outcomes.push(c.append("t/0", req(id), send, keepAlive).catch((e: unknown) => e));
    await flush();
  }
  return outcomes;
}

describe("AppendCoalescer: synchronous failure of the RPC (a stub or waitUntil throwing instead of rejecting)", () => {
  it("send throwing synchronously rejects every carried request with that error, frees the slot", async () => {
    vi.useFakeTimers();
    const c = new AppendCoalescer({ maxInFlight: 1, stallMs: 1000, carriedTimeoutMs: 120_000 });
    let release!: () => void;
    const boom = new Error("stub threw synchronously");
    let calls = 0;
    const send: SendGroup = (requests) => {
      calls++;
      if (calls === 1) return new Promise((resolve) => (release = () => resolve(requests.map((r, i) => ok(idOf(r), i)))));
      if (calls === 2) throw boom; // the group [2, 3]
      return Promise.resolve(requests.map((r, i) => ok(idOf(r), 10 + i)));
    };
    const [first, leader, carried] = await laneWithQueuedGroup(c, send);
    release();
    expect(await first).toEqual(ok(1, 0));
    await vi.advanceTimersByTimeAsync(0);
    expect(await leader).toBe(boom);
    // The carried request should get the same error now, not REQUEST_TIMED_OUT 120 s later.
    await vi.advanceTimersByTimeAsync(10);
    const settled = await Promise.race([carried, Promise.resolve("still waiting")]);
    expect(settled).toBe(boom);
    // And the lane is free: a new request is sent at once.
    const after = c.append("t/0", req(4), send);
    await vi.advanceTimersByTimeAsync(0);
    expect(await Promise.race([after, Promise.resolve("still waiting")])).toEqual(ok(4, 10));
    expect(c.stats()).toEqual({ lanes: 0, queued: 0, inFlight: 0 });
  });

  it("keepAlive throwing synchronously does not strand the carried requests", async () => {
    vi.useFakeTimers();
    const c = new AppendCoalescer({ maxInFlight: 1, stallMs: 1000, carriedTimeoutMs: 120_000 });
    let next = 0;
    const send: SendGroup = async (requests) => requests.map((r) => ok(idOf(r), next++));
    let keepAlives = 0;
    const boom = new Error("waitUntil threw");
    const keepAlive = (): void => {
      keepAlives++;
      if (keepAlives === 2) throw boom; // when 2 leads [2, 3]
    };
    const [first, , carried] = await laneWithQueuedGroup(c, send, keepAlive);
    expect(await first).toEqual(ok(1, 0));
    await vi.advanceTimersByTimeAsync(10);
    // The RPC was sent and answered; the carried request should have its answer (or the error), not hang.
    const settled = await Promise.race([carried, Promise.resolve("still waiting")]);
    expect(settled).not.toBe("still waiting");
  });
});
