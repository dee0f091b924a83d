/**
 * The randomness a Raft member Durable Object (RaftMemberDO, a replicated partition's replica)
 * gives its RaftNode for the randomised election timeout (Raft §5.2): an integer in [0, n) from
 * the platform's CSPRNG (modulo bias aside: n is a few dozen ticks). The pure core takes it as a
 * parameter so the simulation can seed it instead (docs/RAFT.md).
 */
export function randomBelow(n: number): number {
  const b = new Uint32Array(1);
  crypto.getRandomValues(b);
  return b[0]! % n;
}
