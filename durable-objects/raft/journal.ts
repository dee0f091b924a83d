/**
 * The Raft journal of a member: its hard state, log entries and latest snapshot in the
 * object's SQLite storage (room `raft`), and the group configuration it was bootstrapped with.
 * The member writes each Ready through it inside one transaction (docs/RAFT.md, "The
 * persistence contract"); the journal asserts the contract's storage rules on every write:
 * entries contiguous and after the snapshot, the term never going back, the vote never
 * changing within a term, the commit and applied indexes never going back, applied <= commit.
 *
 * Tables (migration 1):
 * - `raft_group(id = 1, member_id, config)`: who this member is; `config` is the resolved
 *   {@link ResolvedRaftGroupConfig} as JSON;
 * - `raft_hard_state(id = 1, term, vote, commit_index, applied_index)`: Raft's persistent
 *   state, and the index the state machine has applied (written with the state machine's
 *   changes, in the same transaction);
 * - `raft_entries(idx PK, term, kind, data, conf)`: the log after the snapshot; `kind` is
 *   `normal` (`data` BLOB), `noop` or `conf` (`conf` JSON `{conf, change}`);
 * - `raft_snapshot(id = 1, idx, term, conf, bytes)` and `raft_snapshot_parts(part PK, data)`:
 *   the latest snapshot's meta and its image in parts of at most {@link SNAPSHOT_PART_BYTES}
 *   (a SQLite row of a Durable Object holds at most 2 MB).
 */
import { RaftContractError } from "../../src/raft/errors.ts";
import type { ResolvedRaftGroupConfig } from "../../src/raft/group.ts";
import type { RaftStorageState } from "../../src/raft/index.ts";
import type { ConfChange, ConfState, Entry, HardState, NodeId, Snapshot } from "../../src/raft/types.ts";
import { blob, type Migration, type RoomSchema, type Sql } from "../base.ts";

/** Largest part of a stored snapshot image (bytes): half the platform's 2 MB row limit. */
export const SNAPSHOT_PART_BYTES = 1 << 20;

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "raft journal",
    up(sql) {
      sql.run(`
        CREATE TABLE raft_group (id INTEGER PRIMARY KEY CHECK (id = 1), member_id TEXT NOT NULL, config TEXT NOT NULL);
        CREATE TABLE raft_hard_state (id INTEGER PRIMARY KEY CHECK (id = 1), term INTEGER NOT NULL, vote TEXT, commit_index INTEGER NOT NULL, applied_index INTEGER NOT NULL);
        CREATE TABLE raft_entries (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL, kind TEXT NOT NULL, data BLOB, conf TEXT);
        CREATE TABLE raft_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), idx INTEGER NOT NULL, term INTEGER NOT NULL, conf TEXT NOT NULL, bytes INTEGER NOT NULL);
        CREATE TABLE raft_snapshot_parts (part INTEGER PRIMARY KEY, data BLOB NOT NULL);
      `);
    },
  },
];

export const RAFT_ROOM: RoomSchema = { room: "raft", migrations: MIGRATIONS };

type EntryRow = { idx: number; term: number; kind: string; data: ArrayBuffer | null; conf: string | null };

function assert(cond: boolean, message: string): asserts cond {
  if (!cond) throw new RaftContractError(`raft journal: ${message}`);
}

/**
 * The member's durable Raft state. Holds a small mirror (hard state, snapshot index, last
 * index) to check each write against; all reads at start-up come from SQLite.
 */
export class RaftJournal {
  readonly #sql: Sql;
  #hard: HardState = { term: 0, vote: null, commit: 0 };
  #applied = 0;
  #snapIndex = 0;
  #lastIndex = 0;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** The stored group membership of this object, or null before bootstrap. */
  group(): { memberId: NodeId; config: ResolvedRaftGroupConfig } | null {
    const row = this.#sql.first<{ member_id: string; config: string }>("SELECT member_id, config FROM raft_group WHERE id = 1");
    return row === undefined ? null : { memberId: row.member_id, config: JSON.parse(row.config) as ResolvedRaftGroupConfig };
  }

