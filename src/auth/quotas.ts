/**
 * Which client quota applies to a request (Kafka's precedence, KIP-55): the most specific of
 *
 *   user=U,client=C > user=U,client=<default> > user=U > user=<default>,client=C >
 *   user=<default>,client=<default> > user=<default> > client=C > client=<default>
 *
 * that has any value. Edgelog resolves the whole entity (all three keys from one entity);
 * Kafka resolves each key separately (docs/SECURITY.md says so). The bucket key names the
 * entity with `<default>` replaced by the request's own user or client id, so a default quota
 * is a separate bucket per user (as in Kafka).
 *
 * Pure.
 */
import type { QuotaRates } from "./quota-rpc.ts";
import { DEFAULT_ENTITY, type QuotaEntry } from "./store.ts";

export interface ResolvedQuota {
  /** Name of the QuotaDO holding the buckets. */
  bucketKey: string;
  rates: QuotaRates;
}

export function resolveQuota(quotas: readonly QuotaEntry[], user: string, clientId: string | null): ResolvedQuota | null {
  if (quotas.length === 0) return null;
  const c = clientId ?? "";
  const order: [string | null, string | null][] = [
    [user, c],
    [user, DEFAULT_ENTITY],
    [user, null],
    [DEFAULT_ENTITY, c],
    [DEFAULT_ENTITY, DEFAULT_ENTITY],
    [DEFAULT_ENTITY, null],
    [null, c],
    [null, DEFAULT_ENTITY],
  ];
  for (const [u, cl] of order) {
    const e = quotas.find((q) => q.user === u && q.clientId === cl);
    if (e === undefined) continue;
    const rates: QuotaRates = {};
    if (e.values.producer_byte_rate !== undefined) rates.producerByteRate = e.values.producer_byte_rate;
    if (e.values.consumer_byte_rate !== undefined) rates.consumerByteRate = e.values.consumer_byte_rate;
    if (e.values.request_rate !== undefined) rates.requestRate = e.values.request_rate;
    const parts: string[] = [];
    if (u !== null) parts.push(`user=${user}`);
    if (cl !== null) parts.push(`client=${c}`);
    return { bucketKey: parts.join(","), rates };
  }
  return null;
}
