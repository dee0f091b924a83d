/**
 * The Kafka bridge's pure protocol modules, checked against a Kafka client nobody here wrote:
 * kafkajs's own request encoders produce the bytes our decoders read, and kafkajs's response
 * decoders read the bytes our encoders write. Plus: Kafka <-> Edgelog record batch conversion,
 * compression codecs, the flexible (KIP-482) versions kafkajs lacks (by hand-built bytes), the
 * primitives (fast-check), a fuzz of every request decoder, and the error table's completeness.
 */
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32c, decodeBatch, decodeBatches, encodeBatch } from "../../src/codec/index.ts";
import { ERRORS, type ErrorCode } from "../../src/protocol/index.ts";
import { SUPPORTED_APIS, readRequestHeader } from "../../sdk/src/kafka-bridge/apis.ts";
import { crc32cCombine } from "../../sdk/src/kafka-bridge/crc-combine.ts";
import { decompress, lz4Decompress, snappyDecompress } from "../../sdk/src/kafka-bridge/compression.ts";
import { EDGELOG_TO_KAFKA, KafkaError, kafkaErrorCode } from "../../sdk/src/kafka-bridge/errors.ts";
import * as core from "../../sdk/src/kafka-bridge/messages/core.ts";
import * as data from "../../sdk/src/kafka-bridge/messages/data.ts";
import * as groups from "../../sdk/src/kafka-bridge/messages/groups.ts";
import * as topics from "../../sdk/src/kafka-bridge/messages/topics.ts";
import { RecordBatchError, mergeToEdgelogBatch, parseProducedBatch, toEdgelogBatch, toKafkaBatches } from "../../sdk/src/kafka-bridge/records.ts";
import { KafkaDecodeError, Reader, Writer } from "../../sdk/src/kafka-bridge/wire.ts";

const require = createRequire(import.meta.url);
// kafkajs ships no types for its internal request/response modules: `any` stands for their shapes.
// biome-ignore lint/suspicious/noExplicitAny: see above
type Any = any;
type KafkajsRequest = { encode(): Promise<{ buffer: Buffer }> };
const kRequest = (path: string): ((args: Any) => KafkajsRequest) => require(`kafkajs/src/protocol/requests/${path}/request`);
const kResponse = (path: string): { decode(b: Buffer): Promise<Any> } => require(`kafkajs/src/protocol/requests/${path}/response`);
const Long = require("kafkajs/src/utils/long");
const { MemberMetadata, MemberAssignment } = require("kafkajs/src/consumer/assignerProtocol");

async function requestBytes(path: string, args: unknown): Promise<Reader> {
  const enc = await kRequest(path)(args).encode();
  return new Reader(new Uint8Array(enc.buffer));
}

function responseBytes(write: (w: Writer) => void): Buffer {
  const w = new Writer();
  write(w);
  return Buffer.from(w.finish());
}

const te = new TextEncoder();
const td = new TextDecoder();

