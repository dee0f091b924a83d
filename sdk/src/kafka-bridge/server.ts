/**
 * The Kafka bridge server: a node:net TCP server that speaks Kafka's binary protocol to
 * unmodified Kafka clients and translates each request to Edgelog's HTTP API through the SDK
 * client. It advertises itself as the only broker (node 0), leader of every partition and
 * coordinator of every group; several bridges may run side by side (Edgelog is the source of
 * truth; classic group sessions live in the bridge a member is connected to).
 *
 * Framing: each request is `int32 size` + `size` bytes (header + body). Per connection,
 * answers go out in request order. Requests are processed one after the other, as a Kafka
 * broker does, except that consecutive produce requests (a pipelining producer) run
 * concurrently with each partition's appends still in the order they were sent, and batches
 * that queue up behind a partition's append in flight sent together (appender.ts): a Kafka
 * broker appends in microseconds, an Edgelog append is an HTTP round trip.
 *
 * Robustness (docs/KAFKA-BRIDGE.md):
 * - an API key or version the bridge does not implement is answered with UNSUPPORTED_VERSION
 *   (ApiVersions: its v0 answer with the supported list, KIP-511), the connection stays open;
 * - a frame larger than `maxFrameBytes`, or a size below 8 (negative or no room for a request header), closes that connection (the stream
 *   cannot be resynchronised; Kafka does the same);
 * - a partly received frame with no new byte for `partialFrameTimeoutMs` closes that connection;
 * - a request body that does not decode closes that connection, as Kafka does
 *   (InvalidRequestException);
 * - a client that disconnects mid-request: its pending requests still complete against Edgelog
 *   (an append that Edgelog acknowledged stays appended); the answers are dropped;
 * - no exception thrown while serving a request escapes to the process.
 */
import { createServer, type Server, type Socket } from "node:net";
import { DEFAULT_TOPIC_CONFIGS, EdgelogError } from "../../../src/protocol/index.ts";
import { EdgelogClient } from "../client.ts";
import { PartitionAppender } from "./appender.ts";
import { bridgeFetch } from "./http.ts";
import { ApiKey, SUPPORTED_APIS, isFlexible, isSupported, readRequestHeader, writeResponseHeader, type RequestHeader } from "./apis.ts";
import { KafkaError } from "./errors.ts";
import { ConsumerGroups } from "./consumer-groups.ts";
import { ClassicGroups } from "./groups.ts";
import {
  DEFAULT_MAX_DECOMPRESSED_BYTES,
  DEFAULT_READ_AHEAD_BYTES,
  DecompressionBudget,
  FetchPrefetch,
  ReadAheadBudget,
  handleCreatePartitions,
  handleCreateTopics,
  handleDeleteTopics,
  handleDescribeConfigs,
  handleFetch,
  handleFindCoordinator,
  handleIncrementalAlterConfigs,
  handleInitProducerId,
  handleListOffsets,
  handleMetadata,
  handleProduce,
  type BridgeContext,
} from "./handlers.ts";
import * as consumerGroupMsgs from "./messages/consumer-groups.ts";
import * as core from "./messages/core.ts";
import * as data from "./messages/data.ts";
import * as groupMsgs from "./messages/groups.ts";
import * as topics from "./messages/topics.ts";
import { TopicNames } from "./names.ts";
import { KafkaDecodeError, Reader, Writer } from "./wire.ts";

