/**
 * `sequence`: the simplest useful replicated state machine, an ordered and deduplicated list
 * of commands. A command is JSON `{id, value}` (UTF-8); applying it appends it at the next
 * sequence number (1, 2, ...) unless a command with the same `id` was applied before, which
 * answers the original sequence number with `duplicate: true` (the client-session rule of
 * Ongaro's dissertation §6.3: a retry after an unknown outcome is applied at most once).
 *
 * It is what the workers tests replicate (every member must hold the same sequence, in the
 * same order, each id once), and the smallest example of the {@link ReplicatedStateMachine}
 * contract. Query: `{fromSeq?: number, limit?: number}` (defaults 1 and 1000) answers
 * `{count, items: [{seq, id, value, index}]}` (`index`: the Raft index it was applied at).
 *
 * Room `raft-sequence`, table `rsm_sequence(seq PK, id UNIQUE, value, raft_index)`.
 */
import type { JsonValue } from "../../src/raft/group.ts";
import type { Migration, Sql } from "../base.ts";
import type { CommittedCommand, ReplicatedStateMachine } from "./state-machine.ts";

/** Longest `id` and `value` (characters): a command is small. */
const MAX_ID_CHARS = 256;
const MAX_VALUE_CHARS = 64 * 1024;

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "sequence",
    up(sql) {
      sql.run(`CREATE TABLE rsm_sequence (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, value TEXT NOT NULL, raft_index INTEGER NOT NULL)`);
    },
  },
];

/** A `sequence` command's answer. */
export type SequenceResult = { seq: number; duplicate: boolean } | { error: string };

export type SequenceItem = {
  seq: number;
  id: string;
  value: string;
  index: number;
};

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Encodes a `sequence` command. */
export function sequenceCommand(id: string, value: string): Uint8Array {
  return enc.encode(JSON.stringify({ id, value }));
}

function parse(data: Uint8Array): { id: string; value: string } | string {
  let v: unknown;
  try {
    v = JSON.parse(dec.decode(data));
  } catch {
    return "the command is not JSON";
  }
  const { id, value } = (v ?? {}) as { id?: unknown; value?: unknown };
  if (typeof id !== "string" || id === "" || id.length > MAX_ID_CHARS) return `id must be a string of 1-${MAX_ID_CHARS} characters`;
  if (typeof value !== "string" || value.length > MAX_VALUE_CHARS) return `value must be a string of at most ${MAX_VALUE_CHARS} characters`;
  return { id, value };
}

export function sequenceStateMachine(sql: Sql): ReplicatedStateMachine {
  return {
    name: "sequence",
    schema: { room: "raft-sequence", migrations: MIGRATIONS },
    apply(cmd: CommittedCommand): SequenceResult {
      const c = parse(cmd.data);
      if (typeof c === "string") return { error: c };
      const seen = sql.first<{ seq: number }>("SELECT seq FROM rsm_sequence WHERE id = ?", c.id);
      if (seen !== undefined) return { seq: seen.seq, duplicate: true };
      const seq = (sql.first<{ n: number | null }>("SELECT max(seq) AS n FROM rsm_sequence")?.n ?? 0) + 1;
      sql.run("INSERT INTO rsm_sequence (seq, id, value, raft_index) VALUES (?, ?, ?, ?)", seq, c.id, c.value, cmd.index);
      return { seq, duplicate: false };
    },
    snapshot(): Uint8Array {
      const rows = sql.all<{ seq: number; id: string; value: string; raft_index: number }>("SELECT seq, id, value, raft_index FROM rsm_sequence ORDER BY seq");
      return enc.encode(JSON.stringify(rows.map((r) => [r.seq, r.id, r.value, r.raft_index])));
    },
    restore(image: Uint8Array): void {
      sql.run("DELETE FROM rsm_sequence");
      if (image.byteLength === 0) return;
      for (const [seq, id, value, index] of JSON.parse(dec.decode(image)) as [number, string, string, number][]) {
        sql.run("INSERT INTO rsm_sequence (seq, id, value, raft_index) VALUES (?, ?, ?, ?)", seq, id, value, index);
      }
    },
    query(q: JsonValue): { count: number; items: SequenceItem[] } {
      const { fromSeq, limit } = (q ?? {}) as { fromSeq?: unknown; limit?: unknown };
      const from = typeof fromSeq === "number" && Number.isInteger(fromSeq) ? fromSeq : 1;
      const n = typeof limit === "number" && Number.isInteger(limit) && limit > 0 ? Math.min(limit, 10_000) : 1000;
      const count = sql.first<{ n: number }>("SELECT count(*) AS n FROM rsm_sequence")?.n ?? 0;
      const items = sql
        .all<{ seq: number; id: string; value: string; raft_index: number }>("SELECT seq, id, value, raft_index FROM rsm_sequence WHERE seq >= ? ORDER BY seq LIMIT ?", from, n)
        .map((r) => ({ seq: r.seq, id: r.id, value: r.value, index: r.raft_index }));
      return { count, items };
    },
  };
}