  /** Replaces the stored group configuration (bootstrap; a leader recording a new member's location hint). */
  saveGroup(memberId: NodeId, config: ResolvedRaftGroupConfig): void {
    this.#sql.run(
      "INSERT INTO raft_group (id, member_id, config) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET member_id = excluded.member_id, config = excluded.config",
      memberId,
      JSON.stringify(config),
    );
  }

  /** First durable state of a new member: term 0, the empty snapshot at index 0 holding `conf`. Call inside a transaction. */
  bootstrap(conf: ConfState): void {
    assert(this.#sql.first("SELECT 1 AS x FROM raft_hard_state") === undefined, "bootstrap of a member that has a hard state");
    this.#sql.run("INSERT INTO raft_hard_state (id, term, vote, commit_index, applied_index) VALUES (1, 0, NULL, 0, 0)");
    this.#sql.run("INSERT INTO raft_snapshot (id, idx, term, conf, bytes) VALUES (1, 0, 0, ?, 0)", JSON.stringify(conf));
  }

  /** The durable state to build a RaftNode from (persistence contract rule 6). */
  load(): RaftStorageState {
    const hs = this.#sql.first<{ term: number; vote: string | null; commit_index: number; applied_index: number }>(
      "SELECT term, vote, commit_index, applied_index FROM raft_hard_state WHERE id = 1",
    );
    const sm = this.#sql.first<{ idx: number; term: number; conf: string; bytes: number }>("SELECT idx, term, conf, bytes FROM raft_snapshot WHERE id = 1");
    assert(hs !== undefined && sm !== undefined, "load before bootstrap");
    const data = new Uint8Array(sm.bytes);
    let at = 0;
    for (const [part] of this.#sql.iterateRaw<[ArrayBuffer]>("SELECT data FROM raft_snapshot_parts ORDER BY part")) {
      data.set(new Uint8Array(part), at);
      at += part.byteLength;
    }
    assert(at === sm.bytes, `snapshot image holds ${at} bytes, its meta says ${sm.bytes}`);
    const entries: Entry[] = [];
    for (const r of this.#sql.iterate<EntryRow>("SELECT idx, term, kind, data, conf FROM raft_entries ORDER BY idx")) {
      assert(r.idx === sm.idx + entries.length + 1, `entry ${r.idx} after ${sm.idx + entries.length}: a gap in the stored log`);
      entries.push(toEntry(r));
    }
    this.#hard = { term: hs.term, vote: hs.vote, commit: hs.commit_index };
    this.#applied = hs.applied_index;
    this.#snapIndex = sm.idx;
    this.#lastIndex = sm.idx + entries.length;
    return {
      hardState: { ...this.#hard },
      snapshot: { meta: { index: sm.idx, term: sm.term, conf: JSON.parse(sm.conf) as ConfState }, data },
      entries,
      applied: hs.applied_index,
    };
  }

  /** Index of the last durable entry (the snapshot's index when the log is empty). */
  get lastIndex(): number {
    return this.#lastIndex;
  }

  get hardState(): HardState {
    return this.#hard;
  }

  get snapshotIndex(): number {
    return this.#snapIndex;
  }

  /** Writes a new hard state. Call inside the Ready's transaction. */
  writeHardState(hs: HardState): void {
    const p = this.#hard;
    assert(hs.term >= p.term, `term ${hs.term} < stored ${p.term}`);
    assert(hs.term !== p.term || p.vote === null || hs.vote === p.vote, `vote changed within term ${hs.term} (${p.vote} -> ${hs.vote})`);
    assert(hs.commit >= p.commit, `commit ${hs.commit} < stored ${p.commit}`);
    assert(hs.commit <= this.#lastIndex, `commit ${hs.commit} beyond the durable log end ${this.#lastIndex}`);
    this.#sql.run("UPDATE raft_hard_state SET term = ?, vote = ?, commit_index = ? WHERE id = 1", hs.term, hs.vote, hs.commit);
    this.#hard = { ...hs };
  }

  /** Deletes stored entries >= entries[0].index, then appends (contract rule 2). Call inside the Ready's transaction. */
  writeEntries(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = entries[0]!.index;
    assert(first > this.#snapIndex, `entries from ${first} inside the snapshot at ${this.#snapIndex}`);
    assert(first <= this.#lastIndex + 1, `entries from ${first} leave a gap after ${this.#lastIndex}`);
    assert(first > this.#hard.commit || this.#lastIndex < first, `entries from ${first} would overwrite committed entries (commit ${this.#hard.commit})`);
    if (first <= this.#lastIndex) this.#sql.run("DELETE FROM raft_entries WHERE idx >= ?", first);
    let expect = first;
    for (const e of entries) {
      assert(e.index === expect, `entry ${e.index} where ${expect} was expected`);
      expect++;
      if (e.type === "normal") this.#sql.run("INSERT INTO raft_entries (idx, term, kind, data, conf) VALUES (?, ?, 'normal', ?, NULL)", e.index, e.term, blob(e.data));
      else if (e.type === "noop") this.#sql.run("INSERT INTO raft_entries (idx, term, kind, data, conf) VALUES (?, ?, 'noop', NULL, NULL)", e.index, e.term);
      else this.#sql.run("INSERT INTO raft_entries (idx, term, kind, data, conf) VALUES (?, ?, 'conf', NULL, ?)", e.index, e.term, JSON.stringify({ conf: e.conf, change: e.change }));
    }
    this.#lastIndex = expect - 1;
  }

  /** Records the index the state machine has applied (with its changes). Call inside the same transaction. */
  writeApplied(index: number): void {
    assert(index >= this.#applied, `applied ${index} < stored ${this.#applied}`);
    assert(index <= this.#hard.commit, `applied ${index} beyond commit ${this.#hard.commit}`);
    this.#sql.run("UPDATE raft_hard_state SET applied_index = ? WHERE id = 1", index);
    this.#applied = index;
  }

  /**
   * Stores a snapshot. `replaceLog`: one received from the leader replaces the whole log
   * (contract rule 2; the state machine is restored with it and applied = its index). Else it
   * is this member's own compaction (rule 7): entries <= its index are dropped.
   * Call inside a transaction.
   */
  writeSnapshot(snap: Snapshot, replaceLog: boolean): void {
    assert(snap.meta.index > this.#snapIndex, `snapshot at ${snap.meta.index} not after the stored one at ${this.#snapIndex}`);
    this.#sql.run("DELETE FROM raft_snapshot_parts");
    for (let at = 0, part = 0; at < snap.data.byteLength; at += SNAPSHOT_PART_BYTES, part++) {
      this.#sql.run("INSERT INTO raft_snapshot_parts (part, data) VALUES (?, ?)", part, blob(snap.data.subarray(at, at + SNAPSHOT_PART_BYTES)));
    }
    this.#sql.run("UPDATE raft_snapshot SET idx = ?, term = ?, conf = ?, bytes = ? WHERE id = 1", snap.meta.index, snap.meta.term, JSON.stringify(snap.meta.conf), snap.data.byteLength);
    if (replaceLog) {
      this.#sql.run("DELETE FROM raft_entries");
      this.#lastIndex = snap.meta.index;
      // The snapshot holds committed state only: the commit and the applied index move to it.
      if (this.#hard.commit < snap.meta.index) {
        this.#sql.run("UPDATE raft_hard_state SET commit_index = ? WHERE id = 1", snap.meta.index);
        this.#hard = { ...this.#hard, commit: snap.meta.index };
      }
      this.#sql.run("UPDATE raft_hard_state SET applied_index = ? WHERE id = 1", snap.meta.index);
      this.#applied = snap.meta.index;
    } else {
      assert(snap.meta.index <= this.#applied, `compaction at ${snap.meta.index} beyond applied ${this.#applied}`);
      this.#sql.run("DELETE FROM raft_entries WHERE idx <= ?", snap.meta.index);
    }
    this.#snapIndex = snap.meta.index;
  }
}

function toEntry(r: EntryRow): Entry {
  if (r.kind === "normal") return { index: r.idx, term: r.term, type: "normal", data: new Uint8Array(r.data ?? new ArrayBuffer(0)) };
  if (r.kind === "noop") return { index: r.idx, term: r.term, type: "noop" };
  assert(r.kind === "conf" && r.conf !== null, `entry ${r.idx} of unknown kind ${r.kind}`);
  const { conf, change } = JSON.parse(r.conf) as { conf: ConfState; change: ConfChange };
  return { index: r.idx, term: r.term, type: "conf", conf, change };
}
