/**
 * QuotaDO: the token buckets of one client quota entity (docs/SECURITY.md "Quotas"), so a
 * quota holds across every gateway isolate: one object per entity, named by the entity the
 * request falls under (`user=alice`, `user=alice,client=app`, `client=app`; a `<default>` quota
 * gets one object per user or client id, as Kafka's default quotas do).
 *
 * Buckets live in memory (src/auth/quota-bucket.ts, KIP-599's model). When the object is
 * evicted or restarted the buckets start full again: at most one extra burst per restart,
 * which is what a quota's burst already allows. Nothing is stored.
 *
 * The gateway passes the rates it resolved from its cached quota configs on every call, so a
 * changed quota takes effect within the gateway's snapshot staleness bound.
 */
import { DurableObject } from "cloudflare:workers";
import { TokenBucket } from "../src/auth/quota-bucket.ts";
import type { QuotaAnswer, QuotaRates, QuotaRpc } from "../src/auth/quota-rpc.ts";

type BucketName = keyof QuotaRates;

export class QuotaDO extends DurableObject implements QuotaRpc {
  readonly #buckets = new Map<BucketName, TokenBucket>();

  /**
   * Admits or refuses one request: `produceBytes` charged to the producer bucket, 1 to the
   * request bucket; a fetch (`fetch`) is refused while the consumer bucket is in debt (its
   * bytes are charged afterwards by {@link chargeFetch}). All or nothing: a refused request
   * charges no bucket.
   */
  async admit(rates: QuotaRates, produceBytes: number, fetch: boolean): Promise<QuotaAnswer> {
    const now = Date.now();
    const charges: [TokenBucket, number][] = [];
    const use = (name: BucketName, amount: number) => {
      const b = this.#bucket(name, rates[name], now);
      if (b !== undefined) charges.push([b, amount]);
    };
    use("requestRate", 1);
    if (produceBytes > 0) use("producerByteRate", produceBytes);
    if (fetch) use("consumerByteRate", 0);
    let refusedMs = -1;
    for (const [b] of charges) {
      if (b.credits(now) < 0) refusedMs = Math.max(refusedMs, b.record(now, 0).throttleTimeMs);
    }
    if (refusedMs >= 0) return { admitted: false, throttleTimeMs: Math.max(1, refusedMs) };
    let throttleTimeMs = 0;
    for (const [b, amount] of charges) throttleTimeMs = Math.max(throttleTimeMs, b.record(now, amount).throttleTimeMs);
    return { admitted: true, throttleTimeMs };
  }

  /** Charges a served fetch answer's bytes; returns the throttle time it causes. */
  async chargeFetch(rates: QuotaRates, bytes: number): Promise<number> {
    const now = Date.now();
    return this.#bucket("consumerByteRate", rates.consumerByteRate, now)?.charge(now, bytes) ?? 0;
  }

  #bucket(name: BucketName, rate: number | undefined, now: number): TokenBucket | undefined {
    if (rate === undefined || !(rate > 0)) {
      this.#buckets.delete(name);
      return undefined;
    }
    let b = this.#buckets.get(name);
    if (b === undefined) this.#buckets.set(name, (b = new TokenBucket({ ratePerSec: rate }, now)));
    else if (b.ratePerSec !== rate) b.setRate(rate, now);
    return b;
  }
}