describe("produce: kafkajs request -> our decoder -> Edgelog batch", () => {
  it("keeps keys, values, headers, timestamps, producer id, epoch and base sequence exact", async () => {
    const messages = [
      { key: "k1", value: "v1", headers: { a: "1", b: "" }, timestamp: 1_700_000_000_123 },
      { key: null, value: "v2", timestamp: 1_700_000_000_100 },
      { key: "k3", value: null, timestamp: 1_700_000_000_200 },
    ];
    const r = await requestBytes("produce/v7", {
      acks: -1,
      timeout: 30000,
      producerId: Long.fromNumber(42),
      producerEpoch: 3,
      topicData: [{ topic: "orders", partitions: [{ partition: 2, firstSequence: 17, messages }] }],
    });
    const req = data.decodeProduceRequest(r, 7, false);
    expect(r.remaining).toBe(0);
    expect(req).toMatchObject({ transactionalId: null, acks: -1, timeoutMs: 30000 });
    expect(req.topics.map((t) => [t.name, t.partitions.map((p) => p.index)])).toEqual([["orders", [2]]]);
    const batch = parseProducedBatch(req.topics[0]!.partitions[0]!.records!);
    expect(batch).toMatchObject({ producerId: 42, producerEpoch: 3, baseSequence: 17, recordCount: 3, compression: 0 });
    const decoded = decodeBatch(toEdgelogBatch(batch, batch.payload));
    expect(decoded.header).toMatchObject({ producerId: 42, producerEpoch: 3, baseSequence: 17, attributes: 0, recordCount: 3 });
    expect(
      decoded.records.map((x) => [x.offset, x.key && td.decode(x.key), x.value && td.decode(x.value), x.timestamp, x.headers.map((h) => [h.key, h.value && td.decode(h.value)])]),
    ).toEqual([
      [
        0,
        "k1",
        "v1",
        1_700_000_000_123,
        [
          ["a", "1"],
          ["b", ""],
        ],
      ],
      [1, null, "v2", 1_700_000_000_100, []],
      [2, "k3", null, 1_700_000_000_200, []],
    ]);
  });

  it("decompresses a gzip batch from kafkajs", async () => {
    const { CompressionTypes } = require("kafkajs");
    const messages = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `value ${i} `.repeat(20) }));
    const r = await requestBytes("produce/v7", { acks: 1, timeout: 1000, compression: CompressionTypes.GZIP, topicData: [{ topic: "t", partitions: [{ partition: 0, messages }] }] });
    const batch = parseProducedBatch(data.decodeProduceRequest(r, 7, false).topics[0]!.partitions[0]!.records!);
    expect(batch.compression).toBe(1);
    const records = decodeBatch(toEdgelogBatch(batch, await decompress(batch.compression, batch.payload, 1 << 20))).records;
    expect(records.map((x) => td.decode(x.value!))).toEqual(messages.map((m) => m.value));
  });

  it("refuses corrupt, old-format, transactional and multi-batch record sets with the Kafka error to answer", () => {
    const kafka = toKafkaBatches(encodeBatch({}, [{ key: null, value: te.encode("x"), headers: [], timestamp: 1 }]));
    const flipped = kafka.slice();
    flipped[flipped.length - 1]! ^= 1;
    const old = kafka.slice();
    old[16] = 1;
    const txn = kafka.slice();
    txn[22]! |= 0x10;
    const two = new Uint8Array([...kafka, ...kafka]);
    const cases: Array<[Uint8Array, string]> = [
      [flipped, "CORRUPT_MESSAGE"],
      [old, "UNSUPPORTED_FOR_MESSAGE_FORMAT"],
      [txn, "CORRUPT_MESSAGE"], // the CRC covers the attributes: flipping one is corruption first
      [two, "INVALID_RECORD"],
      [kafka.subarray(0, 30), "CORRUPT_MESSAGE"],
    ];
    for (const [bytes, kafkaError] of cases) {
      expect(() => parseProducedBatch(bytes)).toThrow(RecordBatchError);
      try {
        parseProducedBatch(bytes);
      } catch (e) {
        expect((e as RecordBatchError).kafkaError).toBe(kafkaError);
      }
    }
  });

  it("encodes the produce answer kafkajs reads", async () => {
    const bytes = responseBytes((w) =>
      data.encodeProduceResponse(w, 7, false, {
        topics: [{ name: "orders", partitions: [{ index: 2, errorCode: 0, baseOffset: 1234, logAppendTimeMs: -1, logStartOffset: 7, errorMessage: null }] }],
        throttleTimeMs: 0,
      }),
    );
    const res = await kResponse("produce/v7").decode(bytes);
    expect(res.topics).toEqual([{ topicName: "orders", partitions: [{ partition: 2, errorCode: 0, baseOffset: "1234", logAppendTime: "-1", logStartOffset: "7" }] }]);
  });
});

