/**
 * Security metadata of the cluster, kept by MetadataDO beside the topics (migration 2):
 *
 * - acls(principal, resource_type, resource_name, pattern_type, operation, permission): Kafka
 *   ACL bindings, the whole row the key (a binding exists once);
 * - scram_users(name, mechanism, salt, iterations, stored_key, server_key, generation): one SCRAM
 *   credential per user and mechanism (RFC 5802 StoredKey/ServerKey, never the password);
 *   `generation` is a random id replaced on every change, carried by the tokens issued for it,
 *   so a token dies with its user or password;
 * - quotas(user, client_id, key, value): Kafka client quota configs; '' stands for "no such
 *   component" and `<default>` for the default entity.
 *
 * Failed password checks are counted in memory per user name (this object is the one place all
 * isolates ask; {@link ScramLockout}): after {@link FREE_FAILURES} failures in a row, the user is
 * locked out for 1 s, doubling per further failure up to {@link MAX_LOCKOUT_MS}. A restart of the
 * object forgets the counts (docs/SECURITY.md says so). With the metadata quorum on, the same
 * records live in the quorum (durable-objects/raft/metadata-users.ts) and the lock-out in the
 * memory of the member that answers.
 */
import { toHex } from "../src/auth/hex.ts";
import { checkScramPassword, type ScramCredential, type ScramMechanism } from "../src/auth/scram.ts";
import type { QuotaEntity, QuotaEntry, QuotaKey, ScramCredentialInput, ScramUserSummary, SecuritySnapshot } from "../src/auth/store.ts";
import type { ScramUserExport } from "../src/metadata/commands.ts";
import {
  aclBindingOf,
  aclColumns,
  generationsByUser,
  quotaEntriesOf,
  scramCredentialsOf,
  scramUserExportOf,
  scramUserOf,
  scramUsersOf,
  userNotFound,
  type AclRow,
  type QuotaRow,
  type ScramUserRow,
} from "../src/metadata/tenant-security.ts";
import type { RpcResult } from "../src/protocol/errors.ts";
import { aclMatchesFilter, type AclBinding, type AclFilter } from "../src/protocol/acl.ts";
import { errorResult } from "../src/protocol/errors.ts";
import { blob, type Migration, type Sql } from "./base.ts";

export const SECURITY_MIGRATION_NAME = "security";

/** The migration body; MetadataDO appends it to its list. */
export function securityMigrationUp(sql: Sql): void {
  sql.run(`
    CREATE TABLE acls (
      principal TEXT NOT NULL,
      resource_type TEXT NOT NULL,
      resource_name TEXT NOT NULL,
      pattern_type TEXT NOT NULL,
      operation TEXT NOT NULL,
      permission TEXT NOT NULL,
      PRIMARY KEY (principal, resource_type, resource_name, pattern_type, operation, permission)
    ) WITHOUT ROWID;
    CREATE TABLE scram_users (
      name TEXT NOT NULL,
      mechanism TEXT NOT NULL,
      salt BLOB NOT NULL,
      iterations INTEGER NOT NULL,
      stored_key BLOB NOT NULL,
      server_key BLOB NOT NULL,
      generation TEXT NOT NULL,
      PRIMARY KEY (name, mechanism)
    ) WITHOUT ROWID;
    CREATE TABLE quotas (
      user TEXT NOT NULL,
      client_id TEXT NOT NULL,
      key TEXT NOT NULL,
      value REAL NOT NULL,
      PRIMARY KEY (user, client_id, key)
    ) WITHOUT ROWID;
  `);
}

export function securityMigration(version: number): Migration {
  return { version, name: SECURITY_MIGRATION_NAME, up: securityMigrationUp };
}

/** Failed attempts allowed before the lock-out starts. */
export const FREE_FAILURES = 3;
export const MAX_LOCKOUT_MS = 60_000;
/**
 * User names whose failures are remembered (memory bound). When full, names still within their
 * free failures go first, oldest first, then the oldest others: flooding the table with unknown
 * names never wipes a locked-out user's escalation (it used to clear the whole table).
 */
export const MAX_TRACKED_FAILURES = 10_000;

/**
 * The per-user failed-attempt lock-out, in memory of the object that checks passwords
 * (MetadataDO, or the metadata quorum member that answers: docs/SECURITY.md): after
 * {@link FREE_FAILURES} failures in a row the user is locked out for 1 s, doubling per further
 * failure up to {@link MAX_LOCKOUT_MS}; at most {@link MAX_TRACKED_FAILURES} names remembered.
 */
