/**
 * Appends of one connection's produce requests, per partition: in request order, one Edgelog
 * request in flight per partition (concurrent Edgelog requests have no order between them,
 * PROTOCOL.md), and the batches that queued up behind it sent together as one, as Kafka's
 * producer accumulator fills a batch while the previous one is in flight. A Kafka broker
 * appends in microseconds; an Edgelog append is an HTTP round trip, so a pipelining client
 * (kafkajs, librdkafka) would otherwise pay one round trip per small batch.
 *
 * Merging needs batches without a producer id (idempotent batches are sent one by one: a
 * retry is recognised by its own epoch, sequence and count), with the same acks, up to
 * `maxMergedBytes` and MAX_RECORDS_PER_REQUEST records. Each request is answered with its own
 * base offset inside the merged append; an error of the merged append is every request's.
 */
import { MAX_RECORDS_PER_REQUEST } from "../../../src/protocol/index.ts";
import { mergeToEdgelogBatch, toEdgelogBatch, type PreparedBatch } from "./records.ts";

export type Acks = 0 | 1 | "all";

/** Edgelog's answer to an append (null for acks=0). */
export interface AppendOutcome {
  baseOffset: number;
  logAppendTime: number | null;
  logStartOffset: number;
}

/** Sends one Edgelog batch to a partition. */
export type SendBatch = (topic: string, partition: number, body: Uint8Array, acks: Acks) => Promise<AppendOutcome | null>;

/** Largest merged append, bytes (the SDK producer's batch size). @default 1 MiB */
export const DEFAULT_MAX_MERGED_BYTES = 1024 * 1024;

interface Entry {
  acks: Acks;
  /** performance.now() when queued. */
  queuedAt: number;
  prepared: Promise<PreparedBatch>;
  /** Set once `prepared` fulfilled. */
  ready: PreparedBatch | undefined;
  resolve: (r: AppendOutcome | null) => void;
  reject: (e: unknown) => void;
}

interface Queue {
  topic: string;
  partition: number;
  entries: Entry[];
  draining: boolean;
  /** Set while the drain lingers: called when a batch is queued. */
  wake: (() => void) | undefined;
}

export class PartitionAppender {
  readonly #send: SendBatch;
  readonly #maxMergedBytes: number;
  readonly #lingerMs: number;
  readonly #queues = new Map<string, Queue>();

  /**
   * @param maxMergedBytes largest merged append (records bytes) @default 1 MiB
   * @param lingerMs how long a mergeable batch may wait, from when it was queued, for more
   *   batches of its partition to merge with (Kafka's producer `linger.ms`, applied by the
   *   bridge because a Kafka client's batches are sized for a broker that appends in
   *   microseconds); 0 sends what is queued at once. Idempotent batches never wait. @default 0
   */
  constructor(send: SendBatch, maxMergedBytes = DEFAULT_MAX_MERGED_BYTES, lingerMs = 0) {
    this.#send = send;
    this.#maxMergedBytes = maxMergedBytes;
    this.#lingerMs = lingerMs;
  }

  /**
   * Queues an append. Call it synchronously in request order: the queue order is the append
   * order. `prepared` may still be decompressing; it rejecting fails this append only.
   * @returns Edgelog's answer for this batch (its own base offset), null for acks=0.
   */
  append(topic: string, partition: number, acks: Acks, prepared: Promise<PreparedBatch>): Promise<AppendOutcome | null> {
    const key = `${topic}\u0000${partition}`;
    let q = this.#queues.get(key);
    if (q === undefined) {
      q = { topic, partition, entries: [], draining: false, wake: undefined };
      this.#queues.set(key, q);
    }
    const queue = q;
    return new Promise((resolve, reject) => {
      const entry: Entry = { acks, queuedAt: performance.now(), prepared, ready: undefined, resolve, reject };
      prepared.then(
        (v) => {
          entry.ready = v;
          queue.wake?.();
        },
        () => queue.wake?.(),
      );
      queue.entries.push(entry);
      if (!queue.draining) void this.#drain(key, queue);
    });
  }

  async #drain(key: string, q: Queue): Promise<void> {
    q.draining = true;
    while (q.entries.length > 0) {
      const first = q.entries[0]!;
      let head: PreparedBatch;
      try {
        head = await first.prepared;
      } catch (e) {
        q.entries.shift();
        first.reject(e);
        continue;
      }
      const group: Entry[] = [first];
      let bytes = head.records.length;
      let records = head.batch.recordCount;
      if (head.batch.producerId < 0) {
        for (;;) {
          let full = false;
          for (let i = group.length; i < q.entries.length; i++) {
            const e = q.entries[i]!;
            const r = e.ready;
            if (r === undefined || e.acks !== first.acks || r.batch.producerId >= 0) {
              full = r !== undefined; // a batch that cannot join ends the group
              break;
            }
            if (bytes + r.records.length > this.#maxMergedBytes || records + r.batch.recordCount > MAX_RECORDS_PER_REQUEST) {
              full = true;
              break;
            }
            group.push(e);
            bytes += r.records.length;
            records += r.batch.recordCount;
          }
          const waitMs = first.queuedAt + this.#lingerMs - performance.now();
          if (full || waitMs <= 0) break;
          // Linger: wait for more batches (or for one still decompressing), at most until the
          // head has waited lingerMs in all.
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, waitMs);
            function done(): void {
              clearTimeout(timer);
              q.wake = undefined;
              resolve();
            }
            q.wake = done;
          });
        }
      }
      q.entries.splice(0, group.length);
      try {
        const parts = group.map((e) => e.ready ?? head);
        const body = parts.length === 1 ? toEdgelogBatch(head.batch, head.records) : mergeToEdgelogBatch(parts);
        const outcome = await this.#send(q.topic, q.partition, body, first.acks);
        let offset = outcome?.baseOffset ?? 0;
        for (let i = 0; i < group.length; i++) {
          group[i]!.resolve(outcome === null ? null : { ...outcome, baseOffset: offset });
          offset += parts[i]!.batch.recordCount;
        }
      } catch (e) {
        for (const entry of group) entry.reject(e);
      }
    }
    q.draining = false;
    if (this.#queues.get(key) === q) this.#queues.delete(key);
  }
}
