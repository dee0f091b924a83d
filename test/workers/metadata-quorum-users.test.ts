/**
 * SCRAM users and client quotas in the metadata quorum (docs/RAFT.md "The metadata quorum",
 * docs/SECURITY.md): records of the quorum's state machine (KRaft's UserScramCredentialRecord
 * and ClientQuotaRecord) with MetadataDO's answers and error codes (one script run against
 * both stores); the credential stored salted and never answered; password checks at the
 * leader with its lock-out; a follower installing a snapshot and a restart of every member
 * keep them; and POST /v1/auth/token with the switch on logs in a user created through the quorum.
 */
import { env } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import { createScramCredential } from "../../src/auth/scram.ts";
import { securityStore, type SecurityStore } from "../../src/auth/store.ts";
import { raftMemberName } from "../../src/raft/group.ts";
import { authEnv, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";
import { eventually, leaderOf, quorumGroup } from "./metadata-quorum-helpers.ts";
import { crashStartedMembers, member, trackMembers } from "./raft-helpers.ts";

afterAll(crashStartedMembers);

const unique = (p: string) => `${p}-${crypto.randomUUID().slice(0, 8)}`;

describe("SCRAM users and quotas in the metadata quorum", () => {
  it("one script of user, password and quota calls answers alike on MetadataDO and on the quorum (random generations and lock-out times aside)", async () => {
    const { store: quorum } = quorumGroup("uq");
    const local = securityStore(env);
    const u = unique("alice");
    const sha256 = await createScramCredential("SCRAM-SHA-256", "pw-256");
    const sha512 = await createScramCredential("SCRAM-SHA-512", "pw-512", 5000);
    const script = async (s: SecurityStore): Promise<unknown[]> => {
      const out: unknown[] = [];
      const step = async (p: Promise<unknown>) => out.push(await p);
      await step(s.deleteScramUser(u, null));
      await step(s.upsertScramUser(u, sha256));
      await step(s.upsertScramUser(u, sha512));
      await step(s.authenticateScram(u, "pw-256"));
      await step(s.authenticateScram(u, "pw-512"));
      await step(s.authenticateScram(`${u}-nope`, "pw-256"));
      for (let i = 0; i < 4; i++) await step(s.authenticateScram(u, "wrong"));
      // Locked out now, even with the right password.
      await step(s.authenticateScram(u, "pw-256"));
      const listed = await s.listScramUsers();
      out.push(listed.ok ? listed.users.filter((x) => x.name === u) : listed);
      await step(s.deleteScramUser(u, "SCRAM-SHA-512"));
      await step(s.deleteScramUser(u, "SCRAM-SHA-512"));
      await step(s.alterQuotas({ user: u, clientId: null }, { producer_byte_rate: 1024, request_rate: 10 }));
      await step(s.alterQuotas({ user: u, clientId: "app-1" }, { consumer_byte_rate: 2048 }));
      await step(s.alterQuotas({ user: u, clientId: null }, { request_rate: null }));
      await step(s.alterQuotas({ user: "<default>", clientId: null }, { producer_byte_rate: 5 }));
      const snap = await s.securitySnapshot();
      out.push(
        snap.ok
          ? [Object.keys(snap.snapshot.users).filter((n) => n === u), snap.snapshot.users[u]?.length, snap.snapshot.quotas.filter((q) => q.user === u || q.user === "<default>")]
          : snap,
      );
      await step(s.alterQuotas({ user: u, clientId: null }, { producer_byte_rate: null }));
      await step(s.alterQuotas({ user: u, clientId: "app-1" }, { consumer_byte_rate: null }));
      await step(s.alterQuotas({ user: "<default>", clientId: null }, { producer_byte_rate: null }));
      await step(s.deleteScramUser(u, null));
      await step(s.listScramUsers().then((r) => r.ok && r.users.some((x) => x.name === u)));
      return out.map(
        (o) =>
          JSON.parse(
            JSON.stringify(o, (k, v) => (k === "generation" ? "g" : k === "throttleTimeMs" ? 0 : k === "message" && typeof v === "string" ? v.replace(/\d+ ms/, "N ms") : v)),
          ) as unknown,
      );
    };
    const a = await script(local);
    const b = await script(quorum);
    expect(b).toEqual(a);
    // The script exercises successes, the lock-out and the not-found answers.
    const codes = a.map((x) => (x as { code?: string }).code ?? "ok");
    expect(codes).toContain("THROTTLED");
    expect(codes).toContain("USER_NOT_FOUND");
    expect(codes).toContain("UNAUTHENTICATED");
    expect(codes.filter((c) => c === "ok").length).toBeGreaterThan(10);
  });

  it("the credential is stored salted: no member's state or snapshot holds the password, and no answer carries a key", async () => {
    const { store, ids, groupId } = quorumGroup("us");
    const u = unique("bob");
    const password = `secret-${crypto.randomUUID()}`;
    const cred = await createScramCredential("SCRAM-SHA-256", password);
    const up = await store.upsertScramUser(u, cred);
    expect(up).toEqual({ ok: true, user: { name: u, mechanisms: [{ mechanism: "SCRAM-SHA-256", iterations: 4096 }] } });
    const leader = await leaderOf(groupId, ids);
    const dump = await runRows(groupId, leader);
    expect(dump).not.toContain(password);
    expect(dump).toContain(u);
    const listed = JSON.stringify(await store.listScramUsers());
    const snap = JSON.stringify(await store.securitySnapshot());
    for (const text of [listed, snap]) expect(text).not.toMatch(/storedKey|serverKey|salt/);
    // Malformed records change nothing, on every member alike.
    const bad = await member(groupId, leader).propose(
      new TextEncoder().encode(JSON.stringify({ type: "upsertScramUser", requestId: "x", name: u, credential: { mechanism: "MD5" }, generation: "g" })),
    );
    expect(bad.ok && (bad.result as { code: string }).code).toBe("INVALID_REQUEST");
    expect((await store.authenticateScram(u, password)).ok).toBe(true);
  });

  it("snapshots carry them: a follower that missed compacted records installs the snapshot; a restart of every member keeps them", async () => {
    const { store, ids, groupId } = quorumGroup("un", { compactEveryEntries: 4 });
    const u = unique("carol");
    expect((await store.upsertScramUser(u, await createScramCredential("SCRAM-SHA-512", "pw"))).ok).toBe(true);
    const leader = await leaderOf(groupId, ids);
    const follower = ids.find((id) => id !== leader)!;
    const fs = await member(groupId, follower).status();
    const appliedAtCrash = fs.ok ? fs.status.appliedIndex : Number.NaN;
    expect((await member(groupId, follower).setFaults({ crashed: true })).ok).toBe(true);
    for (let i = 0; i < 5; i++) expect((await store.alterQuotas({ user: u, clientId: `c${i}` }, { producer_byte_rate: 100 + i })).ok).toBe(true);
    expect((await store.upsertScramUser(`${u}-2`, await createScramCredential("SCRAM-SHA-256", "pw2"))).ok).toBe(true);
    expect((await store.alterQuotas({ user: u, clientId: "c0" }, { producer_byte_rate: null })).ok).toBe(true);
    const others = ids.filter((id) => id !== follower);
    const ls = await member(groupId, await leaderOf(groupId, others)).status();
    // The log the follower needs is compacted away at the leader: only the snapshot can bring it up.
    expect(ls.ok && ls.status.snapshotIndex > appliedAtCrash).toBe(true);
    expect((await member(groupId, follower).setFaults({})).ok).toBe(true);
    const view = async (id: string) => {
      const r = await member(groupId, id).localRead({ type: "securitySnapshot" });
      const s = r.ok ? (r.result as { snapshot: { users: Record<string, string[]>; quotas: { user: string | null }[] } }).snapshot : null;
      return JSON.stringify([s?.users[u], s?.users[`${u}-2`], s?.quotas.filter((q) => q.user === u)]);
    };
    const expected = await view(await leaderOf(groupId, others));
    expect(expected).toContain("c4");
    expect(expected).not.toContain('"c0"');
    await eventually("the follower installs the snapshot and holds the same users and quotas", async () => (await view(follower)) === expected);
    expect(await runRows(groupId, follower)).toContain(`${u}-2`);

    for (const id of ids) await member(groupId, id).setFaults({ crashed: true });
    for (const id of ids) await member(groupId, id).setFaults({});
    expect((await store.authenticateScram(u, "pw")).ok).toBe(true);
    expect((await store.authenticateScram(`${u}-2`, "pw2")).ok).toBe(true);
    const snap = await store.securitySnapshot();
    expect(snap.ok && snap.snapshot.quotas.filter((q) => q.user === u).map((q) => [q.clientId, q.values.producer_byte_rate])).toEqual([
      ["c1", 101],
      ["c2", 102],
      ["c3", 103],
      ["c4", 104],
    ]);
  });
});

/** A member's user and quota rows, its log entries and snapshot, as text (blobs as hex by SQLite). */
async function runRows(groupId: string, id: string): Promise<string> {
  const { runInDurableObject } = await import("cloudflare:test");
  const stub = env.RAFT_MEMBER.get(env.RAFT_MEMBER.idFromName(raftMemberName(groupId, id)));
  return runInDurableObject(stub, (_i, state) =>
    JSON.stringify([
      state.storage.sql.exec("SELECT name, mechanism, hex(salt) AS salt, iterations, hex(stored_key) AS k, hex(server_key) AS s, generation FROM rsm_scram_users").toArray(),
      state.storage.sql.exec("SELECT * FROM rsm_quotas").toArray(),
      state.storage.sql.exec("SELECT CAST(data AS TEXT) AS d FROM raft_entries").toArray(),
      state.storage.sql.exec("SELECT CAST(data AS TEXT) AS d FROM raft_snapshot_parts").toArray(),
    ]),
  );
}

describe("with EDGELOG_METADATA_QUORUM = 1 and auth on", () => {
  it("a SCRAM user created through the quorum logs in at POST /v1/auth/token; its quota and deletion are the quorum's", async () => {
    trackMembers("metadata", ["m1"]);
    const e = authEnv(await makeKeys(), { EDGELOG_METADATA_QUORUM: "1" });
    const admin = await hsToken(SUPERUSER);
    const u = unique("dave");
    await expectOk(await request(e, "PUT", `/v1/users/${u}`, { token: admin, body: { password: "s3cret-pw" } }));
    const basic = (user: string, pw: string) => ({ authorization: `Basic ${btoa(`${user}:${pw}`)}` });
    const tok = (await expectOk(await request(e, "POST", "/v1/auth/token", { headers: basic(u, "s3cret-pw") }))) as { token: string };
    const who = (await expectOk(await request(e, "GET", "/v1/auth/whoami", { token: tok.token }))) as { principal: string };
    expect(who.principal).toBe(u);
    await expectCode(await request(e, "POST", "/v1/auth/token", { headers: basic(u, "wrong") }), 401, "UNAUTHENTICATED");
    await expectOk(await request(e, "PUT", "/v1/quotas", { token: admin, body: { user: u, producer_byte_rate: 4096 } }));
    const quotas = (await expectOk(await request(e, "GET", "/v1/quotas", { token: admin }))) as { quotas: { user: string | null }[] };
    expect(quotas.quotas.filter((q) => q.user === u)).toEqual([{ user: u, clientId: null, values: { producer_byte_rate: 4096 } }]);
    // MetadataDO never heard of the user or the quota.
    const local = await securityStore(env).securitySnapshot();
    expect(local.ok && [local.snapshot.users[u], local.snapshot.quotas.filter((q) => q.user === u)]).toEqual([undefined, []]);
    // Deleting the user (a record) ends its token: the generation it carried is gone.
    await expectOk(await request(e, "DELETE", `/v1/users/${u}`, { token: admin }), 204);
    await expectCode(await request(e, "GET", "/v1/auth/whoami", { token: tok.token }), 401, "UNAUTHENTICATED");
    await expectCode(await request(e, "POST", "/v1/auth/token", { headers: basic(u, "s3cret-pw") }), 401, "UNAUTHENTICATED");
  });
});
