#!/usr/bin/env node
// The `edgelog` CLI. In the repository it runs the TypeScript source directly (Node >= 22.18
// strips types); a published package ships no src/ and runs the bundle in dist/ instead.
import { existsSync } from "node:fs";

const source = new URL("../src/cli/index.ts", import.meta.url);
const { run } = await import(existsSync(source) ? source.href : "../dist/cli.js");
await run();
