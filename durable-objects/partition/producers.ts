/**
 * The producers room of a partition: idempotent-producer state (KIP-98), the last
 * PRODUCER_BATCHES_KEPT requests per producer id for duplicate detection, and an in-memory
 * cache of it so that an idempotent append reads no SQL after a producer's first request.
 *
 * Storage (room "producers", migration 1):
 * - producers(producer_id PK, producer_epoch, last_sequence);
 * - producer_batches(producer_id, producer_epoch, base_sequence, last_sequence, first_offset,
 *   last_offset; PK (producer_id, first_offset)).
 *
 * Writes only in {@link ProducersRoom.apply}, inside the switchboard's commit transaction; the
 * cache follows in {@link ProducersRoom.publish}, after the commit.
 */
import { applyProducerAppend, checkSequence, type ProducerAppend, type ProducerState, type SequenceDecision } from "../../src/partition/core.ts";
import type { Migration, Sql } from "../base.ts";

/** The producers room's migrations (its own list, numbered from 1). */
export const PRODUCERS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "producer state",
    up(sql) {
      sql.run(`
        CREATE TABLE producers (
          producer_id INTEGER PRIMARY KEY,
          producer_epoch INTEGER NOT NULL,
          last_sequence INTEGER NOT NULL
        );
        CREATE TABLE producer_batches (
          producer_id INTEGER NOT NULL,
          producer_epoch INTEGER NOT NULL,
          base_sequence INTEGER NOT NULL,
          last_sequence INTEGER NOT NULL,
          first_offset INTEGER NOT NULL,
          last_offset INTEGER NOT NULL,
          PRIMARY KEY (producer_id, first_offset)
        ) WITHOUT ROWID;
      `);
    },
  },
];

/**
 * Most producer states kept in memory (KIP-98 state; SQLite stays the source of truth, an
 * evicted entry is read again on its next use). A state is a few numbers plus its last
 * PRODUCER_BATCHES_KEPT requests.
 */
const PRODUCER_CACHE_MAX_ENTRIES = 10_000;

/** A producer's state change, decided by {@link ProducersRoom.decide}'s caller. */
export interface ProducerChange {
  producerId: number;
  /** The committed state before this request (undefined: none). */
  previous: ProducerState | undefined;
  next: ProducerState;
}

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

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  load(): void {
    // Nothing eager: states are read on a producer's first request.
  }

  reset(): void {
    this.#cache.clear();
  }

  /** KIP-98 decision for an idempotent request (src/partition/core.ts checkSequence). */
  decide(req: ProducerAppend): ProducerDecision {
    const previous = this.#load(req.producerId);
    return { decision: checkSequence(previous, req), previous };
  }

  /** The change that records `req` appended at [firstOffset, lastOffset]. */
  change(req: ProducerAppend, previous: ProducerState | undefined, firstOffset: number, lastOffset: number): ProducerChange {
    return { producerId: req.producerId, previous, next: applyProducerAppend(previous, req, firstOffset, lastOffset) };
  }

  /**
   * Writes a producer's state (inside the commit's transaction): upsert, add the new request,
   * drop requests no longer kept (only when `previous` had some that `next` does not keep).
   */
  apply(cmd: ProducersCommand): void {
    const c = cmd.producer;
    if (c === null) return;
    const { producerId, previous, next } = c;
    this.#sql.run(
      `INSERT INTO producers (producer_id, producer_epoch, last_sequence) VALUES (?, ?, ?)
       ON CONFLICT (producer_id) DO UPDATE SET producer_epoch = excluded.producer_epoch, last_sequence = excluded.last_sequence`,
      producerId,
      next.producerEpoch,
      next.lastSequence,
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

  /** After the commit: the cache holds the committed state. */
  publish(cmd: ProducersCommand): void {
    const c = cmd.producer;
    if (c !== null) this.#remember(c.producerId, c.next);
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
    const p = this.#sql.first<{ producer_epoch: number; last_sequence: number }>(
      "SELECT producer_epoch, last_sequence FROM producers WHERE producer_id = ?",
      producerId,
    );
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
