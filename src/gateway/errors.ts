/**
 * Maps anything thrown while serving a request to the one error shape (docs/PROTOCOL.md).
 */
import { EdgelogError } from "../protocol/errors.ts";

/**
 * EdgelogError as is; a Durable Object platform failure the runtime marks retryable or
 * overloaded (e.g. the object was reset mid-call) -> UNAVAILABLE (503, retriable); anything
 * else is a bug -> INTERNAL (500), logged here and never echoed (no stacks, no messages).
 */
export function toEdgelogErrorResponse(err: unknown): EdgelogError {
  if (err instanceof EdgelogError) return err;
  const flags = typeof err === "object" && err !== null ? (err as { retryable?: unknown; overloaded?: unknown }) : {};
  if (flags.retryable === true || flags.overloaded === true) {
    console.warn("durable object unavailable", err);
    return new EdgelogError("UNAVAILABLE");
  }
  console.error("unhandled error", err);
  return new EdgelogError("INTERNAL");
}
