/**
 * Helpers for tests of the metadata quorum (docs/RAFT.md, "The metadata quorum"): a store over a
 * fresh group of RaftMemberDO members, its leader, a proposer that crashes after its commit, and
 * polling for a condition. The members a test file starts act crashed after it: the file calls
 * `afterAll(crashStartedMembers)` (./raft-helpers.ts; after all, not after each: a file's tests
 * may share the group `metadata`).
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import type { createApp } from "../../src/app.ts";
import type { Env } from "../../src/env.ts";
import { RaftMetadataStore, type RaftMetadataStoreOptions } from "../../src/metadata/raft-store.ts";
import { ELECTION_TICKS, member, TICK_MS, trackMembers } from "./raft-helpers.ts";

/**
 * A fresh group of members `ids` (group id `${prefix}-` and 8 random hex digits; tracked for
 * `crashStartedMembers`) at the tests' tick and election timeout (`extra` overrides them), and
 * a store over it. The store's first call bootstraps the group.
 */
export function quorumGroup(prefix: string, extra: Partial<RaftMetadataStoreOptions> = {}, ids: string[] = ["m1", "m2", "m3"]) {
  const groupId = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
  trackMembers(groupId, ids);
  const specs = ids.map((id) => ({ id }));
  const options = { groupId, tickMs: TICK_MS, electionTicks: ELECTION_TICKS, ...extra };
  return { ids, groupId, specs, options, store: new RaftMetadataStore(env, specs, options) };
}

/** A proposer (a gateway isolate) that dies right after its record commits, before any partition call (its partitions' init or destroy). */
export class CrashingStore extends RaftMetadataStore {
  protected override async completeLifecycle(): Promise<void> {
    throw new Error("injected crash between the record's commit and the partition calls");
  }
}

/**
 * A request through gateway `app` (createApp) with bindings `e` (e.g. EDGELOG_METADATA_QUORUM
 * on for the gateway only), in its own execution context, awaited; `body` is sent as JSON.
 */
export async function appCall(app: ReturnType<typeof createApp>, e: Env, method: string, path: string, body?: unknown): Promise<Response> {
  const ctx = createExecutionContext();
  const init: RequestInit = body === undefined ? { method } : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const res = await app.fetch(new Request(`http://edgelog.test${path}`, init), e, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** The id of a member among `ids` that says it leads (polling every 20 ms, up to 20 s). */
export async function leaderOf(groupId: string, ids: string[]): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    for (const id of ids) {
      const s = await member(groupId, id)
        .status()
        .catch(() => null);
      if (s?.ok && s.status.role === "leader") return id;
    }
    if (Date.now() > deadline) throw new Error("no leader");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits (polling every `pollMs`, up to `timeoutMs`) until `check` answers true; throws with `what` otherwise. */
export async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 20_000, pollMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
