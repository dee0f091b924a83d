/**
 * Every code block of README.md and sdk/README.md runs as written, twice in a row (examples
 * must be idempotent), against a fresh dev server. The blocks are read from the Markdown, not
 * copied here. The one change made to them: the gateway address `localhost:8787` /
 * `127.0.0.1:8787` becomes the test server's (and EDGELOG_URL points the CLI at it).
 * A block that is not run says why in an HTML comment on the line before it
 * (`<!-- not run by test/e2e/readme.test.ts: ... -->`).
 *
 * sh blocks run in bash (`set -eo pipefail`) in the repository root with the project's
 * node_modules/.bin first on PATH (so `npx edgelog` and `node` are the project's); js blocks are
 * saved as .mjs files inside the repository (so `@edgelog/sdk` resolves to the workspace
 * package, built first as the README says) and run with the project's Node.
 */
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, type DevServer, startDevServer } from "./dev-server.ts";
import { snippets, withAddress } from "./snippets.ts";

const BIN = join(ROOT, "node_modules/.bin");
const SCRATCH = join(ROOT, "node_modules/.cache/edgelog-readme");

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env, PATH: `${BIN}:${process.env.PATH ?? ""}` }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer();
  mkdirSync(SCRATCH, { recursive: true });
  // The README's own step before its SDK example: build the workspace package.
  const build = await run("npm", ["run", "build", "-w", "sdk"], {});
  if (build.code !== 0) throw new Error(`npm run build -w sdk failed:\n${build.stdout}\n${build.stderr}`);
}, 180_000);
afterAll(async () => {
  await server?.dispose();
  rmSync(SCRATCH, { recursive: true, force: true });
});

const ALL = [...snippets("README.md"), ...snippets("sdk/README.md")];

describe("README snippets", () => {
  it("every code block is runnable (sh, js) or says why it is not run", () => {
    expect(ALL.filter((s) => s.notRun === undefined && s.lang !== "sh" && s.lang !== "js").map((s) => `${s.file}:${s.line} (${s.lang || "no language"})`)).toEqual([]);
    expect(ALL.filter((s) => s.notRun === undefined).length).toBeGreaterThanOrEqual(7);
  });

  // Every block twice, each `npx edgelog` line a Node start: over two minutes on a loaded machine.
  it("README.md and sdk/README.md run as written, twice in a row, against a fresh dev server", { timeout: 300_000 }, async () => {
    const address = (code: string) => withAddress(code, server.port);
    const env = { EDGELOG_URL: server.baseUrl };
    for (const round of [1, 2]) {
      for (const s of ALL.filter((x) => x.notRun === undefined)) {
        const where = `${s.file}:${s.line}, round ${round}`;
        let r;
        if (s.lang === "sh") {
          r = await run("bash", ["-c", `set -eo pipefail\n${address(s.code)}`], env);
        } else {
          const path = join(SCRATCH, `${s.file.replace(/\W/g, "-")}-${s.line}.mjs`);
          writeFileSync(path, address(s.code));
          r = await run(join(BIN, "node"), [path], env);
        }
        expect({ where, code: r.code, stderr: r.stderr }).toEqual({ where, code: 0, stderr: "" });
        expect(r.stdout, where).not.toMatch(/"error":\{"code":"(?!TOPIC_ALREADY_EXISTS)/);
      }
    }
  });
});
