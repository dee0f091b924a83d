/**
 * Codecs of KIP-848's ConsumerGroupHeartbeat (68, v0-v1) and ConsumerGroupDescribe (69, v0),
 * checked against the field layout of Kafka's schemas (ConsumerGroupHeartbeatRequest.json and
 * friends): requests are built byte by byte here (UUIDs as raw 16 bytes), answers are read back
 * field by field, so a field out of order or of the wrong width fails.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SUPPORTED_APIS, isFlexible } from "../../sdk/src/kafka-bridge/apis.ts";
import * as cg from "../../sdk/src/kafka-bridge/messages/consumer-groups.ts";
import * as core from "../../sdk/src/kafka-bridge/messages/core.ts";
import { KafkaDecodeError, Reader, Writer } from "../../sdk/src/kafka-bridge/wire.ts";

const ID_A = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
const ID_B = "11111111-2222-4333-8444-555555555555";
const uuidBytes = (id: string): Buffer => Buffer.from(id.replaceAll("-", ""), "hex");
const readUuid = (r: Reader): string => {
  const hex = Buffer.from(r.buf.subarray(r.pos, r.pos + 16)).toString("hex");
  r.pos += 16;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

/** A flexible request body: compact strings / arrays, tagged fields, raw UUIDs. */
function heartbeatRequest(version: number, o: { memberId: string; epoch: number; regex?: string | null; owned: Array<[string, number[]]> | null }): Reader {
  const w = new Writer();
  w.string("g1", true).string(o.memberId, true).int32(o.epoch);
  w.nullableString("inst-1", true); // InstanceId
  w.nullableString(null, true); // RackId
  w.int32(45_000); // RebalanceTimeoutMs
  w.nullableArray(["orders", "payments"], true, (w, t) => w.string(t, true)); // SubscribedTopicNames
  if (version >= 1) w.nullableString(o.regex ?? null, true); // SubscribedTopicRegex
  w.nullableString("uniform", true); // ServerAssignor
  w.nullableArray(o.owned, true, (w, [id, ps]) => {
    w.raw(uuidBytes(id));
    w.array(ps, true, (w, p) => w.int32(p));
    w.taggedFields();
  });
  w.taggedFields();
  return new Reader(w.finish().slice());
}

describe("ConsumerGroupHeartbeat (68)", () => {
  it("is advertised v0-v1, flexible from v0; ConsumerGroupDescribe (69) v0", () => {
    expect(SUPPORTED_APIS.ConsumerGroupHeartbeat).toMatchObject({ key: 68, minVersion: 0, maxVersion: 1 });
    expect(SUPPORTED_APIS.ConsumerGroupDescribe).toMatchObject({ key: 69, minVersion: 0, maxVersion: 0 });
    expect(isFlexible(68, 0) && isFlexible(68, 1) && isFlexible(69, 0)).toBe(true);
  });

  it("decodes a v1 request field by field, owned partitions by topic id", () => {
    const r = heartbeatRequest(1, { memberId: "m-1", epoch: 7, regex: "ord.*", owned: [[ID_A, [0, 2]]] });
    expect(cg.decodeConsumerGroupHeartbeatRequest(r, 1)).toEqual({
      groupId: "g1",
      memberId: "m-1",
      memberEpoch: 7,
      instanceId: "inst-1",
      rackId: null,
      rebalanceTimeoutMs: 45_000,
      subscribedTopicNames: ["orders", "payments"],
      subscribedTopicRegex: "ord.*",
      serverAssignor: "uniform",
      topicPartitions: [{ topicId: ID_A, partitions: [0, 2] }],
    });
    expect(r.remaining).toBe(0);
  });

  it("decodes a v0 request (no regex field) with null owned partitions", () => {
    const r = heartbeatRequest(0, { memberId: "", epoch: 0, owned: null });
    const req = cg.decodeConsumerGroupHeartbeatRequest(r, 0);
    expect(req).toMatchObject({ memberId: "", memberEpoch: 0, subscribedTopicRegex: null, topicPartitions: null, serverAssignor: "uniform" });
    expect(r.remaining).toBe(0);
  });

  it("encodes the answer: throttle, error, message, member id, epoch, interval, nullable assignment of topic ids", () => {
    const w = new Writer();
    cg.encodeConsumerGroupHeartbeatResponse(w, 1, {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      memberId: "m-1",
      memberEpoch: 3,
      heartbeatIntervalMs: 5000,
      assignment: [
        { topicId: ID_A, partitions: [0, 1] },
        { topicId: ID_B, partitions: [4] },
      ],
    });
    const r = new Reader(w.finish().slice());
    expect([r.int32(), r.int16(), r.nullableString(true), r.nullableString(true), r.int32(), r.int32()]).toEqual([0, 0, null, "m-1", 3, 5000]);
    expect(r.int8()).toBe(1); // Assignment present
    const tps = r.array(true, (r) => {
      const id = readUuid(r);
      const ps = r.array(true, (r) => r.int32());
      r.taggedFields();
      return [id, ps];
    });
    expect(tps).toEqual([
      [ID_A, [0, 1]],
      [ID_B, [4]],
    ]);
    r.taggedFields(); // Assignment's
    r.taggedFields(); // top level
    expect(r.remaining).toBe(0);
  });

  it("encodes an error answer with a null assignment as the -1 marker", () => {
    const w = new Writer();
    cg.encodeConsumerGroupHeartbeatResponse(w, 0, { throttleTimeMs: 0, errorCode: 110, errorMessage: "fenced", memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null });
    const r = new Reader(w.finish().slice());
    expect([r.int32(), r.int16(), r.nullableString(true), r.nullableString(true), r.int32(), r.int32(), r.int8()]).toEqual([0, 110, "fenced", null, 0, 0, -1]);
    r.taggedFields();
    expect(r.remaining).toBe(0);
  });
});

