/**
 * Reads over gaps (pure). Compaction and deleteRecords leave holes in the offset space: a batch
 * may hold fewer records than its [baseOffset, lastOffset] range, whole batches may be gone, and
 * a fetch may start inside a batch (field case B2). The rule every reader relies on: an answer
 * below the high watermark always moves `nextOffset` past what it looked at, even when it holds
 * no record, so that no consumer (SDK consumer, group consumer, CLI, Durable Streams reader)
 * stalls on a range that was compacted away. Kafka gets the same from returning whole batches
 * whose last offset the consumer skips to.
 */

/** What a fetch found, as the log's read path knows it. */
export interface ReadOutcome {
  /** The offset the fetch asked for (already checked to be in [logStartOffset, logEndOffset]). */
  offset: number;
  highWatermark: number;
  /**
   * Last offset of the last batch the answer covers (its range, not its last surviving record),
   * or null when no stored batch at or after `offset` lies below the high watermark.
   */
  lastBatchOffset: number | null;
  /** True when a stored batch below the high watermark follows the covered ones (the answer stopped at a limit). */
  more: boolean;
}

/**
 * The `nextOffset` of a fetch answer:
 * - at or past the high watermark: `offset` (nothing to skip; the consumer waits there);
 * - the answer stopped at a limit (`more`): the last covered batch's lastOffset + 1, even if
 *   compaction emptied its tail or every record in it was below `offset` (B2);
 * - otherwise nothing else is stored below the high watermark, so [offset, HW) has been looked at
 *   whole and the rest is a compacted or truncated gap: the high watermark. An empty answer below
 *   the high watermark therefore always moves the consumer, in one round trip.
 * Never below `offset`, never above the high watermark unless `offset` already is.
 */
export function nextFetchOffset(r: ReadOutcome): number {
  if (r.offset >= r.highWatermark) return r.offset;
  if (!r.more || r.lastBatchOffset === null) return r.highWatermark;
  return Math.min(Math.max(r.lastBatchOffset + 1, r.offset), r.highWatermark);
}

/**
 * The records of a fetched batch that the answer hands out: offsets >= the fetch offset and >= the
 * log start offset (a batch straddling the log start after deleteRecords keeps its lower records
 * on disk until the whole batch is below it), and below the high watermark.
 */
export function visibleRecords<T extends { offset: number }>(records: readonly T[], fetchOffset: number, logStartOffset: number, highWatermark: number): T[] {
  const from = Math.max(fetchOffset, logStartOffset);
  return records.filter((r) => r.offset >= from && r.offset < highWatermark);
}