describe("fetch: kafkajs request -> our decoder; Edgelog batches -> Kafka batches kafkajs decodes", () => {
  it("decodes a v11 fetch request", async () => {
    const r = await requestBytes("fetch/v11", {
      replicaId: -1,
      maxWaitTime: 500,
      minBytes: 1,
      maxBytes: 10485760,
      topics: [{ topic: "orders", partitions: [{ partition: 3, fetchOffset: "99", maxBytes: 1048576 }] }],
    });
    const req = data.decodeFetchRequest(r, 11, false);
    expect(r.remaining).toBe(0);
    expect(req).toEqual({
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 10485760,
      isolationLevel: 1,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: "orders", partitions: [{ partition: 3, fetchOffset: 99, logStartOffset: -1, partitionMaxBytes: 1048576 }] }],
    });
  });

  it("converts stored batches to Kafka batches that kafkajs decodes to the same records", async () => {
    const b1 = encodeBatch({ baseOffset: 10, producerId: 5, producerEpoch: 1, baseSequence: 0 }, [
      { key: te.encode("a"), value: te.encode("1"), headers: [{ key: "h", value: te.encode("x") }], timestamp: 1000 },
      { key: null, value: null, headers: [], timestamp: 1005 },
    ]);
    const b2 = encodeBatch({ baseOffset: 12 }, [{ key: te.encode("b"), value: te.encode(""), headers: [], timestamp: 2000 }]);
    const body = new Uint8Array([...b1, ...b2]);
    const records = toKafkaBatches(body);
    expect(records.length).toBe(body.length);
    const bytes = responseBytes((w) =>
      data.encodeFetchResponse(w, 11, false, {
        throttleTimeMs: 0,
        errorCode: 0,
        sessionId: 0,
        topics: [{ topic: "orders", partitions: [{ partitionIndex: 0, errorCode: 0, highWatermark: 13, lastStableOffset: 13, logStartOffset: 0, records }] }],
      }),
    );
    const res = await kResponse("fetch/v11").decode(bytes);
    const p = res.responses[0].partitions[0];
    expect([p.highWatermark, p.lastStableOffset, p.lastStartOffset ?? p.logStartOffset]).toEqual(["13", "13", "0"]);
    expect(
      p.messages.map((m: Any) => [
        m.offset,
        m.key ? m.key.toString() : m.key,
        m.value ? m.value.toString() : m.value,
        m.timestamp,
        Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, String(v)])),
      ]),
    ).toEqual([
      ["10", "a", "1", "1000", { h: "x" }],
      ["11", null, null, "1005", {}],
      ["12", "b", "", "2000", {}],
    ]);
    // And back: the Kafka batches parse and convert to the same Edgelog bytes (records untouched).
    const back = parseProducedBatch(records.subarray(0, b1.length));
    expect(decodeBatch(toEdgelogBatch(back, back.payload)).records).toEqual(decodeBatches(b1)[0]!.records.map((r) => ({ ...r, offset: r.offset - 10 })));
  });

  it("Fetch answers a partition error with empty records, never null: librdkafka refuses a record set size of -1", () => {
    // A null records field made kcat -o BEYOND_END spin on "invalid MessageSetSize -1" instead
    // of taking OFFSET_OUT_OF_RANGE and applying auto.offset.reset (Kafka answers empty records).
    for (const version of [4, 11]) {
      const w = new Writer();
      data.encodeFetchResponse(w, version, false, {
        throttleTimeMs: 0,
        errorCode: 0,
        sessionId: 0,
        topics: [{ topic: "t", partitions: [{ partitionIndex: 0, errorCode: KafkaError.OFFSET_OUT_OF_RANGE, highWatermark: 3, lastStableOffset: 3, logStartOffset: 0, records: null }] }],
      });
      const out = w.finish();
      expect(new DataView(out.buffer, out.byteOffset).getInt32(out.length - 4)).toBe(0);
    }
  });
});

describe("CRC-32C of a concatenation from its parts' CRCs", () => {
  it("equals the CRC of the concatenation (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), fc.uint8Array({ maxLength: 5000 }), (a, b) => {
        const ab = new Uint8Array(a.length + b.length);
        ab.set(a);
        ab.set(b, a.length);
        expect(crc32cCombine(crc32c(a), crc32c(b), b.length)).toBe(crc32c(ab));
      }),
      { numRuns: 300 },
    );
    // A 1 MiB B, the size of a merged append.
    const big = new Uint8Array(1 << 20).map((_, i) => (i * 31) & 0xff);
    const head = new Uint8Array([1, 2, 3]);
    const all = new Uint8Array(head.length + big.length);
    all.set(head);
    all.set(big, head.length);
    expect(crc32cCombine(crc32c(head), crc32c(big), big.length)).toBe(crc32c(all));
  });

  it("a stored batch damaged after its CRC was computed reaches the client with a Kafka CRC that does not match", () => {
    const stored = encodeBatch({}, [{ key: null, value: te.encode("payload"), headers: [], timestamp: 1 }]);
    const good = toKafkaBatches(stored);
    expect(() => parseProducedBatch(good)).not.toThrow();
    const damaged = stored.slice();
    damaged[damaged.length - 2]! ^= 0x40;
    const kafka = toKafkaBatches(damaged);
    expect(() => parseProducedBatch(kafka)).toThrow(/CRC mismatch/);
  });
});

