/**
 * Topic admin: `POST /v1/topics`, `GET /v1/topics`, and `GET | PATCH | DELETE /v1/topics/{topic}`.
 * Each is one call to the metadata store; writes invalidate this isolate's topic cache. Create
 * and alter take topic-level policy overrides (`policies`, docs/TENANTS.md) besides `configs`.
 * `POST /v1/topics/{topic}/partitions/{p}/delete-records` (KIP-107) is one call to the partition.
 */
import type { Hono } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { asObject, jsonBody, partitionParam, topicRoute } from "../gateway/http.ts";
import { checkPartition, partitionError, topicCache, withTopic } from "../gateway/topics.ts";
import { callAtLeader, noteLeader } from "../gateway/replicas.ts";
import { reassignReplica } from "../gateway/reassign.ts";
import { replicaIndexOf } from "../partition/rpc.ts";
import { LOCATION_HINTS, replicationFactorOf } from "../protocol/config.ts";
import type { DeleteRecordsResponse, PartitionLeaderResponse, ReplicaReassignmentResponse } from "../protocol/types.ts";
import { metadataStore } from "../metadata/store.ts";
import { EdgelogError, toEdgelogError } from "../protocol/errors.ts";
import { parseTopicName } from "../protocol/names.ts";

function optionalNumber(body: Record<string, unknown>, field: string): number | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (typeof v !== "number") throw new EdgelogError("INVALID_REQUEST", `${field} must be a number.`, { field });
  return v;
}

function optionalConfigs(body: Record<string, unknown>): Record<string, unknown> | undefined {
  const v = body.configs;
  if (v === undefined || v === null) return undefined;
  return asObject(v, "configs");
}

