/**
 * The SDK's one error type. Every failure the client reports for a request is an
 * {@link EdgelogClientError} whose `code` comes from the shared error table
 * (src/protocol/errors.ts), and whose `retriable` flag is read from that table by code,
 * never from the HTTP status (docs/PROTOCOL.md: "Clients MUST switch on `code`").
 */
import { EdgelogError, isErrorCode, type ErrorCode } from "../../src/protocol/index.ts";

/** Options of {@link EdgelogClientError}. */
export interface EdgelogClientErrorOptions {
  /** HTTP status received, or 0 when no HTTP response was received (network failure, timeout). */
  httpStatus: number;
  /** Machine-readable context, e.g. `{logStartOffset, logEndOffset}` for OFFSET_OUT_OF_RANGE. */
  details?: Record<string, unknown>;
  /** The underlying exception, for network failures. */
  cause?: unknown;
}

/**
 * A failed Edgelog request, typed by the shared error table.
 *
 * - `code`: a stable {@link ErrorCode} from the server's JSON error body. Network failures are
 *   `UNAVAILABLE`, timeouts `REQUEST_TIMED_OUT`; an error answer that is not a JSON error body
 *   (or a 2xx answer that breaks the protocol) is `INTERNAL` with the status in `details`.
 * - `retriable`: from the shared table for `code` (the same request may succeed after a backoff).
 * - `httpStatus`: the status actually received (0 when none was received).
 *
 * It extends the shared {@link EdgelogError}, so `instanceof EdgelogError` matches both the
 * server's and the SDK's errors.
 */
export class EdgelogClientError extends EdgelogError {
  declare readonly httpStatus: number;

  constructor(code: ErrorCode, message: string | undefined, options: EdgelogClientErrorOptions) {
    super(code, message, options.details);
    this.name = "EdgelogClientError";
    // The base class sets the table's status; keep the one actually received.
    (this as { httpStatus: number }).httpStatus = options.httpStatus;
    if (options.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

const MAX_BODY_EXCERPT_CHARS = 500;

/**
 * Builds the error for a non-2xx answer from its body only.
 * A JSON body `{"error": {"code", "message", "details"}}` with a known code gives that code;
 * anything else (HTML from a proxy, an unknown code from a newer server, empty body)
 * gives `INTERNAL` with `details: {httpStatus, body?, serverCode?}`.
 */
export function errorFromBody(httpStatus: number, body: Uint8Array): EdgelogClientError {
  const text = new TextDecoder().decode(body);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const error = isRecord(parsed) && isRecord(parsed["error"]) ? parsed["error"] : undefined;
  if (error !== undefined && isErrorCode(error["code"])) {
    const message = typeof error["message"] === "string" ? error["message"] : undefined;
    const details = isRecord(error["details"]) ? error["details"] : undefined;
    return new EdgelogClientError(error["code"], message, details === undefined ? { httpStatus } : { httpStatus, details });
  }
  const details: Record<string, unknown> = { httpStatus };
  if (error !== undefined && typeof error["code"] === "string") {
    details["serverCode"] = error["code"];
    if (typeof error["message"] === "string") details["serverMessage"] = error["message"];
  } else if (text.length > 0) {
    details["body"] = text.slice(0, MAX_BODY_EXCERPT_CHARS);
  }
  return new EdgelogClientError("INTERNAL", `Unexpected error answer (HTTP ${httpStatus}) without a known error code.`, { httpStatus, details });
}

/**
 * Appended to a network failure's message in a browser, where a request refused by CORS fails
 * exactly like an unreachable server (`TypeError: Failed to fetch`) and only the console says which.
 */
export const BROWSER_NETWORK_HINT =
  " In a browser this is also how a cross-origin request refused by CORS fails (the console says which):" +
  " the gateway must allow this page's origin and every request header sent (docs/PROTOCOL.md, CORS).";

/** True in a browser page (where CORS applies): there is a `document`. */
function inBrowser(): boolean {
  return typeof (globalThis as { document?: unknown }).document === "object";
}

/**
 * A request that got no HTTP answer: `REQUEST_TIMED_OUT` when our timer fired, else `UNAVAILABLE`
 * (in a browser, with {@link BROWSER_NETWORK_HINT}). Both retriable.
 */
export function errorFromNetwork(cause: unknown, timedOut: boolean, browser: boolean = inBrowser()): EdgelogClientError {
  let reason = cause instanceof Error ? cause.message : String(cause);
  // Node's fetch says only "fetch failed"; the socket error (ECONNREFUSED ...) is its cause.
  const inner = cause instanceof Error ? cause.cause : undefined;
  if (inner instanceof Error && inner.message !== "") reason += ` (${inner.message})`;
  return timedOut
    ? new EdgelogClientError("REQUEST_TIMED_OUT", `No answer within the request timeout (${reason}).`, { httpStatus: 0, cause })
    : new EdgelogClientError("UNAVAILABLE", `Request failed before an answer was received: ${reason}${browser ? `.${BROWSER_NETWORK_HINT}` : ""}`, { httpStatus: 0, cause });
}

/** A 2xx answer that breaks the protocol (missing header, undecodable batch): `INTERNAL`. */
export function protocolViolation(httpStatus: number, message: string, details?: Record<string, unknown>): EdgelogClientError {
  return new EdgelogClientError("INTERNAL", `Protocol violation: ${message}`, { httpStatus, details: { httpStatus, ...details } });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