describe("merging consecutive produced batches (appender)", () => {
  it("keeps every record's bytes, in order, with dense offsets and exact timestamps (property)", () => {
    const bytes = fc.option(fc.uint8Array({ maxLength: 300 }), { nil: null });
    const record = fc.record({
      key: bytes,
      value: bytes,
      headers: fc.array(fc.record({ key: fc.string({ maxLength: 20 }), value: bytes }), { maxLength: 3 }),
      timestamp: fc.integer({ min: 0, max: 4_000_000_000_000 }),
    });
    fc.assert(
      fc.property(fc.array(fc.array(record, { minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 5 }), (groups) => {
        const parts = groups.map((records) => {
          const batch = parseProducedBatch(toKafkaBatches(encodeBatch({}, records)));
          return { batch, records: batch.payload };
        });
        const merged = decodeBatch(mergeToEdgelogBatch(parts));
        const all = groups.flat();
        expect(merged.header).toMatchObject({
          recordCount: all.length,
          lastOffsetDelta: all.length - 1,
          baseTimestamp: all[0]!.timestamp,
          maxTimestamp: Math.max(...all.map((r) => r.timestamp)),
          producerId: -1,
        });
        expect(merged.records).toEqual(all.map((r, i) => ({ ...r, offset: i })));
      }),
      { numRuns: 200 },
    );
  });
});

describe("metadata, coordinator, producer ids, offsets", () => {
  it("Metadata v6 answer", async () => {
    const bytes = responseBytes((w) =>
      core.encodeMetadataResponse(w, 6, false, {
        throttleTimeMs: 0,
        brokers: [{ nodeId: 0, host: "127.0.0.1", port: 9092, rack: null }],
        clusterId: "edgelog",
        controllerId: 0,
        topics: [
          {
            errorCode: 0,
            name: "orders",
            topicId: "00000000-0000-0000-0000-000000000000",
            isInternal: false,
            partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 0, leaderEpoch: 0, replicaNodes: [0], isrNodes: [0] }],
          },
        ],
      }),
    );
    const res = await kResponse("metadata/v6").decode(bytes);
    expect(res.brokers).toEqual([{ nodeId: 0, host: "127.0.0.1", port: 9092, rack: null }]);
    expect(res.clusterId).toBe("edgelog");
    expect(res.controllerId).toBe(0);
    expect(res.topicMetadata).toEqual([
      { topicErrorCode: 0, topic: "orders", isInternal: false, partitionMetadata: [{ partitionErrorCode: 0, partitionId: 0, leader: 0, replicas: [0], isr: [0], offlineReplicas: [] }] },
    ]);
  });

  it("FindCoordinator v2, InitProducerId v1, ApiVersions v2 answers", async () => {
    const fc2 = await kResponse("findCoordinator/v2").decode(
      responseBytes((w) => core.encodeFindCoordinatorResponse(w, 2, false, { throttleTimeMs: 0, errorCode: 0, errorMessage: null, nodeId: 0, host: "h", port: 1 })),
    );
    expect(fc2).toMatchObject({ errorCode: 0, coordinator: { nodeId: 0, host: "h", port: 1 } });
    const ip = await kResponse("initProducerId/v1").decode(
      responseBytes((w) => core.encodeInitProducerIdResponse(w, 1, false, { throttleTimeMs: 0, errorCode: 0, producerId: 77, producerEpoch: 0 })),
    );
    expect(ip).toMatchObject({ errorCode: 0, producerId: "77", producerEpoch: 0 });
    const av = await kResponse("apiVersions/v2").decode(
      responseBytes((w) => core.encodeApiVersionsResponse(w, 2, { errorCode: 0, apiKeys: Object.values(SUPPORTED_APIS), throttleTimeMs: 0 })),
    );
    expect(av.apiVersions).toContainEqual({ apiKey: 0, minVersion: 0, maxVersion: 8 });
    expect(av.apiVersions).toHaveLength(Object.keys(SUPPORTED_APIS).length);
  });

  it("FindCoordinator: a group is the bridge, a transaction coordinator is not available, any other key type is INVALID_REQUEST (as Kafka answers it)", async () => {
    const { handleFindCoordinator } = await import("../../sdk/src/kafka-bridge/handlers.ts");
    const { bridgeContext } = await import("./kafka-bridge-context.ts");
    const ctx = bridgeContext(async () => new Response(null, { status: 500 }));
    const ask = (keyType: number) => handleFindCoordinator(ctx, { key: "g", keyType });
    expect(ask(0)).toMatchObject({ errorCode: 0, nodeId: 0, host: "127.0.0.1", port: 9092 });
    expect(ask(1)).toMatchObject({ errorCode: KafkaError.COORDINATOR_NOT_AVAILABLE, nodeId: -1 });
    expect(ask(2)).toMatchObject({ errorCode: KafkaError.INVALID_REQUEST, nodeId: -1 }); // share groups (KIP-932): not offered
    expect(ask(7)).toMatchObject({ errorCode: KafkaError.INVALID_REQUEST, nodeId: -1 });
  });

  it("ApiVersions v3 (flexible): compact request fields, compact answer with tagged fields", () => {
    // header v2: api_key 18, version 3, correlation 7, client_id "c", no tags; body: compact strings + no tags.
    const w = new Writer().int16(18).int16(3).int32(7).string("c", false).taggedFields().string("librdkafka", true).string("2.0.2", true).taggedFields();
    const r = new Reader(w.finish());
    expect(readRequestHeader(r)).toEqual({ apiKey: 18, apiVersion: 3, correlationId: 7, clientId: "c" });
    expect(core.decodeApiVersionsRequest(r, 3)).toEqual({ clientSoftwareName: "librdkafka", clientSoftwareVersion: "2.0.2" });
    expect(r.remaining).toBe(0);
    const out = new Writer();
    core.encodeApiVersionsResponse(out, 3, { errorCode: 0, apiKeys: [SUPPORTED_APIS.Produce], throttleTimeMs: 0 });
    expect([...out.finish()]).toEqual([0, 0, 2, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0]);
  });

  it("ListOffsets v3 request from kafkajs; v7 (flexible, MAX_TIMESTAMP) by hand", async () => {
    const r = await requestBytes("listOffsets/v3", {
      replicaId: -1,
      isolationLevel: 1,
      topics: [
        {
          topic: "t",
          partitions: [
            { partition: 0, timestamp: -2 },
            { partition: 1, timestamp: 1700000000000 },
          ],
        },
      ],
    });
    expect(core.decodeListOffsetsRequest(r, 3, false)).toEqual({
      isolationLevel: 1,
      topics: [
        {
          name: "t",
          partitions: [
            { partitionIndex: 0, timestamp: -2 },
            { partitionIndex: 1, timestamp: 1700000000000 },
          ],
        },
      ],
    });
    const res = await kResponse("listOffsets/v3").decode(
      responseBytes((w) =>
        core.encodeListOffsetsResponse(w, 3, false, {
          throttleTimeMs: 0,
          topics: [{ name: "t", partitions: [{ partitionIndex: 0, errorCode: 0, timestamp: -1, offset: 5, leaderEpoch: 0 }] }],
        }),
      ),
    );
    expect(res.responses).toEqual([{ topic: "t", partitions: [{ partition: 0, errorCode: 0, timestamp: "-1", offset: "5" }] }]);

    const w7 = new Writer().int32(-1).int8(0).uvarint(2).string("t", true).uvarint(2).int32(0).int32(-1).int64(-3).taggedFields().taggedFields().taggedFields();
    const r7 = new Reader(w7.finish());
    expect(core.decodeListOffsetsRequest(r7, 7, true)).toEqual({ isolationLevel: 0, topics: [{ name: "t", partitions: [{ partitionIndex: 0, timestamp: -3 }] }] });
    expect(r7.remaining).toBe(0);
  });

  it("CreateTopics v3 and DeleteTopics v1 from kafkajs", async () => {
    const r = await requestBytes("createTopics/v3", {
      topics: [{ topic: "t", numPartitions: 3, replicationFactor: 1, configEntries: [{ name: "retention.ms", value: "1000" }] }],
      timeout: 5000,
      validateOnly: false,
    });
    expect(topics.decodeCreateTopicsRequest(r, 3, false)).toEqual({
      topics: [{ name: "t", numPartitions: 3, replicationFactor: 1, assignments: [], configs: [{ name: "retention.ms", value: "1000" }] }],
      timeoutMs: 5000,
      validateOnly: false,
    });
    const d = await requestBytes("deleteTopics/v1", { topics: ["a", "b"], timeout: 100 });
    expect(topics.decodeDeleteTopicsRequest(d, 1, false)).toEqual({ topicNames: ["a", "b"], timeoutMs: 100 });
    const res = await kResponse("createTopics/v3").decode(
      responseBytes((w) => topics.encodeCreateTopicsResponse(w, 3, false, { throttleTimeMs: 0, topics: [{ name: "t", errorCode: 36, errorMessage: "exists" }] })),
    );
    expect(res.topicErrors).toEqual([{ topic: "t", errorCode: 36, errorMessage: "exists" }]);
  });
});

