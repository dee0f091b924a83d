/**
 * Subscription regexes of consumer groups, matched in linear time.
 *
 * KIP-848 moved regex subscriptions to the broker and made them RE2/J patterns precisely so a
 * member cannot make the coordinator backtrack exponentially (a "ReDoS"): V8's own `RegExp`
 * takes seconds on `(a+)+$` against 32 `a`s and never finishes at 40, and all Durable Objects of
 * a local dev server share one thread. Edgelog compiles the pattern with re2js, a pure
 * JavaScript port of Go's RE2 engine (runs in Workers: no native code, no `eval`), whose match
 * time is linear in (topic name length x program size).
 *
 * Syntax: RE2 (github.com/google/re2/wiki/Syntax): no backreferences (`\1`), no lookaround
 * (`(?=`, `(?!`, `(?<=`, `(?<!`), no possessive quantifiers; repeat counts at most 1000.
 * The pattern must match a whole name (Java's `Matcher.matches()`, as Kafka does).
 */
import { RE2JS } from "re2js";
import { MAX_SUBSCRIPTION_REGEX_CHARS, MAX_SUBSCRIPTION_REGEX_PROGRAM_SIZE } from "../protocol/groups.ts";

/** A compiled subscription regex: `matches(name)` is a whole-name match. */
export interface SubscriptionRegex {
  readonly source: string;
  matches(name: string): boolean;
}

/** Thrown for a pattern RE2 cannot compile or that is too large; the message says why. */
export class SubscriptionRegexError extends Error {
  override readonly name = "SubscriptionRegexError";
}

const cache = new Map<string, SubscriptionRegex>();
/** Most compiled patterns kept per isolate (a Durable Object or a gateway isolate). */
const MAX_CACHED_PATTERNS = 256;

/**
 * Compiles `source` as an RE2 whole-name match, cached per isolate.
 * @throws SubscriptionRegexError when the pattern is empty, longer than
 *   MAX_SUBSCRIPTION_REGEX_CHARS, not valid RE2 syntax, or compiles to a program larger than
 *   MAX_SUBSCRIPTION_REGEX_PROGRAM_SIZE instructions.
 */
export function compileSubscriptionRegex(source: string): SubscriptionRegex {
  const hit = cache.get(source);
  if (hit !== undefined) return hit;
  if (source.length === 0 || source.length > MAX_SUBSCRIPTION_REGEX_CHARS) {
    throw new SubscriptionRegexError(`the pattern must be 1-${MAX_SUBSCRIPTION_REGEX_CHARS} characters`);
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(source);
  } catch (err) {
    // re2js throws RE2JSSyntaxException (and a few siblings) with Go's wording, e.g.
    // "error parsing regexp: invalid or unsupported Perl syntax: `(?=`".
    throw new SubscriptionRegexError(err instanceof Error ? err.message : String(err));
  }
  // Match cost is linear in the program size too: bound it so one heartbeat against many
  // topics stays cheap (`[a-z]{1000}` is ~1000 instructions, `orders-.*` 11).
  const size = re.programSize();
  if (size > MAX_SUBSCRIPTION_REGEX_PROGRAM_SIZE) {
    throw new SubscriptionRegexError(`the pattern compiles to ${size} instructions, more than ${MAX_SUBSCRIPTION_REGEX_PROGRAM_SIZE}`);
  }
  const compiled: SubscriptionRegex = { source, matches: (name) => re.matches(name) };
  if (cache.size >= MAX_CACHED_PATTERNS) cache.clear();
  cache.set(source, compiled);
  return compiled;
}
