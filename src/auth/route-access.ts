/**
 * The one table of what every gateway route needs (docs/SECURITY.md "Route table"): each
 * route hono registers, keyed `METHOD path` exactly as registered, maps to
 *
 * - `public`: no credentials (health, the token exchange, which checks its own);
 * - `authenticated`: any principal; the answer is filtered by describe permission (lists) or
 *   grants nothing by itself (a producer id: writing still needs topic WRITE, KIP-679);
 * - `acl`: the (resource, operation) checks the request must pass, computed from the path
 *   parameters (and, where Kafka checks the topics named in a body, the body).
 *
 * test/unit/auth-route-access.test.ts enumerates every route of the app and fails when one
 * has no entry here, so a new route cannot ship unprotected; the middleware refuses (500) a
 * route without an entry as well.
 *
 * Kafka's mapping is followed (KIP-11 operation table): Produce WRITE topic, Fetch READ topic,
 * ListOffsets/Metadata DESCRIBE topic, CreateTopics CREATE cluster or topic, DeleteTopics
 * DELETE topic, CreatePartitions ALTER topic, AlterConfigs ALTER_CONFIGS, Heartbeat/Join/Leave
 * READ group, OffsetCommit READ group + READ topic, OffsetFetch DESCRIBE group + DESCRIBE
 * topic, DescribeGroups DESCRIBE group, DeleteGroups DELETE group, Describe/Create/DeleteAcls
 * DESCRIBE/ALTER cluster, user SCRAM credentials DESCRIBE/ALTER cluster, client quotas
 * DESCRIBE_CONFIGS/ALTER_CONFIGS cluster.
 */
import { parseCommit, parseHeartbeat, parseOffsetFetch, parseResetOffsets, parseTopicSelection } from "../groups/requests.ts";
import { CLUSTER_RESOURCE, type AclOperation, type Resource } from "../protocol/acl.ts";
import { parseJsonBytes } from "../gateway/http.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { parseTopicName } from "../protocol/names.ts";
import { H } from "../streams/headers.ts";
import { parseForkSource, parseStreamPath, topicNameForPath } from "../streams/names.ts";

/** What the middleware shows a rule of the request. */
export interface RouteRequestView {
  /** Path parameters, percent-decoded as hono decodes them. */
  params: Record<string, string>;
  /** The URL pathname as hono sees it (`c.req.path`). */
  path: string;
  queries(name: string): string[];
  /** The body the body reader read (POST/PUT/PATCH), else empty. */
  body: Uint8Array;
  /** A request header (case-insensitive), undefined when absent. */
  header(name: string): string | undefined;
  /** The request URL's origin (`Stream-Forked-From` resolves against it). */
  origin: string;
}

/** One permission a request needs; `orCluster` also accepts that operation on the cluster (Kafka's CreateTopics). */
export interface AccessCheck {
  resource: Resource;
  operation: AclOperation;
  orCluster?: AclOperation;
}

export type RouteAccess =
  | { access: "public" }
  | { access: "authenticated" }
  | {
      access: "acl";
      checks(r: RouteRequestView): AccessCheck[] | Promise<AccessCheck[]>;
      /** Which quota bytes the route is charged: a produce's request body, a fetch's answer. */
      quota?: "produce" | "fetch";
    };

const cluster: Resource = { type: "cluster", name: CLUSTER_RESOURCE };
const onCluster = (operation: AclOperation): RouteAccess => ({ access: "acl", checks: () => [{ resource: cluster, operation }] });

/** The topic a `topicRoute` handler gets, as its full name (src/gateway/http.ts topicRoute). */
function topicOf(r: RouteRequestView): Resource {
  const p = r.params;
  const written = p.tenant !== undefined && p.namespace !== undefined ? `${p.tenant}/${p.namespace}/${p.topic}` : p.topic;
  return { type: "topic", name: parseTopicName(written).full };
}

const onTopic = (operation: AclOperation, quota?: "produce" | "fetch"): RouteAccess => ({
  access: "acl",
  checks: (r) => [{ resource: topicOf(r), operation }],
  ...(quota !== undefined ? { quota } : {}),
});

/** Both path forms a topicRoute registers. */
function topicForms(method: string, suffix: string, rule: RouteAccess): [string, RouteAccess][] {
  return [
    [`${method} /v1/topics/:topic${suffix}`, rule],
    [`${method} /v1/topics/:tenant/:namespace/:topic${suffix}`, rule],
  ];
}

