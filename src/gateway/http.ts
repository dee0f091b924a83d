/**
 * Request-parsing helpers shared by the routes: media types, JSON bodies, integer query
 * parameters, and the two path forms of a topic.
 */
import type { Hono } from "hono";
import { EdgelogError } from "../protocol/errors.ts";
import type { AppContext, AppEnv } from "./context.ts";

const JSON_MEDIA_TYPE = "application/json";

/** The Content-Type without parameters, lower-cased; null when absent. */
/**
 * True when the request's `Accept` header lists `type` (exactly, case-insensitive) with a
 * quality above 0: `q=0` means "not acceptable" (RFC 9110 §12.5.1). Wildcards do not count:
 * Edgelog's own media types are only chosen when asked for by name.
 */
export function acceptsMediaType(c: AppContext, type: string): boolean {
  const accept = c.req.header("accept");
  if (accept === undefined) return false;
  for (const part of accept.split(",")) {
    const [name, ...params] = part.split(";");
    if (name!.trim().toLowerCase() !== type) continue;
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith("q="));
    if (q === undefined) return true;
    const value = Number(q.slice(2));
    if (Number.isFinite(value) && value > 0) return true;
  }
  return false;
}

export function mediaType(c: AppContext): string | null {
  const raw = c.req.header("content-type");
  if (raw === undefined) return null;
  return raw.split(";")[0]!.trim().toLowerCase();
}

/**
 * Parses the body as JSON. A missing Content-Type is taken as JSON (curl-friendly); any
 * other than application/json is UNSUPPORTED_MEDIA_TYPE.
 * @throws EdgelogError UNSUPPORTED_MEDIA_TYPE, INVALID_JSON (not UTF-8, empty, or not JSON)
 */
export function jsonBody(c: AppContext): unknown {
  const type = mediaType(c);
  if (type !== null && type !== JSON_MEDIA_TYPE) {
    throw new EdgelogError("UNSUPPORTED_MEDIA_TYPE", `Content-Type ${type} is not supported here: use ${JSON_MEDIA_TYPE}.`, { contentType: type });
  }
  return parseJsonBytes(c.get("body"));
}

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export function parseJsonBytes(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(fatalUtf8.decode(bytes));
  } catch (err) {
    throw new EdgelogError("INVALID_JSON", `The request body is not valid JSON: ${err instanceof Error ? err.message : String(err)}.`);
  }
}

/** A JSON object (not null, not an array), else INVALID_REQUEST naming `what`. */
export function asObject(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new EdgelogError("INVALID_REQUEST", `${what} must be a JSON object.`, { field: what });
  }
  return v as Record<string, unknown>;
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** A non-negative decimal integer string (no sign, no leading zeros), or null. */
export function parseNonNegativeInt(s: string | undefined): number | null {
  if (s === undefined || !DECIMAL.test(s)) return null;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
}

export interface IntQueryOptions {
  /** Value when the parameter is absent. */
  default: number;
  /** Smaller values are INVALID_REQUEST. */
  min: number;
  /** Larger values are clamped to this (a server bound, as Kafka clamps fetch sizes). */
  max: number;
}

/**
 * An integer query parameter: absent -> default; malformed or below min -> INVALID_REQUEST;
 * above max -> max, including well-formed values beyond 2^53 (docs/PROTOCOL.md: "values above
 * the maxima are clamped").
 */
export function intQuery(c: AppContext, name: string, o: IntQueryOptions): number {
  const raw = c.req.query(name);
  if (raw === undefined) return o.default;
  if (DECIMAL.test(raw) && !Number.isSafeInteger(Number(raw))) return o.max;
  const n = parseNonNegativeInt(raw);
  if (n === null || n < o.min) {
    throw new EdgelogError("INVALID_REQUEST", `Query parameter ${name} must be an integer >= ${o.min}, got ${JSON.stringify(raw)}.`, { field: name });
  }
  return Math.min(n, o.max);
}

/** The `:partition` path segment as a number (range is checked against the topic later). */
export function partitionParam(c: AppContext): number {
  const raw = c.req.param("partition");
  const n = parseNonNegativeInt(raw);
  if (n === null) throw new EdgelogError("INVALID_REQUEST", `Partition must be a non-negative integer, got ${JSON.stringify(raw)}.`, { field: "partition" });
  return n;
}

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * Registers `handler` under both topic path forms:
 * `/v1/topics/{topic}{suffix}` and `/v1/topics/{tenant}/{namespace}/{topic}{suffix}`.
 * The handler gets the topic as written (`topic` or `tenant/namespace/topic`; a single
 * segment may also carry `%2F`-encoded slashes).
 *
 * Register more specific suffixes first: `/v1/topics/a/partitions/0/records` matches both the
 * short partition route and the long `{tenant}/{namespace}/{topic}/records`, and hono runs
 * the first registered match. The short form wins; such a topic (namespace `partitions`,
 * numeric topic name) is still reachable as `/v1/topics/a%2Fpartitions%2F0/records`.
 */
export function topicRoute(app: Hono<AppEnv>, method: Method, suffix: string, handler: (c: AppContext, topic: string) => Response | Promise<Response>): void {
  app.on(method, `/v1/topics/:topic${suffix}`, (c) => handler(c, c.req.param("topic")));
  app.on(method, `/v1/topics/:tenant/:namespace/:topic${suffix}`, (c) => handler(c, `${c.req.param("tenant")}/${c.req.param("namespace")}/${c.req.param("topic")}`));
}
