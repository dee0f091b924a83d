/**
 * `npm run sim -- --seeds N [--seed S] [--first F] [--mutation M] [--nodes 1|3|5]`
 *
 * Runs seeds F .. F+N-1 (default F = 1) of the deterministic Raft simulator and prints
 * `N seeds, 0 violations` (exit 0), or the first failing seed with its violation (exit 1).
 * `--seed S` runs exactly seed S and replays it identically every time.
 * `--mutation M` switches on one deliberate bug (test/sim/mutants.ts) to see the simulator catch it.
 * `--keep-going` runs every seed and prints the count of violations by kind (exit 1 if any).
 */
import { parseArgs } from "node:util";
import { MUTATIONS, type Mutation } from "./mutants.ts";
import { runSeed, type SimResult } from "./simulator.ts";

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1000" },
    seed: { type: "string" },
    first: { type: "string", default: "1" },
    mutation: { type: "string" },
    nodes: { type: "string" },
    verbose: { type: "boolean", default: false },
    "keep-going": { type: "boolean", default: false },
  },
});

const mutation = values.mutation as Mutation | undefined;
if (mutation !== undefined && !MUTATIONS.includes(mutation)) throw new Error(`--mutation must be one of ${MUTATIONS.join(", ")}`);
const nodes = values.nodes === undefined ? undefined : (Number(values.nodes) as 1 | 3 | 5);
if (nodes !== undefined && ![1, 3, 5].includes(nodes)) throw new Error("--nodes must be 1, 3 or 5");

const print = (r: SimResult) => {
  const v = r.violation;
  console.log(`seed ${r.seed} (${r.nodes} members): ${v === null ? "ok" : `VIOLATION ${v.kind} at ${v.atMs} ms: ${v.message}`}`);
  console.log(`  ${JSON.stringify(r.stats)}`);
};

if (values.seed !== undefined) {
  const r = runSeed({ seed: Number(values.seed), mutation, nodes });
  print(r);
  console.log(`1 seeds, ${r.violation === null ? 0 : 1} violations`);
  process.exit(r.violation === null ? 0 : 1);
}

const n = Number(values.seeds);
const first = Number(values.first);
const started = performance.now();
const kinds = new Map<string, number[]>();
for (let s = first; s < first + n; s++) {
  const r = runSeed({ seed: s, mutation, nodes });
  if (values.verbose) print(r);
  if (r.violation !== null && values["keep-going"]) {
    const list = kinds.get(r.violation.kind) ?? [];
    list.push(s);
    kinds.set(r.violation.kind, list);
  } else if (r.violation !== null) {
    print(r);
    console.log(`${s - first + 1} seeds, 1 violations: failing seed ${s}; replay with npm run sim -- --seed ${s}${mutation ? ` --mutation ${mutation}` : ""}`);
    process.exit(1);
  }
}
const secs = (performance.now() - started) / 1000;
if (kinds.size > 0) {
  const total = [...kinds.values()].reduce((a, l) => a + l.length, 0);
  for (const [kind, seeds] of kinds) console.log(`  ${kind}: ${seeds.length} (seeds ${seeds.slice(0, 10).join(", ")}${seeds.length > 10 ? ", ..." : ""})`);
  console.log(`${n} seeds, ${total} violations`);
  process.exit(1);
}
console.log(`${n} seeds, 0 violations`);
console.log(`(${secs.toFixed(1)} s, ${(n / secs).toFixed(0)} seeds/s)`);
