/**
 * An in-memory Edgelog server behind a `fetch` function, implementing just enough of
 * docs/PROTOCOL.md for the SDK's unit tests: topics, binary produce with KIP-98 idempotence,
 * binary fetch (whole stored batches, long-poll), ListOffsets and POST /v1/producers.
 *
 * Faults are scripted per produce request (`produceScript`), so tests assert exact attempt
 * counts. Every request is recorded in `requests`, every produce body in `produced`.
 */
import { Readable, Writable } from "node:stream";
import type { CliIo } from "../../sdk/src/cli/index.ts";
import { decodeBatches, encodeBatch, recordSizeBytes, rewriteBatchHeader, type BatchHeader, type LogRecord, type ProducerRecord } from "../../src/codec/index.ts";
import { BATCH_MEDIA_TYPE, PRODUCE_SUMMARY_MEDIA_TYPE, DEFAULT_TOPIC_CONFIGS, ERRORS, type ErrorCode, type ProduceRecordResult } from "../../src/protocol/index.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: Uint8Array;
}

export interface ProducedBatch {
  topic: string;
  partition: number;
  header: BatchHeader;
  records: LogRecord[];
  bytes: Uint8Array;
}

/** What the server does with the next produce request. */
export type ProduceStep =
  | "ok"
  /** Answer this error (with these details) without appending (a rejected request changes no state). */
  | { code: ErrorCode; status?: number; details?: Record<string, unknown> }
  /** Append, then answer this error: the acknowledgement is lost (tests idempotent retries). */
  | { code: ErrorCode; appendFirst: true }
  /** Answer a raw non-JSON body with this status. */
  | { rawStatus: number; rawBody: string };

interface StoredBatch {
  baseOffset: number;
  count: number;
  bytes: Uint8Array;
}

interface Kept {
  epoch: number;
  baseSequence: number;
  count: number;
  results: ProduceRecordResult[];
}

class PartitionLog {
  batches: StoredBatch[] = [];
  records: LogRecord[] = [];
  logStartOffset = 0;
  producers = new Map<number, { epoch: number; lastSequence: number; kept: Kept[] }>();
  waiters: Array<() => void> = [];

  get logEndOffset(): number {
    const last = this.batches[this.batches.length - 1];
    return last === undefined ? this.logStartOffset : last.baseOffset + last.count;
  }

  wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

interface FakeTopic {
  partitions: PartitionLog[];
  maxMessageBytes: number;
}

class HttpError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, details?: Record<string, unknown>) {
    super(code);
    this.code = code;
    this.details = details;
  }
}

function shortName(name: string): string {
  return name.startsWith("public/default/") ? name.slice("public/default/".length) : name;
}

export class FakeServer {
  readonly topics = new Map<string, FakeTopic>();
  readonly requests: RecordedRequest[] = [];
  readonly produced: ProducedBatch[] = [];
  produceScript: ProduceStep[] = [];
  nextProducerId = 1000;

  /** Creates a topic directly (no request recorded). */
  addTopic(name: string, partitions: number, maxMessageBytes: number = DEFAULT_TOPIC_CONFIGS["max.message.bytes"]): void {
    this.topics.set(shortName(name), { partitions: Array.from({ length: partitions }, () => new PartitionLog()), maxMessageBytes });
  }

  /** Appends records directly as one stored batch (no request recorded). */
  append(topic: string, partition: number, records: ProducerRecord[]): ProduceRecordResult[] {
    return this.#append(topic, partition, encodeBatch({}, records)).results;
  }

  log(topic: string, partition: number): PartitionLog {
    const t = this.topics.get(shortName(topic));
    const p = t?.partitions[partition];
    if (p === undefined) throw new Error(`no partition ${topic}[${partition}]`);
    return p;
  }

  /** Requests matching a method and a path pattern. */
  count(method: string, path: RegExp): number {
    return this.requests.filter((r) => r.method === method && path.test(r.path)).length;
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const method = init?.method ?? "GET";
    const headers = new Headers(init?.headers);
    const raw = init?.body;
    const body = raw === undefined || raw === null ? new Uint8Array(0) : typeof raw === "string" ? new TextEncoder().encode(raw) : new Uint8Array(raw as Uint8Array);
    const path = url.pathname.split("/").map(decodeURIComponent).join("/");
    this.requests.push({ method, path, query: url.searchParams, headers, body });
    try {
      return await this.#route(method, path, url.searchParams, headers, body, init?.signal ?? undefined);
    } catch (e) {
      if (e instanceof HttpError) return errorResponse(e.code, ERRORS[e.code].httpStatus, e.details);
      throw e;
    }
  };