const tenantOf = (r: RouteRequestView): Resource => ({ type: "tenant", name: r.params.tenant ?? "" });
const namespaceOf = (r: RouteRequestView): Resource => ({ type: "namespace", name: `${r.params.tenant ?? ""}/${r.params.namespace ?? ""}` });

const group = (r: RouteRequestView): Resource => ({ type: "group", name: r.params.group ?? "" });

function jsonOf(r: RouteRequestView): unknown {
  return parseJsonBytes(r.body);
}

/**
 * The topics a group request's body names, or [] when the body does not parse: the route then
 * answers the same parse error (after the group check, so a principal without the group
 * permission learns nothing about the body's validity) and touches nothing.
 */
function bodyTopics(parse: () => readonly string[]): readonly string[] {
  try {
    return parse();
  } catch (e) {
    if (e instanceof EdgelogError) return [];
    throw e;
  }
}

async function streamTopic(r: RouteRequestView): Promise<Resource> {
  const p = parseStreamPath(r.path);
  // An invalid or reserved path is answered 400/404 by the route and touches no stream; the
  // check is then on the stream namespace itself.
  if (!p.ok) return { type: "namespace", name: "streams/default" };
  return { type: "topic", name: await topicNameForPath(p.path) };
}

/**
 * A fork (`PUT` with `Stream-Forked-From`) reads its source: the fork serves the source's
 * records up to the fork offset, so it needs READ on the source stream's topic as well, or a
 * principal could copy any stream it can name into one of its own. A value that names no
 * stream is answered 400 by the route and touches nothing.
 */
async function forkSourceChecks(r: RouteRequestView): Promise<AccessCheck[]> {
  const value = r.header(H.forkedFrom);
  if (value === undefined) return [];
  const src = parseForkSource(value, r.origin);
  if (!src.ok) return [];
  return [{ resource: { type: "topic", name: await topicNameForPath(src.path) }, operation: "read" }];
}

const onStream = (operation: AclOperation, orCluster?: AclOperation): RouteAccess => ({
  access: "acl",
  checks: async (r) => [{ resource: await streamTopic(r), operation, ...(orCluster !== undefined ? { orCluster } : {}) }, ...(operation === "create" ? await forkSourceChecks(r) : [])],
  ...(operation === "write" ? { quota: "produce" as const } : operation === "read" ? { quota: "fetch" as const } : {}),
});

function patchTopicChecks(r: RouteRequestView): AccessCheck[] {
  const resource = topicOf(r);
  const body = jsonOf(r) as Record<string, unknown> | null;
  const checks: AccessCheck[] = [];
  if (typeof body === "object" && body !== null && body.partitions !== undefined) checks.push({ resource, operation: "alter" });
  if (typeof body !== "object" || body === null || body.configs !== undefined || checks.length === 0) checks.push({ resource, operation: "alter-configs" });
  return checks;
}

