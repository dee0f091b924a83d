/**
 * Command-line parsing: the global options, the command table lookup, and the value helpers
 * commands use in their `parse`. Pure (no I/O).
 */
import { type ParseArgsOptionDescriptor, parseArgs } from "node:util";
import type { CliCommand } from "./command.ts";

/** Where the CLI connects when neither --url nor EDGELOG_URL is given (wrangler dev's default). */
export const DEFAULT_URL = "http://127.0.0.1:8787";

/** A malformed command line (exit code 2). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Options every command accepts. */
const GLOBAL_OPTIONS = {
  /** `-b` as kcat's broker list: one gateway, `HOST:PORT` or a URL. */
  url: { type: "string", short: "b" },
  help: { type: "boolean", short: "h" },
  token: { type: "string" },
  user: { type: "string" },
} as const satisfies Record<string, ParseArgsOptionDescriptor>;

/** How the CLI authenticates (docs/SECURITY.md): a bearer token, or a SCRAM user exchanged for one. */
export type CliAuth = { token: string } | { username: string; password: string } | null;

/**
 * `--token` (else $EDGELOG_TOKEN), or `--user NAME` with the password from $EDGELOG_PASSWORD
 * (never on the command line, where `ps` and shell history would show it). Pure.
 * @throws UsageError for --user without EDGELOG_PASSWORD, or both --token and --user.
 */
export function cliAuth(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): CliAuth {
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: [...argv], options: { token: { type: "string" }, user: { type: "string" } }, allowPositionals: true, strict: false }).values;
  } catch {
    return null;
  }
  const token = typeof values.token === "string" ? values.token : undefined;
  const user = typeof values.user === "string" ? values.user : undefined;
  if (token !== undefined && user !== undefined) throw new UsageError("Give --token or --user, not both");
  if (user !== undefined) {
    const password = env["EDGELOG_PASSWORD"];
    if (password === undefined) throw new UsageError("--user needs the password in EDGELOG_PASSWORD");
    return { username: user, password };
  }
  const t = token ?? env["EDGELOG_TOKEN"];
  return t === undefined || t === "" ? null : { token: t };
}

/**
 * The union of the table's options for `parseArgs` (which needs one configuration before it
 * knows the command); each command then rejects the options it does not declare. A name
 * declared by several commands must agree on `type` and `multiple`; a short letter declared
 * by one of them applies to all (so `-J` is `--json` everywhere).
 * @throws Error when two commands declare one name incompatibly, or use one short letter for
 *   two names (a bug in the table: pick another letter, or the shared descriptor in args.ts).
 */
export function mergeOptions(table: readonly CliCommand[]): Record<string, ParseArgsOptionDescriptor> {
  const merged: Record<string, ParseArgsOptionDescriptor> = { ...GLOBAL_OPTIONS };
  const shorts = new Map<string, string>([["h", "help"]]);
  for (const command of table) {
    for (const [name, option] of Object.entries(command.options)) {
      const known = merged[name];
      if (known !== undefined) {
        if (known.type !== option.type || (known.multiple ?? false) !== (option.multiple ?? false))
          throw new Error(`CLI option --${name} of ${command.name} has another type than elsewhere`);
        if (known.short !== undefined && option.short !== undefined && known.short !== option.short)
          throw new Error(`CLI option --${name} of ${command.name} has -${option.short}, elsewhere -${known.short}`);
      }
      const short = option.short ?? known?.short;
      if (short !== undefined && (shorts.get(short) ?? name) !== name) throw new Error(`CLI option -${short} is used for --${shorts.get(short)} and --${name}`);
      if (short !== undefined) shorts.set(short, name);
      merged[name] = short === undefined ? option : { ...option, short };
    }
  }
  return merged;
}

/** A parsed command line: the help request, or a command's own shape plus `kind` and `url`. */
export type Parsed<C> = { kind: "help" } | C;

/**
 * Parses `argv` (without `node` and the script) against a command table. Pure.
 * @param env environment, for EDGELOG_URL
 * @throws UsageError for an unknown command or option, a missing or extra argument, a bad value.
 */
