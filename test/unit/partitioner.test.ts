import { describe, expect, it } from "vitest";
import { murmur2, partitionForKey, toPositive } from "../../src/codec/partitioner.ts";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("murmur2", () => {
  // The cases of Kafka's own UtilsTest.testMurmur2
  // (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java).
  const kafkaUtilsTestCases: [string, number][] = [
    ["21", -973932308],
    ["foobar", -790332482],
    ["a-little-bit-long-string", -985981536],
    ["a-little-bit-longer-string", -1486304829],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
    ["abc", 479470107],
  ];
  for (const [input, expected] of kafkaUtilsTestCases) {
    it(`murmur2("${input}") = ${expected} (Kafka UtilsTest)`, () => {
      expect(murmur2(utf8(input))).toBe(expected);
    });
  }

  it("hashes the empty key to 275646681 (seed ^ 0, then the final mix only)", () => {
    expect(murmur2(new Uint8Array(0))).toBe(275646681);
  });
});

describe("toPositive", () => {
  it("clears the sign bit", () => {
    expect(toPositive(-1)).toBe(2147483647);
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(-790332482)).toBe(1357151166);
    expect(toPositive(479470107)).toBe(479470107);
  });
});

describe("partitionForKey", () => {
  it('maps "100:48069" to partition 9 of 12', () => {
    expect(partitionForKey(utf8("100:48069"), 12)).toBe(9);
  });

  it('maps "wu" to partition 0 of 10', () => {
    expect(partitionForKey(utf8("wu"), 10)).toBe(0);
  });

  it('maps "foobar" to partition 16 of 50 (1357151166 % 50)', () => {
    expect(partitionForKey(utf8("foobar"), 50)).toBe(16);
  });

  it("maps every key to partition 0 of 1", () => {
    expect(partitionForKey(utf8("anything"), 1)).toBe(0);
  });

  it("throws RangeError for a partition count that is not a positive integer", () => {
    expect(() => partitionForKey(utf8("k"), 0)).toThrow(RangeError);
    expect(() => partitionForKey(utf8("k"), -3)).toThrow(RangeError);
    expect(() => partitionForKey(utf8("k"), 2.5)).toThrow(RangeError);
  });
});
