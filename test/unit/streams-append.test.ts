import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AppendRequest, type AppendStreamState, decideAppend, decideProducer } from "../../src/streams/append.ts";
import { createMatches, type StreamConfig } from "../../src/streams/create.ts";
import { expiryDeadlineMs, forkExpiry, isExpired, remainingLifetimeMs, touchPersistIntervalMs } from "../../src/streams/expiry.ts";

describe("decideProducer (PROTOCOL.md 5.2.1)", () => {
  it("starts an unknown producer at seq 0 in any epoch, else reports a gap from 0", () => {
    expect(decideProducer(null, 0, 0)).toEqual({ kind: "accept", state: { epoch: 0, lastSeq: 0 } });
    expect(decideProducer(null, 5, 0)).toEqual({ kind: "accept", state: { epoch: 5, lastSeq: 0 } });
    expect(decideProducer(null, 0, 3)).toEqual({ kind: "gap", expectedSeq: 0, receivedSeq: 3 });
  });

  it("fences lower epochs and requires seq 0 for higher ones", () => {
    expect(decideProducer({ epoch: 2, lastSeq: 7 }, 1, 0)).toEqual({ kind: "stale-epoch", currentEpoch: 2 });
    expect(decideProducer({ epoch: 2, lastSeq: 7 }, 3, 0)).toEqual({ kind: "accept", state: { epoch: 3, lastSeq: 0 } });
    expect(decideProducer({ epoch: 2, lastSeq: 7 }, 3, 5)).toEqual({ kind: "epoch-seq-not-zero" });
  });

  it("deduplicates, accepts the next seq and reports gaps within an epoch", () => {
    expect(decideProducer({ epoch: 0, lastSeq: 2 }, 0, 1)).toEqual({ kind: "duplicate", lastSeq: 2 });
    expect(decideProducer({ epoch: 0, lastSeq: 2 }, 0, 2)).toEqual({ kind: "duplicate", lastSeq: 2 });
    expect(decideProducer({ epoch: 0, lastSeq: 2 }, 0, 3)).toEqual({ kind: "accept", state: { epoch: 0, lastSeq: 3 } });
    expect(decideProducer({ epoch: 0, lastSeq: 2 }, 0, 5)).toEqual({ kind: "gap", expectedSeq: 3, receivedSeq: 5 });
  });

  it("accepts a gapless sequence and dedupes any replay of it", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.nat(), (n, replayPick) => {
        let state = null as { epoch: number; lastSeq: number } | null;
        for (let seq = 0; seq < n; seq++) {
          const d = decideProducer(state, 0, seq);
          expect(d.kind).toBe("accept");
          if (d.kind === "accept") state = d.state;
        }
        expect(decideProducer(state, 0, replayPick % n)).toEqual({ kind: "duplicate", lastSeq: n - 1 });
      }),
    );
  });
});

const open: AppendStreamState = { contentType: "text/plain", closed: false, closedBy: null, streamSeq: null, producer: null };
const req: AppendRequest = { contentType: "text/plain", hasBody: true, bodyError: null, close: false, streamSeq: null, producer: null };

