/**
 * Subscriptions (Pulsar's model; docs/PROTOCOL.md "Subscriptions", docs/SUBSCRIPTIONS.md):
 * - `GET /v1/topics/{topic}/partitions/{p}/subscriptions/{sub}/ws` (WebSocket upgrade): a
 *   consumer of one partition, forwarded to the partition object's sealed fetch;
 * - `GET /v1/topics/{topic}/partitions/{p}/readers/ws` (WebSocket upgrade): a reader;
 * - admin over every partition of the topic: `GET /subscriptions` (list), `PUT /subscriptions/{sub}`
 *   (create at a position), `GET /subscriptions/{sub}` (stats), `POST .../seek`, `.../skip`,
 *   `.../clear-backlog`, `DELETE /subscriptions/{sub}[?force=true]`.
 * A partitioned topic's consumer opens one socket per partition (the SDK fans in); see
 * docs/ARCHITECTURE.md "Subscriptions".
 */
import type { Hono } from "hono";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { asObject, jsonBody, partitionParam, topicRoute } from "../gateway/http.ts";
import { checkPartition, partitionError, withTopic } from "../gateway/topics.ts";
import { subscriptionAtLeader, upgradeAtLeader } from "../gateway/subscriptions.ts";
import { EdgelogError, type RpcResult } from "../protocol/errors.ts";
import type { TopicSummary } from "../protocol/types.ts";
import type { InitialPosition } from "../subscriptions/cursor.ts";
import { SUBSCRIPTION_TYPES, type SubscriptionType } from "../subscriptions/dispatch.ts";
import { parseMessageId } from "../subscriptions/message-id.ts";
import type { SubscriptionInfo, SubscriptionRpc } from "../subscriptions/rpc.ts";
import { SUBSCRIPTION_NAME } from "../subscriptions/wire.ts";

export function subscriptionRoutes(app: Hono<AppEnv>): void {
  topicRoute(app, "GET", "/partitions/:partition/subscriptions/:subscription/ws", (c, t) => upgrade(c, t, "consumer"));
  topicRoute(app, "GET", "/partitions/:partition/readers/ws", (c, t) => upgrade(c, t, "reader"));
  topicRoute(app, "POST", "/partitions/:partition/subscriptions/:subscription/receive", receive);
  topicRoute(app, "POST", "/partitions/:partition/subscriptions/:subscription/leases/:lease/ack", (c, t) => settle(c, t, "ack"));
  topicRoute(app, "POST", "/partitions/:partition/subscriptions/:subscription/leases/:lease/nack", (c, t) => settle(c, t, "nack"));
  topicRoute(app, "GET", "/subscriptions", list);
  topicRoute(app, "PUT", "/subscriptions/:subscription", create);
  topicRoute(app, "GET", "/subscriptions/:subscription", stats);
  topicRoute(app, "POST", "/subscriptions/:subscription/seek", seek);
  topicRoute(app, "POST", "/subscriptions/:subscription/skip", skip);
  topicRoute(app, "POST", "/subscriptions/:subscription/clear-backlog", clearBacklog);
  topicRoute(app, "DELETE", "/subscriptions/:subscription", remove);
}

/** A subscription RPC at the partition's leader (replicated partitions serve subscriptions at the leader only; src/gateway/subscriptions.ts). */
function atLeader<T extends object>(c: AppContext, topic: TopicSummary, partition: number, call: (s: SubscriptionRpc) => Promise<RpcResult<T>>): Promise<RpcResult<T>> {
  return subscriptionAtLeader(c.env, topic, partition, call);
}

function subscriptionParam(c: AppContext): string {
  const s = c.req.param("subscription") ?? "";
  if (!SUBSCRIPTION_NAME.test(s)) throw new EdgelogError("INVALID_REQUEST", "The subscription name must be 1-128 characters of [A-Za-z0-9._-].", { field: "subscription" });
  return s;
}

/** The one use of the partition object's fetch: the upgrade, with the facts only the gateway knows. */
async function upgrade(c: AppContext, name: string, kind: "consumer" | "reader"): Promise<Response> {
  const partition = partitionParam(c);
  const subscription = kind === "consumer" ? subscriptionParam(c) : "";
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") throw new EdgelogError("UPGRADE_REQUIRED", "This endpoint serves WebSocket upgrades only: send Upgrade: websocket.");
  return withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    const headers = new Headers(c.req.raw.headers);
    headers.set("edgelog-socket", kind);
    headers.set("edgelog-subscription", subscription);
    headers.set("edgelog-partitioned", topic.partitions > 1 ? "1" : "0");
    return upgradeAtLeader(c.env, topic, partition, () => new Request(c.req.url, { method: "GET", headers }));
  });
}

