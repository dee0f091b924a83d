/**
 * Checks the log calls at produce for the lifecycle's sake (pure): record timestamps within the
 * KIP-937 bounds, and a key on every record of a compacted topic.
 */
import { errorResult, type ErrorResult } from "../protocol/errors.ts";
import type { TimestampType } from "../protocol/types.ts";

/** `message.timestamp.*` of a topic. */
export interface TimestampBounds {
  timestampType: TimestampType;
  /** `message.timestamp.before.max.ms`: how far in the past (ms before nowMs) a timestamp may be. */
  beforeMaxMs: number;
  /** `message.timestamp.after.max.ms`: how far in the future (ms after nowMs) a timestamp may be. */
  afterMaxMs: number;
}

/**
 * KIP-937: under CreateTime a record whose timestamp is more than `beforeMaxMs` before `nowMs`, or
 * more than `afterMaxMs` after it, is refused, so that one bad timestamp cannot pin a segment
 * against time retention forever (a far-future max timestamp) or expire it at once (a far past
 * one). Under LogAppendTime the partition's clock replaces the timestamps, so nothing is checked.
 * Differences are computed without forming nowMs ± bound (which would leave the safe integers).
 * @param timestamps per record, in order across the request (ms).
 * @returns INVALID_TIMESTAMP (Kafka's code 32) with details {index, timestamp, nowMs, config,
 *   maxMs}, or null.
 */
export function checkTimestampBounds(timestamps: readonly number[], nowMs: number, bounds: TimestampBounds): ErrorResult | null {
  if (bounds.timestampType === "LogAppendTime") return null;
  for (let index = 0; index < timestamps.length; index++) {
    const timestamp = timestamps[index]!;
    if (nowMs - timestamp > bounds.beforeMaxMs) {
      return errorResult(
        "INVALID_TIMESTAMP",
        `Record ${index} has timestamp ${timestamp}, more than message.timestamp.before.max.ms (${bounds.beforeMaxMs}) before the broker's time ${nowMs}.`,
        {
          index,
          timestamp,
          nowMs,
          config: "message.timestamp.before.max.ms",
          maxMs: bounds.beforeMaxMs,
        },
      );
    }
    if (timestamp - nowMs > bounds.afterMaxMs) {
      return errorResult(
        "INVALID_TIMESTAMP",
        `Record ${index} has timestamp ${timestamp}, more than message.timestamp.after.max.ms (${bounds.afterMaxMs}) after the broker's time ${nowMs}.`,
        {
          index,
          timestamp,
          nowMs,
          config: "message.timestamp.after.max.ms",
          maxMs: bounds.afterMaxMs,
        },
      );
    }
  }
  return null;
}

/**
 * A compacted topic (`cleanup.policy` compact or compact,delete) refuses a record without a key:
 * compaction keeps the latest record per key and a keyless record has none (Kafka refuses it with
 * INVALID_RECORD, code 87, "Compacted topic cannot accept message without key"). An empty key is
 * a key.
 * @param keys per record, in order across the request; null = no key.
 * @returns INVALID_RECORD with details {index, reason: "null-key"}, or null.
 */
export function checkCompactedKeys(keys: Iterable<Uint8Array | null>, compacted: boolean): ErrorResult | null {
  if (!compacted) return null;
  let index = 0;
  for (const key of keys) {
    if (key === null) {
      return errorResult("INVALID_RECORD", `Record ${index} has no key: a compacted topic needs a key on every record.`, { index, reason: "null-key" });
    }
    index++;
  }
  return null;
}
