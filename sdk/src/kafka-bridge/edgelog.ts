/**
 * The one Edgelog call the SDK client has no raw form of: a binary fetch whose body (stored
 * record batches, concatenated) is handed on without decoding, so the bridge can convert batch
 * headers and copy the records to Kafka clients unchanged. Same route, headers and error
 * handling as {@link EdgelogClient.fetchRecords} (docs/PROTOCOL.md, Fetch).
 */
import { BATCH_MEDIA_TYPE } from "../../../src/protocol/index.ts";
import { HIGH_WATERMARK_HEADER, LOG_START_OFFSET_HEADER, NEXT_OFFSET_HEADER, topicPath, type EdgelogClient } from "../client.ts";
import { errorFromBody, errorFromNetwork, protocolViolation } from "../errors.ts";

/** A raw fetch answer. */
export interface RawFetchResult {
  /** Edgelog record batches (the first may start below the requested offset). */
  body: Uint8Array;
  nextOffset: number;
  highWatermark: number;
  logStartOffset: number;
}

export interface RawFetchRequest {
  offset: number;
  maxBytes: number;
  maxRecords: number;
  maxWaitMs: number;
  minBytes: number;
  signal?: AbortSignal;
}

function header(res: Response, name: string): number {
  const raw = res.headers.get(name);
  const n = raw === null || !/^\d+$/.test(raw.trim()) ? Number.NaN : Number(raw.trim());
  if (!Number.isSafeInteger(n)) throw protocolViolation(res.status, `missing or invalid ${name} header`, { header: name, value: raw });
  return n;
}

/**
 * `GET /v1/topics/{topic}/partitions/{partition}/records` with `Accept: application/vnd.edgelog.batch`.
 * @throws EdgelogClientError as fetchRecords; `signal.reason` when aborted.
 */
export async function fetchRaw(
  client: EdgelogClient,
  fetchImpl: typeof fetch,
  headers: Record<string, string>,
  topic: string,
  partition: number,
  req: RawFetchRequest,
): Promise<RawFetchResult> {
  const url = new URL(`${client.baseUrl}${topicPath(topic)}/partitions/${partition}/records`);
  url.searchParams.set("offset", String(req.offset));
  url.searchParams.set("maxBytes", String(req.maxBytes));
  url.searchParams.set("maxRecords", String(req.maxRecords));
  url.searchParams.set("maxWaitMs", String(req.maxWaitMs));
  url.searchParams.set("minBytes", String(req.minBytes));
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, client.requestTimeoutMs + req.maxWaitMs);
  const onAbort = (): void => controller.abort(req.signal?.reason);
  req.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    let res: Response;
    let body: Uint8Array;
    try {
      res = await fetchImpl(url.href, { headers: { ...headers, accept: BATCH_MEDIA_TYPE }, signal: controller.signal });
      body = new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      if (req.signal?.aborted) throw req.signal.reason;
      throw errorFromNetwork(e, timedOut);
    }
    if (res.status < 200 || res.status > 299) throw errorFromBody(res.status, body);
    return { body, nextOffset: header(res, NEXT_OFFSET_HEADER), highWatermark: header(res, HIGH_WATERMARK_HEADER), logStartOffset: header(res, LOG_START_OFFSET_HEADER) };
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener("abort", onAbort);
  }
}
