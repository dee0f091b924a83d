/**
 * BenchDO: bench-only. `insert` writes the bytes it is given as ONE SQLite row, nothing else:
 * the ceiling a produce (decode, validate, rewrite, insert, meta update) is measured against
 * in the same run. Reached only through /bench/raw-insert/:name when EDGELOG_BENCH_ROUTES=1.
 */
import type { BenchRpc, Env } from "../src/env.ts";
import type { RpcResult } from "../src/protocol/errors.ts";
import { SqliteDurableObject, blob, type Migration } from "./base.ts";

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "blobs",
    up(sql) {
      sql.run("CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)");
    },
  },
];

export class BenchDO extends SqliteDurableObject<Env> implements BenchRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp(MIGRATIONS);
  }

  protected onStart(): void {}

  /** Inserts `data` as one row. @returns the row id and the byte count. */
  async insert(data: Uint8Array): Promise<RpcResult<{ id: number; bytes: number }>> {
    const row = this.sql.first<{ id: number }>("INSERT INTO blobs (data) VALUES (?) RETURNING id", blob(data));
    if (row === undefined) throw new Error("insert returned no row");
    return { ok: true, id: row.id, bytes: data.length };
  }
}
