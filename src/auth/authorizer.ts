/**
 * The per-request view of authorization: a principal and the ACL snapshot, with decisions
 * memoised per snapshot (bounded) so a hot produce path pays one Map lookup per request.
 */
import { authorize, type AclBinding, type AclOperation, type Resource, type ResourceType } from "../protocol/acl.ts";

/** What routes see as `c.get("auth")`. */
export interface RequestAuth {
  /** The authenticated principal; `anonymous` when auth is off. */
  readonly principal: string;
  /** True when auth is off or the principal is a superuser. */
  readonly superuser: boolean;
  /** True when the principal may do `operation` on `resource`. */
  can(resource: Resource, operation: AclOperation): boolean;
}

/** Auth off (EDGELOG_AUTH=none): everything is allowed. */
export const OPEN_AUTH: RequestAuth = { principal: "anonymous", superuser: true, can: () => true };

/** Memoised decisions kept per ACL snapshot. */
const MAX_DECISIONS = 50_000;

/** ACL bindings of one snapshot, grouped by resource type, with a decision memo. */
export class AclIndex {
  readonly #byType = new Map<ResourceType, AclBinding[]>();
  readonly #all: readonly AclBinding[];
  readonly #memo = new Map<string, boolean>();

  constructor(bindings: readonly AclBinding[]) {
    this.#all = bindings;
    for (const b of bindings) {
      let list = this.#byType.get(b.resourceType);
      if (list === undefined) this.#byType.set(b.resourceType, (list = []));
      list.push(b);
    }
  }

  decide(principal: string, resource: Resource, operation: AclOperation, superusers: ReadonlySet<string>): boolean {
    if (superusers.has(principal)) return true;
    const key = `${principal}\u0000${resource.type}\u0000${resource.name}\u0000${operation}`;
    const hit = this.#memo.get(key);
    if (hit !== undefined) return hit;
    const allowed = authorize(this.#all, principal, resource, operation).allowed;
    if (this.#memo.size >= MAX_DECISIONS) this.#memo.clear();
    this.#memo.set(key, allowed);
    return allowed;
  }
}

export function requestAuth(index: AclIndex, principal: string, superusers: ReadonlySet<string>): RequestAuth {
  return {
    principal,
    superuser: superusers.has(principal),
    can: (resource, operation) => index.decide(principal, resource, operation, superusers),
  };
}
