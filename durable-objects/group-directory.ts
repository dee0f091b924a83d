/**
 * GroupDirectoryDO: the list of consumer groups, one instance named "groups".
 *
 * Each group's coordinator is its own object and cannot be enumerated, so coordinators push
 * their listing (state, assignor, member count) here when it changes, and a tombstone when
 * the group is deleted. Pushes carry a version (coordinator clock in µs, strictly increasing
 * per group) so a late push never overwrites a newer one. The listing is therefore eventually
 * consistent: `GET /v1/groups/{group}` (the coordinator itself) is authoritative.
 *
 * Storage (SQLite, migration 1): groups(group_id PK, state, assignor, members, version,
 * deleted 0/1, updated_ms). Tombstones older than {@link TOMBSTONE_RETENTION_MS} are purged.
 */
import type { Env } from "../src/env.ts";
import type { RpcResult } from "../src/protocol/errors.ts";
import type { GroupListing, GroupStateName, AssignorName } from "../src/protocol/groups.ts";
import { isValidGroupId } from "../src/protocol/groups.ts";
import type { GroupDirectoryRpc } from "../src/groups/rpc.ts";
import { SqliteDurableObject, type Migration } from "./base.ts";

/** A tombstone only has to outlive pushes still in flight. */
const TOMBSTONE_RETENTION_MS = 24 * 60 * 60 * 1000;

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "groups",
    up(sql) {
      sql.run(`
        CREATE TABLE groups (
          group_id TEXT PRIMARY KEY,
          state TEXT NOT NULL,
          assignor TEXT NOT NULL,
          members INTEGER NOT NULL,
          version INTEGER NOT NULL,
          deleted INTEGER NOT NULL,
          updated_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
      `);
    },
  },
];

type Row = { group_id: string; state: string; assignor: string; members: number; version: number; deleted: number; updated_ms: number };

export class GroupDirectoryDO extends SqliteDurableObject<Env> implements GroupDirectoryRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.startUp([{ room: "group-directory", migrations: MIGRATIONS }], { adoptLegacy: (v) => ({ "group-directory": v }) });
  }

  protected override onStart(): void {
    // Nothing cached: every call is one indexed SQLite statement.
  }

  async upsert(listing: GroupListing, version: number): Promise<RpcResult<object>> {
    if (!isValidGroupId(listing.groupId)) throw new Error(`directory: invalid group id ${listing.groupId}`);
    this.sql.run(
      `INSERT INTO groups (group_id, state, assignor, members, version, deleted, updated_ms) VALUES (?, ?, ?, ?, ?, 0, ?)
       ON CONFLICT (group_id) DO UPDATE SET state = excluded.state, assignor = excluded.assignor, members = excluded.members,
         version = excluded.version, deleted = 0, updated_ms = excluded.updated_ms
       WHERE excluded.version > groups.version`,
      listing.groupId,
      listing.state,
      listing.assignor,
      listing.members,
      version,
      Date.now(),
    );
    return { ok: true };
  }

  async remove(groupId: string, version: number): Promise<RpcResult<object>> {
    this.ctx.storage.transactionSync(() => {
      this.sql.run(
        `INSERT INTO groups (group_id, state, assignor, members, version, deleted, updated_ms) VALUES (?, 'Dead', '', 0, ?, 1, ?)
         ON CONFLICT (group_id) DO UPDATE SET state = 'Dead', members = 0, version = excluded.version, deleted = 1, updated_ms = excluded.updated_ms
         WHERE excluded.version > groups.version`,
        groupId,
        version,
        Date.now(),
      );
      this.sql.run("DELETE FROM groups WHERE deleted = 1 AND updated_ms < ?", Date.now() - TOMBSTONE_RETENTION_MS);
    });
    return { ok: true };
  }

  async list(): Promise<RpcResult<{ groups: GroupListing[] }>> {
    const rows = this.sql.all<Row>("SELECT * FROM groups WHERE deleted = 0 ORDER BY group_id");
    return {
      ok: true,
      groups: rows.map((r) => ({ groupId: r.group_id, state: r.state as GroupStateName, assignor: r.assignor as AssignorName, members: r.members })),
    };
  }
}
