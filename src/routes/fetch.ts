/**
 * Reads:
 * - `GET /v1/topics/{topic}/partitions/{p}/records?offset=&maxRecords=&maxBytes=&maxWaitMs=&minBytes=&encoding=`:
 *   JSON by default; `Accept: application/vnd.edgelog.batch` answers the stored batches as they are;
 * - `GET /v1/topics/{topic}/partitions/{p}/offsets?spec=earliest|latest|max_timestamp|timestamp&timestamp=T`.
 */
import type { Hono } from "hono";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { decodeFetched } from "../gateway/fetch-response.ts";
import { acceptsMediaType, intQuery, parseNonNegativeInt, partitionParam, topicRoute } from "../gateway/http.ts";
import { checkPartition, partitionError, withTopic } from "../gateway/topics.ts";
import type { ListOffsetsSpec } from "../partition/core.ts";
import { atAnyReplica } from "../gateway/replicas.ts";
import { isEncoding } from "../protocol/encoding.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { FETCH_DEFAULT_MAX_BYTES, FETCH_DEFAULT_MAX_RECORDS, FETCH_MAX_MAX_BYTES, FETCH_MAX_MAX_RECORDS, FETCH_MAX_WAIT_MS_LIMIT } from "../protocol/limits.ts";
import { BATCH_MEDIA_TYPE, type JsonFetchResponse, type ListOffsetsResponse } from "../protocol/types.ts";

export function fetchRoutes(app: Hono<AppEnv>): void {
  topicRoute(app, "GET", "/partitions/:partition/records", fetchRecords);
  topicRoute(app, "GET", "/partitions/:partition/offsets", listOffsets);
}

/** True when the client asked for the binary batch encoding. */
function wantsBatches(c: AppContext): boolean {
  return acceptsMediaType(c, BATCH_MEDIA_TYPE);
}

async function fetchRecords(c: AppContext, name: string): Promise<Response> {
  const partition = partitionParam(c);
  const offset = parseNonNegativeInt(c.req.query("offset"));
  if (offset === null) {
    throw new EdgelogError("INVALID_OFFSET", `Query parameter offset is required: a non-negative integer, got ${JSON.stringify(c.req.query("offset") ?? null)}.`, {
      field: "offset",
    });
  }
  const maxRecords = intQuery(c, "maxRecords", { default: FETCH_DEFAULT_MAX_RECORDS, min: 1, max: FETCH_MAX_MAX_RECORDS });
  const maxBytes = intQuery(c, "maxBytes", { default: FETCH_DEFAULT_MAX_BYTES, min: 1, max: FETCH_MAX_MAX_BYTES });
  const maxWaitMs = intQuery(c, "maxWaitMs", { default: 0, min: 0, max: FETCH_MAX_WAIT_MS_LIMIT });
  const minBytes = intQuery(c, "minBytes", { default: 1, min: 0, max: FETCH_MAX_MAX_BYTES });
  const encoding = c.req.query("encoding") ?? "string";
  if (!isEncoding(encoding)) throw new EdgelogError("INVALID_REQUEST", `encoding must be "string", "base64" or "json", got ${JSON.stringify(encoding)}.`, { field: "encoding" });
  const binary = wantsBatches(c);

  return withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    const r = await atAnyReplica(c.env, topic.topicId, partition, topic.configs, (p) => p.fetchRecords({ offset, maxRecords, maxBytes, maxWaitMs, minBytes }));
    if (!r.ok) throw partitionError(r);
    if (binary) {
      return new Response(concat(r.batches), {
        headers: {
          "content-type": BATCH_MEDIA_TYPE,
          "edgelog-next-offset": String(r.nextOffset),
          "edgelog-high-watermark": String(r.highWatermark),
          "edgelog-log-start-offset": String(r.logStartOffset),
        },
      });
    }
    const { records, nextOffset } = decodeFetched(r.batches, partition, offset, maxRecords, encoding, r.nextOffset);
    const body: JsonFetchResponse = {
      topic: topic.name,
      partition,
      records,
      nextOffset,
      highWatermark: r.highWatermark,
      logStartOffset: r.logStartOffset,
    };
    return c.json(body);
  });
}

async function listOffsets(c: AppContext, name: string): Promise<Response> {
  const partition = partitionParam(c);
  const spec = parseSpec(c);
  return withTopic(c.env, name, async (topic) => {
    checkPartition(topic, partition);
    const r = await atAnyReplica(c.env, topic.topicId, partition, topic.configs, (p) => p.listOffsets(spec));
    if (!r.ok) throw partitionError(r);
    const body: ListOffsetsResponse = { topic: topic.name, partition, spec: spec.spec, offset: r.offset };
    if (spec.spec === "timestamp" || spec.spec === "max_timestamp") body.timestamp = r.timestamp;
    return c.json(body);
  });
}

function parseSpec(c: AppContext): ListOffsetsSpec {
  const spec = c.req.query("spec");
  switch (spec) {
    case "earliest":
    case "latest":
    case "max_timestamp":
      return { spec };
    case "timestamp": {
      const timestamp = parseNonNegativeInt(c.req.query("timestamp"));
      if (timestamp === null) {
        throw new EdgelogError("INVALID_OFFSET", "spec=timestamp needs timestamp=T, a non-negative integer of ms.", { field: "timestamp" });
      }
      return { spec, timestamp };
    }
    default:
      throw new EdgelogError("INVALID_OFFSET", `spec must be earliest, latest, max_timestamp or timestamp, got ${JSON.stringify(spec ?? null)}.`, { field: "spec" });
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}