  async #route(method: string, path: string, query: URLSearchParams, headers: Headers, body: Uint8Array, signal: AbortSignal | undefined): Promise<Response> {
    if (method === "POST" && path === "/v1/producers") {
      return json(200, { producerId: this.nextProducerId++, producerEpoch: 0 });
    }
    if (path === "/v1/topics") {
      if (method === "GET") return json(200, { topics: [...this.topics.keys()].sort().map((n) => this.#describe(n)) });
      const req = JSON.parse(new TextDecoder().decode(body)) as { name: string; partitions?: number };
      if (this.topics.has(shortName(req.name))) throw new HttpError("TOPIC_ALREADY_EXISTS");
      this.addTopic(req.name, req.partitions ?? 1);
      return json(201, this.#describe(shortName(req.name)));
    }
    const m = /^\/v1\/topics\/(.+?)(?:\/partitions\/(\d+)\/(records|offsets))?$/.exec(path);
    if (m === null) throw new HttpError("NOT_FOUND");
    const topicName = shortName(m[1]!);
    const topic = this.topics.get(topicName);
    if (topic === undefined) throw new HttpError("UNKNOWN_TOPIC_OR_PARTITION");
    if (m[2] === undefined) {
      if (method === "GET") return json(200, this.#describe(topicName));
      if (method === "DELETE") {
        this.topics.delete(topicName);
        return new Response(null, { status: 204 });
      }
      throw new HttpError("METHOD_NOT_ALLOWED");
    }
    const partition = Number(m[2]);
    const log = topic.partitions[partition];
    if (log === undefined) throw new HttpError("UNKNOWN_TOPIC_OR_PARTITION");
    if (m[3] === "records" && method === "POST") return this.#produce(topicName, partition, query, headers, body);
    if (m[3] === "records") return this.#fetch(log, query, headers, signal);
    return this.#offsets(topicName, partition, log, query);
  }

  #describe(name: string): unknown {
    const t = this.topics.get(name)!;
    return {
      name: `public/default/${name}`,
      tenant: "public",
      namespace: "default",
      topic: name,
      topicId: `id-${name}`,
      partitions: t.partitions.length,
      configs: { ...DEFAULT_TOPIC_CONFIGS, "max.message.bytes": t.maxMessageBytes },
      createdAt: 0,
      partitionDetails: t.partitions.map((p, partition) => ({
        partition,
        logStartOffset: p.logStartOffset,
        highWatermark: p.logEndOffset,
        logEndOffset: p.logEndOffset,
        recordCount: p.logEndOffset - p.logStartOffset,
        bytes: p.batches.reduce((n, b) => n + b.bytes.length, 0),
      })),
    };
  }

  #produce(topic: string, partition: number, query: URLSearchParams, headers: Headers, body: Uint8Array): Response {
    if (headers.get("content-type") !== BATCH_MEDIA_TYPE) throw new HttpError("UNSUPPORTED_MEDIA_TYPE");
    const decoded = decodeBatches(body);
    if (decoded.length !== 1) throw new HttpError("INVALID_BATCH");
    const { header, records } = decoded[0]!;
    this.produced.push({ topic, partition, header, records, bytes: body });
    const step = this.produceScript.shift() ?? "ok";
    if (step !== "ok" && "rawStatus" in step) return new Response(step.rawBody, { status: step.rawStatus, headers: { "content-type": "text/html" } });
    if (step !== "ok" && !("appendFirst" in step)) return errorResponse(step.code, step.status ?? ERRORS[step.code].httpStatus, step.details);
    const t = this.topics.get(topic)!;
    for (const [index, r] of records.entries()) {
      const sizeBytes = recordSizeBytes(r);
      if (sizeBytes > t.maxMessageBytes) throw new HttpError("RECORD_TOO_LARGE", { index, sizeBytes, maxMessageBytes: t.maxMessageBytes });
    }
    const out = this.#append(topic, partition, body);
    if (step !== "ok") return errorResponse(step.code, ERRORS[step.code].httpStatus);
    // acks=0 (PROTOCOL.md): 202 without offsets. Appended before answering here, which the
    // real gateway does not promise; tests only read the log after flush().
    if (query.get("acks") === "0") return json(202, { topic, accepted: records.length });
    if (headers.get("accept") === PRODUCE_SUMMARY_MEDIA_TYPE) {
      const first = out.results[0]!;
      return json(200, {
        topic,
        partition,
        baseOffset: first.offset,
        lastOffset: first.offset + out.results.length - 1,
        logAppendTime: null,
        logStartOffset: this.log(topic, partition).logStartOffset,
        ...(out.duplicate ? { duplicate: true } : {}),
      });
    }
    return json(200, out.duplicate ? { topic, records: out.results, duplicate: true } : { topic, records: out.results });
  }

  #append(topic: string, partition: number, bytes: Uint8Array): { results: ProduceRecordResult[]; duplicate: boolean } {
    const log = this.log(topic, partition);
    const { header, records } = decodeBatches(bytes)[0]!;
    const n = records.length;
    let producer = header.producerId >= 0 ? log.producers.get(header.producerId) : undefined;
    if (header.producerId >= 0) {
      if (producer !== undefined) {
        if (header.producerEpoch < producer.epoch) throw new HttpError("INVALID_PRODUCER_EPOCH");
        const dup = producer.kept.find((k) => k.epoch === header.producerEpoch && k.baseSequence === header.baseSequence && k.count === n);
        if (dup !== undefined) return { results: dup.results, duplicate: true };
      }
      const expected = producer === undefined || header.producerEpoch > producer.epoch ? 0 : producer.lastSequence + 1;
      if (header.baseSequence !== expected) throw new HttpError("OUT_OF_ORDER_SEQUENCE_NUMBER", { expectedSequence: expected });
    }
    const baseOffset = log.logEndOffset;
    const stored = bytes.slice();
    rewriteBatchHeader(stored, { baseOffset });
    log.batches.push({ baseOffset, count: n, bytes: stored });
    const results = records.map((r, i) => {
      log.records.push({ ...r, offset: baseOffset + i });
      return { partition, offset: baseOffset + i, timestamp: r.timestamp };
    });
    if (header.producerId >= 0) {
      producer ??= { epoch: header.producerEpoch, lastSequence: -1, kept: [] };
      producer.epoch = header.producerEpoch;
      producer.lastSequence = header.baseSequence + n - 1;
      producer.kept.push({ epoch: header.producerEpoch, baseSequence: header.baseSequence, count: n, results });
      if (producer.kept.length > 5) producer.kept.shift();
      log.producers.set(header.producerId, producer);
    }
    log.wake();
    return { results, duplicate: false };
  }

  async #fetch(log: PartitionLog, query: URLSearchParams, headers: Headers, signal: AbortSignal | undefined): Promise<Response> {
    if (headers.get("accept") !== BATCH_MEDIA_TYPE) throw new HttpError("NOT_ACCEPTABLE");
    const offset = Number(query.get("offset"));
    const maxRecords = Number(query.get("maxRecords") ?? 500);
    const maxWaitMs = Number(query.get("maxWaitMs") ?? 0);
    if (offset < log.logStartOffset || offset > log.logEndOffset) {
      throw new HttpError("OFFSET_OUT_OF_RANGE", { logStartOffset: log.logStartOffset, logEndOffset: log.logEndOffset, highWatermark: log.logEndOffset });
    }
    if (offset === log.logEndOffset && maxWaitMs > 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, maxWaitMs);
        log.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      });
    }
    const out: StoredBatch[] = [];
    let count = 0;
    for (const b of log.batches) {
      if (b.baseOffset + b.count <= offset) continue;
      if (out.length > 0 && count >= maxRecords) break;
      out.push(b);
      count += b.count;
    }
    const last = out[out.length - 1];
    const nextOffset = last === undefined ? offset : last.baseOffset + last.count;
    const bodyBytes = new Uint8Array(out.reduce((n, b) => n + b.bytes.length, 0));
    let at = 0;
    for (const b of out) {
      bodyBytes.set(b.bytes, at);
      at += b.bytes.length;
    }
    return new Response(bodyBytes, {
      status: 200,
      headers: {
        "content-type": BATCH_MEDIA_TYPE,
        "Edgelog-Next-Offset": String(nextOffset),
        "Edgelog-High-Watermark": String(log.logEndOffset),
        "Edgelog-Log-Start-Offset": String(log.logStartOffset),
      },
    });
  }

  #offsets(topic: string, partition: number, log: PartitionLog, query: URLSearchParams): Response {
    const spec = query.get("spec");
    let offset: number | null;
    if (spec === "earliest") offset = log.logStartOffset;
    else if (spec === "latest") offset = log.logEndOffset;
    else if (spec === "timestamp") {
      const ts = Number(query.get("timestamp"));
      offset = log.records.find((r) => r.offset >= log.logStartOffset && r.timestamp >= ts)?.offset ?? null;
    } else throw new HttpError("INVALID_OFFSET");
    return json(200, { topic, partition, spec, offset });
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function errorResponse(code: ErrorCode, status: number, details?: Record<string, unknown>): Response {
  const error: Record<string, unknown> = { code, message: ERRORS[code].message, retriable: ERRORS[code].retriable };
  if (details !== undefined) error["details"] = details;
  return json(status, { error });
}

