/**
 * `npm run fuzz -- --requests N [--seed S] [--from K] [--parallel P] [--url URL]`: the
 * workers-tier bad-input fuzzer's generators (test/fuzz/requests.ts) against a real dev server,
 * for as long as asked.
 *
 * Without `--url` it starts `wrangler dev` on a free port with a fresh state directory
 * (test/e2e/dev-server.ts) and stops it at the end. Request i (K <= i < K + N) is generated from
 * seed S + i, so `--seed S --requests N` replays a run and `--from K` resumes or splits one.
 * `--parallel P` splits the range into P contiguous slices, each against its own dev server
 * (the snapshots compare whole listings, so sessions must not share a server; not with `--url`):
 * the same requests as one session, in less wall time where the machine has cores to spare. Prints counts by route family and status, and every
 * violation (5xx, a non-table error, a rejected request that changed state) with the request
 * fast-check minimised from it. Exit code 1 when there was any violation.
 */
import { parseArgs } from "node:util";
import fc from "fast-check";
import { startDevServer, type DevServer } from "../e2e/dev-server.ts";
import { type Caller, FuzzSession, type FuzzRequest, anyRequest, createFixtures, describeRequest } from "./requests.ts";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "1000" },
    seed: { type: "string" },
    url: { type: "string" },
    from: { type: "string", default: "0" },
    parallel: { type: "string", default: "1" },
  },
});
const requests = Number(values.requests);
const from = Number(values.from);
const parallel = Number(values.parallel);
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
if (
  !Number.isSafeInteger(requests) ||
  requests < 1 ||
  !Number.isSafeInteger(seed) ||
  !Number.isSafeInteger(from) ||
  from < 0 ||
  !Number.isSafeInteger(parallel) ||
  parallel < 1 ||
  parallel > 8 ||
  (parallel > 1 && values.url !== undefined)
) {
  console.error("usage: npm run fuzz -- --requests N [--seed S] [--from K] [--parallel 1-8 | --url http://127.0.0.1:8787]");
  process.exit(2);
}

const started = Date.now();
const violations: { index: number; request: FuzzRequest; problems: string[]; minimised: FuzzRequest | null }[] = [];
const statuses = new Map<string, number>();
let done = 0;

/** Slices that stopped early: the server went away (or the harness failed), not a contract verdict. */
const aborted: { lo: number; hi: number; at: number; error: string }[] = [];

/**
 * Runs requests [lo, hi) of the seed against one server (started here unless `--url`). A
 * request that gets no answer at all (the server process died or was killed) stops the slice and
 * is reported with the index to resume from (`--from`), and the other slices go on.
 */
async function runSlice(lo: number, hi: number): Promise<void> {
  let server: DevServer | null = null;
  let baseUrl = values.url ?? "";
  let i = lo;
  try {
    if (baseUrl === "") {
      server = await startDevServer();
      baseUrl = server.baseUrl;
      console.log(`requests ${lo}..${hi - 1} against wrangler dev at ${baseUrl}`);
    }
    const call: Caller = (path, init) => fetch(`${baseUrl}${path}`, init);
    await createFixtures(call);
    const session = new FuzzSession(call);
    for (; i < hi; i++) {
      const request = fc.sample(anyRequest, { seed: seed + i, numRuns: 1 })[0]!;
      const { violations: problems } = await session.step(request);
      if (problems.length > 0) {
        // fast-check generates the same first value from the same seed, then shrinks it.
        const shrunk = await fc.check(
          fc.asyncProperty(anyRequest, async (r) => (await session.step(r)).violations.length === 0),
          { seed: seed + i, numRuns: 1 },
        );
        violations.push({ index: i, request, problems, minimised: shrunk.failed ? (shrunk.counterexample?.[0] ?? null) : null });
        console.log(`violation at request ${i} (seed ${seed + i}): ${describeRequest(request)}\n  ${problems.join("\n  ")}`);
      }
      done++;
      if (done % 1000 === 0) console.log(`${done} requests, ${violations.length} violations, ${((Date.now() - started) / 1000).toFixed(0)} s`);
      if ((i + 1 - lo) % 5000 === 0 && parallel > 1) console.log(`  slice ${lo}..${hi - 1}: done up to ${i}`);
    }
    for (const [k, n] of session.statuses) statuses.set(k, (statuses.get(k) ?? 0) + n);
  } catch (e) {
    const error = e instanceof Error ? `${e.message}${e.cause instanceof Error ? ` (${e.cause.message})` : ""}` : String(e);
    aborted.push({ lo, hi, at: i, error });
    console.log(`slice ${lo}..${hi - 1} stopped at request ${i}: ${error} (resume: --seed ${seed} --from ${i} --requests ${hi - i})`);
  } finally {
    await server?.dispose();
  }
}

const slice = Math.ceil(requests / parallel);
const slices = Array.from({ length: parallel }, (_, k) => [k * slice, Math.min(requests, (k + 1) * slice)] as const).filter(([lo, hi]) => lo < hi);
await Promise.all(slices.map(([lo, hi]) => runSlice(from + lo, from + hi)));
console.log(`\nseed ${seed}, requests ${from}..${from + requests - 1} (${requests}) in ${((Date.now() - started) / 1000).toFixed(1)} s, ${parallel} session(s)`);
console.log("by family and status:");
for (const [k, n] of [...statuses.entries()].sort()) console.log(`  ${k.padEnd(24)} ${n}`);
console.log(`violations: ${violations.length}`);
if (aborted.length > 0) console.log(`slices stopped early (no answer from the server; not run to the end): ${aborted.length}`);
for (const a of aborted) console.log(`- requests ${a.at}..${a.hi - 1} not run: ${a.error}`);
for (const v of violations) {
  console.log(`- request ${v.index} (replay: --seed ${seed} --from ${v.index} --requests 1): ${v.problems.join("; ")}`);
  if (v.minimised !== null) console.log(`  minimised: ${describeRequest(v.minimised)}`);
}
process.exit(violations.length > 0 || aborted.length > 0 ? 1 : 0);
