/**
 * The pure core of Edgelog's structured logs (docs/OBSERVABILITY.md "Logs"): one entry in,
 * one JSON line out. No I/O and no Workers API, so it is unit-tested in node and the shell
 * (src/log/logger.ts) only picks the console method.
 *
 * A line is one JSON object: `ts` (ISO 8601, UTC; absent when the clock reads 0, as Workers'
 * does at module scope), `level`, `event` (dotted, `edgelog.*`), then the entry's fields in
 * the order given. What never goes in a line:
 * - a field whose name says it holds a secret (`token`, `authorization`, `password`, `secret`,
 *   `cookie`, `credentials`, `apiKey`, any case, anywhere in nested objects): its value is
 *   replaced by `"[redacted]"`, so a mistaken call cannot leak one;
 * - request or record bodies: callers pass names and numbers, and strings are cut at
 *   {@link MAX_LOG_STRING_CHARS} so a body passed by mistake cannot flood the log;
 * - error stacks beyond {@link MAX_LOG_STRING_CHARS} (an Error becomes `{name, message, stack}`).
 */

export type LogLevel = "debug" | "info" | "warn" | "error";

/** Field values a log line carries: JSON scalars, arrays, plain objects and Errors. */
export type LogFields = Readonly<Record<string, unknown>>;

/** Longest string value written, in UTF-16 code units; longer ones end with `…[+N chars]`. */
export const MAX_LOG_STRING_CHARS = 2048;
/** Deepest nesting written; deeper values become `"[depth]"`. */
export const MAX_LOG_DEPTH = 4;

/** Field names whose values are never written (matched case-insensitively, as substrings). */
const SECRET_KEY = /token|authorization|password|secret|cookie|credential|api[-_]?key|signature/i;
export const REDACTED = "[redacted]";

/** True when a field named `key` may hold a secret and is written as {@link REDACTED}. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

function cut(s: string): string {
  return s.length <= MAX_LOG_STRING_CHARS ? s : `${s.slice(0, MAX_LOG_STRING_CHARS)}…[+${s.length - MAX_LOG_STRING_CHARS} chars]`;
}

/** `value` made safe to write: secrets redacted, strings cut, Errors flattened, depth bounded. */
export function sanitize(value: unknown, depth = 0): unknown {
  if (value === null || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "string") return cut(value);
  if (typeof value === "bigint") return value.toString();
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined;
  if (depth >= MAX_LOG_DEPTH) return "[depth]";
  if (value instanceof Error) {
    const out: Record<string, unknown> = { name: value.name, message: cut(value.message) };
    const code = (value as { code?: unknown }).code;
    if (typeof code === "string") out.code = code;
    if (value.stack !== undefined) out.stack = cut(value.stack);
    return out;
  }
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return `[${value.byteLength} bytes]`;
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => sanitize(v, depth + 1) ?? null);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (isSecretKey(k)) out[k] = REDACTED;
    else {
      const s = sanitize(v, depth + 1);
      if (s !== undefined) out[k] = s;
    }
  }
  return out;
}

/**
 * One log line (no trailing newline). `ts`, `level` and `event` come first and cannot be
 * overwritten by a field of the same name.
 */
export function formatLogLine(level: LogLevel, event: string, fields: LogFields, nowMs: number): string {
  const body = sanitize(fields) as Record<string, unknown>;
  delete body.ts;
  delete body.level;
  delete body.event;
  // Workers' clock reads 0 outside a request (module scope, at start-up): no `ts` then; the
  // platform stamps every log line anyway.
  return JSON.stringify(nowMs > 0 ? { ts: new Date(nowMs).toISOString(), level, event, ...body } : { level, event, ...body });
}
