/**
 * Worker entry: the gateway's fetch handler, and the Durable Object classes (the runtime
 * finds them as exports of the main module).
 */
import { createApp } from "./app.ts";
import type { Env } from "./env.ts";

export { BenchDO } from "../durable-objects/bench.ts";
export { GroupCoordinatorDO } from "../durable-objects/group-coordinator.ts";
export { GroupDirectoryDO } from "../durable-objects/group-directory.ts";
export { MetadataDO } from "../durable-objects/metadata.ts";
export { PartitionDO } from "../durable-objects/partition.ts";
export { QuotaDO } from "../durable-objects/quota.ts";

const app = createApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
