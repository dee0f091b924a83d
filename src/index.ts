/**
 * Worker entry: the gateway's fetch handler, the scheduled R2 sweep, and the Durable Object classes (the runtime
 * finds them as exports of the main module).
 */
import { env } from "cloudflare:workers";
import { createApp } from "./app.ts";
import type { Env } from "./env.ts";
import { logAuthMode } from "./middleware/auth.ts";
import { sweepOrphanSegments } from "./gateway/segment-sweep.ts";

export { BenchDO } from "../durable-objects/bench.ts";
export { GroupCoordinatorDO } from "../durable-objects/group-coordinator.ts";
export { GroupDirectoryDO } from "../durable-objects/group-directory.ts";
export { MetadataDO } from "../durable-objects/metadata.ts";
export { PartitionDO } from "../durable-objects/partition.ts";
export { QuotaDO } from "../durable-objects/quota.ts";
export { RaftMemberDO } from "../durable-objects/raft-member.ts";

const app = createApp();
// The auth mode at start-up (docs/SECURITY.md): "OFF" for `npm start`, "not configured" for a
// deploy without auth settings.
logAuthMode(env as Env);

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  // The cron trigger (wrangler.toml): R2 segment objects that no topic owns (docs/LIFECYCLE.md "Orphans").
  scheduled: (controller, env, ctx) => ctx.waitUntil(sweepOrphanSegments(env, controller.scheduledTime)),
} satisfies ExportedHandler<Env>;
