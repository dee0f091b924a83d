/**
 * The console's HTTP client for Edgelog's API on the origin that served the page
 * (docs/PROTOCOL.md). Every call carries the token the user pasted (kept in sessionStorage:
 * gone when the tab closes, never sent to another origin). Every failure becomes an
 * {@link ApiError} with the answer's stable `code`, which the pages show as they got it.
 */

const TOKEN_KEY = "edgelog.console.token";

/** The bearer token of this tab, or "" when none was given. */
export function getToken(): string {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

/** Keeps `token` for this tab ("" forgets it). */
export function setToken(token: string): void {
  if (token === "") sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/**
 * An error answer of the API: `status` is the HTTP status (0 when no answer arrived), `code`
 * the error table's code (docs/PROTOCOL.md "Error codes"), or `HTTP_<status>` for an answer
 * that is not Edgelog's JSON (a proxy's page, for instance).
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Any thrown value as an ApiError (a bug in the console shows as `CONSOLE_ERROR`). */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof Error) return new ApiError(0, "CONSOLE_ERROR", e.message);
  return new ApiError(0, "CONSOLE_ERROR", String(e));
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

/** Sends one request; resolves the raw Response when it is 2xx or 304, else throws its ApiError. */
export async function request(path: string, o: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { Accept: "application/json", ...o.headers };
  const token = getToken();
  if (token !== "" && headers.Authorization === undefined) headers.Authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (o.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(o.body);
  }
  let res: Response;
  try {
    // No cookies or HTTP auth of the browser: the console sends only the Authorization it set,
    // and a 401 with a Basic challenge (a wrong password at /v1/auth/token) then never makes the
    // browser pop up its own login dialog (Fetch: only requests that include credentials prompt).
    const init = { method: o.method ?? "GET", headers, body, signal: o.signal, cache: "no-store" as const, credentials: "omit" as const };
    res = await fetch(path, init);
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    // As the SDK: no answer at all is UNAVAILABLE with status 0 (docs/PROTOCOL.md "Error codes").
    throw new ApiError(0, "UNAVAILABLE", `No answer from ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (res.ok || res.status === 304) return res;
  throw await errorOf(res);
}

/** The ApiError of a failed answer: the JSON error body when there is one. */
async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => "");
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    const err = parsed.error;
    if (err !== undefined && typeof err.code === "string") {
      const details = typeof err.details === "object" && err.details !== null ? (err.details as Record<string, unknown>) : undefined;
      return new ApiError(res.status, err.code, typeof err.message === "string" ? err.message : "", details);
    }
  } catch {
    // not JSON: below
  }
  return new ApiError(res.status, `HTTP_${res.status}`, text.slice(0, 500) || res.statusText);
}

/** A JSON call: the parsed answer, or `undefined` for an empty one (204). */
export async function api<T>(path: string, o: RequestOptions = {}): Promise<T> {
  const res = await request(path, o);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

/**
 * Exchanges a SCRAM user's password for a bearer token (`POST /v1/auth/token`, HTTP Basic;
 * docs/PROTOCOL.md "Security"). The password is sent once and never stored.
 */
export async function signIn(user: string, password: string): Promise<{ token: string; expiresAt: number }> {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return await api<{ token: string; expiresAt: number }>("/v1/auth/token", { method: "POST", headers: { Authorization: `Basic ${btoa(bin)}` } });
}

/** `/v1/topics/{topic}` for a full topic name, as one `%2F`-encoded segment (docs/PROTOCOL.md "Conventions"). */
export function topicPath(fullName: string): string {
  return `/v1/topics/${encodeURIComponent(fullName)}`;
}