describe("classic groups", () => {
  it("JoinGroup v5 request with kafkajs's subscription; answer with the server-side-assignor leader", async () => {
    const metadata = MemberMetadata.encode({ version: 1, topics: ["orders", "payments"], userData: Buffer.from("ud") });
    const r = await requestBytes("joinGroup/v5", {
      groupId: "g",
      sessionTimeout: 30000,
      rebalanceTimeout: 60000,
      memberId: "",
      groupInstanceId: null,
      protocolType: "consumer",
      groupProtocols: [{ name: "RoundRobinAssigner", metadata }],
    });
    const req = groups.decodeJoinGroupRequest(r, 5, false);
    expect(req).toMatchObject({ groupId: "g", sessionTimeoutMs: 30000, rebalanceTimeoutMs: 60000, memberId: "", groupInstanceId: null, protocolType: "consumer" });
    expect(groups.decodeSubscription(req.protocols[0]!.metadata)).toMatchObject({ version: 1, topics: ["orders", "payments"], ownedPartitions: [] });
    const res = await kResponse("joinGroup/v5").decode(
      responseBytes((w) =>
        groups.encodeJoinGroupResponse(w, 5, false, { throttleTimeMs: 0, errorCode: 0, generationId: 4, protocolName: "RoundRobinAssigner", leader: "server", memberId: "m-1", members: [] }),
      ),
    );
    expect(res).toMatchObject({ errorCode: 0, generationId: 4, groupProtocol: "RoundRobinAssigner", leaderId: "server", memberId: "m-1", members: [] });
  });

  it("SyncGroup v3 answer carries an assignment kafkajs decodes", async () => {
    const assignment = groups.encodeAssignment([
      { topic: "orders", partitions: [0, 2] },
      { topic: "payments", partitions: [1] },
    ]);
    const res = await kResponse("syncGroup/v3").decode(responseBytes((w) => groups.encodeSyncGroupResponse(w, 3, false, { throttleTimeMs: 0, errorCode: 0, assignment })));
    expect(MemberAssignment.decode(res.memberAssignment)).toEqual({ version: 0, assignment: { orders: [0, 2], payments: [1] }, userData: Buffer.alloc(0) });
    expect(groups.decodeAssignment(assignment)).toEqual({
      version: 0,
      assigned: [
        { topic: "orders", partitions: [0, 2] },
        { topic: "payments", partitions: [1] },
      ],
    });
  });

  it("OffsetCommit v5 request; OffsetFetch v4, Heartbeat v3, LeaveGroup v3, DescribeGroups v2, ListGroups v2, DeleteGroups v1 answers", async () => {
    const r = await requestBytes("offsetCommit/v5", {
      groupId: "g",
      groupGenerationId: 3,
      memberId: "m",
      topics: [{ topic: "t", partitions: [{ partition: 1, offset: "42", metadata: "md" }] }],
    });
    expect(groups.decodeOffsetCommitRequest(r, 5, false)).toEqual({
      groupId: "g",
      generationId: 3,
      memberId: "m",
      groupInstanceId: null,
      topics: [{ name: "t", partitions: [{ partitionIndex: 1, committedOffset: 42, committedMetadata: "md" }] }],
    });
    const of = await kResponse("offsetFetch/v4").decode(
      responseBytes((w) =>
        groups.encodeOffsetFetchResponse(w, 4, false, {
          throttleTimeMs: 0,
          errorCode: 0,
          topics: [{ name: "t", partitions: [{ partitionIndex: 1, committedOffset: 42, metadata: "md", errorCode: 0 }] }],
        }),
      ),
    );
    expect(of.responses).toEqual([{ topic: "t", partitions: [{ partition: 1, offset: "42", metadata: "md", errorCode: 0 }] }]);
    expect(await kResponse("heartbeat/v3").decode(responseBytes((w) => groups.encodeHeartbeatResponse(w, 3, false, { throttleTimeMs: 0, errorCode: 27 })))).toMatchObject({ errorCode: 27 });
    const lg = await kResponse("leaveGroup/v3").decode(
      responseBytes((w) => groups.encodeLeaveGroupResponse(w, 3, false, { throttleTimeMs: 0, errorCode: 0, members: [{ memberId: "m", groupInstanceId: null, errorCode: 0 }] })),
    );
    expect(lg.members).toEqual([{ memberId: "m", groupInstanceId: null, errorCode: 0 }]);
    const dg = await kResponse("describeGroups/v2").decode(
      responseBytes((w) =>
        groups.encodeDescribeGroupsResponse(w, 2, false, {
          throttleTimeMs: 0,
          groups: [
            {
              errorCode: 0,
              groupId: "g",
              groupState: "Stable",
              protocolType: "consumer",
              protocolData: "range",
              members: [
                {
                  memberId: "m",
                  groupInstanceId: null,
                  clientId: "c",
                  clientHost: "",
                  memberMetadata: groups.encodeSubscription(["t"]),
                  memberAssignment: groups.encodeAssignment([{ topic: "t", partitions: [0] }]),
                },
              ],
            },
          ],
        }),
      ),
    );
    expect(dg.groups[0]).toMatchObject({ groupId: "g", state: "Stable", protocol: "range", members: [{ memberId: "m", clientId: "c" }] });
    const lgs = await kResponse("listGroups/v2").decode(
      responseBytes((w) => groups.encodeListGroupsResponse(w, 2, false, { throttleTimeMs: 0, errorCode: 0, groups: [{ groupId: "g", protocolType: "consumer" }] })),
    );
    expect(lgs.groups).toEqual([{ groupId: "g", protocolType: "consumer" }]);
    const del = await kResponse("deleteGroups/v1").decode(
      responseBytes((w) => groups.encodeDeleteGroupsResponse(w, 1, false, { throttleTimeMs: 0, results: [{ groupId: "g", errorCode: 68 }] })),
    );
    expect(del.results).toMatchObject([{ groupId: "g", errorCode: 68 }]);
  });
});

