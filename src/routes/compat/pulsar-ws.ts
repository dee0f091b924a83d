/**
 * Pulsar's WebSocket API (docs/PROTOCOL.md "Pulsar WebSocket API"):
 * - `GET /ws/v2/producer/persistent/{tenant}/{namespace}/{topic}`
 * - `GET /ws/v2/consumer/persistent/{tenant}/{namespace}/{topic}/{subscription}`
 * - `GET /ws/v2/reader/persistent/{tenant}/{namespace}/{topic}`
 * each with `Upgrade: websocket` (the auth token may travel as the `token` query parameter,
 * as in Pulsar). The route validates the options, opens the consumer's or reader's native
 * socket on every partition (the partition object's sealed fetch, as the native route does),
 * and only then accepts the client's socket, so a refusal is an HTTP JSON error from the one
 * table and changes nothing. The sessions live in src/gateway/pulsar-ws.ts.
 */
import type { Hono } from "hono";
import type { AppContext, AppEnv } from "../../gateway/context.ts";
import { PULSAR_PRODUCER, PulsarFanIn } from "../../gateway/pulsar-ws.ts";
import { acceptProducerSocket } from "../../gateway/ws-produce.ts";
import { StaleTopicError, withTopic } from "../../gateway/topics.ts";
import { subscriptionAtLeader, upgradeAtLeader } from "../../gateway/subscriptions.ts";
import { EdgelogError, type ErrorBody, toEdgelogError } from "../../protocol/errors.ts";
import type { TopicSummary } from "../../protocol/types.ts";
import { formatMessageId } from "../../subscriptions/message-id.ts";
import { MAX_RECEIVER_QUEUE_SIZE } from "../../subscriptions/permits.ts";
import { type PulsarFrameError, parsePulsarConsumerQuery, parsePulsarReaderQuery } from "../../subscriptions/pulsar-ws.ts";

/** The path prefix of Pulsar's WebSocket API (persistent topics only: Edgelog has no non-persistent ones). */
export const PULSAR_WS_PREFIX = "/ws/v2";

export function pulsarWsRoutes(app: Hono<AppEnv>): void {
  app.get(`${PULSAR_WS_PREFIX}/producer/persistent/:tenant/:namespace/:topic`, producer);
  app.get(`${PULSAR_WS_PREFIX}/consumer/persistent/:tenant/:namespace/:topic/:subscription`, consumer);
  app.get(`${PULSAR_WS_PREFIX}/reader/persistent/:tenant/:namespace/:topic`, reader);
}

function topicName(c: AppContext): string {
  return `${c.req.param("tenant")}/${c.req.param("namespace")}/${c.req.param("topic")}`;
}

function requireUpgrade(c: AppContext): void {
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") throw new EdgelogError("UPGRADE_REQUIRED", "This endpoint serves WebSocket upgrades only: send Upgrade: websocket.");
}

/** A WebSocketPair: the client end for the 101 answer, the server end accepted by this Worker. */
function pair(): { client: WebSocket; server: WebSocket } {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.accept();
  return { client, server };
}

async function producer(c: AppContext): Promise<Response> {
  requireUpgrade(c);
  const name = topicName(c);
  // Unknown topics are refused before the upgrade (Edgelog does not create topics on produce).
  await withTopic(c.env, name, async (t) => t);
  return acceptProducerSocket(c.env, name, PULSAR_PRODUCER, c.executionCtx, c.get("quota") ?? null);
}

async function consumer(c: AppContext): Promise<Response> {
  requireUpgrade(c);
  const name = topicName(c);
  const subscription = c.req.param("subscription") ?? "";
  const q = new URL(c.req.url).searchParams;
  const o = parsePulsarConsumerQuery(subscription, q, crypto.randomUUID().replaceAll("-", "").slice(0, 16));
  if ("ok" in o) throw toEdgelogError(o);
  return withTopic(c.env, name, async (topic) => {
    const parts = await openPartitions(c, topic, "consumer", subscription, () => o.nativeQuery);
    if (parts instanceof Response) return parts;
    const { client, server } = pair();
    const mode = o.options.pullMode ? ({ kind: "pull" } as const) : ({ kind: "push", window: o.options.receiverQueueSize, reader: false } as const);
    new PulsarFanIn(server, parts, mode, () => unsubscribe(c, topic, subscription)).start();
    return new Response(null, { status: 101, webSocket: client });
  });
}

