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
import { type CliAuth, cliAuth, DEFAULT_URL, type Parsed, parseWith, UsageError } from "./args.ts";
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
  --url URL, -b HOST:PORT   gateway URL (default: $EDGELOG_URL or ${DEFAULT_URL})
  --token JWT               bearer token (default: $EDGELOG_TOKEN)
  --user NAME               a SCRAM user, password from $EDGELOG_PASSWORD (exchanged for a token)
  -h, --help                this text

kcat's forms work too: -C (consume), -P (produce), -L (metadata) instead of the command,
and -t TOPIC instead of the TOPIC argument: edgelog -b 127.0.0.1:8787 -C -t logs -o beginning

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
  return parseWith(COMMANDS, pulsarForms(kcatForms(argv)), env);
}

/** Global options that take a value, skipped to find the command word. */
const GLOBAL_VALUE_OPTIONS = new Set(["--url", "-b", "--token", "--user"]);

/**
 * pulsar-client consume's `-t TYPE` (its subscription type) on `subscribe`, where `-t` would
 * otherwise be kcat's `--topic`: rewritten to `--type TYPE`.
 */
function pulsarForms(argv: readonly string[]): readonly string[] {
  let at = 0;
  while (at < argv.length && (GLOBAL_VALUE_OPTIONS.has(argv[at]!) || /^--(url|token|user)=/.test(argv[at]!))) at += argv[at]!.includes("=") ? 1 : 2;
  if (argv[at] !== "subscribe") return argv;
  const out = [...argv];
  for (let i = at + 1; i < out.length && out[i] !== "--"; i++) if (out[i] === "-t") out[i] = "--type";
  return out;
}

/** kcat's mode flags, as the first argument after the global options. */
const KCAT_MODES: Readonly<Record<string, string>> = { "-C": "consume", "-P": "produce", "-L": "metadata" };

/**
 * kcat's command-line forms, rewritten to ours: `-C`, `-P`, `-L` as the first argument after
 * the global options (`--url URL`, `-b HOST:PORT`) are `consume`, `produce`, `metadata`; and
 * `-t TOPIC` of consume and produce is their TOPIC argument. So
 * `edgelog -b 127.0.0.1:8787 -C -t logs -o beginning -e` reads as kcat's line does.
 */
function kcatForms(argv: readonly string[]): readonly string[] {
  let at = 0;
  while (at < argv.length) {
    const a = argv[at]!;
    if (a === "--url" || a === "-b") at += 2;
    else if (a.startsWith("--url=")) at += 1;
    else break;
  }
  const out = [...argv];
  const mode = KCAT_MODES[out[at] ?? ""];
  if (mode !== undefined) out[at] = mode;
  if (out[at] !== "consume" && out[at] !== "produce") return out;
  for (let i = at + 1; i < out.length; i++) {
    if (out[i] === "--") break;
    let topic: string | undefined;
    if ((out[i] === "-t" || out[i] === "--topic") && i + 1 < out.length) [topic] = out.splice(i, 2).slice(1);
    else if (out[i]!.startsWith("--topic=")) topic = out.splice(i, 1)[0]!.slice("--topic=".length);
    if (topic !== undefined) {
      out.splice(at + 1, 0, topic);
      break;
    }
  }
  return out;
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
  let auth: CliAuth;
  try {
    auth = cliAuth(argv, io.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr.write(`edgelog: ${e.message}\n`);
    return 2;
  }
  // The Kafka bridge sends ~1 MB appends: its fetch skips Node fetch's body copies (kafka-bridge/http.ts).
  const fetchImpl = io.fetch ?? (cmd.kind === "kafka-bridge" ? (await import("../kafka-bridge/http.ts")).bridgeFetch : undefined);
  const client = new EdgelogClient({ baseUrl: cmd.url, ...(fetchImpl === undefined ? {} : { fetch: fetchImpl }), ...(auth ?? {}) });
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