describe("compression codecs", () => {
  it("snappy (raw and xerial-framed) and lz4 frames decompress; a bound past the limit is MESSAGE_TOO_LARGE", async () => {
    const snappyjs = require("snappyjs");
    const lz4js = require("lz4js");
    const input = te.encode("hello kafka ".repeat(500));
    expect(snappyDecompress(snappyjs.compress(input), 1 << 20)).toEqual(input);
    const block = snappyjs.compress(input);
    const xerial = new Writer()
      .raw(new Uint8Array([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0]))
      .int32(1)
      .int32(1)
      .int32(block.length)
      .raw(block)
      .int32(block.length)
      .raw(block)
      .finish();
    expect(snappyDecompress(xerial, 1 << 20)).toEqual(new Uint8Array([...input, ...input]));
    expect(lz4Decompress(lz4js.compress(input), 1 << 20)).toEqual(input);
    expect(() => lz4Decompress(lz4js.compress(input), 100)).toThrow(RangeError);
    await expect(decompress(1, gzipSync(input), 100)).rejects.toMatchObject({ kafkaError: "MESSAGE_TOO_LARGE" });
    await expect(decompress(2, snappyjs.compress(input), 100)).rejects.toMatchObject({ kafkaError: "MESSAGE_TOO_LARGE" });
    await expect(decompress(1, te.encode("not gzip"), 1 << 20)).rejects.toMatchObject({ kafkaError: "CORRUPT_MESSAGE" });
    await expect(decompress(7, input, 1 << 20)).rejects.toMatchObject({ kafkaError: "UNSUPPORTED_COMPRESSION_TYPE" });
  });

  // lz4js checks no bound: a block size past the payload made it spin for minutes over
  // undefined bytes (one 14-byte payload froze the bridge for every client), and match
  // lengths of 255 per input byte decode to far more than a block may hold.
  it("an LZ4 frame whose blocks overrun the payload or their maximum size is CORRUPT_MESSAGE, at once", async () => {
    const lz4js = require("lz4js");
    // magic, FLG (version 1, independent blocks), BD (64 KiB blocks), header checksum
    const header = [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];
    const frame = (...parts: (number | number[])[]) => new Uint8Array([header, ...parts].flat());
    const u32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
    const cases = [
      frame(u32(0x7fffffff), 1, 2, 3), // a block of 2 GiB in 3 bytes
      frame(u32(0x80000000 + 100), 1, 2, 3), // an uncompressed block past the end
      frame(u32(0x20000), new Array(0x20000).fill(0), u32(0)), // larger than its 64 KiB block maximum
      // one literal, then a match of 4 + 15 + 255 * 300 bytes: more than the 64 KiB a block holds
      frame(u32(4 + 300 + 3), 0x1f, 0x61, 1, 0, new Array(300).fill(255), 0, 0x10, 0x61, u32(0)),
      frame(u32(4), 0x0f, 9, 0, 0, u32(0)), // a match before any output (offset 9)
      frame(u32(1), 0x10, u32(0)), // literals past the block's end
      new Uint8Array([...lz4js.compress(te.encode("abc")), 1]), // bytes after the frame
    ];
    for (const c of cases) await expect(decompress(3, c, 8 << 20)).rejects.toMatchObject({ kafkaError: "CORRUPT_MESSAGE" });
    // A frame that decodes to more than maxBytes is still MESSAGE_TOO_LARGE, and a valid one decodes.
    const big = lz4js.compress(new Uint8Array(300_000));
    await expect(decompress(3, big, 100_000)).rejects.toMatchObject({ kafkaError: "MESSAGE_TOO_LARGE" });
    expect(await decompress(3, big, 300_000)).toEqual(new Uint8Array(300_000));
  });

  // snappyjs checks copies against neither its output buffer nor the declared length: 8 MiB of
  // 3-byte copy tags kept the bridge busy 0.8 s, then answered the 16 declared bytes as if valid.
  it("a snappy block that decodes to more or less than its declared length, or copies from before its start, is CORRUPT_MESSAGE", async () => {
    const snappyjs = require("snappyjs");
    const copies = new Uint8Array(6 + 3 * 100_000);
    copies.set([16, 3 << 2, 1, 2, 3, 4]); // declares 16 bytes, a 4-byte literal ...
    for (let i = 6; i < copies.length; i += 3) copies.set([(63 << 2) | 2, 1, 0], i); // ... then 64-byte copies
    const cases = [
      copies,
      new Uint8Array([10, 3 << 2, 1, 2, 3, 4]), // declares 10, decodes to 4
      new Uint8Array([8, (3 << 2) | 2, 9, 0]), // a copy before any output
      new Uint8Array([8, 60 << 2, 200, 1]), // a literal past the end
    ];
    for (const c of cases) await expect(decompress(2, c, 8 << 20)).rejects.toMatchObject({ kafkaError: "CORRUPT_MESSAGE" });
    const input = te.encode("hello kafka ".repeat(500));
    expect(await decompress(2, snappyjs.compress(input), 1 << 20)).toEqual(input);
  });
});

