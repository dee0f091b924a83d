/**
 * Limits with units in their names (shared/STYLE.md). Shared by gateway and SDK.
 * Platform limits that shape them: a Durable Object SQLite row (or BLOB) is at most 2 MB,
 * a DO RPC payload at most 32 MiB (developers.cloudflare.com/durable-objects/platform/limits).
 */

/** Largest produce request body the gateway reads. Larger: REQUEST_TOO_LARGE (413). */
export const MAX_REQUEST_BYTES = 8 * 1024 * 1024;

/**
 * Largest encoded record batch stored in one SQLite row. A produce request whose records
 * encode larger is split into several record batches, all written in one transaction.
 * Kept well under the 2 MB row limit.
 */
export const MAX_STORED_BATCH_BYTES = 1024 * 1024;

/** Upper bound for the topic config max.message.bytes (must fit one stored batch with its header). */
export const MAX_MESSAGE_BYTES_LIMIT = MAX_STORED_BATCH_BYTES - 1024;

/**
 * Lower bound for max.message.bytes: the smallest record (null key, empty value, no headers)
 * encodes to 7 bytes; below 64 not even a record with a few bytes of key and value fits, so a
 * smaller limit is a typo, not a policy.
 */
export const MIN_MAX_MESSAGE_BYTES = 64;

/** Lower bound for segment.bytes: a segment must hold at least one stored record batch. */
export const MIN_SEGMENT_BYTES = MAX_STORED_BATCH_BYTES;
/** Upper bound for segment.bytes (Kafka's 1 GiB default ceiling). */
export const MAX_SEGMENT_BYTES = 1024 * 1024 * 1024;

/** Most partitions a topic may have. */
export const MAX_PARTITIONS = 1024;

/**
 * Most produce requests a gateway coalesces into one partition RPC
 * (src/gateway/append-coalescer.ts); their bytes are bounded by MAX_APPEND_GROUP_BYTES.
 */
export const MAX_APPEND_GROUP_REQUESTS = 1000;
/** Most batch bytes in one coalesced append RPC: far below the 32 MiB RPC limit. */
export const MAX_APPEND_GROUP_BYTES = 8 * 1024 * 1024;

/** Most records in one produce request. */
export const MAX_RECORDS_PER_REQUEST = 100_000;

/** Fetch defaults and bounds. */
export const FETCH_DEFAULT_MAX_RECORDS = 500;
export const FETCH_MAX_MAX_RECORDS = 10_000;
export const FETCH_DEFAULT_MAX_BYTES = 1024 * 1024;
export const FETCH_MAX_MAX_BYTES = 16 * 1024 * 1024;
/** Longest long-poll a fetch may ask for (ms). */
export const FETCH_MAX_WAIT_MS_LIMIT = 60_000;

/** Longest header key (UTF-8 bytes). */
export const MAX_HEADER_KEY_BYTES = 32 * 1024;
