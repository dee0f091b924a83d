/**
 * Reads the request body once, enforcing a byte limit, and stores it as `c.var.body`.
 *
 * Both checks matter: Content-Length rejects early without reading, and counting the bytes
 * actually read catches chunked bodies (no Content-Length) and lying headers.
 *
 * A body with a valid Content-Length (and no Transfer-Encoding) is read with one native
 * `arrayBuffer()`: the HTTP layer frames such a body by its Content-Length, so no more than
 * the declared (already checked) bytes can arrive, and the size is checked again after the
 * read. This replaces a JS loop of chunk reads that cost ~0.6 ms of gateway CPU per 256 KiB
 * body (docs/benchmarks.md). Other bodies are read chunk by chunk and counted.
 *
 * An over-limit body is drained (read and discarded) up to `maxDrainBytes` before the 413 is
 * answered, and {@link drainUnreadBody} does the same for requests no handler read (404, 405,
 * a GET with a body). Answering while the client is still sending lets the runtime drop the
 * connection: workerd dropped 106 of 640 chunked 8-12 MiB requests, and behind `wrangler dev`'s
 * ProxyWorker 25 of 640 became a plain-text `500 Network connection lost` or a reset, instead
 * of the JSON 413 (issue 15; docs/PROTOCOL.md "Limits"); with the drain, none. Beyond `maxDrainBytes` the stream is cancelled and
 * the answer is left to the runtime: reading without bound would be its own denial of service.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { MAX_REQUEST_BYTES } from "../protocol/limits.ts";
import { log } from "../log/logger.ts";

export interface BodyReaderOptions {
  /** Largest body accepted, in bytes. @default MAX_REQUEST_BYTES (8 MiB) */
  maxBytes: number;
  /** Methods whose body is read. @default ["POST", "PUT", "PATCH"] */
  methods: readonly string[];
  /**
   * Most bytes of a rejected (or unread) body read and discarded before answering, counting
   * what was read already. Cloudflare's edge refuses bodies over 100 MB (Free/Pro plans)
   * before the Worker runs. @default MAX_DRAIN_BYTES (32 MiB)
   */
  maxDrainBytes: number;
}

/** Default bound of {@link BodyReaderOptions.maxDrainBytes}: four times the largest body. */
export const MAX_DRAIN_BYTES = 4 * MAX_REQUEST_BYTES;

/** A Content-Length value: decimal digits only. */
const DECIMAL = /^[0-9]{1,16}$/;

const DEFAULTS: BodyReaderOptions = { maxBytes: MAX_REQUEST_BYTES, methods: ["POST", "PUT", "PATCH"], maxDrainBytes: MAX_DRAIN_BYTES };

export function bodyReader(options: Partial<BodyReaderOptions> = {}): MiddlewareHandler<AppEnv> {
  const { maxBytes, methods, maxDrainBytes } = { ...DEFAULTS, ...options };
  return async (c, next) => {
    if (methods.includes(c.req.method)) c.set("body", await readBody(c.req.raw, maxBytes, maxDrainBytes));
    await next();
  };
}

/**
 * Once the response is ready, drains a request body nobody read (up to `maxDrainBytes`), so
 * the answer does not race the client's upload (see the module comment). Install it first.
 */
export function drainUnreadBody(options: Partial<Pick<BodyReaderOptions, "maxDrainBytes">> = {}): MiddlewareHandler<AppEnv> {
  const { maxDrainBytes } = { ...DEFAULTS, ...options };
  return async (c, next) => {
    await next();
    const req = c.req.raw;
    if (req.body !== null && !req.bodyUsed) {
      const declared = req.headers.get("content-length");
      if (declared !== null && Number(declared) > maxDrainBytes) return;
      await drain(req.body.getReader(), 0, maxDrainBytes).catch(() => undefined);
    }
  };
}

/**
 * Reads and discards the rest of a body until it ends or `maxDrainBytes` in all (counting
 * `alreadyRead`) were seen; then cancels the stream. Resolves true when the body ended.
 */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, alreadyRead: number, maxDrainBytes: number): Promise<boolean> {
  let total = alreadyRead;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return true;
    total += value.byteLength;
    if (total > maxDrainBytes) {
      await reader.cancel();
      return false;
    }
  }
}

/**
 * @param maxDrainBytes most bytes read in all before an over-limit body is answered (the rest is
 *   read and discarded; beyond this the stream is cancelled). @default maxBytes (no draining)
 * @throws EdgelogError REQUEST_TOO_LARGE (413) when Content-Length or the bytes read exceed maxBytes.
 */
export async function readBody(req: Request, maxBytes: number, maxDrainBytes = maxBytes): Promise<Uint8Array> {
  const tooLarge = (): EdgelogError => new EdgelogError("REQUEST_TOO_LARGE", `The request body exceeds ${maxBytes} bytes.`, { maxRequestBytes: maxBytes });
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    if (req.body !== null && Number(declared) <= maxDrainBytes) await drain(req.body.getReader(), 0, maxDrainBytes).catch(() => undefined);
    throw tooLarge();
  }
  if (req.body === null) return new Uint8Array(0);
  try {
    return await readAll(req, req.body, declared, maxBytes, maxDrainBytes, tooLarge);
  } catch (err) {
    if (err instanceof EdgelogError) throw err;
    // The body stream failed: the client aborted mid-upload or its connection was lost (the
    // runtime marks that error retryable, which onError would report as a Durable Object
    // being unavailable). Nobody reads this answer; the log says what happened.
    log.warn("edgelog.request.body_aborted", { error: String(err) });
    throw new EdgelogError("INVALID_REQUEST", "The request body ended before it was complete (the client aborted or the connection was lost).", {
      reason: "body_aborted",
    });
  }
}

async function readAll(req: Request, body: ReadableStream<Uint8Array>, declared: string | null, maxBytes: number, maxDrainBytes: number, tooLarge: () => EdgelogError): Promise<Uint8Array> {
  if (declared !== null && DECIMAL.test(declared) && req.headers.get("transfer-encoding") === null) {
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.byteLength > maxBytes) throw tooLarge();
    return bytes;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      // A client that aborts while we drain gets the same answer (which it will not read).
      await drain(reader, total, maxDrainBytes).catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let pos = 0;
  for (const chunk of chunks) {
    out.set(chunk, pos);
    pos += chunk.byteLength;
  }
  return out;
}
