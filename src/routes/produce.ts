/**
 * Produce:
 * - `POST /v1/topics/{topic}/partitions/{p}/records`: JSON or binary (one record batch), one
 *   partition, idempotent producers allowed;
 * - `POST /v1/topics/{topic}/records`: JSON, partitioned by the server;
 * - `GET /v1/topics/{topic}/produce/ws`: the same JSON over a WebSocket, a receipt per frame.
 *
 * The routes parse the request (shape, encodings, the `acks` and `Accept` parameters) and
 * hand it to the produce policy (src/gateway/produce.ts: validation against the topic,
 * placement, coalesced appends, failure folding, acks=0), then write its outcome.
 * `Accept: application/vnd.edgelog.produce-summary+json` on the partition route asks for the
 * compact answer (ProduceSummaryResponse).
 */
import type { Hono } from "hono";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { acceptsMediaType, jsonBody, mediaType, partitionParam, topicRoute } from "../gateway/http.ts";
import { produceBatch, produceToPartition, produceToTopic, type ProduceAcks, type ProduceContext, type ProduceOutcome } from "../gateway/produce.ts";
import { parseProduceRequest } from "../gateway/produce-request.ts";
import { withTopic } from "../gateway/topics.ts";
import { acceptProducerSocket, NATIVE_PRODUCER } from "../gateway/ws-produce.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { BATCH_MEDIA_TYPE, PRODUCE_SUMMARY_MEDIA_TYPE } from "../protocol/types.ts";

export function produceRoutes(app: Hono<AppEnv>): void {
  // Before any GET of the long topic form: `/v1/topics/a/produce/ws` also matches `{tenant}/{namespace}/{topic}`.
  topicRoute(app, "GET", "/produce/ws", produceSocket);
  // The partition route first: see topicRoute on the ambiguous `a/partitions/0/records`.
  topicRoute(app, "POST", "/partitions/:partition/records", producePartition);
  topicRoute(app, "POST", "/records", produceTopic);
}

/**
 * `GET /v1/topics/{topic}/produce/ws` (WebSocket upgrade): produce with one receipt per frame
 * (docs/PROTOCOL.md "Produce over WebSocket"; src/gateway/ws-produce.ts). An unknown topic is
 * refused before the upgrade.
 */
async function produceSocket(c: AppContext, name: string): Promise<Response> {
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") throw new EdgelogError("UPGRADE_REQUIRED", "This endpoint serves WebSocket upgrades only: send Upgrade: websocket.");
  await withTopic(c.env, name, async (t) => t);
  return acceptProducerSocket(c.env, name, NATIVE_PRODUCER, c.executionCtx, c.get("quota") ?? null);
}

async function produceTopic(c: AppContext, name: string): Promise<Response> {
  const ctx = produceContext(c, acksParam(c));
  const req = parseProduceRequest(jsonBody(c), { nowMs: Date.now(), allowProducer: false });
  return answer(c, await produceToTopic(ctx, name, req));
}

async function producePartition(c: AppContext, name: string): Promise<Response> {
  const ctx = produceContext(c, acksParam(c));
  const partition = partitionParam(c);
  if (mediaType(c) === BATCH_MEDIA_TYPE) return answer(c, await produceBatch(ctx, name, partition, c.get("body")));
  const req = parseProduceRequest(jsonBody(c), { nowMs: Date.now(), allowProducer: true });
  return answer(c, await produceToPartition(ctx, name, partition, req));
}

/**
 * The `acks` query parameter (Kafka's producer `acks`; see {@link ProduceAcks}).
 * @default "all"
 * @throws EdgelogError INVALID_REQUEST with details.field "acks".
 */
function acksParam(c: AppContext): ProduceAcks {
  const v = c.req.query("acks");
  if (v === undefined || v === "all") return "all";
  if (v === "1" || v === "0") return v;
  throw new EdgelogError("INVALID_REQUEST", `acks must be "all", "1" or "0", got ${JSON.stringify(v)}.`, { field: "acks" });
}

function produceContext(c: AppContext, acks: ProduceAcks): ProduceContext {
  return {
    env: c.env,
    // Read when used: an RPC this request leads, or an acks=0 append, runs on after the answer.
    waitUntil: (p) => c.executionCtx.waitUntil(p),
    acks,
    summary: acceptsMediaType(c, PRODUCE_SUMMARY_MEDIA_TYPE),
  };
}

function answer(c: AppContext, outcome: ProduceOutcome): Response {
  switch (outcome.kind) {
    case "records":
      return c.json(outcome.body);
    case "summary":
      return c.body(JSON.stringify(outcome.body), 200, { "content-type": PRODUCE_SUMMARY_MEDIA_TYPE });
    case "accepted":
      return c.json(outcome.body, 202);
  }
}
