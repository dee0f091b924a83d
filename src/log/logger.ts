/**
 * The thin shell of Edgelog's structured logs: formats with the pure core (src/log/format.ts)
 * and writes one line to the console method of its level (`console.error` for error,
 * `console.warn` for warn, `console.log` for info, `console.debug` for debug). On Workers the
 * console is what `wrangler tail`, Workers Logs and Logpush collect (docs/OBSERVABILITY.md);
 * in tests it is what a spy captures.
 *
 * Event names are dotted and start with `edgelog.` (e.g. `edgelog.request.error`).
 */
import { formatLogLine, type LogFields, type LogLevel } from "./format.ts";

function write(level: LogLevel, event: string, fields: LogFields): void {
  const line = formatLogLine(level, event, fields, Date.now());
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else if (level === "info") console.log(line);
  else console.debug(line);
}

export const log = {
  error: (event: string, fields: LogFields = {}): void => write("error", event, fields),
  warn: (event: string, fields: LogFields = {}): void => write("warn", event, fields),
  info: (event: string, fields: LogFields = {}): void => write("info", event, fields),
  debug: (event: string, fields: LogFields = {}): void => write("debug", event, fields),
  /** Writes at `level`, for callers that choose it (e.g. warn for 4xx, error for 5xx). */
  at: (level: LogLevel, event: string, fields: LogFields = {}): void => write(level, event, fields),
};
