/**
 * The producers room of a partition: idempotent-producer state (KIP-98), the last
 * PRODUCER_BATCHES_KEPT requests per producer id for duplicate detection, and an in-memory
 * cache of it so that an idempotent append reads no SQL after a producer's first request.
 *
 * Storage (room "producers"; schema/producers.ts: migration 1 the tables, 2 the last append time):
 * - producers(producer_id PK, producer_epoch, last_sequence, last_append_ms);
 * - producer_batches(producer_id, producer_epoch, base_sequence, last_sequence, first_offset,
 *   last_offset; PK (producer_id, first_offset)).
 * Timer: "expiry" (room "producers"), due when the least recently appending producer reaches
 * the topic's `producer.id.expiration.ms` of idle time (KIP-854).
 *
 * Expiry (KIP-854 semantics, Edgelog's sequence rule): a producer id that appended nothing for
 * `producer.id.expiration.ms` is forgotten, rows and cache. One that comes back is a producer
 * this partition has not seen, so {@link checkSequence} asks it to start at sequence 0
 * (OUT_OF_ORDER_SEQUENCE_NUMBER, expectedSequence 0, which the SDK producer answers by
 * restarting its sequence). Kafka since KIP-360 accepts any sequence from an unknown producer
 * id; Edgelog keeps its stricter documented rule for every unknown id (docs/PROTOCOL.md
 * "Idempotent producers").
 *
 * Writes only in {@link ProducersRoom.apply}, inside the switchboard's commit transaction; the
 * cache follows in {@link ProducersRoom.publish}, after the commit.
 */
import { applyProducerAppend, checkSequence, type ProducerAppend, type ProducerState, type SequenceDecision } from "../../src/partition/core.ts";
import type { ProducerRows } from "../../src/partition/catch-up.ts";
import { producerIdExpirationMs } from "../../src/protocol/config.ts";
import type { RoomTimers, Sql } from "../base.ts";
import type { LogRoom } from "./log.ts";

/** The producers room's expiry timer key. */
export const PRODUCER_EXPIRY_TIMER = "expiry";

/** Most producer ids one expiry slice forgets; more set the timer again at once (a bounded slice). */
export const PRODUCER_EXPIRY_SLICE = 1000;

/**
 * Most producer states kept in memory (KIP-98 state; SQLite stays the source of truth, an
 * evicted entry is read again on its next use). A state is a few numbers plus its last
 * PRODUCER_BATCHES_KEPT requests.
 */
const PRODUCER_CACHE_MAX_ENTRIES = 10_000;

/**
 * A change of the producers room: an idempotent request appended (its state before and after,
 * and the time of the decision), or an expiry slice (forget up to PRODUCER_EXPIRY_SLICE
 * producers whose last append is before `beforeMs`).
 */
export type ProducerChange =
  | {
      op: "append";
      producerId: number;
      /** The committed state before this request (undefined: none). */
      previous: ProducerState | undefined;
      next: ProducerState;
      /** When the request was decided (epoch ms): the producer's last append time. */
      atMs: number;
    }
  | { op: "expire"; beforeMs: number }
  /**
   * A replica's snapshot catch-up (docs/RAFT.md "Snapshot catch-up"): the whole producer state
   * is replaced by the one pulled from a peer at the same Raft index.
   */
  | { op: "install"; rows: ProducerRows };

/** The producers room's part of a command (see durable-objects/partition.ts `commit`). */
export interface ProducersCommand {
  producer: ProducerChange | null;
}

/** What {@link ProducersRoom.decide} answers: the sequence decision and the state it was made on. */
export interface ProducerDecision {
  decision: SequenceDecision;
  previous: ProducerState | undefined;
}

export class ProducersRoom {
  readonly name = "producers";
  readonly #sql: Sql;
  /**
   * Producer states as committed (rows of `producers` + `producer_batches`), by producer id.
   * Updated only after the commit; cleared by reset().
   */
  readonly #cache = new Map<number, ProducerState>();
  readonly #log: LogRoom;
  readonly #timers: RoomTimers;
  /** Whether the expiry timer is set (undefined: not known yet, ask the schedule once). */
  #expiryArmed: boolean | undefined = undefined;

  constructor(sql: Sql, log: LogRoom, timers: RoomTimers) {
    this.#sql = sql;
    this.#log = log;
    this.#timers = timers;
  }

