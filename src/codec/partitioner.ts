/**
 * Kafka-compatible key partitioning: the same key lands on the same partition number as with
 * the Java client's default partitioner (`BuiltInPartitioner.partitionForKey`, formerly
 * `DefaultPartitioner`), so data keyed by Kafka producers and by Edgelog producers co-locates.
 *
 * Hash: MurmurHash2 (32-bit) as in `org.apache.kafka.common.utils.Utils.murmur2`: seed
 * 0x9747b28c, m = 0x5bd1e995, r = 24, 4-byte blocks read little-endian, the result a signed
 * 32-bit int. Null keys are not hashed here: the gateway spreads them round-robin.
 *
 * Pure module: no Workers/Node imports.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/**
 * MurmurHash2 of `bytes`, bit-for-bit the Java client's `Utils.murmur2`.
 * @returns a signed 32-bit integer (-2^31 .. 2^31-1), e.g. murmur2(utf8("21")) = -973932308.
 */
export function murmur2(bytes: Uint8Array): number {
  const len = bytes.length;
  let h = (SEED ^ len) | 0;
  const blocksEnd = len & ~3;
  for (let i = 0; i < blocksEnd; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // Tail: the 1-3 bytes after the last full block, mixed in as Java's fall-through switch does.
  const rest = len & 3;
  if (rest > 0) {
    if (rest === 3) h ^= bytes[blocksEnd + 2]! << 16;
    if (rest >= 2) h ^= bytes[blocksEnd + 1]! << 8;
    h ^= bytes[blocksEnd]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * Kafka's `Utils.toPositive`: clears the sign bit (not Math.abs, which overflows at -2^31).
 * @returns 0 .. 2^31-1
 */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}

/**
 * Partition of a non-null key: `toPositive(murmur2(key)) % numPartitions`, as the Java client.
 * @param key the record key bytes (for a string key, its UTF-8 bytes)
 * @param numPartitions partition count of the topic, a positive integer
 * @returns 0 .. numPartitions-1
 * @throws RangeError if numPartitions is not a positive integer.
 */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  if (!(Number.isInteger(numPartitions) && numPartitions > 0)) {
    throw new RangeError(`numPartitions must be a positive integer, got ${numPartitions}`);
  }
  return toPositive(murmur2(key)) % numPartitions;
}