describe("ConsumerGroupDescribe (69)", () => {
  it("decodes the request and encodes groups, members and both assignments with topic id and name", () => {
    const w = new Writer();
    w.array(["g1", "g2"], true, (w, g) => w.string(g, true))
      .bool(true)
      .taggedFields();
    const r = new Reader(w.finish().slice());
    expect(cg.decodeConsumerGroupDescribeRequest(r, 0)).toEqual({ groupIds: ["g1", "g2"], includeAuthorizedOperations: true });
    expect(r.remaining).toBe(0);

    const out = new Writer();
    cg.encodeConsumerGroupDescribeResponse(out, 0, {
      throttleTimeMs: 0,
      groups: [
        {
          errorCode: 0,
          errorMessage: null,
          groupId: "g1",
          groupState: "Stable",
          groupEpoch: 4,
          assignmentEpoch: 4,
          assignorName: "cooperative-sticky",
          authorizedOperations: -2147483648,
          members: [
            {
              memberId: "m-1",
              instanceId: null,
              rackId: null,
              memberEpoch: 4,
              clientId: "c",
              clientHost: "",
              subscribedTopicNames: ["orders"],
              subscribedTopicRegex: "ord.*",
              assignment: [{ topicId: ID_A, topicName: "orders", partitions: [0, 1] }],
              targetAssignment: [{ topicId: ID_A, topicName: "orders", partitions: [0] }],
            },
          ],
        },
        {
          errorCode: 69,
          errorMessage: "no such group",
          groupId: "g2",
          groupState: "",
          groupEpoch: -1,
          assignmentEpoch: -1,
          assignorName: "",
          authorizedOperations: -2147483648,
          members: [],
        },
      ],
    });
    const a = new Reader(out.finish().slice());
    expect(a.int32()).toBe(0);
    const assignment = (r: Reader) => {
      const tps = r.array(true, (r) => {
        const x = [readUuid(r), r.string(true), r.array(true, (r) => r.int32())];
        r.taggedFields();
        return x;
      });
      r.taggedFields();
      return tps;
    };
    const groups = a.array(true, (r) => {
      const head = [r.int16(), r.nullableString(true), r.string(true), r.string(true), r.int32(), r.int32(), r.string(true)];
      const members = r.array(true, (r) => {
        const m = [
          r.string(true),
          r.nullableString(true),
          r.nullableString(true),
          r.int32(),
          r.string(true),
          r.string(true),
          r.array(true, (r) => r.string(true)),
          r.nullableString(true),
          assignment(r),
          assignment(r),
        ];
        r.taggedFields();
        return m;
      });
      const ops = r.int32();
      r.taggedFields();
      return { head, members, ops };
    });
    a.taggedFields();
    expect(a.remaining).toBe(0);
    expect(groups).toEqual([
      {
        head: [0, null, "g1", "Stable", 4, 4, "cooperative-sticky"],
        members: [["m-1", null, null, 4, "c", "", ["orders"], "ord.*", [[ID_A, "orders", [0, 1]]], [[ID_A, "orders", [0]]]]],
        ops: -2147483648,
      },
      { head: [69, "no such group", "g2", "", -1, -1, ""], members: [], ops: -2147483648 },
    ]);
  });

  it("both request decoders fail on garbage with KafkaDecodeError only", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 96 }), fc.integer({ min: 0, max: 1 }), (bytes, version) => {
        for (const decode of [cg.decodeConsumerGroupHeartbeatRequest, cg.decodeConsumerGroupDescribeRequest]) {
          try {
            decode(new Reader(bytes), version);
          } catch (e) {
            expect(e).toBeInstanceOf(KafkaDecodeError);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe("Metadata v9-v12 (flexible; topic ids, which KIP-848 assignments name topics by)", () => {
  it("decodes v12 topics by name and by id, v11 without the cluster-operations flag, v10 with it", () => {
    const v12 = new Writer();
    v12.arrayLength(2, true);
    v12.raw(new Uint8Array(16)).string("orders", true).taggedFields();
    v12.raw(uuidBytes(ID_A)).nullableString(null, true).taggedFields();
    v12.bool(false).bool(false).taggedFields(); // allow auto creation, include topic operations
    const r12 = new Reader(v12.finish().slice());
    expect(core.decodeMetadataRequest(r12, 12, true)).toEqual({ topics: ["orders"], topicIds: [ID_A], allowAutoTopicCreation: false });
    expect(r12.remaining).toBe(0);

    const v10 = new Writer();
    v10.uvarint(0); // null: every topic
    v10.bool(true).bool(false).bool(false).taggedFields(); // auto creation, cluster ops (v8-10), topic ops
    const r10 = new Reader(v10.finish().slice());
    expect(core.decodeMetadataRequest(r10, 10, true)).toEqual({ topics: null, topicIds: [], allowAutoTopicCreation: true });
    expect(r10.remaining).toBe(0);
  });

  it("encodes v12 with topic ids and a null name for an unknown id; v10 keeps the cluster operations field", () => {
    const res = (name: string | null) => ({
      throttleTimeMs: 0,
      brokers: [{ nodeId: 0, host: "h", port: 9092, rack: null }],
      clusterId: "edgelog",
      controllerId: 0,
      topics: [
        {
          errorCode: name === null ? 100 : 0,
          name,
          topicId: ID_A,
          isInternal: false,
          partitions: name === null ? [] : [{ errorCode: 0, partitionIndex: 0, leaderId: 0, leaderEpoch: 0, replicaNodes: [0], isrNodes: [0] }],
        },
      ],
    });
    for (const [version, name] of [
      [12, null],
      [12, "orders"],
      [10, "orders"],
    ] as const) {
      const w = new Writer();
      core.encodeMetadataResponse(w, version, true, res(name));
      const r = new Reader(w.finish().slice());
      expect(r.int32()).toBe(0);
      expect(
        r.array(true, (r) => {
          const b = [r.int32(), r.string(true), r.int32(), r.nullableString(true)];
          r.taggedFields();
          return b;
        }),
      ).toEqual([[0, "h", 9092, null]]);
      expect([r.nullableString(true), r.int32()]).toEqual(["edgelog", 0]);
      const topics = r.array(true, (r) => {
        const t = [r.int16(), r.nullableString(true), readUuid(r), r.bool()];
        const ps = r.array(true, (r) => {
          const p = [r.int16(), r.int32(), r.int32(), r.int32(), r.array(true, (r) => r.int32()), r.array(true, (r) => r.int32()), r.array(true, (r) => r.int32())];
          r.taggedFields();
          return p;
        });
        const ops = r.int32();
        r.taggedFields();
        return [...t, ps, ops];
      });
      expect(topics).toEqual([[name === null ? 100 : 0, name, ID_A, false, name === null ? [] : [[0, 0, 0, 0, [0], [0], []]], -2147483648]]);
      if (version <= 10) expect(r.int32()).toBe(-2147483648); // cluster_authorized_operations
      r.taggedFields();
      expect(r.remaining).toBe(0);
    }
  });
});

describe("UUID primitive", () => {
  it("round-trips any 16 bytes through the canonical text form", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (bytes) => {
        const id = new Reader(bytes).uuid();
        expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        expect(Buffer.from(new Writer().uuid(id).finish())).toEqual(Buffer.from(bytes));
      }),
    );
    expect(() => new Reader(new Uint8Array(15)).uuid()).toThrow(KafkaDecodeError);
    expect(() => new Writer().uuid("not-a-uuid")).toThrow(TypeError);
  });
});
