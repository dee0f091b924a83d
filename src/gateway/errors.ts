/**
 * Maps anything thrown while serving a request to the one error shape (docs/PROTOCOL.md).
 */
import { EdgelogError, type ErrorCode } from "../protocol/errors.ts";
import { log } from "../log/logger.ts";

/**
 * An EdgelogError whose answer carries headers besides the JSON error body: a compatibility
 * protocol's (e.g. Durable Streams' `Stream-Closed`, `Producer-Expected-Seq`). Thrown by a
 * route like any EdgelogError; the one onError (src/app.ts) writes the headers with the body.
 */
export class ErrorWithHeaders extends EdgelogError {
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string | undefined, details: Record<string, unknown> | undefined, headers: Record<string, string>) {
    super(code, message, details);
    this.headers = headers;
  }
}

/**
 * EdgelogError as is; a Durable Object platform failure the runtime marks retryable or
 * overloaded (e.g. the object was reset mid-call) -> UNAVAILABLE (503, retriable); anything
 * else is a bug -> INTERNAL (500), logged here and never echoed (no stacks, no messages).
 */
export function toEdgelogErrorResponse(err: unknown): EdgelogError {
  if (err instanceof EdgelogError) return err;
  const flags = typeof err === "object" && err !== null ? (err as { retryable?: unknown; overloaded?: unknown }) : {};
  if (flags.retryable === true || flags.overloaded === true) {
    log.warn("edgelog.durable_object.unavailable", { error: err });
    return new EdgelogError("UNAVAILABLE");
  }
  log.error("edgelog.internal_error", { error: err });
  return new EdgelogError("INTERNAL");
}
