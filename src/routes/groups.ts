/**
 * Consumer groups (docs/PROTOCOL.md "Consumer groups"). Each route validates its input and
 * makes one call to the group's coordinator object (or the group directory, for the list).
 *
 * Membership:  POST /v1/groups/{group}/heartbeat, POST /v1/groups/{group}/leave
 * Offsets:     POST /v1/groups/{group}/offsets (commit), POST /v1/groups/{group}/offsets/fetch,
 *              GET /v1/groups/{group}/offsets?topic=&autoOffsetReset=
 * Admin:       GET /v1/groups, GET | PATCH | DELETE /v1/groups/{group},
 *              POST /v1/groups/{group}/reset-offsets
 */
import type { Hono } from "hono";
import type { AppContext, AppEnv } from "../gateway/context.ts";
import { jsonBody } from "../gateway/http.ts";
import {
  parseAutoOffsetReset,
  parseCommit,
  parseGroupConfigs,
  parseGroupId,
  parseHeartbeat,
  parseLeave,
  parseOffsetFetch,
  parseResetOffsets,
  parseTopicSelection,
} from "../groups/requests.ts";
import { type GroupCoordinatorRpc, groupCoordinatorStub, groupDirectoryStub } from "../groups/rpc.ts";
import { toEdgelogError, type RpcResult } from "../protocol/errors.ts";
import type { OffsetFetchResponse } from "../protocol/groups.ts";

function coordinator(c: AppContext): { groupId: string; stub: GroupCoordinatorRpc } {
  const groupId = parseGroupId(c.req.param("group"));
  return { groupId, stub: groupCoordinatorStub(c.env, groupId) };
}

/**
 * Only the rows of topics the principal may DESCRIBE: an offset fetch of all the group's topics
 * (no topic list) and a group description would otherwise show committed offsets and log end
 * offsets of topics it cannot see. Kafka filters an all-topics OffsetFetch the same way
 * (unauthorized topics are left out, not failed); named topics were checked by the route table.
 */
function describable<T extends { topic: string }>(c: AppContext, rows: T[]): T[] {
  const auth = c.get("auth");
  return auth.superuser ? rows : rows.filter((r) => auth.can({ type: "topic", name: r.topic }, "describe"));
}

function visibleOffsets(c: AppContext, r: OffsetFetchResponse): OffsetFetchResponse {
  return { ...r, partitions: describable(c, r.partitions) };
}

/** The value of an RPC result without its `ok` flag, or the error thrown. */
function unwrap<T extends object>(r: RpcResult<T>): T {
  if (!r.ok) throw toEdgelogError(r);
  const { ok: _ok, ...rest } = r;
  return rest as unknown as T;
}

export function groupRoutes(app: Hono<AppEnv>): void {
  app.get("/v1/groups", async (c) => {
    // Only the groups the principal may describe (Kafka's ListGroups filter).
    const auth = c.get("auth");
    const { groups } = unwrap(await groupDirectoryStub(c.env).list());
    return c.json({ groups: groups.filter((g) => auth.can({ type: "group", name: g.groupId }, "describe")) });
  });

  app.post("/v1/groups/:group/heartbeat", async (c) => {
    const req = parseHeartbeat(jsonBody(c));
    const { groupId, stub } = coordinator(c);
    // The coordinator resolves the subscription against what this principal may describe.
    const auth = c.get("auth");
    return c.json(unwrap(await stub.heartbeat(groupId, req, auth.superuser ? null : auth.principal)));
  });

  app.post("/v1/groups/:group/leave", async (c) => {
    const req = parseLeave(jsonBody(c));
    const { groupId, stub } = coordinator(c);
    return c.json(unwrap(await stub.leave(groupId, req)));
  });

  app.post("/v1/groups/:group/offsets", async (c) => {
    const req = parseCommit(jsonBody(c));
    const { groupId, stub } = coordinator(c);
    return c.json(unwrap(await stub.commitOffsets(groupId, req)));
  });

  app.post("/v1/groups/:group/offsets/fetch", async (c) => {
    const req = parseOffsetFetch(jsonBody(c));
    const { groupId, stub } = coordinator(c);
    return c.json(visibleOffsets(c, unwrap(await stub.fetchOffsets(groupId, req))));
  });

  app.get("/v1/groups/:group/offsets", async (c) => {
    const names = c.req.queries("topic") ?? [];
    const topics =
      names.length === 0
        ? null
        : parseTopicSelection(
            names.map((topic) => ({ topic })),
            "topic",
          );
    const autoOffsetReset = parseAutoOffsetReset(c.req.query("autoOffsetReset"));
    const { groupId, stub } = coordinator(c);
    return c.json(visibleOffsets(c, unwrap(await stub.fetchOffsets(groupId, { topics, autoOffsetReset }))));
  });

  app.post("/v1/groups/:group/reset-offsets", async (c) => {
    const req = parseResetOffsets(jsonBody(c));
    const { groupId, stub } = coordinator(c);
    return c.json(unwrap(await stub.resetOffsets(groupId, req)));
  });

  app.get("/v1/groups/:group", async (c) => {
    const { groupId, stub } = coordinator(c);
    const d = unwrap(await stub.describe(groupId));
    if (c.get("auth").superuser) return c.json(d);
    const offsets = describable(c, d.offsets);
    // Other members (a superuser's, say) may hold topics this principal cannot see.
    const members = d.members.map((m) => ({
      ...m,
      subscribedTopicNames: describable(
        c,
        m.subscribedTopicNames.map((topic) => ({ topic })),
      ).map((t) => t.topic),
      assignment: describable(c, m.assignment),
      pendingRevocation: describable(c, m.pendingRevocation),
      targetAssignment: describable(c, m.targetAssignment),
    }));
    return c.json({ ...d, members, offsets, totalLag: offsets.reduce((sum, o) => sum + (o.lag ?? 0), 0) });
  });

  app.patch("/v1/groups/:group", async (c) => {
    const configs = parseGroupConfigs(jsonBody(c));
    const { groupId, stub } = coordinator(c);
    return c.json(unwrap(await stub.alterConfigs(groupId, configs)));
  });

  app.delete("/v1/groups/:group", async (c) => {
    const { groupId, stub } = coordinator(c);
    unwrap(await stub.deleteGroup(groupId));
    return c.body(null, 204);
  });
}
