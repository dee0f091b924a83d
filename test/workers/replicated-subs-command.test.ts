/**
 * The replicated subscription command (docs/RAFT.md "Subscriptions are replicated"): a
 * subscription change travels as the Raft entry `{kind: "subs", change}` and decodes to the same
 * change on every replica (plain JSON: the same bytes give the same decision at apply). In the
 * workers tier: durable-objects/partition/replica.ts imports the runtime.
 */
import { describe, expect, it } from "vitest";
import { decodeReplicated, encodeReplicated, type ReplicatedCommand } from "../../durable-objects/partition/replica.ts";
import { encodeDurable, emptyDurable } from "../../src/subscriptions/index.ts";

describe("replicated subscription commands", () => {
  it("round-trip create, cursors, meta, delete and install changes exactly", () => {
    const meta = {
      v: 1 as const,
      type: "shared" as const,
      policy: { ackTimeoutMs: 0, negativeAckRedeliveryDelayMs: 60_000, maxRedeliverCount: 0 },
      deadLetterTopic: null,
      dlq: null,
      partitioned: false,
      createdMs: 1_700_000_000_000,
    };
    const cmds: ReplicatedCommand[] = [
      { kind: "subs", change: { op: "create", name: "s", meta, cursor: encodeDurable(emptyDurable(4)).stored, nowMs: 1_700_000_000_001 } },
      {
        kind: "subs",
        change: {
          op: "cursors",
          nowMs: 1_700_000_000_002,
          cmds: [
            {
              v: 1,
              sub: "s",
              markDelete: 7,
              ackRanges: [[9, 9]],
              redeliveryCounts: [[8, 2]],
              notBefore: [[8, 1_700_000_060_000]],
              deadLetters: [],
              deadLettered: 0,
              nextDeadLetterSeq: 0,
            },
            { v: 1, sub: "t", reset: { nextOffset: 3 }, markDelete: 2, ackRanges: [], redeliveryCounts: [], notBefore: [], deadLetters: [], deadLettered: 0, nextDeadLetterSeq: 1 },
          ],
        },
      },
      { kind: "subs", change: { op: "meta", name: "s", meta: { ...meta, dlq: { producerId: 12, baseSeq: 0 } } } },
      { kind: "subs", change: { op: "delete", name: "s" } },
      { kind: "subs", change: { op: "install", rows: [{ name: "s", meta: JSON.stringify(meta), cursor: JSON.stringify(encodeDurable(emptyDurable(4)).stored), updatedMs: 5 }] } },
    ];
    for (const c of cmds) expect(decodeReplicated(encodeReplicated(c))).toEqual(c);
    // Deterministic bytes: encoding the decoded command gives the same entry.
    for (const c of cmds) expect(encodeReplicated(decodeReplicated(encodeReplicated(c)))).toEqual(encodeReplicated(c));
  });
});
