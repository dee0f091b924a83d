/**
 * SCRAM users and client quotas as part of the metadata quorum's state machine
 * (durable-objects/raft/metadata-machine.ts; KRaft's UserScramCredentialRecord and
 * ClientQuotaRecord; docs/RAFT.md, docs/SECURITY.md): the same rows, answers and error codes as
 * MetadataDO's (durable-objects/metadata-security.ts), applied from committed records.
 *
 * Tables (room `raft-metadata`, migration 4):
 * - `rsm_scram_users(name, mechanism, salt, iterations, stored_key, server_key, generation)`:
 *   MetadataDO's `scram_users`, one RFC 5802 credential per user and mechanism (salted
 *   StoredKey/ServerKey, never the password; the record carries them as hex);
 * - `rsm_quotas(user, client_id, key, value)`: MetadataDO's `quotas` ('' = no such component).
 *
 * Password checks (`authenticate`) run at the member that answers (the leader, after a
 * ReadIndex), and the failed-attempt lock-out lives in that member's memory ({@link ScramLockout}):
 * a leader change or a restart forgets the counts, as a restart of MetadataDO does.
 *
 * `apply` paths write SQL only; `authenticate` reads only.
 */
import { fromHex } from "../../src/auth/hex.ts";
import type { ScramMechanism } from "../../src/auth/scram.ts";
import type { QuotaEntity, QuotaEntry, QuotaKey, ScramUserSummary, SecuritySnapshot } from "../../src/auth/store.ts";
import type { AclBinding } from "../../src/protocol/acl.ts";
import type { MetadataAnswer, ScramCredentialRecord, ScramUserExport } from "../../src/metadata/commands.ts";
import type { RpcResult } from "../../src/protocol/errors.ts";
import { blob, type Sql } from "../base.ts";
import { checkScramUser, ScramLockout } from "../metadata-security.ts";
import {
  generationsByUser,
  quotaEntriesOf,
  scramCredentialsOf,
  scramUserExportOf,
  scramUserOf,
  scramUsersOf,
  userNotFound,
  type QuotaRow,
  type ScramUserRow,
} from "../../src/metadata/tenant-security.ts";

/** Migration 4 of the room. */
export function usersMigrationUp(sql: Sql): void {
  sql.run(`
    CREATE TABLE rsm_scram_users (
      name TEXT NOT NULL, mechanism TEXT NOT NULL, salt BLOB NOT NULL, iterations INTEGER NOT NULL,
      stored_key BLOB NOT NULL, server_key BLOB NOT NULL, generation TEXT NOT NULL,
      PRIMARY KEY (name, mechanism)
    ) WITHOUT ROWID;
    CREATE TABLE rsm_quotas (user TEXT NOT NULL, client_id TEXT NOT NULL, key TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (user, client_id, key)) WITHOUT ROWID;
  `);
}

const HEX = /^(?:[0-9a-f]{2})+$/;

/** The shape of a credential in a record (hex bytes, a known mechanism, a positive iteration count). */
export function wellFormedCredential(c: unknown): c is ScramCredentialRecord {
  if (typeof c !== "object" || c === null) return false;
  const r = c as Record<string, unknown>;
  return (
    (r.mechanism === "SCRAM-SHA-256" || r.mechanism === "SCRAM-SHA-512") &&
    Number.isSafeInteger(r.iterations) &&
    (r.iterations as number) > 0 &&
    [r.salt, r.storedKey, r.serverKey].every((x) => typeof x === "string" && HEX.test(x))
  );
}

export class QuorumUsers {
  readonly #sql: Sql;
  /** In memory of this member only (see the file comment). */
  readonly #lockout = new ScramLockout();

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  upsert(name: string, c: ScramCredentialRecord, generation: string): MetadataAnswer {
    this.#write({ name, generation, ...c });
    // A new credential clears the failures this member counted (MetadataDO does the same).
    this.#lockout.forget(name);
    return { ok: true, user: this.summary(name)! };
  }

  delete(name: string, mechanism: ScramMechanism | null): MetadataAnswer {
    const before = this.summary(name);
    if (before === undefined || (mechanism !== null && !before.mechanisms.some((m) => m.mechanism === mechanism))) return userNotFound(name, mechanism);
    if (mechanism === null) this.#sql.run("DELETE FROM rsm_scram_users WHERE name = ?", name);
    else this.#sql.run("DELETE FROM rsm_scram_users WHERE name = ? AND mechanism = ?", name, mechanism);
    return { ok: true };
  }

