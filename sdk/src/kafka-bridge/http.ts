/**
 * A `fetch` for the bridge's appends: requests whose body is a `Uint8Array` (the binary
 * produce route, PROTOCOL.md) go out through node:http(s) with keep-alive sockets, the body
 * handed to the socket as it is; every other request goes to `globalThis.fetch`.
 *
 * Why: Node's fetch (undici) copies a `Uint8Array` body twice before it reaches the socket
 * (WHATWG body extraction, then a copy of each stream chunk) and drives it through a
 * ReadableStream; at the bridge's ~1 MB of records per produce request that was about a fifth
 * of its CPU, and the copies' garbage a good share of its GC time (docs/benchmarks.md, Kafka
 * bridge). Answers to these requests are small JSON documents (a produce summary or an error
 * body): they are read in full and handed back as a `Response`, so the SDK client's handling
 * (status, error bodies, throttle headers, timeouts through `signal`) is unchanged.
 *
 * Differences from `fetch` on that path: redirects are not followed (the produce route never
 * redirects; a 3xx comes back as it is and the SDK client reports it as an error), and the
 * body is sent with a Content-Length, never chunked.
 *
 * Errors: network failures reject with a `TypeError("fetch failed")` whose `cause` is the socket
 * error, as Node's fetch does (errors.ts errorFromNetwork reads the cause); an aborted `signal`
 * rejects with its reason.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

const httpAgent = new HttpAgent({ keepAlive: true });
const httpsAgent = new HttpsAgent({ keepAlive: true });

/** Statuses whose Response must have a null body (Fetch standard, "null body status"). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

function headersOf(init: RequestInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init?.headers).forEach((v, k) => {
    out[k] = v;
  });
  return out;
}

function answerOf(res: IncomingMessage, body: Uint8Array): Response {
  const headers = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  const status = res.statusCode ?? 0;
  return new Response(NULL_BODY_STATUS.has(status) ? null : (body as Uint8Array<ArrayBuffer>), { status, statusText: res.statusMessage ?? "", headers });
}

/**
 * `fetch` with a node:http(s) path for `Uint8Array` bodies (see the module comment).
 * @throws TypeError("fetch failed", { cause }) on a network error; `signal.reason` when aborted.
 */
export const bridgeFetch: typeof fetch = (input, init) => {
  const body = init?.body;
  if (!(body instanceof Uint8Array) || typeof input !== "string") return globalThis.fetch(input, init);
  const secure = input.startsWith("https:");
  if (!secure && !input.startsWith("http:")) return globalThis.fetch(input, init);
  const signal = init?.signal ?? undefined;
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const headers = headersOf(init);
    headers["content-length"] = String(body.byteLength);
    const req = (secure ? httpsRequest : httpRequest)(input, { method: init?.method ?? "POST", headers, agent: secure ? httpsAgent : httpAgent });
    const onAbort = (): void => {
      req.destroy();
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = (): void => signal?.removeEventListener("abort", onAbort);
    req.once("error", (e) => {
      done();
      reject(new TypeError("fetch failed", { cause: e }));
    });
    req.once("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.once("error", (e) => {
        done();
        reject(new TypeError("fetch failed", { cause: e }));
      });
      res.once("end", () => {
        done();
        // Copied into a buffer of its own: a socket chunk (and a small Buffer.concat) is a
        // view into a larger shared buffer, which the Response was seen copying at some cost.
        const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
        let at = 0;
        for (const c of chunks) {
          body.set(c, at);
          at += c.length;
        }
        resolve(answerOf(res, body));
      });
    });
    req.end(body);
  });
};