export const ROUTE_ACCESS: Readonly<Record<string, RouteAccess>> = Object.fromEntries<RouteAccess>([
  ["GET /v1/health", { access: "public" }],
  // The JSON index of the API (names and links to the docs, no data): public as health is.
  ["GET /", { access: "public" }],
  // The web console's static files (src/routes/ui.ts): no data in them, so public like the
  // index; every API call the page makes carries the user's token and is checked as usual.
  ["GET /ui/*", { access: "public" }],

  // ---- native data path ----
  ...topicForms("POST", "/partitions/:partition/records", onTopic("write", "produce")),
  ...topicForms("POST", "/records", onTopic("write", "produce")),
  // Produce over a WebSocket: WRITE at the upgrade (the quota's request bytes are the upgrade's, none).
  ...topicForms("GET", "/produce/ws", onTopic("write")),
  ...topicForms("GET", "/partitions/:partition/records", onTopic("read", "fetch")),
  ...topicForms("GET", "/partitions/:partition/offsets", onTopic("describe")),
  // Kafka's DeleteRecords needs DELETE on the topic (KIP-107).
  ...topicForms("POST", "/partitions/:partition/delete-records", onTopic("delete")),
  // Kafka's ElectLeaders (KIP-460) needs ALTER on the cluster.
  ...topicForms("POST", "/partitions/:partition/leader", onCluster("alter")),
  ...topicForms("POST", "/partitions/:partition/replicas", onCluster("alter")),
  ["POST /v1/producers", { access: "authenticated" }],

  // ---- subscriptions (Pulsar's consume permission is topic READ; stats and lists DESCRIBE) ----
  ...topicForms("GET", "/partitions/:partition/subscriptions/:subscription/ws", onTopic("read")),
  ...topicForms("GET", "/partitions/:partition/readers/ws", onTopic("read")),
  ...topicForms("POST", "/partitions/:partition/subscriptions/:subscription/receive", onTopic("read")),
  ...topicForms("POST", "/partitions/:partition/subscriptions/:subscription/leases/:lease/ack", onTopic("read")),
  ...topicForms("POST", "/partitions/:partition/subscriptions/:subscription/leases/:lease/nack", onTopic("read")),
  ...topicForms("GET", "/subscriptions", onTopic("describe")),
  ...topicForms("GET", "/subscriptions/:subscription", onTopic("describe")),
  ...topicForms("PUT", "/subscriptions/:subscription", onTopic("read")),
  ...topicForms("POST", "/subscriptions/:subscription/seek", onTopic("read")),
  ...topicForms("POST", "/subscriptions/:subscription/skip", onTopic("read")),
  ...topicForms("POST", "/subscriptions/:subscription/clear-backlog", onTopic("read")),
  ...topicForms("DELETE", "/subscriptions/:subscription", onTopic("read")),

  // ---- Pulsar's WebSocket API (src/routes/compat/pulsar-ws.ts): Pulsar's produce and consume permissions ----
  ["GET /ws/v2/producer/persistent/:tenant/:namespace/:topic", onTopic("write")],
  ["GET /ws/v2/consumer/persistent/:tenant/:namespace/:topic/:subscription", onTopic("read")],
  ["GET /ws/v2/reader/persistent/:tenant/:namespace/:topic", onTopic("read")],

  // ---- topic admin ----
  [
    "POST /v1/topics",
    {
      access: "acl",
      checks: (r) => {
        const body = jsonOf(r) as { name?: unknown } | null;
        return [{ resource: { type: "topic", name: parseTopicName(body?.name).full }, operation: "create", orCluster: "create" }];
      },
    },
  ],
  ["GET /v1/topics", { access: "authenticated" }],
  ...topicForms("GET", "", onTopic("describe")),
  ...topicForms("PATCH", "", { access: "acl", checks: patchTopicChecks }),
  ...topicForms("DELETE", "", onTopic("delete")),

  // ---- consumer groups ----
  ["GET /v1/groups", { access: "authenticated" }],
  [
    // KIP-848 (KafkaApis ConsumerGroupHeartbeat): every topic named in subscribedTopicNames
    // needs DESCRIBE, else TOPIC_AUTHORIZATION_FAILED: a member must not be assigned (and so
    // learn the partitions of, and take them from the group's other members) a topic it
    // cannot see. A regex is not checked here: the coordinator resolves it (and the names,
    // again at every heartbeat of the group) only against the topics the caller's principal
    // may describe (src/routes/groups.ts passes it; docs/SECURITY.md).
    "POST /v1/groups/:group/heartbeat",
    {
      access: "acl",
      checks: (r) => {
        const topics = new Set(bodyTopics(() => parseHeartbeat(jsonOf(r)).subscribedTopicNames ?? []));
        return [{ resource: group(r), operation: "read" }, ...[...topics].map((name) => ({ resource: { type: "topic" as const, name }, operation: "describe" as const }))];
      },
    },
  ],
  ["POST /v1/groups/:group/leave", { access: "acl", checks: (r) => [{ resource: group(r), operation: "read" }] }],
  [
    "POST /v1/groups/:group/offsets",
    {
      access: "acl",
      checks: (r) => {
        const topics = new Set(bodyTopics(() => parseCommit(jsonOf(r)).offsets.map((o) => o.topic)));
        return [{ resource: group(r), operation: "read" }, ...[...topics].map((name) => ({ resource: { type: "topic" as const, name }, operation: "read" as const }))];
      },
    },
  ],
  [
    "POST /v1/groups/:group/offsets/fetch",
    {
      access: "acl",
      checks: (r) => {
        const topics = bodyTopics(() => (parseOffsetFetch(jsonOf(r)).topics ?? []).map((t) => t.topic));
        return [{ resource: group(r), operation: "describe" }, ...topics.map((name) => ({ resource: { type: "topic" as const, name }, operation: "describe" as const }))];
      },
    },
  ],
  [
    "GET /v1/groups/:group/offsets",
    {
      access: "acl",
      checks: (r) => {
        const names = r.queries("topic");
        const topics = bodyTopics(() =>
          names.length === 0
            ? []
            : parseTopicSelection(
                names.map((topic) => ({ topic })),
                "topic",
              ).map((t) => t.topic),
        );
        return [{ resource: group(r), operation: "describe" }, ...topics.map((name) => ({ resource: { type: "topic" as const, name }, operation: "describe" as const }))];
      },
    },
  ],
  [
    "POST /v1/groups/:group/reset-offsets",
    {
      access: "acl",
      checks: (r) => {
        const topics = bodyTopics(() => parseResetOffsets(jsonOf(r)).topics.map((t) => t.topic));
        return [{ resource: group(r), operation: "read" }, ...topics.map((name) => ({ resource: { type: "topic" as const, name }, operation: "read" as const }))];
      },
    },
  ],
  ["GET /v1/groups/:group", { access: "acl", checks: (r) => [{ resource: group(r), operation: "describe" }] }],
  ["PATCH /v1/groups/:group", { access: "acl", checks: (r) => [{ resource: group(r), operation: "alter-configs" }] }],
  ["DELETE /v1/groups/:group", { access: "acl", checks: (r) => [{ resource: group(r), operation: "delete" }] }],

  // ---- Durable Streams compatibility (each stream is the topic streams/default/{escaped path}) ----
  ["PUT /v1/stream/*", onStream("create", "create")],
  ["POST /v1/stream/*", onStream("write")],
  ["GET /v1/stream/*", onStream("read")],
  ["DELETE /v1/stream/*", onStream("delete")],

  // ---- security admin (src/routes/security.ts) ----
  ["POST /v1/auth/token", { access: "public" }],
  ["GET /v1/auth/whoami", { access: "authenticated" }],
  ["GET /v1/acls", onCluster("describe")],
  // Metrics of every topic and group (Kafka's JMX exposes them to the cluster's operators).
  ["GET /v1/metrics", onCluster("describe")],
  ["POST /v1/acls", onCluster("alter")],
  ["DELETE /v1/acls", onCluster("alter")],
  ["GET /v1/users", onCluster("describe")],
  ["PUT /v1/users/:user", onCluster("alter")],
  ["DELETE /v1/users/:user", onCluster("alter")],
  ["GET /v1/quotas", onCluster("describe-configs")],
  ["PUT /v1/quotas", onCluster("alter-configs")],
  // Pulsar: only superusers manage tenants' admin roles (cluster ALTER here).
  ["GET /v1/tenants/:tenant/admins", { access: "acl", checks: (r) => [{ resource: { type: "tenant", name: r.params.tenant ?? "" }, operation: "describe" }] }],
  ["PUT /v1/tenants/:tenant/admins/:role", onCluster("alter")],
  ["DELETE /v1/tenants/:tenant/admins/:role", onCluster("alter")],
  [
    "GET /v1/namespaces/:tenant/:namespace/permissions",
    { access: "acl", checks: (r) => [{ resource: { type: "namespace", name: `${r.params.tenant}/${r.params.namespace}` }, operation: "describe" }] },
  ],
  // Pulsar: grant-permission and revoke-permission are the tenant admin's (or a superuser's).
  // Namespace ALTER is not enough: it is what a `functions` grant is stored as, and a role
  // holding it could otherwise grant itself produce and consume.
  ["POST /v1/namespaces/:tenant/:namespace/permissions/:role", { access: "acl", checks: (r) => [{ resource: { type: "tenant", name: r.params.tenant ?? "" }, operation: "alter" }] }],
  ["DELETE /v1/namespaces/:tenant/:namespace/permissions/:role", { access: "acl", checks: (r) => [{ resource: { type: "tenant", name: r.params.tenant ?? "" }, operation: "alter" }] }],

  // ---- tenants and namespaces (src/routes/tenants.ts; Pulsar: superusers create and delete
  // tenants, tenant admins create and delete namespaces and set their policies) ----
  ["GET /v1/tenants", { access: "authenticated" }],
  ["PUT /v1/tenants/:tenant", onCluster("alter")],
  ["GET /v1/tenants/:tenant", { access: "acl", checks: (r) => [{ resource: tenantOf(r), operation: "describe" }] }],
  ["DELETE /v1/tenants/:tenant", onCluster("alter")],
  ["GET /v1/namespaces/:tenant", { access: "acl", checks: (r) => [{ resource: tenantOf(r), operation: "describe" }] }],
  ["PUT /v1/namespaces/:tenant/:namespace", { access: "acl", checks: (r) => [{ resource: tenantOf(r), operation: "alter" }] }],
  ["GET /v1/namespaces/:tenant/:namespace", { access: "acl", checks: (r) => [{ resource: namespaceOf(r), operation: "describe" }] }],
  ["DELETE /v1/namespaces/:tenant/:namespace", { access: "acl", checks: (r) => [{ resource: tenantOf(r), operation: "alter" }] }],
  ["GET /v1/namespaces/:tenant/:namespace/policies", { access: "acl", checks: (r) => [{ resource: namespaceOf(r), operation: "describe-configs" }] }],
  ["PUT /v1/namespaces/:tenant/:namespace/policies/:policy", { access: "acl", checks: (r) => [{ resource: namespaceOf(r), operation: "alter-configs" }] }],
  ["DELETE /v1/namespaces/:tenant/:namespace/policies/:policy", { access: "acl", checks: (r) => [{ resource: namespaceOf(r), operation: "alter-configs" }] }],

  // ---- bench (gated off unless EDGELOG_BENCH_ROUTES = "1"): cluster ALTER ----
  ["GET /bench/noop", onCluster("alter")],
  ["POST /bench/noop", onCluster("alter")],
  ["POST /bench/raw-insert/:name", onCluster("alter")],
  // The base's WebSocket scaffold (echo room); a WebSocket upgrade may carry ?token=.
  ["GET /bench/echo/:name", onCluster("alter")],
  // The fan-out ceiling of bench/subscriptions.ts: broadcast sockets and the frame sent to them.
  ["GET /bench/broadcast/:name", onCluster("alter")],
  ["POST /bench/broadcast/:name", onCluster("alter")],
]);