  list(): ScramUserSummary[] {
    return scramUsersOf(this.#sql.all<{ name: string; mechanism: string; iterations: number }>("SELECT name, mechanism, iterations FROM rsm_scram_users ORDER BY name, mechanism"));
  }

  summary(name: string): ScramUserSummary | undefined {
    return scramUserOf(name, this.#sql.all<{ mechanism: string; iterations: number }>("SELECT mechanism, iterations FROM rsm_scram_users WHERE name = ? ORDER BY mechanism", name));
  }

  /** Checks a password here (PBKDF2), counted in this member's lock-out. Errors: UNAUTHENTICATED, THROTTLED. */
  authenticate(name: string, password: string): Promise<RpcResult<{ generation: string }>> {
    const creds = scramCredentialsOf(this.#sql.all<ScramUserRow>("SELECT * FROM rsm_scram_users WHERE name = ? ORDER BY mechanism DESC", name));
    return checkScramUser(this.#lockout, name, password, creds);
  }

  alterQuotas(entity: QuotaEntity, values: Partial<Record<QuotaKey, number | null>>): MetadataAnswer {
    const user = entity.user ?? "";
    const client = entity.clientId ?? "";
    for (const [key, value] of Object.entries(values)) {
      if (value === null) this.#sql.run("DELETE FROM rsm_quotas WHERE user = ? AND client_id = ? AND key = ?", user, client, key);
      else if (typeof value === "number") {
        this.#sql.run(
          "INSERT INTO rsm_quotas (user, client_id, key, value) VALUES (?, ?, ?, ?) ON CONFLICT (user, client_id, key) DO UPDATE SET value = excluded.value",
          user,
          client,
          key,
          value,
        );
      }
    }
    const quota = this.quotas().find((q) => (q.user ?? "") === user && (q.clientId ?? "") === client) ?? null;
    return { ok: true, quota };
  }

  quotas(): QuotaEntry[] {
    return quotaEntriesOf(this.#sql.all<QuotaRow>("SELECT * FROM rsm_quotas ORDER BY user, client_id, key"));
  }

  /** The gateway's snapshot (MetadataDO's shape), with the ACLs the caller passes. */
  snapshot(acls: AclBinding[]): SecuritySnapshot {
    const users = generationsByUser(this.#sql.all<{ name: string; generation: string }>("SELECT name, generation FROM rsm_scram_users"));
    return { acls, users, quotas: this.quotas() };
  }

  // ---- the import from MetadataDO ----

  /** Adds the credential unless the user has one for this mechanism. 1 when added. */
  importUser(u: ScramUserExport): number {
    if (this.#sql.first("SELECT 1 AS one FROM rsm_scram_users WHERE name = ? AND mechanism = ?", u.name, u.mechanism) !== undefined) return 0;
    this.#write(u);
    return 1;
  }

  /** Adds the quota value unless the entity has one for this key. 1 when added. */
  importQuota(q: QuotaRow): number {
    return this.#sql.all("INSERT OR IGNORE INTO rsm_quotas (user, client_id, key, value) VALUES (?, ?, ?, ?) RETURNING 1 AS one", q.user, q.client_id, q.key, q.value).length;
  }

  // ---- snapshot ----

  image(): { scramUsers: ScramUserExport[]; quotas: QuotaRow[] } {
    const scramUsers = this.#sql.all<ScramUserRow>("SELECT * FROM rsm_scram_users ORDER BY name, mechanism").map(scramUserExportOf);
    return { scramUsers, quotas: this.#sql.all<QuotaRow>("SELECT * FROM rsm_quotas ORDER BY user, client_id, key") };
  }

  /** Replaces both tables with an image's rows (an image from before migration 4 has none). */
  restore(image: { scramUsers?: ScramUserExport[]; quotas?: QuotaRow[] }): void {
    this.#sql.run("DELETE FROM rsm_scram_users");
    this.#sql.run("DELETE FROM rsm_quotas");
    for (const u of image.scramUsers ?? []) this.#write(u);
    for (const q of image.quotas ?? []) this.importQuota(q);
  }

  #write(u: ScramUserExport): void {
    this.#sql.run(
      `INSERT INTO rsm_scram_users (name, mechanism, salt, iterations, stored_key, server_key, generation) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (name, mechanism) DO UPDATE SET salt = excluded.salt, iterations = excluded.iterations,
         stored_key = excluded.stored_key, server_key = excluded.server_key, generation = excluded.generation`,
      u.name,
      u.mechanism,
      blob(fromHex(u.salt)),
      u.iterations,
      blob(fromHex(u.storedKey)),
      blob(fromHex(u.serverKey)),
      u.generation,
    );
  }
}
