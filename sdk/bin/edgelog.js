#!/usr/bin/env node
// The `edgelog` CLI. A published package ships no src/ and runs the bundle in dist/ (Node >= 22).
// In the repository it runs the TypeScript source: directly where Node strips types (>= 22.18),
// else through tsx, a devDependency of the repository (so `node sdk/bin/edgelog.js` works on
// older Nodes too; `npx edgelog` uses the project's own Node 24).
import { existsSync } from "node:fs";
import process from "node:process";

const source = new URL("../src/cli/index.ts", import.meta.url);
let entry = "../dist/cli.js";
if (existsSync(source)) {
  entry = source.href;
  if (!process.features.typescript) {
    try {
      const { register } = await import("tsx/esm/api");
      register();
    } catch {
      process.stderr.write(`edgelog: Node ${process.version} cannot run the TypeScript sources and tsx is not installed: run \`npm ci\` or use Node >= 22.18.\n`);
      process.exit(1);
    }
  }
}
const { run } = await import(entry);
await run();
