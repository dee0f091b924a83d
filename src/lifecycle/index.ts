/**
 * Public API of the storage lifecycle's pure core (docs/LIFECYCLE.md): segment plan, retention and
 * deleteRecords, produce-time checks, compaction, reads over gaps, tiered storage. No I/O, no clock
 * (`nowMs` is passed in), no Workers imports: it imports only src/protocol, src/codec and
 * src/partition/core.ts (test/unit/lifecycle-layering.test.ts). The lifecycle room of the
 * partition Durable Object is its shell.
 */

// ---- segments ----
export { applySegmentCommand, checkSegmentIndex, migrateSlice, planIdleRoll, planSegmentAppend, rollReason, segmentAt, segmentEnd } from "./segments.ts";
export type { BatchMeta, RemoteState, RollConfig, RollReason, SegmentCommand, SegmentLocation, SegmentRow } from "./segments.ts";

// ---- retention and deleteRecords ----
export { planDeleteRecords, planRetention, planTruncateSlice, truncationTarget } from "./retention.ts";
export type { DeleteRecordsPlan, RetentionConfig, RetentionInput, RetentionPlan, RetentionReason, SliceLimits, StoredBatchSpan, TruncateCommand, TruncateSlice } from "./retention.ts";

// ---- produce-time checks ----
export { checkCompactedKeys, checkTimestampBounds } from "./produce-checks.ts";
export type { TimestampBounds } from "./produce-checks.ts";

// ---- compaction ----
export {
  INITIAL_COMPACTION_STATE,
  KEY_MAP_ENTRY_BYTES,
  KEY_ROW_BYTES,
  abortCompaction,
  checkpointOf,
  compactionReadRange,
  compactionStep,
  encodeKeyRows,
  keyId,
  planCompactionPass,
  restoreCompaction,
  startCompaction,
} from "./compaction.ts";
export type {
  CompactionBatch,
  CompactionCheckpoint,
  CompactionCommand,
  CompactionConfig,
  CompactionDecision,
  CompactionInput,
  CompactionLimits,
  CompactionPass,
  CompactionRecord,
  CompactionSlice,
  CompactionState,
  CompactionStepResult,
  KeyRow,
  KeyRows,
  PassSegment,
} from "./compaction.ts";

// ---- compaction pacing ----
export {
  DEFAULT_COMPACTION_PACE,
  FIRST_PACED_STEP_BYTES,
  FULL_STEP_BUDGET,
  MAX_PAUSE_MS,
  MIN_MAX_BYTES_PER_SECOND,
  MIN_STEP_BYTES,
  RECENT_APPEND_MS,
  appendsFlowing,
  compactionPaceFromVars,
  compactionPauseMs,
  compactionStepBudget,
} from "./pace.ts";
export type { CompactionPace, CompactionPaceVars, StepBudget, StepCost } from "./pace.ts";

// ---- the bytes of a rewritten (compacted) batch ----
export { rewriteStoredBatch, scanRecordKeys } from "./batch-rewrite.ts";
export type { ScannedKey } from "./batch-rewrite.ts";

// ---- reads over gaps ----
export { nextFetchOffset, visibleRecords } from "./reads.ts";
export type { ReadOutcome } from "./reads.ts";

// ---- tiered storage ----
export {
  SEGMENT_HEADER_BYTES,
  SEGMENT_INDEX_ENTRY_BYTES,
  SEGMENT_OBJECT_MAGIC,
  SEGMENT_OBJECT_VERSION,
  SegmentObjectError,
  SegmentObjectWriter,
  R2_MAX_PARTS,
  R2_MIN_PART_BYTES,
  completeRemoteDelete,
  completeUpload,
  decodeSegmentHeader,
  decodeSegmentIndex,
  decodeSegmentObject,
  encodeSegmentObject,
  localStartOffset,
  lookupSegmentRange,
  planTiering,
  readSource,
  resolveLocalRetention,
  segmentIndexRange,
  segmentObjectKey,
} from "./tiered.ts";
export type { ReadSource, RemoteEffect, SegmentIndexEntry, SegmentObjectHeader, TieringConfig, TieringInput, TieringPlan } from "./tiered.ts";

// ---- configs ----
export { lifecycleConfig } from "./config.ts";
export type { LifecycleConfig } from "./config.ts";

// What nothing owns: the owner check and the R2 sweeps.
export {
  ORPHAN_OBJECT_GRACE_MS,
  OWNER_CHECK_GRACE_MS,
  OWNER_CHECK_INTERVAL_MS,
  OWNER_RETRY_MS,
  SEGMENT_OBJECTS_ROOT,
  ownerVerdict,
  partitionObjectPrefix,
  sweepableObjects,
  topicIdOfPrefix,
  unownedObjectKeys,
} from "./owner.ts";
export type { OwnerVerdict } from "./owner.ts";
