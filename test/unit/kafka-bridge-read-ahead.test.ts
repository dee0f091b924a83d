/**
 * The Kafka bridge's read-ahead budget (sdk/src/kafka-bridge/handlers.ts ReadAheadBudget,
 * FetchPrefetch): a read-ahead reserves its partition_max_bytes until it is used, expires or its
 * connection closes; one that would pass the limit is not made. A scripted Edgelog (the SDK
 * client's `fetch` option) counts the reads.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type BridgeContext, FetchPrefetch, PREFETCH_TTL_MS, ReadAheadBudget } from "../../sdk/src/kafka-bridge/handlers.ts";
import { bridgeContext } from "./kafka-bridge-context.ts";

function context(): { ctx: BridgeContext; reads: string[] } {
  const reads: string[] = [];
  const fake: typeof fetch = async (input) => {
    const url = new URL(String(input));
    reads.push(`${url.pathname.split("/")[7]}@${url.searchParams.get("offset")}`);
    return new Response(new Uint8Array(0), { status: 200, headers: { "edgelog-next-offset": "0", "edgelog-high-watermark": "0", "edgelog-log-start-offset": "0" } });
  };
  const ctx = bridgeContext(fake);
  return { ctx, reads };
}

afterEach(() => vi.useRealTimers());

describe("Kafka bridge read-ahead budget", () => {
  it("reserves partition_max_bytes per read-ahead across connections; one past the limit is not made; use, replacement and close give the bytes back", async () => {
    const { ctx, reads } = context();
    const budget = new ReadAheadBudget(3_000);
    const a = new FetchPrefetch(budget);
    const b = new FetchPrefetch(budget);
    a.start(ctx, "t", 0, 10, 1_000);
    a.start(ctx, "t", 1, 10, 1_000);
    b.start(ctx, "t", 2, 10, 1_000);
    expect(budget.heldBytes).toBe(3_000);
    b.start(ctx, "t", 3, 10, 1_000); // over the limit: not made
    expect(b.size).toBe(1);
    await vi.waitFor(() => expect(reads.sort()).toEqual(["0@10", "1@10", "2@10"]));
    // Taken (used or not): its bytes come back.
    expect(a.take("t", 0, 10, 1_000)).toBeDefined();
    expect(budget.heldBytes).toBe(2_000);
    // A new read-ahead of the same partition replaces the old one's reservation.
    a.start(ctx, "t", 1, 11, 500);
    expect(budget.heldBytes).toBe(1_500);
    // A mismatching fetch consumes the entry without using it.
    expect(a.take("t", 1, 99, 500)).toBeUndefined();
    expect(budget.heldBytes).toBe(1_000);
    // The connection closes: everything it held goes back.
    b.clear();
    expect(budget.heldBytes).toBe(0);
    expect(b.size).toBe(0);
  });

  it("expired ranges are dropped at the next read-ahead, and an expired range is never used", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const { ctx } = context();
    const budget = new ReadAheadBudget(1_500);
    const p = new FetchPrefetch(budget);
    p.start(ctx, "t", 0, 10, 1_000);
    vi.setSystemTime(Date.now() + PREFETCH_TTL_MS + 1);
    // Partition 0's range is stale: it is dropped, so partition 1's fits.
    p.start(ctx, "t", 1, 10, 1_000);
    expect(p.size).toBe(1);
    expect(budget.heldBytes).toBe(1_000);
    expect(p.take("t", 0, 10, 1_000)).toBeUndefined();
    vi.setSystemTime(Date.now() + PREFETCH_TTL_MS + 1);
    expect(p.take("t", 1, 10, 1_000)).toBeUndefined();
    expect(budget.heldBytes).toBe(0);
  });

  it("a zero budget makes no read-ahead", () => {
    const { ctx, reads } = context();
    const p = new FetchPrefetch(new ReadAheadBudget(0));
    p.start(ctx, "t", 0, 10, 1);
    expect(p.size).toBe(0);
    expect(reads).toEqual([]);
  });
});
