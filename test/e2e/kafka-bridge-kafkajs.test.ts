/**
 * kafkajs (npm, pinned in package.json) against the Kafka bridge started in-process in front of
 * a real `wrangler dev` server: admin calls (topics, partitions, configs, groups), an idempotent producer, a consumer group of three
 * with one member stopped midway (at-least-once, duplicates only from the stopped member's
 * uncommitted window), two bridges side by side serving one group, and the 329 real GitHub webhook payloads both ways (kafkajs -> bridge ->
 * Edgelog SDK, and Edgelog SDK -> bridge -> kafkajs): byte-identical, per-key order kept, keys
 * on the partitions the Java client's partitioner picks.
 */
import { createRequire } from "node:module";
import { ConfigResourceTypes, Kafka, logLevel, type Consumer as KafkaConsumer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Producer, partitionForKey, type EdgelogClient } from "../../sdk/src/index.ts";
import { startKafkaBridge, type KafkaBridge } from "../../sdk/src/kafka-bridge/index.ts";
import { randomTopic, readAll, startWithClient, type DevServer } from "./dev-server.ts";

process.env["KAFKAJS_NO_PARTITIONER_WARNING"] = "1";

let server: DevServer;
let client: EdgelogClient;
let bridge: KafkaBridge;
let kafka: Kafka;

beforeAll(async () => {
  ({ server, client } = await startWithClient());
  // Built from the URL, as the CLI runs it: appends go through the bridge's own HTTP path (http.ts).
  bridge = await startKafkaBridge({ url: server.baseUrl, host: "127.0.0.1", port: 0, log: () => {} });
  kafka = new Kafka({ brokers: [`127.0.0.1:${bridge.port}`], clientId: "e2e", logLevel: logLevel.NOTHING, retry: { retries: 8 } });
});
afterAll(async () => {
  await bridge?.close();
  await server?.dispose();
});

const text = (b: Uint8Array | Buffer | null | undefined): string | null => (b === null || b === undefined ? null : Buffer.from(b).toString("utf8"));

function loadWebhooks(): Array<{ key: string; value: Buffer }> {
  const require = createRequire(import.meta.url);
  const index = require("@octokit/webhooks-examples/api.github.com/index.json") as Array<{ name: string; examples: Array<Record<string, unknown>> }>;
  const out: Array<{ key: string; value: Buffer }> = [];
  for (const ev of index) {
    for (const ex of ev.examples) {
      const repo = ex["repository"] as { full_name?: string } | undefined;
      out.push({ key: repo?.full_name ?? `(no repository)/${ev.name}`, value: Buffer.from(JSON.stringify(ex)) });
    }
  }
  return out;
}

/** Runs a group consumer until `done()` holds; returns it still connected. */
async function runUntil(
  consumer: KafkaConsumer,
  topic: string,
  onMessage: (partition: number, offset: number, key: string | null, value: Buffer | null) => Promise<void> | void,
): Promise<void> {
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ partition, message }) => onMessage(partition, Number(message.offset), text(message.key), message.value) });
}

