/**
 * The Kafka bridge's TCP server under bad input and failures, with a scripted Edgelog (the
 * SDK client's `fetch` option) and raw sockets: unsupported APIs and versions get
 * UNSUPPORTED_VERSION on an open connection, oversized and malformed frames close only their
 * own connection, a client that disconnects mid-request crashes nothing and its append still
 * completes, a produce is answered only after Edgelog answered (and with its error when it
 * failed), acks=0 gets no answer.
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { crc32c, encodeBatch } from "../../src/codec/index.ts";
import { startKafkaBridge, type KafkaBridge } from "../../sdk/src/kafka-bridge/index.ts";
import { toKafkaBatches } from "../../sdk/src/kafka-bridge/records.ts";
import { Reader, Writer } from "../../sdk/src/kafka-bridge/wire.ts";

type Handler = (url: URL, init: RequestInit | undefined) => Promise<Response>;

let bridge: KafkaBridge | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.length = 0;
  await bridge?.close();
  bridge = undefined;
});

async function start(handler: Handler, maxFrameBytes?: number, fetchReadAhead?: boolean, partialFrameTimeoutMs?: number, maxDecompressedBytes?: number): Promise<KafkaBridge> {
  const fake: typeof fetch = (input, init) => handler(new URL(String(input)), init);
  bridge = await startKafkaBridge({ url: "http://edgelog.test", fetch: fake, port: 0, maxFrameBytes, fetchReadAhead, partialFrameTimeoutMs, maxDecompressedBytes, log: () => {} });
  return bridge;
}

const json = (status: number, body: unknown): Response => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** A raw Kafka connection: send frames, read answer frames in order. */
class Conn {
  readonly socket: Socket;
  #buf = Buffer.alloc(0);
  #waiters: Array<() => void> = [];
  closed = false;

