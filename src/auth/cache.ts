/**
 * The per-isolate cache of the cluster's security metadata (ACLs, SCRAM user generations,
 * quota configs): one security store call (MetadataDO, and the metadata quorum for the ACLs when it is on) per {@link SECURITY_CACHE_TTL_MS} per isolate.
 *
 * Staleness bound (docs/SECURITY.md): a change made through one isolate applies there at once
 * (the admin routes invalidate this cache); other isolates see it within
 * SECURITY_CACHE_TTL_MS. A failed refresh is answered UNAVAILABLE (fail closed), never by
 * serving without ACLs.
 */
import { AclIndex } from "./authorizer.ts";
import { securityStore, type SecuritySnapshot } from "./store.ts";
import { toEdgelogError } from "../protocol/errors.ts";
import type { MetadataStoreEnv } from "../metadata/store.ts";

/** Longest time an isolate serves ACLs, users and quotas without re-reading them. */
export const SECURITY_CACHE_TTL_MS = 5_000;

export interface CachedSecurity {
  snapshot: SecuritySnapshot;
  acls: AclIndex;
  fetchedAtMs: number;
}

let current: CachedSecurity | null = null;
let inflight: Promise<CachedSecurity> | null = null;

export async function securitySnapshot(env: MetadataStoreEnv, nowMs = Date.now()): Promise<CachedSecurity> {
  if (current !== null && nowMs - current.fetchedAtMs < SECURITY_CACHE_TTL_MS) return current;
  if (inflight === null) {
    const started = Date.now();
    inflight = (async () => {
      try {
        const r = await securityStore(env).securitySnapshot();
        if (!r.ok) throw toEdgelogError(r);
        current = { snapshot: r.snapshot, acls: new AclIndex(r.snapshot.acls), fetchedAtMs: started };
        return current;
      } finally {
        inflight = null;
      }
    })();
  }
  return inflight;
}

/** Forgets the snapshot: the next request re-reads it (after an admin change through this isolate). */
export function invalidateSecurityCache(): void {
  current = null;
}
