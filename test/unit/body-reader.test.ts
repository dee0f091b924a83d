// The request body reader (src/middleware/body.ts, issue 15): an over-limit chunked body is
// drained up to maxDrainBytes before REQUEST_TOO_LARGE (then cancelled), and a body stream that
// fails mid-upload (client abort) is reported as such, not as a Durable Object being unavailable.
import { afterEach, describe, expect, it, vi } from "vitest";
import { readBody } from "../../src/middleware/body.ts";
import { EdgelogError } from "../../src/protocol/errors.ts";

const KIB = 1024;

/** A chunked request of `chunks` pieces of `chunkBytes`; counts pulls and cancellation. */
function chunkedRequest(chunks: number, chunkBytes: number, failAt: number | null = null) {
  const seen = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (failAt !== null && seen.pulled === failAt) {
        // What workerd's body stream does when the client goes away mid-upload.
        ctl.error(Object.assign(new Error("Network connection lost."), { retryable: true }));
        return;
      }
      if (seen.pulled === chunks) return ctl.close();
      seen.pulled++;
      ctl.enqueue(new Uint8Array(chunkBytes));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  const req = new Request("http://edgelog.test/v1/topics", { method: "POST", body, duplex: "half" } as RequestInit);
  return { req, seen };
}

async function codeOf(p: Promise<unknown>): Promise<{ code: string; details: unknown }> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(EdgelogError);
    return { code: (e as EdgelogError).code, details: (e as EdgelogError).details };
  }
  throw new Error("expected a rejection");
}

afterEach(() => vi.restoreAllMocks());

describe("readBody", () => {
  it("reads a chunked body within the limit whole", async () => {
    const { req } = chunkedRequest(4, 16 * KIB);
    expect((await readBody(req, 64 * KIB, 256 * KIB)).byteLength).toBe(64 * KIB);
  });

  it("drains an over-limit chunked body to its end (within maxDrainBytes) before REQUEST_TOO_LARGE", async () => {
    const { req, seen } = chunkedRequest(10, 16 * KIB);
    expect(await codeOf(readBody(req, 64 * KIB, 256 * KIB))).toEqual({ code: "REQUEST_TOO_LARGE", details: { maxRequestBytes: 64 * KIB } });
    expect(seen).toEqual({ pulled: 10, cancelled: false });
  });

  it("stops draining at maxDrainBytes and cancels the rest", async () => {
    const { req, seen } = chunkedRequest(1000, 16 * KIB);
    expect((await codeOf(readBody(req, 64 * KIB, 256 * KIB))).code).toBe("REQUEST_TOO_LARGE");
    expect(seen.cancelled).toBe(true);
    expect(seen.pulled).toBeLessThan(1000);
    expect(seen.pulled * 16 * KIB).toBeGreaterThan(256 * KIB);
  });

  it("a body that fails mid-upload is INVALID_REQUEST body_aborted, logged as a client abort", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const { req } = chunkedRequest(10, 16 * KIB, 3);
    expect(await codeOf(readBody(req, 1024 * KIB))).toEqual({ code: "INVALID_REQUEST", details: { reason: "body_aborted" } });
    expect(warn).toHaveBeenCalledTimes(1);
    // One structured line (src/log/): the event, never the body.
    expect(JSON.parse(String(warn.mock.calls[0]?.[0]))).toMatchObject({ level: "warn", event: "edgelog.request.body_aborted" });
  });
});