/** Options of {@link KafkaBridge}. */
export interface KafkaBridgeOptions {
  /** Edgelog gateway URL, e.g. `http://127.0.0.1:8787` (or pass `client`). */
  url?: string;
  /** An SDK client to use instead of one built from `url`. */
  client?: EdgelogClient;
  /** Extra headers for every Edgelog request (e.g. `authorization`). */
  headers?: Record<string, string>;
  /**
   * fetch implementation for Edgelog requests (tests, custom agents). @default bridgeFetch
   * (http.ts: binary appends through node:http, the rest through globalThis.fetch) for the
   * client built from `url`; globalThis.fetch for the raw fetches
   */
  fetch?: typeof fetch;
  /** Interface to listen on. @default "127.0.0.1" */
  host?: string;
  /** TCP port; 0 picks a free one. @default 9092 */
  port?: number;
  /** Host answered to clients in Metadata / FindCoordinator. @default the listen host */
  advertisedHost?: string;
  /** Port answered to clients. @default the bound port */
  advertisedPort?: number;
  /** Edgelog `tenant/namespace` whose topics this bridge serves under their short names. @default "public/default" */
  namespace?: string;
  /**
   * Largest request frame accepted, bytes (Kafka's socket.request.max.bytes). A larger frame
   * closes the connection. @default 104857600 (100 MiB, Kafka's default)
   */
  maxFrameBytes?: number;
  /**
   * How long a connection may hold a partly received frame without any new byte arriving, ms;
   * then it is closed (a client that stopped mid-request would otherwise pin its buffered bytes
   * and its connection forever). A connection with no partial frame is never timed out: an idle
   * Kafka client keeps its connection. 0 turns it off. @default 60000
   */
  partialFrameTimeoutMs?: number;
  /**
   * Create a topic on a Metadata request for it (Kafka's auto.create.topics.enable; off by
   * default here: Edgelog topics are created explicitly). @default false
   */
  autoCreateTopics?: boolean;
  /** Partitions of a topic created with num_partitions -1 or by auto-creation (Kafka's num.partitions). @default 1 */
  defaultPartitions?: number;
  /**
   * How long a produced batch without a producer id may wait, from its arrival, for later
   * batches of the same partition on the same connection to go to Edgelog with it as one
   * append (Kafka's producer `linger.ms`, applied bridge-side: a Kafka client sizes its batches
   * for a broker that appends in microseconds, and every Edgelog append is an HTTP request).
   * Adds up to this much latency to a lone produce. Idempotent batches never wait.
   * @default 0
   */
  produceLingerMs?: number;
  /**
   * Read the next range of a partition ahead after a Fetch answered records from it, while the
   * client processes them (handlers.ts FetchPrefetch): holds up to one `partition_max_bytes`
   * per partition per connection, all connections together within `readAheadBytes`. On by
   * default: catch-up was faster with it in 6 of 8 bench runs, both idle ones among them
   * (docs/benchmarks.md "Kafka bridge"); off, every Fetch is one Edgelog round trip after the
   * client asked. @default true
   */
  fetchReadAhead?: boolean;
  /** Memory the read-aheads of all connections may hold at once, bytes (0: none). @default 64 MiB ({@link DEFAULT_READ_AHEAD_BYTES}) */
  readAheadBytes?: number;
  /**
   * Memory the decompressed produced batches of all connections may hold at once, bytes (at
   * least 8 MiB, Edgelog's request limit); a compressed batch that does not fit waits
   * (handlers.ts DecompressionBudget). @default 67108864 (64 MiB)
   */
  maxDecompressedBytes?: number;
  /** Cluster id answered in Metadata. @default "edgelog" */
  clusterId?: string;
  /** Where connection-level problems are reported. @default console.warn */
  log?: (message: string) => void;
}

/** Kafka's socket.request.max.bytes default. */
export const DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024;

/**
 * Answer bytes a connection's socket may hold unsent before the bridge serves none of its
 * further requests but produces (server.ts #accept): bounds what a client that does not read
 * makes the bridge hold to about one answer more than this. @default 4 MiB
 */
export const MAX_UNSENT_ANSWER_BYTES = 4 * 1024 * 1024;

/** Default of {@link KafkaBridgeOptions.partialFrameTimeoutMs}, ms. */
export const DEFAULT_PARTIAL_FRAME_TIMEOUT_MS = 60_000;

/** A running bridge. */
export class KafkaBridge {
  readonly #server: Server;
  readonly #ctx: BridgeContext;
  readonly #groups: ClassicGroups;
  readonly #consumerGroups: ConsumerGroups;
  readonly #maxFrameBytes: number;
  readonly #log: (message: string) => void;
  readonly #sockets = new Set<Socket>();
  readonly #options: KafkaBridgeOptions;
  /** The read-aheads' memory, shared by every connection. */
  readonly #readAhead: ReadAheadBudget;