/** A registered route (hono's `app.routes` rows). */
export interface RouteLike {
  method: string;
  path: string;
}

interface CompiledRoute {
  key: string;
  method: string;
  pattern: RegExp;
  names: string[];
}

/**
 * Finds the route hono will run for a request, in registration order (hono runs the first
 * registered match: see topicRoute), with its path parameters decoded as hono decodes them.
 */
export class RouteMatcher {
  readonly #routes: CompiledRoute[] = [];

  constructor(routes: readonly RouteLike[]) {
    for (const r of routes) {
      if (r.method === "ALL") continue;
      const names: string[] = [];
      let re = "";
      for (const part of r.path.split(/(\/\*$|:[A-Za-z0-9_]+|\*)/)) {
        if (part === "") continue;
        if (part === "/*") re += "(?:/.*)?";
        else if (part === "*") re += ".*";
        else if (part.startsWith(":")) {
          names.push(part.slice(1));
          re += "([^/]+)";
        } else re += part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      }
      // Exact, as hono's router is (no optional trailing slash): a path this matcher misses while
      // hono runs a route would skip the route's checks (test/unit/auth-route-matcher.test.ts).
      this.#routes.push({ key: `${r.method.toUpperCase()} ${r.path}`, method: r.method.toUpperCase(), pattern: new RegExp(`^${re}$`), names });
    }
  }

  /** The route key and decoded params, or null when no route matches (404/405 follow). */
  match(method: string, path: string): { key: string; params: Record<string, string> } | null {
    const m = method === "HEAD" ? "GET" : method;
    for (const r of this.#routes) {
      if (r.method !== m) continue;
      const found = r.pattern.exec(path);
      if (found === null) continue;
      const params: Record<string, string> = {};
      r.names.forEach((name, i) => {
        const raw = found[i + 1]!;
        let value = raw;
        try {
          value = raw.includes("%") ? decodeURIComponent(raw) : raw;
        } catch {
          // hono keeps a malformed escape as written; so does this.
        }
        params[name] = value;
      });
      return { key: r.key, params };
    }
    return null;
  }

  /** Keys of every registered route (for the coverage test). */
  keys(): string[] {
    return this.#routes.map((r) => r.key);
  }
}
