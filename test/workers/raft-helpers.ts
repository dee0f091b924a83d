/**
 * Helpers for tests of Raft groups of RaftMemberDO objects (docs/RAFT.md, "Raft member Durable
 * Objects"), the metadata quorum's included: a member's stub, bootstrapping a `sequence` group,
 * its members' Raft status, waiting for a leader. Members a test starts are made to act crashed
 * after it ({@link crashStartedMembers}), so no clock runs on after the file.
 */
import { env } from "cloudflare:test";
import { expect } from "vitest";
import type { SequenceItem } from "../../durable-objects/raft/sequence.ts";
import { raftMemberName, type RaftGroupConfig, type RaftMemberRpc, type RaftMemberStatus } from "../../src/raft/group.ts";

/** The tick of the groups tests start (ms). */
export const TICK_MS = 50;
/** The election timeout of the groups tests start, in ticks. */
export const ELECTION_TICKS = 10;
/** The base election timeout (ms; a follower waits a random [1x, 2x) of it). */
export const ELECTION_TIMEOUT_MS = TICK_MS * ELECTION_TICKS;
/**
 * The quiesced tick of the groups tests start (ms; 5 s by default): idle groups quiesce
 * (docs/RAFT.md "Quiescence"), and a leader stopped while its group is quiet is noticed after
 * 2-3 quiesced ticks, so 1 s keeps those waits short.
 */
export const QUIESCED_TICK_MS = 1000;

/** A member's stub, typed by the RPC interface itself (the platform's Rpc mapping of JSON results is too deep for tsc). */
export function member(groupId: string, id: string): RaftMemberRpc {
  return env.RAFT_MEMBER.get(env.RAFT_MEMBER.idFromName(raftMemberName(groupId, id))) as unknown as RaftMemberRpc;
}

const started: [groupId: string, id: string][] = [];

/** Records members a test started, for {@link crashStartedMembers}. */
export function trackMembers(groupId: string, ids: readonly string[]): void {
  for (const id of ids) started.push([groupId, id]);
}

/** For `afterEach` (or `afterAll`, where tests of a file share a group): every member started since acts crashed (no clock runs on). */
export async function crashStartedMembers(): Promise<void> {
  await Promise.all(started.splice(0).map(([g, id]) => member(g, id).setFaults({ crashed: true })));
}

/**
 * The configuration of a new `sequence` group of members `ids` (group id `${prefix}-` and 8
 * random hex digits), with this file's tick, election and quiesced-tick settings and a 3 s
 * request timeout; `extra` overrides any of them.
 */
export function sequenceGroupConfig(ids: readonly string[], extra: Partial<RaftGroupConfig> = {}, prefix = "g"): RaftGroupConfig {
  return {
    groupId: `${prefix}-${crypto.randomUUID().slice(0, 8)}`,
    members: ids.map((id) => ({ id })),
    stateMachine: "sequence",
    tickMs: TICK_MS,
    electionTicks: ELECTION_TICKS,
    requestTimeoutMs: 3000,
    quiescedTickMs: QUIESCED_TICK_MS,
    ...extra,
  };
}

/** Bootstraps every member of `config` (each must accept; crashed after the test: {@link crashStartedMembers}). */
export async function bootstrapGroup(config: RaftGroupConfig): Promise<RaftGroupConfig> {
  const ids = config.members.map((m) => m.id);
  trackMembers(config.groupId, ids);
  for (const id of ids) {
    const r = await member(config.groupId, id).bootstrap(config, id);
    expect(r.ok, JSON.stringify(r)).toBe(true);
  }
  return config;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every 20 ms until it answers something other than undefined, at most `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Status of a member, or null when it is down (crashed). */
export async function status(groupId: string, id: string): Promise<RaftMemberStatus | null> {
  try {
    const r = await member(groupId, id).status();
    return r.ok ? r.status : null;
  } catch {
    return null;
  }
}

/** The statuses of the members among `ids` that are up. */
export async function statuses(groupId: string, ids: readonly string[]): Promise<RaftMemberStatus[]> {
  return (await Promise.all(ids.map((id) => status(groupId, id)))).filter((s) => s !== null);
}

/** The leader once a majority of `ids` (those up among them) agree on one that is up. */
export async function leaderOf(groupId: string, ids: readonly string[]): Promise<RaftMemberStatus> {
  return until("a leader", async () => {
    const all = await statuses(groupId, ids);
    const leader = all.find((s) => s.role === "leader");
    if (leader === undefined) return undefined;
    const agree = all.filter((s) => s.leaderId === leader.memberId && s.term === leader.term).length;
    return agree * 2 > ids.length ? leader : undefined;
  });
}

/** The `sequence` machine's items as member `id` has applied them (a local read). */
export async function sequenceOf(groupId: string, id: string): Promise<SequenceItem[]> {
  const r = await member(groupId, id).localRead({ limit: 10_000 });
  if (!r.ok) throw new Error(JSON.stringify(r));
  return (r.result as { items: SequenceItem[] }).items;
}
