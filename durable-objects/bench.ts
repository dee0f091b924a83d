/**
 * BenchDO: bench-only, reached only through /bench/* routes when EDGELOG_BENCH_ROUTES=1.
 *
 * Room `bench`: `insert` writes the bytes it is given as ONE SQLite row, nothing else: the
 * ceiling a produce (decode, validate, rewrite, insert, meta update) is measured against in
 * the same run (/bench/raw-insert/:name).
 *
 * Room `echo` (no tables): the proving ground of the base's machinery (durable-objects/base.ts),
 * used by the workers tests: its timers, and its hibernatable WebSockets that echo what they get.
 */
import type { Env } from "../src/env.ts";
import type { RpcResult } from "../src/partition/rpc.ts";
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

export class BenchDO extends SqliteDurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp(
      [
        { room: "bench", migrations: MIGRATIONS },
        { room: "echo", migrations: [] },
      ],
      { adoptLegacy: (v) => ({ bench: v }) },
    );
  }

  protected override onStart(): void {}

  /** Inserts `data` as one row. @returns the row id and the byte count. */
  async insert(data: Uint8Array): Promise<RpcResult<{ id: number; bytes: number }>> {
    const row = this.sql.first<{ id: number }>("INSERT INTO blobs (data) VALUES (?) RETURNING id", blob(data));
    if (row === undefined) throw new Error("insert returned no row");
    return { ok: true, id: row.id, bytes: data.length };
  }
}
