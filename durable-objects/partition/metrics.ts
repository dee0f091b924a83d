/**
 * What a partition counts, in memory (docs/OBSERVABILITY.md): not a room (no tables, no
 * commands, nothing replicated), a concern the switchboard updates after each commit and
 * after each produce and fetch answer, and reads for `metrics()`.
 *
 * Cost on the append path: a few integer increments and no allocation per request (an error
 * code's counter is created the first time the code occurs, then incremented in place).
 *
 * Exact since the object started: the counters restart at 0 when the runtime evicts or
 * restarts the object, as a Prometheus counter restarts with its process. Persisting them
 * would add a write per append; a scrape sees the reset and rate() handles it.
 *
 * No latency is measured here: inside a Durable Object the clock only advances across I/O,
 * and an append does none (SQLite is synchronous; the output gate waits for durability after
 * the method returned), so a timer around the commit would read 0. The gateway measures the
 * append round trip, durable commit included (src/metrics/gateway.ts).
 */
import type { AppendPlan } from "../../src/partition/core.ts";
import type { AppendOk, FetchOk, FetchRequest, PartitionMetrics } from "../../src/partition/rpc.ts";
import type { RpcResult } from "../../src/protocol/errors.ts";
import type { SubscriptionMetrics } from "../../src/subscriptions/rpc.ts";
import type { PartitionState } from "./log.ts";

export class PartitionCounters {
  recordsIn = 0;
  bytesIn = 0;
  recordsOut = 0;
  bytesOut = 0;
  produceRequests = 0;
  produceDuplicates = 0;
  fetchRequests = 0;
  readonly produceErrors = new Map<string, number>();
  readonly fetchErrors = new Map<string, number>();
  readonly countersSinceMs = Date.now();

  /** After a commit that appended (native or stream): the records and stored bytes it added. */
  appended(p: AppendPlan): void {
    this.recordsIn += p.nextOffset - p.baseOffset;
    this.bytesIn += p.addedBytes;
  }

  /** After a native produce request's answer. */
  produced(r: RpcResult<AppendOk>): void {
    this.produceRequests++;
    if (!r.ok) count(this.produceErrors, r.code);
    else if (r.duplicate) this.produceDuplicates++;
  }

  /**
   * After a fetch's answer to `req`. Records out: the offsets from the requested one up to
   * the answer's next offset, at most the request's maxRecords. The partition returns whole
   * batches, so the first may start below the offset and the last may reach past maxRecords;
   * the gateway trims both, and this counts what the consumer gets. Bytes out: the batches
   * as returned (Kafka's BytesOut counts the bytes sent, whole batches).
   */
  fetched(req: FetchRequest, r: RpcResult<FetchOk>): void {
    this.fetchRequests++;
    if (!r.ok) {
      count(this.fetchErrors, r.code);
      return;
    }
    const batches = r.batches;
    if (batches.length === 0) return;
    this.recordsOut += Math.min(r.nextOffset - req.offset, req.maxRecords);
    for (let i = 0; i < batches.length; i++) this.bytesOut += batches[i]!.byteLength;
  }

  /** The snapshot `metrics()` answers: the log's bounds now, the counters, the waiters, segments and subscriptions now. */
  snapshot(s: Readonly<PartitionState>, waiters: number, segments: number, subscriptions: SubscriptionMetrics[]): PartitionMetrics {
    return {
      topic: s.topic,
      partition: s.partition,
      logStartOffset: s.logStartOffset,
      highWatermark: s.highWatermark,
      logEndOffset: s.logEndOffset,
      storedBytes: s.storedBytes,
      recordsIn: this.recordsIn,
      bytesIn: this.bytesIn,
      recordsOut: this.recordsOut,
      bytesOut: this.bytesOut,
      produceRequests: this.produceRequests,
      produceDuplicates: this.produceDuplicates,
      produceErrors: Object.fromEntries(this.produceErrors),
      fetchRequests: this.fetchRequests,
      fetchErrors: Object.fromEntries(this.fetchErrors),
      waiters,
      countersSinceMs: this.countersSinceMs,
      segments,
      subscriptions,
    };
  }
}

function count(m: Map<string, number>, code: string): void {
  m.set(code, (m.get(code) ?? 0) + 1);
}