  constructor(port: number) {
    this.socket = connect(port, "127.0.0.1");
    sockets.push(this.socket);
    this.socket.on("data", (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.socket.on("close", () => {
      this.closed = true;
      for (const w of this.#waiters.splice(0)) w();
    });
    this.socket.on("error", () => {});
  }

  send(apiKey: number, version: number, correlationId: number, body: (w: Writer) => void = () => {}): void {
    const w = new Writer().int32(0).int16(apiKey).int16(version).int32(correlationId).string("test", false);
    body(w);
    const frame = w.finish();
    new DataView(frame.buffer, frame.byteOffset).setInt32(0, frame.length - 4);
    this.socket.write(frame);
  }

  /** The next answer frame (after its size), or null once the connection closed. */
  async next(): Promise<Reader | null> {
    for (;;) {
      if (this.#buf.length >= 4 && this.#buf.length >= 4 + this.#buf.readInt32BE(0)) {
        const size = this.#buf.readInt32BE(0);
        const frame = new Uint8Array(this.#buf.subarray(4, 4 + size));
        this.#buf = this.#buf.subarray(4 + size);
        return new Reader(frame);
      }
      if (this.closed) return null;
      await new Promise<void>((r) => this.#waiters.push(r));
    }
  }
}

async function apiVersionsWorks(port: number): Promise<void> {
  const c = new Conn(port);
  c.send(18, 2, 99);
  const r = (await c.next())!;
  expect(r.int32()).toBe(99);
  expect(r.int16()).toBe(0);
}

function produceBody(acks: number, records: Uint8Array, partition = 0) {
  return (w: Writer) => {
    w.nullableString(null, false).int16(acks).int32(1000);
    w.int32(1).string("orders", false).int32(1).int32(partition).bytes(records, false);
  };
}

const oneBatch = toKafkaBatches(encodeBatch({}, [{ key: null, value: new TextEncoder().encode("v"), headers: [], timestamp: 1 }]));
/** A batch of an idempotent producer (id 9, epoch 0, base sequence `seq`): never merged with others. */
const idempotentBatch = (seq: number): Uint8Array =>
  toKafkaBatches(encodeBatch({ producerId: 9, producerEpoch: 0, baseSequence: seq }, [{ key: null, value: new TextEncoder().encode(`s${seq}`), headers: [], timestamp: 1 }]));

describe("Kafka bridge server", () => {
  it("answers an API it does not implement with UNSUPPORTED_VERSION and keeps the connection", async () => {
    const b = await start(async () => json(500, {}));
    const c = new Conn(b.port);
    c.send(21, 0, 1, (w) => w.int32(0)); // DeleteRecords: not implemented
    const r1 = (await c.next())!;
    expect([r1.int32(), r1.int16()]).toEqual([1, 35]);
    c.send(3, 13, 2); // Metadata v13: beyond the implemented range
    const r2 = (await c.next())!;
    expect([r2.int32(), r2.int16()]).toEqual([2, 35]);
    c.send(18, 2, 3);
    const r3 = (await c.next())!;
    expect([r3.int32(), r3.int16()]).toEqual([3, 0]);
  });

  it("answers an ApiVersions version it does not know with its v0 answer: UNSUPPORTED_VERSION and the list (KIP-511)", async () => {
    const b = await start(async () => json(500, {}));
    const c = new Conn(b.port);
    c.send(18, 9, 5, (w) => w.uvarint(0));
    const r = (await c.next())!;
    expect(r.int32()).toBe(5);
    expect(r.int16()).toBe(35);
    const keys = r.array(false, (r) => [r.int16(), r.int16(), r.int16()]);
    expect(keys).toContainEqual([18, 0, 3]);
    expect(r.remaining).toBe(0);
  });

  it("closes only the connection that sent an oversized or a malformed frame", async () => {
    const b = await start(async () => json(500, {}), 1024);
    const big = new Conn(b.port);
    big.send(18, 2, 1, (w) => w.raw(new Uint8Array(2000)));
    expect(await big.next()).toBeNull();
    const bad = new Conn(b.port);
    bad.send(3, 1, 1, (w) => w.int32(5)); // Metadata: 5 topics announced, none sent
    expect(await bad.next()).toBeNull();
    const negative = new Conn(b.port);
    negative.socket.write(Buffer.from([0xff, 0xff, 0xff, 0xff]));
    expect(await negative.next()).toBeNull();
    await apiVersionsWorks(b.port);
  });

  it("answers a produce only after Edgelog acknowledged the append, with Edgelog's offsets", async () => {
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const b = await start(async (url, init) => {
      expect(url.pathname).toBe("/v1/topics/public/default/orders/partitions/0/records");
      expect((init?.headers as Record<string, string> | undefined)?.["content-type"]).toBe("application/vnd.edgelog.batch");
      events.push("edgelog received");
      await gate;
      events.push("edgelog acked");
      return json(200, { topic: "public/default/orders", partition: 0, baseOffset: 41, lastOffset: 41, logAppendTime: null, logStartOffset: 3 });
    });
    const c = new Conn(b.port);
    c.send(0, 7, 11, produceBody(-1, oneBatch));
    const answer = c.next().then((r) => {
      events.push("client answered");
      return r;
    });
    while (events.length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(events).toEqual(["edgelog received"]);
    release();
    const r = (await answer)!;
    expect(events).toEqual(["edgelog received", "edgelog acked", "client answered"]);
    expect(r.int32()).toBe(11);
    const topics = r.array(false, (r) => ({ name: r.string(false), partitions: r.array(false, (r) => [r.int32(), r.int16(), r.int64(), r.int64(), r.int64()]) }));
    expect(topics).toEqual([{ name: "orders", partitions: [[0, 0, 41, -1, 3]] }]);
  });

  it("answers Edgelog's failure as the Kafka error, with no offset", async () => {
    const b = await start(async () => json(503, { error: { code: "UNAVAILABLE", message: "reset", retriable: true } }));
    const c = new Conn(b.port);
    c.send(0, 7, 12, produceBody(1, oneBatch));
    const r = (await c.next())!;
    expect(r.int32()).toBe(12);
    const topics = r.array(false, (r) => ({ name: r.string(false), partitions: r.array(false, (r) => [r.int32(), r.int16(), r.int64()]) }));
    expect(topics).toEqual([{ name: "orders", partitions: [[0, 6, -1]] }]);
  });

  it("sends no answer for acks=0, and answers the next request", async () => {
    let appended = 0;
    const b = await start(async (url) => {
      expect(url.searchParams.get("acks")).toBe("0");
      appended++;
      return json(202, { topic: "public/default/orders", accepted: 1 });
    });
    const c = new Conn(b.port);
    c.send(0, 7, 1, produceBody(0, oneBatch));
    c.send(18, 2, 2);
    const r = (await c.next())!;
    expect(r.int32()).toBe(2);
    expect(appended).toBe(1);
  });

  it("survives a client that disconnects mid-request: the append still completes, the bridge serves others", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let acked = false;
    const b = await start(async () => {
      await gate;
      acked = true;
      return json(200, { topic: "public/default/orders", partition: 0, baseOffset: 0, lastOffset: 0, logAppendTime: null, logStartOffset: 0 });
    });
    const c = new Conn(b.port);
    c.send(0, 7, 1, produceBody(-1, oneBatch));
    // Half a frame from another client, then gone.
    const partial = new Conn(b.port);
    partial.socket.write(Buffer.from([0, 0, 0, 50, 0, 3]));
    await new Promise((r) => setTimeout(r, 20));
    c.socket.destroy();
    partial.socket.destroy();
    release();
    while (!acked) await new Promise((r) => setTimeout(r, 5));
    await apiVersionsWorks(b.port);
  });

  // A gzip batch of 8 KiB inflates to 8 MiB: one 330 KB request of 40 of them took a bridge
  // from 130 MB to 1.1 GB resident, so a 100 MiB frame could exhaust any machine's memory.
  it("holds at most maxDecompressedBytes of decompressed batches at once, over all partitions: the others wait, then all are appended", async () => {
    const { gzipSync } = await import("node:zlib");
    const { MAX_REQUEST_BYTES } = await import("../../src/protocol/index.ts");
    const records = oneBatch.subarray(61);
    const gz = gzipSync(records);
    const batch = new Uint8Array(61 + gz.length);
    batch.set(oneBatch.subarray(0, 61));
    batch.set(gz, 61);
    const v = new DataView(batch.buffer);
    v.setInt32(8, batch.length - 12);
    v.setInt16(21, 1); // gzip
    v.setUint32(17, crc32c(batch, 21, batch.length));
    const inFlight = new Set<string>();
    let most = 0;
    const gates: Array<() => void> = [];
    const b = await start(
      async (url) => {
        const partition = url.pathname.split("/")[7]!;
        inFlight.add(partition);
        most = Math.max(most, inFlight.size);
        await new Promise<void>((r) => gates.push(r));
        inFlight.delete(partition);
        return json(200, { topic: "public/default/orders", partition: Number(partition), baseOffset: 7, lastOffset: 7, logAppendTime: null, logStartOffset: 0 });
      },
      undefined,
      undefined,
      undefined,
      MAX_REQUEST_BYTES, // room for one batch's decompression at a time
    );
    const c = new Conn(b.port);
    c.send(0, 7, 5, (w) => {
      w.nullableString(null, false).int16(-1).int32(1000);
      w.int32(1).string("orders", false).int32(3);
      for (let p = 0; p < 3; p++) w.int32(p).bytes(batch, false);
    });
    for (let answered = 0; answered < 3; answered++) {
      while (gates.length === 0) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 20)); // room for another append to arrive, if one could
      expect(inFlight.size).toBe(1);
      gates.shift()!();
    }
    const r = (await c.next())!;
    expect(r.int32()).toBe(5);
    const parts = r.array(false, (r) => ({ name: r.string(false), p: r.array(false, (r) => [r.int32(), r.int16(), r.int64(), r.int64(), r.int64()]) }))[0]!.p;
    expect(parts).toEqual([
      [0, 0, 7, -1, 0],
      [1, 0, 7, -1, 0],
      [2, 0, 7, -1, 0],
    ]);
    expect(b.decompressedBytesHeld).toBe(0);
    expect(most).toBe(1);
  });

  it("DecompressionBudget serves waiters first come, first served: a small request does not pass a large one waiting", async () => {
    const { DecompressionBudget } = await import("../../sdk/src/kafka-bridge/handlers.ts");
    const { MAX_REQUEST_BYTES: M } = await import("../../src/protocol/index.ts");
    expect(() => new DecompressionBudget(M - 1)).toThrow(TypeError);
    const budget = new DecompressionBudget(2 * M);
    const order: string[] = [];
    await budget.acquire(M);
    await budget.acquire(M / 2);
    const big = budget.acquire(M).then(() => order.push("big"));
    const small = budget.acquire(1).then(() => order.push("small"));
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual([]);
    budget.release(M / 2); // room for the 1-byte request, but the large one came first
    await big;
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual(["big"]);
    budget.release(M);
    await small;
    expect(order).toEqual(["big", "small"]);
    expect(budget.heldBytes).toBe(M + 1);
  });

  it("runs pipelined produce requests concurrently across partitions, one at a time in order within a partition, answers in request order", async () => {
    const log: string[] = [];
    const gates = new Map<string, () => void>();
    const b = await start(async (url) => {
      const partition = url.pathname.split("/")[7]!;
      const n = log.filter((l) => l.startsWith(`sent p${partition}`)).length;
      const id = `p${partition}#${n}`;
      log.push(`sent ${id}`);
      await new Promise<void>((r) => gates.set(id, r));
      log.push(`acked ${id}`);
      return json(200, { topic: "public/default/orders", partition: Number(partition), baseOffset: n, lastOffset: n, logAppendTime: null, logStartOffset: 0 });
    });
    const c = new Conn(b.port);
    c.send(0, 7, 1, produceBody(-1, idempotentBatch(0), 0));
    c.send(0, 7, 2, produceBody(-1, idempotentBatch(1), 0));
    c.send(0, 7, 3, produceBody(-1, idempotentBatch(0), 1));
    const until = async (cond: () => boolean): Promise<void> => {
      while (!cond()) await new Promise((r) => setTimeout(r, 2));
    };
    // p0's first append and p1's append are in flight together; p0's second waits for the first.
    await until(() => log.length === 2);
    expect(log.sort()).toEqual(["sent p0#0", "sent p1#0"]);
    gates.get("p1#0")!();
    gates.get("p0#0")!();
    await until(() => gates.has("p0#1"));
    expect(log.indexOf("sent p0#1")).toBeGreaterThan(log.indexOf("acked p0#0"));
    gates.get("p0#1")!();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await c.next())!.int32());
    expect(ids).toEqual([1, 2, 3]);
  });

  it("sends the batches that queued behind a partition's append in flight as one append, each request answered its own offset", async () => {
    const { decodeBatch } = await import("../../src/codec/index.ts");
    const bodies: Uint8Array[] = [];
    let release!: () => void;
    const first = new Promise<void>((r) => (release = r));
    const b = await start(async (_url, init) => {
      const body = new Uint8Array(init!.body as ArrayBuffer);
      bodies.push(body);
      if (bodies.length === 1) await first;
      const n = decodeBatch(body).records.length;
      const base = bodies.length === 1 ? 100 : 101;
      return json(200, { topic: "public/default/orders", partition: 0, baseOffset: base, lastOffset: base + n - 1, logAppendTime: null, logStartOffset: 0 });
    });
    const te = new TextEncoder();
    const batch = (v: string, ts: number, n = 1) =>
      toKafkaBatches(
        encodeBatch(
          {},
          Array.from({ length: n }, (_, i) => ({ key: te.encode(`k${i}`), value: te.encode(`${v}${i}`), headers: [{ key: "h", value: te.encode(v) }], timestamp: ts + i })),
        ),
      );
    const c = new Conn(b.port);
    c.send(0, 7, 1, produceBody(-1, batch("a", 1000)));
    while (bodies.length === 0) await new Promise((r) => setTimeout(r, 2));
    c.send(0, 7, 2, produceBody(-1, batch("b", 5000, 2)));
    c.send(0, 7, 3, produceBody(-1, batch("c", 400, 3)));
    await new Promise((r) => setTimeout(r, 30));
    release();
    const offsets: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = (await c.next())!;
      r.int32();
      offsets.push(r.array(false, (r) => ({ name: r.string(false), p: r.array(false, (r) => [r.int32(), r.int16(), r.int64()]) }))[0]!.p[0]![2]!);
    }
    expect(offsets).toEqual([100, 101, 103]);
    expect(bodies).toHaveLength(2);
    const merged = decodeBatch(bodies[1]!);
    const td = new TextDecoder();
    expect(merged.records.map((r) => [r.offset, td.decode(r.key!), td.decode(r.value!), r.timestamp, td.decode(r.headers[0]!.value!)])).toEqual([
      [0, "k0", "b0", 5000, "b"],
      [1, "k1", "b1", 5001, "b"],
      [2, "k0", "c0", 400, "c"],
      [3, "k1", "c1", 401, "c"],
      [4, "k2", "c2", 402, "c"],
    ]);
    expect(merged.header).toMatchObject({ recordCount: 5, lastOffsetDelta: 4, baseTimestamp: 5000, maxTimestamp: 5001, producerId: -1 });
  });

  // A Kafka broker reads a connection's next request only after it sent the answer to the
  // last one; without a bound, a client pipelining small Fetch requests and never reading had
  // the bridge queue every answer in memory (here 30 requests of 61 bytes: 30 MB).
  it("serves no further request on a connection while its unsent answers pass the limit; all are answered, in order, once the client reads", async () => {
    const stored = encodeBatch({}, [{ key: null, value: new Uint8Array(1 << 20).fill(7), headers: [], timestamp: 1 }]);
    let served = 0;
    const b = await start(
      async () => {
        served++;
        return new Response(stored, { status: 200, headers: { "edgelog-next-offset": "1", "edgelog-high-watermark": "1", "edgelog-log-start-offset": "0" } });
      },
      undefined,
      false,
    );
    const c = new Conn(b.port);
    c.socket.pause(); // a client that sends and never reads
    const requests = 30;
    for (let i = 0; i < requests; i++)
      c.send(1, 4, i, (w) => {
        w.int32(-1)
          .int32(0)
          .int32(1)
          .int32(50 << 20)
          .int8(0);
        w.int32(1)
          .string("orders", false)
          .int32(1)
          .int32(0)
          .int64(0)
          .int32(16 << 20);
      });
    // Wait until the bridge stops serving (no new Edgelog fetch for 500 ms).
    for (let last = -1; served !== last; ) {
      last = served;
      await new Promise((r) => setTimeout(r, 500));
    }
    // What the kernel's socket buffers absorb plus the bridge's limit: far below every request.
    expect(served).toBeLessThan(requests / 2);
    c.socket.resume();
    for (let i = 0; i < requests; i++) expect((await c.next())!.int32()).toBe(i);
    expect(served).toBe(requests);
  }, 30_000);

  it("maps Fetch's max_wait_ms onto Edgelog's long-poll: a second round waits on every partition and answers with the first that has data", async () => {
    const stored = encodeBatch({ baseOffset: 5 }, [{ key: null, value: new TextEncoder().encode("late"), headers: [], timestamp: 7 }]);
    const polls: string[] = [];
    const b = await start(
      async (url, init) => {
        const partition = url.pathname.split("/")[7]!;
        const wait = Number(url.searchParams.get("maxWaitMs"));
        polls.push(`p${partition} wait=${wait > 0 ? "yes" : "no"} offset=${url.searchParams.get("offset")}`);
        const empty = (next: number) =>
          new Response(new Uint8Array(0), { status: 200, headers: { "edgelog-next-offset": String(next), "edgelog-high-watermark": String(next), "edgelog-log-start-offset": "0" } });
        if (partition === "2")
          return json(416, { error: { code: "OFFSET_OUT_OF_RANGE", message: "x", retriable: false, details: { offset: 99, logStartOffset: 0, logEndOffset: 4, highWatermark: 4 } } });
        if (wait === 0) return empty(5);
        if (partition === "1") {
          await new Promise((r) => setTimeout(r, 20));
          return new Response(stored, { status: 200, headers: { "edgelog-next-offset": "6", "edgelog-high-watermark": "6", "edgelog-log-start-offset": "0" } });
        }
        // partition 0 has nothing: it waits until the bridge aborts its poll
        await new Promise<void>((_, reject) => init!.signal!.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
        return empty(5);
      },
      undefined,
      false,
    ); // without read-ahead: this test counts the polls of one fetch
    const fetchBody = (partitions: Array<[number, number]>) => (w: Writer) => {
      w.int32(-1)
        .int32(60_000)
        .int32(1)
        .int32(50 << 20)
        .int8(0)
        .int32(0)
        .int32(-1);
      w.int32(1)
        .string("orders", false)
        .array(partitions, false, (w, [p, offset]) =>
          w
            .int32(p)
            .int32(-1)
            .int64(offset)
            .int64(-1)
            .int32(1 << 20),
        );
      w.int32(0).string("", false);
    };
    const c = new Conn(b.port);
    c.send(
      1,
      11,
      21,
      fetchBody([
        [0, 5],
        [1, 5],
      ]),
    );
    const r = (await c.next())!;
    expect([r.int32(), r.int32(), r.int16(), r.int32()]).toEqual([21, 0, 0, 0]);
    const parts = r.array(false, (r) => ({
      topic: r.string(false),
      partitions: r.array(false, (r) => ({
        p: r.int32(),
        err: r.int16(),
        hw: r.int64(),
        lso: r.int64(),
        start: r.int64(),
        aborted: r.int32(),
        replica: r.int32(),
        records: r.nullableBytes(false),
      })),
    }));
    const byP = parts[0]!.partitions;
    expect(byP.map((x) => [x.p, x.err, x.hw, x.records?.length ?? null])).toEqual([
      [0, 0, 5, 0],
      [1, 0, 6, stored.length],
    ]);
    expect(polls.sort()).toEqual(["p0 wait=no offset=5", "p0 wait=yes offset=5", "p1 wait=no offset=5", "p1 wait=yes offset=5"]);
    // The records are Kafka's v2 batch: magic 2 at byte 16, base offset 5.
    const rec = byP[1]!.records!;
    expect(rec[16]).toBe(2);
    expect(new DataView(rec.buffer, rec.byteOffset).getBigInt64(0)).toBe(5n);

    // An offset out of range is that partition's error (1), with the high watermark, no wait.
    c.send(1, 11, 22, fetchBody([[2, 99]]));
    const r2 = (await c.next())!;
    r2.int32();
    r2.int32();
    r2.int16();
    r2.int32();
    const p2 = r2.array(false, (r) => ({ topic: r.string(false), partitions: r.array(false, (r) => [r.int32(), r.int16(), r.int64()]) }));
    expect(p2[0]!.partitions).toEqual([[2, 1, 4]]);
  });

  it("with fetchReadAhead, reads the next range ahead after answering records and answers the next fetch from it; an empty read-ahead is fetched again", async () => {
    const te = new TextEncoder();
    const batchAt = (offset: number) => encodeBatch({ baseOffset: offset }, [{ key: null, value: te.encode(`v${offset}`), headers: [], timestamp: 7 }]);
    const calls: number[] = [];
    let end = 7; // records 5 and 6 exist
    const b = await start(
      async (url) => {
        const offset = Number(url.searchParams.get("offset"));
        calls.push(offset);
        const headers = (next: number) => ({ "edgelog-next-offset": String(next), "edgelog-high-watermark": String(end), "edgelog-log-start-offset": "0" });
        if (offset >= end) return new Response(new Uint8Array(0), { status: 200, headers: headers(offset) });
        return new Response(batchAt(offset), { status: 200, headers: headers(offset + 1) });
      },
      undefined,
      true,
    );
    const c = new Conn(b.port);
    const fetchAt = async (correlationId: number, offset: number): Promise<number[]> => {
      c.send(1, 11, correlationId, (w) => {
        w.int32(-1)
          .int32(0)
          .int32(1)
          .int32(50 << 20)
          .int8(0)
          .int32(0)
          .int32(-1); // max_wait 0
        w.int32(1)
          .string("orders", false)
          .int32(1)
          .int32(0)
          .int32(-1)
          .int64(offset)
          .int64(-1)
          .int32(1 << 20);
        w.int32(0).string("", false);
      });
      const r = (await c.next())!;
      r.int32();
      r.int32();
      r.int16();
      r.int32();
      const [t] = r.array(false, (r) => ({
        topic: r.string(false),
        partitions: r.array(false, (r) => {
          r.int32();
          r.int16();
          r.int64();
          r.int64();
          r.int64();
          r.int32();
          r.int32();
          return r.nullableBytes(false);
        }),
      }));
      const records = t!.partitions[0];
      // base offsets of the Kafka batches answered
      return records === null || records === undefined || records.length === 0 ? [] : [Number(new DataView(records.buffer, records.byteOffset).getBigInt64(0))];
    };
    expect(await fetchAt(1, 5)).toEqual([5]);
    expect(calls).toEqual([5, 6]); // 6: read ahead
    expect(await fetchAt(2, 6)).toEqual([6]);
    expect(calls).toEqual([5, 6, 7]); // 6 answered from the read-ahead; 7 read ahead (empty)
    end = 8; // a record arrives: the empty read-ahead is not trusted
    expect(await fetchAt(3, 7)).toEqual([7]);
    expect(calls).toEqual([5, 6, 7, 7, 8]);
    // A fetch for another offset ignores the read-ahead.
    expect(await fetchAt(4, 5)).toEqual([5]);
    expect(calls.slice(5)).toEqual([5, 6]);
  });

  it("closes a connection whose partly received frame gets no new byte for partialFrameTimeoutMs; idle connections stay open", async () => {
    const b = await start(async () => json(500, {}), undefined, undefined, 50);
    const idle = new Conn(b.port);
    await apiVersionsWorks(b.port);
    const half = new Conn(b.port);
    // ApiVersions v2 frame of 14 bytes, of which only the size and 6 bytes are sent.
    half.socket.write(Buffer.from([0, 0, 0, 14, 0, 18, 0, 2, 0, 0]));
    expect(await half.next()).toBeNull(); // closed by the bridge
    // The idle connection (no partial frame) outlived that timeout and still answers.
    idle.send(18, 2, 5);
    const r = (await idle.next())!;
    expect([r.int32(), r.int16()]).toEqual([5, 0]);
  });
});