describe("decideAppend precedence (PROTOCOL.md 5.2)", () => {
  it("writes a plain append", () => {
    expect(decideAppend(open, req)).toEqual({ kind: "write", close: false, producer: null, streamSeq: null });
  });

  it("checks closure first, and treats retries of the closing tuple and bare re-closes as no-ops", () => {
    const closed: AppendStreamState = { ...open, closed: true, closedBy: { id: "p", epoch: 0, seq: 0 } };
    expect(decideAppend(closed, { ...req, contentType: "application/json" })).toMatchObject({ kind: "reject", code: "STREAM_CLOSED", closed: true });
    expect(decideAppend(closed, { ...req, producer: { id: "p", epoch: 0, seq: 0 } })).toEqual({ kind: "noop", closed: true, producerSeq: 0 });
    expect(decideAppend(closed, { ...req, producer: { id: "p", epoch: 0, seq: 1 } })).toMatchObject({ code: "STREAM_CLOSED" });
    expect(decideAppend(closed, { ...req, hasBody: false, contentType: null, close: true })).toEqual({ kind: "noop", closed: true, producerSeq: null });
    expect(decideAppend(closed, { ...req, hasBody: true, close: true })).toMatchObject({ code: "STREAM_CLOSED" });
  });

  it("rejects empty bodies unless closing, and missing or mismatched content types", () => {
    expect(decideAppend(open, { ...req, hasBody: false })).toMatchObject({ code: "EMPTY_BATCH" });
    expect(decideAppend(open, { ...req, contentType: null })).toMatchObject({ code: "INVALID_REQUEST" });
    expect(decideAppend(open, { ...req, contentType: "application/json" })).toMatchObject({ code: "CONTENT_TYPE_MISMATCH" });
    expect(decideAppend(open, { ...req, contentType: "TEXT/PLAIN; charset=utf-8" }).kind).toBe("write");
    // Close-only ignores the content type entirely.
    expect(decideAppend(open, { ...req, hasBody: false, contentType: "application/json", close: true })).toEqual({
      kind: "write",
      close: true,
      producer: null,
      streamSeq: null,
    });
  });

  it("reports body errors after content type, before producers", () => {
    const bodyError = { code: "INVALID_JSON" as const, message: "bad" };
    expect(decideAppend(open, { ...req, bodyError, contentType: "application/json" })).toMatchObject({ code: "CONTENT_TYPE_MISMATCH" });
    expect(decideAppend(open, { ...req, bodyError, producer: { id: "p", epoch: 0, seq: 9 } })).toMatchObject({ code: "INVALID_JSON" });
  });

  it("maps producer outcomes to codes and answer facts", () => {
    const s = { ...open, producer: { epoch: 1, lastSeq: 4 } };
    expect(decideAppend(s, { ...req, producer: { id: "p", epoch: 0, seq: 0 } })).toMatchObject({ code: "STALE_PRODUCER_EPOCH", currentEpoch: 1 });
    expect(decideAppend(s, { ...req, producer: { id: "p", epoch: 2, seq: 1 } })).toMatchObject({ code: "INVALID_PRODUCER_SEQUENCE" });
    expect(decideAppend(s, { ...req, producer: { id: "p", epoch: 1, seq: 7 } })).toMatchObject({ code: "OUT_OF_ORDER_SEQUENCE_NUMBER", expectedSeq: 5, receivedSeq: 7 });
    expect(decideAppend(s, { ...req, producer: { id: "p", epoch: 1, seq: 3 } })).toEqual({ kind: "noop", closed: false, producerSeq: 4 });
    expect(decideAppend(s, { ...req, producer: { id: "p", epoch: 1, seq: 5 } })).toEqual({ kind: "write", close: false, producer: { epoch: 1, lastSeq: 5 }, streamSeq: null });
  });

  it("deduplicates producers before checking Stream-Seq, then enforces byte-wise Stream-Seq order", () => {
    const s = { ...open, streamSeq: "app-001", producer: { epoch: 0, lastSeq: 0 } };
    expect(decideAppend(s, { ...req, streamSeq: "app-001", producer: { id: "p", epoch: 0, seq: 0 } }).kind).toBe("noop");
    expect(decideAppend(s, { ...req, streamSeq: "app-001" })).toMatchObject({ code: "STREAM_SEQ_CONFLICT" });
    expect(decideAppend({ ...open, streamSeq: "2" }, { ...req, streamSeq: "10" })).toMatchObject({ code: "STREAM_SEQ_CONFLICT" });
    expect(decideAppend({ ...open, streamSeq: "09" }, { ...req, streamSeq: "10" })).toEqual({ kind: "write", close: false, producer: null, streamSeq: "10" });
  });
});

