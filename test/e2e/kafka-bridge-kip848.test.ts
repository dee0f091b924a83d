/**
 * KIP-848's ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) through the Kafka bridge
 * against a real `wrangler dev` server. No client here speaks them (kafkajs 2.2.4, librdkafka
 * 2.0.2 predate KIP-848), so requests are hand-encoded on a raw socket and answers read field
 * by field as Kafka's schemas lay them out (ConsumerGroupHeartbeatRequest/Response.json,
 * ConsumerGroupDescribeRequest/Response.json): two members share a topic through a
 * rebalance, describe shows them by topic id and name, a stale epoch is fenced, a member
 * leaves with epoch -1.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EdgelogClient } from "../../sdk/src/index.ts";
import { startKafkaBridge, type KafkaBridge } from "../../sdk/src/kafka-bridge/index.ts";
import { Reader, Writer } from "../../sdk/src/kafka-bridge/wire.ts";
import { randomTopic, startWithClient, type DevServer } from "./dev-server.ts";

let server: DevServer;
let client: EdgelogClient;
let bridge: KafkaBridge;
let conn: Conn;

/** One raw connection, one request at a time. */
class Conn {
  readonly #socket: Socket;
  #buf = Buffer.alloc(0);
  #wake: (() => void) | undefined;
  #closed = false;
  #correlation = 0;