/** UTF-8 bytes. */
export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
/** UTF-8 text (null stays null). */
export const text = (b: Uint8Array | null): string | null => (b === null ? null : new TextDecoder().decode(b));

/**
 * Streams for the CLI's `main()` against a fake server: stdin from the given chunks, stdout and
 * stderr captured. `stderrIsTTY` makes stderr look like a terminal (produce's summary).
 */
export function cliIo(server: FakeServer, stdin: Array<string | Uint8Array> = [], options: { stderrIsTTY?: boolean } = {}) {
  const out: Buffer[] = [];
  const err: string[] = [];
  const stderr = new Writable({
    write: (c: Buffer, _e, cb) => {
      err.push(c.toString());
      cb();
    },
  });
  if (options.stderrIsTTY === true) Object.assign(stderr, { isTTY: true });
  const value: CliIo = {
    stdin: Readable.from(stdin.map((s) => Buffer.from(s))),
    stdout: new Writable({
      write: (c: Buffer, _e, cb) => {
        out.push(Buffer.from(c));
        cb();
      },
    }),
    stderr,
    env: {},
    fetch: server.fetch,
  };
  return { value, stdoutBytes: () => Buffer.concat(out), stdout: () => Buffer.concat(out).toString(), stderr: () => err.join("") };
}