/**
 * Calls every partition; the first failure is the answer (UNKNOWN_TOPIC_OR_PARTITION refreshes the topic once).
 * `check` runs first, with the topic, to refuse a request before any partition is called.
 * With `holding`, the routes of an existing subscription: a partition without it
 * (SUBSCRIPTION_NOT_FOUND) is left out, since a consumer of one partition or an HTTP pull lease
 * creates it on that partition only; SUBSCRIPTION_NOT_FOUND only when no partition has it.
 */
async function each<T>(
  c: AppContext,
  name: string,
  call: (s: SubscriptionRpc, p: number, topic: TopicSummary) => Promise<RpcResult<T>>,
  opts: { holding?: boolean; check?: (topic: TopicSummary) => void } = {},
): Promise<{ topic: TopicSummary; results: T[] }> {
  return withTopic(c.env, name, async (topic) => {
    opts.check?.(topic);
    const rs = await Promise.all(Array.from({ length: topic.partitions }, (_, p) => atLeader(c, topic, p, (s) => call(s, p, topic))));
    const results: T[] = [];
    let notFound: RpcResult<T> | null = null;
    for (const r of rs) {
      if (!r.ok && opts.holding === true && r.code === "SUBSCRIPTION_NOT_FOUND") notFound ??= r;
      else if (!r.ok) throw partitionError(r);
      else results.push(r as T);
    }
    if (results.length === 0 && notFound !== null && !notFound.ok) throw partitionError(notFound);
    return { topic, results };
  });
}

/** Totals over partitions, then the per-partition details. */
function summary(topic: TopicSummary, subscription: string, parts: SubscriptionInfo[]): Record<string, unknown> {
  const sum = (f: (i: SubscriptionInfo) => number) => parts.reduce((a, i) => a + f(i), 0);
  return {
    topic: topic.name,
    subscription,
    type: parts[0]?.type ?? null,
    backlog: sum((i) => i.backlog),
    backlogBytes: sum((i) => i.backlogBytes),
    unacked: sum((i) => i.unacked),
    deadLetteredTotal: sum((i) => i.deadLetteredTotal),
    msgRateIn: sum((i) => i.msgRateIn),
    msgRateOut: sum((i) => i.msgRateOut),
    msgRateRedeliver: sum((i) => i.msgRateRedeliver),
    consumers: sum((i) => i.consumers.length),
    partitions: parts,
  };
}

async function list(c: AppContext, name: string): Promise<Response> {
  const { topic, results } = await each(c, name, (s) => s.subList());
  const byName = new Map<string, SubscriptionInfo[]>();
  for (const r of results) for (const i of r.subscriptions) byName.set(i.subscription, [...(byName.get(i.subscription) ?? []), i]);
  return c.json({ topic: topic.name, subscriptions: [...byName.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([sub, parts]) => summary(topic, sub, parts)) });
}

function positionOf(v: unknown, field: string): InitialPosition {
  if (v === undefined || v === null || v === "latest") return { kind: "latest" };
  if (v === "earliest") return { kind: "earliest" };
  throw new EdgelogError("INVALID_REQUEST", `${field} must be "earliest" or "latest" (or use timestamp / messageId).`, { field });
}

/** A message id's partition must be one of the topic's (else INVALID_MESSAGE_ID, before any partition is called). */
function messageIdPartitionCheck(body: Record<string, unknown>): (topic: TopicSummary) => void {
  return (topic) => {
    const id = body.messageId === undefined ? null : parseMessageId(body.messageId);
    if (id !== null && id.partition >= topic.partitions)
      throw new EdgelogError("INVALID_MESSAGE_ID", `Message id ${String(body.messageId)} names partition ${id.partition}; ${topic.name} has ${topic.partitions}.`, { field: "messageId" });
  };
}

/** `{timestamp}` or `{messageId}` or `{position: earliest|latest}`: per partition, the target (null = leave that partition). */
function targetOf(body: Record<string, unknown>, what: string, required = false): (p: number) => InitialPosition | null {
  const fields = ["timestamp", "messageId", "position"].filter((f) => body[f] !== undefined);
  if (fields.length > 1) throw new EdgelogError("INVALID_REQUEST", `Give one of timestamp, messageId or position for ${what}, not ${fields.join(" and ")}.`, { field: fields[1] });
  // A seek without a target must not mean "latest": that would skip the whole backlog.
  if (fields.length === 0 && required) throw new EdgelogError("INVALID_REQUEST", `Give one of timestamp, messageId or position for ${what}.`, { field: "position" });
  if (body.timestamp !== undefined) {
    const t = body.timestamp;
    if (!Number.isSafeInteger(t) || (t as number) < 0) throw new EdgelogError("INVALID_TIMESTAMP", "timestamp must be a non-negative integer of ms.", { field: "timestamp" });
    return () => ({ kind: "timestamp", timestampMs: t as number });
  }
  if (body.messageId !== undefined) {
    const id = parseMessageId(body.messageId);
    if (id === null) throw new EdgelogError("INVALID_MESSAGE_ID", `${JSON.stringify(body.messageId)} is not a message id.`, { field: "messageId" });
    return (p) => (p === id.partition ? { kind: "offset", offset: id.offset } : null);
  }
  const pos = positionOf(body.position, "position");
  return () => pos;
}

