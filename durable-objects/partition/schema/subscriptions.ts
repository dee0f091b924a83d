/**
 * The subscriptions room's tables (durable-objects/partition/subscriptions.ts; Pulsar-style
 * subscriptions, docs/SUBSCRIPTIONS.md): its own migrations, numbered from 1.
 * `sub_subscriptions` holds one row per subscription of the partition: its configuration
 * (`meta` JSON: type, delivery policy, dead-letter topic and producer) and its durable cursor:
 * the mark-delete position as a column (the retention floor is its minimum) and the rest
 * (`cursor` JSON: acked ranges as compact range text, redelivery counts, nack delays, pending
 * dead-letter copies; src/subscriptions/command.ts `StoredSubscription`).
 */
import type { Migration } from "../../base.ts";

/** The subscriptions room's migrations (its own list, numbered from 1). */
export const SUBSCRIPTIONS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "subscriptions",
    up(sql) {
      sql.run(`
        CREATE TABLE sub_subscriptions (
          name TEXT PRIMARY KEY,
          meta TEXT NOT NULL,
          mark_delete INTEGER NOT NULL,
          cursor TEXT NOT NULL,
          updated_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
      `);
    },
  },
];
