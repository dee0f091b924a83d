/**
 * `npm run fuzz -- --requests N [--seed S] [--url URL]`: the workers-tier bad-input fuzzer's
 * generators (test/fuzz/requests.ts) against a real dev server, for as long as asked.
 *
 * Without `--url` it starts `wrangler dev` on a free port with a fresh state directory
 * (test/e2e/dev-server.ts) and stops it at the end. Request i is generated from seed S + i, so
 * `--seed S --requests N` replays a run. Prints counts by route family and status, and every
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
  },
});
const requests = Number(values.requests);
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
if (!Number.isSafeInteger(requests) || requests < 1 || !Number.isSafeInteger(seed)) {
  console.error("usage: npm run fuzz -- --requests N [--seed S] [--url http://127.0.0.1:8787]");
  process.exit(2);
}

let server: DevServer | null = null;
let baseUrl = values.url ?? "";
if (baseUrl === "") {
  process.stdout.write("starting wrangler dev ... ");
  server = await startDevServer();
  baseUrl = server.baseUrl;
  console.log(baseUrl);
}
const call: Caller = (path, init) => fetch(`${baseUrl}${path}`, init);

const started = Date.now();
const violations: { index: number; request: FuzzRequest; problems: string[]; minimised: FuzzRequest | null }[] = [];
try {
  await createFixtures(call);
  const session = new FuzzSession(call);
  for (let i = 0; i < requests; i++) {
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
    if ((i + 1) % 1000 === 0) console.log(`${i + 1} requests, ${violations.length} violations, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  console.log(`\nseed ${seed}, ${requests} requests in ${((Date.now() - started) / 1000).toFixed(1)} s against ${baseUrl}`);
  console.log("by family and status:");
  for (const [k, n] of [...session.statuses.entries()].sort()) console.log(`  ${k.padEnd(24)} ${n}`);
  console.log(`violations: ${violations.length}`);
  for (const v of violations) {
    console.log(`- request ${v.index} (replay: --seed ${seed + v.index} --requests 1): ${v.problems.join("; ")}`);
    if (v.minimised !== null) console.log(`  minimised: ${describeRequest(v.minimised)}`);
  }
} finally {
  await server?.dispose();
}
process.exit(violations.length > 0 ? 1 : 0);
