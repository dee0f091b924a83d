/**
 * The official Durable Streams conformance suite (@durable-streams/server-conformance-tests,
 * pinned in package.json) against the real dev server. Its CLI finds no test files when the
 * package sits in node_modules, so it runs here, programmatically.
 *
 * The long-poll timeout is 3 s instead of the default 20 s: several tests wait for a
 * long-poll to time out, and the timeout is implementation-defined (protocol 5.7).
 * Skipped by the suite itself: "Reserved subscription APIs" (6 tests, needs
 * `subscriptions: true`); Edgelog does not implement subscriptions (docs/DURABLE-STREAMS.md).
 */
import { runConformanceTests } from "@durable-streams/server-conformance-tests";
import { afterAll, beforeAll } from "vitest";
import { startDevServer, type DevServer } from "./dev-server.ts";

const LONG_POLL_TIMEOUT_MS = 3000;
const config = { baseUrl: "", longPollTimeoutMs: LONG_POLL_TIMEOUT_MS };
let server: DevServer | undefined;

beforeAll(async () => {
  server = await startDevServer({ vars: { STREAMS_LONG_POLL_TIMEOUT_MS: String(LONG_POLL_TIMEOUT_MS) } });
  config.baseUrl = server.baseUrl;
});

afterAll(async () => {
  await server?.dispose();
});

runConformanceTests(config);
