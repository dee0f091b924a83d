/**
 * The lifecycle's view of a topic's configs (Kafka names -> the core's camelCase settings), with
 * KIP-405's -2 resolved. Pure.
 */
import { withConfigDefaults } from "../protocol/config.ts";
import type { TopicConfigs } from "../protocol/types.ts";
import type { CompactionConfig } from "./compaction.ts";
import type { TimestampBounds } from "./produce-checks.ts";
import type { RetentionConfig } from "./retention.ts";
import type { RollConfig } from "./segments.ts";
import { resolveLocalRetention, type TieringConfig } from "./tiered.ts";

export interface LifecycleConfig {
  roll: RollConfig;
  retention: RetentionConfig;
  compaction: CompactionConfig;
  timestamps: TimestampBounds;
  tiering: TieringConfig;
}

/** Settings of every lifecycle decision from a topic's stored configs (missing keys take their defaults). */
export function lifecycleConfig(stored: Partial<TopicConfigs>): LifecycleConfig {
  const c = withConfigDefaults(stored);
  const policy = c["cleanup.policy"];
  return {
    roll: { segmentBytes: c["segment.bytes"], segmentMs: c["segment.ms"] },
    retention: { delete: policy === "delete" || policy === "compact,delete", retentionMs: c["retention.ms"], retentionBytes: c["retention.bytes"] },
    compaction: {
      compact: policy === "compact" || policy === "compact,delete",
      deleteRetentionMs: c["delete.retention.ms"],
      minCompactionLagMs: c["min.compaction.lag.ms"],
      maxCompactionLagMs: c["max.compaction.lag.ms"],
      minCleanableDirtyRatio: c["min.cleanable.dirty.ratio"],
    },
    timestamps: { timestampType: c["message.timestamp.type"], beforeMaxMs: c["message.timestamp.before.max.ms"], afterMaxMs: c["message.timestamp.after.max.ms"] },
    tiering: {
      remoteStorageEnable: c["remote.storage.enable"],
      localRetentionMs: resolveLocalRetention(c["local.retention.ms"], c["retention.ms"]),
      localRetentionBytes: resolveLocalRetention(c["local.retention.bytes"], c["retention.bytes"]),
    },
  };
}