describe("createMatches (idempotent PUT)", () => {
  const existing: StreamConfig = {
    contentType: "application/json",
    ttlSeconds: 3600,
    expiresAtMs: null,
    expiryInherited: false,
    closed: false,
    forkSource: null,
    forkAnchor: null,
    forkSubOffset: 0,
  };
  const same = { contentType: "APPLICATION/JSON", ttlSeconds: 3600, expiresAtMs: null, closed: false, fork: null };

  it("matches the same config by content-type essence", () => {
    expect(createMatches(existing, same)).toBe(true);
    expect(createMatches(existing, { ...same, contentType: "text/plain" })).toBe(false);
    expect(createMatches(existing, { ...same, ttlSeconds: 7200 })).toBe(false);
    expect(createMatches(existing, { ...same, closed: true })).toBe(false);
  });

  it("defaults an omitted content type to application/octet-stream", () => {
    expect(createMatches({ ...existing, contentType: "application/octet-stream", ttlSeconds: null }, { ...same, contentType: null, ttlSeconds: null })).toBe(true);
  });

  it("compares fork source, anchor (when named) and sub-offset, and accepts inherited expiry", () => {
    const fork: StreamConfig = { ...existing, forkSource: "src", forkAnchor: 4, forkSubOffset: 2, expiryInherited: true };
    const f = { source: "src", anchor: 4, subOffset: 2 };
    expect(createMatches(fork, { ...same, contentType: null, ttlSeconds: null, fork: f })).toBe(true);
    expect(createMatches(fork, { ...same, ttlSeconds: null, fork: { ...f, anchor: null } })).toBe(true);
    expect(createMatches(fork, { ...same, ttlSeconds: null, fork: { ...f, anchor: 3 } })).toBe(false);
    expect(createMatches(fork, { ...same, ttlSeconds: null, fork: { ...f, subOffset: 3 } })).toBe(false);
    expect(createMatches(fork, { ...same, ttlSeconds: null, fork: { ...f, source: "other" } })).toBe(false);
    expect(createMatches(fork, { ...same, ttlSeconds: null, fork: null })).toBe(false);
  });
});

describe("expiry", () => {
  it("takes the earlier of the sliding TTL and Expires-At", () => {
    expect(expiryDeadlineMs({ ttlSeconds: null, expiresAtMs: null }, 0)).toBeNull();
    expect(expiryDeadlineMs({ ttlSeconds: 2, expiresAtMs: null }, 1000)).toBe(3000);
    expect(expiryDeadlineMs({ ttlSeconds: null, expiresAtMs: 500 }, 1000)).toBe(500);
    expect(isExpired({ ttlSeconds: 2, expiresAtMs: null }, 1000, 2999)).toBe(false);
    expect(isExpired({ ttlSeconds: 2, expiresAtMs: null }, 1000, 3000)).toBe(true);
    expect(isExpired({ ttlSeconds: 0, expiresAtMs: null }, 1000, 1000)).toBe(true);
    expect(remainingLifetimeMs({ ttlSeconds: 2, expiresAtMs: null }, 1000, 2500)).toBe(500);
  });

  it("persists sliding-TTL touches at a tenth of the window, at most every second", () => {
    expect(touchPersistIntervalMs(1)).toBe(100);
    expect(touchPersistIntervalMs(3600)).toBe(1000);
  });

  it("follows the fork inheritance table (PROTOCOL.md 4.2)", () => {
    const none = { ttlSeconds: null, expiresAtMs: null };
    const ttl = { ttlSeconds: 60, expiresAtMs: null };
    const at = { ttlSeconds: null, expiresAtMs: 9e12 };
    expect(forkExpiry(none, none)).toEqual(none);
    expect(forkExpiry(ttl, none)).toEqual(ttl);
    expect(forkExpiry(at, none)).toEqual(at);
    expect(forkExpiry(none, ttl)).toEqual(ttl);
    expect(forkExpiry({ ttlSeconds: 5, expiresAtMs: null }, ttl)).toEqual({ ttlSeconds: 5, expiresAtMs: null });
    expect(forkExpiry(at, ttl)).toEqual(at);
    expect(forkExpiry(none, at)).toEqual(at);
    expect(forkExpiry(ttl, at)).toEqual(ttl);
    expect(forkExpiry({ ttlSeconds: null, expiresAtMs: 1 }, at)).toEqual({ ttlSeconds: null, expiresAtMs: 1 });
  });
});