async function create(c: AppContext, name: string): Promise<Response> {
  const subscription = subscriptionParam(c);
  const raw = c.get("body").length === 0 ? {} : jsonBody(c);
  const body = asObject(raw, "body");
  const type = (body.type ?? "exclusive") as SubscriptionType;
  if (!SUBSCRIPTION_TYPES.includes(type)) throw new EdgelogError("INVALID_REQUEST", `type must be one of ${SUBSCRIPTION_TYPES.join(", ")}.`, { field: "type" });
  const target = targetOf(body.initialPosition === undefined ? body : { ...body, position: body.initialPosition, initialPosition: undefined }, "the initial position");
  const { topic, results } = await each(c, name, (s, p, t) => s.subCreate({ subscription, type, position: target(p) ?? { kind: "latest" }, partitioned: t.partitions > 1 }), {
    check: messageIdPartitionCheck(body),
  });
  const created = results.some((r) => r.created);
  return c.json(
    summary(
      topic,
      subscription,
      results.map((r) => r.info),
    ),
    created ? 201 : 200,
  );
}

async function stats(c: AppContext, name: string): Promise<Response> {
  const subscription = subscriptionParam(c);
  const { topic, results } = await each(c, name, (s) => s.subStats(subscription), { holding: true });
  return c.json(
    summary(
      topic,
      subscription,
      results.map((r) => r.info),
    ),
  );
}

async function seek(c: AppContext, name: string): Promise<Response> {
  const subscription = subscriptionParam(c);
  const body = asObject(jsonBody(c), "body");
  const target = targetOf(body, "seek", true);
  const { topic, results } = await each(
    c,
    name,
    async (s, p) => {
      const t = target(p);
      return t === null ? s.subStats(subscription) : s.subSeek(subscription, t);
    },
    { holding: true, check: messageIdPartitionCheck(body) },
  );
  // A message id's partition must hold the subscription (the others may not): else nothing moved.
  const idPartition = body.messageId === undefined ? null : (parseMessageId(body.messageId)?.partition ?? null);
  if (idPartition !== null && !results.some((r) => r.info.partition === idPartition))
    throw new EdgelogError("SUBSCRIPTION_NOT_FOUND", `No subscription ${JSON.stringify(subscription)} on partition ${idPartition}.`, { subscription, partition: idPartition });
  return c.json(
    summary(
      topic,
      subscription,
      results.map((r) => r.info),
    ),
  );
}

async function skip(c: AppContext, name: string): Promise<Response> {
  const subscription = subscriptionParam(c);
  const body = asObject(jsonBody(c), "body");
  const n = body.count;
  if (!Number.isSafeInteger(n) || (n as number) < 1) throw new EdgelogError("INVALID_REQUEST", "count must be a positive integer.", { field: "count" });
  const partition = body.partition;
  if (partition !== undefined && (!Number.isSafeInteger(partition) || (partition as number) < 0))
    throw new EdgelogError("INVALID_REQUEST", "partition must be a non-negative integer.", { field: "partition" });
  // Pulsar skips per partition: the given one, else partition 0 (a one-partition topic's only one).
  const only = (partition as number | undefined) ?? 0;
  const { topic, results } = await each(c, name, async (s, p) => (p === only ? s.subSkip(subscription, n as number) : s.subStats(subscription)), {
    holding: true,
    check: (t) => checkPartition(t, only),
  });
  // The partition skipped must hold the subscription (the others may not).
  if (!results.some((r) => r.info.partition === only))
    throw new EdgelogError("SUBSCRIPTION_NOT_FOUND", `No subscription ${JSON.stringify(subscription)} on partition ${only}.`, { subscription, partition: only });
  const skipped = results.reduce((a, r) => a + ("skipped" in r ? (r as { skipped: number }).skipped : 0), 0);
  return c.json({
    skipped,
    ...summary(
      topic,
      subscription,
      results.map((r) => r.info),
    ),
  });
}

