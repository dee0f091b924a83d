/**
 * Reads the request body once, enforcing a byte limit, and stores it as `c.var.body`.
 *
 * Both checks matter: Content-Length rejects early without reading, and counting the bytes
 * actually read catches chunked bodies (no Content-Length) and lying headers.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { EdgelogError } from "../protocol/errors.ts";
import { MAX_REQUEST_BYTES } from "../protocol/limits.ts";

export interface BodyReaderOptions {
  /** Largest body accepted, in bytes. @default MAX_REQUEST_BYTES (8 MiB) */
  maxBytes: number;
  /** Methods whose body is read. @default ["POST", "PUT", "PATCH"] */
  methods: readonly string[];
}

const DEFAULTS: BodyReaderOptions = { maxBytes: MAX_REQUEST_BYTES, methods: ["POST", "PUT", "PATCH"] };

export function bodyReader(options: Partial<BodyReaderOptions> = {}): MiddlewareHandler<AppEnv> {
  const { maxBytes, methods } = { ...DEFAULTS, ...options };
  return async (c, next) => {
    if (methods.includes(c.req.method)) c.set("body", await readBody(c.req.raw, maxBytes));
    await next();
  };
}

/**
 * @throws EdgelogError REQUEST_TOO_LARGE (413) when Content-Length or the bytes read exceed maxBytes.
 */
export async function readBody(req: Request, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = (): EdgelogError =>
    new EdgelogError("REQUEST_TOO_LARGE", `The request body exceeds ${maxBytes} bytes.`, { maxRequestBytes: maxBytes });
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge();
  if (req.body === null) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
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
