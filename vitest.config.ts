import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const WORKERS_BINDINGS = {
  EDGELOG_BENCH_ROUTES: "1",
  EDGELOG_APPEND_COALESCING: "off",
  EDGELOG_AUTH: "none",
  EDGELOG_RAFT_FAULTS: "1",
  EDGELOG_BACKLOG_HOLD_TIMEOUT_MS: "3000",
  EDGELOG_METADATA_QUORUM: "off",
};

// Three tiers (shared/STYLE.md): pure unit tests in node, gateway + Durable Objects
// inside workerd, and end-to-end tests against a real `wrangler dev` server; plus `sim`,
// the seeded simulation of the pure Raft core.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            // Coalescing off in this tier: the pool runs the tests and the Worker in one
            // isolate, where a request awaiting a promise settled by another request's
            // context is cancelled as hung. On workerd proper (wrangler dev, Miniflare,
            // production) each request is its own context; the e2e tier covers coalescing.
            // EDGELOG_AUTH "none": the dev default (wrangler.toml leaves it unset on purpose, see
            // there); test/workers/auth-*.test.ts run the app with auth on through an env override.
            // EDGELOG_RAFT_FAULTS "1": Raft fault injection for test/workers/raft-*.test.ts (never in
            // production: durable-objects/raft/faults.ts). EDGELOG_BACKLOG_HOLD_TIMEOUT_MS "3000": the
            // backlog quota's producer_request_hold times out in 3 s here, not 30 s (test/workers/policies.test.ts).
            // EDGELOG_METADATA_QUORUM "off": this tier keeps topics in MetadataDO (wrangler.toml deploys a
            // three-member quorum); the workers-quorum project below runs the quorum, as the e2e tier does.
            miniflare: { bindings: WORKERS_BINDINGS },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/workers/**/*.test.ts"],
          testTimeout: 30_000,
        },
      },
      {
        // The same tier with the metadata quorum on for the whole Worker, the partition objects
        // included (as one deployment has it): partition placement in the metadata, leaders
        // reported by the partitions themselves, r1 replaceable (docs/RAFT.md "Partition placement").
        // test/workers/metadata-quorum*.test.ts switch the quorum on for the gateway only.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...WORKERS_BINDINGS, EDGELOG_METADATA_QUORUM: "1" } },
          }),
        ],
        test: {
          name: "workers-quorum",
          include: ["test/workers-quorum/**/*.test.ts"],
          testTimeout: 30_000,
        },
      },
      {
        // The deterministic Raft simulation (docs/RAFT.md): >= 10,000 seeds split over files so
        // they run in parallel workers, plus the mutation check and the linearizability checker's tests.
        test: {
          name: "sim",
          include: ["test/sim/**/*.test.ts"],
          environment: "node",
          testTimeout: 900_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