  private constructor(options: KafkaBridgeOptions) {
    const client = options.client ?? (options.url !== undefined ? new EdgelogClient({ baseUrl: options.url, headers: options.headers, fetch: options.fetch ?? bridgeFetch }) : undefined);
    if (client === undefined) throw new TypeError("KafkaBridge needs `url` or `client`");
    this.#options = options;
    this.#maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    const readAheadBytes = options.readAheadBytes ?? DEFAULT_READ_AHEAD_BYTES;
    if (!(Number.isInteger(readAheadBytes) && readAheadBytes >= 0)) throw new TypeError(`readAheadBytes must be an integer >= 0, got ${readAheadBytes}`);
    this.#readAhead = new ReadAheadBudget(readAheadBytes);
    this.#log = options.log ?? ((m) => console.warn(`[kafka-bridge] ${m}`));
    this.#ctx = {
      client,
      headers: { ...options.headers },
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      names: new TopicNames(options.namespace),
      advertisedHost: options.advertisedHost ?? options.host ?? "127.0.0.1",
      advertisedPort: options.advertisedPort ?? 0,
      clusterId: options.clusterId ?? "edgelog",
      autoCreateTopics: options.autoCreateTopics ?? false,
      defaultPartitions: options.defaultPartitions ?? 1,
      decompression: new DecompressionBudget(options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES),
    };
    this.#groups = new ClassicGroups(this.#ctx);
    this.#consumerGroups = new ConsumerGroups(this.#ctx);
    this.#server = createServer((socket) => this.#accept(socket));
  }

  /** Starts a bridge and resolves once it listens. */
  static async start(options: KafkaBridgeOptions): Promise<KafkaBridge> {
    const bridge = new KafkaBridge(options);
    await new Promise<void>((resolve, reject) => {
      bridge.#server.once("error", reject);
      bridge.#server.listen(options.port ?? 9092, options.host ?? "127.0.0.1", () => {
        bridge.#server.off("error", reject);
        resolve();
      });
    });
    bridge.#server.on("error", (e) => bridge.#log(`server error: ${e.message}`));
    if (options.advertisedPort === undefined) bridge.#ctx.advertisedPort = bridge.port;
    return bridge;
  }

  /** The bound port. */
  get port(): number {
    const a = this.#server.address();
    return typeof a === "object" && a !== null ? a.port : 0;
  }

  /** Bytes the decompressed produced batches hold now (see {@link KafkaBridgeOptions.maxDecompressedBytes}). */
  get decompressedBytesHeld(): number {
    return this.#ctx.decompression?.heldBytes ?? 0;
  }

  /** The bound host. */
  get host(): string {
    return this.#options.host ?? "127.0.0.1";
  }

  /** Stops accepting, closes every connection and the classic group sessions' timers. */
  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    this.#groups.close();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    socket.setNoDelay(true);
    let buffered: Buffer[] = [];
    let bufferedBytes = 0;
    let allDone: Promise<unknown> = Promise.resolve();
    let lastNonProduce: Promise<unknown> = Promise.resolve();
    let written: Promise<void> = Promise.resolve();
    const appender = new PartitionAppender(
      async (topic, partition, body, acks) => {
        if (acks === 0) {
          await this.#ctx.client.produceBatch(topic, partition, body, { acks: 0 });
          return null;
        }
        return this.#ctx.client.produceBatchSummary(topic, partition, body, { acks });
      },
      undefined,
      this.#options.produceLingerMs ?? 0,
    );
    const prefetch = this.#options.fetchReadAhead !== false && this.#readAhead.limitBytes > 0 ? new FetchPrefetch(this.#readAhead) : undefined;
    let closed = false;
    const drop = (why: string): void => {
      if (closed) return;
      closed = true;
      this.#log(`closing connection from ${socket.remoteAddress}:${socket.remotePort}: ${why}`);
      socket.destroy();
    };
    socket.on("close", () => {
      closed = true;
      this.#sockets.delete(socket);
      prefetch?.clear();
    });
    socket.on("error", () => {
      closed = true; // ECONNRESET and the like: the close event follows
    });
    // Chunks are kept as they arrive and joined once per frame (joining on every chunk would
    // copy a large frame once per 64 KiB read).
    let frameBytes = -1;
    // A partly received frame with no new byte for partialFrameTimeoutMs closes the connection.
    const partialTimeoutMs = this.#options.partialFrameTimeoutMs ?? DEFAULT_PARTIAL_FRAME_TIMEOUT_MS;
    let partialTimer: ReturnType<typeof setTimeout> | undefined;
    socket.on("close", () => clearTimeout(partialTimer));
    socket.on("data", (chunk: Buffer) => {
      if (closed) return;
      buffered.push(chunk);
      bufferedBytes += chunk.length;
      takeFrames();
      clearTimeout(partialTimer);
      if (bufferedBytes > 0 && partialTimeoutMs > 0 && !closed) {
        partialTimer = setTimeout(() => drop(`no byte of a partly received frame for ${partialTimeoutMs} ms (${bufferedBytes} bytes held)`), partialTimeoutMs);
        partialTimer.unref?.();
      }
    });
    /** Resolves once the socket's unsent answers are under MAX_UNSENT_ANSWER_BYTES, or it closed. */
    const unsentUnderLimit = (): Promise<void> | undefined => {
      if (closed || socket.writableLength <= MAX_UNSENT_ANSWER_BYTES) return undefined;
      return new Promise<void>((resolve) => {
        const check = (): void => {
          if (!closed && socket.writableLength > MAX_UNSENT_ANSWER_BYTES) return;
          socket.off("drain", check);
          socket.off("close", check);
          resolve();
        };
        socket.on("drain", check);
        socket.on("close", check);
      });
    };
    const takeFrames = (): void => {
      for (;;) {
        if (frameBytes < 0) {
          if (bufferedBytes < 4) return;
          if (buffered[0]!.length < 4) buffered = [Buffer.concat(buffered, bufferedBytes)];
          const size = buffered[0]!.readInt32BE(0);
          if (size < 8 || size > this.#maxFrameBytes) {
            drop(size < 8 ? `invalid frame size ${size}` : `frame of ${size} bytes exceeds maxFrameBytes ${this.#maxFrameBytes}`);
            return;
          }
          frameBytes = size;
        }
        if (bufferedBytes < 4 + frameBytes) return;
        const all = buffered.length === 1 ? buffered[0]! : Buffer.concat(buffered, bufferedBytes);
        const frame = new Uint8Array(all.buffer, all.byteOffset + 4, frameBytes);
        const rest = all.subarray(4 + frameBytes);
        buffered = rest.length > 0 ? [rest] : [];
        bufferedBytes = rest.length;
        frameBytes = -1;
        // Produce requests start as soon as every earlier non-produce request is done (their
        // appends are ordered per partition by the appender); any other request waits for
        // everything before it. Answers go out in request order.
        const isProduce = frame.length >= 2 && frame[0] === 0 && frame[1] === ApiKey.Produce;
        // Any other request also waits until the answers before it were handed to the socket
        // and what the socket has not sent yet is under MAX_UNSENT_ANSWER_BYTES: a Kafka broker
        // reads a connection's next request only after it sent the last answer, so a client
        // that pipelines requests and does not read its answers cannot make it queue them all.
        // (Produce answers are a few bytes per partition; their requests are what the client sent.)
        const writtenBefore = written;
        const work = (isProduce ? lastNonProduce : allDone.then(() => writtenBefore).then(unsentUnderLimit)).then(() =>
          this.#serve(frame, appender, prefetch).catch((e: unknown) => {
            drop(
              e instanceof KafkaDecodeError
                ? `malformed request: ${e.message}`
                : e instanceof EdgelogError
                  ? `Edgelog ${e.code}: ${e.message}`
                  : `internal error: ${(e as Error).stack ?? e}`,
            );
            return null;
          }),
        );
        // (resolved to undefined: a chain of resolved values would keep every answer alive)
        allDone = Promise.all([allDone, work]).then(() => undefined);
        if (!isProduce) lastNonProduce = work.then(() => undefined);
        written = Promise.all([written, work]).then(([, answer]) => {
          if (answer !== null && !closed) socket.write(answer);
        });
      }
    };
  }

  /** Serves one request frame; resolves to the answer frame (size prefix included) or null (no answer). */
  async #serve(frame: Uint8Array, appender: PartitionAppender, prefetch: FetchPrefetch | undefined): Promise<Uint8Array | null> {
    const r = new Reader(frame);
    const header = readRequestHeader(r);
    const w = new Writer(1024);
    w.int32(0); // size, patched below
    writeResponseHeader(w, header);
    const body = await this.#dispatch(header, r, w, appender, prefetch);
    if (body === "no-answer") return null;
    const out = w.finish();
    new DataView(out.buffer, out.byteOffset, out.byteLength).setInt32(0, out.length - 4);
    return out;
  }

  async #dispatch(header: RequestHeader, r: Reader, w: Writer, appender: PartitionAppender, prefetch: FetchPrefetch | undefined): Promise<"answered" | "no-answer"> {
    const v = header.apiVersion;
    const flex = isFlexible(header.apiKey, v);
    const ctx = this.#ctx;
    if (header.apiKey === ApiKey.ApiVersions) {
      if (!isSupported(header.apiKey, v)) {
        // KIP-511: a version we do not know gets the v0 answer, so the client can pick one.
        core.encodeApiVersionsResponse(w, 0, { errorCode: KafkaError.UNSUPPORTED_VERSION, apiKeys: Object.values(SUPPORTED_APIS), throttleTimeMs: 0 });
        return "answered";
      }
      core.decodeApiVersionsRequest(r, v);
      core.encodeApiVersionsResponse(w, v, { errorCode: 0, apiKeys: Object.values(SUPPORTED_APIS), throttleTimeMs: 0 });
      return "answered";
    }
    if (!isSupported(header.apiKey, v)) {
      // No schema to answer in: the error code right after the header is where most
      // responses' first int16 is, and every client gets an answer instead of a hang.
      w.int16(KafkaError.UNSUPPORTED_VERSION);
      return "answered";
    }
    switch (header.apiKey) {
      case ApiKey.Metadata:
        core.encodeMetadataResponse(w, v, flex, await handleMetadata(ctx, core.decodeMetadataRequest(r, v, flex)));
        break;
      case ApiKey.Produce: {
        const req = data.decodeProduceRequest(r, v, flex);
        const res = await handleProduce(ctx, req, appender);
        if (req.acks === 0) return "no-answer";
        data.encodeProduceResponse(w, v, flex, res);
        break;
      }
      case ApiKey.Fetch:
        data.encodeFetchResponse(w, v, flex, await handleFetch(ctx, data.decodeFetchRequest(r, v, flex), prefetch));
        break;
      case ApiKey.ListOffsets:
        core.encodeListOffsetsResponse(w, v, flex, await handleListOffsets(ctx, core.decodeListOffsetsRequest(r, v, flex)));
        break;
      case ApiKey.FindCoordinator:
        core.encodeFindCoordinatorResponse(w, v, flex, handleFindCoordinator(ctx, core.decodeFindCoordinatorRequest(r, v, flex)));
        break;
      case ApiKey.InitProducerId:
        core.encodeInitProducerIdResponse(w, v, flex, await handleInitProducerId(ctx, core.decodeInitProducerIdRequest(r, v, flex)));
        break;
      case ApiKey.CreateTopics:
        topics.encodeCreateTopicsResponse(w, v, flex, await handleCreateTopics(ctx, topics.decodeCreateTopicsRequest(r, v, flex)));
        break;
      case ApiKey.DeleteTopics:
        topics.encodeDeleteTopicsResponse(w, v, flex, await handleDeleteTopics(ctx, topics.decodeDeleteTopicsRequest(r, v, flex)));
        break;
      case ApiKey.CreatePartitions:
        topics.encodeCreatePartitionsResponse(w, v, flex, await handleCreatePartitions(ctx, topics.decodeCreatePartitionsRequest(r, v, flex)));
        break;
      case ApiKey.DescribeConfigs:
        topics.encodeDescribeConfigsResponse(w, v, flex, await handleDescribeConfigs(ctx, topics.decodeDescribeConfigsRequest(r, v, flex)));
        break;
      case ApiKey.IncrementalAlterConfigs:
        topics.encodeIncrementalAlterConfigsResponse(w, v, flex, await handleIncrementalAlterConfigs(ctx, topics.decodeIncrementalAlterConfigsRequest(r, v, flex), DEFAULT_TOPIC_CONFIGS));
        break;
      case ApiKey.JoinGroup:
        groupMsgs.encodeJoinGroupResponse(w, v, flex, await this.#groups.join(groupMsgs.decodeJoinGroupRequest(r, v, flex), header.clientId));
        break;
      case ApiKey.SyncGroup:
        groupMsgs.encodeSyncGroupResponse(w, v, flex, await this.#groups.sync(groupMsgs.decodeSyncGroupRequest(r, v, flex)));
        break;
      case ApiKey.Heartbeat:
        groupMsgs.encodeHeartbeatResponse(w, v, flex, await this.#groups.heartbeat(groupMsgs.decodeHeartbeatRequest(r, v, flex)));
        break;
      case ApiKey.LeaveGroup:
        groupMsgs.encodeLeaveGroupResponse(w, v, flex, await this.#groups.leave(groupMsgs.decodeLeaveGroupRequest(r, v, flex)));
        break;
      case ApiKey.OffsetCommit:
        groupMsgs.encodeOffsetCommitResponse(w, v, flex, await this.#groups.commit(groupMsgs.decodeOffsetCommitRequest(r, v, flex)));
        break;
      case ApiKey.OffsetFetch:
        groupMsgs.encodeOffsetFetchResponse(w, v, flex, await this.#groups.fetchOffsets(groupMsgs.decodeOffsetFetchRequest(r, v, flex)));
        break;
      case ApiKey.ListGroups:
        groupMsgs.decodeListGroupsRequest(r, v, flex);
        groupMsgs.encodeListGroupsResponse(w, v, flex, await this.#groups.list());
        break;
      case ApiKey.DescribeGroups:
        groupMsgs.encodeDescribeGroupsResponse(w, v, flex, await this.#groups.describe(groupMsgs.decodeDescribeGroupsRequest(r, v, flex)));
        break;
      case ApiKey.DeleteGroups:
        groupMsgs.encodeDeleteGroupsResponse(w, v, flex, await this.#groups.delete(groupMsgs.decodeDeleteGroupsRequest(r, v, flex)));
        break;
      case ApiKey.ConsumerGroupHeartbeat:
        consumerGroupMsgs.encodeConsumerGroupHeartbeatResponse(w, v, await this.#consumerGroups.heartbeat(consumerGroupMsgs.decodeConsumerGroupHeartbeatRequest(r, v), header.clientId));
        break;
      case ApiKey.ConsumerGroupDescribe:
        consumerGroupMsgs.encodeConsumerGroupDescribeResponse(w, v, await this.#consumerGroups.describe(consumerGroupMsgs.decodeConsumerGroupDescribeRequest(r, v)));
        break;
      default:
        w.int16(KafkaError.UNSUPPORTED_VERSION);
    }
    return "answered";
  }
}

/** Starts a Kafka bridge (see {@link KafkaBridgeOptions}). */
export function startKafkaBridge(options: KafkaBridgeOptions): Promise<KafkaBridge> {
  return KafkaBridge.start(options);
}
