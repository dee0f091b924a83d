/**
 * The Kafka bridge's CreateTopics honours the replication factor (docs/KAFKA-BRIDGE.md): -1 is
 * the default, 1 and 3 become the topic config `replication.factor`, any other value is Kafka's
 * INVALID_REPLICATION_FACTOR and creates nothing. A scripted Edgelog (the SDK client's `fetch`
 * option) records the create requests.
 */
import { describe, expect, it } from "vitest";
import { KafkaError } from "../../sdk/src/kafka-bridge/errors.ts";
import { type BridgeContext, handleCreateTopics, withReplicationFactor } from "../../sdk/src/kafka-bridge/handlers.ts";
import { bridgeContext } from "./kafka-bridge-context.ts";

function context(): { ctx: BridgeContext; created: unknown[] } {
  const created: unknown[] = [];
  const fake: typeof fetch = async (_input, init) => {
    if (init?.method === "GET") return new Response(JSON.stringify({ topics: [] }), { status: 200, headers: { "content-type": "application/json" } });
    const body = JSON.parse(String(init?.body)) as { name: string; partitions: number; configs: Record<string, string> };
    created.push(body);
    const configs = { "replication.factor": Number(body.configs["replication.factor"] ?? 1) };
    return new Response(JSON.stringify({ name: body.name, topicId: "x", partitions: body.partitions, configs }), { status: 201, headers: { "content-type": "application/json" } });
  };
  const ctx = bridgeContext(fake);
  return { ctx, created };
}

const topic = (name: string, replicationFactor: number, configs: { name: string; value: string | null }[] = []) => ({ name, numPartitions: 1, replicationFactor, assignments: [], configs });

describe("Kafka bridge CreateTopics: replication factor", () => {
  it("-1 leaves the default; 1 and 3 set replication.factor; 2, 0 and 5 are INVALID_REPLICATION_FACTOR and create nothing", async () => {
    const { ctx, created } = context();
    const res = await handleCreateTopics(ctx, {
      topics: [topic("d", -1), topic("one", 1), topic("three", 3), topic("two", 2), topic("zero", 0), topic("five", 5)],
      timeoutMs: 1000,
      validateOnly: false,
    });
    expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ["d", 0],
      ["one", 0],
      ["three", 0],
      ["two", KafkaError.INVALID_REPLICATION_FACTOR],
      ["zero", KafkaError.INVALID_REPLICATION_FACTOR],
      ["five", KafkaError.INVALID_REPLICATION_FACTOR],
    ]);
    expect(KafkaError.INVALID_REPLICATION_FACTOR).toBe(38);
    expect(created).toEqual([
      { name: "public/default/d", partitions: 1, configs: {} },
      { name: "public/default/one", partitions: 1, configs: { "replication.factor": "1" } },
      { name: "public/default/three", partitions: 1, configs: { "replication.factor": "3" } },
    ]);
  });

  it("a replication factor contradicting the replication.factor config is refused; agreeing with it is not", () => {
    expect(withReplicationFactor(3, { "replication.factor": "1" })).toMatchObject({ ok: false });
    expect(withReplicationFactor(3, { "replication.factor": "3" })).toEqual({ ok: true, configs: { "replication.factor": "3" } });
    expect(withReplicationFactor(-1, { "replication.factor": "3" })).toEqual({ ok: true, configs: { "replication.factor": "3" } });
  });

  it("a config with a null value is INVALID_CONFIG and creates nothing, as Kafka's controller answers (it was silently dropped)", async () => {
    const { ctx, created } = context();
    const res = await handleCreateTopics(ctx, { topics: [topic("n", -1, [{ name: "retention.ms", value: null }])], timeoutMs: 1000, validateOnly: false });
    expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([["n", KafkaError.INVALID_CONFIG]]);
    expect(created).toEqual([]);
  });

  it("validateOnly refuses a bad factor too", async () => {
    const { ctx } = context();
    const res = await handleCreateTopics(ctx, { topics: [topic("two", 2)], timeoutMs: 1000, validateOnly: true });
    expect(res.topics[0]!.errorCode).toBe(KafkaError.INVALID_REPLICATION_FACTOR);
  });

  it("explicit replica assignments: [0] per partition 0..n-1 creates n partitions; duplicates, other brokers, gaps and numPartitions/replicationFactor beside them are refused and create nothing", async () => {
    const { ctx, created } = context();
    const assigned = (name: string, assignments: { partitionIndex: number; brokerIds: number[] }[], numPartitions = -1, replicationFactor = -1) => ({
      name,
      numPartitions,
      replicationFactor,
      assignments,
      configs: [],
    });
    const res = await handleCreateTopics(ctx, {
      topics: [
        assigned("ok", [
          { partitionIndex: 1, brokerIds: [0] },
          { partitionIndex: 0, brokerIds: [0] },
        ]),
        assigned("dup", [{ partitionIndex: 0, brokerIds: [0, 0, 0] }]),
        assigned("other", [{ partitionIndex: 0, brokerIds: [1] }]),
        assigned("empty", [{ partitionIndex: 0, brokerIds: [] }]),
        assigned("gap", [
          { partitionIndex: 0, brokerIds: [0] },
          { partitionIndex: 2, brokerIds: [0] },
        ]),
        assigned("twice", [
          { partitionIndex: 0, brokerIds: [0] },
          { partitionIndex: 0, brokerIds: [0] },
        ]),
        assigned("withCount", [{ partitionIndex: 0, brokerIds: [0] }], 1),
        assigned("withFactor", [{ partitionIndex: 0, brokerIds: [0] }], -1, 1),
      ],
      timeoutMs: 1000,
      validateOnly: false,
    });
    expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ["ok", 0],
      ["dup", KafkaError.INVALID_REPLICA_ASSIGNMENT],
      ["other", KafkaError.INVALID_REPLICA_ASSIGNMENT],
      ["empty", KafkaError.INVALID_REPLICA_ASSIGNMENT],
      ["gap", KafkaError.INVALID_REPLICA_ASSIGNMENT],
      ["twice", KafkaError.INVALID_REPLICA_ASSIGNMENT],
      ["withCount", KafkaError.INVALID_REQUEST],
      ["withFactor", KafkaError.INVALID_REQUEST],
    ]);
    expect(KafkaError.INVALID_REPLICA_ASSIGNMENT).toBe(39);
    expect(created).toEqual([{ name: "public/default/ok", partitions: 2, configs: {} }]);
  });
});