async function waitFor(cond: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("kafkajs through the Kafka bridge", () => {
  it("admin: createTopics, fetchTopicOffsets, fetchOffsets, listGroups, describeGroups, deleteTopics", async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topic = randomTopic("kjs-admin");
      expect(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] })).toBe(true);
      expect((await client.describeTopic(topic)).partitions).toBe(3);
      await client.produce(topic, {
        records: [
          { value: "a", partition: 1 },
          { value: "b", partition: 1 },
        ],
      });
      const offsets = await admin.fetchTopicOffsets(topic);
      expect(offsets.sort((a, b) => a.partition - b.partition)).toEqual([
        { partition: 0, offset: "0", high: "0", low: "0" },
        { partition: 1, offset: "2", high: "2", low: "0" },
        { partition: 2, offset: "0", high: "0", low: "0" },
      ]);

      const groupId = randomTopic("kjs-admin-g");
      await admin.setOffsets({ groupId, topic, partitions: [{ partition: 1, offset: "1" }] });
      const fetched = await admin.fetchOffsets({ groupId, topics: [topic] });
      expect(fetched[0]!.partitions.sort((a, b) => a.partition - b.partition).map((p) => [p.partition, p.offset])).toEqual([
        [0, "-1"],
        [1, "1"],
        [2, "-1"],
      ]);
      const { groups } = await admin.listGroups();
      expect(groups).toContainEqual({ groupId, protocolType: "consumer" });
      const described = await admin.describeGroups([groupId]);
      expect(described.groups[0]).toMatchObject({ groupId, state: "Empty", members: [] });

      await admin.deleteTopics({ topics: [topic] });
      await expect(client.describeTopic(topic)).rejects.toMatchObject({ code: "UNKNOWN_TOPIC_OR_PARTITION" });
    } finally {
      await admin.disconnect();
    }
  });

  it("admin: createPartitions, describeConfigs; IncrementalAlterConfigs on a raw connection", async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topic = randomTopic("kjs-cfg");
      await client.createTopic({ name: topic, partitions: 2, configs: { "retention.ms": 3_600_000 } });
      await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] });
      expect((await client.describeTopic(topic)).partitions).toBe(5);
      await expect(admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] })).rejects.toThrow();
      expect((await client.describeTopic(topic)).partitions).toBe(5);

      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ["retention.ms", "cleanup.policy"] }],
      });
      const entries = Object.fromEntries(described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
      expect(entries).toEqual({ "retention.ms": "3600000", "cleanup.policy": "delete" });

      // IncrementalAlterConfigs v0 (kafkajs has only the older AlterConfigs): SET retention.ms,
      // DELETE (reset) cleanup.policy after setting it, one resource, one answer.
      const { connect } = await import("node:net");
      const { Reader, Writer } = await import("../../sdk/src/kafka-bridge/wire.ts");
      const socket = connect(bridge.port, "127.0.0.1");
      const answer = await new Promise<Buffer>((resolve, reject) => {
        let buf = Buffer.alloc(0);
        socket.on("data", (d: Buffer) => {
          buf = Buffer.concat([buf, d]);
          if (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) resolve(buf.subarray(4));
        });
        socket.on("error", reject);
        const w = new Writer().int32(0).int16(44).int16(0).int32(7).string("e2e", false);
        w.int32(1).int8(2).string(topic, false).int32(1).string("retention.ms", false).int8(0).nullableString("60000", false);
        w.bool(false);
        const frame = w.finish();
        new DataView(frame.buffer, frame.byteOffset).setInt32(0, frame.length - 4);
        socket.write(frame);
      });
      socket.destroy();
      const r = new Reader(new Uint8Array(answer));
      expect([r.int32(), r.int32()]).toEqual([7, 0]);
      expect(r.array(false, (r) => [r.int16(), r.nullableString(false), r.int8(), r.string(false)])).toEqual([[0, null, 2, topic]]);
      expect((await client.describeTopic(topic)).configs["retention.ms"]).toBe(60000);
    } finally {
      await admin.disconnect();
    }
  });

  it("an idempotent producer appends each record once, keys on the Java partitioner's partitions", async () => {
    const topic = randomTopic("kjs-idem");
    await client.createTopic({ name: topic, partitions: 4 });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent: Array<{ key: string; value: string }> = [];
    for (let round = 0; round < 5; round++) {
      const messages = Array.from({ length: 100 }, (_, i) => ({ key: `key-${i % 13}`, value: `r${round}-${i}` }));
      sent.push(...messages);
      await producer.send({ topic, messages });
    }
    await producer.disconnect();
    const got = await readAll(client, topic, 4);
    expect(got).toHaveLength(500);
    const enc = new TextEncoder();
    for (const r of got) expect(r.partition).toBe(partitionForKey(enc.encode(text(r.key)!), 4));
    for (let k = 0; k < 13; k++) {
      const key = `key-${k}`;
      const inLog = got
        .filter((r) => text(r.key) === key)
        .sort((a, b) => a.offset - b.offset)
        .map((r) => text(r.value));
      expect(inLog).toEqual(sent.filter((m) => m.key === key).map((m) => m.value));
    }
  });

  it("a consumer group of three, one stopped midway: every record consumed, duplicates only from the stopped member", async () => {
    const topic = randomTopic("kjs-group");
    const groupId = randomTopic("kjs-g");
    const partitions = 6;
    const total = 600;
    await client.createTopic({ name: topic, partitions });
    await client.produce(topic, { records: Array.from({ length: total }, (_, i) => ({ key: `k${i % 60}`, value: `v${i}` })) });

    const deliveries: Array<{ member: number; partition: number; offset: number; at: number }> = [];
    const consumers = [0, 1, 2].map(() => kafka.consumer({ groupId, heartbeatInterval: 500, sessionTimeout: 10_000, rebalanceTimeout: 20_000, maxBytesPerPartition: 2048 }));
    let stoppedAt = Number.POSITIVE_INFINITY;
    await Promise.all(
      consumers.map((c, member) =>
        runUntil(c, topic, async (partition, offset) => {
          deliveries.push({ member, partition, offset, at: Date.now() });
          await new Promise((r) => setTimeout(r, 5));
        }),
      ),
    );
    await waitFor(() => deliveries.length >= total / 3, "a third of the records");
    await consumers[0]!.disconnect();
    stoppedAt = Date.now();
    const distinct = (): number => new Set(deliveries.map((d) => `${d.partition}:${d.offset}`)).size;
    await waitFor(() => distinct() === total, "every record");
    await Promise.all([consumers[1]!.disconnect(), consumers[2]!.disconnect()]);

    // Every record at least once; a record seen twice was first seen by the stopped member
    // (its uncommitted window), and seen again only after it stopped.
    const first = new Map<string, (typeof deliveries)[number]>();
    for (const d of deliveries) {
      const k = `${d.partition}:${d.offset}`;
      const f = first.get(k);
      if (f === undefined) first.set(k, d);
      else {
        expect(f.member).toBe(0);
        expect(d.at).toBeGreaterThanOrEqual(stoppedAt);
      }
    }
    expect(first.size).toBe(total);
    expect(new Set(deliveries.map((d) => d.member))).toEqual(new Set([0, 1, 2]));

    // The group committed the end of every partition, and is empty now.
    const d = await client.describeGroup(groupId);
    expect(d.members).toEqual([]);
    const ends = (await client.describeTopic(topic)).partitionDetails.map((p) => [p.partition, p.logEndOffset]);
    expect(d.offsets.map((o) => [o.partition, o.committedOffset]).sort((a, b) => a[0]! - b[0]!)).toEqual(ends);

    // DeleteGroups of the empty group: its committed offsets are gone (OffsetFetch answers -1).
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.deleteGroups([groupId]);
      const [after] = await admin.fetchOffsets({ groupId, topics: [topic] });
      expect(after!.partitions.map((p) => p.offset)).toEqual(Array.from({ length: partitions }, () => "-1"));
    } finally {
      await admin.disconnect();
    }
  });

  it("two bridges side by side: a group member on each gets its own partitions, a producer on one, every record consumed by its partition's owner, offsets committed through both", async () => {
    const second = await startKafkaBridge({ url: server.baseUrl, host: "127.0.0.1", port: 0, log: () => {} });
    try {
      const kafka2 = new Kafka({ brokers: [`127.0.0.1:${second.port}`], clientId: "e2e-second", logLevel: logLevel.NOTHING, retry: { retries: 8 } });
      const topic = randomTopic("kjs-two");
      const groupId = randomTopic("kjs-two-g");
      const total = 200;
      await client.createTopic({ name: topic, partitions: 4 });
      const seen: Array<{ member: number; partition: number; offset: number }> = [];
      const consumers = [kafka, kafka2].map((k) => k.consumer({ groupId, heartbeatInterval: 500, sessionTimeout: 10_000, rebalanceTimeout: 20_000 }));
      await Promise.all(consumers.map((c, member) => runUntil(c, topic, (partition, offset) => void seen.push({ member, partition, offset }))));
      // Edgelog's coordinator, not either bridge, assigns: both members, disjoint partitions, all four.
      let owners = new Map<number, string>();
      const deadline = Date.now() + 60_000;
      for (;;) {
        const d = await client.describeGroup(groupId);
        owners = new Map();
        for (const m of d.members) for (const tp of m.assignment) for (const p of tp.partitions) owners.set(p, m.memberId);
        if (d.state === "Stable" && d.members.length === 2 && owners.size === 4 && new Set(owners.values()).size === 2) break;
        if (Date.now() > deadline) throw new Error(`group not stable with two members: ${JSON.stringify(d.members.map((m) => m.assignment))}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      await producer.send({ topic, acks: -1, messages: Array.from({ length: total }, (_, i) => ({ key: `k${i}`, value: `v${i}` })) });
      await producer.disconnect();
      await waitFor(() => new Set(seen.map((d) => `${d.partition}:${d.offset}`)).size === total, "every record");
      await Promise.all(consumers.map((c) => c.disconnect()));
      // Each partition's records went to one member only (no rebalance while producing), and both had some.
      const byPartition = new Map<number, Set<number>>();
      for (const d of seen) byPartition.set(d.partition, (byPartition.get(d.partition) ?? new Set()).add(d.member));
      for (const members of byPartition.values()) expect(members.size).toBe(1);
      expect(new Set(seen.map((d) => d.member))).toEqual(new Set([0, 1]));
      // Both members' commits (each through its own bridge) reached Edgelog: the log ends.
      const d = await client.describeGroup(groupId);
      const ends = (await client.describeTopic(topic)).partitionDetails.map((p) => [p.partition, p.logEndOffset]);
      expect(d.offsets.map((o) => [o.partition, o.committedOffset]).sort((a, b) => a[0]! - b[0]!)).toEqual(ends);
    } finally {
      await second.close();
    }
  });

  it("a fetch from an offset in the middle of a stored batch hands out nothing below it (field case B2)", async () => {
    const topic = randomTopic("kjs-mid");
    await client.createTopic({ name: topic, partitions: 1 });
    // One produce request: one stored batch of 10 records (offsets 0-9).
    await client.produce(topic, { records: Array.from({ length: 10 }, (_, i) => ({ value: `m${i}` })) }, { partition: 0 });
    const seen: number[] = [];
    const consumer = kafka.consumer({ groupId: randomTopic("kjs-mid-g"), heartbeatInterval: 500 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ autoCommit: false, eachMessage: async ({ message }) => void seen.push(Number(message.offset)) });
    consumer.seek({ topic, partition: 0, offset: "6" });
    await waitFor(() => seen.includes(9), "offset 9");
    await consumer.disconnect();
    // Records before the seek may have been handed out before it took effect; after it, 6..9 exactly.
    expect(seen.slice(seen.lastIndexOf(6))).toEqual([6, 7, 8, 9]);
  });

  it("329 GitHub webhook payloads: kafkajs -> bridge -> SDK, and SDK -> bridge -> kafkajs, byte-identical, per-key order, Java partitioner", async () => {
    const events = loadWebhooks();
    expect(events).toHaveLength(329);
    const expectedByKey = new Map<string, string[]>();
    for (const e of events) expectedByKey.set(e.key, [...(expectedByKey.get(e.key) ?? []), e.value.toString("base64")]);
    const enc = new TextEncoder();

    // kafkajs produces, the SDK reads.
    const t1 = randomTopic("kjs-webhooks");
    await client.createTopic({ name: t1, partitions: 6 });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: t1, messages: events.map((e) => ({ key: e.key, value: e.value })) });
    await producer.disconnect();
    const records = (await readAll(client, t1, 6)).sort((a, b) => a.partition - b.partition || a.offset - b.offset);
    expect(records).toHaveLength(329);
    const gotByKey = new Map<string, string[]>();
    for (const r of records) {
      const key = text(r.key)!;
      expect(r.partition).toBe(partitionForKey(enc.encode(key), 6));
      gotByKey.set(key, [...(gotByKey.get(key) ?? []), Buffer.from(r.value!).toString("base64")]);
    }
    expect(gotByKey).toEqual(expectedByKey);

    // The SDK produces, kafkajs reads.
    const t2 = randomTopic("sdk-webhooks");
    await client.createTopic({ name: t2, partitions: 6 });
    const sdkProducer = new Producer(client);
    await sdkProducer.send({ topic: t2, messages: events.map((e) => ({ key: e.key, value: new Uint8Array(e.value) })) });
    await sdkProducer.close();
    const consumed: Array<{ partition: number; offset: number; key: string; value: string }> = [];
    const consumer = kafka.consumer({ groupId: randomTopic("kjs-webhooks-g"), heartbeatInterval: 500 });
    await runUntil(consumer, t2, (partition, offset, key, value) => {
      consumed.push({ partition, offset, key: key!, value: value!.toString("base64") });
    });
    await waitFor(() => consumed.length >= 329, "329 records");
    await consumer.disconnect();
    expect(consumed).toHaveLength(329);
    const byKey = new Map<string, string[]>();
    for (const c of consumed.sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
      expect(c.partition).toBe(partitionForKey(enc.encode(c.key), 6));
      byKey.set(c.key, [...(byKey.get(c.key) ?? []), c.value]);
    }
    expect(byKey).toEqual(expectedByKey);
  });
});