  /**
   * States are read on a producer's first request. The expiry timer is set when producers are
   * stored without one (an object adopted from before the one schedule, issue 9).
   */
  load(): void {
    if (this.#timers.dueMs(PRODUCER_EXPIRY_TIMER) === undefined) this.rearm(Date.now());
  }

  reset(): void {
    this.#cache.clear();
    this.#expiryArmed = undefined;
  }

  /** KIP-98 decision for an idempotent request (src/partition/core.ts checkSequence). */
  decide(req: ProducerAppend): ProducerDecision {
    const previous = this.#load(req.producerId);
    return { decision: checkSequence(previous, req), previous };
  }

  /** Producer ids the partition holds state for (not yet expired): what `maxProducersPerTopic` counts. */
  count(): number {
    return this.#sql.first<{ n: number }>("SELECT COUNT(*) AS n FROM producers")?.n ?? 0;
  }

  /** Every producer state, as rows (a peer's snapshot catch-up reads it; bounded by the producer-id expiry). */
  rows(): ProducerRows {
    return {
      producers: [...this.#sql.iterateRaw<[number, number, number, number]>("SELECT producer_id, producer_epoch, last_sequence, last_append_ms FROM producers ORDER BY producer_id")],
      batches: [
        ...this.#sql.iterateRaw<[number, number, number, number, number, number]>(
          "SELECT producer_id, producer_epoch, base_sequence, last_sequence, first_offset, last_offset FROM producer_batches ORDER BY producer_id, first_offset",
        ),
      ],
    };
  }

  /** The change that records `req` appended at [firstOffset, lastOffset], decided at `atMs`. */
  change(req: ProducerAppend, previous: ProducerState | undefined, firstOffset: number, lastOffset: number, atMs: number): ProducerChange {
    return { op: "append", producerId: req.producerId, previous, next: applyProducerAppend(previous, req, firstOffset, lastOffset), atMs };
  }

  /**
   * Timer "expiry": the slice to commit now, or null when the partition is gone. The
   * switchboard commits it, then calls {@link rearm}.
   */
  expiryChange(nowMs: number): ProducerChange | null {
    const s = this.#log.state;
    if (s === null) return null;
    return { op: "expire", beforeMs: nowMs - producerIdExpirationMs(s.configs) };
  }

  /**
   * The timer follows the least recently appending producer (at once if an expiry slice was
   * full): after an expiry slice, and after a config change (the idle time may have moved).
   */
  rearm(nowMs: number): void {
    const s = this.#log.state;
    const oldest = this.#sql.first<{ m: number | null }>("SELECT MIN(last_append_ms) AS m FROM producers")?.m ?? null;
    if (s === null || oldest === null) {
      this.#timers.clear(PRODUCER_EXPIRY_TIMER);
      this.#expiryArmed = false;
      return;
    }
    this.#timers.set(PRODUCER_EXPIRY_TIMER, Math.max(nowMs, oldest + producerIdExpirationMs(s.configs)));
    this.#expiryArmed = true;
  }

  /**
   * Writes a producer's state (inside the commit's transaction): upsert, add the new request,
   * drop requests no longer kept (only when `previous` had some that `next` does not keep).
   */
  apply(cmd: ProducersCommand): void {
    const c = cmd.producer;
    if (c === null) return;
    if (c.op === "install") {
      this.#sql.run("DELETE FROM producer_batches");
      this.#sql.run("DELETE FROM producers");
      for (const r of c.rows.producers) this.#sql.run("INSERT INTO producers (producer_id, producer_epoch, last_sequence, last_append_ms) VALUES (?, ?, ?, ?)", ...r);
      for (const r of c.rows.batches) {
        this.#sql.run("INSERT INTO producer_batches (producer_id, producer_epoch, base_sequence, last_sequence, first_offset, last_offset) VALUES (?, ?, ?, ?, ?, ?)", ...r);
      }
      return;
    }
    if (c.op === "expire") {
      this.#sql.run(
        `DELETE FROM producer_batches WHERE producer_id IN
           (SELECT producer_id FROM producers WHERE last_append_ms < ? ORDER BY last_append_ms, producer_id LIMIT ?)`,
        c.beforeMs,
        PRODUCER_EXPIRY_SLICE,
      );
      this.#sql.run(
        "DELETE FROM producers WHERE producer_id IN (SELECT producer_id FROM producers WHERE last_append_ms < ? ORDER BY last_append_ms, producer_id LIMIT ?)",
        c.beforeMs,
        PRODUCER_EXPIRY_SLICE,
      );
      return;
    }
    const { producerId, previous, next } = c;
    this.#sql.run(
      `INSERT INTO producers (producer_id, producer_epoch, last_sequence, last_append_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (producer_id) DO UPDATE SET producer_epoch = excluded.producer_epoch, last_sequence = excluded.last_sequence,
         last_append_ms = excluded.last_append_ms`,
      producerId,
      next.producerEpoch,
      next.lastSequence,
      c.atMs,
    );
    const newest = next.batches[next.batches.length - 1];
    const oldest = next.batches[0];
    if (newest === undefined || oldest === undefined) throw new Error("producer state without its new request");
    this.#sql.run(
      `INSERT INTO producer_batches (producer_id, producer_epoch, base_sequence, last_sequence, first_offset, last_offset)
       VALUES (?, ?, ?, ?, ?, ?)`,
      producerId,
      newest.producerEpoch,
      newest.baseSequence,
      newest.lastSequence,
      newest.firstOffset,
      newest.lastOffset,
    );
    // applyProducerAppend keeps a suffix of previous.batches (same epoch) or none (new epoch).
    const dropsSome = previous !== undefined && previous.batches.length + 1 > next.batches.length;
    if (dropsSome) this.#sql.run("DELETE FROM producer_batches WHERE producer_id = ? AND first_offset < ?", producerId, oldest.firstOffset);
  }

  /** After the commit: the cache holds the committed state; the expiry timer is set once a producer exists. */
  publish(cmd: ProducersCommand): void {
    const c = cmd.producer;
    if (c === null) return;
    if (c.op === "expire" || c.op === "install") {
      // Rare (once per expiration window, or a catch-up): the cache is rebuilt from SQLite on demand.
      this.#cache.clear();
      if (c.op === "install") this.rearm(Date.now());
      return;
    }
    this.#remember(c.producerId, c.next);
    if (this.#expiryArmed === true) return;
    this.#expiryArmed = this.#timers.dueMs(PRODUCER_EXPIRY_TIMER) !== undefined;
    if (!this.#expiryArmed) {
      const s = this.#log.state;
      if (s !== null) this.#timers.set(PRODUCER_EXPIRY_TIMER, c.atMs + producerIdExpirationMs(s.configs));
      this.#expiryArmed = true;
    }
  }

  /** A producer's committed state: from memory, else from SQLite (then kept in memory). */
  #load(producerId: number): ProducerState | undefined {
    const cached = this.#cache.get(producerId);
    if (cached !== undefined) return cached;
    const state = this.#read(producerId);
    if (state !== undefined) this.#remember(producerId, state);
    return state;
  }

  /** Remembers a committed producer state, dropping the oldest-inserted entry beyond the limit. */
  #remember(producerId: number, state: ProducerState): void {
    const cache = this.#cache;
    cache.delete(producerId);
    if (cache.size >= PRODUCER_CACHE_MAX_ENTRIES) {
      const oldest = cache.keys().next();
      if (oldest.done !== true) cache.delete(oldest.value);
    }
    cache.set(producerId, state);
  }

  #read(producerId: number): ProducerState | undefined {
    const p = this.#sql.first<{ producer_epoch: number; last_sequence: number }>("SELECT producer_epoch, last_sequence FROM producers WHERE producer_id = ?", producerId);
    if (p === undefined) return undefined;
    const batches = this.#sql
      .all<{ producer_epoch: number; base_sequence: number; last_sequence: number; first_offset: number; last_offset: number }>(
        `SELECT producer_epoch, base_sequence, last_sequence, first_offset, last_offset
         FROM producer_batches WHERE producer_id = ? ORDER BY first_offset`,
        producerId,
      )
      .map((b) => ({
        producerEpoch: b.producer_epoch,
        baseSequence: b.base_sequence,
        lastSequence: b.last_sequence,
        firstOffset: b.first_offset,
        lastOffset: b.last_offset,
      }));
    return { producerEpoch: p.producer_epoch, lastSequence: p.last_sequence, batches };
  }
}
