/**
 * The README's secured quick start, run as written against a real `wrangler dev` started with
 * the same vars as its `npm start -- --var ...` line: the shell block line by line (URL pointed
 * at this test's server), then the SDK block (its import pointed at the SDK source). Also: the
 * auth mode is logged at start-up.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startDevServer, type DevServer } from "./dev-server.ts";

const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const section = readme.slice(readme.indexOf("### Secured quick start"));
const blocks = [...section.matchAll(/```(sh|js)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, code: m[2]! }));
const startLine = blocks[0]!.code.trim();
const shell = blocks[1]!.code;
const sdk = blocks[2]!.code;

/** `--var K:V` pairs of the README's npm start line. */
function varsOf(line: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const m of line.matchAll(/--var ([A-Z_]+):(\S+)/g)) vars[m[1]!] = m[2]!;
  return vars;
}

let server: DevServer;

beforeAll(async () => {
  expect(startLine.startsWith("npm start -- ")).toBe(true);
  server = await startDevServer({ vars: varsOf(startLine) });
});

afterAll(async () => {
  await server?.dispose();
});

describe("README secured quick start", () => {
  it("the npm start line sets what issue 12 names", () => {
    expect(varsOf(startLine)).toEqual({ EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: "s3cret", EDGELOG_SUPERUSERS: "admin" });
  });

  it("runs the shell block: token issue, CLI produce/consume, a SCRAM user with namespace ACLs, and a 401 without credentials", () => {
    const script = shell.replaceAll("localhost:8787", server.baseUrl.replace("http://", ""));
    const out = execFileSync("bash", ["-euo", "pipefail", "-c", script], {
      cwd: ROOT,
      env: { ...process.env, PATH: `${join(ROOT, "node_modules/.bin")}:${process.env.PATH ?? ""}`, EDGELOG_URL: server.baseUrl, NO_COLOR: "1" },
      encoding: "utf8",
      timeout: 120_000,
    });
    const lines = out.trim().split("\n");
    // consume as admin, then as app: the record both times; then curl's JSON error.
    expect(lines.filter((l) => l === "hello").length).toBe(2);
    const last = JSON.parse(lines.at(-1)!) as { error: { code: string } };
    expect(last.error.code).toBe("UNAUTHENTICATED");
  });

  it("runs the SDK block as user app", () => {
    const dir = mkdtempSync(join(tmpdir(), "edgelog-secured-"));
    const file = join(dir, "secured.mts");
    const code = sdk.replace('"@edgelog/sdk"', JSON.stringify(join(ROOT, "sdk/src/index.ts"))).replace("http://127.0.0.1:8787", server.baseUrl);
    writeFileSync(file, code);
    const out = execFileSync(process.execPath, [file], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(out.trim().split("\n")).toEqual(["0 hello", "1 from the SDK"]);
  });

  it("logged the auth mode at start-up only when it is off (here it is on: nothing logged)", () => {
    expect(server.output()).not.toContain("authentication is OFF");
  });
});