describe("primitives", () => {
  it("varints, strings, bytes and arrays round-trip in classic and compact forms", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.option(fc.string({ unit: "grapheme" })),
        fc.boolean(),
        fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
        (sv, uv, s, compact, arr) => {
          const w = new Writer(1)
            .varint(sv)
            .uvarint(uv)
            .nullableString(s, compact)
            .nullableBytes(s === null ? null : te.encode(s), compact)
            .array(arr, compact, (w, v) => w.int32(v))
            .taggedFields();
          const r = new Reader(w.finish());
          expect(r.varint()).toBe(sv);
          expect(r.uvarint()).toBe(uv);
          expect(r.nullableString(compact)).toBe(s);
          const b = r.nullableBytes(compact);
          expect(b === null ? null : td.decode(b)).toBe(s);
          expect(r.array(compact, (r) => r.int32())).toEqual(arr);
          r.taggedFields();
          expect(r.remaining).toBe(0);
        },
      ),
    );
  });

  it("tagged fields we do not know are skipped", () => {
    const r = new Reader(
      new Writer()
        .uvarint(2)
        .uvarint(0)
        .uvarint(3)
        .raw(new Uint8Array([1, 2, 3]))
        .uvarint(5)
        .uvarint(0)
        .int8(9)
        .finish(),
    );
    r.taggedFields();
    expect(r.int8()).toBe(9);
  });

  it("every request decoder fails on garbage with KafkaDecodeError only (never another exception, never a huge allocation)", () => {
    const decoders: Array<(r: Reader, v: number, flex: boolean) => unknown> = [
      data.decodeProduceRequest,
      data.decodeFetchRequest,
      core.decodeMetadataRequest,
      core.decodeListOffsetsRequest,
      core.decodeFindCoordinatorRequest,
      core.decodeInitProducerIdRequest,
      topics.decodeCreateTopicsRequest,
      topics.decodeDeleteTopicsRequest,
      topics.decodeCreatePartitionsRequest,
      topics.decodeDescribeConfigsRequest,
      topics.decodeIncrementalAlterConfigsRequest,
      groups.decodeJoinGroupRequest,
      groups.decodeSyncGroupRequest,
      groups.decodeHeartbeatRequest,
      groups.decodeLeaveGroupRequest,
      groups.decodeOffsetCommitRequest,
      groups.decodeOffsetFetchRequest,
      groups.decodeDescribeGroupsRequest,
      groups.decodeDeleteGroupsRequest,
      (r) => readRequestHeader(r),
      (r) => groups.decodeSubscription(r.buf),
    ];
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 0, max: 12 }), fc.boolean(), (bytes, version, flex) => {
        for (const decode of decoders) {
          try {
            decode(new Reader(bytes), version, flex);
          } catch (e) {
            expect(e).toBeInstanceOf(KafkaDecodeError);
          }
        }
      }),
      { numRuns: 2000 },
    );
  }, 60_000); // 2000 runs x 21 decoders: seconds on a loaded machine (no timing is asserted)
});

