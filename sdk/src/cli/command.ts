/**
 * The shape of one CLI command. Each command is a file in `commands/` exporting one or more of
 * these, and `commands/index.ts` lists them in the command table (the order of `--help`).
 * Adding a command is adding a file and one line to that table.
 */
import type { ParseArgsOptionDescriptor } from "node:util";
import type { Admin } from "../admin.ts";
import type { EdgelogClient } from "../client.ts";
import type { CliIo, Output } from "./io.ts";

/** What a command's `parse` gets: the command line after the command words. */
export interface ParsedLine {
  /** Gateway URL (--url, else $EDGELOG_URL, else DEFAULT_URL), already checked to parse. */
  url: string;
  /** Positional arguments after the command words: the command's `args`, then any `rest`. */
  args: readonly string[];
  /** Option values by long name (only options the command declares are present). */
  values: Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;
}

/** What a command's `run` gets. */
export interface RunContext {
  client: EdgelogClient;
  admin: Admin;
  /** stdout with back-pressure; throws OutputClosed once the reader went away. */
  out: Output;
  io: CliIo;
}

/** One command: its words, help text, options, positional arguments, parser and runner. */
export interface CliCommand<C extends { kind: string } = { kind: string }> {
  /** The command words, e.g. "produce" or "topics list"; also the `kind` of what `parse` returns. */
  readonly name: C["kind"];
  /** Its lines of `--help` (two-space indent, newline-terminated). */
  readonly usage: string;
  /**
   * Options it accepts besides the global --url and --help, as node:util `parseArgs` takes
   * them. An option name shared by several commands must have the same descriptor in each.
   */
  readonly options: Readonly<Record<string, ParseArgsOptionDescriptor>>;
  /** Names of its positional arguments (all required), for the usage errors. */
  readonly args: readonly string[];
  /** Name of further positional arguments it takes, any number (e.g. "FILE"); none if absent. */
  readonly rest?: string;
  /** @throws UsageError for a malformed value. Pure. */
  parse(line: ParsedLine): C;
  /** Runs it. @throws EdgelogError (exit 1) or OutputClosed (exit 0). */
  run(cmd: C, ctx: RunContext): Promise<void>;
}

/** Identity with inference: `defineCommand<MyCommand>({...})` checks `parse` and `run` agree. */
export function defineCommand<C extends { kind: string }>(command: CliCommand<C>): CliCommand<C> {
  return command;
}