async function clearBacklog(c: AppContext, name: string): Promise<Response> {
  const subscription = subscriptionParam(c);
  const { topic, results } = await each(c, name, (s) => s.subClearBacklog(subscription), { holding: true });
  return c.json({
    cleared: results.reduce((a, r) => a + r.cleared, 0),
    ...summary(
      topic,
      subscription,
      results.map((r) => r.info),
    ),
  });
}

async function remove(c: AppContext, name: string): Promise<Response> {
  const subscription = subscriptionParam(c);
  const force = c.req.query("force");
  if (force !== undefined && force !== "true" && force !== "false") throw new EdgelogError("INVALID_REQUEST", "force must be true or false.", { field: "force" });
  // Checked on every partition before deleting any, so a refusal changes nothing.
  if (force !== "true") {
    const { results } = await each(c, name, (s) => s.subStats(subscription), { holding: true });
    const connected = results.reduce((a, r) => a + r.info.consumers.length, 0);
    if (connected > 0)
      throw new EdgelogError("SUBSCRIPTION_HAS_CONSUMERS", `The subscription has ${connected} connected consumer(s): close them or delete with force=true.`, { consumers: connected });
  }
  const { topic } = await each(c, name, (s) => s.subDelete(subscription, force === "true"), { holding: true });
  return c.json({ topic: topic.name, subscription, deleted: true });
}

/** Most messages one HTTP pull receive returns. */
const MAX_RECEIVE_MESSAGES = 1000;
/** Visibility timeout bounds, ms (SQS allows 0 s..12 h; a lease under 1 s would expire in flight). */
const MIN_VISIBILITY_MS = 1000;
const MAX_VISIBILITY_MS = 12 * 3600 * 1000;

function bodyOrEmpty(c: AppContext): Record<string, unknown> {
  return asObject(c.get("body").length === 0 ? {} : jsonBody(c), "body");
}

function intField(body: Record<string, unknown>, field: string, dflt: number, min: number, max: number): number {
  const v = body[field];
  if (v === undefined || v === null) return dflt;
  if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) throw new EdgelogError("INVALID_REQUEST", `${field} must be an integer ${min}..${max}.`, { field });
  return v as number;
}

/** HTTP pull: up to maxMessages under a lease of visibilityTimeoutMs (shared subscriptions). */
async function receive(c: AppContext, name: string): Promise<Response> {
  const partition = partitionParam(c);
  const subscription = subscriptionParam(c);
  const body = bodyOrEmpty(c);
  const max = intField(body, "maxMessages", 10, 1, MAX_RECEIVE_MESSAGES);
  const visibilityTimeoutMs = intField(body, "visibilityTimeoutMs", 30_000, MIN_VISIBILITY_MS, MAX_VISIBILITY_MS);
  const encoding = body.encoding ?? "string";
  if (encoding !== "string" && encoding !== "base64") throw new EdgelogError("INVALID_REQUEST", 'encoding must be "string" or "base64".', { field: "encoding" });
  const position = positionOf(body.initialPosition, "initialPosition");
  return withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    const r = await atLeader(c, topic, partition, (s) =>
      s.subReceive({ subscription, max, visibilityTimeoutMs, position, partitioned: topic.partitions > 1, base64: encoding === "base64" }),
    );
    if (!r.ok) throw partitionError(r);
    return c.json({ topic: topic.name, subscription, partition, leaseId: r.leaseId, expiresAtMs: r.expiresAtMs, messages: r.messages });
  });
}

/** Acks or nacks the messages of a lease (all it holds when messageIds is absent). */
async function settle(c: AppContext, name: string, how: "ack" | "nack"): Promise<Response> {
  const partition = partitionParam(c);
  const subscription = subscriptionParam(c);
  const leaseId = c.req.param("lease") ?? "";
  const body = bodyOrEmpty(c);
  let offsets: number[] | null = null;
  if (body.messageIds !== undefined) {
    if (!Array.isArray(body.messageIds) || body.messageIds.length === 0 || body.messageIds.length > MAX_RECEIVE_MESSAGES) {
      throw new EdgelogError("INVALID_REQUEST", `messageIds must be an array of 1..${MAX_RECEIVE_MESSAGES} message ids.`, { field: "messageIds" });
    }
    offsets = body.messageIds.map((id) => {
      const p = parseMessageId(id);
      if (p === null || p.partition !== partition)
        throw new EdgelogError("INVALID_MESSAGE_ID", `${JSON.stringify(id)} is not a message id of partition ${partition}.`, { field: "messageIds" });
      return p.offset;
    });
  }
  return withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    const r = await atLeader(c, topic, partition, (s) => s.subSettleLease(subscription, leaseId, how, offsets));
    if (!r.ok) throw partitionError(r);
    return c.json({ leaseId, settled: r.settled, remaining: r.remaining });
  });
}