describe("error mapping", () => {
  it("maps every Edgelog error code, to a Kafka code the bridge knows", () => {
    expect(Object.keys(EDGELOG_TO_KAFKA).sort()).toEqual(Object.keys(ERRORS).sort());
    const known = new Set<number>(Object.values(KafkaError));
    for (const code of Object.keys(ERRORS) as ErrorCode[]) expect(known.has(kafkaErrorCode(code))).toBe(true);
  });

  it("gives the codes clients expect", () => {
    expect(kafkaErrorCode("OFFSET_OUT_OF_RANGE")).toBe(1);
    expect(kafkaErrorCode("UNKNOWN_TOPIC_OR_PARTITION")).toBe(3);
    expect(kafkaErrorCode("OUT_OF_ORDER_SEQUENCE_NUMBER")).toBe(45);
    expect(kafkaErrorCode("INVALID_PRODUCER_EPOCH")).toBe(47);
    expect(kafkaErrorCode("FENCED_MEMBER_EPOCH")).toBe(110);
    expect(kafkaErrorCode("INVALID_BATCH")).toBe(2);
    expect(kafkaErrorCode("RECORD_TOO_LARGE")).toBe(10);
    expect(kafkaErrorCode("UNAVAILABLE")).toBe(6);
    expect(kafkaErrorCode("UNAVAILABLE", "group")).toBe(15);
    expect(kafkaErrorCode("INTERNAL")).toBe(-1);
  });
});