export function topicRoutes(app: Hono<AppEnv>): void {
  app.post("/v1/topics", async (c) => {
    const body = asObject(jsonBody(c), "body");
    if (typeof body.name !== "string") throw new EdgelogError("INVALID_REQUEST", "name must be a string.", { field: "name" });
    const partitions = optionalNumber(body, "partitions");
    const configs = optionalConfigs(body);
    const r = await metadataStore(c.env).createTopic({
      name: body.name,
      ...(partitions !== undefined ? { partitions } : {}),
      ...(configs !== undefined ? { configs } : {}),
      ...(body.policies !== undefined ? { policies: body.policies } : {}),
    });
    if (!r.ok) throw toEdgelogError(r);
    topicCache.invalidate(r.topic.name);
    return c.json(r.topic, 201);
  });

  app.get("/v1/topics", async (c) => {
    const r = await metadataStore(c.env).listTopics();
    if (!r.ok) throw toEdgelogError(r);
    // Only what the principal may describe (Kafka filters Metadata answers the same way).
    const auth = c.get("auth");
    return c.json({ topics: r.topics.filter((t) => auth.can({ type: "topic", name: t.name }, "describe")) });
  });

  topicRoute(app, "GET", "", async (c, name) => {
    const r = await metadataStore(c.env).describeTopic(name);
    if (!r.ok) throw toEdgelogError(r);
    return c.json(r.topic);
  });

  topicRoute(app, "PATCH", "", async (c, name) => {
    const body = asObject(jsonBody(c), "body");
    const partitions = optionalNumber(body, "partitions");
    const configs = optionalConfigs(body);
    const full = parseTopicName(name).full;
    topicCache.invalidate(full);
    const r = await metadataStore(c.env).alterTopic(full, {
      ...(partitions !== undefined ? { partitions } : {}),
      ...(configs !== undefined ? { configs } : {}),
      ...(body.policies !== undefined ? { policies: body.policies } : {}),
    });
    topicCache.invalidate(full);
    if (!r.ok) throw toEdgelogError(r);
    return c.json(r.topic);
  });

  // deleteRecords (KIP-107; field case B1): body {"offset": N}, -1 = the high watermark.
  topicRoute(app, "POST", "/partitions/:partition/delete-records", async (c, name) => {
    const partition = partitionParam(c);
    const body = asObject(jsonBody(c), "body");
    const offset = body.offset;
    if (typeof offset !== "number" || !Number.isSafeInteger(offset)) {
      throw new EdgelogError("INVALID_OFFSET", `offset must be an integer (-1 = the high watermark), got ${JSON.stringify(offset ?? null)}.`, { field: "offset" });
    }
    return withTopic(c.env, name, async (topic) => {
      checkPartition(topic, partition);
      // At the leader of a replicated partition (a Raft command every replica applies).
      const r = await callAtLeader(c.env, topic.topicId, partition, topic.configs, (p) => p.deleteRecords(offset));
      if (!r.ok) throw partitionError(r);
      const answer: DeleteRecordsResponse = { topic: topic.name, partition, logStartOffset: r.logStartOffset };
      return c.json(answer);
    });
  });

  // Leadership transfer (Kafka's preferred leader election, KIP-460; Raft's TimeoutNow): body
  // {"replica": "r2"}; answered once that replica leads (docs/RAFT.md "Leadership transfer").
  topicRoute(app, "POST", "/partitions/:partition/leader", async (c, name) => {
    const partition = partitionParam(c);
    const body = asObject(jsonBody(c), "body");
    const replica = body.replica;
    if (typeof replica !== "string" || replicaIndexOf(replica) === null) {
      throw new EdgelogError("INVALID_REQUEST", `replica must be a replica id such as "r2", got ${JSON.stringify(replica ?? null)}.`, { field: "replica" });
    }
    return withTopic(c.env, name, async (topic) => {
      checkPartition(topic, partition);
      const rf = replicationFactorOf(topic.configs);
      // At factor 1 only r1; above it the leader checks its configuration (a reassignment adds r4, r5, ...).
      if (rf === 1 && replica !== "r1") {
        throw new EdgelogError("INVALID_REQUEST", `${replica} is not a replica of this partition: replication.factor is ${rf}.`, { field: "replica", replicationFactor: rf });
      }
      const r = await callAtLeader(c.env, topic.topicId, partition, topic.configs, (p) => p.transferLeadership(replica));
      if (!r.ok) throw partitionError(r);
      noteLeader(topic.topicId, partition, r.leaderReplica, topic.configs);
      const answer: PartitionLeaderResponse = { topic: topic.name, partition, leaderReplica: r.leaderReplica, leaderEpoch: r.leaderEpoch, transferred: r.transferred };
      return c.json(answer);
    });
  });

  // Replica reassignment (Kafka's AlterPartitionReassignments, KIP-455, done as Raft single-server
  // membership changes): body {"replace": "r2", "location": "weur"}; answered once the new
  // replica is a voter and the replaced one is removed (docs/RAFT.md "Replica reassignment").
  topicRoute(app, "POST", "/partitions/:partition/replicas", async (c, name) => {
    const partition = partitionParam(c);
    const body = asObject(jsonBody(c), "body");
    const { replace, location } = body;
    if (typeof replace !== "string" || replicaIndexOf(replace) === null) {
      throw new EdgelogError("INVALID_REQUEST", `replace must be a replica id such as "r2", got ${JSON.stringify(replace ?? null)}.`, { field: "replace" });
    }
    if (location !== undefined && (typeof location !== "string" || !(LOCATION_HINTS as readonly string[]).includes(location))) {
      throw new EdgelogError("INVALID_REQUEST", `location must be one of ${LOCATION_HINTS.join(", ")}, got ${JSON.stringify(location)}.`, { field: "location" });
    }
    return withTopic(c.env, name, async (topic) => {
      checkPartition(topic, partition);
      const rf = replicationFactorOf(topic.configs);
      if (rf === 1) throw new EdgelogError("INVALID_REQUEST", "Replica reassignment needs a replicated partition (replication.factor 3).", { field: "replace", replicationFactor: rf });
      const req = location === undefined ? { replace } : { replace, location };
      // At the leader (which may hand leadership away before removing itself: the new leader
      // continues), then, with the metadata quorum, the placement recorded (src/gateway/reassign.ts).
      const r = await reassignReplica(c.env, topic, partition, req);
      if (!r.ok) throw partitionError(r);
      topicCache.invalidate(topic.name);
      const { ok: _ok, ...result } = r;
      const answer: ReplicaReassignmentResponse = { topic: topic.name, partition, ...result };
      return c.json(answer);
    });
  });

  topicRoute(app, "DELETE", "", async (c, name) => {
    const full = parseTopicName(name).full;
    topicCache.invalidate(full);
    const r = await metadataStore(c.env).deleteTopic(full);
    topicCache.invalidate(full);
    if (!r.ok) throw toEdgelogError(r);
    return c.body(null, 204);
  });
}
