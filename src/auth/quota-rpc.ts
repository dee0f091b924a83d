/**
 * The RPC surface of QuotaDO (durable-objects/quota.ts): one object per client quota entity
 * (docs/SECURITY.md "Quotas"). Typed here so the gateway depends on the interface, never on
 * durable-objects/ (test/unit/layering.test.ts).
 */

/** Rates in units per second (bytes/s, bytes/s, requests/s); absent = unlimited. */
export interface QuotaRates {
  producerByteRate?: number;
  consumerByteRate?: number;
  requestRate?: number;
}

export interface QuotaAnswer {
  admitted: boolean;
  /** Integer ms >= 0. */
  throttleTimeMs: number;
}

export interface QuotaRpc {
  /** Admits or refuses one request (all or nothing). */
  admit(rates: QuotaRates, produceBytes: number, fetch: boolean): Promise<QuotaAnswer>;
  /** Charges a fetch's bytes after the fact. @returns the throttle time in ms (0 = none). */
  chargeFetch(rates: QuotaRates, bytes: number): Promise<number>;
}
