/**
 * `edgelog`: the command-line client (Node only), modelled on kafka-topics,
 * kafka-console-producer / kafka-console-consumer and kcat.
 *
 * Exit codes: 0 success; 1 the server answered an error (`edgelog: CODE: message` on stderr)
 * or the request failed; 2 usage error (one line on stderr, and a pointer to --help).
 *
 * Layout: `args.ts` parses, `io.ts` and `format.ts` move and shape bytes, `commands/` holds one
 * file per command and the command table; this file wires them to process.stdin/stdout. The
 * pure parts are exported for tests.
 */
import process from "node:process";
import { EdgelogError } from "../../../src/protocol/index.ts";
import { Admin } from "../admin.ts";
import { EdgelogClient } from "../client.ts";
import { DEFAULT_URL, type Parsed, parseWith, UsageError } from "./args.ts";
import { COMMANDS, type Command } from "./commands/index.ts";
import { type CliIo, Output, OutputClosed } from "./io.ts";

export { DEFAULT_URL, UsageError } from "./args.ts";
export type { CliCommand, ParsedLine, RunContext } from "./command.ts";
export { COMMANDS, type Command } from "./commands/index.ts";
export type { StartPosition } from "./commands/consume.ts";
export { type FormatOptions, displayName, formatDescription, formatGroupDescription, formatGroupList, formatRecord, formatResetOffsets, formatTable } from "./format.ts";
export { type CliIo, LineSplitter, lineToMessage } from "./io.ts";

export const USAGE = `Usage: edgelog [--url URL] COMMAND ...

Commands:
${COMMANDS.map((c) => c.usage).join("")}
Options:
  --url URL   gateway URL (default: $EDGELOG_URL or ${DEFAULT_URL})
  -h, --help  this text

Exit codes:
  0  success (also when the reader of stdout goes away, as with | head)
  1  the server answered an error (stderr: edgelog: CODE: message, CODE from
     docs/PROTOCOL.md), or no answer (UNAVAILABLE, REQUEST_TIMED_OUT)
  2  usage error (stderr: one line, and a pointer to --help)
`;

/**
 * Parses `argv` (without `node` and the script). Pure.
 * @param env environment, for EDGELOG_URL
 * @throws UsageError for an unknown command or option, a missing or extra argument, a bad number.
 */
export function parseCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): Parsed<Command> {
  return parseWith(COMMANDS, withMetadataAlias(argv), env);
}

/** kcat's `-L` as the first argument (after a --url) is the `metadata` command. */
function withMetadataAlias(argv: readonly string[]): readonly string[] {
  const at = argv[0] === "--url" ? 2 : argv[0]?.startsWith("--url=") === true ? 1 : 0;
  return argv[at] === "-L" ? [...argv.slice(0, at), "metadata", ...argv.slice(at + 1)] : argv;
}

/**
 * Runs one command. @returns the exit code (0 ok, 1 server/network error, 2 usage error).
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  let cmd: Parsed<Command>;
  try {
    cmd = parseCli(argv, io.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr.write(`edgelog: ${e.message}\nTry 'edgelog --help' for the commands and options.\n`);
    return 2;
  }
  if (cmd.kind === "help") {
    io.stdout.write(USAGE);
    return 0;
  }
  const client = new EdgelogClient(io.fetch === undefined ? { baseUrl: cmd.url } : { baseUrl: cmd.url, fetch: io.fetch });
  const command = COMMANDS.find((c) => c.name === cmd.kind)!;
  try {
    await command.run(cmd, { client, admin: new Admin(client), out: new Output(io.stdout), io });
    return 0;
  } catch (e) {
    if (e instanceof OutputClosed) return 0;
    io.stderr.write(e instanceof EdgelogError ? `edgelog: ${e.code}: ${e.message}\n` : `edgelog: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

/** Entry point of bin/edgelog.js: runs main() on the process's streams and sets the exit code. */
export async function run(): Promise<void> {
  process.exitCode = await main(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env });
}