async function reader(c: AppContext): Promise<Response> {
  requireUpgrade(c);
  const name = topicName(c);
  const o = parsePulsarReaderQuery(new URL(c.req.url).searchParams, MAX_RECEIVER_QUEUE_SIZE);
  if ("ok" in o) throw toEdgelogError(o);
  return withTopic(c.env, name, async (topic) => {
    if (o.start.kind === "id" && topic.partitions > 1) {
      // As Pulsar's clients: a reader of a partitioned topic starts at earliest or latest only.
      throw new EdgelogError(
        "INVALID_REQUEST",
        `Topic ${topic.name} has ${topic.partitions} partitions: a reader of a partitioned topic starts at earliest or latest, not at a message id.`,
        {
          field: "messageId",
        },
      );
    }
    const start = o.start;
    if (start.kind === "id" && start.position.partition >= topic.partitions)
      throw new EdgelogError("INVALID_MESSAGE_ID", "The message id names a partition the topic does not have.", { field: "messageId" });
    const nativeQuery = () => {
      const nq = new URLSearchParams({ receiverQueueSize: String(o.receiverQueueSize), encoding: "base64" });
      nq.set("start", start.kind === "id" ? formatMessageId(start.position.partition, start.position.offset) : start.kind);
      return nq;
    };
    const parts = await openPartitions(c, topic, "reader", "", nativeQuery);
    if (parts instanceof Response) return parts;
    const { client, server } = pair();
    new PulsarFanIn(server, parts, { kind: "push", window: o.receiverQueueSize, reader: true }).start();
    return new Response(null, { status: 101, webSocket: client });
  });
}

/**
 * Pulsar's `unsubscribe` frame: deletes the subscription on every partition, refused with
 * SUBSCRIPTION_HAS_CONSUMERS while consumers other than this session's (one per partition)
 * are connected, as Pulsar refuses to unsubscribe a subscription with other consumers. The
 * delete closes this session's partition sockets with 4001, and the client's with them.
 */
async function unsubscribe(c: AppContext, topic: TopicSummary, subscription: string): Promise<PulsarFrameError | null> {
  const parts = Array.from({ length: topic.partitions }, (_, p) => p);
  let consumers = 0;
  for (const r of await Promise.all(parts.map((p) => subscriptionAtLeader(c.env, topic, p, (s) => s.subStats(subscription))))) {
    if (!r.ok) return { code: r.code, message: r.message ?? r.code };
    consumers += r.info.consumers.length;
  }
  if (consumers > topic.partitions)
    return { code: "SUBSCRIPTION_HAS_CONSUMERS", message: `The subscription has ${consumers - topic.partitions} other consumer(s): it cannot be unsubscribed while they are connected.` };
  for (const r of await Promise.all(parts.map((p) => subscriptionAtLeader(c.env, topic, p, (s) => s.subDelete(subscription, true)))))
    if (!r.ok) return { code: r.code, message: r.message ?? r.code };
  return null;
}

/**
 * Opens the native socket of every partition: partition 0 first (so that a refusal every
 * partition would give, such as a bad option or an exclusive subscription's CONSUMER_BUSY,
 * touches nothing), then the others in parallel. On a refusal every socket opened is closed
 * and the refusal is the answer.
 * @returns the accepted sockets by partition, or the refusal.
 */
async function openPartitions(c: AppContext, topic: TopicSummary, kind: "consumer" | "reader", subscription: string, query: () => URLSearchParams): Promise<WebSocket[] | Response> {
  const open = async (p: number): Promise<WebSocket | Response> => {
    const headers = new Headers({ upgrade: "websocket", "edgelog-socket": kind, "edgelog-subscription": subscription, "edgelog-partitioned": topic.partitions > 1 ? "1" : "0" });
    const url = `https://partition.internal/ws?${query().toString()}`;
    // Replicated partitions serve sockets at the leader (src/gateway/subscriptions.ts).
    const res = await upgradeAtLeader(c.env, topic, p, () => new Request(url, { method: "GET", headers }));
    const ws = res.webSocket;
    if (res.status !== 101 || ws === null) return res;
    // Not accepted here: PulsarFanIn.start() accepts it after adding its listeners, so that the
    // frames a partition sends while the other partitions are opened are not dropped unheard.
    return ws;
  };
  const first = await open(0);
  if (first instanceof Response) {
    if (first.status === 404) {
      // The partition object is gone: the cached topic id may be old (withTopic refreshes once).
      const body = (await first.json().catch(() => null)) as ErrorBody | null;
      throw new StaleTopicError(body?.error?.message ?? "The topic or partition does not exist.");
    }
    return first;
  }
  const rest = await Promise.all(Array.from({ length: topic.partitions - 1 }, (_, i) => open(i + 1)));
  const refusal = rest.find((r): r is Response => r instanceof Response);
  if (refusal === undefined) return [first, ...(rest as WebSocket[])];
  for (const r of [first, ...rest])
    if (!(r instanceof Response)) {
      r.accept();
      r.close(1000, "refused on another partition");
    }
  return refusal;
}
