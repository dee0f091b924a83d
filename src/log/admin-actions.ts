/**
 * The gateway routes that are admin actions (docs/OBSERVABILITY.md "Logs"): each answered
 * request of one of these writes one `edgelog.admin.action` line (who, what, result), as
 * Kafka's authorizer and request logs let an operator audit CreateTopics, DeleteTopics,
 * AlterConfigs, CreateAcls and the like. Data-plane requests (produce, fetch, group
 * heartbeats and commits, stream appends and reads) are not: they are logged only when they
 * fail (`edgelog.request.error`).
 *
 * Keyed `METHOD path` exactly as the route is registered (the keys of ROUTE_ACCESS,
 * src/auth/route-access.ts; test/unit/log-format.test.ts checks that every key here is one).
 * The value names the action `<resource>.<verb>`.
 */
export const ADMIN_ACTIONS: Readonly<Record<string, string>> = {
  "POST /v1/topics": "topic.create",
  "PATCH /v1/topics/:topic": "topic.alter",
  "PATCH /v1/topics/:tenant/:namespace/:topic": "topic.alter",
  "DELETE /v1/topics/:topic": "topic.delete",
  "DELETE /v1/topics/:tenant/:namespace/:topic": "topic.delete",
  "POST /v1/groups/:group/reset-offsets": "group.reset-offsets",
  "PATCH /v1/groups/:group": "group.alter",
  "DELETE /v1/groups/:group": "group.delete",
  "PUT /v1/stream/*": "stream.create",
  "DELETE /v1/stream/*": "stream.delete",
  "POST /v1/acls": "acl.create",
  "DELETE /v1/acls": "acl.delete",
  "PUT /v1/users/:user": "user.upsert",
  "DELETE /v1/users/:user": "user.delete",
  "PUT /v1/quotas": "quota.alter",
  "PUT /v1/tenants/:tenant/admins/:role": "tenant-admin.grant",
  "DELETE /v1/tenants/:tenant/admins/:role": "tenant-admin.revoke",
  "POST /v1/namespaces/:tenant/:namespace/permissions/:role": "namespace-permission.grant",
  "DELETE /v1/namespaces/:tenant/:namespace/permissions/:role": "namespace-permission.revoke",
  "POST /v1/topics/:topic/partitions/:partition/delete-records": "topic.delete-records",
  "POST /v1/topics/:tenant/:namespace/:topic/partitions/:partition/delete-records": "topic.delete-records",
  "PUT /v1/topics/:topic/subscriptions/:subscription": "subscription.create",
  "PUT /v1/topics/:tenant/:namespace/:topic/subscriptions/:subscription": "subscription.create",
  "POST /v1/topics/:topic/subscriptions/:subscription/seek": "subscription.seek",
  "POST /v1/topics/:tenant/:namespace/:topic/subscriptions/:subscription/seek": "subscription.seek",
  "POST /v1/topics/:topic/subscriptions/:subscription/skip": "subscription.skip",
  "POST /v1/topics/:tenant/:namespace/:topic/subscriptions/:subscription/skip": "subscription.skip",
  "POST /v1/topics/:topic/subscriptions/:subscription/clear-backlog": "subscription.clear-backlog",
  "POST /v1/topics/:tenant/:namespace/:topic/subscriptions/:subscription/clear-backlog": "subscription.clear-backlog",
  "DELETE /v1/topics/:topic/subscriptions/:subscription": "subscription.delete",
  "DELETE /v1/topics/:tenant/:namespace/:topic/subscriptions/:subscription": "subscription.delete",
  "PUT /v1/tenants/:tenant": "tenant.create",
  "DELETE /v1/tenants/:tenant": "tenant.delete",
  "PUT /v1/namespaces/:tenant/:namespace": "namespace.create",
  "DELETE /v1/namespaces/:tenant/:namespace": "namespace.delete",
  "PUT /v1/namespaces/:tenant/:namespace/policies/:policy": "namespace-policy.set",
  "DELETE /v1/namespaces/:tenant/:namespace/policies/:policy": "namespace-policy.remove",
};

/** The action a route is (`topic.create`), or null for a data-plane route. */
export function adminAction(method: string, routePattern: string): string | null {
  return ADMIN_ACTIONS[`${method} ${routePattern}`] ?? null;
}

/** What the request log knows of one answered request (src/middleware/request-log.ts). */
export interface RequestOutcome {
  method: string;
  /** The registered route pattern, or `unmatched`. */
  route: string;
  status: number;
  /** The error code of an error answer, when its body carried one. */
  code: string | null;
  durationMs: number;
  /** Null before authentication (or when it failed). */
  principal: string | null;
  /** The resources the route's access rule named, when known. */
  resources: readonly { type: string; name: string; operation: string }[];
  /** What a middleware or route said about the refusal (auth's reason or denied check). */
  note: { event: string; fields: Record<string, unknown> } | null;
}

/** A line to write: level, event and fields, or null when the request is not logged. */
export interface RequestLogLine {
  level: "info" | "warn" | "error";
  event: string;
  fields: Record<string, unknown>;
}

/**
 * Which line, if any, an answered request writes: an admin action always (info when it
 * succeeded, else warn or error), any other request only when it failed (status >= 400:
 * warn for 4xx, error for 5xx). At most one line per request: a refusal's note (e.g.
 * `edgelog.authz.denied`) names the event of that one line.
 */
export function requestLogLine(o: RequestOutcome): RequestLogLine | null {
  const action = adminAction(o.method, o.route);
  const failed = o.status >= 400;
  if (action === null && !failed) return null;
  const level = o.status >= 500 ? "error" : failed ? "warn" : "info";
  const event = o.note?.event ?? (action !== null ? "edgelog.admin.action" : "edgelog.request.error");
  const fields: Record<string, unknown> = {};
  if (o.principal !== null) fields.principal = o.principal;
  if (action !== null) fields.action = action;
  fields.method = o.method;
  fields.route = o.route;
  const r = o.resources[0];
  if (r !== undefined) {
    fields.resourceType = r.type;
    fields.resource = r.name;
  }
  fields.status = o.status;
  if (o.code !== null) fields.code = o.code;
  fields.durationMs = o.durationMs;
  if (o.note !== null) Object.assign(fields, o.note.fields);
  return { level, event, fields };
}