export class ScramLockout {
  readonly #failures = new Map<string, { count: number; lockedUntilMs: number }>();

  /** THROTTLED while `name` is locked out, else null. */
  check(name: string, now: number): RpcResult<never> | null {
    const f = this.#failures.get(name);
    if (f === undefined || f.lockedUntilMs <= now) return null;
    const throttleTimeMs = f.lockedUntilMs - now;
    return errorResult("THROTTLED", `Too many failed attempts for this user: retry in ${throttleTimeMs} ms.`, { throttleTimeMs });
  }

  /** Forgets the user's failures (a success, a new credential). */
  forget(name: string): void {
    this.#failures.delete(name);
  }

  /** Counts one failure. */
  fail(name: string, now: number): void {
    const count = (this.#failures.get(name)?.count ?? 0) + 1;
    const lockMs = count <= FREE_FAILURES ? 0 : Math.min(MAX_LOCKOUT_MS, 1000 * 2 ** (count - FREE_FAILURES - 1));
    // Delete, then set: the Map's order is then the order of the latest failure (oldest first).
    this.#failures.delete(name);
    if (this.#failures.size >= MAX_TRACKED_FAILURES) this.#evict();
    this.#failures.set(name, { count, lockedUntilMs: now + lockMs });
  }

  /** Frees a tenth of the failure table: see {@link MAX_TRACKED_FAILURES}. */
  #evict(): void {
    const target = Math.floor(MAX_TRACKED_FAILURES * 0.9);
    for (const [name, f] of this.#failures) {
      if (this.#failures.size <= target) return;
      if (f.count <= FREE_FAILURES) this.#failures.delete(name);
    }
    for (const name of this.#failures.keys()) {
      if (this.#failures.size <= target) return;
      this.#failures.delete(name);
    }
  }
}

/**
 * Checks a password against a user's stored credentials (newest mechanism first), with the
 * lock-out. The same answer for an unknown user and a wrong password (no user enumeration).
 * Errors: UNAUTHENTICATED, THROTTLED (details.throttleTimeMs).
 */
export async function checkScramUser(
  lockout: ScramLockout,
  name: string,
  password: string,
  credentials: readonly (ScramCredential & { generation: string })[],
): Promise<RpcResult<{ generation: string }>> {
  const now = Date.now();
  const locked = lockout.check(name, now);
  if (locked !== null) return locked;
  for (const cred of credentials) {
    if (await checkScramPassword(cred, password)) {
      lockout.forget(name);
      return { ok: true, generation: cred.generation };
    }
  }
  lockout.fail(name, now);
  return errorResult("UNAUTHENTICATED", "Invalid user name or password.");
}

export class SecurityTables {
  readonly #sql: Sql;
  readonly #storage: DurableObjectStorage;
  readonly #lockout = new ScramLockout();

  constructor(sql: Sql, storage: DurableObjectStorage) {
    this.#sql = sql;
    this.#storage = storage;
  }

  snapshot(): RpcResult<{ snapshot: SecuritySnapshot }> {
    const acls = this.#sql.all<AclRow>("SELECT * FROM acls ORDER BY resource_type, resource_name, principal, operation, permission").map(aclBindingOf);
    const users = generationsByUser(this.#sql.all<{ name: string; generation: string }>("SELECT name, generation FROM scram_users"));
    return { ok: true, snapshot: { acls, users, quotas: this.#quotas() } };
  }

  createAcls(bindings: AclBinding[]): RpcResult<{ created: number }> {
    let created = 0;
    this.#storage.transactionSync(() => {
      for (const b of bindings) {
        created += this.#sql.all(
          "INSERT OR IGNORE INTO acls (principal, resource_type, resource_name, pattern_type, operation, permission) VALUES (?, ?, ?, ?, ?, ?) RETURNING 1 AS one",
          ...aclColumns(b),
        ).length;
      }
    });
    return { ok: true, created };
  }

  deleteAcls(filter: AclFilter): RpcResult<{ deleted: AclBinding[] }> {
    const deleted = this.#sql
      .all<AclRow>("SELECT * FROM acls")
      .map(aclBindingOf)
      .filter((b) => aclMatchesFilter(b, filter));
    this.#storage.transactionSync(() => {
      for (const b of deleted) {
        this.#sql.run("DELETE FROM acls WHERE principal = ? AND resource_type = ? AND resource_name = ? AND pattern_type = ? AND operation = ? AND permission = ?", ...aclColumns(b));
      }
    });
    return { ok: true, deleted };
  }

  upsertScramUser(name: string, c: ScramCredentialInput): RpcResult<{ user: ScramUserSummary }> {
    const generation = toHex(crypto.getRandomValues(new Uint8Array(16)));
    this.#sql.run(
      `INSERT INTO scram_users (name, mechanism, salt, iterations, stored_key, server_key, generation) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (name, mechanism) DO UPDATE SET salt = excluded.salt, iterations = excluded.iterations,
         stored_key = excluded.stored_key, server_key = excluded.server_key, generation = excluded.generation`,
      name,
      c.mechanism,
      blob(c.salt),
      c.iterations,
      blob(c.storedKey),
      blob(c.serverKey),
      generation,
    );
    this.#lockout.forget(name);
    return { ok: true, user: this.#summary(name)! };
  }

  deleteScramUser(name: string, mechanism: ScramMechanism | null): RpcResult<object> {
    const before = this.#summary(name);
    if (before === undefined || (mechanism !== null && !before.mechanisms.some((m) => m.mechanism === mechanism))) return userNotFound(name, mechanism);
    if (mechanism === null) this.#sql.run("DELETE FROM scram_users WHERE name = ?", name);
    else this.#sql.run("DELETE FROM scram_users WHERE name = ? AND mechanism = ?", name, mechanism);
    return { ok: true };
  }

  listScramUsers(): RpcResult<{ users: ScramUserSummary[] }> {
    return {
      ok: true,
      users: scramUsersOf(this.#sql.all<{ name: string; mechanism: string; iterations: number }>("SELECT name, mechanism, iterations FROM scram_users ORDER BY name, mechanism")),
    };
  }

  async authenticateScram(name: string, password: string): Promise<RpcResult<{ generation: string }>> {
    const creds = scramCredentialsOf(this.#sql.all<ScramUserRow>("SELECT * FROM scram_users WHERE name = ? ORDER BY mechanism DESC", name));
    return checkScramUser(this.#lockout, name, password, creds);
  }

  /** The rows of the three tables, for the one-time import into the metadata quorum (docs/RAFT.md). */
  exportRows(): { acls: AclBinding[]; users: ScramUserExport[]; quotas: QuotaRow[] } {
    const users = this.#sql.all<ScramUserRow>("SELECT * FROM scram_users ORDER BY name, mechanism").map(scramUserExportOf);
    const acls = this.#sql.all<AclRow>("SELECT * FROM acls ORDER BY resource_type, resource_name, principal, operation, permission").map(aclBindingOf);
    return { acls, users, quotas: this.#sql.all<QuotaRow>("SELECT * FROM quotas ORDER BY user, client_id, key") };
  }

  alterQuotas(entity: QuotaEntity, values: Partial<Record<QuotaKey, number | null>>): RpcResult<{ quota: QuotaEntry | null }> {
    const user = entity.user ?? "";
    const client = entity.clientId ?? "";
    this.#storage.transactionSync(() => {
      for (const [key, value] of Object.entries(values)) {
        if (value === null) this.#sql.run("DELETE FROM quotas WHERE user = ? AND client_id = ? AND key = ?", user, client, key);
        else if (value !== undefined) {
          this.#sql.run(
            "INSERT INTO quotas (user, client_id, key, value) VALUES (?, ?, ?, ?) ON CONFLICT (user, client_id, key) DO UPDATE SET value = excluded.value",
            user,
            client,
            key,
            value,
          );
        }
      }
    });
    const quota = this.#quotas().find((q) => (q.user ?? "") === user && (q.clientId ?? "") === client) ?? null;
    return { ok: true, quota };
  }

  #quotas(): QuotaEntry[] {
    return quotaEntriesOf(this.#sql.all<QuotaRow>("SELECT * FROM quotas ORDER BY user, client_id, key"));
  }

  #summary(name: string): ScramUserSummary | undefined {
    return this.listScramUsersFor(name);
  }

  listScramUsersFor(name: string): ScramUserSummary | undefined {
    return scramUserOf(name, this.#sql.all<{ mechanism: string; iterations: number }>("SELECT mechanism, iterations FROM scram_users WHERE name = ? ORDER BY mechanism", name));
  }
}