export function parseWith<C extends { kind: string }>(table: readonly CliCommand<C>[], argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Parsed<C> {
  const options = mergeOptions(table as readonly CliCommand[]);
  let parsed;
  try {
    parsed = parseArgs({ args: negativeValuesJoined(argv, options), options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  const { values, positionals } = parsed;
  if (values["help"] === true || positionals.length === 0) {
    if (positionals.length === 0 && values["help"] !== true) throw new UsageError("Missing command.");
    return { kind: "help" };
  }
  const first = positionals[0]!;
  const subcommands = table.filter((c) => c.name.startsWith(`${first} `)).map((c) => c.name.slice(first.length + 1));
  const grouped = subcommands.length > 0;
  const name = grouped ? `${first} ${positionals[1] ?? ""}` : first;
  const spec = table.find((c) => c.name === name);
  if (spec === undefined) {
    if (grouped && positionals[1] === undefined) throw new UsageError(`${first}: missing subcommand (${subcommands.join(", ")})`);
    throw new UsageError(`Unknown command: ${positionals.slice(0, grouped ? 2 : 1).join(" ")}`);
  }
  const args = positionals.slice(name.split(" ").length);
  if (args.length < spec.args.length) throw new UsageError(`${name}: missing ${spec.args.slice(args.length).join(" ")}`);
  if (args.length > spec.args.length && spec.rest === undefined) throw new UsageError(`${name}: unexpected argument ${JSON.stringify(args[spec.args.length])}`);
  for (const key of Object.keys(values)) {
    if (!Object.hasOwn(GLOBAL_OPTIONS, key) && !Object.hasOwn(spec.options, key)) {
      const short = spec.options[key]?.short ?? mergeOptions(table as readonly CliCommand[])[key]?.short;
      throw new UsageError(`${name}: unknown option --${short === key ? `${key} (-${key})` : key}`);
    }
  }
  const given = str(values, "url");
  // kcat's `-b localhost:9092` has no scheme: http is meant.
  const url = (given !== undefined && !/^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? `http://${given}` : given) ?? env["EDGELOG_URL"] ?? DEFAULT_URL;
  if (!URL.canParse(url)) throw new UsageError(`Invalid --url ${JSON.stringify(given ?? url)}`);
  return spec.parse({ url, args, values });
}

/**
 * `-o -10` and `--shift-by -2` as kcat and Kafka's tools take them: parseArgs refuses a value
 * that starts with a dash as ambiguous, so a negative integer after a string option is joined
 * to it (`--offset=-10`).
 */
function negativeValuesJoined(argv: readonly string[], options: Record<string, ParseArgsOptionDescriptor>): string[] {
  const longOf = new Map<string, string>();
  for (const [name, o] of Object.entries(options)) {
    if (o.type !== "string") continue;
    longOf.set(`--${name}`, name);
    if (o.short !== undefined) longOf.set(`-${o.short}`, name);
  }
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const name = longOf.get(argv[i]!);
    const next = argv[i + 1];
    if (name !== undefined && next !== undefined && /^-\d+$/.test(next)) {
      out.push(`--${name}=${next}`);
      i++;
    } else {
      out.push(argv[i]!);
    }
    if (argv[i] === "--") {
      out.push(...argv.slice(i + 1));
      break;
    }
  }
  return out;
}

type Values = Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;

/** A string option's value. */
export function str(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

/** A boolean option: true when given. */
export function flag(values: Values, name: string): boolean {
  return values[name] === true;
}

/** A repeatable string option's values, in command-line order. */
export function list(values: Values, name: string): string[] | undefined {
  const v = values[name];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : undefined;
}

/** @throws UsageError unless `raw` is a non-negative safe integer in decimal. */
export function intOption(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** @throws UsageError for an empty separator. */
export function separator(raw: string | undefined): string | undefined {
  if (raw === "") throw new UsageError("--key-separator must not be empty");
  return raw;
}

function splitKeyValue(option: string, item: string): [string, string] {
  const eq = item.indexOf("=");
  if (eq <= 0) throw new UsageError(`${option} expects k=v, got ${JSON.stringify(item)}`);
  return [item.slice(0, eq), item.slice(eq + 1)];
}

/** `k=v` items as a record. @throws UsageError for an item without `=` or a key given twice. */
export function keyValues(option: string, items: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items ?? []) {
    const [k, v] = splitKeyValue(option, item);
    if (Object.hasOwn(out, k)) throw new UsageError(`${option} ${k} given twice`);
    out[k] = v;
  }
  return out;
}

/** Header pairs in command-line order, duplicates kept (KIP-82 headers are an ordered list). */
export function headerPairs(items: readonly string[] | undefined): Array<[string, string]> {
  return (items ?? []).map((item) => splitKeyValue("--header", item));
}

/**
 * Bytes of a delimiter or format literal with kcat's escapes: `\n`, `\r`, `\t`, `\0`, `\\`,
 * `\xHH` (any byte); other characters as UTF-8. A lone or unknown `\` escape stays as is.
 */
export function unescapeBytes(raw: string): Uint8Array {
  const out: number[] = [];
  const utf8 = new TextEncoder();
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === "\\" && i + 1 < raw.length) {
      const n = raw[i + 1]!;
      const simple = ({ n: 0x0a, r: 0x0d, t: 0x09, "0": 0x00, "\\": 0x5c } as Record<string, number>)[n];
      if (simple !== undefined) {
        out.push(simple);
        i++;
        continue;
      }
      if (n === "x" && /^[0-9a-fA-F]{2}$/.test(raw.slice(i + 2, i + 4))) {
        out.push(Number.parseInt(raw.slice(i + 2, i + 4), 16));
        i += 3;
        continue;
      }
    }
    const cp = raw.codePointAt(i)!;
    if (cp > 0xffff) i++;
    out.push(...utf8.encode(String.fromCodePoint(cp)));
  }
  return new Uint8Array(out);
}

/** Where consume starts (kcat -o). */
export type OffsetArg =
  | { kind: "latest" }
  | { kind: "earliest" }
  | { kind: "stored" }
  | { kind: "offset"; offset: number }
  /** `-N`: N records before the high watermark, per partition (not below the log start offset). */
  | { kind: "fromEnd"; count: number }
  | { kind: "timestamp"; timestampMs: number }
  /** `e@TS`: stop before the first record with a timestamp >= TS. */
  | { kind: "endTimestamp"; timestampMs: number };

/**
 * One kcat `-o` value: `beginning | end | stored | N | -N | s@TIMESTAMP | e@TIMESTAMP` (ms).
 * @throws UsageError for anything else.
 */
export function parseOffsetArg(raw: string): OffsetArg {
  if (raw === "beginning") return { kind: "earliest" };
  if (raw === "end") return { kind: "latest" };
  if (raw === "stored") return { kind: "stored" };
  const m = /^(-|s@|e@)?(\d+)$/.exec(raw);
  const n = m === null ? Number.NaN : Number(m[2]);
  if (m === null || !Number.isSafeInteger(n)) throw new UsageError(`-o expects beginning, end, stored, N, -N, s@TIMESTAMP or e@TIMESTAMP, got ${JSON.stringify(raw)}`);
  if (m[1] === "-") return { kind: "fromEnd", count: n };
  if (m[1] === "s@") return { kind: "timestamp", timestampMs: n };
  if (m[1] === "e@") return { kind: "endTimestamp", timestampMs: n };
  return { kind: "offset", offset: n };
}

// Options several commands share (one descriptor each, as the merged parseArgs table needs).
export const JSON_OPTION = { type: "boolean", short: "J" } as const;
export const PARTITION_OPTION = { type: "string", short: "p" } as const;
export const KEY_SEPARATOR_OPTION = { type: "string", short: "K" } as const;
export const DELIMITER_OPTION = { type: "string", short: "D" } as const;
export const NULL_OPTION = { type: "boolean", short: "Z" } as const;
export const TOPIC_OPTION = { type: "string", short: "t" } as const;
