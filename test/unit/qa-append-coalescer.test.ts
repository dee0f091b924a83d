/**
 * QA: AppendCoalescer when the RPC fails synchronously (a stub or waitUntil throwing instead
 * of rejecting): every carried request gets that error at once, the in-flight slot is freed
 * and the lane goes on (found by QA: they used to wait out carriedTimeoutMs; fixed).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { AppendCoalescer, type AppendOutcome, type SendGroup } from "../../src/gateway/append-coalescer.ts";
import type { AppendRequest } from "../../src/partition/rpc.ts";

function req(id: number): AppendRequest {
  const b = new Uint8Array(1);
  b[0] = id;
  return { batches: [b], crcVerified: true };
}
const idOf = (r: AppendRequest): number => r.batches[0]![0]!;
function ok(id: number, offset: number): AppendOutcome {
  return { ok: true, baseOffset: offset, lastOffset: offset, timestamps: [id], logAppendTime: null, duplicate: false, logStartOffset: 0, highWatermark: offset + 1 };
}
const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

afterEach(() => {
  vi.useRealTimers();
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

describe("QA AppendCoalescer: synchronous failure of the RPC", () => {
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
