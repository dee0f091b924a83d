/**
 * Subscription message ids.
 *
 * A message id is an opaque string to clients. It is derived from the partition index and the
 * record's offset only, so it is stable across restarts and hibernation and never needs storage:
 *
 *     <partition: 4 decimal digits>:<offset: 16 decimal digits>     e.g. "0003:0000000000000042"
 *
 * Both fields are zero-padded to a fixed width, so within one partition the byte-wise order of
 * ids is the offset order (2^53 - 1 has 16 digits; MAX_PARTITIONS is 1,024). Every record of a
 * produced batch has its own offset, so a record of a batch is acknowledged on its own without a
 * batch index (Pulsar needs `batchIndex` because a batch is one BookKeeper entry; Edgelog's log
 * gives each record an offset, as Kafka does).
 *
 * The Pulsar-WebSocket-compatible endpoint wraps these ids in base64 at its edge; the core only
 * knows this form.
 */
import { MAX_PARTITIONS } from "../protocol/limits.ts";

/** A parsed message id. */
export interface MessagePosition {
  /** Partition index, 0 <= partition < MAX_PARTITIONS. */
  readonly partition: number;
  /** Offset in the partition log, a non-negative safe integer. */
  readonly offset: number;
}

const ID = /^(\d{4}):(\d{16})$/;

/**
 * Formats a message id.
 * @throws RangeError when the partition or offset is out of range (a bug in the caller).
 */
export function formatMessageId(partition: number, offset: number): string {
  if (!Number.isInteger(partition) || partition < 0 || partition >= MAX_PARTITIONS) throw new RangeError(`partition ${partition} out of range`);
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`offset ${offset} out of range`);
  return `${String(partition).padStart(4, "0")}:${String(offset).padStart(16, "0")}`;
}

/**
 * Parses a message id sent by a client.
 * @returns the position, or `null` when the text is not a message id (the caller answers
 *   `INVALID_MESSAGE_ID` and changes nothing).
 */
export function parseMessageId(text: unknown): MessagePosition | null {
  if (typeof text !== "string") return null;
  const m = ID.exec(text);
  if (m === null) return null;
  const partition = Number(m[1]);
  const offset = Number(m[2]);
  if (partition >= MAX_PARTITIONS || !Number.isSafeInteger(offset)) return null;
  return { partition, offset };
}