  constructor(port: number) {
    this.#socket = connect(port, "127.0.0.1");
    this.#socket.on("data", (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      this.#wake?.();
    });
    this.#socket.on("error", () => {});
    this.#socket.on("close", () => {
      this.#closed = true;
      this.#wake?.();
    });
  }

  /**
   * Sends a request (header v2 when `flexible`, else v1) and returns its answer's body; a
   * flexible answer's header is v1, except ApiVersions' (always v0).
   */
  async request(apiKey: number, version: number, body: (w: Writer) => void, flexible = true): Promise<Reader> {
    const id = ++this.#correlation;
    const w = new Writer().int32(0).int16(apiKey).int16(version).int32(id).nullableString("kip848-e2e", false);
    if (flexible) w.taggedFields();
    body(w);
    const frame = w.finish();
    new DataView(frame.buffer, frame.byteOffset).setInt32(0, frame.length - 4);
    this.#socket.write(frame);
    while (!(this.#buf.length >= 4 && this.#buf.length >= 4 + this.#buf.readInt32BE(0))) {
      if (this.#closed) throw new Error("the bridge closed the connection");
      await new Promise<void>((r) => (this.#wake = r));
    }
    const size = this.#buf.readInt32BE(0);
    const r = new Reader(new Uint8Array(this.#buf.subarray(4, 4 + size)));
    this.#buf = this.#buf.subarray(4 + size);
    expect(r.int32()).toBe(id);
    if (flexible && apiKey !== 18) r.taggedFields();
    return r;
  }

  close(): void {
    this.#socket.destroy();
  }
}

const readUuid = (r: Reader): string => {
  const hex = Buffer.from(r.buf.subarray(r.pos, r.pos + 16)).toString("hex");
  r.pos += 16;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

interface Heartbeat {
  errorCode: number;
  errorMessage: string | null;
  memberId: string | null;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  assignment: Array<[string, number[]]> | null;
}

interface HeartbeatArgs {
  version?: number;
  memberId: string;
  epoch: number;
  instanceId?: string | null;
  topics?: string[] | null;
  regex?: string | null;
  assignor?: string | null;
  owned: Array<[string, number[]]> | null;
}

async function heartbeat(group: string, a: HeartbeatArgs): Promise<Heartbeat> {
  const version = a.version ?? 0;
  const r = await conn.request(68, version, (w) => {
    w.string(group, true).string(a.memberId, true).int32(a.epoch);
    w.nullableString(a.instanceId ?? null, true).nullableString(null, true);
    w.int32(a.epoch === 0 ? 60_000 : -1);
    w.nullableArray(a.topics ?? null, true, (w, t) => w.string(t, true));
    if (version >= 1) w.nullableString(a.regex ?? null, true);
    w.nullableString(a.assignor ?? null, true);
    w.nullableArray(a.owned, true, (w, [id, ps]) => {
      w.raw(Buffer.from(id.replaceAll("-", ""), "hex"));
      w.array(ps, true, (w, p) => w.int32(p));
      w.taggedFields();
    });
    w.taggedFields();
  });
  r.int32(); // throttle
  const out: Heartbeat = {
    errorCode: r.int16(),
    errorMessage: r.nullableString(true),
    memberId: r.nullableString(true),
    memberEpoch: r.int32(),
    heartbeatIntervalMs: r.int32(),
    assignment: null,
  };
  if (r.int8() >= 0) {
    out.assignment = r.array(true, (r) => {
      const tp: [string, number[]] = [readUuid(r), r.array(true, (r) => r.int32())];
      r.taggedFields();
      return tp;
    });
    r.taggedFields();
  }
  r.taggedFields();
  expect(r.remaining).toBe(0);
  return out;
}

async function describeGroups(groups: string[]) {
  const r = await conn.request(69, 0, (w) => {
    w.array(groups, true, (w, g) => w.string(g, true))
      .bool(false)
      .taggedFields();
  });
  r.int32();
  const assignment = (r: Reader) => {
    const tps = r.array(true, (r) => {
      const tp = { topicId: readUuid(r), topicName: r.string(true), partitions: r.array(true, (r) => r.int32()) };
      r.taggedFields();
      return tp;
    });
    r.taggedFields();
    return tps;
  };
  const out = r.array(true, (r) => {
    const g = {
      errorCode: r.int16(),
      errorMessage: r.nullableString(true),
      groupId: r.string(true),
      groupState: r.string(true),
      groupEpoch: r.int32(),
      assignmentEpoch: r.int32(),
      assignorName: r.string(true),
      members: r.array(true, (r) => {
        const m = {
          memberId: r.string(true),
          instanceId: r.nullableString(true),
          rackId: r.nullableString(true),
          memberEpoch: r.int32(),
          clientId: r.string(true),
          clientHost: r.string(true),
          subscribedTopicNames: r.array(true, (r) => r.string(true)),
          subscribedTopicRegex: r.nullableString(true),
          assignment: assignment(r),
          targetAssignment: assignment(r),
        };
        r.taggedFields();
        return m;
      }),
      authorizedOperations: r.int32(),
    };
    r.taggedFields();
    return g;
  });
  r.taggedFields();
  expect(r.remaining).toBe(0);
  return out;
}

const partitionsOf = (a: Array<[string, number[]]> | null): number[] => (a ?? []).flatMap(([, ps]) => ps).sort((x, y) => x - y);

beforeAll(async () => {
  ({ server, client } = await startWithClient());
  bridge = await startKafkaBridge({ client, host: "127.0.0.1", port: 0, log: () => {} });
  conn = new Conn(bridge.port);
});
afterAll(async () => {
  conn?.close();
  await bridge?.close();
  await server?.dispose();
});

describe("KIP-848 consumer group APIs through the Kafka bridge (raw socket)", () => {
  it("ApiVersions advertises ConsumerGroupHeartbeat v0-v1 and ConsumerGroupDescribe v0", async () => {
    const r = await conn.request(18, 3, (w) => w.string("raw", true).string("1", true).taggedFields());
    expect(r.int16()).toBe(0);
    const apis = r.array(true, (r) => {
      const a = [r.int16(), r.int16(), r.int16()];
      r.taggedFields();
      return a;
    });
    expect(apis).toContainEqual([68, 0, 1]);
    expect(apis).toContainEqual([69, 0, 0]);
  });

  it("two members share a topic through heartbeats; describe names them by topic id; a stale epoch is fenced; epoch -1 leaves", async () => {
    const topic = randomTopic("kip848");
    await client.createTopic({ name: topic, partitions: 4 });
    const topicId = (await client.describeTopic(topic)).topicId.toLowerCase();
    const group = `kip848-${Date.now()}`;

    // Member A joins with v0: no member id, epoch 0, topic names, Kafka's "uniform" assignor.
    const a0 = await heartbeat(group, { memberId: "", epoch: 0, topics: [topic], assignor: "uniform", owned: [] });
    expect(a0.errorCode).toBe(0);
    expect(a0.memberId).toMatch(/.+/);
    expect(a0.memberEpoch).toBeGreaterThan(0);
    expect(a0.heartbeatIntervalMs).toBeGreaterThan(0);
    expect(a0.assignment).toEqual([[topicId, [0, 1, 2, 3]]]);
    const memberA = a0.memberId!;
    let epochA = a0.memberEpoch;
    let ownedA = a0.assignment!;

    // Member B joins with v1, its own member id and a regex subscription over Kafka names.
    const memberB = crypto.randomUUID();
    const b0 = await heartbeat(group, { version: 1, memberId: memberB, epoch: 0, regex: topic.replace(/-[^-]*$/, "-.*"), owned: [] });
    expect(b0).toMatchObject({ errorCode: 0, memberId: memberB });
    let epochB = b0.memberEpoch;
    let ownedB = b0.assignment ?? [];

    // Heartbeat both, each reporting what it owns, until the 4 partitions are split 2 + 2.
    for (let i = 0; i < 40 && !(partitionsOf(ownedA).length === 2 && partitionsOf(ownedB).length === 2); i++) {
      const ha = await heartbeat(group, { memberId: memberA, epoch: epochA, owned: ownedA });
      expect(ha.errorCode).toBe(0);
      epochA = ha.memberEpoch;
      ownedA = ha.assignment!;
      const hb = await heartbeat(group, { version: 1, memberId: memberB, epoch: epochB, owned: ownedB });
      expect(hb.errorCode).toBe(0);
      epochB = hb.memberEpoch;
      ownedB = hb.assignment!;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect([...partitionsOf(ownedA), ...partitionsOf(ownedB)].sort()).toEqual([0, 1, 2, 3]);
    expect(partitionsOf(ownedA)).toHaveLength(2);
    for (const [id] of [...ownedA, ...ownedB]) expect(id).toBe(topicId);

    const [described, unknown] = await describeGroups([group, `${group}-none`]);
    expect(described).toMatchObject({ errorCode: 0, groupId: group, assignorName: "cooperative-sticky", authorizedOperations: -2147483648 });
    expect(["Stable", "Reconciling"]).toContain(described!.groupState);
    const byId = new Map(described!.members.map((m) => [m.memberId, m]));
    expect(byId.get(memberA)).toMatchObject({ subscribedTopicNames: [topic], subscribedTopicRegex: null, clientId: "kip848-e2e", rackId: null });
    expect(byId.get(memberB)).toMatchObject({ subscribedTopicNames: [], subscribedTopicRegex: topic.replace(/-[^-]*$/, "-.*") });
    expect(byId.get(memberA)!.assignment).toEqual([{ topicId, topicName: topic, partitions: partitionsOf(ownedA) }]);
    // Unlike DescribeGroups, an unknown group is GROUP_ID_NOT_FOUND (69).
    expect(unknown).toMatchObject({ errorCode: 69, groupId: `${group}-none` });

    // OffsetCommit v7 (non-flexible) from a KIP-848 member: its member epoch is the generation.
    const commit = await conn.request(
      8,
      7,
      (w) => {
        w.string(group, false).int32(epochA).string(memberA, false).nullableString(null, false);
        w.int32(1).string(topic, false).int32(1).int32(partitionsOf(ownedA)[0]!).int64(42).int32(-1).nullableString("", false);
      },
      false,
    );
    commit.int32(); // throttle
    expect(commit.array(false, (r) => [r.string(false), r.array(false, (r) => [r.int32(), r.int16()])])).toEqual([[topic, [[partitionsOf(ownedA)[0]!, 0]]]]);
    const fetched = await client.fetchOffsets(group, { topics: [{ topic, partitions: [partitionsOf(ownedA)[0]!] }] });
    expect(fetched.partitions[0]!.committedOffset).toBe(42);

    // Metadata v12 by topic id (how a KIP-848 client names what it was assigned).
    const md = await conn.request(3, 12, (w) => {
      w.uvarint(2)
        .raw(Buffer.from(topicId.replaceAll("-", ""), "hex"))
        .nullableString(null, true)
        .taggedFields();
      w.bool(false).bool(false).taggedFields();
    });
    md.int32(); // throttle
    const ints = (r: Reader) => r.array(true, (r) => r.int32());
    md.array(true, (r) => {
      const broker = [r.int32(), r.string(true), r.int32(), r.nullableString(true)];
      r.taggedFields();
      return broker;
    });
    expect([md.nullableString(true), md.int32()]).toEqual(["edgelog", 0]); // cluster id, controller
    const [t] = md.array(true, (r) => {
      const head = [r.int16(), r.nullableString(true), readUuid(r), r.bool()];
      const partitions = r.array(true, (r) => {
        const p = [r.int16(), r.int32(), r.int32(), r.int32(), ints(r), ints(r), ints(r)];
        r.taggedFields();
        return p[1];
      });
      r.int32(); // topic authorized operations
      r.taggedFields();
      return [...head, partitions];
    });
    expect(t).toEqual([0, topic, topicId, false, [0, 1, 2, 3]]);

    // A stale epoch is fenced (FENCED_MEMBER_EPOCH, 110) and nothing changes.
    const stale = await heartbeat(group, { memberId: memberA, epoch: epochA + 5, owned: ownedA });
    expect(stale).toMatchObject({ errorCode: 110, assignment: null });

    // Epoch -1 leaves: B's answer is epoch -1; A then gets every partition.
    const left = await heartbeat(group, { version: 1, memberId: memberB, epoch: -1, owned: null });
    expect(left).toMatchObject({ errorCode: 0, memberId: memberB, memberEpoch: -1 });
    for (let i = 0; i < 40 && partitionsOf(ownedA).length < 4; i++) {
      const ha = await heartbeat(group, { memberId: memberA, epoch: epochA, owned: ownedA });
      expect(ha.errorCode).toBe(0);
      epochA = ha.memberEpoch;
      ownedA = ha.assignment!;
      if (partitionsOf(ownedA).length < 4) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ownedA).toEqual([[topicId, [0, 1, 2, 3]]]);
    const [after] = await describeGroups([group]);
    expect(after!.members.map((m) => m.memberId)).toEqual([memberA]);

    // Leaving again: the member is gone (UNKNOWN_MEMBER_ID, 25).
    expect((await heartbeat(group, { version: 1, memberId: memberB, epoch: -1, owned: null })).errorCode).toBe(25);
    // An assignor Edgelog does not have: UNSUPPORTED_ASSIGNOR (112).
    expect((await heartbeat(`${group}-x`, { memberId: "", epoch: 0, topics: [topic], assignor: "rack-aware", owned: [] })).errorCode).toBe(112);
  });
});
