/**
 * Fault injection of Raft members: dev and test builds only (docs/RAFT.md, "Fault injection").
 *
 * Two gates, both required:
 * 1. The build: {@link FAULTS_IN_BUILD} is `process.env.NODE_ENV !== "production"`, which
 *    wrangler replaces at bundle time: `wrangler deploy` (and `--dry-run`) bundles with
 *    NODE_ENV "production" unless the shell sets NODE_ENV, `wrangler dev` with "development",
 *    and the workers test tier does not set it. In a production bundle the gate is the constant
 *    `"production" !== "production"`: no runtime setting can turn it on
 *    (test/e2e/raft-faults-bundle.test.ts builds the bundle and checks).
 * 2. The runtime: the variable `EDGELOG_RAFT_FAULTS` must be "1". The project's wrangler.toml
 *    does not set it; the workers test tier does (vitest.config.ts).
 */
import type { RaftFaults } from "../../src/raft/group.ts";

/** False in a production bundle (see above). */
export const FAULTS_IN_BUILD: boolean = process.env.NODE_ENV !== "production";

/** Whether faults can be injected in this build with these bindings. */
export function faultsEnabled(env: { EDGELOG_RAFT_FAULTS?: string }): boolean {
  return FAULTS_IN_BUILD && env.EDGELOG_RAFT_FAULTS === "1";
}

/** Longest injected message delay (ms). */
export const MAX_FAULT_DELAY_MS = 60_000;

/** Most peers one link-fault list names. */
export const MAX_FAULT_PEERS = 16;

/** Checks and normalises a fault setting. @returns the faults, or why they are refused. */
export function checkFaults(f: RaftFaults): RaftFaults | string {
  if (typeof f !== "object" || f === null) return "faults must be an object";
  const out: RaftFaults = {};
  if (f.crashed !== undefined) {
    if (typeof f.crashed !== "boolean") return "crashed must be a boolean";
    if (f.crashed) out.crashed = true;
  }
  if (f.paused !== undefined) {
    if (typeof f.paused !== "boolean") return "paused must be a boolean";
    if (f.paused) out.paused = true;
  }
  if (f.dropRate !== undefined) {
    if (typeof f.dropRate !== "number" || !(f.dropRate >= 0 && f.dropRate <= 1)) return "dropRate must be a number in [0, 1]";
    if (f.dropRate > 0) out.dropRate = f.dropRate;
  }
  if (f.delayMs !== undefined) {
    if (typeof f.delayMs !== "number" || !Number.isInteger(f.delayMs) || f.delayMs < 0 || f.delayMs > MAX_FAULT_DELAY_MS) return `delayMs must be an integer in [0, ${MAX_FAULT_DELAY_MS}]`;
    if (f.delayMs > 0) out.delayMs = f.delayMs;
  }
  for (const key of ["dropTo", "dropFrom"] as const) {
    const ids = f[key];
    if (ids === undefined) continue;
    if (!Array.isArray(ids) || ids.length > MAX_FAULT_PEERS || !ids.every((id) => typeof id === "string" && id.length > 0 && id.length <= 64))
      return `${key} must be an array of at most ${MAX_FAULT_PEERS} member ids`;
    if (ids.length > 0) out[key] = [...new Set(ids)];
  }
  return out;
}

/** Whether a link fault drops the messages between this member and `peer` in direction `dir`. */
export function linkDropped(f: RaftFaults, dir: "to" | "from", peer: string): boolean {
  const ids = dir === "to" ? f.dropTo : f.dropFrom;
  return ids?.includes(peer) === true;
}
