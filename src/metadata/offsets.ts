/**
 * The isolate's metadata offset watermark (docs/RAFT.md, "The gateway's topic cache"): per
 * metadata group, the highest metadata offset (Raft index of the metadata log) this isolate
 * has seen in any answer: a read's applied index, a write's record index. The gateway's topic
 * cache (src/gateway/topics.ts) treats an entry tagged with an older offset as stale, which
 * gives every lookup in the isolate monotonic reads and read-your-writes of the metadata.
 *
 * Module state: lives as long as the isolate. Offsets of different groups are not comparable,
 * hence the key.
 */
const latest = new Map<string, number>();

/** Raises the group's watermark to `offset` (never lowers it). Non-integers are ignored. */
export function noteMetadataOffset(groupId: string, offset: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) return;
  if (offset > (latest.get(groupId) ?? 0)) latest.set(groupId, offset);
}

/** The highest metadata offset of the group seen in this isolate; 0 when none (MetadataDO answers carry none). */
export function latestMetadataOffset(groupId: string): number {
  return latest.get(groupId) ?? 0;
}
