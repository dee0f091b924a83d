// Subscription regexes (issue 15, KIP-848): RE2 semantics, linear-time matching, and refusal of
// what RE2 cannot compile. The property test draws patterns from a grammar built to be
// ReDoS-prone for a backtracking engine (nested and overlapping quantifiers, alternations of
// overlapping branches) and checks them against V8's RegExp on short inputs (where
// backtracking is still cheap) and on 10,000-character inputs where it would never finish.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_SUBSCRIPTION_REGEX_CHARS, MAX_SUBSCRIPTION_REGEX_PROGRAM_SIZE } from "../../src/protocol/groups.ts";
import { SubscriptionRegexError, compileSubscriptionRegex } from "../../src/groups/subscription-regex.ts";
import { type MemberState, resolveSubscription } from "../../src/groups/coordinator-core.ts";
import { EMPTY_ASSIGNMENT } from "../../src/groups/assignment.ts";

/** Patterns over {a, b} with nested quantifiers: `(a+)+`, `(a|aa)*`, `((a*)*b?)+`, ... */
const redosPattern: fc.Arbitrary<string> = fc
  .letrec<{ node: string }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom("a", "b", ".", "[ab]", "a?"),
      fc.tuple(tie("node"), fc.constantFrom("+", "*", "?", "{1,3}", "{2,}")).map(([n, q]) => `(${n})${q}`),
      fc.tuple(tie("node"), tie("node")).map(([x, y]) => `${x}${y}`),
      fc.tuple(tie("node"), tie("node")).map(([x, y]) => `(${x}|${y})`),
    ),
  }))
  .node.filter((p) => p.length <= MAX_SUBSCRIPTION_REGEX_CHARS);

describe("compileSubscriptionRegex", () => {
  it("matches the issue's reproduction (a+)+$ against 10,000 a's and a b, and a whole-name match only", () => {
    const re = compileSubscriptionRegex("(a+)+$");
    expect(re.matches(`${"a".repeat(10_000)}b`)).toBe(false);
    expect(re.matches("a".repeat(10_000))).toBe(true);
    const orders = compileSubscriptionRegex("orders-.*");
    expect(orders.matches("orders-eu")).toBe(true);
    expect(orders.matches("xorders-eu")).toBe(false);
  });

  it("accepts RE2 syntax JavaScript lacks and refuses what RE2 lacks", () => {
    expect(compileSubscriptionRegex("(?i)ORDERS").matches("orders")).toBe(true);
    expect(compileSubscriptionRegex("\\pL+").matches("ordres")).toBe(true);
    expect(compileSubscriptionRegex("(?P<t>ab)c").matches("abc")).toBe(true);
    for (const bad of ["(a)\\1", "(?=a)a", "(?!a)b", "(?<=a)b", "a{1001}", "[", "(", "a**", "a++", ""]) {
      expect(() => compileSubscriptionRegex(bad), bad).toThrow(SubscriptionRegexError);
    }
    expect(() => compileSubscriptionRegex("a".repeat(MAX_SUBSCRIPTION_REGEX_CHARS + 1))).toThrow(/1-256 characters/);
  });

  it(`refuses patterns that compile to more than ${MAX_SUBSCRIPTION_REGEX_PROGRAM_SIZE} instructions`, () => {
    expect(compileSubscriptionRegex("[a-z]{1000}").matches("a".repeat(1000))).toBe(true);
    expect(() => compileSubscriptionRegex("\\pL{1000}\\pL{1000}\\pL{1000}")).toThrow(/instructions, more than 2000/);
  });

  it("property: ReDoS-prone patterns compile or are refused cleanly, agree with RegExp on short names and finish on 10,000 characters", () => {
    const long = [`${"a".repeat(10_000)}b`, "a".repeat(10_000), `${"ab".repeat(5_000)}c`];
    fc.assert(
      fc.property(redosPattern, fc.array(fc.constantFrom("a", "b", "c"), { maxLength: 10 }), (pattern, chars) => {
        let re;
        try {
          re = compileSubscriptionRegex(pattern);
        } catch (err) {
          expect(err).toBeInstanceOf(SubscriptionRegexError);
          return;
        }
        const name = chars.join("");
        // Short input: V8's backtracking is cheap here and its whole-match answer is the oracle.
        expect(re.matches(name), `${pattern} on ${name}`).toBe(new RegExp(`^(?:${pattern})$`, "s").test(name));
        // Long inputs: a backtracking engine would not return; RE2's answer is checked where it is known.
        for (const input of long) expect(typeof re.matches(input)).toBe("boolean");
      }),
      { numRuns: 300 },
    );
  });
});

describe("resolveSubscription", () => {
  const member = (regex: string | null): MemberState => ({
    memberId: "m",
    instanceId: null,
    clientId: "c",
    memberEpoch: 1,
    previousMemberEpoch: 0,
    state: "stable",
    subscribedTopicNames: [],
    subscribedTopicRegex: regex,
    assigned: EMPTY_ASSIGNMENT,
    pendingRevocation: EMPTY_ASSIGNMENT,
    sessionTimeoutMs: 45_000,
    rebalanceTimeoutMs: 300_000,
    lastHeartbeatMs: 0,
    revocationStartedMs: null,
    leftTemporarily: false,
    joinedMs: 0,
    principal: null,
    resolvedTopics: null,
  });
  const topics = {
    [`public/default/${"a".repeat(200)}b`]: { topicId: "t1", partitions: 1 },
    "public/default/orders-eu": { topicId: "t2", partitions: 1 },
    "acme/prod/orders-us": { topicId: "t3", partitions: 1 },
  };

  it("matches the full name and, in public/default, the short name, in linear time", () => {
    expect(resolveSubscription(member("orders-.*"), topics)).toEqual(["public/default/orders-eu"]);
    expect(resolveSubscription(member(".*/orders-.*"), topics)).toEqual(["acme/prod/orders-us", "public/default/orders-eu"]);
    expect(resolveSubscription(member("(a+)+$"), topics)).toEqual([]);
    expect(resolveSubscription(member("(a+)+b"), topics)).toEqual([`public/default/${"a".repeat(200)}b`]);
  });

  it("a stored pattern RE2 cannot compile (from before RE2) subscribes to nothing instead of failing", () => {
    expect(resolveSubscription(member("(?=orders)orders-eu"), topics)).toEqual([]);
  });
});
