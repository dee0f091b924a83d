/**
 * The partition's schema: the rooms that own tables, in migration order, each with its own
 * migrations (design/partition-rooms.md rule 3), and the adoption of objects created before
 * per-room versions. The rooms without tables (waiters, streams/read) are not listed; the
 * switchboard (durable-objects/partition.ts) hands both to the base's `startUp`.
 */
import type { LegacyAdoption, RoomSchema } from "../../base.ts";
import { LIFECYCLE_MIGRATIONS } from "./lifecycle.ts";
import { LOG_MIGRATIONS } from "./log.ts";
import { PRODUCERS_MIGRATIONS } from "./producers.ts";
import { STREAMS_MIGRATIONS } from "./streams.ts";
import { SUBSCRIPTIONS_MIGRATIONS } from "./subscriptions.ts";

/** The rooms with tables, in migration order: each its own migrations, numbered from 1. */
export const PARTITION_ROOMS: readonly RoomSchema[] = [
  { room: "log", migrations: LOG_MIGRATIONS },
  { room: "producers", migrations: PRODUCERS_MIGRATIONS },
  { room: "streams", migrations: STREAMS_MIGRATIONS },
  { room: "subs", migrations: SUBSCRIPTIONS_MIGRATIONS },
  { room: "lifecycle", migrations: LIFECYCLE_MIGRATIONS },
];

/**
 * Objects created before rooms had one `_schema` version: 1 created meta, batches, producers
 * and producer_batches (today's log 1 and producers 1); 2 added the ds_* tables (streams 1).
 * Migrations newer than those (producers 2) then run as for any object.
 */
export const adoptLegacy: LegacyAdoption = (version): Record<string, number> => (version >= 2 ? { log: 1, producers: 1, streams: 1 } : { log: 1, producers: 1 });
